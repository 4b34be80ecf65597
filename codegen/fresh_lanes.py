"""The lanes of a value made afresh (``zeros``, ``full``, ``arange``,
``zeros_like``) over a shape with a padded block: where a tile's size is not
a power of two, a shape built from it (``x.shape``, ``(1, 5)``) is the
power-of-two block (``ShapesMixin.ref_shape``), so the value has lanes past
the true extent.  They lie outside as a tile's padded lanes do, and an
operation mixing lanes reads them through a select (``sum(full(x.shape, 1))``
of a tile of 5 is 5, not 8)."""

import ast

import sympy

from ntsym_codegen.lanes import Factor, Lanes, masked
from ntsym_codegen.printer import PrintError
from ntsym_codegen.refs import TileRef
from ntsym_codegen.template import expr


def fresh_lanes(em, name, node, rank):
    """``Lanes`` of the fresh value ``node`` (a call of ``name``) of ``rank`` axes."""
    if name == "zeros_like":  # of a tile: as ``zeros(x.shape)`` (its padded block, not the tensor's end)
        operand = node.args[0] if node.args else None
        extents = None if operand is None else \
            _shape_pairs(em, ast.Attribute(value=operand, attr="shape", ctx=ast.Load()))
        rank = rank if extents is None else len(extents)
    else:
        extents = _extents(em, name, node)
    if extents is None or rank is None or len(extents) != rank:
        return Lanes(None, (), rank)
    factors = _padded_factors(em, extents, rank)
    if factors is None:
        return masked(None, None, rank)  # not followed: a mixing operation is refused
    if not factors:
        return Lanes(None, (), rank)
    return masked(factors, _outside(em, name, node), rank)


def broadcast_lanes(em, shape, lanes, rank):
    """``lanes`` of ``broadcast_to(value, shape)`` (``rank`` axes) with the
    lanes past the true extent of a padded block in ``shape`` outside: the
    value broadcast there holds what it holds (not known as a number)."""
    return _broadcast(em, _shape_pairs(em, shape), lanes, rank)


def broadcast_call_lanes(em, node, method):
    """Lanes of ``tl.broadcast_to(v, shape)`` (``v.broadcast_to(shape)`` where
    ``method``) whose shape is not a literal (``x.shape``), or None where the
    call is not one: ``v``'s lanes, and those past a padded block's extent."""
    args = ([node.func.value] if method else []) + list(node.args)
    if len(args) != 2 or node.keywords:
        return None
    pairs = _shape_pairs(em, args[1])
    lanes = em.lanes_of(args[0])
    if pairs is None or not lanes.known:
        return None
    return _broadcast(em, pairs, Lanes(lanes.value, lanes.factors, len(pairs), lanes.outside), len(pairs))


def _broadcast(em, pairs, lanes, rank):
    """``lanes`` with a factor along each axis of ``pairs`` padded past its true extent."""
    if pairs is None or len(pairs) != rank or not lanes.known:
        return lanes
    factors = _padded_factors(em, pairs, rank)
    if factors is None:
        return masked(None, None, rank)
    if not factors:
        return lanes
    return Lanes(lanes.value, tuple(lanes.factors) + tuple(factors), rank,
                 tuple(lanes.outside) + (None,) * len(factors))


def _padded_factors(em, pairs, rank):
    """A factor ``tl.arange(0, block) < n`` along each axis whose block is
    padded past its true extent ``n``; None where one cannot be printed."""
    printer = em.printer()
    factors = []
    for j, (n, block) in enumerate(pairs):
        if sympy.simplify(block - n) == 0:
            continue
        try:
            test = expr("tl.arange(0, {block}) < {n}", block=printer(block), n=printer(n))
            block_node = printer(block)
        except PrintError:
            return None
        if rank > 1:
            index = ast.Tuple(elts=[ast.Slice() if k == j else ast.Constant(None) for k in range(rank)],
                              ctx=ast.Load())
            test = ast.Subscript(value=test, slice=index, ctx=ast.Load())
        axis = j - rank
        factors.append(Factor.of(test, {axis}, rank, None, [(axis, block, block_node)], extent_only=True))
    return factors


def _outside(em, name, node):
    """What the padded lanes hold: ``zeros`` 0, ``full`` its value where one, else not known."""
    if name in ("zeros", "zeros_like"):
        return sympy.Integer(0)
    if name == "full":
        value = node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "value"),
                                                             None)
        return None if value is None else em.lanes_of(value).value
    return None  # arange: the positions past the extent


def _extents(em, name, node):
    """(true extent, emitted block) of each axis of the shape ``node`` builds
    (SymPy), or None where not followed."""
    if name == "arange":
        if len(node.args) != 2 or node.keywords:
            return None
        return _pairs(em, [node.args[1]], lambda end: end - em.to_sympy(node.args[0]))
    if name not in ("zeros", "full"):
        return None
    shape = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "shape"), None)
    return _shape_pairs(em, shape)


def _shape_pairs(em, shape):
    """(true extent, emitted block) per axis of the shape argument ``shape``, or None."""
    if isinstance(shape, ast.Attribute) and shape.attr == "shape":
        ref = em.resolve(shape.value)
        if not isinstance(ref, TileRef):
            return None
        with em._building_shape():
            blocks = em.ref_shape(ref)
        return list(zip(ref.shape(), blocks))
    if isinstance(shape, (ast.Tuple, ast.List)):
        return _pairs(em, shape.elts, lambda e: e)
    return None


def _pairs(em, nodes, fn):
    """(``fn`` of each node's value, ``fn`` of it as a shape argument: a tile's
    padded block), or None where one is not an integer expression."""
    try:
        true = [fn(sympy.sympify(em.to_sympy(e))) for e in nodes]
        with em._building_shape():
            blocks = [fn(sympy.sympify(em.to_sympy(e))) for e in nodes]
    except Exception:  # not an index expression: not followed (the value stays as before)
        return None
    return list(zip(true, blocks))
