# Over 600 lines: the outer-shape proof (`_Proof`, half the file) yields the grid, checks and sizes `lower` puts in the IR; pairing.py holds its relaxations of equal extents, proofs.py the facts proved after lowering.
"""From an arrangement, an application and source tensors to codegen's IR.

The steps, in order: name the source tensors after the application's
parameters; run the arrangement; give every symbol a deterministic name; prove
(or reduce to launch checks) that all outermost shapes agree; prune the masks
SymPy proves always true; fill in :mod:`ntsym_codegen.ir`.
"""

import ast
import inspect
import itertools

import sympy

from ntsym_codegen import bounds
from ntsym_codegen.ir import Check, JaggedParam, KernelIR, MetaParam, SizeArg, TensorParam
from ntsym_codegen.analysis import assigned_parameters
from ntsym_codegen.shapes import block_extent_expr
from ntsym import live_extents
from ntsym.application import _bound_names, _resolve_globals, parse_application
from ntsym.disjoint import overlap_checks
from ntsym.errors import ArrangementError
from ntsym.kernel_names import shown_name
from ntsym.extents import check_inner_extents
from ntsym.pairing import PairingMixin, align, maybe_written, read_through_source
from ntsym.split import require_split, split_index
from ntsym.symbol import Symbol
from ntsym.tensor import Tensor


def lower(arrangement, application, tensors, kernel_name=None, num_warps=None,
          num_stages=None, max_num_configs=None, padded=frozenset()):
    """``padded``: names of call-time tile sizes to pad to the next power of
    two (the launcher asks for this variant when given other values)."""
    app_def, app_globals = parse_application(application)
    app_names = [a.arg for a in app_def.args.args]
    # Entries of ``tensors`` that are not Tensors (a tuple of slices, a
    # number) go to the arrangement as they are, as in NineToothed; they are
    # no parameter of the kernel.
    values = tuple(tensors)
    tensors = tuple(t for t in values if isinstance(t, Tensor))
    if len(app_names) > len(tensors):
        raise ArrangementError(
            f"the application takes {len(app_names)} parameters ({', '.join(app_names)}) but "
            f"{len(tensors)} tensors were given"
        )
    names, arranged = _arrange(arrangement, values, app_names, app_def)
    renames = _canonical_names(arrangement, tensors, [t for t in arranged if t is not None], names)
    renames.update(_positive_twins([t for t in arranged if t is not None]))
    renames.update(_padded_twins([t for t in arranged if t is not None], renames, padded))
    arranged = [None if t is None else _rename_hierarchy(t, renames) for t in arranged]
    sources = [_rename_source(t, renames) for t in tensors]
    inline, aliases, constants = _resolve_globals(app_def, app_globals)
    proof = _Proof(names, arranged, sources, maybe_written(app_def, inline, app_names),
                   read_through_source(app_def, inline, {n: t.ndim for n, t in zip(names, tensors)}))
    proof.run()
    params = proof.params()
    _refuse_overlapping_writes(proof, params, app_def, inline)
    jagged = proof.jagged_params(app_def)
    params += tuple(TensorParam(name=j.offsets, kind="offsets", ndim=1) for j in jagged)
    meta_params = _meta_params(proof)
    title = shown_name(arrangement, application, kernel_name)
    kernel_name = kernel_name or getattr(application, "__name__", "kernel")
    if not kernel_name.isidentifier():
        raise ArrangementError(f"kernel_name {kernel_name!r} is not an identifier")
    return KernelIR(
        name=kernel_name,
        title=title,
        params=params,
        size_args=proof.size_args(),
        meta_params=meta_params,
        grid=proof.grid,
        program_vars=proof.program_vars,
        checks=tuple(proof.checks),
        application=app_def,
        inline_functions=inline,
        module_aliases=aliases,
        constants=constants,
        facts=tuple(proof.facts),
        num_warps=num_warps,
        num_stages=num_stages,
        max_num_configs=max_num_configs,
        symbols=proof.symbols(),
        ignored_args=proof.ignored_args(),
        jagged=jagged,
        same_rows=proof.same_rows(jagged),
    )


