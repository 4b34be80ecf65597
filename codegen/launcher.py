"""The launcher of a generated module: a ``make_launch(NTSYM_FACTS)`` factory
whose ``launch(*ntsym_args, <meta>=None, ntsym_options=None)`` reads the
tensors' sizes and strides, runs the launch checks, and hands the call to
``runtime.launch(NTSYM_FACTS, ...)`` (or ``runtime.fast_launch`` for a call
shape seen before).  Its own names are ``ntsym_``/``NTSYM_`` ones, the
module's ``runtime``, ``cdiv`` and ``next_power_of_2``, and the application's
parameters and size symbols.  Written with ``ntsym_codegen.template``; everything it prints comes
from the IR and the emitter's records.
"""

import ast

import sympy

from ntsym_codegen.arguments import kernel_arguments
from ntsym_codegen.printer import Printer
from ntsym_codegen.signature import kernel_args, positional
from ntsym_codegen.template import expr, stmt, stmts

_HOST = Printer(mode="host")


def host(e):
    """A SymPy expression as host (launcher) code."""
    return _HOST(e)


def _names(names):
    """A tuple target or display of ``names`` (``a, b = ...``; ``_`` for unused)."""
    return ast.Tuple(elts=[ast.Name(id=n, ctx=ast.Load()) for n in names], ctx=ast.Load())


def _dict(items):
    """``{key: value, ...}`` from (str key, node or source) pairs."""
    return ast.Dict(keys=[ast.Constant(k) for k, _ in items], values=[expr("{v}", v=v) for _, v in items])


def _read_metas(metas):
    """``M = meta['M']`` for each meta-parameter in ``metas``."""
    return [stmt("{m} = meta[{key}]", m=m, key=ast.Constant(m)) for m in metas]


def _product(factors):
    """``a * b * ...`` of host expressions, ``1`` for none."""
    node = None
    for f in factors:
        node = host(f) if node is None else ast.BinOp(left=node, op=ast.Mult(), right=host(f))
    return node if node is not None else ast.Constant(1)


def launcher(ir, emitter, checks, persistent=None):
    """The launcher factory's source for the kernel ``emitter`` emitted."""
    tensor_params = [p for p in ir.params if p.kind == "tensor"]
    # Tensors the arrangement does not return give their sizes only.
    shaped = [p for p in ir.params if p.kind in ("tensor", "shape")]
    metas = [m.symbol.name for m in ir.meta_params]
    body = _call_entry(ir, metas) + read_sizes(shaped) + check_sizes(shaped, {j.name for j in ir.jagged})
    checks_body, late = _launch_checks(checks, metas)
    body += checks_body
    body += stmts(
        "def ntsym_grid(meta):\n    {metas}\n    return ({size},)",
        metas=_read_metas(metas),
        size=_product(ir.grid),
    )
    derived, defs = _derived(emitter, metas, ())
    body += defs
    body += stmts(
        """
        ntsym_derived = {derived}
        ntsym_tensors = {tensors}
        """,
        derived=_dict(derived),
        tensors=_names([p.name for p in tensor_params]),
    )
    named = [("grid", "ntsym_grid"), ("derived", "ntsym_derived"), ("options", "ntsym_options"), ("key", "ntsym_key"),
             ("user_args", "ntsym_args")]
    if late:
        named.append(("late_checks", "ntsym_late_checks"))
    if persistent is not None:
        named.append(("persistent", "ntsym_persistent"))
        body += _persistent(emitter, persistent, metas, derived)
    launch = expr(
        "runtime.launch(NTSYM_FACTS, {args}, {metas}, ntsym_tensors)",
        args=tuple(_kernel_call_args(ir, emitter, tensor_params)),
        metas=_dict([(m, m) for m in metas]),
    )
    body.append(ast.Return(value=_keywords(launch, named)))
    return _factory(body, metas)


