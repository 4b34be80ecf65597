"""The outer-shape proof: every arranged tensor's outermost shape pairs with
the grid of programs (the first arranged tensor's outermost shape), proved
equal or reduced to launch checks; its relaxations of equal extents are in
pairing.py (``PairingMixin``), the kernel parameters it yields in
kernel_params.py (``ParamsMixin``).
"""

import sympy

from ntsym_codegen.ir import Check
from ntsym import live_extents
from ntsym.errors import ArrangementError
from ntsym.kernel_params import ParamsMixin
from ntsym.pairing import PairingMixin, align, at_smallest_blocks
from ntsym.split import require_split


class OuterProof(PairingMixin, ParamsMixin):
    """Outermost-shape consistency, launch checks and mask pruning."""

    def __init__(self, names, arranged, sources, written=None, sourced=None, apart=False):
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
        self.apart, self.apart_pairs = apart, []  # read tensors' own first extents (``_pair_equal``)
        self.stored_only = set()  # written tensors the application only assigns whole
        self.unused = frozenset()  # tensors the application never names (``_moot_when_unused``)

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
        owners = {}
        for name, t in zip(self.names, self.arranged):
            for req in t.requirements if t is not None else ():
                self._require(req, f"`{name}`: a meta-operation assumed {self.describe(req)}", "")
                owners.setdefault(self._apply(req), []).append(name)
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
                    self._pair_equal(ref_name, ref_shape[g], name, t.levels[0][0][d], g, d)
        self.grid = tuple(self._apply(s) for s in grid)
        for name, t in arrays[1:]:
            if self.alignment[name] is None:
                require_split(self, ref_name, ref_shape, name, t.levels[0][0])
        self._moot_when_empty(requirements)
        self._moot_when_unused(owners)
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
        why = self._equal_why(name_a, name_b, dim_b)
        if a == b or sympy.expand(a - b) == 0:
            self.facts.append(("proved", sympy.Eq(a, b, evaluate=False), f"outer(`{name_a}`)[{dim}] == outer(`{name_b}`)[{dim}]"))
            return
        metas = sorted(self._block_symbols(a) | self._block_symbols(b), key=lambda s: s.name)
        # Equal for every block size => equal with every block size 1 (or,
        # where a tile is empty at 1, at its lower bound).
        (a1, b1), at_one = at_smallest_blocks((a, b), metas)
        diff = _simplified(a1 - b1)
        if diff.is_number and diff != 0:
            sizes = ("block sizes of 1" if all(v == 1 for v in at_one.values()) else
                     "block sizes " + ", ".join(f"{m.name}={v}" for m, v in at_one.items()))
            raise ArrangementError(
                f"{where}: these can never be equal (they differ by {diff} even with {sizes}); {why}"
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
