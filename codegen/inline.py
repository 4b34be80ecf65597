"""Inlining: a call of a plain Python function the application may use
(``ir.inline_functions``) becomes the function's body, its parameters and
locals renamed apart (``<function>_<n>_<name>``), its result in a local.
"""

import ast
import contextlib
import copy

from ntsym_codegen.analysis import assigned_names, inline_written
from ntsym_codegen.astutil import literal


class InliningMixin:
    """Inlined calls, for ``KernelEmitter``.

    Writes ``names.counter`` (the prefix of temporaries) and ``blocks.pre``
    (the body goes before the statement using the result); reads
    ``names.locals``.  Uses the visitor's ``statements``."""

    def try_inline(self, call, statement):
        func = call.func
        key = None
        if isinstance(func, ast.Name) and func.id in self.ir.inline_functions and func.id not in self.names.locals:
            key = func.id
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            k = f"{func.value.id}.{func.attr}"
            if k in self.ir.inline_functions:
                key = k
        if key is None:
            return None
        sub_def, _ = self.ir.inline_functions[key]
        if call.keywords or len(call.args) != len(sub_def.args.args):
            raise self.error(f"inlined call of `{key}` needs exactly {len(sub_def.args.args)} positional arguments", call)
        self.names.counter += 1
        prefix = f"{sub_def.name}_{self.names.counter}_"
        while any(n.startswith(prefix) for n in self.facts.user_names):  # the application's own names stay apart
            self.names.counter += 1
            prefix = f"{sub_def.name}_{self.names.counter}_"
        assigned = assigned_names(sub_def.body)
        if self.names.conditional:
            self._refuse_conditional_writes(key, call)
        renames, pre = {}, []
        for param, arg in zip(sub_def.args.args, call.args):
            # A name passed is the parameter itself: assigning the parameter assigns it (as
            # NineToothed's applications calling applications store into their argument).
            if isinstance(arg, ast.Name):
                renames[param.arg] = arg.id
            else:
                tmp = prefix + param.arg
                pre.append(ast.Assign(targets=[ast.Name(id=tmp, ctx=ast.Store())], value=arg, lineno=call.lineno))
                renames[param.arg] = tmp
        for name in assigned:
            if name not in renames:
                renames[name] = prefix + name
        _, scope = self.ir.inline_functions[key]  # the names the function sees: its own module's
        body = _own_constants(copy.deepcopy(sub_def.body), sub_def, assigned, scope)
        if len(body) > 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            body = body[1:]  # its docstring says nothing in the kernel
        result = returned = None
        if body and isinstance(body[-1], ast.Return) and body[-1].value is not None:
            result, returned = prefix + "result", body[-1].value
            body[-1] = ast.Assign(targets=[ast.Name(id=result, ctx=ast.Store())], value=returned, lineno=body[-1].lineno)
        for n in ast.walk(ast.Module(body=body, type_ignores=[])):
            if isinstance(n, ast.Name) and n.id in renames:
                n.id = renames[n.id]
            if isinstance(n, ast.Return) and n.value is not None:
                raise self.error(f"inlined function `{key}` may return only at its end", n)
        written = {renames.get(n, n) for n in assigned} | {a.targets[0].id for a in pre} | ({result} if result else set())
        for found in self.loops.inline_writes:  # what the loops around see change
            found |= written
        outer_pre, conditional = self.blocks.pre, self.names.conditional
        self.names.conditional = 0  # its own statements run on every path of its body
        try:
            stmts = self.statements(pre + body)
        finally:
            self.blocks.pre, self.names.conditional = outer_pre, conditional
        if statement:
            return stmts
        self.blocks.pre.extend(stmts)
        if result is None:
            raise self.error(f"`{key}` returns nothing but its value is used", call)
        self.note_result(call, self.lanes.locals.get(result))  # the lanes of what it returns
        if isinstance(returned, ast.Tuple) and all(isinstance(e, ast.Name) for e in returned.elts):
            # `return m, l, acc`: unpacked at the call, each name has its own lanes.
            self.lanes.nodes[("parts", id(call))] = (call, [self.lanes_of(e) for e in returned.elts], returned.elts)
        elif returned is not None:  # `acc = f(acc, x)` in a loop reads it again as a carried value
            self.lanes.nodes[("returned", id(call))] = (call, returned)
        return ast.Name(id=result, ctx=ast.Load())


    def _refuse_conditional_writes(self, key, call):
        """An inlined body runs before the statement: where Python would call
        it only on some paths of the expression, what it (or a call in its
        arguments) writes of the caller's would be written on all of them."""
        caller = sorted(inline_written([call], self.ir.inline_functions))
        if caller:
            writer = f"`{key}`" if set(caller) - inline_written(call.args, self.ir.inline_functions) \
                else f"a call in the arguments of `{key}`"
            raise self.error(
                f"{writer} writes `{'`, `'.join(caller)}` (a parameter passed a name is that name) but Python calls "
                "it here only on some paths (the right of `and`/`or`, a branch of `x if c else y`, a chained "
                "comparison's later operands); ntsym runs an "
                "inlined call before its statement, on every path: call it in a statement of its own, under an "
                "`if`", call)

    def conditional_operands(self, node):
        """``a and b`` as ``a & b`` (every operand evaluated); ``x if c else
        y`` and ``a < b < c`` as they are.  An inlined call in an operand
        Python may not evaluate must not write the caller's names."""
        if isinstance(node, ast.IfExp):
            test = self.expr(node.test)
            with self._maybe_evaluated():
                value = ast.IfExp(test=test, body=self.expr(node.body), orelse=self.expr(node.orelse))
            return ast.copy_location(value, node)
        if isinstance(node, ast.Compare):
            left, first = self.expr(node.left), self.expr(node.comparators[0])
            with self._maybe_evaluated():
                rest = [self.expr(c) for c in node.comparators[1:]]
            return ast.copy_location(ast.Compare(left=left, ops=node.ops, comparators=[first] + rest), node)
        op = ast.BitAnd() if isinstance(node.op, ast.And) else ast.BitOr()
        result = self.expr(node.values[0])
        with self._maybe_evaluated():
            for value in node.values[1:]:
                result = ast.BinOp(left=result, op=op, right=self.expr(value))
        return result

    @contextlib.contextmanager
    def _maybe_evaluated(self):
        self.names.conditional += 1
        try:
            yield
        finally:
            self.names.conditional -= 1


class _Constants(ast.NodeTransformer):
    def __init__(self, values):
        self.values = values

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load) and node.id in self.values:
            return ast.copy_location(literal(self.values[node.id]), node)
        return node


def _number(value):
    """``value`` as a plain number (``tl.constexpr`` unwrapped), or None."""
    import triton.language as tl

    while isinstance(value, tl.constexpr):
        value = value.value
    return value if type(value) in (int, float, bool) else None


def _own_constants(body, sub_def, assigned, scope):
    """``body`` with the numbers the function reads from its own module
    written in: the application's names (a local, a parameter, its module's
    global of the same spelling) must not stand for them."""
    params = {a.arg for a in sub_def.args.args}
    free = {n.id for n in ast.walk(sub_def) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    values = {name: _number(scope[name]) for name in free - params - assigned if name in scope}
    values = {name: v for name, v in values.items() if v is not None}
    if not values:
        return body
    return [_Constants(values).visit(statement) for statement in body]
