"""Which tensor parameters an application computes arithmetic on.

Triton computes on booleans as 1-bit integers (``True + True`` is ``False``);
torch does not (``True + True`` is ``True``, ``-`` is refused).  A bool tensor
whose values reach ``+``, ``-``, ``*``, ``/``, ``//``, ``%``, ``**``, unary
``-`` or ``~`` would give a result unlike torch's, so the launcher refuses bool
tensors for the parameters this analysis returns.  Values are followed through
locals (to a fixed point, so loops are covered) and into inlined functions;
conditions (comparisons, ``where``'s first argument) and shapes, offsets and
strides are not values of the tensor.
"""

import ast

_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)
_NOT_VALUES = {"shape", "dtype", "source", "offsets", "stride", "ndim", "data_ptr"}


def arithmetic_parameters(func, params, inline_functions):
    """The names among ``params`` whose values reach arithmetic in ``func``."""
    return _analyse(func, [a.arg for a in func.args.args], set(params), inline_functions, 0)


def _analyse(func, names, params, inline_functions, depth):
    carried = {name: {name} for name in names if name in params}  # local -> parameters it holds
    found = set()
    if depth > 8:  # recursion in inlined functions: no deeper
        return found
    for _ in range(20):  # to a fixed point (loops carry values backwards)
        before = (dict((k, frozenset(v)) for k, v in carried.items()), frozenset(found))
        for node in ast.walk(func):
            if isinstance(node, ast.Assign):
                held = _values(node.value, carried)
                for target in node.targets:
                    for name in _target_names(target):
                        carried.setdefault(name, set()).update(held)
            elif isinstance(node, ast.AugAssign):
                held = _values(node.value, carried) | _values(node.target, carried)
                for name in _target_names(node.target):
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
                inner = _analyse(sub, sub_names, set(sub_names), inline_functions, depth + 1)
                for name, arg in zip(sub_names, node.args):
                    if name in inner:
                        found |= _values(arg, carried)
        if before == (dict((k, frozenset(v)) for k, v in carried.items()), frozenset(found)):
            break
    return found & params


def _target_names(target):
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for e in target.elts for n in _target_names(e)]
    return []


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
