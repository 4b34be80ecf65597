"""Symbolic tensors and meta-operations: the seeds' examples, each operation on
symbolic and concrete shapes, validation, and the simplified forms."""

import subprocess
import sys

import numpy as np
import pytest
import sympy

import ntsym
from ntsym_codegen.intfuncs import CeilDiv, FloorDiv
from ntsym import MetaOperationError, Symbol, Tensor, index_table

BM = Symbol("BLOCK_SIZE_M", meta=True)
BN = Symbol("BLOCK_SIZE_N", meta=True)
BK = Symbol("BLOCK_SIZE_K", meta=True)


def ints(shape):
    return tuple(int(s) for s in shape)


# -- the seeds' examples ---------------------------------------------------------


def test_symbolic_tensor_shape_names():
    x = Tensor(2)
    assert [s.name for s in x.shape] == [f"{x.name}_size_0", f"{x.name}_size_1"]
    assert x.name.startswith("ntsym_tensor_")
    named = Tensor(2, name="x")
    assert [str(s) for s in named.shape] == ["x_size_0", "x_size_1"]
    assert [str(s) for s in named.strides] == ["x_stride_0", "x_stride_1"]


def test_tile_symbolic_is_ceiling_division():
    x = Tensor(2, name="x")
    tiled = x.tile((BM, BN))
    assert tiled.shape == (CeilDiv(x.shape[0], BM), CeilDiv(x.shape[1], BN))
    assert str(tiled.shape[0]) == "cdiv(x_size_0, BLOCK_SIZE_M)"
    assert tiled.dtype.shape == (BM, BN)


def test_tile_concrete_from_tutorial():
    x = Tensor(shape=(4, 8))
    tiled = x.tile((2, 2))
    assert ints(tiled.shape) == (2, 4)
    assert ints(tiled.dtype.shape) == (2, 2)


def mm_arrangement(input, other, output):
    output_arranged = output.tile((BM, BN))
    input_arranged = input.tile((BM, BK))
    input_arranged = input_arranged.tile((1, -1))
    input_arranged = input_arranged.expand((-1, output_arranged.shape[1]))
    input_arranged.dtype = input_arranged.dtype.squeeze(0)
    other_arranged = other.tile((BK, BN))
    other_arranged = other_arranged.tile((-1, 1))
    other_arranged = other_arranged.expand((output_arranged.shape[0], -1))
    other_arranged.dtype = other_arranged.dtype.squeeze(1)
    return input_arranged, other_arranged, output_arranged


def test_matrix_multiplication_arrangement():
    i, o, out = Tensor(2, name="i"), Tensor(2, name="o"), Tensor(2, name="out")
    a, b, c = mm_arrangement(i, o, out)
    assert c.shape == (CeilDiv(out.shape[0], BM), CeilDiv(out.shape[1], BN))
    assert a.shape == (CeilDiv(i.shape[0], BM), c.shape[1])
    assert b.shape == (c.shape[0], CeilDiv(o.shape[1], BN))
    assert a.dtype.shape == (CeilDiv(i.shape[1], BK),)
    assert a.dtype.dtype.shape == (BM, BK)
    assert b.dtype.shape == (CeilDiv(o.shape[0], BK),)
    assert b.dtype.dtype.shape == (BK, BN)
    # With the sizes a matrix multiplication gives, the outermost shapes agree.
    subs = {i.shape[0]: 50, i.shape[1]: 40, o.shape[0]: 40, o.shape[1]: 30, out.shape[0]: 50,
            out.shape[1]: 30, BM: 16, BN: 16, BK: 16}
    assert [t.subs(subs).shape for t in (a, b, c)] == [(4, 2)] * 3


def test_conv2d_implicit_gemm_arrangement():
    input, filter = Tensor(shape=(4, 512, 14, 14)), Tensor(shape=(512, 512, 3, 3))
    output = Tensor(shape=(4, 512, 12, 12))
    ia = input.tile((1, *filter.shape[1:]), strides=(-1, -1, 1, 1))
    assert ints(ia.shape) == (4, 1, 12, 12) and ints(ia.dtype.shape) == (1, 512, 3, 3)
    ia = ia.squeeze(1)
    ia.dtype = ia.dtype.squeeze(0)
    ia = ia.ravel()
    assert ints(ia.shape) == (4, 12, 12, 512, 3, 3)
    ia = ia.flatten(end_dim=3).flatten(start_dim=1)
    assert ints(ia.shape) == (4 * 12 * 12, 512 * 3 * 3)
    fa = filter.flatten(start_dim=1).permute((1, 0))
    assert ints(fa.shape) == (512 * 3 * 3, 512)
    oa = output.permute((0, 2, 3, 1)).flatten(end_dim=3)
    assert ints(oa.shape) == (4 * 12 * 12, 512)


