# Over 600 lines: the kernel fuzzer (random arrangements and applications, each checked against tests/numpy_model.py), read together.
"""Generated kernels run and checked against the NumPy model, element by element.

Random chains of meta-operations (the strategies of
``tests/test_meta_ops_property.py``, extended) arrange an input ``x`` into
levels ``S0 / S1`` (programs / tile) or ``S0 / (m,) / S2`` (programs / a 1-D
middle level / tile).  An output ``y`` of shape ``(*S0, *S1)`` (or
``(*S0, m, *S2)``) is arranged to the same levels, and the application copies
each program's tile::

    y = x                                      # two levels
    for i in range(x.shape[0]): y[i] = x[i]    # three levels

The kernel runs (through Triton's interpreter without a GPU) on torch tensors
that are contiguous, transposed or strided views, in float32, float16 and int32
holding integers, so the comparison is exact: ``y`` must equal
``where(valid, x[source index], other)`` with the model's ``valid`` and
``source`` tables.

``NTSYM_FUZZ_KERNELS`` sets the number of random examples (default 100, about
30 s through the interpreter on two cores).
"""

import os

import numpy as np
import pytest
import sympy
import torch
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st

import ntsym
import ntsym.language as ntl
from ntsym import Symbol, Tensor
from tests.numpy_model import Model, tile_count
from tests.test_meta_ops_property import OP_NAMES, Op, apply_at, applicable, draw_index

FILL = -1  # what out-of-bounds elements of `x` read (`Tensor(other=FILL)`)
UNWRITTEN = -7  # what `y` holds before the kernel runs
MAX_ELEMENTS = 4096
MAX_PROGRAMS = 1024  # the interpreter runs programs one after another

DTYPES = [torch.float32, torch.float16, torch.int32]
# Data values stay below 2048, so float16 holds them exactly.
MAX_VALUE = {torch.float32: 1 << 20, torch.float16: 2048, torch.int32: 1 << 20}


# -- applications ------------------------------------------------------------------


def copy_tile(x, y):
    y = x  # noqa: F841


def copy_tiles(x, y):
    for i in range(x.shape[0]):
        y[i] = x[i]


# -- the output's arrangement --------------------------------------------------------


def arrange_like(y, shapes, whole=False):
    """Arrange ``y`` of shape ``(*shapes[0], *shapes[1], ...)`` into levels of
    exactly ``shapes`` (two levels, or three with a 1-D middle level).

    Tiles of size 1 over the leading dims and of the level's shape (or ``-1``
    with ``whole``) over its own dims, then the singleton dims that tiling
    added are squeezed, by position (a level's own dims may be 1 as well).
    """
    if len(shapes) == 2:
        s0, s1 = shapes
        a, b = len(s0), len(s1)
        inner = tuple(-1 for _ in s1) if whole else tuple(s1)
        y = y.tile((1,) * a + inner)
        if b:
            y = y.squeeze(tuple(range(a, a + b)))
        if a:
            y.dtype = y.dtype.squeeze(tuple(range(a)))
        return y
    s0, (m,), s2 = shapes
    a, c = len(s0), len(s2)
    inner = tuple(-1 for _ in s2) if whole else tuple(s2)
    y = y.tile((1,) * a + (1,) + inner)
    y = y.tile((1,) * a + (-1 if whole else m,) + (1,) * c)
    y = y.squeeze(tuple(range(a, a + 1 + c)))
    middle = tuple(range(a)) + tuple(range(a + 1, a + 1 + c))
    if middle:
        y.dtype = y.dtype.squeeze(middle)
    y.dtype.dtype = y.dtype.dtype.squeeze(tuple(range(a + 1)))
    return y


def level_shapes(t):
    shapes = []
    while isinstance(t, Tensor):
        shapes.append(tuple(t.shape))
        t = t.dtype
    return shapes


