"""``sort`` and ``topk`` of floats order as torch's do: NaN the largest (last
ascending, first descending, taken first by ``topk``) and the result a
permutation of the row (``-0.0`` kept), where Triton's bitonic
compare-and-swap loses a NaN and duplicates a neighbour.  Floats are sorted
on an integer key of their bits (codegen/sorting.py)."""

import pytest
import torch

import ntsym
import ntsym.language as ntl
from ntsym import Tensor

NAN = float("nan")


def _sorted_rows(application, x, width):
    def arrangement(x, out):
        return x.tile((1, 8)), out.tile((1, width))

    out = torch.empty(x.shape[0], width)
    ntsym.make(arrangement, application, (Tensor(2), Tensor(2)))(x, out)
    return out


def test_sort_keeps_nan_and_puts_it_last():
    def application(x, out):
        out = ntl.sort(x, 1)  # noqa: F841

    x = torch.tensor([[3.0, NAN, 1.0, 2.0, 0.0, -1.0, 5.0, 4.0]])
    torch.testing.assert_close(_sorted_rows(application, x, 8), x.sort(1).values, equal_nan=True)


def test_descending_sort_of_a_padded_row_keeps_nan_first():
    def application(x, out):
        out = ntl.sort(x, 1, descending=True)  # noqa: F841

    x = torch.tensor([[3.0, NAN, 1.0, 2.0, 0.0]])
    torch.testing.assert_close(_sorted_rows(application, x, 5), x.sort(1, descending=True).values, equal_nan=True)


def test_topk_takes_nan_as_largest():
    def application(x, out):
        out = ntl.topk(x, 2, dim=1)  # noqa: F841

    x = torch.tensor([[3.0, NAN, 1.0, 2.0, 0.0, -1.0, 5.0, 4.0]])
    torch.testing.assert_close(_sorted_rows(application, x, 2), x.topk(2, 1).values, equal_nan=True)


def test_sort_returns_a_permutation_of_signed_zeros():
    def application(x, out):
        out = ntl.sort(x, 1)  # noqa: F841

    x = torch.tensor([[0.0, -0.0, 0.0, -0.0, 1.0, -1.0, 0.0, -0.0]])
    out = _sorted_rows(application, x, 8)
    assert int(torch.signbit(out).sum()) == int(torch.signbit(x).sum())


def test_ascending_sort_of_a_padded_row_keeps_nan_before_the_padding():
    def application(x, out):
        out = ntl.sort(x, 1)  # noqa: F841

    x = torch.tensor([[3.0, NAN, 1.0, float("inf"), -0.0], [NAN, NAN, -float("inf"), 2.0, 0.0]])
    out = _sorted_rows(application, x, 5)
    torch.testing.assert_close(out, x.sort(1).values, equal_nan=True)
    assert torch.equal(torch.signbit(out[0]), torch.signbit(x.sort(1).values[0]))


def _ascending(x, out):
    out = ntl.sort(x, 1)  # noqa: F841


def _descending(x, out):
    out = ntl.sort(x, 1, descending=True)  # noqa: F841


@pytest.mark.parametrize("dtype", [torch.float16, torch.float64])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_of_other_float_types_matches_torch(dtype, descending):
    def arrangement(x, out):
        return x.tile((1, 8)), out.tile((1, 8))

    x = torch.tensor([[2.5, NAN, -float("inf"), -0.0, 0.0, float("inf"), -3.0, 1e-3]], dtype=dtype)
    out = torch.empty_like(x)
    application = _descending if descending else _ascending
    ntsym.make(arrangement, application, (Tensor(2), Tensor(2)))(x, out)
    torch.testing.assert_close(out, x.sort(1, descending=descending).values, equal_nan=True)
    assert int(torch.signbit(out).sum()) == int(torch.signbit(x).sum())


def test_smallest_topk_leaves_nan_out():
    def application(x, out):
        out = ntl.topk(x, 2, dim=1, descending=False)  # noqa: F841

    x = torch.tensor([[3.0, NAN, 1.0, 2.0, 0.0, -1.0, 5.0, 4.0]])
    torch.testing.assert_close(_sorted_rows(application, x, 2), x.topk(2, 1, largest=False).values)


def test_integer_sort_of_a_padded_row_is_torchs():
    def arrangement(x, out):
        return x.tile((1, 8)), out.tile((1, 8))

    def application(x, out):
        out = ntl.sort(x, 1)  # noqa: F841

    x = torch.tensor([[7, -3, 2147483647, 0, -2147483648]], dtype=torch.int32)
    out = torch.empty_like(x)
    ntsym.make(arrangement, application, (Tensor(2), Tensor(2)))(x, out)
    torch.testing.assert_close(out, x.sort(1).values)
