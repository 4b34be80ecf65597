"""The application's operators mean what torch's mean: floored ``//`` and
``%``, NaN through ``maximum``/``minimum``/``clamp`` and the ``max``/``min``
reductions (codegen/semantics.py)."""

import math

import pytest
import torch

import ntsym
import ntsym.language as ntl
from ntsym import Tensor


def elementwise(application, n=3, block=16):
    return ntsym.make(lambda *ts: tuple(t.tile((block,)) for t in ts), application, tuple(Tensor(1) for _ in range(n)))


def floordiv_app(a, b, out):
    out = a // b  # noqa: F841


def mod_app(a, b, out):
    out = a % b  # noqa: F841


def augmented_app(a, b, out):
    q = a
    q //= b
    r = a
    r %= b
    out = q * 1000 + r  # noqa: F841


def mod_literal_app(a, b, out):
    out = a % 3 + b * 0  # noqa: F841


SIGNED = torch.tensor([-7, 7, -7, 7, -6, 0, -1, 1, 5, -5, -128, 127, 9, -9, 3, -3], dtype=torch.int32)
DIVISORS = torch.tensor([2, 2, -2, -2, 3, 5, 4, -4, -1, 1, 7, -7, 3, 3, -3, -3], dtype=torch.int32)


@pytest.mark.parametrize("dtype", [torch.int8, torch.int32, torch.int64])
def test_integer_floor_division_and_modulo_floor(dtype):
    a, b = SIGNED.to(dtype), DIVISORS.to(dtype)
    for application, expected in ((floordiv_app, torch.div(a, b, rounding_mode="floor")), (mod_app, a % b)):
        out = torch.empty_like(a)
        elementwise(application)(a, b, out)
        assert torch.equal(out, expected), (application.__name__, out, expected)


def test_augmented_assignments_floor():
    out = torch.empty_like(SIGNED)
    elementwise(augmented_app)(SIGNED, DIVISORS, out)
    assert torch.equal(out, torch.div(SIGNED, DIVISORS, rounding_mode="floor") * 1000 + SIGNED % DIVISORS)


def test_modulo_by_a_literal_floors():
    out = torch.empty_like(SIGNED)
    elementwise(mod_literal_app)(SIGNED, DIVISORS, out)
    assert torch.equal(out, SIGNED % 3)


def test_float_modulo_takes_the_divisors_sign():
    a = torch.tensor([-7.5, 7.5, -7.5, 7.5, -0.25, 3.0, -6.0, 1e-3])
    b = torch.tensor([2.0, 2.0, -2.0, -2.0, 1.0, 1.5, 4.0, -1.0])
    out = torch.empty_like(a)
    elementwise(mod_app)(a, b, out)
    torch.testing.assert_close(out, torch.remainder(a, b))


