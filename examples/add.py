"""Vector addition: the paper's Listing 3, with an auto-tuned block size.

The kernel and ``add`` take 1-D tensors of one length (any strides) and add in
their dtype.
"""

import torch

import ntsym
from ntsym import Tensor

BLOCK_SIZE = ntsym.block_size()


def arrangement(input, other, output, BLOCK_SIZE=BLOCK_SIZE):
    input_arranged = input.tile((BLOCK_SIZE,))
    other_arranged = other.tile((BLOCK_SIZE,))
    output_arranged = output.tile((BLOCK_SIZE,))

    return input_arranged, other_arranged, output_arranged


def application(input, other, output):
    output = input + other  # noqa: F841


kernel = ntsym.make(arrangement, application, tuple(Tensor(1) for _ in range(3)))


def add(input, other):
    # The kernel reads only the first tiles of a longer `other` (a read-only
    # tensor may have more tiles than the output): refuse what torch refuses,
    # and operands torch would promote to another dtype than `input`'s.
    if input.shape != other.shape or input.dtype != other.dtype:
        raise ValueError(f"add: expected two tensors of one shape and dtype, got {tuple(input.shape)} of "
                         f"{input.dtype} and {tuple(other.shape)} of {other.dtype}")
    output = torch.empty_like(input)
    kernel(input, other, output)
    return output


if __name__ == "__main__":
    from examples._common import device, report

    size = 16777216 if device() == "cuda" else 10000
    dtype = torch.float16 if device() == "cuda" else torch.float32
    x = torch.randn(size, device=device(), dtype=dtype)
    y = torch.randn(size, device=device(), dtype=dtype)
    report("add", add(x, y), x + y, 1e-6, 1e-6, lambda: add(x, y), lambda: x + y)
