"""What a value holds on the lanes outside a tensor, in SymPy: the data
symbols (``data()``: an element, or a scalar argument), a function of such
values (``apply``), what a conversion keeps (``_cast_value``), and where a
maximum or minimum may be lost into an infinity (``Bound``, ``lost_soundly``).

A reduction's result is data, taken finite in SymPy.  Losing it into an
infinity (``-inf - m`` is ``-inf``) is sound only where ``m`` cannot be the
infinity that makes the lane NaN unless the elements' own lanes are NaN as
well: ``m`` a maximum of the very lanes the padded lane is beside (the mask
``keys``): where it is -inf, every one of them is, and ``x - m`` is NaN
there too.  Not ``-inf + max(x)`` (``max(x)`` of +inf leaves the elements
at inf), not ``x - max(y)`` of another tensor's lanes, not a sum or ``exp``
(which rounding makes infinite without an infinite element).  The masks
name lanes, not values: ``y - max(x)`` with ``y`` of ``x``'s mask, every
element of ``x`` -inf and ``y``'s finite, is not followed.
"""

import sympy


_DATA, _SCALAR = "data", "scalar"


def data(scalar=False):
    """A symbol for data: an element of a tensor, or (``scalar``) a scalar argument."""
    return sympy.Dummy(_SCALAR if scalar else _DATA, real=True, finite=True)


def scalar_symbols(value):
    """The scalar arguments' symbols in the lane value ``value``."""
    return _data_symbols(value, (_SCALAR,))


def _data_symbols(value, names=(_DATA, _SCALAR)):
    if not isinstance(value, sympy.Basic):
        return set()
    return {s for s in value.free_symbols if isinstance(s, sympy.Dummy) and s.name in names}


class Bound(sympy.Dummy):
    """Data that is the maximum (``kind`` "max") or minimum of an operand's
    lanes inside the masks ``keys``: it is -inf (+inf) only where each of
    those lanes is, so that on such a lane ``-inf - max`` is NaN as well."""

    __slots__ = ("kind", "keys")


def bounding(kind, keys):
    """A fresh ``Bound`` (data, as ``data()``) of ``kind`` over the masks ``keys``."""
    symbol = Bound(_DATA, real=True, finite=True)
    symbol.kind, symbol.keys = kind, frozenset(keys)
    return symbol


def bounds(fn, lanes):
    """The ``bound`` of ``fn`` of values with ``lanes``: ``maximum`` of
    maxima (``minimum`` of minima) is bounded by all their lanes, a positive
    scale keeps it (a conversion does not: it may round a finite maximum to
    an infinity)."""
    kinds = {l.bound[0] for l in lanes if l.bound}
    if len(kinds) != 1:
        return None
    kind = kinds.pop()
    keys = frozenset().union(*(l.bound[1] for l in lanes if l.bound))
    if fn is sympy.Max and kind == "max" or fn is sympy.Min and kind == "min":
        return kind, keys
    if getattr(fn, "scales", False) and len(lanes) == 2:
        bounded, other = lanes if lanes[0].bound else lanes[::-1]
        if other.value is not None and getattr(other.value, "is_number", False) and other.value.is_positive \
                and other.value.is_finite and not bounded.value:
            return kind, keys
    return None


def lost_soundly(fn, values, result, lane):
    """Whether data lost into the infinity ``result`` is lost soundly on the
    lanes the mask ``lane`` excludes: ``-inf - m`` where ``m`` is a maximum
    (``Bound``) of the lanes that mask keeps, for where ``m`` is -inf every
    such lane is and the elements' own lanes are NaN as well (``+inf - m``
    of a minimum likewise).  Not ``-inf + m``, nor a value of data that
    rounding may make infinite (a sum, ``exp``): the elements' lanes need
    not be NaN there."""
    if lane is None or result not in (sympy.oo, -sympy.oo) or len(values) != 2:
        return False
    infinite = [i for i, v in enumerate(values) if v in (sympy.oo, -sympy.oo)]
    if len(infinite) != 1:
        return False
    held = sympy.Dummy(real=True, finite=True)
    operands = list(values)
    operands[infinite[0]] = held
    try:
        added = sympy.expand(fn(*operands) - held)  # what the data adds to the infinity
    except (TypeError, ValueError, ZeroDivisionError, AttributeError):
        return False
    if added.has(held):
        return False
    return _is_bound(-added, "max" if result == -sympy.oo else "min", lane)


