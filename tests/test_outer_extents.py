"""Outermost extents of the arranged tensors: one program runs per element of
the first tensor's outermost shape, and every tensor's tile count must match it.

A tile whose stride exceeds its windows' span counts only the windows that
start inside its dimension (NineToothed's formula may add one past the end,
entirely masked), so taking every other block lines up with a plain tiling.
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


def test_every_other_block_shape_counts_windows_starting_inside():
    B = block_size()
    x = Tensor(1, name="x")
    tiled = x.tile((B,), strides=(2 * B,))
    # NineToothed's count, cdiv(n - B, 2 B) + 1, is 3 for n = 128, B = 32; the
    # third window would start at 128, past the end.
    assert str(tiled.shape[0]) == f"cdiv(x_size_0, 2*{B.name})"
    assert tiled.shape[0].subs({x.shape[0]: 128, B: 32}) == 2


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


def test_first_tensor_with_fewer_programs_is_refused():
    # 128 elements hold two windows of every other block of 32, but the output
    # has three blocks: no program would write its last one.
    k = every_other_block()
    x = torch.randn(128)
    out = torch.zeros(96)
    with pytest.raises(LaunchError) as info:
        k(x, out, B=32)
    message = str(info.value)
    assert "cdiv(input.shape[0], 2) (=64, input.shape[0]=128) must equal output.shape[0] (=96)" in message
    assert "the outermost shape of `input`, the first arranged tensor" in message
    assert "`output`'s outermost dim 0" in message
    assert "no program would compute the extra ones" in message
    assert torch.equal(out, torch.zeros(96))  # nothing ran


def test_first_tensor_with_fewer_programs_fixed_sizes_is_refused():
    k = every_other_block(32)
    with pytest.raises(LaunchError) as info:
        k(torch.randn(128), torch.zeros(96))
    message = str(info.value)
    assert "cdiv(input.shape[0], 64) (=2, input.shape[0]=128) must equal cdiv(output.shape[0], 32) (=3, output.shape[0]=96)" in message
    assert "no program would compute the extra ones" in message


def test_extents_that_can_never_agree_are_refused_at_make():
    def arrangement(input, output):
        return input.tile((1,), strides=(4,)), output.tile((1,))

    def application(input, output):
        output = input  # noqa: F841

    tensors = (Tensor(shape=(8,)), Tensor(shape=(3,)))
    with pytest.raises(ArrangementError) as info:
        ntsym.make(arrangement, application, tensors)
    message = str(info.value)
    assert "outermost dim 0: `input` 2 vs `output` 3" in message
    assert "no program would compute the extra ones" in message
