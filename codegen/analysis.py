"""Analyses of the application and of generated kernel bodies: pure
functions over Python ASTs (and, for ``reuses_tiles``, the IR) that need no
emitter state.  The emitter asks them which parameters the application writes
and how, which loops run at run time, and which names a loop reads after it
ends; the module assembly asks which loops a kernel has."""

import ast
import collections

import sympy


def unrolled(loop):
    """Whether a ``for`` loop is ``tl.static_range`` (unrolled at compile time)."""
    it = loop.iter
    return isinstance(it, ast.Call) and isinstance(it.func, (ast.Attribute, ast.Name)) and (
        getattr(it.func, "attr", None) == "static_range" or getattr(it.func, "id", None) == "static_range"
    )


def runtime_loops(nodes):
    """The loops among ``nodes`` that run at run time (not ``tl.static_range``)."""
    return [n for n in nodes if isinstance(n, ast.While) or (isinstance(n, ast.For) and not unrolled(n))]


def has_loops(body):
    return bool(runtime_loops(ast.walk(ast.Module(body=body, type_ignores=[]))))


def assigned_names(stmts):
    names = set()
    for stmt in stmts:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
    return names


def assigned_in(node, names, loops=False, tiles_only=False, data=frozenset()):
    """The ``names`` that the targets of statement ``node`` (``=``, ``+=``,
    annotated assignments, and with ``loops`` ``for``) assign, once per
    occurrence: a name, or the base of an indexed target (``y`` of ``y[k] =
    v`` and of ``y.source[i, j] = v``, the latter not with ``tiles_only``);
    names inside an index are read."""
    targets = []
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) or (loops and isinstance(node, ast.For)):
        targets = [node.target]
    return [name for t in targets for name in _target_bases(t, tiles_only, data) if name in names]


def _is_scatter(target, data=frozenset()):
    """``y.source[...]``: an element of the whole tensor, by data indices;
    or ``y[i] = v`` with an index reading a local in ``data``
    (``data_locals``): a tile chosen by data."""
    if not isinstance(target, ast.Subscript):
        return False
    if isinstance(target.value, ast.Attribute) and target.value.attr == "source":
        return True
    return any(isinstance(n, ast.Name) and n.id in data for n in ast.walk(target.slice)) or \
        _is_scatter(target.value, data)


def data_locals(func, params):
    """The locals of the application that hold data wherever they are read:
    assigned once, by a statement of the application's own body (not in a
    branch or a loop), from a value that reads a tensor's elements or calls
    ``program_id`` (``row = index``, ``pid = ntl.program_id(0)``).  A local
    assigned twice, or from index math, is not one: its value at a store may
    be the same for every program."""
    names = {n.id for n in ast.walk(func) if isinstance(n, ast.Name)}
    counts = collections.Counter(name for n in ast.walk(func) for name in assigned_in(n, names, loops=True))
    counts.update(n.target.id for n in ast.walk(func) if isinstance(n, ast.NamedExpr))
    data = set()
    for stmt in func.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                and counts.get(stmt.targets[0].id) == 1 and _reads_data(stmt.value, set(params) | data):
            data.add(stmt.targets[0].id)
    return frozenset(data)


def _reads_data(node, sources):
    """Whether ``node`` reads the elements of one of ``sources`` (tensor
    parameters, data locals) or calls ``program_id``."""
    meta = {id(p.value) for p in ast.walk(node) if isinstance(p, ast.Attribute)
            and p.attr in ("shape", "dtype", "ndim", "offsets", "source")}
    for n in ast.walk(node):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "program_id":
            return True
        if isinstance(n, ast.Name) and n.id in sources and id(n) not in meta:
            return True
    return False


