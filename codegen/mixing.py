"""Operations that mix lanes, emitted so that lanes outside the tensor do not
enter them (``PaddingMixin.mixing``): reductions, scans, ``sort``,
``flip``, ``softmax`` and ``dot``.

Each reads its operand through the factors of its mask along the axes it
mixes (``PaddingMixin.select``: the operation's identity there, unless
proved held already); factors along other axes pass to the result, their
blocks reduced with it.  ``flip`` moves the lanes inside to the front
(``ntsym_flip``); ``sort`` sends the identity-filled lanes to the end, where
they were (lanes inside a tile are a prefix along each axis: the conditions
are upper bounds of index math increasing along the tile).
"""

import ast
import copy
import dataclasses

import sympy

from ntsym_codegen.astutil import argument
from ntsym_codegen.lane_values import bounding
from ntsym_codegen.lanes import Factor, Lanes, combine, masked, same_everywhere, unknown
from ntsym_codegen.printer import conjunction
from ntsym_codegen.lane_tables import OTHER_MIXING, REDUCTIONS, SCANS, literal
from ntsym_codegen.template import expr

_UNKNOWN_AXIS = object()


MIXING = set(REDUCTIONS) | set(SCANS) | OTHER_MIXING


def mix(em, node):
    original = node
    name, node = _function_form(em, node)
    if name not in MIXING or not node.args:
        return None
    call = _mix(em, node, name)
    if call is None:
        return None
    em.lanes.nodes[("result", id(original))] = (original, em.lanes.nodes[("result", id(node))][1])
    return call


# ``tl`` functions that keep each lane's value in its lane, or move lanes
# without combining them (shape changes: the lanes are followed, or left
# unknown and a mixing operation on them refused), or read no lanes.
LANE_PRESERVING = {
    "add", "sub", "mul", "cast", "inline_asm_elementwise", "map_elementwise", "philox", "philox_impl",
    "pair_uniform_to_normal", "uint_to_uniform_float", "rand4x", "randn4x", "randint4x", "swizzle2d", "to_tensor",
    "assume", "expect_zero", "broadcast", "broadcast_to", "cat", "expand_dims", "unsqueeze", "squeeze", "interleave",
    "join", "split", "permute", "trans", "ravel", "reshape", "view", "multiple_of", "max_contiguous", "max_constancy",
    "static_print", "static_assert", "device_print", "device_assert", "debug_barrier", "store", "atomic_add",
    "atomic_and", "atomic_cas", "atomic_load", "atomic_max", "atomic_min", "atomic_or", "atomic_store", "atomic_xchg",
    "atomic_xor", "atomic_poll", "make_block_ptr", "advance", "make_tensor_descriptor", "load_tensor_descriptor",
    "store_tensor_descriptor", "str_to_ty", "aggregate_replace", "libdevice", "math", "extra",
}


# Tile methods (Triton's member functions) that combine lanes and are not read
# through the mask: refused as their ``tl`` forms are (``refuse_unfollowed``).
UNFOLLOWED_METHODS = {"gather"}
# Tile members that move no lane across another: a cast (``to``), the
# transpose ``T`` and ``item`` (their lanes not followed: a later mixing
# operation over them is refused), lane-wise logic.
NOT_MIXING_MEMBERS = {"T", "item", "logical_and", "logical_or", "to"}


def refuse_unfollowed(em, node, name):
    """A ``tl`` function that may combine lanes and is not read through the
    mask here (``gather``, ``dot_scaled``, ``bitonic_merge``, any other):
    refused where an operand may hold lanes outside the tensor, which it
    would take in."""
    from ntsym_codegen.lane_tables import ELEMENTWISE as _ELEMENTWISE, FRESH as _FRESH, FUNCTIONS as _FUNCTIONS

    if name in MIXING or name in LANE_PRESERVING or name in _ELEMENTWISE or name in _FRESH or name in _FUNCTIONS:
        return
    operands = list(node.args) + [k.value for k in node.keywords]
    if name == "gather":
        return _gather(em, node)
    for operand in operands:
        if not em.lanes_of(operand).clean:
            raise em.error(
                f"`tl.{name}` may combine the lanes of its operand `{ast.unparse(operand)}`, which holds lanes "
                "outside the tensor (a tile padded to its block or past the tensor's end) that ntsym does not keep "
                f"out of `{name}`: they would enter its result. Arrange tiles whose block divides the tensor's size, "
                "or compute the operand with an operation ntsym reads through the mask (a reduction, `sort`, "
                "`topk`)", node)


