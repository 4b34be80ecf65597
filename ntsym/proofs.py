"""Facts proved about a lowered kernel, beyond outermost shapes."""

import ast
import itertools

import sympy

from ntsym_codegen import bounds
from ntsym_codegen.intfuncs import recombine


def aliasing_table(ir, sourced=frozenset(), written=frozenset()):
    """For each pair of tensors: True where one view may be passed for both
    (in-place use is safe), else why not.  It is safe where their arranged
    index maps are the same function of the program and tile indices, no two
    programs reach one element, and the application reaches neither past its
    arrangement (``sourced``: ``x.source[...]``, ``x.source.data_ptr()``),
    and the kernel does not write both (``written``): the two stores of an
    element are not ordered.

    The runtime consults an entry only for two views that are identical (one
    data pointer, equal shapes and strides), so the maps are compared with the
    sizes of one tensor taken for the other's, dimension by dimension: a
    flattened ``x`` and ``y`` index by ``x.shape[1]`` and ``y.shape[1]``,
    equal there."""
    tensors = [p for p in ir.params if p.kind == "tensor"]
    table = {}
    for a, b in itertools.combinations(tensors, 2):
        if a.name in sourced or b.name in sourced:
            name = a.name if a.name in sourced else b.name
            table[(a.name, b.name)] = f"the application indexes `{name}.source` past its arrangement"
        elif not _same_map(a, b):
            table[(a.name, b.name)] = "their arrangements map programs to different elements"
        elif not _disjoint(a, ir.grid, ir.program_vars):
            table[(a.name, b.name)] = "their arrangements let several programs reach one element"
        elif a.name in written and b.name in written:
            table[(a.name, b.name)] = ("the kernel writes both: which of the two stores of an element lands last "
                                       "is not ordered")
        else:
            table[(a.name, b.name)] = _read_after_write(ir, a.name, b.name) or _read_after_write(
                ir, b.name, a.name) or True
    return table


# Attributes of a tile that are not its elements.
_METADATA = {"shape", "dtype", "offsets", "ndim"}


def _read_after_write(ir, read, written):
    """Why a program could read an element of ``read`` after writing it
    through ``written`` (one view passed for both), or None: a read of
    ``read`` that follows a write of ``written`` in the application's order
    (an ``if``'s or a ``while``'s condition and a ``for``'s iterable
    included), in a loop's next iteration too, unless in that loop both are
    indexed ``x[k]`` by one index holding its variable (the next iteration
    reads other elements).  A call of the application's own function given
    ``written`` writes it; one given both is followed inside, its parameters
    standing for them."""
    return _Order(ir.inline_functions).body(ir.application.body, {read}, {written}, 0)


