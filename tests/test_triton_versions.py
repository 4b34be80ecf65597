"""Triton versions: the interpreters of Triton 3.3 to 3.6 under NumPy 2.4.

Those interpreters convert a scalar tensor to an index with ``int(data)`` on
an array of shape (1,), which NumPy 2.4 refuses; a kernel's loop over a size
given at launch (``range(input.shape[0])``) needs that conversion.  The test
puts that conversion back in this Triton's interpreter and runs such a loop."""

import functools

import numpy
import pytest
import torch

import ntsym
import ntsym.language as ntl
from ntsym_codegen import interpreter_compat, runtime
from ntsym import Tensor

pytestmark = pytest.mark.skipif(not runtime.interpreting(), reason="Triton's interpreter only")


def _arrangement(input, output, BLOCK=ntsym.block_size()):
    return input.tile((1, BLOCK)).tile((1, -1)), output.tile((1, 1))


def _application(input, output):
    total = ntl.zeros(input.dtype.shape, dtype=ntl.float32)
    for k in range(input.shape[1]):  # tiles per row: a launch-time size
        total += input[0, k]
    output = ntl.sum(total, 1)[:, None]


@pytest.fixture
def old_index_conversion(monkeypatch):
    """This Triton's interpreter, converting scalars to indices as 3.3-3.6 do."""
    from triton.runtime import interpreter

    current = getattr(interpreter, "_patch_lang_tensor", None)
    if current is None:
        pytest.skip("this Triton's interpreter has no _patch_lang_tensor")
    current = getattr(current, "__wrapped_original__", current)

    def old(tensor, scope, *args, **kwargs):  # as 3.4-3.6 (3.3 has no scope)
        result = current(tensor, scope, *args, **kwargs)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data))
        return result

    monkeypatch.setattr(interpreter, "_patch_lang_tensor", old)
    return interpreter


def test_a_loop_over_a_launch_size_runs_in_old_interpreters(old_index_conversion):
    interpreter_compat.install()
    kernel = ntsym.make(functools.partial(_arrangement, BLOCK=4), _application, (Tensor(2), Tensor(2)))
    x = torch.randn(3, 10)
    out = torch.empty(3, 1)
    kernel(x, out)
    torch.testing.assert_close(out, x.sum(1, keepdim=True), rtol=1e-5, atol=1e-5)


def test_numpy_refuses_what_old_interpreters_do():
    """Why the shim exists (where NumPy is 2.4 or newer)."""
    if tuple(int(p) for p in numpy.__version__.split(".")[:2]) < (2, 4):
        pytest.skip("NumPy before 2.4 converts arrays of one element")
    with pytest.raises(TypeError, match="0-dimensional"):
        int(numpy.array([3]))