def _target_bases(target, tiles_only=False, data=frozenset()):
    """The names an assignment target binds or writes into (with
    ``tiles_only``, not the tensors of ``y.source[...]`` targets, nor of
    ``y[i]`` ones indexed by the ``data`` locals)."""
    if isinstance(target, (ast.Tuple, ast.List)):
        return [name for element in target.elts for name in _target_bases(element, tiles_only, data)]
    if isinstance(target, ast.Starred):
        return _target_bases(target.value, tiles_only, data)
    if isinstance(target, ast.Subscript):  # and what a ``:=`` inside the index binds
        bound = [n.target.id for n in ast.walk(target.slice) if isinstance(n, ast.NamedExpr)]
        if tiles_only and _is_scatter(target, data):
            return bound
        return _target_bases(target.value, tiles_only, data) + bound
    if isinstance(target, ast.Attribute):
        return _target_bases(target.value, tiles_only, data)
    return [target.id] if isinstance(target, ast.Name) else []


def assigned_parameters(func, inline_functions, params, depth=0, tiles_only=False, data=frozenset()):
    """Parameters the application may write: assigned in it, or passed to an
    inlined function that may write the parameter they become.  With
    ``tiles_only``, those written through their tiles (not only through
    ``y.source[...] = v``)."""
    written = set()
    inlined = set(inline_functions)
    for node in ast.walk(func):
        written.update(assigned_in(node, params, loops=True, tiles_only=tiles_only, data=data))
        if isinstance(node, ast.Call):
            callee = ast.unparse(node.func)
            if callee in inlined:
                passed = [a.id for a in node.args if isinstance(a, ast.Name) and a.id in params]
                target = inline_functions[callee][0]
                bound = _bound_arguments(node, target)
                if depth >= 8 or bound is None:
                    written |= set(passed) | {k.value.id for k in node.keywords
                                              if isinstance(k.value, ast.Name) and k.value.id in params}
                    continue
                names = [a.arg for a in target.args.args]
                inner = assigned_parameters(target, inline_functions, set(names), depth + 1, tiles_only)
                written |= {a.id for name, a in bound if name in inner and isinstance(a, ast.Name) and a.id in params}
    return written


def inline_written(stmts, inline_functions):
    """The caller's names that the inlined calls in ``stmts`` may assign: a
    name passed to a parameter the function may assign becomes it."""
    written = set()
    for node in (n for stmt in stmts for n in ast.walk(stmt)):
        if not (isinstance(node, ast.Call) and ast.unparse(node.func) in inline_functions):
            continue
        target = inline_functions[ast.unparse(node.func)][0]
        bound = _bound_arguments(node, target)
        if bound is None:
            bound = [(None, a) for a in node.args] + [(None, k.value) for k in node.keywords]
        inner = assigned_parameters(target, inline_functions, {a.arg for a in target.args.args})
        written |= {a.id for name, a in bound if (name is None or name in inner) and isinstance(a, ast.Name)}
    return written


def _bound_arguments(call, target):
    """(parameter, argument) pairs of ``call`` to the inlined function
    ``target``, positional and by keyword; None where the binding is not
    followed (a starred argument, more arguments than parameters, a keyword
    naming none)."""
    names = [a.arg for a in target.args.args]
    if any(isinstance(a, ast.Starred) for a in call.args) or len(call.args) > len(names) \
            or any(k.arg not in names for k in call.keywords):
        return None
    return list(zip(names, call.args)) + [(k.arg, k.value) for k in call.keywords]


def read_parameters(func, params):
    """Parameters the application may read the elements of: named anywhere
    but as the base of ``.shape``, ``.dtype``, ``.ndim``, ``.offsets(...)``,
    ``.stride(...)`` or ``.size(...)`` (of the tile or of ``.source``) and
    as an assignment's target, whole or indexed (``y[k] = v``,
    ``y.source[i] = v``; an augmented assignment reads its target; a
    parameter passed to an inlined function counts as read)."""
    skipped = set()
    for node in ast.walk(func):
        if isinstance(node, ast.Attribute) and node.attr in ("shape", "dtype", "ndim", "offsets", "stride", "size"):
            base = node.value.value if isinstance(node.value, ast.Attribute) and node.value.attr == "source" \
                else node.value  # y.source.shape[0], y.source.stride(0): sizes, not elements
            if isinstance(base, ast.Name):
                skipped.add(id(base))
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                while isinstance(target, ast.Subscript):  # y[k] = v writes part of y's tile
                    target = target.value
                    if isinstance(target, ast.Attribute) and target.attr == "source":  # y.source[i] = v
                        target = target.value
                if isinstance(target, ast.Name):
                    skipped.add(id(target))
    return {n.id for n in ast.walk(func) if isinstance(n, ast.Name) and n.id in params and id(n) not in skipped}


