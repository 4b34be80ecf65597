"""Small builders of generated code (``tl.f(...)``, ``value.f(...)``, literals)
and readers of literal syntax, shared by the emitter's parts.
"""

import ast
import math


def is_int(value):
    """Whether ``value`` is a Python int (not a bool)."""
    return isinstance(value, int) and not isinstance(value, bool)


def literal(value):
    """A constant of the application's scope as generated code."""
    import triton.language as tl

    if isinstance(value, tuple):
        return ast.Tuple(elts=[literal(v) for v in value], ctx=ast.Load())
    if isinstance(value, tl.dtype):
        name = next(n for n in dir(tl) if getattr(tl, n) is value)
        return ast.Attribute(value=ast.Name(id="tl", ctx=ast.Load()), attr=name, ctx=ast.Load())
    return constant_node(value)


def literal_int(node):
    """The value of an integer literal (``2``, ``-1``), else None."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        value = literal_int(node.operand)
        return None if value is None else -value
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    return None


def tl_call(attr, *args):
    """``tl.attr(*args)``."""
    return ast.Call(func=ast.Attribute(value=ast.Name(id="tl", ctx=ast.Load()), attr=attr, ctx=ast.Load()), args=list(args), keywords=[])


def method_call(value, attr, args):
    """``value.attr(*args)``."""
    return ast.Call(func=ast.Attribute(value=value, attr=attr, ctx=ast.Load()), args=list(args), keywords=[])


def broadcast(pointer, shape):
    """``tl.broadcast_to(pointer, shape)``, or ``pointer`` where ``shape`` is None."""
    if shape is None:
        return pointer
    return ast.Call(
        func=ast.Attribute(value=ast.Name(id="tl", ctx=ast.Load()), attr="broadcast_to", ctx=ast.Load()),
        args=[pointer, shape],
        keywords=[],
    )


def masked_other(value):
    """What a masked load reads outside the tensor: ``other``, with 0 (the
    default) written 0.0, which Triton casts to every element type (it cannot
    cast the integer 0 to fp8)."""
    if value is None or (type(value) is int and value == 0):
        return 0.0
    return value


def constant_node(value):
    """A literal for ``value``; ``float("inf")`` and the like for infinities and NaN."""
    if isinstance(value, float) and (math.isinf(value) or math.isnan(value)):
        return ast.Call(func=ast.Name(id="float", ctx=ast.Load()), args=[ast.Constant(repr(value))], keywords=[])
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.copysign(1, value) < 0:
        # a negation, which the printer parenthesizes where precedence asks (``(-1) ** 2``)
        return ast.UnaryOp(op=ast.USub(), operand=ast.Constant(-value))
    return ast.Constant(value)


def generated_assign(name, value):
    """``name = value``, marked (line 0) as code of ntsym's, not of the
    application: errors are never reported at it."""
    return ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=value, lineno=0)


def argument(node, position, keyword, default=None):
    """The call ``node``'s argument at ``position`` or named ``keyword``, else ``default``."""
    for k in node.keywords:
        if k.arg == keyword:
            return k.value
    return node.args[position] if len(node.args) > position else default
