"""Emit the Triton kernel: rewrite the application's AST over the IR.

Reading a parameter is a masked load of the program's tile; assigning to it is
a masked store; ``x[k]`` selects a tile of a deeper level; ``x.shape`` is a
compile-time expression; calls to plain Python functions are inlined.  Index
math comes from the index maps (SymPy) through :mod:`codegen.printer`.
"""

import ast
import contextlib
import copy
import math

import sympy

from codegen import bounds
from codegen.analysis import (
    assigned_names,
    assigned_parameters,
    loop_variable_read_after_its_loop,
    stored_once,
)
from codegen.context import (
    ApplicationFacts,
    BlockState,
    HoistState,
    LocalValues,
    LoopState,
    ModuleRecords,
    Names,
    ShapeState,
)
from codegen.intfuncs import CeilDiv, FloorDiv, Mod, recombine
from codegen.ir import Check
from codegen.printer import Printer, PrintError, conjunction


class EmitError(TypeError):
    """The application uses something the emitter cannot compile.  Carries the
    source location: ``filename``, ``lineno``, ``col``, ``line``."""

    def __init__(self, message, node=None, filename=None, source_lines=None):
        self.lineno = getattr(node, "lineno", None)
        self.col = getattr(node, "col_offset", None)
        self.end_col = getattr(node, "end_col_offset", None)
        self.end_lineno = getattr(node, "end_lineno", None)
        self.filename = filename
        self.line = None
        if self.lineno is not None and source_lines:
            if 0 < self.lineno <= len(source_lines):
                self.line = source_lines[self.lineno - 1].rstrip("\n")
        self.plain = message
        super().__init__(self._format())

    def _format(self):
        if self.lineno is None:
            return self.plain
        text = f'{self.plain}\n  File "{self.filename}", line {self.lineno}'
        if self.line is not None:
            col = self.col or 0
            end = self.end_col if self.end_col and self.end_col > col else col + 1
            if self.end_lineno not in (None, self.lineno):
                end = len(self.line)
            shown = self.line.lstrip()
            skip = len(self.line) - len(shown)
            text += f"\n    {shown}\n    {' ' * (col - skip)}{'^' * max(1, end - col)}"
        return text


def block_extent_expr(n, pow2_names):
    """The power-of-two block extent for a dimension of size ``n``."""
    n = sympy.sympify(n)
    if _is_pow2(n):
        return n
    if n.is_Integer:
        return sympy.Integer(1 << (int(n) - 1).bit_length())
    if n not in pow2_names:
        pow2_names[n] = sympy.Symbol(f"NTSYM_BLOCK_{len(pow2_names)}", integer=True, positive=True)
    return pow2_names[n]


def _is_pow2(n):
    if n.is_Integer:
        v = int(n)
        return v > 0 and v & (v - 1) == 0
    if n.is_Symbol:
        if getattr(n, "padded", False):
            return False
        # Call-time constexpr block sizes are checked to be powers of two at
        # launch (other values launch a variant where they are padded).
        return bool(getattr(n, "power_of_two", False)) or (
            bool(getattr(n, "constexpr", False)) and not getattr(n, "is_size", True)
        )
    if isinstance(n, sympy.Mul):
        return all(_is_pow2(f) for f in n.args)
    return False


class _Ref:
    """A reference to (part of) a tensor parameter in the application."""

    def __init__(self, param, depth=1, fixed=None, dims=None):
        self.param = param
        self.depth = depth
        self.fixed = dict(fixed or {})
        self.dims = list(range(len(param.levels[depth]))) if dims is None else list(dims)

    @property
    def innermost(self):
        return self.depth == len(self.param.levels) - 1

    def shape(self):
        level = self.param.levels[self.depth]
        return [level[j] for j in self.dims]

    def index(self, keys, node, emitter):
        keys = keys if isinstance(keys, list) else [keys]
        ref = _Ref(self.param, self.depth, self.fixed, self.dims)
        if len(keys) > len(ref.dims):
            raise emitter.error(
                f"too many indices for `{self.param.name}`: level {self.depth} has shape "
                f"{tuple(ref.shape())}",
                node,
            )
        vars = self.param.level_vars[self.depth]
        for key_node, j in zip(keys, list(ref.dims)):
            value = emitter.to_sympy(key_node)
            ref.fixed[vars[j]] = (value, self.param.levels[self.depth][j], key_node)
        ref.dims = ref.dims[len(keys):]
        if not ref.dims and not ref.innermost:
            ref = _Ref(ref.param, ref.depth + 1, ref.fixed)
        return ref


# Arguments of ``triton.language`` functions that are shapes or extents.
_TL_SHAPE_SLOTS = {
    "zeros": ({0}, ("shape",)),
    "full": ({0}, ("shape",)),
    "arange": ({1}, ("end",)),
    "reshape": ("rest", ("shape",)),
    "view": ("rest", ("shape",)),
    "broadcast_to": ("rest", ("shape",)),
}
# Methods of tile values whose arguments are a shape.
_SHAPE_METHODS = {"reshape", "view", "broadcast_to"}

FP32_MATH = {"exp", "exp2", "log", "log2", "cos", "sin", "sqrt", "rsqrt", "erf", "floor", "ceil"}


class _SourceRef:
    """``x.source``: the whole source tensor of parameter ``x``."""

    def __init__(self, param):
        self.param = param