# -- index maps --------------------------------------------------------------------


def table(t):
    tab = index_table(t)
    return tab.shapes, tab.source, tab.valid


def test_tile_index_map_non_dividing():
    shapes, src, valid = table(Tensor(shape=(5,)).tile((2,)))
    assert shapes == [(3,), (2,)]
    assert src[..., 0].tolist() == [[0, 1], [2, 3], [4, 5]]
    assert valid.tolist() == [[True, True], [True, True], [True, False]]


def test_tile_strides_dilation_floor_mode():
    shapes, src, valid = table(Tensor(shape=(7,)).tile((3,), strides=(2,)))
    assert shapes == [(3,), (3,)]
    assert src[..., 0].tolist() == [[0, 1, 2], [2, 3, 4], [4, 5, 6]]
    assert valid.all()
    shapes, src, valid = table(Tensor(shape=(8,)).tile((3,), strides=(2,)))
    assert shapes == [(4,), (3,)]  # the last window overhangs
    assert valid[-1].tolist() == [True, True, False]
    shapes, src, valid = table(Tensor(shape=(8,)).tile((3,), strides=(2,), floor_mode=True))
    assert shapes == [(3,), (3,)] and valid.all()
    shapes, src, valid = table(Tensor(shape=(9,)).tile((3,), dilation=(2,), strides=(1,)))
    assert shapes == [(5,), (3,)]
    assert src[0, :, 0].tolist() == [0, 2, 4] and src[4, :, 0].tolist() == [4, 6, 8]


def test_tile_gap_counts_windows_as_ninetoothed():
    # Stride 4 over windows of 2: NineToothed's cdiv(8 - 2, 4) + 1 = 3 counts a
    # window at 8 to 9, outside the source: all its elements are masked, and
    # the two windows that start inside are its live count.
    t = Tensor(shape=(8,)).tile((2,), strides=(4,))
    shapes, src, valid = table(t)
    assert shapes == [(3,), (2,)]
    assert src[:2, :, 0].tolist() == [[0, 1], [4, 5]]
    assert valid.tolist() == [[True, True], [True, True], [False, False]]
    assert t.hierarchy.live == {t.hierarchy.levels[0].vars[0]: 2}
    shapes, src, valid = table(Tensor(shape=(9,)).tile((2,), strides=(4,)))
    assert shapes == [(3,), (2,)]
    assert valid.tolist() == [[True, True], [True, True], [True, False]]
    x = Tensor(1, name="x")
    B = Symbol("B", constexpr=True)
    assert x.tile((B,), strides=(2 * B,)).shape[0] == CeilDiv(x.shape[0] - B, 2 * B) + 1
    # Dilated windows with a gap of n (a diagonal).
    n = Symbol("n")
    diag = Tensor(shape=(n * n,)).tile((B,), strides=(B * (n + 1),), dilation=(n + 1,))
    span = (n + 1) * (B - 1) + 1
    assert diag.shape[0] == CeilDiv(n * n - span, B * (n + 1)) + 1


def test_tile_larger_than_its_dimension_is_an_empty_level():
    # NineToothed's (1 - 3) // 3 + 1 = 0 windows in floor mode; a negative
    # count (its (1 - 3) // 1 + 1 = -1) is no window either.
    assert ints(Tensor(shape=(1,)).tile((3,), floor_mode=True).shape) == (0,)
    assert ints(Tensor(shape=(1,)).tile((3,), strides=(1,), floor_mode=True).shape) == (0,)
    assert ints(Tensor(shape=(2,)).tile((4,), strides=(1,)).shape) == (0,)
    t = Tensor(shape=(35, 2, 1)).unsqueeze(1).flatten(2).tile((35, 1, 3), floor_mode=True)
    assert ints(t.shape) == (1, 1, 0) and ints(t.dtype.shape) == (35, 1, 3)
    shapes, src, valid = table(t)
    assert shapes == [(1, 1, 0), (35, 1, 3)] and src.size == 0


