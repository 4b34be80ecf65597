"""What to compile: the plan of one made kernel's C launcher (parameters, the C statements
that read sizes and run the checks, the facts that choose a variant) and every variant's
Triton signature, constants and hints."""

import itertools
from dataclasses import dataclass, field

import sympy

from ntsym_codegen.aot.common import DTYPES, TRITON_TYPES, AotError, c_expr, c_string, dtype_name, float64_scalar_checks
from ntsym_codegen.launcher import declared_strides


@dataclass(frozen=True)
class Param:
    """A parameter of the C launcher: a tensor struct (``tensor``, or ``shape`` for a tensor
    whose sizes only are read), a number (``scalar``), or a compile-time value (``choice``)."""

    name: str
    kind: str
    ndim: int = 0
    dtype: str = None
    written: bool = False
    ctype: str = None  # scalars and choices: the C type the launcher takes


@dataclass(frozen=True)
class Axis:
    """A fact the launcher computes per call, a compile-time value of the kernel (each value has cubins)."""

    name: str  # the kernel parameter (or "aligned")
    values: tuple
    c: str  # C expression computing it from the call
    kind: str = "flag"  # "flag", "int64", "aligned", "choice"
    c_partial: str = ""  # "aligned": the condition of its value 2 (see ``_axes``)
    # "aligned": (tensor, condition) of its values 3, 4, ...: that tensor's unit stride in its
    # next-to-last dimension (a transposed operand), the rest as for value 2
    c_transposed: tuple = ()


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
    values to compile for each compile-time size or value the call gives.
    The C statements run the torch launcher's checks, in its order: the
    arguments, then sizes, the launch checks and aliasing; what the torch
    launcher refuses for a dtype is refused here at build time, the dtypes
    being fixed (``_refuse_dtypes``)."""
    meta, meta_subs = _meta(ir, meta)
    params = _params(ir, spec)
    _refuse_dtypes(ir, spec, params)
    sym_names, reads = _size_reads(ir)
    prologue = _argument_checks(params) + reads + _size_checks(ir, params, sym_names, display, meta)
    launch, checks_text = _launch_checks(ir, generated, meta, meta_subs, display)
    prologue += launch + _aliasing_checks(spec, params)
    choices = _choices(ir, display, meta)
    axes = _axes(ir, generated, params, meta_subs, choices, dict(specialize or {}))
    variants = _variants(ir, generated, axes, meta, meta_subs, choices, advance)
    grid = " * ".join(c_expr(sympy.sympify(g).xreplace(meta_subs)) for g in ir.grid) or "1"
    return Plan(name or ir.name, generated.kernel_name, module_source, params, prologue, axes, variants, grid,
                meta, num_warps, num_stages, checks_text)


def _fail(status, fmt, *args):
    """C: return ``status`` with the message ``fmt`` (printf, ``%lld`` per value of ``args``)."""
    argtext = "".join(f", (long long)({a})" for a in args)
    return f"return ntsym_fail({status}, {c_string(fmt)}{argtext});"


def _meta(ir, meta):
    """The build's compile-time values (ints, bools) and the same by symbol; refused where a block has none."""
    meta = {k: int(v) if not isinstance(v, bool) else v for k, v in meta.items()}
    meta_subs = {ir.symbols[k] if k in ir.symbols else sympy.Symbol(k): v for k, v in meta.items()}
    for m in ir.meta_params:
        meta_subs.setdefault(m.symbol, meta.get(m.symbol.name))
    missing = [m.symbol.name for m in ir.meta_params if meta.get(m.symbol.name) is None]
    if missing:
        raise AotError(f"kernel `{ir.name}`: the compile-time value(s) {', '.join(missing)} have no value; an "
                       "ahead-of-time kernel fixes its block sizes (pass them to the arrangement)")
    return meta, meta_subs


def _choices(ir, display, meta):
    """Compile-time values the call gives: constexpr sizes and valueless constexpr parameters (name -> display)."""
    choices = {}
    for a in ir.size_args:
        if a.constexpr:
            choices[a.symbol.name] = display.get(a.symbol.name, a.symbol.name)
    for p in ir.params:
        if p.kind == "constexpr" and p.value is None and p.name not in meta:
            choices[p.name] = p.name
    return choices


