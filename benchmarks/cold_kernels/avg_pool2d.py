"""2-D average pooling over 3x3 windows (stride 3, no padding), written the
NineToothed way: each window is tiled, the windows are flattened into rows of
9 elements, and a program averages a block of rows.  Padded lanes
(the 9 elements pad to 16) read 0 and add nothing.  The output
is ``(N, C, H // 3, W // 3)``; H and W must be multiples of 3 (the input's
windows and the output's elements are paired one to one)."""

import torch

import ntsym
import ntsym.language as ntl
from ntsym import Tensor

BLOCK_SIZE = ntsym.block_size()


def arrangement(input, output, BLOCK_SIZE=BLOCK_SIZE):
    input_arranged = input.tile((1, 1, 3, 3))
    input_arranged = input_arranged.ravel()
    input_arranged = input_arranged.flatten(end_dim=4).flatten(start_dim=1)
    input_arranged = input_arranged.tile((BLOCK_SIZE, -1))

    output_arranged = output.tile((1, 1, 1, 1))
    output_arranged = output_arranged.ravel()
    output_arranged = output_arranged.flatten(end_dim=4).flatten(start_dim=1)
    output_arranged = output_arranged.tile((BLOCK_SIZE, -1))
    output_arranged.dtype = output_arranged.dtype.squeeze(1)

    return input_arranged, output_arranged


def application(input, output):
    output = ntl.sum(ntl.cast(input, ntl.float32), axis=1) / 9  # noqa: F841


kernel = ntsym.make(arrangement, application, (Tensor(4), Tensor(4)))


def avg_pool2d(input):
    n, c, h, w = input.shape
    output = torch.empty((n, c, h // 3, w // 3), dtype=input.dtype, device=input.device)
    kernel(input, output)
    return output