def named_parameters(func, params):
    """Parameters the application names anywhere (read, written, sized or
    passed on)."""
    return {n.id for n in ast.walk(func) if isinstance(n, ast.Name) and n.id in params}


def program_dependent_calls(func, inline_functions, seen=frozenset()):
    """The functions the application (or a function it inlines) calls whose
    result differs between programs that read the same tiles:
    ``program_id``, and the atomics, whose old values depend on which
    program came first.  Programs that write the same elements agree only
    where none is called."""
    found = set()
    for node in ast.walk(func):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
        if name == "program_id" or (name or "").startswith("atomic_"):
            found.add(name)
        callee = ast.unparse(node.func)
        if callee in inline_functions and callee not in seen:
            found |= program_dependent_calls(inline_functions[callee][0], inline_functions, seen | {callee})
    return found


def stored_once(func, written, inline_functions):
    """Parameters the application assigns in exactly one statement, outside
    any loop, and passes to no inlined function: a tensor descriptor may write
    them (two writes of the same element, through descriptors or mixed with
    pointer stores, are not ordered without fences)."""
    counts = dict.fromkeys(written, 0)
    excluded = _pointer_taken(func, set(counts))  # perhaps stored through its pointer
    for node in ast.walk(func):
        if isinstance(node, ast.Call) and ast.unparse(node.func) in inline_functions:
            excluded |= _perhaps_written_by(node, set(counts), inline_functions)

    def visit(node, looping):
        for name in assigned_in(node, counts):
            counts[name] += 1
            if looping:
                excluded.add(name)
        for child in ast.iter_child_nodes(node):
            visit(child, looping or isinstance(node, (ast.For, ast.While)))

    for stmt in func.body:
        visit(stmt, False)
    return {name for name, n in counts.items() if n == 1 and name not in excluded}


def _perhaps_written_by(call, names, inline_functions):
    """The ``names`` that the inlined function ``call`` calls may write: a name
    passed alone whose parameter the function assigns (``assigned_parameters``),
    reaches through its pointer or ``source``, or passes on; any of them inside
    a larger argument, or passed where the binding is not followed."""
    target = inline_functions[ast.unparse(call.func)][0]
    bound = _bound_arguments(call, target)
    if bound is None:
        return {n.id for a in list(call.args) + [k.value for k in call.keywords] for n in ast.walk(a)
                if isinstance(n, ast.Name) and n.id in names}
    params = [a.arg for a in target.args.args]
    written = assigned_parameters(target, inline_functions, set(params))
    reached = {n.value.id for n in ast.walk(target) if isinstance(n, ast.Attribute) and n.attr == "source"
               and isinstance(n.value, ast.Name)} | _pointer_taken(target, set(params))
    passed_on = {n.id for c in ast.walk(target) if isinstance(c, ast.Call) and ast.unparse(c.func) in inline_functions
                 for a in list(c.args) + [k.value for k in c.keywords] for n in ast.walk(a) if isinstance(n, ast.Name)}
    perhaps = set()
    for param, a in bound:
        if not isinstance(a, ast.Name):
            perhaps |= {n.id for n in ast.walk(a) if isinstance(n, ast.Name) and n.id in names}
        elif a.id in names and (param in written or param in reached or param in passed_on):
            perhaps.add(a.id)
    return perhaps


