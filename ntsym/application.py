"""Reading what the kernel is given from outside the arrangement's tensors:
the application's source (checked to be a plain function) and the names it
can see, the functions it inlines, the modules and constants it reads, and the
names an arrangement binds its symbols to."""

import ast
import builtins
import functools
import inspect
import textwrap
import types

import sympy

from ntsym_codegen.analysis import dotted_path
from ntsym_codegen.emit_error import source_lines
from ntsym_codegen.emit_error import EmitError
from ntsym.errors import ApplicationError
from ntsym.symbol import Symbol


def parse_application(fn):
    """The application's ``ast.FunctionDef`` with line numbers of its file, and
    the names it can see."""
    _check_application_kind(fn)
    try:
        source = textwrap.dedent(inspect.getsource(fn))
        filename = inspect.getsourcefile(fn) or "<unknown>"
        _, first = inspect.getsourcelines(fn)
    except (OSError, TypeError) as e:
        raise ApplicationError(f"cannot read the source of application {fn!r}: {e}") from None
    tree = ast.parse(source)
    ast.increment_lineno(tree, first - 1)
    raw = inspect.getsourcelines(fn)[0][0]
    indent = len(raw) - len(raw.lstrip())
    if indent:
        for node in ast.walk(tree):
            if hasattr(node, "col_offset"):
                node.col_offset += indent
                if getattr(node, "end_col_offset", None) is not None:
                    node.end_col_offset += indent
    func = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if func is None:
        raise ApplicationError(f"application {fn!r} is not a function")
    func.decorator_list = []
    func.returns = None
    for arg in func.args.args:
        arg.annotation = None
    func.ntsym_filename = filename
    names = dict(fn.__globals__)
    if fn.__closure__:
        names.update(
            {n: c.cell_contents for n, c in zip(fn.__code__.co_freevars, fn.__closure__) if _cell_ok(c)}
        )
    return func, names


def _check_application_kind(fn):
    """The application is compiled from its source, so it must be a plain
    function, as in NineToothed: what a partial or a method binds (arguments,
    ``self``) is not in that source, and the kernel could not see it."""
    if isinstance(fn, functools.partial):
        raise ApplicationError(
            f"the application {fn!r} is a functools.partial: the kernel is compiled from "
            "the function's source, where the arguments the partial binds do not appear; "
            "pass a function (use a constexpr Tensor(0) for a compile-time value)"
        )
    if inspect.ismethod(fn):
        raise ApplicationError(
            f"the application {fn.__qualname__} is a bound method: the kernel is compiled "
            "from its source, where `self` has no value; pass a function (a staticmethod "
            "or a module-level def)"
        )
    if not isinstance(fn, types.FunctionType):
        raise ApplicationError(
            f"the application must be a function (a def), got {type(fn).__name__} {fn!r}: "
            "the kernel is compiled from the function's source"
        )


def _cell_ok(cell):
    try:
        cell.cell_contents
        return True
    except ValueError:
        return False


