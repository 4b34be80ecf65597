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

from codegen.analysis import dotted_path
from codegen.emit_error import source_lines
from codegen.kernel import EmitError
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
                elif isinstance(value, types.FunctionType) and not _is_jit(value):
                    sub, sub_scope = parse_application(value)
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
                for k, attr in enumerate(path[1:], start=2):
                    value = getattr(value, attr, None)
                    key = ".".join(path[:k])
                    kind = _module_kind(value)
                    if kind in ("tl", "libdevice"):
                        aliases.setdefault(key, kind)
                        break
                    if kind is not None:
                        aliases.setdefault(key, kind)
                    elif isinstance(value, types.FunctionType) and not _is_jit(value):
                        if key not in inline:
                            sub, sub_scope = parse_application(value)
                            inline[key] = (sub, sub_scope)
                            visit(sub, sub_scope)
                        break
                    elif _is_constant(value):
                        constants.setdefault(key, _constant_value(value))
                        break
                    elif not isinstance(value, types.ModuleType):
                        break

    visit(func, names)
    return inline, aliases, constants


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
