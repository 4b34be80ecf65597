"""``explain()``: the symbolic shape debugger.  What was proved about an
arrangement, what is checked at launch and why, and each tensor's levels,
addresses and masks, in the names the generated code uses."""

from typing import Any, Callable, Optional, Sequence

import sympy

from ntsym import compiler


def explain(arrangement: Any, tensors: Optional[Sequence[Any]] = None, application: Optional[Callable] = None) -> str:
    """The report ``kernel.explain()`` gives, without making the kernel.

    ``arrangement``, ``tensors``, ``application``: as ``make`` takes them.
    Takes what ``make`` takes, ``explain(arrangement, application, tensors)``,
    or a kernel (``explain(kernel)`` is ``kernel.explain()``); also
    ``explain(arrangement, tensors)``, where a pass-through application
    names the parameters after the arrangement's."""
    if tensors is None and hasattr(arrangement, "explain"):
        return arrangement.explain()
    if callable(tensors) and not isinstance(tensors, (tuple, list)):
        tensors, application = application, tensors  # make's order
    if tensors is None:
        raise TypeError("explain(arrangement, application, tensors), explain(arrangement, tensors) or explain(kernel)")
    if application is None:
        names = [f"arg{i}" for i in range(len(tensors))]
        try:
            import inspect

            params = list(inspect.signature(arrangement).parameters)[: len(tensors)]
            if len(params) == len(tensors):
                names = params
        except (TypeError, ValueError):
            pass
        namespace = {}
        exec(f"def application({', '.join(names)}):\n    pass\n", namespace)
        application = namespace["application"]
        application.__source_override__ = True
    compiled = compiler.compile(arrangement, _with_source(application), tensors)
    return explain_ir(compiled.ir, compiled.generated)


def _with_source(fn):
    if getattr(fn, "__source_override__", False):
        import linecache
        import uuid

        params = fn.__code__.co_varnames[: fn.__code__.co_argcount]
        filename = f"<ntsym-explain-{uuid.uuid4().hex}>"
        text = f"def application({', '.join(params)}):\n    pass\n"
        linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
        code = compile(text, filename, "exec")
        namespace = {}
        exec(code, namespace)
        return namespace["application"]
    return fn


def explain_ir(ir, generated):
    lines = []
    add = lines.append
    grid = " * ".join(_paren(str(g)) for g in ir.grid) or "1"
    add(f"kernel    {ir.name}")
    add(f"grid      ({grid},)   one program per element of the outermost level")
    pids = ", ".join(v.name for v in ir.program_vars)
    add(f"programs  ({pids}) = the program id split over {_shape(ir.grid)}, last fastest")
    for p in ir.params:
        if p.kind == "shape":
            add(f"{p.name:<9} source  {_shape(p.sizes)}   not arranged: the kernel reads its sizes only")
            continue
        if p.kind == "offsets":
            continue  # described with its jagged tensor, below
        if p.kind != "tensor":
            kind = "compile-time constant" if p.kind == "constexpr" else "runtime scalar"
            add(f"{p.name:<9} {kind}" + (f" = {p.value!r}" if p.value is not None else ""))
            continue
        names = _var_names(p)
        add(f"{p.name:<9} source  {_shape(p.sizes)}   strides {_shape(p.strides)}")
        for depth, shape in enumerate(p.levels):
            label = "outer" if depth == 0 else ("tile" if depth == len(p.levels) - 1 else f"level {depth}")
            note = ""
            if depth == 0:
                note = "   (programs)"
            elif depth < len(p.levels) - 1:
                note = f"   index it: `{p.name}[i]`, e.g. in `for i in range({p.name}.shape[0])`"
            elif depth == 1:
                note = f"   loaded as one block by reading `{p.name}`"
            else:
                note = "   a block"
            add(f"          {label:<7} {_shape(shape)}{note}")
        index = ", ".join(str(_rename(e, names)) for e in p.index)
        add(f"          index   {p.name}[{index}]")
        offset = sympy.Add(*[_rename(e, names) * s for e, s in zip(p.index, p.strides)])
        add(f"          address {p.name}_ptr + {offset}")
        if p.conditions:
            mask = "  &  ".join(str(_rename(c, names)) for c in p.conditions)
            add(f"          mask    {mask}")
        else:
            add("          mask    none (every element is provably in bounds)")
        for c in p.dropped:
            add(f"          dropped {_rename(c, names)}   (proved always true)")
    _explain_jagged(ir, generated, add)
    proved = [f for f in ir.facts if f[0] == "proved"]
    if proved:
        for _, rel, text in proved:
            add(f"proved    {text}: both are {rel.lhs}")
    checks = list(ir.checks) + (list(generated.checks[len(ir.checks):]) if generated else [])
    for c in checks:
        moot = " (or no program runs)" if getattr(c, "unless", None) is not None else ""
        add(f"at launch {_relation(c.relation)}{moot}   {c.reason or c.message}")
    if not proved and not checks:
        add("proved    a single arranged tensor: nothing to match")
    return "\n".join(lines) + "\n"


def _explain_jagged(ir, generated, add):
    """What holds for every row length of a jagged tensor, what each program
    reads, and what the launch checks."""
    params = {p.name: p for p in ir.params}
    for j in ir.jagged:
        p = params[j.name]
        names = _var_names(p)
        add(f"jagged    {j.name}: dimension {j.dim} is ragged, one sequence per program (batch index {j.batch})")
        add(f"          per program  {j.start} = {j.offsets}[{j.batch}], "
            f"{j.seq_len} = {j.offsets}[{j.batch} + 1] - {j.start}; `{j.name}_ptr` moves to row {j.start}")
        add(f"          grid         over the longest row: {j.longest} = max({j.seq_len}) over the batch, "
            "read from the offsets at launch")
        rows = [c for c in p.conditions if j.seq_len in c.free_symbols]
        for c in rows:
            add(f"          every row    mask {_rename(c, names)} kept: {j.seq_len} is known in the program only")
        for c in p.dropped:
            add(f"          every row    {_rename(c, names)} proved for every row length (dropped)")
        tests = None
        if generated is not None:
            tests = getattr(generated, "empty_tests", None)
        if j.empty and tests:
            empty = " or ".join(str(_rename(r, names)) for r in j.empty)
            add(f"          empty        a program returns at once when {empty} (its tile is past the row's end)")
        add(f"          at launch    {j.offsets}: 1-D int32/int64 on the values' device, non-decreasing, "
            f"offsets[0] >= 0, the last within the values' rows")
    for group in ir.same_rows:
        add(f"at launch equal offsets of {', '.join(f'`{n}`' for n in group)}   the arrangement gives "
            "their ragged dimensions one size")
    for a, b, block, _ in getattr(generated, "same_lengths", ()):
        count = "the same lengths" if block == 1 else f"as many blocks of {block} rows"
        add(f"at launch sequences of `{a}` and `{b}` of {count}   a loop over one's blocks indexes the other's")


def _relation(rel):
    if isinstance(rel, sympy.Eq):
        return f"{rel.lhs} == {rel.rhs}"
    return str(rel)


def _var_names(p):
    names = {}
    last = len(p.levels) - 1
    for depth, vars in enumerate(p.level_vars):
        if depth == 0:
            continue
        for j, v in enumerate(vars):
            names[v] = sympy.Symbol(f"t{j}" if depth == last else f"i{depth}_{j}" if last > 2 else f"i{j}")
    return names


def _rename(e, names):
    return sympy.sympify(e).xreplace(names)


def _shape(shape):
    shape = tuple(shape)
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def _paren(text):
    return text if text.replace("_", "").isalnum() else f"({text})"
