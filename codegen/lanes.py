"""What the lanes of a value outside the arranged tensor are: the data model
of ``codegen/padding.py``.

A tile's block may hold lanes outside the tensor the user arranged (a row of
5 in a block of 8, a window past the end, the last chunk of a loop over
blocks).  Each value of the application carries ``Lanes``: the *factors*
whose conjunction says which lanes lie inside (boolean blocks, each with the
axes it varies along), and what the lanes outside hold where SymPy knows it.
Padding positions of ``pad()`` lie inside: they are elements of the arranged
tensor, reading ``other``.
"""

import ast
import contextlib
import contextvars
import copy
import dataclasses
from dataclasses import dataclass, field

import sympy

from ntsym_codegen.lane_values import _cast_value, apply, bounding, bounds, data, scalar_symbols


@dataclass(frozen=True)
class Factor:
    """One condition a lane must meet to lie inside the tensor.

    ``node``: the boolean block (AST); ``axes``: the axes it
    varies along, counted from the last (-1) so that broadcasting lines them
    up, or None where not known; ``names``: the names it reads (a factor
    reading a loop's variable changes from one iteration to the next);
    ``rank``: the number of axes of its block (it broadcasts to the value);
    ``extents``: per axis it varies along, the block's extent there (SymPy,
    and its printed AST), where known; ``extent_only``: the condition is a
    value's own true extent in a padded block (a value made afresh), met with
    every other factor, never joined with a tile's."""

    node: object
    axes: frozenset
    names: frozenset
    key: str
    rank: object = None  # the number of axes of ``node`` (0: a scalar)
    cond: object = None  # the condition as SymPy index math, where known
    extents: tuple = None  # ((axis, extent, its AST), ...) over ``axes``, where known
    extent_only: bool = False

    @staticmethod
    def of(node, axes, rank=None, cond=None, extents=None, extent_only=False):
        names = frozenset(n.id for n in ast.walk(node) if isinstance(n, ast.Name))
        axes = None if axes is None else frozenset(axes)
        if extents is not None and (axes is None or {a for a, _, _ in extents} != axes):
            extents = None
        return Factor(node, axes, names, ast.dump(node), rank, cond,
                      None if extents is None else tuple(sorted(extents, key=lambda e: e[0])), extent_only)

    def extent(self, axis):
        """(SymPy extent, its AST) of the block along ``axis``, or None."""
        for a, value, node in self.extents or ():
            if a == axis:
                return value, node
        return None

    def moved(self, mapping):
        """``extents`` with each axis ``a`` at ``mapping[a]`` (an axis not in
        ``mapping`` dropped): for a factor whose axes move."""
        if self.extents is None:
            return None
        return tuple((mapping[a], v, n) for a, v, n in self.extents if a in mapping)

    def mixes(self, axes):
        """Whether an operation mixing lanes along ``axes`` (None: all) meets
        lanes this factor excludes."""
        return axes is None or self.axes is None or bool(self.axes & axes)