def _pointer_taken(func, names):
    """The ``names`` whose data pointer ``func`` takes (``x.data_ptr()`` of a
    tile, ``x.source.data_ptr()``): a store or an atomic through it writes them."""
    taken = set()
    for node in ast.walk(func):
        if isinstance(node, ast.Attribute) and node.attr == "data_ptr":
            base = node.value.value if isinstance(node.value, ast.Attribute) and node.value.attr == "source" \
                else node.value
            if isinstance(base, ast.Name) and base.id in names:
                taken.add(base.id)
    return taken


def loop_variable_read_after_its_loop(stmts, dead=frozenset()):
    """The first read of a run-time loop's variable after its loop and before
    any assignment to it (a Name node, or None), and the names so dead after
    ``stmts``.  ``dead``: such names on entry.  Statements that may not run
    (branches, loop bodies) leave the names dead on any of their paths dead
    after them."""
    dead = set(dead)

    def check(node):
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in dead:
                return n
        return None

    for s in stmts:
        if isinstance(s, ast.For):
            target = s.target.id if isinstance(s.target, ast.Name) else None
            inner = dead - {target}
            # The body as first run, and as run again after itself.
            first, after = loop_variable_read_after_its_loop(s.body, inner)
            again, _ = loop_variable_read_after_its_loop(s.body, after - {target})
            found = check(s.iter) or first or again
            dead |= after
            if target is not None and not unrolled(s):
                dead.add(target)
        elif isinstance(s, ast.If):
            first, after_body = loop_variable_read_after_its_loop(s.body, dead)
            other, after_else = loop_variable_read_after_its_loop(s.orelse, dead)
            found = check(s.test) or first or other
            dead = after_body | after_else
        elif isinstance(s, ast.While):
            first, after = loop_variable_read_after_its_loop(s.body, dead)
            again, _ = loop_variable_read_after_its_loop([ast.Expr(value=s.test)] + s.body, after)
            found = check(s.test) or first or again
            dead |= after
        else:
            found = check(s)  # reads, subscripts of stored tiles included
            if found is None and isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name) and s.target.id in dead:
                found = s.target
            dead -= assigned_names([s])
        if found is not None:
            return found, dead
    return None, dead


def reuses_tiles(ir):
    """Whether some arranged tensor is broadcast along a grid dimension (its
    index map ignores that program index): programs then share its tiles."""
    used = set(ir.program_vars)
    for p in ir.params:
        if p.kind == "tensor":
            free = set().union(*(sympy.sympify(e).free_symbols for e in p.index)) if p.index else set()
            if used - free:
                return True
    return False


def dotted_path(node):
    """``a.b.c`` as ["a", "b", "c"], or None if it is not a path of names."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id] + parts[::-1]


def loop_bound_carried_by_an_enclosing_loop(func):
    """The first name (a Name node of a ``range`` argument, or None) that
    bounds a run-time loop and changes from one iteration of an enclosing
    run-time loop to the next: assigned in that loop's body and defined before
    it, or computed there from such a name.  Compiled Triton keeps such a
    bound's value from before the enclosing loop (Triton 3.6 on an H100: an
    inner ``range(n)`` after ``n = n - 1`` runs the first ``n`` times every
    time), while its interpreter follows the change."""
    def walk(stmts, before):
        for s in stmts:
            if isinstance(s, ast.While) or (isinstance(s, ast.For) and not unrolled(s)):
                found = _carried_bound(s, before)
                if found is not None:
                    return found
            if isinstance(s, (ast.For, ast.While, ast.If)):
                found = walk(s.body, before | assigned_names([s]) - assigned_names(s.body)) or \
                    walk(s.orelse, before)
                if found is not None:
                    return found
            before = before | assigned_names([s])
        return None

    return walk(func.body, {a.arg for a in func.args.args})


def _carried_bound(loop, before):
    """In ``loop``'s body: an inner loop bound by a name the loop carries."""
    body = loop.body
    assigned = assigned_names(body)
    carried = assigned & before
    changed = True
    while changed:  # names computed from carried ones are carried too
        changed = False
        for node in ast.walk(ast.Module(body=body, type_ignores=[])):
            if isinstance(node, (ast.Assign, ast.AugAssign)):
                targets = assigned_names([node])
                value = node.value
                reads = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
                if isinstance(node, ast.AugAssign):
                    reads |= targets
                if reads & carried and not targets <= carried:
                    carried |= targets
                    changed = True
    if not carried:
        return None
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(node, ast.For) and not unrolled(node) and isinstance(node.iter, ast.Call):
            for arg in node.iter.args:
                for n in ast.walk(arg):
                    if isinstance(n, ast.Name) and n.id in carried:
                        return n
    return None