def test_tile_minus_one_is_whole_dimension():
    x = Tensor(2, name="x")
    t = x.tile((1, -1))
    assert t.shape == (x.shape[0], 1)
    assert t.dtype.shape == (1, x.shape[1])


def test_expand_squeeze_unsqueeze_permute():
    t = Tensor(shape=(1, 3)).expand((4, -1))
    shapes, src, valid = table(t)
    assert shapes == [(4, 3)] and (src[..., 0] == 0).all() and (src[1, :, 1] == [0, 1, 2]).all()
    assert ints(Tensor(shape=(1, 3, 1)).squeeze((0, 2)).shape) == (3,)
    assert ints(Tensor(shape=(2, 3)).unsqueeze(1).shape) == (2, 1, 3)
    assert ints(Tensor(shape=(2, 3)).unsqueeze(-1).shape) == (2, 3, 1)
    shapes, src, _ = table(Tensor(shape=(2, 3)).permute((1, 0)))
    assert shapes == [(3, 2)] and src[2, 1].tolist() == [1, 2]


def test_flatten_end_exclusive_and_ravel():
    t = Tensor(shape=(2, 3, 4, 5, 6, 7))
    assert ints(t.flatten(end_dim=3).shape) == (24, 5, 6, 7)
    assert ints(t.flatten(start_dim=1, end_dim=3).shape) == (2, 12, 5, 6, 7)
    shapes, src, valid = table(Tensor(shape=(2, 3)).flatten())
    assert shapes == [(6,)] and src.tolist() == [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2]]
    r = Tensor(shape=(4, 6)).tile((2, 3)).ravel()
    assert ints(r.shape) == (2, 2, 2, 3) and not isinstance(r.dtype, Tensor)


def test_pad_and_indexing():
    shapes, src, valid = table(Tensor(shape=(3,)).pad(((1, 2),)))
    assert shapes == [(6,)]
    assert valid.tolist() == [False, True, True, True, False, False]
    assert src[valid][:, 0].tolist() == [0, 1, 2]
    x = Tensor(shape=(4, 5))
    assert ints(x[1].shape) == (5,)
    assert ints(x[:, 1:3].shape) == (4, 2)
    shapes, src, _ = table(x[:, 1:5:2])
    assert shapes == [(4, 2)] and src[0, :, 1].tolist() == [1, 3]
    shapes, src, _ = table(x[-1])
    assert (src[..., 0] == 3).all()


def test_inner_level_operations():
    t = Tensor(shape=(4, 6)).tile((2, 3))
    t.dtype = t.dtype.permute((1, 0))
    assert ints(t.dtype.shape) == (3, 2)
    shapes, src, _ = table(t)
    assert src[1, 1, 2, 0].tolist() == [2, 5]
    t.dtype = t.dtype.tile((1, 2))
    assert ints(t.dtype.shape) == (3, 1) and ints(t.dtype.dtype.shape) == (1, 2)


def test_three_levels():
    t = Tensor(shape=(8, 8)).tile((4, 4)).tile((1, 2))
    assert ints(t.shape) == (2, 1) and ints(t.dtype.shape) == (1, 2) and ints(t.dtype.dtype.shape) == (4, 4)
    shapes, src, valid = table(t)
    assert src[1, 0, 0, 1, 3, 2].tolist() == [7, 6] and valid.all()


# -- validation ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "op, message",
    [
        (lambda: Tensor(shape=(2, 3)).squeeze(0), "squeeze: dimension 0 of shape (2, 3) has size 2, not 1"),
        (lambda: Tensor(shape=(2, 3)).tile((2,)), "tile: tile_shape has 1 entries"),
        (lambda: Tensor(shape=(2, 3)).expand((4, 3)), "expand: dimension 0 of shape (2, 3) has size 2, not 1"),
        (lambda: Tensor(shape=(2, 3)).permute((0, 0)), "permute: (0, 0) is not a permutation"),
        (lambda: Tensor(shape=(2, 3)).tile((1, 1), strides=(0, 1)), "strides[0] = 0 must be positive"),
        (lambda: Tensor(shape=(2, 3)).tile((0, 1)), "tile_shape[0] = 0 must be positive"),
        (lambda: Tensor(shape=(2, 3)).flatten(2, 1), "flatten"),
        (lambda: Tensor(shape=(2, 3))[5], "index 5 out of range"),
        (lambda: Tensor(shape=(2, 3)).unsqueeze(4), "unsqueeze: dim 4 out of range"),
        (lambda: Tensor(shape=(2, 3)).pad(((1, 1),)), "pad: pad has 1 entries"),
        (lambda: Tensor(shape=(4,))[::0], "the step must be a nonzero int"),
    ],
)
def test_invalid_meta_operations_raise(op, message):
    with pytest.raises(MetaOperationError) as info:
        op()
    assert message in str(info.value)
    assert isinstance(info.value, ValueError)