@dataclass(frozen=True)
class Lanes:
    """``factors``: a tuple of ``Factor`` (empty: every lane lies inside),
    or None where the value may hold lanes outside the tensor that are not
    known (a shape change ntsym does not follow); ``outside``: per factor,
    what the lanes it excludes hold (SymPy, None where not known);
    ``value``: what every lane holds where that is one value (a scalar), None
    for data; ``rank``: the number of axes, None where not known.

    Data (the tensor's elements and what is computed from them) is a
    ``data()`` symbol, a scalar argument a ``data(scalar=True)`` one.  A
    scalar may be anything, 0, an infinity or NaN: an operation whose value
    would not depend on it (``0 * s``, ``0 / s``, ``-inf + s``) is not known
    (``lane_values.apply``).  So is an element, or a value computed from
    elements, that an operation loses (``0 * max(x)``, ``-inf + max(x)``,
    ``-inf - sum(x)``, ``x - x``): it may be infinite, and the padded lane
    NaN where the elements' lanes are not (``sum(x * max(x))`` is inf).  The
    one loss kept: ``-inf - m`` where ``m`` is a maximum of the value ``x``
    the padded lane is a lane of (``bound``; ``+inf - m`` of a minimum):
    -inf, or NaN where every element of ``x`` is -inf and ``x - m`` is NaN
    there as well
    (``lane_values.NaNWhere``), which only an operation passing NaN on reads
    as its number.
    """

    value: object = None
    factors: tuple = ()
    rank: object = None
    outside: tuple = ()
    blocks: tuple = None  # ((axis, extent), ...): a tile's block, where known (``_joined``)
    bound: tuple = None  # ("max" | "min", {(mask key, value key)}): a maximum (minimum) of values (``Bound``)
    # A local's lanes where operands meet (``meeting``), where they differ: a value a loop
    # carries reads a name through them as it reads the expression the name holds.
    met: object = field(default=None, compare=False, repr=False)

    @property
    def known(self):
        return self.factors is not None

    @property
    def clean(self):
        return self.factors == ()

    def at(self, factor):
        """What this value holds on the lanes ``factor`` excludes."""
        for f, v in zip(self.factors or (), self.outside):
            if f.key == factor.key:
                return v
        if self.value is not None:
            return self.value
        return bounding(*self.bound) if self.bound else data()


CLEAN = Lanes()


def unknown(rank=None):
    return Lanes(None, None, rank)


STALE = "ntsym_stale_lanes"  # a stale factor's node, never emitted (``require_current``, codegen/emit.py)


def stale(factor, branch=False):
    """``factor`` of a value a loop carries, reading what the loop changes:
    which lanes it excludes is not known in a later iteration, what they hold
    is.  ``branch``: a factor of the value on some of the paths that meet
    after a branch only; on the others its lanes may be elements."""
    if is_stale(factor):
        return factor
    return Factor(ast.Name(id=STALE, ctx=ast.Load()), factor.axes, frozenset(),
                  ("stale:branch:" if branch else "stale:") + factor.key, factor.rank, None, factor.extents)


def is_stale(factor):
    return factor.key.startswith("stale:")


def from_branch(factor):
    """Whether ``factor`` is stale for paths that meet (``stale(..., branch=True)``)."""
    return factor.key.startswith("stale:branch:")


def stale_refusal(what, operand, factors=(), unnamed=False):
    """Why an operation that must mask a stale factor's lanes (among
    ``factors``; ``unnamed``: a mask built from one, found in the kernel)
    is refused."""
    if unnamed:
        return (f"`{what}` mixes the lanes of `{operand}` whose lanes outside the tensor ntsym cannot name there: "
                "they come from a tile of an earlier iteration of a loop, or differ between the paths of an `if`; "
                "set them to the operation's identity with `ntl.where` on the tile's offsets where the value is "
                "made (or give the tensor an `other=` that is the identity)")
    if any(from_branch(f) for f in factors):
        return (f"`{what}` mixes the lanes of `{operand}`, whose lanes outside the tensor differ between the paths "
                "before it (the branches of an `if`, a loop that may run no iteration): which lanes to leave out "
                "depends on the path taken, which ntsym does not follow; set them to the operation's identity with "
                "`ntl.where` on the tile's offsets on each path, or reduce on each path")
    return (f"`{what}` mixes the lanes of `{operand}`, which holds lanes outside the tensor taken from a tile "
            "of an earlier iteration of the loop around it; ntsym cannot tell in this iteration which lanes "
            "those are; where the value is made, set them to the operation's identity with `ntl.where` on the "
            "tile's offsets (or give the tensor an `other=` that is the identity)")


def _has(lanes, factor):
    return any(f.key == factor.key for f in lanes.factors or ())


def carried_into(lanes, changing):
    """``lanes`` of a value at the head of a loop that changes the names
    ``changing``: its factors reading them stale (``stale``)."""
    if not lanes.known or not any(f.names & changing for f in lanes.factors):
        return lanes
    factors, outside = [], []
    for f, v in zip(lanes.factors, lanes.outside):
        g = stale(f) if f.names & changing else f
        if any(h.key == g.key for h in factors):
            continue
        factors.append(g)
        outside.append(v)
    return Lanes(lanes.value, tuple(factors), lanes.rank, tuple(outside), lanes.blocks, lanes.bound)


