"""Reads and writes of tiles, for the emitter: each goes through the
emitter's access strategy (codegen/strategies.py: tensor descriptors in the
persistent variant where a tile meets their rules, masked pointers
otherwise).

``tile_value`` loads a whole tile once per block (once per kernel for a
tensor the application never writes); ``gather``/``scatter`` read and write
``x.source[i, ...]``.
"""

import ast

from ntsym_codegen import template
from ntsym_codegen.astutil import constant_node, generated_assign, masked_other
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
        self.records.loaded.add(ref.param.name)
        return self.access.read(self, ref, node)

    def store(self, ref, value, node):
        """Write ``value`` to a tile, through the emitter's access strategy."""
        self.records.stored.add(ref.param.name)
        return self.access.write(self, ref, value, node)

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
