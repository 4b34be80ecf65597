"""Meta-operations of ntsym checked against an independent NumPy model.

The first half pins the NumPy model (``tests/numpy_model.py``) to hand-checked
cases.  The second half is a hypothesis property test: random chains of
meta-operations are applied both to the model and to ``ntsym.Tensor`` and the
resulting index tables (level shapes, validity, source indices) are compared.
"""

import os
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from numpy_model import Model, nt_slice_size, tile_count  # noqa: E402

MAX_ELEMENTS = 20000
MAX_LEVELS = 3
# Also generate strided or dilated tiles whose extent ``dilation * (t - 1) + 1``
# exceeds the dim size while the spec's tile count is still >= 1 (one tile that
# is partly out of bounds, e.g. size 2 tiled (2,) with dilation (2,)).
LONG_WINDOWS = True


def src_at(m, *idx):
    return tuple(int(x) for x in m.source_table[idx])


# ---------------------------------------------------------------- model unit tests


def test_model_source_is_identity():
    m = Model.source((3, 4))
    assert m.shapes == [(3, 4)]
    assert m.valid.all()
    assert src_at(m, 2, 1) == (2, 1)
    assert m.source_table.shape == (3, 4, 2)


def test_model_tile_divisible():
    m = Model.source((4, 8)).tile((2, 2))
    assert m.shapes == [(2, 4), (2, 2)]
    assert m.valid.all()
    for o0 in range(2):
        for o1 in range(4):
            for u0 in range(2):
                for u1 in range(2):
                    assert src_at(m, o0, o1, u0, u1) == (2 * o0 + u0, 2 * o1 + u1)


def test_model_tile_overhang():
    m = Model.source((5,)).tile((2,))
    assert m.shapes == [(3,), (2,)]
    assert m.valid.tolist() == [[True, True], [True, True], [True, False]]
    assert src_at(m, 0, 1) == (1,)
    assert src_at(m, 2, 0) == (4,)


def test_model_tile_minus_one_means_whole_dim():
    m = Model.source((3, 5)).tile((1, -1))
    assert m.shapes == [(3, 1), (1, 5)]
    assert m.valid.all()
    assert src_at(m, 2, 0, 0, 4) == (2, 4)


def test_model_tile_conv_like():
    # Sliding windows of 3 with stride 1 over 5 elements: 3 windows, no overhang.
    m = Model.source((5,)).tile((3,), strides=(1,))
    assert m.shapes == [(3,), (3,)]
    assert m.valid.all()
    assert [[src_at(m, o, u)[0] for u in range(3)] for o in range(3)] == [
        [0, 1, 2],
        [1, 2, 3],
        [2, 3, 4],
    ]


def test_model_tile_stride_overhang_and_floor_mode():
    # n=5, t=2, s=2: ceil mode gives 3 tiles (last overhangs), floor mode 2.
    ceil = Model.source((5,)).tile((2,), strides=(2,))
    floor = Model.source((5,)).tile((2,), strides=(2,), floor_mode=True)
    assert ceil.shapes == [(3,), (2,)]
    assert floor.shapes == [(2,), (2,)]
    assert floor.valid.all()
    assert [[src_at(floor, o, u)[0] for u in range(2)] for o in range(2)] == [[0, 1], [2, 3]]
    # n=7, t=3, s=3: ceil 3 tiles, floor 2.
    assert Model.source((7,)).tile((3,), strides=(3,)).shapes[0] == (3,)
    assert Model.source((7,)).tile((3,), strides=(3,), floor_mode=True).shapes[0] == (2,)


def test_model_tile_dilation():
    # Span of a (t=2, d=3) tile is 4; over 5 elements with stride 1 there are 2 tiles.
    m = Model.source((5,)).tile((2,), strides=(1,), dilation=(3,))
    assert m.shapes == [(2,), (2,)]
    assert [[src_at(m, o, u)[0] for u in range(2)] for o in range(2)] == [[0, 3], [1, 4]]
    # Default stride (= t = 2) with dilation 2 over 6: span 3, tiles start at 0, 2, 4.
    m = Model.source((6,)).tile((2,), dilation=(2,))
    assert m.shapes == [(3,), (2,)]
    assert m.valid.tolist() == [[True, True], [True, True], [True, False]]
    assert src_at(m, 1, 1) == (4,)


