import ast

import pytest
import sympy

from ntsym_codegen.intfuncs import CeilDiv, FloorDiv, Mod
from ntsym_codegen.printer import Printer, PrintError, to_source

a, b, c = sympy.symbols("a b c", integer=True, positive=True)
x = sympy.Symbol("x", integer=True)  # sign unknown


def p(expr, **kw):
    return to_source(Printer(**kw)(expr))


def evaluate(expr, env, **kw):
    """Run printed host code with Python ints."""
    source = p(expr, mode="host", **kw)
    return eval(source, {"cdiv": lambda u, v: -(-u // v), "max": max, "min": min}, env)


@pytest.mark.parametrize(
    "expr, text",
    [
        (sympy.Integer(3), "3"),
        (sympy.Integer(-3), "-3"),
        (a, "a"),
        (a + b, "a + b"),
        (a - b, "a - b"),
        (a * b + c - 1, "a * b + c - 1"),
        (2 * a, "2 * a"),
        (a**2, "a * a"),
        (FloorDiv(a, b), "a // b"),
        (Mod(a, b), "a % b"),
        (sympy.Max(a, b), "tl.maximum(a, b)"),
        (sympy.Min(a, b), "tl.minimum(a, b)"),
        (sympy.Lt(a, b), "a < b"),
        (sympy.Le(a, b), "a <= b"),
        (sympy.Gt(a, b), "a > b"),
        (sympy.Ge(a, b), "a >= b"),
        (sympy.Eq(a, b), "a == b"),
        (sympy.Ne(a, b), "a != b"),
        (sympy.And(sympy.Lt(a, b), sympy.Lt(b, c)), "(a < b) & (b < c)"),
        (sympy.Or(sympy.Lt(a, b), sympy.Lt(b, c)), "(a < b) | (b < c)"),
    ],
)
def test_kernel_printing(expr, text):
    printed = p(expr)
    # Commutative operands may come in either order; compare as values too.
    assert printed == text or sorted(printed) == sorted(text)


def test_ceil_division_kernel_and_host():
    assert p(CeilDiv(a, b)) == "(a + b - 1) // b"
    assert p(CeilDiv(a, b), mode="host") == "cdiv(a, b)"


def test_floor_and_ceiling_of_rationals():
    assert p(sympy.floor(a / b)) == "a // b"
    assert evaluate(sympy.ceiling(a / b), {"a": 7, "b": 2}) == 4


def test_negative_operands_use_exact_helpers():
    assert p(FloorDiv(x, 4)) == "ntsym_floordiv(x, 4)"
    assert p(Mod(x, 4)) == "ntsym_mod(x, 4)"
    # Python semantics on the host: exact for negative values.
    for value in range(-9, 10):
        assert evaluate(FloorDiv(x, 4), {"x": value}) == value // 4
        assert evaluate(Mod(x, 4), {"x": value}) == value % 4
        assert evaluate(CeilDiv(x, 4), {"x": value}) == -(-value // 4)


def test_piecewise():
    expr = sympy.Piecewise((a, sympy.Lt(a, b)), (b, True))
    assert p(expr) == "tl.where(a < b, a, b)"
    assert evaluate(expr, {"a": 2, "b": 5}) == 2
    assert evaluate(expr, {"a": 7, "b": 5}) == 5


@pytest.mark.parametrize(
    "expr",
    [
        a / b,  # true division
        sympy.Rational(1, 2) * a,
        sympy.Float(1.5) * a,
        sympy.sqrt(a),
        sympy.sin(a),
        sympy.Piecewise((a, sympy.Lt(a, b))),  # no default branch
        FloorDiv(a, x),  # divisor sign unknown
    ],
)
def test_refuses_inexact(expr):
    with pytest.raises(PrintError):
        p(expr)


def test_names_mapping():
    out = Printer(names={a: "input_size_0", b: ast.Name(id="BLOCK", ctx=ast.Load())})(a * b)
    assert to_source(out) == "input_size_0 * BLOCK"


def test_intfuncs_simplify():
    n, B = sympy.symbols("n B", integer=True, positive=True)
    assert CeilDiv(n, n) == 1
    assert CeilDiv(n, 1) == n
    assert CeilDiv(7, 2) == 4 and FloorDiv(7, 2) == 3 and Mod(7, 2) == 1
    assert FloorDiv(B * n + 3, B) == n + FloorDiv(3, B)
    assert Mod(B * n + 3, B) == Mod(3, B)
    assert CeilDiv(4 * n, 2) == 2 * n
    assert str(CeilDiv(n, B)) == "cdiv(n, B)"


# -- divisibility: the quick refutations agree with cancel -------------------------------


def _divides_by_cancel(b, a):
    """``intfuncs.divides`` without its quick refutations."""
    from ntsym_codegen import intfuncs

    if a == 0:
        return True
    if isinstance(b, sympy.Integer):
        return intfuncs.divides(b, a)
    q = sympy.cancel(a / b)
    return q.as_numer_denom()[1] == 1 and q.is_integer is True


def _divisibility_cases():
    x, y, z = sympy.symbols("x y z", integer=True, positive=True)
    atoms = [x, y, z, sympy.Integer(2), sympy.Integer(3), FloorDiv(x, y), Mod(x + z, 4)]
    divisors = [x, y, 2 * x, x * y, x**2, y + 1, x - y + 1, x * (y + 1), 3 * z + 3, x * y + x, FloorDiv(x, 2) + 1]
    cases = []
    for i, b in enumerate(divisors):
        for j in range(12):
            f, g, h = atoms[(i + j) % 7], atoms[(2 * i + j) % 7], atoms[(i + 3 * j) % 7]
            cases += [(b, b * f), (b, b * f + g), (b, f * g + h), (b, (b + f) * g - f * g), (b, b * (f + 1) - b)]
    return cases


def test_quick_refutations_of_divisibility_agree_with_cancel():
    from ntsym_codegen import intfuncs

    cases = _divisibility_cases()
    results = [(intfuncs.divides(b, a), _divides_by_cancel(b, a)) for b, a in cases]
    assert all(fast == slow for fast, slow in results), [c for c, r in zip(cases, results) if r[0] != r[1]]
    assert sum(fast for fast, _ in results) > 50 and sum(not fast for fast, _ in results) > 50  # both outcomes met
    # Quotients of sums in the dividend: cancel decides.
    y = sympy.Symbol("y", integer=True, positive=True)
    xx = sympy.Symbol("x", integer=True, positive=True)
    for b, a in ((xx, 1 / (y / (xx * y + xx) + 1 / (xx * y + xx))), (2 * xx, xx * (y + 1) / (y / 2 + sympy.Rational(1, 2))),
                 (xx, (y + 1) / (y * (1 / xx + 1 / (xx * y))))):
        assert intfuncs.divides(b, a) == _divides_by_cancel(b, a) is True
    # A quotient integer only by a parity assumption (e / 2) is not one for cancel either.
    e, x = sympy.Symbol("e", integer=True, positive=True, even=True), sympy.Symbol("x", integer=True, positive=True)
    for b, a in ((2 * x, e * x), (x + 1, e * (x + 1))):
        assert intfuncs.divides(b, a) == _divides_by_cancel(b, a)


def test_quick_coprimality_agrees_with_gcd():
    from ntsym_codegen import intfuncs

    x, y, z = sympy.symbols("x y z", integer=True, positive=True)
    extra = [(x, sympy.S.Zero), (2 * x, 4 * x * y + 6), (2 * x, 4 * y + 3), (x * y, x * z + y), (x * y, x * y * z + x * y),
             (6 * x, 9 * z + 15), (4 * x**2, 2 * x * y + 4), (x, FloorDiv(x, 2) * x + x)]
    cases = [(a, b) for b, a in _divisibility_cases()] + [(a, b) for b, a in extra]
    quick = 0
    for a, b in cases:
        if intfuncs.coprime_to_monomial(a, b):
            quick += 1
            assert sympy.gcd(a, b) == 1, (a, b)
    assert quick > 50


def test_the_printers_are_one_family_that_refuses_unknown_nodes_by_name():
    """The kernel and host printer, the size printer of torch operators and
    the C printer dispatch alike; a node none of their methods prints is
    refused, naming the node."""
    from ntsym_codegen.aot.common import AotError, CPrinter
    from ntsym_codegen.printer import SizePrinter, SymPyPrinter

    x, y = sympy.symbols("x y", integer=True, positive=True)
    printers = [Printer(), Printer(mode="host"), SizePrinter({x: "x", y: "y"}), CPrinter()]
    assert all(isinstance(p, SymPyPrinter) for p in printers)
    unknown = sympy.Function("opaque")(x)
    for printer in printers:
        with pytest.raises((PrintError, AotError), match="opaque"):
            printer(unknown)
    assert CPrinter()(sympy.Max(x, y, 3) + FloorDiv(x, 2)) == \
        "(ntsym_floordiv(x, INT64_C(2)) + ntsym_max(ntsym_max(INT64_C(3), x), y))"
    with pytest.raises(AotError, match="Piecewise"):
        CPrinter()(sympy.Piecewise((x, x > 1), (y, True)))


def test_the_size_printer_computes_sizes_torch_keeps_symbolic():
    """Output shapes of torch operators: ``+``, ``*``, ``//``, ``cdiv`` and ``%``
    over the call's sizes; ``Max`` (a guard on symbolic sizes) and sizes the
    call does not give are refused by name."""
    from ntsym_codegen.printer import SizePrinter

    x, y, z = sympy.symbols("x y z", integer=True, positive=True)
    printer = SizePrinter({x: "x", y: "y"})
    expr = x * y + CeilDiv(x, 3) - Mod(y, 4) + FloorDiv(x, y)
    value = eval(to_source(printer(expr)), {"cdiv": lambda a, b: -(-a // b), "x": 10, "y": 7})  # noqa: S307
    assert value == 70 + 4 - 3 + 1
    with pytest.raises(PrintError, match="Max"):
        printer(sympy.Max(x, y))
    with pytest.raises(PrintError, match="z is not one the call gives"):
        printer(x + z)