def masked(factors, outside, rank, value=None):
    """Lanes with ``factors``, each excluding lanes that hold ``outside``
    (one value for all, or one per factor)."""
    if factors is None:
        return unknown(rank)
    factors = tuple(factors)
    if not isinstance(outside, (tuple, list)):
        outside = (outside,) * len(factors)
    return Lanes(value, factors, rank, tuple(outside))


def same_everywhere(scalar=False):
    """A value equal on every lane: a reduction's, a loop variable's, or
    (``scalar``) a scalar argument's."""
    return Lanes(data(scalar=scalar), (), 0)


def merge_factors(*groups):
    """The conjunction of factor tuples, each factor once; None where one is
    not known."""
    if any(g is None for g in groups):
        return None
    seen, out = set(), []
    for g in groups:
        for f in g:
            if f.key not in seen:
                seen.add(f.key)
                out.append(f)
    return tuple(out)


_MEET = contextvars.ContextVar("ntsym_lanes_meet", default=False)


@contextlib.contextmanager
def meeting():
    """Within: ``combine`` takes a lane outside one operand as outside the
    result (the conjunction of every factor), as a value a loop carries needs
    (the lanes outside this iteration's tiles keep the carried value)."""
    token = _MEET.set(True)
    try:
        yield
    finally:
        _MEET.reset(token)


def meets():
    """Whether ``combine`` is within ``meeting``."""
    return _MEET.get()


def combine(fn, lanes, rank=None):
    """The lanes of an elementwise function of values with ``lanes``.

    Factors along different axes meet (a broadcast: a lane outside one
    operand's rows is outside the result).  Where two operands each have
    factors along the same axes, with different conditions on one tensor's
    block (its tiles at two positions along a row), a lane inside either is inside the result, holding the function of one
    operand's element and the other's ``other``, as NineToothed computes: the
    two groups give one factor, their disjunction.  On the lanes a factor
    excludes, the function of what each operand holds there."""
    ranks = [l.rank for l in lanes]
    if rank is None:
        rank = None if any(r is None for r in ranks) else max(ranks, default=0)
    if any(l.factors is None for l in lanes):
        return unknown(rank)
    blocks = {l.blocks for l in lanes if l.rank}
    blocks = blocks.pop() if len(blocks) == 1 else None  # one tile's block and scalars
    if not _MEET.get():
        lanes = _joined(fn, lanes, rank)
    factors = merge_factors(*(l.factors for l in lanes))
    outside = tuple(apply(fn, *[l.at(f) for l in lanes]) for f in factors)
    return Lanes(apply(fn, *[l.value for l in lanes]), factors, rank, outside, blocks, bounds(fn, lanes))


class UndecidedUnion(Exception):
    """A loop-carried value combining this iteration's tile with a tensor
    whose block may or may not have the tile's extent (decided at launch):
    ``factor`` is that tensor's mask."""

    def __init__(self, factor):
        super().__init__(ast.unparse(factor.node))
        self.factor = factor


def absorbed(lanes, wide, prior, changing):
    """``lanes`` (met) without the factors that read no changing name but
    that the value's ``wide`` lanes join with a tile of this iteration (two
    tensors' blocks of one extent: a lane inside either is an element, as
    outside a loop), unless the carried value (``prior``) holds them too.
    ``acc += x[0, k] + z`` with z shorter than the chunk: a lane past z's end
    inside chunk k holds x's element and z's ``other``, and stays in the
    sum.  Only factors are dropped, none made: the loop's states settle.  A
    factor of some paths only (``stale(..., branch=True)``: a temporary an
    inner loop may set) is no shorter tensor's and stays.
    Where the union is a compile-time choice (blocks whose extents the
    launch decides, one perhaps broadcasting), such a factor can be neither
    dropped nor kept for every choice: ``UndecidedUnion`` names it."""
    joined = [f for f in wide.factors if f.names & changing]
    if not wide.known or not joined:
        return lanes
    keys = {f.key for f in wide.factors}
    held = {f.key for f in prior.factors} if prior is not None and prior.known else set()
    absorbed = [f for f in lanes.factors if not f.names & changing and not f.extent_only and not from_branch(f)
                and f.key not in keys and f.key not in held]
    if not absorbed:
        return lanes
    if any(isinstance(f.node, ast.IfExp) for f in joined):
        raise UndecidedUnion(absorbed[0])
    return masked([f for f in lanes.factors if f not in absorbed],
                  [v for f, v in zip(lanes.factors, lanes.outside) if f not in absorbed], lanes.rank)