def test_tile_count_formula():
    assert tile_count(8, 2, 2, 1, False) == 4
    assert tile_count(5, 2, 2, 1, False) == 3
    assert tile_count(5, 2, 2, 1, True) == 2
    assert tile_count(5, 3, 1, 1, False) == 3
    assert tile_count(3, 5, 5, 1, False) == 1
    # A gap between windows (stride 4 > span 2): NineToothed's count is 3 for
    # 8, its last window at 8 to 9, past the end.
    assert tile_count(8, 2, 4, 1, False) == 3
    assert tile_count(9, 2, 4, 1, False) == 3
    assert tile_count(7, 2, 3, 2, False) == 3  # span 3 == stride: no gap
    # A tile longer than its dimension: an empty level (NineToothed's -1 too).
    assert tile_count(1, 3, 3, 1, True) == 0
    assert tile_count(1, 3, 1, 1, True) == 0


def test_model_tile_gap_between_windows():
    # Every other block of 2 over 8 elements: windows at 0, 4 and 8 (past the end).
    m = Model.source((8,)).tile((2,), strides=(4,))
    assert m.shapes == [(3,), (2,)]
    assert m.valid[:2].all() and not m.valid[2].any()
    assert [[src_at(m, o, u)[0] for u in range(2)] for o in range(2)] == [[0, 1], [4, 5]]
    # Over 9, a third window starts at 8 and overhangs.
    m = Model.source((9,)).tile((2,), strides=(4,))
    assert m.shapes == [(3,), (2,)]
    assert m.valid.tolist() == [[True, True], [True, True], [True, False]]


def test_model_pad():
    m = Model.source((3,)).pad(((1, 2),))
    assert m.shapes == [(6,)]
    assert m.valid.tolist() == [False, True, True, True, False, False]
    assert [src_at(m, i)[0] for i in (1, 2, 3)] == [0, 1, 2]


def test_model_pad_then_tile():
    m = Model.source((2, 3)).pad(((0, 0), (1, 1))).tile((1, 2))
    assert m.shapes == [(2, 3), (1, 2)]
    assert m.valid[0, 0].tolist() == [[False, True]]
    assert src_at(m, 1, 0, 0, 1) == (1, 0)
    # Padded row: [pad, 0, 1, 2, pad] -> tiles [pad, 0], [1, 2], [pad, overhang].
    assert m.valid[1, 1].tolist() == [[True, True]]
    assert src_at(m, 1, 1, 0, 1) == (1, 2)
    assert m.valid[1, 2].tolist() == [[False, False]]


def test_model_flatten_end_exclusive():
    m = Model.source((2, 3, 4))
    f = m.flatten(0, 2)
    assert f.shapes == [(6, 4)]
    assert src_at(f, 4, 1) == (1, 1, 1)
    assert src_at(f, 5, 3) == (1, 2, 3)
    assert m.flatten(1).shapes == [(2, 12)]
    assert src_at(m.flatten(1), 1, 7) == (1, 1, 3)
    assert m.flatten().shapes == [(24,)]
    assert m.flatten(end_dim=1).shapes == [(2, 3, 4)]


def test_model_expand_squeeze_unsqueeze_permute():
    m = Model.source((3, 1))
    e = m.expand((-1, 4))
    assert e.shapes == [(3, 4)]
    assert all(src_at(e, 2, j) == (2, 0) for j in range(4))
    s = m.squeeze(1)
    assert s.shapes == [(3,)]
    assert src_at(s, 1) == (1, 0)
    u = s.unsqueeze(0)
    assert u.shapes == [(1, 3)]
    assert src_at(u, 0, 2) == (2, 0)
    p = Model.source((2, 3, 4)).permute((2, 0, 1))
    assert p.shapes == [(4, 2, 3)]
    assert src_at(p, 3, 1, 2) == (1, 2, 3)


