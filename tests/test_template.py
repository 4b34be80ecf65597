"""ntsym_codegen.template: generated code from templates with holes."""

import ast

import pytest

from ntsym_codegen.printer import to_source
from ntsym_codegen.template import expr, stmt, stmts


def test_holes_take_nodes_source_constants_and_tuples():
    mask = ast.Name(id="m", ctx=ast.Load())
    node = expr("tl.where({mask}, {value}, {zero})", mask=mask, value="x + 1", zero=0)
    assert ast.unparse(node) == "tl.where(m, x + 1, 0)"
    assert node.args[0] is mask  # handed-in nodes are kept, not copied
    assert ast.unparse(expr("f({shape}, {none}, {flag})", shape=(2, "n"), none=None, flag=True)) == "f((2, n), None, True)"
    assert ast.unparse(expr("{name}", name=ast.Constant("x"))) == "'x'"


def test_a_hole_used_twice_gets_a_copy():
    index = ast.Name(id="i", ctx=ast.Load())
    node = expr("({i} >= 0) & ({i} < n)", i=index)
    names = [n for n in ast.walk(node) if isinstance(n, ast.Name) and n.id == "i"]
    assert len(names) == 2 and names[0] is not names[1]


def test_precedence_comes_from_the_tree_not_the_text():
    node = expr("{a} * {b}", a="x + 1", b="y - 2")
    assert ast.unparse(node) == "(x + 1) * (y - 2)"


def test_names_being_defined_and_spliced_statements():
    body = [stmt("{m} = meta[{key}]", m="M", key=ast.Constant("M"))]
    (function,) = stmts(
        """
        def {fn}(meta):
            {reads}
            return {size}
        """,
        fn="grid", reads=body, size=expr("cdiv(n, M)"),
    )
    assert to_source(function) == "def grid(meta):\n    M = meta['M']\n    return cdiv(n, M)"
    assert isinstance(function.body[0].targets[0].ctx, ast.Store)


def test_an_empty_splice_leaves_a_valid_block():
    (function,) = stmts("def f():\n    {body}", body=[])
    assert to_source(function) == "def f():\n    pass"


def test_tuple_targets_are_stores():
    node = stmt("{names} = x.shape", names=expr("(a, b)"))
    assert all(isinstance(n.ctx, ast.Store) for n in ast.walk(node.targets[0]) if hasattr(n, "ctx"))
    assert to_source(node) == "a, b = x.shape"


def test_template_nodes_have_no_location_of_their_own():
    node = stmt("tl.store({p}, {v})", p="p", v="v")
    assert not hasattr(node, "lineno")


def test_mistakes_are_named():
    with pytest.raises(KeyError, match=r"\{mask\}"):
        expr("tl.where({mask}, x, 0)")
    with pytest.raises(TypeError, match="identifier"):
        stmts("def {fn}():\n    pass", fn="not a name")
    with pytest.raises(ValueError, match="2 statements"):
        stmt("a = 1\nb = 2")
    with pytest.raises(TypeError, match="cannot fill"):
        expr("f({x})", x=object())
    with pytest.raises(TypeError, match="alone on a line"):
        expr("f({body})", body=[stmt("pass")])
