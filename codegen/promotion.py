"""Where tensors of unlike signedness meet in the application.

Triton promotes two integer operands by C's rules: ``uint8`` with ``int8`` is
``uint8`` (``200 + 100 == 44``, ``uint8(100) < int8(-100)``); torch promotes
them to ``int16`` (300, False). Every other pair of integer dtypes torch
promotes (``uint8`` with ``int16`` or wider, signed with signed) gets the same
type from both. The types are known only at launch, so this analysis lists,
per binary operation, comparison, ``where``, ``maximum`` or ``minimum`` of the
application, the tensor parameters whose values each side may hold, and the
launcher refuses a call that passes a ``uint8`` tensor for one side and an
``int8`` tensor for the other, by name, with the cast that fixes it.

Values are followed through locals (to a fixed point: loops) and through
operations that keep their dtype, and element by element through tuple
assignments (``a, b = x, y``); a cast (``x.to(...)``), a reduction (which
widens small integers), a true division, a math function or a float literal
ends the flow, since what comes out has another type. A function of the
application's own (a plain helper or a ``@triton.jit`` one, inlined) is not
followed inside: its arguments are taken to meet there, and its result to
hold any of their values (refused at launch for a uint8 and an int8
argument, which it may combine)."""

import ast

# Calls whose result holds their value operands' values, in their dtype.
_KEEPING = {"where", "maximum", "minimum", "clamp", "abs", "trans", "reshape", "view", "permute", "broadcast_to",
            "expand_dims", "ravel", "flip", "join"}
_MEETING = {"where", "maximum", "minimum"}
# Calls by name that are not the application's own functions.
_BUILTINS = {"range", "static_range", "float", "int", "bool", "len", "print", "isinstance", "tuple", "list",
             "getattr", "hasattr", "type", "abs"}
_NOT_VALUES = {"shape", "dtype", "source", "offsets", "stride", "ndim", "data_ptr"}


def meetings(func, params):
    """``(left, right, text)`` for each operation of ``func`` where values of
    the tensor ``params`` meet: the parameters each side may hold (a side
    with none left out) and the operation as written."""
    names = [a.arg for a in func.args.args]
    carried = {name: {name} for name in names if name in params}
    for _ in range(20):  # to a fixed point (loops carry values backwards)
        before = {k: frozenset(v) for k, v in carried.items()}
        for node in ast.walk(func):
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and node.value is not None:
                held = _values(node.value, carried)
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    for name, values in _unpacked(target, node.value, held, carried):
                        carried.setdefault(name, set()).update(values)
        if before == {k: frozenset(v) for k, v in carried.items()}:
            break
    found = {}
    nodes = sorted((n for n in ast.walk(func) if hasattr(n, "lineno")), key=lambda n: (n.lineno, n.col_offset))
    for node in nodes:  # in source order: the first meeting is named
        for left, right in _sides(node):
            a, b = _values(left, carried) & params, _values(right, carried) & params
            if a and b and a | b != a & b:
                found.setdefault((frozenset(a), frozenset(b)), ast.unparse(node))
    return tuple((a, b, text) for (a, b), text in found.items())


def _unpacked(target, value, held, carried):
    """(name, the parameters it may hold) for each name ``target`` binds:
    ``a, b = x, y`` element by element, else every name all of ``held``."""
    if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) and \
            len(target.elts) == len(value.elts) and not any(isinstance(e, ast.Starred) for e in target.elts):
        return [pair for t, v in zip(target.elts, value.elts) for pair in _unpacked(t, v, _values(v, carried), carried)]
    return [(name.id, held) for name in ast.walk(target) if isinstance(name, ast.Name)]


def _helper(node):
    """Whether ``node`` calls a function of the application's own."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id not in _BUILTINS


def _sides(node):
    """The pairs of operands ``node`` combines into one type."""
    if isinstance(node, ast.BinOp) and not isinstance(node.op, ast.Div):
        return [(node.left, node.right)]
    if isinstance(node, ast.AugAssign) and not isinstance(node.op, ast.Div):
        return [(node.target, node.value)]
    if isinstance(node, ast.Compare):
        operands = [node.left] + node.comparators
        return list(zip(operands, operands[1:]))
    if _helper(node):  # not followed inside: any two arguments may meet there
        args = list(node.args) + [k.value for k in node.keywords]
        return [(a, b) for i, a in enumerate(args) for b in args[i + 1:]]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("max", "min"):
        return [(node.args[0], node.args[1])] if len(node.args) == 2 else []
    if isinstance(node, ast.Call) and _name(node.func) in _MEETING:
        args = node.args[1:] if _name(node.func) == "where" else node.args
        return [(args[0], args[1])] if len(args) >= 2 else []
    return []


def _name(func):
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None


def _values(node, carried):
    """The parameters whose values ``node`` may hold in their own dtype."""
    if isinstance(node, ast.Name):
        return set(carried.get(node.id, ()))
    if isinstance(node, ast.Constant):
        return set()
    if isinstance(node, ast.BinOp):
        if isinstance(node.op, ast.Div) or any(isinstance(s, ast.Constant) and isinstance(s.value, float)
                                               for s in (node.left, node.right)):
            return set()
        return _values(node.left, carried) | _values(node.right, carried)
    if isinstance(node, ast.UnaryOp) and not isinstance(node.op, ast.Not):
        return _values(node.operand, carried)
    if isinstance(node, (ast.Tuple, ast.List)):
        return set().union(*(_values(e, carried) for e in node.elts))
    if _helper(node) or isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("max", "min"):
        return set().union(*(_values(a, carried) for a in list(node.args) + [k.value for k in node.keywords]))
    if isinstance(node, ast.IfExp):
        return _values(node.body, carried) | _values(node.orelse, carried)
    if isinstance(node, ast.Subscript):
        return _values(node.value, carried)
    if isinstance(node, ast.Attribute):
        return set() if node.attr in _NOT_VALUES else _values(node.value, carried)
    if isinstance(node, ast.Call) and _name(node.func) in _KEEPING:
        name = _name(node.func)
        # where's values are its last two arguments; maximum's, minimum's and
        # clamp's all of them; the others' (abs, reshape, ...) the first.
        args = node.args[1:] if name == "where" else node.args if name in _MEETING | {"clamp"} else node.args[:1]
        found = set()
        for a in args:
            found |= _values(a, carried)
        if isinstance(node.func, ast.Attribute):
            found |= _values(node.func.value, carried)  # x.reshape(...): x's values (a module holds none)
        return found
    return set()  # casts, reductions, math, other calls: another type


def refusal(meetings_, dtypes):
    """The message refusing a call whose ``dtypes`` (name -> torch dtype)
    put uint8 and int8 values into one operation (what is wrong, why and the
    fix on lines of their own), else None."""
    import torch

    for left, right, text in meetings_:
        for a, b in ((left, right), (right, left)):
            unsigned = sorted(n for n in a if dtypes.get(n) == torch.uint8)
            signed = sorted(n for n in b if dtypes.get(n) == torch.int8)
            if unsigned and signed:
                u, s = unsigned[0], signed[0]
                return (f"`{u}` (uint8) and `{s}` (int8) meet in `{text}`\n"
                        f"Triton computes uint8 with int8 as uint8 (200 + 100 is 44, uint8(100) < int8(-100) "
                        f"is True), torch as int16\ncast one side in the application (`{u}.to(ntl.int16)`) "
                        "or pass tensors of one signedness")
    return None
