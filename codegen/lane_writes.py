"""Stores whose lanes share an element: an output expanded inside its tile.

A written tile whose innermost level is expanded (``t.dtype.expand((2, -1))``)
maps several lanes of one store to each element.  Which lane's value lands
is up to the hardware (the interpreter keeps the last), so the store is
refused unless the value is provably the same on those lanes, as writes
shared across programs are (``ntsym/disjoint.py``).  The proof is
syntactic: constants, scalars, tiles broadcast or themselves expanded along
the axis, and elementwise operations of those, and locals assigned once by
the application's own body from such values; anything else (a scan, a sort,
``arange``, a local assigned in a loop, a branch or twice) may differ between
the lanes.
"""

import ast

import sympy

from ntsym_codegen.lane_tables import REDUCTIONS

# Elementwise functions of ``ntl``: equal operands on two lanes give equal results.
_ELEMENTWISE = {"where", "maximum", "minimum", "abs", "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sigmoid",
                "sin", "cos", "floor", "ceil", "fma", "clamp", "erf", "cast"}


def shared_axes(ref):
    """The axes of the store of ``ref`` (positions in ``ref.dims``) whose
    lanes share elements: a level variable of extent above 1 that no source
    index reads.  Only a store of the innermost level is followed."""
    if not ref.innermost:
        return []
    p = ref.param
    used = set().union(*(sympy.sympify(e).free_symbols for e in p.index))
    vars, level = p.level_vars[ref.depth], p.levels[ref.depth]
    return [a for a, j in enumerate(ref.dims) if vars[j] not in used and sympy.sympify(level[j]) != 1]


def stored_value(stmt):
    """The application's expression a store of ``stmt`` writes."""
    if isinstance(stmt, ast.AugAssign):
        read = ast.Name(id=stmt.target.id, ctx=ast.Load()) if isinstance(stmt.target, ast.Name) else stmt.target
        return ast.BinOp(left=read, op=stmt.op, right=stmt.value)
    return getattr(stmt, "value", None)


def check(em, ref, stmt):
    """Refuse the store of ``ref`` for ``stmt`` where lanes sharing an
    element may hold different values."""
    axes = shared_axes(ref)
    if not axes:
        return
    value, rank = stored_value(stmt), len(ref.dims)
    for a in axes:
        if value is None or not _uniform(em, value, a - rank):
            name = ref.param.name
            raise em.error(
                f"`{name}` is written through a tile whose dimension {a} is expanded (its level variable "
                f"`{ref.param.level_vars[ref.depth][ref.dims[a]]}` reads no element of `{name}`), so "
                f"{ref.shape()[a]} lanes of one store write each element, and the value "
                f"`{ast.unparse(value) if value is not None else '?'}` may differ between them (which lane "
                f"lands is unspecified); write a value equal along that dimension, or arrange `{name}` "
                f"without the expand", stmt)


def _uniform(em, node, offset, seen=frozenset()):
    """Whether ``node`` provably holds one value along the axis ``offset``
    (counted from the last, -1) of the stored block."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Name):
        return _uniform_name(em, node, offset, seen)
    if isinstance(node, ast.BinOp):
        return _uniform(em, node.left, offset, seen) and _uniform(em, node.right, offset, seen)
    if isinstance(node, ast.UnaryOp):
        return _uniform(em, node.operand, offset, seen)
    if isinstance(node, ast.Compare):
        return all(_uniform(em, n, offset, seen) for n in [node.left, *node.comparators])
    if isinstance(node, ast.BoolOp):
        return all(_uniform(em, n, offset, seen) for n in node.values)
    if isinstance(node, ast.IfExp):
        return all(_uniform(em, n, offset, seen) for n in (node.test, node.body, node.orelse))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr == "to" and em._tl_function(node.func) is None:
            return _uniform(em, node.func.value, offset, seen)
        if em._tl_function(node.func) in _ELEMENTWISE:
            return all(_uniform(em, n, offset, seen) for n in [*node.args, *(k.value for k in node.keywords)])
        return _whole_reduction(em, node)
    return False


# Reductions whose result over every axis is one value (a scalar, or a block
# of one element): the lanes rule's, but ``reduce`` (its combine is the user's).
_WHOLE = set(REDUCTIONS) - {"reduce"}


def _whole_reduction(em, node):
    """``ntl.max(w)`` / ``w.sum()``: a reduction over every axis (no axis, or
    ``axis=None``) holds one value on every lane."""
    name = em._tl_function(node.func)
    method = name is None and em.alias(node.func.value) is None and node.func.attr in _WHOLE
    if name not in _WHOLE and not method:
        return False
    position = 0 if method else 1
    axis = next((k.value for k in node.keywords if k.arg == "axis"), None)
    if axis is None and len(node.args) > position:
        axis = node.args[position]
    return axis is None or (isinstance(axis, ast.Constant) and axis.value is None)


def defined_once(body):
    """Names the application's ``body`` binds: name -> the value of its one
    binding where that is an assignment of the body itself (``y = x * 2``,
    not in a loop or a branch, not a loop variable, not augmented), else
    None (bound twice, in a loop or a branch, or augmented: ``n += ...`` of
    a scalar parameter makes it a local too)."""
    bindings = {}
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        targets = []
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.comprehension, ast.NamedExpr)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            targets = [node.optional_vars]
        for target in targets:
            for name in ast.walk(target):
                if isinstance(name, ast.Name):
                    bindings[name.id] = bindings.get(name.id, 0) + 1
    once = dict.fromkeys(bindings)
    for stmt in body:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            target = stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else getattr(
                stmt, "target", None)
            if isinstance(target, ast.Name) and bindings.get(target.id) == 1:
                once[target.id] = stmt.value
    return once


def _uniform_name(em, node, offset, seen=frozenset()):
    """A tile is uniform along the axis where it is broadcast or its level
    variable there reads no element (a tensor parameter's assignment is a
    store, read back from its tile); a scalar parameter where the application
    never rebinds it; a local where it is assigned once (``defined_once``)
    from a uniform value.  A parameter rebound further on (later in a loop
    whose store reads it first, or by ``n += ...``, which leaves it out of
    ``names.locals``) may hold a value of each lane."""
    once = em.facts.defined_once
    rebound = node.id in once and once[node.id] is None and node.id not in em.tensors
    if node.id in em.names.locals or rebound:
        value = once.get(node.id)
        return value is not None and node.id not in seen and _uniform(em, value, offset, seen | {node.id})
    ref = em.resolve(node)
    if ref is None:
        return node.id not in em.tensors
    if not hasattr(ref, "dims") or not ref.innermost or ref.fixed:
        return False
    position = len(ref.dims) + offset
    if position < 0:
        return True  # broadcast along the axis
    p = ref.param
    var, extent = p.level_vars[ref.depth][ref.dims[position]], p.levels[ref.depth][ref.dims[position]]
    return sympy.sympify(extent) == 1 or not any(var in sympy.sympify(e).free_symbols for e in p.index)
