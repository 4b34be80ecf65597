"""Assemble the generated module: helpers, the ``@triton.jit`` kernel and its
launcher, as formatted, deterministic source."""

import ast
from dataclasses import dataclass
from types import MappingProxyType

import sympy

from ntsym_codegen import data_races, triton_compat
from ntsym_codegen.analysis import arithmetic_parameters, has_loops, reuses_tiles, runtime_loops, scalar_outputs
from ntsym_codegen.arguments import kernel_arguments
from ntsym_codegen.astutil import generated_assign
from ntsym_codegen.index_width import IndexPeak, multiplied_sizes, peaks, widened_loops, widened_ranges
from ntsym_codegen.kernel import EmitError, KernelEmitter
from ntsym_codegen.lanes import STALE, stale_refusal
from ntsym_codegen.launcher import launcher
from ntsym_codegen.printer import Printer, to_source
from ntsym_codegen.promotion import meetings
from ntsym_codegen.reshaping import HELPERS as RESHAPE_HELPERS
from ntsym_codegen.semantics import HELPERS as SEMANTIC_HELPERS
from ntsym_codegen.sorting import HELPERS as SORT_HELPERS
from ntsym_codegen.semantics import INTERPRETING as SEMANTIC_INTERPRETING
from ntsym_codegen.strategies import DESCRIPTORS
from ntsym_codegen.signature import jit_function, kernel_args, param, positional
from ntsym_codegen.template import stmt, stmts

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
    "ntsym_lowest": """
@triton.jit
def ntsym_lowest(mask, x):
    \"\"\"``x`` with the lanes outside ``mask`` set to its type's lowest value
    (the identity of max and argmax), in its own type.\"\"\"
    if x.dtype == tl.int8:
        y = tl.where(mask, x, -128).to(tl.int8)
    elif x.dtype == tl.int16:
        y = tl.where(mask, x, -32768).to(tl.int16)
    elif x.dtype == tl.int32:
        y = tl.where(mask, x, -2147483648).to(tl.int32)
    elif x.dtype == tl.int64:
        y = tl.where(mask, x, -9223372036854775808).to(tl.int64)
    elif x.dtype == tl.uint8 or x.dtype == tl.uint16 or x.dtype == tl.uint32 or x.dtype == tl.uint64:
        y = tl.where(mask, x, 0).to(x.dtype)
    elif x.dtype == tl.int1:
        y = mask & x
    else:
        y = tl.where(mask, x, float("-inf")).to(x.dtype)
    return y
""",
    "ntsym_highest": """
@triton.jit
def ntsym_highest(mask, x):
    \"\"\"``x`` with the lanes outside ``mask`` set to its type's highest value
    (the identity of min and argmin), in its own type.\"\"\"
    if x.dtype == tl.int8:
        y = tl.where(mask, x, 127).to(tl.int8)
    elif x.dtype == tl.int16:
        y = tl.where(mask, x, 32767).to(tl.int16)
    elif x.dtype == tl.int32:
        y = tl.where(mask, x, 2147483647).to(tl.int32)
    elif x.dtype == tl.int64:
        y = tl.where(mask, x, 9223372036854775807).to(tl.int64)
    elif x.dtype == tl.uint8:
        y = tl.where(mask, x, 255).to(tl.uint8)
    elif x.dtype == tl.uint16:
        y = tl.where(mask, x, 65535).to(tl.uint16)
    elif x.dtype == tl.uint32:
        y = tl.where(mask, x, 4294967295).to(tl.uint32)
    elif x.dtype == tl.uint64:
        y = tl.where(mask, x, 18446744073709551615).to(tl.uint64)
    elif x.dtype == tl.int1:
        y = ~mask | x
    else:
        y = tl.where(mask, x, float("inf")).to(x.dtype)
    return y
""",
    "ntsym_flip": """
@triton.jit
def ntsym_flip(x, mask, dim: tl.constexpr):
    \"\"\"``x`` flipped along ``dim`` within the lanes ``mask`` keeps (a
    prefix of each row): lane i takes lane count - 1 - i; the others stay.\"\"\"
    inside = tl.where(mask, 1, 0) + tl.zeros(x.shape, tl.int32)
    count = tl.sum(inside, dim, keep_dims=True)
    position = tl.cumsum(tl.full(x.shape, 1, tl.int32), dim) - 1
    return tl.gather(x, tl.where(position < count, count - 1 - position, position), dim)
""",
    "ntsym_mod": """
@triton.jit
def ntsym_mod(a, b):
    \"\"\"The remainder in [0, b) for b > 0, whether % truncates or floors.\"\"\"
    r = a - a // b * b
    return tl.where(r < 0, r + b, r)
""",
    **SEMANTIC_HELPERS,
    **RESHAPE_HELPERS,
    **SORT_HELPERS,
}


