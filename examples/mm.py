"""Matrix multiplication: the paper's Listings 5-7 (auto-tuned block sizes).

2-D inputs of any strides; block sizes are at least 16 (``dot``'s minimum);
products accumulate in float32 and the result is stored in the output's dtype.
"""

import torch

import ntsym
import ntsym.language as ntl
from ntsym import Tensor


def arrangement(
    input,
    other,
    output,
    BLOCK_SIZE_M=ntsym.block_size(lower_bound=16),
    BLOCK_SIZE_N=ntsym.block_size(lower_bound=16),
    BLOCK_SIZE_K=ntsym.block_size(lower_bound=16),
):
    output_arranged = output.tile((BLOCK_SIZE_M, BLOCK_SIZE_N))

    input_arranged = input.tile((BLOCK_SIZE_M, BLOCK_SIZE_K))
    input_arranged = input_arranged.tile((1, -1))
    input_arranged = input_arranged.expand((-1, output_arranged.shape[1]))
    input_arranged.dtype = input_arranged.dtype.squeeze(0)

    other_arranged = other.tile((BLOCK_SIZE_K, BLOCK_SIZE_N))
    other_arranged = other_arranged.tile((-1, 1))
    other_arranged = other_arranged.expand((output_arranged.shape[0], -1))
    other_arranged.dtype = other_arranged.dtype.squeeze(1)

    return input_arranged, other_arranged, output_arranged


def application(input, other, output):
    accumulator = ntl.zeros(output.shape, dtype=ntl.float32)

    for k in range(input.shape[0]):
        accumulator += ntl.dot(input[k], other[k])

    output = accumulator  # noqa: F841


tensors = (Tensor(2), Tensor(2), Tensor(2))

kernel = ntsym.make(arrangement, application, tensors)


def mm(input, other):
    output = input.new_empty((input.shape[0], other.shape[1]))
    kernel(input, other, output)
    return output


if __name__ == "__main__":
    from examples._common import device, report

    m, n, k = (4096, 4096, 4096) if device() == "cuda" else (96, 88, 104)
    dtype = torch.float16 if device() == "cuda" else torch.float32
    a = torch.randn(m, k, device=device(), dtype=dtype)
    b = torch.randn(k, n, device=device(), dtype=dtype)
    report("mm", mm(a, b), a @ b, 1e-2, 1e-2, lambda: mm(a, b), lambda: a @ b)