class KernelEmitter:
    """Rewrites the application into a kernel body.

    With ``tma``, tiles that meet the rules of the GPU's tensor memory
    accelerator are read (and written) through tensor descriptors instead of
    masked pointer loads: the persistent variant of a kernel with loops.
    ``read`` names the tensors some load of the plain emission reads (a
    tensor written through a descriptor must not be read in the kernel)."""

    def __init__(self, ir, tma=False, read=frozenset()):
        self.ir = ir
        self.tma = tma
        self.params = {p.name: p for p in ir.params if p.kind != "shape"}
        self.tensors = {p.name: p for p in ir.params if p.kind == "tensor"}
        func = ir.application
        self.filename = getattr(func, "ntsym_filename", "<application>")
        try:
            with open(self.filename) as f:
                self.source_lines = f.readlines()
        except OSError:
            self.source_lines = None
        # The shared state, by job (see codegen/context.py).
        self.records = ModuleRecords()
        self.facts = ApplicationFacts(read=set(read))
        self.names = Names()
        self.values = LocalValues()
        self.shapes = ShapeState()
        self.blocks = BlockState()
        self.loops = LoopState()
        self.hoist = HoistState()

    # -- errors -------------------------------------------------------------

    def error(self, message, node=None):
        return EmitError(message, node, self.filename, self.source_lines)

    # -- symbols and printing ----------------------------------------------

    def printer(self, names=None, ranges=None):
        ranges = {**self.base_ranges(), **(ranges or {})}
        return Printer(names or {}, nonnegative=lambda e: bounds.nonnegative(e, ranges))

    def base_ranges(self):
        ranges = dict(zip(self.ir.program_vars, self.ir.grid))
        ranges.update(self.loops.ranges)
        return ranges

    def to_sympy(self, node):
        """An integer index expression of the application as SymPy."""
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
            return sympy.Integer(node.value)
        if isinstance(node, ast.Name):
            if node.id in self.tensors and node.id not in self.names.locals:
                raise self.error(f"`{node.id}` is a tensor, not an index", node)
            if self.shapes.building and node.id in self.shapes.padded_sizes:
                return self.shapes.padded_sizes[node.id]
            if node.id in self.values.sizes:
                return self.values.sizes[node.id]
            key = self._constant_key(node)
            if key is not None and _is_int(self.ir.constants[key]):
                return sympy.Integer(self.ir.constants[key])
            return sympy.Symbol(node.id, integer=True)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -self.to_sympy(node.operand)
        if isinstance(node, ast.BinOp):
            value = _arithmetic(node.op, self.to_sympy(node.left), self.to_sympy(node.right))
            if value is not None:
                return value
        shape = self.shape_value(node)
        if shape is not None:
            return shape
        raise self.error(
            "index expressions must be integer arithmetic on loop variables, constants and "
            f"`x.shape[i]`; got `{ast.unparse(node)}`",
            node,
        )

    def _padded_value(self, node):
        """What a local assigned ``node`` holds where a shape is built (see
        :meth:`ref_shape`): SymPy for sizes (``n = x.shape[1]``), AST for
        shapes (``s = x.shape``, ``(m, n)``), else None.  No side effects."""
        with self._building_shape():
            value = self._size_value(node)
            if value is not None:
                return value
            if isinstance(node, ast.Attribute) and node.attr == "shape" and isinstance(self.resolve(node.value), _Ref):
                return self.attribute(node)
            if isinstance(node, (ast.Tuple, ast.List)):
                values = [self._size_value(e) for e in node.elts]
                if all(v is not None for v in values):
                    return ast.Tuple(elts=[self.printer()(v) for v in values], ctx=ast.Load())
        return None

    def _size_value(self, node):
        """The value of an integer expression in sizes and block sizes, if it is
        one (``n = x.shape[0]``), else None."""
        try:
            value = self.to_sympy(node)
        except EmitError:
            return None
        known = set(self.ir.symbols.values()) | set(self.ir.program_vars) | set(self.records.pow2.values())
        return value if value.free_symbols <= known else None

    def shape_value(self, node):
        """SymPy value of ``x.shape[i]`` / ``x.dtype.shape[i]`` nodes, else None."""
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.slice, ast.UnaryOp)
            and isinstance(node.slice.op, ast.USub)
            and isinstance(node.slice.operand, ast.Constant)
        ):
            node = ast.Subscript(value=node.value, slice=ast.Constant(-node.slice.operand.value), ctx=ast.Load())
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            base = node.value
            if isinstance(base, ast.Attribute) and base.attr == "shape":
                ref = self.resolve(base.value)
                if isinstance(ref, _SourceRef):
                    return ref.param.sizes[node.slice.value]
                if isinstance(ref, _Ref):
                    shape = self.ref_shape(ref)
                    i = node.slice.value
                    if not -len(shape) <= i < len(shape):
                        raise self.error(
                            f"`{ast.unparse(node)}`: `{ref.param.name}` has {len(shape)} dimensions here",
                            node,
                        )
                    return shape[i]
        return None

    def ref_shape(self, ref):
        """A tile's shape as the application sees it: the true extents (a
        whole dimension of 451 is 451), except where a shape is built
        (``zeros``, ``arange``, ``reshape``...), which needs the power-of-two
        block the tile is loaded in."""
        shape = ref.shape()
        if ref.innermost and self.shapes.building:
            return [block_extent_expr(n, self.records.pow2) for n in shape]
        return shape

    @contextlib.contextmanager
    def _building_shape(self, on=True):
        """Inside: ``x.shape`` of an innermost tile is its padded block."""
        saved, self.shapes.building = self.shapes.building, on
        try:
            yield
        finally:
            self.shapes.building = saved

    def shape_argument(self, node):
        """An argument that gives a shape or an extent: tile shapes (and locals
        holding them) are the padded blocks."""
        with self._building_shape():
            return self.expr(node)

    # -- resolving tensor references -----------------------------------------

    def resolve(self, node):
        """A _Ref for expressions naming (part of) a tensor parameter, else None."""
        if isinstance(node, ast.Name) and node.id in self.tensors and node.id not in self.names.locals:
            return _Ref(self.tensors[node.id])
        if isinstance(node, ast.Subscript):
            ref = self.resolve(node.value)
            if isinstance(ref, _SourceRef):
                return node  # gathered or scattered by the caller
            if isinstance(ref, _Ref):
                keys = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
                for k in keys:
                    if isinstance(k, ast.Slice):
                        raise self.error("slices of tiles are not supported in applications; arrange them instead", k)
                return ref.index(list(keys), node, self)
        if isinstance(node, ast.Attribute) and node.attr == "source":
            ref = self.resolve(node.value)
            if isinstance(ref, _Ref):
                return _SourceRef(ref.param)
        if isinstance(node, ast.Attribute) and node.attr == "dtype":
            ref = self.resolve(node.value)
            if isinstance(ref, _Ref) and not ref.innermost:
                return _Ref(ref.param, ref.depth + 1, ref.fixed)
        return None

    # -- loads and stores ---------------------------------------------------

    def address(self, ref, node):
        """Pointer expression and mask (AST) for a reference to an innermost tile."""
        p = ref.param
        if not ref.innermost:
            remaining = len(p.levels) - 1 - ref.depth
            raise self.error(
                f"`{p.name}` still has {remaining} level(s) of tiles here (shape "
                f"{tuple(ref.shape())}); index it, e.g. `{p.name}[k]`, to get a tile",
                node,
            )
        names, ranges = {}, {}
        subs, extra, known = self._fixed(ref)
        vectorized = list(ref.dims)
        vars = p.level_vars[ref.depth]
        level = p.levels[ref.depth]
        for pos, j in enumerate(vectorized):
            v, n = vars[j], level[j]
            extent = block_extent_expr(n, self.records.pow2)
            ranges[v] = extent
            names[v] = self.arange_name(p, ref.depth, j, pos, len(vectorized), extent)
            if extent != n:
                extra.append(sympy.Lt(v, n))
        index = [e.xreplace(subs).xreplace(self.records.size_subs) for e in p.index]
        offset = sympy.Add(*[i * s for i, s in zip(index, p.strides)])
        conditions = [c.xreplace(subs).xreplace(self.records.size_subs) for c in p.conditions] + extra
        all_ranges = {**self.base_ranges(), **ranges, **known}
        # Implied conditions go first, while what implies them is still
        # there: a condition proved true implies its consequences too.
        kept = []
        for c in bounds.drop_implied(list(dict.fromkeys(conditions)), all_ranges):
            if c is sympy.true:
                continue
            if c is sympy.false:
                kept = [sympy.false]
                break
            if not bounds.holds(c, all_ranges):
                kept.append(c)
        printer = self.printer(names, ranges)
        contiguous = self._contiguous_offset(p, index, offset)
        try:
            used = offset.free_symbols & (contiguous.free_symbols if contiguous is not None else offset.free_symbols)
            shape = None
            if ranges and not set(ranges) <= used:
                # The tile repeats along some dimension (or is one element):
                # give the pointers the tile's full shape.
                shape = ast.Tuple(elts=[printer(ranges[vars[j]]) for j in vectorized], ctx=ast.Load())
            flag = self.records.contiguity_flags.setdefault(p.name, f"{p.name}_contiguous") if contiguous is not None else None
            offset_node = self._hoisted_sum(p, offset, printer, set(ranges))
            if contiguous is not None:
                # For a contiguous tensor (a constexpr flag, set at launch)
                # the strides are products of sizes and flattened dimensions
                # merge back: fewer divisions, and addresses Triton can see
                # are consecutive (vectorized loads).
                offset_node = ast.IfExp(
                    test=ast.Name(id=flag, ctx=ast.Load()),
                    body=self._hoisted_sum(p, contiguous, printer, set(ranges)),
                    orelse=offset_node,
                )
            base = ast.Name(id=f"{p.name}_ptr", ctx=ast.Load())
            pointer = _broadcast(ast.BinOp(left=base, op=ast.Add(), right=offset_node), shape)
            offsets = [(flag, contiguous), (None, offset)] if flag else [(None, offset)]
            carried = self._carried(p, offsets, printer, shape)
            if carried is not None:
                # Which form runs is a compile-time flag the tuner chooses.
                advance = ast.Name(id=self.records.advance_flag, ctx=ast.Load())
                pointer = ast.IfExp(test=advance, body=ast.Name(id=carried, ctx=ast.Load()), orelse=pointer)
            mask = self._mask(kept, printer, ranges)
        except PrintError as e:
            raise self.error(f"cannot print index math for `{p.name}`: {e}", node) from None
        return pointer, mask

    def _fixed(self, ref):
        """The indices ``ref`` fixes, as substitutions; the conditions under
        which the tile they select exists (none where proved); and the ranges
        known for the loop variables they are made of."""
        subs, extra, ranges = {}, [], {}
        for var, (value, size, key_node) in ref.fixed.items():
            subs[var] = value
            self._loop_check(value, size, ref.param, key_node)
            size = size.xreplace(self.records.size_subs)
            known = self._known_range(value)
            ranges.update(known or {})
            if not (known and bounds.holds(sympy.Lt(value, size), {**self.base_ranges(), **known})):
                if not (value.is_nonnegative or bounds.nonnegative(value, {**self.base_ranges(), **(known or {})})):
                    extra.append(sympy.Ge(value, 0))
                extra.append(sympy.Lt(value, size))
        return subs, extra, ranges

    def _descriptor_access(self, ref):
        """How to reach the tile ``ref`` through a tensor descriptor, or None
        when it does not meet the rules: every dimension of the tile runs along
        its own dimension of the source with unit step, in a power-of-two
        extent, and every condition still needed is a bound of the source (the
        hardware reads zeros outside and drops writes there, which is what the
        masks do).  Returns (descriptor name, coordinates (AST), the
        permutation back to the tile's order or None, the shape to reshape
        the block to or None)."""
        p = ref.param
        if not ref.innermost or p.other not in (None, 0) or not 2 <= len(p.sizes) <= 5:
            return None
        subs, extra, known = self._fixed(ref)
        if extra:
            return None  # a tile that may not exist: keep the pointer load
        vars = p.level_vars[ref.depth]
        level = p.levels[ref.depth]
        vectorized = [vars[j] for j in ref.dims]
        extents = {}
        for j in ref.dims:
            n = level[j].xreplace(self.records.size_subs)
            extent = block_extent_expr(level[j], self.records.pow2)
            if not (_is_pow2(sympy.sympify(extent)) or extent in self.records.pow2.values()):
                return None
            extents[vars[j]] = (extent, n)
        sizes = [s.xreplace(self.records.size_subs) for s in p.sizes]
        index = [sympy.expand(e.xreplace(subs).xreplace(self.records.size_subs)) for e in p.index]
        dim_of = {}
        for d, e in enumerate(index):
            present = e.free_symbols & set(vectorized)
            if len(present) > 1:
                return None
            if present:
                (v,) = present
                if sympy.expand(e - v).has(v):
                    return None
                dim_of[v] = d
        if set(dim_of) != set(vectorized):
            return None  # the tile repeats along a dimension
        bounds_needed = set()
        for d, (e, n) in enumerate(zip(index, sizes)):
            bounds_needed.add(("lt", sympy.expand(e - n)))
            bounds_needed.add(("ge", e))
        conditions = [c.xreplace(subs).xreplace(self.records.size_subs) for c in p.conditions]
        for v, (extent, n) in extents.items():
            if extent != n:
                # A padded block: only where the tile is the whole source dimension.
                if index[dim_of[v]] != v or sympy.expand(n - sizes[dim_of[v]]) != 0:
                    return None
                conditions.append(sympy.Lt(v, n))
        ranges = {**self.base_ranges(), **{v: extent for v, (extent, _) in extents.items()}, **known}
        for c in conditions:
            if c is sympy.true or bounds.holds(c, ranges):
                continue
            if isinstance(c, sympy.StrictLessThan):
                key = ("lt", sympy.expand(c.lhs - c.rhs))
            elif isinstance(c, sympy.GreaterThan):
                key = ("ge", sympy.expand(c.lhs - c.rhs))
            else:
                return None
            if key not in bounds_needed:
                return None
        block = [sympy.Integer(1)] * len(index)
        for v, d in dim_of.items():
            block[d] = extents[v][0]
        name = self.descriptor_name(p, block)
        printer = self.printer()
        zero = {v: 0 for v in vectorized}
        try:
            coords = [printer(e.xreplace(zero)) for e in index]
        except PrintError:
            return None
        source_order = sorted(vectorized, key=lambda v: dim_of[v])
        tile_order = None
        if source_order != vectorized:
            tile_order = [source_order.index(v) for v in vectorized]
        squeeze = None
        if len(vectorized) != len(index):
            squeeze = [Printer()(extents[v][0]) for v in source_order]
        return name, coords, tile_order, squeeze

    def descriptor_name(self, p, block):
        for name, (param, shape) in self.records.descriptors.items():
            if param is p and shape == block:
                return name
        name = f"{p.name}_desc" + (f"_{len(self.records.descriptors)}" if any(q is p for q, _ in self.records.descriptors.values()) else "")
        while name in self.facts.user_names or name in self.records.descriptors:
            name += "_"
        self.records.descriptors[name] = (p, block)
        return name

    def _contiguous_offset(self, p, index, offset):
        """The element offset of ``index`` in ``p`` if ``p`` is contiguous,
        when that takes fewer divisions than ``offset`` (any strides), else None."""
        if not p.strides or not all(isinstance(s, sympy.Symbol) for s in p.strides):
            return None
        weights, running = [], sympy.S.One
        for n in reversed(p.sizes):
            weights.append(running)
            running = running * n.xreplace(self.records.size_subs)
        weights.reverse()
        simpler = recombine(sympy.Add(*[i * w for i, w in zip(index, weights)]))
        return simpler if _divisions(simpler) < _divisions(offset) else None

    def _invariant(self, expr, vectorized):
        """Whether ``expr`` is the same in every iteration of every loop: it
        depends only on program ids, block indices, sizes and block sizes."""
        allowed = set(self.ir.program_vars) | vectorized | set(self.ir.symbols.values())
        return expr.free_symbols <= allowed

    def _hoisted_sum(self, p, offset, printer, vectorized):
        """Print ``offset``; inside loops, the part that no loop changes is
        computed once, before the outermost statement (loop-invariant code
        motion for index math Triton would otherwise redo every iteration)."""
        if not self.loops.ranges:
            return printer(offset)
        terms = _distributed_terms(offset)
        invariant = [t for t in terms if self._invariant(t, vectorized)]
        if not invariant or len(invariant) == len(terms):
            return printer(offset)
        part = sympy.Add(*invariant)
        key = (p.name, part, _names_key(printer))
        if key not in self.hoist.computed:
            name = f"{p.name}_base_{len(self.hoist.computed)}"
            self.blocks.top_pre.append(ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=printer(part), lineno=0))
            self.hoist.computed[key] = name
        rest = sympy.Add(*[t for t in terms if t not in invariant])
        return ast.BinOp(left=ast.Name(id=self.hoist.computed[key], ctx=ast.Load()), op=ast.Add(), right=printer(rest))

    def _carried(self, p, offsets, printer, shape):
        """The name of a pointer block that the innermost loop whose variable
        ``offsets`` use carries from one iteration to the next, or None.

        ``offsets`` are (contiguity flag or None, offset) pairs, chosen at
        compile time by the flag.  Where each is affine in the loop variable
        ``v`` (``a + v * d``, nothing in ``a`` or ``d`` and not ``v`` assigned
        in the loop's body, ``d`` one number per program; ``_loop_body``
        checks again on the emitted body, inlined calls included), the
        pointers are set to
        ``ptr + a + start * d`` before the loop and advanced by ``step * d``
        at the end of each iteration: one 64-bit add per element where
        ``ptr + (a + v * d)`` costs an index add, a widening and an address
        computation, but 64-bit pointers live through the loop where the
        other form keeps 32-bit offsets.  Neither wins everywhere (on an
        H100, attention ran 4 % faster advancing pointers, matrix products
        5 % slower), so both are emitted and the tuner times both."""
        free = set().union(*(o.free_symbols for _, o in offsets))
        frame = next((f for f in reversed(self.loops.frames) if f.var in free), None)
        if frame is None or frame.start is None:
            return None
        parts = []
        for flag, offset in offsets:
            if {s.name for s in offset.free_symbols} & frame.assigned:
                return None  # the body changes the index or what the offset is made of
            step = sympy.S.Zero
            for term in _distributed_terms(offset):
                if frame.var in term.free_symbols:
                    coefficient, rest = term.as_independent(frame.var, as_Add=False)
                    if rest != frame.var:
                        return None
                    step += coefficient
            if step.free_symbols & (set(printer.names) | {frame.var}):
                return None  # not one number per program
            parts.append((flag, offset, step))
        key = (p.name, tuple(o for _, o in offsets), _names_key(printer), ast.dump(shape) if shape else None)
        if key not in frame.pointers:
            # Named per access, not from the temporaries' counter: a peeled
            # loop's second body reuses the names of its first.
            name = self.loops.pointer_names.get(key)
            if name is None:
                name = f"{p.name}_ptrs_{len(self.loops.pointer_names)}"
                while name in self.facts.user_names:
                    name += "_"
                self.loops.pointer_names[key] = name
            frame.pointers[key] = (name, p, parts, printer, shape)
        return frame.pointers[key][0]

    def _carried_inits(self, frame, start):
        """The statements that set ``frame``'s carried pointers before its
        loop, which starts at ``start``."""
        inits = []
        for name, p, parts, printer, shape in frame.pointers.values():
            values = []
            for _, offset, _ in parts:
                first = offset.xreplace({frame.var: start})
                # The loop-invariant offset, where already computed.
                names = _names_key(printer)
                hoisted = next((hoisted for (owner, part, used), hoisted in self.hoist.computed.items()
                                if owner == p.name and used == names and isinstance(part, sympy.Expr)
                                and sympy.expand(part - first) == 0), None)
                if hoisted is not None:
                    first = ast.Name(id=hoisted, ctx=ast.Load())
                else:
                    first = self._hoisted_sum(p, first, printer, set(printer.names))
                values.append(ast.BinOp(left=ast.Name(id=f"{p.name}_ptr", ctx=ast.Load()), op=ast.Add(), right=first))
            inits.append(ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())],
                                    value=_broadcast(self._by_contiguity(parts, values), shape), lineno=0))
        if not inits:
            return []
        self.records.advances = True
        return [ast.If(test=ast.Name(id=self.records.advance_flag, ctx=ast.Load()), body=inits, orelse=[])]

    def _advanced(self, frame, body):
        """``body`` with ``frame``'s carried pointers advanced at its end."""
        advances = []
        for name, p, parts, printer, shape in frame.pointers.values():
            steps = [printer(step * frame.step) for _, _, step in parts]
            advances.append(ast.AugAssign(target=ast.Name(id=name, ctx=ast.Store()), op=ast.Add(),
                                          value=self._by_contiguity(parts, steps), lineno=0))
        if not advances:
            return body
        return body + [ast.If(test=ast.Name(id=self.records.advance_flag, ctx=ast.Load()), body=advances, orelse=[])]

    @staticmethod
    def _by_contiguity(parts, values):
        """One of ``values`` (one per part): with a contiguous form and the
        general one, the contiguity flag chooses at compile time."""
        if len(values) == 1:
            return values[0]
        return ast.IfExp(test=ast.Name(id=parts[0][0], ctx=ast.Load()), body=values[0], orelse=values[1])

    def _mask(self, conditions, printer, ranges):
        """The conjunction of the conditions as one block of booleans.

        Conditions on scalars only (program or loop indices) select whole
        tiles; they are applied with ``tl.where`` rather than ``&``, which
        Triton's interpreter mistypes when it broadcasts a scalar boolean."""
        vector = [c for c in conditions if c.free_symbols & set(ranges)]
        scalar = [c for c in conditions if not (c.free_symbols & set(ranges))]
        block = conjunction(printer(c) for c in vector)
        if self.loops.ranges:
            fixed = [c for c in vector if self._invariant(c, set(ranges))]
            if fixed:
                key = ("mask", tuple(fixed), _names_key(printer))
                if key not in self.hoist.computed:
                    name = f"mask_{len(self.hoist.computed)}"
                    self.blocks.top_pre.append(ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=conjunction(printer(c) for c in fixed), lineno=0))
                    self.hoist.computed[key] = name
                block = ast.Name(id=self.hoist.computed[key], ctx=ast.Load())
                if len(fixed) < len(vector):
                    rest = conjunction(printer(c) for c in vector if c not in fixed)
                    block = ast.BinOp(left=block, op=ast.BitAnd(), right=rest)
        if not scalar:
            return block
        if block is None:  # a block that is all true, shaped like the tile
            block = conjunction(printer(sympy.Lt(v, e)) for v, e in ranges.items())
        if block is None:
            return conjunction(printer(c) for c in scalar)
        return ast.Call(
            func=ast.Attribute(value=ast.Name(id="tl", ctx=ast.Load()), attr="where", ctx=ast.Load()),
            args=[conjunction(printer(c) for c in scalar), block, ast.Constant(False)],
            keywords=[],
        )

    def _known_range(self, value):
        free = value.free_symbols
        known = {s: self.loops.ranges[s] for s in free if s in self.loops.ranges}
        return known if set(known) == free else None

    def _loop_check(self, value, size, param, node):
        """``x[k]`` with ``k`` looping over ``range(n)``: the level must have
        exactly ``n`` tiles, or the loop reads a partial or overflowing range."""
        if not (value.is_Symbol and value in self.loops.trips):
            return
        bound = self.loops.trips[value]
        if bound == size or sympy.expand(bound - size) == 0:
            return
        relation = _sizes_relation(size, bound)
        if relation is sympy.true:
            return
        if not relation.free_symbols <= set(self.ir.symbols.values()):
            return  # the bound involves values of the application: not checkable
        if isinstance(relation, sympy.Eq) and relation.lhs.is_Symbol and relation.rhs.is_Symbol:
            # Checked at launch, so the kernel may use one size for both.
            self.records.size_subs[relation.lhs] = relation.rhs
        check = Check(
            relation,
            f"`{param.name}` is indexed by `{value}`, which runs over range({bound}), but that "
            f"level of `{param.name}` has {size} tiles",
            f"the loop over `{value}` reads `{param.name}`",
        )
        if check not in self.records.checks:  # a peeled loop body is emitted twice
            self.records.checks.append(check)

    def arange_name(self, p, depth, j, pos, count, extent):
        key = (p.name, depth, j, pos, count)
        if key not in self.records.prologue_defs:
            name = f"{p.name}_t{j}" if depth == len(p.levels) - 1 and count == len(p.levels[depth]) else f"{p.name}_l{depth}_t{j}_{pos}of{count}"
            node = ast.Call(
                func=ast.Attribute(value=ast.Name(id="tl", ctx=ast.Load()), attr="arange", ctx=ast.Load()),
                args=[ast.Constant(0), Printer()(extent)],
                keywords=[],
            )
            if count > 1:
                elts = [ast.Slice() if k == pos else ast.Constant(None) for k in range(count)]
                node = ast.Subscript(value=node, slice=ast.Tuple(elts=elts, ctx=ast.Load()), ctx=ast.Load())
            self.records.prologue_defs[key] = (name, node)
        return self.records.prologue_defs[key][0]

    def source_address(self, sub):
        """Pointer and bounds mask for ``x.source[i, j, ...]`` with index tiles."""
        p = self.resolve(sub.value).param
        self.records.sourced.add(p.name)
        keys = sub.slice.elts if isinstance(sub.slice, ast.Tuple) else [sub.slice]
        if len(keys) != p.ndim:
            raise self.error(f"`{p.name}.source[...]` needs {p.ndim} indices, got {len(keys)}", sub)
        pointer = ast.Name(id=f"{p.name}_ptr", ctx=ast.Load())
        mask = []
        printer = self.printer()
        for key, stride, size in zip(keys, p.strides, p.sizes):
            index = self.expr(key)
            pointer = ast.BinOp(left=pointer, op=ast.Add(), right=ast.BinOp(left=index, op=ast.Mult(), right=printer(stride)))
            mask.append(ast.Compare(left=copy.deepcopy(index), ops=[ast.GtE()], comparators=[ast.Constant(0)]))
            mask.append(ast.Compare(left=copy.deepcopy(index), ops=[ast.Lt()], comparators=[printer(size)]))
        return p, pointer, conjunction(mask)

    def gather(self, sub, _):
        p, pointer, mask = self.source_address(sub)
        self.records.loaded.add(p.name)
        other = _other(p.other)
        return ast.Call(
            func=ast.Attribute(value=ast.Name(id="tl", ctx=ast.Load()), attr="load", ctx=ast.Load()),
            args=[pointer],
            keywords=[ast.keyword(arg="mask", value=mask), ast.keyword(arg="other", value=_constant(other))],
        )

    def scatter(self, sub, value, stmt):
        p, pointer, mask = self.source_address(sub)
        self.records.stored.add(p.name)
        call = ast.Call(
            func=ast.Attribute(value=ast.Name(id="tl", ctx=ast.Load()), attr="store", ctx=ast.Load()),
            args=[pointer, value],
            keywords=[ast.keyword(arg="mask", value=mask)],
        )
        return ast.copy_location(ast.Expr(value=call), stmt)

    def load(self, ref, node):
        self.records.loaded.add(ref.param.name)
        if self.tma and ref.param.name not in self.facts.maybe_written:
            access = self._descriptor_access(ref)
            if access is not None:
                name, coords, tile_order, squeeze = access
                call = _method(ast.Name(id=name, ctx=ast.Load()), "load", [ast.List(elts=coords, ctx=ast.Load())])
                if squeeze:
                    call = _method(call, "reshape", squeeze)
                if tile_order is not None:
                    call = _tl("permute", call, ast.Tuple(elts=[ast.Constant(i) for i in tile_order], ctx=ast.Load()))
                return call
        pointer, mask = self.address(ref, node)
        keywords = []
        if mask is not None:
            keywords.append(ast.keyword(arg="mask", value=mask))
            other = ref.param.other
            keywords.append(ast.keyword(arg="other", value=_constant(_other(other))))
        return ast.Call(
            func=ast.Attribute(value=ast.Name(id="tl", ctx=ast.Load()), attr="load", ctx=ast.Load()),
            args=[pointer],
            keywords=keywords,
        )

    def store(self, ref, value, node):
        name = ref.param.name
        self.records.stored.add(name)
        if self.tma and name in self.facts.stored_once and name not in self.facts.read | self.records.loaded:
            access = self._descriptor_access(ref)
            if access is not None:
                desc, coords, tile_order, squeeze = access
                level = ref.param.levels[ref.depth]
                shape = [Printer()(block_extent_expr(level[j], self.records.pow2)) for j in ref.dims]
                # The descriptor stores exactly its block, in the tensor's type.
                value = _tl("broadcast_to", value, ast.Tuple(elts=shape, ctx=ast.Load()))
                value = _method(value, "to", [ast.Attribute(
                    value=ast.Attribute(value=ast.Name(id=f"{ref.param.name}_ptr", ctx=ast.Load()), attr="dtype", ctx=ast.Load()),
                    attr="element_ty", ctx=ast.Load())])
                if tile_order is not None:
                    inverse = [tile_order.index(i) for i in range(len(tile_order))]
                    value = _tl("permute", value, ast.Tuple(elts=[ast.Constant(i) for i in inverse], ctx=ast.Load()))
                if squeeze:
                    value = _method(value, "reshape", [Printer()(b) for b in self.records.descriptors[desc][1]])
                call = _method(ast.Name(id=desc, ctx=ast.Load()), "store", [ast.List(elts=coords, ctx=ast.Load()), value])
                return ast.copy_location(ast.Expr(value=call), node)
        pointer, mask = self.address(ref, node)
        keywords = [ast.keyword(arg="mask", value=mask)] if mask is not None else []
        call = ast.Call(
            func=ast.Attribute(value=ast.Name(id="tl", ctx=ast.Load()), attr="store", ctx=ast.Load()),
            args=[pointer, value],
            keywords=keywords,
        )
        return ast.copy_location(ast.Expr(value=call), node)

    # -- the body -------------------------------------------------------------

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
        body = self.statements(copy.deepcopy(func.body))
        return body

    def statements(self, stmts):
        out = []
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

    def statement(self, stmt):
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
            if isinstance(target, ast.Name):
                self.names.locals.add(target.id)
            return ast.copy_location(ast.AnnAssign(target=target, annotation=annotation, value=self.expr(stmt.value), simple=1), stmt)
        if isinstance(stmt, ast.AugAssign):
            ref = self.resolve(stmt.target) if self._is_tensor_target(stmt.target) else None
            if ref is not None:
                value = ast.BinOp(left=self.load(ref, stmt), op=stmt.op, right=self.expr(stmt.value))
                self.invalidate(ref.param.name)
                return self.store(ref, value, stmt)
            return ast.copy_location(ast.AugAssign(target=stmt.target, op=stmt.op, value=self.expr(stmt.value)), stmt)
        if isinstance(stmt, ast.Expr):
            if isinstance(stmt.value, ast.Call):
                inlined = self.try_inline(stmt.value, statement=True)
                if inlined is not None:
                    return inlined
            return ast.copy_location(ast.Expr(value=self.expr(stmt.value)), stmt)
        if isinstance(stmt, ast.For):
            return self.for_loop(stmt)
        if isinstance(stmt, ast.If):
            test = self.expr(stmt.test)
            with self._branch(stmt.body + stmt.orelse):
                body = self.block(stmt.body)
                orelse = self.block(stmt.orelse) if stmt.orelse else []
            return ast.copy_location(ast.If(test=test, body=body, orelse=orelse), stmt)
        if isinstance(stmt, ast.While):
            self._enter_loop()
            with self._branch(stmt.body + [stmt.test]):
                test = self.expr(stmt.test)
                body = self.block(stmt.body)
            return ast.copy_location(ast.While(test=test, body=body, orelse=[]), stmt)
        if isinstance(stmt, ast.Pass):
            return stmt
        if isinstance(stmt, ast.Return):
            if stmt.value is None:
                return stmt
            raise self.error("an application returns nothing; assign results to output parameters", stmt)
        if isinstance(stmt, (ast.Assert,)):
            return ast.copy_location(ast.Assert(test=self.expr(stmt.test), msg=stmt.msg), stmt)
        raise self.error(f"`{type(stmt).__name__}` statements are not supported in applications", stmt)

    def _is_tensor_target(self, target):
        node = target
        while isinstance(node, ast.Subscript):
            node = node.value
        return isinstance(node, ast.Name) and node.id in self.tensors and node.id not in self.names.locals

    def assign(self, target, value_node, stmt):
        if isinstance(target, ast.Subscript) and isinstance(self.resolve(target.value), _SourceRef):
            return self.scatter(target, self.expr(value_node), stmt)
        if self._is_tensor_target(target):
            ref = self.resolve(target)
            value = self.expr(value_node)
            self.invalidate(ref.param.name)
            return self.store(ref, value, stmt)
        if isinstance(target, ast.Name):
            value = self.expr(value_node)
            self.names.locals.add(target.id)
            self.invalidate(target.id)
            self.values.sizes.pop(target.id, None)
            self.shapes.padded_locals.pop(target.id, None)
            self.shapes.padded_sizes.pop(target.id, None)
            self.values.index.pop(target.id, None)
            if self.values.track:
                index = self.index_value(value_node)
                if index is not None:
                    self.values.index[target.id] = index
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
            for e in target.elts:
                if e.id in self.tensors and e.id not in self.names.locals:
                    raise self.error(f"unpacking into the parameter `{e.id}` is not supported; assign it alone", stmt)
                self.names.locals.add(e.id)
                self.values.index.pop(e.id, None)
                self.values.sizes.pop(e.id, None)
                self.shapes.padded_locals.pop(e.id, None)
                self.shapes.padded_sizes.pop(e.id, None)
            return ast.copy_location(ast.Assign(targets=[target], value=self.expr(value_node)), stmt)
        raise self.error(f"cannot assign to `{ast.unparse(target)}`", stmt)

    def for_loop(self, stmt):
        if not isinstance(stmt.target, ast.Name):
            raise self.error("loop targets must be a single name", stmt)
        it = stmt.iter
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id in ("range", "static_range")):
            if isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and it.func.attr == "static_range":
                pass
            else:
                raise self.error("only `for i in range(...)` loops are supported", it)
        if stmt.target.id in self.params and stmt.target.id not in self.names.locals:
            raise self.error(
                f"the loop variable `{stmt.target.id}` shadows the parameter `{stmt.target.id}`; "
                "choose another name",
                stmt.target,
            )
        var = sympy.Symbol(stmt.target.id, integer=True)
        args = it.args
        bound = None
        if len(args) == 1:
            try:
                bound = self.to_sympy(args[0])
            except EmitError:
                bound = None
            if bound is not None:
                self.loops.ranges[var] = bound
                self.loops.trips[var] = bound
        self.names.locals.add(stmt.target.id)
        new_iter = ast.Call(func=self.expr(it.func), args=[self.expr(a) for a in args], keywords=[self.keyword(k) for k in it.keywords])
        assigned = assigned_names(stmt.body) | {stmt.target.id}
        start, step = self._range_start_step(it, assigned)
        self._forget(assigned)
        self._enter_loop()
        # A loop over the blocks of a size, cdiv(n, b) of them, is peeled:
        # the first n // b iterations see whole blocks, where masks and
        # comparisons against n may be proved away; the last one keeps them.
        main = None
        peel = (
            isinstance(bound, CeilDiv)
            and isinstance(it.func, ast.Name) and it.func.id == "range" and not it.keywords
            and not any(isinstance(n, (ast.For, ast.While)) for b in stmt.body for n in ast.walk(b))
        )
        if peel:
            counter = self.names.counter
            self.loops.ranges[var] = FloorDiv(*bound.args)
            main_frame, main = self._loop_body(copy.deepcopy(stmt.body), var, start, step)
            self._forget(assigned)
            self.names.counter = counter  # the same temporaries in both bodies
            self.loops.ranges[var] = bound
        frame, body = self._loop_body(stmt.body, var, start, step)
        self.loops.ranges.pop(var, None)
        self.loops.trips.pop(var, None)
        self._forget(assigned)
        loop = ast.copy_location(ast.For(target=stmt.target, iter=new_iter, body=body, orelse=[]), stmt)
        if main is None or ast.dump(ast.Module(body=main, type_ignores=[])) == ast.dump(ast.Module(body=body, type_ignores=[])):
            inits = self._carried_inits(frame, start)
            return inits + [loop] if inits else loop
        main_inits = self._carried_inits(main_frame, start)
        inits = self._carried_inits(frame, FloorDiv(*bound.args))
        whole = self.printer()(FloorDiv(*bound.args))
        first = ast.For(
            target=stmt.target,
            iter=ast.Call(func=ast.Name(id="range", ctx=ast.Load()), args=[whole], keywords=[]),
            body=main,
            orelse=[],
        )
        loop.iter = ast.Call(func=ast.Name(id="range", ctx=ast.Load()), args=[copy.deepcopy(whole), new_iter.args[0]], keywords=[])
        # The last, partial block exists only when the size is not a multiple
        # of the block: a flag the launcher computes keeps it out of the
        # compiled kernel otherwise (a dead loop still costs registers and
        # pipelining set-up; about 6 % of an attention kernel on an H100).
        flag = self._whole_flag(*bound.args)
        guarded = ast.If(
            test=ast.UnaryOp(op=ast.Not(), operand=ast.Name(id=flag, ctx=ast.Load())),
            body=inits + [ast.copy_location(loop, stmt)],
            orelse=[],
        )
        return main_inits + [ast.copy_location(first, stmt), ast.copy_location(guarded, stmt)]

    def _range_start_step(self, it, assigned):
        """The first value and the step of ``range(...)`` as index math, or
        (None, None) where they are not (or the loop changes the step)."""
        if it.keywords or not 1 <= len(it.args) <= 3:
            return None, None
        try:
            start = self.to_sympy(it.args[0]) if len(it.args) > 1 else sympy.S.Zero
            step = self.to_sympy(it.args[2]) if len(it.args) == 3 else sympy.S.One
        except EmitError:
            return None, None
        if {s.name for s in step.free_symbols} & assigned:
            return None, None
        return start, step

    def _loop_body(self, stmts, var, start, step):
        """Emit a loop body (its advances appended), collecting the pointer
        blocks the loop carries."""
        frame = _LoopFrame(var, start, step, assigned_names(stmts))
        self.loops.frames.append(frame)
        try:
            body = self.block(stmts)
        finally:
            self.loops.frames.pop()
        # What the emitted body assigns includes what inlined functions do (to
        # the caller's names their parameters became, and to their locals): a
        # pointer whose offset, loop index or step it changes is not carried.
        stored = assigned_names(body)
        dropped = set()
        for key, (name, p, parts, printer, shape) in list(frame.pointers.items()):
            used = {s.name for _, offset, _ in parts for s in offset.free_symbols}
            if (used | {var.name} | {s.name for s in step.free_symbols}) & stored:
                dropped.add(name)
                del frame.pointers[key]
        if dropped:
            body = [_IndexForm(self.records.advance_flag, dropped).visit(s) for s in body]
        return frame, self._advanced(frame, body)

    def _whole_flag(self, size, block):
        for name, key in self.records.whole.items():
            if key == (size, block):
                return name
        name = f"NTSYM_WHOLE_{len(self.records.whole)}"
        self.records.whole[name] = (size, block)
        return name

    def _enter_loop(self):
        """Tiles loaded before a loop of a tensor the application writes are
        not reused inside it: a store later in the body changes what the next
        iteration must read."""
        for name in self.facts.maybe_written:
            self.invalidate(name)

    def _forget(self, names):
        """What ``names`` hold is not known here: they are assigned in a loop
        (a later iteration sees the new value, even where the assignment comes
        after this point in the text) or in a branch that may not run."""
        for name in names:
            self.values.index.pop(name, None)
            self.values.sizes.pop(name, None)
            self.shapes.padded_locals.pop(name, None)
            self.shapes.padded_sizes.pop(name, None)

    @contextlib.contextmanager
    def _branch(self, stmts):
        """Statements that may or may not run: what they assign is not
        known after them, and their assignments do not dominate."""
        assigned = assigned_names(stmts)
        self._forget(assigned)
        saved, self.values.track = self.values.track, False
        try:
            yield
        finally:
            self.values.track = saved
            self._forget(assigned)

    # -- index values: what a local holds, as index math ------------------------

    def index_value(self, node):
        """The value of ``node`` as SymPy index math over loop variables, tile
        index variables, sizes and block sizes, or None.  Only values built
        from one tile's offsets (moved around by ``trans`` or new axes, which
        keep the set of values) and scalars are followed."""
        try:
            return self._index_value(node)
        except (_NotIndex, EmitError):
            return None

    def _index_value(self, node):
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
            return sympy.Integer(node.value)
        if isinstance(node, ast.Name):
            if node.id in self.values.index:
                return self.values.index[node.id]
            var = sympy.Symbol(node.id, integer=True)
            if var in self.loops.trips:
                return var
            if node.id in self.values.sizes:
                return self.values.sizes[node.id]
            key = self._constant_key(node)
            if key is not None and _is_int(self.ir.constants[key]):
                return sympy.Integer(self.ir.constants[key])
            raise _NotIndex
        shape = self.shape_value(node)
        if shape is not None:
            return shape
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and len(node.args) == 1 and not node.keywords:
            ref = self.resolve(node.func.value)
            if isinstance(ref, _Ref) and node.func.attr == "offsets":
                return self._offsets_value(ref, node)
            if node.func.attr == "trans" and self.alias(node.func.value) == "tl":
                return self._index_value(node.args[0])
        if isinstance(node, ast.Subscript):
            keys = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if all(
                (isinstance(k, ast.Constant) and k.value is None)
                or (isinstance(k, ast.Slice) and k.lower is None and k.upper is None and k.step is None)
                for k in keys
            ) and self.resolve(node.value) is None:
                return self._index_value(node.value)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -self._index_value(node.operand)
        if isinstance(node, ast.BinOp):
            a, b = self._index_value(node.left), self._index_value(node.right)
            if a.free_symbols & b.free_symbols & set(self.values.tile_vars):
                raise _NotIndex  # elementwise pairs of one tile's values: not followed
            value = _arithmetic(node.op, a, b)
            if value is not None:
                return value
        raise _NotIndex

    def _offsets_value(self, ref, node):
        d = _literal_int(node.args[0])
        p = ref.param
        if not isinstance(d, int) or not -p.ndim <= d < p.ndim:
            raise _NotIndex
        subs = {var: value for var, (value, _, _) in ref.fixed.items()}
        vars = p.level_vars[ref.depth]
        for j in ref.dims:
            self.values.tile_vars[vars[j]] = block_extent_expr(p.levels[ref.depth][j], self.records.pow2)
        return p.index[d].xreplace(subs)

    def proved(self, node):
        """Whether the comparison ``node`` holds for every element and every
        iteration it can see (its sides' tile values compared pairwise in
        any arrangement: they may share no tile variable)."""
        relations = {ast.Lt: sympy.Lt, ast.LtE: sympy.Le, ast.Gt: sympy.Gt, ast.GtE: sympy.Ge}
        if not (isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in relations):
            return False
        a, b = self.index_value(node.left), self.index_value(node.comparators[0])
        if a is None or b is None:
            return False
        tiles = set(self.values.tile_vars)
        if a.free_symbols & b.free_symbols & tiles:
            return False
        ranges = {**self.base_ranges(), **self.values.tile_vars}
        return bounds.holds(relations[type(node.ops[0])](a, b), ranges)

    def keyword(self, k):
        return ast.keyword(arg=k.arg, value=self.expr(k.value))

    # -- expressions ------------------------------------------------------------

    def expr(self, node):
        if node is None:
            return None
        shape = self.shape_value(node)
        if shape is not None:
            return self.printer()(shape)
        ref = self.resolve(node)
        if isinstance(ref, ast.Subscript):
            return self.gather(ref, None)
        if isinstance(ref, _SourceRef):
            raise self.error(f"`{ast.unparse(node)}` is a whole tensor; index it or use its shape", node)
        if ref is not None:
            return self.tile_value(ref, node)
        if isinstance(node, ast.Name):
            if self.shapes.building and node.id in self.shapes.padded_locals:
                return copy.deepcopy(self.shapes.padded_locals[node.id])
            if node.id in self.params and node.id not in self.names.locals:
                return ast.Name(id=node.id, ctx=ast.Load())
            alias = self.alias(node)
            if alias in ("tl", "libdevice"):
                return self.module_name(alias)
            constant = self.constant(node)
            if constant is not None:
                return constant
            return node
        if isinstance(node, ast.Attribute):
            return self.attribute(node)
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.BoolOp):
            op = ast.BitAnd() if isinstance(node.op, ast.And) else ast.BitOr()
            values = [self.expr(v) for v in node.values]
            result = values[0]
            for v in values[1:]:
                result = ast.BinOp(left=result, op=op, right=v)
            return result
        if isinstance(node, ast.Tuple):
            return ast.Tuple(elts=[self.expr(e) for e in node.elts], ctx=ast.Load())
        if isinstance(node, ast.List):
            return ast.List(elts=[self.expr(e) for e in node.elts], ctx=ast.Load())
        if isinstance(node, (ast.Constant,)):
            return node
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

    def tile_value(self, ref, node):
        """The value of a tile: loaded once per block where possible."""
        whole = not ref.fixed and ref.depth == 1
        if whole:
            for c in self.blocks.caches:
                if ref.param.name in c:
                    return ast.Name(id=c[ref.param.name], ctx=ast.Load())
            name = f"{ref.param.name}_tile"
            while name in self.names.locals:
                name += "_"
            # A tile the application never writes is the same in every loop
            # iteration: load it once, before the outermost statement using it.
            hoist = ref.param.name not in self.facts.maybe_written
            cache = self.blocks.caches[0] if hoist else self.blocks.caches[-1]
            pre = self.blocks.top_pre if hoist else self.blocks.pre
            pre.append(ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=self.load(ref, node), lineno=0))
            cache[ref.param.name] = name
            return ast.Name(id=name, ctx=ast.Load())
        return self.load(ref, node)

    def attribute(self, node):
        ref = self.resolve(node.value)
        if isinstance(ref, _SourceRef):
            if node.attr == "shape":
                return ast.Tuple(elts=[self.printer()(n) for n in ref.param.sizes], ctx=ast.Load())
            if node.attr == "dtype":
                return ast.Attribute(
                    value=ast.Attribute(value=ast.Name(id=f"{ref.param.name}_ptr", ctx=ast.Load()), attr="dtype", ctx=ast.Load()),
                    attr="element_ty",
                    ctx=ast.Load(),
                )
            raise self.error(f"`x.source.{node.attr}` is not supported (shape, dtype, stride(d), data_ptr(), x.source[i, ...])", node)
        if isinstance(ref, _Ref):
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
        alias = self.alias(node)
        if alias in ("tl", "libdevice"):
            return self.module_name(alias)
        constant = self.constant(node)
        if constant is not None:
            return constant
        alias = self.alias(node.value)
        if alias in ("tl", "libdevice"):
            return ast.Attribute(value=self.module_name(alias), attr=node.attr, ctx=ast.Load())
        return ast.Attribute(value=self.expr(node.value), attr=node.attr, ctx=ast.Load())

    def alias(self, node):
        """What a module path of the application (``ntl``, ``ntsym.language``,
        ``ntl.libdevice``) stands for: "tl", "libdevice", a module, or None."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or node.id in self.names.locals:
            return None
        dotted = ".".join([node.id] + parts[::-1])
        alias = self.ir.module_aliases.get(dotted)
        if alias is None and parts and parts[0] == "libdevice" and self.alias(node) == "tl":
            return "libdevice"
        return alias

    def _constant_key(self, node):
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or node.id in self.names.locals:
            return None
        key = ".".join([node.id] + parts[::-1])
        return key if key in self.ir.constants else None

    def constant(self, node):
        """A global or closure constant (``SCALE``, ``math.pi``) as a literal
        of the generated code, else None."""
        key = self._constant_key(node)
        return None if key is None else _literal(self.ir.constants[key])

    def number(self, node):
        """Whether ``node`` is a Python number at compile time (``2.0``,
        ``SCALE``, ``-math.pi / 2``): Triton's math functions take those as
        they are."""
        if isinstance(node, ast.Constant):
            return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
        if isinstance(node, ast.UnaryOp):
            return self.number(node.operand)
        if isinstance(node, ast.BinOp):
            return self.number(node.left) and self.number(node.right)
        key = self._constant_key(node)
        return key is not None and isinstance(self.ir.constants[key], (int, float))

    def module_name(self, alias):
        """The generated module's name for "tl" or "libdevice"."""
        if alias == "libdevice":
            self.records.uses_libdevice = True
        return ast.Name(id=alias, ctx=ast.Load())

    def call(self, node):
        func = node.func
        # Methods of tensor parameters: x.offsets(dim), x.source.*.
        if isinstance(func, ast.Attribute):
            ref = self.resolve(func.value)
            if isinstance(ref, _Ref) and func.attr == "offsets":
                return self.offsets(ref, node)
            if isinstance(ref, _SourceRef):
                p = ref.param
                if func.attr == "data_ptr" and not node.args:
                    self.records.sourced.add(p.name)
                    return ast.Name(id=f"{p.name}_ptr", ctx=ast.Load())
                if func.attr in ("stride", "size") and len(node.args) == 1 and isinstance(node.args[0], ast.Constant):
                    d = node.args[0].value
                    values = p.strides if func.attr == "stride" else p.sizes
                    if not -len(values) <= d < len(values):
                        raise self.error(f"`{p.name}` has {len(values)} source dimensions", node)
                    return self.printer()(values[d])
                raise self.error(f"`x.source.{func.attr}(...)` is not supported", node)
        inlined = self.try_inline(node, statement=False)
        if inlined is not None:
            return inlined
        if isinstance(func, ast.Name) and func.id in ("max", "min") and len(node.args) == 2 and not node.keywords:
            name = "maximum" if func.id == "max" else "minimum"
            return ast.Call(
                func=ast.Attribute(value=ast.Name(id="tl", ctx=ast.Load()), attr=name, ctx=ast.Load()),
                args=[self.expr(a) for a in node.args],
                keywords=[],
            )
        if isinstance(func, ast.Attribute):
            if self.alias(func.value) == "tl":
                import triton.language as tl

                if not hasattr(tl, func.attr) and func.attr != "libdevice":
                    raise self.error(f"`{ast.unparse(func)}` does not exist in ntsym.language", func)
                if func.attr == "where" and len(node.args) == 3 and self.proved(node.args[0]):
                    # Proved for every element: Triton folds the select away.
                    return ast.Call(
                        func=ast.Attribute(value=ast.Name(id="tl", ctx=ast.Load()), attr="where", ctx=ast.Load()),
                        args=[ast.Constant(True)] + [self.expr(a) for a in node.args[1:]],
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
        positions, keywords = self._shape_slots(func)
        args = [self.shape_argument(a) if i in positions or (positions == "rest" and i) or positions == "all"
                else self.expr(a) for i, a in enumerate(node.args)]
        kwargs = [ast.keyword(arg=k.arg, value=self.shape_argument(k.value)) if k.arg in keywords else self.keyword(k)
                  for k in node.keywords]
        if isinstance(func, ast.Attribute) and func.attr == "store" and args:
            # A store the application writes itself (``ntl.store``), through
            # pointers made from ``x.source.data_ptr()``.
            self.records.stored.update(
                n.id[:-4] for n in ast.walk(args[0])
                if isinstance(n, ast.Name) and n.id.endswith("_ptr") and n.id[:-4] in self.tensors
            )
        return ast.Call(func=self.expr(func), args=args, keywords=kwargs)

    def _shape_slots(self, func):
        """Which arguments of a call give a shape or an extent: positions (a
        set, "rest" for all but the first, "all") and keyword names."""
        if not isinstance(func, ast.Attribute):
            return (), ()
        name = func.attr
        if self.alias(func.value) == "tl":
            return _TL_SHAPE_SLOTS.get(name, ((), ()))
        if name in _SHAPE_METHODS:
            return "all", ("shape",)
        return (), ()

    def offsets(self, ref, node):
        """``x.offsets(d)``: the source indices along dimension ``d`` of the
        tile's elements; ``x.offsets()``: their offsets from the start of the
        source in elements (the sum of index times stride), as NineToothed
        gives them."""
        p = ref.param
        d = _literal_int(node.args[0]) if len(node.args) == 1 and not node.keywords else None
        if node.args and (d is None or not -p.ndim <= d < p.ndim):
            raise self.error(
                f"`x.offsets(dim)` takes no argument or one constant source dimension; "
                f"`{p.name}` has {p.ndim} source dimensions", node)
        if node.keywords or len(node.args) > 1:
            raise self.error("`x.offsets(dim)` takes no argument or one constant source dimension", node)
        names, subs, ranges = {}, {}, {}
        for var, (value, _, _) in ref.fixed.items():
            subs[var] = value
        vars = p.level_vars[ref.depth]
        if d is None:
            index = sympy.Add(*(i * st for i, st in zip(p.index, p.strides))).xreplace(subs)
        else:
            index = p.index[d].xreplace(subs)
        used = [j for j in ref.dims if vars[j] in index.free_symbols]
        if len(used) == 1 and d is not None:
            # One tile dimension runs along source dimension d: a vector of its
            # offsets (as NineToothed gives), to be broadcast by the caller.
            (j,) = used
            extent = block_extent_expr(p.levels[ref.depth][j], self.records.pow2)
            names = {vars[j]: self.arange_name(p, ref.depth, j, 0, 1, extent)}
            return self.printer(names, {vars[j]: extent})(index)
        for pos, j in enumerate(ref.dims):
            extent = block_extent_expr(p.levels[ref.depth][j], self.records.pow2)
            ranges[vars[j]] = extent
            names[vars[j]] = self.arange_name(p, ref.depth, j, pos, len(ref.dims), extent)
        return self.printer(names, ranges)(index)

    # -- inlining ----------------------------------------------------------------

    def try_inline(self, call, statement):
        func = call.func
        key = None
        if isinstance(func, ast.Name) and func.id in self.ir.inline_functions and func.id not in self.names.locals:
            key = func.id
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            k = f"{func.value.id}.{func.attr}"
            if k in self.ir.inline_functions:
                key = k
        if key is None:
            return None
        sub_def, _ = self.ir.inline_functions[key]
        if call.keywords or len(call.args) != len(sub_def.args.args):
            raise self.error(f"inlined call of `{key}` needs exactly {len(sub_def.args.args)} positional arguments", call)
        self.names.counter += 1
        prefix = f"{sub_def.name}_{self.names.counter}_"
        renames, pre = {}, []
        for param, arg in zip(sub_def.args.args, call.args):
            if isinstance(arg, ast.Name):
                renames[param.arg] = arg.id
            else:
                tmp = prefix + param.arg
                pre.append(ast.Assign(targets=[ast.Name(id=tmp, ctx=ast.Store())], value=arg, lineno=call.lineno))
                renames[param.arg] = tmp
        assigned = {n.id for n in ast.walk(sub_def) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        for name in assigned:
            if name not in renames:
                renames[name] = prefix + name
        body = copy.deepcopy(sub_def.body)
        result = None
        if body and isinstance(body[-1], ast.Return) and body[-1].value is not None:
            result = prefix + "result"
            body[-1] = ast.Assign(targets=[ast.Name(id=result, ctx=ast.Store())], value=body[-1].value, lineno=body[-1].lineno)
        for n in ast.walk(ast.Module(body=body, type_ignores=[])):
            if isinstance(n, ast.Name) and n.id in renames:
                n.id = renames[n.id]
            if isinstance(n, ast.Return) and n.value is not None:
                raise self.error(f"inlined function `{key}` may return only at its end", n)
        # Names the inlined function refers to through its own module.
        _, scope = self.ir.inline_functions[key]
        outer_pre = self.blocks.pre
        stmts = self.statements(pre + body)
        self.blocks.pre = outer_pre
        if statement:
            return stmts
        self.blocks.pre.extend(stmts)
        if result is None:
            raise self.error(f"`{key}` returns nothing but its value is used", call)
        return ast.Name(id=result, ctx=ast.Load())


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _literal(value):
    """A constant of the application's scope as generated code."""
    import triton.language as tl

    if isinstance(value, tuple):
        return ast.Tuple(elts=[_literal(v) for v in value], ctx=ast.Load())
    if isinstance(value, tl.dtype):
        name = next(n for n in dir(tl) if getattr(tl, n) is value)
        return ast.Attribute(value=ast.Name(id="tl", ctx=ast.Load()), attr=name, ctx=ast.Load())
    return _constant(value)


def _literal_int(node):
    """The value of an integer literal (``2``, ``-1``), else None."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        value = _literal_int(node.operand)
        return None if value is None else -value
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    return None


def _tl(attr, *args):
    return ast.Call(func=ast.Attribute(value=ast.Name(id="tl", ctx=ast.Load()), attr=attr, ctx=ast.Load()), args=list(args), keywords=[])


def _method(value, attr, args):
    return ast.Call(func=ast.Attribute(value=value, attr=attr, ctx=ast.Load()), args=list(args), keywords=[])


def _arithmetic(op, a, b):
    """``a op b`` in SymPy for the integer operators of index math (division
    and remainder by a positive divisor only), else None."""
    if isinstance(op, ast.Add):
        return a + b
    if isinstance(op, ast.Sub):
        return a - b
    if isinstance(op, ast.Mult):
        return a * b
    if isinstance(op, ast.FloorDiv) and b.is_positive:
        return FloorDiv(a, b)
    if isinstance(op, ast.Mod) and b.is_positive:
        return Mod(a, b)
    return None


class _NotIndex(Exception):
    pass


class _LoopFrame:
    """A `for` loop being emitted: its variable, its first value and step
    (index math; start None where not), the names its body assigns, and the
    pointer blocks it carries: key -> (name, tensor, parts, printer, shape)."""

    def __init__(self, var, start, step, assigned):
        self.var, self.start, self.step, self.assigned = var, start, step, assigned
        self.pointers = {}


def _names_key(printer):
    """The names a printer gives a tile's index variables: index math keyed
    with them is printed the same way (a tile and a row of it share their
    variables but not their shapes)."""
    return tuple(sorted((str(v), n) for v, n in printer.names.items()))


class _IndexForm(ast.NodeTransformer):
    """Accesses through the carried pointers ``names`` back to their index form."""

    def __init__(self, flag, names):
        self.flag, self.names = flag, names

    def visit_IfExp(self, node):
        node = self.generic_visit(node)
        if (isinstance(node.test, ast.Name) and node.test.id == self.flag
                and isinstance(node.body, ast.Name) and node.body.id in self.names):
            return node.orelse
        return node


def _broadcast(pointer, shape):
    if shape is None:
        return pointer
    return ast.Call(
        func=ast.Attribute(value=ast.Name(id="tl", ctx=ast.Load()), attr="broadcast_to", ctx=ast.Load()),
        args=[pointer, shape],
        keywords=[],
    )


def _divisions(expr):
    return sum(1 for e in sympy.preorder_traversal(expr) if isinstance(e, (FloorDiv, Mod, CeilDiv)))


def _distributed_terms(expr):
    """The terms of ``expr`` with products of sums distributed one level
    (``s * (a + b)`` gives ``s*a`` and ``s*b``); function arguments untouched."""
    terms = []
    for term in sympy.Add.make_args(expr):
        if isinstance(term, sympy.Mul):
            sums = [f for f in term.args if isinstance(f, sympy.Add)]
            if len(sums) == 1:
                rest = sympy.Mul(*[f for f in term.args if f is not sums[0]])
                terms.extend(rest * t for t in sums[0].args)
                continue
        terms.append(term)
    return terms


def _other(value):
    """What a masked load reads outside the tensor: ``other``, with 0 (the
    default) written 0.0, which Triton casts to every element type (it cannot
    cast the integer 0 to fp8)."""
    if value is None or (type(value) is int and value == 0):
        return 0.0
    return value


def _constant(value):
    if isinstance(value, float) and (math.isinf(value) or math.isnan(value)):
        return ast.Call(func=ast.Name(id="float", ctx=ast.Load()), args=[ast.Constant(repr(value))], keywords=[])
    return ast.Constant(value)


def _sizes_relation(a, b):
    """``a == b`` for every block size, written in sizes where possible."""
    metas = {s: sympy.S.One for s in (a - b).free_symbols if getattr(s, "meta", False)}
    a1, b1 = a.xreplace(metas), b.xreplace(metas)
    if a1 == b1:
        return sympy.Eq(a, b)
    return sympy.Eq(a1, b1)