@dataclass(frozen=True)
class ModuleFlags:
    """What a launcher computes besides the call's arguments, as the emitter
    recorded it (``ntsym_codegen.context.ModuleRecords``), copied read-only."""

    pow2: MappingProxyType  # size -> the symbol of its padded power-of-two block
    whole: MappingProxyType  # peeled loop's flag -> (size, block): size % block == 0
    contiguity_flags: MappingProxyType  # tensor -> the flag set when it is contiguous
    int64_flag: str  # the name of the 64-bit index math flag
    advance_flag: str  # the name of the carried-pointers flag (passed where a loop carries some)
    uses_libdevice: bool  # the kernel names ``libdevice`` (an import)

    @classmethod
    def of(cls, records):
        return cls(MappingProxyType(dict(records.pow2)), MappingProxyType(dict(records.whole)),
                   MappingProxyType(dict(records.contiguity_flags)), records.int64_flag, records.advance_flag,
                   records.uses_libdevice)


@dataclass(frozen=True, eq=False)
class Generated:
    """What the emitter produces, fixed once ``emit`` returns: the module's
    text in its parts (so that no reader cuts it apart) and the facts the
    front end, the launch plan and the other targets read."""

    source: str  # the whole module: header, helpers, kernels, launcher
    header: str  # the module's docstring and imports
    kernel_name: str
    launcher_name: str
    checks: tuple  # launch checks: the IR's, then those the emitter found
    pow2: dict  # size -> the symbol of its padded power-of-two block
    written: list  # tensors the kernel stores to, sorted
    helpers: tuple  # the ``@triton.jit`` helper functions the kernels call, as text
    kernels: str  # the kernel, then its persistent variant where there is one
    launcher: str  # ``make_launch``: the torch launcher's text
    locations: dict  # generated kernel line -> (file, line, source line) of the application
    # Whether the kernel has a loop: without one, software pipelining
    # (num_stages) changes nothing, and tuning spends its budget on warps.
    loops: bool
    sourced: frozenset  # tensors the application indexes past its arrangement (``x.source[...]``)
    addressed: frozenset  # tensors whose pointer the application takes (``x.source.data_ptr()``): views of them are never taken apart
    read: frozenset  # tensors the kernel loads from (a written one cannot be a fresh output)
    persistent_name: object  # the persistent variant's name, or None
    advance_flag: object  # the compile-time flag of carried pointers, or None where no loop carries one
    # Every kernel parameter in order: (name, is constexpr), and the same
    # classified by where a launcher takes its value (codegen/arguments.py).
    kernel_args: tuple
    arguments: tuple
    flags: ModuleFlags  # how a launcher computes the compile-time flags and padded blocks
    empty_tests: object  # jagged kernels: the tests under which a program returns at once
    same_lengths: tuple = ()  # (a, b, block, why): jagged tensors whose sequences must have as many blocks

    @property
    def persistent(self):
        return self.persistent_name is not None


