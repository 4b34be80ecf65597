"""Addressing: where a tile's elements are, and which exist.

In two steps, so that what is worked out can be looked at before it is
printed: ``tile_address`` gives a ``TileAddress`` (the element offset,
index map times strides, and a cheaper form for contiguous tensors; the
conditions an element must meet, those proved over the ranges of program,
loop and tile indices dropped); ``pointer_and_mask`` prints it as a pointer
block and a mask, which ``address`` returns for the pointer access
(``codegen/access.py``).  While printing, inside loops, index math and mask
parts no loop changes are computed once before the outermost statement
(hoisting), and an offset affine in a loop's variable may be carried from
one iteration to the next (``LoopsMixin._carried``).  Also here:
``x.source[...]`` addresses, ``x.offsets(d)``, and the launch checks that
``x[k]`` inside ``for k in range(n)`` implies (``_fixed``, ``_loop_check``).
"""

import ast
import copy
from dataclasses import dataclass

import sympy

from ntsym_codegen import bounds, debug_checks, template
from ntsym_codegen.astutil import broadcast, generated_assign, literal_int
from ntsym_codegen.intfuncs import CeilDiv, FloorDiv, Mod, recombine
from ntsym_codegen.ir import Check
from ntsym_codegen.printer import Printer, PrintError, conjunction
from ntsym_codegen.shapes import block_extent_expr
from ntsym_codegen.template import expr


@dataclass
class TileAddress:
    """A tile's addressing as a value: what ``tile_address`` works out and
    ``pointer_and_mask`` prints.

    - ``param``: the tensor parameter;
    - ``vars``: the tile's index variables, in the tile's order;
    - ``names``: index variable -> the name of its ``tl.arange`` block;
    - ``ranges``: index variable -> its block extent (a power of two);
    - ``offset``: the element offset, index times strides (SymPy);
    - ``contiguous``: the offset for a contiguous tensor, where it takes
      fewer divisions, else None;
    - ``conditions``: what an element must meet to exist, the proved ones
      dropped (``[false]`` where no element exists).
    - ``lanes``: what a lane must meet to lie inside the arranged tensor:
      ``conditions`` less those ``pad`` added (padding positions are part of
      the tensor: they read ``other`` and reductions include them).
    """

    param: object
    vars: list
    names: dict
    ranges: dict
    offset: object
    contiguous: object
    conditions: list
    lanes: list = None  # the conditions a lane must meet to lie inside the arranged tensor


