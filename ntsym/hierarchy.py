"""The immutable description of an arranged tensor: its levels (each a shape
and one index variable per dimension), the index map into the source, the
conditions for an element to exist, and the requirements checked at launch
(see :mod:`ntsym.tensor`).  A meta-operation substitutes the index variables
of one level (``Hierarchy.substitute``) and makes a new hierarchy."""

import itertools

import sympy



class Level:
    """One level of a hierarchy: a shape and one index variable per dimension."""

    __slots__ = ("shape", "vars")

    def __init__(self, shape, vars):
        self.shape = tuple(shape)
        self.vars = tuple(vars)

    def __repr__(self):
        return f"Level{self.shape}"


class Hierarchy:
    """The immutable description of an arranged tensor (see the module docstring)."""

    __slots__ = ("source", "levels", "index", "conditions", "requirements", "live", "padding")

    def __init__(self, source, levels, index, conditions, requirements=(), live=None, padding=()):
        self.source = source
        self.levels = tuple(levels)
        # Index variable -> how many of its first indices may hold elements:
        # past it, every element is outside the source (windows of a gapped
        # tile that start past the end). Kept while the variable stands
        # unchanged in a level; the proofs of outermost shapes may launch
        # that many programs instead of the full extent.
        level_vars = {v for level in self.levels for v in level.vars}
        self.live = {v: e for v, e in (live or {}).items() if v in level_vars}
        self.index = tuple(index)
        self.conditions = tuple(dict.fromkeys(c for c in conditions if c is not sympy.true))
        # Facts about sizes that the meta-operations assumed but SymPy could not
        # decide (e.g. a squeezed symbolic size is 1); checked at launch.
        self.requirements = tuple(dict.fromkeys(requirements))
        # The conditions ``pad`` added: an element failing only these is a
        # padding position, part of the arranged tensor (it reads ``other``
        # and reductions include it), not a lane past the tensor's extent.
        self.padding = tuple(dict.fromkeys(c for c in padding if c is not sympy.true))

    def substitute(self, mapping, level_pos, new_levels, extra_conditions=(), requirements=(), live=None, padding=()):
        """Replace level ``level_pos`` by ``new_levels`` and its variables by
        the expressions in ``mapping``; ``live`` adds live extents of new
        variables."""
        # A condition that never holds (a slice past the end) leaves every
        # element of the tensor masked, as in NineToothed.
        mapping = {k: v for k, v in mapping.items()}
        return Hierarchy(
            self.source,
            self.levels[:level_pos] + tuple(new_levels) + self.levels[level_pos + 1 :],
            [e.xreplace(mapping) for e in self.index],
            [c.xreplace(mapping) for c in self.conditions] + list(extra_conditions),
            self.requirements + tuple(requirements),
            {**{v: e for v, e in self.live.items() if v not in mapping}, **(live or {})},
            [c.xreplace(mapping) for c in self.padding] + list(padding),
        )


_var_ids = itertools.count()


def _new_var(hint="i"):
    return sympy.Dummy(f"{hint}{next(_var_ids)}", integer=True, nonnegative=True)
