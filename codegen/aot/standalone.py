"""A standalone Python module: the generated kernel and a launcher that needs
only ``torch`` and ``triton``."""

from ntsym_codegen.aot.common import AotError
from ntsym_codegen.ir import padded_sizes
from ntsym_codegen.options import ADVANCE, NUM_STAGES, NUM_WARPS
from ntsym_codegen.launcher import read_sizes
from ntsym_codegen.printer import Printer, to_source

_HOST = Printer(mode="host")


def standalone_source(ir, generated, display, configs, spec, padded=None):
    """The generated ``@triton.jit`` kernel and a launcher that needs only
    ``torch`` and ``triton``: the torch launcher's argument checks (embedded
    from the runtime, codegen/aot/embedded.py), shape and launch checks,
    compile-time values checked as it checks them, index width, the
    compile-time flags, written tensors treated as it treats them, and
    ``configs`` (dicts of block sizes, ``num_warps``, ``num_stages``,
    ``advance``; the first is the default, ``config=i`` picks another).
    ``padded``: the compiled variant whose call-time tile sizes are padded
    to a power of two (``ir.padded_sizes``), which the launcher launches for
    a value that is not one; without it such a value is refused."""
    from ntsym_codegen.aot.embedded import checks_source, spec_source

    sizes = padded_sizes(ir)
    helpers = list(generated.helpers)
    variant = _variant_kernels(generated, padded, helpers) if sizes and padded is not None else None
    kernels = "\n\n\n".join(helpers + [generated.kernels.rstrip()] + ([variant] if variant else [])).rstrip()
    launchers = [_launcher("launch", ir, generated, display, "SPEC", generated.kernel_name,
                           _dispatch(sizes, [m.symbol.name for m in ir.meta_params], variant is not None))]
    specs = [checks_source(spec)]
    if variant:
        launchers.append(_launcher("_launch_padded", padded.ir, padded.generated, padded.display, "SPEC_PADDED",
                                   _padded_name(generated.kernel_name), []))
        specs.append(spec_source(padded.spec, "SPEC_PADDED"))
    configs_src = "CONFIGS = [\n" + "".join(f"    {c!r},\n" for c in configs) + "]"
    parts = ["\n".join(_head(ir, generated, kernels))] + specs + [kernels, configs_src, "\n".join(_HELPERS)]
    source = "\n\n\n".join(parts + launchers) + "\n"
    _check_module_names(ir, source)
    return source


def _launcher(name, ir, generated, display, spec_name, kernel_name, head):
    """The launch function ``name`` of ``generated``'s kernel (``kernel_name``
    in the module), reading the kernel's facts from ``spec_name``; ``head``:
    its first lines."""
    own = ir.call_params
    metas = [m.symbol.name for m in ir.meta_params]
    body = head + _arguments(ir, own, spec_name) + _checks(ir, generated, display, own, metas, spec_name)
    body += _kernel_launch(ir, generated, kernel_name)
    params = "".join(f", {m}=None" for m in metas)
    return "\n".join([f"def {name}(*ntsym_args, config=0{params}):",
                      f'    """Launch `{ir.name}` on ({", ".join(p.name for p in own)}): `config` picks one of '
                      'CONFIGS; block sizes given by keyword override it."""',
                      "    ntsym_config = config"] + ["    " + b for b in body])


def _padded_name(kernel_name):
    return f"{kernel_name}_padded"


def _variant_kernels(generated, padded, helpers):
    """The padded variant's kernels, renamed ``<kernel>_padded`` (and its
    persistent one alike), with the helpers it calls that ``helpers`` lacks
    appended to them; None where one of its helpers is named as another of
    ``helpers`` (the module then refuses the values the variant serves)."""
    import re

    known = {re.search(r"def (\w+)\(", h).group(1): h for h in helpers}
    extra = []
    for h in padded.generated.helpers:
        name = re.search(r"def (\w+)\(", h).group(1)
        if name in known and known[name] != h:
            return None
        if name not in known:
            extra.append(h)
    helpers += extra
    name = padded.generated.kernel_name
    return re.sub(rf"\b{re.escape(name)}(_persistent)?\b", lambda m: _padded_name(generated.kernel_name)
                  + (m.group(1) or ""), padded.generated.kernels.rstrip())


def _dispatch(sizes, metas, padded):
    """The launcher's first lines: a call-time tile size that is not a power
    of two goes to the padded variant, as the torch launcher sends it
    (``Kernel``), or is refused where the module has none."""
    body = []
    for m in sizes:
        body.append(f"if type({m}) is int and {m} > 0 and {m} & ({m} - 1):")
        if padded:
            given = "".join(f", {n}={n}" for n in metas)
            body.append(f"    return _launch_padded(*ntsym_args, config=config{given})")
        else:
            body.append(f"    fail('`{m}`=%d is not a power of two, and this module holds the kernel for powers of "
                        f"two only' % {m}, 'the torch launcher launches a variant that pads the tile to a power "
                        "of two; export the kernel handle (kernel.export) to include it')")
    return body


