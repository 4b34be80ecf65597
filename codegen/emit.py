"""Assemble the generated module: helpers, the ``@triton.jit`` kernel and its
launcher, as formatted, deterministic source."""

import ast

import sympy

from codegen.analysis import arithmetic_parameters, has_loops, reuses_tiles, runtime_loops
from codegen.kernel import EmitError, KernelEmitter
from codegen.printer import Printer, to_source

HELPERS = {
    "ntsym_floordiv": """
@triton.jit
def ntsym_floordiv(a, b):
    \"\"\"Floor division for b > 0, exact for negative dividends too, whether //
    truncates (tensors) or floors (compile-time Python integers).\"\"\"
    q = a // b
    return tl.where(a - q * b < 0, q - 1, q)
""",
    "ntsym_math_arg": """
@triton.jit
def ntsym_math_arg(x):
    \"\"\"Half-precision operands of fp32-only math functions, in fp32.\"\"\"
    if x.dtype == tl.float16 or x.dtype == tl.bfloat16:
        x = x.to(tl.float32)
    return x
""",
    "ntsym_mod": """
@triton.jit
def ntsym_mod(a, b):
    \"\"\"The remainder in [0, b) for b > 0, whether % truncates or floors.\"\"\"
    r = a - a // b * b
    return tl.where(r < 0, r + b, r)
""",
}


class Generated:
    """What the emitter produces: module source and facts for the front end."""

    def __init__(self, source, kernel_name, launcher_name, checks, pow2, written):
        self.source = source
        self.kernel_name = kernel_name
        self.launcher_name = launcher_name
        self.checks = checks
        self.pow2 = pow2
        self.written = written


def emit(ir):
    emitter = KernelEmitter(ir)
    body = emitter.emit_body()
    loops = has_loops(body)
    written = sorted(emitter.records.stored)
    kernel_name = f"{ir.name}_kernel"
    params, prologue = _signature_and_prologue(ir, emitter)
    func = _jit_function(kernel_name, params, prologue + body)
    for stmt in prologue:
        for node in ast.walk(stmt):
            if hasattr(node, "lineno"):
                node.lineno = 0
    kernel_src = to_source(ast.fix_missing_locations(func))
    locations = _user_locations(func, kernel_src, emitter)
    checks = tuple(ir.checks) + tuple(emitter.records.checks)
    persistent = _persistent_kernel(ir, emitter, kernel_name) if loops else None
    if persistent is not None:
        kernel_src += "\n\n\n" + persistent.source
    launcher_src = _launcher(ir, emitter, checks, written, persistent)
    helpers = [HELPERS[h].strip() for h in sorted(HELPERS) if h + "(" in kernel_src]
    header = [
        f'"""ntsym kernel `{ir.name}` (generated; do not edit)."""',
        "",
        "import torch",
        "import triton",
        "import triton.language as tl",
    ]
    if emitter.records.uses_libdevice:
        header.append("from ntsym.language import libdevice")
    header += ["", "from codegen import runtime", "from codegen.runtime import cdiv, next_power_of_2"]
    parts = ["\n".join(header)] + helpers + [kernel_src, launcher_src]
    source = "\n\n\n".join(parts) + "\n"
    generated = Generated(source, kernel_name, "launch", checks, emitter.records.pow2, written)
    generated.locations = locations
    # Whether the kernel has a loop: without one, software pipelining
    # (num_stages) changes nothing, and tuning spends its budget on warps.
    generated.loops = loops
    # Tensors the application indexes past its arrangement (`x.source[...]`).
    generated.sourced = frozenset(emitter.records.sourced)
    # Tensors the kernel loads from (a written one among them cannot be a
    # freshly allocated output).
    generated.read = frozenset(emitter.records.loaded)
    generated.persistent = persistent is not None
    generated.persistent_name = persistent.name if persistent is not None else None
    generated.advance_flag = emitter.records.advance_flag if emitter.records.advances else None
    # Jagged kernels: the tests under which a program returns at once.
    generated.empty_tests = _empty_program_tests(ir, emitter) if ir.jagged else None
    return generated


