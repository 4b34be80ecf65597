"""Tensors reached through ``x.source[...]`` and also written: refused
unless one program runs.

The indices of a gather or scatter are values, so no proof places the
elements they name inside the tile of the program that reaches them.  Where
a tensor is gathered from and written (through its tiles or a scatter), or
scattered into and read (through its tiles or a gather) or written through
its tiles too, one program may read or write elements another program
writes; programs run in no fixed order, so the result would depend on which
runs first.  Such a kernel is refused at make where the grid provably holds
more than one program, and checked at launch otherwise (one program runs its
statements in order, which is what the application says).

A gather from a tensor nobody writes, a scatter into a tensor nobody reads,
and a program reading and writing only its own tiles are not affected.
"""

import sympy

from ntsym_codegen import bounds
from ntsym_codegen.ir import Check

# What each kind of access is called in a message.
_WORDS = {
    "gathered": "gathered from through `{x}.source[...]`",
    "scattered": "scattered into through `{x}.source[...] = ...`",
    "read": "read through its tiles",
    "written": "written through its tiles",
}


def note(records, name, kind, node):
    """Record that tensor ``name`` is accessed as ``kind`` (a key of
    ``_WORDS``) by the application's ``node`` (the first one kept)."""
    records.accesses.setdefault(name, {}).setdefault(kind, node)


def conflict(kinds):
    """Two kinds of access of one tensor that programs may interleave
    wrongly, or None: a data-indexed access meeting a write by another."""
    for a, b in (("gathered", "scattered"), ("gathered", "written"), ("scattered", "read"),
                 ("scattered", "written")):
        if a in kinds and b in kinds:
            return a, b
    return None


def check(emitter):
    """Refuse (or check at launch) every tensor whose accesses conflict."""
    grid = sympy.Mul(*emitter.ir.grid)
    for name, kinds in sorted(emitter.records.accesses.items()):
        pair = conflict(kinds)
        if pair is None:
            continue
        first, second = (_WORDS[k].format(x=name) for k in pair)
        reason = f"`{name}` is {first} and {second}"
        why = (f"the indices of `{name}.source[...]` are data, so no proof keeps the elements one program "
               f"reaches apart from those another program writes, and programs run in no fixed order (the "
               f"result would depend on which runs first); write the result to a separate output tensor")
        if bounds.nonnegative(grid - 2, {}):
            raise emitter.error(f"{reason}: {why}", kinds[pair[0]])
        relation = sympy.Le(grid, 1)
        if relation is sympy.true:
            continue
        entry = Check(relation, f"{reason}: {why}", reason, why)
        if entry not in emitter.records.checks:
            emitter.records.checks.append(entry)