def _params(ir, spec):
    """The C launcher's parameters, in the call's order."""
    params = []
    for p in ir.call_params:
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
    return params


def _refuse_dtypes(ir, spec, params):
    """What the torch launcher refuses for a tensor's dtype (a bool tensor
    the application computes arithmetic on; uint8 and int8 values meeting in
    one operation), refused when building: a library takes its tensors in
    the dtypes it was built for only, so every call would be refused."""
    import torch

    from ntsym_codegen.promotion import refusal

    for p in params:
        if p.kind == "tensor" and p.dtype == "bool" and p.name in spec.arithmetic:
            raise AotError(
                f"kernel `{ir.name}`: `{p.name}` is a bool tensor and the application computes arithmetic on its "
                "values: Triton adds booleans as 1-bit integers (True + True is False), torch does not; declare "
                f"`{p.name}` an integer tensor (Tensor({p.ndim}, dtype=ntsym.int8))")
    dtypes = {p.name: getattr(torch, p.dtype) for p in params if p.kind == "tensor"}
    from ntsym_codegen.runtime.checks import holds

    for name, kind, text in getattr(spec, "others", ()):
        other = int(text) if kind == "int" else float(text)
        if name in dtypes and not holds(dtypes[name], other):
            raise AotError(f"kernel `{ir.name}`: `{name}` is declared {dtypes[name]}, which cannot hold its "
                           f"other={other!r} exactly; declare an `other=` its dtype holds (or none)")
    refused = refusal(spec.meetings, dtypes) if spec.meetings else None
    if refused:
        raise AotError(f"kernel `{ir.name}`: {refused}")


def _argument_checks(params):
    """C: null pointers, ndim, dtype (nothing read before them), float32 scalars beside float64 tensors."""
    prologue = float64_scalar_checks(params)
    for p in params:
        if p.kind not in ("tensor", "shape"):
            continue
        t = f"{p.name}"
        prologue.append(f"if ({p.ndim} > 0 && ({t}.shape == NULL || {t}.strides == NULL)) "
                        + _fail("NTSYM_ERROR_ARGUMENT", f"`{p.name}` has a null shape or strides pointer"))
        prologue.append(f"if ({t}.ndim != {p.ndim}) "
                        + _fail("NTSYM_ERROR_ARGUMENT", f"`{p.name}` must have {p.ndim} dimensions, got %lld",
                                f"{t}.ndim"))
        if p.kind == "tensor":
            prologue.append(f"if ({t}.dtype < 0 || {t}.dtype >= {len(DTYPES)}) "
                            + _fail("NTSYM_ERROR_ARGUMENT", f"`{p.name}` has an unknown dtype code %lld "
                                    f"(ntsym_dtype: 0 to {len(DTYPES) - 1})", f"{t}.dtype"))
            code = DTYPES.index(p.dtype)
            message = c_string(f"`{p.name}` has dtype %s; this kernel was compiled for {p.dtype}")
            prologue.append(f"if ({t}.dtype != {code}) return ntsym_fail_s(NTSYM_ERROR_ARGUMENT, {message}, "
                            f"ntsym_dtype_name({t}.dtype));")
    return prologue


def _size_reads(ir):
    """C: the sizes and strides, as the Python launcher unpacks them; and the
    names read.  A symbol several parameters share (declared by one ``Tensor``
    object, or one ``ntsym.Symbol`` in several shapes) is read from the first
    and checked against the others: the kernel takes one value for all."""
    _check_c_names(ir)
    sym_names, prologue, first = set(), [], {}
    for p in (p for p in ir.params if p.kind in ("tensor", "shape")):
        reads = [("shape", d, s) for d, s in enumerate(p.source_sizes)]
        reads += [("strides", d, s) for d, s in enumerate(p.strides)] if p.kind == "tensor" else []
        for field_, d, s in reads:
            if not isinstance(s, sympy.Symbol):
                continue
            here = f"{p.name}.{field_}[{d}]"
            if s.name not in sym_names:
                prologue.append(f"int64_t {s.name} = {here};")
                sym_names.add(s.name)
                first[s.name] = here
            else:
                what = "size" if field_ == "shape" else "stride"
                prologue.append(f"if ({here} != {s.name}) " + _fail(
                    "NTSYM_ERROR_SHAPE", f"{here} (=%lld) must equal {first[s.name]} (=%lld)\nthe kernel takes one "
                    f"{what} `{s.name}` for both (one Tensor object or one symbol declares them)", here, s.name))
    return sym_names, prologue


