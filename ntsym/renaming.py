"""Deterministic names for the symbols of an arrangement, and the arranged
and source tensors rewritten with them as plain data (``Renamed``,
``Source``) for the outer-shape proof.

Auto-named sizes and strides take their tensor's parameter name, auto-named
block sizes the name they are bound to in the arrangement; a call-time tile
size gets a positive twin (the launcher checks it is at least 1) and, where
the launcher asks for it, a padded one.
"""

import itertools

import sympy

from ntsym.application import _bound_names
from ntsym.symbol import Symbol


def canonical_names(arrangement, tensors, arranged, names):
    """A mapping from every symbol to a deterministic, readable one."""
    renames = {}
    for name, tensor in zip(names, tensors):
        if tensor._auto_named:
            for d, s in enumerate(tensor.source_shape):
                if isinstance(s, Symbol) and s.name == f"{tensor.name}_size_{d}":
                    renames[s] = _copy_symbol(s, f"{name}_size_{d}")
            for d, s in enumerate(tensor.source_strides):
                if isinstance(s, Symbol) and s.name == f"{tensor.name}_stride_{d}":
                    renames[s] = _copy_symbol(s, f"{name}_stride_{d}")
    # Auto-named block sizes take the name they are bound to in the arrangement
    # (a parameter default, a bound keyword, a closure variable or a global),
    # else BLOCK_SIZE_<k> in order of first appearance.
    bound = _bound_names(arrangement)
    taken = set(names) | {s.name for s in renames.values()}
    counter = itertools.count()
    for symbol in _symbols_in_order(arranged):
        if getattr(symbol, "auto_named", False) and symbol not in renames:
            name = bound.get(symbol)
            if name is None or name in taken:
                name = f"BLOCK_SIZE_{next(counter)}"
                while name in taken:
                    name = f"BLOCK_SIZE_{next(counter)}"
            taken.add(name)
            renames[symbol] = _copy_symbol(symbol, name)
    return renames


def _symbols_in_order(arranged):
    """The ntsym symbols of the arranged tensors, in order of first appearance."""
    seen = {}
    for t in arranged:
        hier = t.hierarchy
        exprs = [s for level in hier.levels for s in level.shape] + list(hier.index) + list(hier.conditions)
        for e in exprs:
            for s in sorted(sympy.sympify(e).free_symbols, key=lambda s: s.name):
                if isinstance(s, Symbol):
                    seen.setdefault(s, None)
    return list(seen)


def _copy_symbol(symbol, name, positive=False):
    new = Symbol(
        name,
        constexpr=symbol.constexpr,
        meta=symbol.meta,
        lower_bound=symbol.lower_bound,
        upper_bound=symbol.upper_bound,
        power_of_two=symbol.power_of_two,
        nonnegative=not positive and symbol.is_positive is not True,
    )
    new.is_size = getattr(symbol, "is_size", False)
    new.padded = getattr(symbol, "padded", False)
    new.jagged = getattr(symbol, "jagged", False)
    return new


def padded_twins(arranged, renames, names):
    """A twin, marked padded, of each call-time symbol named in ``names``."""
    twins = {}
    if not names:
        return twins
    for symbol in _symbols_in_order(arranged):
        current = renames.get(symbol, symbol)
        if current.name in names and not current.meta:
            twin = _copy_symbol(current, current.name, positive=current.is_positive is True)
            twin.padded = True
            twins[symbol] = twin
    return twins


def positive_twins(arranged):
    """A positive copy of every non-negative compile-time symbol that a
    meta-operation required to be at least 1 (a tile size, stride or
    dilation given at call time): proofs then know it is positive, as they
    know of block sizes, and the launcher checks the value it gets."""
    twins = {}
    for t in arranged:
        for req in t.hierarchy.requirements:
            lhs = req.lhs if isinstance(req, sympy.GreaterThan) and req.rhs == 1 else None
            if isinstance(lhs, Symbol) and lhs.constexpr and lhs.is_positive is not True and lhs not in twins:
                twin = _copy_symbol(lhs, lhs.name, positive=True)
                twin.positive_reason = "the arrangement uses it as a tile size, stride or dilation"
                twins[lhs] = twin
    return twins


class Renamed:
    """An arranged tensor after renaming, as plain data."""

    def __init__(self, name, levels, index, conditions, requirements, padding=()):
        self.name = name
        self.padding = padding
        self.levels = levels  # list of (shape tuple, vars tuple)
        self.index = index
        self.conditions = conditions
        self.requirements = requirements
        self.live = None  # per outermost dimension: its live count, or None


def rename_hierarchy(tensor, renames):
    """An arranged tensor's hierarchy with its symbols renamed and its index
    variables replaced by fresh ones per level (``l<depth>_<j>``)."""
    hier = tensor.hierarchy
    mapping = dict(renames)
    levels = []
    for depth, level in enumerate(hier.levels):
        vars = []
        for j, v in enumerate(level.vars):
            mapping[v] = sympy.Dummy(f"l{depth}_{j}", integer=True, nonnegative=True)
            vars.append(mapping[v])
        levels.append((tuple(sympy.sympify(s).xreplace(mapping) for s in level.shape), tuple(vars)))
    renamed = Renamed(
        None,
        levels,
        tuple(sympy.sympify(e).xreplace(mapping) for e in hier.index),
        tuple(c.xreplace(mapping) for c in hier.conditions),
        tuple(r.xreplace(mapping) for r in hier.requirements),
        tuple(c.xreplace(mapping) for c in hier.padding),
    )
    # Live counts of the outermost dimensions (windows past the end masked).
    renamed.live = tuple(
        None if v not in hier.live else sympy.sympify(hier.live[v]).xreplace(mapping)
        for v in hier.levels[0].vars
    )
    return renamed


class Source:
    """A source tensor and its shape and strides after renaming."""

    def __init__(self, tensor, shape, strides):
        self.tensor = tensor
        self.shape = shape
        self.strides = strides


def rename_source(tensor, renames):
    """The ``Source`` of a tensor, its sizes and strides renamed."""
    return Source(
        tensor,
        tuple(sympy.sympify(s).xreplace(renames) for s in tensor.source_shape),
        tuple(sympy.sympify(s).xreplace(renames) for s in tensor.source_strides),
    )