class _Order:
    """The read-after-write walk of ``_read_after_write`` over a body, for
    names ``read`` and ``written`` (sets: a function's parameters)."""

    def __init__(self, functions):
        self.functions = functions

    def body(self, stmts, read, written, depth):
        result = self.walk(stmts, read, written, depth, False)
        return result if isinstance(result, str) else None

    def reads(self, node, read):
        """``read``'s elements used in ``node``: its Subscript where indexed, else its Name."""
        up = {id(c): n for n in ast.walk(node) for c in ast.iter_child_nodes(n)}
        out = []
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and n.id in read and isinstance(n.ctx, ast.Load):
                parent = up.get(id(n))
                if isinstance(parent, ast.Attribute) and parent.attr in _METADATA:
                    continue
                use = parent if isinstance(parent, ast.Subscript) and parent.value is n else n
                if not isinstance(use.ctx, ast.Store):
                    out.append(use)
        return out

    def writes(self, stmt, written):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(
            stmt, (ast.AugAssign, ast.AnnAssign)) else []
        out = [t for t in targets if (isinstance(t, ast.Name) and t.id in written) or (
            isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id in written)]
        return out + [c for c in self.calls(stmt) if any(isinstance(a, ast.Name) and a.id in written
                                                         for a in _arguments(c))]

    def calls(self, node):
        return [c for c in ast.walk(node) if isinstance(c, ast.Call) and ast.unparse(c.func) in self.functions]

    def inside(self, node, read, written, depth):
        """Why a call in ``node`` of the application's own function given
        both ``read`` and ``written`` reads the one after writing the other
        in its body, or None."""
        for call in self.calls(node):
            target = self.functions[ast.unparse(call.func)][0]
            names = [a.arg for a in target.args.args]
            bound = list(zip(names, call.args)) + [(k.arg, k.value) for k in call.keywords]
            inner_read = {n for n, a in bound if isinstance(a, ast.Name) and a.id in read}
            inner_written = {n for n, a in bound if isinstance(a, ast.Name) and a.id in written}
            if not (inner_read and inner_written):
                continue
            if depth >= 8 or any(isinstance(a, ast.Starred) for a in call.args) or len(call.args) > len(names):
                return f"`{ast.unparse(call.func)}` is given both and is not followed inside"
            why = self.body(target.body, inner_read, inner_written, depth + 1)
            if why:
                return why
        return None

    def by_variable(self, nodes, var):
        """The one index of ``nodes`` (all ``x[...]``) where it holds ``var``, else None."""
        keys = {ast.dump(n.slice) if isinstance(n, ast.Subscript) else None for n in nodes}
        if var is None or len(keys) != 1 or None in keys:
            return None
        index = nodes[0].slice
        elements = index.elts if isinstance(index, ast.Tuple) else [index]
        return keys.pop() if any(isinstance(e, ast.Name) and e.id == var for e in elements) else None

    def walk(self, stmts, read, written, depth, written_yet):
        for stmt in stmts:
            head = stmt.test if isinstance(stmt, (ast.If, ast.While)) else stmt.iter if isinstance(
                stmt, ast.For) else None
            if head is not None and written_yet and self.reads(head, read):
                return f"the application reads `{_shown(read)}` after it writes `{_shown(written)}`"
            if isinstance(stmt, (ast.For, ast.While)):
                wrote = self.walk(stmt.body, read, written, depth, written_yet)
                if isinstance(wrote, str):
                    return wrote
                var = stmt.target.id if isinstance(stmt, ast.For) and isinstance(stmt.target, ast.Name) else None
                body = ast.Module(body=stmt.body, type_ignores=[])
                loaded = self.reads(body, read) + (self.reads(stmt.test, read) if isinstance(stmt, ast.While) else [])
                stored = [w for s in ast.walk(body) if isinstance(s, ast.stmt) for w in self.writes(s, written)]
                index = self.by_variable(loaded, var)
                if wrote and loaded and (index is None or index != self.by_variable(stored, var)):
                    return (f"its loop may read `{_shown(read)}` in an iteration after one that wrote "
                            f"`{_shown(written)}`")
                written_yet = written_yet or wrote
            elif isinstance(stmt, ast.If):
                sides = [self.walk(side, read, written, depth, written_yet) for side in (stmt.body, stmt.orelse)]
                for side in sides:
                    if isinstance(side, str):
                        return side
                written_yet = written_yet or any(sides)
            else:
                if written_yet and self.reads(stmt, read):
                    return f"the application reads `{_shown(read)}` after it writes `{_shown(written)}`"
                why = self.inside(stmt, read, written, depth)
                if why:
                    return why
                written_yet = written_yet or bool(self.writes(stmt, written))
        return written_yet


def _shown(names):
    return "`, `".join(sorted(names))


def _arguments(call):
    return list(call.args) + [k.value for k in call.keywords]


def _same_map(a, b):
    if a.ndim != b.ndim or len(a.levels) != len(b.levels):
        return False
    mapping = {}
    for la, lb, va, vb in zip(a.levels, b.levels, a.level_vars, b.level_vars):
        if len(la) != len(lb):
            return False
        for x, y in zip(va, vb):
            mapping[y] = x
    same = {}
    for sa, sb in zip(a.sizes, b.sizes):
        if isinstance(sb, sympy.Symbol) and sb != sa:
            same.setdefault(sb, sa)
        elif isinstance(sa, sympy.Symbol) and sa != sb:
            same.setdefault(sa, sb)
    try:
        ia = [e.xreplace(same) for e in a.index]
        ib = [e.xreplace(mapping).xreplace(same) for e in b.index]
    except ZeroDivisionError:
        # A size taken as the other tensor's (a constant) leaves a division
        # by zero: no view passed for both gives such sizes; not the same map.
        return False
    return all(sympy.expand(x - y) == 0 for x, y in zip(ia, ib))


def _disjoint(p, grid, program_vars):
    """Whether no two programs reach one element of ``p`` (programs updating
    one element in place would race: an expanded or overlapping arrangement).

    Proved for each program index over a grid dimension not of size 1: some
    source index, or the row-major position over all source dimensions (which
    undoes a flatten), is larger for every element program index ``k + 1``
    reaches than for every element ``k`` reaches, whatever the other program
    and tile indices.  Only elements in bounds are reached (the rest are
    masked), and there the position is one-to-one."""
    ranges = dict(zip(program_vars, grid))
    for shape, level_vars in zip(p.levels[1:], p.level_vars[1:]):
        ranges.update(zip(level_vars, shape))
    position = sympy.Add(*(e * sympy.Mul(*p.sizes[d + 1:]) for d, e in enumerate(p.index)))
    witnesses = [sympy.sympify(e) for e in p.index] + [recombine(position)]
    for pid, n in zip(program_vars, grid):
        if n == 1:
            continue
        others = {v: sympy.Dummy(f"{v}_other", integer=True, nonnegative=True) for v in ranges if v != pid}
        spans = {v: r for v, r in ranges.items() if v != pid}
        spans.update({others[v]: ranges[v] for v in others})
        if not any(
            bounds.holds(sympy.Gt(w.xreplace({pid: pid + 1, **others}) - w, 0), spans)
            for w in witnesses if pid in w.free_symbols
        ):
            return False
    return True
