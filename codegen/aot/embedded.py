"""The torch launcher's argument checks, for standalone modules.

A standalone module (``kernel.export``) needs torch and triton only, yet must
refuse every call the torch launcher refuses: bool tensors in arithmetic,
uint8 meeting int8, written tensors with stride 0, tensors that share memory
with a written one, lazily negated views, sizes outside ``shape_options``.
Rather than restate those checks, the module embeds the runtime's own
functions by their source (``runtime.check_arguments``, ``constexpr_value``,
``note_writes`` and every function and class of the runtime they reach, found
through the names their code reads; state they bind on first use starts
unbound), with
the facts they read from ``Spec`` as literals, and a few stand-ins for what
lives outside the runtime (``fail``, ``traced``, ``promotion.refusal``).
A name the checks read that is neither embedded, a stand-in nor a builtin
stops the export, so a check added to the runtime cannot go missing here."""

import builtins
import dis
import dataclasses
import inspect
import textwrap
import types

from ntsym_codegen import overlap, promotion, writes
from ntsym_codegen.runtime import checks, jagged
from ntsym_codegen.aot.common import AotError

# Where the checks start: the launcher calls these (``check_jagged``: a jagged
# kernel's offsets and packed values, as ntsym/jagged_launch.py checks them;
# ``constexpr_value``: a compile-time value the call gives or must give;
# ``note_writes``: written tensors refused where autograd would get them wrong,
# and their version counters bumped).
_ENTRIES = ("check_arguments", "check_same", "check_size", "check_shape", "check_stride", "check_jagged",
            "float64_scalars", "check_float64_scalars", "constexpr_value", "note_writes")
# What the checks read that is defined outside ntsym_codegen.runtime.checks.
_STAND_INS = '''
class LaunchError(ValueError):
    """A call the kernel refuses (ntsym's LaunchError, in a standalone module)."""


def fail(headline, *explanation):
    raise LaunchError("\\n".join((headline,) + tuple(line for line in explanation if line)))


def traced(tensors):
    return False  # a standalone module is not traced


def is_fake(tensor):
    return False


def _interpreting():
    value = os.environ.get("TRITON_INTERPRET", "")
    return value.lower() in ("1", "true", "yes", "on") or not torch.cuda.is_available()
'''
_STAND_IN_NAMES = {"LaunchError", "fail", "traced", "is_fake", "promotion"}
_MODULES = {"functools", "itertools", "os", "torch", "math"}
# Spec fields the module does not need (large, or not plain data).
_SKIPPED = {"kernel_source", "locations", "index_peak", "metas", "meta_by_name", "params", "streamed_tiles"}


def _globals(code):
    """The global names ``code`` (and the functions nested in it) looks up."""
    names = {i.argval for i in dis.get_instructions(code) if i.opname in ("LOAD_GLOBAL", "LOAD_NAME")}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _globals(const)
    return names


# Modules whose functions the checks may reach and that are embedded with them.
_EMBEDDED = {checks.__name__, jagged.__name__, writes.__name__, overlap.__name__}


def _closure():
    """The functions and classes the entry points reach (in the runtime and
    the modules of ``_EMBEDDED``), in a stable order, and the numbers,
    strings and ``None``s of those modules they read (name -> value)."""
    homes = (checks, jagged, writes)
    todo = [(name, next(m for m in homes if hasattr(m, name))) for name in _ENTRIES]
    found, constants = {}, {}
    while todo:
        name, module = todo.pop()
        if name in found:
            continue
        found[name] = getattr(module, name)
        code = inspect.unwrap(found[name])
        if isinstance(code, type):  # a class: what its methods read
            methods = [f for f in vars(code).values() if isinstance(f, types.FunctionType)]
        else:
            methods = [code]
        for function in methods:
            for used in sorted(_globals(function.__code__)):
                _reach(name, used, function, todo, constants)
    return [found[n] for n in sorted(found)], constants


def _bound_later(module):
    """The globals functions of ``module`` assign (``global _TORCH``)."""
    return {i.argval for f in vars(module).values() if isinstance(f, types.FunctionType)
            for i in dis.get_instructions(f) if i.opname == "STORE_GLOBAL"}


def _reach(name, used, function, todo, constants):
    """Sort the global ``used`` that ``function`` (of the embedded ``name``)
    reads: a function or class to embed, a constant, a stand-in, a module or
    a builtin; anything else stops the export."""
    value = function.__globals__.get(used)
    target = inspect.unwrap(value) if callable(value) else value
    if isinstance(target, (types.FunctionType, type)) and getattr(target, "__module__", None) in _EMBEDDED:
        todo.append((used, inspect.getmodule(target)))
    elif function.__module__ in _EMBEDDED and used in _bound_later(inspect.getmodule(function)):
        constants[used] = None  # state an embedded function binds on first use (``writes._bind``): unbound
    elif isinstance(value, (bool, int, float, str)) and function.__module__ in _EMBEDDED:
        constants[used] = value  # a module's constant: embedded as its literal
    elif not (used in _STAND_IN_NAMES or used in _MODULES or hasattr(builtins, used)):
        raise AotError(f"standalone module: the runtime check `{name}` reads `{used}`, which is not embedded")


def spec_source(spec, name="SPEC"):
    """``SPEC`` (or ``name``): the facts of ``spec`` the checks read, as a
    class of literals."""
    lines = [f"class {name}:", '    """The facts of the kernel its argument checks read."""',
             "    interpreting = _interpreting()"]
    for f in dataclasses.fields(spec):
        if f.name in _SKIPPED or f.name == "interpreting":
            continue
        value = getattr(spec, f.name)
        text = _literal(value)
        try:
            same = eval(text, {"frozenset": frozenset}) == value  # noqa: S307 (our own literals)
        except Exception:
            same = False
        if not same:
            raise AotError(f"standalone module: the kernel fact `{f.name}` has no literal form ({text[:60]})")
        lines.append(f"    {f.name} = {text}")
    return "\n".join(lines)


def _literal(value):
    """``repr`` in a stable order: sets and dicts sorted, so the module's
    source (and a build keyed by it) does not vary between processes."""
    if isinstance(value, frozenset):
        return "frozenset({" + ", ".join(sorted(_literal(v) for v in value)) + "})" if value else "frozenset()"
    if isinstance(value, dict):
        return "{" + ", ".join(sorted(f"{_literal(k)}: {_literal(v)}" for k, v in value.items())) + "}"
    if isinstance(value, tuple):
        return "(" + "".join(_literal(v) + ", " for v in value).rstrip(" ") + ")" if len(value) != 1 else \
            f"({_literal(value[0])},)"
    return repr(value)


def checks_source(spec):
    """The module-level source of the argument checks for ``spec``'s kernel:
    imports, stand-ins, ``SPEC`` and the runtime's functions, and ``runtime``,
    a namespace under which the launcher calls them."""
    functions, constants = _closure()
    refusal = textwrap.dedent(inspect.getsource(promotion.refusal)).replace("def refusal(", "def _refusal(", 1)
    parts = ["import functools\nimport itertools\nimport os\nimport types", _STAND_INS.strip(), refusal,
             "promotion = types.SimpleNamespace(refusal=_refusal)", spec_source(spec)]
    parts += [f"{name} = {value!r}" for name, value in sorted(constants.items())]
    parts += [textwrap.dedent(inspect.getsource(f)).strip() for f in functions]
    parts.append("runtime = types.SimpleNamespace(" + ", ".join(f"{n}={n}" for n in _ENTRIES) + ")")
    return "\n\n\n".join(parts)
