"""Control flow: ``for`` loops, and what loops and branches make unknown.

A loop over ``range(cdiv(n, b))`` (blocks of a size) is peeled: the first
``n // b`` iterations see whole blocks, so masks and comparisons against
``n`` may be proved away; the last, partial iteration runs only where a
launch flag (``NTSYM_WHOLE_i``, in ``records.whole``) says ``n % b != 0``.

Each ``for`` being emitted has a ``_LoopFrame`` on ``loops.frames``;
addressing registers there the pointer blocks the loop may carry (offset
affine in the loop variable).  The loop then sets them before it
(``_carried_inits``) and advances them at the end of each iteration
(``_advanced``), both under the ``NTSYM_ADVANCE`` flag the tuner chooses;
where the emitted body changes what an offset is made of, the accesses go
back to their index form (``_IndexForm``).
"""

import ast
import contextlib
import copy

import sympy

from ntsym_codegen.addressing import distributed_terms, names_key
from ntsym_codegen.analysis import assigned_names, inline_written
from ntsym_codegen import bounds, template
from ntsym_codegen.astutil import broadcast, generated_assign
from ntsym_codegen.emit_error import EmitError
from ntsym_codegen.intfuncs import CeilDiv, FloorDiv
from ntsym_codegen.lanes import same_everywhere
from ntsym_codegen.template import expr