def emit(ir):
    emitter = KernelEmitter(ir)
    body = emitter.emit_body()
    data_races.check(emitter)
    loops = has_loops(body)
    written = sorted(emitter.records.stored)
    kernel_name = f"{ir.name}_kernel"
    params, prologue = _signature_and_prologue(ir, emitter)
    func = jit_function(kernel_name, params, prologue + widened_loops(body, emitter.records.int64_flag) + body)
    for statement in prologue:
        for node in ast.walk(statement):
            if hasattr(node, "lineno"):
                node.lineno = 0
    _debug_compiled(func, emitter)
    kernel_src = to_source(ast.fix_missing_locations(func))
    locations = _user_locations(func, kernel_src, emitter)
    checks = tuple(ir.checks) + tuple(emitter.records.checks)
    persistent = _persistent_kernel(ir, emitter, kernel_name) if loops else None
    if persistent is not None:
        kernel_src += "\n\n\n" + persistent.source
    if STALE in kernel_src:  # a stale mask (codegen/lanes.py) is never emitted
        raise EmitError(stale_refusal("an operation", "a value", unnamed=True), None, emitter.filename,
                        emitter.source_lines)
    launcher_src = launcher(ir, emitter, checks, persistent)
    helpers = [HELPERS[h].strip() for h in sorted(_helpers_called(kernel_src))]
    if any("libdevice." in h for h in helpers):  # ntsym_fmod: exact on a GPU
        emitter.records.uses_libdevice = True
    functions = {**(persistent.emitter.records.functions if persistent is not None else {}),
                 **emitter.records.functions}  # ntsym_fn_ helpers either kernel calls
    helpers += [functions[f] for f in sorted(functions)]
    interpreting_switch = any("NTSYM_INTERPRETING" in h for h in helpers)
    header = [
        f'"""ntsym kernel `{ir.name}` (generated; do not edit)."""',
        "",
        *(["import os", ""] if interpreting_switch else []),
        "import torch",
        "import triton",
        "import triton.language as tl",
    ]
    if emitter.records.uses_libdevice:
        header.append("from ntsym.language import libdevice")
    header += ["", "from ntsym_codegen import runtime", "from ntsym_codegen.runtime import cdiv, next_power_of_2"]
    if any("def ntsym_check_index(" in h for h in helpers):
        header.append("from ntsym_codegen import debug_checks")
    if interpreting_switch:
        header += ["", SEMANTIC_INTERPRETING]
    parts = ["\n".join(header)] + helpers + [kernel_src, launcher_src]
    source = "\n\n\n".join(parts) + "\n"
    flags = ModuleFlags.of(emitter.records)
    args = tuple(kernel_args(ir, emitter))
    return Generated(
        source=source, header=parts[0], kernel_name=kernel_name, launcher_name="launch", checks=checks,
        pow2=emitter.records.pow2, written=written, helpers=tuple(helpers), kernels=kernel_src,
        launcher=launcher_src, locations=locations, loops=loops, sourced=frozenset(emitter.records.sourced),
        addressed=frozenset(emitter.records.addressed),
        read=frozenset(emitter.records.loaded),
        persistent_name=persistent.name if persistent is not None else None,
        advance_flag=emitter.records.advance_flag if emitter.records.advances else None,
        kernel_args=args, arguments=kernel_arguments(ir, args, flags), flags=flags,
        empty_tests=_empty_program_tests(ir, emitter) if ir.jagged else None,
        same_lengths=tuple(emitter.records.same_lengths),
    )


def _debug_compiled(func, emitter):
    """Under ``NTSYM_DEBUG`` (the kernel checks indices read from data):
    ``func`` compiled with ``debug=True``, so that the device asserts fire on
    a GPU; each kernel of the module (the plain one, the persistent variant)
    by what its own emitter wrote."""
    if "ntsym_check_index" in emitter.records.helpers:
        func.decorator_list = [ast.parse("triton.jit(debug=True)", mode="eval").body]


def _helpers_called(kernel_src):
    """The names of the helpers the kernel calls, and those they call."""
    names = {h for h in HELPERS if h + "(" in kernel_src}
    while True:
        more = {h for h in HELPERS if h not in names and any(h + "(" in HELPERS[n] for n in names)}
        if not more:
            return names
        names |= more


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


def _signature_and_prologue(ir, emitter):
    params = [param(n, c) for n, c in kernel_args(ir, emitter)]
    strides = [a.symbol.name for a in ir.size_args if a.kind == "stride"]
    strides += multiplied_sizes(ir.params, ir.size_args)  # products of sizes in index math
    prologue = stmts(
        """
        pid = tl.program_id(0)
        if {flag}:
            pid = pid.to(tl.int64)
            {casts}
        """,
        flag=emitter.records.int64_flag,
        casts=[stmt("{s} = tl.cast({s}, tl.int64)", s=s) for s in strides],
    )
    prologue += _split_program_id(ir) + _jagged_prologue(ir, emitter)
    for name, node in emitter.records.prologue_defs.values():
        prologue.append(generated_assign(name, node))
    return params, prologue + widened_ranges(emitter.records.prologue_defs.values(), emitter.records.int64_flag)