def _gather(em, node):
    """``tl.gather(src, index, axis)``: each lane of the result is the lane of
    ``src`` its index names, so the result's lanes are the index's.  An index
    naming a lane of ``src`` outside the tensor (in its block, past the
    tensor's end) is out of range, as torch's ``gather`` would say: it reads
    what that lane holds (``other`` for a loaded tile), as a gather through
    ``x.source[...]`` reads ``other``; under ``NTSYM_DEBUG=1`` the kernel
    checks, before the statement, that every index of a lane inside names a
    lane of ``src`` inside (``codegen/debug_checks.py``)."""
    from ntsym_codegen import debug_checks

    src, index = argument(node, 0, "src", None), argument(node, 1, "index", None)
    axis = argument(node, 2, "axis", None)
    if src is None or index is None or axis is None or not debug_checks.enabled():
        return
    value = em.expr(src)  # loads the tile it reads, noting its lanes
    lanes = em.lanes_of(src)
    if lanes.clean:
        return
    if not lanes.known:
        raise em.error(
            f"`tl.gather` reads `{ast.unparse(src)}`, whose lanes outside the tensor ntsym does not follow here, "
            "so NTSYM_DEBUG cannot check that its indices stay inside the tensor", node)
    inside = conjunction(copy.deepcopy(f.node) for f in lanes.factors)
    shape = expr("{v}.shape", v=copy.deepcopy(value))
    picked = expr("tl.gather(tl.broadcast_to({inside}, {shape}).to(tl.int8), {index}, {axis}) != 0",
                  inside=inside, shape=shape, index=em.expr(index), axis=em.expr(axis))
    message = (f"tl.gather: an index in `{ast.unparse(index)}` names a lane of `{ast.unparse(src)}` outside the "
               "tensor (past its end, in the padding of its block)")
    em.check_index(picked, index, message)


def _function_form(em, node):
    """(the operation's name, the call as ``tl.<name>(operand, ...)``):
    ``v.sum(1)`` is ``tl.sum(v, 1)``."""
    name = em._tl_function(node.func)
    if name is not None:
        return name, node
    func = node.func
    if not (isinstance(func, ast.Attribute) and func.attr in MIXING) or em.alias(func.value) is not None:
        return None, node
    call = ast.Call(func=ast.Attribute(value=ast.Name(id="tl", ctx=ast.Load()), attr=func.attr, ctx=ast.Load()),
                    args=[func.value] + list(node.args), keywords=list(node.keywords))
    return func.attr, ast.copy_location(call, node)


def _mix(em, node, name):
    operand = em.expr(node.args[0])  # loads the tiles it reads, noting their lanes
    lanes = em.lanes_of(node.args[0])
    if name == "dot":
        return _dot(em, node, operand, lanes)
    if name == "histogram":
        return _histogram(em, node, operand, lanes)
    if not lanes.clean:
        em.require_known(lanes, node, name)
    if name == "reduce" and _split(lanes, argument(node, 1, "axis", ast.Constant(None)))[0]:
        return _user_reduction(em, node, operand, lanes)
    if name in REDUCTIONS:
        operand, result = _reduction(em, node, name, operand, lanes)
    elif name in SCANS:
        axis = argument(node, 1, "axis", ast.Constant(0))
        mixed, _ = _split(lanes, axis)
        operand = em.select(operand, lanes, mixed, SCANS[name], node, name)
        result = masked(lanes.factors, None, lanes.rank)
    elif name in ("sort", "topk"):
        return _sort(em, node, name, operand, lanes)
    elif name == "flip":
        operand = _flip(em, node, operand, lanes)
        return _record(em, node, operand, lanes)
    else:  # softmax
        mixed, _ = _split(lanes, argument(node, 1, "dim", ast.Constant(None)))
        operand = em.select(operand, lanes, mixed, -sympy.oo, node, name)
        result = masked(lanes.factors, None, lanes.rank)
    call = ast.Call(func=em.module_function(name), args=[operand] + [em.expr(a) for a in node.args[1:]],
                    keywords=[em.keyword(k) for k in node.keywords])
    if name in ("argmax", "argmin", "max", "min") and not lanes.clean:
        call = _last_inside(em, node, name, call, lanes)
    em.lanes.nodes[("result", id(node))] = (node, result)
    return call


