"""Operations that mix lanes but are not read through the mask of the lanes
inside the tensor: ``topk``, ``histogram`` and ``reduce_or`` take in the
lanes a padded tile holds past the tensor's end (its ``other``, 0 by default),
and the result is wrong without an error.  Each test fails while they are
(strict xfail): it documents the wrong result and passes once they read
through the mask or are refused by name."""

import pytest
import torch

import ntsym
import ntsym.language as ntl
from ntsym import Tensor


def _result_or_refusal(kernel, *args):
    """Run the kernel; a refusal by an ntsym error is as good as the right result."""
    try:
        kernel(*args)
    except ntsym.NtsymError:
        return False
    return True


@pytest.mark.xfail(strict=True, reason="topk takes in the padded lanes: rows of 5 negative numbers in a block "
                   "of 8 give the padding's zeros as the two largest")
def test_topk_of_a_padded_row_reads_the_row_only():
    def arrangement(x, out):
        return x.tile((1, 8)), out.tile((1, 2))

    def application(x, out):
        out = ntl.topk(x, 2, dim=1)  # noqa: F841

    x = -(torch.rand(3, 5) + 1)
    out = torch.empty(3, 2)
    kernel = ntsym.make(arrangement, application, (Tensor(2), Tensor(2)))
    if _result_or_refusal(kernel, x, out):
        torch.testing.assert_close(out, x.topk(2, 1).values)


@pytest.mark.xfail(strict=True, reason="histogram counts the padded lanes: 3 lanes past a 5-element tile add 3 "
                   "to bin 0")
def test_histogram_of_a_padded_tile_counts_the_elements_only():
    def arrangement(x, out):
        return x.tile((8,)), out.tile((4,))

    def application(x, out):
        out = ntl.histogram(x, 4)  # noqa: F841

    x = torch.tensor([1, 2, 3, 1, 2], dtype=torch.int32)
    out = torch.empty(4, dtype=torch.int32)
    kernel = ntsym.make(arrangement, application, (Tensor(1), Tensor(1)))
    if _result_or_refusal(kernel, x, out):
        torch.testing.assert_close(out, torch.bincount(x, minlength=4).to(torch.int32))


@pytest.mark.xfail(strict=True, reason="reduce_or takes in the padded lanes: with other=1 every row's OR gains "
                   "bit 0")
def test_reduce_or_of_a_padded_row_with_other_reads_the_row_only():
    def arrangement(x, out):
        return x.tile((1, 8)), out.tile((1, 1))

    def application(x, out):
        out = ntl.reduce_or(x, 1, keep_dims=True)  # noqa: F841

    x = torch.tensor([[0, 2, 4, 0, 0], [0, 0, 0, 0, 0], [8, 0, 0, 0, 1]], dtype=torch.int32)
    out = torch.empty(3, 1, dtype=torch.int32)
    kernel = ntsym.make(arrangement, application, (Tensor(2, other=1), Tensor(2)))
    if _result_or_refusal(kernel, x, out):
        expected = x[:, :1].clone()
        for j in range(1, 5):
            expected |= x[:, j:j + 1]
        torch.testing.assert_close(out, expected)