def _groups(lanes):
    """The factors of ``lanes`` by the axes they vary along (those along no
    axis, or unknown axes, or a value's own extent, left out)."""
    groups = {}
    for f in lanes.factors:
        if f.axes and not f.extent_only:
            groups.setdefault(f.axes, []).append(f)
    return groups


def _joined(fn, lanes, rank):
    """``lanes`` where the first two operands with different factors along
    the same axes have them replaced, in both, by their disjunction."""
    lanes = list(lanes)
    for i in range(len(lanes)):
        for j in range(len(lanes)):
            if i != j:
                lanes[i] = _beside_a_full_block(lanes[i], lanes[j])
    for i in range(len(lanes)):
        for j in range(i + 1, len(lanes)):
            a, b = _groups(lanes[i]), _groups(lanes[j])
            for axes in set(a) & set(b):
                keys_a, keys_b = {f.key for f in a[axes]}, {f.key for f in b[axes]}
                if keys_a == keys_b:
                    continue
                same = True if _one_block(a[axes], b[axes]) else _same_extent(a[axes], b[axes], axes)
                if same is not None and same is not False:
                    lanes[i], lanes[j] = _disjunction(lanes[i], a[axes], lanes[j], b[axes], axes, rank,
                                                      None if same is True else same)
    return lanes


def _beside_a_full_block(a, b):
    """``a`` without its factors along axes where ``b`` is a tile whose block
    of the same extent holds no lane outside (``b.blocks``, no factor of
    ``b`` along them): a lane of the combination is an element of ``b``
    there, ``a`` contributing its ``other``, as two tiles' masks of one
    extent join.  A block of 1 (a broadcast) or of unknown extent: ``a``
    as it is."""
    if not a.factors or b.blocks is None or b.factors is None:
        return a
    extents = dict(b.blocks)
    b_axes = set().union(*(f.axes or set() for f in b.factors)) if b.factors else set()
    if any(f.axes is None for f in b.factors):
        return a
    kept, changed = [], False
    for f, v in zip(a.factors, a.outside):
        test = None
        if f.axes and not f.axes & b_axes and f.extents is not None:
            test = _equal_extents(f, extents)
        if test is True:
            changed = True
            continue
        if test is not None:  # where the blocks prove of one extent when compiled
            f, v, changed = Factor.of(ast.BinOp(left=copy.deepcopy(f.node), op=ast.BitOr(), right=test),
                                      f.axes, f.rank, None, f.extents, f.extent_only), None, True
        kept.append((f, v))
    if not changed:
        return a
    return Lanes(a.value, tuple(f for f, _ in kept), a.rank, tuple(v for _, v in kept), a.blocks, a.bound)


def _equal_extents(factor, extents):
    """Whether ``factor``'s block has the extents ``extents`` (axis -> SymPy)
    along its axes: True where SymPy shows it, an AST of the compile-time
    test where the extents are block sizes or numbers, else None."""
    tests = []
    for axis, extent, node in factor.extents:
        other = extents.get(axis)
        if other is None:
            return None
        printable = isinstance(other, (sympy.Symbol, sympy.Integer))
        printed = ast.Name(id=str(other), ctx=ast.Load()) if isinstance(other, sympy.Symbol) \
            else ast.Constant(int(other)) if printable else None
        test = _extent_test(extent, node, other, printed)
        if test is False or (test is not True and not printable):
            return None
        tests.append(test)
    return _all_of(tests)