def _last_inside(em, node, name, call, lanes):
    """An index that breaks ties to the right (``tie_break_left=False``) over
    lanes outside, which hold the identity and tie with elements equal to it:
    the last lane inside where it points past them (the lanes inside come
    first in each row); refused where they do not."""
    axis_node = argument(node, 1, "axis", ast.Constant(None))
    mixed, _ = _split(lanes, axis_node)
    indices = argument(node, 2, "return_indices", ast.Constant(False)) if name in ("max", "min") else None
    if (indices is None or not _is_constant(indices, False)) and any(_reordered(f) for f in mixed):
        raise em.error(f"`{name}` over lanes outside the tensor that `split`, `join` or `interleave` moved: "
                       "they may lie before the elements of a row and tie with them (they hold the identity); "
                       "take the index before moving the lanes", node)
    if name in ("max", "min"):
        right = argument(node, 3, "return_indices_tie_break_left", ast.Constant(True))
        if mixed and not (_is_constant(right, True) or _is_constant(indices, False)):
            raise em.error(f"`{name}(..., return_indices_tie_break_left=False)` over lanes outside the tensor is "
                           "not supported: a lane outside could tie; use `argmax`/`argmin` for the index", node)
        return call
    right = argument(node, 2, "tie_break_left", ast.Constant(True))
    if not mixed or _is_constant(right, True):
        return call
    axis = _axis(axis_node, lanes.rank)
    keep = argument(node, 3, "keep_dims", ast.Constant(False))
    if not _is_constant(right, False) or axis is None or axis is _UNKNOWN_AXIS or lanes.rank is None \
            or not isinstance(keep, ast.Constant) or any(not _prefix(f) for f in mixed):
        raise em.error(f"`{name}` with ties broken to the right over lanes outside the tensor needs a constant "
                       "`tie_break_left`, a constant axis, and the lanes inside first in each row", node)
    from ntsym_codegen.reshaping import named

    # The mask broadcast to the operand's shape (it may have fewer axes).
    operand = call.args[0] if isinstance(call.args[0], ast.Name) else named(em, call.args[0])
    call.args[0] = operand
    count = expr("tl.sum(tl.where({m}, 1, 0) + tl.zeros({x}.shape, tl.int32), axis={a}, keep_dims={k})",
                 m=conjunction(copy.deepcopy(f.node) for f in mixed), x=copy.deepcopy(operand),
                 a=ast.Constant(axis + lanes.rank), k=ast.Constant(bool(keep.value)))
    return expr("tl.minimum({call}, tl.maximum({count} - 1, 0))", call=call, count=count)


def _is_constant(node, value):
    return isinstance(node, ast.Constant) and node.value is value


def _sort(em, node, name, operand, lanes):
    """``sort`` and ``topk``: the lanes outside hold the identity of the
    direction (the end for ``sort``, where they were; never among the ``k``
    largest of ``topk`` while the row holds ``k`` elements)."""
    default = ast.Constant(name == "topk")  # topk's descending is True, sort's False
    descending = argument(node, 2 if name == "sort" else 3, "descending", default)
    if not isinstance(descending, ast.Constant):
        descending = em.expr(descending)  # a global constant becomes a literal
    if not isinstance(descending, ast.Constant):
        descending = ast.Constant(True) if lanes.clean else None
    if descending is None:
        raise em.error(f"`{name}` of a tile with lanes outside the tensor needs a constant `descending`", node)
    dim = argument(node, 1 if name == "sort" else 2, "dim", ast.Constant(-1))
    if isinstance(dim, ast.Constant) and dim.value is None:
        dim = ast.Constant(-1)  # the last axis
    mixed, passing = _split(lanes, dim)
    if name == "topk" and mixed:
        from ntsym_codegen.topk_rows import require_rows_hold_k

        require_rows_hold_k(em, node, mixed)
    identity = -sympy.oo if descending.value else sympy.nan  # NaN: after a row's NaN (codegen/sorting.py)
    operand = em.select(operand, lanes, mixed, identity, node, name)
    if lanes.clean:
        result = lanes
    elif name == "sort":
        result = _sorted_lanes(lanes, mixed, _axis(dim, lanes.rank))
    elif any(f.axes is None or f.mixes({_axis(dim, lanes.rank)}) for f in passing) or \
            any(f.axes - {_axis(dim, lanes.rank)} for f in mixed if f.axes is not None):
        result = unknown(lanes.rank)  # a factor along the axis and others: not followed
    else:  # the k values of a row lie inside where the row does
        result = masked(passing, None, lanes.rank)
    call = ast.Call(func=em.module_function(name), args=[operand] + [em.expr(a) for a in node.args[1:]],
                    keywords=[em.keyword(k) for k in node.keywords])
    return _record(em, node, call, result)


