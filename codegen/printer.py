"""The SymPy printers: index math, sizes and launch checks printed for each target.

One family, as in SymPy's own code printers: :class:`SymPyPrinter` dispatches
on the node type to one ``_print_<Node>`` method and refuses, by name, a node
no method prints; each target is a subclass.

- :class:`Printer`: Python ``ast`` for Triton kernels (``mode="kernel"``) and
  for the Python launchers (``mode="host"``);
- :class:`SizePrinter` (host): sizes computed from the call's shapes, over
  the operations that keep torch's symbolic sizes symbolic (``ntsym.library``);
- ``ntsym_codegen.aot.common.CPrinter``: C over ``int64_t`` for the C launcher.

Integer semantics are exact: ``FloorDiv``/``Mod`` print as ``//``/``%`` only where
the operands are provably non-negative (Triton's ``//`` and ``%`` truncate toward
zero on tensors), and as an exact helper otherwise.  A node without an exact
translation raises :class:`PrintError` naming it, never a plausible guess.
"""

import ast
import copy

import sympy

from ntsym_codegen.intfuncs import CeilDiv, FloorDiv


class PrintError(TypeError):
    """An expression has no exact translation to the target."""


def _name(id):
    return ast.Name(id=id, ctx=ast.Load())


def _call(func, *args):
    if isinstance(func, str):
        parts = func.split(".")
        node = _name(parts[0])
        for part in parts[1:]:
            node = ast.Attribute(value=node, attr=part, ctx=ast.Load())
        func = node
    return ast.Call(func=func, args=list(args), keywords=[])


def _binop(left, op, right):
    return ast.BinOp(left=left, op=op, right=right)


class SymPyPrinter:
    """The base of the family: ``doprint`` calls the ``_print_<Node>`` method
    of the node's class (or of its nearest base class that has one) and
    raises ``error`` naming a node none prints.  Subclasses add the methods."""

    error = PrintError

    def __call__(self, expr):
        return self.doprint(expr)

    def doprint(self, expr):
        expr = sympy.sympify(expr)
        for cls in type(expr).__mro__:
            method = getattr(self, f"_print_{cls.__name__}", None)
            if method is not None:
                return method(expr)
        return self.refuse(expr)

    def refuse(self, expr):
        """A node no method prints: refused by name, never guessed."""
        raise self.error(f"no exact translation of {type(expr).__name__} node: {expr}")


