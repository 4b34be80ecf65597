"""Ahead-of-time kernels: the C launcher of a made kernel, its variants
compiled to cubins, and the shared library around them.

The launcher in C does what the Python launcher (``emit._launcher`` and
``runtime``) does, from the same facts: it reads sizes and strides from the
tensor structs, runs the shape checks and the launch checks (same messages),
chooses 64-bit index math where an offset can reach 2**31, and computes the
compile-time flags (peeled loops, contiguous layouts) and the grid.  What the
Python launcher gives Triton at run time as compile-time values, the C launcher
can only choose among cubins compiled beforehand: every combination of those
flags is compiled (``plan``), plus a specialised variant for 16-byte aligned
data, sizes and strides that are multiples of 16 and unit last strides.

Nothing here imports ``ntsym``; ``triton`` is imported where a variant is
compiled, in worker processes (``compile_variants``).
"""

import concurrent.futures
import hashlib
import itertools
import json
import multiprocessing
import os
import pathlib
import shutil
import subprocess
from dataclasses import dataclass, field

import sympy

from codegen.errors import CodegenError
from codegen.intfuncs import CeilDiv, FloorDiv, Mod

# The element types a tensor struct names, by code (NineToothed's order, bool last).
DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "bfloat16", "float32", "float64", "bool")
TRITON_TYPES = {"int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8", "uint16": "u16",
                "uint32": "u32", "uint64": "u64", "float16": "fp16", "bfloat16": "bf16", "float32": "fp32",
                "float64": "fp64", "bool": "i1"}
ELEMENT_SIZES = {"int8": 1, "int16": 2, "int32": 4, "int64": 8, "uint8": 1, "uint16": 2, "uint32": 4,
                 "uint64": 8, "float16": 2, "bfloat16": 2, "float32": 4, "float64": 8, "bool": 1}

# Status codes of the C API (docs/aot.md).
STATUS = {"NTSYM_SUCCESS": 0, "NTSYM_ERROR_ARGUMENT": 1, "NTSYM_ERROR_SHAPE": 2, "NTSYM_ERROR_NO_VARIANT": 3,
          "NTSYM_ERROR_CUDA": 4, "NTSYM_ERROR_CONFIG": 5}

INT32_MAX = 2**31 - 1


class AotError(CodegenError):
    """A kernel that cannot be built ahead of time as asked."""


def dtype_name(dtype):
    """``torch.float16``, ``ntsym.float16`` or ``"float16"`` as ``"float16"``."""
    text = str(getattr(dtype, "name", None) or dtype).replace("torch.", "")
    triton_names = {v: k for k, v in TRITON_TYPES.items()} | {"int1": "bool"}
    return {"half": "float16", "float": "float32", "double": "float64"}.get(text, triton_names.get(text, text))


# --- SymPy to C ---------------------------------------------------------------


def c_expr(expr):
    """A SymPy integer expression (sizes, strides, block sizes) as C over
    ``int64_t`` locals of the same names."""
    expr = sympy.sympify(expr)
    if expr is sympy.true:
        return "1"
    if expr is sympy.false:
        return "0"
    if isinstance(expr, sympy.Symbol):
        return expr.name
    if isinstance(expr, sympy.Integer):
        return f"INT64_C({int(expr)})"
    if isinstance(expr, sympy.Add):
        return "(" + " + ".join(c_expr(a) for a in expr.args) + ")"
    if isinstance(expr, sympy.Mul):
        return "(" + " * ".join(c_expr(a) for a in expr.args) + ")"
    if isinstance(expr, sympy.Pow) and expr.exp.is_Integer and int(expr.exp) > 0:
        return "(" + " * ".join([c_expr(expr.base)] * int(expr.exp)) + ")"
    functions = {FloorDiv: "ntsym_floordiv", CeilDiv: "ntsym_cdiv", Mod: "ntsym_mod",
                 sympy.Max: "ntsym_max", sympy.Min: "ntsym_min"}
    for cls, name in functions.items():
        if isinstance(expr, cls):
            args = [c_expr(a) for a in expr.args]
            while len(args) > 2:  # Max/Min of several
                args = [f"{name}({args[0]}, {args[1]})"] + args[2:]
            return f"{name}({', '.join(args)})"
    relations = {sympy.Eq: "==", sympy.Ne: "!=", sympy.Ge: ">=", sympy.Gt: ">", sympy.Le: "<=", sympy.Lt: "<"}
    for cls, op in relations.items():
        if isinstance(expr, cls):
            return f"({c_expr(expr.lhs)} {op} {c_expr(expr.rhs)})"
    if isinstance(expr, sympy.And):
        return "(" + " && ".join(c_expr(a) for a in expr.args) + ")"
    if isinstance(expr, sympy.Or):
        return "(" + " || ".join(c_expr(a) for a in expr.args) + ")"
    if isinstance(expr, sympy.Not):
        return f"(!{c_expr(expr.args[0])})"
    raise AotError(f"the launch expression {expr} ({type(expr).__name__}) has no C form")


