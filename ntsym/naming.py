"""Names with the markers NineToothed's ``naming`` module gives them.

NineToothed marks what a symbol is in its name: ``make_constexpr("B")`` is
``B`` behind a compile-time prefix, and its code generator reads the prefixes
back (``is_constexpr``, ``is_meta``, ``remove_prefixes``).  ntsym keeps those
facts on the symbol itself (``Symbol(..., constexpr=True)``), so its own
names carry no prefix; these functions make and read prefixed names for code
written against NineToothed, and ``ntsym.Symbol`` given a prefixed name
takes the marks from it (``Symbol(make_meta("B"))`` is
``Symbol("B", meta=True)``).  Names made by NineToothed's module read the
same here.
"""

import re

_CONSTEXPR = "constexpr"
_META = "meta"
_NEXT_POWER_OF_2 = "next_power_of_2"

_PREFIX_PATTERN = re.compile(r"(?:ntsym|ninetoothed)_((?!_).*?)_prefix_")


def auto_generate(name):
    """A name ntsym would generate for ``name`` (apart from the user's)."""
    return f"ntsym_{name}"


def make_constexpr(name):
    return _add_prefix(name, _CONSTEXPR)


def make_meta(name):
    return _add_prefix(name, _META)


def make_next_power_of_2(name):
    return _add_prefix(name, _NEXT_POWER_OF_2)


def is_constexpr(name):
    """Whether ``name`` is marked compile-time (a meta name is too)."""
    return _CONSTEXPR in _find_prefixes(name) or is_meta(name)


def is_meta(name):
    """Whether ``name`` is marked auto-tuned."""
    return _META in _find_prefixes(name)


def is_next_power_of_2(name):
    return _NEXT_POWER_OF_2 in _find_prefixes(name)


def remove_prefixes(name):
    """``name`` without its markers: the name the caller uses."""
    return _PREFIX_PATTERN.sub("", name)


def _add_prefix(name, kind):
    return f"ntsym_{kind}_prefix_{name}"


def _find_prefixes(name):
    return set(_PREFIX_PATTERN.findall(name))
