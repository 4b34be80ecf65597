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
from tests.conftest import FP32_DOT_TOL


def _row(application, *extra, other=None):
    """A 1-D tile of 5 elements in a block of 8 (three padded lanes)."""
    def arrangement(x, *rest):
        *scalars, out = rest
        return (x.tile((8,)), *scalars, out.tile((1,)))

    return ntsym.make(arrangement, application, (Tensor(1, other=other), *extra, Tensor(1)))


def _row_form(form, other, x, tmp_path):
    """``out = <form>`` of ``x`` (5 elements in a block of 8, padded with
    ``other``), run; returns ``out``'s one value."""
    path = tmp_path / "row_form.py"
    path.write_text("import ntsym.language as ntl\n\n\n"
                    f"def application(x, out):\n    out = {form}  # noqa: F841\n")
    namespace = {"__file__": str(path)}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    out = torch.empty(1)
    _row(namespace["application"], other=other)(torch.tensor(x), out)
    return out[0]


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


def test_ties_to_the_right_count_the_lanes_of_a_broadcast_mask_along_the_reduced_axis():
    """The mask of a 2-D tile broadcast to 3-D has fewer axes than the value:
    the lanes inside are counted along the reduced axis of the value."""
    def arrangement(x, out):
        return x.tile((4, 4)), out.tile((2, 4))

    def application(x, out):
        y = x + ntl.zeros((2, 4, 4), ntl.float32)
        out = ntl.argmax(y, 1, tie_break_left=False)  # noqa: F841

    kernel = ntsym.make(arrangement, application, (Tensor(2), Tensor(2)))
    x = torch.tensor([[0.0, 5, 0, 0], [0, 0, 6, 0], [9, 0, 0, 7]])  # 3 rows in a block of 4
    out = torch.empty(2, 4, dtype=torch.int32)
    kernel(x, out)
    assert out.tolist() == [[2, 0, 1, 2]] * 2


def test_a_bitcast_keeps_no_lane_value():
    """Padded lanes of an int32 tile holding 1 are the float 1.4e-45 bitcast,
    not 1.0 - 1 = 0: they stay out of the sum."""
    def application(x, out):
        out = ntl.sum(x.to(ntl.float32, bitcast=True) - 1.0, 0).to(ntl.int32)  # noqa: F841

    x = torch.zeros(5, dtype=torch.int32)
    out = torch.empty(1, dtype=torch.int32)
    _row(application, other=1)(x, out)
    assert out.item() == -5


def test_a_value_of_the_data_through_an_integer_conversion_is_new_data():
    """``trunc(m) - m`` is not 0 for ``m = 1.5``: padded lanes of ``x + d``
    (0 + d) stay out of the sum."""
    def application(x, out):
        m = ntl.max(x)
        d = m.to(ntl.int32).to(ntl.float32) - m
        out = ntl.sum(x + d, 0)  # noqa: F841

    x = torch.full((5,), 1.5)
    out = torch.empty(1)
    _row(application, other=0.0)(x, out)
    assert out.item() == 5.0


def test_a_narrowing_float_conversion_keeps_only_values_every_float_holds():
    """1e5 in float16 is inf: ``x.to(float16) - 1e5`` of a padded 1e5 is not 0."""
    def application(x, out):
        y = ntl.cast(ntl.cast(x, ntl.float16), ntl.float32) - 100000.0
        out = ntl.sum(y, 0)  # noqa: F841

    x = torch.ones(5)
    out = torch.empty(1)
    _row(application, other=100000.0)(x, out)
    assert out.item() == -499995.0


def test_a_padded_zero_times_an_infinite_maximum_is_not_zero():
    """``0 * max(x)`` is NaN where an element is inf, while the elements'
    own lanes ``x * max(x)`` are inf: the padded lanes stay out of the sum."""
    def application(x, out):
        out = ntl.sum(x * ntl.max(x), 0)  # noqa: F841

    x = torch.tensor([1.0, 2.0, float("inf"), 3.0, 4.0])
    out = torch.empty(1)
    _row(application)(x, out)
    assert out.item() == float("inf")


