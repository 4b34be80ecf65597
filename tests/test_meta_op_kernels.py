"""Kernels over arrangements whose shapes follow NineToothed's formulas:
untiled (one element per program) and sliced tensors, negative slice steps,
slices past the end, gapped windows and empty levels.  Each runs through
Triton (the interpreter on a CPU) and is compared with torch."""

import pytest
import torch

import ntsym
from ntsym import Tensor


def copy(x, y):
    y = x  # noqa: F841


def test_untiled_sliced_tensors_one_element_per_program():
    k = ntsym.make(lambda x, y: (x[0:2, 0:3], y[0:2, 0:3]), copy, (Tensor(2), Tensor(2)))
    x = torch.randn(4, 5)
    y = torch.zeros(4, 5)
    k(x, y)
    expected = torch.zeros(4, 5)
    expected[0:2, 0:3] = x[0:2, 0:3]
    assert torch.equal(y, expected)


def test_untiled_tensors():
    k = ntsym.make(lambda x, y: (x, y), copy, (Tensor(2), Tensor(2)))
    x = torch.randn(3, 4)
    y = torch.zeros(3, 4)
    k(x, y)
    assert torch.equal(y, x)


@pytest.mark.parametrize("key", [slice(None, None, -1), slice(5, 0, -2), slice(-1, None, -3), slice(4, -1, -1)])
def test_negative_slice_steps(key):
    def arrangement(x, y):
        return x[key].tile((2,)), y.tile((2,))

    x = torch.arange(6.0)
    # NineToothed's slice: a stop of -1 with a negative step runs to the beginning.
    start = key.start % 6 if key.start is not None else 5
    stop = -1 if key.stop in (None, -1) else key.stop
    expected = x[torch.arange(start, stop, key.step)]
    k = ntsym.make(arrangement, copy, (Tensor(1), Tensor(1)))
    y = torch.full((len(expected),), float("nan"))
    k(x, y)
    assert torch.equal(y, expected)


def test_negative_steps_of_a_symbolic_size_reverse_rows():
    def arrangement(x, y):
        return x[::-1, ::-2].tile((1, 4)), y.tile((1, 4))

    k = ntsym.make(arrangement, copy, (Tensor(2), Tensor(2)))
    x = torch.randn(3, 7)
    y = torch.full((3, 4), float("nan"))
    k(x, y)
    assert torch.equal(y, x.flip(0).flip(1)[:, ::2])


def test_slice_past_the_end_reads_masked_lanes():
    # As in NineToothed: x[2:6] of 4 elements has 4, the last two masked (0).
    k = ntsym.make(lambda x, y: (x[2:6].tile((4,)), y.tile((4,))), copy, (Tensor(1), Tensor(1)))
    x = torch.tensor([1.0, 2.0, 3.0, 4.0])
    y = torch.full((4,), float("nan"))
    k(x, y)
    assert y.tolist() == [3.0, 4.0, 0.0, 0.0]


def test_slice_entirely_past_the_end_reads_nothing():
    k = ntsym.make(lambda x, y: (x[6:8].tile((2,)), y.tile((2,))), copy,
                   (Tensor(shape=(4,)), Tensor(shape=(2,))))
    y = torch.full((2,), float("nan"))
    k(torch.ones(4), y)
    assert y.tolist() == [0.0, 0.0]


def test_floor_mode_tile_longer_than_its_dimension_launches_nothing():
    def arrangement(x, y):
        return x.tile((3,), floor_mode=True), y.tile((3,), floor_mode=True)

    k = ntsym.make(arrangement, copy, (Tensor(shape=(1,)), Tensor(shape=(1,))))
    y = torch.full((1,), float("nan"))
    assert k(torch.ones(1), y) is None
    assert torch.isnan(y).all()


def test_floor_mode_empty_level_after_unsqueeze_and_flatten():
    def arrangement(x, y):
        x = x.unsqueeze(1).flatten(2).tile((35, 1, 3), floor_mode=True)
        y = y.unsqueeze(1).flatten(2).tile((35, 1, 3), floor_mode=True)
        return x, y

    k = ntsym.make(arrangement, copy, (Tensor(shape=(35, 2, 1)), Tensor(shape=(35, 2, 1))))
    y = torch.full((35, 2, 1), float("nan"))
    k(torch.ones(35, 2, 1), y)
    assert torch.isnan(y).all()


def test_symbolic_window_count_of_zero_launches_nothing():
    # Windows as long as `w` over `x`: x.shape[0] - w.shape[0] + 1 of them.
    # None (x one shorter than w) is an empty launch, as in NineToothed; a
    # negative count has no meaning and is refused.
    import ntsym.language as ntl

    def arrangement(x, w, y):
        windows = x.tile((w.shape[0],), strides=(1,))
        return windows, w.tile((-1,)).expand((windows.shape[0],)), y.tile((1,))

    def application(x, w, y):
        y = ntl.sum(x * w)  # noqa: F841

    k = ntsym.make(arrangement, application, (Tensor(1), Tensor(1), Tensor(1)))
    x, w = torch.randn(7), torch.randn(3)
    y = torch.empty(5)
    k(x, w, y)
    torch.testing.assert_close(y, torch.stack([(x[i:i + 3] * w).sum() for i in range(5)]))
    assert k(torch.randn(2), w, torch.empty(0)) is None
    with pytest.raises(ntsym.LaunchError, match=r"x.shape\[0\] \+ 1 \(=-1, w.shape\[0\]=3, x.shape\[0\]=1\) must be >= 0"):
        k(torch.randn(1), w, torch.empty(0))


def test_empty_inner_level_is_refused_at_make():
    def arrangement(x, y):
        x = x.tile((2,))
        x.dtype = x.dtype[1:1]
        return x, y.tile((2,))

    with pytest.raises(ntsym.ArrangementError, match=r"`x`: dimension 0 of level 1 \(shape \(0,\)\) has no element"):
        ntsym.make(arrangement, copy, (Tensor(shape=(4,)), Tensor(shape=(4,))))