# C names a size symbol may not take: the launcher's parameters and locals.
C_RESERVED = frozenset(
    "auto break case char const continue default do double else enum extern float for goto if inline int long "
    "register restrict return short signed sizeof static struct switch typedef union unsigned void volatile while "
    "stream int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t uintptr_t size_t CUdeviceptr "
    "CUstream NULL".split())
C_DERIVED = ("_value", "_data", "_fp32", "_fp64", "_i32", "_i64")


def _check_c_names(ir):
    """Refuse, at build, a size symbol named as something else of the C launcher (C keyword, parameter, local)."""
    params = {p.name for p in ir.params}
    for p in ir.params:
        for s in list(getattr(p, "source_sizes", ())) + list(getattr(p, "strides", ())):
            if not isinstance(s, sympy.Symbol):
                continue
            name = s.name
            if (name in C_RESERVED or name in params or name.lower().startswith("ntsym_")
                    or name.endswith(C_DERIVED)):
                raise AotError(f"kernel `{ir.name}`: the size symbol `{name}` (in `{p.name}`) has a name the C "
                               "launcher uses for something else (a C keyword, a parameter, or one of its own "
                               "names); give the symbol another name")


def _size_checks(ir, params, sym_names, display, meta):
    """C: negative sizes, null data, sizes declared powers of two (the bounds
    of ``shape_options`` only prune tuning: no refusal), sizes the arrangement
    fixes, written expanded views, and call-time compile-time sizes."""
    prologue = []
    for p in params:
        if p.kind in ("tensor", "shape"):
            prologue.append(f"for (int d = 0; d < {p.ndim}; ++d) if ({p.name}.shape[d] < 0) "
                            + _fail("NTSYM_ERROR_ARGUMENT", f"`{p.name}`.shape[%lld] is negative", "d"))
        if p.kind == "tensor":
            prologue.append(f"if ({p.name}.data == NULL && ntsym_numel(&{p.name}) > 0) "
                            + _fail("NTSYM_ERROR_ARGUMENT", f"`{p.name}` is a null pointer"))
    shaped = [p for p in ir.params if p.kind in ("tensor", "shape")]
    for p in shaped:
        for d, s in enumerate(p.source_sizes):
            if isinstance(s, sympy.Symbol) and getattr(s, "power_of_two", False):
                prologue.append(f"if ({s.name} <= 0 || ({s.name} & ({s.name} - 1))) " + _fail(
                    "NTSYM_ERROR_SHAPE", f"{p.name}.shape[{d}] (=%lld) must be a power of two\nits shape_options "
                    "say so (tiles over it are unpadded)", s.name))
    for p in shaped:
        for d, s in enumerate(p.source_sizes):
            if not isinstance(s, sympy.Symbol):
                prologue.append(f"if ({p.name}.shape[{d}] != {c_expr(s)}) " + _fail(
                    "NTSYM_ERROR_SHAPE", f"{p.name}.shape[{d}] (=%lld) must equal %lld\nthe arrangement fixes it",
                    f"{p.name}.shape[{d}]", c_expr(s)))
        for d, s in declared_strides(p, {j.name for j in ir.jagged}):  # as the torch launcher's check_stride
            prologue.append(f"if ({p.name}.strides[{d}] != {c_expr(s)} && {p.name}.shape[{d}] > 1 && ntsym_numel(&{p.name}) > 0) "
                            + _fail("NTSYM_ERROR_SHAPE", f"{p.name}.stride()[{d}] (=%lld) must equal %lld\nthe strides "
                                    "declared at make are the ones the kernel addresses with", f"{p.name}.strides[{d}]", c_expr(s)))
    for p in params:  # outputs: no expanded (stride 0) dimension
        if p.kind == "tensor" and p.written:
            prologue.append(f"for (int d = 0; d < {p.ndim}; ++d) if ({p.name}.strides[d] == 0 && "
                            f"{p.name}.shape[d] > 1) " + _fail(
                                "NTSYM_ERROR_ARGUMENT", f"`{p.name}` is written by the kernel but dimension %lld "
                                "has stride 0 (an expanded view)\nseveral programs would write one element\n"
                                "pass a contiguous tensor", "d"))
            prologue.append(f"if (ntsym_overlapping(&{p.name})) " + _fail(  # as writes.check_no_overlap
                "NTSYM_ERROR_ARGUMENT", f"`{p.name}` is written by the kernel but its elements may overlap in memory"
                "\nseveral elements may share an address, and the stores to it would race\npass a contiguous tensor"))
    for m in ir.meta_params:  # call-time compile-time sizes given a value for this build: the call must have it
        if not m.meta and m.symbol.name in sym_names:
            shown_as = display.get(m.symbol.name, m.symbol.name)
            prologue.append(f"if ({m.symbol.name} != {meta[m.symbol.name]}) " + _fail(
                "NTSYM_ERROR_NO_VARIANT", f"{shown_as} (=%lld) has no compiled variant\nthe library was built for "
                f"{meta[m.symbol.name]}", m.symbol.name))
    return prologue


