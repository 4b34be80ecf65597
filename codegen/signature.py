"""The generated kernel's parameters, in order, and which of them the
launcher passes by position (the rest come with the chosen configuration)."""

import ast

from ntsym_codegen.template import expr


def kernel_args(ir, emitter):
    """(name, constexpr) for every kernel parameter, in order."""
    args = []
    for p in ir.params:
        if p.kind == "tensor":
            args.append((f"{p.name}_ptr", False))
        elif p.kind == "scalar":
            args.append((p.name, False))
        elif p.kind == "constexpr":
            args.append((p.name, True))
        elif p.kind == "offsets":  # a jagged tensor's sequence offsets
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


def positional(name, ir, emitter):
    """Whether the launcher passes kernel parameter ``name`` by position
    (the rest, chosen with the configuration, go by keyword)."""
    metas = {m.symbol.name for m in ir.meta_params}
    return not (name in metas or name in (emitter.records.int64_flag, emitter.records.advance_flag) or name.startswith("NTSYM_BLOCK_")
                or name in emitter.records.whole)


def param(name, constexpr=False):
    """A kernel parameter, ``name: tl.constexpr`` where ``constexpr``."""
    return ast.arg(arg=name, annotation=expr("tl.constexpr") if constexpr else None)


def jit_function(name, params, body):
    """``@triton.jit def name(params): body`` as an AST."""
    return ast.FunctionDef(
        name=name,
        args=ast.arguments(posonlyargs=[], args=params, vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]),
        body=body,
        decorator_list=[expr("triton.jit")],
        returns=None,
        type_params=[],
        lineno=1,
    )
