"""``beta * input + alpha * (mat1 @ mat2)``, built on the mm kernel.

The arrangement is mm's, applied twice: once to ``mat1, mat2, output`` and once
to ``mat1, mat2, input`` so that ``input`` is tiled like ``output``.  The
application runs mm's application into a float32 accumulator.  ``beta`` and
``alpha`` are scalar arguments; ``input`` broadcasts to the output's shape.
Unlike torch, ``beta=0`` still reads ``input`` (a NaN there gives NaN).
"""

import torch

import ntsym
import ntsym.language as ntl
from examples import mm
from ntsym import Tensor


def arrangement(input, mat1, mat2, beta, alpha, output):
    _, _, input_arranged = mm.arrangement(mat1, mat2, input)
    mat1_arranged, mat2_arranged, output_arranged = mm.arrangement(mat1, mat2, output)

    return input_arranged, mat1_arranged, mat2_arranged, beta, alpha, output_arranged


def application(input, mat1, mat2, beta, alpha, output):
    mm_output = ntl.zeros(output.shape, dtype=ntl.float32)
    mm.application(mat1, mat2, mm_output)
    output = beta * input + alpha * mm_output  # noqa: F841


tensors = (Tensor(2), Tensor(2), Tensor(2), Tensor(0), Tensor(0), Tensor(2))

kernel = ntsym.make(arrangement, application, tensors)


def addmm(input, mat1, mat2, beta=1, alpha=1):
    output = mat1.new_empty((mat1.shape[0], mat2.shape[1]))
    kernel(input.expand(output.shape), mat1, mat2, beta, alpha, output)
    return output


if __name__ == "__main__":
    from examples._common import device, report

    m, n, k = (4096, 4096, 4096) if device() == "cuda" else (96, 80, 104)
    dtype = torch.float16 if device() == "cuda" else torch.float32
    input = torch.randn(m, n, device=device(), dtype=dtype)
    mat1 = torch.randn(m, k, device=device(), dtype=dtype)
    mat2 = torch.randn(k, n, device=device(), dtype=dtype)
    args = (input, mat1, mat2, 0.5, 2.0)

    def reference():
        return torch.addmm(input, mat1, mat2, beta=0.5, alpha=2.0)

    report("addmm", addmm(*args), reference(), 1e-2, 1e-2, lambda: addmm(*args), reference)
