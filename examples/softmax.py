"""Row-wise softmax: one program per row, the whole row in one tile.

The tile is ``(1, -1)``: a full row, padded to the next power of two.  The row
length is a compile-time size (``constexpr``, bounded by ``upper_bound``; both
checked at launch), so each new row length compiles a new kernel, and the same
source also loads under NineToothed, whose auto-tuner needs that bound.  Padded
lanes read ``-inf`` and drop out of the max and the sum.  Limits: rows of at most
2**15 elements (on a GPU, rows beyond a few tens of thousands of elements spill
registers).
``softmax`` moves ``dim`` last and flattens the other dimensions.
"""

import torch

import ntsym
import ntsym.language as ntl
from ntsym import Tensor


def arrangement(input, output):
    return input.tile((1, -1)), output.tile((1, -1))


def application(input, output):
    numerator = ntl.exp(input - ntl.max(input))  # exp computes in float32
    output = numerator / ntl.sum(numerator)  # noqa: F841


rows = (None, {"constexpr": True, "upper_bound": 2**15})  # a row is one tile
tensors = (Tensor(2, other=float("-inf"), shape_options=rows), Tensor(2, shape_options=rows))

kernel = ntsym.make(arrangement, application, tensors)


def softmax(x, dim=-1):
    if x.ndim == 2 and dim in (-1, 1):  # the kernel's own layout: no views to make (host time)
        output = torch.empty_like(x, memory_format=torch.contiguous_format)
        kernel(x, output)
        return output
    rows = x.movedim(dim, -1)
    output = torch.empty(rows.shape, dtype=x.dtype, device=x.device)
    kernel(rows.reshape(-1, rows.shape[-1]), output.view(-1, rows.shape[-1]))
    return output.movedim(-1, dim)


if __name__ == "__main__":
    from examples._common import device, report

    shape = (4096, 4096) if device() == "cuda" else (300, 1000)
    dtype = torch.float16 if device() == "cuda" else torch.float32
    x = torch.randn(shape, device=device(), dtype=dtype)
    reference = torch.softmax
    report("softmax", softmax(x), reference(x, -1), 1e-2, 1e-2, lambda: softmax(x), lambda: reference(x, -1))