def _launch_checks(ir, generated, meta, meta_subs, display):
    """C: the launch checks, with the block sizes of this build; and their messages."""
    prologue, texts = [], []
    fixed = {k: v for k, v in meta_subs.items() if v is not None}
    for check in generated.checks:
        rel = check.relation.xreplace(fixed)
        if rel is sympy.true:
            continue
        if rel is sympy.false and check.unless is None:
            raise AotError(f"kernel `{ir.name}`: the launch check {check.relation} fails for every call with "
                           f"{', '.join(f'{k}={v}' for k, v in meta.items())}")
        text, args = _check_message(rel, check, dict(display))
        failed = "1" if rel is sympy.false else f"!{c_expr(rel)}"
        if check.unless is not None:  # moot where no program runs, as the torch launcher tests it (Check.tested)
            failed = f"({failed}) && ({c_expr(sympy.sympify(check.unless).xreplace(fixed))}) != 0"
        prologue.append(f"if ({failed}) " + _fail("NTSYM_ERROR_SHAPE", text, *args))
        texts.append(text)
    return prologue, texts


def _width(dtype):
    import torch

    return getattr(torch, dtype).itemsize if dtype else None


def _aliasing_checks(spec, params):
    """C: an output that shares an element with another argument, as the
    torch launcher decides it (``runtime.checks._check_aliasing``): views
    whose byte ranges overlap are refused where some element is in both
    (``ntsym_shared``, exact where either view is nested, as dense and
    sliced layouts are; else taken as shared), unless the views are
    identical and in-place use is proved safe.  A tensor the kernel
    addresses past its view (its pointer taken, a jagged one) is refused on
    any overlap of bytes."""
    prologue = []
    tensor_params = [p for p in params if p.kind == "tensor"]
    raw_names = spec.addressed | spec.jagged
    for a, b in itertools.combinations(tensor_params, 2):
        if not (a.written or b.written):
            continue
        safe = spec.aliasing.get((a.name, b.name), spec.aliasing.get((b.name, a.name), False)) is True
        # Identical views hold the same elements only where the elements have one width.
        safe = safe and _width(a.dtype) == _width(b.dtype)
        raw = {a.name, b.name} & raw_names
        w = a.name if a.written else b.name
        if raw:
            why = f"the kernel addresses `{sorted(raw)[0]}` past its view"
            shared = "1"
        else:
            why = ("an element of one view is an element of the other, or their layouts interleave in a way "
                   "not compared element by element")
            shared = f"ntsym_shared(&{a.name}, &{b.name})"
        prologue.append(f"if (ntsym_overlap(&{a.name}, &{b.name}) && !({'1' if safe else '0'} && "
                        f"ntsym_identical(&{a.name}, &{b.name})) && {shared}) " + _fail(
                            "NTSYM_ERROR_ARGUMENT", f"`{a.name}` and `{b.name}` share memory and the kernel "
                            f"writes `{w}`\n{why}: a program may read such an element before or after a program "
                            "writes it, in no fixed order\npass views that share no element or a separate output"))
    return prologue


