"""A tensor the application only reads may have more tiles than there are
programs along its first dimension, its tiles' extents depending on block
sizes (``cdiv(m, B)`` beside ``cdiv(n, B)`` programs): NineToothed launches
one program per tile of the first tensor, each reads the tile at its index,
masked by the tensor's own size, and the tiles past the programs are not
read.  The kernel made first takes one size for the other (the paper's
kernels' code); where its check of equal sizes refuses a call, its variant
with the read tensor's own sizes runs.  Expected values are computed from
that reading of the program (NineToothed 0.26 computes the same)."""

import pytest
import torch

import ntsym
import ntsym.language as ntl
from ntsym import Tensor
from ntsym.errors import LaunchError

B = ntsym.block_size()
C = ntsym.Symbol("C", constexpr=True)  # a block size each call gives


def arrangement(y, x, B=B):
    return y.tile((B,)), x.tile((B,))


def double(y, x):
    y = x * 2  # noqa: F841


def block_sums(y, x):
    y = ntl.sum(x, 0) + x * 0  # noqa: F841


def _per_program(x, n, block, fn):
    """``y`` of ``n`` elements where program ``p`` reads ``x``'s tile ``p``
    (its elements only) and writes ``fn`` of it to ``y``'s tile ``p``."""
    y = torch.zeros(n)
    for p in range(-(-n // block)):
        tile = x[p * block:(p + 1) * block]
        out = fn(tile)
        stop = min((p + 1) * block, n)
        y[p * block:stop] = out[:stop - p * block]
    return y


@pytest.mark.parametrize("n, m", [(4, 8), (4, 7), (3, 5), (5, 5)])
def test_a_read_tensor_with_more_blocks_than_programs(n, m):
    kernel = ntsym.make(arrangement, double, (Tensor(1), Tensor(1)))
    assert kernel.ir.read_apart == (("x", 0),)
    x, y = torch.randn(m), torch.zeros(n)
    kernel(y, x)
    torch.testing.assert_close(y, x[:n] * 2)


@pytest.mark.parametrize("block", [2, 4])
def test_the_last_program_reads_the_read_tensors_own_elements_past_the_programs(block):
    """A sum over each of `x`'s tiles: the last program's tile holds `x`'s
    elements up to its own end, past `y`'s, and sums them (masked by `x`'s
    size, not `y`'s)."""
    kernel = ntsym.make(lambda y, x: arrangement(y, x, block), block_sums, (Tensor(1), Tensor(1)))
    x, y = torch.arange(1.0, 8.0), torch.zeros(5)
    kernel(y, x)
    expected = _per_program(x, 5, block, lambda t: t.sum().expand(block))
    torch.testing.assert_close(y, expected)
    assert y[4] == (5.0 + 6.0 + 7.0 if block == 4 else 5.0 + 6.0)


def test_call_time_block_sizes():
    kernel = ntsym.make(lambda y, x: arrangement(y, x, C), block_sums, (Tensor(1), Tensor(1)))
    x, y = torch.arange(1.0, 12.0), torch.zeros(6)
    kernel(y, x, C=4)
    torch.testing.assert_close(y, _per_program(x, 6, 4, lambda t: t.sum().expand(4)))


def test_fewer_tiles_of_a_read_tensor_are_refused_naming_both():
    kernel = ntsym.make(arrangement, double, (Tensor(1), Tensor(1)))
    y = torch.zeros(9)
    with pytest.raises(LaunchError, match=r"(?s)y.shape\[0\] \(=9\) must be <= x.shape\[0\] \(=5\)\n`x` is only "
                                          r"read.*would read none of its elements"):
        kernel(y, torch.randn(5))
    assert (y == 0).all()


def arrangement_read_first(x, y, C=C):
    return x.tile((C,)), y.tile((C,))


def double_into_y(x, y):
    y = x * 2  # noqa: F841


@pytest.mark.parametrize("m, n", [(8, 4), (7, 3), (5, 5)])
def test_a_tensor_only_stored_to_may_have_fewer_tiles_than_programs(m, n):
    """`x` (read, first) has more tiles than `y`, which the application only
    assigns: the programs past `y`'s last tile store nothing (masked by
    `y`'s own size), as in NineToothed; the elements after `y` in its buffer
    are untouched."""
    kernel = ntsym.make(arrangement_read_first, double_into_y, (Tensor(1), Tensor(1)))
    assert kernel.ir.read_apart == (("y", 0),)
    x, buf = torch.randn(m), torch.full((m + 4,), -1.0)
    kernel(x, buf[:n], C=2)
    torch.testing.assert_close(buf[:n], x[:n] * 2)
    assert (buf[n:] == -1).all()


def test_a_tensor_also_read_keeps_the_grids_extents():
    """`y += x` reads `y`: programs past its last tile would read none of its
    elements, so its tile count must equal the programs'."""
    def accumulate(x, y):
        y += x  # noqa: F841

    kernel = ntsym.make(arrangement_read_first, accumulate, (Tensor(1), Tensor(1)))
    assert kernel.ir.read_apart == ()
    with pytest.raises(LaunchError, match=r"x.shape\[0\] \(=8\) must equal y.shape\[0\] \(=4\)"):
        kernel(torch.randn(8), torch.zeros(4), C=2)


def test_a_written_tensor_with_more_tiles_than_programs_is_refused():
    """No program would write the extra tiles (NineToothed leaves them as
    they were)."""
    kernel = ntsym.make(arrangement_read_first, double_into_y, (Tensor(1), Tensor(1)))
    y = torch.zeros(8)
    with pytest.raises(LaunchError, match=r"(?s)cdiv\(y.shape\[0\], C\) .*must be <= cdiv\(x.shape\[0\], C\).*"
                                          r"no program would write the extra ones"):
        kernel(torch.randn(4), y, C=2)
    assert (y == 0).all()


def test_more_tiles_of_a_read_tensor_along_a_later_dimension_are_refused():
    """`x` of (2, 5) tiles beside (2, 3) programs: NineToothed's programs take
    `x`'s tiles in row-major order of its own shape (program (1, 0) would
    read tile (0, 3)), not the tiles their index names: refused, saying so."""
    def rows(y, x):
        return y.tile((1, 1)), x.tile((1, 1))

    kernel = ntsym.make(rows, double, (Tensor(2), Tensor(2)))
    with pytest.raises(LaunchError, match=r"(?s)y.shape\[1\] \(=3\) must equal x.shape\[1\] \(=5\).*`x` is only read, "
                                          r"but along a dimension after its first.*row-major order"):
        kernel(torch.zeros(2, 3), torch.randn(2, 5))
