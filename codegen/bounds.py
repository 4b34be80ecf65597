"""Range reasoning on index expressions: prove a mask condition always holds.

Index variables range over ``[0, size)``.  ``upper``/``lower`` give bounds of an
expression that hold for every value of the variables (sound, not always
tight); a condition is dropped only when SymPy then proves it.  Anything that is
not understood gives no bound, which keeps the condition: the safe direction.
"""

import sympy

from ntsym_codegen.intfuncs import CeilDiv, FloorDiv, Mod


class _Unknown(Exception):
    pass


def _bound(expr, ranges, want_upper):
    if expr.is_Number:
        return expr
    if expr in ranges:
        return ranges[expr] - 1 if want_upper else sympy.S.Zero
    if expr.is_Symbol:
        return expr
    if isinstance(expr, sympy.Add):
        return sympy.Add(*[_bound(a, ranges, want_upper) for a in expr.args])
    if isinstance(expr, sympy.Mul):
        coeff, rest = expr.as_coeff_Mul()
        if coeff.is_negative:
            return coeff * _bound(rest, ranges, not want_upper)
        factors = sympy.Mul.make_args(rest)
        for f in factors:
            if _bound(f, ranges, False).is_nonnegative is not True:
                raise _Unknown
        return coeff * sympy.Mul(*[_bound(f, ranges, want_upper) for f in factors])
    if isinstance(expr, FloorDiv):
        a, b = expr.args
        if b.free_symbols & set(ranges):
            raise _Unknown
        return FloorDiv(_bound(a, ranges, want_upper), b)
    if isinstance(expr, CeilDiv):
        a, b = expr.args
        if b.free_symbols & set(ranges):
            raise _Unknown
        return CeilDiv(_bound(a, ranges, want_upper), b)
    if isinstance(expr, Mod):
        a, b = expr.args
        if b.free_symbols & set(ranges):
            raise _Unknown
        if not want_upper:
            return sympy.S.Zero
        try:
            high = _bound(a, ranges, True)
            low = _bound(a, ranges, False)
        except _Unknown:
            return b - 1
        if low.is_nonnegative and (b - 1 - high).is_nonnegative:
            return high
        return b - 1
    if isinstance(expr, (sympy.Max, sympy.Min)):
        return type(expr)(*[_bound(a, ranges, want_upper) for a in expr.args])
    if not (expr.free_symbols & set(ranges)):
        return expr
    raise _Unknown


def upper(expr, ranges):
    """An upper bound of ``expr`` over the ranges, or None."""
    try:
        return _bound(sympy.sympify(expr), ranges, True)
    except _Unknown:
        return None


def lower(expr, ranges):
    """A lower bound of ``expr`` over the ranges, or None."""
    try:
        return _bound(sympy.sympify(expr), ranges, False)
    except _Unknown:
        return None


def _positive(expr, depth=0):
    """Whether ``expr > 0`` is proved, by SymPy or after replacing each
    ``c * b * (a // b)`` or ``c * b * cdiv(a, b)`` by a lower bound of it
    without the division (``a - b + 1 <= b * (a // b) <= a`` and
    ``a <= b * cdiv(a, b) <= a + b - 1``, taking the end the sign of ``c`` needs),
    or after replacing a ``Min`` that ``expr`` falls with (a ``Max`` it rises
    with) by one of its arguments: a lower bound of ``expr`` too."""
    if _positive_as_is(expr):
        return True
    if depth >= 3:
        return False
    for atom in sorted(expr.atoms(sympy.Min, sympy.Max), key=sympy.default_sort_key):
        if _polarity(expr, atom) == (-1 if isinstance(atom, sympy.Min) else 1):
            if any(_positive(expr.xreplace({atom: arg}), depth + 1) for arg in atom.args):
                return True
    return False


def _polarity(expr, atom):
    """1 where ``expr`` never falls as ``atom`` rises, -1 where it never rises,
    0 where that is not known, None where ``expr`` does not contain ``atom``."""
    if expr == atom:
        return 1
    if not expr.has(atom):
        return None
    if isinstance(expr, (sympy.Add, sympy.Min, sympy.Max)):
        signs = {_polarity(a, atom) for a in expr.args} - {None}
        return signs.pop() if len(signs) == 1 else 0
    if isinstance(expr, sympy.Mul):
        inner = [f for f in expr.args if f.has(atom)]
        if len(inner) != 1:
            return 0
        rest = sympy.Mul(*[f for f in expr.args if f is not inner[0]])
        sign = _polarity(inner[0], atom)
        if rest.is_nonnegative:
            return sign
        if rest.is_nonpositive:
            return -sign if sign else sign
        return 0
    if isinstance(expr, (FloorDiv, CeilDiv)):
        a, b = expr.args
        return _polarity(a, atom) if not b.has(atom) and b.is_positive else 0
    return 0


