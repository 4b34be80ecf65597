"""Looking at arrangements with numbers: ``eval`` (where every element of
every level comes from), ``subs`` (an arrangement with sizes filled in) and
``simulate_arrangement`` (the same for concrete torch tensors), as NineToothed
offers them, and what they stand on: ``index_table`` (the source index of every
element, and whether it exists) and ``eval_expr``.  All of them evaluate the
SymPy index maps directly: no kernel is compiled, so they work without a GPU.
The first four live in :mod:`ntsym.evaluation`, which ``Tensor`` uses."""

import math

import sympy

from ntsym.errors import MetaOperationError
from ntsym.evaluation import eval, eval_expr, index_table, subs  # noqa: A004 - NineToothed's names
from ntsym.tensor import Tensor

__all__ = ["eval", "eval_expr", "index_table", "simulate_arrangement", "subs"]


def simulate_arrangement(arrangement, tensors, device=None):
    """Run ``arrangement`` on the shapes of the torch tensors ``tensors``.

    Returns ``(sources, targets)``: for each tensor, its elements numbered in
    row-major order (``torch.arange(numel).view(shape)``), and its
    arrangement with the outermost level flattened and every element holding
    the number of the source element it comes from, -1 where it does not
    exist.  As NineToothed's, in the order of ``tensors``.
    """
    import torch

    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    symbolic = tuple(Tensor(t.ndim) for t in tensors)
    arranged = arrangement(*symbolic)
    arranged = arranged if isinstance(arranged, tuple) else (arranged,)
    sources, targets = [], []
    for tensor, symbol, result in zip(tensors, symbolic, arranged):
        shape = _concrete_shape(tensor)
        if tensor.ndim == 0:
            sources.append(torch.tensor(0, device=device))
            targets.append(torch.tensor(0, device=device))
            continue
        known = {symbol: {"shape": shape}}
        for other, other_symbol in zip(tensors, symbolic):
            known.setdefault(other_symbol, {"shape": _concrete_shape(other)})
        values = eval(result, known)
        levels = [len(level.shape) for level in result.hierarchy.levels]
        flat = values.reshape((-1,) + values.shape[levels[0]:])
        sources.append(torch.arange(math.prod(shape), device=device).view(shape))
        targets.append(torch.as_tensor(flat, dtype=torch.int64, device=device))
    return tuple(sources), tuple(targets)


def _concrete_shape(tensor):
    """The shape of a torch tensor, or of an ntsym tensor of concrete shape,
    as ints (SymPy integers do not reach torch)."""
    shape = tuple(sympy.sympify(n) for n in tensor.shape)
    if not all(n.is_Integer for n in shape):
        raise MetaOperationError(
            f"simulate_arrangement: the shape {tuple(tensor.shape)} is not concrete; give torch "
            "tensors or ntsym tensors of concrete shape"
        )
    return tuple(int(n) for n in shape)