def _resolve_globals(func, names):
    """Functions to inline, modules and compile-time constants the
    application refers to by name (or by a dotted path: ``ntsym.language``,
    ``math.pi``)."""
    inline, aliases, constants, seen = {}, {}, {}, set()

    def visit(fn_def, scope):
        _refuse_nested_functions(fn_def)
        local = _local_names(fn_def)
        for node in ast.walk(fn_def):
            if isinstance(node, ast.Name) and node.id not in seen and node.id not in local:
                seen.add(node.id)
                if node.id not in scope:
                    if not hasattr(builtins, node.id):
                        raise ApplicationError(str(EmitError(
                            f"name `{node.id}` is not defined (not a parameter, a local, a global or a "
                            "closure variable of the application)", node, fn_def.ntsym_filename,
                            source_lines(fn_def.ntsym_filename))))
                    continue
                value = scope[node.id]
                kind = _module_kind(value)
                if kind is not None:
                    aliases[node.id] = kind
                elif _inlined_function(value) is not None:
                    sub, sub_scope = parse_application(_inlined_function(value))
                    inline[node.id] = (sub, sub_scope)
                    visit(sub, sub_scope)
                elif _is_constant(value):
                    constants[node.id] = _constant_value(value)
                elif not _is_jit(value) and not isinstance(value, (type, sympy.Basic)):
                    raise ApplicationError(
                        f"`{node.id}` is a {type(value).__name__} the application reads from outside "
                        "(a global or closure variable); kernels can use constants (int, float, bool, str, None, tuples of them, "
                        "ntl.constexpr, ntl dtypes), modules and functions, fixed when the kernel is made"
                    )
            if isinstance(node, ast.Attribute):
                path = dotted_path(node)
                if path is None or path[0] in local or path[0] not in scope:
                    continue
                value = scope[path[0]]
                if not isinstance(value, types.ModuleType) or _module_kind(value) in ("tl", "libdevice"):
                    continue
                _refuse_torch_function(value, path, node, fn_def)
                for k, attr in enumerate(path[1:], start=2):
                    value = getattr(value, attr, None)
                    key = ".".join(path[:k])
                    kind = _module_kind(value)
                    if kind in ("tl", "libdevice"):
                        aliases.setdefault(key, kind)
                        break
                    if kind is not None:
                        aliases.setdefault(key, kind)
                    elif _inlined_function(value) is not None:
                        if key not in inline:
                            sub, sub_scope = parse_application(_inlined_function(value))
                            inline[key] = (sub, sub_scope)
                            visit(sub, sub_scope)
                        break
                    elif _is_constant(value):
                        constants.setdefault(key, _constant_value(value))
                        break
                    elif not isinstance(value, types.ModuleType):
                        break

    visit(func, names)
    _refuse_recursion(func, inline)
    return inline, aliases, constants


def _error(message, node, fn_def):
    """An ApplicationError naming the line of ``node`` in ``fn_def``'s file."""
    return ApplicationError(str(EmitError(message, node, fn_def.ntsym_filename,
                                          source_lines(fn_def.ntsym_filename))))


def _refuse_nested_functions(fn_def):
    """A ``def`` or ``lambda`` inside an application (or a function it
    calls): the kernel has no closures to make of it."""
    for node in ast.walk(fn_def):
        if node is fn_def:
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            what = "a lambda" if isinstance(node, ast.Lambda) else f"the nested function `{node.name}`"
            raise _error(f"{what} is defined inside `{fn_def.name}`: a kernel cannot make functions at run time; "
                         "define it at module level (ntsym inlines calls of module-level functions) or write its "
                         "body in place", node, fn_def)


def _refuse_torch_function(module, path, node, fn_def):
    """``torch.exp(x)``, ``torch.float32`` and the like: PyTorch's functions
    and dtypes mean nothing inside a kernel; name ``ntsym.language``'s."""
    if not getattr(module, "__name__", "").split(".")[0] == "torch":
        return
    import torch

    import ntsym.language as ntl

    value = module
    for attr in path[1:]:
        value = getattr(value, attr, None)
    name = ".".join(path)
    if isinstance(value, torch.dtype):
        raise _error(f"`{name}` is a PyTorch dtype, which Triton cannot read in a kernel; use "
                     f"`ntl.{path[-1]}` (ntsym.language)", node, fn_def)
    if not inspect.isroutine(value):  # other values are read as before
        return
    instead = f"use `ntl.{path[-1]}` (ntsym.language)" if hasattr(ntl, path[-1]) else \
        "use the ntsym.language (ntl) functions on tiles"
    raise _error(f"`{name}` is a PyTorch function, which a kernel cannot call on its tiles; {instead}", node, fn_def)


def _refuse_recursion(func, inline):
    """A function that calls itself, directly or through others: calls are
    inlined, so recursion would never end."""
    defs = {key: sub for key, (sub, _) in inline.items()}
    origin = {(sub.ntsym_filename, sub.lineno): key for key, sub in defs.items()}
    root = origin.get((func.ntsym_filename, func.lineno))  # the application calling itself

    def calls(fn_def):
        for node in ast.walk(fn_def):
            if isinstance(node, ast.Call):
                key = ast.unparse(node.func)
                if key in defs:
                    yield key, node

    def walk(key, fn_def, stack):
        for callee, node in calls(fn_def):
            if callee in stack or callee == root:
                chain = " -> ".join([*stack, callee])
                raise _error(f"`{callee}` calls itself ({chain}): ntsym inlines the functions an application "
                             "calls, so a recursive call would never end; write it as a loop", node, fn_def)
            walk(callee, defs[callee], stack + [callee])

    walk(root or func.name, func, [root or func.name])