def _positive_as_is(expr):
    expr = sympy.expand(expr)
    if expr.is_positive:
        return True
    rewritten = expr.replace(
        lambda e: isinstance(e, sympy.Mul) and _division_times_lower(e) is not None,
        lambda e: _division_times_lower(e),
    )
    if rewritten != expr and sympy.expand(rewritten).is_positive is True:
        return True
    # cdiv(a, b) is a // b or one more.
    terms = [_ceil_lower(t) for t in sympy.Add.make_args(sympy.expand(rewritten))]
    ceil_free = sympy.Add(*terms)
    return ceil_free != rewritten and sympy.expand(ceil_free).is_positive is True


def _ceil_lower(term):
    """A lower bound of the term ``c * cdiv(a, b) * rest`` (``rest >= 0``) in
    floor division: ``c * (a // b) * rest`` for ``c > 0``, ``c * (a // b + 1) * rest``
    for ``c < 0``; other terms as they are."""
    coeff, rest = term.as_coeff_Mul()
    factors = list(sympy.Mul.make_args(rest))
    ceils = [f for f in factors if isinstance(f, CeilDiv)]
    if len(ceils) != 1:
        return term
    others = sympy.Mul(*[g for g in factors if g is not ceils[0]])
    if others.is_nonnegative is not True or others.has(CeilDiv):
        return term
    floor = FloorDiv(*ceils[0].args)
    return coeff * (floor if coeff.is_positive else floor + 1) * others


def _division_times_lower(e):
    """A lower bound of ``e = c * b * (a // b)`` (or ``cdiv``) without the
    division, else None."""
    coeff, rest = e.as_coeff_Mul()
    factors = list(sympy.Mul.make_args(rest))
    for f in factors:
        if isinstance(f, (FloorDiv, CeilDiv)):
            others = sympy.Mul(*[g for g in factors if g is not f])
            a, b = f.args
            if sympy.expand(others - b) != 0 or b.is_positive is not True:
                continue
            low, high = (a - b + 1, a) if isinstance(f, FloorDiv) else (a, a + b - 1)
            return coeff * (low if coeff.is_positive else high)
    return None


def holds(cond, ranges):
    """Whether the relation ``cond`` holds for every value of the variables."""
    if cond is sympy.true:
        return True
    if cond is sympy.false:
        return False
    if isinstance(cond, sympy.And):
        return all(holds(c, ranges) for c in cond.args)
    if isinstance(cond, (sympy.StrictLessThan, sympy.LessThan)):
        high = upper(cond.lhs - cond.rhs, ranges)
        if high is None:
            return False
        return _positive(-high) if isinstance(cond, sympy.StrictLessThan) else _positive(1 - high)
    if isinstance(cond, (sympy.StrictGreaterThan, sympy.GreaterThan)):
        low = lower(cond.lhs - cond.rhs, ranges)
        if low is None:
            return False
        return _positive(low) if isinstance(cond, sympy.StrictGreaterThan) else _positive(low + 1)
    return False


def nonnegative(expr, ranges):
    """Whether ``expr >= 0`` for every value of the variables."""
    low = lower(expr, ranges)
    return low is not None and _positive(low + 1)


def drop_implied(conditions, ranges):
    """Remove conditions another one implies: ``a // d < n`` follows from
    ``a < n * d`` (a flattened index within its bound has its leading
    coordinate within its own)."""
    kept = list(conditions)
    for c in conditions:
        if isinstance(c, sympy.StrictLessThan) and isinstance(c.lhs, FloorDiv):
            a, d = c.lhs.args
            stronger = sympy.Lt(a, c.rhs * d)
            if stronger in kept or any(
                isinstance(k, sympy.StrictLessThan) and k.lhs == a and sympy.expand(k.rhs - c.rhs * d) == 0
                for k in kept
            ):
                kept.remove(c)
    return kept
