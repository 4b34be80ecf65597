"""Integer functions with exact semantics for index math.

SymPy's ``floor(a / b)`` hides an integer division inside a rational, which makes
printing and range reasoning awkward.  These three functions say what index math
means: integer division rounding down or up and the non-negative remainder, all
for a positive divisor.  The printer emits the fast C-like operators only when it
can prove the dividend non-negative, and an exact form otherwise.
"""

import math

import sympy


def _is_int(x):
    return isinstance(x, sympy.Integer)


class _Division(sympy.Function):
    """Integer division of ``a`` by ``b > 0``, rounding as ``_round`` does."""

    is_integer = True

    @classmethod
    def _simplify(cls, a, b):
        """The cases both roundings share: exact quotients and common factors."""
        if b == 1:
            return a
        if _is_int(a) and _is_int(b):
            return sympy.Integer(cls._round(int(a), int(b)))
        if a == 0:
            return sympy.S.Zero
        if a == b:
            return sympy.S.One
        if divides(b, a):
            return sympy.cancel(a / b)
        g = _common_factor(a, b)
        if g != 1:
            return cls(sympy.cancel(a / g), sympy.cancel(b / g))
        return None

    def _eval_is_nonnegative(self):
        a, b = self.args
        if a.is_nonnegative and b.is_positive:
            return True


class FloorDiv(_Division):
    """``floor(a / b)`` for integers ``a`` and ``b > 0``."""

    @staticmethod
    def _round(a, b):
        return a // b

    @classmethod
    def eval(cls, a, b):
        # (b * q + r) // b == q + r // b when b divides the first term exactly.
        if isinstance(a, sympy.Add) and b != 1:
            whole, rest = [], []
            for term in a.args:
                (whole if divides(b, term) else rest).append(term)
            if whole and rest:
                quotient = sympy.Add(*[sympy.cancel(t / b) for t in whole])
                return quotient + cls(sympy.Add(*rest), b)
        if isinstance(a, FloorDiv):
            return cls(a.args[0], a.args[1] * b)
        return cls._simplify(a, b)

    def _sympystr(self, printer):
        return f"({printer.parenthesize(self.args[0], 50)} // {printer.parenthesize(self.args[1], 100)})"


