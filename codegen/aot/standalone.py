"""A standalone Python module: the generated kernel and a launcher that needs
only ``torch`` and ``triton``."""

import sympy

from codegen.aot.common import AotError


def standalone_source(ir, generated, display, configs, spec):
    """The generated ``@triton.jit`` kernel and a launcher that needs only
    ``torch`` and ``triton``: the torch launcher's argument checks (embedded
    from the runtime, codegen/aot/embedded.py), shape and launch checks, index
    width, the compile-time flags, and ``configs`` (dicts of block sizes,
    ``num_warps``, ``num_stages``, ``advance``; the first is the default,
    ``config=i`` picks another)."""
    from codegen.aot.embedded import checks_source
    from codegen.launcher import _check_sizes
    from codegen.printer import Printer, to_source

    host = Printer(mode="host")
    kernels = "\n\n\n".join(generated.helpers + (generated.kernels,)).rstrip()
    head = ['"""ntsym kernel `%s`, standalone: needs torch and triton only (generated; do not edit)."""' % ir.name,
            "", "import torch", "import triton", "import triton.language as tl"]
    if generated.records.uses_libdevice:
        head.append("from triton.language.extra import libdevice")
    if "NTSYM_INTERPRETING" in kernels:
        from codegen.semantics import INTERPRETING

        head[2:2] = ["import os", ""]
        head += ["", INTERPRETING]
    records = generated.records
    by_name = {p.name: p for p in ir.params}
    own = [p for p in ir.params if not (p.kind == "constexpr" and p.value is not None)]
    tensors = [p for p in ir.params if p.kind == "tensor"]
    metas = [m.symbol.name for m in ir.meta_params]
    body = [f"if len(args) != {len(own)}:",
            f"    raise TypeError('kernel `{ir.name}` takes {len(own)} arguments ({', '.join(p.name for p in own)}), "
            "got %d' % len(args))",
            "runtime.check_arguments(SPEC, args)",
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
    body += [line for node in _check_sizes([p for p in own if p.kind in ("tensor", "shape")])
             for line in to_source(node).splitlines()]  # the torch launcher's size checks
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
    body.append(f"int64 = any(_needs_int64(t) for t in tensors) or {_logical_peak(ir, host, to_source)}")
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
    parts = ["\n".join(head), checks_source(spec), kernels, configs_src, "\n".join(helper), "\n".join(launcher)]
    return "\n\n\n".join(parts) + "\n"


def _logical_peak(ir, host, to_source):
    """Host code: whether a logical index can pass 2**31 - 1 (codegen/index_width.py),
    in the sizes and block sizes the launcher has read; ``True`` where a bound
    cannot be written so."""
    from codegen.index_width import LIMIT, peaks
    from codegen.printer import PrintError

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
