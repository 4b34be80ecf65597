"""Seeded random chains of meta-operations on concrete shapes, applied to a
NineToothed tensor and an ntsym tensor side by side (see
tests/test_ninetoothed_shapes.py).  A chain is a list of ``(level, name,
args, kwargs)``; every operation is one NineToothed accepts for the shapes at
hand: tile (strides, dilation, floor mode, tiles longer than the dimension),
expand, squeeze, unsqueeze, permute, flatten, ravel, pad and indexing (ints,
slices with any step, None)."""

import math
import random

OPS = ("tile", "tile", "tile", "expand", "squeeze", "unsqueeze", "permute", "flatten",
       "ravel", "pad", "getitem")


def shapes_of(t):
    """Every level's shape, outermost first, as tuples of ints."""
    out = []
    while hasattr(t, "shape") and not isinstance(t, type):
        out.append(tuple(int(n) for n in t.shape))
        t = t.dtype
    return out


def apply_at(t, level, fn):
    """``fn`` applied to level ``level`` of ``t``, assigned back through
    ``dtype`` as NineToothed users write it."""
    if level == 0:
        return fn(t)
    t.dtype = apply_at(t.dtype, level - 1, fn)
    return t


def call(t, op):
    _, name, args, kwargs = op
    if name == "getitem":
        return t[args[0]]
    return getattr(t, name)(*args, **kwargs)


def random_chain(rng, max_ops=5, max_levels=3, max_elements=4096):
    """``(source shape, ops)``, kept small: at most ``max_elements`` elements
    over all levels, extents clamped at 0 as ntsym counts them."""
    shape = tuple(rng.randint(1, 7) for _ in range(rng.randint(1, 3)))
    levels = [shape]
    ops = []
    for _ in range(rng.randint(1, max_ops)):
        level = rng.randrange(len(levels))
        current = levels[level]
        names = [n for n in OPS if _applicable(n, current, level, levels, max_levels)]
        if not names or 0 in current:
            continue  # nothing to do on a scalar or an empty level
        name = rng.choice(names)
        args, kwargs = _draw(rng, name, current)
        new = _shapes_after(levels, level, name, args, kwargs)
        if new is None or math.prod(max(d, 1) for s in new for d in s) > max_elements:
            continue
        levels = new
        ops.append((level, name, args, kwargs))
    return shape, ops


def _applicable(name, shape, level, levels, max_levels):
    if name == "tile":
        return len(shape) >= 1 and len(levels) < max_levels
    if name in ("expand", "squeeze"):
        return 1 in shape
    if name == "unsqueeze":
        return len(shape) < 4
    if name == "squeeze_all":
        return False
    if name == "ravel":
        return level < len(levels) - 1
    return len(shape) >= 1


def _draw(rng, name, shape):
    nd = len(shape)
    if name == "tile":
        tiles, strides, dilation = [], [], []
        for n in shape:
            tiles.append(rng.choice([1, 2, 3, 4, 5, -1, n + 1]))
            strides.append(rng.choice([-1, 1, 2, 3, 4, 7]))
            dilation.append(rng.choice([1, 1, 2, 3]))
        kwargs = {}
        if rng.random() < 0.6:
            kwargs["strides"] = tuple(strides)
        if rng.random() < 0.4:
            kwargs["dilation"] = tuple(dilation)
        if rng.random() < 0.5:
            kwargs["floor_mode"] = rng.random() < 0.5
        return (tuple(tiles),), kwargs
    if name == "expand":
        return (tuple(rng.choice([-1, 1, 2, 3]) if n == 1 else -1 for n in shape),), {}
    if name == "squeeze":
        ones = [j for j, n in enumerate(shape) if n == 1]
        dims = rng.sample(ones, rng.randint(1, len(ones)))
        return ((dims[0] if len(dims) == 1 and rng.random() < 0.5 else tuple(dims)),), {}
    if name == "unsqueeze":
        return (rng.randint(0, nd),), {}
    if name == "permute":
        dims = list(range(nd))
        rng.shuffle(dims)
        return (tuple(dims),), {}
    if name == "flatten":
        start = rng.randint(0, nd - 1)
        end = rng.randint(start + 1, nd)
        return (), rng.choice([{}, {"start_dim": start}, {"end_dim": end}, {"start_dim": start, "end_dim": end}])
    if name == "ravel":
        return (), {}
    if name == "pad":
        return (tuple((rng.randint(0, 2), rng.randint(0, 2)) for _ in shape),), {}
    return (_draw_key(rng, shape),), {}


def _draw_key(rng, shape):
    key = []
    for n in shape[: rng.randint(1, len(shape))]:
        kind = rng.random()
        if kind < 0.25:
            key.append(rng.randint(0, n - 1))
        else:
            bound = [None] + list(range(-n - 2, n + 3))
            key.append(slice(rng.choice(bound), rng.choice(bound), rng.choice([None, 1, 2, 3, -1, -2, -3])))
        if rng.random() < 0.15:
            key.append(None)
    if len(key) == 1 and rng.random() < 0.5:
        return key[0]
    return tuple(key)


def _shapes_after(levels, level, name, args, kwargs):
    """The levels' shapes after the operation (NineToothed's formulas, clamped
    at 0), or None for an operation to leave out (an empty slice, whose
    NineToothed extent is negative)."""
    from numpy_model import nt_slice_size, tile_count

    shape = levels[level]
    new = list(levels)
    if name == "tile":
        outer, inner = [], []
        for n, t, s, d in zip(shape, args[0], kwargs.get("strides", (-1,) * len(shape)),
                              kwargs.get("dilation", (1,) * len(shape))):
            t = n if t == -1 else t
            s = t if s == -1 else s
            outer.append(tile_count(n, t, s, d, kwargs.get("floor_mode", False)))
            inner.append(t)
        new[level: level + 1] = [tuple(outer), tuple(inner)]
    elif name == "expand":
        new[level] = tuple(n if m == -1 else m for n, m in zip(shape, args[0]))
    elif name == "squeeze":
        dims = args[0] if isinstance(args[0], tuple) else (args[0],)
        new[level] = tuple(n for j, n in enumerate(shape) if j not in dims)
    elif name == "unsqueeze":
        new[level] = shape[: args[0]] + (1,) + shape[args[0]:]
    elif name == "permute":
        new[level] = tuple(shape[d] for d in args[0])
    elif name == "flatten":
        start, end = kwargs.get("start_dim", 0), kwargs.get("end_dim", len(shape))
        new[level] = shape[:start] + (math.prod(shape[start:end]),) + shape[end:]
    elif name == "ravel":
        new[level:] = [tuple(d for s in levels[level:] for d in s)]
    elif name == "pad":
        new[level] = tuple(n + a + b for n, (a, b) in zip(shape, args[0]))
    else:
        key = args[0] if isinstance(args[0], tuple) else (args[0],)
        out, dims = [], iter(shape)
        for k in key:
            if k is None:
                out.append(1)
                continue
            n = next(dims)
            if isinstance(k, slice):
                size = nt_slice_size(k, n)
                if size == 0:
                    return None
                out.append(size)
        new[level] = tuple(out) + tuple(dims)
    return new


def chain_text(shape, ops):
    lines = [f"t = Tensor(shape={shape!r})"]
    for level, name, args, kwargs in ops:
        text = f"t[{args[0]!r}]" if name == "getitem" else (
            f"t.{name}(" + ", ".join([repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]) + ")")
        lines.append(f"level {level}: {text}")
    return "\n".join(lines)