def _jit_function(name, params, body):
    """``@triton.jit def name(params): body`` as an AST."""
    return ast.FunctionDef(
        name=name,
        args=ast.arguments(posonlyargs=[], args=params, vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]),
        body=body,
        decorator_list=[ast.Attribute(value=ast.Name(id="triton", ctx=ast.Load()), attr="jit", ctx=ast.Load())],
        returns=None,
        type_params=[],
        lineno=1,
    )


def _user_locations(func, kernel_src, emitter):
    """Generated kernel line (text) -> (file, line, source line) of the
    application statement it came from, to point errors at the user's code."""
    reparsed = ast.parse(kernel_src).body[0]
    lines = kernel_src.splitlines()
    mapping = {}
    for gen, orig in zip(ast.walk(reparsed), ast.walk(func)):
        if isinstance(gen, ast.stmt) and getattr(orig, "lineno", 0):
            text = lines[gen.lineno - 1].strip()
            user = None
            if emitter.source_lines and orig.lineno <= len(emitter.source_lines):
                user = emitter.source_lines[orig.lineno - 1].strip()
            mapping.setdefault(text, (emitter.filename, orig.lineno, user))
    return mapping


def _arg(name, constexpr=False):
    annotation = None
    if constexpr:
        annotation = ast.Attribute(value=ast.Name(id="tl", ctx=ast.Load()), attr="constexpr", ctx=ast.Load())
    return ast.arg(arg=name, annotation=annotation)


def _kernel_args(ir, emitter):
    """(name, constexpr) for every kernel parameter, in order."""
    args = []
    for p in ir.params:
        if p.kind == "tensor":
            args.append((f"{p.name}_ptr", False))
        elif p.kind == "scalar":
            args.append((p.name, False))
        elif p.kind == "constexpr":
            args.append((p.name, True))
        elif p.kind == "offsets":
            args.append((p.name, False))
    for a in ir.size_args:
        args.append((a.symbol.name, a.constexpr))
    for tensor, flag in sorted(emitter.records.contiguity_flags.items()):
        args.append((flag, True))
    for m in ir.meta_params:
        args.append((m.symbol.name, True))
    for n, s in emitter.records.pow2.items():
        args.append((s.name, True))
    for name in emitter.records.whole:
        args.append((name, True))
    if emitter.records.advances:
        args.append((emitter.records.advance_flag, True))
    args.append((emitter.records.int64_flag, True))
    return args


def _signature_and_prologue(ir, emitter):
    params = [_arg(n, c) for n, c in _kernel_args(ir, emitter)]
    cast = [f"pid = pid.to(tl.int64)"]
    for a in ir.size_args:
        if a.kind == "stride":
            cast.append(f"{a.symbol.name} = tl.cast({a.symbol.name}, tl.int64)")
    code = f"pid = tl.program_id(0)\nif {emitter.records.int64_flag}:\n" + "\n".join("    " + c for c in cast)
    prologue = ast.parse(code + "\n" + _split_program_id(ir) + _jagged_prologue(ir, emitter)).body
    for name, node in emitter.records.prologue_defs.values():
        prologue.append(ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=node, lineno=0))
    return params, prologue


def _jagged_prologue(ir, emitter):
    """Each jagged tensor's sequence: its start and length, read from the
    offsets, and the tensor's pointer moved to the start.  Where every tensor
    the kernel writes is jagged and this program's tile of each lies past its
    sequence's end, the program returns at once (the grid runs over the
    longest row: the programs past a shorter row have nothing to do)."""
    if not ir.jagged:
        return ""
    printer = Printer()
    code = ""
    for j in ir.jagged:
        batch = _paren(to_source(printer(j.batch)))
        stride = to_source(printer(j.stride))
        code += (
            f"\n{j.start.name} = tl.load({j.offsets} + {batch}).to(tl.int64)"
            f"\n{j.seq_len.name} = (tl.load({j.offsets} + {batch} + 1) - {j.start.name}).to(tl.int32)"
            f"\n{j.name}_ptr = {j.name}_ptr + {j.start.name} * {_paren(stride)}"
        )
    tests = _empty_program_tests(ir, emitter)
    if tests:
        code += f"\nif {' and '.join(tests)}:\n    return"
    return code


