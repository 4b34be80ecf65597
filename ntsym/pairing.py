"""How the arranged tensors' outermost shapes pair with the grid: which of
a tensor's outermost dimensions takes which program index (``align``), and
the relaxations of equal extents that NineToothed's programs compute
correctly, as methods of the outer-shape proof (``PairingMixin``): a read
tensor with more tiles than programs, shapes of different lengths whose
extra sizes are 1, a singleton assumed of a size 0 where no program runs.
See docs/design.md, "Where ntsym differs from NineToothed"."""

import ast
import dataclasses

import sympy

from ntsym_codegen import bounds
from ntsym_codegen.analysis import assigned_parameters
from ntsym_codegen.intfuncs import CeilDiv
from ntsym_codegen.shapes import block_extent_expr
from ntsym.errors import ArrangementError


class PairingMixin:
    """Methods of ``outer_proof.OuterProof``: reads its ``names``, ``arranged``,
    ``alignment``, ``written``, ``sourced``, ``grid``, ``checks`` and ``subs``; uses its
    ``_apply``, ``_require``, ``describe``, ``_size_symbols`` and
    ``_block_symbols``."""

    def _require_unit(self, ref_name, ref_shape, name, shape, owner, d, extent):
        """Check at launch that ``owner``'s outermost dimension ``d`` is of
        size 1: the dimension that ``align`` found no counterpart for."""
        message = f"`{owner}` outermost dim {d}: {self.describe(extent)} must equal 1"
        reason = (f"`{ref_name}`'s outermost shape {self._shape_text(ref_shape)} and `{name}`'s "
                  f"{self._shape_text(shape)} agree only where it is 1")
        why = (f"one program runs per element of `{ref_name}`'s outermost shape, and a dimension "
               "with no counterpart in the other shape takes index 0 in every program: its other "
               "tiles would be read or written by no program")
        self._require(sympy.Eq(extent, 1), message, reason, why)

    def _shape_text(self, shape):
        return shape_text([self.describe(n) for n in shape])

    def _read_past_programs(self, name, d):
        """Whether ``name``'s outermost dimension ``d`` may have more tiles than
        the grid has programs along it: ``name`` is only read, and ``d`` is
        its first dimension not of size 1, where NineToothed's split of the
        program id over the tensor's own shape gives the index the grid's
        does (no program computes a wrong result by not reading a tile)."""
        if not self._read_along_first(name, d):
            return False
        t = self.arranged[self.names.index(name)]
        return self._apply(t.levels[0][0][d]) in self._size_symbols(self._apply(t.levels[0][0][d]))

    def _read_along_first(self, name, d):
        """Whether ``name`` is only read and ``d`` is its first outermost
        dimension paired with the grid's and not of size 1: there
        NineToothed's split of the program id over the tensor's own shape
        gives the grid's index whatever the tensor's extent (the later ones
        being equal), so it may have more tiles than there are programs."""
        return name not in self.written and self._along_first(name, d)

    def _along_first(self, name, d):
        """Whether ``d`` is ``name``'s first outermost dimension paired with
        the grid's and not of size 1."""
        alignment = self.alignment[name]
        t = self.arranged[self.names.index(name)]
        first = next((k for k, g in enumerate(alignment or ()) if g is not None and t.levels[0][0][k] != 1), None)
        return d == first

    def _cover(self, name_a, a, name_b, b, dim, dim_b):
        """``b``, the tiles of the read-only ``name_b`` along its outermost
        dimension ``dim_b``, must be at least ``a``, the programs along the
        grid's dimension ``dim``: every program reads a tile there."""
        a, b = self._apply(a), self._apply(b)
        if a == b or sympy.expand(a - b) == 0:
            self.facts.append(("proved", sympy.Eq(a, b, evaluate=False), f"outer(`{name_a}`)[{dim}] == outer(`{name_b}`)[{dim}]"))
            return
        where = f"outermost dim {dim}: `{name_a}` {self.describe(a)} vs `{name_b}` {self.describe(b)}"
        reason = f"`{name_b}` is only read: each program reads its tile at the program's index"
        why = (f"one program runs per element of `{name_a}`'s outermost shape; a program past "
               f"`{name_b}`'s last tile along its outermost dim {dim_b} would read none of its elements "
               "(a wrong result); more tiles than programs are fine, those are not read")
        self._require(sympy.Le(a, b), f"{where} must be at most equal", reason, why)
        if self._confined(name_b, b, a):
            self.subs = {k: v.xreplace({b: a}) for k, v in self.subs.items()}
            self.subs[b] = a

    def _read_apart(self, name, d, a, b):
        """Whether ``name``'s extent ``b`` along its dimension ``d`` may exceed
        the programs ``a`` where its sizes stay its own: it is only read,
        ``d`` is its first dimension (``_read_along_first``), and neither
        extent depends on block sizes (a count of fixed windows,
        ``x.shape[0] - 2``): those of tuned blocks keep their equality, which
        the launch checks before a configuration is chosen."""
        return self._read_along_first(name, d) and not (self._block_symbols(self._apply(a))
                                                         or self._block_symbols(self._apply(b)))

    def _unifies(self, name_a, a, name_b, b, dim, dim_b):
        """Whether equating the extents would take one tensor's size for the
        other's (``_equate`` substitutes it in masks and index math): then
        the kernel is the one of equal sizes, and they must be equal.  Tried
        and undone."""
        saved = (list(self.checks), list(self.facts), dict(self.subs))
        try:
            self._equate(name_a, a, name_b, b, dim, dim_b)
        except ArrangementError:
            return False
        finally:
            unified = self.subs != saved[2]
            self.checks, self.facts, self.subs = saved
        return unified

    def _cover_apart(self, name_a, a, name_b, b, dim, dim_b):
        """``b``, the tiles of the read-only ``name_b`` along its first
        dimension, where no size of it is taken for another's (its masks are
        its own: windows of ``x.shape[0] - 2`` beside ``n`` programs): at
        least ``a``, the programs, with the block sizes a call chooses."""
        a, b = self._apply(a), self._apply(b)
        where = f"outermost dim {dim}: `{name_a}` {self.describe(a)} vs `{name_b}` {self.describe(b)}"
        self._require(
            sympy.Le(a, b), f"{where} must be at most equal",
            f"`{name_b}` is only read: each program reads its tile at the program's index",
            f"one program runs per element of `{name_a}`'s outermost shape; a program past `{name_b}`'s last "
            f"tile along its outermost dim {dim_b} would read none of its elements (a wrong result); more "
            "tiles than programs are fine, those are not read")

    def _pair_equal(self, name_a, a, name_b, b, dim, dim_b):
        """Extents the grid and ``name_b`` must share (``_equate``), except
        where ``name_b`` is only read (not jagged) and ``dim_b`` is its first
        dimension (``_read_along_first``), as a larger batch of keys than the queries'
        blocks (``cdiv(m, B)`` tiles beside ``cdiv(n, B)`` programs):
        NineToothed reads each program's tile, masked by the tensor's own
        size, and no other.  The kernel made first equates them (its masks
        and index math take one size for the other, as the paper's kernels'
        do) and records the pair (``apart_pairs``); its ``apart`` variant,
        launched where that kernel's checks refuse a call, keeps the
        tensor's own sizes and checks ``programs <= tiles``
        (``_cover_blocks``).  Not along a later dimension: there
        NineToothed's split of the program id over the tensor's own shape
        reads other tiles than the program's index names (``(2, 5)`` tiles
        beside ``(2, 3)`` programs: the second row of programs reads tiles 3
        and 4 of the first row), a wrong result; the sizes stay equal.
        Likewise a tensor the application only stores to whole (``y = ...``,
        ``stored_only``) may have fewer tiles than programs there: the
        programs past its last tile store nothing, their stores masked by its
        own size (as in NineToothed), and nothing read depends on it; more
        tiles stay refused (no program would write them)."""
        read = self._read_along_first(name_b, dim_b)
        stored = name_b in self.stored_only and self._along_first(name_b, dim_b)
        if (read or stored) and self._apply(a) != self._apply(b) and not self._jagged(name_b):
            if self.apart:
                self._cover_blocks(name_a, a, name_b, b, dim, dim_b, stored)
                return
            self.apart_pairs.append((name_b, dim_b))
        self._equate(name_a, a, name_b, b, dim, dim_b)

    def _equal_why(self, name_a, name_b, dim_b):
        """Why ``name_b``'s outermost extent along ``dim_b`` may not differ
        from the grid's, either way: NineToothed maps program ids from the
        first tensor's outermost shape."""
        start = (f"one program runs per element of the outermost shape of `{name_a}`, the first arranged "
                 f"tensor, and takes the tile of `{name_b}` at its index along `{name_b}`'s outermost dim {dim_b}: ")
        if name_b in self.written or self._read_along_first(name_b, dim_b):
            return start + (f"were `{name_b}` to have more tiles there, no program would compute the extra ones "
                            "(a wrong result); were it to have fewer, the programs past its last tile are not "
                            "proved to leave it untouched")
        return start + (f"`{name_b}` is only read, but along a dimension after its first NineToothed's programs take "
                        f"its tiles in row-major order of its own outermost shape, so with more tiles there they "
                        "would read other tiles than their index names (a wrong result); with fewer, programs past "
                        "its last tile would read none of its elements")

    def _jagged(self, name):
        return self.sources[self.names.index(name)].tensor.jagged_dim is not None

    def _cover_blocks(self, name_a, a, name_b, b, dim, dim_b, stored=False):
        """``programs <= tiles`` of the read-only ``name_b`` (``_cover_apart``),
        ``tiles <= programs`` of a ``stored`` one; where the extents depend
        on block sizes the tuner chooses, also with those sizes 1, checked
        before a configuration is chosen (``cdiv(n, B) <= cdiv(m, B)`` for
        every ``B`` where ``n <= m``): which tiles a program reads or writes
        must not depend on the configuration."""
        a, b = self._apply(a), self._apply(b)
        tuned = [m for m in self._block_symbols(a) | self._block_symbols(b) if getattr(m, "meta", False)]
        for a1, b1 in ([at_smallest_blocks((a, b), tuned)[0]] if tuned else []) + [(a, b)]:
            if stored:
                self._require(
                    sympy.Le(b1, a1),
                    f"outermost dim {dim}: `{name_b}` {self.describe(b1)} vs `{name_a}` {self.describe(a1)} "
                    "must be at most equal",
                    f"`{name_b}` is only stored to: each program writes its tile at the program's index, "
                    "the programs past its last tile none",
                    f"with more tiles than programs along `{name_b}`'s outermost dim {dim_b}, no program would "
                    "write the extra ones (they would keep their old values, a wrong result)")
            elif (a1, b1) == (a, b):
                self._cover_apart(name_a, a, name_b, b, dim, dim_b)
            else:
                self._require(
                    sympy.Le(a1, b1),
                    f"outermost dim {dim}: `{name_a}` {self.describe(a1)} vs `{name_b}` {self.describe(b1)} "
                    "must be at most equal",
                    f"`{name_b}` is only read: each program reads its tile at the program's index, for every "
                    f"{', '.join(sorted(m.name for m in tuned))} the tuner may choose",
                    f"with fewer, a program past `{name_b}`'s last tile along its outermost dim {dim_b} would read "
                    "none of its elements for some configurations (a wrong result); more tiles than programs are "
                    "fine, those are not read")

    def _confined(self, name, b, a):
        """Whether the proofs may take the size ``b`` (``name``'s outermost
        extent, at least ``a`` at launch) for ``a``: the application does not
        read that size of ``name``'s source, and ``b`` appears nowhere but there and in
        ``name``'s conditions ``... < b``, each of which holds
        with ``a`` in its place (a tile of size 1 along that dimension: the
        index is the program's, below ``a``).  Those conditions then hold
        with ``b`` too; the kernel's code is the one of equal sizes."""
        src = self.sources[self.names.index(name)]
        if name in self.sourced and (self.sourced[name] is None or any(
                self._apply(n) == b for d, n in enumerate(src.shape) if d in self.sourced[name])):
            return False  # the application reads that size itself
        t = self.arranged[self.names.index(name)]
        others = [e for u, n in zip(self.arranged, self.names) if u is not None and n != name
                  for shape, _ in u.levels for e in shape]
        others += [e for u in self.arranged if u is not None for e in u.index]
        others += [e for u, n in zip(self.arranged, self.names) if u is not None and n != name for e in u.conditions]
        others += [e for k, (shape, _) in enumerate(t.levels) for j, e in enumerate(shape) if (k, j) != (0, self._first(name))]
        if any(b in self._apply(e).free_symbols for e in others):
            return False
        ranges = {}
        for k, (shape, vars) in enumerate(t.levels):
            innermost = k == len(t.levels) - 1
            for v, n in zip(vars, shape):
                n = self._apply(n).xreplace({b: a})
                ranges[v] = block_extent_expr(n, {}) if innermost else n
        for c in t.conditions:
            c = self._apply(c)
            if b not in c.free_symbols:
                continue
            if not (isinstance(c, sympy.StrictLessThan) and c.rhs == b and b not in c.lhs.free_symbols):
                return False
            if not bounds.holds(c.xreplace({b: a}), ranges):
                return False
        return True

    def _first(self, name):
        return next(k for k, g in enumerate(self.alignment[name]) if g is not None)

    def _moot_when_empty(self, count):
        """The first ``count`` checks are the meta-operations' requirements; a
        tensor's dimension an ``expand`` or ``squeeze`` assumed of size 1 may
        be of size 0 where the launch runs no program (an empty batch: a bias of
        shape (0, N) beside an input of shape (0, N)): nothing is read or
        written then, so the launcher launches nothing and returns."""
        programs = sympy.Mul(*(self._empty_without_blocks(n) for n in self.grid))
        if programs.is_number:
            return
        for i, c in enumerate(self.checks[:count]):
            if isinstance(c.relation, sympy.Eq) and c.relation.rhs == 1 and c.relation.lhs.is_Symbol:
                self.checks[i] = dataclasses.replace(c, unless=programs)

    def _moot_when_unused(self, owners):
        """A dimension an ``expand`` or ``squeeze`` assumed of size 1 may be of
        size 0 where the tensor is one the application never names (NineToothed's
        ``x`` as a bare statement): none of its elements or sizes is read or
        written, whatever the programs do.  Only where no named tensor and no
        grid extent shares the size (elsewhere the assumption decides masks),
        and not for a jagged tensor (its offsets are read all the same).
        ``owners``: each requirement's relation -> the tensors it came from."""
        unused = self.unused
        if not unused:
            return
        shared = set().union(*(self._apply(e).free_symbols for e in self.grid))
        for name, src in zip(self.names, self.sources):
            # A jagged tensor's offsets are read at its batch index by every
            # program, named or not: an empty batch would be read past.
            if name not in unused or src.tensor.jagged_dim is not None:
                shared.update(*(self._apply(sympy.sympify(e)).free_symbols for e in src.shape))
        for i, c in enumerate(self.checks):
            relation, names = c.relation, owners.get(c.relation, ())
            if not (names and set(names) <= unused and isinstance(relation, sympy.Eq) and relation.rhs == 1
                    and relation.lhs.is_Symbol and relation.lhs not in shared):
                continue
            size = relation.lhs
            self.checks[i] = dataclasses.replace(c, unless=size if c.unless is None else c.unless * size)

    def _empty_without_blocks(self, extent):
        """An expression that is 0 where the grid ``extent`` is (or, on
        negative sizes, more strictly so), free of block sizes where it can
        be: ``cdiv(n, B)`` is 0 exactly where ``n`` is, so the check runs
        before a configuration is chosen."""
        if isinstance(extent, CeilDiv) and not self._block_symbols(extent.args[0]):
            return extent.args[0]
        return extent


