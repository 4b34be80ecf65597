"""Lanes outside the arranged tensor never reach an operation that mixes
lanes: safe by default.

A tile's block may hold lanes outside the tensor the user arranged (a row of
5 in a block of 8, a window past the end, the last chunk of a loop over
blocks); they are loaded with the tensor's ``other`` (0 unless declared).
Every value of the application carries ``Lanes`` (``codegen/lanes.py``):
which lanes lie inside, as factors of a mask, and what the lanes outside
hold where SymPy knows it.  An operation that mixes lanes along some axes --
a reduction, a scan, ``sort``, ``flip``, ``dot``, a value a loop carries
from one tile to the next -- reads its operand through
``tl.where(mask, operand, identity)`` for the factors along those axes,
unless SymPy proves the lanes outside already hold the identity
(``other=-inf`` into ``max``, ``exp(-inf) = 0`` into ``sum``, zero-padded
tiles into ``dot``).  Proofs only remove selects: a form not followed costs a
``where``; a shape change not followed leaves the mask unknown, and a mixing
operation on such a value is refused.  Padding positions of ``pad()`` are
elements of the arranged tensor: they read ``other`` and are mixed in.
"""

import ast
import copy
from dataclasses import dataclass, field

import sympy

from ntsym_codegen.accumulation import accumulation, scaled_parts
from ntsym_codegen.astutil import argument, constant_node
from ntsym_codegen.lane_tables import (COMPARE as _COMPARE, ELEMENTWISE as _ELEMENTWISE, FILLS as _FILLS,
                                       FRESH as _FRESH, FUNCTIONS as _FUNCTIONS, NAN_PASSING as _NAN_PASSING,
                                       OPERATORS as _OPERATORS, OTHER_MIXING, REDUCTIONS, SCANS, cast_kind, literal)
from ntsym_codegen.fresh_lanes import broadcast_call_lanes, fresh_lanes
from ntsym_codegen.lane_values import OPERANDS, equals
from ntsym_codegen.loops import changing as loop_changing
from ntsym_codegen.lanes import (CLEAN, UndecidedUnion, Factor, Lanes, absorbed, carried_into, cast, combine, is_stale,
                                 join, masked, meeting, meets, same_everywhere, stale_refusal, unknown, widen)
from ntsym_codegen.printer import PrintError, conjunction
from ntsym_codegen.refs import TileRef
from ntsym_codegen.template import expr


@dataclass
class LaneState:
    """Written by ``AccessMixin`` (tiles, at their load) and the visitor's
    assignments (locals); read by ``PaddingMixin.mixing``."""

    tiles: dict = field(default_factory=dict)  # tensor -> Lanes of its loaded whole tile
    nodes: dict = field(default_factory=dict)  # id of the application's node -> (node, Lanes) of its load
    locals: dict = field(default_factory=dict)  # name -> Lanes
    keyed: list = field(default_factory=list)  # Lanes named by a value key (``value_key``): kept alive


DESCRIPTOR = object()  # lanes loaded through a tensor descriptor: zeros past the tensor


