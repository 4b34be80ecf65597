"""The kernel's parameters from the outer-shape proof: a ``TensorParam`` per
argument tensor (its levels, index and the masks left after pruning those
SymPy proves), a ``JaggedParam`` per jagged tensor, the size and stride
arguments, and the meta (block size) parameters.
"""

import ast

import sympy

from ntsym_codegen import bounds
from ntsym_codegen.ir import JaggedParam, MetaParam, SizeArg, TensorParam
from ntsym_codegen.shapes import block_extent_expr
from ntsym.errors import ArrangementError
from ntsym.split import split_index
from ntsym.symbol import Symbol


class ParamsMixin:
    """Methods of ``outer_proof.OuterProof``: read its ``names``,
    ``arranged``, ``sources``, ``alignment``, ``grid``, ``program_vars``,
    ``checks`` and ``subs`` (after ``run``); use its ``_apply`` and
    ``describe``."""

    def needed(self, src):
        """Whether the kernel needs a tensor the arrangement does not return:
        whether one of its sizes is in an arranged shape, index, condition
        or launch check."""
        if not hasattr(self, "_used"):
            exprs = [c.relation for c in self.checks] + list(self.subs.values())
            for t in self.arranged:
                if t is not None:
                    exprs += [self._apply(e) for shape, _ in t.levels for e in shape]
                    exprs += [self._apply(e) for e in t.index + t.conditions]
            self._used = set().union(*(sympy.sympify(e).free_symbols for e in exprs)) if exprs else set()
        return any(s in self._used for s in src.shape)

    def ignored_args(self):
        """Call positions of the tensors not returned and not needed: the kernel
        takes the call without them (NineToothed's form) or ignores them."""
        positions, position = [], 0
        for t, src in zip(self.arranged, self.sources):
            if src.tensor.constexpr and src.tensor.value is not None:
                continue
            if t is None and not self.needed(src):
                positions.append(position)
            position += 1
        return tuple(positions)

    def params(self):
        """A ``TensorParam`` per argument tensor, in call order: a shape-only
        argument for a tensor not returned whose sizes the kernel needs, a
        scalar, or an arranged tensor (``_tensor_param``)."""
        params = []
        for name, t, src in zip(self.names, self.arranged, self.sources):
            tensor = src.tensor
            if t is None:
                # Not returned: an argument for its sizes, where the kernel needs them.
                if self.needed(src):
                    params.append(TensorParam(
                        name=name, kind="shape", ndim=tensor.ndim, dtype=tensor.element_dtype,
                        sizes=tuple(self._apply(s) for s in src.shape), source_sizes=tuple(src.shape),
                    ))
                continue
            if tensor.ndim == 0 and not len(t.levels[0][0]):
                kind = "constexpr" if tensor.constexpr else "scalar"
                params.append(TensorParam(name=name, kind=kind, value=tensor.value, dtype=tensor.element_dtype))
                continue
            params.append(self._tensor_param(name, t, src))
        self._params = tuple(params)
        return tuple(params)

    def _program_indices(self, name, t):
        """Each outermost dimension's index in a program: the program index
        of the grid dimension it is aligned with (0 for a unit one), or
        NineToothed's split of the program ids (ntsym/split.py)."""
        if self.alignment.get(name, ()) is None:
            shape = [self._apply(n) for n in t.levels[0][0]]
            return dict(zip(t.levels[0][1], split_index(self.program_vars, self.grid, shape)))
        return {
            v: (sympy.S.Zero if g is None or self.grid[g] == 1 else self.program_vars[g])
            for v, g in zip(t.levels[0][1], self.alignment.get(name) or ())
        }

    def _tensor_param(self, name, t, src):
        """The ``TensorParam`` of an arranged tensor: its levels with the
        outermost indexed by the program, its index, and its masks, those
        SymPy proves always true dropped (recorded as facts)."""
        tensor = src.tensor
        program = self._program_indices(name, t)
        levels = [tuple(self._apply(s) for s in shape) for shape, _ in t.levels]
        level_vars = [vars for _, vars in t.levels]
        if len(levels) == 1:
            # An untiled tensor: each program takes one element, a tile
            # of no dimensions.
            levels.append(())
            level_vars.append(())
        level_vars[0] = tuple(program[v] for v in level_vars[0])
        index = tuple(self._apply(e).xreplace(program) for e in t.index)
        conditions = [self._apply(c).xreplace(program) for c in t.conditions]
        padding = [self._apply(c).xreplace(program) for c in t.padding]
        sizes = tuple(self._apply(s) for s in src.shape)
        if tensor.jagged_dim is not None:
            levels, index, conditions, padding, sizes = self._one_row(
                name, src, levels, index, conditions, padding, sizes)
        ranges = dict(zip(self.program_vars, self.grid))
        for depth in range(1, len(levels)):
            innermost = depth == len(levels) - 1
            for v, n in zip(level_vars[depth], levels[depth]):
                ranges[v] = block_extent_expr(n, {}) if innermost else n
        kept, dropped = [], []
        for c in dict.fromkeys(conditions):
            if c is sympy.true:
                continue
            (dropped if bounds.holds(c, ranges) else kept).append(c)
        for c in dropped:
            self.facts.append(("dropped", c, name))
        return TensorParam(
            name=name, kind="tensor", ndim=tensor.ndim, dtype=tensor.element_dtype, other=tensor.other,
            levels=tuple(levels), level_vars=tuple(level_vars), index=index, strides=src.strides,
            sizes=sizes, source_sizes=tuple(src.shape), conditions=tuple(kept),
            padding=tuple(c for c in kept if c in set(padding)), dropped=tuple(dropped),
        )

    def _one_row(self, name, src, levels, index, conditions, padding, sizes):
        """A jagged tensor's levels, index, masks and sizes inside a program:
        the ragged size is this sequence's length (the tensor's own masks,
        loop bounds and `x.source.shape` use it); the grid (level 0) runs
        over the longest row."""
        row = {self._longest(name, src): self._seq_len(name)}
        self._jagged_batch[name] = index[0]
        levels = levels[:1] + [tuple(sympy.sympify(n).xreplace(row) for n in shape) for shape in levels[1:]]
        if self._seq_len(name) in set().union(*(sympy.sympify(n).free_symbols for n in levels[-1])):
            raise ArrangementError(
                f"`{name}`: a tile spans the whole ragged dimension {src.tensor.jagged_dim} of this jagged "
                "tensor, but that length differs from one sequence to the next and a tile's shape is "
                "fixed at compile time; tile the ragged dimension with a block size (and loop over "
                "the blocks, `x.tile((1, BLOCK, ...)).tile((1, -1, ...))`)")
        return (levels, tuple(e.xreplace(row) for e in index), [c.xreplace(row) for c in conditions],
                [c.xreplace(row) for c in padding], tuple(sympy.sympify(n).xreplace(row) for n in sizes))

    # -- jagged tensors --------------------------------------------------------

    def _longest(self, name, src):
        """The symbol of a jagged tensor's ragged size after unification: the
        longest row at launch."""
        d = src.tensor.jagged_dim
        longest = self._apply(src.shape[d])
        if not isinstance(longest, sympy.Symbol):
            raise ArrangementError(
                f"`{name}`: the arrangement makes the ragged dimension {d} of this jagged tensor "
                f"{self.describe(longest)}, but its length differs from one sequence to the next")
        return longest

    def _seq_len(self, name):
        if name not in self._seq_lens:
            self._seq_lens[name] = sympy.Symbol(f"{name}_seq_len", integer=True, nonnegative=True)
        return self._seq_lens[name]

    def jagged_params(self, app_def):
        """A JaggedParam per jagged tensor (after ``params``)."""
        result = []
        used = {n.id for n in ast.walk(app_def) if isinstance(n, ast.Name)} | {a.arg for a in app_def.args.args}
        params = {p.name: p for p in getattr(self, "_params", ())}
        for name, t, src in zip(self.names, self.arranged, self.sources):
            d = src.tensor.jagged_dim
            if d is None:
                continue
            if t is None:
                raise ArrangementError(
                    f"`{name}` is jagged but the arrangement does not return it: a jagged tensor must be "
                    "arranged (its sizes are per sequence)")
            batch = self._jagged_batch[name]
            if not batch.free_symbols <= set(self.program_vars):
                raise ArrangementError(
                    f"`{name}`: a program's tile of this jagged tensor spans several sequences (its batch "
                    f"index is {batch}); each program must take one sequence: tile the batch dimension 0 by 1")
            own = {f"{name}_seq_len", f"{name}_seq_start", f"{name}_jagged_offsets"}
            clash = sorted(own & used)
            if clash:
                raise ArrangementError(
                    f"the application uses the name `{clash[0]}`, which the kernel gives to `{name}`'s "
                    "sequence bounds; rename it")
            p = params[name]
            seq_len = self._seq_len(name)
            empty = []
            if len(p.levels) == 2:
                tile_vars = set(p.level_vars[1])
                for c in p.conditions:
                    if isinstance(c, sympy.StrictLessThan) and c.rhs == seq_len:
                        lhs = sympy.expand(c.lhs)
                        if lhs.is_polynomial(*tile_vars) and all(
                            sympy.Poly(lhs, *tile_vars).degree(v) <= 1 and lhs.coeff(v).is_nonnegative
                            for v in tile_vars if lhs.has(v)
                        ) and seq_len not in lhs.free_symbols:
                            empty.append(sympy.Ge(lhs.xreplace({v: 0 for v in tile_vars}), seq_len))
            result.append(JaggedParam(
                name=name, dim=d, offsets=f"{name}_jagged_offsets",
                start=sympy.Symbol(f"{name}_seq_start", integer=True, nonnegative=True),
                seq_len=seq_len, longest=self._longest(name, src), stride=src.strides[d],
                batch=batch, empty=tuple(empty),
            ))
        return tuple(result)

    def same_rows(self, jagged):
        groups = {}
        for j in jagged:
            groups.setdefault(j.longest, []).append(j.name)
        return tuple(tuple(g) for g in groups.values() if len(g) > 1)

    def size_args(self):
        args, seen = [], set(self.subs)
        for name, t, src in zip(self.names, self.arranged, self.sources):
            if t is None and not self.needed(src):
                continue
            for d, s in enumerate(src.shape):
                if isinstance(s, sympy.Symbol) and s not in seen:
                    seen.add(s)
                    args.append(SizeArg(s, name, "size", d, constexpr=bool(getattr(s, "constexpr", False))))
            for d, s in enumerate(src.strides if t is not None else ()):
                if isinstance(s, sympy.Symbol) and s not in seen:
                    seen.add(s)
                    args.append(SizeArg(s, name, "stride", d))
        return tuple(args)

    def symbols(self):
        found = {}
        for t in self.arranged:
            for shape, _ in t.levels if t is not None else ():
                for s in shape:
                    for sym in sympy.sympify(s).free_symbols:
                        if isinstance(sym, Symbol):
                            found[sym.name] = sym
        for src in self.sources:
            for s in src.shape + src.strides:
                for sym in sympy.sympify(s).free_symbols:
                    found[sym.name] = sym
        return found


