"""Emit the Triton kernel: rewrite the application's AST over the IR.

``KernelEmitter`` walks the application once, statement by statement and
expression by expression, dispatching on the node type.  Reading a parameter
is a load of the program's tile; assigning to it is a store; ``x[k]``
selects a tile of a deeper level; ``x.shape`` is a compile-time
expression; calls to plain Python functions are inlined.  Index math comes
from the index maps (SymPy) through :mod:`ntsym_codegen.printer`.

The jobs the walk does live in their own modules, as mixins of the emitter
(see docs/design.md, "The back end, pass by pass"):

- ``shapes``: tile shapes, shape arguments, index values, ``proved``;
- ``addressing``: offsets, masks, contiguity, hoisting;
- ``access``: loads and stores, by pointer or tensor descriptor;
- ``loops``: ``for`` loops, peeling, pointers carried across iterations;
- ``inline``: calls of plain Python functions;
- ``constants``: module aliases and constants;

and the state they share is in ``context``.
"""

import ast
import copy

import sympy

from ntsym_codegen import bounds, lane_writes
from ntsym_codegen.access import AccessMixin
from ntsym_codegen.pointer_writes import note_pointer_write, writes_through_pointer
from ntsym_codegen.functions import FunctionValuesMixin
from ntsym_codegen.reshaping import parts_of, reshaped
from ntsym_codegen.addressing import AddressingMixin
from ntsym_codegen.analysis import (
    UNKNOWN,
    assigned_names,
    assigned_parameters,
    fixed_value,
    loop_bound_carried_by_an_enclosing_loop,
    loop_variable_read_after_its_loop,
    stored_once,
)
from ntsym_codegen.constants import GlobalNamesMixin
from ntsym_codegen.context import (
    ApplicationFacts,
    BlockState,
    HoistState,
    LocalValues,
    LoopState,
    ModuleRecords,
    Names,
    ShapeState,
)
from ntsym_codegen.emit_error import EmitError, source_lines
from ntsym_codegen.ir import Check
from ntsym_codegen.inline import InliningMixin
from ntsym_codegen.loops import LoopsMixin
from ntsym_codegen.carried_names import CarriedNamesMixin
from ntsym_codegen.mixing import UNFOLLOWED_METHODS, refuse_unfollowed
from ntsym_codegen.lanes import unknown
from ntsym_codegen.padding import LaneState, PaddingMixin
from ntsym_codegen.printer import Printer
from ntsym_codegen.refs import SourceRef, TileRef
from ntsym_codegen.semantics import SemanticsMixin
from ntsym_codegen.shapes import ShapesMixin, block_extent_expr
from ntsym_codegen.strategies import POINTERS

__all__ = ["EmitError", "KernelEmitter", "block_extent_expr"]


# ``tl`` math functions that take fp32/fp64 only: other arguments go through
# ``ntsym_math_arg`` of the generated module.
FP32_MATH = {"exp", "exp2", "log", "log2", "cos", "sin", "sqrt", "rsqrt", "erf", "floor", "ceil"}


def _gives_shape(positions, i):
    """Whether argument ``i`` of a call gives a shape: ``positions`` is a set
    of positions, "rest" (all but the first) or "all"."""
    if positions == "all":
        return True
    if positions == "rest":
        return i > 0
    return i in positions