def test_model_getitem():
    m = Model.source((4, 5))
    g = m.getitem((1, slice(None, None, 2)))
    assert g.shapes == [(3,)]
    assert [src_at(g, i) for i in range(3)] == [(1, 0), (1, 2), (1, 4)]
    assert m.getitem(-1).shapes == [(5,)]
    assert src_at(m.getitem(-1), 0) == (3, 0)
    # As NineToothed: a stop past the end is not clipped, the extra rows are
    # outside the source.
    g = m.getitem(slice(2, 9))
    assert g.shapes == [(7, 5)] and g.valid[:2].all() and not g.valid[2:].any()
    assert src_at(m.getitem(slice(-3, None)), 0, 0) == (1, 0)
    r = m.getitem(slice(None, None, -1))
    assert r.shapes == [(4, 5)] and [src_at(r, i, 0)[0] for i in range(4)] == [3, 2, 1, 0]
    r = m.getitem(slice(3, 0, -2))
    assert r.shapes == [(2, 5)] and [src_at(r, i, 0)[0] for i in range(2)] == [3, 1]
    # A stop of -1 with a negative step runs to the beginning.
    assert m.getitem(slice(2, -1, -1)).shapes == [(3, 5)]


def test_model_getitem_keeps_inner_levels():
    m = Model.source((4, 6)).tile((2, 3))
    g = m.getitem((1,))
    assert g.shapes == [(2,), (2, 3)]
    assert src_at(g, 1, 1, 2) == (3, 5)


def test_model_ravel():
    m = Model.source((4, 8)).tile((2, 2))
    r = m.ravel()
    assert r.shapes == [(2, 4, 2, 2)]
    assert np.array_equal(r.source_table, m.source_table)
    inner = m.ravel(level=1)
    assert inner.shapes == m.shapes


def test_model_matmul_arrangement():
    # NineToothed matmul: input (M, K) tiled (BM, BK), then tile((1, -1)),
    # expand((-1, N_tiles)), then dtype.squeeze(0).
    M, K, BM, BK, n_tiles = 5, 6, 2, 4, 3
    m = Model.source((M, K)).tile((BM, BK))
    assert m.shapes == [(3, 2), (2, 4)]
    m = m.tile((1, -1))
    assert m.shapes == [(3, 1), (1, 2), (2, 4)]
    m = m.expand((-1, n_tiles))
    assert m.shapes == [(3, 3), (1, 2), (2, 4)]
    m = m.squeeze(0, level=1)
    assert m.shapes == [(3, 3), (2,), (2, 4)]
    # Element [i, j][k][a, b] reads input[BM*i + a, BK*k + b].
    assert src_at(m, 2, 1, 1, 0, 1) == (4, 5)
    assert bool(m.valid[2, 1, 1, 0, 1])
    assert not m.valid[2, 0, 1, 1, 0]  # row 5 is out of range
    assert not m.valid[0, 0, 1, 0, 2]  # column 6 is out of range
    assert src_at(m, 1, 2, 0, 1, 3) == (3, 3)
    for i in range(3):
        for j in range(3):
            for k in range(2):
                for a in range(2):
                    for b in range(4):
                        row, col = BM * i + a, BK * k + b
                        assert bool(m.valid[i, j, k, a, b]) == (row < M and col < K)
                        if row < M and col < K:
                            assert src_at(m, i, j, k, a, b) == (row, col)


# ---------------------------------------------------------------- random chains


class Op:
    """One step of a chain: ``name(*args, **kwargs)`` applied at ``level``."""

    def __init__(self, level, name, args=(), kwargs=None):
        self.level = level
        self.name = name
        self.args = tuple(args)
        self.kwargs = dict(kwargs or {})

    def call(self, x):
        if self.name == "__getitem__":
            return x[self.args[0]]
        return getattr(x, self.name)(*self.args, **self.kwargs)

    def __repr__(self):
        target = "t" + ".dtype" * self.level
        if self.name == "__getitem__":
            key = self.args[0]
            if not isinstance(key, tuple):
                key = (key,)
            parts = []
            for k in key:
                if isinstance(k, slice):
                    s = ("" if k.start is None else str(k.start)) + ":"
                    s += "" if k.stop is None else str(k.stop)
                    if k.step is not None:
                        s += ":" + str(k.step)
                    parts.append(s)
                else:
                    parts.append(str(k))
            expr = f"{target}[{', '.join(parts)}]"
        else:
            bits = [repr(a) for a in self.args]
            bits += [f"{k}={v!r}" for k, v in self.kwargs.items()]
            expr = f"{target}.{self.name}({', '.join(bits)})"
        return f"{target} = {expr}"


