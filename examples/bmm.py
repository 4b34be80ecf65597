"""Batched matrix multiplication, ``(B, M, K) @ (B, K, N)``, with mm's application.

The arrangement is mm's with a leading batch dimension: programs run over
``(batch, row block, column block)``, and each gets a row of ``input`` tiles and a
column of ``other`` tiles of its batch, which mm's application multiplies.
Block sizes are auto-tuned, at least 16 (``dot``'s minimum).
"""

import torch

import ntsym
from examples import mm
from ntsym import Tensor


def arrangement(
    input,
    other,
    output,
    BLOCK_SIZE_M=ntsym.block_size(lower_bound=16),
    BLOCK_SIZE_N=ntsym.block_size(lower_bound=16),
    BLOCK_SIZE_K=ntsym.block_size(lower_bound=16),
):
    output_arranged = output.tile((1, BLOCK_SIZE_M, BLOCK_SIZE_N))
    output_arranged.dtype = output_arranged.dtype.squeeze(0)

    input_arranged = input.tile((1, BLOCK_SIZE_M, BLOCK_SIZE_K))
    input_arranged.dtype = input_arranged.dtype.squeeze(0)
    input_arranged = input_arranged.tile((1, 1, -1))
    input_arranged = input_arranged.expand((-1, -1, output_arranged.shape[2]))
    input_arranged.dtype = input_arranged.dtype.squeeze((0, 1))

    other_arranged = other.tile((1, BLOCK_SIZE_K, BLOCK_SIZE_N))
    other_arranged.dtype = other_arranged.dtype.squeeze(0)
    other_arranged = other_arranged.tile((1, -1, 1))
    other_arranged = other_arranged.expand((-1, output_arranged.shape[1], -1))
    other_arranged.dtype = other_arranged.dtype.squeeze((0, 2))

    return input_arranged, other_arranged, output_arranged


kernel = ntsym.make(arrangement, mm.application, (Tensor(3), Tensor(3), Tensor(3)))


def bmm(input, other):
    if input.dim() != 3 or other.dim() != 3 or input.shape[0] != other.shape[0] or input.shape[2] != other.shape[1]:
        raise ValueError(f"bmm: expected (b, n, m) and (b, m, p) tensors, got {tuple(input.shape)} and "
                         f"{tuple(other.shape)}")
    output = input.new_empty((input.shape[0], input.shape[1], other.shape[2]))  # (less host time than torch.empty)
    kernel(input, other, output)
    return output


if __name__ == "__main__":
    from examples._common import device, report

    b, n = (4, 2048) if device() == "cuda" else (3, 72)
    dtype = torch.float16 if device() == "cuda" else torch.float32
    x = torch.randn(b, n, n + 8, device=device(), dtype=dtype)
    y = torch.randn(b, n + 8, n - 8, device=device(), dtype=dtype)
    report("bmm", bmm(x, y), torch.bmm(x, y), 1e-2, 1e-2, lambda: bmm(x, y), lambda: torch.bmm(x, y))
