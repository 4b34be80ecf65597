"""``topk`` over a tile whose rows may hold lanes outside the tensor: the
``k`` largest of a row are its elements only while the row holds ``k`` of
them.  A row of fewer elements would give the fill of the lanes outside
(-inf) among its ``k`` values, where ``torch.topk`` refuses ``k`` larger
than the row.  So each row's count of lanes inside, at its smallest over
the programs, must be at least ``k``: proved, else checked at launch, and
refused when ntsym cannot bound that count.

A lane lies inside where ``lane + offset < n`` (the factor's condition, the
lane a ``Dummy`` counted in its block); the program whose offset is largest holds the
fewest, ``n - offset`` with each program index at its last value, or, where the
offset is a whole number of blocks read through ``//`` or ``%``, the last block the
tensor reaches."""

import ast

import sympy

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
                "cannot tell how many elements a row holds, and a row of fewer than `k` would give the fill among "
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
    if lanes[0] in offset.free_symbols or lanes[0] in cond.rhs.free_symbols:
        return None
    programs = dict(zip(em.ir.program_vars, em.ir.grid))
    if any(symbol not in programs and not _fixed(em, symbol) for symbol in offset.free_symbols):
        return None  # a loop's index or other value of the program: not bounded here
    last = {}
    for symbol in offset.free_symbols & set(programs):
        # Linear, with a coefficient of no negative value: the last program's offset is the largest.
        slope = sympy.diff(offset, symbol)
        if not offset.is_polynomial(symbol) or symbol in slope.free_symbols or slope.is_nonnegative is not True:
            return _whole_blocks(offset, factor, cond.rhs)
        last[symbol] = programs[symbol] - 1
    # More than the block's extent only where the block lies inside (``k`` is
    # at most the extent: Triton's own rule).
    return cond.rhs - offset.xreplace(last)


def _whole_blocks(offset, factor, n):
    """Where the offset is a whole number of blocks of the factor's extent (a
    grid read through ``//`` or ``%``, a flattened one): the last block the
    tensor reaches holds the fewest, ``n - E * (cdiv(n, E) - 1)``; else None."""
    extent = factor.extent(next(iter(factor.axes)))
    if extent is None:
        return None
    blocks = sympy.simplify(offset / extent[0])
    if blocks.is_integer is not True or blocks.is_nonnegative is not True:
        return None
    return n - extent[0] * (sympy.ceiling(n / extent[0]) - 1)


def _fixed(em, symbol):
    """A size or a block size: the same in every program."""
    return symbol.is_positive is True or getattr(symbol, "constexpr", False) or symbol.name.startswith("NTSYM_BLOCK")
