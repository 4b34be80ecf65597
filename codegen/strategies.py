"""Access strategies: the ways a tile is read or written, as objects.

A strategy says whether it may touch a tensor at all (``is_supported``:
what the application does with it) and emits the read or the write
(``load``, ``store``), or None where the tile does not meet its rules; its
``fallback`` is then tried, down to the pointer access, which supports
every tile.  The emitter starts each access from its strategy
(``KernelEmitter(ir, access=...)``): the plain kernel from ``POINTERS``,
the persistent variant from ``DESCRIPTORS``.

- ``PointerAccess``: ``tl.load``/``tl.store`` of the pointer block and mask
  that ``address`` gives.
- ``DescriptorAccess``: ``desc.load``/``desc.store`` of a tensor descriptor
  where the tile meets the tensor memory accelerator's rules and the tensor
  is one a descriptor may read (never written by the application) or write
  (written once, outside loops, never read).

To add a strategy: subclass ``AccessStrategy`` with ``is_supported``,
``load`` and ``store`` (None where a tile does not meet its rules), give it
a fallback, and start an emitter from it (codegen/emit.py); the launch
checks its tiles need go to ``records`` as the others' do."""

import ast

import sympy

from ntsym_codegen import bounds
from ntsym_codegen.astutil import constant_node, masked_other, method_call
from ntsym_codegen.padding import DESCRIPTOR
from ntsym_codegen.printer import Printer, PrintError
from ntsym_codegen.shapes import block_extent_expr, is_pow2
from ntsym_codegen.template import expr, stmt


class AccessStrategy:
    """A way to read and write tiles (see the module's docstring)."""

    name = ""
    fallback = None  # the strategy tried where this one does not apply

    def is_supported(self, emitter, ref, write):
        """Whether this strategy may read (or, with ``write``, write) the
        tensor of ``ref`` in this emission."""
        raise NotImplementedError

    def load(self, emitter, ref, node):
        """The tile's value, or None where the tile does not meet the rules."""
        raise NotImplementedError

    def store(self, emitter, ref, value, node):
        """The statement writing ``value`` to the tile, or None likewise."""
        raise NotImplementedError

    def read(self, emitter, ref, node):
        """The tile's value through the first strategy of the chain from this
        one that supports the tensor and whose rules the tile meets."""
        strategy = self
        while strategy is not None:
            if strategy.is_supported(emitter, ref, write=False):
                value = strategy.load(emitter, ref, node)
                if value is not None:
                    return value
            strategy = strategy.fallback
        raise AssertionError(f"no access strategy reads {ref.param.name}")

    def write(self, emitter, ref, value, node):
        """The statement writing ``value``, through the chain likewise."""
        strategy = self
        while strategy is not None:
            if strategy.is_supported(emitter, ref, write=True):
                call = strategy.store(emitter, ref, value, node)
                if call is not None:
                    return call
            strategy = strategy.fallback
        raise AssertionError(f"no access strategy writes {ref.param.name}")


class PointerAccess(AccessStrategy):
    """Masked pointer loads and stores: every tile."""

    name = "pointer"

    def is_supported(self, emitter, ref, write):
        return True

    def load(self, emitter, ref, node):
        """A masked ``tl.load`` of the pointer block."""
        address = emitter.tile_address(ref, node)
        pointer, mask = emitter.pointer_and_mask(address, node)
        emitter.note_tile(ref, mask, node, address)
        if mask is None:
            return expr("tl.load({pointer})", pointer=pointer)
        other = constant_node(masked_other(ref.param.other))
        return expr("tl.load({pointer}, mask={mask}, other={other})", pointer=pointer, mask=mask, other=other)

    def store(self, emitter, ref, value, node):
        """A masked ``tl.store`` to the pointer block."""
        pointer, mask = emitter.address(ref, node)
        if mask is None:
            call = stmt("tl.store({pointer}, {value})", pointer=pointer, value=value)
        else:
            call = stmt("tl.store({pointer}, {value}, mask={mask})", pointer=pointer, value=value, mask=mask)
        return ast.copy_location(call, node)