def _axes(ir, generated, params, meta_subs, choices, specialize):
    """The facts that choose a variant: index width, alignment, peeled loops' and contiguity flags, call values."""
    records = generated.flags
    tensor_params = [p for p in params if p.kind == "tensor"]
    int64_terms = " || ".join([f"ntsym_needs_int64(&{p.name})" for p in tensor_params]
                              + [_logical_peak(ir, meta_subs)]) or "0"
    axes = [Axis("NTSYM_INT64", (0, 1), f"({int64_terms})", "int64")]
    # aligned = 1: data 16-byte aligned, unit last strides, every other stride
    # and every size a multiple of 16; = 2: the same but the sizes (a decode
    # step's batch of 2 and row of 1 are no multiples of 16, yet its operands'
    # loads can be vectorised); = 3 + i: as 2, but the i-th transposable
    # tensor (read only, two dimensions or more) has its unit stride in its
    # next-to-last dimension and its last stride a multiple of 16 (a weight
    # passed as ``weight.T``, as ``F.linear``'s operands often are); 0: none.
    data = [f"((uintptr_t){p.name}.data % 16 == 0)" for p in tensor_params]
    strides, sizes = {}, []
    for a in (a for a in ir.size_args if not a.constexpr):
        if a.kind == "stride":
            strides.setdefault(a.param, {})[a.dim] = a.symbol.name
        else:
            sizes.append(f"({a.symbol.name} % 16 == 0)")
    ndims = {p.name: p.ndim for p in ir.params}

    def layout(unit):  # C: aligned data, each tensor's stride unit[name] (default last) 1, the rest % 16
        terms = list(data)
        for name, by_dim in strides.items():
            one = unit.get(name, ndims[name] - 1)
            terms += [f"({s} == 1)" if d == one else f"({s} % 16 == 0)" for d, s in sorted(by_dim.items())]
        return "(" + " && ".join(terms or ["1"]) + ")"

    partial = layout({})
    full = "(" + " && ".join([partial] + sizes) + ")"
    transposed = tuple((p.name, layout({p.name: p.ndim - 2})) for p in tensor_params
                       if not p.written and p.ndim >= 2 and p.ndim - 2 in strides.get(p.name, {}))
    values = (0, 1, 2) if sizes else (0, 1)
    values += tuple(range(3, 3 + len(transposed)))
    axes.append(Axis("aligned", values, full, "aligned", partial if sizes else "", transposed))
    for flag, (size, block) in dict(records.whole).items():
        size, block = (sympy.sympify(x).xreplace(meta_subs) for x in (size, block))
        axes.append(Axis(flag, (0, 1), f"({c_expr(size)} % {c_expr(block)} == 0)"))
    contig = {flag: tensor for tensor, flag in records.contiguity_flags.items()}
    for flag, tensor in sorted(contig.items()):
        axes.append(Axis(flag, (0, 1), f"(ntsym_contiguous(&{tensor}) && !NTSYM_INT64_value)"))
    return axes + _choice_axes(ir, choices, specialize)


def _choice_axes(ir, choices, specialize):
    """One axis per compile-time value the call gives, over the values ``specialize`` names (or refused)."""
    by_display = {v: k for k, v in choices.items()}
    dims = {f"{p.name}.shape[{d}]" for p in ir.params if p.kind in ("tensor", "shape") for d in range(p.ndim)}
    for key in specialize:
        if key in dims and key not in by_display:
            continue  # a size the call gives at run time: nothing to specialize
        if key not in by_display:
            raise AotError(f"kernel `{ir.name}`: specialize names {key!r}, which is not a compile-time value the "
                           f"call gives (those are: {', '.join(choices.values()) or 'none'})")
    axes = []
    for sym, shown_as in choices.items():
        if shown_as not in specialize:
            raise AotError(f"kernel `{ir.name}`: {shown_as} is a compile-time value the call gives; an "
                           f"ahead-of-time kernel needs the values to compile: specialize={{{shown_as!r}: (...)}}")
        values = tuple(int(v) for v in specialize[shown_as])
        axes.append(Axis(sym, values, f"(int64_t){sym}", "choice"))
    return axes