def _call_entry(ir, metas):
    """The fast path for a call shape seen before, matched by torch's tensor
    guards (``runtime.quick``) or by the call's key, learned for the guards
    once a launch found by the key went through; else arguments bound by
    name, checked and unpacked."""
    call_params = ir.call_params
    # Constexprs the call gives are keyed by value (they select the kernel compiled).
    constexprs = tuple(i for i, p in enumerate(call_params) if p.kind == "constexpr")
    key_args = "ntsym_args, {metas}, ntsym_options" + (", {constexprs}" if constexprs else "")
    # A call of tensors, scalars and compile-time values, given no keyword
    # (compile-time values, options), may be matched without its key.
    quick = any(p.kind == "tensor" for p in call_params) and all(
        p.kind in ("tensor", "scalar", "constexpr") for p in call_params)
    # Compile-time values given by keyword are matched by value too (as
    # NineToothed's calls give their constexpr block sizes).
    plain = expr(" and ".join([f"len(ntsym_args) == {len(call_params)}", "ntsym_options is None",
                               "not ntsym_unknown"]))
    given = ", {given}" if metas else ""
    head = stmts(
        """
        if NTSYM_QUICK and {plain}:
            ntsym_found = runtime.quick_entry(NTSYM_QUICK, ntsym_args""" + given + """)
            if ntsym_found is not None:
                return runtime.fast_launch(NTSYM_FACTS, ntsym_found[0], ntsym_args, ntsym_found[1], True)
        """,
        plain=plain, given=_names(metas),
    ) if quick else []
    learn_args = ["NTSYM_FACTS.cache", "ntsym_entry", "ntsym_args"] + ["{constexprs}"] * bool(constexprs or metas)
    learn_call = f"runtime.learn_quick({', '.join(learn_args)}{given})"
    learn = stmts("if not ntsym_entry.learned and {plain}:\n    " + learn_call, plain=plain,
                  constexprs=constexprs, given=_names(metas)) if quick else []
    return head + stmts(
        """
        ntsym_key = {call_key}
        ntsym_entry = NTSYM_CALLS.get(ntsym_key)
        if ntsym_entry is not None and not ntsym_unknown:
            runtime.fast_launch(NTSYM_FACTS, ntsym_entry, ntsym_args)
            {learn}
            return None
        if ntsym_unknown or len(ntsym_args) != {count}:
            return {relaunch}
        runtime.check_arguments(NTSYM_SPEC, ntsym_args)
        {params} = ntsym_args
        """,
        learn=learn,
        call_key=expr(f"runtime.call_key({key_args})", metas=_names(metas), constexprs=constexprs),
        count=len(call_params),
        relaunch=_keywords(expr("launch(*runtime.bind_arguments(NTSYM_SPEC, ntsym_args, ntsym_unknown))"),
                           metas + ["ntsym_options"]),
        params=_names([p.name for p in call_params]),
    )


def _launch_checks(checks, metas):
    """The launch checks in sizes alone, the block sizes read, and a
    ``late_checks(meta)`` of the checks that depend on block sizes (run once
    the configuration is chosen); and whether there is one."""
    meta_names = set(metas)
    late = [(i, c) for i, c in enumerate(checks) if {s.name for s in c.tested.free_symbols} & meta_names]
    body = []
    for i, check in enumerate(checks):
        if (i, check) not in late:
            body += _check(i, check)
    for m in metas:
        body.append(stmt("{m} = runtime.constexpr_value(NTSYM_SPEC, {name}, {m})", m=m, name=ast.Constant(m)))
    if late:
        late_body = [s for i, check in late for s in _check(i, check)]
        body += stmts("def ntsym_late_checks(meta):\n    {metas}\n    {checks}", metas=_read_metas(metas), checks=late_body)
    return body, bool(late)


def _factory(body, metas):
    """``make_launch(NTSYM_FACTS)`` around ``launch(*ntsym_args, <metas>=None, ntsym_options=None,
    **ntsym_unknown)``: the launcher's own names are ``ntsym_``'s, so that the
    application's parameters may take any other (``grid``, ``key``, ``args``)."""
    function = stmt("def launch(*ntsym_args, ntsym_options=None, **ntsym_unknown):\n    pass")
    function.args.kwonlyargs[:0] = [ast.arg(arg=m) for m in metas]
    function.args.kw_defaults[:0] = [ast.Constant(None) for _ in metas]
    function.body = body
    # One launcher per kernel handle: kernels with the same source share the
    # module (and the compiled Triton kernel) but not their facts
    # (runtime.LaunchFacts, made by make()).
    factory = stmt(
        '''
        def make_launch(NTSYM_FACTS):
            """The launcher, bound to one kernel's facts."""
            NTSYM_SPEC, NTSYM_CHECKS, NTSYM_DISPLAY = NTSYM_FACTS.spec, NTSYM_FACTS.checks, NTSYM_FACTS.display
            NTSYM_CALLS, NTSYM_QUICK = NTSYM_FACTS.cache.calls, NTSYM_FACTS.cache.quick
            {launch}
            return launch
        ''',
        launch=[function],
    )
    return ast.unparse(ast.fix_missing_locations(factory))