def test_a_product_of_a_padded_product_with_an_infinite_element_is_not_nan():
    """``dot(dot(x, w1), w2)``: the first product's padded columns are
    ``x @ 0``, NaN where a row of ``x`` holds inf; the second product takes
    only the columns inside."""
    def arrangement(x, w1, w2, out):
        return x.tile((16, 16)), w1.tile((16, 32)), w2.tile((32, 16)), out.tile((16, 16))

    def application(x, w1, w2, out):
        out = ntl.dot(ntl.dot(x, w1), w2)  # noqa: F841

    kernel = ntsym.make(arrangement, application, (Tensor(2), Tensor(2), Tensor(2), Tensor(2)))
    x = torch.rand(16, 16)
    x[0, 0] = float("inf")
    w1 = torch.rand(16, 20) + 0.5
    w2 = torch.rand(20, 16) + 0.5
    out = torch.empty(16, 16)
    kernel(x, w1, w2, out)
    assert torch.isinf(out[0]).all()
    torch.testing.assert_close(out[1:], (x @ w1 @ w2)[1:], rtol=max(1e-3, FP32_DOT_TOL), atol=max(1e-3, FP32_DOT_TOL))


def test_a_padded_zero_times_an_infinite_element_of_another_tensor_is_not_zero():
    """``x * z`` with ``z`` one infinite element broadcast along x's padded
    lanes: those lanes are NaN, the elements' inf."""
    def arrangement(x, z, out):
        return x.tile((8,)), z.tile((1,)), out.tile((1,))

    def application(x, z, out):
        out = ntl.sum(x * z, 0)  # noqa: F841

    kernel = ntsym.make(arrangement, application, (Tensor(1), Tensor(1), Tensor(1)))
    out = torch.empty(1)
    kernel(torch.rand(5) + 1.0, torch.tensor([float("inf")]), out)
    assert out.item() == float("inf")


@pytest.mark.parametrize("form, other, x, expected", [
    # -inf + max(x): max(x) of +inf leaves the elements at inf, the padded lane NaN.
    ("ntl.max(x + ntl.max(x), 0)", float("-inf"), [1.0, 2.0, float("inf"), 3.0, 4.0], float("inf")),
    ("ntl.min(x + ntl.min(x), 0)", float("inf"), [1.0, float("-inf"), 2.0, 3.0, 4.0], float("-inf")),
    # A sum rounds to -inf with no infinite element: -inf - sum(x) is NaN on the padded lane.
    ("ntl.sum(ntl.exp(x - ntl.sum(x)), 0)", float("-inf"), [-3e38, -3e38, 0.0, 0.0, 0.0], float("inf")),
    # exp(100) is inf in float32: -inf + exp(max(x)) is NaN on the padded lane.
    ("ntl.max(x + ntl.exp(ntl.max(x)), 0)", float("-inf"), [100.0, 1.0, 2.0, 3.0, 4.0], float("inf")),
    # -inf - max(x) of the same lanes stays proved: every element -inf gives NaN, as torch's does.
    ("ntl.sum(ntl.exp(x - ntl.max(x)), 0)", float("-inf"), [1.0, 2.0, 3.0, 4.0, 5.0], None),
])
def test_a_padded_infinity_keeps_a_reduction_only_where_it_bounds_the_lanes(form, other, x, expected, tmp_path):
    """``-inf - m`` is ``-inf`` on a padded lane only where ``m`` is a maximum
    of the lanes beside it: otherwise ``m`` may be the infinity that makes
    the padded lane NaN while the elements' lanes are not."""
    out = _row_form(form, other, x, tmp_path)
    if expected is None:
        values = torch.tensor(x)
        torch.testing.assert_close(out, torch.exp(values - values.max()).sum())
    else:
        assert out.item() == expected


def test_a_running_maximum_in_a_loop_is_no_bound_of_a_sum():
    """``maximum(acc, x[0, k] + m)`` with ``m`` the row's running maximum and an
    inf element: the padded lanes of the last chunk are ``-inf + inf``."""
    def arrangement(x, out):
        return x.tile((1, 4)).tile((1, -1)), out.tile((1, 1))

    def application(x, out):
        m = ntl.full((1, 1), float("-inf"), ntl.float32)
        for k in range(x.shape[1]):
            m = ntl.maximum(m, ntl.max(x[0, k], 1, keep_dims=True))
        acc = ntl.full(x.dtype.shape, float("-inf"), ntl.float32)
        for k in range(x.shape[1]):
            acc = ntl.maximum(acc, x[0, k] + m)
        out = ntl.max(acc, 1, keep_dims=True)  # noqa: F841

    kernel = ntsym.make(arrangement, application, (Tensor(2, other=float("-inf")), Tensor(2)))
    out = torch.empty(1, 1)
    kernel(torch.tensor([[1.0, 2.0, float("inf"), 3.0, 4.0, 5.0, 6.0]]), out)
    assert out.item() == float("inf")


