"""Functions of the application passed as values: a ``@triton.jit`` combine
given to ``ntl.reduce`` or ``ntl.associative_scan``.

ntsym inlines the functions an application calls; one passed as a value has
no call to inline, so it is written into the generated module as a
``@triton.jit`` function of its own (``ntsym_fn_<name>``), as NineToothed
writes the functions an application depends on next to its kernel.  Its
module paths (``ntl``, ``tl``, ``libdevice``) and global constants are
printed as the kernel's are; a function it calls is written the same way.

A reduction with such a combine has no identity ntsym knows.  Over lanes
outside the tensor it reduces pairs ``(value, inside)`` with
``ntsym_masked_<name>``: a lane outside never reaches the combine, and a
row whose every lane lies outside stays outside (``codegen/mixing.py``).
"""

import ast
import copy

from ntsym_codegen.template import expr

PREFIX = "ntsym_fn_"


class FunctionValuesMixin:
    """For ``KernelEmitter``: writes ``records.functions`` (name -> source)."""

    def function_value(self, name, node):
        """The application's function ``name`` used as a value: the name of
        the module-level ``@triton.jit`` function written for it."""
        emitted = PREFIX + name.replace(".", "_")
        functions = self.records.functions
        if emitted in functions:
            return ast.Name(id=emitted, ctx=ast.Load())
        functions[emitted] = None  # a function that calls itself refers to its name
        sub_def, _ = self.ir.inline_functions[name]
        func = copy.deepcopy(sub_def)
        if func.args.vararg or func.args.kwarg or func.args.kwonlyargs or func.args.defaults:
            raise self.error(f"`{name}` is passed as a value: it must take plain positional parameters only", node)
        func.name = emitted
        func.decorator_list = [ast.parse("triton.jit", mode="eval").body]
        func.returns = None
        local = {a.arg for a in func.args.args} | {
            n.id for n in ast.walk(func) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        func.body = [_Globals(self, name, local, node).visit(s) for s in func.body]
        functions[emitted] = ast.unparse(ast.fix_missing_locations(func))
        return ast.Name(id=emitted, ctx=ast.Load())

    def masked_combine(self, combine):
        """The combine of pairs (value, inside) for ``combine`` (the name of a
        module-level function): lanes outside are left out of each step."""
        emitted = "ntsym_masked_" + combine.id.removeprefix(PREFIX)
        if emitted not in self.records.functions:
            self.records.functions[emitted] = (
                "@triton.jit\n"
                f"def {emitted}(a, a_inside, b, b_inside):\n"
                f"    c = {combine.id}(a, b)\n"
                "    return tl.where(a_inside & b_inside, c, tl.where(a_inside, a, b)), a_inside | b_inside")
        return ast.Name(id=emitted, ctx=ast.Load())


class _Globals(ast.NodeTransformer):
    """A function's body with its module paths, constants and the functions
    it calls as the generated module writes them."""

    def __init__(self, em, owner, local, node):
        self.em, self.owner, self.local, self.node = em, owner, local, node

    def visit_Attribute(self, node):
        named = self.em.global_name(node)
        if named is not None:
            return named
        return self.generic_visit(node)

    def visit_Name(self, node):
        if node.id in self.local or not isinstance(node.ctx, ast.Load):
            return node
        if node.id in self.em.ir.inline_functions:
            return self.em.function_value(node.id, self.node)
        named = self.em.global_name(node)
        if named is not None:
            return named
        if node.id in ("range", "min", "max", "float", "int", "len", "True", "False", "None"):
            return node
        raise self.em.error(f"`{self.owner}` is passed as a value and reads `{node.id}`, which ntsym cannot "
                            "write into the generated module (a module path of triton.language or "
                            "ntsym.language, a number, or another such function is needed)", self.node)


def masked_reduce(em, operand, mask, axis, combine, keep):
    """``tl.reduce`` of ``operand`` over the lanes ``mask`` keeps, with the
    user's ``combine``: the value of the pairs' reduction."""
    inside = expr("tl.broadcast_to({mask}, {value}.shape)", mask=mask, value=copy.deepcopy(operand))
    return expr("tl.reduce(({value}, {inside}), {axis}, {fn}, keep_dims={keep})[0]", value=operand, inside=inside,
                axis=axis, fn=em.masked_combine(combine), keep=keep)


__all__ = ["FunctionValuesMixin", "masked_reduce"]