def _jagged_prologue(ir, emitter):
    """Each jagged tensor's sequence: its start and length, read from the
    offsets, and the tensor's pointer moved to the start.  Where every tensor
    the kernel writes is jagged and this program's tile of each lies past its
    sequence's end, the program returns at once (the grid runs over the
    longest row: the programs past a shorter row have nothing to do)."""
    if not ir.jagged:
        return []
    printer = Printer()
    code = []
    for j in ir.jagged:
        code += stmts(
            """
            {start} = tl.load({offsets} + {batch}).to(tl.int64)
            {length} = (tl.load({offsets} + {batch} + 1) - {start}).to(tl.int32)
            {pointer} = {pointer} + {start} * {stride}
            """,
            start=j.start.name, length=j.seq_len.name, offsets=j.offsets, batch=printer(j.batch),
            pointer=f"{j.name}_ptr", stride=printer(j.stride),
        )
    tests = _empty_program_tests(ir, emitter)
    if tests:
        code += stmts("if {empty}:\n    return", empty=" and ".join(tests))
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
    # Split the program id over the grid, last dimension fastest; dimensions
    # of size one have index 0 (the lowering already substituted it).
    dims = [(v.name, printer(g)) for v, g in zip(ir.program_vars, ir.grid) if g != 1]
    if len(dims) == 2 and reuses_tiles(ir):
        # Programs share tiles along both grid dimensions (a matrix product's
        # rows and columns): visit them in groups of GROUP_SIZE rows so that
        # the tiles they share stay in L2, as Triton's matmul tutorial does.
        (m, gm), (n, gn) = dims
        return stmts(
            """
            per_group = {group} * {gn}
            {first} = pid // per_group * {group}
            group_rows = tl.minimum({gm} - {first}, {group})
            {m} = {first} + pid % per_group % group_rows
            {n} = pid % per_group // group_rows
            """,
            group=GROUP_SIZE, gm=gm, gn=gn, m=m, n=n, first=f"first_{m}",
        )
    code = []
    rest = "pid"
    for k in range(len(dims) - 1, -1, -1):
        name, g = dims[k]
        if k == 0:
            code += stmts("{name} = {rest}", name=name, rest=rest)
            break
        quotient = f"rest_{k}" if k > 1 else dims[0][0]
        code += stmts("{name} = {rest} % {g}\n{quotient} = {rest} // {g}", name=name, rest=rest, g=g, quotient=quotient)
        if k == 1:
            break
        rest = quotient
    return code


GROUP_SIZE = 8


class Persistent:
    """The tensor-descriptor variant of a kernel with loops: tiles that meet
    the tensor memory accelerator's rules move through tensor descriptors.
    Where a tile's work is one loop streaming tiles (``_streams``), it is
    persistent: ``programs`` programs (one per multiprocessor) walk the same
    tiles in a loop; else (``per_tile``) it runs one program per tile, as the
    plain kernel does.  Its parameters are the plain kernel's positional ones,
    then ``extra`` (sizes and strides only descriptors use), ``NTSYM_TILES``,
    then the plain kernel's keyword ones and those only it has (padded blocks
    and peeled loops of its own ``emitter``)."""

    def __init__(self, name, source, emitter, extra, per_tile=False):
        self.name = name
        self.source = source
        self.emitter = emitter
        self.extra = extra
        self.per_tile = per_tile


def _persistent_kernel(ir, plain, kernel_name):
    """The tensor-descriptor variant of the kernel (persistent, or one program
    per tile: ``Persistent``), or None where no tile of a loop can be read
    through a descriptor."""
    if not triton_compat.device_tensor_descriptors() or ir.jagged:
        return None  # jagged tensors move their pointers per program: no descriptors
    emitter = KernelEmitter(ir, access=DESCRIPTORS, read=plain.records.loaded)
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
        not loads
        or (emitter.records.advances and not plain.records.advances)  # the launcher passes the flag only where the plain kernel has it
        or set(emitter.records.contiguity_flags) != set(plain.records.contiguity_flags)
        or not set(emitter.records.checks) <= set(plain.records.checks)  # the launcher runs the plain kernel's checks
    ):
        return None
    printer = Printer()
    plain_args = kernel_args(ir, plain)
    names = {n for n, _ in plain_args}
    positional_args = [(n, c) for n, c in plain_args if positional(n, ir, plain)]
    keywords = [(n, c) for n, c in plain_args if not positional(n, ir, plain)]
    new_keywords = [s.name for n, s in emitter.records.pow2.items() if n not in plain.records.pow2]
    new_keywords += [name for name in emitter.records.whole if name not in plain.records.whole]
    extra, creations = [], []
    for name, (p, block) in emitter.records.descriptors.items():
        sizes = [sympy.sympify(n).xreplace(emitter.records.size_subs) for n in p.sizes]
        flag = emitter.records.transposed.get(name)
        strides = list(p.strides if flag else p.strides[:-1])
        for e in sizes + strides:
            for sym in sorted(sympy.sympify(e).free_symbols, key=lambda x: x.name):
                if sym.name not in names and sym.name not in extra:
                    extra.append(sym.name)
        creation = generated_assign(name, _descriptor(p, sizes, p.strides[:-1], block, printer))
        if flag:
            # The last two dimensions swapped: the next-to-last has unit stride.
            swap = lambda xs: list(xs[:-2]) + [xs[-1], xs[-2]]  # noqa: E731
            swapped = generated_assign(name, _descriptor(p, swap(sizes), swap(p.strides)[:-1], swap(block), printer))
            creation = ast.If(test=ast.Name(id=flag, ctx=ast.Load()), body=[swapped], orelse=[creation])
        creations.append(creation)
    params = [param(n, c) for n, c in positional_args] + [param(n) for n in extra] + [param("NTSYM_TILES")]
    params += [param(n, c) for n, c in keywords] + [param(n, True) for n in new_keywords]
    params += [param(flag, True) for flag in emitter.records.transposed.values()]
    aranges = _used_defs(emitter.records.prologue_defs.values(), body)
    per_tile = not _streams(body)
    if per_tile:  # one program per tile (NTSYM_TILES of them), reading through descriptors
        work = stmts("pid = tl.program_id(0)") + _split_program_id(ir) + body
    else:
        work = [stmt(
            """
            for pid in tl.range(tl.program_id(0), NTSYM_TILES, tl.num_programs(0), flatten=True):
                {split}
                {body}
            """,
            split=_split_program_id(ir) or [ast.Pass()],
            body=body,
        )]
    name = f"{kernel_name}_persistent"
    func = jit_function(name, params, creations + aranges + work)
    _debug_compiled(func, emitter)  # its index checks fire as the plain kernel's do
    source = to_source(ast.fix_missing_locations(func))
    return Persistent(name, source, emitter, extra, per_tile)