def _refuse_overlapping_writes(proof, params, app_def, inline):
    """A launch check (a refusal, where it can never hold) for each written
    tensor whose tiles overlap across programs (``ntsym.disjoint``)."""
    tensors = {p.name for p in params if p.kind == "tensor"}
    written = assigned_parameters(app_def, inline, tensors)
    jagged = {name for name, src in zip(proof.names, proof.sources) if src.tensor.jagged_dim is not None}
    varying = set()
    for p in params:
        if p.kind == "tensor":
            varying.update(*(sympy.sympify(e).free_symbols for e in p.index))
    for p in params:
        if p.kind != "tensor" or p.name not in written or p.name in jagged:
            continue
        for relation, g, reason in overlap_checks(p, proof.grid, proof.program_vars, varying):
            extent = proof.describe(proof.grid[g])
            proof._require(
                relation,
                f"`{p.name}` is written by the kernel and its tiles overlap across the programs of grid "
                f"dimension {g} ({reason}), so the grid's extent there, {extent}, must be 1",
                f"`{p.name}` is written by the kernel and its tiles overlap across the programs of grid "
                f"dimension {g} ({reason})",
                "programs run in no fixed order, so an element several programs store to would end with "
                "an unspecified one's values; arrange the written tensor so that each program has its own "
                "tile (no expand across programs, tile strides no smaller than the tile)")


# -- running the arrangement -----------------------------------------------


def _arrange(arrangement, values, app_names, app_def):
    """Run the arrangement on ``values``: each Tensor's parameter name, and
    its arranged form (None for a tensor the arrangement does not return).

    As in NineToothed, the arrangement's results pair with the application's
    parameters in order.  It may return fewer tensors than it takes: the
    others (used for their sizes) are still arguments of the kernel, named
    after the arrangement's parameters."""
    positions = [i for i, v in enumerate(values) if isinstance(v, Tensor)]
    tensors = [values[i] for i in positions]
    names = list(app_names)
    if len(app_names) != len(tensors):
        names = _shape_only_names(arrangement, positions, app_names, app_def)
    for name, tensor in zip(names, tensors):
        if tensor._auto_named:
            tensor._display = name
    try:
        arranged = arrangement(*values)
    except TypeError as e:
        raise ArrangementError(f"calling the arrangement failed: {e}") from e
    if isinstance(arranged, Tensor):
        arranged = (arranged,)
    if not isinstance(arranged, (tuple, list)):
        where = _where(arrangement)
        raise ArrangementError(
            f"the arrangement{where} returned {arranged!r}, not the arranged tensors: end it with "
            f"`return {', '.join(f'{n}_arranged' for n in app_names)}` (one tensor per parameter of the "
            "application, in order)")
    arranged = tuple(arranged)
    if len(arranged) != len(app_names):
        raise ArrangementError(
            f"the arrangement returned {len(arranged)} tensors for the {len(app_names)} "
            f"parameters of the application ({', '.join(app_names)}); they pair in order"
        )
    by_tensor = [None] * len(tensors)
    for position, (name, result) in enumerate(zip(app_names, arranged)):
        if not isinstance(result, Tensor):
            raise ArrangementError(f"the arrangement returned {result!r} for `{name}`, not a Tensor")
        if len(arranged) == len(tensors):
            index = position
            if result.source is not tensors[position]:
                raise ArrangementError(
                    f"the arrangement returned, in the place of `{name}`, a tensor derived from "
                    f"`{result.source.name}`; return the arranged tensors in parameter order"
                )
        else:
            index = next((i for i, t in enumerate(tensors) if t is result.source), None)
            if index is None or by_tensor[index] is not None:
                raise ArrangementError(
                    f"the arrangement returned, for `{name}`, a tensor derived from "
                    f"`{result.source.name}`, which is not one of the tensors given or is returned twice"
                )
            names[index] = name
        if result.level != 0:
            raise ArrangementError(
                f"`{name}`: the arrangement returned an inner level; assign it back with "
                f"`t.dtype = ...` and return the outer tensor"
            )
        check_inner_extents(name, result)
        by_tensor[index] = result
    return names, by_tensor


