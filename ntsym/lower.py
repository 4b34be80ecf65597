"""From an arrangement, an application and source tensors to codegen's IR.

The steps, in order: name the source tensors after the application's
parameters and run the arrangement (arranging.py); give every symbol a
deterministic name (renaming.py); prove (or reduce to launch checks) that all
outermost shapes agree (outer_proof.py); derive the kernel's parameters,
pruning the masks SymPy proves always true (kernel_params.py); fill in
:mod:`ntsym_codegen.ir`.
"""

import ast

import sympy

from ntsym_codegen.ir import KernelIR, TensorParam
from ntsym_codegen.analysis import (assigned_parameters, data_locals, named_parameters, program_dependent_calls,
                                   read_parameters)
from ntsym.application import _resolve_globals, parse_application
from ntsym.arranging import arrange
from ntsym.disjoint import overlap_checks
from ntsym.errors import ArrangementError
from ntsym.kernel_params import meta_params
from ntsym.outer_proof import OuterProof
from ntsym.pairing import maybe_written, read_through_source, stored_only
from ntsym.renaming import (application_names, canonical_names, clear_names, kernel_symbols, local_renames,
                            padded_twins, positive_twins, rename_hierarchy, rename_locals, rename_source)
from ntsym.kernel_names import shown_name
from ntsym.tensor import Tensor


def lower(arrangement, application, tensors, kernel_name=None, num_warps=None,
          num_stages=None, max_num_configs=None, padded=frozenset(), apart=False):
    """``padded``: names of call-time tile sizes to pad to the next power of
    two (the launcher asks for this variant when given other values).
    ``apart``: tensors only read keep their own sizes along their first
    dimension (``PairingMixin._pair_equal``)."""
    app_def, app_globals = parse_application(application)
    app_names = [a.arg for a in app_def.args.args]
    _drop_bare_parameters(app_def, set(app_names))
    _name_program_ids(app_def)
    # Entries of ``tensors`` that are not Tensors (a tuple of slices, a
    # number) go to the arrangement as they are, as in NineToothed; they are
    # no parameter of the kernel.
    values = tuple(tensors)
    tensors = tuple(t for t in values if isinstance(t, Tensor))
    if len(app_names) > len(tensors):
        raise ArrangementError(
            f"the application takes {len(app_names)} parameters ({', '.join(app_names)}) but "
            f"{len(tensors)} tensors were given"
        )
    names, arranged = arrange(arrangement, values, app_names, app_def)
    inline, aliases, constants = _resolve_globals(app_def, app_globals)
    returned = [t for t in arranged if t is not None]
    renames = canonical_names(arrangement, tensors, returned, names)
    scopes = [app_globals] + [scope for _, scope in inline.values()]
    renames.update(clear_names(tensors, names, application_names(app_def, inline), renames, scopes))
    renames.update(positive_twins(returned))
    renames.update(padded_twins(returned, renames, padded))
    symbol_names = {s.name for s in kernel_symbols(returned, tensors, renames)}
    arranged = [None if t is None else rename_hierarchy(t, renames) for t in arranged]
    sources = [rename_source(t, renames) for t in tensors]
    app_def = rename_locals(app_def, local_renames(app_def, app_names, names, symbol_names))
    proof = OuterProof(names, arranged, sources, maybe_written(app_def, inline, app_names),
                       read_through_source(app_def, inline, {n: t.ndim for n, t in zip(names, tensors)}), apart)
    proof.stored_only = stored_only(app_def, app_names) & proof.written
    proof.unused = frozenset(names) - named_parameters(app_def, set(names))
    proof.run()
    params = proof.params()
    data = data_locals(app_def, {p.name for p in params if p.kind == "tensor"})
    _refuse_overlapping_writes(proof, params, app_def, inline, data)
    jagged = proof.jagged_params(app_def)
    params += tuple(TensorParam(name=j.offsets, kind="offsets", ndim=1) for j in jagged)
    metas = meta_params(proof)
    title = shown_name(arrangement, application, kernel_name)
    kernel_name = kernel_name or getattr(application, "__name__", "kernel")
    if not kernel_name.isidentifier():
        raise ArrangementError(f"kernel_name {kernel_name!r} is not an identifier")
    return KernelIR(
        name=kernel_name,
        title=title,
        params=params,
        size_args=proof.size_args(),
        meta_params=metas,
        grid=proof.grid,
        program_vars=proof.program_vars,
        checks=tuple(proof.checks),
        application=app_def,
        inline_functions=inline,
        module_aliases=aliases,
        constants=constants,
        facts=tuple(proof.facts),
        num_warps=num_warps,
        num_stages=num_stages,
        max_num_configs=max_num_configs,
        symbols=proof.symbols(),
        ignored_args=proof.ignored_args(),
        jagged=jagged,
        same_rows=proof.same_rows(jagged),
        read_apart=tuple(proof.apart_pairs),
        data_locals=data,
    )


