"""Reads and writes of tiles, for the emitter: each goes through the
emitter's access strategy (codegen/strategies.py: tensor descriptors in the
persistent variant where a tile meets their rules, masked pointers
otherwise).

``tile_value`` loads a whole tile once per block (once per kernel for a
tensor the application never writes); ``gather``/``scatter`` read and write
``x.source[i, ...]``.
"""

import ast
import copy

import sympy

from ntsym_codegen import data_races, lane_writes, template
from ntsym_codegen.analysis import _is_scatter
from ntsym_codegen.astutil import constant_node, generated_assign, literal_int, masked_other
from ntsym_codegen.lanes import masked, merge_factors, unknown
from ntsym_codegen.printer import conjunction
from ntsym_codegen.refs import TileRef
from ntsym_codegen.template import expr


class AccessMixin:
    """Loads and stores, for ``KernelEmitter``.

    Writes ``records`` (``loaded``, ``stored``; the strategies
    ``descriptors``) and the tile caches of ``blocks``; the strategies read
    ``facts`` (which strategy may touch a tensor) and
    ``records.pow2``/``size_subs``, and use ``address`` and ``_fixed``
    (``AddressingMixin``) and the visitor's ``printer``."""

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
        """A tile's value, through the emitter's access strategy (a tensor
        descriptor where that applies, else a masked pointer load, which
        always does: codegen/strategies.py)."""
        self.check_levels_indexed(ref, node)
        self.records.loaded.add(ref.param.name)
        data_races.note(self.records, ref.param.name, "read", node)
        return self.access.read(self, ref, node)

    def check_levels_indexed(self, ref, node):
        """A tile below a level of several tiles is a value only once that
        level is indexed: ``x.dtype`` of a tensor whose level holds a loop's
        tiles names their type, not one of them."""
        p = ref.param
        for depth in range(1, ref.depth):
            for var, extent in zip(p.level_vars[depth], p.levels[depth]):
                if var not in ref.fixed and extent != 1:
                    shape = tuple(p.levels[depth])
                    raise self.error(
                        f"`{p.name}`'s tiles of level {depth + 1} are read here without an index for level {depth} "
                        f"(shape {shape}): index it first (`{p.name}[k]`); for their element type, "
                        f"`{p.name}[k].dtype` or `{p.name}.source.dtype`", node)

    def store(self, ref, value, node):
        """Write ``value`` to a tile, through the emitter's access strategy."""
        self.records.stored.add(ref.param.name)
        data_races.note(self.records, ref.param.name, "scattered" if self._chosen_by_data(node) else "written", node)
        lane_writes.check(self, ref, node)
        return self.access.write(self, ref, value, node)

    def _chosen_by_data(self, stmt):
        """Whether ``stmt`` stores to a tile chosen by data (``y[row] = v``,
        ``row`` a value): a scatter, as ``y.source[...] = v`` is."""
        target = stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else \
            getattr(stmt, "target", None)
        return _is_scatter(target, self.ir.data_locals)

    # -- x.source[i, ...]: gathered and scattered elements ---------------------

    def gather(self, sub, _):
        """``x.source[i, ...]``: loaded where the index lanes lie inside the
        index tiles and the tensor; the lanes past the end of an index tile
        (which hold its ``other``, a valid index) read ``x``'s ``other`` and
        carry the index's factors, so a reduction leaves them out."""
        p, pointer, mask = self.source_address(sub)
        self.records.loaded.add(p.name)
        data_races.note(self.records, p.name, "read" if self._own_tile_indices(sub, p) else "gathered", sub)
        factors, rank = self._index_lanes(sub)
        mask = self._with_index_mask(mask, factors)
        other = masked_other(p.other)
        try:
            value = sympy.sympify(other)
        except (sympy.SympifyError, TypeError):
            value = None
        self.lanes.nodes[id(sub)] = (sub, unknown(rank) if factors is None else masked(factors, value, rank))
        return expr("tl.load({pointer}, mask={mask}, other={other})", pointer=pointer, mask=mask,
                    other=constant_node(other))

    def _own_tile_indices(self, sub, p):
        """Whether the indices of ``p.source[...]`` are the offsets of ``p``'s
        own whole tile along each dimension in order (``x.source[x.offsets(0),
        x.offsets(1)]``): the elements of the program's tile, as a read of
        ``x`` reaches them, not data."""
        keys = sub.slice.elts if isinstance(sub.slice, ast.Tuple) else [sub.slice]
        if len(keys) != p.ndim:
            return False
        for d, key in enumerate(keys):
            if not (isinstance(key, ast.Call) and isinstance(key.func, ast.Attribute) and key.func.attr == "offsets"
                    and len(key.args) == 1 and not key.keywords and literal_int(key.args[0]) in (d, d - p.ndim)):
                return False
            ref = self.resolve(key.func.value)
            if not isinstance(ref, TileRef) or ref.param is not p or ref.depth != 1 or ref.fixed:
                return False
        return True

    def scatter(self, sub, value, stmt):
        """``x.source[i, ...] = v``: stored where the index lanes lie inside
        the index tiles and the tensor; the lanes past the end of an index
        tile hold its ``other`` (a valid index) and must not store."""
        p, pointer, mask = self.source_address(sub)
        self.records.stored.add(p.name)
        data_races.note(self.records, p.name, "scattered", sub)
        factors, _ = self._index_lanes(sub)
        mask = self._with_index_mask(mask, factors)
        call = template.stmt("tl.store({pointer}, {value}, mask={mask})", pointer=pointer, value=value, mask=mask)
        return ast.copy_location(call, stmt)

    def _index_lanes(self, sub):
        """The factors saying which lanes of the indices of ``sub`` (``x.source[...]``)
        lie inside their tensors (None where not known), and the rank of
        the indexed value (None where not known)."""
        keys = sub.slice.elts if isinstance(sub.slice, ast.Tuple) else [sub.slice]
        lanes = [self.lanes_of(k) for k in keys]
        ranks = [l.rank for l in lanes]
        rank = None if any(r is None for r in ranks) else max(ranks, default=0)
        return merge_factors(*(l.factors for l in lanes)), rank

    @staticmethod
    def _with_index_mask(mask, factors):
        """``mask`` and the index lanes' factors that have a mask block."""
        blocks = [copy.deepcopy(f.node) for f in factors or () if f.node is not None]
        return conjunction([mask, *blocks]) if blocks else mask
