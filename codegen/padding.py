"""What the masked-out lanes of a value hold, so that a reduction over a
padded tile sees the tensor's elements only.

A tile padded past the tensor's end (a row of 7 elements in a block of 8) is
loaded with its ``other`` value (0 unless the tensor declares one) on the lanes
outside the tensor.  A reduction over them then reads those lanes: ``max`` of
a row of negative numbers would be 0, ``argmax`` would point past the row,
``sum(exp(x))`` would add ``exp(0)`` per padded lane.  ``lanes_of`` follows,
through the application's arithmetic, the value such lanes hold (SymPy: a
number, ``-oo``, or unknown) and the mask of the valid lanes; a reduction whose
operand holds anything but the reduction's identity there reads it through
``tl.where(mask, operand, identity)``.  Where the lanes provably hold the
identity (softmax's ``other=-inf`` into ``max``, then ``exp(-inf) = 0`` into
``sum``) nothing is added.
"""

import ast
import copy
from dataclasses import dataclass, field

import sympy

from codegen.astutil import constant_node
from codegen.refs import TileRef
from codegen.template import expr

# Reductions and the value that leaves them unchanged.
IDENTITY = {"max": -sympy.oo, "argmax": -sympy.oo, "min": sympy.oo, "argmin": sympy.oo, "sum": sympy.Integer(0)}

# Elementwise functions whose value on a known lane value SymPy computes.
_FUNCTIONS = {
    "exp": sympy.exp, "exp2": lambda x: 2**x, "log": sympy.log, "log2": lambda x: sympy.log(x, 2), "abs": sympy.Abs,
    "sqrt": sympy.sqrt, "sin": sympy.sin, "cos": sympy.cos, "sigmoid": lambda x: 1 / (1 + sympy.exp(-x)),
    "maximum": sympy.Max, "minimum": sympy.Min,
}
# Elementwise functions whose lane value is not followed (the mask is).
_ELEMENTWISE = {"where", "fma", "erf", "rsqrt", "floor", "ceil", "tanh", "clamp", "fdiv", "div_rn", "sqrt_rn",
                "cdiv", "log1p", "expm1"}
_OPERATORS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
              ast.Div: lambda a, b: a / b, ast.Pow: lambda a, b: a**b}


@dataclass
class LaneState:
    """Written by ``AccessMixin`` (tiles, at their load) and the visitor's
    assignments (locals); read by ``PaddingMixin.reduction``."""

    tiles: dict = field(default_factory=dict)  # tensor -> (mask node, lane value) of its loaded whole tile
    nodes: dict = field(default_factory=dict)  # id of the application's node -> (node, mask, lane value) of its load
    locals: dict = field(default_factory=dict)  # name -> (lane value or None, mask node or None)


def _same_everywhere():
    """A value equal on every lane (a scalar, a reduction's result): finite."""
    return sympy.Dummy(real=True, finite=True)