class AddressingMixin:
    """Pointers and masks for tiles, for ``KernelEmitter``.

    Writes ``records`` (``pow2``, ``prologue_defs``, ``contiguity_flags``,
    ``checks``, ``size_subs``, ``sourced``) and ``hoist``; appends hoisted
    statements to ``blocks.top_pre``; reads ``loops.ranges``/``trips``.
    Uses ``LoopsMixin._carried`` for pointers a loop carries and the
    visitor's ``printer``, ``base_ranges``, ``resolve``, ``expr``."""

    # -- a tile's address, worked out then printed -----------------------------

    def address(self, ref, node):
        """Pointer expression and mask (AST) for a reference to an innermost tile."""
        return self.pointer_and_mask(self.tile_address(ref, node), node)

    def tile_address(self, ref, node):
        """Where the elements of the innermost tile ``ref`` are and which
        exist, as index math (a ``TileAddress``); nothing printed yet."""
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
        kept = _needed(conditions, all_ranges)
        padding = {c.xreplace(subs).xreplace(self.records.size_subs) for c in getattr(p, "padding", ())}
        lanes = _needed([c for c in conditions if c not in padding], all_ranges) if padding else kept
        contiguous = self._contiguous_offset(p, index, offset)
        return TileAddress(p, [vars[j] for j in vectorized], names, ranges, offset, contiguous, kept, lanes)

    def pointer_and_mask(self, address, node):
        """Print a ``TileAddress`` as a pointer block and a mask (AST, None
        where every element exists), the loop-invariant parts hoisted and
        the pointers carried by a loop where it can."""
        p, ranges, offset, contiguous = address.param, address.ranges, address.offset, address.contiguous
        printer = self.printer(address.names, ranges)
        try:
            used = offset.free_symbols & (contiguous.free_symbols if contiguous is not None else offset.free_symbols)
            shape = None
            if ranges and not set(ranges) <= used:
                # The tile repeats along some dimension (or is one element):
                # give the pointers the tile's full shape.
                shape = ast.Tuple(elts=[printer(ranges[v]) for v in address.vars], ctx=ast.Load())
            flag = self.records.contiguity_flags.setdefault(p.name, f"{p.name}_contiguous") if contiguous is not None else None
            forms = [self._pointer_parts(p, offset, printer, ranges)]
            if contiguous is not None:
                # For a contiguous tensor (a constexpr flag, set at launch)
                # the strides are products of sizes and flattened dimensions
                # merge back: fewer divisions, and addresses Triton can see
                # are consecutive (vectorized loads).
                forms.insert(0, self._pointer_parts(p, contiguous, printer, ranges))
            pointer = _pointer_block(f"{p.name}_ptr", forms, flag)
            pointer = broadcast(pointer, shape)
            offsets = [(flag, contiguous), (None, offset)] if flag else [(None, offset)]
            carried = self._carried(p, offsets, printer, shape)
            if carried is not None:
                # Which form runs is a compile-time flag the tuner chooses.
                pointer = expr("{carried} if {advance} else {pointer}",
                               carried=carried, advance=self.records.advance_flag, pointer=pointer)
            mask = self._mask(address.conditions, printer, ranges)
        except PrintError as e:
            raise self.error(f"cannot print index math for `{p.name}`: {e}", node) from None
        return pointer, mask

    # -- which tiles and elements exist; launch checks -------------------------

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

    # -- cheaper offsets and hoisting ------------------------------------------

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

    def _hoisted_parts(self, p, offset, printer, vectorized):
        """``offset`` as (the name of its loop-invariant part, that part, the
        rest): inside loops the part that no loop changes is computed once,
        before the outermost statement (loop-invariant code motion for index
        math Triton would otherwise redo every iteration).  (None, None,
        ``offset``) where nothing or everything is invariant."""
        if not self.loops.ranges:
            return None, None, offset
        terms = distributed_terms(offset)
        invariant = [t for t in terms if self._invariant(t, vectorized)]
        if not invariant or len(invariant) == len(terms):
            return None, None, offset
        part = sympy.Add(*invariant)
        key = (p.name, part, names_key(printer))
        if key not in self.hoist.computed:
            name = f"{p.name}_base_{len(self.hoist.computed)}"
            self.blocks.top_pre.append(generated_assign(name, printer(part)))
            self.hoist.computed[key] = name
        return self.hoist.computed[key], part, sympy.Add(*[t for t in terms if t not in invariant])

    def _hoisted_sum(self, p, offset, printer, vectorized):
        """Print ``offset``, its loop-invariant part hoisted (``_hoisted_parts``)."""
        base, _, rest = self._hoisted_parts(p, offset, printer, vectorized)
        return printer(rest) if base is None else expr("{base} + {rest}", base=base, rest=printer(rest))

    def _pointer_parts(self, p, offset, printer, ranges):
        """``offset`` printed for ``p``'s pointer block over the tile variables
        ``ranges``, as (a scalar offset added to the pointer first, or None;
        the rest).  Where the part a loop changes is the same for every
        element of the tile (a loop index times a stride), the pointer is
        ``p_ptr + rest + base``: the scalar pointer moves first and the
        hoisted offsets are added to it as they are, instead of being added
        to first (an integer add per vector of the tile and iteration less;
        on sm_90 sdpa's key loop then compiles to as many instructions as
        with pointers advanced).  Only where both parts are proved
        non-negative: each is then at most their sum, which 32-bit index
        math holds for every element that exists, while a negative part
        (a padded or shifted tile) could leave the other beyond it (the sum,
        taken in 32 bits, wraps back; two parts each extended to 64 bits
        do not)."""
        vectorized = set(ranges)
        base, part, rest = self._hoisted_parts(p, offset, printer, vectorized)
        if base is None:
            return None, printer(rest)
        if not rest.free_symbols & vectorized:
            known = {**self.base_ranges(), **ranges}
            if bounds.nonnegative(part, known) and bounds.nonnegative(rest, known):
                return printer(rest), expr(base)
        return None, expr("{base} + {rest}", base=base, rest=printer(rest))

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
                key = ("mask", tuple(fixed), names_key(printer))
                if key not in self.hoist.computed:
                    name = f"mask_{len(self.hoist.computed)}"
                    self.blocks.top_pre.append(generated_assign(name, conjunction(printer(c) for c in fixed)))
                    self.hoist.computed[key] = name
                block = expr(self.hoist.computed[key])
                if len(fixed) < len(vector):
                    rest = conjunction(printer(c) for c in vector if c not in fixed)
                    block = expr("{block} & {rest}", block=block, rest=rest)
        if not scalar:
            return block
        if block is None:  # a block that is all true, shaped like the tile
            block = conjunction(printer(sympy.Lt(v, e)) for v, e in ranges.items())
        if block is None:
            return conjunction(printer(c) for c in scalar)
        return expr("tl.where({tiles}, {block}, False)", tiles=conjunction(printer(c) for c in scalar), block=block)

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
        if relation is sympy.false or sympy.sympify(bound).as_coeff_Add()[0] != 0 or bounds.nonnegative(size - bound, {}):
            # Never the level's count, a count shifted by a constant
            # (``range(x.shape[0] - 1)``), or one proved at most the level's
            # (``range(x.source.shape[1] // BLOCK)``, the whole tiles): the
            # loop reads a sub-range, which is fine while it never passes
            # the last tile.
            self._loop_within(value, bound, size, param, node)
            return
        lengths = {j.seq_len: j.name for j in self.ir.jagged}
        if relation.free_symbols & set(lengths):
            if relation.free_symbols <= set(self.ir.symbols.values()) | set(lengths):
                self._same_lengths(relation, lengths, value, bound, size, param, node)
            return  # else, as below: the bound involves values of the application
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

    def _same_lengths(self, relation, lengths, value, bound, size, param, node):
        """``x[k]`` with ``k`` over a count of another jagged tensor's blocks
        of its sequence: both sequences must have one length, which only the
        offsets tell, so the launch compares them (``spec.same_lengths``).
        Any other relation with a sequence's length (a jagged tensor's blocks
        beside a dense tensor's) has no launch check, as before: the loads
        past the shorter one are masked, as NineToothed's are."""
        what = f"`{param.name}` is indexed by `{value}`, which runs over range({bound}), but that level of " \
               f"`{param.name}` has {size} tiles"
        sides = [(e, sympy.S.One) if e in lengths else e.args if isinstance(e, CeilDiv) else (None, None)
                 for e in (relation.args if isinstance(relation, sympy.Eq) else ())]
        if len(sides) == 2 and sides[0][1] == sides[1][1] and sides[0][1].is_Integer \
                and all(e in lengths for e, _ in sides):
            # Tile counts of each sequence, cdiv(length, block): compared at launch, sequence by sequence.
            (a, block), (b, _) = sorted(sides, key=lambda side: lengths[side[0]])
            entry = (lengths[a], lengths[b], int(block), what)
            if entry not in self.records.same_lengths:  # a peeled loop body is emitted twice
                self.records.same_lengths.append(entry)

    def _loop_within(self, value, bound, size, param, node):
        """``x[k]`` with ``k`` over ``range(bound)``, a bound that differs from
        the level's ``size`` tiles: refused at make where the loop provably
        runs past the last tile, checked at launch where that is not decided."""
        if bounds.nonnegative(size - bound, {}):
            return
        message = (f"`{param.name}` is indexed by `{value}`, which runs over range({bound}), but that level of "
                   f"`{param.name}` has {size} tiles: the last iterations would read tiles past its end; "
                   f"bound the loop by `{param.name}.shape` of that level")
        relation = sympy.Le(bound, size)
        if relation is sympy.true:
            return
        if relation is sympy.false or bounds.nonnegative(bound - size - 1, {}):
            raise self.error(message, node)
        if not relation.free_symbols <= set(self.ir.symbols.values()):
            return  # the bound involves values of the application: the tile's mask keeps the reads in
        check = Check(relation, message, f"the loop over `{value}` reads `{param.name}`")
        if check not in self.records.checks:
            self.records.checks.append(check)

    # -- names of tile index blocks; x.source[...] and x.offsets(d) ------------

    def arange_name(self, p, depth, j, pos, count, extent):
        key = (p.name, depth, j, pos, count)
        if key not in self.records.prologue_defs:
            name = f"{p.name}_t{j}" if depth == len(p.levels) - 1 and count == len(p.levels[depth]) else f"{p.name}_l{depth}_t{j}_{pos}of{count}"
            node = expr("tl.arange(0, {extent})", extent=Printer()(extent))
            if count > 1:  # a new axis for each other dimension of the tile
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
        pointer = expr(f"{p.name}_ptr")
        mask = None
        printer = self.printer()
        for d, (key, stride, size) in enumerate(zip(keys, p.strides, p.sizes)):
            index = self.expr(key)
            pointer = expr("{pointer} + {index} * {stride}", pointer=pointer, index=index, stride=printer(stride))
            bounds = [expr("{index} >= 0", index=copy.deepcopy(index)),
                      expr("{index} < {size}", index=copy.deepcopy(index), size=printer(size))]
            if debug_checks.enabled():
                self._check_index(p, d, key, bounds)
            # Dimensions meet through tl.where, not ``&``: an index may be a
            # scalar (a program's row) and another a block, and Triton's
            # interpreter mistypes a scalar boolean ``&`` a block one.
            inside = conjunction(bounds)
            mask = inside if mask is None else expr("tl.where({mask}, {inside}, False)", mask=mask, inside=inside)
        return p, pointer, mask

    def _check_index(self, p, d, key, bounds):
        """Under NTSYM_DEBUG: a check, before the statement, that the index
        ``key`` of ``p.source`` along dimension ``d`` is in bounds on every lane
        inside the tensors it is computed from (``codegen/debug_checks.py``)."""
        message = (f"{p.name}.source[...]: the index `{ast.unparse(key)}` along dimension {d} is outside "
                   f"[0, {p.name}.shape[{d}])")
        self.check_index(conjunction(copy.deepcopy(b) for b in bounds), key, message)

    def check_index(self, inside, key, message):
        """Under NTSYM_DEBUG: ``ntsym_check_index`` before the statement, that
        ``inside`` holds on every lane where the index ``key`` lies inside the
        tensors it is computed from (its lanes past them hold a valid
        ``other``)."""
        lanes = self.lanes_of(key)
        if lanes.known and lanes.factors and all(f.node is not None for f in lanes.factors):
            lane = conjunction(copy.deepcopy(f.node) for f in lanes.factors)
            inside = expr("{inside} | ~({lane})", inside=inside, lane=lane)
        self.records.helpers.add("ntsym_check_index")
        self.blocks.pre.append(template.stmt("ntsym_check_index({inside}, {message})", inside=inside,
                                             message=ast.Constant(message)))

    def offsets(self, ref, node):
        """``x.offsets(d)``: the source indices along dimension ``d`` of the
        tile's elements; ``x.offsets()``: their offsets from the start of the
        source in elements (the sum of index times stride), as NineToothed
        gives them."""
        p = ref.param
        d = literal_int(node.args[0]) if len(node.args) == 1 and not node.keywords else None
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
        deeper = {v for level in p.level_vars[ref.depth + 1:] for v in level} & index.free_symbols
        if deeper:
            raise self.error(
                f"`{ast.unparse(node)}`: the elements of this tile of `{p.name}` are tiles themselves (level "
                f"{ref.depth} of {len(p.levels) - 1}), whose elements' offsets are not one block; take the offsets "
                f"of an innermost tile (`{p.name}[k].offsets(...)`)", node)
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


