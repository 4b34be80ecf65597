"""Outermost extents of the arranged tensors: one program runs per element of
the first tensor's outermost shape, and every tensor's tile count must match it.

A tile whose stride exceeds its windows' span counts NineToothed's
``cdiv(n - span, s) + 1`` windows, the last of which may start past the end
(entirely masked); the programs may number either that count or the count of
windows starting inside, so taking every other block lines up with a plain
tiling of either size.
"""

import pytest
import torch

import ntsym
import ntsym.language as ntl
from ntsym import ArrangementError, LaunchError, Tensor, block_size


def every_other_block(B_value=None):
    B = block_size(lower_bound=1) if B_value is None else B_value

    def arrangement(input, output, B=B):
        return input.tile((B,), strides=(2 * B,)), output.tile((B,))

    def application(input, output):
        output = input  # noqa: F841

    return ntsym.make(arrangement, application, (Tensor(1), Tensor(1)))


def test_every_other_block_through_the_interpreter():
    k = every_other_block()
    x = torch.randn(128)
    out = torch.empty(64)
    k(x, out, B=32)
    torch.testing.assert_close(out, x.view(-1, 32)[::2].reshape(-1), rtol=0, atol=0)
    # The same kernel, with other block sizes: 128 elements hold 128 / (2 B) windows.
    for B in (8, 16, 64):
        out = torch.full((64,), float("nan"))
        k(x, out, B=B)
        torch.testing.assert_close(out, x.view(-1, B)[::2].reshape(-1), rtol=0, atol=0)


def test_every_other_block_shape_counts_windows_as_ninetoothed():
    B = block_size()
    x = Tensor(1, name="x")
    tiled = x.tile((B,), strides=(2 * B,))
    # NineToothed's count, cdiv(n - B, 2 B) + 1, is 3 for n = 128, B = 32; the
    # third window starts at 128, past the end: two start inside.
    assert str(tiled.shape[0]) == f"cdiv(-{B.name} + x_size_0, 2*{B.name}) + 1"
    assert tiled.shape[0].subs({x.shape[0]: 128, B: 32}) == 3
    (live,) = tiled.hierarchy.live.values()
    assert live.subs({x.shape[0]: 128, B: 32}) == 2


def test_every_other_block_fixed_size_last_window_inside():
    # A fixed block of 32: windows at 0 and 64 of 100 elements, both inside.
    k = every_other_block(32)
    x = torch.randn(100)
    out = torch.empty(64)
    k(x, out)
    torch.testing.assert_close(out, torch.cat([x[0:32], x[64:96]]), rtol=0, atol=0)


@pytest.mark.parametrize("shape", [(5, 5), (4, 6), (1, 1), (33, 33)])
def test_diagonal(shape):
    B = block_size(lower_bound=1)

    def arrangement(input, output, B=B):
        n = input.shape[1]
        return (
            input.flatten().tile((B,), strides=(B * (n + 1),), dilation=(n + 1,)),
            output.tile((B,)),
        )

    def application(input, output):
        output = input  # noqa: F841

    k = ntsym.make(arrangement, application, (Tensor(2), Tensor(1)))
    x = torch.randn(shape)
    for B_value in (1, 4, 16):
        out = torch.full((min(shape),), float("nan"))
        k(x, out, B=B_value)
        torch.testing.assert_close(out, torch.diag(x), rtol=0, atol=0)


@pytest.mark.parametrize("shape", [(0, 5), (3, 0), (4, 5)])
def test_row_sums_of_squeezed_rows_with_empty_input(shape):
    def arrangement(input, output):
        return input.tile((1, -1)).squeeze(1), output.tile((1,))

    def application(input, output):
        output = ntl.sum(input, 1)  # noqa: F841

    k = ntsym.make(arrangement, application, (Tensor(2), Tensor(1)))
    x = torch.randn(shape)
    out = torch.full((shape[0],), float("nan"))
    k(x, out)
    torch.testing.assert_close(out, x.sum(1))


@pytest.mark.parametrize("fixed", [False, True])
def test_output_with_a_tile_for_the_window_past_the_end(fixed):
    # 128 elements hold three windows of every other block of 32, the third
    # starting at 128: as in NineToothed, its program reads only masked
    # lanes (0) and writes them to the output's third block.
    k = every_other_block(32 if fixed else None)
    x = torch.randn(128)
    out = torch.full((96,), float("nan"))
    k(x, out, **({} if fixed else {"B": 32}))
    expected = torch.cat([x[0:32], x[64:96], torch.zeros(32)])
    torch.testing.assert_close(out, expected, rtol=0, atol=0)


@pytest.mark.parametrize("fixed", [False, True])
def test_output_with_more_tiles_than_windows_is_refused(fixed):
    # Four output blocks beside the input's three windows: the fourth
    # program would read none (the input, only read, may have more windows
    # than programs, not fewer).
    k = every_other_block(32 if fixed else None)
    out = torch.zeros(128)
    with pytest.raises(LaunchError) as info:
        k(torch.randn(128), out, **({} if fixed else {"B": 32}))
    message = str(info.value)
    assert "`input` counts" in message and "windows, the first" in message
    assert "(=4, " in message and "must be <=" in message and "(=3, " in message
    assert "a program past `input`'s windows would read none of its elements" in message
    assert torch.equal(out, torch.zeros(128))  # nothing ran