def build_kernel(ops, x_src, y_src, num_levels, whole=False):
    """``ntsym.make`` for ``x`` arranged by ``ops`` and ``y`` arranged like it."""

    def arrangement(x, y):
        for op in ops:
            x = apply_at(x, op.level, op.call)
        return x, arrange_like(y, level_shapes(x), whole)

    application = copy_tile if num_levels == 2 else copy_tiles
    return ntsym.make(arrangement, application, (x_src, y_src))


# -- inputs ------------------------------------------------------------------------


def make_input(shape, dtype, layout, rng):
    """A tensor of ``shape`` holding distinct-ish non-negative integers, laid
    out as ``layout``: ("contiguous",), ("transposed", perm) or
    ("sliced", offsets, steps)."""
    high = MAX_VALUE[dtype]
    kind = layout[0]
    if kind == "contiguous":
        base_shape = shape
    elif kind == "transposed":
        perm = layout[1]
        base_shape = tuple(shape[p] for p in perm)
    else:  # a view with steps into a larger tensor, with margins before and after
        _, offsets, steps = layout
        base_shape = tuple(o + (n - 1) * s + 1 + o for n, o, s in zip(shape, offsets, steps))
    data = torch.from_numpy(rng.integers(0, high, size=base_shape, dtype=np.int64)).to(dtype)
    data = data.to(torch.get_default_device())
    if kind == "contiguous":
        return data
    if kind == "transposed":
        inverse = tuple(int(i) for i in np.argsort(perm))
        return data.permute(inverse)
    key = tuple(slice(o, o + (n - 1) * s + 1, s) for n, o, s in zip(shape, offsets, steps))
    return data[key]


def make_output(shape, dtype, layout):
    y = torch.full(tuple(shape), UNWRITTEN, dtype=dtype)
    if layout[0] == "transposed":
        perm = layout[1]
        base = torch.full(tuple(shape[p] for p in perm), UNWRITTEN, dtype=dtype)
        y = base.permute(tuple(int(i) for i in np.argsort(perm)))
    return y.to(torch.get_default_device())


def to_numpy(t):
    return t.cpu().to(torch.float64 if t.dtype.is_floating_point else torch.int64).numpy()


def expected_output(model, x):
    """``x`` gathered at the model's source indices, ``FILL`` where invalid."""
    x_np, src = to_numpy(x), model.source_table
    gathered = x_np[tuple(np.moveaxis(src, -1, 0))]
    return np.where(model.valid, gathered, FILL)


def assert_copied(model, x, y):
    got, want = to_numpy(y), expected_output(model, x)
    assert got.shape == want.shape
    bad = np.argwhere(got != want)
    assert bad.size == 0, (
        f"{len(bad)} of {got.size} elements differ; first at {bad[0].tolist()}: "
        f"kernel {got[tuple(bad[0])]}, model {want[tuple(bad[0])]} "
        f"(model source {model.source_table[tuple(bad[0])].tolist()}, "
        f"valid {bool(model.valid[tuple(bad[0])])})"
    )


def check_copy(kernel, model, x, y, symbols=None, advance=False):
    """Run ``kernel(x, y)`` (block-size symbols given by name) and compare;
    with ``advance``, loops advance pointers where they can."""
    known = {m.symbol.name for m in kernel.ir.meta_params}
    options = {"advance": True} if advance and kernel.spec.advance_flag else None
    kernel(x, y, **{k: v for k, v in (symbols or {}).items() if k in known}, ntsym_options=options)
    assert_copied(model, x, y)


# -- random arrangements -----------------------------------------------------------


