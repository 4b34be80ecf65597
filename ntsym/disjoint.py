"""Whether the tiles a written tensor gives different programs overlap.

Programs run in no fixed order, so two programs storing to one element race:
which value the tensor ends with is unspecified (an output ``expand``-ed
across programs, windows tiled with a stride below their extent).  For each
grid dimension ``g`` (program index ``pid_g`` of extent ``G``) and each
written tensor, the index map is read:

- ``pid_g`` in no source dimension: every program along ``g`` writes the
  same elements; where some tensor's tiles depend on ``pid_g`` (the values
  written may differ), or the application reads a tensor it writes (each
  program then reads what others stored, in no fixed order), or calls
  ``program_id`` or an atomic (a value of each program), refused unless
  ``G == 1`` (at make where ``G`` is a number, else a launch check).  Where
  none holds, the programs along ``g`` do the same work and write the
  same values: accepted.
- ``pid_g`` in one source dimension, as ``s * pid_g + r`` with ``r`` a sum of
  the tile's own index variables: where ``s`` is at least the extent of
  ``r``, each element names its program (proved disjoint, nothing checked);
  where ``s`` is provably below it, neighbouring programs' windows overlap
  and it is refused unless ``G == 1``; where the block sizes a call gives
  decide, the launch checks ``G <= 1`` or ``s >=`` the extent.  Where a
  program runs, every grid extent is at least 1 (an empty grid runs none and
  writes nothing): a step such as ``B * cdiv(n, B)`` with ``cdiv(n, B)`` a
  grid extent (a tensor taking NineToothed's split, ``ntsym/split.py``) is
  then at least the tile's ``B``, proved disjoint rather than checked.
- ``pid_g`` read only through ``pid_g // c`` and ``pid_g % c`` (a flattened
  grid): where one of the two is read nowhere, programs that differ only in
  it write the same elements, ruled on as above (``pid_g % c`` read nowhere:
  ``G <= 1`` or ``c <= 1``; ``pid_g // c`` read nowhere: ``G <= c``).  Where
  both are read, each is a grid dimension of its own for the windows' test
  above.
- Anything else is not decided here and is accepted as before.
"""

import sympy

from ntsym_codegen import bounds
from ntsym_codegen.intfuncs import FloorDiv, Mod


def overlap_checks(param, grid, program_vars, varying=None, read_written=(), calls=(), others=None):
    """(relation, grid dimension, reason) for each grid dimension along which
    the written tensor ``param``'s tiles overlap: the relation (``G <= 1``) is
    what keeps it from racing.  ``varying``: the program indices some
    tensor's tiles depend on; along another grid dimension every program
    reads the same tiles and so writes the same values, which no order
    changes (None: all of them); ``read_written``: written tensors the
    application reads, which make each program's values depend on the
    order (named in the reason); ``calls``: functions it calls whose value
    differs between programs (``program_id``, atomics), named likewise;
    ``others``: the other tensors' index expressions (a flattened grid's part
    that no tensor reads leaves every program's values alike)."""
    ranges = dict(zip(program_vars, grid))
    inner = {}
    for depth in range(1, len(param.levels)):
        for v, n in zip(param.level_vars[depth], param.levels[depth]):
            inner[v] = sympy.sympify(n)
    ranges.update(inner)
    index = [sympy.expand(sympy.sympify(e)) for e in param.index]
    checks = []
    for g, (pid, extent) in enumerate(zip(program_vars, grid)):
        if sympy.sympify(extent) == 1:
            continue
        dims = [d for d, e in enumerate(index) if pid in e.free_symbols]
        flat = _flattened(index, pid)
        if flat is not None:
            same = _shared_by(flat, extent)
            if same is not None and (read_written or calls or varying is None or _reads_other_part(others, pid, flat)):
                relation, part = same
                checks.append((relation, g, f"every program along it with the same `{part}` writes the same "
                               "elements (a flattened grid), from tiles or reads that differ between them"))
            elif same is None:
                checks.extend((relation, g, why) for relation, why in
                              _flattened_windows(index, pid, flat, extent, ranges, inner, grid))
            continue
        if not dims:
            if read_written:
                read = ", ".join(f"`{name}`" for name in read_written)
                checks.append((sympy.Le(extent, 1), g, "every program along it writes the same elements, and "
                               f"the kernel reads {read}, which they write: each program's values depend on "
                               "which stored before it"))
            elif calls:
                called = ", ".join(f"`{name}`" for name in calls)
                checks.append((sympy.Le(extent, 1), g, "every program along it writes the same elements, and "
                               f"the kernel calls {called}, whose value differs between them"))
            elif varying is None or pid in varying:
                checks.append((sympy.Le(extent, 1), g, "every program along it writes the same elements, "
                               "from tiles of other tensors that differ between them"))
            continue
        found = _window_check(index, pid, sympy.Le(extent, 1), ranges, inner, grid)
        if found is not None:
            checks.append((found[0], g, found[1]))
    return checks


