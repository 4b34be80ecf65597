"""Tensors on the ``meta`` device hold no data: a launch refuses them by
name (they reached Triton, which failed with torch's ``NotImplementedError``,
or on a GPU read address 0), and a registered operator returns outputs of
the right shapes for them without launching."""

import pytest
import torch

import ntsym
from ntsym import Tensor


def _double():
    def arrangement(x, out):
        return x.tile((4,)), out.tile((4,))

    def application(x, out):
        out = x * 2  # noqa: F841

    return ntsym.make(arrangement, application, (Tensor(1), Tensor(1)))


def test_tensors_on_the_meta_device_are_refused_by_name():
    kernel = _double()
    with pytest.raises(ntsym.NtsymError, match="meta"):
        kernel(torch.ones(2, device="meta"), torch.empty(2, device="meta"))


def test_the_same_kernel_runs_on_the_cpu():
    kernel = _double()
    x, out = torch.arange(3.0), torch.empty(3)
    kernel(x, out)
    torch.testing.assert_close(out, x * 2)


def test_a_registered_op_gives_meta_outputs_without_a_launch():
    import ntsym.library
    from examples import add

    op = ntsym.library.op("ntsym_meta_test::add", add.kernel)
    out = op(torch.ones(5, device="meta"), torch.ones(5, device="meta"))
    assert out.device.type == "meta" and out.shape == (5,)
