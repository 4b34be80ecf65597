"""Deterministic names for the symbols of an arrangement, and the arranged
and source tensors rewritten with them as plain data (``Renamed``,
``Source``) for the outer-shape proof.

Auto-named sizes and strides take their tensor's parameter name, auto-named
block sizes the name they are bound to in the arrangement; a call-time tile
size gets a positive twin (the launcher checks it is at least 1) and, where
the launcher asks for it, a padded one.
"""

import ast
import builtins
import copy
import itertools
import keyword
import re

import sympy

from ntsym_codegen.analysis import assigned_names
from ntsym.application import _bound_names
from ntsym.symbol import Symbol


def canonical_names(arrangement, tensors, arranged, names):
    """A mapping from every symbol to a deterministic, readable one."""
    renames = {}
    for name, tensor in zip(names, tensors):
        if tensor._auto_named:
            for d, s in enumerate(tensor.source_shape):
                if isinstance(s, Symbol) and s.name == f"{tensor.name}_size_{d}":
                    renames[s] = _copy_symbol(s, f"{name}_size_{d}")
            for d, s in enumerate(tensor.source_strides):
                if isinstance(s, Symbol) and s.name == f"{tensor.name}_stride_{d}":
                    renames[s] = _copy_symbol(s, f"{name}_stride_{d}")
    # Auto-named block sizes take the name they are bound to in the arrangement
    # (a parameter default, a bound keyword, a closure variable or a global),
    # else BLOCK_SIZE_<k> in order of first appearance.
    bound = _bound_names(arrangement)
    taken = set(names) | {s.name for s in renames.values()}
    counter = itertools.count()
    for symbol in _symbols_in_order(arranged):
        if getattr(symbol, "auto_named", False) and symbol not in renames:
            name = bound.get(symbol)
            if name is None or name in taken:
                name = f"BLOCK_SIZE_{next(counter)}"
                while name in taken:
                    name = f"BLOCK_SIZE_{next(counter)}"
            taken.add(name)
            renames[symbol] = _copy_symbol(symbol, name)
    return renames


# Names the kernel binds itself, which an application's local must not take:
# the modules it imports, the program index and its parts, masks, the
# compile-time flags (with the names it derives from each tensor's:
# ``local_renames``).
KERNEL_FIXED = frozenset({"tl", "triton", "torch", "runtime", "cdiv", "next_power_of_2", "libdevice", "os", "math",
                          "debug_checks", "pid", "per_group", "group_rows", "range"})
KERNEL_PATTERN = re.compile(r"(pid|rest|first_pid|mask)_\d+$|(ntsym|NTSYM)_")
# Module-level names the torch launcher reads after it binds the parameters
# (its own locals are ``ntsym_``/``NTSYM_`` names): a parameter named so is
# refused (``ntsym.compiler``), a size symbol renamed.
LAUNCHER_NAMES = frozenset({"runtime", "cdiv", "next_power_of_2", "ntsym_options"})
# Names a caller's size symbol is renamed away from: the kernel's and the
# torch launcher's above, the standalone export's module-level names (a
# parameter named so is refused there, ``codegen/aot/standalone.py``), names
# the launchers used for their own values before they took ``ntsym_`` ones
# (kept, so that a kernel's generated names do not depend on that), and the
# patterns of the names the emitter derives from tensors (``x_ptr``, ``x_t0``,
# ``x_size_0``, ``mask_3``, ...).
RESERVED = KERNEL_FIXED | LAUNCHER_NAMES | frozenset({
    "launch", "make_launch", "SPEC", "CONFIGS", "fail", "stream",
    "args", "grid", "derived", "tensors", "meta", "key", "entry", "found", "unknown", "int64", "given", "config",
    "CHECKS", "DISPLAY", "CALLS", "QUICK", "FACTS",
}) | frozenset(keyword.kwlist) | frozenset(dir(builtins))
RESERVED_PATTERN = re.compile(r"(pid|rest|first_pid|mask)_\d+$|.*_(t\d+|base_\d+|ptrs_\d+|ptr|tile|desc|size_\d+|"
                              r"stride_\d+|seq_len|seq_start|jagged_offsets|value|data|fp32|fp64|i32|i64)$|"
                              r"(ntsym|NTSYM)_")


