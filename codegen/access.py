"""Access strategies: how a tile is read or written.

- Pointer access (every tile): ``tl.load``/``tl.store`` of the pointer
  block and mask ``address`` gives.
- Tensor descriptors (``tma``, the persistent variant): ``desc.load`` /
  ``desc.store`` where ``_descriptor_access`` finds the tile meets the
  hardware's rules and the tensor is one a descriptor may read (never
  written by the application) or write (written once, outside loops,
  never read); otherwise the pointer access.

``tile_value`` loads a whole tile once per block (once per kernel for a
tensor the application never writes); ``gather``/``scatter`` read and write
``x.source[i, ...]``.
"""

import ast

import sympy

from codegen import bounds, template
from codegen.astutil import constant_node, generated_assign, masked_other, method_call
from codegen.printer import Printer, PrintError
from codegen.shapes import block_extent_expr, is_pow2
from codegen.padding import DESCRIPTOR
from codegen.template import expr, stmt


class AccessMixin:
    """Loads and stores, for ``KernelEmitter``.

    Writes ``records`` (``loaded``, ``stored``, ``descriptors``) and the tile
    caches of ``blocks``; reads ``facts`` (which strategy may touch a
    tensor) and ``records.pow2``/``size_subs``.  Uses ``address`` and
    ``_fixed`` (``AddressingMixin``) and the visitor's ``printer``."""

    # -- reads and writes ------------------------------------------------------

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
            pre.append(generated_assign(name, self.load(ref, node)))
            cache[ref.param.name] = name
            return ast.Name(id=name, ctx=ast.Load())
        return self.load(ref, node)

    def load(self, ref, node):
        """A tile's value: through a tensor descriptor where that strategy
        applies, else a masked pointer load (which always does)."""
        self.records.loaded.add(ref.param.name)
        value = self._descriptor_load(ref)
        if value is not None:
            self.note_tile(ref, DESCRIPTOR, node)  # out-of-bounds lanes read as zeros
            return value
        return self._pointer_load(ref, node)

    def store(self, ref, value, node):
        """Write ``value`` to a tile: through a tensor descriptor where that
        strategy applies, else a masked pointer store."""
        self.records.stored.add(ref.param.name)
        stmt = self._descriptor_store(ref, value, node)
        return stmt if stmt is not None else self._pointer_store(ref, value, node)

    # -- pointer access: every tile --------------------------------------------

    def _pointer_load(self, ref, node):
        address = self.tile_address(ref, node)
        pointer, mask = self.pointer_and_mask(address, node)
        self.note_tile(ref, mask, node, address)
        if mask is None:
            return expr("tl.load({pointer})", pointer=pointer)
        other = constant_node(masked_other(ref.param.other))
        return expr("tl.load({pointer}, mask={mask}, other={other})", pointer=pointer, mask=mask, other=other)

    def _pointer_store(self, ref, value, node):
        pointer, mask = self.address(ref, node)
        if mask is None:
            call = stmt("tl.store({pointer}, {value})", pointer=pointer, value=value)
        else:
            call = stmt("tl.store({pointer}, {value}, mask={mask})", pointer=pointer, value=value, mask=mask)
        return ast.copy_location(call, node)

    # -- tensor descriptors: the persistent variant, where the rules hold ------

    def _may_read_through_descriptor(self, name):
        """Descriptors are emitted with ``tma`` only, and read tensors the
        application never writes."""
        return self.tma and name not in self.facts.maybe_written

    def _may_write_through_descriptor(self, name):
        """Descriptors are emitted with ``tma`` only, and write tensors the
        application writes once, outside loops, and that no load of this
        emission or the plain one reads."""
        return self.tma and name in self.facts.stored_once and name not in self.facts.read | self.records.loaded

    def _descriptor_load(self, ref):
        """``desc.load([coords])`` (reshaped, permuted to the tile's order),
        or None where the strategy does not apply."""
        if not self._may_read_through_descriptor(ref.param.name):
            return None
        access = self._descriptor_access(ref)
        if access is None:
            return None
        name, coords, tile_order, squeeze = access
        call = expr("{desc}.load({coords})", desc=name, coords=ast.List(elts=coords, ctx=ast.Load()))
        if len(coords) >= 2:
            # A tensor whose next-to-last dimension is the contiguous one
            # (column-major B of a GEMM) is read through a descriptor of its
            # last two dimensions swapped, and its blocks swapped back; the
            # launcher sets the flag from the strides.
            flag = self.records.transposed.setdefault(name, f"NTSYM_{name.upper()}_T")
            order = tuple(range(len(coords) - 2)) + (len(coords) - 1, len(coords) - 2)
            swapped = expr(
                "tl.permute({desc}.load({coords}), {order})",
                desc=name, coords=ast.List(elts=coords[:-2] + [coords[-1], coords[-2]], ctx=ast.Load()), order=order,
            )
            call = expr("{swapped} if {flag} else {plain}", swapped=swapped, flag=flag, plain=call)
        if squeeze:
            call = method_call(call, "reshape", squeeze)
        if tile_order is not None:
            call = expr("tl.permute({value}, {order})", value=call, order=tuple(tile_order))
        return call

    def _descriptor_store(self, ref, value, node):
        """``desc.store([coords], value)`` (``value`` broadcast to the block,
        cast, permuted and reshaped to the descriptor's block), or None where
        the strategy does not apply."""
        if not self._may_write_through_descriptor(ref.param.name):
            return None
        access = self._descriptor_access(ref)
        if access is None:
            return None
        desc, coords, tile_order, squeeze = access
        level = ref.param.levels[ref.depth]
        shape = [Printer()(block_extent_expr(level[j], self.records.pow2)) for j in ref.dims]
        # The descriptor stores exactly its block, in the tensor's type.
        value = expr(
            "tl.broadcast_to({value}, {shape}).to({pointer}.dtype.element_ty)",
            value=value, shape=tuple(shape), pointer=f"{ref.param.name}_ptr",
        )
        if tile_order is not None:
            inverse = tuple(tile_order.index(i) for i in range(len(tile_order)))
            value = expr("tl.permute({value}, {order})", value=value, order=inverse)
        if squeeze:
            value = method_call(value, "reshape", [Printer()(b) for b in self.records.descriptors[desc][1]])
        call = stmt("{desc}.store({coords}, {value})", desc=desc, coords=ast.List(elts=coords, ctx=ast.Load()), value=value)
        return ast.copy_location(call, node)

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
            if not (is_pow2(sympy.sympify(extent)) or extent in self.records.pow2.values()):
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

    # -- x.source[i, ...]: gathered and scattered elements ---------------------

    def gather(self, sub, _):
        p, pointer, mask = self.source_address(sub)
        self.records.loaded.add(p.name)
        other = constant_node(masked_other(p.other))
        return expr("tl.load({pointer}, mask={mask}, other={other})", pointer=pointer, mask=mask, other=other)

    def scatter(self, sub, value, stmt):
        p, pointer, mask = self.source_address(sub)
        self.records.stored.add(p.name)
        call = template.stmt("tl.store({pointer}, {value}, mask={mask})", pointer=pointer, value=value, mask=mask)
        return ast.copy_location(call, stmt)