def _is_bound(value, kind, lane):
    """Whether ``value`` is -inf (+inf for ``kind`` "min") only where every lane
    the mask ``lane`` keeps is: a ``Bound`` of that kind over it, a maximum
    (minimum) with one, or one times a positive number."""
    if isinstance(value, Bound):
        return value.kind == kind and lane in value.keys
    if isinstance(value, sympy.Max if kind == "max" else sympy.Min):
        return any(_is_bound(a, kind, lane) for a in value.args)
    if isinstance(value, sympy.Mul):
        numbers = [a for a in value.args if a.is_number]
        rest = [a for a in value.args if not a.is_number]
        return len(rest) == 1 and all(n.is_positive and n.is_finite for n in numbers) and \
            _is_bound(rest[0], kind, lane)
    return False


def apply(fn, *values, lane=None):
    """``fn`` of lane values (SymPy), None where not known; ``lane``: the
    key of the mask whose excluded lanes these are (``lost_soundly``)."""
    if fn is None or any(v is None or not _exact(v) for v in values):
        return None
    try:
        result = fn(*values)
    except (TypeError, ValueError, ZeroDivisionError, AttributeError):
        return None
    if isinstance(result, bool):
        return sympy.true if result else sympy.false
    if not isinstance(result, sympy.Basic) or result is sympy.nan or result.has(sympy.zoo, sympy.nan):
        return None
    if not _exact(result):
        return None
    if not getattr(fn, "selects", False):
        # A scalar may be 0, infinite or NaN: ``0 * s``, ``0 / s`` and
        # ``-inf + s`` are what they are only for some ``s`` (``Lanes``).
        given = set().union(*(_data_symbols(v, (_SCALAR,)) for v in values))
        if given - result.free_symbols:
            return None
        # Data lost other than into an infinity (``0 * max(x)``, ``x / x``)
        # was lost by taking it finite, where the elements' own lanes need
        # not be NaN: ``x * max(x)`` of an infinite element is infinite.
        lost = set().union(*(_data_symbols(v, (_DATA,)) for v in values)) - result.free_symbols
        if lost and not lost_soundly(fn, values, result, lane):
            return None
    return result


def used_at_its_value(number):
    """Whether the proofs use an ``other=`` at its value (NaN, a sort's fill, or
    what ``_exact`` keeps): the launch refuses a dtype that loads another."""
    if number != number:  # NaN
        return True
    whole = number not in (float("inf"), float("-inf")) and float(number).is_integer()
    value = sympy.Integer(int(number)) if whole else sympy.sympify(number)  # 2.0 is used as 2 (``equals``)
    return value != 0 and _exact(value)


def _exact(value):
    """Whether ``value`` may take part in the lanes' arithmetic: a number only
    where every float type holds it exactly (``_cast_value``), for SymPy is exact
    where a GPU rounds, overflows and makes NaN (exp(100) * 0, 2**24 + 1)."""
    if not isinstance(value, sympy.Expr) or not value.is_number:
        return True
    return _cast_value(value, "float") is not None


def _cast_value(value, kind):
    if value is None or not isinstance(value, sympy.Basic) or kind == "bits" or _data_symbols(value):
        return None
    if value in (sympy.true, sympy.false):
        return value if kind == "bool" else sympy.S.One if value is sympy.true else sympy.S.Zero
    if not value.is_number or not value.is_extended_real:
        return None
    if kind == "float":
        exact = value.is_infinite or value.is_integer and abs(value) <= 8
        return value if exact else None
    if not value.is_finite:
        return None
    if kind == "bool":
        return sympy.true if value != 0 else sympy.false
    integer = sympy.Integer(int(value))  # toward zero, as a conversion does
    if kind == "int":  # in every integer type's range, signed or not
        return integer if 0 <= integer <= 127 else None
    return value if value.is_integer and 0 <= value <= 127 else None


def equals(value, identity):
    """Whether ``value`` is provably ``identity``."""
    if value is None or not isinstance(value, sympy.Expr):
        return False
    if identity.is_infinite:
        return value == identity
    return value == identity or sympy.expand(value - identity) == 0