def _local_names(fn_def):
    """Names a function assigns (or takes as parameters): its locals."""
    names = {a.arg for a in fn_def.args.args}
    for node in ast.walk(fn_def):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
    return names


def _module_kind(value):
    """"tl" for ``ntsym.language``/``triton.language``, "libdevice" for a
    libdevice (Triton's or ntsym's), a module object for other modules."""
    import triton.language as tl

    import ntsym.language as ntl

    if value is ntl or value is tl:
        return "tl"
    if value is ntl.libdevice or (
        isinstance(value, types.ModuleType) and getattr(value, "__name__", "").endswith("libdevice")
    ):
        return "libdevice"
    if isinstance(value, types.ModuleType):
        return value
    return None


def _is_constant(value):
    import triton.language as tl

    if isinstance(value, tl.constexpr):
        return _is_constant(value.value)
    if isinstance(value, tuple):
        return all(_is_constant(v) for v in value)
    return value is None or isinstance(value, (bool, int, float, str, tl.dtype))


def _constant_value(value):
    import triton.language as tl

    if isinstance(value, tl.constexpr):
        return _constant_value(value.value)
    if isinstance(value, tuple):
        return tuple(_constant_value(v) for v in value)
    return value


def _is_jit(fn):
    return type(fn).__module__.startswith("triton")


def _inlined_function(value):
    """The Python function a call of ``value`` inlines, or None: a plain
    function, or the function a ``@triton.jit`` helper wraps (its body is
    Triton code already, which the kernel takes as NineToothed's generated
    module takes the helper's source)."""
    if isinstance(value, types.FunctionType) and not _is_jit(value):
        return value
    fn = getattr(value, "fn", None)
    wrapper = type(value).__name__ in ("JITFunction", "InterpretedFunction")  # the interpreter's jit
    if _is_jit(value) and wrapper and isinstance(fn, types.FunctionType):
        return fn
    return None


def _bound_names(fn):
    """Symbol -> the name ``fn`` binds it to, for any callable NineToothed
    accepts as an arrangement: a function's parameter defaults, closure
    variables and the globals its code reads; the keywords and arguments a
    ``functools.partial`` binds (before those of the function it wraps); the
    function of a bound method and the attributes of its object; a callable
    object's attributes and its ``__call__``."""
    bound, seen = {}, set()

    def add(value, name):
        if isinstance(value, Symbol):
            bound.setdefault(value, name)

    def attributes(obj):
        for name, value in getattr(obj, "__dict__", {}).items():
            add(value, name)

    def visit(fn):
        if id(fn) in seen:
            return
        seen.add(id(fn))
        if isinstance(fn, functools.partial):
            for name, value in fn.keywords.items():
                add(value, name)
            try:
                params = list(inspect.signature(fn.func).parameters)
            except (TypeError, ValueError):
                params = []
            for name, value in zip(params, fn.args):
                add(value, name)
            visit(fn.func)
        elif inspect.ismethod(fn):
            visit(fn.__func__)
            attributes(fn.__self__)
        elif isinstance(fn, types.FunctionType):
            for p in inspect.signature(fn).parameters.values():
                add(p.default, p.name)
            if fn.__closure__:
                for n, c in zip(fn.__code__.co_freevars, fn.__closure__):
                    if _cell_ok(c):
                        add(c.cell_contents, n)
            for n in fn.__code__.co_names:
                add(fn.__globals__.get(n), n)
        elif callable(fn):
            call = getattr(type(fn), "__call__", None)
            if isinstance(call, types.FunctionType):
                visit(call)
            attributes(fn)

    visit(fn)
    return bound