def application_names(app_def, inline):
    """Every name the application, and each function it inlines, uses."""
    used = set()
    for fn in [app_def, *(fn for fn, _ in inline.values())]:
        used |= {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)}
        used |= {a.arg for a in ast.walk(fn) if isinstance(a, ast.arg)}
    return used


def clear_names(tensors, names, used, renames, scopes=()):
    """Renames for the size and stride symbols a caller named (an
    ``ntsym.Symbol`` in a ``Tensor``'s shape) where the kernel or its
    launcher gives that name to something else: a name the application uses
    (``used``: ``Symbol("k")`` beside a loop ``for k in ...``, whose variable
    would take the size's place), a tensor's, or one of the generated
    code's.  The symbol keeps its meaning under a fresh name (``k_size``).
    Symbols the caller gives at call time (``constexpr``, ``meta``) keep
    theirs: they are passed by name; so does a symbol the application reads
    as itself (a global of one of ``scopes`` bound to it)."""
    taken = set(used) | set(names) | {s.name for s in renames.values()}
    out = {}
    for tensor in tensors:
        for s in list(tensor.source_shape) + list(tensor.source_strides):
            if (not isinstance(s, Symbol) or s in renames or s in out or s.meta or s.constexpr
                    or not _clashes(s.name, taken) or any(scope.get(s.name) is s for scope in scopes)):
                continue
            base = f"{s.name}_size"
            if _clashes(base, set()):  # a prefix the generated code keeps for itself (ntsym_...)
                base = f"size_{s.name}"
            new, k = base, itertools.count(1)
            while _clashes(new, taken):
                new = f"{base}{next(k)}"
            taken.add(new)
            out[s] = _copy_symbol(s, new)
    return out


def local_renames(app_def, params, tensor_names, symbol_names):
    """``{local: fresh name}`` for each name the application assigns (not a
    tensor parameter: assigning one stores to it) that the kernel also gives
    to something of its own: a parameter (``x_ptr``, ``x_size_0``, a size or
    block size), a module it imports, the program index.  Renaming a local
    throughout its function is what Python's scoping already means."""
    kernel = set(symbol_names) | {f"{t}_{suffix}" for t in tensor_names
                                  for suffix in ("ptr", "tile", "desc", "seq_len", "seq_start", "jagged_offsets")}
    derived = re.compile("|".join(rf"{re.escape(t)}_(t\d+|base_\d+|ptrs_\d+)$" for t in tensor_names) or "$^")
    assigned = assigned_names(app_def.body)
    used = application_names(app_def, {})
    out = {}
    for name in sorted(assigned - set(params)):
        if name in kernel or name in KERNEL_FIXED or KERNEL_PATTERN.match(name) or derived.match(name):
            base = f"local_{name}" if KERNEL_PATTERN.match(f"{name}_local") else f"{name}_local"
            new, k = base, itertools.count(1)
            while new in kernel or new in used or new in out.values():
                new = f"{base}{next(k)}"
            out[name] = new
    return out


def rename_locals(app_def, mapping):
    """A copy of ``app_def`` with the names of ``mapping`` renamed."""
    if not mapping:
        return app_def

    class Rename(ast.NodeTransformer):
        def visit_Name(self, node):
            if node.id in mapping:
                return ast.copy_location(ast.Name(id=mapping[node.id], ctx=node.ctx), node)
            return node

    return Rename().visit(copy.deepcopy(app_def))


def _clashes(name, taken):
    return name in taken or name in RESERVED or RESERVED_PATTERN.match(name) is not None


def kernel_symbols(arranged, tensors, renames):
    """The ntsym symbols of the arranged tensors and of ``tensors``' sizes
    and strides (the kernel's size and block-size parameters), in order of
    first appearance, each as ``renames`` names it."""
    symbols = _symbols_in_order(arranged)
    symbols += [s for t in tensors for e in (*t.source_shape, *t.source_strides)
                for s in sorted(sympy.sympify(e).free_symbols, key=lambda s: s.name) if isinstance(s, Symbol)]
    return list(dict.fromkeys(renames.get(s, s) for s in symbols))