class KernelEmitter(ShapesMixin, AddressingMixin, AccessMixin, LoopsMixin, CarriedNamesMixin, InliningMixin,
                    GlobalNamesMixin, PaddingMixin, SemanticsMixin, FunctionValuesMixin):
    """Rewrites the application into a kernel body: the visitor.

    ``statement`` and ``expr`` dispatch on the node type; the jobs they need
    (shapes, addressing, access, loops, inlining, global names) are the
    mixins' methods, and the state those share is in the context objects
    created here (``codegen/context.py``).  After ``emit_body``,
    ``records`` holds what module assembly needs.

    ``access`` is the strategy every read and write starts from
    (codegen/strategies.py): ``POINTERS``, masked pointer loads and stores;
    ``DESCRIPTORS``, tensor descriptors where tiles meet the rules of the
    GPU's tensor memory accelerator (the persistent variant of a kernel with
    loops), falling back to pointers.
    ``read`` names the tensors some load of the plain emission reads (a
    tensor written through a descriptor must not be read in the kernel)."""

    def __init__(self, ir, access=POINTERS, read=frozenset()):
        self.ir = ir
        self.access = access
        self.params = {p.name: p for p in ir.params if p.kind != "shape"}
        self.tensors = {p.name: p for p in ir.params if p.kind == "tensor"}
        func = ir.application
        self.filename = getattr(func, "ntsym_filename", "<application>")
        self.source_lines = source_lines(self.filename)
        # The shared state, by job (see codegen/context.py).
        self.records = ModuleRecords()
        self.facts = ApplicationFacts(read=set(read))
        self.names = Names()
        self.values = LocalValues()
        self.shapes = ShapeState()
        self.blocks = BlockState()
        self.loops = LoopState()
        self.hoist = HoistState()
        self.lanes = LaneState()

    # -- basics: errors, printing, tensor references ---------------------------

    def error(self, message, node=None):
        return EmitError(message, node, self.filename, self.source_lines)

    def printer(self, names=None, ranges=None):
        ranges = {**self.base_ranges(), **(ranges or {})}
        return Printer(names or {}, nonnegative=lambda e: bounds.nonnegative(e, ranges))

    def base_ranges(self):
        ranges = dict(zip(self.ir.program_vars, self.ir.grid))
        ranges.update(self.loops.ranges)
        return ranges

    def resolve(self, node):
        """A TileRef for expressions naming (part of) a tensor parameter, else None."""
        if isinstance(node, ast.Name) and node.id in self.tensors and node.id not in self.names.locals:
            return TileRef(self.tensors[node.id])
        if isinstance(node, ast.Subscript):
            ref = self.resolve(node.value)
            if isinstance(ref, SourceRef):
                return node  # gathered or scattered by the caller
            if isinstance(ref, TileRef):
                keys = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
                for k in keys:
                    if isinstance(k, ast.Slice):
                        raise self.error("slices of tiles are not supported in applications; arrange them instead", k)
                return ref.index(list(keys), node, self)
        if isinstance(node, ast.Attribute) and node.attr == "source":
            ref = self.resolve(node.value)
            if isinstance(ref, TileRef):
                return SourceRef(ref.param)
        if isinstance(node, ast.Attribute) and node.attr == "dtype":
            ref = self.resolve(node.value)
            if isinstance(ref, TileRef) and not ref.innermost:
                return TileRef(ref.param, ref.depth + 1, ref.fixed)
        return None

    # -- statements ------------------------------------------------------------

    def emit_body(self):
        func = self.ir.application
        self.facts.maybe_written = assigned_parameters(func, self.ir.inline_functions, set(self.tensors))
        self.facts.stored_once = stored_once(func, self.facts.maybe_written, self.ir.inline_functions)
        self.facts.user_names = {n.id for f in [func] + [d for d, _ in self.ir.inline_functions.values()]
                                 for n in ast.walk(f) if isinstance(n, ast.Name)}
        for arg in func.args.args:
            if arg.arg not in self.params:
                raise self.error(f"parameter `{arg.arg}` has no tensor", arg)
        for f in [func] + [d for d, _ in self.ir.inline_functions.values()]:
            read, _ = loop_variable_read_after_its_loop(f.body)
            if read is not None:
                raise self.error(
                    f"`{read.id}` is read after the loop it indexes: compiled Triton leaves a loop's variable "
                    "undefined after the loop (its interpreter does not); keep the value in another name", read)
            bound = loop_bound_carried_by_an_enclosing_loop(f)
            if bound is not None:
                raise self.error(
                    f"`{bound.id}` bounds a loop and changes from one iteration of an enclosing loop to the "
                    "next: compiled Triton runs such a loop with the bound's value from before the enclosing "
                    "loop (its interpreter follows the change), a wrong result on a GPU; compute the bound "
                    "from the enclosing loop's index (`range(n - j)`) instead", bound)
        body = copy.deepcopy(func.body)
        self.facts.defined_once = lane_writes.defined_once(body)
        emitted = self.statements(body)
        if self.records.pointer_writes:
            self.records.stored.update(self.records.addressed)
        return emitted

    def statements(self, stmts):
        out, saved = [], (self.blocks.pre, self.blocks.top_pre)  # an inlined body's: the caller's after it
        for stmt in stmts:
            pre = []
            self.blocks.pre = pre
            if len(self.blocks.caches) == 1:
                self.blocks.top_pre = pre
            result = self.statement(stmt)
            out.extend(pre)
            if isinstance(result, list):
                out.extend(result)
            elif result is not None:
                out.append(result)
        self.blocks.pre, self.blocks.top_pre = saved
        return out

    def block(self, stmts):
        saved_pre = self.blocks.pre
        self.blocks.caches.append({})
        try:
            body = self.statements(stmts)
        finally:
            self.blocks.caches.pop()
            self.blocks.pre = saved_pre
        return body or [ast.Pass()]

    def invalidate(self, name):
        for cache in self.blocks.caches:
            cache.pop(name, None)

    def _rebound(self, name):
        """``name`` is assigned: what it held (a cached tile, an index, a size) is gone."""
        self.invalidate(name)
        self._forget([name])

    def statement(self, stmt):
        walrus = next((n for n in ast.walk(stmt) if isinstance(n, ast.NamedExpr)), None)
        if walrus is not None:  # Triton does not compile it either
            raise self.error("`:=` is not supported in applications; assign in a statement of its own", walrus)
        if isinstance(stmt, ast.Assign):
            if len(stmt.targets) != 1:
                raise self.error("chained assignment is not supported", stmt)
            return self.assign(stmt.targets[0], stmt.value, stmt)
        if isinstance(stmt, ast.AnnAssign):
            if stmt.value is None:
                raise self.error("annotation without a value", stmt)
            target = stmt.target
            if isinstance(target, ast.Name) and target.id in self.tensors:
                raise self.error(f"`{target.id}` is a parameter; annotate a new local instead", stmt)
            annotation = self.expr(stmt.annotation)
            value = self.expr(stmt.value)
            if isinstance(target, ast.Name):
                self.names.locals.add(target.id)
                value = self.carried(target.id, stmt.value, value)  # as `name = value`
                self._rebound(target.id)
            return ast.copy_location(ast.AnnAssign(target=target, annotation=annotation, value=value, simple=1), stmt)
        if isinstance(stmt, ast.AugAssign):
            return self.augmented_assign(stmt)
        if isinstance(stmt, ast.Expr):
            if isinstance(stmt.value, ast.Call):
                inlined = self.try_inline(stmt.value, statement=True)
                if inlined is not None:
                    return inlined
            return ast.copy_location(ast.Expr(value=self.expr(stmt.value)), stmt)
        if isinstance(stmt, ast.For):
            return self.for_loop(stmt)
        if isinstance(stmt, ast.If):
            fixed = fixed_value(stmt.test, self._fixed_params())
            if fixed is not UNKNOWN:
                # A branch on a value fixed at make: the branch taken alone, as Triton compiles it.
                outer = self.blocks.pre
                taken = self.statements(stmt.body if fixed else stmt.orelse)
                self.blocks.pre = outer
                return taken
            test = self.expr(stmt.test)
            before = self.lane_snapshot()
            with self._branch(stmt.body + stmt.orelse) as paths:
                body = self.block(stmt.body)
                then = self.lane_snapshot()
                self.lanes.locals = dict(before)
                paths.paths.append(self.rewind_paths(paths))
                self._forget(self.written_in(stmt.body))
                orelse = self.block(stmt.orelse) if stmt.orelse else []
            self.lane_join(self.written_in(stmt.body + stmt.orelse), [then, self.lane_snapshot()])
            return ast.copy_location(ast.If(test=test, body=body, orelse=orelse), stmt)
        if isinstance(stmt, ast.While):
            return self.while_loop(stmt)
        if isinstance(stmt, ast.Pass):
            return stmt
        if isinstance(stmt, ast.Return):
            if stmt.value is None:
                return stmt
            raise self.error("an application returns nothing; assign results to output parameters", stmt)
        if isinstance(stmt, (ast.Assert,)):
            return ast.copy_location(ast.Assert(test=self.expr(stmt.test), msg=stmt.msg), stmt)
        raise self.error(f"`{type(stmt).__name__}` statements are not supported in applications", stmt)

    def augmented_assign(self, stmt):
        if isinstance(stmt.op, (ast.FloorDiv, ast.Mod)):
            # ``a //= b`` is ``a = a // b``, floored (codegen/semantics.py).
            read = copy.deepcopy(stmt.target)
            read.ctx = ast.Load()
            value = ast.copy_location(ast.BinOp(left=read, op=stmt.op, right=stmt.value), stmt)
            return self.assign(stmt.target, value, stmt)
        ref = self.resolve(stmt.target) if self._is_tensor_target(stmt.target) else None
        if ref is not None:
            value = ast.BinOp(left=self.load(ref, stmt), op=stmt.op, right=self.expr(stmt.value))
            self.invalidate(ref.param.name)
            return self.store(ref, value, stmt)
        value = self.expr(stmt.value)
        if isinstance(stmt.target, ast.Name):
            self._rebound(stmt.target.id)  # ``key -= 4``
            combined = ast.BinOp(left=ast.Name(id=stmt.target.id, ctx=ast.Load()), op=stmt.op, right=stmt.value)
            kept = self.carried(stmt.target.id, combined, ast.Constant(0), augmented=True)
            if kept is not None:  # lanes outside this iteration's tiles keep the carried value
                whole = ast.BinOp(left=ast.Name(id=stmt.target.id, ctx=ast.Load()), op=stmt.op, right=value)
                kept.args[1] = whole
                return ast.copy_location(ast.Assign(targets=[ast.Name(id=stmt.target.id, ctx=ast.Store())],
                                                    value=kept), stmt)
        return ast.copy_location(ast.AugAssign(target=stmt.target, op=stmt.op, value=value), stmt)

    def _fixed_params(self):
        """Compile-time parameters whose value ``make`` fixed
        (``Tensor(0, constexpr=True, value=v)``), by name, unless a local shadows them."""
        return {name: p.value for name, p in self.params.items()
                if p.kind == "constexpr" and p.value is not None and name not in self.names.locals}

    def _is_tensor_target(self, target):
        node = target
        while isinstance(node, ast.Subscript):
            node = node.value
        return isinstance(node, ast.Name) and node.id in self.tensors and node.id not in self.names.locals

    def assign(self, target, value_node, stmt):
        if isinstance(target, ast.Subscript) and isinstance(self.resolve(target.value), SourceRef):
            return self.scatter(target, self.expr(value_node), stmt)
        if self._is_tensor_target(target):
            ref = self.resolve(target)
            value = self.expr(value_node)
            self.invalidate(ref.param.name)
            return self.store(ref, value, stmt)
        if isinstance(target, ast.Name):
            value = self.carried(target.id, value_node, self.expr(value_node))
            self.names.locals.add(target.id)
            self._rebound(target.id)
            index = self.index_value(value_node)
            if index is not None:
                self.values.index[target.id] = index
                placement = self.index_placement(value_node)
                if placement is not None:
                    self.values.placement[target.id] = placement
            known = self._size_value(value_node)
            if known is not None and len(self.blocks.caches) == 1:
                self.values.sizes[target.id] = known
            padded = self._padded_value(value_node) if len(self.blocks.caches) == 1 else None
            if isinstance(padded, sympy.Basic):
                if padded != known:
                    self.shapes.padded_sizes[target.id] = padded
                    self.shapes.padded_locals[target.id] = self.printer()(padded)
            elif padded is not None and ast.dump(padded) != ast.dump(value):
                self.shapes.padded_locals[target.id] = padded
            return ast.copy_location(ast.Assign(targets=[target], value=value), stmt)
        if isinstance(target, ast.Tuple) and all(isinstance(e, ast.Name) for e in target.elts):
            value = self.expr(value_node)
            parts, depends = self.unpacked_held(target, value_node, self._unpacked_lanes(target, value_node))
            for e, unpacked, read in zip(target.elts, parts, depends):
                if e.id in self.tensors and e.id not in self.names.locals:
                    raise self.error(f"unpacking into the parameter `{e.id}` is not supported; assign it alone", stmt)
                self.names.locals.add(e.id)
                self.lanes.locals[e.id] = unpacked
                self.wrote(e.id, depends=read)
                self._forget([e.id])
            return ast.copy_location(ast.Assign(targets=[target], value=value), stmt)
        raise self.error(f"cannot assign to `{ast.unparse(target)}`", stmt)

    def _unpacked_lanes(self, target, value_node):
        """The lanes of each name of ``a, b = x, y``: each element's own,
        where the elements read none of the names (a value a loop carries is
        assigned alone, through ``carried``), a ``split``'s parts; else the whole's."""
        names = {e.id for e in target.elts}
        reads = any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(value_node))
        if isinstance(value_node, (ast.Tuple, ast.List)) and len(value_node.elts) == len(target.elts) and not reads \
                and not any(isinstance(e, ast.Starred) for e in value_node.elts):
            return [self.held(e, self.lanes_of(e)) for e in value_node.elts]
        whole = self.lanes_of(value_node)
        return parts_of(self, value_node, len(target.elts)) or [whole if whole.clean else unknown()] * len(target.elts)

    # -- expressions -----------------------------------------------------------

    def keyword(self, k):
        return ast.keyword(arg=k.arg, value=self.expr(k.value))

    def expr(self, node):
        if node is None:
            return None
        shape = self.shape_value(node)
        if shape is not None:
            return self.printer()(shape)
        ref = self.resolve(node)
        if isinstance(ref, ast.Subscript):
            return self.gather(ref, None)
        if isinstance(ref, SourceRef):
            raise self.error(f"`{ast.unparse(node)}` is a whole tensor; index it or use its shape", node)
        if ref is not None:
            return self.tile_value(ref, node)
        if isinstance(node, ast.Name):
            if self.shapes.building and node.id in self.shapes.padded_locals:
                return copy.deepcopy(self.shapes.padded_locals[node.id])
            if node.id in self.params and node.id not in self.names.locals:
                return ast.Name(id=node.id, ctx=ast.Load())
            if node.id in self.ir.inline_functions and node.id not in self.names.locals:
                return self.function_value(node.id, node)  # a combine passed to reduce or a scan
            named = self.global_name(node)
            return node if named is None else named
        if isinstance(node, ast.Attribute):
            return self.attribute(node)
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, (ast.BoolOp, ast.IfExp)) or (isinstance(node, ast.Compare) and len(node.ops) > 1):
            return self.conditional_operands(node)
        if isinstance(node, ast.Tuple):
            return ast.Tuple(elts=[self.expr(e) for e in node.elts], ctx=ast.Load())
        if isinstance(node, ast.List):
            return ast.List(elts=[self.expr(e) for e in node.elts], ctx=ast.Load())
        if isinstance(node, (ast.Constant,)):
            return node
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.FloorDiv, ast.Mod)):
            return self.division(node)
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.DictComp, ast.SetComp, ast.GeneratorExp, ast.Await, ast.Yield, ast.JoinedStr)):
            raise self.error(f"`{type(node).__name__}` is not supported in applications", node)
        # Generic: rebuild children.
        new = copy.copy(node)
        for field, value in ast.iter_fields(node):
            if isinstance(value, ast.expr):
                setattr(new, field, self.expr(value))
            elif isinstance(value, list):
                setattr(new, field, [self.expr(v) if isinstance(v, ast.expr) else v for v in value])
        return new

    def _dot_check(self, node):
        """``ntl.dot(a, b)`` of two tiles whose inner extents are not the same
        expression (``BK1`` columns, ``BK2`` rows): checked at launch, where
        Triton would fail on the shapes at some block sizes."""
        refs = [self.resolve(a) for a in node.args[:2]]
        if not all(isinstance(r, TileRef) and r.innermost for r in refs):
            return
        a, b = (self.ref_shape(r) for r in refs)
        if len(a) < 2 or len(b) < 2 or sympy.expand(a[-1] - b[-2]) == 0:
            return
        left, right = (ast.unparse(n) for n in node.args[:2])
        relation = sympy.Eq(a[-1], b[-2])
        if relation is sympy.false:
            raise self.error(f"`{ast.unparse(node)}`: `{left}` has {a[-1]} columns but `{right}` has {b[-2]} rows; "
                             "a dot needs them equal: tile both with one block size", node)
        check = Check(relation, f"`{left}` must have as many columns as `{right}` has rows",
                      f"`{ast.unparse(node)}` (line {node.lineno}) multiplies them; tile both with one block size")
        if check not in self.records.checks:
            self.records.checks.append(check)

    def attribute(self, node):
        ref = self.resolve(node.value)
        if isinstance(ref, SourceRef):
            if node.attr == "shape":
                return ast.Tuple(elts=[self.printer()(n) for n in ref.param.sizes], ctx=ast.Load())
            if node.attr == "dtype":
                return ast.Attribute(
                    value=ast.Attribute(value=ast.Name(id=f"{ref.param.name}_ptr", ctx=ast.Load()), attr="dtype", ctx=ast.Load()),
                    attr="element_ty",
                    ctx=ast.Load(),
                )
            raise self.error(f"`x.source.{node.attr}` is not supported (shape, dtype, stride(d), data_ptr(), x.source[i, ...])", node)
        if isinstance(ref, TileRef):
            if node.attr == "shape":
                return ast.Tuple(elts=[self.printer()(s) for s in self.ref_shape(ref)], ctx=ast.Load())
            if node.attr == "dtype":
                return ast.Attribute(
                    value=ast.Attribute(value=ast.Name(id=f"{ref.param.name}_ptr", ctx=ast.Load()), attr="dtype", ctx=ast.Load()),
                    attr="element_ty",
                    ctx=ast.Load(),
                )
            if node.attr == "ndim":
                return ast.Constant(len(ref.shape()))
            return ast.Attribute(value=self.tile_value(ref, node.value), attr=node.attr, ctx=ast.Load())
        named = self.global_name(node)
        if named is not None:
            return named
        alias = self.alias(node.value)
        if alias in ("tl", "libdevice"):
            return ast.Attribute(value=self.module_name(alias), attr=node.attr, ctx=ast.Load())
        return ast.Attribute(value=self.expr(node.value), attr=node.attr, ctx=ast.Load())

    def call(self, node):
        return self.nan_semantics(node, self._call(node))

    def _call(self, node):
        func = node.func
        if isinstance(func, ast.Attribute):
            method = self._parameter_method(node)
            if method is not None:
                return method
        inlined = self.try_inline(node, statement=False)
        if inlined is not None:
            return inlined
        if isinstance(func, ast.Attribute) and func.attr in ("min", "max") and self.alias(func.value) == "tl" and node.args:
            end = self.index_value(node)
            if end is not None and self.lanes_of(node.args[0]).clean:
                # ``ntl.min(x.offsets(d))`` over a tile without padded lanes:
                # the offsets' value at one end of the tile, computed, where a
                # reduction across the program's lanes would wait on its warps
                # (causal attention's first and last key blocks of a query block).
                return self.printer()(end)
        moved = reshaped(self, node)  # lanes outside the tensor followed through the new shape
        if moved is not None:
            return moved
        mixed = self.mixing(node)  # an operation that mixes lanes: lanes outside the tensor kept out
        if mixed is not None:
            return mixed
        if isinstance(func, ast.Name) and func.id in ("max", "min") and len(node.args) == 2 and not node.keywords:
            name = "maximum" if func.id == "max" else "minimum"
            return ast.Call(
                func=ast.Attribute(value=ast.Name(id="tl", ctx=ast.Load()), attr=name, ctx=ast.Load()),
                args=[self.expr(a) for a in node.args],
                keywords=[],
            )
        if isinstance(func, ast.Attribute) and self.alias(func.value) == "tl":
            language = self._language_call(node)
            if language is not None:
                return language
        positions, keywords = self._shape_slots(func)
        args = [self.shape_argument(a) if _gives_shape(positions, i) else self.expr(a)
                for i, a in enumerate(node.args)]
        kwargs = [ast.keyword(arg=k.arg, value=self.shape_argument(k.value)) if k.arg in keywords else self.keyword(k)
                  for k in node.keywords]
        if isinstance(func, ast.Attribute) and self.alias(func.value) == "tl":
            refuse_unfollowed(self, node, func.attr)  # lanes outside the tensor never reach it unseen
        elif isinstance(func, ast.Attribute) and func.attr in UNFOLLOWED_METHODS and self.alias(func.value) is None:
            call = ast.Call(func=ast.Attribute(value=ast.Name(id="tl", ctx=ast.Load()), attr=func.attr, ctx=ast.Load()),
                            args=[func.value] + list(node.args), keywords=list(node.keywords))
            refuse_unfollowed(self, ast.copy_location(call, node), func.attr)  # x.gather(i, 0) as tl.gather(x, i, 0)
        if isinstance(func, ast.Attribute) and writes_through_pointer(func.attr):
            note_pointer_write(self, node, args, kwargs)
        return ast.Call(func=self.expr(func), args=args, keywords=kwargs)

    def _parameter_method(self, node):
        """A method of a tensor parameter (``x.offsets(dim)``, ``x.source.data_ptr()``, ``x.source.size(d)``/
        ``stride(d)``; ``x.data_ptr()``, ``x.stride(d)`` of a tile are its source's, as in NineToothed), or None."""
        func = node.func
        ref = self.resolve(func.value)
        ref = SourceRef(ref.param) if isinstance(ref, TileRef) and func.attr in ("data_ptr", "stride") else ref
        if isinstance(ref, TileRef) and func.attr == "offsets":
            return self.offsets(ref, node)
        if ref is None and func.attr == "offsets" and isinstance(func.value, ast.Name) \
                and func.value.id in self.names.locals:
            raise self.error(
                f"`{func.value.id}` is a local holding a tile's values, which have no offsets; call "
                f"`offsets` on the parameter's tile itself (e.g. `x[k].offsets(1)` rather than "
                f"`t = x[k]; t.offsets(1)`)", node)
        if isinstance(ref, SourceRef):
            p = ref.param
            if func.attr == "data_ptr" and not node.args:
                self.records.sourced.add(p.name)
                self.records.addressed.add(p.name)
                return ast.Name(id=f"{p.name}_ptr", ctx=ast.Load())
            if func.attr in ("stride", "size") and len(node.args) == 1 and isinstance(node.args[0], ast.Constant):
                d = node.args[0].value
                values = p.strides if func.attr == "stride" else p.sizes
                if not -len(values) <= d < len(values):
                    raise self.error(f"`{p.name}` has {len(values)} source dimensions", node)
                return self.printer()(values[d])
            raise self.error(f"`x.source.{func.attr}(...)` is not supported", node)
        return None

    def _language_call(self, node):
        """A call of ``ntsym.language`` that the kernel writes otherwise
        than as given (a ``where`` proved true everywhere, a math function
        of half precision computed in fp32), after checking it exists; None
        where the call is written as it is."""
        func = node.func
        import triton.language as tl

        if not hasattr(tl, func.attr) and func.attr != "libdevice":
            raise self.error(f"`{ast.unparse(func)}` does not exist in ntsym.language", func)
        if func.attr == "dot" and len(node.args) >= 2:
            self._dot_check(node)
        if func.attr == "where" and len(node.args) == 3 and self.proved(node.args[0]):
            # Proved for every element: Triton folds the select away.  The
            # condition's shape stays (``c | True``, folded too): the result
            # broadcasts to it where it is wider than both values.
            condition = ast.BinOp(left=self.expr(node.args[0]), op=ast.BitOr(), right=ast.Constant(True))
            return ast.Call(
                func=ast.Attribute(value=ast.Name(id="tl", ctx=ast.Load()), attr="where", ctx=ast.Load()),
                args=[condition] + [self.expr(a) for a in node.args[1:]],
                keywords=[self.keyword(k) for k in node.keywords],
            )
        if func.attr in FP32_MATH and len(node.args) == 1 and not node.keywords and not self.number(node.args[0]):
            # Triton's math functions take fp32/fp64 only: half
            # precision is computed in fp32, on CPU and GPU alike.
            self.records.helpers.add("ntsym_math_arg")
            arg = ast.Call(func=ast.Name(id="ntsym_math_arg", ctx=ast.Load()), args=[self.expr(node.args[0])], keywords=[])
            return ast.Call(
                func=ast.Attribute(value=ast.Name(id="tl", ctx=ast.Load()), attr=func.attr, ctx=ast.Load()),
                args=[arg],
                keywords=[],
            )
        return None

