"""Facts proved about a lowered kernel, beyond outermost shapes."""

import itertools

import sympy


def aliasing_table(ir):
    """For each pair of tensors: whether their arranged index maps are the same
    function of the program and tile indices (then in-place use is safe)."""
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
    ib = [e.xreplace(mapping) for e in b.index]
    return all(sympy.expand(x - y) == 0 for x, y in zip(a.index, ib))
