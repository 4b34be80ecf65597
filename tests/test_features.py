"""Application features real kernels use: sub-tile stores, inlined calls,
scalars, offsets, source access, annotated constexprs, loads done once."""

import pytest
import torch

import ntsym
import ntsym.language as ntl
from ntsym import Symbol, Tensor

# Every test runs twice: loops address tiles from the index, then advance pointers.
pytestmark = pytest.mark.usefixtures("loop_addressing")

B = Symbol("B", constexpr=True)


def test_store_into_sub_tiles():
    def arrangement(x, y):
        return x.tile((1, 4)).tile((1, -1)).squeeze(1), y.tile((1, 4)).tile((1, -1)).squeeze(1)

    def application(x, y):
        for k in range(x.shape[1]):
            y[0, k] = x[0, k] * 2

    k = ntsym.make(arrangement, application, (Tensor(shape=(3, 12)), Tensor(shape=(3, 12))))
    x = torch.randn(3, 12)
    y = torch.empty_like(x)
    k(x, y)
    torch.testing.assert_close(y, x * 2)


def helper(a, b):
    return a * b + 1


def scaled(x, alpha, out):
    out = x * alpha  # noqa: F841


def test_inlined_calls_and_scalars():
    def application(x, alpha, y):
        t = helper(x, 2.0)
        scaled(t, alpha, y)

    k = ntsym.make(lambda x, a, y: (x.tile((B,)), a, y.tile((B,))), application, (Tensor(1), Tensor(0), Tensor(1)))
    assert "def helper" not in k.source and "scaled" not in k.kernel_source.split("\n", 2)[1]
    x = torch.randn(50)
    y = torch.empty_like(x)
    k(x, 3.0, y, B=16)
    torch.testing.assert_close(y, (x * 2 + 1) * 3)


def test_constexpr_scalar_with_value():
    def application(x, flag, y):
        if flag:
            y = x + 1  # noqa: F841
        else:
            y = x - 1  # noqa: F841

    for value, delta in ((True, 1), (False, -1)):
        k = ntsym.make(lambda x, f, y: (x.tile((B,)), f, y.tile((B,))), application,
                       (Tensor(1), Tensor(0, constexpr=True, value=value), Tensor(1)))
        x = torch.randn(20)
        y = torch.empty_like(x)
        k(x, y, B=32)  # the constexpr with a value is not passed
        torch.testing.assert_close(y, x + delta)
        y = torch.empty_like(x)
        k(x, value, y, B=32)  # or passed in its place, as NineToothed's launcher takes it
        torch.testing.assert_close(y, x + delta)