def test_extents_that_can_never_agree_are_refused_at_make():
    def arrangement(input, output):
        return input.tile((1,), strides=(4,)), output.tile((1,))

    def application(input, output):
        output = input  # noqa: F841

    # Windows at 0, 4 and 8 (past the end): 3 programs, or 2.
    tensors = (Tensor(shape=(8,)), Tensor(shape=(4,)))
    with pytest.raises(ArrangementError) as info:
        ntsym.make(arrangement, application, tensors)
    message = str(info.value)
    assert "outermost dim 0: `input` counts 3 windows, the first 2 starting inside its dimension" in message
    assert "the 4 programs of `output` must be at most as many" in message
    assert "which can never hold" in message


def test_extents_agreeing_with_the_window_past_the_end():
    def arrangement(input, output):
        return input.tile((1,), strides=(4,)), output.tile((1,))

    def application(input, output):
        output = input  # noqa: F841

    x = torch.arange(8.0)
    for n, expected in ((2, [0.0, 4.0]), (3, [0.0, 4.0, 0.0])):
        k = ntsym.make(arrangement, application, (Tensor(shape=(8,)), Tensor(shape=(n,))))
        out = torch.full((n,), float("nan"))
        k(x, out)
        assert out.tolist() == expected


@pytest.mark.parametrize("B_value", [4, 8, 16])
def test_diagonal_write_with_a_tuned_block_size(B_value):
    # The 5 values go to every 9th element of a 61-element output, B at a
    # time: the output's windows (dilated by 9, 9 * B apart) number
    # cdiv(61 - 9 * (B - 1) - 1, 9 * B) + 1 as in NineToothed, equal to the
    # input's cdiv(5, B) at these block sizes (not at B = 1, where the output
    # has 8 windows and the input 5 tiles). The lanes of the input's last tile
    # past its end are masked (0) and written where the output's window has
    # elements, as in NineToothed.
    B = block_size(lower_bound=1)

    def arrangement(input, output, B=B):
        return input.tile((B,)), output.tile((B,), strides=(9 * B,), dilation=(9,))

    def application(input, output):
        output = input  # noqa: F841

    k = ntsym.make(arrangement, application, (Tensor(1), Tensor(1)))
    x = torch.randn(5)
    out = torch.full((61,), float("nan"))
    k(x, out, B=B_value)
    expected = torch.full((61,), float("nan"))
    expected[0:55:9] = torch.cat([x, torch.zeros(2)])
    torch.testing.assert_close(out, expected, rtol=0, atol=0, equal_nan=True)


def _diagonal_kernel():
    B = block_size(lower_bound=1)

    def arrangement(input, output, B=B):
        n = input.shape[1]
        return (
            input.flatten().tile((B,), strides=(B * (n + 1),), dilation=(n + 1,)),
            output.tile((B,)),
        )

    def application(input, output):
        output = input  # noqa: F841

    return ntsym.make(arrangement, application, (Tensor(2), Tensor(1)))


def _ninetoothed_diagonal(x, out_len, block):
    """What NineToothed's launch of the diagonal kernel writes: one program
    per window of the input (its first tensor), each copying its window's
    lanes (0 where masked) to the output's tile at its index, where that
    tile exists (a program past the output's tiles stores nothing)."""
    nt = pytest.importorskip("ninetoothed")
    rows, cols = x.shape
    source = nt.Tensor(shape=(rows, cols)).flatten()
    windows = nt.eval(source.tile((block,), strides=(block * (cols + 1),), dilation=(cols + 1,)))
    tiles = nt.eval(nt.Tensor(shape=(out_len,)).tile((block,)))
    out = torch.full((out_len,), float("nan"))
    flat = x.reshape(-1)
    for pid in range(windows.shape[0]):
        if pid >= tiles.shape[0]:
            continue
        for lane, target in zip(windows[pid], tiles[pid]):
            if target >= 0:
                out[target] = flat[lane] if lane >= 0 else 0.0
    return out


@pytest.mark.parametrize("shape", [(6, 4), (8, 3), (9, 2)])
def test_diagonal_of_a_tall_matrix(shape):
    """Rows beyond the columns: the input's dilated windows go on past the
    diagonal (window 4 of a 6 x 4 matrix starts at element (5, 0)), so the
    input has more windows than the output has tiles. The input is only
    read: the programs, one per output tile, read the windows at their
    index and the rest are not read; NineToothed launches a program per
    window, and those past the output's tiles store nothing. Same result."""
    k = _diagonal_kernel()
    x = torch.randn(shape)
    for B_value in (1, 2, 4):
        out = torch.full((min(shape),), float("nan"))
        k(x, out, B=B_value)
        torch.testing.assert_close(out, torch.diag(x), rtol=0, atol=0)
        torch.testing.assert_close(out, _ninetoothed_diagonal(x, min(shape), B_value), rtol=0, atol=0)


def test_more_programs_than_a_read_tensors_windows_is_refused():
    """An output of 8 beside a 6 x 4 matrix's 6 windows (B = 1): programs 6
    and 7 would read no window of the input."""
    k = _diagonal_kernel()
    out = torch.full((8,), float("nan"))
    with pytest.raises(LaunchError, match=r"(?s)cdiv\(output.shape\[0\], B\) \(=8.*must be <= .*\(=6.*windows past "
                                          r"the programs are not read"):
        k(torch.randn(6, 4), out, B=1)
    assert out.isnan().all()