def _same_extent(group_a, group_b, axes):
    """Whether the blocks of two groups of factors (two tensors' tiles) have
    one extent along ``axes``: True or False where SymPy tells, else the test
    as an AST of compile-time values (block sizes, or the masks' shapes),
    None where not known.  Of one extent, a lane inside either operand is an
    element of their combination (NineToothed computes it with the other's
    ``other``); where one block broadcasts along the other (an extent of 1
    against many), its lane is no element of the longer row, and the lanes
    outside either are outside."""
    fa, fb = group_a[0], group_b[0]
    tests = []
    for axis in sorted(axes):
        ea, eb = fa.extent(axis), fb.extent(axis)
        if ea is not None and eb is not None:
            test = _extent_test(ea[0], ea[1], eb[0], eb[1])
            if test is False:
                return False
            tests.append(test)
        elif fa.rank and fb.rank and fa.rank >= -axis and fb.rank >= -axis:
            tests.append(ast.Compare(left=_shape(fa, axis), ops=[ast.Eq()], comparators=[_shape(fb, axis)]))
        else:
            return None
    return _all_of(tests)


def _extent_test(a, a_node, b, b_node):
    """Two block extents (SymPy, and printed): True where SymPy shows them
    equal, False where they differ by a number, else their comparison as an
    AST of compile-time values."""
    difference = sympy.simplify(a - b)
    if difference == 0:
        return True
    if difference.is_number:
        return False
    return ast.Compare(left=copy.deepcopy(a_node), ops=[ast.Eq()], comparators=[copy.deepcopy(b_node)])


def _all_of(tests):
    """The conjunction of ``tests`` (True, or ASTs): True where every one is."""
    tests = [t for t in tests if t is not True]
    if not tests:
        return True
    return tests[0] if len(tests) == 1 else ast.BoolOp(op=ast.And(), values=tests)


def _shape(factor, axis):
    """``factor``'s block extent along ``axis``: its mask's shape there."""
    shape = ast.Attribute(value=copy.deepcopy(factor.node), attr="shape", ctx=ast.Load())
    return ast.Subscript(value=shape, slice=ast.Constant(factor.rank + axis), ctx=ast.Load())


def _one_block(group_a, group_b):
    """Whether both groups are conditions on one tensor's block along the
    same axes (two tiles of it at different positions): of the same
    symbols.  Blocks of two tensors may differ in extent, one broadcasting
    along the other (a block of one row against one of many), where a lane
    inside the one-row block's mask is not an element of the combination."""
    def symbols(group):
        if any(f.cond is None for f in group):
            return None
        return frozenset().union(*(f.cond.free_symbols for f in group))

    a, b = symbols(group_a), symbols(group_b)
    return a is not None and a == b


def _disjunction(a, group_a, b, group_b, axes, rank, test=None):
    """``a`` and ``b`` with ``group_a`` and ``group_b`` replaced by one factor:
    a lane inside either group is inside.  On the lanes it excludes (outside
    both), each holds what its group's factors exclude, where they agree.
    With ``test`` (a compile-time condition: the blocks have one extent), the
    factor is the disjunction where it holds and the conjunction where not;
    what the lanes it excludes hold is then not known."""
    either = ast.BinOp(left=_conjunction(group_a), op=ast.BitOr(), right=_conjunction(group_b))
    if test is None:
        node = either
    else:
        both = ast.BinOp(left=_conjunction(group_a), op=ast.BitAnd(), right=_conjunction(group_b))
        node = ast.IfExp(test=test, body=either, orelse=both)
    ranks = [f.rank for f in group_a + group_b]
    extents = group_a[0].extents if test is None else None
    factor = Factor.of(node, axes, None if any(r is None for r in ranks) else max(ranks), None, extents)

    def replaced(lanes, group):
        values = {lanes.at(f) for f in group}
        held = values.pop() if len(values) == 1 and test is None else None
        keys = {f.key for f in group}
        kept = [f for f in lanes.factors if f.key not in keys]
        return Lanes(lanes.value, tuple(kept) + (factor,), lanes.rank, tuple(lanes.at(f) for f in kept) + (held,),
                     bound=lanes.bound)

    return replaced(a, group_a), replaced(b, group_b)