# -- which tensor parameters an application computes arithmetic on ----------
#
# Triton computes on booleans as 1-bit integers (``True + True`` is ``False``);
# torch does not (``True + True`` is ``True``, ``-`` is refused).  A bool tensor
# whose values reach ``+``, ``-``, ``*``, ``/``, ``//``, ``%``, ``**``, unary
# ``-`` or ``~`` would give a result unlike torch's, so the launcher refuses bool
# tensors for the parameters this analysis returns.  Values are followed through
# locals (to a fixed point, so loops are covered) and into inlined functions;
# conditions (comparisons, ``where``'s first argument) and shapes, offsets and
# strides are not values of the tensor.

_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)
_NOT_VALUES = {"shape", "dtype", "source", "offsets", "stride", "ndim", "data_ptr"}


def arithmetic_parameters(func, params, inline_functions):
    """The names among ``params`` whose values reach arithmetic in ``func``."""
    return _arithmetic(func, [a.arg for a in func.args.args], set(params), inline_functions, 0)


def _arithmetic(func, names, params, inline_functions, depth):
    carried = {name: {name} for name in names if name in params}  # local -> parameters it holds
    found = set()
    if depth > 8:  # recursion in inlined functions: no deeper
        return found
    for _ in range(20):  # to a fixed point (loops carry values backwards)
        before = (dict((k, frozenset(v)) for k, v in carried.items()), frozenset(found))
        for node in ast.walk(func):
            if isinstance(node, ast.Assign):
                held = _values(node.value, carried)
                for name in assigned_names([node]):
                    carried.setdefault(name, set()).update(held)
            elif isinstance(node, ast.AugAssign):
                held = _values(node.value, carried) | _values(node.target, carried)
                for name in assigned_names([node]):
                    carried.setdefault(name, set()).update(held)
                if isinstance(node.op, _ARITHMETIC):
                    found |= held
            elif isinstance(node, ast.BinOp) and isinstance(node.op, _ARITHMETIC):
                found |= _values(node.left, carried) | _values(node.right, carried)
            elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.Invert)):
                found |= _values(node.operand, carried)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in inline_functions:
                sub, _ = inline_functions[node.func.id]
                sub_names = [a.arg for a in sub.args.args]
                inner = _arithmetic(sub, sub_names, set(sub_names), inline_functions, depth + 1)
                for name, arg in zip(sub_names, node.args):
                    if name in inner:
                        found |= _values(arg, carried)
        if before == (dict((k, frozenset(v)) for k, v in carried.items()), frozenset(found)):
            break
    return found & params


def _values(node, carried):
    """The parameters whose values ``node`` may hold."""
    if isinstance(node, ast.Name):
        return set(carried.get(node.id, ()))
    if isinstance(node, ast.Compare):
        return set()
    if isinstance(node, ast.Attribute) and node.attr in _NOT_VALUES:
        return set()
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in _NOT_VALUES:
            return set()
        args = node.args[1:] if isinstance(func, ast.Attribute) and func.attr == "where" else node.args
        found = set()
        for a in list(args) + [k.value for k in node.keywords]:
            found |= _values(a, carried)
        if isinstance(func, ast.Attribute):  # x.to(...), x.reshape(...): x's values
            found |= _values(func.value, carried)
        return found
    found = set()
    for child in ast.iter_child_nodes(node):
        found |= _values(child, carried)
    return found


UNKNOWN = object()  # ``fixed_value``: a condition not known when the kernel is made