def _empty_program_tests(ir, emitter):
    """Per tensor the kernel writes, a test that this program's tile of it is
    empty; None where some written tensor has none (then no early return)."""
    by_name = {j.name: j for j in ir.jagged}
    written = emitter.records.stored
    if not written or emitter.records.sourced or not all(by_name.get(w) and by_name[w].empty for w in written):
        return None
    printer = Printer()
    tests = []
    for w in sorted(written):
        parts = [to_source(printer(r)) for r in by_name[w].empty]
        tests.append("(" + " or ".join(f"({p})" for p in parts) + ")")
    return tests


def _split_program_id(ir):
    """Statements computing the program indices from ``pid``."""
    printer = Printer()
    code = ""
    # Split the program id over the grid, last dimension fastest; dimensions
    # of size one have index 0 (the lowering already substituted it).
    dims = [(v.name, g) for v, g in zip(ir.program_vars, ir.grid) if g != 1]
    if len(dims) == 2 and reuses_tiles(ir):
        # Programs share tiles along both grid dimensions (a matrix product's
        # rows and columns): visit them in groups of GROUP_SIZE rows so that
        # the tiles they share stay in L2, as Triton's matmul tutorial does.
        (m, gm), (n, gn) = dims
        gm, gn = _paren(to_source(printer(gm))), _paren(to_source(printer(gn)))
        code += (
            f"\nper_group = {GROUP_SIZE} * {gn}"
            f"\nfirst_{m} = pid // per_group * {GROUP_SIZE}"
            f"\ngroup_rows = tl.minimum({gm} - first_{m}, {GROUP_SIZE})"
            f"\n{m} = first_{m} + pid % per_group % group_rows"
            f"\n{n} = pid % per_group // group_rows"
        )
        dims = []
    rest = "pid"
    for k in range(len(dims) - 1, -1, -1):
        name, g = dims[k]
        if k == 0:
            code += f"\n{name} = {rest}"
            break
        g = _paren(to_source(printer(g)))
        code += f"\n{name} = {rest} % {g}"
        code += f"\nrest_{k} = {rest} // {g}" if k > 1 else f"\n{dims[0][0]} = {rest} // {g}"
        if k == 1:
            break
        rest = f"rest_{k}"
    return code


GROUP_SIZE = 8


class Persistent:
    """The persistent variant of a kernel with loops: ``programs`` programs
    (one per multiprocessor) walk the same tiles in a loop, and tiles that
    meet the tensor memory accelerator's rules move through tensor
    descriptors.  Its parameters are the plain kernel's positional ones, then
    ``extra`` (sizes and strides only descriptors use), ``NTSYM_TILES``, then
    the plain kernel's keyword ones and those only it has (padded blocks and
    peeled loops of its own ``emitter``)."""

    def __init__(self, name, source, emitter, extra):
        self.name = name
        self.source = source
        self.emitter = emitter
        self.extra = extra


def _tma_available():
    """Whether this Triton has device-side tensor descriptors and flattened loops."""
    try:
        import inspect

        import triton.language as tl

        return hasattr(tl, "make_tensor_descriptor") and "flatten" in inspect.signature(tl.range.__init__).parameters
    except Exception:
        return False