@pytest.mark.parametrize("form, other, x, expected", [
    # 2 * max(x) rounds to -inf where max(x) is finite: -inf - (-inf) is NaN on the padded lane.
    ("ntl.sum(ntl.exp(x - 2 * ntl.max(x, 0)), 0)", float("-inf"), [-2e38, -3e38, -2.5e38, -3e38, -2e38],
     float("inf")),
    # x - max(x) of a row of -inf is NaN on every lane, the padded ones too: a comparison counts them.
    ("ntl.sum(((x - ntl.max(x, 0)) != (x - ntl.max(x, 0))).to(ntl.float32), 0)", float("-inf"),
     [float("-inf")] * 5, 5.0),
    ("ntl.sum(((x - ntl.min(x, 0)) != (x - ntl.min(x, 0))).to(ntl.float32), 0)", float("inf"),
     [float("inf")] * 5, 5.0),
])
def test_a_lane_that_is_nan_where_the_elements_are_is_read_only_as_nan_passes(form, other, x, expected,
                                                                               tmp_path):
    """``-inf - max(x)`` is -inf on a padded lane, or NaN where the elements'
    own lanes are: only an operation passing NaN on may read it as -inf."""
    assert _row_form(form, other, x, tmp_path).item() == expected


@pytest.mark.parametrize("form, x, expected", [
    # log(-inf) is NaN on the device (SymPy: oo): min's padded lanes are not its identity.
    ("ntl.min(ntl.log(x), 0)", [1.0, 2.0, 3.0, 4.0, 5.0], 0.0),
    ("ntl.min(ntl.log2(x), 0)", [1.0, 2.0, 3.0, 4.0, 5.0], 0.0),
    # sin(-inf) is NaN (SymPy: an interval): not -inf - 1 <= ... <= -inf + 1.
    ("ntl.max(x + ntl.sin(x), 0)", [1.0, 2.0, 3.0, 4.0, 5.0], None),
])
def test_what_the_device_computes_on_a_padded_infinity(form, x, expected, tmp_path):
    out = _row_form(form, float("-inf"), x, tmp_path)
    if expected is None:
        values = torch.tensor(x)
        torch.testing.assert_close(out, (values + torch.sin(values)).max())
    else:
        assert out.item() == expected


def test_a_maximum_that_drops_nan_is_not_followed(tmp_path):
    """``maximum(v, -4, propagate_nan=NONE)`` may turn a NaN lane into -4 (a
    GPU's, and Triton 3.9's interpreter's; 3.6's keeps the NaN): the padded
    lanes of ``exp(x - max(x))`` of a row of -inf are NaN, so the sum reads
    them through the mask and takes 5 lanes' worth of what one lane gives."""
    form = "ntl.sum(ntl.maximum(ntl.exp(x - ntl.max(x)), -4, propagate_nan=ntl.PropagateNan.NONE))"
    five = _row_form(form, float("-inf"), [float("-inf")] * 5, tmp_path)
    eight = _row_form(form, float("-inf"), [float("-inf")] * 8, tmp_path)  # no lane outside
    torch.testing.assert_close(five, eight * 5 / 8, equal_nan=True)


@pytest.mark.parametrize("form, x", [
    # 2 * x rounds to -inf where x is finite: max(2 * x) is -inf, x - max(2 * x) is +inf.
    ("ntl.sum(ntl.exp(x - ntl.max(2 * x)))", [-2e38] * 5),
    # a maximum over part of the row is -inf where the elements are finite.
    ("ntl.sum(ntl.exp(x - ntl.max(ntl.where(x > 0, x, float('-inf')))))", [-1.0, -2.0, -3.0, -4.0, -5.0]),
])
def test_a_maximum_bounds_only_the_value_it_is_taken_of(form, x, tmp_path):
    """``-inf - m`` is taken as -inf only where ``m`` is the maximum of the
    value the -inf is a lane of: another value's maximum may be -inf where
    the elements are finite, the elements' lanes then +inf, not NaN."""
    assert _row_form(form, float("-inf"), x, tmp_path).item() == float("inf")


def test_a_padded_infinity_plus_another_tensors_infinity_is_not_the_identity():
    """``max(x + y)`` with ``x`` padded with -inf and ``y`` one +inf element
    broadcast: the padded lanes are NaN, the elements' inf."""
    def arrangement(x, y, out):
        return x.tile((8,)), y.tile((1,)), out.tile((1,))

    def application(x, y, out):
        out = ntl.max(x + y, 0)  # noqa: F841

    kernel = ntsym.make(arrangement, application, (Tensor(1, other=float("-inf")), Tensor(1), Tensor(1)))
    out = torch.empty(1)
    kernel(-torch.rand(5) - 1.0, torch.tensor([float("inf")]), out)
    assert out.item() == float("inf")