def _check_module_names(ir, source):
    """Refuse a parameter or size named as a module-level name the launcher
    reads (``runtime``, ``SPEC``, ``CONFIGS``, ``cdiv``, the kernel, ...):
    the launcher binds the parameters and sizes as locals.  Its own locals
    are ``ntsym_`` names."""
    import ast

    tree = ast.parse(source)
    module, read = set(), set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            module |= {a.asname or a.name.split(".")[0] for a in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            module.add(node.name)
            if node.name in ("launch", "_launch_padded"):
                read |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        elif isinstance(node, ast.Assign):
            module |= {n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    names = [p.name for p in ir.call_params] + [a.symbol.name for a in ir.size_args]
    clash = sorted({n for n in names if n in module & read})
    if clash:
        raise AotError(f"kernel `{ir.name}`: a standalone module cannot take a parameter or size named "
                       f"{', '.join(f'`{n}`' for n in clash)}, the name of one of the module's own definitions; "
                       "rename it (the torch launcher, `ntsym.make`, takes it)")


_HELPERS = ["def cdiv(a, b):", "    return -(-a // b)", "", "",
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


def _head(ir, generated, kernels):
    """The module's docstring and imports (and the interpreter switch its helpers read)."""
    head = ['"""ntsym kernel `%s`, standalone: needs torch and triton only (generated; do not edit)."""' % ir.name,
            "", "import torch", "import triton", "import triton.language as tl"]
    if generated.flags.uses_libdevice:
        head.append("from triton.language.extra import libdevice")
    if "NTSYM_INTERPRETING" in kernels:
        from ntsym_codegen.semantics import INTERPRETING

        head[2:2] = ["import os", ""]
        head += ["", INTERPRETING]
    return head


def _arguments(ir, own, spec):
    """The call's arguments counted, checked as the runtime checks them, and
    their sizes and strides unpacked."""
    body = [f"if len(ntsym_args) != {len(own)}:",
            f"    raise TypeError('kernel `{ir.name}` takes {len(own)} arguments ({', '.join(p.name for p in own)}), "
            "got %d' % len(ntsym_args))",
            f"runtime.check_arguments({spec}, ntsym_args)",
            f"if runtime.float64_scalars({spec}, [a for a, p in zip(ntsym_args, {spec}.call_params) if p[1] == 'tensor']):",
            f"    runtime.check_float64_scalars({spec}, ntsym_args)"]
    if ir.jagged:  # offsets as ntsym's launcher validates them; contiguous ones go to the kernel
        body.append(f"ntsym_args = runtime.check_jagged({spec}, ntsym_args)")
    body.append(f"{', '.join(p.name for p in own)}{',' if len(own) == 1 else ''} = ntsym_args")
    shaped = [p for p in own if p.kind in ("tensor", "shape")]
    for p in shaped:
        body.append(f"if {p.name}.ndim != {p.ndim}:")
        body.append(f"    raise ValueError('`{p.name}` must have {p.ndim} dimensions, got %d' % {p.name}.ndim)")
    # the torch launcher's reads: a size several parameters share is checked
    return body + [line for node in read_sizes(shaped) for line in to_source(node).splitlines()]


def _checks(ir, generated, display, own, metas, spec):
    """The torch launcher's size checks, the launch checks in sizes alone,
    the compile-time values the call gives checked as it checks them (one it
    must give refused without), the configuration's block sizes, the written
    tensors treated as it treats them (refused where autograd would get them
    wrong, their version counters bumped: ``ntsym_codegen.writes``), and the
    launch checks that read block sizes: in the torch launcher's order."""
    from ntsym_codegen.launcher import check_sizes

    jagged = {j.name for j in ir.jagged}
    body = [line for node in check_sizes([p for p in own if p.kind in ("tensor", "shape")], jagged)
            for line in to_source(node).splitlines()]  # the torch launcher's size checks
    late = [i for i, c in enumerate(generated.checks) if {s.name for s in c.tested.free_symbols} & set(metas)]
    for i, check in enumerate(generated.checks):
        if i not in late:
            body += _launch_check(check, display, to_source)
    for m in metas:
        body.append(f"{m} = runtime.constexpr_value({spec}, {m!r}, {m})")
    body.append("ntsym_meta = dict(CONFIGS[ntsym_config])")
    given = "{" + ", ".join(f"{m!r}: {m}" for m in metas) + "}"
    body.append(f"ntsym_meta.update({{k: v for k, v in {given}.items() if v is not None}})")
    for m in metas:
        body.append(f"{m} = ntsym_meta[{m!r}]")
    if any(p.name in generated.written and p.kind == "tensor" for p in own):
        # Where the torch launcher treats them: before the checks that read block sizes.
        body.append(f"runtime.note_writes({spec}, ntsym_args, {spec}.written_positions)")
    for i in late:
        body += _launch_check(generated.checks[i], display, to_source)
    return body


def _launch_check(check, display, to_source):
    """``if not (relation): fail(...)``, worded as the torch launcher words it
    (``input.shape[0] (=5) must equal other.shape[0] (=6)``, then why), its
    values filled in at run time; a check moot where no program runs
    (``Check.unless``) is tested as the torch launcher tests it."""
    from ntsym_codegen.runtime.checks import check_template

    known = {s.name for s in check.relation.free_symbols}
    lines, fills = check_template(check, display, known, "%s")
    values = [to_source(_HOST(x)) if kind == "value" else x for kind, x in fills]
    message = " ".join(f"{line!r}" for line in [lines[0]] + [f"\n{line}" for line in lines[1:] if line])
    # Formatted even without values: the lines escape their own "%".
    return [f"if not ({to_source(_HOST(check.tested))}):",
            f"    fail(({message}) % ({''.join(v + ', ' for v in values)}))"]


def _kernel_launch(ir, generated, kernel_name):
    """Index width, every kernel argument's value, the grid and the launch of ``kernel_name``."""
    from ntsym_codegen.printer import to_source

    tensors = [p for p in ir.params if p.kind == "tensor"]
    body = [f"ntsym_tensors = ({''.join(p.name + ', ' for p in tensors)})",
            f"ntsym_int64 = any(_needs_int64(t) for t in ntsym_tensors) or {_logical_peak(ir, _HOST, to_source)}"]
    kwargs, args = [], []
    for arg in generated.arguments:
        (kwargs if arg.constexpr else args).append((arg.name, _argument_value(ir, arg)))
    grid = " * ".join(f"({to_source(_HOST(g))})" for g in ir.grid) or "1"
    body.append(f"ntsym_grid = ({grid},)")
    call = ", ".join(f"{n}={v}" for n, v in args + kwargs)  # by name: compile-time sizes sit among the others
    body.append("if ntsym_grid[0] > 0:")
    launch = ", ".join(f"{o.name}=ntsym_meta.get({o.name!r}, {o.default!r})" for o in (NUM_WARPS, NUM_STAGES))
    body.append(f"    {kernel_name}[ntsym_grid]({call}, {launch})")
    return body


def _argument_value(ir, arg):
    """Host code computing the kernel parameter ``arg``'s value (a
    ``ntsym_codegen.arguments.KernelArgument``)."""
    from ntsym_codegen.printer import to_source

    if arg.source == "tensor":
        return arg.detail.name
    if arg.source == "fixed":
        return repr(arg.detail)
    if arg.source == "scalar":
        return f"({arg.name}.item() if isinstance({arg.name}, torch.Tensor) else {arg.name})"
    if arg.source in ("constexpr", "parameter", "size", "meta"):
        return arg.name
    if arg.source == "pow2":
        return f"triton.next_power_of_2({to_source(_HOST(arg.detail))})"
    if arg.source == "whole":
        size, block = arg.detail
        return f"({to_source(_HOST(size))}) % ({to_source(_HOST(block))}) == 0"
    if arg.source == "contiguous":
        return f"({arg.detail}.is_contiguous() and not ntsym_int64)"
    if arg.source == "int64":
        return "ntsym_int64"
    if arg.source == "advance":
        return f"bool(ntsym_meta.get({ADVANCE.name!r}, False))"
    raise AotError(f"kernel `{ir.name}`: no value for the kernel parameter {arg.name} in a standalone module")


def _logical_peak(ir, host, to_source):
    """Host code: whether a logical index can pass 2**31 - 1 (codegen/index_width.py),
    in the sizes and block sizes the launcher has read; ``True`` where a bound
    cannot be written so."""
    from ntsym_codegen.index_width import LIMIT, peaks
    from ntsym_codegen.printer import PrintError

    bounds = peaks(ir.params)
    if not bounds:
        return "False" if bounds is not None else "True"
    known = {a.symbol for a in ir.size_args} | {m.symbol for m in ir.meta_params}
    if set().union(*(b.free_symbols for b in bounds)) - known:
        return "True"
    try:
        return f"max({', '.join(to_source(host(b)) for b in bounds)}, 0) > {LIMIT}"
    except PrintError:
        return "True"