def _needed(conditions, ranges):
    """The conditions not proved over ``ranges`` (``[false]`` where one is
    false), those implied by others dropped."""
    kept = []
    for c in bounds.drop_implied(list(dict.fromkeys(conditions)), ranges):
        if c is sympy.true:
            continue
        if c is sympy.false:
            return [sympy.false]
        if not bounds.holds(c, ranges):
            kept.append(c)
    return kept


def names_key(printer):
    """The names a printer gives a tile's index variables: index math keyed
    with them is printed the same way (a tile and a row of it share their
    variables but not their shapes)."""
    return tuple(sorted((str(v), n) for v, n in printer.names.items()))


def _divisions(expr):
    return sum(1 for e in sympy.preorder_traversal(expr) if isinstance(e, (FloorDiv, Mod, CeilDiv)))


def distributed_terms(expr):
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


def _sizes_relation(a, b):
    """``a == b`` for every block size, written in sizes where possible."""
    metas = {s: sympy.S.One for s in (a - b).free_symbols if getattr(s, "meta", False)}
    a1, b1 = a.xreplace(metas), b.xreplace(metas)
    if a1 == b1:
        return sympy.Eq(a, b)
    return sympy.Eq(a1, b1)


def _pointer_block(base, forms, flag):
    """The pointer block ``base`` plus each form's offset (``_pointer_parts``):
    one form, or the contiguous one and the general one chosen by ``flag``.
    Where no form moves the scalar pointer first, the choice is between the
    offsets, ``base + (a if flag else b)``."""
    if all(first is None for first, _ in forms):
        offsets = [rest for _, rest in forms]
        offset = offsets[0] if len(offsets) == 1 else expr(
            "{contiguous} if {flag} else {general}", contiguous=offsets[0], flag=flag, general=offsets[1])
        return expr("{base} + {offset}", base=base, offset=offset)
    pointers = [expr("{base} + {offset}", base=base, offset=rest) if first is None
                else expr("{base} + {first} + {offset}", base=base, first=first, offset=rest)
                for first, rest in forms]
    return pointers[0] if len(pointers) == 1 else expr(
        "{contiguous} if {flag} else {general}", contiguous=pointers[0], flag=flag, general=pointers[1])
