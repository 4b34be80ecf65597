"""Lanes outside the tensor followed through ``reshape`` and ``broadcast_to``.

A reshape moves lanes: which of them lie inside is no longer a conjunction
of the tile's offsets along its axes.  It is still the mask reshaped the same
way, so the value's mask is emitted as one factor,
``tl.reshape(tl.broadcast_to(mask, value.shape), shape)``, varying along
every axis: an operation that mixes lanes reads through it as through any
other (a bincount written with ``reshape`` and a comparison counts the
elements of the tensor, not the padding of its last block).  ``broadcast_to``
keeps the factors as they are: their blocks broadcast the same way.
``view`` (and ``reshape(..., can_reorder=True)``) may put the elements in
any order; of a value with lanes outside, it is emitted as a reshape that
keeps their order (one of the orders it allows) and followed as one, so a
mixing operation after it reads through the mask reshaped alike.  Of a
value whose lanes all lie inside it is emitted as written.

``split``, ``join`` and ``interleave`` move lanes too: their masks are the
operands' masks moved by the same call (``tl.split(tl.broadcast_to(mask,
v.shape))[0]``; an operand without lanes outside gives a mask of ones), one
factor each, varying along every axis.  So a block split into its even and
odd columns, each computed on, and joined back, is read by a reduction
through that mask: a ``where`` more where the user's own ``ntl.where`` may
have set those lanes already, never a refusal.

``reshape`` is emitted as ``ntsym_reshape``: torch reshapes a 0-d value (a
reduction's result) to any shape of one element, where Triton's reshape
reads the operand's block shape, which a 0-d value lacks (an AttributeError
in the interpreter and the compiler alike).  A shape of more elements fails
as Triton's reshape of one element does, at the application's line.
"""

import ast
import copy

from ntsym_codegen.astutil import generated_assign
from ntsym_codegen.fresh_lanes import broadcast_lanes
from ntsym_codegen.lanes import Factor, Lanes, from_branch, is_stale, meets, stale
from ntsym_codegen.printer import conjunction
from ntsym_codegen.template import expr

_FOLLOWED = ("reshape", "broadcast_to", "ravel")

HELPERS = {
    "ntsym_reshape": """
@triton.jit
def ntsym_reshape(x, shape: tl.constexpr):
    \"\"\"tl.reshape that takes a 0-d value too, as torch's reshape does.\"\"\"
    if tl.constexpr(len(x.shape) == 0):
        y = tl.reshape(tl.broadcast_to(x, (1,)), shape)
    else:
        y = tl.reshape(x, shape)
    return y
""",
}


def reshaped(em, node):
    """``reshape``/``broadcast_to`` of a value whose lanes outside are known
    and not all inside: the call, its lanes noted; ``split``/``join``/
    ``interleave`` likewise (``_parts``); None for other calls."""
    moved = _parts(em, node)
    if moved is not None:
        return moved
    name, operand_node, shape = _form(em, node)
    if name is None:
        return None
    reorders = name == "view" or any(k.arg == "can_reorder" for k in node.keywords)
    if reorders and em.lanes_of(operand_node).clean:
        return None  # emitted as written
    operand = em.expr(operand_node)  # loads the tiles it reads, noting their lanes
    lanes = em.lanes_of(operand_node)
    following = lanes.known and not lanes.clean
    if reorders and not following:
        return None  # the lanes stay unknown: a mixing operation after it is refused
    name = "reshape" if name == "view" else name
    if following and name in ("reshape", "ravel"):
        operand = stable(em, operand)  # the mask reads its shape
    call = _call(em, node, operand)
    if not following:
        if name == "broadcast_to" and lanes.known:  # to a padded block: lanes past its extent
            result = broadcast_lanes(em, shape, lanes, len(shape.elts))
            if not result.clean:
                em.note_result(node, result)
        return call  # its lanes: all inside, or unknown (``_call_lanes``)
    shape_node = em.shape_argument(shape)
    rank = len(shape.elts)
    if name == "broadcast_to":
        result = broadcast_lanes(em, shape, Lanes(lanes.value, lanes.factors, rank, lanes.outside), rank)
    else:
        template = "tl.ravel(tl.broadcast_to({mask}, {value}.shape))" if name == "ravel" else \
            "tl.reshape(tl.broadcast_to({mask}, {value}.shape), {shape})"
        mask = expr(template, mask=conjunction(copy.deepcopy(f.node) for f in lanes.factors),
                    value=copy.deepcopy(operand), shape=copy.deepcopy(shape_node))
        outside = lanes.outside[0] if len(set(lanes.outside)) == 1 else None
        result = _one_factor(mask, rank, outside, lanes.value, [lanes])
    em.note_result(node, result)
    return call


