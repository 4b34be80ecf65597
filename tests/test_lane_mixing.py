"""Operations that mix lanes read the tensor's elements only: ``topk``,
``histogram`` and ``reduce_or`` of a padded tile never take in the lanes it
holds past the tensor's end (its ``other``); a ``tl`` function ntsym does not
read through the mask is refused where its operand holds such lanes."""

import pytest
import torch

import ntsym
import ntsym.language as ntl
from ntsym import Tensor


def test_topk_of_a_padded_row_reads_the_row_only():
    def arrangement(x, out):
        return x.tile((1, 8)), out.tile((1, 2))

    def application(x, out):
        out = ntl.topk(x, 2, dim=1)  # noqa: F841

    x = -(torch.rand(3, 5) + 1)
    out = torch.empty(3, 2)
    kernel = ntsym.make(arrangement, application, (Tensor(2), Tensor(2)))
    kernel(x, out)
    torch.testing.assert_close(out, x.topk(2, 1).values)


def test_histogram_of_a_padded_tile_counts_the_elements_only():
    def arrangement(x, out):
        return x.tile((8,)), out.tile((4,))

    def application(x, out):
        out = ntl.histogram(x, 4)  # noqa: F841

    x = torch.tensor([1, 2, 3, 1, 2], dtype=torch.int32)
    out = torch.empty(4, dtype=torch.int32)
    kernel = ntsym.make(arrangement, application, (Tensor(1), Tensor(1)))
    kernel(x, out)
    torch.testing.assert_close(out, torch.bincount(x, minlength=4).to(torch.int32))


def test_reduce_or_of_a_padded_row_with_other_reads_the_row_only():
    def arrangement(x, out):
        return x.tile((1, 8)), out.tile((1, 1))

    def application(x, out):
        out = ntl.reduce_or(x, 1, keep_dims=True)  # noqa: F841

    x = torch.tensor([[0, 2, 4, 0, 0], [0, 0, 0, 0, 0], [8, 0, 0, 0, 1]], dtype=torch.int32)
    out = torch.empty(3, 1, dtype=torch.int32)
    kernel = ntsym.make(arrangement, application, (Tensor(2, other=1), Tensor(2)))
    kernel(x, out)
    expected = x[:, :1].clone()
    for j in range(1, 5):
        expected |= x[:, j:j + 1]
    torch.testing.assert_close(out, expected)


def test_topk_ascending_of_a_padded_row_reads_the_row_only():
    def arrangement(x, out):
        return x.tile((1, 8)), out.tile((1, 2))

    def application(x, out):
        out = ntl.topk(x, 2, dim=1, descending=False)  # noqa: F841

    x = torch.rand(3, 5) + 1
    out = torch.empty(3, 2)
    ntsym.make(arrangement, application, (Tensor(2), Tensor(2)))(x, out)
    torch.testing.assert_close(out, x.topk(2, 1, largest=False).values)


def test_gather_of_a_padded_tile_is_refused_by_name():
    def arrangement(x, i, out):
        return x.tile((8,)), i.tile((8,)), out.tile((8,))

    def application(x, i, out):
        out = ntl.gather(x, i, 0)  # noqa: F841

    with pytest.raises(ntsym.ApplicationError, match=r"`tl.gather` may combine the lanes of its operand `x`"):
        kernel = ntsym.make(arrangement, application, (Tensor(1), Tensor(1), Tensor(1)))
        kernel(torch.rand(5), torch.zeros(5, dtype=torch.int32), torch.empty(5))


def test_gather_method_of_a_padded_tile_is_refused_by_name():
    def arrangement(x, i, out):
        return x.tile((8,)), i.tile((8,)), out.tile((8,))

    def application(x, i, out):
        out = x.gather(i, 0)  # noqa: F841

    with pytest.raises(ntsym.ApplicationError, match=r"`tl.gather` may combine the lanes of its operand `x`"):
        kernel = ntsym.make(arrangement, application, (Tensor(1), Tensor(1), Tensor(1)))
        kernel(torch.rand(5), torch.zeros(5, dtype=torch.int32), torch.empty(5))


def test_gather_by_a_padded_index_runs():
    def arrangement(i, out):
        return i.tile((8,)), out.tile((8,))

    def application(i, out):
        out = ntl.gather(ntl.arange(0, 8) * 3, i, 0)  # noqa: F841

    index = torch.tensor([3, 0, 7, 1, 2], dtype=torch.int32)
    out = torch.empty(5, dtype=torch.int32)
    ntsym.make(arrangement, application, (Tensor(1), Tensor(1)))(index, out)
    torch.testing.assert_close(out, index * 3)
