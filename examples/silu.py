"""SiLU, ``x * sigmoid(x)``, element-wise over a vector (auto-tuned block size).

The kernel takes 1-D tensors; ``silu`` flattens its input, so any shape works.
It computes in float32 and stores in the output's dtype.
"""

import torch

import ntsym
import ntsym.language as ntl
from ntsym import Tensor


def arrangement(input, output, BLOCK_SIZE=ntsym.block_size()):
    return input.tile((BLOCK_SIZE,)), output.tile((BLOCK_SIZE,))


def application(input, output):
    x = ntl.cast(input, ntl.float32)
    output = x * ntl.sigmoid(x)  # noqa: F841


kernel = ntsym.make(arrangement, application, (Tensor(1), Tensor(1)))


def silu(x):
    if not x.is_floating_point():  # torch refuses; the kernel would truncate the result
        raise TypeError(f"silu: expected a floating-point tensor, got {x.dtype}")
    output = torch.empty_like(x, memory_format=torch.contiguous_format)
    kernel(x.reshape(-1), output.view(-1))
    return output


if __name__ == "__main__":
    from examples._common import device, report

    size = 16777216 if device() == "cuda" else 100000
    dtype = torch.float16 if device() == "cuda" else torch.float32
    x = torch.randn(size, device=device(), dtype=dtype)
    reference = torch.nn.functional.silu
    report("silu", silu(x), reference(x), 1e-2, 1e-2, lambda: silu(x), lambda: reference(x))