def _persistent_kernel(ir, plain, kernel_name):
    """The persistent, tensor-descriptor variant of the kernel, or None where
    no tile of a loop can be read through a descriptor."""
    if not _tma_available() or ir.jagged:
        return None  # jagged tensors move their pointers per program: no descriptors
    emitter = KernelEmitter(ir, tma=True, read=plain.records.loaded)
    # The plain kernel's names for padded blocks, peeled loops and contiguity
    # flags, so that both kernels share their parameters.
    emitter.records.pow2 = dict(plain.records.pow2)
    emitter.records.whole = dict(plain.records.whole)
    emitter.records.contiguity_flags = dict(plain.records.contiguity_flags)
    try:
        body = emitter.emit_body()
    except EmitError:
        return None
    loads = [n for n in ast.walk(ast.Module(body=body, type_ignores=[]))
             if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "load"
             and isinstance(n.func.value, ast.Name) and n.func.value.id in emitter.records.descriptors]
    if (
        not loads or not _streams(body)
        or (emitter.records.advances and not plain.records.advances)  # the launcher passes the flag only where the plain kernel has it
        or set(emitter.records.contiguity_flags) != set(plain.records.contiguity_flags)
        or not set(emitter.records.checks) <= set(plain.records.checks)  # the launcher runs the plain kernel's checks
    ):
        return None
    printer = Printer()
    plain_args = _kernel_args(ir, plain)
    names = {n for n, _ in plain_args}
    positional = [(n, c) for n, c in plain_args if _positional(n, ir, plain)]
    keywords = [(n, c) for n, c in plain_args if not _positional(n, ir, plain)]
    new_keywords = [s.name for n, s in emitter.records.pow2.items() if n not in plain.records.pow2]
    new_keywords += [name for name in emitter.records.whole if name not in plain.records.whole]
    extra, creations = [], []
    for name, (p, block) in emitter.records.descriptors.items():
        sizes = [sympy.sympify(n).xreplace(emitter.records.size_subs) for n in p.sizes]
        strides = list(p.strides[:-1])
        for e in sizes + strides:
            for sym in sorted(sympy.sympify(e).free_symbols, key=lambda x: x.name):
                if sym.name not in names and sym.name not in extra:
                    extra.append(sym.name)
        call = ast.Call(
            func=ast.Attribute(value=ast.Name(id="tl", ctx=ast.Load()), attr="make_tensor_descriptor", ctx=ast.Load()),
            args=[ast.Name(id=f"{p.name}_ptr", ctx=ast.Load())],
            keywords=[
                ast.keyword(arg="shape", value=ast.List(elts=[printer(n) for n in sizes], ctx=ast.Load())),
                ast.keyword(arg="strides", value=ast.List(elts=[printer(st) for st in strides] + [ast.Constant(1)], ctx=ast.Load())),
                ast.keyword(arg="block_shape", value=ast.List(elts=[printer(b) for b in block], ctx=ast.Load())),
            ],
        )
        creations.append(ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=call, lineno=0))
    params = [_arg(n, c) for n, c in positional] + [_arg(n) for n in extra] + [_arg("NTSYM_TILES")]
    params += [_arg(n, c) for n, c in keywords] + [_arg(n, True) for n in new_keywords]
    aranges = [ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=node, lineno=0)
               for name, node in emitter.records.prologue_defs.values()]
    loop = ast.parse(
        "for pid in tl.range(tl.program_id(0), NTSYM_TILES, tl.num_programs(0), flatten=True):\n    pass"
    ).body[0]
    loop.body = ast.parse(_split_program_id(ir) or "pass").body + body
    name = f"{kernel_name}_persistent"
    source = to_source(ast.fix_missing_locations(_jit_function(name, params, creations + aranges + [loop])))
    return Persistent(name, source, emitter, extra)


def _streams(body):
    """Whether a tile's work is one loop that streams tiles, with nothing
    loaded before it: the shape Triton's loop flattening pipelines across
    tiles (the next tile's first loads overlap this tile's last steps and
    its store).  Other shapes gain nothing from a persistent grid without
    it, and flattening them fails to compile or runs slower (attention:
    3.6 times slower on an H100)."""
    nodes = list(ast.walk(ast.Module(body=body, type_ignores=[])))
    if any(isinstance(n, ast.Return) for n in nodes):
        return False  # a return would end the program, not the tile
    loops = runtime_loops(nodes)
    if len(loops) != 1 or loops[0] not in body or not isinstance(loops[0], ast.For):
        return False
    before = body[:body.index(loops[0])]
    return not any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "load"
        for stmt in before for n in ast.walk(stmt)
    )