def _conjunction(group):
    node = copy.deepcopy(group[0].node)
    for f in group[1:]:
        node = ast.BinOp(left=node, op=ast.BitAnd(), right=copy.deepcopy(f.node))
    return node


def cast(lanes, kind):
    """``lanes`` of a value converted to a type of ``kind``: "float" (any
    width, fp8 too) keeps the values every float type holds exactly (0,
    infinities, integers up to 8), "int" truncates finite numbers (an
    infinity or NaN has no integer value), "bool" tests them against zero,
    "bits" (a bitcast) keeps none; None (a type not known here) keeps small
    integers.  A value computed from data is data again, a new one."""
    if not lanes.known:
        return lanes
    outside = tuple(_cast_value(v, kind) for v in lanes.outside)
    value = lanes.value
    if value is not None:
        converted = _cast_value(value, kind)
        value = converted if converted is not None else data(scalar=bool(scalar_symbols(value)))
    return Lanes(value, lanes.factors, lanes.rank, outside, lanes.blocks)


def join(states):
    """The lanes of a name after paths that leave it as ``states`` (None: not
    assigned on that path): a lane lies inside where it does on every path
    (every factor of each), what it holds outside kept where all agree;
    unknown where one path's is.  A factor of some paths only is stale: on
    the paths without it its lanes may be elements, so no mask by it is right
    on every path; a mixing operation needs none where the paths with it
    hold the identity there (what they hold is kept), and is refused
    otherwise."""
    present = [s for s in states if s is not None]
    if not present:
        return None
    ranks = {s.rank for s in present}
    rank = present[0].rank if len(ranks) == 1 else None
    if any(not s.known for s in present):
        return unknown(rank)
    joined = present[0]
    for s in present[1:]:
        joined = widen(joined, s)
    common = set.intersection(*({f.key for f in s.factors} for s in present))
    factors, outside = [], []
    for f, v in zip(joined.factors, joined.outside):
        if f.key not in common and not is_stale(f):
            held = [s.at(f) for s in present if _has(s, f)]
            v = held[0] if held[0] is not None and all(h == held[0] for h in held) else None
            f = stale(f, branch=True)
        factors.append(f)
        outside.append(v)
    result = Lanes(joined.value, tuple(factors), rank, tuple(outside))
    if any(s.met is not None for s in present):  # the paths' lanes where operands meet, joined alike
        met = join([s if s is None or s.met is None else s.met for s in states])
        if met.known and [f.key for f in met.factors] != [f.key for f in result.factors]:
            result = dataclasses.replace(result, met=met)
    return result


def widen(entry, end):
    """``entry`` widened by ``end``: every factor of either, what the lanes
    outside hold kept where both agree; ``entry`` itself where it already
    covers ``end``."""
    if not entry.known:
        return entry
    if not end.known:
        return unknown(entry.rank)
    keys = {f.key for f in entry.factors}
    covered = all(f.key in keys for f in end.factors) and all(
        v is None or v == end.at(f) or is_stale(f) and not _has(end, f)
        for f, v in zip(entry.factors, entry.outside)) and (
        entry.value is None or entry.value == end.value)
    if covered:
        return entry
    factors = merge_factors(entry.factors, end.factors)
    outside = []
    for f in factors:
        # A side without a stale factor has elements on its lanes: it agrees with the other.
        held = [s.at(f) for s in (entry, end) if _has(s, f) or not is_stale(f)]
        outside.append(held[0] if held and held[0] is not None and all(v == held[0] for v in held) else None)
    return Lanes(entry.value if entry.value == end.value else None, factors,
                 entry.rank if entry.rank == end.rank else None, tuple(outside))
