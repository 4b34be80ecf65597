"""Reductions over padded tiles read the tensor's elements only: lanes past the
tensor's end hold the load's ``other`` (0 by default), which must not win a
max, point an argmax past the row, or add exp(0) to a sum."""

import pytest
import torch

import ntsym
import ntsym.language as ntl
import triton  # after ntsym, which selects the interpreter without a GPU
from ntsym import Tensor
from tests.conftest import FP32_DOT_TOL


def rows(x, out):
    return x.tile((1, -1)), out.tile((1,))


def make(application, other=None, out_dtype=None):
    return ntsym.make(rows, application, (Tensor(2, other=other), Tensor(1)))


def app_max(x, out):
    out = ntl.max(x, axis=1)  # noqa: F841


def app_min(x, out):
    out = ntl.min(x, axis=1)  # noqa: F841


def app_argmax(x, out):
    out = ntl.argmax(x, axis=1)  # noqa: F841


def app_argmin(x, out):
    out = ntl.argmin(x, axis=1)  # noqa: F841


def app_sum_exp(x, out):
    out = ntl.sum(ntl.exp(x), axis=1)  # noqa: F841


def app_local_chain(x, out):
    y = x * 2.0 + 1.0
    z = y.to(ntl.float32)
    out = ntl.max(z, axis=1)  # noqa: F841


CASES = [
    (app_max, lambda x: x.max(1).values, -1, torch.float32),
    (app_min, lambda x: x.min(1).values, 1, torch.float32),
    (app_argmax, lambda x: x.argmax(1), -1, torch.int64),
    (app_argmin, lambda x: x.argmin(1), 1, torch.int64),
    (app_sum_exp, lambda x: x.exp().sum(1), 1, torch.float32),
    (app_local_chain, lambda x: (x * 2 + 1).max(1).values, -1, torch.float32),
]


@pytest.mark.parametrize("application, reference, sign, dtype", CASES, ids=[c[0].__name__ for c in CASES])
@pytest.mark.parametrize("columns", [7, 8, 13])
def test_padded_lanes_never_enter_a_reduction(application, reference, sign, dtype, columns):
    kernel = make(application)
    # All negative (or all positive): a padded lane holding 0 would win.
    x = sign * (torch.rand(5, columns) + 1.0)
    out = torch.empty(5, dtype=dtype)
    kernel(x, out)
    torch.testing.assert_close(out, reference(x).to(dtype))


def test_lanes_that_hold_the_identity_add_nothing():
    def softmax_denominator(x, out):
        out = ntl.sum(ntl.exp(x - ntl.max(x)), axis=1)  # noqa: F841

    kernel = make(softmax_denominator, other=float("-inf"))
    assert "tl.where" not in kernel.kernel_source  # -inf into max, exp(-inf - max(x)) = 0 into sum
    x = torch.randn(3, 5)
    out = torch.empty(3)
    kernel(x, out)
    torch.testing.assert_close(out, torch.exp(x - x.max(1, keepdim=True).values).sum(1))


def test_a_padded_zero_divided_by_a_sum_is_read_through_the_mask():
    """``0 / sum(e)`` is NaN where the sum is 0 (elements of both signs, or
    rounding), where the elements' own lanes are infinite: the sum of the
    quotients reads the padded lanes through the mask."""
    def softmax(x, out):
        row = ntl.exp(x - ntl.max(x))
        out = ntl.sum(row / ntl.sum(row), axis=1)  # noqa: F841

    kernel = make(softmax, other=float("-inf"))
    assert "tl.where" in kernel.kernel_source
    x = torch.randn(3, 5)
    out = torch.empty(3)
    kernel(x, out)
    torch.testing.assert_close(out, torch.ones(3))


def test_a_reduction_of_a_default_padded_tile_reads_through_the_mask():
    kernel = make(app_max)
    assert "ntsym_max(ntsym_lowest(" in kernel.source  # masked, then reduced propagating NaN


def test_a_sum_of_zero_padded_lanes_adds_nothing():
    def total(x, out):
        out = ntl.sum(x * x, axis=1)  # noqa: F841

    kernel = make(total)
    assert "tl.where" not in kernel.source
    x = torch.randn(4, 6)
    out = torch.empty(4)
    kernel(x, out)
    torch.testing.assert_close(out, (x * x).sum(1))


def test_two_dimensional_tiles_padded_along_both_axes():
    def arrangement(x, out, B=ntsym.block_size()):
        return x.tile((-1, B)), out.tile((B,))

    def column_max(x, out):
        out = ntl.max(x, axis=0)  # noqa: F841

    kernel = ntsym.make(arrangement, column_max, (Tensor(2), Tensor(1)))
    x = -(torch.rand(5, 70) + 1.0)  # 5 rows padded to 8, 70 columns in blocks of 32
    out = torch.empty(70)
    kernel(x, out, B=32)
    torch.testing.assert_close(out, x.max(0).values)


def test_a_value_assigned_in_a_branch_is_not_followed():
    def branchy(x, out):
        y = x
        if x.shape[1] > 2:
            y = x * 2.0
        out = ntl.sum(y, axis=1)  # noqa: F841

    kernel = make(branchy)
    x = torch.randn(3, 5)
    out = torch.empty(3)
    kernel(x, out)
    torch.testing.assert_close(out, (2 * x).sum(1))


