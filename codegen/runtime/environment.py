"""Where kernels run: Triton's interpreter or a CUDA device, which device is
current, and whether a CUDA graph is being captured."""

import contextlib
import os

from ntsym_codegen.errors import fail


def interpreting():
    """Whether kernels run through Triton's interpreter (no GPU, or asked for).
    Decided once per process, when first asked."""
    global _INTERPRETING
    if _INTERPRETING is None:
        value = os.environ.get("TRITON_INTERPRET", "")
        _INTERPRETING = value.lower() in ("1", "true", "yes", "on") or not _cuda_available()
        if _INTERPRETING:
            from ntsym_codegen import interpreter_compat

            interpreter_compat.install()
    return _INTERPRETING


_INTERPRETING = None


def _cuda_available():
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:  # pragma: no cover - torch always importable here
        return False


def on_device(device, spec):
    """A context in which CUDA device ``device`` is the current one: nothing
    to do where it already is, for CPU tensors (-1), or in the interpreter."""
    if spec.interpreting or device < 0:
        return contextlib.nullcontext()
    import torch

    if device == torch.cuda.current_device():
        return contextlib.nullcontext()
    return torch.cuda.device(device)


def capturing():
    """Whether a CUDA graph is being captured on the current stream (False in
    a build without CUDA).  Asked on a call shape's first launch only: a
    validated one takes ``fast_launch``, which captures as any launch."""
    import torch

    try:
        return torch.cuda.is_current_stream_capturing()
    except RuntimeError:  # torch built without CUDA
        return False


def refuse_capture(spec):
    fail(
        f"kernel `{spec.name}` was launched during CUDA graph capture with a call shape it has not run before",
        "a call shape is the shapes, strides, dtypes, device and 16-byte alignment; a first launch validates "
        "the arguments, compiles and may tune the kernel (timed runs, synchronisation), none of which a "
        "capture may contain",
        "warm up first: run the captured code once on the same tensors before torch.cuda.graph"
    )