def draw_tile(draw, shape, pow2, symbols=None):
    """Like the property test's tiles; ``pow2`` restricts explicit tile sizes
    to powers of two (non-powers exercise the masks of padded blocks).  With a
    list ``symbols``, some power-of-two sizes become compile-time symbols,
    given at launch; ``(symbol, value)`` pairs are appended to the list."""
    floor_mode = draw(st.sampled_from([None, False, True]))
    use_strides = draw(st.booleans())
    use_dilation = draw(st.booleans())
    sizes = [1, 2, 4, 8, -1] if pow2 else [1, 2, 3, 4, 5, 6, 7, -1]
    tile_shape, strides, dilation = [], [], []
    for n in shape:
        s = draw(st.sampled_from([-1, 1, 2, 3, 4])) if use_strides else -1
        d = draw(st.integers(1, 3)) if use_dilation else 1
        choices = []
        for t in sizes:
            tt = n if t == -1 else t
            ss = tt if s == -1 else s
            if tile_count(n, tt, ss, d, bool(floor_mode)) >= 1:
                choices.append(t)
        tile_shape.append(draw(st.sampled_from(choices)))
        strides.append(s)
        dilation.append(d)
    model_shape = tuple(tile_shape)
    if symbols is not None:
        for j, t in enumerate(tile_shape):
            if t != -1 and t & (t - 1) == 0 and draw(st.booleans()):
                symbol = Symbol(f"BLOCK_{len(symbols)}", constexpr=True)
                symbols.append((symbol, t))
                tile_shape[j] = symbol
    kwargs = {}
    if use_strides:
        kwargs["strides"] = tuple(strides)
    if use_dilation:
        kwargs["dilation"] = tuple(dilation)
    if floor_mode is not None:
        kwargs["floor_mode"] = floor_mode
    return tile_op(-1, tuple(tile_shape), model_shape, kwargs)


def tile_op(level, tile_shape, model_shape, kwargs):
    op = Op(level, "tile", (tile_shape,), kwargs)
    op.model_args = (model_shape,)
    return op


def draw_op(draw, model, pow2, symbolic, symbols):
    level = draw(st.integers(0, model.num_levels - 1))
    names = [n for n in OP_NAMES if applicable(n, model, level)]  # at most 3 levels
    name = draw(st.sampled_from(names))
    shape = model.shapes[level]
    nd = len(shape)
    args, kwargs = (), {}
    if name == "tile":
        op = draw_tile(draw, shape, pow2, symbols)
        return tile_op(level, op.args[0], op.model_args[0], op.kwargs)
    if name == "expand":
        args = (tuple(draw(st.sampled_from([-1, 1, 2, 3])) if n == 1 else -1 for n in shape),)
    elif name == "squeeze":
        ones = [j for j, n in enumerate(shape) if n == 1]
        dims = draw(st.lists(st.sampled_from(ones), min_size=1, unique=True))
        args = (dims[0],) if len(dims) == 1 and draw(st.booleans()) else (tuple(dims),)
    elif name == "unsqueeze":
        args = (draw(st.integers(0, nd)),)
    elif name == "permute":
        args = (tuple(draw(st.permutations(range(nd)))),)
    elif name == "flatten":
        form = draw(st.sampled_from(["none", "start", "end", "both"]))
        start = draw(st.integers(0, nd - 1))
        end = draw(st.integers(start + 1, nd))
        kwargs = {
            "none": {},
            "start": {"start_dim": start},
            "end": {"end_dim": end},
            "both": {"start_dim": start, "end_dim": end},
        }[form]
    elif name == "pad":
        pair = st.tuples(st.integers(0, 2), st.integers(0, 2))
        pairs = draw(st.lists(pair, min_size=nd, max_size=nd))
        args = (tuple(pairs),)
    elif name == "__getitem__":
        key = draw_index(draw, shape)
        # Negative bounds too: over a symbolic size they count from its end,
        # as over a concrete one (NineToothed's slices).
        args = (key,)
    return Op(level, name, args, kwargs)


def apply(model, op):
    args = getattr(op, "model_args", op.args)
    return model.apply(op.name, args, op.kwargs, level=op.level)