class PaddingMixin:
    """For ``KernelEmitter``; uses ``resolve``, ``alias``, ``expr``, ``printer``."""

    # -- what loads and assignments hold ---------------------------------------

    def note_tile(self, ref, mask, node, address=None):
        """The tile ``ref`` was loaded, for the application's ``node``, with
        ``mask`` (``DESCRIPTOR``: through a tensor descriptor, whose lanes past
        the tensor read as zeros) and ``address`` (its ``TileAddress``).  A
        descriptor reads zeros exactly where a pointer load's conditions fail
        (``DescriptorAccess`` takes only bounds of the source and ``other`` 0)."""
        other = ref.param.other
        try:
            value = sympy.Integer(0) if other is None or mask is DESCRIPTOR else sympy.sympify(other)
        except (sympy.SympifyError, TypeError):
            value = None
        rank = len(ref.dims)
        factors = None if address is None else self._address_factors(address, rank)
        lanes = masked(factors, value, rank)
        if address is not None and lanes.known:
            lanes = Lanes(lanes.value, lanes.factors, lanes.rank, lanes.outside, _blocks(address, rank))
        self.lanes.nodes[id(node)] = (node, lanes)  # the node kept: its id is not reused
        if ref.depth == 1 and not ref.fixed:  # the whole tile, loaded once and named
            self.lanes.tiles[ref.param.name] = lanes

    def _address_factors(self, address, rank):
        printer = self.printer(address.names, address.ranges)
        factors = []
        for c in address.lanes:
            axes = {pos - rank for pos, v in enumerate(address.vars) if v in c.free_symbols}
            try:
                node = ast.Constant(False) if c is sympy.false else printer(c)
            except PrintError:
                return None
            factors.append(Factor.of(node, axes, rank if axes else 0, c, self._extents(address, rank, axes, printer)))
        return tuple(factors)

    @staticmethod
    def _extents(address, rank, axes, printer):
        """The block's extent along each of ``axes`` (SymPy, printed), or None."""
        blocks = _blocks(address, rank, axes)
        try:
            return None if blocks is None else [(axis, extent, printer(extent)) for axis, extent in blocks]
        except PrintError:
            return None

    def lanes_of(self, node):
        """The ``Lanes`` of the application's expression ``node``."""
        entry = self.lanes.nodes.get(id(node))
        if entry is not None and entry[0] is node:  # a tile this node loaded (``x``, ``x[k]``)
            return entry[1]
        if isinstance(node, ast.Name):
            return self._name_lanes(node)
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool):
                return Lanes(sympy.true if node.value else sympy.false, (), 0)
            if isinstance(node.value, (int, float)):
                return Lanes(sympy.sympify(node.value), (), 0)
            return Lanes(None, (), 0)
        if isinstance(node, ast.UnaryOp):
            fn = {ast.USub: lambda v: -v, ast.UAdd: lambda v: v}.get(type(node.op))
            return combine(fn, [self.lanes_of(node.operand)])
        if isinstance(node, ast.BinOp):
            operands = [self.lanes_of(node.left), self.lanes_of(node.right)]
            token = OPERANDS.set((self.value_key, (node.left, node.right)))  # keyed only where asked
            try:
                return combine(_OPERATORS.get(type(node.op)), operands)
            finally:
                OPERANDS.reset(token)
        if isinstance(node, ast.Compare):
            fn = _COMPARE.get(type(node.ops[0])) if len(node.ops) == 1 else None
            return combine(fn, [self.lanes_of(n) for n in [node.left] + node.comparators])
        if isinstance(node, ast.BoolOp):
            return combine(None, [self.lanes_of(v) for v in node.values])
        if isinstance(node, ast.IfExp):
            return combine(None, [self.lanes_of(n) for n in (node.test, node.body, node.orelse)])
        if isinstance(node, ast.Subscript):
            return self._subscript_lanes(node)
        if isinstance(node, ast.Attribute):
            if node.attr in ("shape", "dtype", "ndim", "source") or self.alias(node.value) in ("tl", "libdevice"):
                return Lanes(None, (), 0)
            if node.attr == "T" and self.lanes_of(node.value).rank == 2:  # ``x.T``: ``trans(x)`` (Triton's, of 2 axes)
                return self._permuted_lanes(node.value, [], ast.Call(func=node, args=[], keywords=[]))
            return Lanes(None, (), None) if self.lanes_of(node.value).clean else unknown()
        if isinstance(node, ast.Call):
            return self._call_lanes(node)
        if isinstance(node, (ast.Tuple, ast.List)):
            parts = [self.lanes_of(e) for e in node.elts]
            return CLEAN if all(p.clean for p in parts) else unknown()
        return unknown()

    def value_key(self, node):
        """A key naming the value of the expression ``node`` here: its text with
        each name read as the lanes it holds now (a name assigned again is
        another value), None where it reads a name ntsym does not follow."""
        names = {}
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                if n.id in self.lanes.locals or isinstance(self.resolve(n), TileRef):
                    held = self._name_lanes(n)
                    self.lanes.keyed.append(held)  # kept alive: its id stays its own
                    names[n.id] = id(held)
                else:  # a parameter or a constant: one value
                    names[n.id] = n.id
        return ast.dump(node, annotate_fields=False) + repr(sorted(names.items()))

    def _name_lanes(self, node):
        if node.id in self.lanes.locals:
            held = self.lanes.locals[node.id]
            return held.met if held.met is not None and meets() else held
        ref = self.resolve(node)
        if isinstance(ref, TileRef):
            return self.lanes.tiles.get(ref.param.name, unknown())
        if node.id in self.names.locals:
            return unknown()
        return same_everywhere(scalar=True)  # a scalar parameter or constant

    def _new_axes_lanes(self, operand, axis_node):
        """``expand_dims(v, axis)`` (``unsqueeze``): ``v`` with new axes of
        one lane at ``axis``, as ``v[:, None]`` is."""
        base = self.lanes_of(operand)
        axes = [literal(e) for e in axis_node.elts] if isinstance(axis_node, (ast.Tuple, ast.List)) \
            else [literal(axis_node)]
        if base.rank is None or any(a is None for a in axes):
            return base if base.clean else unknown()
        rank = base.rank + len(axes)
        new = {a + rank if a < 0 else a for a in axes}
        if len(new) != len(axes) or not all(0 <= a < rank for a in new):
            return unknown()
        keys = [ast.Constant(None) if i in new else ast.Slice() for i in range(rank)]
        return self._subscript_lanes(ast.Subscript(value=operand, slice=ast.Tuple(elts=keys, ctx=ast.Load()),
                                                   ctx=ast.Load()))

    def _subscript_lanes(self, node):
        """``v[:, None]`` and the like: the factors' axes and blocks follow."""
        from ntsym_codegen.reshaping import parts_of

        parts = parts_of(self, node.value)  # ``tl.split(x)[0]``
        if parts is not None and isinstance(node.slice, ast.Constant) and node.slice.value in (0, 1, -1, -2):
            return parts[node.slice.value]
        base = self.lanes_of(node.value)
        keys = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if base.clean:
            return Lanes(base.value, (), None if base.rank is None else base.rank + sum(
                isinstance(k, ast.Constant) and k.value is None for k in keys), bound=base.bound)
        if not base.known or base.rank is None or not all(
                isinstance(k, ast.Slice) and k.lower is k.upper is k.step is None
                or isinstance(k, ast.Constant) and k.value is None for k in keys):
            return unknown()
        if sum(isinstance(k, ast.Slice) for k in keys) != base.rank:
            return unknown()
        rank = len(keys)
        old = [i for i, k in enumerate(keys) if isinstance(k, ast.Slice)]  # new position of each old axis
        factors = []
        for f in base.factors:
            if not f.axes:
                factors.append(f)
                continue
            if f.axes is None or f.rank != base.rank:
                return unknown(rank)
            moved = {a: old[a + base.rank] - rank for a in f.axes}
            sub = ast.Subscript(value=copy.deepcopy(f.node), slice=copy.deepcopy(node.slice), ctx=ast.Load())
            factors.append(Factor.of(sub, set(moved.values()), rank, f.cond, f.moved(moved), f.extent_only))
        return Lanes(base.value, tuple(factors), rank, base.outside, bound=base.bound)

    def note_result(self, node, lanes):
        """The value of the application's call ``node`` has ``lanes`` (an
        inlined function's result, a mixing operation's)."""
        self.lanes.nodes[("result", id(node))] = (node, lanes if lanes is not None else unknown())

    def _call_lanes(self, node):
        func = node.func
        entry = self.lanes.nodes.get(("result", id(node)))
        if entry is not None and entry[0] is node:
            returned = self.lanes.nodes.get(("returned", id(node)))  # read again where lanes meet
            return self.lanes_of(returned[1]) if meets() and returned is not None and returned[0] is node else entry[1]
        if isinstance(func, ast.Attribute) and func.attr == "to" and self._tl_function(func) is None:
            return cast(self.lanes_of(func.value), cast_kind(node, 0))
        name = self._tl_function(func)
        if name == "cast" and node.args:
            return cast(self.lanes_of(node.args[0]), cast_kind(node, 1))
        if isinstance(func, ast.Name) and func.id in ("float", "int") and len(node.args) == 1:
            arg = node.args[0]
            if isinstance(arg, ast.Constant):
                try:
                    return Lanes(sympy.sympify(float(arg.value) if func.id == "float" else int(arg.value)), (), 0)
                except (TypeError, ValueError, sympy.SympifyError):
                    return Lanes(None, (), 0)
            return Lanes(None, (), 0) if self.lanes_of(arg).clean else unknown()
        if isinstance(func, ast.Attribute) and func.attr == "offsets":
            ref = self.resolve(func.value)
            if isinstance(ref, TileRef):
                return Lanes(None, (), _offsets_rank(ref, node))
        if name is None and isinstance(func, ast.Attribute) and self.alias(func.value) == "libdevice":
            return combine(None, [self.lanes_of(a) for a in node.args])
        method = isinstance(func, ast.Attribute) and self.alias(func.value) is None
        if name in REDUCTIONS or name in SCANS or name in OTHER_MIXING or (
                method and func.attr in set(REDUCTIONS) | set(SCANS) | OTHER_MIXING):
            entry = self.lanes.nodes.get(("result", id(node)))
            if entry is not None and entry[0] is node:
                return entry[1]
            # Computed without being emitted as such (the end of a tile's offsets).
            operands = list(node.args) + ([func.value] if method else [])
            return Lanes(None, (), None) if all(self.lanes_of(a).clean for a in operands) else unknown()
        if name in _FRESH:
            return fresh_lanes(self, name, node, self._fresh_rank(name, node))
        if name in ("trans", "permute"):
            return self._permuted_lanes(node.args[0] if node.args else None, node.args[1:], node)
        if method and func.attr in ("trans", "permute"):  # ``x.trans()``, ``x.permute(1, 0)``
            return self._permuted_lanes(func.value, node.args, node)
        if name in ("expand_dims", "unsqueeze") and len(node.args) == 2 and not node.keywords:
            return self._new_axes_lanes(node.args[0], node.args[1])
        if name == "where" and len(node.args) == 3 and not node.keywords:
            return self._where_lanes(node)
        if name == "gather" or (method and func.attr == "gather"):  # each lane is the lane its index names
            index = argument(node, 1 if name == "gather" else 0, "index")
            lanes = self.lanes_of(index) if index is not None else unknown()
            return masked(lanes.factors, None, lanes.rank) if lanes.known else lanes
        if name == "broadcast_to" or (method and func.attr == "broadcast_to"):
            lanes = broadcast_call_lanes(self, node, method and name != "broadcast_to")
            if lanes is not None:
                return lanes
        fn = _FUNCTIONS.get(name) if not node.keywords else None  # propagate_nan=NONE: not SymPy's Max
        if fn is not None or name in _ELEMENTWISE or name in _FUNCTIONS:
            return combine(fn, [self.lanes_of(a) for a in node.args])
        lanes = [self.lanes_of(a) for a in node.args] + [self.lanes_of(k.value) for k in node.keywords]
        if method:  # a method of a value: its lanes too
            lanes.append(self.lanes_of(func.value))
        return CLEAN if all(l.clean for l in lanes) else unknown()

    def _where_lanes(self, node):
        """``where(c, a, b)``: on the lanes a factor excludes, ``b`` where
        ``c`` is that factor's condition (``where(key < n, s, -inf)``, the
        tile's own offsets against its extent), what both sides hold where
        they agree, else what ``c`` selects."""
        c, a, b = (self.lanes_of(n) for n in node.args)
        result = combine(_FUNCTIONS["where"], [c, a, b])
        if not result.known or not result.factors:
            return result
        conditions = [(c, self.index_placement(n)) for n in _conjuncts(node.args[0])
                      for c in [self._condition(n)] if c is not None]
        outside = []
        for f, v in zip(result.factors, result.outside):
            if f.cond is not None and any(_same_condition(c, f.cond) and _placed_as(placement, f)
                                          for c, placement in conditions):
                v = b.at(f)
            elif v is None:
                x, y = a.at(f), b.at(f)
                v = x if x is not None and x == y else None
            outside.append(v)
        return Lanes(result.value, result.factors, result.rank, tuple(outside))

    def _condition(self, node):
        """A comparison of index math as SymPy, or None."""
        comparison = self.index_comparison(node)
        if comparison is None:
            return None
        relation, left, right = comparison
        subs = self.records.size_subs
        return relation(left.xreplace(subs), right.xreplace(subs), evaluate=False)

    def _fresh_rank(self, name, node):
        if name == "arange":
            return 1
        shape = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "shape"), None)
        if isinstance(shape, (ast.Tuple, ast.List)):
            return len(shape.elts)
        if isinstance(shape, ast.Attribute) and shape.attr == "shape":
            ref = self.resolve(shape.value)  # ``x.shape``, ``x.dtype.shape``: the tile's
            return len(self.ref_shape(ref)) if isinstance(ref, TileRef) else self.lanes_of(shape.value).rank
        return None

    def _permuted_lanes(self, operand, dim_nodes, node):
        base = self.lanes_of(operand) if operand is not None else unknown()
        if base.clean:
            return base
        dims = [literal(a) for a in dim_nodes]
        if len(dims) == 1 and isinstance(dim_nodes[0], (ast.Tuple, ast.List)):
            dims = [literal(e) for e in dim_nodes[0].elts]
        if not dims and base.rank is not None and base.rank >= 2:  # ``trans(x)``: the last two axes swapped
            dims = list(range(base.rank - 2)) + [base.rank - 1, base.rank - 2]
        if not base.known or base.rank is None or sorted(dims) != list(range(base.rank)) or node.keywords:
            return unknown(base.rank)
        rank = base.rank
        factors = []
        for f in base.factors:
            if not f.axes:
                factors.append(f)
                continue
            if f.axes is None or f.rank != rank:
                return unknown(rank)
            moved = {a: dims.index(a + rank) - rank for a in f.axes}
            factors.append(Factor.of(expr("tl.permute({f}, {dims})", f=copy.deepcopy(f.node), dims=tuple(dims)),
                                     set(moved.values()), rank, f.cond, f.moved(moved), f.extent_only))
        return Lanes(base.value, tuple(factors), rank, base.outside, bound=base.bound)

    def module_function(self, name):
        """``tl.<name>`` in the generated module."""
        return ast.Attribute(value=self.module_name("tl"), attr=name, ctx=ast.Load())

    def _tl_function(self, func):
        if isinstance(func, ast.Attribute) and self.alias(func.value) == "tl":
            return func.attr
        return None

    # -- operations that mix lanes ---------------------------------------------

    def mixing(self, node):
        """``tl.<op>(operand, ...)`` for an op that mixes lanes, emitted so
        that lanes outside the tensor do not enter it; None for other calls."""
        from ntsym_codegen.mixing import mix

        return mix(self, node)

    def select(self, operand, lanes, factors, identity, node, what):
        """``operand`` with the lanes that ``factors`` exclude set to
        ``identity`` (None where not known: refused)."""
        if not factors:
            return operand
        nan_ok = what in _NAN_PASSING
        if identity is not None and all(equals(lanes.at(f), identity, f.key, nan_ok) for f in factors):
            return operand
        if identity is None:
            raise self.error(
                f"`{what}` has no identity ntsym knows, and its operand `{ast.unparse(node.args[0])}` holds lanes "
                "outside the tensor (a tile padded to its block or past the tensor's end); give the tile a "
                "`Tensor(..., other=...)` that is the operation's identity, or use `ntl.where` with the tile's "
                "offsets to set those lanes", node)
        factors = [f for f in factors if not (is_stale(f) and equals(lanes.at(f), identity, f.key, nan_ok))]
        self.require_current(factors, node, what)
        mask = conjunction(copy.deepcopy(f.node) for f in factors)
        helper = _FILLS.get(identity)
        if helper is not None:
            self.records.helpers.add(helper)
            return expr(f"{helper}({{mask}}, {{value}})", mask=mask, value=operand)
        return expr("tl.where({mask}, {value}, {fill})", mask=mask, value=operand,
                    fill=constant_node(int(identity)) if identity.is_integer else constant_node(float(identity)))

    def require_current(self, factors, node, what):
        """Refuse to mask by a stale factor (``lanes.stale``)."""
        if any(is_stale(f) for f in factors):
            raise self.error(stale_refusal(what, ast.unparse(node.args[0]), factors), node)

    def require_known(self, lanes, node, what):
        if not lanes.known:
            raise self.error(
                f"`{what}` mixes the lanes of `{ast.unparse(node.args[0])}`, which may hold lanes outside the "
                "tensor (from a tile padded to its block or past the tensor's end) that ntsym cannot follow "
                "through the operations before it (one that may reorder lanes, such as `cat`, or a call it does "
                "not know); reduce before such an operation: after it, an `ntl.where` on the tile's offsets does "
                "not make its lanes known again", node)

    # -- values a loop carries; paths that join ---------------------------------

    def carried(self, name, value_node, value, augmented=False):
        """``name = value`` inside a loop where ``name`` carries a value from
        one iteration to the next and ``value`` reads it: lanes outside this
        iteration's tiles keep the carried value (a running max over row
        chunks must not take the padding of the last chunk)."""
        lanes = self.lanes_of(value_node)
        # The loops whose head value of ``name`` the value reads, through the
        # names assigned since the head too (``new = maximum(acc, t); acc =
        # new``, a second update in one iteration), where ``name`` still holds
        # it (the select keeps it): not after ``name`` was set afresh in this
        # iteration (``t = zeros(...)``; ``prev = acc; acc = x[k]``).
        frames = [f for f in self.loops.frames
                  if name in f.defined and name not in f.fresh and name in self.head_reads(f, value_node, name)]
        # A name the loops carry, given a value built from values they carry
        # (not as its own update: ``prev = acc; acc = x[k]; acc = max(acc, prev)``,
        # ``b = max(t, x[k])`` with ``t`` the head value of ``a``): the lanes
        # outside this iteration's tile are not elements of it (the value
        # reaches the next iteration), as for a carried value.
        reads = [self.head_reads(f, value_node) for f in self.loops.frames]
        mixed = self.mixed_loops(name, reads)
        self.wrote(name, carried=frames, depends=reads)
        unchanged = None if augmented else value
        if not frames or not lanes.known:
            self.lanes.locals[name] = self.held(value_node, lanes, mixed, self.lanes.locals.get(name))
            return unchanged
        wide, prior = lanes, self.lanes.locals.get(name)
        with meeting():  # a lane outside this iteration's tiles keeps the carried value
            lanes = self.lanes_of(value_node)
        # Only the loops that carry ``name``: a factor reading an outer loop's
        # variable, ``name`` set afresh in each of its iterations, is the same
        # in every iteration of the loops that do (lanes outside in all of them).
        changing = loop_changing(frames)
        varying = [f for f in lanes.factors if f.names & changing]
        # ``acc + e``, ``maximum(acc, e)``, ...: where ``e`` holds the
        # identity, the carried value is unchanged and no select is needed.
        term, identity = accumulation(name, value_node)
        try:
            lanes = absorbed(lanes, wide, prior, changing)
        except UndecidedUnion as undecided:
            raise self.error(
                f"`{name}` carries, from one loop iteration to the next, a combination of this iteration's tile "
                f"with a value whose lanes (`{undecided}`) lie along the same axis in a block whose extent the "
                "launch decides: where it equals the tile's, a lane outside that value but inside the tile is an "
                "element (it adds the value's `other`), where it is 1 the value broadcasts, and ntsym cannot carry "
                "both; give that tensor a compile-time shape or tile it with the loop's tile size", value_node)
        if term is not None:
            operand = self.lanes_of(term)
            proved = [f for f in varying if equals(operand.at(f), identity, f.key, True)]  # +, *, maximum pass NaN
            varying = [f for f in varying if f not in proved]
            lanes = masked([f for f in lanes.factors if f not in proved],
                           [v for f, v in zip(lanes.factors, lanes.outside) if f not in proved], lanes.rank)
        if not varying:
            self.lanes.locals[name] = lanes
            return unchanged
        scaled = self._scaled_accumulation(name, value_node, value, varying, lanes)
        if scaled is not None:
            return scaled
        mask = conjunction(copy.deepcopy(f.node) for f in varying)
        kept = [(f, v) for f, v in zip(lanes.factors, lanes.outside) if f not in varying]
        self.lanes.locals[name] = masked([f for f, _ in kept], [v for _, v in kept], lanes.rank)
        return expr("tl.where({mask}, {value}, {name})", mask=mask, value=value, name=name)

    def _scaled_accumulation(self, name, value_node, value, varying, lanes):
        """``acc * f + e`` where ``e`` provably holds 0 on the lanes outside
        the ``varying`` factors: ``acc * where(mask, f, 1) + e``, which keeps
        the carried value there as the select of the whole value does, at the
        cost of a select of the factor (a running attention sum rescaled by
        ``alpha``: a row vector instead of the whole accumulator, which also
        leaves the product's accumulation chain whole).  None for other forms."""
        parts = scaled_parts(name, value_node)
        emitted = scaled_parts(name, value) if parts is not None else None
        if emitted is None:
            return None
        term = self.lanes_of(parts[1])
        if not all(equals(term.at(f), sympy.S.Zero, f.key, True) for f in varying):
            return None
        factor, _, (product, side) = emitted
        mask = conjunction(copy.deepcopy(f.node) for f in varying)
        kept = [(f, v) for f, v in zip(lanes.factors, lanes.outside) if f not in varying]
        self.lanes.locals[name] = masked([f for f, _ in kept], [v for _, v in kept], lanes.rank)
        selected = expr("tl.where({mask}, {factor}, 1.0)", mask=mask, factor=factor)
        setattr(product, side, selected)
        return value

    def lane_widened(self, names, before, afters):
        """The lanes of locals before a loop, widened by what its bodies
        (``afters``) leave in the ``names`` it carries (its variable too);
        None where nothing widens.  Factors reading ``names`` are stale at the
        head (``lanes.carried_into``): re-evaluated there they would name
        this iteration's lanes, not those of the tile the value came from."""
        widened, changed = dict(before), False
        for name in names:
            entry = before.get(name)
            if entry is not None:
                current = carried_into(entry, names)
                entry, changed = current, changed or current is not entry
            for end in (a.get(name) for a in afters):
                if entry is None or end is None:
                    continue
                wider = widen(entry, carried_into(end, names))
                if wider is not entry:
                    entry, changed = wider, True
            if entry is not None:
                widened[name] = entry
        return widened if changed else None

    def lane_snapshot(self):
        return dict(self.lanes.locals)

    def lane_join(self, names, snapshots, changing=()):
        """After paths ending in ``snapshots`` (an ``if``'s branches; a loop's
        ends and its not running), what ``names`` hold; factors that read
        ``changing`` names (a loop's variable) are stale there."""
        for name in names:
            state = join([s.get(name) for s in snapshots])
            if state is not None and state.factors and any(f.names & set(changing) for f in state.factors):
                state = unknown(state.rank)
            if state is None:
                self.lanes.locals.pop(name, None)
            else:
                self.lanes.locals[name] = state


