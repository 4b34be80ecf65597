"""Arrangements evaluated with numbers: ``eval`` (where every element of every
level comes from), ``subs`` (an arrangement with sizes filled in), and what
they stand on: ``index_table`` (the source index of every element, and
whether it exists) and ``eval_expr``.  They evaluate the SymPy index maps
directly: no kernel is compiled, so they work without a GPU.

``Tensor.eval`` and ``Tensor.subs`` call these; this module makes tensors of
the class it is given (``type(tensor)``) and imports no tensor module, so
that ``ntsym.tensor`` stands on it and not the other way round."""

import numpy as np
import sympy

from ntsym.errors import MetaOperationError
from ntsym.hierarchy import Hierarchy, Level


def eval(tensor, subs=None):  # noqa: A001 - NineToothed's name
    """The flat source offset of every element of every level of ``tensor``,
    -1 where an element does not exist (outside the source, or padding).

    The result has the shapes of all levels side by side (outermost first).
    ``subs`` gives the values of symbols: a source tensor maps to
    ``{"shape": ..., "strides": ...}`` (strides default to contiguous ones), a
    symbol (or its name) to an int.  Without ``subs`` the source's shape must
    be concrete.
    """
    source = tensor.source
    if source.ndim == 0:
        return np.array(0, dtype=np.intp)
    values = _values(subs, tensor)
    strides = _strides(source, values)
    table = _table(tensor, values)
    offsets = (table.source * np.asarray(strides, dtype=np.int64)).sum(axis=-1)
    return np.where(table.valid, offsets, -1).astype(np.intp)


def subs(tensor, subs):
    """``tensor`` with the values ``subs`` gives (as for :func:`eval`)
    substituted in every level's shape and in its index map."""
    values = _values(subs, tensor)
    tensor_class = type(tensor)
    hier = tensor.hierarchy
    mapping = {s: sympy.Integer(v) for s, v in values.items()}

    def put(e):
        return sympy.sympify(e).xreplace(mapping)

    old = hier.source
    shape = tuple(put(s) for s in old.source_shape)
    if any(not s.is_Integer and not s.free_symbols for s in shape):
        raise MetaOperationError(f"subs: the source shape {shape} does not evaluate to integers")
    new_source = tensor_class(
        shape=tuple(int(s) if s.is_Integer else s for s in shape),
        dtype=old.element_dtype, other=old.other, name=old.name,
        strides=tuple(put(s) for s in old.source_strides),
    )
    # The new source's own index variables stand where the old ones stood.
    renames = dict(zip(old.hierarchy.levels[0].vars, new_source.hierarchy.levels[0].vars))
    renames.update(mapping)
    # An untiled (or only permuted) tensor's level holds the source's own
    # variables: they are renamed there too.
    levels = [Level([put(s) for s in level.shape], [renames.get(v, v) for v in level.vars])
              for level in hier.levels]
    substituted = Hierarchy(
        new_source,
        levels,
        [sympy.sympify(e).xreplace(renames) for e in hier.index],
        [c.xreplace(renames) for c in hier.conditions],
        [r.xreplace(renames) for r in hier.requirements],
        {renames.get(v, v): sympy.sympify(e).xreplace(renames) for v, e in hier.live.items()},
    )
    return tensor_class._view(substituted, tensor.level)


def _values(subs, tensor):
    """Symbol -> int from NineToothed's ``subs``: a tensor maps to
    ``{"shape": ..., "strides": ...}`` or to a tensor of that shape (torch's
    or ntsym's), a symbol or a symbol's name to an int."""
    source = tensor.source
    if subs is None:
        subs = {source: {"shape": source.source_shape}}
    values, names = {}, {}
    for key, value in subs.items():
        if isinstance(key, type(tensor)):
            value = {"shape": value.shape} if hasattr(value, "shape") else value
            shape = tuple(value["shape"])
            strides = value.get("strides") or _contiguous(shape)
            for s, v in zip(key.source.source_shape, shape):
                _bind(values, s, v)
            for s, v in zip(key.source.source_strides, strides):
                _bind(values, s, v)
        elif isinstance(key, str):
            names[key] = value
        else:
            _bind(values, key, value)
    if names:
        for s in _symbols(source) | tensor.names():
            if s.name in names:
                values.setdefault(s, int(names[s.name]))
    return values


def _bind(values, symbol, value):
    symbol, value = sympy.sympify(symbol), sympy.sympify(value)
    if isinstance(symbol, sympy.Symbol) and value.is_Integer:
        values[symbol] = int(value)