@st.composite
def kernel_cases(draw):
    ndim = draw(st.integers(1, 4))
    symbolic = draw(st.booleans())
    pow2 = draw(st.booleans())
    # Some tile sizes are compile-time symbols given at launch.
    symbols = [] if draw(st.integers(0, 2)) == 1 else None
    size = st.sampled_from([1, 2, 4, 8]) if draw(st.booleans()) else st.integers(1, 9)
    shape = tuple(draw(st.lists(size, min_size=ndim, max_size=ndim)))
    model = Model.source(shape)
    ops = []

    def push(op):
        nonlocal model
        model = apply(model, op)
        assume(model.size <= MAX_ELEMENTS)
        ops.append(op)

    for _ in range(draw(st.integers(0, 5))):
        push(draw_op(draw, model, pow2, symbolic or symbols is not None, symbols))
    # Bring the arrangement to the kernel's form: two levels, or three with a
    # one-dimensional middle level.
    if model.num_levels == 1 or (model.num_levels == 2 and draw(st.integers(0, 3)) == 0):
        level = draw(st.integers(0, model.num_levels - 1))
        assume(len(model.shapes[level]) >= 1)
        op = draw_tile(draw, model.shapes[level], pow2, symbols)
        push(tile_op(level, op.args[0], op.model_args[0], op.kwargs))
    if model.num_levels == 3:
        middle = len(model.shapes[1])
        if middle == 0:
            push(Op(1, "unsqueeze", (0,)))
        elif middle > 1:
            push(Op(1, "flatten"))
    # Now and then, programs (or loop steps) of single elements: a 0-d tile.
    innermost = model.shapes[-1]
    if innermost and draw(st.integers(0, 7)) == 5:
        key = tuple(draw(st.integers(-n, n - 1)) for n in innermost)
        push(Op(model.num_levels - 1, "__getitem__", (key,)))
    assume(len(model.shapes[0]) >= 1)
    assume(int(np.prod(model.shapes[0])) <= MAX_PROGRAMS)

    dtype = draw(st.sampled_from(DTYPES))
    layout_kind = draw(st.sampled_from(["contiguous", "transposed", "sliced"]))
    if layout_kind == "contiguous":
        layout = ("contiguous",)
    elif layout_kind == "transposed":
        layout = ("transposed", tuple(draw(st.permutations(range(ndim)))))
    else:
        offsets = tuple(draw(st.lists(st.integers(0, 2), min_size=ndim, max_size=ndim)))
        steps = tuple(draw(st.lists(st.integers(1, 3), min_size=ndim, max_size=ndim)))
        layout = ("sliced", offsets, steps)
    out_ndim = sum(len(s) for s in model.shapes)
    out_layout = ("contiguous",)
    if out_ndim >= 2 and draw(st.booleans()):
        out_layout = ("transposed", tuple(draw(st.permutations(range(out_ndim)))))
    symbols = dict(symbols or ())
    return dict(
        shape=shape,
        symbolic=symbolic,
        # With block-size symbols, y's sizes are symbolic too: concrete ones
        # cannot equal tile counts for every block size, which ntsym requires.
        out_symbolic=bool(symbols) or draw(st.booleans()),
        whole=draw(st.booleans()),
        ops=ops,
        symbols={s.name: v for s, v in symbols.items()},
        model=model,
        dtype=dtype,
        layout=layout,
        out_layout=out_layout,
        seed=draw(st.integers(0, 2**32 - 1)),
        # Loops address tiles from the loop index, or advance pointers (the
        # tuner's other choice on a GPU).
        advance=draw(st.booleans()),
    )


def case_text(case):
    if case["symbolic"]:
        src = f"t = Tensor({len(case['shape'])}, shape_options={{'constexpr': True}}, other={FILL})"
    else:
        src = f"t = Tensor(shape={case['shape']!r}, other={FILL})"
    lines = [src] + [repr(op) for op in case["ops"]]
    if case.get("symbols"):
        lines.append(f"# launched with {case['symbols']} (constexpr symbols)")
    lines.append(f"# levels {case['model'].shapes}; x {case['dtype']} {case['layout']}"
                 + ("; loops advance pointers" if case.get("advance") else ""))
    lines.append(
        f"# y: {'symbolic' if case['out_symbolic'] else 'concrete'}, "
        f"{'whole-dim' if case['whole'] else 'explicit'} tiles, {case['out_layout']}"
    )
    return "\n".join(lines)


