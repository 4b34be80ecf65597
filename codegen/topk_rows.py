"""``topk`` over a tile whose rows may hold lanes outside the tensor: the
``k`` largest of a row are its elements only while the row holds ``k`` of
them.  A row of fewer elements would give the fill of the lanes outside
(-inf) among its ``k`` values, where ``torch.topk`` refuses ``k`` larger
than the row.  So each row's count of lanes inside, at its smallest over
the programs, must be at least ``k``: proved, else checked at launch, and
refused when ntsym cannot bound that count.

A lane lies inside where ``lane + offset < n`` (the factor's condition, the
lane a ``Dummy`` counted in its block); the fewest are at least ``n`` less an upper
bound of the offset over the programs (each program index below its grid extent,
``%`` by ``m`` at most ``m - 1``): the check is exact for a row of tiles, and for a
grid that reaches past the tensor's tiles it refuses what those programs would
read."""

import ast

import sympy

from ntsym_codegen.intfuncs import FloorDiv, Mod
from ntsym_codegen.ir import Check


def require_rows_hold_k(em, node, mixed):
    """Append the launch check that every row ``topk`` reads holds ``k``
    elements (``mixed``: the factors along its axis), or refuse."""
    k_node = node.args[1] if len(node.args) > 1 else next((kw.value for kw in node.keywords if kw.arg == "k"), None)
    k = _constant(em, k_node)
    if k is None:
        raise em.error("`topk` over a tile whose rows may end before their block needs `k` as a number ntsym "
                       "can read (a literal or a global constant)", node)
    for factor in mixed:
        fewest = _fewest_inside(em, factor)
        if fewest is None:
            raise em.error(
                f"`topk` over `{ast.unparse(node.args[0])}`, whose rows may hold lanes outside the tensor: ntsym "
                "cannot tell how many elements a row holds (where a loop's index or a jagged sequence's own "
                "length decides it), and a row of fewer than `k` would give the fill among "
                "its `k` largest (torch refuses `k` past the row); take `topk` of a tile loaded from the tensor, "
                "or of one whose block the tensor fills", node)
        relation = sympy.Ge(fewest, k)
        if relation is sympy.true:
            continue
        where = f"`{ast.unparse(node)}` (line {node.lineno})"
        if relation is sympy.false:
            raise em.error(f"{where}: a row holds at most {fewest} elements, fewer than k = {k}", node)
        check = Check(relation, f"every row of `{ast.unparse(node.args[0])}` must hold at least k = {k} elements",
                      f"{where} takes the {k} largest of each; a shorter row would give the fill of its lanes "
                      "outside the tensor among them, where torch.topk refuses k past the row")
        if check not in em.records.checks:
            em.records.checks.append(check)


def _constant(em, k_node):
    if k_node is None:
        return None
    value = em.expr(k_node)
    if isinstance(value, ast.Constant) and isinstance(value.value, int) and not isinstance(value.value, bool):
        return sympy.Integer(value.value)
    return None


def _fewest_inside(em, factor):
    """The fewest lanes inside along ``factor``'s axis in any program, or None."""
    cond = factor.cond
    if not isinstance(cond, sympy.StrictLessThan) or factor.axes is None or len(factor.axes) != 1:
        return None
    lanes = [s for s in cond.lhs.free_symbols if isinstance(s, sympy.Dummy)]  # the lane (block index) variables
    if len(lanes) != 1 or sympy.expand(cond.lhs).coeff(lanes[0]) != 1:
        return None
    offset = sympy.expand(cond.lhs - lanes[0])
    programs = dict(zip(em.ir.program_vars, em.ir.grid))
    known = _launch_symbols(em)
    if any(s not in known for s in cond.rhs.free_symbols) or \
            any(s not in programs and s not in known for s in offset.free_symbols):
        return None  # a loop's index, a sequence's own length: not known at launch
    largest = _upper(offset, programs)
    # More than the block's extent only where the block lies inside (``k`` is
    # at most the extent: Triton's own rule).
    return None if largest is None else cond.rhs - largest


def _launch_symbols(em):
    """The symbols a launch check can read: the tensors' sizes and the block sizes."""
    known = {m.symbol for m in em.ir.meta_params}
    for p in em.ir.params:
        for size in p.sizes:
            known |= sympy.sympify(size).free_symbols
    # A jagged tensor's row length is its program's (read from the offsets there).
    return known - {j.seq_len for j in em.ir.jagged} - {j.start for j in em.ir.jagged}


def _upper(e, programs):
    """An upper bound of ``e`` over the programs (each program index below its
    grid extent), or None: sums, products by values of no negative sign, ``%``
    by a positive value (at most one less) and floors are followed."""
    if not e.free_symbols & set(programs):
        return e
    if e in programs:
        return programs[e] - 1
    if isinstance(e, sympy.Add):
        parts = [_upper(a, programs) for a in e.args]
        return None if None in parts else sympy.Add(*parts)
    if isinstance(e, sympy.Mul):
        varying = [a for a in e.args if a.free_symbols & set(programs)]
        rest = sympy.Mul(*[a for a in e.args if a not in varying])
        if len(varying) != 1 or rest.is_nonnegative is not True:
            return None
        inner = _upper(varying[0], programs)
        return None if inner is None else rest * inner
    if isinstance(e, (Mod, sympy.Mod)):  # in [0, m) for a modulus m > 0 (ntsym's; SymPy's for a >= 0)
        value, modulus = e.args
        if modulus.free_symbols & set(programs) or modulus.is_positive is not True or \
                (isinstance(e, sympy.Mod) and value.is_nonnegative is not True):
            return None
        return modulus - 1
    if isinstance(e, FloorDiv):  # nondecreasing in its numerator for a divisor > 0
        value, divisor = e.args
        inner = _upper(value, programs)
        if inner is None or divisor.free_symbols & set(programs) or divisor.is_positive is not True:
            return None
        return FloorDiv(inner, divisor)
    if isinstance(e, sympy.floor):
        inner = _upper(e.args[0], programs)
        return None if inner is None else sympy.floor(inner)
    return None