def _sorted_lanes(lanes, mixed, axis):
    """The lanes of ``sort``'s result: those outside, holding the identity,
    go to the end of the row.  A factor along the axis that keeps a prefix
    of the row inside (``4 * p + t < n``) stays; other masks (a reshaped
    mask, inside at scattered lanes) are sorted alike, their inside lanes
    first: ``tl.sort(mask.to(tl.int32), d, descending=True) > 0``."""
    if all(_prefix(f) for f in mixed):
        return masked(lanes.factors, None, lanes.rank)
    if axis is None or axis is _UNKNOWN_AXIS or any(f.axes is None or f.rank is None for f in mixed):
        return unknown(lanes.rank)
    rank = max(f.rank for f in mixed)
    node = expr("tl.sort({m}.to(tl.int32), {d}, descending=True) > 0",
                m=conjunction(copy.deepcopy(f.node) for f in mixed), d=ast.Constant(rank + axis))
    factor = Factor.of(node, set().union(*(f.axes for f in mixed)), rank)
    return masked([f for f in lanes.factors if f not in mixed] + [factor], None, lanes.rank)


def _reordered(factor):
    """Whether ``factor`` is a mask moved by ``split``, ``join`` or
    ``interleave`` (``reshaping._parts``): its lanes inside need not come
    first in a row, as a reshape's or a transpose's of a tile's do."""
    return any(isinstance(n, ast.Attribute) and n.attr in ("split", "join", "interleave")
               and isinstance(n.value, ast.Name) and n.value.id == "tl" for n in ast.walk(factor.node))


def _prefix(factor):
    """Whether ``factor`` (SymPy ``cond``) is ``e < n`` or ``e <= n`` with
    ``e`` a sum of non-negative multiples of its symbols: along each lane
    axis, the lanes inside come first."""
    cond = factor.cond
    if not isinstance(cond, (sympy.StrictLessThan, sympy.LessThan)):
        return False
    lhs = sympy.expand(cond.lhs)
    if not lhs.free_symbols or not lhs.is_polynomial(*lhs.free_symbols):
        return False
    poly = sympy.Poly(lhs, *sorted(lhs.free_symbols, key=str))
    return poly.total_degree() <= 1 and all(c.is_number and c >= 0 for c in poly.coeffs())


def _histogram(em, node, operand, lanes):
    """``histogram(x, bins)`` counts the lanes inside only: the mask of the
    lanes inside is Triton's ``mask=`` (with the application's own, if any)."""
    if not lanes.clean:
        em.require_known(lanes, node, "histogram")
    keywords = [em.keyword(k) for k in node.keywords if k.arg != "mask"]
    given = argument(node, 2, "mask", None)
    masks = [copy.deepcopy(f.node) for f in lanes.factors] + ([em.expr(given)] if given is not None else [])
    if masks:
        keywords.append(ast.keyword(arg="mask", value=conjunction(masks)))
    call = ast.Call(func=em.module_function("histogram"), args=[operand] + [em.expr(a) for a in node.args[1:2]],
                    keywords=keywords)
    return _record(em, node, call, Lanes(None, (), 1))


def _record(em, node, call, lanes):
    em.lanes.nodes[("result", id(node))] = (node, lanes)
    return call


def _axis(node, rank):
    """The axis an ``axis`` argument names, counted from the last (-1);
    None for every axis (``axis=None``); ``_UNKNOWN_AXIS`` where not known."""
    if isinstance(node, ast.Constant) and node.value is None:
        return None
    value = literal(node)
    if value is None:
        return _UNKNOWN_AXIS
    if value < 0:
        return value
    return _UNKNOWN_AXIS if rank is None else value - rank