class LoopsMixin:
    """Loops, peeling and carried pointers, for ``KernelEmitter``.

    Writes ``loops`` (ranges, trips, frames, pointer names),
    ``records.whole``/``advances``; rewinds ``names.counter`` between a
    peeled loop's two bodies; forgets ``values`` and ``shapes`` entries of
    names a loop or branch assigns; empties the tile caches of ``blocks``
    for tensors the application writes.  Reads ``hoist``.  Uses the
    visitor's ``block``, ``expr``, ``keyword``, ``printer``, ``to_sympy``
    and ``AddressingMixin._hoisted_sum``."""

    # -- for loops and peeling -------------------------------------------------

    def for_loop(self, stmt):
        """``for v in range(...)``: the loop, peeled where it runs over the
        blocks of a size, with the pointers it carries set before it."""
        stmt = self._plain_range(stmt)
        self._check_loop(stmt)
        it = stmt.iter
        var = sympy.Symbol(stmt.target.id, integer=True)
        args = it.args
        body_assigned, ceiling = self._learn_range(stmt, var)
        self.names.locals.add(stmt.target.id)
        self.lanes.locals[stmt.target.id] = same_everywhere()  # a scalar: no lane outside
        new_iter = ast.Call(func=self.expr(it.func), args=[self.expr(a) for a in args], keywords=[self.keyword(k) for k in it.keywords])
        assigned = body_assigned | {stmt.target.id}
        start, step = self._range_start_step(it, assigned)
        self._forget(assigned)
        self._enter_loop()
        self.loops.lanes_before.append(self.lane_snapshot())
        self.loops.lanes_after.append([])
        own = {stmt.target.id} - body_assigned  # the variable, where only the loop assigns it
        try:
            loop, assigned = self._settled(stmt, assigned, lambda names: self._for_loop(
                stmt, it, args, var, start, step, names, ceiling, new_iter, names - own))
            return loop
        finally:
            # After the loop, which may not have run: what it found or what
            # the bodies leave, those factors that read the loop's variable or
            # what it assigns stale.
            before = self.loops.lanes_before.pop()
            self.lanes.locals = dict(before)
            self.lane_join(assigned, [before] + self.loops.lanes_after.pop(), assigned | {var.name})

    def _plain_range(self, stmt):
        """``for k in ntl.range(a, b, c, num_stages=...)`` as ``for k in
        range(a, b, c)``: the same iterations (the keywords are scheduling
        hints for the compiler)."""
        it = stmt.iter
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and it.func.attr == "range"
                and self.alias(it.func.value) == "tl"):
            return stmt
        stmt = copy.copy(stmt)
        stmt.iter = ast.copy_location(ast.Call(func=ast.Name(id="range", ctx=ast.Load()), args=list(it.args),
                                               keywords=[]), it)
        return stmt

    def _check_loop(self, stmt):
        """Refuse a loop ntsym cannot emit: not over ``range`` (or
        ``static_range``), a target that is not one name, or one that shadows
        a parameter."""
        if not isinstance(stmt.target, ast.Name):
            raise self.error("loop targets must be a single name", stmt)
        it = stmt.iter
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id in ("range", "static_range")):
            if isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and it.func.attr == "static_range":
                pass
            else:
                raise self.error("only `for i in range(...)` loops are supported", it)
        if stmt.target.id in self.params and stmt.target.id not in self.names.locals:
            raise self.error(
                f"the loop variable `{stmt.target.id}` shadows the parameter `{stmt.target.id}`; "
                "choose another name",
                stmt.target,
            )

    def _learn_range(self, stmt, var):
        """What proofs may know of the loop variable's range (into
        ``loops.ranges`` and ``trips``); returns the names the body assigns
        and the cdiv(n, b) the loop's stop is (or is at most), or None."""
        it, args = stmt.iter, stmt.iter.args
        # What proofs know of the variable's range holds only where the body
        # leaves the variable to the loop: no `k = k - 2`, no inner loop over
        # `k` (so no enclosing loop's range is ever that of an inner `k`).
        body_assigned = self.written_in(stmt.body)
        rebound = stmt.target.id in body_assigned
        ceiling = None  # the cdiv(n, b) the loop's stop is (or is at most)
        if len(args) == 1 and not rebound:
            bound = self._range_value(args[0])
            if bound is not None:
                self.loops.ranges[var] = bound
                self.loops.trips[var] = bound
                ceiling = bound if isinstance(bound, CeilDiv) else None
        elif len(args) == 2 and not it.keywords and not rebound:
            # range(a, b) with a >= 0: the variable lies in [0, b), which
            # is all the proofs of masks use of a loop variable's range.
            start_value, stop = self._range_value(args[0]), self._range_value(args[1])
            if start_value is not None and stop is not None \
                    and bounds.nonnegative(start_value, self.base_ranges()):
                self.loops.ranges[var] = stop
                ceiling = _ceiling_of(stop)
        return body_assigned, ceiling

    def _for_loop(self, stmt, it, args, var, start, step, assigned, ceiling, new_iter, body_names):
        """``for_loop`` once the loop's range is known: peeled or not."""
        # A loop over the blocks of a size, cdiv(n, b) of them, is peeled:
        # the first n // b iterations see whole blocks, where masks and
        # comparisons against n may be proved away; the last one keeps them.
        # So is range(a, b) with b at most cdiv(n, b) (causal attention's
        # diagonal key blocks), split at n // b, unless its bounds need what
        # only the program knows (a jagged row length) or change in the body
        # (the second loop reads them after the first has run).
        main = None
        peel = (
            ceiling is not None
            and isinstance(it.func, ast.Name) and it.func.id == "range" and not it.keywords
            and not any(isinstance(n, (ast.For, ast.While)) for b in stmt.body for n in ast.walk(b))
            and (len(args) == 1 or (
                start is not None
                and not ceiling.free_symbols & {j.seq_len for j in self.ir.jagged}
                and not {n.id for a in args for n in ast.walk(a) if isinstance(n, ast.Name)} & assigned))
        )
        if peel:
            counter = self.names.counter
            stop = self.loops.ranges[var]
            self.loops.ranges[var] = FloorDiv(*ceiling.args)
            noted = self._frames_state()
            main_frame, main = self._loop_body(copy.deepcopy(stmt.body), var, start, step, body_names)
            self._forget(assigned)
            self.names.counter = counter  # the same temporaries in both bodies
            self._rewind_frames(noted)
            self.loops.ranges[var] = stop
        frame, body = self._loop_body(stmt.body, var, start, step, body_names)
        self.loops.ranges.pop(var, None)
        self.loops.trips.pop(var, None)
        self._forget(assigned)
        loop = ast.copy_location(ast.For(target=stmt.target, iter=new_iter, body=body, orelse=[]), stmt)
        if main is None or ast.dump(ast.Module(body=main, type_ignores=[])) == ast.dump(ast.Module(body=body, type_ignores=[])):
            inits = self._carried_inits(frame, start)
            return inits + [loop] if inits else loop
        whole_value = FloorDiv(*ceiling.args)
        main_inits = self._carried_inits(main_frame, start)
        inits = self._carried_inits(frame, whole_value if len(args) == 1 else sympy.Max(start, whole_value))
        whole = self.printer()(whole_value)
        if len(args) == 1:
            first = template.stmt("for {var} in range({whole}):\n    {body}", var=stmt.target, whole=whole, body=main)
            loop.iter = expr("range({whole}, {stop})", whole=copy.deepcopy(whole), stop=new_iter.args[0])
        else:
            a, b = new_iter.args
            first = template.stmt("for {var} in range({a}, tl.minimum({b}, {whole})):\n    {body}", var=stmt.target,
                                  a=copy.deepcopy(a), b=copy.deepcopy(b), whole=whole, body=main)
            loop.iter = expr("range(tl.maximum({a}, {whole}), {b})", a=a, whole=copy.deepcopy(whole), b=b)
        # The last, partial block exists only when the size is not a multiple
        # of the block: a flag the launcher computes keeps it out of the
        # compiled kernel otherwise (a dead loop still costs registers and
        # pipelining set-up; about 6 % of an attention kernel on an H100).
        if ceiling.free_symbols & {j.seq_len for j in self.ir.jagged}:
            # A jagged tensor's row length is known in the program only: the
            # loop over the last block runs (0 or 1 times) unguarded.
            return main_inits + [ast.copy_location(first, stmt)] + inits + [ast.copy_location(loop, stmt)]
        flag = self._whole_flag(*ceiling.args)
        guarded = template.stmt("if not {flag}:\n    {body}", flag=flag, body=inits + [ast.copy_location(loop, stmt)])
        return main_inits + [ast.copy_location(first, stmt), ast.copy_location(guarded, stmt)]

    def _range_value(self, node):
        """A loop bound as index math: sizes and arithmetic on them, or a
        local assigned index math (``first = ntl.min(x.offsets(2)) // b``);
        None where it is not known."""
        if isinstance(node, ast.Name) and node.id in self.values.index:
            value = self.values.index[node.id]
            return None if value.free_symbols & set(self.values.tile_vars) else value
        try:
            return self.to_sympy(node)
        except EmitError:
            return None

    def _range_start_step(self, it, assigned):
        """The first value and the step of ``range(...)`` as index math, or
        (None, None) where they are not (or the loop changes the step)."""
        if it.keywords or not 1 <= len(it.args) <= 3:
            return None, None
        try:
            start = self.to_sympy(it.args[0]) if len(it.args) > 1 else sympy.S.Zero
            step = self.to_sympy(it.args[2]) if len(it.args) == 3 else sympy.S.One
        except EmitError:
            return None, None
        if {s.name for s in step.free_symbols} & assigned:
            return None, None
        return start, step

    def _loop_body(self, stmts, var, start, step, assigned):
        """Emit a loop body (its advances appended), collecting the pointer
        blocks the loop carries; ``assigned``: the names it assigns, those
        of its inlined calls included."""
        frame = _LoopFrame(var, start, step, assigned)
        frame.defined = set(self.loops.lanes_before[-1])  # names whose value an iteration may carry
        paths = self.path_state()  # the body may run no iteration: to the loops around, a branch
        self.lanes.locals = dict(self.loops.lanes_before[-1])
        self.loops.frames.append(frame)
        try:
            body = self.block(stmts)
        finally:
            self.loops.frames.pop()
            self.rewind_paths(paths, merge=True)
        self.loops.lanes_after[-1].append(self.lane_snapshot())
        # What the emitted body assigns includes what inlined functions do (to
        # the caller's names their parameters became, and to their locals): a
        # pointer whose offset, loop index or step it changes is not carried.
        stored = assigned_names(body)
        dropped = set()
        for key, (name, p, parts, printer, shape) in list(frame.pointers.items()):
            used = {s.name for _, offset, _ in parts for s in offset.free_symbols}
            if (used | {var.name} | {s.name for s in step.free_symbols}) & stored:
                dropped.add(name)
                del frame.pointers[key]
        if dropped:
            body = [_IndexForm(self.records.advance_flag, dropped).visit(s) for s in body]
        return frame, self._advanced(frame, body)

    # -- while loops -------------------------------------------------------------

    def while_loop(self, stmt):
        """``while test: body``: as a ``for`` loop, a value it carries keeps
        its value on lanes outside each iteration's tiles (``carried``); the
        body is emitted again from a wider state until the lanes settle.  The
        loop may not run: after it, a name holds what it held before or what
        a body left."""
        if stmt.orelse:
            raise self.error("`while ... else` is not supported in applications", stmt)
        if any(isinstance(n, ast.Call) and ast.unparse(n.func) in self.ir.inline_functions for n in ast.walk(stmt.test)):
            # An inlined body runs before its statement: the test, with it,
            # is assigned before the loop and again at the end of each
            # iteration, and the loop tests what it holds.
            self.names.counter += 1
            held = ast.Name(id=f"ntsym_test_{self.names.counter}", ctx=ast.Store())
            test = ast.copy_location(ast.Assign(targets=[held], value=stmt.test), stmt.test)
            loop = ast.While(test=ast.Name(id=held.id, ctx=ast.Load()), body=stmt.body + [copy.deepcopy(test)], orelse=[])
            return self.statements([test, ast.copy_location(loop, stmt)])
        self._enter_loop()
        assigned = self.written_in(stmt.body)
        self._forget(assigned)
        self.loops.lanes_before.append(self.lane_snapshot())
        self.loops.lanes_after.append([])
        try:
            loop, assigned = self._settled(stmt, assigned, lambda names: self._while_body(stmt, names))
            return loop
        finally:
            before = self.loops.lanes_before.pop()
            self.lanes.locals = dict(before)
            self.lane_join(assigned, [before] + self.loops.lanes_after.pop(), assigned)

    def _while_body(self, stmt, assigned):
        """The ``while`` loop emitted once from ``loops.lanes_before[-1]``:
        its test and body run in a branch, under a frame with no variable."""
        self.lanes.locals = dict(self.loops.lanes_before[-1])
        with self._branch(stmt.body + [stmt.test]):
            frame = _LoopFrame(None, None, sympy.S.One, assigned)
            frame.defined = set(self.loops.lanes_before[-1])
            self.loops.frames.append(frame)
            try:
                test = self.expr(stmt.test)
                body = self.block(stmt.body)
            finally:
                self.loops.frames.pop()
        self.loops.lanes_after[-1].append(self.lane_snapshot())
        return ast.copy_location(ast.While(test=test, body=body, orelse=[]), stmt)

    def _whole_flag(self, size, block):
        for name, key in self.records.whole.items():
            if key == (size, block):
                return name
        name = f"NTSYM_WHOLE_{len(self.records.whole)}"
        self.records.whole[name] = (size, block)
        return name

    # -- what loops and branches make unknown ----------------------------------

    def _enter_loop(self):
        """Tiles loaded before a loop of a tensor the application writes are
        not reused inside it: a store later in the body changes what the next
        iteration must read."""
        for name in self.facts.maybe_written:
            self.invalidate(name)

    def _settled(self, stmt, names, emit):
        """A loop emitted by ``emit(names)`` from ``loops.lanes_before[-1]``,
        again until it settles; returns the loop and the names its body
        assigns.  A value the loop carries may leave an iteration with lanes
        outside the tensor it entered without: the body is emitted again from
        the wider state, until none widens.  So it is where inlined calls
        assign names beyond ``names`` (their locals): a mask reading one
        changes with the iteration, and what the bodies widened without
        knowing it starts over from the loop's entry.  Each attempt starts
        from the same temporaries, ranges and names written by the loops
        around."""
        entry = self.loops.lanes_before[-1]
        saved = dict(self.loops.ranges), dict(self.loops.trips), self.names.counter, self._frames_state()
        for _ in range(6):
            self.loops.inline_writes.append(set())
            try:
                loop = emit(names)
            finally:
                found = self.loops.inline_writes.pop()
            widened = self.lane_widened(names, self.loops.lanes_before[-1], self.loops.lanes_after[-1])
            if not found <= names:
                widened, names = entry, names | found
                self._forget(found)
            elif widened is None:
                return loop, names
            self.loops.lanes_before[-1], self.loops.lanes_after[-1] = widened, []
            self.loops.ranges, self.loops.trips, self.names.counter = dict(saved[0]), dict(saved[1]), saved[2]
            self._rewind_frames(saved[3])
        raise self.error("the lanes outside the tensor that this loop's values carry do not settle", stmt)

    def _frames_state(self):
        """What the loops around have noted so far in their iterations: what
        the names assigned hold of the head's values, those set afresh, and
        those a branch set."""
        return [(dict(f.heads), set(f.fresh), set(f.uncertain)) for f in self.loops.frames]

    def _rewind_frames(self, written):
        """The loops around as ``_frames_state`` found them: a body emitted
        again (or a peeled loop's second body) notes what the first did."""
        for frame, (heads, fresh, uncertain) in zip(self.loops.frames, written):
            frame.heads, frame.fresh, frame.uncertain = dict(heads), set(fresh), set(uncertain)

    def written_in(self, stmts):
        """The names ``stmts`` assign, those their inlined calls assign of the
        caller's included (a name passed to a parameter the function assigns)."""
        return assigned_names(stmts) | inline_written(stmts, self.ir.inline_functions)

    def _forget(self, names):
        """What ``names`` hold is not known here: they are assigned in a loop
        (a later iteration sees the new value, even where the assignment comes
        after this point in the text) or in a branch that may not run."""
        for name in names:
            self.values.index.pop(name, None)
            self.values.placement.pop(name, None)
            self.values.sizes.pop(name, None)
            self.shapes.padded_locals.pop(name, None)
            self.shapes.padded_sizes.pop(name, None)

    @contextlib.contextmanager
    def _branch(self, stmts):
        """Statements that may or may not run: what they assign is not known
        after them (nor before them, in a loop).  Inside, an assignment
        dominates what follows it in its own block; the caller forgets it
        before a block that does not follow it (``else``)."""
        assigned = self.written_in(stmts)
        self._forget(assigned)
        paths = self.path_state()
        try:
            yield paths
        finally:
            self.rewind_paths(paths, merge=True)
            self._forget(assigned)

    # -- pointers carried from one iteration to the next -----------------------

    def _carried(self, p, offsets, printer, shape):
        """The name of a pointer block that the innermost loop whose variable
        ``offsets`` use carries from one iteration to the next, or None.

        ``offsets`` are (contiguity flag or None, offset) pairs, chosen at
        compile time by the flag.  Where each is affine in the loop variable
        ``v`` (``a + v * d``, nothing in ``a`` or ``d`` and not ``v`` assigned
        in the loop's body, ``d`` one number per program; ``_loop_body``
        checks again on the emitted body, inlined calls included), the
        pointers are set to
        ``ptr + a + start * d`` before the loop and advanced by ``step * d``
        at the end of each iteration: one 64-bit add per element where
        ``ptr + (a + v * d)`` costs an index add, a widening and an address
        computation, but 64-bit pointers live through the loop where the
        other form keeps 32-bit offsets.  Neither wins everywhere (on an
        H100, attention ran 4 % faster advancing pointers, matrix products
        5 % slower), so both are emitted and the tuner times both."""
        free = set().union(*(o.free_symbols for _, o in offsets))
        frame = next((f for f in reversed(self.loops.frames) if f.var in free), None)
        if frame is None or frame.start is None:
            return None
        parts = []
        for flag, offset in offsets:
            if {s.name for s in offset.free_symbols} & frame.assigned:
                return None  # the body changes the index or what the offset is made of
            step = sympy.S.Zero
            for term in distributed_terms(offset):
                if frame.var in term.free_symbols:
                    coefficient, rest = term.as_independent(frame.var, as_Add=False)
                    if rest != frame.var:
                        return None
                    step += coefficient
            if step.free_symbols & (set(printer.names) | {frame.var}):
                return None  # not one number per program
            parts.append((flag, offset, step))
        key = (p.name, tuple(o for _, o in offsets), names_key(printer), ast.dump(shape) if shape else None)
        if key not in frame.pointers:
            # Named per access, not from the temporaries' counter: a peeled
            # loop's second body reuses the names of its first.
            name = self.loops.pointer_names.get(key)
            if name is None:
                name = f"{p.name}_ptrs_{len(self.loops.pointer_names)}"
                while name in self.facts.user_names:
                    name += "_"
                self.loops.pointer_names[key] = name
            frame.pointers[key] = (name, p, parts, printer, shape)
        return frame.pointers[key][0]

    def _carried_inits(self, frame, start):
        """The statements that set ``frame``'s carried pointers before its
        loop, which starts at ``start``."""
        inits = []
        for name, p, parts, printer, shape in frame.pointers.values():
            values = []
            for _, offset, _ in parts:
                first = offset.xreplace({frame.var: start})
                # The loop-invariant offset, where already computed.
                names = names_key(printer)
                hoisted = next((hoisted for (owner, part, used), hoisted in self.hoist.computed.items()
                                if owner == p.name and used == names and isinstance(part, sympy.Expr)
                                and sympy.expand(part - first) == 0), None)
                if hoisted is not None:
                    first = expr(hoisted)
                else:
                    first = self._hoisted_sum(p, first, printer, set(printer.names))
                values.append(expr("{base} + {first}", base=f"{p.name}_ptr", first=first))
            inits.append(generated_assign(name, broadcast(self._by_contiguity(parts, values), shape)))
        if not inits:
            return []
        self.records.advances = True
        return template.stmts("if {advance}:\n    {inits}", advance=self.records.advance_flag, inits=inits)

    def _advanced(self, frame, body):
        """``body`` with ``frame``'s carried pointers advanced at its end."""
        advances = []
        for name, p, parts, printer, shape in frame.pointers.values():
            steps = [printer(step * frame.step) for _, _, step in parts]
            advances.append(ast.AugAssign(target=ast.Name(id=name, ctx=ast.Store()), op=ast.Add(),
                                          value=self._by_contiguity(parts, steps), lineno=0))
        if not advances:
            return body
        return body + template.stmts("if {advance}:\n    {advances}", advance=self.records.advance_flag, advances=advances)

    @staticmethod
    def _by_contiguity(parts, values):
        """One of ``values`` (one per part): with a contiguous form and the
        general one, the contiguity flag chooses at compile time."""
        if len(values) == 1:
            return values[0]
        return expr("{contiguous} if {flag} else {general}", flag=parts[0][0], contiguous=values[0], general=values[1])


