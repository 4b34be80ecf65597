"""NineToothed's split of a program's index over a tensor's own outermost
shape, for tensors whose outermost shape pairs with the grid's in no single
way (``pairing.align`` gives them no alignment).

NineToothed launches one program per element of the first tensor's
outermost shape and gives every tensor the index ``unravel(pid, shape)`` of
the program id ``pid`` over that tensor's own outermost shape, row-major.
Where the dimensions not of size 1 pair one to one, that is ntsym's pairing;
where they do not (``(a, b)`` beside ``(n,)``, either of ``a`` and ``b`` of
size 1 at launch, or neither: ``(A, C)`` beside ``(A * C,)``), the tensor
takes the split itself: its outermost indices are ``FloorDiv``/``Mod`` of the
program's row-major position, as ``flatten`` writes them.  Which tiles the
programs reach then depends on the sizes at launch only through the count of
tiles, which the launch checks: a written tensor must have one tile per
program (fewer: programs past its last tile; more: tiles no program writes),
a tensor only read at least one (more are left unread).
"""

import itertools

import sympy

from ntsym_codegen.intfuncs import FloorDiv, Mod
from ntsym.errors import ArrangementError
from ntsym.pairing import shape_text


def program_position(program_vars, grid):
    """The program's row-major position over the grid."""
    position, inner = sympy.S.Zero, sympy.S.One
    for v, n in reversed(list(zip(program_vars, grid))):
        if n != 1:
            position += v * inner
        inner = inner * n
    return position


def split_index(program_vars, grid, shape):
    """The outermost indices NineToothed gives a tensor of outermost
    ``shape``: the row-major position over ``grid`` unravelled over ``shape``
    (the first index unbounded, as in NineToothed)."""
    position = program_position(program_vars, grid)
    index, inner = [], sympy.S.One
    for k in reversed(range(len(shape))):
        n = shape[k]
        expr = FloorDiv(position, inner)
        if k:
            expr = Mod(expr, n)
        index.append(sympy.S.Zero if n == 1 else expr)
        inner = inner * n
    return tuple(reversed(index))


def require_split(proof, ref_name, ref_shape, name, shape):
    """The launch check of a tensor that takes the split: as many tiles as
    programs where it is written, at least as many where it is only read;
    the message names the choices of unit dimensions that pair it with the
    grid dimension by dimension.  Not for a jagged tensor, whose batch index
    must be a grid dimension's."""
    if any(proof.sources[proof.names.index(n)].tensor.jagged_dim is not None for n in (ref_name, name)):
        raise ArrangementError(
            f"outermost shapes differ in length: `{ref_name}` has {shape_text(ref_shape)} but `{name}` "
            f"has {shape_text(shape)}, even without their dimensions of size 1, and one of them is a "
            "jagged tensor, whose batch must take a grid dimension of its own; arrange them to the same "
            "outermost shape, up to dimensions of size 1")
    tiles = sympy.Mul(*(proof._apply(n) for n in shape))
    programs = sympy.Mul(*proof.grid)
    choices = _choices(proof, ref_name, proof.grid, name, shape)
    split = (f"NineToothed splits each program's row-major position over `{name}`'s own outermost shape "
             f"{proof._shape_text(shape)}, one program per element of `{ref_name}`'s "
             f"{proof._shape_text(proof.grid)}")
    if name in proof.written:
        message = (f"`{name}`: its {proof.describe(tiles)} outermost tiles must equal the "
                   f"{proof.describe(programs)} programs")
        why = ("each program writes the tile its position names: with fewer tiles, programs past the last "
               "would write none; with more, tiles no program writes would keep their old values")
        relation = sympy.Eq(tiles, programs)
    else:
        message = (f"`{name}`: its {proof.describe(tiles)} outermost tiles must be at least the "
                   f"{proof.describe(programs)} programs")
        why = ("each program reads the tile its position names: a program past the last tile would read "
               "none of its elements (a wrong result); tiles past the programs are not read")
        relation = sympy.Le(programs, tiles)
    proof._require(relation, message, f"{split}{choices}", why)


def _choices(proof, ref_name, grid, name, shape):
    """The pairings dimension by dimension the split includes, as text: the
    dimensions of the longer shape that, of size 1, leave the two shapes
    pairing in order (``; e.g. x.shape[0] == 1, or x.shape[1] == 1``)."""
    mine = [d for d, n in enumerate(shape) if n != 1]
    theirs = [d for d, n in enumerate(grid) if n != 1]
    longer, owner, extents = (mine, name, shape) if len(mine) > len(theirs) else (theirs, ref_name, grid)
    extra = abs(len(mine) - len(theirs))
    could = [d for d in longer if sympy.Eq(proof._apply(extents[d]), 1) is not sympy.false]
    options = [" and ".join(f"{proof.describe(proof._apply(extents[d]))} == 1" for d in c)
               for c in itertools.combinations(could, extra)] if extra else []
    if not options:
        return f" (`{owner}`'s dimensions pair with the other's only through that split)"
    return f" (it pairs dimension by dimension where {', or '.join(options)})"
