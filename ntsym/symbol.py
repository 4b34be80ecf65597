"""Symbols: SymPy integer symbols that also carry what the compiler must know
about them (compile-time or not, auto-tuned or not, bounds)."""

import itertools
from typing import Optional

import sympy


class Symbol(sympy.Symbol):
    """An integer symbol, e.g. a block size or a tensor size.

    ``name``: the symbol's name (as generated code and messages show it).
    ``constexpr=True``: the value is known when the kernel is compiled (given at
    call time if not bound).  ``meta=True``: the auto-tuner chooses the value
    (implies ``constexpr``).  ``lower_bound``/``upper_bound`` bound the value;
    ``power_of_two`` restricts it to powers of two.

    Sizes, block sizes and symbols bounded below by 1 are positive.  A
    compile-time value the caller gives (``constexpr=True``, not ``meta``, no
    positive lower bound) is only non-negative: a padding or an offset may be
    0.  Where an arrangement uses one as a tile size, stride or dilation,
    ``make`` takes it as positive and the launcher checks that it is.
    ``nonnegative`` (True or False) overrides the choice.
    """

    def __new__(
        cls,
        name,
        constexpr=None,
        meta=None,
        lower_bound=None,
        upper_bound=None,
        power_of_two=None,
        nonnegative=None,
    ):
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"Symbol name must be a Python identifier, got {name!r}")
        name, constexpr, meta = _marked(name, constexpr, meta)
        if nonnegative is None:
            nonnegative = _given_at_call(constexpr, meta, lower_bound, power_of_two)
        assumptions = {"integer": True}
        assumptions["nonnegative" if nonnegative else "positive"] = True
        obj = sympy.Symbol.__xnew__(cls, name, **assumptions)
        obj.meta = bool(meta)
        obj.constexpr = bool(constexpr) or obj.meta
        obj.lower_bound = None if lower_bound is None else int(lower_bound)
        obj.upper_bound = None if upper_bound is None else int(upper_bound)
        obj.power_of_two = bool(power_of_two)
        obj.auto_named = False
        obj.is_size = False
        # A call-time tile size the kernel pads to the next power of two (a
        # twin made by ``make`` when the value given is not a power of two).
        obj.padded = False
        if (
            obj.lower_bound is not None
            and obj.upper_bound is not None
            and obj.lower_bound > obj.upper_bound
        ):
            raise ValueError(
                f"Symbol {name}: lower_bound {lower_bound} > upper_bound {upper_bound}"
            )
        return obj

    def __getnewargs_ex__(self):
        return (
            (self.name,),
            {
                "constexpr": self.constexpr,
                "meta": self.meta,
                "lower_bound": self.lower_bound,
                "upper_bound": self.upper_bound,
                "power_of_two": self.power_of_two,
                "nonnegative": self.is_positive is not True,
            },
        )

    def _hashable_content(self):
        # Only comparable values: SymPy sorts symbols by this tuple.
        return super()._hashable_content() + (
            int(self.meta),
            int(self.constexpr),
            -1 if self.lower_bound is None else self.lower_bound,
            -1 if self.upper_bound is None else self.upper_bound,
            int(self.power_of_two),
            int(getattr(self, "padded", False)),
        )

    def __repr__(self):
        return self.name

    def candidates(self):
        """The values the auto-tuner may pick for a meta symbol, in order."""
        lo = self.lower_bound if self.lower_bound is not None else 1
        hi = self.upper_bound if self.upper_bound is not None else 1024
        if self.power_of_two:
            values, v = [], 1
            while v <= hi:
                if v >= lo:
                    values.append(v)
                v *= 2
            return values
        return list(range(lo, hi + 1))


def _marked(name, constexpr, meta):
    """A name with the markers of ``ntsym.naming`` (NineToothed's way to make
    a symbol compile-time or tuned): the plain name and the marks it carries."""
    from ntsym import naming

    plain = naming.remove_prefixes(name)
    if plain == name:
        return name, constexpr, meta
    if naming.is_next_power_of_2(name):
        raise ValueError(
            f"Symbol {name!r}: a next-power-of-two name is NineToothed's launcher's own; ntsym pads "
            "call-time tile sizes to a power of two itself, so give the symbol its plain name")
    if not plain.isidentifier():
        raise ValueError(f"Symbol name must be a Python identifier, got {name!r}")
    return plain, constexpr or naming.is_constexpr(name) or None, meta or naming.is_meta(name) or None


def _given_at_call(constexpr, meta, lower_bound, power_of_two):
    """Whether a symbol stands for a compile-time value the caller gives, which
    may be 0 (a padding): not tuned, not a power of two, not bounded below by 1."""
    return bool(constexpr) and not meta and not power_of_two and (lower_bound is None or lower_bound < 1)


_block_size_ids = itertools.count()


def block_size(lower_bound: Optional[int] = None, upper_bound: Optional[int] = None) -> "Symbol":
    """A fresh auto-tuned block size: a power of two in [32, 1024] unless bounded.

    ``lower_bound``, ``upper_bound``: the smallest and largest value the tuner
    may choose (default 32 and 1024); ``dot``'s operands need at least 16.

    The name ``BLOCK_SIZE_<n>`` is only a placeholder; ``make`` renames it after
    the arrangement parameter or variable it is bound to, so generated code and
    caches do not depend on how many block sizes were created before.
    """
    symbol = Symbol(
        f"BLOCK_SIZE_{next(_block_size_ids)}",
        meta=True,
        lower_bound=32 if lower_bound is None else lower_bound,
        upper_bound=1024 if upper_bound is None else upper_bound,
        power_of_two=True,
    )
    symbol.auto_named = True
    return symbol


def is_constexpr(expr):
    """Whether every free symbol of ``expr`` is known at compile time."""
    return all(getattr(s, "constexpr", False) for s in sympy.sympify(expr).free_symbols)


def as_expr(value):
    """SymPy form of a size, index or symbol given by the user."""
    if isinstance(value, sympy.Basic):
        return value
    if isinstance(value, bool):
        raise TypeError(f"expected an integer or a symbolic expression, got {value!r}")
    if isinstance(value, int):
        return sympy.Integer(value)
    if hasattr(value, "__index__"):
        return sympy.Integer(value.__index__())
    raise TypeError(f"expected an integer or a symbolic expression, got {value!r}")