class _LoopFrame:
    """A loop being emitted: its variable (None for a ``while``), its first value and step
    (index math; start None where not), the names its body assigns, and the
    pointer blocks it carries: key -> (name, tensor, parts, printer, shape)."""

    def __init__(self, var, start, step, assigned):
        self.var, self.start, self.step, self.assigned = var, start, step, assigned
        self.pointers = {}
        # name -> the names whose values at the iteration's head its value now
        # depends on, for the names this iteration assigned so far (a name not
        # here holds its head value: itself, where defined before the loop),
        # and those assigned other than as a value carried from the head.
        # The names a branch set on some path only (their head values a union).
        self.heads, self.fresh, self.uncertain = {}, set(), set()

    def depends(self, node, inlined=lambda n: None, target=None):
        """The names whose values at the iteration's head ``node`` reads; an
        inlined call read as what ``inlined`` gives for it (what it returns).
        With ``target``: an uncertain name other than it (one a branch set)
        counts for nothing."""
        found, stack = set(), [node]
        while stack:
            n = stack.pop()
            replaced = inlined(n)
            if replaced is not None:
                stack.extend(replaced)
            elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                if target is None or n.id == target or n.id not in self.uncertain:
                    found |= self.head(n.id)
            else:
                stack.extend(ast.iter_child_nodes(n))
        return found

    def head(self, name):
        """The names whose head values ``name`` holds now."""
        return self.heads.get(name, {name} if name in self.defined else set())


def changing(frames):
    """The names that change from one iteration of the loops ``frames`` to
    the next: their variables and what their bodies assign."""
    return set().union(*(({f.var.name} if f.var is not None else set()) | set(f.assigned) for f in frames))


class _IndexForm(ast.NodeTransformer):
    """Accesses through the carried pointers ``names`` back to their index form."""

    def __init__(self, flag, names):
        self.flag, self.names = flag, names

    def visit_IfExp(self, node):
        node = self.generic_visit(node)
        if (isinstance(node.test, ast.Name) and node.test.id == self.flag
                and isinstance(node.body, ast.Name) and node.body.id in self.names):
            return node.orelse
        return node


def _ceiling_of(stop):
    """The cdiv(n, b) that bounds a loop's ``stop`` from above: ``stop`` itself,
    or the one such argument of a ``Min``; else None."""
    if isinstance(stop, CeilDiv):
        return stop
    if isinstance(stop, sympy.Min):
        found = [a for a in stop.args if isinstance(a, CeilDiv)]
        return found[0] if len(found) == 1 else None
    return None