def _descriptor(p, sizes, strides, block, printer):
    """``tl.make_tensor_descriptor(p_ptr, ...)`` over ``sizes``, with ``strides``
    for all but the last dimension (whose stride is 1)."""
    return ast.Call(
        func=ast.Attribute(value=ast.Name(id="tl", ctx=ast.Load()), attr="make_tensor_descriptor", ctx=ast.Load()),
        args=[ast.Name(id=f"{p.name}_ptr", ctx=ast.Load())],
        keywords=[
            ast.keyword(arg="shape", value=ast.List(elts=[printer(n) for n in sizes], ctx=ast.Load())),
            ast.keyword(arg="strides", value=ast.List(elts=[printer(st) for st in strides] + [ast.Constant(1)], ctx=ast.Load())),
            ast.keyword(arg="block_shape", value=ast.List(elts=[printer(b) for b in block], ctx=ast.Load())),
        ],
    )


def _used_defs(defs, body):
    """``name = node`` for the (name, node) pairs of ``defs`` that ``body`` or a
    kept one reads (a descriptor's load names the ranges of its tile's
    address, which its lanes are read by, but may not use them)."""
    defs = list(defs)
    used = {n.id for n in ast.walk(ast.Module(body=body, type_ignores=[])) if isinstance(n, ast.Name)}
    kept = set()
    while True:
        more = {name for name, _ in defs if name in used and name not in kept}
        if not more:
            break
        kept |= more
        for name, node in defs:
            if name in more:
                used |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    return [generated_assign(name, node) for name, node in defs if name in kept]


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
    from ntsym_codegen.runtime import Spec, TensorSpec, interpreting

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
        scalar_outputs=scalar_outputs(ir.application, [p.name for p in ir.params if p.kind == "scalar"]),
        meetings=meetings(ir.application, {p.name for p in ir.params if p.kind == "tensor"}),
        arg_template=tuple(template),
        meta_by_name={m.symbol.name: m for m in ir.meta_params},
        name=ir.shown_name,
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
        ragged=tuple((j.name, j.dim, j.offsets) for j in ir.jagged),
        same_rows=tuple(ir.same_rows),
        same_lengths=generated.same_lengths,
        untouched=frozenset(p.name for p in ir.params if p.kind == "tensor") - generated.read
        - set(generated.written) - generated.sourced - {j.name for j in ir.jagged},
        index_peak=_index_peak(ir),
        addressed=frozenset(generated.addressed),
    )


def _index_peak(ir):
    """Whether a launch's logical indices can pass 2**31 - 1 (codegen/index_width.py)."""
    tensor_names = [p.name for p in ir.params if p.kind == "tensor"]
    aliases = {j.seq_len: j.longest for j in ir.jagged}  # a row is at most the longest
    return IndexPeak(peaks(ir.params), ir.size_args, tensor_names, ir.meta_params, aliases)