def test_unsigned_and_non_negative_operands_are_emitted_as_written():
    def offsets_app(a, out):
        out = a.offsets(0) // 4 + a.offsets(0) % 4 + a * 0  # noqa: F841

    kernel = elementwise(offsets_app, 2)
    assert "ntsym_py_" not in kernel.kernel_source
    a = torch.zeros(40, dtype=torch.int32)
    out = torch.empty_like(a)
    kernel(a, out)
    i = torch.arange(40, dtype=torch.int32)
    assert torch.equal(out, i // 4 + i % 4)
    a = torch.tensor([200, 7, 255, 0], dtype=torch.uint8)
    b = torch.tensor([7, 2, 16, 3], dtype=torch.uint8)
    out = torch.empty_like(a)
    elementwise(floordiv_app)(a, b, out)
    assert torch.equal(out, a // b)


NAN = math.nan
X = torch.tensor([1.0, NAN, -2.0, NAN, 0.5, 3.0, -1.0, 2.0])
Y = torch.tensor([0.0, 1.0, NAN, NAN, 1.5, -3.0, 0.0, 2.0])


def maximum_app(a, b, out):
    out = ntl.maximum(a, b) + ntl.minimum(a, b) * 10 + max(a, b) * 100  # noqa: F841


def clamp_app(a, b, out):
    out = ntl.clamp(a, -1.0, 1.0) + b * 0  # noqa: F841


def test_elementwise_maximum_minimum_and_clamp_propagate_nan():
    out = torch.empty_like(X)
    elementwise(maximum_app)(X, Y, out)
    expected = torch.maximum(X, Y) + torch.minimum(X, Y) * 10 + torch.maximum(X, Y) * 100
    torch.testing.assert_close(out, expected, equal_nan=True)
    out = torch.empty_like(X)
    elementwise(clamp_app)(X, Y.nan_to_num(), out)
    torch.testing.assert_close(out, X.clamp(-1, 1), equal_nan=True)


def row_reductions_app(x, out):
    out = ntl.max(x, 1, keep_dims=True) + ntl.min(x, axis=1, keep_dims=True) * 10  # noqa: F841


def test_max_and_min_reductions_propagate_nan():
    kernel = ntsym.make(lambda x, out: (x.tile((1, 8)), out.tile((1, 1))), row_reductions_app, (Tensor(2), Tensor(2)))
    x = torch.randn(4, 8)
    x[1, 3] = NAN
    x[3, 0] = NAN
    out = torch.empty(4, 1)
    kernel(x, out)
    torch.testing.assert_close(out[:, 0], x.amax(1) + x.amin(1) * 10, equal_nan=True)
    assert out[:, 0].isnan().tolist() == [False, True, False, True]
    assert "ntsym_max(" in kernel.kernel_source


def mixed_app(a, b, out):
    out = (a + b).to(ntl.int32) * 4 + (a < b)  # noqa: F841


def through_locals_app(a, b, out):
    m = ntl.maximum(a, a)
    low = m
    out = (ntl.where(low > 3, low, b)).to(ntl.int32)  # noqa: F841


def cast_app(a, b, out):
    out = (a.to(ntl.int16) + b).to(ntl.int32) * 4 + (a.to(ntl.int16) < b)  # noqa: F841


def test_uint8_meeting_int8_is_refused_by_name():
    a = torch.tensor([200, 100, 0, 255], dtype=torch.uint8)
    b = torch.tensor([100, -100, -1, 1], dtype=torch.int8)
    out = torch.empty(4, dtype=torch.int32)
    with pytest.raises(ntsym.LaunchError, match=r"(?s)`a` \(uint8\) and `b` \(int8\) meet in `a \+ b`.*int16"):
        elementwise(mixed_app)(a, b, out)
    with pytest.raises(ntsym.LaunchError, match=r"`a` \(uint8\) and `b` \(int8\) meet in `ntl.where\(low > 3, low, b\)`"):
        elementwise(through_locals_app)(a, b, out)
    # Cast in the application: torch's values.
    elementwise(cast_app)(a, b, out)
    assert torch.equal(out, (a + b).to(torch.int32) * 4 + (a < b))
    # One signedness, or uint8 with a wider signed type: Triton promotes as torch does.
    for other in (b.to(torch.int16), b.to(torch.int32), (b.abs()).to(torch.uint8)):
        elementwise(mixed_app)(a, other, out)
        assert torch.equal(out, (a + other).to(torch.int32) * 4 + (a < other)), other.dtype


def row_arg_app(x, out):
    out = ntl.argmax(x, 1, keep_dims=True) * 10 + ntl.argmin(x, 1, keep_dims=True)  # noqa: F841


def test_argmax_and_argmin_point_at_the_first_nan():
    kernel = ntsym.make(lambda x, out: (x.tile((1, 8)), out.tile((1, 1))), row_arg_app, (Tensor(2), Tensor(2)))
    x = torch.randn(4, 8)
    x[1, 3] = NAN
    x[3, 5] = NAN
    x[3, 6] = NAN
    out = torch.empty(4, 1, dtype=torch.int64)
    kernel(x, out)
    assert torch.equal(out[:, 0], x.argmax(1) * 10 + x.argmin(1))


FLOATS = torch.tensor([-7.5, 7.5, -7.5, 7.5, 0.0, -0.0, 1.0, -1.0, math.inf, math.nan, 5.0, -5.0, 1.0, -1.0, 0.3, 1e30])
FLOAT_DIVISORS = torch.tensor([2.0, -2.0, -2.0, 2.0, 3.0, 3.0, 0.0, 0.0, 2.0, 1.0, math.inf, math.inf, -math.inf,
                               -math.inf, 0.1, 3.0])


def _same_floats(out, expected):
    """Equal values, NaN where expected, and the same sign bits (signed zeros)."""
    return torch.equal(out.isnan(), expected.isnan()) and torch.equal(out.nan_to_num(), expected.nan_to_num()) \
        and torch.equal(out.signbit() | out.isnan(), expected.signbit() | expected.isnan())


def _unary(application, a, out):
    ntsym.make(lambda a, out: (a.tile((16,)), out.tile((16,))), application, (Tensor(1), Tensor(1)))(a, out)


def _by_a_float_literal(a, out):
    out = a // 2.5  # noqa: F841


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.float64])
def test_float_floor_division_and_modulo_are_torchs(dtype):
    a, b = FLOATS.to(dtype), FLOAT_DIVISORS.to(dtype)
    for application, expected in ((floordiv_app, torch.floor_divide(a, b)), (mod_app, torch.remainder(a, b))):
        out = torch.empty_like(a)
        elementwise(application)(a, b, out)
        assert _same_floats(out, expected), (application.__name__, out, expected)
    out = torch.empty_like(a)
    _unary(_by_a_float_literal, a, out)
    assert _same_floats(out, torch.floor_divide(a, 2.5)), (out, torch.floor_divide(a, 2.5))


def test_an_integer_tile_floor_divided_by_a_float_literal_is_a_float():
    out = torch.empty(16)
    _unary(_by_a_float_literal, SIGNED, out)
    assert _same_floats(out, torch.floor_divide(SIGNED, 2.5))