def _keywords(call, names):
    """``call`` with keyword arguments appended: a name ``n`` passes ``n=n``,
    a pair ``(k, v)`` passes ``k=v``."""
    for n in names:
        k, v = n if isinstance(n, tuple) else (n, n)
        call.keywords.append(ast.keyword(arg=k, value=ast.Name(id=v, ctx=ast.Load())))
    return call


def read_sizes(shaped):
    """``x_size_0, x_size_1 = x.shape`` (and the strides of tensors).  A
    symbol several parameters share (one ``ntsym.Symbol`` in several shapes,
    or parameters one ``Tensor`` object declares) is bound by its first read;
    each later read is checked against it: the kernel takes one value."""
    body, first, again = [], {}, []

    def target(s, here):
        if not isinstance(s, sympy.Symbol):
            return "_"
        if s.name not in first:
            first[s.name] = here
            return s.name
        again.append((f"ntsym_again_{len(again)}", s.name, here))
        return again[-1][0]

    for p in shaped:
        if not p.ndim:
            continue
        sizes = [target(s, (p.name, "shape", d)) for d, s in enumerate(p.source_sizes)]
        body.append(stmt("{sizes} = {p}.shape", sizes=_names(sizes), p=p.name))
        if p.kind == "tensor":
            strides = [target(s, (p.name, "stride", d)) for d, s in enumerate(p.strides)]
            body.append(stmt("{strides} = {p}.stride()", strides=_names(strides), p=p.name))
    for local, name, here in again:
        body.append(stmt("runtime.check_same({here}, {local}, {there}, {name}, {symbol})", here=ast.Constant(here),
                         local=local, there=ast.Constant(first[name]), name=name, symbol=ast.Constant(name)))
    return body


def check_sizes(shaped, jagged=()):
    """Sizes declared with bounds or as powers of two, then sizes and strides
    declared as expressions of others (after every size is read: they may
    refer to others); ``jagged``: the names of jagged tensors."""
    body = []
    for p in shaped:
        for d, s in enumerate(p.source_sizes):
            lo, hi = getattr(s, "lower_bound", None), getattr(s, "upper_bound", None)
            pow2 = bool(getattr(s, "power_of_two", False))
            if isinstance(s, sympy.Symbol) and (lo is not None or hi is not None or pow2):
                body.append(stmt(
                    "runtime.check_size({name}, {d}, {size}, {lo}, {hi}, {pow2})",
                    name=ast.Constant(p.name), d=d, size=s.name, lo=lo, hi=hi, pow2=pow2,
                ))
    for p in shaped:
        for d, s in enumerate(p.source_sizes):
            if not isinstance(s, sympy.Symbol):
                body.append(stmt(
                    "runtime.check_shape({name}, {p}, {d}, {size})",
                    name=ast.Constant(p.name), p=p.name, d=d, size=host(s),
                ))
        for d, s in declared_strides(p, jagged):
            body.append(stmt(
                "runtime.check_stride({name}, {p}, {d}, {stride})",
                name=ast.Constant(p.name), p=p.name, d=d, stride=host(s),
            ))
    return body


def declared_strides(p, jagged=()):
    """(dimension, stride) of the strides ``Tensor(..., strides=...)`` fixed
    for the tensor parameter ``p`` (a jagged tensor's batch stride, 0, is
    ntsym's own: its sequences start where the offsets say)."""
    if p.kind != "tensor":
        return []
    return [(d, s) for d, s in enumerate(p.strides)
            if not isinstance(s, sympy.Symbol) and not (d == 0 and p.name in jagged)]


def _check(i, check):
    """``if not (relation): runtime.fail_check(NTSYM_CHECKS[i], {values}, NTSYM_DISPLAY)``."""
    names = sorted({s.name for s in check.relation.free_symbols})
    return stmts(
        """
        if not {relation}:
            runtime.fail_check(NTSYM_CHECKS[{i}], {values}, NTSYM_DISPLAY)
        """,
        relation=host(check.tested),
        i=i,
        values=_dict([(n, n) for n in names]),
    )