def at_smallest_blocks(exprs, blocks):
    """``exprs`` with every block size of ``blocks`` 1 (a representative the
    configuration does not change); where a tile of a block expression is
    empty at 1 (``BLOCK // 16``: a division by zero), with each block at its
    declared lower bound instead.  Returns ``(exprs, values)``."""
    at = {m: sympy.S.One for m in blocks}
    try:
        return tuple(sympy.sympify(e).xreplace(at) for e in exprs), at
    except ZeroDivisionError:
        at = {m: sympy.Integer(max(1, getattr(m, "lower_bound", None) or 1)) for m in blocks}
        return tuple(sympy.sympify(e).xreplace(at) for e in exprs), at


def align(ref_name, ref_shape, name, shape):
    """For each outermost dimension of ``name``, the dimension of the grid
    (``ref_shape``) whose program index it takes, or None for a unit one;
    and the dimensions that must be 1 at launch for that pairing, as
    (tensor name, dimension, extent).

    One program per element: NineToothed splits the program id over each
    tensor's own outermost shape, so dimensions of size 1 take index 0 and the
    others are paired in order.  Shapes that keep their unit dimensions in the
    same places pair position by position (then unequal sizes are for the
    proof to decide).  Where one shape has more dimensions not of size 1 than
    the other, the extra ones must be of size 1 at launch (a sort's input
    arranged to ``(1,)`` beside quantiles arranged to ``(n, 1)``: ``n == 1``),
    if there is one choice of them.  Where there is none, or more than one
    (``(a, b)`` beside ``(n,)``: ``a`` or ``b`` may be 1, or neither, as in
    ``(A, C)`` beside ``(A * C,)``), the alignment is None: the tensor takes
    NineToothed's split of the program's row-major position over its own
    outermost shape (``split_index``), whatever its sizes at launch."""
    units = [d for d, n in enumerate(shape) if n == 1]
    ref_units = [d for d, n in enumerate(ref_shape) if n == 1]
    if len(shape) == len(ref_shape) and (units == ref_units or len(shape) - len(units) != len(ref_shape) - len(ref_units)):
        return tuple(range(len(shape))), ()
    kept = [d for d in range(len(ref_shape)) if d not in ref_units]
    others = [d for d in range(len(shape)) if d not in units]
    ones = ()
    if len(others) != len(kept):
        longer, owner, extents = (others, name, shape) if len(others) > len(kept) else (kept, ref_name, ref_shape)
        drop = _must_be_one(longer, extents, abs(len(others) - len(kept)))
        if drop is None:
            return None, ()  # no one choice of unit dimensions: NineToothed's split (``split_index``)
        ones = tuple((owner, d, extents[d]) for d in drop)
        if owner == name and longer is others:
            units = sorted(units + list(drop))
        else:
            kept = [d for d in kept if d not in drop]
    pairs = iter(kept)
    return tuple(None if d in units else next(pairs) for d in range(len(shape))), ones