def meta_params(proof):
    """Meta (auto-tuned) and call-time constexpr symbols, sizes excluded."""
    sizes = {a.symbol for a in proof.size_args()}
    found = {}
    exprs = [c.relation for c in proof.checks]  # a check may name a block size alone
    for t in proof.arranged:
        if t is not None:
            exprs += [s for shape, _ in t.levels for s in shape] + list(t.index) + list(t.conditions)
    for e in exprs:
        for s in sympy.sympify(e).free_symbols:
            if isinstance(s, Symbol) and s.constexpr and s not in sizes:
                found.setdefault(s.name, s)
    result = []
    for name in sorted(found):
        s = found[name]
        if s.meta:
            cands = tuple(s.candidates())
            if not cands:
                raise ArrangementError(f"meta symbol {name} has no candidate values in its bounds")
        else:
            cands = ()
        tile_dims = {x for t in proof.arranged if t is not None
                     for x in sympy.sympify(sympy.Add(*t.levels[-1][0])).free_symbols}
        result.append(
            MetaParam(
                symbol=s,
                meta=s.meta,
                candidates=cands,
                lower_bound=s.lower_bound,
                upper_bound=s.upper_bound,
                power_of_two=s.power_of_two or (s in tile_dims and not s.padded),
            )
        )
    return tuple(result)


