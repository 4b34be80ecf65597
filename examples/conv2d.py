"""2-D convolution (NCHW, stride 1, no padding) as an implicit GEMM on mm's kernel:
the paper's Listing 8.

Input ``(N, C, H, W)``, filter ``(K, C, R, S)``, output ``(N, K, P, Q)`` with
``P = H - R + 1`` and ``Q = W - S + 1``.  Tiling the input by the filter's
``(C, R, S)`` with stride 1 over ``H`` and ``W`` gives, for each output pixel,
the window it reads; flattening turns input, filter and output into matrices of
shapes ``(N*P*Q, C*R*S)``, ``(C*R*S, K)`` and ``(N*P*Q, K)``, which mm's
arrangement and application multiply.

The first line of the arrangement is not in Listing 8: a padding by zero
elements that writes the input's sizes as ``N = output.shape[0]``,
``H = P + R - 1`` and ``W = Q + S - 1``.  Without it the window counts are
``H - R + 1`` and ``W - S + 1``, which ntsym cannot yet prove positive (they
divide flattened indices), and the row counts ``N*P*Q`` of input and output
differ symbolically.  The padding is empty at run time: ``conv2d`` allocates the
output with exactly these sizes.
"""

import torch

import ntsym
from examples import mm
from ntsym import Tensor


def arrangement(input, filter, output):
    (n, _, p, q), (_, _, r, s), (n_, _, h, w) = output.shape, filter.shape, input.shape
    input = input.pad(((0, n - n_), (0, 0), (0, p + r - 1 - h), (0, q + s - 1 - w)))

    input_arranged = input.tile((1, *filter.shape[1:]), strides=(-1, -1, 1, 1))
    input_arranged = input_arranged.squeeze(1)
    input_arranged.dtype = input_arranged.dtype.squeeze(0)
    input_arranged = input_arranged.ravel()
    input_arranged = input_arranged.flatten(end_dim=3).flatten(start_dim=1)

    filter_arranged = filter.flatten(start_dim=1)
    filter_arranged = filter_arranged.permute((1, 0))

    output_arranged = output.permute((0, 2, 3, 1)).flatten(end_dim=3)

    return mm.arrangement(input_arranged, filter_arranged, output_arranged)


kernel = ntsym.make(arrangement, mm.application, tuple(Tensor(4) for _ in range(3)))


def conv2d(input, weight):
    n, _, h, w = input.shape
    k, _, r, s = weight.shape
    output = torch.empty((n, k, h - r + 1, w - s + 1), dtype=input.dtype, device=input.device)
    kernel(input, weight, output)
    return output


if __name__ == "__main__":
    from examples._common import device, report

    if device() == "cuda":
        input_shape, filter_shape, dtype = (4, 512, 14, 14), (512, 512, 3, 3), torch.float16
    else:
        input_shape, filter_shape, dtype = (2, 6, 9, 10), (8, 6, 3, 2), torch.float32
    x = torch.randn(input_shape, device=device(), dtype=dtype)
    w = torch.randn(filter_shape, device=device(), dtype=dtype)
    reference = torch.nn.functional.conv2d
    report("conv2d", conv2d(x, w), reference(x, w), 1e-2, 1e-2, lambda: conv2d(x, w), lambda: reference(x, w))