def _streaming(application):
    from examples import mm

    BM, BN, BK = (ntsym.block_size(lower_bound=16) for _ in range(3))

    def arrangement(input, other, output, BM=BM, BN=BN, BK=BK):
        return mm.arrangement(input, other, output, BM, BN, BK)

    return ntsym.make(arrangement, application, (Tensor(2), Tensor(2), Tensor(2)))


def test_reductions_of_subscripted_tiles_in_a_loop():
    def application(input, other, output):
        best = ntl.full((1,), float("-inf"), dtype=ntl.float32)
        for k in range(input.shape[0]):
            best = ntl.maximum(best, ntl.max(input[k]))
        output = ntl.zeros(output.shape, dtype=ntl.float32) + best  # noqa: F841

    kernel = _streaming(application)
    # The zeros a descriptor loads past the tensor are left out of the max
    # with the pointer load's mask, in the persistent variant too.
    variant = kernel.source[kernel.source.index("_persistent("):]
    assert "input_desc.load(" in variant and "ntsym_lowest(" in variant
    a, b = -(torch.rand(20, 40) + 1.0), torch.randn(40, 24)  # 40 columns in blocks of 16: padded
    rows = torch.stack([a[0:16].max(), a[16:20].max()])
    for options in (None, {"persistent": True}):
        out = torch.empty(20, 24)
        kernel(a, b, out, BM=16, BN=16, BK=16, ntsym_options=options)
        torch.testing.assert_close(out, rows.repeat_interleave(torch.tensor([16, 4]))[:, None].expand(20, 24))


def test_a_sum_over_descriptor_zeros_keeps_the_persistent_variant():
    def application(input, other, output):
        total = ntl.zeros((1,), dtype=ntl.float32)
        accumulator = ntl.zeros(output.shape, dtype=ntl.float32)
        for k in range(input.shape[0]):
            accumulator += ntl.dot(input[k], other[k])
            total += ntl.sum(input[k])
        output = accumulator + total  # noqa: F841

    kernel = _streaming(application)
    if "make_tensor_descriptor" in kernel.source:  # this Triton has tensor descriptors
        assert "_persistent(" in kernel.source
    a, b = torch.randn(20, 40), torch.randn(40, 24)
    out = torch.empty(20, 24)
    kernel(a, b, out, BM=16, BN=16, BK=16)
    sums = torch.stack([a[0:16].sum(), a[16:20].sum()]).repeat_interleave(torch.tensor([16, 4]))
    torch.testing.assert_close(out, a @ b + sums[:, None], atol=max(1e-3, FP32_DOT_TOL), rtol=max(1e-3, FP32_DOT_TOL))


# -- a combine function passed to reduce ------------------------------------------------------

@triton.jit
def _product(a, b):
    return a * b


@triton.jit
def _larger(a, b):
    return ntl.maximum(a, _twice(b) * 0.5)


@triton.jit
def _twice(v):
    return v * 2.0


def _rows_of(exact=False):
    """Whole rows; exact: of a compile-time power-of-two width (no lane outside)."""
    x = Tensor(2, shape_options=(None, {"constexpr": True, "power_of_two": True})) if exact else Tensor(2)
    return lambda app: ntsym.make(rows, app, (x, Tensor(1)))


@pytest.mark.parametrize("columns", [5, 8])
def test_reduce_with_a_combine_function_leaves_lanes_outside_out(columns):
    # Rows of 5 in blocks of 8: the padding (0) would zero the product and
    # top the max of negative rows; rows of 8 have no lane outside.
    def product(x, out):
        out = ntl.reduce(x, 1, _product)  # noqa: F841

    def largest(x, out):
        out = ntl.reshape(ntl.reduce(x, axis=1, combine_fn=_larger, keep_dims=True), (1,))  # noqa: F841

    x = -(torch.rand(3, columns) + 0.5)
    out = torch.empty(3)
    _rows_of()(product)(x, out)
    torch.testing.assert_close(out, x.prod(1))
    _rows_of()(largest)(x, out)
    torch.testing.assert_close(out, x.max(1).values)


def test_reduce_with_a_combine_function_over_a_whole_tile_is_reduced_as_written():
    def product(x, out):
        out = ntl.reduce(x, 1, _product)  # noqa: F841

    kernel = _rows_of(exact=True)(product)
    assert "ntsym_masked" not in kernel.source and "def ntsym_fn__product(a, b)" in kernel.source
    x = torch.rand(3, 4) + 0.5
    out = torch.empty(3)
    kernel(x, out)
    torch.testing.assert_close(out, x.prod(1))


def test_associative_scan_with_a_combine_function_over_a_whole_tile():
    def running(x, out):
        out = ntl.sum(ntl.associative_scan(x, 1, _product), axis=1)  # noqa: F841

    x = torch.rand(3, 4) + 0.5
    out = torch.empty(3)
    _rows_of(exact=True)(running)(x, out)
    torch.testing.assert_close(out, x.cumprod(1).sum(1))