_PARTS = {"split": 1, "join": 2, "interleave": 2}  # the calls ``_parts`` follows: how many operands


def _parts(em, node):
    """``split(v)`` (``v.split()``), ``join(a, b)``, ``interleave(a, b)``
    of values whose lanes outside are known, one of them not all inside: the
    call with its operands named, the result's lanes noted (for ``split``, a
    pair: ``parts_of``); None for other calls and keywords.  Of operands
    without lanes outside, or whose lanes are not known, the call as
    written (its lanes: ``_call_lanes``)."""
    func = node.func
    if not isinstance(func, ast.Attribute) or func.attr not in _PARTS or node.keywords:
        return None
    if em.alias(func.value) == "tl":
        operands, method = list(node.args), False
    elif func.attr == "split" and em.alias(func.value) is None and not _is_module(em, func.value):
        operands, method = [func.value] + list(node.args), True  # a tensor's member (``join`` is not one)
    else:
        return None
    if len(operands) != _PARTS[func.attr] or any(isinstance(a, ast.Starred) for a in operands):
        return None
    emitted = [em.expr(a) for a in operands]  # loads the tiles they read, noting their lanes
    lanes = [em.lanes_of(a) for a in operands]
    if all(l.clean for l in lanes) or not all(l.known for l in lanes):
        return _emitted_call(em, func, emitted, method)  # all inside, or unknown (``_call_lanes``)
    emitted = [stable(em, e) for e in emitted]  # the masks read their shapes
    masks = [_mask_of(l, e) for l, e in zip(lanes, emitted)]
    held = {v for l in lanes for v in (l.outside if l.factors else ())}
    outside = held.pop() if len(held) == 1 else None
    value = lanes[0].value if all(l.value == lanes[0].value for l in lanes) else None
    ranks = [l.rank for l in lanes]
    if func.attr == "split":
        rank = None if ranks[0] is None else ranks[0] - 1
        moved = expr("tl.split({mask})", mask=masks[0])
        parts = [_one_factor(expr("{pair}[" + str(k) + "]", pair=copy.deepcopy(moved)), rank, outside, value, lanes)
                 for k in (0, 1)]
        pair = Lanes(None, None, rank)  # the pair itself, as a value: its parts are read through ``parts_of``
        em.lanes.nodes[("parts", id(node))] = (node, parts)
        em.lanes.nodes[("pair", id(pair))] = (pair, parts)  # a name holding the pair: the same object
        em.note_result(node, pair)
    else:
        rank = None if None in ranks else max(ranks) + (func.attr == "join")
        mask = expr(f"tl.{func.attr}({{a}}, {{b}})", a=masks[0], b=masks[1])
        em.note_result(node, _one_factor(mask, rank, outside, value, lanes))
    return _emitted_call(em, func, emitted, method)


def parts_of(em, node, count=2):
    """The lanes of each part of ``node``, a ``split`` that ``_parts``
    followed, a name holding its pair (assigned since: another value) or an
    inlined call returning a tuple of names; None otherwise, or where another
    number of parts than ``count`` is asked for."""
    held = em.lanes.locals.get(node.id) if isinstance(node, ast.Name) else node
    entry = em.lanes.nodes.get(("pair" if isinstance(node, ast.Name) else "parts", id(held)))
    if entry is None or entry[0] is not held or len(entry[1]) != count:
        return None
    if len(entry) > 2 and meets():  # an inlined call's returned names, read where lanes meet
        return [em.lanes_of(e) for e in entry[2]]
    return entry[1]


def _mask_of(lanes, value):
    """The block of ``value``'s shape that is true on its lanes inside."""
    if lanes.clean:
        return expr("tl.full({value}.shape, True, tl.int1)", value=copy.deepcopy(value))
    return expr("tl.broadcast_to({mask}, {value}.shape)", mask=conjunction(copy.deepcopy(f.node) for f in lanes.factors),
                value=copy.deepcopy(value))