def apply_at(t, level, fn):
    """Apply ``fn`` to the tensor ``level`` levels inside ``t`` the user's way."""
    if level == 0:
        return fn(t)
    inner = t.dtype
    inner = apply_at(inner, level - 1, fn)
    t.dtype = inner
    return t


def draw_tile(draw, shape):
    floor_mode = draw(st.sampled_from([None, False, True]), label="floor_mode")
    use_strides = draw(st.booleans(), label="use_strides")
    use_dilation = draw(st.booleans(), label="use_dilation")
    tile_shape, strides, dilation = [], [], []
    for n in shape:
        s = draw(st.sampled_from([-1, 1, 2, 3, 4]), label="stride") if use_strides else -1
        d = draw(st.integers(1, 3), label="dilation") if use_dilation else 1
        choices = []
        for t in [1, 2, 3, 4, 5, -1]:
            tt = n if t == -1 else t
            ss = tt if s == -1 else s
            if tile_count(n, tt, ss, d, bool(floor_mode)) < 1:
                continue
            plain = ss == tt and d == 1 and not floor_mode
            if not LONG_WINDOWS and not plain and d * (tt - 1) + 1 > n:
                continue
            choices.append(t)
        tile_shape.append(draw(st.sampled_from(choices), label="tile"))
        strides.append(s)
        dilation.append(d)
    kwargs = {}
    if use_strides:
        kwargs["strides"] = tuple(strides)
    if use_dilation:
        kwargs["dilation"] = tuple(dilation)
    if floor_mode is not None:
        kwargs["floor_mode"] = floor_mode
    return (tuple(tile_shape),), kwargs


def draw_index(draw, shape):
    count = draw(st.integers(1, len(shape)), label="n_index")
    key = []
    for n in shape[:count]:
        if draw(st.booleans(), label="int_index"):
            key.append(draw(st.integers(-n, n - 1), label="int"))
            continue
        bound = st.one_of(st.none(), st.integers(-n - 2, n + 2))
        start = draw(bound, label="start")
        stop = draw(bound, label="stop")
        step = draw(st.one_of(st.none(), st.integers(1, 3), st.integers(-3, -1)), label="step")
        # Keep the selection non-empty: widen the slice until it selects something.
        if not nt_slice_size(slice(start, stop, step), n):
            stop = None
        if not nt_slice_size(slice(start, stop, step), n):
            start = None
        key.append(slice(start, stop, step))
    if len(key) == 1 and draw(st.booleans(), label="bare_key"):
        return key[0]
    return tuple(key)


OP_NAMES = [
    "tile",
    "tile",
    "tile",
    "expand",
    "squeeze",
    "unsqueeze",
    "permute",
    "flatten",
    "ravel",
    "pad",
    "__getitem__",
]


def applicable(name, model, level):
    shape = model.shapes[level]
    nd = len(shape)
    if name == "tile":
        return nd >= 1 and model.num_levels < MAX_LEVELS
    if name in ("expand", "squeeze"):
        return 1 in shape
    if name == "unsqueeze":
        return nd < 5
    if name in ("permute", "flatten", "pad", "__getitem__"):
        return nd >= 1
    if name == "ravel":
        return level < model.num_levels - 1
    raise AssertionError(name)


def draw_op(draw, model):
    level = draw(st.integers(0, model.num_levels - 1), label="level")
    names = [n for n in OP_NAMES if applicable(n, model, level)]
    name = draw(st.sampled_from(names), label="op")
    shape = model.shapes[level]
    nd = len(shape)
    args, kwargs = (), {}
    if name == "tile":
        args, kwargs = draw_tile(draw, shape)
    elif name == "expand":
        new = []
        for n in shape:
            if n == 1:
                new.append(draw(st.sampled_from([-1, 1, 2, 3]), label="expand"))
            else:
                new.append(-1)
        args = (tuple(new),)
    elif name == "squeeze":
        ones = [j for j, n in enumerate(shape) if n == 1]
        dims = draw(st.lists(st.sampled_from(ones), min_size=1, unique=True), label="dims")
        if len(dims) == 1 and draw(st.booleans(), label="int_dim"):
            args = (dims[0],)
        else:
            args = (tuple(dims),)
    elif name == "unsqueeze":
        args = (draw(st.integers(0, nd), label="dim"),)
    elif name == "permute":
        args = (tuple(draw(st.permutations(range(nd)), label="perm")),)
    elif name == "flatten":
        form = draw(st.sampled_from(["none", "start", "end", "both"]), label="form")
        start = draw(st.integers(0, nd - 1), label="start_dim")
        end = draw(st.integers(start + 1, nd), label="end_dim")
        if form == "start":
            kwargs = {"start_dim": start}
        elif form == "end":
            kwargs = {"end_dim": end}
        elif form == "both":
            kwargs = {"start_dim": start, "end_dim": end}
    elif name == "pad":
        pairs = draw(
            st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2)), min_size=nd, max_size=nd),
            label="pad",
        )
        args = (tuple(pairs),)
    elif name == "__getitem__":
        args = (draw_index(draw, shape),)
    return Op(level, name, args, kwargs)