def test_undecidable_symbolic_squeeze_becomes_a_requirement():
    x = Tensor(2, name="x")
    s = x.squeeze(0)
    assert s.hierarchy.requirements == (sympy.Eq(x.shape[0], 1),)


def test_windows_on_symbolic_sizes_require_a_count_not_negative():
    # Zero windows (x of 2) are an empty level; a negative count is refused.
    x = Tensor(1, name="x")
    t = x.tile((3,), strides=(1,))
    assert t.shape == (x.shape[0] - 2,)
    assert t.hierarchy.requirements == (sympy.Ge(x.shape[0] - 2, 0),)


def test_jagged_declaration():
    """A jagged tensor's batch dimension has no stride (each sequence starts
    where its offsets say) and its ragged size is marked (tests/test_jagged.py
    covers the rest)."""
    t = Tensor(3, jagged_dim=1)
    assert t.jagged_dim == 1 and t.strides[0] == 0
    assert t.shape[1].jagged and not t.shape[2].jagged


def test_scalars():
    s = Tensor(0)
    assert s.ndim == 0
    c = Tensor(0, constexpr=True, value=3)
    assert c.constexpr and c.value == 3
    with pytest.raises(MetaOperationError):
        Tensor(0, value=3)


def test_shape_mixing_and_options():
    n = Symbol("n")
    t = Tensor(shape=(4, n, None), name="t")
    assert t.shape[0] == 4 and t.shape[1] == n and t.shape[2].name == "t_size_2"
    c = Tensor(2, shape_options={"constexpr": True})
    assert all(s.constexpr for s in c.shape)
    per_dim = Tensor(2, shape_options=({"constexpr": True}, None))
    assert per_dim.shape[0].constexpr and not per_dim.shape[1].constexpr


def test_eval_and_subs():
    x = Tensor(1, name="x")
    t = x.tile((BM,))
    assert t.subs({"x_size_0": 1000, "BLOCK_SIZE_M": 64}).shape == (16,)
    assert t.subs({x.shape[0]: 1000, BM: 128}).shape == (8,)
    assert t.eval({x: {"shape": (100,)}, BM: 64}).shape == (2, 64)
    assert ntsym.eval_expr(t.shape[0], {"x_size_0": 1000}) == CeilDiv(1000, BM)


# -- simplified symbolic forms -------------------------------------------------------

n = Symbol("n")
m = Symbol("m")


@pytest.mark.parametrize(
    "build, expected",
    [
        (lambda: Tensor(shape=(n,)).tile((BM,)).shape, (CeilDiv(n, BM),)),
        (lambda: Tensor(shape=(n,)).tile((-1,)).shape, (1,)),
        (lambda: Tensor(shape=(n,)).tile((BM,), floor_mode=True).shape, (FloorDiv(n - BM, BM) + 1,)),
        (lambda: Tensor(shape=(n, m)).tile((1, -1)).shape, (n, 1)),
        (lambda: Tensor(shape=(n, m)).tile((BM, BN)).tile((1, -1)).shape, (CeilDiv(n, BM), 1)),
        (lambda: Tensor(shape=(n, m)).flatten().shape, (n * m,)),
        (lambda: Tensor(shape=(n,)).pad(((1, 2),)).shape, (n + 3,)),
        (lambda: Tensor(shape=(n,)).tile((3,), strides=(1,)).shape, (n - 2,)),
    ],
)
def test_simplified_forms(build, expected):
    assert tuple(build()) == tuple(sympy.sympify(e) for e in expected)


@pytest.mark.slow
def test_names_are_deterministic_across_processes():
    script = (
        "import ntsym, sys\n"
        "sys.path.insert(0, '.')\n"
        "import examples.mm as m\n"
        "print(m.kernel.source)\n"
    )
    outs = [
        subprocess.run([sys.executable, "-c", ("import ntsym\n" * k) + ("ntsym.Tensor(3); ntsym.block_size()\n" * k) + script],
                       capture_output=True, text=True, check=True).stdout
        for k in (1, 3)
    ]
    assert outs[0] == outs[1]