def _variants(ir, generated, axes, meta, meta_subs, choices, advance):
    """Every assignment of the axes that can occur, as a variant to compile."""
    records = generated.flags
    whole = dict(records.whole)
    contig = set(records.contiguity_flags.values())
    variants = []
    names = [ax.name for ax in axes]
    aligned = next(ax for ax in axes if ax.kind == "aligned")
    for combo in itertools.product(*(ax.values for ax in axes)):
        assignment = dict(zip(names, combo))
        if assignment["aligned"] and assignment["NTSYM_INT64"]:
            continue  # 64-bit offsets: the general variant only
        if assignment["NTSYM_INT64"] and any(assignment[f] for f in contig):
            continue  # contiguous addresses multiply sizes: 32-bit only
        known = dict(meta_subs)
        for sym in choices:
            known[ir.symbols.get(sym, sympy.Symbol(sym))] = assignment[sym]
        if _contradicts(whole, assignment, known) or _refused(generated.checks, known):
            continue
        transposed = aligned.c_transposed[assignment["aligned"] - 3][0] if assignment["aligned"] >= 3 else None
        variants.append(_variant(ir, generated, assignment, meta, known, choices, advance, transposed))
    return variants


def _contradicts(whole, assignment, known):
    """Whether a peeled loop's flag of ``assignment`` is the opposite of what the sizes ``known`` decide."""
    for flag, (size, block) in whole.items():
        value = _by_name(sympy.sympify(size) % sympy.sympify(block), known)
        if value.is_number and bool(value == 0) != bool(assignment[flag]):
            return True
    return False


def _refused(checks, known):
    """Whether a launch check fails at the values ``known`` (no call has it)."""
    return any(_by_name(c.relation, known) is sympy.false for c in checks)


def _by_name(expr, known):
    """``expr`` with the symbols of ``known`` (matched by name) replaced."""
    names = {getattr(k, "name", str(k)): v for k, v in known.items() if v is not None}
    expr = sympy.sympify(expr)
    return sympy.sympify(expr.xreplace({s: sympy.sympify(names[s.name]) for s in expr.free_symbols
                                        if s.name in names}))


def _check_message(rel, check, display):
    """The format and values of a failed launch check, as ``runtime.fail_check``
    words it: ``other.shape[0] (=41) must equal input.shape[1] (=40)``, then
    why on the next lines."""
    from ntsym_codegen.runtime.checks import check_template

    known = {s.name for s in rel.free_symbols}
    lines, fills = check_template(check, display, known, "%lld", relation=rel)
    values = [c_expr(x) if kind == "value" else x for kind, x in fills]
    return "\n".join(line for line in lines if line), values


def _variant(ir, generated, assignment, meta, known, choices, advance, transposed=None):
    """The Triton signature, constants and hints of one variant, and the
    arguments its launch passes: each kernel parameter by its source
    (``ntsym_codegen.arguments``)."""
    facts = _VariantFacts(ir, assignment, meta, known, advance, transposed)
    signature, constexprs, attrs, launch = {}, {}, {}, []
    for i, arg in enumerate(generated.arguments):
        kind, value, launched, hinted = facts.value(arg)
        signature[arg.name] = kind
        if kind == "constexpr":
            constexprs[arg.name] = value
        if launched is not None:
            launch.append(launched)
        if hinted:
            attrs[(i,)] = [["tt.divisibility", 16]]
    return Variant(dict(assignment), signature, constexprs, attrs, launch)


