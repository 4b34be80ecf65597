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


# The fast tier (pytest -m "not slow"): a few minutes on two cores.  Besides
# the tests marked slow where they are defined, these run in the slow tier
# only: whole tests that run for many seconds on a CPU (subprocesses,
# builds, fuzzers) ...
SLOW_TESTS = {
    "tests/test_aot.py::test_libraries_are_written",  # the C-library tests share a build of three kernels
    "tests/test_aot.py::test_library_links_no_cuda_library",
    "tests/test_aot.py::test_header_compiles_in_a_c_program",
    "tests/test_aot.py::test_bad_input_gets_a_status_and_a_message",
    "tests/test_aot.py::test_lazy_negative_views_are_refused_as_the_torch_launcher_refuses_them",
    "tests/test_aot.py::test_a_good_call_reaches_the_driver",
    "tests/test_aot.py::test_a_second_build_does_nothing",
    "tests/test_aot.py::test_exported_modules_run_without_ntsym",
    "tests/test_cache.py::test_cache_info_and_clear",
    "tests/test_compile.py::test_a_compiled_kernel_exports_without_a_torch_kernel",
    "tests/test_divergences.py::test_libdevice_fallbacks_work_when_triton_was_imported_first",
    "tests/test_fuzz_padding.py::test_a_slice_of_the_padding_fuzzer_matches_torch",
    "tests/test_index_width.py::test_exported_module_takes_the_same_index_width",
    "tests/test_kernel_names.py::test_a_script_names_its_kernel_after_its_file",
    "tests/test_llm.py::test_reference_path_is_varied",
    "tests/test_meta_ops_property.py::test_meta_ops_match_numpy_model",
    "tests/test_printer.py::test_quick_refutations_of_divisibility_agree_with_cancel",
    "tests/test_tuning.py::test_tuning_result_is_reused_by_a_second_process",
    "tests/test_tuning.py::test_retune_and_print",
}
# ... and of these parametrized tests, one case in every ``k`` (in collection
# order, so the same ones each run) stays in the fast tier: a sample of each
# kind of case, the whole set in the slow tier.
SAMPLED_TESTS = {
    "tests/test_fuzz_kernels.py::test_matmul_arrangement_copy": 24,
    "tests/test_fuzz_kernels.py::test_pad_then_tile": 8,
    "tests/test_fuzz_kernels.py::test_dilated_strided_tile": 3,
    "tests/test_fuzz_applications.py::test_random_application_matches_python": 8,
    "tests/test_examples.py::test_conv2d_split": 8,
    "tests/test_examples.py::test_conv2d": 3,
    "tests/test_examples.py::test_causal_sdpa_with_more_queries_than_keys": 8,
    "tests/test_examples.py::test_sdpa_several_key_blocks": 3,
    "tests/test_examples.py::test_rope": 3,
    "tests/test_examples.py::test_rope_interleaved": 3,
    "tests/test_examples.py::test_mm_small_blocks": 3,
    "tests/test_examples.py::test_fp8_mm": 3,
    "tests/test_examples.py::test_to_channels_last": 3,
    "tests/test_jagged.py::test_to_padded_tensor": 3,
    "tests/test_jagged.py::test_expand": 3,
    "tests/test_loop_bounds.py::test_loop_bound_from_offsets": 3,
    "tests/test_libdevice.py::test_unary_function_over_special_values": 3,
    "tests/test_outer_extents.py::test_diagonal": 3,
    "tests/test_outer_extents.py::test_diagonal_of_a_tall_matrix": 3,
    "tests/test_examples.py::test_conv2d_small_blocks": 3,
    "tests/test_examples.py::test_softmax_dims_and_strides": 3,
    "tests/test_jagged.py::test_example_varlen_sdpa": 3,
    "tests/test_jagged.py::test_causal_varlen_sdpa_with_fewer_keys_than_queries": 2,
    "tests/test_libdevice.py::test_binary_function_over_special_values": 3,
    "tests/test_advance.py::test_a_loop_index_the_body_rebinds_keeps_the_index_form": 2,
}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Mark ``SLOW_TESTS`` and all but a sample of ``SAMPLED_TESTS`` slow."""
    seen = {}
    for item in items:
        name = item.nodeid.split("[")[0]
        if name in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)
        elif name in SAMPLED_TESTS:
            seen[name] = seen.get(name, -1) + 1
            if seen[name] % SAMPLED_TESTS[name]:
                item.add_marker(pytest.mark.slow)

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
