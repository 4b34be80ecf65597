"""The output shapes a registered operator derives from its kernel: each
output size an expression of the inputs' sizes (from the proof's unification,
then the equalities checked at launch, solved for one unknown at a time),
printed as a function of the call's arguments (``ntsym.library``)."""

import ast

import sympy

from ntsym_codegen.intfuncs import CeilDiv, FloorDiv, Mod
from ntsym_codegen.printer import PrintError, SizePrinter
from ntsym_codegen.runtime import cdiv


def derive_shapes(kernel, inputs, outputs):
    """Per output: per dimension, an expression of the inputs' size symbols,
    or None where the kernel leaves the size open.  Sizes come from the
    proof's unification (an output size set equal to an input's), then from
    the equalities checked at launch, solved for one unknown size at a time."""
    known = set()
    for p in inputs:
        known |= {s for s in p.source_sizes if isinstance(s, sympy.Symbol)}
    solved = {}  # output size symbol -> expression over known symbols
    result = {}
    for p in outputs:
        exprs = []
        for s, rep in zip(p.source_sizes, p.sizes):
            if not isinstance(s, sympy.Basic) or not s.free_symbols:
                exprs.append(sympy.Integer(int(s)))
                continue
            rep = sympy.sympify(rep)
            if rep.free_symbols <= known and evaluable(rep):
                solved[s] = rep
            exprs.append(None)
        result[p.name] = exprs
    equalities = [c.relation for c in kernel.ir.checks if isinstance(c.relation, sympy.Eq)]
    unknown = {s for p in outputs for s in p.source_sizes if isinstance(s, sympy.Symbol)}
    changed = True
    while changed:
        changed = False
        for rel in equalities:
            expr = (rel.lhs - rel.rhs).xreplace(solved)
            free = expr.free_symbols - known
            if len(free) != 1:
                continue
            (target,) = free
            if target not in unknown or target in solved:
                continue
            solution = solve(expr, target)
            if solution is not None and solution.free_symbols <= known and evaluable(solution):
                solved[target] = solution
                changed = True
    for p in outputs:
        exprs = result[p.name]
        for d, s in enumerate(p.source_sizes):
            if exprs[d] is None and s in solved:
                exprs[d] = solved[s]
    return result


def solve(expr, target):
    if expr.has(CeilDiv, FloorDiv, Mod):
        # Only where the unknown is outside the integer divisions: a + b*x.
        if any(f.has(target) for f in expr.atoms(CeilDiv, FloorDiv, Mod)):
            return None
    try:
        coeff = sympy.diff(expr, target)
    except Exception:
        return None
    if coeff.free_symbols or coeff == 0 or coeff not in (1, -1):
        return None
    rest = sympy.expand(expr - coeff * target)
    if rest.has(target):
        return None
    return sympy.simplify(-rest / coeff) if coeff == 1 else rest


def evaluable(expr):
    """Whether the op can compute ``expr`` from the call's sizes (``SizePrinter``)."""
    try:
        SizePrinter({s: "size" for s in expr.free_symbols})(expr)
    except PrintError:
        return False
    return True


def compile_shape(exprs, inputs):
    """A function (the op's arguments) -> shape, for derived expressions:
    printed by ``SizePrinter`` over ``a[i].shape[d]``, so that torch's
    symbolic sizes stay symbolic."""
    names = {}
    for i, p in enumerate(inputs):
        for d, s in enumerate(p.source_sizes):
            if isinstance(s, sympy.Symbol) and s not in names:
                names[s] = f"a[{i}].shape[{d}]"
    printer = SizePrinter({s: ast.parse(text, mode="eval").body for s, text in names.items()})
    arguments = ast.arguments(posonlyargs=[], args=[ast.arg("a")], kwonlyargs=[], kw_defaults=[], defaults=[])
    body = ast.Tuple(elts=[printer(e) for e in exprs], ctx=ast.Load())
    function = ast.fix_missing_locations(ast.Expression(ast.Lambda(args=arguments, body=body)))
    return eval(compile(function, "<ntsym output shape>", "eval"), {"cdiv": cdiv})  # noqa: S307 - printed above