def _positional(name, ir, emitter):
    """Whether the launcher passes kernel parameter ``name`` by position
    (the rest, chosen with the configuration, go by keyword)."""
    metas = {m.symbol.name for m in ir.meta_params}
    return not (name in metas or name in (emitter.records.int64_flag, emitter.records.advance_flag) or name.startswith("NTSYM_BLOCK_")
                or name in emitter.records.whole)


def _paren(text):
    return text if text.isidentifier() or text.isdigit() else f"({text})"


def _launcher(ir, emitter, checks, written, persistent=None):
    host = Printer(mode="host")
    lines = []
    tensor_params = [p for p in ir.params if p.kind == "tensor"]
    # Tensors the arrangement does not return give their sizes only.
    shaped = [p for p in ir.params if p.kind in ("tensor", "shape")]
    pnames = [p.name for p in ir.params if not (p.kind == "constexpr" and p.value is not None)]
    baked = {p.name: p.value for p in ir.params if p.kind == "constexpr" and p.value is not None}
    scalars = {p.name for p in ir.params if p.kind == "scalar"}
    metas = [m.symbol.name for m in ir.meta_params]
    sig = "*args"
    if metas:
        sig += ", " + ", ".join(f"{m}=None" for m in metas)
    lines.append(f"def launch({sig}, ntsym_options=None, **unknown):")
    body = []
    metas_tuple = "(" + "".join(f"{m}, " for m in metas) + ")"
    body.append(f"key = runtime.call_key(args, {metas_tuple}, ntsym_options)")
    body.append("entry = CALLS.get(key)")
    body.append("if entry is not None and not unknown:  # seen before: checks passed, config chosen")
    body.append("    return runtime.fast_launch(FACTS, entry, args)")
    # Parameters named by keyword, or compile-time values passed although the
    # kernel has them: bound to the kernel's own arguments, then launched so.
    metas_kw = "".join(f"{m}={m}, " for m in metas)
    body.append(f"if unknown or len(args) != {len(pnames)}:")
    body.append(f"    return launch(*runtime.bind_arguments(SPEC, args, unknown), {metas_kw}ntsym_options=ntsym_options)")
    body.append("runtime.check_arguments(SPEC, args)")
    body.append(f"{', '.join(pnames)}{',' if len(pnames) == 1 else ''} = args")
    for p in shaped:
        if not p.ndim:
            continue
        sizes = [s.name if isinstance(s, sympy.Symbol) else "_" for s in p.source_sizes]
        body.append(f"{', '.join(sizes)}{',' if p.ndim == 1 else ''} = {p.name}.shape")
        if p.kind == "tensor":
            strides = [s.name if isinstance(s, sympy.Symbol) else "_" for s in p.strides]
            body.append(f"{', '.join(strides)}{',' if p.ndim == 1 else ''} = {p.name}.stride()")
    for p in shaped:  # sizes declared with bounds or as powers of two
        for d, s in enumerate(p.source_sizes):
            lo, hi = getattr(s, "lower_bound", None), getattr(s, "upper_bound", None)
            pow2 = bool(getattr(s, "power_of_two", False))
            if isinstance(s, sympy.Symbol) and (lo is not None or hi is not None or pow2):
                body.append(f"runtime.check_size({p.name!r}, {d}, {s.name}, {lo!r}, {hi!r}, {pow2!r})")
    for p in shaped:  # after every size is read: shapes may refer to others
        for d, s in enumerate(p.source_sizes):
            if not isinstance(s, sympy.Symbol):
                body.append(f"runtime.check_shape({p.name!r}, {p.name}, {d}, {to_source(host(s))})")
    meta_names = {m.symbol.name for m in ir.meta_params}
    late = [(i, c) for i, c in enumerate(checks) if {s.name for s in c.relation.free_symbols} & meta_names]
    early = [(i, c) for i, c in enumerate(checks) if (i, c) not in late]
    def check_lines(i, check, indent=""):
        rel = to_source(host(check.relation))
        values = ", ".join(f"{v!r}: {v}" for v in sorted({s.name for s in check.relation.free_symbols}))
        return [f"{indent}if not ({rel}):", f"{indent}    runtime.fail_check(CHECKS[{i}], {{{values}}}, DISPLAY)"]

    for i, check in early:
        body.extend(check_lines(i, check))
    for m in ir.meta_params:
        name = m.symbol.name
        body.append(f"{name} = runtime.constexpr_value(SPEC, {name!r}, {name})")
    # Sizes whose values must be known at compile time.
    grid_expr = " * ".join(_paren(to_source(host(g))) for g in ir.grid) or "1"
    metas_dict = "{" + ", ".join(f"{m!r}: {m}" for m in metas) + "}"
    if late:
        # Checks that depend on block sizes run once the configuration is chosen.
        body.append("def late_checks(meta):")
        for m in metas:
            body.append(f"    {m} = meta[{m!r}]")
        for i, check in late:
            body.extend(check_lines(i, check, "    "))
    body.append(f"def grid(meta):")
    for m in metas:
        body.append(f"    {m} = meta[{m!r}]")
    body.append(f"    return ({grid_expr},)")
    args = []
    flags = {flag: tensor for tensor, flag in emitter.records.contiguity_flags.items()}
    for name, constexpr in _kernel_args(ir, emitter):
        if not _positional(name, ir, emitter):
            continue  # the configuration's, or derived from it
        if name in flags:
            args.append(f"runtime.contiguous({flags[name]}, ({''.join(t.name + ', ' for t in tensor_params)}))")
        elif name.endswith("_ptr") and name[:-4] in {p.name for p in tensor_params}:
            args.append(name[:-4])
        elif name in baked:
            args.append(repr(baked[name]))
        elif name in scalars:
            args.append(f"runtime.scalar({name})")
        else:
            args.append(name)
    def derived_values(emitter, skip):
        """Entries of the ``derived`` dict for ``emitter``'s padded blocks and
        peeled loops (those not in ``skip``); defines the functions they need."""
        entries = [f"{s.name!r}: lambda meta: next_power_of_2({to_source(host(n))})"
                   for n, s in emitter.records.pow2.items() if s.name not in skip]
        for name, (size, block) in emitter.records.whole.items():
            if name in skip:
                continue
            # Whether ``size`` is a multiple of ``block`` (whole blocks only).
            body.append(f"def {name.lower()}(meta):")
            for m in sorted({f.name for f in sympy.sympify(size).free_symbols | sympy.sympify(block).free_symbols} & set(metas)):
                body.append(f"    {m} = meta[{m!r}]")
            body.append(f"    return ({to_source(host(size))}) % ({to_source(host(block))}) == 0")
            entries.append(f"{name!r}: {name.lower()}")
        return entries

    derived = derived_values(emitter, ())
    body.append(f"derived = {{{', '.join(derived)}}}")
    body.append(f"tensors = ({', '.join(p.name for p in tensor_params)}{',' if len(tensor_params) == 1 else ''})")
    named = "grid=grid, derived=derived, options=ntsym_options, key=key, user_args=args"
    if late:
        named += ", late_checks=late_checks"
    if persistent is not None:
        named += ", persistent=persistent"
        t = persistent.emitter
        skip = {s.name for s in emitter.records.pow2.values()} | set(emitter.records.whole)
        more = derived_values(t, skip)
        # Whether the tensors and the chosen block shapes meet the tensor
        # memory accelerator's rules (alignment, unit inner stride, ...).
        body.append("def persistent_problem(meta):")
        for m in metas:
            body.append(f"    {m} = meta[{m!r}]")
        for n, sym in t.records.pow2.items():
            body.append(f"    {sym.name} = next_power_of_2({to_source(host(n))})")
        blocks = []
        for name, (p, block) in t.records.descriptors.items():
            shape = ", ".join(to_source(host(b)) for b in block)
            blocks.append(f"({p.name!r}, {p.name}, ({shape},))")
        body.append(f"    return runtime.tma_problem(({', '.join(blocks)},))")
        body.append(
            f"persistent = runtime.Persistent(FACTS.persistent_kernel, persistent_problem, "
            f"({''.join(e + ', ' for e in persistent.extra)}), {{**derived, {', '.join(more)}}})"
        )
    body.append(
        f"return runtime.launch(FACTS, ({', '.join(args)}{',' if len(args) == 1 else ''}), "
        f"{metas_dict}, tensors, {named})"
    )
    src = "\n".join(lines + ["    " + b for b in body])
    launch = ast.parse(src).body[0]
    # One launcher per kernel handle: kernels with the same source share the
    # module (and the compiled Triton kernel) but not their facts
    # (runtime.LaunchFacts, made by make()).
    factory = ast.parse(
        "def make_launch(FACTS):\n"
        '    """The launcher, bound to one kernel\'s facts."""\n'
        "    SPEC, CHECKS, DISPLAY = FACTS.spec, FACTS.checks, FACTS.display\n"
        "    CALLS = FACTS.cache.calls\n"
        "    return launch"
    ).body[0]
    factory.body.insert(len(factory.body) - 1, launch)
    return ast.unparse(factory)