def _symbols(source):
    return {s for e in source.source_shape + source.source_strides for s in sympy.sympify(e).free_symbols}


def _contiguous(shape):
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= int(n)
    return tuple(reversed(strides))


def _strides(source, values):
    """The source's strides with ``values`` put in; contiguous ones for its
    shape where they stay symbolic."""
    mapping = {k: sympy.Integer(v) for k, v in values.items()}
    strides = [sympy.sympify(s).xreplace(mapping) for s in source.source_strides]
    if all(s.is_Integer for s in strides):
        return [int(s) for s in strides]
    shape = [sympy.sympify(s).xreplace(mapping) for s in source.source_shape]
    if not all(s.is_Integer for s in shape):
        raise MetaOperationError(f"eval: the shape of `{source.name}` is not concrete; pass subs")
    return list(_contiguous([int(s) for s in shape]))


def _table(tensor, values):
    if tensor.level:
        raise MetaOperationError("eval: pass the outermost level of an arrangement")
    return index_table(tensor, {s.name: v for s, v in values.items()})


def eval_expr(expr, subs=None):
    """Substitute ``subs`` (keys: symbols or their names) into ``expr``; an
    integer when nothing symbolic is left."""
    expr = sympy.sympify(expr)
    if subs:
        by_name = {str(k) if not isinstance(k, str) else k: v for k, v in subs.items()}
        expr = expr.xreplace(
            {s: sympy.Integer(by_name[s.name]) for s in expr.free_symbols if s.name in by_name}
        )
    return int(expr) if expr.is_Integer else expr


def index_table(tensor, subs=None):
    """Evaluate ``tensor``'s index map (an arranged tensor's) for every element.

    Returns an object with ``shapes`` (each level's shape), ``source`` (the
    source index of every element: shape ``(*all level dims, source ndim)``) and
    ``valid`` (whether the element is in bounds).  Sizes must be concrete, or
    given in ``subs``.  Meant for tests and debugging of arrangements.
    """
    hier = tensor._hier
    levels = hier.levels[tensor._level :]
    if tensor._level:
        raise MetaOperationError("index_table needs the outermost level of an arrangement")

    def concrete(e):
        v = eval_expr(e, subs)
        if not isinstance(v, int):
            raise MetaOperationError(f"index_table: {e} is not concrete; pass subs")
        return v

    shapes = [tuple(concrete(s) for s in level.shape) for level in levels]
    vars = [v for level in levels for v in level.vars]
    dims = [d for shape in shapes for d in shape]
    grids = np.indices(dims, dtype=np.int64) if dims else np.zeros((0,), dtype=np.int64)
    env = {v: grids[k] for k, v in enumerate(vars)}
    size_subs = {}
    if subs:
        for s in set().union(*(e.free_symbols for e in hier.index + hier.conditions)):
            if s.name in {str(k) for k in subs}:
                size_subs[s] = next(v for k, v in subs.items() if str(k) == s.name)

    def evaluate(e):
        e = e.xreplace({k: sympy.Integer(v) for k, v in size_subs.items()})
        free = sorted(e.free_symbols & set(vars), key=vars.index)
        missing = e.free_symbols - set(vars)
        if missing:
            raise MetaOperationError(f"index_table: {e} depends on unknown {missing}; pass subs")
        fn = sympy.lambdify(free, e, modules=[_NUMPY_INT_FUNCS, "numpy"])
        value = fn(*(env[v] for v in free))
        return np.broadcast_to(np.asarray(value), dims)

    source = np.stack([evaluate(e).astype(np.int64) for e in hier.index], axis=-1) if hier.index else np.zeros(dims + [0], np.int64)
    valid = np.ones(dims, dtype=bool)
    for c in hier.conditions:
        valid &= evaluate(c).astype(bool)
    for d, n in enumerate(tensor.source.source_shape):
        n = concrete(n)
        valid &= (source[..., d] >= 0) & (source[..., d] < n)

    class Table:
        pass

    table = Table()
    table.shapes, table.source, table.valid = shapes, source, valid
    return table


_NUMPY_INT_FUNCS = {
    "FloorDiv": lambda a, b: np.floor_divide(a, b),
    "CeilDiv": lambda a, b: -np.floor_divide(-np.asarray(a), b),
    "Mod": lambda a, b: np.mod(a, b),
    "Max": lambda *a: np.maximum.reduce(np.broadcast_arrays(*a)) if len(a) > 1 else a[0],
    "Min": lambda *a: np.minimum.reduce(np.broadcast_arrays(*a)) if len(a) > 1 else a[0],
}
