"""What an expression of the application may name besides plain values: a tile
of a tensor parameter (``x``, ``x[k]``, ``x.dtype``) or a whole source
tensor (``x.source``).  ``KernelEmitter.resolve`` makes them.
"""


class TileRef:
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
        ref = TileRef(self.param, self.depth, self.fixed, self.dims)
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
            ref = TileRef(ref.param, ref.depth + 1, ref.fixed)
        return ref

    def offsets(self, d):
        """``x.offsets(d)`` of this tile as ``(index, running)``: source dimension
        ``d``'s index (SymPy, the indexed dimensions fixed) and the tile
        dimensions whose variables it runs along.  Where one runs, the value is
        a vector (its variable on the last axis); else it has the tile's rank."""
        index = self.param.index[d].xreplace({var: value for var, (value, _, _) in self.fixed.items()})
        vars = self.param.level_vars[self.depth]
        return index, [j for j in self.dims if vars[j] in index.free_symbols]


class SourceRef:
    """``x.source``: the whole source tensor of parameter ``x``."""

    def __init__(self, param):
        self.param = param