def _where(fn):
    """`` `name` (file, line n)`` of a function, where known."""
    fn = getattr(fn, "func", fn)  # functools.partial
    code = getattr(fn, "__code__", None)
    if code is None:
        return ""
    return f" `{fn.__name__}` ({code.co_filename}, line {code.co_firstlineno})"


def _shape_only_names(arrangement, positions, app_names, app_def):
    """Names for tensors the arrangement may not return (at ``positions`` of
    its arguments): its own parameter names, unless the application uses the
    name (then ``<name>_shape``)."""
    try:
        params = [p.name for p in inspect.signature(arrangement).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)]
    except (TypeError, ValueError):
        params = []
    used = {n.id for n in ast.walk(app_def) if isinstance(n, ast.Name)} | set(app_names)
    names = []
    for i in positions:
        name = params[i] if i < len(params) and params[i].isidentifier() else f"tensor_{i}"
        while name in used or name in names:
            name += "_shape"
        names.append(name)
    return names


def _canonical_names(arrangement, tensors, arranged, names):
    """A mapping from every symbol to a deterministic, readable one."""
    renames = {}
    for name, tensor in zip(names, tensors):
        if tensor._auto_named:
            for d, s in enumerate(tensor.source_shape):
                if isinstance(s, Symbol) and s.name == f"{tensor.name}_size_{d}":
                    renames[s] = _copy_symbol(s, f"{name}_size_{d}")
            for d, s in enumerate(tensor.source_strides):
                if isinstance(s, Symbol) and s.name == f"{tensor.name}_stride_{d}":
                    renames[s] = _copy_symbol(s, f"{name}_stride_{d}")
    # Auto-named block sizes take the name they are bound to in the arrangement
    # (a parameter default, a bound keyword, a closure variable or a global),
    # else BLOCK_SIZE_<k> in order of first appearance.
    bound = _bound_names(arrangement)
    taken = set(names) | {s.name for s in renames.values()}
    counter = itertools.count()
    for symbol in _symbols_in_order(arranged):
        if getattr(symbol, "auto_named", False) and symbol not in renames:
            name = bound.get(symbol)
            if name is None or name in taken:
                name = f"BLOCK_SIZE_{next(counter)}"
                while name in taken:
                    name = f"BLOCK_SIZE_{next(counter)}"
            taken.add(name)
            renames[symbol] = _copy_symbol(symbol, name)
    return renames


def _symbols_in_order(arranged):
    seen = {}
    for t in arranged:
        hier = t.hierarchy
        exprs = [s for level in hier.levels for s in level.shape] + list(hier.index) + list(hier.conditions)
        for e in exprs:
            for s in sorted(sympy.sympify(e).free_symbols, key=lambda s: s.name):
                if isinstance(s, Symbol):
                    seen.setdefault(s, None)
    return list(seen)


def _copy_symbol(symbol, name, positive=False):
    new = Symbol(
        name,
        constexpr=symbol.constexpr,
        meta=symbol.meta,
        lower_bound=symbol.lower_bound,
        upper_bound=symbol.upper_bound,
        power_of_two=symbol.power_of_two,
        nonnegative=not positive and symbol.is_positive is not True,
    )
    new.is_size = getattr(symbol, "is_size", False)
    new.padded = getattr(symbol, "padded", False)
    new.jagged = getattr(symbol, "jagged", False)
    return new