def c_string(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


# --- What to compile ------------------------------------------------------------


@dataclass(frozen=True)
class Param:
    """A parameter of the C launcher: a tensor struct (``tensor``, or ``shape``
    for a tensor whose sizes only are read), a number (``scalar``), or a
    compile-time value chosen among compiled ones (``choice``)."""

    name: str
    kind: str
    ndim: int = 0
    dtype: str = None
    written: bool = False
    ctype: str = None  # scalars and choices: the C type the launcher takes


@dataclass(frozen=True)
class Axis:
    """A fact the launcher computes per call and the kernel takes as a
    compile-time value: every value in ``values`` has its cubins."""

    name: str  # the kernel parameter (or "aligned")
    values: tuple
    c: str  # C expression computing it from the call
    kind: str = "flag"  # "flag", "int64", "aligned", "choice"


@dataclass
class Variant:
    assignment: dict  # axis name -> value
    signature: dict  # kernel parameter -> Triton type or "constexpr"
    constexprs: dict
    attrs: dict
    launch_args: list  # (C local, C type) passed to cuLaunchKernel, in order
    cubin: bytes = b""
    function: str = ""
    shared: int = 0
    num_warps: int = 4
    scratch_args: int = 2


@dataclass
class Plan:
    """Everything the C launcher of one made kernel is generated from."""

    name: str  # C identifier of this launcher
    kernel_name: str  # the @triton.jit function
    module: str  # the standalone module's source (the kernel)
    params: list  # Param, in the call's order
    prologue: list  # C statements reading sizes and running checks
    axes: list  # Axis
    variants: list  # Variant
    grid: str  # C expression
    meta: dict  # block sizes and other compile-time values fixed for this build
    num_warps: int
    num_stages: int
    checks_text: list = field(default_factory=list)


def plan(ir, generated, spec, display, meta, *, specialize=None, num_warps=4, num_stages=3, advance=False,
         name=None, module_source=""):
    """The variants of a made kernel and the launcher's C statements.

    ``meta``: a value for every block size (tuned ahead of time or given);
    ``specialize``: display name (``input.shape[1]``, ``is_causal``) -> the
    values to compile for each compile-time size or value the call gives."""
    specialize = dict(specialize or {})
    records = generated.records
    meta = {k: int(v) if not isinstance(v, bool) else v for k, v in meta.items()}
    meta_subs = {ir.symbols[k] if k in ir.symbols else sympy.Symbol(k): v for k, v in meta.items()}
    for m in ir.meta_params:
        meta_subs.setdefault(m.symbol, meta.get(m.symbol.name))
    missing = [m.symbol.name for m in ir.meta_params if meta.get(m.symbol.name) is None]
    if missing:
        raise AotError(f"kernel `{ir.name}`: the compile-time value(s) {', '.join(missing)} have no value; an "
                       "ahead-of-time kernel fixes its block sizes (pass them to the arrangement)")
    params, prologue, checks_text = [], [], []
    shown = dict(display)

    def fail(status, fmt, *args):
        argtext = "".join(f", (long long)({a})" for a in args)
        return f"return ntsym_fail({status}, {c_string(fmt)}{argtext});"

    shaped = [p for p in ir.params if p.kind in ("tensor", "shape")]
    # Compile-time values the call gives: sizes declared constexpr, and
    # constexpr parameters without a value.
    choices = {}  # symbol or parameter name -> display
    for a in ir.size_args:
        if a.constexpr:
            choices[a.symbol.name] = display.get(a.symbol.name, a.symbol.name)
    for p in ir.params:
        if p.kind == "constexpr" and p.value is None and p.name not in meta:
            choices[p.name] = p.name
    for p in ir.params:
        if p.kind == "constexpr" and p.value is not None:
            continue
        if p.kind in ("tensor", "shape"):
            dtype = dtype_name(p.dtype) if p.dtype is not None else None
            if p.kind == "tensor" and dtype not in DTYPES:
                raise AotError(f"kernel `{ir.name}`: tensor `{p.name}` has no dtype; an ahead-of-time kernel is "
                               f"compiled for its tensors' element types: declare it, Tensor({p.ndim}, dtype=...)")
            params.append(Param(p.name, p.kind, p.ndim, dtype, p.name in spec.written))
        elif p.kind == "scalar":
            dtype = dtype_name(p.dtype) if p.dtype is not None else "float32"
            ctype = "double" if dtype.startswith("float") else "int64_t"
            params.append(Param(p.name, "scalar", 0, dtype, ctype=ctype))
        else:  # a compile-time value the call gives
            params.append(Param(p.name, "choice", 0, None, ctype="int64_t"))

    # Argument checks: null pointers, ndim, dtype (nothing is read before them).
    for p in params:
        if p.kind not in ("tensor", "shape"):
            continue
        t = f"{p.name}"
        prologue.append(f"if ({p.ndim} > 0 && ({t}.shape == NULL || {t}.strides == NULL)) "
                        + fail("NTSYM_ERROR_ARGUMENT", f"`{p.name}` has a null shape or strides pointer"))
        prologue.append(f"if ({t}.ndim != {p.ndim}) "
                        + fail("NTSYM_ERROR_ARGUMENT", f"`{p.name}` must have {p.ndim} dimensions, got %lld",
                               f"{t}.ndim"))
        if p.kind == "tensor":
            prologue.append(f"if ({t}.dtype < 0 || {t}.dtype >= {len(DTYPES)}) "
                            + fail("NTSYM_ERROR_ARGUMENT", f"`{p.name}` has an unknown dtype code %lld "
                                   f"(ntsym_dtype: 0 to {len(DTYPES) - 1})", f"{t}.dtype"))
            code = DTYPES.index(p.dtype)
            message = c_string(f"`{p.name}` has dtype %s; this kernel was compiled for {p.dtype}")
            prologue.append(f"if ({t}.dtype != {code}) return ntsym_fail_s(NTSYM_ERROR_ARGUMENT, {message}, "
                            f"ntsym_dtype_name({t}.dtype));")
    # Sizes and strides, as the Python launcher unpacks them.
    sym_names = set()
    for p in shaped:
        for d, s in enumerate(p.source_sizes):
            if isinstance(s, sympy.Symbol):
                prologue.append(f"int64_t {s.name} = {p.name}.shape[{d}];")
                sym_names.add(s.name)
        if p.kind == "tensor":
            for d, s in enumerate(p.strides):
                if isinstance(s, sympy.Symbol) and s.name not in sym_names:
                    prologue.append(f"int64_t {s.name} = {p.name}.strides[{d}];")
                    sym_names.add(s.name)
    for p in params:
        if p.kind in ("tensor", "shape"):
            prologue.append(f"for (int d = 0; d < {p.ndim}; ++d) if ({p.name}.shape[d] < 0) "
                            + fail("NTSYM_ERROR_ARGUMENT", f"`{p.name}`.shape[%lld] is negative", "d"))
        if p.kind == "tensor":
            prologue.append(f"if ({p.name}.data == NULL && ntsym_numel(&{p.name}) > 0) "
                            + fail("NTSYM_ERROR_ARGUMENT", f"`{p.name}` is a null pointer"))
    for p in shaped:  # sizes declared with bounds or as powers of two
        for d, s in enumerate(p.source_sizes):
            lo, hi = getattr(s, "lower_bound", None), getattr(s, "upper_bound", None)
            where = f"{p.name}.shape[{d}] (=%lld)"
            if not isinstance(s, sympy.Symbol):
                continue
            if lo is not None:
                prologue.append(f"if ({s.name} < {int(lo)}) " + fail(
                    "NTSYM_ERROR_SHAPE", f"{where} must be at least {lo}: its shape_options say so", s.name))
            if hi is not None:
                prologue.append(f"if ({s.name} > {int(hi)}) " + fail(
                    "NTSYM_ERROR_SHAPE", f"{where} must be at most {hi}: its shape_options say so", s.name))
            if getattr(s, "power_of_two", False):
                prologue.append(f"if ({s.name} <= 0 || ({s.name} & ({s.name} - 1))) " + fail(
                    "NTSYM_ERROR_SHAPE", f"{where} must be a power of two: its shape_options say so", s.name))
    for p in shaped:
        for d, s in enumerate(p.source_sizes):
            if not isinstance(s, sympy.Symbol):
                prologue.append(f"if ({p.name}.shape[{d}] != {c_expr(s)}) " + fail(
                    "NTSYM_ERROR_SHAPE", f"{p.name}.shape[{d}] (=%lld) must equal %lld: the arrangement fixes it",
                    f"{p.name}.shape[{d}]", c_expr(s)))
    for p in params:  # outputs: no expanded (stride 0) dimension
        if p.kind == "tensor" and p.written:
            prologue.append(f"for (int d = 0; d < {p.ndim}; ++d) if ({p.name}.strides[d] == 0 && "
                            f"{p.name}.shape[d] > 1) " + fail(
                                "NTSYM_ERROR_ARGUMENT", f"`{p.name}` is written by the kernel but dimension %lld "
                                "has stride 0 (an expanded view): several programs would write one element; "
                                "pass a contiguous tensor", "d"))
    # Call-time compile-time sizes given a value for this build: the call must have it.
    for m in ir.meta_params:
        if not m.meta and m.symbol.name in sym_names:
            shown_as = display.get(m.symbol.name, m.symbol.name)
            prologue.append(f"if ({m.symbol.name} != {meta[m.symbol.name]}) " + fail(
                "NTSYM_ERROR_NO_VARIANT", f"{shown_as} (=%lld) has no compiled variant; the library was built for "
                f"{meta[m.symbol.name]}", m.symbol.name))
    # Launch checks, with the block sizes of this build.
    checks = tuple(generated.checks)
    for check in checks:
        rel = check.relation.xreplace({k: v for k, v in meta_subs.items() if v is not None})
        if rel is sympy.true:
            continue
        if rel is sympy.false:
            raise AotError(f"kernel `{ir.name}`: the launch check {check.relation} fails for every call with "
                           f"{', '.join(f'{k}={v}' for k, v in meta.items())}")
        text, args = _check_message(rel, check, shown)
        prologue.append(f"if (!{c_expr(rel)}) " + fail("NTSYM_ERROR_SHAPE", text, *args))
        checks_text.append(text)
    # Write aliasing: outputs that overlap another argument, unless the
    # arrangement proved in-place use safe and the views are identical.
    tensor_params = [p for p in params if p.kind == "tensor"]
    for a, b in itertools.combinations(tensor_params, 2):
        if not (a.written or b.written):
            continue
        safe = spec.aliasing.get((a.name, b.name), spec.aliasing.get((b.name, a.name), False)) is True
        why = "the views are not identical" if safe else "in-place use is not proved safe"
        w = a.name if a.written else b.name
        prologue.append(f"if (ntsym_overlap(&{a.name}, &{b.name}) && !({'1' if safe else '0'} && "
                        f"ntsym_identical(&{a.name}, &{b.name}))) " + fail(
                            "NTSYM_ERROR_ARGUMENT", f"`{a.name}` and `{b.name}` share memory and the kernel "
                            f"writes `{w}`: programs would read elements that other programs write ({why}); "
                            "pass a separate output"))

    # The facts that choose a variant.
    int64_terms = " || ".join(f"ntsym_needs_int64(&{p.name})" for p in tensor_params) or "0"
    axes = [Axis("NTSYM_INT64", (0, 1), f"({int64_terms})", "int64")]
    size_args = [a for a in ir.size_args if not a.constexpr]
    aligned = [f"((uintptr_t){p.name}.data % 16 == 0)" for p in tensor_params]
    for a in size_args:
        ndim = next(p.ndim for p in ir.params if p.name == a.param)
        if a.kind == "stride" and a.dim == ndim - 1:
            aligned.append(f"({a.symbol.name} == 1)")
        else:
            aligned.append(f"({a.symbol.name} % 16 == 0)")
    axes.append(Axis("aligned", (0, 1), "(" + " && ".join(aligned or ["1"]) + ")", "aligned"))
    whole = dict(records.whole)
    for flag, (size, block) in whole.items():
        size, block = (sympy.sympify(x).xreplace(meta_subs) for x in (size, block))
        axes.append(Axis(flag, (0, 1), f"({c_expr(size)} % {c_expr(block)} == 0)"))
    contig = {flag: tensor for tensor, flag in records.contiguity_flags.items()}
    for flag, tensor in sorted(contig.items()):
        axes.append(Axis(flag, (0, 1), f"(ntsym_contiguous(&{tensor}) && !NTSYM_INT64_value)"))
    by_display = {v: k for k, v in choices.items()}
    dims = {f"{p.name}.shape[{d}]" for p in shaped for d in range(p.ndim)}
    for key, values in specialize.items():
        if key in dims and key not in by_display:
            continue  # a size the call gives at run time: nothing to specialize
        if key not in by_display:
            raise AotError(f"kernel `{ir.name}`: specialize names {key!r}, which is not a compile-time value the "
                           f"call gives (those are: {', '.join(choices.values()) or 'none'})")
    for sym, shown_as in choices.items():
        if shown_as not in specialize:
            raise AotError(f"kernel `{ir.name}`: {shown_as} is a compile-time value the call gives; an "
                           f"ahead-of-time kernel needs the values to compile: specialize={{{shown_as!r}: (...)}}")
        values = tuple(int(v) for v in specialize[shown_as])
        axes.append(Axis(sym, values, f"(int64_t){sym}", "choice"))

    variants = []
    names = [ax.name for ax in axes]
    for combo in itertools.product(*(ax.values for ax in axes)):
        assignment = dict(zip(names, combo))
        if assignment["aligned"] and assignment["NTSYM_INT64"]:
            continue  # 64-bit offsets: the general variant only
        if assignment["NTSYM_INT64"] and any(assignment[f] for f in contig):
            continue  # contiguous addresses multiply sizes: 32-bit only
        known = dict(meta_subs)
        for sym in choices:
            known[ir.symbols.get(sym, sympy.Symbol(sym))] = assignment[sym]
        skip = False
        for flag, (size, block) in whole.items():
            value = _by_name(sympy.sympify(size) % sympy.sympify(block), known)
            if value.is_number and bool(value == 0) != bool(assignment[flag]):
                skip = True
        if skip:
            continue
        variants.append(_variant(ir, generated, assignment, meta, known, choices, advance))
    grid = " * ".join(c_expr(sympy.sympify(g).xreplace(meta_subs)) for g in ir.grid) or "1"
    return Plan(name or ir.name, generated.kernel_name, module_source, params, prologue, axes, variants, grid,
                meta, num_warps, num_stages, checks_text)


def _by_name(expr, known):
    """``expr`` with the symbols of ``known`` (matched by name) replaced."""
    names = {getattr(k, "name", str(k)): v for k, v in known.items() if v is not None}
    expr = sympy.sympify(expr)
    return sympy.sympify(expr.xreplace({s: sympy.sympify(names[s.name]) for s in expr.free_symbols
                                        if s.name in names}))


def _check_message(rel, check, display):
    """The format and values of a failed launch check, as ``runtime.fail_check``
    words it: ``other.shape[0] (=41) must equal input.shape[1] (=40): why``."""
    values = []

    def side(expr):
        text = str(expr)
        for s in sorted(expr.free_symbols, key=lambda s: -len(s.name)):
            text = text.replace(s.name, display.get(s.name, s.name))
        text = text.replace("%", "%%")
        if not expr.free_symbols:
            return text
        values.append(c_expr(expr))
        if expr.is_Symbol:
            return f"{text} (=%lld)"
        given = []
        for s in sorted(expr.free_symbols, key=lambda s: s.name):
            given.append(f"{display.get(s.name, s.name)}=%lld")
            values.append(s.name)
        return f"{text} (=%lld, {', '.join(given)})"

    words = {"Equality": "must equal", "GreaterThan": "must be >=", "StrictGreaterThan": "must be >",
             "LessThan": "must be <=", "StrictLessThan": "must be <", "Unequality": "must differ from"}
    kind = type(rel).__name__
    if kind in words:
        text = f"{side(rel.lhs)} {words[kind]} {side(rel.rhs)}"
    else:
        text = f"{str(rel).replace('%', '%%')} must hold"
    reason = (check.reason or check.message).replace("%", "%%")
    why = getattr(check, "why", "").replace("%", "%%")
    return f"{text}: {reason}" + (f"; {why}" if why else ""), values


def _variant(ir, generated, assignment, meta, known, choices, advance):
    """The Triton signature, constants and hints of one variant, and the
    arguments its launch passes."""
    records = generated.records
    int64 = bool(assignment["NTSYM_INT64"])
    aligned = bool(assignment["aligned"])
    int_type = "i64" if int64 else "i32"
    by_name = {p.name: p for p in ir.params}
    size_args = {a.symbol.name: a for a in ir.size_args}
    pow2 = {s.name: n for n, s in records.pow2.items()}
    signature, constexprs, attrs, launch = {}, {}, {}, []
    for i, (arg, is_constexpr) in enumerate(generated.kernel_args):
        if arg.endswith("_ptr") and arg[:-4] in by_name and by_name[arg[:-4]].kind == "tensor":
            p = by_name[arg[:-4]]
            signature[arg] = "*" + TRITON_TYPES[dtype_name(p.dtype)]
            if aligned:
                attrs[(i,)] = [["tt.divisibility", 16]]
            launch.append((f"{p.name}_data", "CUdeviceptr"))
        elif arg in by_name and by_name[arg].kind == "scalar":
            p = by_name[arg]
            dtype = dtype_name(p.dtype) if p.dtype is not None else "float32"
            if dtype not in ("float32", "float64", "int32", "int64"):
                raise AotError(f"kernel `{ir.name}`: scalar `{arg}` of dtype {dtype}: an ahead-of-time kernel takes "
                               "float32, float64, int32 or int64 scalars")
            signature[arg] = TRITON_TYPES[dtype]
            launch.append((f"{arg}_{TRITON_TYPES[dtype]}", {"fp32": "float", "fp64": "double", "i32": "int32_t",
                                                             "i64": "int64_t"}[TRITON_TYPES[dtype]]))
        elif arg in by_name and by_name[arg].kind == "constexpr":
            p = by_name[arg]
            value = p.value if p.value is not None else assignment.get(arg, meta.get(arg))
            if p.value is None and arg in assignment and isinstance(value, int):
                value = bool(value) if (p.dtype is None or "bool" in str(p.dtype)) and value in (0, 1) else value
            signature[arg], constexprs[arg] = "constexpr", value
        elif arg in size_args:
            a = size_args[arg]
            if a.constexpr:
                signature[arg], constexprs[arg] = "constexpr", int(assignment[arg])
                continue
            ndim = by_name[a.param].ndim
            if aligned and a.kind == "stride" and a.dim == ndim - 1:
                signature[arg], constexprs[arg] = "constexpr", 1
                continue
            signature[arg] = int_type
            if aligned:
                attrs[(i,)] = [["tt.divisibility", 16]]
            launch.append((f"{arg}_{int_type}", "int32_t" if int_type == "i32" else "int64_t"))
        elif arg in pow2:
            value = _by_name(pow2[arg], known)
            if not value.is_number:
                raise AotError(f"kernel `{ir.name}`: the padded block {arg} = next_power_of_2({pow2[arg]}) depends "
                               "on sizes the call gives; declare them compile-time (shape_options={'constexpr': "
                               "True}) and specialize their values")
            n = int(value)
            signature[arg], constexprs[arg] = "constexpr", 1 if n <= 1 else 1 << (n - 1).bit_length()
        elif arg == records.int64_flag:
            signature[arg], constexprs[arg] = "constexpr", int64
        elif arg == records.advance_flag:
            signature[arg], constexprs[arg] = "constexpr", bool(advance)
        elif arg in assignment:  # peeled loops' and contiguity flags
            signature[arg], constexprs[arg] = "constexpr", bool(assignment[arg])
        elif arg in meta:
            signature[arg], constexprs[arg] = "constexpr", meta[arg]
        else:
            raise AotError(f"kernel `{ir.name}`: no value for the kernel parameter {arg}")
    return Variant(dict(assignment), signature, constexprs, attrs, launch)


# --- Compiling variants ---------------------------------------------------------


def _compile_one(module_path, kernel_name, signature, constexprs, attrs, target, num_warps, num_stages):
    """Compile one variant to a cubin (in a worker process, Triton's JIT, not
    its interpreter)."""
    os.environ["TRITON_INTERPRET"] = "0"
    import importlib.util

    import triton
    from triton.backends.compiler import GPUTarget

    name = "ntsym_aot_" + hashlib.sha1(str(module_path).encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(name, module_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fn = getattr(module, kernel_name)
    src = triton.compiler.ASTSource(fn=fn, signature=dict(signature), constexprs=dict(constexprs),
                                    attrs={tuple(k): v for k, v in attrs})
    target = GPUTarget(*target)
    backend = triton.compiler.make_backend(target)
    options = backend.parse_options({"num_warps": num_warps, "num_stages": num_stages})
    compiled = triton.compile(src, target=target, options=options.__dict__)
    md = compiled.metadata
    if getattr(md, "global_scratch_size", 0):
        raise AotError(f"kernel `{kernel_name}` needs global scratch memory, which the C launcher does not allocate")
    scratch = 1 + (1 if hasattr(md, "profile_scratch_size") else 0)
    return compiled.asm["cubin"], md.name, md.shared, md.num_warps, scratch


def _worker_init():
    os.environ["TRITON_INTERPRET"] = "0"


def compile_variants(plans, module_paths, target, *, workers=None):
    """Compile every variant of every plan, in parallel worker processes."""
    jobs = []
    for plan_, path in zip(plans, module_paths):
        for v in plan_.variants:
            jobs.append((v, (str(path), plan_.kernel_name, v.signature, v.constexprs,
                             [(list(k), a) for k, a in v.attrs.items()], tuple(target),
                             plan_.num_warps, plan_.num_stages)))
    workers = workers or min(len(jobs), os.cpu_count() or 1) or 1
    if workers <= 1:
        results = [_in_subprocess(args) for _, args in jobs] if os.environ.get("TRITON_INTERPRET") == "1" else \
            [_compile_one(*args) for _, args in jobs]
    else:
        context = multiprocessing.get_context("spawn")
        with concurrent.futures.ProcessPoolExecutor(workers, mp_context=context, initializer=_worker_init) as pool:
            results = list(pool.map(_compile_one, *zip(*(args for _, args in jobs))))
    for (v, _), (cubin, function, shared, warps, scratch) in zip(jobs, results):
        v.cubin, v.function, v.shared, v.num_warps, v.scratch_args = cubin, function, shared, warps, scratch


def _in_subprocess(args):
    """One compile in a fresh process (this one runs Triton's interpreter)."""
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=context, initializer=_worker_init) as pool:
        return pool.submit(_compile_one, *args).result()


# --- C sources ------------------------------------------------------------------


def header(prefix, entry_params, *, doc=""):
    """``<prefix>.h``: the tensor struct, status codes and the entry points."""
    guard = f"NTSYM_{prefix.upper()}_H"
    dtype_enum = ",\n    ".join(f"NTSYM_{d.upper()} = {i}" for i, d in enumerate(DTYPES))
    status_enum = ",\n    ".join(f"{k} = {v}" for k, v in STATUS.items())
    return f"""/* {prefix}.h: ntsym kernel `{prefix}`, built ahead of time (generated; do not edit).
{doc}*/
#ifndef {guard}
#define {guard}

#include <stdint.h>

#ifndef NTSYM_TYPES_DEFINED
#define NTSYM_TYPES_DEFINED
/* Element types, as ntsym_tensor.dtype. */
enum ntsym_dtype {{
    {dtype_enum}
}};

/* Status of a launch; on anything but NTSYM_SUCCESS nothing was launched and
   <kernel>_message() says why. */
enum ntsym_status {{
    {status_enum}
}};

/* A tensor: device address of element 0, ndim sizes and strides (in
   elements, as torch gives them), the element type. */
typedef struct {{
    void *data;
    const int64_t *shape;
    const int64_t *strides;
    int32_t ndim;
    int32_t dtype;
}} ntsym_tensor;

/* A CUDA stream (CUstream), NULL for the default stream. */
typedef void *ntsym_stream;
#endif

#ifdef __cplusplus
extern "C" {{
#endif

int {prefix}_launch({entry_params});

/* Why the last launch of this thread failed ("" after a success). */
const char *{prefix}_message(void);

#ifdef __cplusplus
}}
#endif

#endif /* {guard} */
"""


_RUNTIME_C = r"""
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <cuda.h>

static __thread char ntsym_message_text[2048];

static int ntsym_fail(int status, const char *format, ...) {
    va_list args;
    va_start(args, format);
    vsnprintf(ntsym_message_text, sizeof ntsym_message_text, format, args);
    va_end(args);
    return status;
}

static const char *ntsym_dtype_names[] = {{DTYPE_NAMES}};

static const char *ntsym_dtype_name(int32_t code) {
    return code >= 0 && code < (int32_t)(sizeof ntsym_dtype_names / sizeof *ntsym_dtype_names)
        ? ntsym_dtype_names[code] : "unknown";
}

static int ntsym_fail_s(int status, const char *format, const char *text) {
    return ntsym_fail(status, format, text);
}

static int64_t ntsym_floordiv(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static int64_t ntsym_cdiv(int64_t a, int64_t b) { return -ntsym_floordiv(-a, b); }
static int64_t ntsym_mod(int64_t a, int64_t b) { return a - ntsym_floordiv(a, b) * b; }
static int64_t ntsym_max(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t ntsym_min(int64_t a, int64_t b) { return a < b ? a : b; }

static int64_t ntsym_numel(const ntsym_tensor *t) {
    int64_t n = 1;
    for (int d = 0; d < t->ndim; ++d) n *= t->shape[d];
    return n;
}

/* Whether some element offset can reach 2**31 (runtime.needs_int64). */
static int ntsym_needs_int64(const ntsym_tensor *t) {
    int64_t extent = 0;
    for (int d = 0; d < t->ndim; ++d) {
        int64_t n = t->shape[d], st = t->strides[d];
        if (n > 0) extent += (n - 1) * (st >= 0 ? st : -st);
        if (n >= INT32_MAX) return 1;
    }
    return extent >= INT32_MAX;
}

/* torch's is_contiguous(): row-major strides over dimensions of size > 1. */
static int ntsym_contiguous(const ntsym_tensor *t) {
    int64_t expected = 1;
    for (int d = t->ndim - 1; d >= 0; --d) {
        if (t->shape[d] == 0) return 1;
        if (t->shape[d] != 1 && t->strides[d] != expected) return 0;
        expected *= t->shape[d];
    }
    return 1;
}

static void ntsym_extent(const ntsym_tensor *t, int64_t *start, int64_t *end) {
    int64_t span = 1, size = ntsym_element_size(t->dtype);
    *start = (int64_t)(uintptr_t)t->data;
    for (int d = 0; d < t->ndim; ++d) {
        if (t->shape[d] == 0) { *end = *start; return; }
        span += (t->shape[d] - 1) * (t->strides[d] >= 0 ? t->strides[d] : -t->strides[d]);
    }
    *end = *start + span * size;
}

static int ntsym_overlap(const ntsym_tensor *a, const ntsym_tensor *b) {
    int64_t a0, a1, b0, b1;
    ntsym_extent(a, &a0, &a1);
    ntsym_extent(b, &b0, &b1);
    return a0 < b1 && b0 < a1;
}

static int ntsym_identical(const ntsym_tensor *a, const ntsym_tensor *b) {
    if (a->data != b->data || a->ndim != b->ndim) return 0;
    for (int d = 0; d < a->ndim; ++d)
        if (a->shape[d] != b->shape[d] || a->strides[d] != b->strides[d]) return 0;
    return 1;
}

/* The driver, loaded at the first launch: the library links no CUDA library. */
typedef CUresult (*ntsym_cuCtxGetCurrent_t)(CUcontext *);
typedef CUresult (*ntsym_cuCtxGetDevice_t)(CUdevice *);
typedef CUresult (*ntsym_cuModuleLoadData_t)(CUmodule *, const void *);
typedef CUresult (*ntsym_cuModuleGetFunction_t)(CUfunction *, CUmodule, const char *);
typedef CUresult (*ntsym_cuFuncSetAttribute_t)(CUfunction, CUfunction_attribute, int);
typedef CUresult (*ntsym_cuDeviceGetAttribute_t)(int *, CUdevice_attribute, CUdevice);
typedef CUresult (*ntsym_cuLaunchKernel_t)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                           unsigned, unsigned, CUstream, void **, void **);
typedef CUresult (*ntsym_cuGetErrorString_t)(CUresult, const char **);

static struct {
    int loaded;
    ntsym_cuCtxGetCurrent_t cuCtxGetCurrent;
    ntsym_cuCtxGetDevice_t cuCtxGetDevice;
    ntsym_cuModuleLoadData_t cuModuleLoadData;
    ntsym_cuModuleGetFunction_t cuModuleGetFunction;
    ntsym_cuFuncSetAttribute_t cuFuncSetAttribute;
    ntsym_cuDeviceGetAttribute_t cuDeviceGetAttribute;
    ntsym_cuLaunchKernel_t cuLaunchKernel;
    ntsym_cuGetErrorString_t cuGetErrorString;
} ntsym_cu;

static pthread_mutex_t ntsym_lock = PTHREAD_MUTEX_INITIALIZER;

static int ntsym_cuda_error(CUresult result, const char *what) {
    const char *text = "unknown error";
    if (ntsym_cu.cuGetErrorString) ntsym_cu.cuGetErrorString(result, &text);
    return ntsym_fail(NTSYM_ERROR_CUDA, "%s failed: %s (CUresult %d)", what, text, (int)result);
}

static int ntsym_load_driver(void) {
    if (ntsym_cu.loaded) return NTSYM_SUCCESS;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) lib = dlopen("libcuda.so", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return ntsym_fail(NTSYM_ERROR_CUDA, "cannot load libcuda.so.1 (no CUDA driver): %s", dlerror());
#define NTSYM_SYM(name) \
    if (!(ntsym_cu.name = (ntsym_##name##_t)dlsym(lib, #name))) \
        return ntsym_fail(NTSYM_ERROR_CUDA, "libcuda has no %s", #name);
    NTSYM_SYM(cuCtxGetCurrent) NTSYM_SYM(cuCtxGetDevice) NTSYM_SYM(cuModuleLoadData)
    NTSYM_SYM(cuModuleGetFunction) NTSYM_SYM(cuFuncSetAttribute) NTSYM_SYM(cuDeviceGetAttribute)
    NTSYM_SYM(cuLaunchKernel) NTSYM_SYM(cuGetErrorString)
#undef NTSYM_SYM
    ntsym_cu.loaded = 1;
    return NTSYM_SUCCESS;
}

#define NTSYM_MAX_CONTEXTS 64

typedef struct {
    const unsigned char *cubin;
    const char *name;
    int shared;
    int num_warps;
    CUcontext contexts[NTSYM_MAX_CONTEXTS];
    CUfunction functions[NTSYM_MAX_CONTEXTS];
} ntsym_binary;

/* The variant's function in the current context, loaded once per context. */
static int ntsym_function(ntsym_binary *binary, CUfunction *function) {
    CUcontext context = NULL;
    CUresult r;
    int status = NTSYM_SUCCESS;
    pthread_mutex_lock(&ntsym_lock);
    if ((status = ntsym_load_driver()) != NTSYM_SUCCESS) goto done;
    if ((r = ntsym_cu.cuCtxGetCurrent(&context)) != CUDA_SUCCESS) { status = ntsym_cuda_error(r, "cuCtxGetCurrent"); goto done; }
    if (context == NULL) { status = ntsym_fail(NTSYM_ERROR_CUDA, "no current CUDA context: initialise the device first"); goto done; }
    for (int i = 0; i < NTSYM_MAX_CONTEXTS; ++i) {
        if (binary->contexts[i] == context) { *function = binary->functions[i]; goto done; }
        if (binary->contexts[i] == NULL) {
            CUmodule module;
            CUdevice device;
            int optin = 0;
            if ((r = ntsym_cu.cuModuleLoadData(&module, binary->cubin)) != CUDA_SUCCESS) { status = ntsym_cuda_error(r, "cuModuleLoadData"); goto done; }
            if ((r = ntsym_cu.cuModuleGetFunction(function, module, binary->name)) != CUDA_SUCCESS) { status = ntsym_cuda_error(r, "cuModuleGetFunction"); goto done; }
            if (binary->shared > 49152) {
                if ((r = ntsym_cu.cuCtxGetDevice(&device)) != CUDA_SUCCESS) { status = ntsym_cuda_error(r, "cuCtxGetDevice"); goto done; }
                ntsym_cu.cuDeviceGetAttribute(&optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, device);
                if (optin < binary->shared) { status = ntsym_fail(NTSYM_ERROR_CUDA, "the kernel needs %d bytes of shared memory, the device offers %d", binary->shared, optin); goto done; }
                if ((r = ntsym_cu.cuFuncSetAttribute(*function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, binary->shared)) != CUDA_SUCCESS) { status = ntsym_cuda_error(r, "cuFuncSetAttribute"); goto done; }
            }
            binary->functions[i] = *function;
            binary->contexts[i] = context;
            goto done;
        }
    }
    status = ntsym_fail(NTSYM_ERROR_CUDA, "more than %d CUDA contexts", NTSYM_MAX_CONTEXTS);
done:
    pthread_mutex_unlock(&ntsym_lock);
    return status;
}

static int ntsym_launch(ntsym_binary *binary, int64_t grid, CUstream stream, void **params) {
    CUfunction function;
    CUresult r;
    int status;
    if (grid > INT32_MAX) return ntsym_fail(NTSYM_ERROR_SHAPE, "the grid has %lld programs, more than 2**31 - 1", (long long)grid);
    if ((status = ntsym_function(binary, &function)) != NTSYM_SUCCESS) return status;
    r = ntsym_cu.cuLaunchKernel(function, (unsigned)grid, 1, 1, 32 * binary->num_warps, 1, 1, binary->shared,
                                stream, params, NULL);
    if (r != CUDA_SUCCESS) return ntsym_cuda_error(r, "cuLaunchKernel");
    return NTSYM_SUCCESS;
}
"""


def _element_sizes_c():
    cases = " ".join(f"case {i}: return {ELEMENT_SIZES[d]};" for i, d in enumerate(DTYPES))
    return f"static int64_t ntsym_element_size(int32_t code) {{ switch (code) {{ {cases} }} return 1; }}\n"


def _param_decl(p):
    if p.kind in ("tensor", "shape"):
        return f"ntsym_tensor {p.name}"
    return f"{p.ctype} {p.name}"


def launcher_c(plan_, static=True):
    """The C function of one plan: checks, choice of variant, launch."""
    lines = []
    for i, v in enumerate(plan_.variants):
        data = ", ".join(str(b) for b in v.cubin)
        lines.append(f"static const unsigned char {plan_.name}_cubin_{i}[{len(v.cubin)}] = {{{data}}};")
        lines.append(f"static ntsym_binary {plan_.name}_binary_{i} = {{{plan_.name}_cubin_{i}, "
                     f"{c_string(v.function)}, {v.shared}, {v.num_warps}, {{0}}, {{0}}}};")
    params = ", ".join(["ntsym_stream stream"] + [_param_decl(p) for p in plan_.params])
    lines.append(f"{'static ' if static else ''}int {plan_.name}_launch({params}) {{")
    body = ["ntsym_message_text[0] = 0;"] + list(plan_.prologue)
    for p in plan_.params:
        if p.kind == "scalar":
            body.append(f"float {p.name}_fp32 = (float){p.name}; double {p.name}_fp64 = (double){p.name}; "
                        f"int32_t {p.name}_i32 = (int32_t){p.name}; int64_t {p.name}_i64 = (int64_t){p.name};")
            body.append(f"(void){p.name}_fp32; (void){p.name}_fp64; (void){p.name}_i32; (void){p.name}_i64;")
        if p.kind == "tensor":
            body.append(f"CUdeviceptr {p.name}_data = (CUdeviceptr)(uintptr_t){p.name}.data;")
    body.append(f"int64_t grid = {plan_.grid};")
    body.append("if (grid <= 0) return NTSYM_SUCCESS;  /* an empty problem: nothing to run */")
    for ax in plan_.axes:
        if ax.kind == "aligned":
            body.append(f"int64_t aligned_value = !NTSYM_INT64_value && {ax.c};")
        else:
            body.append(f"int64_t {ax.name}_value = {ax.c};")
    for ax in plan_.axes:
        if ax.kind == "choice":
            allowed = " || ".join(f"{ax.name}_value == {v}" for v in ax.values)
            body.append(f"if (!({allowed})) " + f"return ntsym_fail(NTSYM_ERROR_NO_VARIANT, "
                        f"{c_string(f'{ax.name} (=%lld) has no compiled variant; the library was built for ' + ', '.join(map(str, ax.values)))}, "
                        f"(long long){ax.name}_value);")
    # 32-bit copies of sizes and strides (used by variants with 32-bit index math).
    declared = set()
    for v in plan_.variants:
        for local, ctype in v.launch_args:
            base, suffix = local.rsplit("_", 1)
            if suffix in ("i32", "i64") and local not in declared and base not in {p.name for p in plan_.params}:
                body.append(f"{ctype} {local} = ({ctype}){base};")
                declared.add(local)
    body.append("void *params[64];")
    body.append("CUdeviceptr scratch = 0;")
    body.append("int n = 0;")
    for i, v in enumerate(plan_.variants):
        cond = " && ".join(f"{ax.name}_value == {v.assignment[ax.name]}" for ax in plan_.axes)
        pushes = " ".join(f"params[n++] = &{local};" for local, _ in v.launch_args)
        pushes += " params[n++] = &scratch;" * v.scratch_args
        body.append(f"if ({cond}) {{ {pushes} (void)n; return ntsym_launch(&{plan_.name}_binary_{i}, grid, "
                    f"(CUstream)stream, params); }}")
    body.append("return ntsym_fail(NTSYM_ERROR_NO_VARIANT, \"no compiled variant for this call\");")
    lines += ["    " + b for b in body]
    lines.append("}")
    return "\n".join(lines)


def library_c(prefix, plans, dispatch=None):
    """The whole C source: the runtime helpers, every plan's launcher, and the
    entry point ``<prefix>_launch`` (one plan's, or ``dispatch`` over several)."""
    names = ", ".join(c_string(d) for d in DTYPES)
    parts = [f'/* {prefix}.c: ntsym kernel `{prefix}`, built ahead of time (generated; do not edit). */',
             f'#include "{prefix}.h"',
             _RUNTIME_C.replace("{{DTYPE_NAMES}}", "{" + names + "}").replace(
                 "static void ntsym_extent", _element_sizes_c() + "\nstatic void ntsym_extent")]
    for p in plans:
        parts.append(launcher_c(p))
    parts.append(f"const char *{prefix}_message(void) {{ return ntsym_message_text; }}")
    parts.append(dispatch)
    return "\n\n".join(parts) + "\n"


def single_dispatch(prefix, plan_):
    params = ["ntsym_stream stream"] + [_param_decl(p) for p in plan_.params]
    call = ", ".join(["stream"] + [p.name for p in plan_.params])
    return f"int {prefix}_launch({', '.join(params)}) {{\n    return {plan_.name}_launch({call});\n}}", \
        ", ".join(params)


def config_dispatch(prefix, plans, keys, config_names):
    """An entry point that takes the configuration's values after the
    kernel's arguments and calls the plan built for them."""
    first = plans[0]
    for p in plans[1:]:
        if [(q.name, q.kind) for q in p.params] != [(q.name, q.kind) for q in first.params]:
            raise AotError(f"`{prefix}`: the configurations make kernels with different parameters "
                           f"({[q.name for q in first.params]} and {[q.name for q in p.params]}); one library "
                           "dispatches over kernels of one signature")
    params = ["ntsym_stream stream"] + [_param_decl(p) for p in first.params] + [f"int64_t {n}" for n in config_names]
    call = ", ".join(["stream"] + [p.name for p in first.params])
    body = ["ntsym_message_text[0] = 0;"]
    for plan_, key in zip(plans, keys):
        cond = " && ".join(f"{n} == {v}" for n, v in zip(config_names, key)) or "1"
        body.append(f"if ({cond}) return {plan_.name}_launch({call});")
    shown = " ".join(f"{n}=%lld" for n in config_names)
    args = "".join(f", (long long){n}" for n in config_names)
    body.append(f"return ntsym_fail(NTSYM_ERROR_CONFIG, {c_string(f'no configuration was built for {shown}')}{args});")
    text = f"int {prefix}_launch({', '.join(params)}) {{\n" + "\n".join("    " + b for b in body) + "\n}"
    return text, ", ".join(params)


def cuda_include():
    """Triton's bundled CUDA headers."""
    import importlib.util

    spec = importlib.util.find_spec("triton")
    root = pathlib.Path(spec.origin).parent
    include = root / "backends" / "nvidia" / "include"
    if not (include / "cuda.h").exists():
        raise AotError(f"no cuda.h under {include}: Triton's NVIDIA backend is needed to build the C library")
    return include


def c_compiler():
    for name in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return shutil.which(name)
    raise AotError("no C compiler (cc, gcc or clang) on PATH: building the shared library needs one")


def compile_library(c_path, so_path):
    """``cc -shared``: no CUDA library is linked (libcuda is opened at the first launch)."""
    command = [c_compiler(), "-shared", "-fPIC", "-O2", "-std=gnu11", f"-I{cuda_include()}",
               f"-I{pathlib.Path(c_path).parent}", "-o", str(so_path), str(c_path), "-ldl", "-lpthread"]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode:
        raise AotError(f"compiling {c_path} failed:\n{' '.join(command)}\n{done.stderr[-4000:]}")
    return command


def cache_key(parts):
    digest = hashlib.sha256()
    digest.update(pathlib.Path(__file__).read_bytes())
    for p in parts:
        digest.update(json.dumps(p, sort_keys=True, default=str).encode())
        digest.update(b"\0")
    return digest.hexdigest()


def plan_fingerprint(plan_):
    """What of a plan changes the library's output."""
    return [plan_.name, plan_.kernel_name, plan_.module, [p.__dict__ for p in plan_.params], plan_.prologue,
            [a.__dict__ for a in plan_.axes], plan_.grid, plan_.meta, plan_.num_warps, plan_.num_stages,
            [(v.assignment, v.signature, v.constexprs, sorted((str(k), a) for k, a in v.attrs.items()))
             for v in plan_.variants]]


def triton_version():
    try:
        import importlib.metadata

        return importlib.metadata.version("triton")
    except Exception:  # pragma: no cover - triton is a dependency
        return "unknown"


def next_pow2(n):
    n = int(n)
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


__all__ = ["AotError", "DTYPES", "STATUS", "plan", "compile_variants", "header", "library_c", "single_dispatch",
           "config_dispatch", "compile_library", "cache_key", "plan_fingerprint"]


# --- A standalone Python module -------------------------------------------------


def standalone_source(ir, generated, display, configs):
    """The generated ``@triton.jit`` kernel and a launcher that needs only
    ``torch`` and ``triton``: shape and launch checks, index width, the
    compile-time flags, and ``configs`` (dicts of block sizes, ``num_warps``,
    ``num_stages``, ``advance``; the first is the default, ``config=i`` picks
    another)."""
    from codegen.printer import Printer, to_source

    host = Printer(mode="host")
    src = generated.source
    start = src.index("@triton.jit")
    end = src.index("\ndef make_launch(")
    kernels = src[start:end].rstrip()
    head = ['"""ntsym kernel `%s`, standalone: needs torch and triton only (generated; do not edit)."""' % ir.name,
            "", "import torch", "import triton", "import triton.language as tl"]
    if generated.records.uses_libdevice:
        head.append("from triton.language.extra import libdevice")
    records = generated.records
    by_name = {p.name: p for p in ir.params}
    own = [p for p in ir.params if not (p.kind == "constexpr" and p.value is not None)]
    tensors = [p for p in ir.params if p.kind == "tensor"]
    metas = [m.symbol.name for m in ir.meta_params]
    body = [f"if len(args) != {len(own)}:",
            f"    raise TypeError('kernel `{ir.name}` takes {len(own)} arguments ({', '.join(p.name for p in own)}), "
            "got %d' % len(args))",
            f"{', '.join(p.name for p in own)}{',' if len(own) == 1 else ''} = args"]
    for p in own:
        if p.kind in ("tensor", "shape"):
            body.append(f"if {p.name}.ndim != {p.ndim}:")
            body.append(f"    raise ValueError('`{p.name}` must have {p.ndim} dimensions, got %d' % {p.name}.ndim)")
            sizes = [s.name if isinstance(s, sympy.Symbol) else "_" for s in p.source_sizes]
            if p.ndim:
                body.append(f"{', '.join(sizes)}{',' if p.ndim == 1 else ''} = {p.name}.shape")
                if p.kind == "tensor":
                    strides = [s.name if isinstance(s, sympy.Symbol) else "_" for s in p.strides]
                    body.append(f"{', '.join(strides)}{',' if p.ndim == 1 else ''} = {p.name}.stride()")
    for p in own:
        if p.kind in ("tensor", "shape"):
            for d, s in enumerate(p.source_sizes):
                if not isinstance(s, sympy.Symbol):
                    body.append(f"if {p.name}.shape[{d}] != {to_source(host(s))}:")
                    body.append(f"    raise ValueError('{p.name}.shape[{d}] (=%d) must equal %d: the arrangement "
                                f"fixes it' % ({p.name}.shape[{d}], {to_source(host(s))}))")
    body.append("meta = dict(CONFIGS[config])")
    body.append("meta.update({k: v for k, v in given.items() if v is not None})")
    for m in metas:
        body.append(f"{m} = meta[{m!r}]")
    for i, check in enumerate(generated.checks):
        names = sorted({s.name for s in check.relation.free_symbols})
        shown = ", ".join(f"{display.get(n, n)}=%r" for n in names)
        reason = (check.reason or check.message).replace("%", "%%")
        body.append(f"if not ({to_source(host(check.relation))}):")
        body.append(f"    raise ValueError({(str(check.relation) + ' must hold: ' + reason + ' (' + shown + ')')!r} % "
                    f"({''.join(n + ', ' for n in names)}))")
    body.append(f"tensors = ({''.join(p.name + ', ' for p in tensors)})")
    body.append("int64 = any(_needs_int64(t) for t in tensors)")
    kwargs, args = [], []
    pow2 = {s.name: n for n, s in records.pow2.items()}
    contig = {flag: tensor for tensor, flag in records.contiguity_flags.items()}
    size_names = {a.symbol.name for a in ir.size_args}
    for name, constexpr in generated.kernel_args:
        if name.endswith("_ptr") and name[:-4] in by_name and by_name[name[:-4]].kind == "tensor":
            value = name[:-4]
        elif name in by_name and by_name[name].kind == "constexpr" and by_name[name].value is not None:
            value = repr(by_name[name].value)
        elif name in by_name and by_name[name].kind == "scalar":
            value = f"({name}.item() if isinstance({name}, torch.Tensor) else {name})"
        elif name in size_names or name in by_name:
            value = name
        elif name in pow2:
            value = f"triton.next_power_of_2({to_source(host(pow2[name]))})"
        elif name in records.whole:
            size, block = records.whole[name]
            value = f"({to_source(host(size))}) % ({to_source(host(block))}) == 0"
        elif name in contig:
            value = f"({contig[name]}.is_contiguous() and not int64)"
        elif name == records.int64_flag:
            value = "int64"
        elif name == records.advance_flag:
            value = "bool(meta.get('advance', False))"
        elif name in metas:
            value = name
        else:
            raise AotError(f"kernel `{ir.name}`: no value for the kernel parameter {name} in a standalone module")
        (kwargs if constexpr else args).append((name, value))
    grid = " * ".join(f"({to_source(host(g))})" for g in ir.grid) or "1"
    body.append(f"grid = ({grid},)")
    call = ", ".join(f"{n}={v}" for n, v in args + kwargs)  # by name: compile-time sizes sit among the others
    body.append("if grid[0] > 0:")
    body.append(f"    {generated.kernel_name}[grid]({call}, num_warps=meta.get('num_warps', 4), "
                "num_stages=meta.get('num_stages', 3))")
    params = "".join(f", {m}=None" for m in metas)
    given = "{" + ", ".join(f"{m!r}: {m}" for m in metas) + "}"
    launcher = [f"def launch(*args, config=0{params}):",
                f'    """Launch `{ir.name}` on ({", ".join(p.name for p in own)}): `config` picks one of CONFIGS; '
                'block sizes given by keyword override it."""',
                f"    given = {given}"] + ["    " + b for b in body]
    helper = ["def cdiv(a, b):", "    return -(-a // b)", "", "",
              "def next_power_of_2(n):", "    return 1 if n <= 1 else 1 << (int(n) - 1).bit_length()", "", "",
              "def _needs_int64(t):",
              '    """Whether some element offset can reach 2**31: then index math is 64-bit."""',
              "    extent = 0",
              "    for n, st in zip(t.shape, t.stride()):",
              "        if n > 0:",
              "            extent += (n - 1) * abs(st)",
              "        if n >= 2**31 - 1:",
              "            return True",
              "    return extent >= 2**31 - 1"]
    configs_src = "CONFIGS = [\n" + "".join(f"    {c!r},\n" for c in configs) + "]"
    parts = ["\n".join(head), kernels, configs_src, "\n".join(helper), "\n".join(launcher)]
    return "\n\n\n".join(parts) + "\n"