def _split(lanes, axis_node):
    """The factors an operation along ``axis_node`` mixes, and the others."""
    factors = lanes.factors or ()
    axis = _axis(axis_node, lanes.rank)
    axes = None if axis is None or axis is _UNKNOWN_AXIS else {axis}
    mixed = [f for f in factors if f.mixes(axes)]
    # A factor of unknown axes is read
    # through and stays: the result may hold such lanes too.
    return mixed, [f for f in factors if f not in mixed or f.axes is None]


def _user_reduction(em, node, operand, lanes):
    """``reduce(x, axis, combine)`` over lanes outside the tensor: the
    combine has no identity ntsym knows, so pairs (value, inside) are
    reduced and lanes outside never reach it (``codegen/functions.py``)."""
    from ntsym_codegen.functions import masked_reduce
    from ntsym_codegen.reshaping import named

    axis_node = argument(node, 1, "axis", ast.Constant(None))
    combine_node = argument(node, 2, "combine_fn", None)
    mixed, _ = _split(lanes, axis_node)
    if isinstance(node.args[0], ast.Tuple) or combine_node is None:
        em.select(operand, lanes, mixed, None, node, "reduce")  # refused, with the reason
    combine = em.expr(combine_node)
    if not isinstance(combine, ast.Name):
        raise em.error("`reduce` over lanes outside the tensor needs its combine as a function of the "
                       "application (`@triton.jit def combine(a, b): ...`)", combine_node)
    _, result = _reduction(em, node, "reduce", operand, lanes, select=False)
    keep = argument(node, 3, "keep_dims", ast.Constant(False))
    value = operand if isinstance(operand, ast.Name) else named(em, operand)
    call = masked_reduce(em, value, conjunction(copy.deepcopy(f.node) for f in mixed), em.expr(axis_node),
                         combine, em.expr(keep))
    em.lanes.nodes[("result", id(node))] = (node, result)
    return call


def _reduction(em, node, name, operand, lanes, select=True):
    identity, keep_position = REDUCTIONS[name]
    axis_node = argument(node, 1, "axis", ast.Constant(None))
    if name == "reduce":
        identity = None
    mixed, passing = _split(lanes, axis_node)
    if select:
        operand = em.select(operand, lanes, mixed, identity, node, name)
    axis = _axis(axis_node, lanes.rank)
    keep = argument(node, keep_position, "keep_dims", ast.Constant(False))
    indices = argument(node, 2, "return_indices", ast.Constant(False)) if name in ("max", "min") else None
    source = em.value_key(node.args[0]) if name in ("max", "min") and mixed and node.args else None
    bound = (name, frozenset((f.key, source) for f in mixed)) if source is not None else None
    if axis is None:
        if passing:
            return operand, unknown()
        return operand, Lanes(bounding(*bound), (), 0, bound=bound) if bound else same_everywhere()
    if axis is _UNKNOWN_AXIS or not isinstance(keep, ast.Constant) or not (
            indices is None or isinstance(indices, ast.Constant) and not indices.value):
        return operand, unknown() if lanes.factors else Lanes(None, (), None)
    # A factor along the axis and others (a flattened index, a reshaped
    # mask) may exclude every lane of a row: the row's result, the
    # identity, lies outside too.  It stays, reduced: a row lies inside
    # where one of its lanes does.
    across = [f for f in mixed if f.axes is not None and f.axes - {axis}]
    if keep.value:
        factors, rank = tuple(passing) + tuple(_kept(f, axis) for f in across), lanes.rank
    else:
        factors = tuple(_reduced(f, axis) for f in passing) + tuple(_reduced(f, axis, across=True) for f in across)
        rank = None if lanes.rank is None else lanes.rank - 1
    # Lanes another factor excludes, all holding v along the axis: max and
    # min give v, a sum of zeros 0.
    outside = [lanes.at(f) if name in ("max", "min") else
               sympy.S.Zero if name in ("sum", "xor_sum") and lanes.at(f) == 0 else None for f in passing]
    outside += [identity if name in ("sum", "xor_sum", "max", "min") else None for _ in across]
    return operand, dataclasses.replace(masked(factors, outside, rank), bound=bound)