class PaddingMixin:
    """For ``KernelEmitter``; uses ``resolve`` and ``alias``."""

    def note_tile(self, ref, mask, node):
        """The tile ``ref`` was loaded, for the application's ``node``, with
        ``mask`` (None: unmasked; ``DESCRIPTOR``: through a tensor descriptor,
        whose lanes past the tensor read as zeros)."""
        other = ref.param.other
        try:
            value = sympy.Integer(0) if other is None or mask is DESCRIPTOR else sympy.sympify(other)
        except (sympy.SympifyError, TypeError):
            value = None
        self.lanes.nodes[id(node)] = (node, mask, value)  # the node kept: its id is not reused
        if ref.depth == 1 and not ref.fixed:  # the whole tile, loaded once and named
            self.lanes.tiles[ref.param.name] = (mask, value)

    def note_local(self, name, value_node):
        self.lanes.locals[name] = self.lanes_of(value_node)

    def lanes_of(self, node):
        """(what masked-out lanes of ``node`` hold: SymPy, None where unknown;
        the mask of its valid lanes: a node, None where it has no masked lanes
        that are known)."""
        entry = self.lanes.nodes.get(id(node))
        if entry is not None and entry[0] is node:  # a tile this node loaded (``x``, ``x[k]``)
            return entry[2], entry[1]
        if isinstance(node, ast.Name):
            if node.id in self.lanes.locals:
                return self.lanes.locals[node.id]
            ref = self.resolve(node)
            if isinstance(ref, TileRef):
                mask, value = self.lanes.tiles.get(ref.param.name, (None, None))
                return value, mask
            if node.id in self.names.locals:
                return None, None
            return _same_everywhere(), None  # a scalar parameter or constant
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return sympy.sympify(node.value), None
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            value, mask = self.lanes_of(node.operand)
            return (None if value is None else -value), mask
        if isinstance(node, ast.BinOp):
            (a, ma), (b, mb) = self.lanes_of(node.left), self.lanes_of(node.right)
            op = _OPERATORS.get(type(node.op))
            mask = _both(ma, mb)
            return (None, None) if mask is _CONFLICT else (_apply(op, a, b), mask)
        if isinstance(node, ast.Call):
            if (isinstance(node.func, ast.Attribute) and node.func.attr == "to"
                    and self._tl_function(node.func) is None):
                return self.lanes_of(node.func.value)  # a cast keeps the lanes' value
            name = self._tl_function(node.func)
            if name in IDENTITY:
                return _same_everywhere(), None  # reduced: no masked lanes left (to our knowledge)
            fn = _FUNCTIONS.get(name)
            if (fn is None and name not in _ELEMENTWISE) or node.keywords:
                return None, None  # may change the shape: its lanes are not the operands'
            lanes = [self.lanes_of(a) for a in node.args]
            mask = None
            for _, m in lanes:
                mask = _both(mask, m)
            if mask is _CONFLICT:
                return None, None
            return (_apply(fn, *[v for v, _ in lanes]) if fn else None), mask
        return None, None

    def _tl_function(self, func):
        if isinstance(func, ast.Attribute) and self.alias(func.value) == "tl":
            return func.attr
        return None

    def reduction(self, node):
        """``tl.<reduction>(operand, ...)`` emitted so that it reads only
        valid lanes: the operand through ``tl.where(mask, operand, identity)``
        unless its masked-out lanes already hold the identity (or it has none
        known); None for other calls."""
        name = self._tl_function(node.func)
        if name not in IDENTITY or not node.args:
            return None
        operand = self.expr(node.args[0])  # loads the tiles it reads, noting their masks
        value, mask = self.lanes_of(node.args[0])
        identity = IDENTITY[name]
        if not (value is not None and _equals(value, identity)):
            if mask is DESCRIPTOR:
                # No mask to read through here: this emission (the persistent
                # variant) is given up, and the plain kernel runs.
                raise self.error(f"`{name}` would read the zeros a tensor descriptor loads past the tensor", node)
            if mask is not None:
                fill = constant_node(float(identity)) if identity.is_infinite else ast.Constant(0)
                operand = expr("tl.where({mask}, {value}, {fill})", mask=copy.deepcopy(mask), value=operand,
                               fill=fill)
        return ast.Call(func=self.expr(node.func), args=[operand] + [self.expr(a) for a in node.args[1:]],
                        keywords=[self.keyword(k) for k in node.keywords])


def _apply(fn, *values):
    if fn is None or any(v is None for v in values):
        return None
    try:
        result = fn(*values)
    except (TypeError, ValueError, ZeroDivisionError):
        return None
    return None if result is sympy.nan or result.has(sympy.zoo, sympy.nan) else result


def _equals(value, identity):
    if identity.is_infinite:
        return value == identity
    return value.is_zero is True


_CONFLICT = object()  # two different masks: their shapes may differ, so neither is kept
DESCRIPTOR = object()  # lanes loaded through a tensor descriptor: no mask to read them through


def _both(a, b):
    if a is _CONFLICT or b is _CONFLICT:
        return _CONFLICT
    if a is None:
        return b
    if b is None or a is b:
        return a
    if a is DESCRIPTOR or b is DESCRIPTOR:
        return DESCRIPTOR
    if ast.dump(a) == ast.dump(b):
        return a
    return _CONFLICT