class DescriptorAccess(AccessStrategy):
    """Tensor descriptors, where the tile meets the hardware's rules."""

    name = "descriptor"

    def __init__(self, fallback):
        self.fallback = fallback

    def is_supported(self, emitter, ref, write):
        """Descriptors read tensors the application never writes, and write
        tensors the application writes once, outside loops, and that no load
        of this emission or the plain one reads."""
        name = ref.param.name
        if write:
            return name in emitter.facts.stored_once and name not in emitter.facts.read | emitter.records.loaded
        return name not in emitter.facts.maybe_written

    def load(self, emitter, ref, node):
        """``desc.load([coords])`` (reshaped, permuted to the tile's order),
        or None where the tile does not meet the rules."""
        access = self._access(emitter, ref)
        if access is None:
            return None
        name, coords, tile_order, squeeze = access
        call = expr("{desc}.load({coords})", desc=name, coords=ast.List(elts=coords, ctx=ast.Load()))
        if len(coords) >= 2:
            # A tensor whose next-to-last dimension is the contiguous one
            # (column-major B of a GEMM) is read through a descriptor of its
            # last two dimensions swapped, and its blocks swapped back; the
            # launcher sets the flag from the strides.
            flag = emitter.records.transposed.setdefault(name, f"NTSYM_{name.upper()}_T")
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
        # Out-of-bounds lanes read as zeros, where the pointer load's conditions fail.
        emitter.note_tile(ref, DESCRIPTOR, node, emitter.tile_address(ref, node))
        return call

    def store(self, emitter, ref, value, node):
        """``desc.store([coords], value)`` (``value`` broadcast to the block,
        cast, permuted and reshaped to the descriptor's block), or None where
        the tile does not meet the rules."""
        access = self._access(emitter, ref)
        if access is None:
            return None
        desc, coords, tile_order, squeeze = access
        level = ref.param.levels[ref.depth]
        shape = [Printer()(block_extent_expr(level[j], emitter.records.pow2)) for j in ref.dims]
        # The descriptor stores exactly its block, in the tensor's type.
        value = expr(
            "tl.broadcast_to({value}, {shape}).to({pointer}.dtype.element_ty)",
            value=value, shape=tuple(shape), pointer=f"{ref.param.name}_ptr",
        )
        if tile_order is not None:
            inverse = tuple(tile_order.index(i) for i in range(len(tile_order)))
            value = expr("tl.permute({value}, {order})", value=value, order=inverse)
        if squeeze:
            value = method_call(value, "reshape", [Printer()(b) for b in emitter.records.descriptors[desc][1]])
        call = stmt("{desc}.store({coords}, {value})", desc=desc, coords=ast.List(elts=coords, ctx=ast.Load()), value=value)
        return ast.copy_location(call, node)

    def _access(self, emitter, ref):
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
        subs, extra, known = emitter._fixed(ref)
        if extra:
            return None  # a tile that may not exist: keep the pointer load
        vars = p.level_vars[ref.depth]
        level = p.levels[ref.depth]
        vectorized = [vars[j] for j in ref.dims]
        extents = {}
        for j in ref.dims:
            n = level[j].xreplace(emitter.records.size_subs)
            extent = block_extent_expr(level[j], emitter.records.pow2)
            if not (is_pow2(sympy.sympify(extent)) or extent in emitter.records.pow2.values()):
                return None
            extents[vars[j]] = (extent, n)
        sizes = [s.xreplace(emitter.records.size_subs) for s in p.sizes]
        index = [sympy.expand(e.xreplace(subs).xreplace(emitter.records.size_subs)) for e in p.index]
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
        conditions = [c.xreplace(subs).xreplace(emitter.records.size_subs) for c in p.conditions]
        for v, (extent, n) in extents.items():
            if extent != n:
                # A padded block: only where the tile is the whole source dimension.
                if index[dim_of[v]] != v or sympy.expand(n - sizes[dim_of[v]]) != 0:
                    return None
                conditions.append(sympy.Lt(v, n))
        ranges = {**emitter.base_ranges(), **{v: extent for v, (extent, _) in extents.items()}, **known}
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
        name = self._name(emitter, p, block)
        printer = emitter.printer()
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

    def _name(self, emitter, p, block):
        """The descriptor of ``p`` with ``block``: one per (tensor, block shape)."""
        for name, (param, shape) in emitter.records.descriptors.items():
            if param is p and shape == block:
                return name
        name = f"{p.name}_desc" + (f"_{len(emitter.records.descriptors)}" if any(q is p for q, _ in emitter.records.descriptors.values()) else "")
        while name in emitter.facts.user_names or name in emitter.records.descriptors:
            name += "_"
        emitter.records.descriptors[name] = (p, block)
        return name


POINTERS = PointerAccess()
DESCRIPTORS = DescriptorAccess(fallback=POINTERS)