def _kept(factor, axis):
    """A factor along ``axis`` and others, reduced along ``axis`` with the
    axis kept (``keep_dims``)."""
    node = expr("tl.sum({f}.to(tl.int32), axis={axis}, keep_dims=True) > 0", f=factor.node, axis=axis + factor.rank)
    return Factor.of(node, factor.axes - {axis}, factor.rank, None, factor.moved({a: a for a in factor.axes - {axis}}),
                     factor.extent_only)


def _reduced(factor, axis, across=False):
    """A factor that does not vary along ``axis`` (``across``: that does,
    and others too), with that axis removed."""
    if factor.axes is None:
        return factor
    moved = {a: a + 1 if a < axis else a for a in factor.axes - {axis}}
    axes = set(moved.values())
    if not factor.rank or factor.rank < -axis:
        return Factor.of(factor.node, axes, factor.rank, factor.cond, factor.moved(moved), factor.extent_only)
    node = expr("tl.sum({f}.to(tl.int32), axis={axis}) > 0", f=factor.node, axis=axis + factor.rank)
    return Factor.of(node, axes, factor.rank - 1, None if across else factor.cond, factor.moved(moved),
                     factor.extent_only)


def _flip(em, node, operand, lanes):
    """``flip`` of the lanes inside each row: ``ntsym_flip`` where lanes
    outside lie along the flipped axis."""
    mixed, _ = _split(lanes, argument(node, 1, "dim", ast.Constant(-1)))
    call = ast.Call(func=em.module_function("flip"), args=[operand] + [em.expr(a) for a in node.args[1:]],
                    keywords=[em.keyword(k) for k in node.keywords])
    if not mixed:
        return call
    axis = _axis(argument(node, 1, "dim", ast.Constant(-1)), lanes.rank)
    if axis is None or axis is _UNKNOWN_AXIS or lanes.rank is None:
        raise em.error("`flip` of a tile with lanes outside the tensor needs a constant `dim` of a tile "
                       "of known rank", node)
    if not all(_prefix(f) for f in mixed):
        raise em.error("`flip` of a tile whose lanes inside the tensor are not the first of each row (a reshaped "
                       "tile's) is not supported: they would be flipped with the lanes outside; flip before "
                       "reshaping", node)
    em.records.helpers.add("ntsym_flip")
    mask = conjunction(copy.deepcopy(f.node) for f in mixed)
    return expr("ntsym_flip({value}, {mask}, {dim})", value=operand, mask=mask, dim=ast.Constant(axis + lanes.rank))


def _finite(value):
    """Whether ``value`` is a finite number: data may be infinite, and a row
    of zeros times an infinite element is NaN (``lanes.Lanes``)."""
    return isinstance(value, sympy.Expr) and value.is_number and bool(value.is_finite)


def _dot(em, node, operand, a):
    """``dot(a, b)``: lanes outside along the contracted axis are zero in
    both operands (proved, or selected); the others pass to the result."""
    if len(node.args) < 2:
        return None
    other = em.expr(node.args[1])
    b = em.lanes_of(node.args[1])
    for lanes in (a, b):
        if not lanes.clean:
            em.require_known(lanes, node, "dot")
    mixed_a, passing_a = _split(a, ast.Constant(-1))
    mixed_b, passing_b = _split(b, ast.Constant(-2))
    operand = em.select(operand, a, mixed_a, sympy.S.Zero, node, "dot")
    other = em.select(other, b, mixed_b, sympy.S.Zero, node, "dot")
    rest = [em.expr(x) for x in node.args[2:]]
    factors = tuple(passing_a) + tuple(f for f in passing_b if f.key not in {g.key for g in passing_a})
    # A row (column) of zeros times a finite number is zero; times data,
    # which may be infinite, it is not known (``lanes.Lanes``).
    outside = [sympy.S.Zero if a.at(f) == 0 and _finite(b.at(f)) or b.at(f) == 0 and _finite(a.at(f)) else None
               for f in factors]
    accumulator = node.args[2] if len(node.args) > 2 else next((k.value for k in node.keywords if k.arg == "acc"), None)
    result = masked(factors, outside, a.rank)
    if accumulator is not None:
        result = combine(None, [result, em.lanes_of(accumulator)])
    call = ast.Call(func=em.module_function("dot"), args=[operand, other] + rest, keywords=[em.keyword(k) for k in node.keywords])
    return _record(em, node, call, result if factors or accumulator is not None else Lanes(None, (), a.rank))