def _padded_twins(arranged, renames, names):
    """A twin, marked padded, of each call-time symbol named in ``names``."""
    twins = {}
    if not names:
        return twins
    for symbol in _symbols_in_order(arranged):
        current = renames.get(symbol, symbol)
        if current.name in names and not current.meta:
            twin = _copy_symbol(current, current.name, positive=current.is_positive is True)
            twin.padded = True
            twins[symbol] = twin
    return twins


def _positive_twins(arranged):
    """A positive copy of every non-negative compile-time symbol that a
    meta-operation required to be at least 1 (a tile size, stride or
    dilation given at call time): proofs then know it is positive, as they
    know of block sizes, and the launcher checks the value it gets."""
    twins = {}
    for t in arranged:
        for req in t.hierarchy.requirements:
            lhs = req.lhs if isinstance(req, sympy.GreaterThan) and req.rhs == 1 else None
            if isinstance(lhs, Symbol) and lhs.constexpr and lhs.is_positive is not True and lhs not in twins:
                twin = _copy_symbol(lhs, lhs.name, positive=True)
                twin.positive_reason = "the arrangement uses it as a tile size, stride or dilation"
                twins[lhs] = twin
    return twins


class _Renamed:
    """An arranged tensor after renaming, as plain data."""

    def __init__(self, name, levels, index, conditions, requirements, padding=()):
        self.name = name
        self.padding = padding
        self.levels = levels  # list of (shape tuple, vars tuple)
        self.index = index
        self.conditions = conditions
        self.requirements = requirements
        self.live = None  # per outermost dimension: its live count, or None


def _rename_hierarchy(tensor, renames):
    hier = tensor.hierarchy
    mapping = dict(renames)
    levels = []
    for depth, level in enumerate(hier.levels):
        vars = []
        for j, v in enumerate(level.vars):
            mapping[v] = sympy.Dummy(f"l{depth}_{j}", integer=True, nonnegative=True)
            vars.append(mapping[v])
        levels.append((tuple(sympy.sympify(s).xreplace(mapping) for s in level.shape), tuple(vars)))
    renamed = _Renamed(
        None,
        levels,
        tuple(sympy.sympify(e).xreplace(mapping) for e in hier.index),
        tuple(c.xreplace(mapping) for c in hier.conditions),
        tuple(r.xreplace(mapping) for r in hier.requirements),
        tuple(c.xreplace(mapping) for c in hier.padding),
    )
    # Live counts of the outermost dimensions (windows past the end masked).
    renamed.live = tuple(
        None if v not in hier.live else sympy.sympify(hier.live[v]).xreplace(mapping)
        for v in hier.levels[0].vars
    )
    return renamed


class _Source:
    def __init__(self, tensor, shape, strides):
        self.tensor = tensor
        self.shape = shape
        self.strides = strides


def _rename_source(tensor, renames):
    return _Source(
        tensor,
        tuple(sympy.sympify(s).xreplace(renames) for s in tensor.source_shape),
        tuple(sympy.sympify(s).xreplace(renames) for s in tensor.source_strides),
    )


# -- proofs ------------------------------------------------------------------