def _kernel_call_args(ir, emitter, tensor_params):
    """The kernel's positional arguments as the launcher passes them, each by
    its source (``ntsym_codegen.arguments``)."""
    args = []
    tensors = _names([t.name for t in tensor_params])
    for arg in kernel_arguments(ir, kernel_args(ir, emitter), emitter.records):
        if not positional(arg.name, ir, emitter):
            continue  # the configuration's, or derived from it
        if arg.source == "contiguous":
            args.append(expr("runtime.contiguous({t}, {tensors})", t=arg.detail, tensors=tensors))
        elif arg.source == "tensor":
            args.append(arg.detail.name)
        elif arg.source == "fixed":
            args.append(repr(arg.detail))
        elif arg.source == "scalar":
            args.append(expr("runtime.scalar({x})", x=arg.name))
        else:
            args.append(arg.name)
    return args


def _derived(emitter, metas, skip):
    """Entries of the ``derived`` dict for ``emitter``'s padded blocks and
    peeled loops (those not in ``skip``), and the functions they need."""
    entries, defs = [], []
    for n, s in emitter.records.pow2.items():
        if s.name in skip:
            continue
        used = sorted({f.name for f in sympy.sympify(n).free_symbols} & set(metas))
        if not used:
            entries.append((s.name, expr("lambda meta: next_power_of_2({n})", n=host(n))))
            continue
        # A padded block of a configuration's block size (``BLOCK // 16``):
        # read from the configuration, as the grid does.
        defs += stmts(
            "def {fn}(meta):\n    {metas}\n    return next_power_of_2({n})",
            fn=s.name.lower(),
            metas=_read_metas(used),
            n=host(n),
        )
        entries.append((s.name, s.name.lower()))
    for name, (size, block) in emitter.records.whole.items():
        if name in skip:
            continue
        # Whether ``size`` is a multiple of ``block`` (whole blocks only).
        used = {f.name for f in sympy.sympify(size).free_symbols | sympy.sympify(block).free_symbols}
        defs += stmts(
            "def {fn}(meta):\n    {metas}\n    return {size} % {block} == 0",
            fn=name.lower(),
            metas=_read_metas(sorted(used & set(metas))),
            size=host(size),
            block=host(block),
        )
        entries.append((name, name.lower()))
    return entries, defs


def _persistent(emitter, persistent, metas, derived):
    """``persistent_problem`` (whether the tensors and the chosen block shapes
    meet the tensor memory accelerator's rules: alignment, unit inner stride,
    ...) and the ``runtime.Persistent`` the launch may take."""
    t = persistent.emitter
    skip = {s.name for s in emitter.records.pow2.values()} | set(emitter.records.whole)
    more, defs = _derived(t, metas, skip)
    blocks = tuple(
        (ast.Constant(p.name), p.name, tuple(host(b) for b in block), name in t.records.transposed)
        for name, (p, block) in t.records.descriptors.items()
    )
    # Descriptors read with their last two dimensions swapped where the
    # tensor's next-to-last dimension is the contiguous one.
    flags = _dict([(flag, t.records.descriptors[name][0].name) for name, flag in t.records.transposed.items()])
    problem = stmts(
        "def ntsym_persistent_problem(meta):\n    {metas}\n    {blocks}\n    return runtime.tma_problem({descriptors})",
        metas=_read_metas(metas),
        blocks=[stmt("{b} = next_power_of_2({n})", b=sym.name, n=host(n)) for n, sym in t.records.pow2.items()],
        descriptors=blocks,
    )
    table = _dict(more)
    table.keys.insert(0, None)  # {**derived, ...}
    table.values.insert(0, ast.Name(id="ntsym_derived", ctx=ast.Load()))
    return defs + problem + stmts(
        "ntsym_persistent = runtime.Persistent(NTSYM_FACTS.persistent_kernel, ntsym_persistent_problem, {extra}, {table}, "
        "{flags}"
        + (", per_tile=True)" if persistent.per_tile else ")"),
        extra=tuple(persistent.extra),
        table=table,
        flags=flags,
    )
