"""A padded tile given a new axis by ``ntl.expand_dims`` or ``ntl.unsqueeze``
(or flattened by ``ntl.ravel``) and then reduced: the lanes outside the
tensor are followed through these forms as through ``[:, None]`` and
``ntl.reshape``, and the reduction reads the tensor's elements only."""

import pytest
import torch

import ntsym
import ntsym.language as ntl
from ntsym import Tensor


def _outer_row_sums(application):
    def arrangement(x, y, out):
        return x.tile((4,)), y.tile((4,)), out.tile((4,))

    x = torch.tensor([2.0, 1.0, 3.0])
    y = torch.tensor([1.0, -5.0, 2.0])
    out = torch.empty(3)
    ntsym.make(arrangement, application, (Tensor(1), Tensor(1), Tensor(1)))(x, y, out)
    torch.testing.assert_close(out, (x[:, None] * y[None, :]).sum(1))


def test_the_same_outer_product_through_reshape_runs():
    def application(x, y, out):
        out = ntl.sum(ntl.reshape(x, (4, 1)) * ntl.reshape(y, (1, 4)), 1)  # noqa: F841

    _outer_row_sums(application)


def test_expand_dims_of_padded_tiles_then_sum():
    def application(x, y, out):
        out = ntl.sum(ntl.expand_dims(x, 1) * ntl.expand_dims(y, 0), 1)  # noqa: F841

    _outer_row_sums(application)


@pytest.mark.skipif(not hasattr(__import__("triton").language, "unsqueeze"),
                    reason="this Triton has no tl.unsqueeze (Triton 3.6 does not)")
def test_unsqueeze_of_padded_tiles_then_sum():
    def application(x, y, out):
        out = ntl.sum(ntl.unsqueeze(x, 1) * ntl.unsqueeze(y, 0), 1)  # noqa: F841

    _outer_row_sums(application)


def test_ravel_of_a_padded_tile_then_max():
    def arrangement(x, out):
        return x.tile((2, 4)), out.tile((1, 1))

    def application(x, out):
        out = ntl.max(ntl.ravel(x), 0) + ntl.zeros(out.shape, ntl.float32)  # noqa: F841

    x = -(torch.rand(2, 3) + 1)
    out = torch.empty(1, 1)
    ntsym.make(arrangement, application, (Tensor(2), Tensor(2)))(x, out)
    torch.testing.assert_close(out, x.max().reshape(1, 1))


def test_ravel_method_of_a_padded_tile_then_sum():
    def arrangement(x, out):
        return x.tile((2, 4)), out.tile((1, 1))

    def application(x, out):
        out = ntl.sum(x.ravel(), 0) + ntl.zeros(out.shape, ntl.float32)  # noqa: F841

    x = torch.rand(2, 3)
    out = torch.empty(1, 1)
    ntsym.make(arrangement, application, (Tensor(2, other=5.0), Tensor(2)))(x, out)
    torch.testing.assert_close(out, x.sum().reshape(1, 1))
