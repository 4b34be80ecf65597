"""What the lanes outside a tensor hold is proved only with arithmetic that
holds for every element: elements may be infinite or NaN, and a cast to an
integer type of an infinite value is undefined.  Each case mixes padded lanes
into a reduction where a proof that forgets this would drop the mask; each is
compared with torch on the elements alone."""

import pytest
import torch

import ntsym
import ntsym.language as ntl
from ntsym import Tensor


def _row(application, *extra, other=None):
    """A 1-D tile of 5 elements in a block of 8 (three padded lanes)."""
    def arrangement(x, *rest):
        *scalars, out = rest
        return (x.tile((8,)), *scalars, out.tile((1,)))

    return ntsym.make(arrangement, application, (Tensor(1, other=other), *extra, Tensor(1)))


def test_a_padded_zero_divided_by_a_zero_scalar_is_not_zero():
    """0 / s is NaN where s is 0: the padded lanes stay out of the sum."""
    def application(x, s, out):
        out = ntl.sum(x / s, 0)  # noqa: F841

    x = -(torch.rand(5) + 1.0)
    out = torch.empty(1)
    _row(application, Tensor(0))(x, 0.0, out)
    assert out.item() == float("-inf")


def test_a_padded_infinity_plus_an_infinite_scalar_is_not_infinite():
    """-inf + s is NaN where s is +inf: max takes the elements only."""
    def application(x, s, out):
        out = ntl.max(x + s, 0)  # noqa: F841

    x = -(torch.rand(5) + 1.0)
    out = torch.empty(1)
    _row(application, Tensor(0), other=float("-inf"))(x, float("inf"), out)
    assert out.item() == float("inf")


def test_a_padded_infinity_cast_to_an_integer_is_not_the_lowest_integer():
    """float -inf cast to an integer type is undefined (the interpreter gives
    0): the padded lanes stay out of the maximum of the cast."""
    def application(x, out):
        out = ntl.max(x.to(ntl.int8), 0).to(ntl.int32)  # noqa: F841

    x = -torch.arange(1.0, 6.0)
    out = torch.empty(1, dtype=torch.int32)
    _row(application, other=float("-inf"))(x, out)
    assert out.item() == -1


def test_a_padded_infinity_cast_to_an_integer_by_function_is_not_the_highest_integer():
    def application(x, out):
        out = ntl.min(ntl.cast(x, ntl.int16), 0).to(ntl.int32)  # noqa: F841

    x = torch.arange(1.0, 6.0)
    out = torch.empty(1, dtype=torch.int32)
    _row(application, other=float("inf"))(x, out)
    assert out.item() == 1


def test_a_where_proved_true_keeps_the_shape_of_its_condition():
    """``where(c, v, 0)`` with ``c`` true for every lane still broadcasts ``v``
    to ``c``'s shape: the sum over the rows counts each row."""
    def arrangement(x, out):
        return x.tile((4, 8)), out.tile((1, 8))

    def application(x, out):
        column = ntl.sum(x, 0)[None, :]  # (1, 8)
        rows = ntl.where(x.offsets(0)[:, None] >= 0, column, 0.0)  # (4, 8)
        out = ntl.sum(rows, 0)[None, :]  # noqa: F841

    kernel = ntsym.make(arrangement, application, (Tensor(2), Tensor(2)))
    x = torch.randn(4, 8)
    out = torch.empty(1, 8)
    kernel(x, out)
    torch.testing.assert_close(out, 4 * x.sum(0, keepdim=True))


def test_flip_of_a_reshaped_padded_tile_is_refused():
    """A reshaped tile's lanes inside are no prefix of the row: flipping them
    among themselves is not what ``ntsym_flip`` does, so the kernel is refused."""
    def arrangement(x, out):
        return x.tile((4, 8)), out.tile((1, 1))

    def application(x, out):
        f = ntl.flip(ntl.reshape(x, (32,)), 0)
        out = ntl.max(f, 0)[None, None] + ntl.zeros((1, 1), ntl.float32)  # noqa: F841

    with pytest.raises(ntsym.NtsymError, match="flip"):
        kernel = ntsym.make(arrangement, application, (Tensor(2), Tensor(2)))
        x = -(torch.rand(3, 5) + 1.0)
        out = torch.empty(1, 1)
        kernel(x, out)


def test_a_walrus_assignment_is_refused():
    def application(x, out):
        key = x.offsets(0)
        y = (key := key - 4)  # noqa: F841
        w = ntl.where(key < x.source.shape[0], x, float("-inf"))
        out = ntl.max(w, 0)  # noqa: F841

    with pytest.raises(ntsym.NtsymError, match=":="):
        _row(application)(-(torch.rand(5) + 1.0), torch.empty(1))


def test_a_product_of_padded_rows_with_an_infinite_element_stays_out_of_a_sum():
    """A padded row of ``a`` (zeros) times a column of ``b`` holding inf is
    NaN, not 0: the sum over the rows of ``dot(a, b)`` masks them."""
    def arrangement(a, b, out):
        return a.tile((8, 16)), b.tile((16, 16)), out.tile((1, 16))

    def application(a, b, out):
        out = ntl.sum(ntl.dot(a, b), 0)[None, :]  # noqa: F841

    kernel = ntsym.make(arrangement, application, (Tensor(2), Tensor(2), Tensor(2)))
    a = torch.rand(5, 16) + 0.5  # 5 rows in a block of 8
    b = torch.ones(16, 16)
    b[0, 0] = float("inf")
    out = torch.empty(1, 16)
    kernel(a, b, out)
    torch.testing.assert_close(out, (a @ b).sum(0, keepdim=True))


@pytest.mark.parametrize("name, fill", [("argmax", float("-inf")), ("argmin", float("inf"))])
def test_ties_broken_to_the_right_stay_inside_the_row(name, fill):
    """Every element equals the identity the lanes outside hold: a GPU's
    rightmost tie would be a lane past the row, so the index is clamped to
    the row's last element (the interpreter breaks ties to the left)."""
    def argmax_app(x, out):
        out = ntl.argmax(x, 0, tie_break_left=False)  # noqa: F841

    def argmin_app(x, out):
        out = ntl.argmin(x, 0, tie_break_left=False)  # noqa: F841

    kernel = _row(argmax_app if name == "argmax" else argmin_app)
    assert "tl.minimum(" in kernel.kernel_source
    out = torch.empty(1, dtype=torch.int64)
    kernel(torch.full((5,), fill), out)
    assert 0 <= out.item() <= 4
    kernel(torch.tensor([1.0, 3.0, 3.0, 2.0, 0.0]) * (1 if name == "argmax" else -1), out)
    assert out.item() in (1, 2)


def test_max_with_indices_tied_to_the_right_over_lanes_outside_is_refused():
    def application(x, out):
        value, index = ntl.max(x, 0, return_indices=True, return_indices_tie_break_left=False)
        out = index  # noqa: F841

    with pytest.raises(ntsym.NtsymError, match="return_indices_tie_break_left"):
        _row(application)(torch.randn(5), torch.empty(1, dtype=torch.int64))
