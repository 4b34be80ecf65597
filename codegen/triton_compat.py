"""What the installed Triton can do, asked in one place.

ntsym runs on more than one Triton (3.6 on GPUs, 3.9 on the CPU
interpreter, at least): where their APIs differ, code asks a probe here
instead of importing a version's module path or comparing version numbers.
Each probe asks for the feature itself (an attribute, a parameter, a
class), not for a version, so a release that adds or removes the feature is
met without an edit; each is cached where its answer cannot change within a
process, and says what ntsym does without the feature.

To support a new Triton: run the tests on it; where one fails because an API
moved, add or widen the probe here (the old form first, the new one as the
fallback) and make the caller ask it; see docs/design.md."""

import functools
import inspect


@functools.lru_cache(maxsize=None)
def device_tensor_descriptors():
    """Whether kernels can make tensor descriptors on the device
    (``tl.make_tensor_descriptor``) and flatten loops (``tl.range(...,
    flatten=True)``), which the persistent variant needs; without them no
    persistent variant is made."""
    try:
        import triton.language as tl

        return hasattr(tl, "make_tensor_descriptor") and "flatten" in inspect.signature(tl.range.__init__).parameters
    except Exception:
        return False


def allocator_set():
    """Whether an allocator for device-side scratch memory (tensor
    descriptors) is set in this thread's context: True only where this Triton
    says so (``triton.runtime._allocation``); False where none is, or where
    this Triton keeps it elsewhere (then setting one is harmless)."""
    try:
        from triton.runtime import _allocation

        return not isinstance(_allocation._allocator.get(), _allocation.NullAllocator)
    except (ImportError, AttributeError):
        return False


def set_allocator(allocate):
    """Give Triton ``allocate(size, alignment, stream)`` for scratch memory."""
    import triton

    triton.set_allocator(allocate)


def runtime_knobs():
    """Triton's runtime settings (``triton.knobs.runtime``), where the launch
    hooks are, read at each launch as Triton reads them."""
    from triton import knobs

    return knobs.runtime


def driver():
    """Triton's driver module (``triton.runtime.driver``): its ``active``
    driver gives the current device and stream."""
    from triton.runtime import driver as module

    return module


def launchable(compiled):
    """Whether a compiled kernel Triton returned can be launched directly
    (``run`` with its ``function``, ``packed_metadata`` and
    ``launch_metadata``), as ``JITFunction.run`` launches it: a kernel still
    compiling in the background (one with ``result``) cannot; without these
    every launch goes through ``kernel[grid]``."""
    if compiled is None or hasattr(compiled, "result"):
        return False
    return all(hasattr(compiled, a) for a in ("run", "function", "packed_metadata", "launch_metadata"))


# The body of Triton 3.6's ``CudaLauncher.__call__`` (whitespace folded):
# with no scratch memory it only passes its arguments on to the launcher
# compiled for the kernel, which ``raw_launch`` then calls itself.
_LAUNCHER_CALL_36 = (
    "def __call__(self, gridX, gridY, gridZ, stream, function, *args): def allocate_scratch(size, align, allocator): "
    "if size > 0: grid_size = gridX * gridY * gridZ alloc_size = grid_size * self.num_ctas * size alloc_fn = "
    "allocator.get() return alloc_fn(alloc_size, align, stream) return None global_scratch = allocate_scratch("
    "self.global_scratch_size, self.global_scratch_align, _allocation._allocator) profile_scratch = "
    "allocate_scratch(self.profile_scratch_size, self.profile_scratch_align, _allocation._profile_allocator) "
    "self.launch(gridX, gridY, gridZ, stream, function, self.launch_cooperative_grid, self.launch_pdl, "
    "global_scratch, profile_scratch, *args)"
)


def raw_launch(compiled):
    """``(launch, prefix)``: the compiled launcher behind a compiled kernel's
    ``run`` and the arguments ``run`` would put between the stream and
    function and the rest (``launch(gx, gy, gz, stream, function, *prefix,
    *rest)`` does what ``run(gx, gy, gz, stream, function, *rest)`` does),
    where ``run`` is known to add nothing else: Triton 3.6's launcher, for a
    kernel that uses no scratch memory.  None otherwise (launch through
    ``run``)."""
    run = getattr(compiled, "run", None)
    try:
        if _launcher_call_source(type(run)) != _LAUNCHER_CALL_36:
            return None
        if run.global_scratch_size != 0 or run.profile_scratch_size != 0:
            return None
        return run.launch, (run.launch_cooperative_grid, run.launch_pdl, None, None)
    except Exception:
        return None


@functools.lru_cache(maxsize=None)
def _launcher_call_source(launcher_type):
    try:
        return " ".join(inspect.getsource(launcher_type.__call__).split())
    except Exception:
        return None


def current_device_getter(active):
    """The function giving the current CUDA device, as Triton's active driver
    asks it: torch's own C function where the driver asks torch (it skips
    torch's Python check that CUDA is initialised, which a launch of a
    compiled kernel has done); else the driver's."""
    function = active.get_current_device
    try:
        import torch

        if function is torch.cuda.current_device and torch.cuda.is_initialized():
            return torch._C._cuda_getDevice
    except Exception:
        pass
    return function


def hooks_are_empty(enter, leave, chain=None):
    """Whether both launch hooks call nothing; ``chain``: the type of Triton's
    hook chains where known (the common case is then two type tests)."""
    if type(enter) is chain and type(leave) is chain:
        return not enter.calls and not leave.calls
    return hook_is_empty(enter) and hook_is_empty(leave)


def hook_is_empty(hook):
    """Whether a launch hook calls nothing: None, or an empty ``HookChain``
    (Triton 3.6 and 3.9 keep their hooks as chains, never None)."""
    return hook is None or (type(hook).__name__ == "HookChain" and not getattr(hook, "calls", True))


def gpu_libdevice():
    """Triton's ``libdevice`` for GPUs (``triton.language.extra.libdevice``,
    which dispatches to the backend's)."""
    from triton.language.extra import libdevice

    return libdevice


def interpreter_tensor(data, dtype):
    """A tensor of the interpreter holding the NumPy array ``data`` as the
    Triton ``dtype`` (the interpreter's ``TensorHandle``)."""
    import numpy as np
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle, _get_np_dtype

    data = np.asarray(data).astype(_get_np_dtype(dtype))
    ty = tl.block_type(dtype, list(data.shape)) if data.shape else dtype
    return tl.tensor(TensorHandle(data, dtype), ty)


def version():
    """The version Triton reports (``triton.__version__``): part of the keys
    of tuned choices, which another version may not reproduce."""
    import triton

    return triton.__version__


def distribution_version():
    """The installed distribution's version (from its metadata, without
    importing Triton): part of the build key of C libraries."""
    try:
        import importlib.metadata

        return importlib.metadata.version("triton")
    except Exception:  # pragma: no cover - triton is a dependency
        return "unknown"