def stored_only(app_def, names):
    """The parameters the application only assigns whole (``y = ...``, a
    single name as the target): never read, subscripted, updated in place
    (``y += ...``), passed to a function or asked for a size or a pointer.
    Nothing the kernel computes depends on their elements."""
    targets = {id(node.targets[0]) for node in ast.walk(app_def)
               if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)}
    plain = set(names)
    for node in ast.walk(app_def):
        if isinstance(node, ast.Name) and node.id in plain and id(node) not in targets:
            plain.discard(node.id)
    return plain


def maybe_written(app_def, inline, names):
    """The parameters the application may write: assigned (``x = ...``,
    ``x[k] = ...``, ``x.source[...] = ...``) here or in an inlined function,
    or whose pointer it takes (``x.source.data_ptr()``, for ``ntl.store``;
    all of them where an inlined function takes one)."""
    written = assigned_parameters(app_def, inline, set(names))
    return written | _rooted(app_def, inline, names, "data_ptr")


def read_through_source(app_def, inline, ndims):
    """For each parameter (``ndims``: name -> source ndim) whose source the
    application reads, the dimensions whose sizes it reads
    (``x.source.shape[1]``), or None for all (``x.source[...]``,
    ``x.source.shape``, ``x.source.size(d)``; every parameter where an
    inlined function reads one's source): sizes the proofs may not take for
    another's."""
    if any(_roots(f, "source") for f, _ in inline.values()):
        return dict.fromkeys(ndims)
    parents = {child: node for node in ast.walk(app_def) for child in ast.iter_child_nodes(node)}
    read = {}
    for node in ast.walk(app_def):
        if not (isinstance(node, ast.Attribute) and node.attr == "source"
                and isinstance(node.value, ast.Name) and node.value.id in ndims):
            continue
        name, up = node.value.id, parents.get(node)
        if isinstance(up, ast.Attribute) and up.attr in ("dtype", "stride", "data_ptr"):
            continue  # not a size
        dims = read.setdefault(name, set())
        index = parents.get(up) if isinstance(up, ast.Attribute) and up.attr == "shape" else None
        if dims is not None and isinstance(index, ast.Subscript) and isinstance(index.slice, ast.Constant) \
                and type(index.slice.value) is int:
            dims.add(index.slice.value % max(ndims[name], 1))
        else:
            read[name] = None
    return read


def _rooted(app_def, inline, names, attr):
    """``names`` reached through an attribute ``attr`` (``x.<...>.attr``) in
    the application; all of ``names`` where an inlined function has one."""
    if any(_roots(f, attr) for f, _ in inline.values()):
        return set(names)
    return _roots(app_def, attr) & set(names)


def _roots(func, attr):
    found = set()
    for node in ast.walk(func):
        if isinstance(node, ast.Attribute) and node.attr == attr:
            root = node.value
            while isinstance(root, (ast.Attribute, ast.Subscript, ast.Call)):
                root = root.func if isinstance(root, ast.Call) else root.value
            if isinstance(root, ast.Name):
                found.add(root.id)
    return found


def _must_be_one(dims, extents, count):
    """The ``count`` of ``dims`` that must be of size 1, where exactly that
    many could be (the others are proved larger); None otherwise."""
    could = [d for d in dims if sympy.Eq(extents[d], 1) is not sympy.false
             and (extents[d] - 1).is_positive is not True]
    return tuple(could) if len(could) == count or count == len(dims) == len(could) else None


def shape_text(shape):
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"