def _one_factor(mask, rank, outside, value, operands):
    """Lanes of one factor, ``mask``, along every axis; stale where a factor
    of the ``operands``' lanes is (its mask is not known here: the moved one
    would read it)."""
    axes = None if rank is None else set(range(-rank, 0))
    factor = Factor.of(mask, axes, rank)
    moved = [f for lanes in operands for f in lanes.factors or () if is_stale(f)]
    if moved:
        factor = stale(factor, branch=any(from_branch(f) for f in moved))
    return Lanes(value, (factor,), rank, (outside,))


def _emitted_call(em, func, operands, method):
    if method:
        return ast.Call(func=ast.Attribute(value=operands[0], attr=func.attr, ctx=ast.Load()), args=operands[1:],
                        keywords=[])
    return ast.Call(func=em.expr(func), args=operands, keywords=[])


def _form(em, node):
    """(``reshape`` or ``broadcast_to``, the operand, the shape as a tuple
    literal), or Nones where ``node`` is not such a call."""
    func = node.func
    if not isinstance(func, ast.Attribute) or func.attr not in _FOLLOWED + ("view",):
        return None, None, None
    if node.keywords and (func.attr != "reshape" or [k.arg for k in node.keywords] != ["can_reorder"]):
        return None, None, None
    if em.alias(func.value) == "tl":
        args = node.args
    elif em.alias(func.value) is None and not _is_module(em, func.value):
        args = [func.value] + list(node.args)
    else:
        return None, None, None
    if func.attr == "ravel":  # the elements in order, one axis: ``reshape(v, (-1,))``
        return (func.attr, args[0], ast.Tuple(elts=[ast.Constant(-1)], ctx=ast.Load())) if len(args) == 1 \
            else (None, None, None)
    if len(args) == 2 and isinstance(args[1], (ast.Tuple, ast.List)):
        return func.attr, args[0], ast.Tuple(elts=list(args[1].elts), ctx=ast.Load())
    if len(args) > 2 and func.attr in ("reshape", "view"):  # ``v.reshape(a, b)``
        return func.attr, args[0], ast.Tuple(elts=list(args[1:]), ctx=ast.Load())
    if len(args) == 2 and func.attr in ("reshape", "view") and isinstance(args[1], (ast.Constant, ast.BinOp,
                                                                               ast.Subscript)):
        return func.attr, args[0], ast.Tuple(elts=[args[1]], ctx=ast.Load())  # ``v.reshape(n)``: a size, no tuple
    return None, None, None


def _is_module(em, node):
    return isinstance(node, ast.Name) and node.id in ("tl", "ntl", "triton", "libdevice")


def _call(em, node, operand):
    """``node`` emitted as the visitor does, its operand already emitted."""
    func = node.func
    if func.attr in ("reshape", "view"):  # a view of lanes outside: in order (see the module's text)
        _, _, shape = _form(em, node)
        return ast.Call(func=ast.Name(id="ntsym_reshape", ctx=ast.Load()),
                        args=[operand, em.shape_argument(shape)], keywords=[])
    if em.alias(func.value) == "tl":
        return ast.Call(func=em.expr(func), args=[operand] + [em.shape_argument(a) for a in node.args[1:]],
                        keywords=[])
    method = ast.Attribute(value=operand, attr=func.attr, ctx=ast.Load())
    return ast.Call(func=method, args=[em.shape_argument(a) for a in node.args], keywords=[])


def stable(em, value):
    """``value`` as a name that keeps it wherever a mask reading its shape
    is emitted later: a fresh one, unless it is a name the application
    cannot assign again (a loaded tile's)."""
    if isinstance(value, ast.Name) and value.id not in em.names.locals and value.id not in em.facts.user_names:
        return value
    return named(em, value)


def named(em, value):
    """``value`` assigned to a fresh name before the statement: the name."""
    em.names.counter += 1
    temp = f"ntsym_value_{em.names.counter}"
    while temp in em.facts.user_names:
        temp += "_"
    em.blocks.pre.append(generated_assign(temp, value))
    return ast.Name(id=temp, ctx=ast.Load())


__all__ = ["HELPERS", "named", "parts_of", "reshaped"]
