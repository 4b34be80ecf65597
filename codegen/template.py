"""Generated code from templates: Python source with ``{name}`` holes that are
filled with syntax trees, the one way the back end writes code.

    expr("tl.where({mask}, {value}, 0)", mask=m, value=v)
    stmts('''
        def grid(meta):
            {unpack}
            return ({size},)
    ''', unpack=[...], size=node)

A hole is ``{name}`` for a keyword argument ``name``; other braces (dict and
set displays, ``{**d}``) are left alone. What fills a hole:

- a syntax tree (``ast.expr``), itself (the emitter may still rewrite the
  nodes it handed in), copied where the same hole appears again;
- a ``str``: *source text* of an expression, parsed (``"x_ptr"``,
  ``"pid // 4"``); a string literal is ``ast.Constant("text")`` or ``repr``;
- an ``int``, ``float``, ``bool`` or ``None``: that constant;
- a tuple: a tuple display of its items, filled by the same rules.

A hole may also stand for a name being defined (``def {name}(meta):``,
``{name} = ...``, a parameter) when filled with an identifier, and a hole
alone on a line stands for statements when filled with a list of them
(``ast.stmt``), spliced in place (an empty list leaves nothing).

Templates are dedented, so they can be written indented like the code around
them. Nothing here knows about kernels: it only builds syntax.
"""

import ast
import copy
import re
import textwrap

_HOLE = re.compile(r"\{([A-Za-z_]\w*)\}")
_PREFIX = "_ntsym_hole_"


def expr(template, **values):
    """The expression ``template`` with its holes filled."""
    tree = _parse(template, values, mode="eval")
    return tree.body


def stmts(template, **values):
    """The statements of ``template`` with their holes filled, as a list."""
    return _parse(template, values, mode="exec").body


def stmt(template, **values):
    """The single statement of ``template`` with its holes filled."""
    body = stmts(template, **values)
    if len(body) != 1:
        raise ValueError(f"template has {len(body)} statements, not one: {template!r}")
    return body[0]


def _parse(template, values, mode):
    def hole(match):
        name = match.group(1)
        if name not in values:
            raise KeyError(f"template hole {{{name}}} has no value: {template!r}")
        return _PREFIX + name

    source = _HOLE.sub(hole, textwrap.dedent(template).strip("\n"))
    tree = ast.parse(source, mode=mode)
    # The template's own nodes carry no source location: like nodes built by
    # hand, they take their caller's (``ast.copy_location``) or, when
    # printed, their parent's.  Filled-in nodes keep theirs.
    for node in ast.walk(tree):
        for attribute in ("lineno", "col_offset", "end_lineno", "end_col_offset"):
            if hasattr(node, attribute):
                delattr(node, attribute)
    tree = _Fill(values).visit(tree)
    for node in ast.walk(tree):  # a block left empty by an empty splice
        if isinstance(getattr(node, "body", None), list) and not node.body:
            node.body = [ast.Pass()]
    return tree


def _hole_name(identifier):
    return identifier[len(_PREFIX):] if identifier.startswith(_PREFIX) else None


def _to_node(value, fresh=True):
    if isinstance(value, (ast.AST, list)):  # a tree, or statements to splice
        return value if fresh else copy.deepcopy(value)
    if isinstance(value, str):
        return ast.parse(value, mode="eval").body
    if isinstance(value, tuple):
        return ast.Tuple(elts=[_to_node(v, fresh) for v in value], ctx=ast.Load())
    if value is None or isinstance(value, (bool, int, float)):
        return ast.Constant(value)
    raise TypeError(f"cannot fill a template hole with {type(value).__name__}: {value!r}")


def _identifier(name, value):
    if not (isinstance(value, str) and value.isidentifier()):
        raise TypeError(f"template hole {{{name}}} names something and needs an identifier, got {value!r}")
    return value


def _with_context(node, ctx):
    for child in ast.walk(node):
        if hasattr(child, "ctx"):
            child.ctx = ctx()
    return node


class _Fill(ast.NodeTransformer):
    def __init__(self, values):
        self.values = values
        self.used = set()

    def _fill(self, name):
        fresh = name not in self.used
        self.used.add(name)
        return _to_node(self.values[name], fresh)

    def visit_Name(self, node):
        name = _hole_name(node.id)
        if name is None:
            return node
        if isinstance(self.values[name], list):
            raise TypeError(f"template hole {{{name}}} holds statements: it must stand alone on a line")
        filled = self._fill(name)
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            filled = _with_context(filled, type(node.ctx))
        return filled

    def visit_Expr(self, node):
        name = _hole_name(node.value.id) if isinstance(node.value, ast.Name) else None
        if name is not None and isinstance(self.values[name], list):
            return self._fill(name)  # statements, spliced in place
        return self.generic_visit(node)

    def visit_FunctionDef(self, node):
        name = _hole_name(node.name)
        if name is not None:
            node.name = _identifier(name, self.values[name])
        return self.generic_visit(node)

    def visit_arg(self, node):
        name = _hole_name(node.arg)
        if name is not None:
            node.arg = _identifier(name, self.values[name])
        return self.generic_visit(node)

    def visit_keyword(self, node):
        name = _hole_name(node.arg) if node.arg else None
        if name is not None:
            node.arg = _identifier(name, self.values[name])
        return self.generic_visit(node)
