import os
import pathlib
import shutil
import sys
import tempfile

import pytest
import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# The suite's generated modules and tuning files go to a cache of its own
# (removed at the end), never into the user's; NTSYM_CACHE_DIR set by the
# caller is kept.  Set before anything imports ntsym, which reads it.
if not os.environ.get("NTSYM_CACHE_DIR"):
    os.environ["NTSYM_CACHE_DIR"] = _SUITE_CACHE = tempfile.mkdtemp(prefix="ntsym-test-cache-")
else:
    _SUITE_CACHE = None


def pytest_sessionfinish(session, exitstatus):
    if _SUITE_CACHE:
        shutil.rmtree(_SUITE_CACHE, ignore_errors=True)

# Without a GPU, ntsym runs kernels through Triton's interpreter.  With one,
# the same tests compile natively: tensors are created on the GPU by default.
if torch.cuda.is_available():
    torch.set_default_device("cuda")
else:
    # No GPU: Triton's interpreter, chosen before any test module imports
    # triton (as ntsym does when it is imported first).
    os.environ.setdefault("TRITON_INTERPRET", "1")


# fp32 tl.dot runs in TF32 on NVIDIA GPUs (Triton's default), as torch.matmul
# does with allow_tf32; the interpreter computes it in full fp32.
FP32_DOT_TOL = 3e-2 if torch.cuda.is_available() else 1e-4


@pytest.fixture(params=[False, True], ids=["index", "advance"])
def loop_addressing(request, monkeypatch):
    """Run a test twice: loops address tiles from the loop index (the
    default), then advance pointers wherever a kernel can (the other form the
    tuner chooses between on a GPU)."""
    if request.param:
        from ntsym_codegen import runtime, tuning

        choose, call_key = tuning.choose, runtime.call_key

        def forced(kernel, spec, grid, args, metas, derived, tensors, int64, options=None, persistent=None, **kw):
            if spec.advance_flag and (options or {}).get("advance") is None:
                options = {**(options or {}), "advance": True}
            return choose(kernel, spec, grid, args, metas, derived, tensors, int64, options, persistent, **kw)

        monkeypatch.setattr(tuning, "choose", forced)
        # Launches remembered by the other run must not be reused.
        monkeypatch.setattr(runtime, "call_key", lambda *a, **k: ("advance", call_key(*a, **k)))
    return request.param


# -- golden files -------------------------------------------------------------------------
#
# Generated text checked byte for byte against tests/golden/.  After a change
# meant to alter generated code, review the diff and refresh the files with
# NTSYM_UPDATE_GOLDEN=1.

GOLDEN = pathlib.Path(__file__).parent / "golden"
UPDATE_GOLDEN = os.environ.get("NTSYM_UPDATE_GOLDEN") == "1"


def machine_independent(text):
    """``text`` with this checkout's and this machine's paths (the cache
    directory, the home directory) replaced by fixed names, so that golden
    files hold the same text wherever they are made."""
    from ntsym_codegen import cache

    places = [
        (str(pathlib.Path(__file__).resolve().parent.parent), "<checkout>"),
        (cache.cache_dir(), "<cache>"),
        (os.path.expanduser("~"), "<home>"),
    ]
    for path, name in sorted(places, key=lambda p: -len(p[0])):
        if path and path != os.sep:
            text = text.replace(path, name)
    return text


def assert_golden(relative, text):
    """``text`` (made machine-independent) equals the golden file
    ``tests/golden/<relative>``; written there instead under NTSYM_UPDATE_GOLDEN=1."""
    path = GOLDEN / relative
    text = machine_independent(text)
    if UPDATE_GOLDEN:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"no golden file {relative}; make it with NTSYM_UPDATE_GOLDEN=1"
    assert text == path.read_text(), (
        f"generated text for {relative} changed; review the diff and refresh with NTSYM_UPDATE_GOLDEN=1"
    )


def module_parts(kernel):
    """A kernel's generated module in two parts, as the emitter made them
    (``Generated``'s fields): the kernels with the header and helpers they
    need, then the torch launcher.  The module is the two, one after the other."""
    generated = kernel.compiled.generated
    kernels = "\n\n\n".join([generated.header, *generated.helpers, generated.kernels]) + "\n"
    launcher = generated.launcher + "\n"
    assert kernel.source == kernels + "\n\n" + launcher
    return kernels, launcher


def assert_module_golden(stem, kernel):
    """A kernel's generated module equals its two golden files,
    ``<stem>.kernel.py.expected`` and ``<stem>.launcher.py.expected``: a
    change of the launcher alone leaves the kernel's golden as it is."""
    kernels, launcher = module_parts(kernel)
    assert_golden(f"{stem}.kernel.py.expected", kernels)
    assert_golden(f"{stem}.launcher.py.expected", launcher)
