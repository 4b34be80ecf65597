"""What the names a loop assigns hold of the values at its head.

Each loop being emitted (``LoopsMixin``'s frames) notes, for the names its
iteration has assigned so far, which of the values at the iteration's head
they depend on (``_LoopFrame.heads``) and which were set other than as an
update carried from the head (``fresh``).  ``PaddingMixin.carried`` reads
them to tell a value the loop carries (``acc = maximum(acc, t)``, through
other names too: ``new = maximum(acc, t); acc = new``) from one set afresh.
A local assigned in a loop also keeps its lanes where operands meet
(``Lanes.met``), read when a carried value reads the local by its name.
"""

import ast
import dataclasses

from ntsym_codegen.lanes import UndecidedUnion, absorbed, meeting, meets
from ntsym_codegen.loops import changing as loop_changing


class CarriedNamesMixin:
    def wrote(self, name, value_node=None, carried=(), depends=None):
        """``name`` is assigned ``value_node`` here.  Each loop around notes,
        on this path, what of its head's values the name now holds
        (``_LoopFrame.heads``; ``depends``: per loop, computed before, for
        the names of one tuple assignment) and, but for the loops in
        ``carried`` (the assignment keeps the head value on the lanes outside
        their tiles), that the name no longer holds its head value there
        (``fresh``).  A branch's notes are joined after it (``rewind_paths``)."""
        for i, frame in enumerate(self.loops.frames):
            heads = set(depends[i]) if depends is not None else self.head_reads(frame, value_node)
            if frame not in carried:
                frame.fresh.add(name)
            frame.heads[name] = frozenset(heads)

    def unpacked_held(self, target, value_node, parts):
        """For the names of a tuple assignment (``target``) given ``parts``,
        their lanes: the lanes each name holds (``held``; those where operands
        meet for a name the loops carry whose element reads their carried
        values), and per name, per loop around, the head values its own
        element reads (a tuple written out, an inlined call returning a tuple
        of names), else the whole value's; all read before any is written."""
        count = len(target.elts)
        elements = [value_node] * count
        returned = self._returned_parts(value_node)
        if isinstance(value_node, (ast.Tuple, ast.List)) and len(value_node.elts) == count \
                and not any(isinstance(e, ast.Starred) for e in value_node.elts):
            elements = value_node.elts
        elif returned is not None and len(returned) == count:
            elements = returned  # an inlined call returning a tuple of names
        depends = [[self.head_reads(f, e) for f in self.loops.frames] for e in elements]
        held = []
        for name, part, element, read in zip(target.elts, parts, elements, depends):
            mixed = self.mixed_loops(name.id, read)
            if mixed and element is not value_node:
                part = self.held(element, part, mixed, self.lanes.locals.get(name.id))
            held.append(part)
        return held, depends

    def held(self, value_node, lanes, mixed=(), prior=None):
        """``lanes``, the lanes of ``value_node``, as a local holds them: in a
        loop, with the value's lanes where operands meet (``Lanes.met``), so
        that a carried value reading the local through a name
        (``t = x[0, k] + w; acc = maximum(acc, t)``) leaves out what it
        leaves out of ``maximum(acc, x[0, k] + w)``: the lanes outside this
        iteration's tile, which a full block of ``w`` beside it makes
        elements outside a loop.  Where the local is one the ``mixed`` loops
        carry and the value reads their carried values (``prior``: what it
        held), those lanes are its own lanes: not elements, for the value
        reaches the next iteration."""
        if not self.loops.frames or meets() or not lanes.known:
            return lanes
        with meeting():
            met = self.lanes_of(value_node)
        if not met.known or [f.key for f in met.factors] == [f.key for f in lanes.factors]:
            return lanes
        changing = loop_changing(mixed)
        if any(f.names & changing for f in met.factors):
            try:
                return absorbed(met, lanes, prior, changing)
            except UndecidedUnion:  # a union the launch decides: every factor kept
                return met
        return dataclasses.replace(lanes, met=met)

    def path_state(self):
        """The loops' path state (what each has set afresh, what its names
        hold of the head's values), to rewind to after a branch; ``paths``
        collects the state of a branch's other paths (an ``if``'s body)."""
        return _PathState([(set(f.fresh), dict(f.heads)) for f in self.loops.frames])

    def rewind_paths(self, saved, merge=False):
        """The loops' path state back as ``saved`` holds it; returns the state
        left.  With ``merge`` (after the branch): a name whose head values
        changed on some path holds their union, and is uncertain for the rest
        of the iteration: a value that reads another name's head value
        through it is not carried (on some path it may not read it)."""
        left = [(set(f.fresh), dict(f.heads)) for f in self.loops.frames]
        for i, (frame, (fresh, heads)) in enumerate(zip(self.loops.frames, saved.state)):
            frame.fresh, frame.heads = set(fresh), dict(heads)
            if not merge:
                continue
            for path in saved.paths + [left]:
                for name, held in path[i][1].items():
                    if heads.get(name) != held:
                        frame.heads[name] = frozenset(frame.head(name) | held)
                        frame.uncertain.add(name)
        return left

    def mixed_loops(self, name, reads):
        """The loops around that carry ``name`` and whose carried values a
        value reads (``reads``: per loop, the head values it reads)."""
        return [f for f, r in zip(self.loops.frames, reads) if name in f.defined and r & set(f.assigned)]

    def head_reads(self, frame, node, target=None):
        """``frame.depends(node)``, an inlined call read as what it returns
        (``acc = keep_second(acc, x[0, k])`` sets ``acc`` afresh); with
        ``target``, only what every path reads (no uncertain name other than
        ``target`` itself)."""
        return frame.depends(node, self._returned_nodes, target)

    def _returned_nodes(self, node):
        """What the inlined call ``node`` returns (a part of it, indexed by a
        constant), as nodes; None for any other node."""
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) \
                and isinstance(node.slice.value, int):
            parts = self._returned_parts(node.value)
            if parts is not None and -len(parts) <= node.slice.value < len(parts):
                return [parts[node.slice.value]]
        if not isinstance(node, ast.Call):
            return None
        entry = self.lanes.nodes.get(("returned", id(node)))
        if entry is not None and entry[0] is node:
            return [entry[1]]
        parts = self._returned_parts(node)
        return None if parts is None else list(parts)

    def _returned_parts(self, node):
        """The names an inlined call ``node`` returns as a tuple, else None."""
        entry = self.lanes.nodes.get(("parts", id(node)))
        return entry[2] if entry is not None and entry[0] is node and len(entry) > 2 else None


class _PathState:
    """The loops' path state before a branch (``path_state``), and that of the
    branch's paths done so far."""

    def __init__(self, state):
        self.state, self.paths = state, []