def source_tensor(shape, symbolic, **kwargs):
    if symbolic:
        return Tensor(len(shape), shape_options={"constexpr": True}, **kwargs)
    return Tensor(shape=tuple(shape), **kwargs)


def run_case(case):
    model = case["model"]
    out_shape = tuple(n for s in model.shapes for n in s)
    x_src = source_tensor(case["shape"], case["symbolic"], other=FILL)
    y_src = source_tensor(out_shape, case["out_symbolic"])
    kernel = build_kernel(case["ops"], x_src, y_src, model.num_levels, case["whole"])
    rng = np.random.default_rng(case["seed"])
    x = make_input(case["shape"], case["dtype"], case["layout"], rng)
    y = make_output(out_shape, case["dtype"], case["out_layout"])
    check_copy(kernel, model, x, y, case.get("symbols", {}), case.get("advance", False))


@settings(
    max_examples=int(os.environ.get("NTSYM_FUZZ_KERNELS", "100")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(kernel_cases())
@pytest.mark.slow
def test_generated_kernels_match_model(case):
    # SymPy's cache is kept across examples on purpose: it mixes the equal but
    # distinct symbols of successive kernels (every make() creates its own
    # `x_size_0`, every example its own `BLOCK_0`), as a long-lived process does
    # (test_two_kernels_with_the_same_parameter_names).
    note(case_text(case))
    run_case(case)


# -- notable arrangements, deterministic -------------------------------------------


def empty_output(model, dtype=torch.float32):
    return torch.full(tuple(n for s in model.shapes for n in s), UNWRITTEN, dtype=dtype)


# The NineToothed matrix multiplication's arrangement; the application copies
# the tiles `input[k]` and `other[k]` that each program's loop would multiply.
# Block sizes are ints, or compile-time symbols given at launch.
MM_BLOCKS = tuple(Symbol(name, constexpr=True) for name in ("MM_BM", "MM_BN", "MM_BK"))


def mm_arrangement(input, other, output, bm, bn, bk):
    output_arranged = output.tile((bm, bn))
    input_arranged = input.tile((bm, bk))
    input_arranged = input_arranged.tile((1, -1))
    input_arranged = input_arranged.expand((-1, output_arranged.shape[1]))
    input_arranged.dtype = input_arranged.dtype.squeeze(0)
    other_arranged = other.tile((bk, bn))
    other_arranged = other_arranged.tile((-1, 1))
    other_arranged = other_arranged.expand((output_arranged.shape[0], -1))
    other_arranged.dtype = other_arranged.dtype.squeeze(1)
    return input_arranged, other_arranged, output_arranged


def mm_copy(input, other, output, input_copy, other_copy):
    for k in range(input.shape[0]):
        input_copy[k] = input[k]
        other_copy[k] = other[k]


def mm_models(m, k, n, bm, bn, bk):
    n_tiles, m_tiles = tile_count(n, bn, bn, 1, False), tile_count(m, bm, bm, 1, False)
    a = Model.source((m, k)).tile((bm, bk)).tile((1, -1)).expand((-1, n_tiles)).squeeze(0, level=1)
    b = Model.source((k, n)).tile((bk, bn)).tile((-1, 1)).expand((m_tiles, -1)).squeeze(1, level=1)
    return a, b


MM_CASES = [(10, 13, 7, 4, 2, 8), (5, 3, 9, 8, 4, 2), (16, 32, 8, 8, 4, 16), (1, 1, 1, 1, 1, 1)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "m, k, n, bm, bn, bk, symbols",
    [(*c, False) for c in MM_CASES + [(9, 7, 5, 3, 5, 6)]] + [(*c, True) for c in MM_CASES],
)
@pytest.mark.usefixtures("loop_addressing")
def test_matmul_arrangement_copy(m, k, n, bm, bn, bk, symbols, dtype):
    blocks = MM_BLOCKS if symbols else (bm, bn, bk)
    launch = {s.name: v for s, v in zip(MM_BLOCKS, (bm, bn, bk))} if symbols else {}

    def arrangement(input, other, output, input_copy, other_copy):
        arranged = mm_arrangement(input, other, output, *blocks)
        input_arranged, other_arranged, output_arranged = arranged
        return (
            input_arranged,
            other_arranged,
            output_arranged,
            arrange_like(input_copy, level_shapes(input_arranged)),
            arrange_like(other_copy, level_shapes(other_arranged)),
        )

    sources = (Tensor(2, other=FILL), Tensor(2, other=FILL), Tensor(2), Tensor(5), Tensor(5))
    kernel = ntsym.make(arrangement, mm_copy, sources)
    a_model, b_model = mm_models(m, k, n, bm, bn, bk)
    rng = np.random.default_rng(0)
    a = make_input((m, k), dtype, ("contiguous",), rng)
    b = make_input((k, n), dtype, ("transposed", (1, 0)), rng)
    c = torch.empty(m, n, dtype=dtype)
    a_copy, b_copy = empty_output(a_model, dtype), empty_output(b_model, dtype)
    kernel(a, b, c, a_copy, b_copy, **launch)
    assert_copied(a_model, a, a_copy)
    assert_copied(b_model, b, b_copy)


def conv2d_arrangement(input, filter, output, bm, bn, bk):
    """The paper's Listing 8: conv2d as an implicit GEMM on mm's arrangement."""
    input_arranged = input.tile((1, *filter.shape[1:]), strides=(-1, -1, 1, 1))
    input_arranged = input_arranged.squeeze(1)
    input_arranged.dtype = input_arranged.dtype.squeeze(0)
    input_arranged = input_arranged.ravel()
    input_arranged = input_arranged.flatten(end_dim=3).flatten(start_dim=1)
    filter_arranged = filter.flatten(start_dim=1)
    filter_arranged = filter_arranged.permute((1, 0))
    output_arranged = output.permute((0, 2, 3, 1)).flatten(end_dim=3)
    return mm_arrangement(input_arranged, filter_arranged, output_arranged, bm, bn, bk)


def conv2d_copy(input, filter, output, input_copy):
    for k in range(input.shape[0]):
        input_copy[k] = input[k]


@pytest.mark.parametrize("symbolic", [False, True])
@pytest.mark.parametrize(
    "nchw, krs, bm, bn, bk, symbols",
    [
        ((2, 3, 6, 5), (5, 3, 2), 8, 4, 8, False),
        ((2, 3, 6, 5), (5, 3, 2), 8, 4, 8, True),
        ((1, 2, 4, 4), (3, 3, 3), 16, 2, 4, True),
        ((2, 2, 5, 4), (3, 2, 3), 5, 2, 7, False),
    ],
)
@pytest.mark.usefixtures("loop_addressing")
@pytest.mark.slow
def test_conv2d_implicit_gemm_input_copy(nchw, krs, bm, bn, bk, symbols, symbolic):
    (n, c, h, w), (k, r, s) = nchw, krs
    p, q = h - r + 1, w - s + 1
    blocks = MM_BLOCKS if symbols else (bm, bn, bk)
    launch = {s.name: v for s, v in zip(MM_BLOCKS, (bm, bn, bk))} if symbols else {}

    def arrangement(input, filter, output, input_copy):
        arranged = conv2d_arrangement(input, filter, output, *blocks)
        input_arranged, filter_arranged, output_arranged = arranged
        copy = arrange_like(input_copy, level_shapes(input_arranged))
        return input_arranged, filter_arranged, output_arranged, copy

    shapes = [(n, c, h, w), (k, c, r, s), (n, k, p, q)]
    sources = [source_tensor(shape, symbolic, other=FILL) for shape in shapes]
    model = (
        Model.source((n, c, h, w))
        .tile((1, c, r, s), strides=(-1, -1, 1, 1))
        .squeeze(1)
        .squeeze(0, level=1)
        .ravel()
        .flatten(end_dim=3)
        .flatten(start_dim=1)
    )
    assert model.shapes == [(n * p * q, c * r * s)]
    model = model.tile((bm, bk)).tile((1, -1)).expand((-1, tile_count(k, bn, bn, 1, False)))
    model = model.squeeze(0, level=1)
    # With block symbols, the copy's sizes are symbolic: concrete ones cannot
    # equal tile counts for every block size, which the proof asks.
    copy = source_tensor(tuple(d for s in model.shapes for d in s), symbolic or symbols)
    kernel = ntsym.make(arrangement, conv2d_copy, (*sources, copy))
    rng = np.random.default_rng(1)
    x = make_input((n, c, h, w), torch.float32, ("sliced", (1, 0, 2, 1), (2, 1, 1, 2)), rng)
    weight = torch.zeros(k, c, r, s)
    output = torch.empty(n, k, p, q)
    y = empty_output(model)
    kernel(x, weight, output, y, **launch)
    assert_copied(model, x, y)


def fixed_case(shape, ops, symbolic=False, out_symbolic=False, whole=False,
               dtype=torch.float32, layout=("contiguous",), out_layout=("contiguous",)):
    """A case like those of `kernel_cases`, for a given chain."""
    model = Model.source(shape)
    for op in ops:
        model = apply(model, op)
    return dict(shape=shape, symbolic=symbolic, out_symbolic=out_symbolic, whole=whole,
                ops=ops, symbols={}, model=model, dtype=dtype, layout=layout,
                out_layout=out_layout, seed=0)


SOURCE_KINDS = [
    dict(symbolic=False, out_symbolic=False),
    dict(symbolic=True, out_symbolic=True),
    dict(symbolic=True, out_symbolic=False, whole=True),
]


@pytest.mark.parametrize("kind", SOURCE_KINDS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "shape, pad, tile",
    [
        ((7, 5), ((1, 2), (3, 0)), (4, 3)),
        ((6,), ((2, 2),), (4,)),
        ((3, 2, 5), ((0, 1), (1, 1), (2, 0)), (2, -1, 3)),
    ],
)
def test_pad_then_tile(shape, pad, tile, dtype, kind):
    ops = [Op(0, "pad", (pad,)), Op(0, "tile", (tile,))]
    layout = ("sliced", (1,) * len(shape), (2,) * len(shape))
    run_case(fixed_case(shape, ops, dtype=dtype, layout=layout, **kind))


@pytest.mark.parametrize("kind", SOURCE_KINDS)
@pytest.mark.parametrize("floor_mode", [False, True])
@pytest.mark.parametrize(
    "shape, tile, strides, dilation",
    [((9, 11), (3, 2), (2, 3), (2, 4)), ((8,), (4,), (1,), (2,)), ((5, 6), (2, 3), (3, 1), (3, 2))],
)
def test_dilated_strided_tile(shape, tile, strides, dilation, floor_mode, kind):
    kwargs = {"strides": strides, "dilation": dilation, "floor_mode": floor_mode}
    ops = [Op(0, "tile", (tile,), kwargs)]
    layout = ("transposed", tuple(reversed(range(len(shape)))))
    run_case(fixed_case(shape, ops, dtype=torch.float16, layout=layout, **kind))


def test_dilated_strided_tile_in_three_levels():
    # Windows of a dilated, strided tile, grouped by rows: levels (3, 1) / (3,) / (2, 2).
    ops = [
        Op(0, "tile", ((2, 2),), {"strides": (2, 1), "dilation": (2, 3)}),
        Op(0, "tile", ((1, -1),)),
        Op(1, "squeeze", (0,)),
    ]
    case = fixed_case((7, 6), ops, dtype=torch.int32)
    assert case["model"].shapes == [(3, 1), (3,), (2, 2)]
    run_case(case)
    run_case(dict(case, symbolic=True, out_symbolic=True))


# -- minimal cases of failures the fuzzer found ------------------------------------


def test_mask_on_program_ids_only():
    # y's bound `pid_0 < 2` is the whole mask of its store (the grid, cdiv(x.shape[0], 2),
    # is symbolic); Triton's interpreter mistypes a scalar mask broadcast to a block.
    run_case(fixed_case((4,), [Op(0, "tile", ((2,),))], symbolic=True))


def test_block_stored_through_tile_of_ones():
    # x's tile has the symbolic shape (x.shape[0],), y's the concrete shape (1,):
    # the store needs a block of pointers, not one pointer.
    run_case(fixed_case((1,), [Op(0, "tile", ((-1,),))], symbolic=True, whole=True))


def test_launch_check_with_floor_division_of_a_difference():
    # The tile count cdiv(x.shape[0] - 4, 2) + 1 is compared with y.shape[0] at
    # launch: host code must floor-divide a possibly negative numerator.
    ops = [Op(0, "tile", ((2,),), {"dilation": (3,)})]
    run_case(fixed_case((5,), ops, symbolic=True, out_symbolic=True))


@pytest.mark.parametrize("dilation", [1, 3])
def test_floor_mode_count_as_a_divisor(dilation):
    # The middle level's size x.shape[0] // 5 (floor mode) divides index math; it
    # is positive whenever the launch checks pass.
    ops = [
        Op(0, "tile", ((5,),), {"floor_mode": True}),
        Op(0, "tile", ((-1,),), {"dilation": (dilation,)}),
    ]
    run_case(fixed_case((9,), ops, symbolic=True))
    ops = [
        Op(0, "tile", ((1, 5),), {"floor_mode": True}),
        Op(0, "tile", ((1, -1),)),
        Op(1, "flatten"),
    ]
    run_case(fixed_case((3, 9), ops, symbolic=True))


def copy_first(x, y):
    return x.tile((1,)), y.tile((1,))


PAD_BLOCK = Symbol("PAD_BLOCK", constexpr=True)


def copy_second(x, y):
    x = x.pad(((0, 1), (0, 1), (0, 1), (2, 0))).flatten().tile((PAD_BLOCK,))
    x.dtype = x.dtype[0]
    y = y.tile((1,))
    y.dtype = y.dtype.squeeze(0)
    return x, y


def test_two_kernels_with_the_same_parameter_names():
    sympy.core.cache.clear_cache()  # as in a fresh process
    ntsym.make(copy_first, copy_tile, (Tensor(1, shape_options={"constexpr": True}), Tensor(1)))
    # Regression: SymPy once failed to order the two kernels' equal-named size symbols.
    ntsym.make(copy_second, copy_tile, (Tensor(4, shape_options={"constexpr": True}), Tensor(1)))


BLOCK = Symbol("BLOCK", constexpr=True)


def block_sums(x, partial):
    partial = ntl.sum(x, 0)  # noqa: F841


def test_per_program_output_sized_by_block_symbol():
    # One program per BLOCK elements of x, one partial sum per program: the
    # outermost shapes agree for the BLOCK given at launch, not for every BLOCK.
    def arrangement(x, partial):
        partial_arranged = partial.tile((1,))
        partial_arranged.dtype = partial_arranged.dtype.squeeze(0)
        return x.tile((BLOCK,)), partial_arranged

    kernel = ntsym.make(arrangement, block_sums, (Tensor(1), Tensor(1)))
    x = torch.arange(10, dtype=torch.float32)
    partial = torch.empty(3)
    kernel(x, partial, BLOCK=4)
    torch.testing.assert_close(partial, torch.tensor([6.0, 22.0, 17.0]))
