"""Facts proved about a lowered kernel, beyond outermost shapes."""

import itertools

import sympy


def aliasing_table(ir):
    """For each pair of tensors: whether their arranged index maps are the same
    function of the program and tile indices (then in-place use is safe).

    The runtime consults an entry only for two views that are identical (one
    data pointer, equal shapes and strides), so the maps are compared with the
    sizes of one tensor taken for the other's, dimension by dimension: a
    flattened ``x`` and ``y`` index by ``x.shape[1]`` and ``y.shape[1]``,
    equal there."""
    tensors = [p for p in ir.params if p.kind == "tensor"]
    table = {}
    for a, b in itertools.combinations(tensors, 2):
        table[(a.name, b.name)] = _same_map(a, b)
    return table


def _same_map(a, b):
    if a.ndim != b.ndim or len(a.levels) != len(b.levels):
        return False
    mapping = {}
    for la, lb, va, vb in zip(a.levels, b.levels, a.level_vars, b.level_vars):
        if len(la) != len(lb):
            return False
        for x, y in zip(va, vb):
            mapping[y] = x
    same = {}
    for sa, sb in zip(a.sizes, b.sizes):
        if isinstance(sb, sympy.Symbol) and sb != sa:
            same.setdefault(sb, sa)
        elif isinstance(sa, sympy.Symbol) and sa != sb:
            same.setdefault(sa, sb)
    ia = [e.xreplace(same) for e in a.index]
    ib = [e.xreplace(mapping).xreplace(same) for e in b.index]
    return all(sympy.expand(x - y) == 0 for x, y in zip(ia, ib))