def _drop_bare_parameters(app_def, params):
    """Remove the statements that are a parameter's name alone (``x``, as
    NineToothed's tests write an application that does nothing): they
    compute nothing, and emitted they would load the tile."""
    blocks = [(node, field) for node in ast.walk(app_def) for field in ("body", "orelse", "finalbody")
              if isinstance(getattr(node, field, None), list)]
    for node, field in blocks:
        block = getattr(node, field)
        kept = [s for s in block if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Name)
                                         and s.value.id in params)]
        if len(kept) != len(block):
            setattr(node, field, kept or [ast.copy_location(ast.Pass(), block[0])])


def _name_program_ids(app_def):
    """``y[ntl.program_id(0)] = v``: the id named first (``ntsym_program_id_0
    = ntl.program_id(0)`` at the top of the body), as a store's index is a
    name or index math, and a store to a tile chosen by the program's id is
    a scatter (``analysis.data_locals``)."""
    named = {}
    for node in ast.walk(app_def):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
            if isinstance(node, ast.AugAssign) else []
        for target in targets:
            for sub in [t for t in ast.walk(target) if isinstance(t, ast.Subscript)]:
                sub.slice = _ProgramIds(named).visit(sub.slice)
    app_def.body[:0] = [ast.copy_location(ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=call),
                                          app_def.body[0]) for name, call in named.values()]
    ast.fix_missing_locations(app_def)


class _ProgramIds(ast.NodeTransformer):
    def __init__(self, named):
        self.named = named

    def visit_Call(self, node):
        if isinstance(node.func, ast.Attribute) and node.func.attr == "program_id" and len(node.args) == 1 \
                and not node.keywords and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, int):
            axis = node.args[0].value
            name = f"ntsym_program_id_{axis}"
            self.named.setdefault(axis, (name, node))
            return ast.copy_location(ast.Name(id=name, ctx=ast.Load()), node)
        return self.generic_visit(node)


def _refuse_overlapping_writes(proof, params, app_def, inline, data):
    """A launch check (a refusal, where it can never hold) for each written
    tensor whose tiles overlap across programs (``ntsym.disjoint``); ``data``:
    the application's data locals (``analysis.data_locals``)."""
    tensors = {p.name for p in params if p.kind == "tensor"}
    # Written through their tiles: a tensor only scattered into (``y.source[i] =
    # v``) stores no tile, whatever its arrangement (data_races rules on it).
    # A tile chosen by data (``y[row] = v``, ``row`` a value) is a scatter too.
    written = assigned_parameters(app_def, inline, tensors, tiles_only=True, data=data)
    jagged = {name for name, src in zip(proof.names, proof.sources) if src.tensor.jagged_dim is not None}
    varying = set()
    for p in params:
        if p.kind == "tensor":
            varying.update(*(sympy.sympify(e).free_symbols for e in p.index))
    # Programs that write the same elements from the same tiles agree only
    # where none reads what they write: a read of a written tensor sees
    # whichever programs stored before it.
    read_written = sorted(written & read_parameters(app_def, tensors))
    # ... and where none calls a function whose value differs between them.
    calls = sorted(program_dependent_calls(app_def, inline))
    if read_written or calls:
        varying = None
    for p in params:
        if p.kind != "tensor" or p.name not in written or p.name in jagged:
            continue
        others = [sympy.sympify(e) for q in params if q.kind == "tensor" and q is not p for e in q.index]
        for relation, g, reason in overlap_checks(p, proof.grid, proof.program_vars, varying, read_written,
                                                 calls, others):
            extent = proof.describe(proof.grid[g])
            proof._require(
                relation,
                f"`{p.name}` is written by the kernel and its tiles overlap across the programs of grid "
                f"dimension {g} ({reason}), so the grid's extent there, {extent}, must be 1",
                f"`{p.name}` is written by the kernel and its tiles overlap across the programs of grid "
                f"dimension {g} ({reason})",
                "programs run in no fixed order, so an element several programs store to would end with "
                "an unspecified one's values; arrange the written tensor so that each program has its own "
                "tile (no expand across programs, tile strides no smaller than the tile)")