class _Proof(PairingMixin):
    """Outermost-shape consistency, launch checks and mask pruning."""

    def __init__(self, names, arranged, sources, written=None, sourced=None):
        self.names = names
        self.arranged = arranged
        self.sources = sources
        self.written = set(names) if written is None else set(written)  # tensors the application may write
        # tensor -> the source dimensions whose sizes the application reads (None: all)
        self.sourced = dict.fromkeys(names) if sourced is None else dict(sourced)
        self.checks = []
        self.facts = []
        self.subs = {}  # size symbol -> representative (unified sizes)
        self._seq_lens, self._jagged_batch = {}, {}  # jagged tensors: row length symbols, batch indices

    def _size_owner(self):
        owner = {}
        for name, src in zip(self.names, self.sources):
            for d, s in enumerate(src.shape):
                if isinstance(s, sympy.Symbol):
                    owner.setdefault(s, f"{name}.shape[{d}]")
        return owner

    def describe(self, expr):
        """An expression with size symbols written as ``x.shape[d]``."""
        owner = self._size_owner()
        text = str(expr)
        for s in sorted(owner, key=lambda s: -len(s.name)):
            text = text.replace(s.name, owner[s])
        return text

    def run(self):
        arrays = [(n, t) for n, t, s in zip(self.names, self.arranged, self.sources)
                  if t is not None and (s.tensor.ndim or len(t.levels[0][0]))]
        for name, t in zip(self.names, self.arranged):
            for req in t.requirements if t is not None else ():
                self._require(req, f"`{name}`: a meta-operation assumed {self.describe(req)}", "")
        requirements = len(self.checks)
        if not arrays:
            raise ArrangementError("no arranged tensor to launch programs over")
        ref_name, ref = arrays[0]
        ref_shape = ref.levels[0][0]
        self.alignment = {ref_name: tuple(range(len(ref_shape)))}
        for name, t in arrays[1:]:
            self.alignment[name], ones = align(ref_name, ref_shape, name, t.levels[0][0])
            for owner, d, extent in ones:
                self._require_unit(ref_name, ref_shape, name, t.levels[0][0], owner, d, extent)
        grid = list(ref_shape)
        for g in range(len(ref_shape)):
            others = [(name, t, d) for name, t in arrays[1:]
                      for d, target in enumerate(self.alignment[name] or ()) if target == g]
            live = live_extents.agree(self, g, ref_name, ref, others)
            if live is not None:  # gapped windows: the program count is one of their counts
                grid[g] = live
                continue
            for name, t, d in others:
                if self._read_past_programs(name, d):
                    self._cover(ref_name, ref_shape[g], name, t.levels[0][0][d], g, d)
                elif self._read_apart(name, d, ref_shape[g], t.levels[0][0][d]) and not self._unifies(
                        ref_name, ref_shape[g], name, t.levels[0][0][d], g, d):
                    self._cover_apart(ref_name, ref_shape[g], name, t.levels[0][0][d], g, d)
                else:
                    self._equate(ref_name, ref_shape[g], name, t.levels[0][0][d], g, d)
        self.grid = tuple(self._apply(s) for s in grid)
        for name, t in arrays[1:]:
            if self.alignment[name] is None:
                require_split(self, ref_name, ref_shape, name, t.levels[0][0])
        self._moot_when_empty(requirements)
        self.program_vars = tuple(
            sympy.Symbol(f"pid_{d}", integer=True, nonnegative=True) for d in range(len(self.grid))
        )

    def _block_symbols(self, e):
        """Compile-time symbols that are not tensor sizes: block sizes the tuner
        or the caller may set to any value."""
        sizes = {s for src in self.sources for s in src.shape if isinstance(s, sympy.Symbol)}
        return {s for s in sympy.sympify(e).free_symbols if getattr(s, "constexpr", False) and s not in sizes}

    def _size_symbols(self, e):
        sizes = {s for src in self.sources for s in src.shape if isinstance(s, sympy.Symbol)}
        return sympy.sympify(e).free_symbols & sizes

    def _apply(self, e):
        return sympy.sympify(e).xreplace(self.subs) if self.subs else sympy.sympify(e)

    def _require(self, relation, message, reason, why=""):
        relation = self._apply(relation)
        if relation is sympy.true:
            return
        if relation is sympy.false:
            raise ArrangementError(message + " — which can never hold" + (f"; {why}" if why else ""))
        if any(c.relation == relation for c in self.checks):
            return
        self.checks.append(Check(relation, message, reason, why))
        self.facts.append(("checked", relation, reason))

    def _equate(self, name_a, a, name_b, b, dim, dim_b):
        a, b = self._apply(a), self._apply(b)
        where = f"outermost dim {dim}: `{name_a}` {self.describe(a)} vs `{name_b}` {self.describe(b)}"
        # Why an extent may not differ, either way: NineToothed maps program
        # ids from the first tensor's outermost shape.
        why = (
            f"one program runs per element of the outermost shape of `{name_a}`, the first "
            f"arranged tensor, and takes the tile of `{name_b}` at its index along `{name_b}`'s "
            f"outermost dim {dim_b}: were `{name_b}` to have more tiles there, no program would "
            f"compute the extra ones (a wrong result); were it to have fewer, the programs past "
            f"its last tile are not proved to leave it untouched"
        )
        if a == b or sympy.expand(a - b) == 0:
            self.facts.append(("proved", sympy.Eq(a, b, evaluate=False), f"outer(`{name_a}`)[{dim}] == outer(`{name_b}`)[{dim}]"))
            return
        metas = sorted(self._block_symbols(a) | self._block_symbols(b), key=lambda s: s.name)
        # Equal for every block size => equal with every block size 1.
        at_one = {m: sympy.S.One for m in metas}
        a1, b1 = a.xreplace(at_one), b.xreplace(at_one)
        diff = _simplified(a1 - b1)
        if diff.is_number and diff != 0:
            raise ArrangementError(
                f"{where}: these can never be equal (they differ by {diff} even with block "
                f"sizes of 1); {why}"
            )
        reason = ("needed for every " + ", ".join(m.name for m in metas)) if metas else "sizes must agree"
        free = [s for s in (a1 - b1).free_symbols if isinstance(s, sympy.Symbol)]
        solved = None
        diff = sympy.expand(a1 - b1)
        for s in sorted(free, key=lambda s: s.name, reverse=True):
            if diff.is_polynomial(s):
                poly = sympy.Poly(diff, s)
                if poly.degree() != 1:
                    continue
                coeff = poly.coeffs()[0]
                if coeff.is_number and coeff != 0:
                    solved = (s, sympy.expand(s - diff / coeff))
                    break
        if solved is not None:
            s, value = solved
            sub = {s: value}
            if _simplified(a.xreplace(sub) - b.xreplace(sub)) == 0:
                message = f"{self.describe(a1)} must equal {self.describe(b1)} ({where})"
                self._require(sympy.Eq(a1, b1), message, reason, why)
                if value.is_Symbol:
                    self.subs = {k: v.xreplace(sub) for k, v in self.subs.items()}
                    self.subs[s] = value
                return
        # Same expression up to renaming one size: those sizes must be equal
        # (e.g. cdiv(x_size_0, 16) vs cdiv(y_size_0, 16), whatever the tile).
        sizes_a = sorted(self._size_symbols(a) - b.free_symbols, key=lambda s: s.name)
        sizes_b = sorted(self._size_symbols(b) - a.free_symbols, key=lambda s: s.name)
        if len(sizes_a) == 1 and len(sizes_b) == 1:
            sa, sb = sizes_a[0], sizes_b[0]
            if sympy.expand(a.xreplace({sa: sb}) - b) == 0:
                message = f"{self.describe(sa)} must equal {self.describe(sb)} ({where})"
                self._require(sympy.Eq(sa, sb), message, "the arrangement maps them to the same programs", why)
                self.subs = {k: v.xreplace({sb: sa}) for k, v in self.subs.items()}
                self.subs[sb] = sa
                return
        # Equal for every block size needs equality with block sizes of 1: a
        # relation between sizes alone, checked at launch before anything runs
        # (N*(H-R+1)*(W-S+1) == N'*P*Q for an implicit-GEMM convolution).
        tuned = metas and all(getattr(m, "meta", False) for m in metas)
        if tuned and not self._block_symbols(a1 - b1) and (a1 - b1).free_symbols:
            message = f"{self.describe(a1)} must equal {self.describe(b1)} ({where})"
            self._require(sympy.Eq(a1, b1), message, reason, why)
            marker = sympy.Dummy("same", integer=True, positive=True)
            if sympy.expand(a.subs(a1, marker) - b.subs(b1, marker)) == 0:
                return
        # Otherwise check the exact shapes at launch, with the chosen block sizes.
        message = f"{where} must be equal"
        self._require(sympy.Eq(a, b), message, "checked with the chosen block sizes", why)

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
            # Each outermost dimension takes the program index of the grid
            # dimension it is aligned with; a unit dimension takes 0.
            program = {
                v: (sympy.S.Zero if g is None or self.grid[g] == 1 else self.program_vars[g])
                for v, g in zip(t.levels[0][1], self.alignment.get(name) or ())
            }
            if self.alignment.get(name, ()) is None:  # NineToothed's split (ntsym/split.py)
                shape = [self._apply(n) for n in t.levels[0][0]]
                program = dict(zip(t.levels[0][1], split_index(self.program_vars, self.grid, shape)))
            grid_ranges = dict(zip(self.program_vars, self.grid))
            levels = [tuple(self._apply(s) for s in shape) for shape, _ in t.levels]
            level_vars = [vars for _, vars in t.levels]
            if len(levels) == 1:
                # An untiled tensor: each program takes one element, a tile
                # of no dimensions.
                levels.append(())
                level_vars.append(())
            level_vars[0] = tuple(program[v] for v in level_vars[0])
            mapping = dict(program)
            index = tuple(self._apply(e).xreplace(mapping) for e in t.index)
            conditions = [self._apply(c).xreplace(mapping) for c in t.conditions]
            padding = [self._apply(c).xreplace(mapping) for c in t.padding]
            sizes = tuple(self._apply(s) for s in src.shape)
            if tensor.jagged_dim is not None:
                # Inside a program, the ragged size is this sequence's length:
                # the tensor's own masks, loop bounds and `x.source.shape`
                # use it; the grid (level 0) runs over the longest row.
                row = {self._longest(name, src): self._seq_len(name)}
                batch = index[0]
                levels = levels[:1] + [tuple(sympy.sympify(n).xreplace(row) for n in shape) for shape in levels[1:]]
                index = tuple(e.xreplace(row) for e in index)
                conditions = [c.xreplace(row) for c in conditions]
                padding = [c.xreplace(row) for c in padding]
                sizes = tuple(sympy.sympify(n).xreplace(row) for n in sizes)
                self._jagged_batch[name] = batch
                if self._seq_len(name) in set().union(*(sympy.sympify(n).free_symbols for n in levels[-1])):
                    raise ArrangementError(
                        f"`{name}`: a tile spans the whole ragged dimension {tensor.jagged_dim} of this jagged "
                        "tensor, but that length differs from one sequence to the next and a tile's shape is "
                        "fixed at compile time; tile the ragged dimension with a block size (and loop over "
                        "the blocks, `x.tile((1, BLOCK, ...)).tile((1, -1, ...))`)")
            ranges = dict(grid_ranges)
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
            params.append(
                TensorParam(
                    name=name,
                    kind="tensor",
                    ndim=tensor.ndim,
                    dtype=tensor.element_dtype,
                    other=tensor.other,
                    levels=tuple(levels),
                    level_vars=tuple(level_vars),
                    index=index,
                    strides=src.strides,
                    sizes=sizes,
                    source_sizes=tuple(src.shape),
                    conditions=tuple(kept),
                    padding=tuple(c for c in kept if c in set(padding)),
                    dropped=tuple(dropped),
                )
            )
        self._params = tuple(params)
        return tuple(params)

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


def _meta_params(proof):
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


def _simplified(expr):
    """``sympy.simplify(expr)`` where it could tell more than ``expand``: an
    expression that expands to a polynomial in its symbols (no integer
    divisions, remainders, minima or other functions) is a number after
    expanding or never (simplify returns an equal expression, and a
    polynomial that is not constant is not a constant function); callers
    only ask whether it is a number, or zero."""
    expanded = sympy.expand(expr)
    if expanded.is_number or not expanded.atoms(sympy.Function) and expanded.is_polynomial(*expanded.free_symbols):
        return expanded
    return sympy.simplify(expr)