class Printer(SymPyPrinter):
    """Prints SymPy integer/boolean expressions as ``ast`` nodes.

    ``names`` maps symbols to the identifiers (or ``ast`` nodes) to print for
    them; ``nonnegative`` is a predicate deciding whether an expression is
    provably >= 0 (the caller knows variable ranges); ``mode`` is ``"kernel"``
    (Triton: ``tl.maximum``, ``&`` for conjunctions) or ``"host"`` (Python).
    """

    def __init__(self, names=None, nonnegative=None, mode="kernel"):
        self.names = dict(names or {})
        self.nonnegative = nonnegative or (lambda e: e.is_nonnegative is True)
        self.mode = mode

    # -- atoms --------------------------------------------------------------

    def _print_Integer(self, expr):
        value = int(expr)
        if value < 0:
            return ast.UnaryOp(op=ast.USub(), operand=ast.Constant(-value))
        return ast.Constant(value)

    def _print_Rational(self, expr):
        raise PrintError(f"non-integer rational {expr} in index math")

    def _print_Float(self, expr):
        raise PrintError(f"float {expr} in index math")

    def _print_Symbol(self, expr):
        target = self.names.get(expr, expr.name)
        return _name(target) if isinstance(target, str) else target

    def _print_BooleanTrue(self, expr):
        return ast.Constant(True)

    def _print_BooleanFalse(self, expr):
        return ast.Constant(False)

    # -- arithmetic ---------------------------------------------------------

    def _print_Add(self, expr):
        terms = sorted(expr.args, key=_term_order)
        node = None
        for term in terms:
            coeff, rest = term.as_coeff_Mul()
            negative = coeff.is_negative
            printed = self.doprint(-term) if negative else self.doprint(term)
            if node is None:
                node = ast.UnaryOp(op=ast.USub(), operand=printed) if negative else printed
            else:
                node = _binop(node, ast.Sub() if negative else ast.Add(), printed)
        return node

    def _print_Mul(self, expr):
        coeff, rest = expr.as_coeff_Mul()
        if coeff.is_negative:
            return ast.UnaryOp(op=ast.USub(), operand=self.doprint(-expr))
        factors = []
        for factor in sympy.Mul.make_args(expr):
            base, exp = factor.as_base_exp()
            if exp.is_Integer and exp > 1:
                factors.extend([base] * int(exp))
            elif exp.is_Integer and exp < 0 or not factor.is_integer and factor.is_Pow:
                raise PrintError(f"division in index math: {expr}")
            else:
                factors.append(factor)
        factors.sort(key=lambda f: (0 if f.is_Number else 1))
        node = None
        for factor in factors:
            printed = self._paren(factor)
            node = printed if node is None else _binop(node, ast.Mult(), printed)
        return node

    def _paren(self, factor):
        return self.doprint(factor)

    def _print_Pow(self, expr):
        base, exp = expr.as_base_exp()
        if exp.is_Integer and exp > 0:
            node = self.doprint(base)
            result = node
            for _ in range(int(exp) - 1):
                result = _binop(result, ast.Mult(), self.doprint(base))
            return result
        raise PrintError(f"no exact translation of power {expr}")

    # -- integer division ---------------------------------------------------

    def _print_FloorDiv(self, expr):
        a, b = expr.args
        self._check_divisor(expr, b)
        if self.mode == "host" or self.nonnegative(a):  # Python's // floors
            return _binop(self.doprint(a), ast.FloorDiv(), self.doprint(b))
        return _call("ntsym_floordiv", self.doprint(a), self.doprint(b))

    def _print_CeilDiv(self, expr):
        a, b = expr.args
        self._check_divisor(expr, b)
        if self.mode == "host":  # the runtime's cdiv is exact for any sign
            return _call("cdiv", self.doprint(a), self.doprint(b))
        if self.nonnegative(a):
            # (a + b - 1) // b: exact for a >= 0, and what tl.cdiv computes (which
            # Triton's interpreter cannot call).
            return _binop(self.doprint(a + b - 1), ast.FloorDiv(), self.doprint(b))
        return ast.UnaryOp(
            op=ast.USub(), operand=_call("ntsym_floordiv", self.doprint(-a), self.doprint(b))
        )

    def _print_Mod(self, expr):
        a, b = expr.args
        self._check_divisor(expr, b)
        if self.mode == "host" or self.nonnegative(a):  # Python's % is exact
            return _binop(self.doprint(a), ast.Mod(), self.doprint(b))
        return _call("ntsym_mod", self.doprint(a), self.doprint(b))

    def _check_divisor(self, expr, b):
        # Sizes are positive whenever a kernel runs (the launcher checks the
        # facts the arrangement assumed), so a provably non-negative divisor
        # is a positive one at run time.
        # Divisors in index math are level sizes: expressions in sizes and
        # block sizes that are at least 1 whenever the launch checks pass.
        sized = all(s.is_nonnegative for s in b.free_symbols)
        if b.is_zero or b.is_nonpositive or not (b.is_nonnegative or (sized and b.free_symbols)):
            raise PrintError(f"divisor of {expr} is not provably positive")

    def _print_floor(self, expr):
        num, den = expr.args[0].as_numer_denom()
        if den != 1:
            return self.doprint(FloorDiv(num, den))
        return self.doprint(expr.args[0])

    def _print_ceiling(self, expr):
        num, den = expr.args[0].as_numer_denom()
        if den != 1:
            return self.doprint(CeilDiv(num, den))
        return self.doprint(expr.args[0])

    # -- min / max / piecewise ----------------------------------------------

    def _minmax(self, expr, kernel_fn, host_fn):
        args = [self.doprint(a) for a in expr.args]
        if self.mode == "host":
            return _call(host_fn, *args)
        node = args[0]
        for arg in args[1:]:
            node = _call(kernel_fn, node, arg)
        return node

    def _print_Max(self, expr):
        return self._minmax(expr, "tl.maximum", "max")

    def _print_Min(self, expr):
        return self._minmax(expr, "tl.minimum", "min")

    def _print_Piecewise(self, expr):
        pieces = list(expr.args)
        value, cond = pieces[-1]
        if cond is not sympy.true:
            raise PrintError(f"Piecewise without a default branch: {expr}")
        node = self.doprint(value)
        for value, cond in reversed(pieces[:-1]):
            if self.mode == "host":
                node = ast.IfExp(test=self.doprint(cond), body=self.doprint(value), orelse=node)
            else:
                node = _call("tl.where", self.doprint(cond), self.doprint(value), node)
        return node

    # -- relations and logic ------------------------------------------------

    def _compare(self, expr, op):
        return ast.Compare(left=self.doprint(expr.lhs), ops=[op], comparators=[self.doprint(expr.rhs)])

    def _print_StrictLessThan(self, expr):
        return self._compare(expr, ast.Lt())

    def _print_LessThan(self, expr):
        return self._compare(expr, ast.LtE())

    def _print_StrictGreaterThan(self, expr):
        return self._compare(expr, ast.Gt())

    def _print_GreaterThan(self, expr):
        return self._compare(expr, ast.GtE())

    def _print_Equality(self, expr):
        return self._compare(expr, ast.Eq())

    def _print_Unequality(self, expr):
        return self._compare(expr, ast.NotEq())

    def _logic(self, expr, kernel_op, host_op):
        args = [self.doprint(a) for a in expr.args]
        if self.mode == "host":
            return ast.BoolOp(op=host_op, values=args)
        node = args[0]
        for arg in args[1:]:
            node = _binop(node, kernel_op, arg)
        return node

    def _print_And(self, expr):
        return self._logic(expr, ast.BitAnd(), ast.And())

    def _print_Or(self, expr):
        return self._logic(expr, ast.BitOr(), ast.Or())

    def _print_Not(self, expr):
        if self.mode == "host":
            return ast.UnaryOp(op=ast.Not(), operand=self.doprint(expr.args[0]))
        return _binop(self.doprint(expr.args[0]), ast.BitXor(), ast.Constant(True))