@st.composite
def chains(draw):
    ndim = draw(st.integers(1, 4), label="src_ndim")
    shape = tuple(draw(st.lists(st.integers(1, 9), min_size=ndim, max_size=ndim), label="shape"))
    model = Model.source(shape)
    ops = []
    for _ in range(draw(st.integers(1, 6), label="n_ops")):
        op = draw_op(draw, model)
        model = model.apply(op.name, op.args, op.kwargs, level=op.level)
        assume(model.size <= MAX_ELEMENTS)
        ops.append(op)
    return shape, ops, model


class _DrawAdapter:
    """Gives ``draw`` the ``draw(strategy, label=...)`` signature."""

    def __init__(self, draw):
        self._draw = draw

    def draw(self, strategy, label=None):
        return self._draw(strategy)


def test_model_random_chains_are_consistent():
    """Sanity of the model on its own: random chains keep valid sources in range."""

    @settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(chains())
    def check(case):
        shape, ops, model = case
        src = model.source_table
        valid = model.valid
        assert src.shape == (*valid.shape, len(shape))
        assert tuple(d for s in model.shapes for d in s) == valid.shape
        ok = src[valid]
        assert (ok >= 0).all()
        assert (ok < np.array(shape)).all()
        assert (src[~valid] == -1).all()

    check()


# ---------------------------------------------------------------- against ntsym


def _ntsym():
    ntsym = pytest.importorskip("ntsym")
    if not hasattr(ntsym, "index_table") or not hasattr(ntsym, "Tensor"):
        pytest.skip("ntsym.index_table / ntsym.Tensor not available")
    return ntsym


def chain_text(shape, ops):
    lines = [f"t = Tensor(shape={shape!r})"] + [repr(op) for op in ops]
    return "\n".join(lines)


@settings(
    max_examples=int(os.environ.get("NTSYM_FUZZ_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(chains())
def test_meta_ops_match_numpy_model(case):
    ntsym = _ntsym()
    shape, ops, model = case
    note(chain_text(shape, ops))

    t = ntsym.Tensor(shape=shape)
    for op in ops:
        t = apply_at(t, op.level, op.call)

    table = ntsym.index_table(t)
    shapes = [tuple(int(n) for n in s) for s in table.shapes]
    assert shapes == model.shapes
    # Walking ``t.dtype`` visits every level, then ends at the element dtype.
    view = t
    for expected in model.shapes:
        assert tuple(int(n) for n in view.shape) == expected
        view = view.dtype
    assert view is None

    valid = np.asarray(table.valid)
    source = np.asarray(table.source)
    assert valid.shape == model.valid.shape
    assert source.shape == model.source_table.shape
    mismatch_valid = np.argwhere(valid != model.valid)
    assert mismatch_valid.size == 0, (
        f"valid differs at {mismatch_valid[:5].tolist()} "
        f"(ntsym {valid[tuple(mismatch_valid[0])]}, model {model.valid[tuple(mismatch_valid[0])]})"
    )
    ours = model.source_table[model.valid]
    theirs = source[model.valid]
    bad = np.argwhere((ours != theirs).any(axis=-1))
    if bad.size:
        where = np.argwhere(model.valid)[bad[0, 0]].tolist()
        raise AssertionError(
            f"source differs at {where}: ntsym {theirs[bad[0, 0]].tolist()}, "
            f"model {ours[bad[0, 0]].tolist()}"
        )
