"""What a value holds on the lanes outside a tensor, in SymPy: the data
symbols (``data()``: an element, or a scalar argument), a function of such
values (``apply``), what a conversion keeps (``_cast_value``), and a lane
that is a number or NaN where the elements' own lanes are NaN (``NaNWhere``).

A reduction's result is data, taken finite in SymPy; an operation that
loses it (``0 * max(x)``, ``-inf + max(x)``) gives a lane that is not known.
One loss is kept: ``-inf - m`` where ``m`` is a maximum (``Bound``) of the
value ``x`` the padded lane is a lane of.  For every ``m`` but -inf the lane
is -inf; where ``m`` is -inf every element of ``x`` is, the elements' lanes
of ``x - m`` are NaN, and so is the padded one.  That lane is
``NaNWhere(-inf)``: arithmetic and ``exp`` keep the mark, a mixing
operation that passes NaN on (a sum, a maximum, ``dot``) takes the number,
a comparison or an integer conversion (which would turn the NaN into a
number) does not.  ``m`` must enter as itself: ``2 * m`` may round to -inf
where ``m`` is finite, and be the maximum of the very value it is
subtracted from (``OPERANDS``): not ``x - max(2 * x)``, whose maximum is
-inf where ``x``'s elements are finite.
"""
import contextvars

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
    """Data that is the maximum (``kind`` "max") or minimum of values: for
    each pair (mask key, value key) of ``pairs``, the lanes the mask keeps
    of the value the key names (``padding.value_key``); -inf (+inf) only
    where every one of them is."""

    __slots__ = ("kind", "pairs")


def bounding(kind, pairs):
    """A fresh ``Bound`` (data, as ``data()``) of ``kind`` over ``pairs``."""
    symbol = Bound(_DATA, real=True, finite=True)
    symbol.kind, symbol.pairs = kind, frozenset(pairs)
    return symbol


# (key_of, operand nodes) of the function being applied, where the caller
# knows them: ``key_of(node)`` names an operand's value (``padding.value_key``),
# asked only where a bound is lost; the bound's own value must be the one
# whose infinity it is subtracted from.
OPERANDS = contextvars.ContextVar("ntsym_lane_operands", default=None)


def bounds(fn, lanes):
    """The ``bound`` of ``fn`` of values with ``lanes``: ``maximum`` of
    maxima (``minimum`` of minima) is -inf (+inf) only where all are; any
    other function keeps none (a scale or a conversion may round a finite
    maximum to an infinity)."""
    kinds = {l.bound[0] for l in lanes if l.bound}
    if len(kinds) != 1:
        return None
    kind = kinds.pop()
    pairs = frozenset().union(*(l.bound[1] for l in lanes if l.bound))
    if fn is sympy.Max and kind == "max" or fn is sympy.Min and kind == "min":
        return kind, pairs
    return None


class NaNWhere(sympy.Function):
    """``NaNWhere(v, i)``: a lane holding ``v``, or NaN where a maximum
    (minimum) it lost is -inf (+inf), so where every lane of the masks
    ``_NAN_MASKS[i]`` is and the elements' own lanes are NaN as well
    (``x - max(x)`` with ``x`` padded with -inf).  Operations that pass NaN
    on keep it (``apply``); a mixing operation that does takes ``v`` for a
    lane of one of those masks (``equals``); any other use is not known."""


# SymPy's functions of the lanes rule that pass NaN on (``lane_tables``
# marks its own with ``passes_nan``; ntsym's maximum and minimum propagate NaN).
_PASSING_NAN = frozenset({sympy.exp, sympy.Abs, sympy.sqrt, sympy.sin, sympy.cos, sympy.Max, sympy.Min})
_NAN_MASKS = []  # per NaNWhere's index: a tuple of key sets, the lane's mask must be in each
_NAN_INDEX = {}


def _where_nan(value, masks):
    masks = tuple(dict.fromkeys(masks))
    if masks not in _NAN_INDEX:
        _NAN_INDEX[masks] = len(_NAN_MASKS)
        _NAN_MASKS.append(masks)
    return NaNWhere(value, sympy.Integer(_NAN_INDEX[masks]))


def _unwrapped(value):
    """(``value`` without ``NaNWhere``, the key sets it carried)."""
    if isinstance(value, NaNWhere):
        return value.args[0], _NAN_MASKS[int(value.args[1])]
    return value, ()


def _only_added(value, symbol):
    """Whether ``symbol`` enters ``value`` only as ``symbol``, ``-symbol`` or
    an argument of a maximum or minimum: no arithmetic on it that rounding
    could make infinite (``2 * m``)."""
    if value == symbol:
        return True
    if isinstance(value, sympy.Mul) and value.args == (-1, symbol):
        return True
    if isinstance(value, (sympy.Max, sympy.Min)):
        return all(_only_added(a, symbol) for a in value.args)
    return not value.has(symbol)


