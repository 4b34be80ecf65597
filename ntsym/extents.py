"""How many windows a tile makes and how many elements a slice selects, with
NineToothed's formulas, and which of those windows or elements may fall
outside the dimension (they are then masked).

A count NineToothed computes as zero or negative for a concrete size (a
floor-mode tile longer than its dimension, an empty slice) is an empty level
here: in the outermost level no program runs, nothing is read or written;
inside a tile it is refused at make (``check_inner_extents``). Over a
symbolic size, a negative count is refused at launch.
"""

import sympy

from ntsym_codegen.intfuncs import CeilDiv, FloorDiv
from ntsym.errors import ArrangementError, MetaOperationError
from ntsym.symbol import as_expr


def window_count(n, tile, stride, dilation, floor_mode):
    """``(count, live, requirements)`` of windows of ``tile`` elements,
    ``dilation`` apart, starting every ``stride`` elements of a dimension of
    ``n``: NineToothed's ``(n - span) // stride + 1`` (rounding down in floor
    mode, up otherwise).

    In ceil mode a window narrower than its stride (a gap between windows)
    may start at or past the end, entirely masked: ``live`` is then the count
    of windows that start inside, ``cdiv(n, stride)`` (None where every window
    may hold elements). ``requirements``: that the count is not negative,
    where SymPy cannot tell (checked at launch): a count of 0 is an empty
    level, over which nothing runs, as in NineToothed; a negative one has no
    meaning (NineToothed's product of two would launch programs)."""
    span = dilation * (tile - 1) + 1
    if stride == tile and dilation == 1 and not floor_mode:
        return CeilDiv(n, tile), None, []
    rounding = FloorDiv if floor_mode else CeilDiv
    count = sympy.sympify(rounding(n - span, stride) + 1)
    least = span if floor_mode else span - stride + 1  # the size giving one window
    requirements = []
    if count.is_Integer or (n - least).is_negative:
        # NineToothed's count may be negative here; no window exists.
        count = sympy.Integer(max(int(count), 0)) if count.is_Integer else sympy.S.Zero
    elif (n - least).is_nonnegative is not True:
        requirements.append(sympy.Ge(count, 0))
    live = None
    if not floor_mode and sympy.expand(stride - span).is_positive:
        live = sympy.sympify(CeilDiv(n, stride))
        if count.is_Integer and live.is_Integer:
            live = None if live >= count else live
        elif sympy.expand(count - live) == 0:
            live = None
    return count, live, requirements


def slice_extent(key, n, j, shape):
    """``(size, start, step, conditions)`` of the slice ``key`` over a
    dimension of ``n`` (its ``j``-th in ``shape``), as NineToothed computes
    them: a missing start or stop is the end the step walks from or to, a
    negative int counts from the end (a stop of -1 with a negative step is
    "past the beginning"), nothing is clipped. ``conditions(var)``: the bounds
    element ``start + var * step`` must satisfy where it may fall outside the
    dimension."""
    step = 1 if key.step is None else key.step
    if not isinstance(step, int) or isinstance(step, bool) or step == 0:
        raise MetaOperationError(
            f"slice {key} of dimension {j} of shape {_fmt(shape)}: the step must be a nonzero int, "
            f"got {key.step!r}"
        )
    start = key.start if key.start is not None else (0 if step > 0 else n - 1)
    stop = key.stop if key.stop is not None else (n if step > 0 else -1)
    if isinstance(start, int) and start < 0:
        start += n
    if isinstance(stop, int) and (stop < 0 if step > 0 else stop < -1):
        stop += n
    start, stop = as_expr(start), as_expr(stop)
    if step > 0:
        size = sympy.sympify(CeilDiv(stop - start, step))
    else:
        size = sympy.sympify(CeilDiv(start - stop, -step))
    if size.is_Integer and size < 0:
        size = sympy.S.Zero
    step = sympy.Integer(step)
    low, high = (start, start + (size - 1) * step) if step > 0 else (start + (size - 1) * step, start)

    def conditions(var):
        expr = start + var * step
        found = []
        if sympy.expand(low).is_nonnegative is not True:
            found.append(sympy.Ge(expr, 0))
        if sympy.expand(n - 1 - high).is_nonnegative is not True:
            found.append(sympy.Lt(expr, n))
        return found

    return size, start, step, conditions


def check_inner_extents(name, tensor):
    """Refuse an inner level with no element along some dimension (an empty
    slice or a tile longer than its dimension inside a tile): a program's
    tile is a Triton block, which needs at least one element (NineToothed's
    kernel fails to compile there too). An empty outermost level is fine: no
    program runs."""
    for depth, level in enumerate(tensor.hierarchy.levels[1:], start=1):
        for j, n in enumerate(level.shape):
            if sympy.sympify(n) == 0:
                raise ArrangementError(
                    f"`{name}`: dimension {j} of level {depth} (shape {_fmt(level.shape)}) has no "
                    "element; a tile needs at least one (an empty slice or a floor-mode tile longer "
                    "than its dimension is allowed only in the outermost level, where no program "
                    "then runs)"
                )


def _fmt(shape):
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"
