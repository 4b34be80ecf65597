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
from ntsym_codegen.lanes import Factor, Lanes
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
    and not all inside: the call, its lanes noted; None for other calls."""
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
    if following and name in ("reshape", "ravel") and not isinstance(operand, ast.Name):
        operand = named(em, operand)  # the mask reads its shape
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
        result = Lanes(lanes.value, (Factor.of(mask, set(range(-rank, 0)), rank),), rank, (outside,))
    em.note_result(node, result)
    return call


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


def named(em, value):
    """``value`` assigned to a fresh name before the statement: the name."""
    em.names.counter += 1
    temp = f"ntsym_value_{em.names.counter}"
    while temp in em.facts.user_names:
        temp += "_"
    em.blocks.pre.append(generated_assign(temp, value))
    return ast.Name(id=temp, ctx=ast.Load())


__all__ = ["HELPERS", "named", "reshaped"]