class CeilDiv(_Division):
    """``ceil(a / b)`` for integers ``a`` and ``b > 0``; printed ``cdiv(a, b)``."""

    @staticmethod
    def _round(a, b):
        return -(-a // b)

    @classmethod
    def eval(cls, a, b):
        return cls._simplify(a, b)

    def _eval_is_positive(self):
        a, b = self.args
        if a.is_positive and b.is_positive:
            return True

    def _sympystr(self, printer):
        return f"cdiv({printer._print(self.args[0])}, {printer._print(self.args[1])})"


class Mod(sympy.Function):
    """The remainder ``a - b * floor(a / b)`` (in ``[0, b)``) for ``b > 0``."""

    is_integer = True

    @classmethod
    def eval(cls, a, b):
        if b == 1:
            return sympy.S.Zero
        if _is_int(a) and _is_int(b):
            return sympy.Integer(int(a) % int(b))
        if a == 0 or a == b:
            return sympy.S.Zero
        if divides(b, a):
            return sympy.S.Zero
        if isinstance(a, sympy.Add):
            rest = [t for t in a.args if not divides(b, t)]
            if len(rest) < len(a.args):
                return cls(sympy.Add(*rest), b)

    def _eval_is_nonnegative(self):
        if self.args[1].is_positive:
            return True

    def _sympystr(self, printer):
        return f"({printer.parenthesize(self.args[0], 50)} % {printer.parenthesize(self.args[1], 100)})"


def _common_factor(a, b):
    """The positive common factor of ``a`` and ``b`` (1 if none is found)."""
    if coprime_to_monomial(a, b):
        return sympy.S.One
    try:
        g = sympy.gcd(a, b)
    except (sympy.PolynomialError, TypeError, ValueError):
        return sympy.S.One
    if g.is_positive is not True or g == 1:
        return sympy.S.One
    return g


def divides(b, a):
    """Whether ``b`` provably divides ``a`` (both integer expressions)."""
    if a == 0:
        return True
    if _is_int(b):
        if _is_int(a):
            return int(a) % int(b) == 0
        coeff, _ = a.as_coeff_Mul()
        return _is_int(coeff) and int(coeff) % int(b) == 0
    if _not_a_multiple(b, a):
        return False
    q = sympy.cancel(a / b)
    num, den = q.as_numer_denom()
    return den == 1 and q.is_integer is True


def coprime_to_monomial(a, b):
    """Whether ``gcd(a, b)`` is 1 for a monomial ``b = c * x**i * ...``, found
    without ``sympy.gcd``: the integer coefficients of ``a``'s terms (multiplied
    out) have no common factor with ``c``, and each of ``b``'s symbols is missing
    from some term.  False where that is not clear."""
    monomial = _monomial(b)
    terms = None if monomial is None or a == 0 else _polynomial_terms(a)
    if terms is None:
        return False
    content, symbols = monomial[0], set(monomial[1])
    for c, powers in terms:
        content = math.gcd(content, c)
        symbols &= set(powers)
    return content == 1 and not symbols


def _polynomial_terms(a):
    """The terms of ``a`` multiplied out, each as ``(integer coefficient,
    {base: positive power})``; None where a term has another coefficient or a
    quotient (``1 / (y + 1)``): not a polynomial's, so cancel or gcd decides."""
    terms = []
    for term in sympy.Add.make_args(sympy.expand(a)):
        c, rest = term.as_coeff_Mul()
        if not _is_int(c):
            return None
        powers = {}
        for factor in sympy.Mul.make_args(rest):
            base, exp = factor.as_base_exp()
            if not (_is_int(exp) and exp > 0):
                return None
            powers[base] = powers.get(base, 0) + int(exp)
        terms.append((int(c), powers))
    return terms


def _monomial(b):
    """``(c, {symbol: power})`` for ``b = c * x**i * y**j ...`` (``c`` a positive
    integer, the powers positive integers), else None."""
    coeff, rest = b.as_coeff_Mul()
    if not _is_int(coeff) or coeff <= 0:
        return None
    powers = {}
    for factor in sympy.Mul.make_args(rest):
        base, exp = factor.as_base_exp()
        if not (base.is_Symbol and _is_int(exp) and exp > 0):
            return None
        powers[base] = powers.get(base, 0) + int(exp)
    return int(coeff), powers


# Values given to the symbols when a quotient is tried at one point: distinct
# primes, large enough that sizes such as ``H - R + 1`` stay positive.
_PRIMES = (1009, 1013, 1019, 1021, 1031, 1033, 1039, 1049, 1051, 1061, 1063, 1069, 1087, 1091, 1093, 1097)


def _not_a_multiple(b, a):
    """Whether ``a / b`` is provably not a polynomial with integer coefficients
    (so that ``divides`` would find ``cancel``'s quotient fractional or not
    integer), decided without ``cancel``: for a monomial ``b``, some term of
    ``a`` multiplied out lacks a power of one of ``b``'s symbols or has a
    coefficient ``b``'s does not divide (a monomial divides a polynomial only
    term by term); for any ``b``, at one point (the symbols given distinct
    primes) ``b`` is not zero and does not divide ``a``, which an integer
    polynomial quotient would.  False where neither shows it."""
    monomial = _monomial(b)
    if monomial is None:
        return _not_a_multiple_at_a_point(b, a)
    coeff, powers = monomial
    terms = _polynomial_terms(a)
    return terms is not None and any(
        c % coeff or any(have.get(x, 0) < e for x, e in powers.items()) for c, have in terms
    )


def _not_a_multiple_at_a_point(b, a):
    symbols = sorted(b.free_symbols | a.free_symbols, key=sympy.default_sort_key)
    if len(symbols) > len(_PRIMES):
        return False
    point = dict(zip(symbols, map(sympy.Integer, _PRIMES)))
    try:
        bv, av = b.xreplace(point), a.xreplace(point)
    except (ZeroDivisionError, TypeError, ValueError):
        return False
    if not (_is_int(av) and _is_int(bv)) or bv == 0:
        return False
    return int(av) % int(bv) != 0


def recombine(expr):
    """``expr`` with digit decompositions folded back into what they decompose.

    Flattening dimensions splits an index ``x`` into ``x // (b*c)``,
    ``(x // c) % b`` and ``x % c``; with matching weights (the strides of a
    contiguous tensor: ``b*c``, ``c``, ``1``) they sum to ``x`` again.  The
    identity used, for integer ``y = x // c`` and positive ``b`` and ``c``::

        k * (y % b) + k * b * (x // (c*b)) == k * y

    One remainder disappears per step; a larger weight on the quotient keeps
    its excess (``(r - 1) * k * b * (x // (c*b))``).
    """
    terms = list(sympy.Add.make_args(sympy.expand(expr)))
    changed = True
    while changed:
        changed = False
        for j, term in enumerate(terms):
            k, mod = _factor_of(term, Mod)
            if mod is None:
                continue
            y, b = mod.args
            x, c = y.args if isinstance(y, FloorDiv) else (y, sympy.S.One)
            for i, other in enumerate(terms):
                w, quotient = _factor_of(other, FloorDiv)
                if i == j or quotient is None or quotient.args[0] != x:
                    continue
                if sympy.expand(quotient.args[1] - c * b) != 0:
                    continue
                ratio = sympy.cancel(w / (k * b))
                if ratio.as_numer_denom()[1] != 1:
                    continue
                merged = [k * y, sympy.factor((ratio - 1) * k * b) * quotient]
                terms = [t for n, t in enumerate(terms) if n not in (i, j)] + merged
                changed = True
                break
            if changed:
                break
    return sympy.Add(*terms)


def _factor_of(term, kind):
    """``(weight, f)`` when ``term`` is ``weight * f`` with ``f`` the only
    factor of type ``kind`` (to the first power), else ``(None, None)``."""
    factors = sympy.Mul.make_args(term)
    found = [f for f in factors if isinstance(f, kind)]
    if len(found) != 1:
        return None, None
    rest = [f for f in factors if f is not found[0]]
    if any(isinstance(f, (Mod, FloorDiv)) or f.has(found[0]) for f in rest):
        return None, None
    return sympy.Mul(*rest), found[0]