def _blocks(address, rank, axes=None):
    """A tile's block extent along each axis (counted from the last), or
    each of ``axes``, as SymPy, or None where one is not known."""
    blocks = []
    for pos, v in enumerate(address.vars):
        if axes is not None and pos - rank not in axes:
            continue
        extent = address.ranges.get(v)
        if extent is None:
            return None
        try:
            blocks.append((pos - rank, sympy.sympify(extent)))
        except (sympy.SympifyError, TypeError):
            return None
    return tuple(blocks) if axes is not None or len(blocks) == rank else None


def _conjuncts(node):
    """The terms of ``a & b & ...`` (``and``): a lane failing one fails all."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitAnd):
        return _conjuncts(node.left) + _conjuncts(node.right)
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
        return [t for v in node.values for t in _conjuncts(v)]
    return [node]


def _below_zero(relation):
    """``relation`` over integers as ``e < 0``: ``e``, or None."""
    if isinstance(relation, sympy.StrictLessThan):
        return sympy.expand(relation.lhs - relation.rhs)
    if isinstance(relation, sympy.LessThan):
        return sympy.expand(relation.lhs - relation.rhs - 1)
    if isinstance(relation, sympy.StrictGreaterThan):
        return sympy.expand(relation.rhs - relation.lhs)
    if isinstance(relation, sympy.GreaterThan):
        return sympy.expand(relation.rhs - relation.lhs - 1)
    return None


def _placed_as(placement, factor):
    """Whether a condition placed as ``placement`` tests ``factor``'s lanes on its axes."""
    if placement is None or factor.axes is None:
        return False
    used = {placement[v] for v in factor.cond.free_symbols if v in placement}
    return bool(used) and used == set(factor.axes)


def _same_condition(a, b):
    x, y = _below_zero(a), _below_zero(b)
    return x is not None and y is not None and sympy.expand(x - y) == 0


def _offsets_rank(ref, node):
    """The rank of ``x.offsets(d)`` (``TileRef.offsets``)."""
    p = ref.param
    d = literal(node.args[0]) if len(node.args) == 1 else None
    if d is None or not -p.ndim <= d < p.ndim:
        return len(ref.dims)
    return 1 if len(ref.offsets(d)[1]) == 1 else len(ref.dims)


__all__ = ["DESCRIPTOR", "LaneState", "PaddingMixin", "literal"]