def _symbols_in_order(arranged):
    """The ntsym symbols of the arranged tensors, in order of first appearance."""
    seen = {}
    for t in arranged:
        hier = t.hierarchy
        exprs = [s for level in hier.levels for s in level.shape] + list(hier.index) + list(hier.conditions)
        for e in exprs:
            for s in sorted(sympy.sympify(e).free_symbols, key=lambda s: s.name):
                if isinstance(s, Symbol):
                    seen.setdefault(s, None)
    return list(seen)


def _copy_symbol(symbol, name, positive=False):
    new = Symbol(
        name,
        constexpr=symbol.constexpr,
        meta=symbol.meta,
        lower_bound=symbol.lower_bound,
        upper_bound=symbol.upper_bound,
        power_of_two=symbol.power_of_two,
        nonnegative=not positive and symbol.is_positive is not True,
    )
    new.is_size = getattr(symbol, "is_size", False)
    new.padded = getattr(symbol, "padded", False)
    new.jagged = getattr(symbol, "jagged", False)
    return new


def padded_twins(arranged, renames, names):
    """A twin, marked padded, of each call-time symbol named in ``names``."""
    twins = {}
    if not names:
        return twins
    for symbol in _symbols_in_order(arranged):
        current = renames.get(symbol, symbol)
        if current.name in names and not current.meta:
            twin = _copy_symbol(current, current.name, positive=current.is_positive is True)
            twin.padded = True
            twins[symbol] = twin
    return twins


def positive_twins(arranged):
    """A positive copy of every non-negative compile-time symbol that a
    meta-operation required to be at least 1 (a tile size, stride or
    dilation given at call time): proofs then know it is positive, as they
    know of block sizes, and the launcher checks the value it gets."""
    twins = {}
    for t in arranged:
        for req in t.hierarchy.requirements:
            lhs = req.lhs if isinstance(req, sympy.GreaterThan) and req.rhs == 1 else None
            if isinstance(lhs, Symbol) and lhs.constexpr and lhs.is_positive is not True and lhs not in twins:
                twin = _copy_symbol(lhs, lhs.name, positive=True)
                twin.positive_reason = "the arrangement uses it as a tile size, stride or dilation"
                twins[lhs] = twin
    return twins


class Renamed:
    """An arranged tensor after renaming, as plain data."""

    def __init__(self, name, levels, index, conditions, requirements, padding=()):
        self.name = name
        self.padding = padding
        self.levels = levels  # list of (shape tuple, vars tuple)
        self.index = index
        self.conditions = conditions
        self.requirements = requirements
        self.live = None  # per outermost dimension: its live count, or None


def rename_hierarchy(tensor, renames):
    """An arranged tensor's hierarchy with its symbols renamed and its index
    variables replaced by fresh ones per level (``l<depth>_<j>``)."""
    hier = tensor.hierarchy
    mapping = dict(renames)
    levels = []
    for depth, level in enumerate(hier.levels):
        vars = []
        for j, v in enumerate(level.vars):
            mapping[v] = sympy.Dummy(f"l{depth}_{j}", integer=True, nonnegative=True)
            vars.append(mapping[v])
        levels.append((tuple(sympy.sympify(s).xreplace(mapping) for s in level.shape), tuple(vars)))
    renamed = Renamed(
        None,
        levels,
        tuple(sympy.sympify(e).xreplace(mapping) for e in hier.index),
        tuple(c.xreplace(mapping) for c in hier.conditions),
        tuple(r.xreplace(mapping) for r in hier.requirements),
        tuple(c.xreplace(mapping) for c in hier.padding),
    )
    # Live counts of the outermost dimensions (windows past the end masked).
    renamed.live = tuple(
        None if v not in hier.live else sympy.sympify(hier.live[v]).xreplace(mapping)
        for v in hier.levels[0].vars
    )
    return renamed


class Source:
    """A source tensor and its shape and strides after renaming."""

    def __init__(self, tensor, shape, strides):
        self.tensor = tensor
        self.shape = shape
        self.strides = strides


def rename_source(tensor, renames):
    """The ``Source`` of a tensor, its sizes and strides renamed."""
    return Source(
        tensor,
        tuple(sympy.sympify(s).xreplace(renames) for s in tensor.source_shape),
        tuple(sympy.sympify(s).xreplace(renames) for s in tensor.source_strides),
    )

