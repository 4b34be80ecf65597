"""Outermost extents that may count windows past the end.

A gapped tile (windows narrower than their stride) counts, as NineToothed
does, ``cdiv(n - span, s) + 1`` windows, of which the last may start at or past
the end of its dimension: every element of such a window is masked, so the
program that would take it reads and writes nothing of that tensor. Its
*live* count, ``cdiv(n, s)``, counts the windows that start inside.

Along one grid dimension, the programs may therefore number either count of
such a tensor: every window holding an element is taken, and no program
indexes past the windows. Taking every other block of 128 elements beside the
two blocks of a 64-element output launches two programs; the same tiling
beside an output of three blocks launches three, as NineToothed does.
"""

import sympy


def agree(proof, g, ref_name, ref, others):
    """The extent of grid dimension ``g`` where one of the tensors aligned
    with it (the first arranged tensor ``ref`` and ``others``, a list of
    ``(name, tensor, dim)``) has a live count there, after proving or
    checking at launch that it is one of every tensor's counts; None where
    none has one (the outermost shapes must then agree exactly)."""
    parts = [(ref_name, ref, g)] + list(others)
    parts = [(name, proof._apply(t.levels[0][0][d]), _live(proof, t, d), d) for name, t, d in parts]
    if all(lo is None for _, _, lo, _ in parts):
        return None
    candidates = [e for _, hi, lo, _ in parts for e in (hi, lo) if e is not None]
    for extent in candidates:
        if all(_same(extent, hi) or (lo is not None and _same(extent, lo)) for _, hi, lo, _ in parts):
            names = ", ".join(f"`{name}`" for name, *_ in parts)
            proof.facts.append((
                "proved", sympy.Eq(sympy.Symbol(f"grid_{g}"), extent, evaluate=False),
                f"outermost dim {g} of {names}: every window holding an element is taken",
            ))
            return extent
    # Not decided here: the program count is that of a tensor without windows
    # past its end (else the first tensor's), and the others must match it
    # with one of their counts, checked at launch.
    owner = next((p for p in parts if p[2] is None), parts[0])
    extent = owner[1]
    for name, hi, lo, d in parts:
        if name == owner[0] and d == owner[3]:
            continue
        if lo is None:
            proof._equate(owner[0], extent, name, hi, g, d)
            continue
        if proof._read_along_first(name, d):
            _cover_windows(proof, owner, extent, name, hi, lo, g)
            continue
        where = (f"outermost dim {g}: `{name}` counts {proof.describe(hi)} windows, the first "
                 f"{proof.describe(lo)} starting inside its dimension")
        proof._require(
            sympy.Or(sympy.Eq(extent, hi), sympy.Eq(extent, lo)),
            f"{where}; the {proof.describe(extent)} programs of `{owner[0]}` must number one or the other",
            f"{where}, and windows that start past the end hold no element",
            f"one program runs per tile of `{owner[0]}` along dim {owner[3]}: with fewer, windows of "
            f"`{name}` holding elements would not be computed; with more, programs would index past its "
            "windows",
        )
    return proof._apply(extent)


def _cover_windows(proof, owner, extent, name, hi, lo, g):
    """A tensor only read, along its first dimension: the programs may number
    at most its windows (a diagonal of a tall matrix, whose windows go on
    past the diagonal, beside an output of one element per column): each
    program reads the window at its index, as in NineToothed, and windows
    past the programs are not read."""
    where = (f"outermost dim {g}: `{name}` counts {proof.describe(hi)} windows, the first "
             f"{proof.describe(lo)} starting inside its dimension")
    proof._require(
        sympy.Le(extent, hi),
        f"{where}; the {proof.describe(extent)} programs of `{owner[0]}` must be at most as many",
        f"{where}, and `{name}` is only read: each program reads the window at its index",
        f"one program runs per tile of `{owner[0]}` along dim {owner[3]}: a program past `{name}`'s "
        "windows would read none of its elements (a wrong result); windows past the programs are not read",
    )


def _live(proof, t, d):
    live = t.live[d] if t.live else None
    return None if live is None else proof._apply(live)


def _same(a, b):
    return a == b or sympy.expand(a - b) == 0
