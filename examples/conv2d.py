"""2-D convolution (NCHW, stride 1, no padding) as an implicit GEMM on mm's kernel:
the paper's Listing 8, as written there.

Input ``(N, C, H, W)``, filter ``(K, C, R, S)``, output ``(N, K, P, Q)`` with
``P = H - R + 1`` and ``Q = W - S + 1``.  Tiling the input by the filter's
``(C, R, S)`` with stride 1 over ``H`` and ``W`` gives, for each output pixel,
the window it reads; flattening turns input, filter and output into matrices of
shapes ``(N*P*Q, C*R*S)``, ``(C*R*S, K)`` and ``(N*P*Q, K)``, which mm's
arrangement and application multiply.  ntsym proves the three matrices fit
together once ``N*(H-R+1)*(W-S+1) == N*P*Q`` (checked at launch, for every
block size) and ``C*R*S`` agrees (the k loop).  Sizes are compile-time
constants (``shape_options``), as in the paper: the index math that gathers the
windows then divides by constants, and each new shape compiles a new kernel.
"""

import torch

import ntsym
from examples import mm
from ntsym import Tensor


def arrangement(input, filter, output):
    input_arranged = input.tile((1, *filter.shape[1:]), strides=(-1, -1, 1, 1))
    input_arranged = input_arranged.squeeze(1)
    input_arranged.dtype = input_arranged.dtype.squeeze(0)
    input_arranged = input_arranged.ravel()
    input_arranged = input_arranged.flatten(end_dim=3).flatten(start_dim=1)

    filter_arranged = filter.flatten(start_dim=1)
    filter_arranged = filter_arranged.permute((1, 0))

    output_arranged = output.permute((0, 2, 3, 1)).flatten(end_dim=3)

    return mm.arrangement(input_arranged, filter_arranged, output_arranged)


shape_options = {"constexpr": True}
tensors = tuple(Tensor(4, shape_options=shape_options) for _ in range(3))

kernel = ntsym.make(arrangement, mm.application, tensors)


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
    def reference():
        return torch.nn.functional.conv2d(x, w)

    report("conv2d", conv2d(x, w), reference(), 1e-2, 1e-2, lambda: conv2d(x, w), reference)