_COMPARE = {
    ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b, ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b,
    ast.Is: lambda a, b: a is b, ast.IsNot: lambda a, b: a is not b,
}


def fixed_value(node, values):
    """The value of the condition ``node`` where it is known when the kernel
    is made, else ``UNKNOWN``: literals, the names in ``values`` (compile-time
    parameters given their value at ``make``), and ``not``, ``and``, ``or``
    and comparisons of those.  Triton compiles an ``if`` on such a value as
    the branch taken alone; the emitter does the same, so a tensor only the
    other branch reads is not read at all."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return values.get(node.id, UNKNOWN)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        value = fixed_value(node.operand, values)
        return UNKNOWN if value is UNKNOWN else not value
    if isinstance(node, ast.BoolOp):
        parts = [fixed_value(v, values) for v in node.values]
        if any(p is UNKNOWN for p in parts):
            return UNKNOWN
        return all(parts) if isinstance(node.op, ast.And) else any(parts)
    if isinstance(node, ast.Compare) and all(type(op) in _COMPARE for op in node.ops):
        sides = [fixed_value(n, values) for n in [node.left] + node.comparators]
        if any(s is UNKNOWN for s in sides):
            return UNKNOWN
        try:
            return all(_COMPARE[type(op)](a, b) for op, a, b in zip(node.ops, sides, sides[1:]))
        except TypeError:
            return UNKNOWN
    return UNKNOWN


# A scalar parameter (an unarranged ``Tensor(0)``) is passed by value: an
# assignment to it rebinds a local of the kernel and stores nothing.  Where the
# application assigns it before reading it, the value it was given is never
# used, so the assignment can only have been meant as an output; a tensor given
# for it would keep its old value.  The launcher refuses a tensor there.


def scalar_outputs(func, names):
    """The names among ``names`` that ``func`` assigns before it reads them
    (on some path, where no later statement reads them first)."""
    return frozenset(n for n in names if _first_use(func.body, n) in ("store", "partial"))


def _first_use(body, name):
    """"load", "store", "partial" (stored on some paths only) or None, for the
    statements of ``body`` in the order they run."""
    pending = None
    for statement in body:
        use = _statement_use(statement, name)
        if use in ("load", "store"):
            return use
        if use == "partial":
            pending = "partial"
    return pending


def _statement_use(node, name):
    if isinstance(node, ast.Assign):
        return _expression_use(node.value, name) or _target_use(node.targets, name)
    if isinstance(node, ast.AnnAssign):
        return (_expression_use(node.value, name) if node.value is not None else None) or \
            _target_use([node.target], name)
    if isinstance(node, ast.AugAssign):
        return "load" if _mentions(node.target, name) else _expression_use(node.value, name)
    if isinstance(node, ast.If):
        test = _expression_use(node.test, name)
        return test or _either(_first_use(node.body, name), _first_use(node.orelse, name))
    if isinstance(node, (ast.For, ast.While)):
        head = _expression_use(node.iter if isinstance(node, ast.For) else node.test, name)
        if head:
            return head
        if isinstance(node, ast.For) and _mentions(node.target, name):
            return "partial"  # the loop may not run
        inner = _either(_first_use(node.body, name), _first_use(node.orelse, name))
        return "load" if inner == "load" else ("partial" if inner else None)
    return "load" if _mentions(node, name) else None


def _either(a, b):
    """The use of two alternative paths."""
    if "load" in (a, b):
        return "load"
    if a == b:
        return a
    return "partial" if (a or b) else None


def _expression_use(node, name):
    return "load" if node is not None and _mentions(node, name) else None


def _target_use(targets, name):
    """A target that names ``name`` stores it; one that subscripts it reads it."""
    for target in targets:
        if isinstance(target, ast.Name) and target.id == name:
            return "store"
        if isinstance(target, (ast.Tuple, ast.List)):
            use = _target_use(target.elts, name)
            if use:
                return use
        elif _mentions(target, name):
            return "load"
    return None


def _mentions(node, name):
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node))