class SizePrinter(Printer):
    """Host ``ast`` of sizes derived from the call's shapes, where every
    operation keeps torch's symbolic sizes (SymInt) symbolic: integers,
    ``+``, ``*``, powers, ``//``, ``cdiv`` and ``%``; symbols only those
    ``names`` maps.  Any other node (``Max``, ``Piecewise``, relations) is
    refused by name: such a size is not derived."""

    def __init__(self, names):
        super().__init__(names, mode="host")

    def _print_Symbol(self, expr):
        if expr not in self.names:
            raise self.error(f"the size {expr.name} is not one the call gives")
        return copy.deepcopy(super()._print_Symbol(expr))  # one node per use

    def _refused(self, expr):
        raise self.error(f"no size computation for {type(expr).__name__} node: {expr}")

    _print_Max = _print_Min = _print_Piecewise = _print_floor = _print_ceiling = _refused
    _print_BooleanTrue = _print_BooleanFalse = _print_And = _print_Or = _print_Not = _refused
    _print_StrictLessThan = _print_LessThan = _print_StrictGreaterThan = _print_GreaterThan = _refused
    _print_Equality = _print_Unequality = _refused


def _term_order(term):
    """Print positive terms first, constants last: ``a * b + c - 1``."""
    coeff, _ = term.as_coeff_Mul()
    return (term.is_Number, coeff.is_negative is True, not term.is_Mul, sympy.default_sort_key(term))


def to_source(node):
    """Source text of an ``ast`` expression."""
    return ast.unparse(ast.fix_missing_locations(node))


def conjunction(nodes):
    """``a & b & c`` of mask nodes (None when empty)."""
    node = None
    for item in nodes:
        node = item if node is None else _binop(node, ast.BitAnd(), item)
    return node