def _streamed_tiles(ir):
    """For tensors whose tiles a loop streams through (more than two levels):
    (tensor position, a function of the meta values giving the tile's element
    count).  The tuner estimates pipelined shared memory from these."""
    metas = [m.symbol for m in ir.meta_params]
    tiles = []
    position = 0
    for p in ir.params:
        if p.kind != "tensor":
            continue
        if len(p.levels) > 2:
            count = sympy.Mul(*p.levels[-1])
            if count.free_symbols <= set(metas):
                fn = sympy.lambdify(metas, count, modules=[{}, "math"])
                dims = tuple(
                    tuple(sorted(s.name for s in sympy.sympify(d).free_symbols)) for d in p.levels[-1]
                )
                tiles.append((position, fn, tuple(m.name for m in metas), dims))
        position += 1
    return tuple(tiles)


def spec(ir, generated):
    """Facts the runtime needs, as plain data (stored beside the module)."""
    from codegen.runtime import Spec, TensorSpec, interpreting

    tensors = []
    for p in ir.params:
        tensors.append(
            TensorSpec(
                name=p.name,
                kind=p.kind,
                ndim=p.ndim,
                dtype=p.dtype,
                written=p.name in generated.written,
                value=p.value,
            )
        )
    template, position = [], 0
    for p in ir.params:
        if p.kind == "constexpr" and p.value is not None:
            template.append(("value", p.value))
            continue
        if p.kind == "shape":  # read by the launcher, not passed to the kernel
            position += 1
            continue
        template.append(("scalar" if p.kind == "scalar" else "arg", position))
        position += 1
    arithmetic = arithmetic_parameters(ir.application, [p.name for p in ir.params if p.kind == "tensor"],
                                       ir.inline_functions)
    return Spec(
        arithmetic=frozenset(arithmetic),
        arg_template=tuple(template),
        meta_by_name={m.symbol.name: m for m in ir.meta_params},
        name=ir.name,
        params=tuple(tensors),
        metas=tuple(ir.meta_params),
        int64_flag="NTSYM_INT64",
        advance_flag=generated.advance_flag,
        num_warps=ir.num_warps,
        num_stages=ir.num_stages,
        max_num_configs=ir.max_num_configs,
        streamed_tiles=_streamed_tiles(ir),
        loops=generated.loops,
        kernel_source=generated.source,
        locations=generated.locations,
        interpreting=interpreting(),
        jagged=frozenset(j.name for j in ir.jagged),
    )
