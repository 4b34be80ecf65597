"""Rotary position embedding, non-interleaved halves.

``x`` is ``(B, S, H, D)``, ``sin`` and ``cos`` are ``(S, D/2)``; with ``x1, x2``
the two halves of the last dimension, the output is
``(x1*cos - x2*sin, x1*sin + x2*cos)``, broadcast over ``B`` and ``H``.

The kernel sees ``x`` and the output as ``(B, S, H, 2, D/2)`` views (the size 2
is part of the source tensors, so ntsym knows both halves exist).  Each program
takes one position of one sequence and a block of heads (auto-tuned): a
``(heads, D/2)`` tile of each half, ``input[0]`` and ``input[1]``, and one row
of each table, expanded over the batch and the head blocks.  Computes in
float32 and stores in the output's dtype; ``D/2`` is padded to a power of two
and is a compile-time size (``constexpr``, at most 2**12, checked at launch).
"""

import torch

import ntsym
import ntsym.language as ntl
from ntsym import Tensor


def arrangement(input, sin, cos, output, BLOCK_SIZE=ntsym.block_size(lower_bound=1, upper_bound=64)):
    def arrange_halves(x):
        arranged = x.tile((1, 1, BLOCK_SIZE, 1, -1))
        arranged.dtype = arranged.dtype.squeeze((0, 1, 3))
        arranged = arranged.tile((1, 1, 1, -1, 1)).squeeze((3, 4))
        arranged.dtype = arranged.dtype.squeeze((0, 1, 2, 4))
        return arranged

    def arrange_table(table):
        arranged = table.tile((1, -1)).squeeze(1).unsqueeze(0).unsqueeze(2)
        return arranged.expand((input.shape[0], -1, input_arranged.shape[2]))

    input_arranged = arrange_halves(input)

    return input_arranged, arrange_table(sin), arrange_table(cos), arrange_halves(output)


def application(input, sin, cos, output):
    x1 = ntl.cast(input[0], ntl.float32)
    x2 = ntl.cast(input[1], ntl.float32)
    output[0] = x1 * cos - x2 * sin
    output[1] = x1 * sin + x2 * cos


half = {"constexpr": True, "upper_bound": 2**12}  # D/2 is one tile
halves = (None, None, None, 2, None)  # (B, S, H, 2, D/2)
tensors = (
    Tensor(shape=halves, shape_options=(None, None, None, None, half)),
    Tensor(2, shape_options=(None, half)),
    Tensor(2, shape_options=(None, half)),
    Tensor(shape=halves, shape_options=(None, None, None, None, half)),
)

kernel = ntsym.make(arrangement, application, tensors)


def rope(x, sin, cos):
    half = (x.shape[1], x.shape[-1] // 2) if x.dim() == 4 else None
    if half is None or x.shape[-1] % 2 or tuple(sin.shape) != half or tuple(cos.shape) != half:
        raise ValueError(f"rope: x must be (B, S, H, D) with D even and sin, cos (S, D/2) = {half}, got "
                         f"{tuple(x.shape)}, {tuple(sin.shape)}, {tuple(cos.shape)}")
    output = torch.empty_like(x, memory_format=torch.contiguous_format)
    kernel(x.unflatten(-1, (2, -1)), sin, cos, output.unflatten(-1, (2, -1)))
    return output


if __name__ == "__main__":
    from examples._common import device, report

    b, s, h, d = (4, 1024, 48, 64) if device() == "cuda" else (2, 12, 5, 16)
    dtype = torch.float16 if device() == "cuda" else torch.float32
    x = torch.randn(b, s, h, d, device=device(), dtype=dtype)
    angles = torch.randn(s, d // 2, device=device())
    sin, cos = angles.sin().to(dtype), angles.cos().to(dtype)

    def reference():
        x1, x2 = x.float().chunk(2, dim=-1)
        s, c = sin.float()[:, None, :], cos.float()[:, None, :]
        return torch.cat((x1 * c - x2 * s, x1 * s + x2 * c), dim=-1).to(x.dtype)

    report("rope", rope(x, sin, cos), reference(), 1e-2, 1e-2, lambda: rope(x, sin, cos), reference)
