"""Forms of a value a loop carries (``codegen/padding.py``, ``carried``):
``acc <op> term`` with the operation's identity, and ``acc * f + e``."""

import ast

import sympy


def accumulation(name, node):
    """``node`` as ``name`` combined with one term by an operation with an
    identity: (the term, the identity), else (None, None)."""
    operators = {ast.Add: sympy.S.Zero, ast.Sub: sympy.S.Zero, ast.Mult: sympy.S.One, ast.BitXor: sympy.S.Zero}
    is_name = lambda n: isinstance(n, ast.Name) and n.id == name  # noqa: E731
    if isinstance(node, ast.BinOp) and type(node.op) in operators:
        if is_name(node.left):
            return node.right, operators[type(node.op)]
        if is_name(node.right) and not isinstance(node.op, ast.Sub):
            return node.left, operators[type(node.op)]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and len(node.args) == 2 \
            and node.func.attr in ("maximum", "minimum") and not node.keywords:
        identity = -sympy.oo if node.func.attr == "maximum" else sympy.oo
        if is_name(node.args[0]):
            return node.args[1], identity
        if is_name(node.args[1]):
            return node.args[0], identity
    return None, None


def scaled_parts(name, node):
    """``node`` as ``name * f + e`` (either order of both operations): (f, e,
    (the product node, the attribute holding f)), else None."""
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add)):
        return None
    is_name = lambda n: isinstance(n, ast.Name) and n.id == name  # noqa: E731
    for product, term in ((node.left, node.right), (node.right, node.left)):
        if isinstance(product, ast.BinOp) and isinstance(product.op, ast.Mult):
            if is_name(product.left) and not _reads(product.right, name) and not _reads(term, name):
                return product.right, term, (product, "right")
            if is_name(product.right) and not _reads(product.left, name) and not _reads(term, name):
                return product.left, term, (product, "left")
    return None


def _reads(node, name):
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node))
