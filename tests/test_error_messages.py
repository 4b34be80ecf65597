"""Errors at the right time, in the user's numbers: undefined names at make,
the reason a block size is refused, and the sizes behind a failed check."""

import pytest
import torch

import ntsym
import ntsym.language as ntl
from examples import mm
from ntsym import Tensor, block_size


def _copy(x, y):
    y = x * undefined_scale  # noqa: F821, F841


def test_undefined_name_is_reported_at_make_with_its_line():
    with pytest.raises(ntsym.ApplicationError, match=r"name `undefined_scale` is not defined(.|\n)*line \d+"):
        ntsym.make(lambda x, y: (x.tile((16,)), y.tile((16,))), _copy, (Tensor(1), Tensor(1)))


def _double(x, y):
    y = x * 2  # noqa: F841


def test_explicit_block_size_that_is_not_a_power_of_two_says_so():
    B = block_size()
    kernel = ntsym.make(lambda x, y, B=B: (x.tile((B,)), y.tile((B,))), _double, (Tensor(1), Tensor(1)))
    x = torch.randn(10)
    with pytest.raises(ntsym.LaunchError, match="`B`=12 must be a power of two"):
        kernel(x, torch.empty(10), B=12)
    with pytest.raises(ntsym.LaunchError, match="`B`=16 is below its lower bound 32"):
        kernel(x, torch.empty(10), B=16)


def _fixed_mm_arrangement(input, other, output):
    output_arranged = output.tile((16, 16))
    input_arranged = input.tile((16, 16)).tile((1, -1)).expand((-1, output_arranged.shape[1]))
    input_arranged.dtype = input_arranged.dtype.squeeze(0)
    other_arranged = other.tile((16, 16)).tile((-1, 1)).expand((output_arranged.shape[0], -1))
    other_arranged.dtype = other_arranged.dtype.squeeze(1)
    return input_arranged, other_arranged, output_arranged


def test_failed_check_names_the_sizes_behind_tile_counts():
    kernel = ntsym.make(_fixed_mm_arrangement, mm.application, (Tensor(2), Tensor(2), Tensor(2)))
    with pytest.raises(ntsym.LaunchError, match=r"cdiv\(other.shape\[0\], 16\) \(=4, other.shape\[0\]=50\) must equal "
                                                r"cdiv\(input.shape\[1\], 16\) \(=3, input.shape\[1\]=40\)"):
        kernel(torch.randn(20, 40), torch.randn(50, 30), torch.empty(20, 30))


def test_offsets_of_a_tile_of_tiles_name_the_level_and_the_fix():
    def arrangement(x, y):
        return x.tile((2,)).tile((2,)), y.tile((2,)).tile((2,))

    def outer(x, y):
        o = y.offsets(0)  # noqa: F841
        for k in range(x.shape[0]):
            y[k] = x[k] * 1.0

    def inner(x, y):
        for k in range(x.shape[0]):
            y[k] = x[k] + y[k].offsets(0) * 0.0

    with pytest.raises(ntsym.ApplicationError, match=r"`y.offsets\(0\)`: the elements of this tile of `y` are "
                       r"tiles themselves \(level 1 of 2\).*`y\[k\].offsets\(...\)`"):
        ntsym.make(arrangement, outer, (ntsym.Tensor(1), ntsym.Tensor(1)))
    x = torch.randn(8)
    y = torch.zeros(8)
    ntsym.make(arrangement, inner, (ntsym.Tensor(1), ntsym.Tensor(1)))(x, y)
    torch.testing.assert_close(y, x)


def _cast_to_the_level_below(input, other, output):
    accumulator = ntl.zeros(output.shape, dtype=ntl.float32)
    for k in range(input.shape[0]):
        accumulator += ntl.dot(ntl.cast(input[k], input.dtype), other[k])  # input.dtype: the loop's tiles
    output = accumulator  # noqa: F841


def test_the_tiles_of_an_unindexed_level_are_refused_at_make_with_the_fix():
    """``input.dtype`` of a tensor whose next level holds a loop's tiles is
    those tiles, not one of them: read as a value it had no index for the
    loop (a generated name left undefined, a NameError at the launch)."""
    with pytest.raises(ntsym.ApplicationError,
                       match=r"(?s)`input`'s tiles of level 2 are read here without an index for level 1.*"
                             r"`input\[k\]\.dtype` or `input\.source\.dtype`.*line \d+"):
        ntsym.make(_fixed_mm_arrangement, _cast_to_the_level_below, (Tensor(2), Tensor(2), Tensor(2)))
