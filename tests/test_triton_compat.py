"""The Triton feature probes (codegen/triton_compat.py) on the installed
Triton: each answers for the feature itself, whatever the version."""

import numpy as np
import triton
import triton.language as tl

import ntsym  # noqa: F401  (without a GPU, selects the interpreter before triton loads)
from ntsym_codegen import triton_compat
from examples import mm


def test_tensor_descriptors_decide_the_persistent_variant():
    assert ("tl.make_tensor_descriptor(" in mm.kernel.source) == triton_compat.device_tensor_descriptors()


def test_launch_hooks_and_compiled_kernels():
    class HookChain:
        def __init__(self, calls):
            self.calls = calls

    assert triton_compat.hook_is_empty(None) and triton_compat.hook_is_empty(HookChain([]))
    assert not triton_compat.hook_is_empty(HookChain([print])) and not triton_compat.hook_is_empty(print)
    assert not triton_compat.launchable(None)

    class Compiling:
        result = None

    assert not triton_compat.launchable(Compiling())
    hooks = triton_compat.runtime_knobs()
    assert hasattr(hooks, "launch_enter_hook") and hasattr(hooks, "launch_exit_hook")


def test_interpreter_tensors_and_versions():
    t = triton_compat.interpreter_tensor(np.array([1.5, 2.5]), tl.float16)
    assert t.dtype == tl.float16 and t.handle.data.dtype == np.float16 and t.handle.data.tolist() == [1.5, 2.5]
    assert triton_compat.version() == triton.__version__
    assert triton_compat.distribution_version().split("+")[0] == triton.__version__.split("+")[0]
    assert hasattr(triton_compat.gpu_libdevice(), "pow")