def _lost_to_nan(fn, values, result, lost):
    """Where ``fn`` of ``values`` lost only maxima and minima (``Bound``),
    each entering as itself or negated: ``result`` for every value they may
    take but the one infinity that is theirs only where their lanes are
    (-inf for a maximum), and NaN there, as the elements' own lanes; else None."""
    if not all(isinstance(b, Bound) for b in lost) or not all(_only_added(v, b) for v in values for b in lost):
        return None
    operands = OPERANDS.get()
    infinite = [i for i, v in enumerate(values) if v in (sympy.oo, -sympy.oo)]
    if operands is None or len(operands[1]) != len(values) or len(infinite) != 1:
        return None
    key_of, nodes = operands
    source = key_of(nodes[infinite[0]])
    masks = []
    for b in lost:
        # the masks whose lanes of this very value the bound is over
        keys = frozenset(k for k, v in b.pairs if v == source)
        if not keys:
            return None
        masks.append(keys)
        allowed, extreme = (sympy.oo, -sympy.oo) if b.kind == "max" else (-sympy.oo, sympy.oo)
        try:
            at_allowed = fn(*[v.xreplace({b: allowed}) if isinstance(v, sympy.Basic) else v for v in values])
            at_extreme = fn(*[v.xreplace({b: extreme}) if isinstance(v, sympy.Basic) else v for v in values])
        except (TypeError, ValueError, ZeroDivisionError, AttributeError):
            return None
        if at_allowed != result or not (at_extreme == result or at_extreme is sympy.nan):
            return None
    return _where_nan(result, masks)


def apply(fn, *values):
    """``fn`` of lane values (SymPy), None where not known."""
    if fn is None or any(v is None for v in values):
        return None
    unwrapped = [_unwrapped(v) for v in values]
    carried = tuple(m for _, masks in unwrapped for m in masks)
    if carried:
        # A lane that may be NaN (``NaNWhere``): kept by what passes NaN on.
        passing = True if fn in _PASSING_NAN else getattr(fn, "passes_nan", False)
        if passing is not True and not (passing and all(i in passing for i, (_, masks) in enumerate(unwrapped)
                                                       if masks)):
            return None
        result = apply(fn, *[v for v, _ in unwrapped])
        if result is None:
            return None
        inner, masks = _unwrapped(result)
        return _where_nan(inner, carried + masks)
    if any(not _exact(v) for v in values):
        return None
    try:
        result = fn(*values)
    except (TypeError, ValueError, ZeroDivisionError, AttributeError):
        return None
    if isinstance(result, bool):
        return sympy.true if result else sympy.false
    if not isinstance(result, sympy.Basic) or result is sympy.nan or result.has(sympy.zoo, sympy.nan) or \
            result.has(sympy.AccumBounds) or result.is_number and not result.is_extended_real:
        return None  # NaN, an interval (``sin(-oo)``) or a complex number (``sqrt(-1)``): NaN on the device
    if not _exact(result):
        return None
    if not getattr(fn, "selects", False):
        # A scalar may be 0, infinite or NaN: ``0 * s``, ``0 / s`` and
        # ``-inf + s`` are what they are only for some ``s`` (``Lanes``).
        given = set().union(*(_data_symbols(v, (_SCALAR,)) for v in values))
        if given - result.free_symbols:
            return None
        # Data lost (``0 * max(x)``, ``-inf + x``, ``x / x``) was lost by
        # taking it finite, where it may be infinite and the elements' own
        # lanes not NaN: ``x * max(x)`` of an infinite element is inf.
        lost = set().union(*(_data_symbols(v, (_DATA,)) for v in values)) - result.free_symbols
        if lost:
            return _lost_to_nan(fn, values, result, lost)
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
    inner, masks = _unwrapped(value)
    if masks:
        # A float conversion keeps NaN.  To a type not known here (``x.dtype``):
        # as a float's; to an integer type NaN has no value, nor has the
        # elements' own NaN there.  To a known integer or bool type: not known.
        converted = _cast_value(inner, kind) if kind in ("float", None) else None
        return value if converted is not None and converted == inner else None
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


def equals(value, identity, lane=None, nan_ok=False):
    """Whether ``value`` is provably ``identity`` on the lanes the mask
    ``lane`` excludes (``nan_ok``: or NaN where the elements' own lanes are
    NaN, ``NaNWhere``, for an operation that passes NaN on)."""
    value, masks = _unwrapped(value)
    if masks and not (nan_ok and all(lane in keys for keys in masks)):
        return False
    if value is None or not isinstance(value, sympy.Expr):
        return False
    if identity.is_infinite:
        return value == identity
    return value == identity or sympy.expand(value - identity) == 0