def test_offsets_and_source_access():
    def application(x, y):
        positions = x.offsets(0)
        y = ntl.where(positions % 2 == 0, x, x.source[positions // 2])  # noqa: F841

    k = ntsym.make(lambda x, y: (x.tile((B,)), y.tile((B,))), application, (Tensor(1), Tensor(1)))
    x = torch.arange(40, dtype=torch.float32)
    y = torch.empty_like(x)
    k(x, y, B=16)
    i = torch.arange(40)
    torch.testing.assert_close(y, torch.where(i % 2 == 0, x, x[i // 2]))


def test_source_shape_and_stride():
    def application(x, y):
        y = x * 0 + x.source.shape[0] * 100 + x.source.stride(0)  # noqa: F841

    k = ntsym.make(lambda x, y: (x.tile((B,)), y.tile((B,))), application, (Tensor(1), Tensor(1)))
    base = torch.zeros(60)
    y = torch.empty(30)
    k(base[::2], y, B=16)
    assert (y == 30 * 100 + 2).all()


def test_annotated_local_constexpr():
    def application(x, y):
        precision: ntl.constexpr = "ieee"  # noqa: F841
        y = x  # noqa: F841

    k = ntsym.make(lambda x, y: (x.tile((B,)), y.tile((B,))), application, (Tensor(1), Tensor(1)))
    assert 'precision: tl.constexpr = "ieee"' in k.kernel_source or "precision: tl.constexpr = 'ieee'" in k.kernel_source
    x = torch.randn(10)
    y = torch.empty_like(x)
    k(x, y, B=16)
    assert torch.equal(x, y)


def test_parameter_read_several_times_is_loaded_once():
    def application(x, y):
        y = x * x + x  # noqa: F841

    k = ntsym.make(lambda x, y: (x.tile((B,)), y.tile((B,))), application, (Tensor(1), Tensor(1)))
    assert k.kernel_source.count("tl.load(") == 1
    x = torch.randn(10)
    y = torch.empty_like(x)
    k(x, y, B=16)
    torch.testing.assert_close(y, x * x + x)


def test_offsets_along_one_tile_dimension_are_a_vector():
    """``x.offsets(d)`` is the vector of source-dimension-d offsets a tile covers
    when one tile dimension runs along d (as in NineToothed): the caller broadcasts."""
    BM = ntsym.block_size(lower_bound=4)
    BN = ntsym.block_size(lower_bound=4)

    def arrangement(x, y, BM=BM, BN=BN):
        return x.tile((BM, BN)), y.tile((BM, BN))

    def application(x, y):
        rows = x.offsets(0)
        cols = x.offsets(1)
        y = ntl.where(rows[:, None] >= cols[None, :], x, 0.0)  # noqa: F841  (lower triangle)

    k = ntsym.make(arrangement, application, (Tensor(2), Tensor(2)))
    x = torch.randn(20, 13)
    y = torch.empty_like(x)
    k(x, y, BM=8, BN=4)
    torch.testing.assert_close(y, torch.tril(x))


def test_extremes_of_offsets_are_computed_not_reduced():
    """``ntl.min``/``ntl.max`` of a tile's offsets are its ends: emitted as index
    math (no reduction across the program's lanes), the values the reduction
    over the same lanes gives (lanes past the tensor's end included, and a
    padded tile's lanes past its size, which its offsets hold too)."""

    def ends(x, y):
        y = x * 0 + ntl.min(x.offsets(0), 0) * 1000 + ntl.max(x.offsets(0))  # noqa: F841

    def reduced(x, y):  # `+ 0`: not the offsets themselves, so reduced as written
        y = x * 0 + ntl.min(x.offsets(0) + 0, 0) * 1000 + ntl.max(x.offsets(0) + 0)  # noqa: F841

    x = torch.zeros(20)
    for tile, size in ((B, 16), (5, 5)):
        computed, kept = (ntsym.make(lambda x, y: (x.tile((tile,)), y.tile((tile,))), app, (Tensor(1), Tensor(1)))
                          for app in (ends, reduced))
        assert "tl.min(" not in computed.kernel_source and "tl.max(" not in computed.kernel_source
        assert "ntsym_min(" in kept.kernel_source and "ntsym_max(" in kept.kernel_source
        y, expected = torch.empty_like(x), torch.empty_like(x)
        block = {"B": 16} if tile is B else {}
        computed(x, y, **block)
        kept(x, expected, **block)
        torch.testing.assert_close(y, expected)
        first = torch.arange(20) // size * size
        lanes = 16 if tile is B else 8  # a tile of 5 is held in 8 lanes
        torch.testing.assert_close(y, (first * 1000 + first + lanes - 1).float())


def test_loop_bound_reassigned_in_an_enclosing_loop():
    # `n` changes after the inner loop, so the inner loop's second run should
    # see the new value. Compiled Triton (3.6, H100) runs it with the first
    # value (the interpreter does not): refused, and the bound written from
    # the enclosing loop's index instead computes what was meant.
    def arrangement(x, y, B=B):
        return x.tile((1, B)).tile((1, -1)).squeeze(1), y.tile((1,))

    def carried(x, y):
        acc = ntl.zeros(x.dtype.shape, dtype=ntl.float32)
        n = x.shape[1]
        for j in range(2):
            for k in range(n):
                acc += x[0, k]
            n = n - 1
        y = ntl.sum(acc, 1)  # noqa: F841

    with pytest.raises(ntsym.ApplicationError, match="`n` bounds a loop and changes from one iteration"):
        ntsym.make(arrangement, carried, (Tensor(2), Tensor(1)))

    def from_index(x, y):
        acc = ntl.zeros(x.dtype.shape, dtype=ntl.float32)
        n = x.shape[1]
        for j in range(2):
            for k in range(n - j):
                acc += x[0, k]
        y = ntl.sum(acc, 1)  # noqa: F841

    k = ntsym.make(arrangement, from_index, (Tensor(2), Tensor(1)))
    for size in (64, 70):
        x = torch.randn(3, size)
        y = torch.full((3,), float("nan"))
        k(x, y, B=16)
        blocks = -(-size // 16)
        torch.testing.assert_close(y, x.sum(1) + x[:, : (blocks - 1) * 16].sum(1))


def test_a_tensor_written_in_a_loop_is_read_again_in_the_next_iteration():
    def arrangement(x, y):
        return x.tile((4,)), y.tile((4,))

    def with_for(x, y):
        t = x * 1.0  # loads x before the loop  # noqa: F841
        for i in range(3):
            y = x + 1.0  # noqa: F841
            x = y

    def with_while(x, y):
        t = x * 1.0  # noqa: F841
        i = 0
        while i < 3:
            y = x + 1.0  # noqa: F841
            x = y
            i += 1

    for application in (with_for, with_while):
        k = ntsym.make(arrangement, application, (Tensor(1), Tensor(1)))
        x, y = torch.zeros(10), torch.empty(10)
        k(x, y)
        assert torch.equal(x, torch.full((10,), 3.0)) and torch.equal(y, x), application.__name__
