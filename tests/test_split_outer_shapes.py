"""Outermost shapes of different lengths that pair with the grid in no single
way: ``(a, cdiv(b, B))`` beside ``(cdiv(n, B),)``, where ``a`` or
``cdiv(b, B)`` may be 1 at launch, or neither (a row-major split, a flatten).
NineToothed launches one program per element of the first tensor's outermost
shape and gives every tensor the program id unravelled over its own
outermost shape; ntsym does the same for such tensors, and checks at launch
that a written one has one tile per program and a read one at least one.
Each result is compared with torch and with a simulation of NineToothed's
launch built from its own arrangement (``ninetoothed.eval``) and its own
``Tensor._unravel_index``."""

import math

import numpy as np
import pytest
import torch

import ntsym
from ntsym import Tensor
from ntsym.errors import LaunchError

nt = pytest.importorskip("ninetoothed")

B = ntsym.block_size(lower_bound=1, upper_bound=16)


def _rows(t, block):
    """A 2-D tensor in tiles of one row and ``block`` columns, the row squeezed."""
    arranged = t.tile((1, block))
    arranged.dtype = arranged.dtype.squeeze(0)
    return arranged


def double_app(x, y):
    y = x * 2  # noqa: F841


def _ninetoothed_double(shapes, arrange, written, block):
    """``written`` after NineToothed's launch of ``double_app`` over tensors
    of ``shapes`` arranged by ``arrange`` (with ``block`` for B): per program,
    each tensor's tile at the program id unravelled over its outermost shape;
    lanes outside read 0 and are not stored."""
    arranged = arrange(*(nt.Tensor(shape=s) for s in shapes), block)
    offsets = [nt.eval(t) for t in arranged]
    outer = [tuple(t.shape) for t in arranged]
    x_off, y_off = offsets
    x_data, y_data = (t.reshape(-1).numpy() for t in written)
    y_data = y_data.copy()
    for pid in range(math.prod(outer[0])):
        xs = x_off[nt.Tensor._unravel_index(pid, outer[0])]
        ys = y_off[nt.Tensor._unravel_index(pid, outer[1])]
        values = np.where(xs >= 0, x_data[np.maximum(xs, 0)], 0) * 2
        y_data[ys[ys >= 0]] = values[ys >= 0]
    return torch.from_numpy(y_data).reshape(written[1].shape)


def rows_then_flat(x, y, block):
    return _rows(x, block), y.tile((block,))


def flat_then_rows(x, y, block):
    return x.tile((block,)), _rows(y, block)


@pytest.mark.parametrize("shape, block", [((1, 10), 4), ((10, 1), 1), ((3, 8), 4), ((2, 12), 4)])
def test_rows_written_flat_as_ninetoothed_splits_them(shape, block):
    """The grid is (a, cdiv(b, B)); `y` has (cdiv(n, B),): either grid
    dimension of size 1 pairs them, and otherwise programs take `y`'s tiles
    in row-major order (a flatten where B divides b)."""
    k = ntsym.make(lambda x, y: rows_then_flat(x, y, B), double_app, (Tensor(2), Tensor(1)))
    x = torch.randn(shape)
    y = torch.zeros(x.numel())
    k(x, y, B=block)
    expected = _ninetoothed_double([shape, (x.numel(),)], rows_then_flat, (x, torch.zeros_like(y)), block)
    torch.testing.assert_close(y, expected)
    torch.testing.assert_close(y, x.reshape(-1) * 2)


@pytest.mark.parametrize("shape, block", [((1, 10), 4), ((5, 2), 2), ((3, 8), 4)])
def test_flat_read_into_rows_as_ninetoothed_splits_them(shape, block):
    k = ntsym.make(lambda x, y: flat_then_rows(x, y, B), double_app, (Tensor(1), Tensor(2)))
    x = torch.randn(math.prod(shape))
    y = torch.zeros(shape)
    k(x, y, B=block)
    expected = _ninetoothed_double([(x.numel(),), shape], flat_then_rows, (x, torch.zeros(shape)), block)
    torch.testing.assert_close(y, expected)
    torch.testing.assert_close(y, x.reshape(shape) * 2)


def test_a_written_tensor_with_other_than_one_tile_per_program_is_refused():
    k = ntsym.make(lambda x, y: rows_then_flat(x, y, B), double_app, (Tensor(2), Tensor(1)))
    y = torch.zeros(30)
    with pytest.raises(LaunchError, match=r"(?s)cdiv\(y.shape\[0\], B\) \(=8.*must equal "
                                          r"x.shape\[0\]\*cdiv\(x.shape\[1\], B\) \(=9.*pairs dimension by dimension "
                                          r"where x.shape\[0\] == 1, or cdiv\(x.shape\[1\], B\) == 1"):
        k(torch.randn(3, 10), y, B=4)  # rows of 10 in tiles of 4: 9 programs, 8 tiles of y
    assert (y == 0).all()


def gather_app(y, x):
    y = x * 2  # noqa: F841


def flat_out_rows_in(y, x):
    return y.tile((B,)), _rows(x, B)


def test_a_read_tensor_may_have_more_tiles_than_programs_and_not_fewer():
    """`x` is only read: programs take its first tiles in row-major order,
    the rest are not read (as in NineToothed); fewer tiles than programs
    would leave programs reading none."""
    k = ntsym.make(flat_out_rows_in, gather_app, (Tensor(1), Tensor(2)))
    x = torch.randn(3, 4)
    y = torch.zeros(8)
    k(y, x, B=4)
    torch.testing.assert_close(y, x.reshape(-1)[:8] * 2)
    with pytest.raises(LaunchError, match=r"(?s)cdiv\(y.shape\[0\], B\) \(=4.*must be <= "
                                          r"x.shape\[0\]\*cdiv\(x.shape\[1\], B\) \(=3.*each program reads"):
        k(torch.zeros(16), x, B=4)


def test_a_jagged_tensor_is_not_split():
    """A jagged tensor's batch index must be a grid dimension's (its rows'
    offsets are read at that index): shapes pairing in no single way with
    one are refused at make, saying so."""
    def jagged_rows_then_flat(x, y):
        return rows_then_flat(x, y, B)

    with pytest.raises(ntsym.ArrangementError, match="one of them is a jagged tensor, whose batch must take a "
                                                     "grid dimension of its own"):
        ntsym.make(jagged_rows_then_flat, double_app, (Tensor(2, jagged_dim=1), Tensor(1)))


def test_a_split_written_tensor_is_proved_disjoint_and_an_empty_grid_runs_nothing():
    """`y` takes the split: program (i, j) writes its tile `i * cdiv(b, B) + j`,
    whose step along grid dimension 0, `B * cdiv(b, B)`, is at least the tile's
    `B` wherever a program runs (`cdiv(b, B) >= 1`): proved, so no launch check
    of overlapping tiles is left, and rows of no element (an empty grid) are
    launched as nothing, not refused as overlapping."""
    k = ntsym.make(lambda x, y: rows_then_flat(x, y, B), double_app, (Tensor(2), Tensor(1)))
    assert not [c for c in k.ir.checks if "overlap" in c.message]
    y = torch.zeros(0)
    k(torch.zeros(3, 0), y, B=4)
    x = torch.randn(3, 8)
    y = torch.zeros(24)
    k(x, y, B=4)
    torch.testing.assert_close(y, x.reshape(-1) * 2)