def _window_check(index, pid, alone, ranges, inner, grid):
    """``(relation, reason)`` where ``pid`` steps one source dimension by a
    stride below its windows' span (``alone``: the relation that only one
    program runs along it); None where proved apart or not decided."""
    dims = [d for d, e in enumerate(index) if pid in e.free_symbols]
    if len(dims) != 1:
        return None
    e = index[dims[0]]
    if not e.is_polynomial(pid) or sympy.degree(e, pid) != 1:
        return None
    stride = e.coeff(pid, 1)
    rest = sympy.expand(e - stride * pid)
    if stride.free_symbols & set(ranges) or not bounds.nonnegative(stride - 1, {}):
        return None
    span = _exact_span(rest, inner)
    if span is None or _proved_positive(_where_programs_run(stride - span + 1, grid)):
        return None  # not decided, or proved: windows no wider than the step between them
    why = (f"neighbouring programs' windows overlap where they start {stride} elements apart along "
           f"source dimension {dims[0]} and span {span}")
    if _proved_positive(span - stride):
        return alone, why
    return sympy.Or(alone, sympy.Ge(stride, span)), why  # decided by the block sizes a call chooses


def _flattened_windows(index, pid, flat, extent, ranges, inner, grid):
    """The window checks of a flattened grid dimension whose index reads both
    ``pid // c`` and ``pid % c``: each part as a grid dimension of its own
    (``pid // c`` alone where ``G <= c``, ``pid % c`` where ``G <= 1`` or
    ``c <= 1``)."""
    divisor = flat[0]
    quotient, remainder = sympy.Dummy("q", integer=True), sympy.Dummy("r", integer=True)
    parts = {a: quotient if isinstance(a, FloorDiv) else remainder
             for e in index for a in e.atoms(FloorDiv, Mod) if a.args[0] == pid}
    split = [sympy.expand(e.xreplace(parts)) for e in index]
    found = []
    for part, alone, name in ((quotient, sympy.Le(extent, divisor), f"pid // {divisor}"),
                              (remainder, sympy.Or(sympy.Le(extent, 1), sympy.Le(divisor, 1)), f"pid % {divisor}")):
        check = _window_check(split, part, alone, ranges, inner, grid)
        if check is not None:
            found.append((check[0], f"{check[1]}, programs taken by `{name}` (a flattened grid)"))
    return found


def _flattened(index, pid):
    """``(c, divided, remainder)`` where the index reads ``pid`` only through
    ``pid // c`` and ``pid % c`` (one ``c``), saying which of the two it
    reads; else None."""
    atoms = {a for e in index for a in e.atoms(FloorDiv, Mod) if a.args[0] == pid}
    if not atoms or len({a.args[1] for a in atoms}) != 1:
        return None
    stand_in = {a: sympy.Dummy() for a in atoms}
    if any(pid in e.xreplace(stand_in).free_symbols for e in index):
        return None
    divisor = next(iter(atoms)).args[1]
    return divisor, any(isinstance(a, FloorDiv) for a in atoms), any(isinstance(a, Mod) for a in atoms)


def _reads_other_part(others, pid, flat):
    """Whether another tensor's index reads the part of ``pid`` the written
    tensor does not (or ``pid`` otherwise): its tiles then differ between
    the programs that write the same elements.  True where not known."""
    if others is None:
        return True
    divisor, divided, remainder = flat
    for e in others:
        if pid not in e.free_symbols:
            continue
        read = _flattened([e], pid)
        if read is None or read[0] != divisor:
            return True  # read otherwise
        if read[2] and not remainder or read[1] and not divided:
            return True
    return False


def _shared_by(flat, extent):
    """``(relation, part)`` for a flattened grid dimension of ``extent`` of
    which the index reads only one part: what keeps programs that differ in
    the other part apart, and that part; None where it reads both."""
    divisor, divided, remainder = flat
    if divided and remainder:
        return None
    if divided:  # pid % c read nowhere: pid and pid + 1 share pid // c
        return sympy.Or(sympy.Le(extent, 1), sympy.Le(divisor, 1)), f"pid // {divisor}"
    return sympy.Le(extent, divisor), f"pid % {divisor}"  # pid and pid + c share pid % c


def _where_programs_run(expr, grid):
    """``expr`` with each grid extent that is not a number written as one
    more than a nonnegative integer: what holds of it holds wherever a
    program runs (with any extent 0 the grid is empty)."""
    at_least_one = {}
    for k, n in enumerate(grid):
        n = sympy.sympify(n)
        if not n.is_number:
            at_least_one[n] = sympy.Dummy(f"g{k}", integer=True, nonnegative=True) + 1
    return sympy.expand(sympy.sympify(expr).xreplace(at_least_one))


def _exact_span(rest, inner):
    """How many consecutive positions ``rest`` (a sum of terms ``c * u`` over
    the tile's index variables ``u`` with coefficients free of them, plus a
    constant) spans; None for anything else."""
    span = sympy.S.One
    for term in sympy.Add.make_args(rest):
        atoms = term.free_symbols & set(inner)
        if not atoms:
            continue
        if len(atoms) != 1:
            return None
        (u,) = atoms
        if not term.is_polynomial(u) or sympy.degree(term, u) != 1:
            return None
        coeff = term.coeff(u, 1)
        if not _proved_positive(coeff):
            return None
        span += coeff * (inner[u] - 1)
    return sympy.expand(span)


def _proved_positive(expr):
    expr = sympy.expand(expr)
    return expr.is_positive is True or bounds.nonnegative(expr - 1, {})