class _VariantFacts:
    """What one variant fixes: ``value(arg)`` is the Triton type (or
    ``"constexpr"``), the constant, the (C local, C type) its launch passes
    (or None) and whether it takes the 16-byte divisibility hint (data and
    strides in the aligned variants, sizes in the one of aligned sizes too)."""

    def __init__(self, ir, assignment, meta, known, advance, transposed=None):
        self.ir, self.assignment, self.meta, self.known, self.advance = ir, assignment, meta, known, advance
        self.int64 = bool(assignment["NTSYM_INT64"])
        self.aligned = int(assignment["aligned"])
        self.transposed = transposed  # the tensor whose unit stride is its next-to-last, or None
        self.int_type = "i64" if self.int64 else "i32"
        self.by_name = {p.name: p for p in ir.params}

    def value(self, arg):
        if arg.source == "tensor":
            p = self.by_name[arg.detail.name]
            return "*" + TRITON_TYPES[dtype_name(p.dtype)], None, (f"{p.name}_data", "CUdeviceptr"), self.aligned != 0
        if arg.source == "scalar":
            return self._scalar(arg)
        if arg.source in ("fixed", "constexpr"):
            return "constexpr", self._constexpr(arg), None, False
        if arg.source == "size":
            return self._size(arg)
        if arg.source == "pow2":
            return "constexpr", self._pow2(arg), None, False
        if arg.source == "int64":
            return "constexpr", self.int64, None, False
        if arg.source == "advance":
            return "constexpr", bool(self.advance), None, False
        if arg.name in self.assignment:  # peeled loops' and contiguity flags
            return "constexpr", bool(self.assignment[arg.name]), None, False
        if arg.name in self.meta:
            return "constexpr", self.meta[arg.name], None, False
        raise AotError(f"kernel `{self.ir.name}`: no value for the kernel parameter {arg.name}")

    def _scalar(self, arg):
        p = arg.detail
        dtype = dtype_name(p.dtype) if p.dtype is not None else "float32"
        if dtype not in ("float32", "float64", "int32", "int64"):
            raise AotError(f"kernel `{self.ir.name}`: scalar `{arg.name}` of dtype {dtype}: an ahead-of-time kernel "
                           "takes float32, float64, int32 or int64 scalars")
        triton = TRITON_TYPES[dtype]
        ctype = {"fp32": "float", "fp64": "double", "i32": "int32_t", "i64": "int64_t"}[triton]
        return triton, None, (f"{arg.name}_{triton}", ctype), False

    def _constexpr(self, arg):
        if arg.source == "fixed":
            return arg.detail
        p, name = arg.detail, arg.name
        value = self.assignment.get(name, self.meta.get(name))
        if name in self.assignment and isinstance(value, int):
            value = bool(value) if (p.dtype is None or "bool" in str(p.dtype)) and value in (0, 1) else value
        return value

    def _size(self, arg):
        a = arg.detail
        if a.constexpr:
            return "constexpr", int(self.assignment[arg.name]), None, False
        ndim = self.by_name[a.param].ndim
        unit = ndim - 2 if a.param == self.transposed else ndim - 1
        if self.aligned and a.kind == "stride" and a.dim == unit:
            return "constexpr", 1, None, False
        ctype = "int32_t" if self.int_type == "i32" else "int64_t"
        hinted = self.aligned == 1 or (self.aligned >= 2 and a.kind == "stride")
        return self.int_type, None, (f"{arg.name}_{self.int_type}", ctype), hinted

    def _pow2(self, arg):
        value = _by_name(arg.detail, self.known)
        if not value.is_number:
            raise AotError(f"kernel `{self.ir.name}`: the padded block {arg.name} = next_power_of_2({arg.detail}) "
                           "depends on sizes the call gives; declare them compile-time (shape_options={'constexpr': "
                           "True}) and specialize their values")
        n = int(value)
        return 1 if n <= 1 else 1 << (n - 1).bit_length()


def _logical_peak(ir, meta_subs):
    """C: whether a logical index can pass 2**31 - 1 (codegen/index_width.py),
    over the sizes the launcher has read; "1" where a bound is not in them."""
    from ntsym_codegen.index_width import LIMIT, peaks

    bounds = peaks(ir.params)
    if bounds is None:
        return "1"
    bounds = [sympy.sympify(b).xreplace({k: v for k, v in meta_subs.items() if v is not None}) for b in bounds]
    known = {a.symbol for a in ir.size_args if not a.constexpr}
    terms = []
    for b in bounds:
        if b.is_Number:
            if b > LIMIT:
                return "1"
            continue
        if not b.free_symbols <= known:
            return "1"
        try:
            terms.append(f"({c_expr(b)} > INT64_C({LIMIT}))")
        except AotError:
            return "1"
    return " || ".join(terms) or "0"
