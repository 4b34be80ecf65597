"""Rotary position embedding as the NineToothed paper publishes it: one
arrangement for both layouts, bound with ``functools.partial``, rotating in
place.

``x`` is ``(B, S, H, D)``; ``sin`` and ``cos`` are ``(B, S, H, D/2)`` (views
that broadcast one ``(S, D/2)`` table are fine: they are only read).  The pairs
rotated together are the two halves of the last dimension (``interleaved=False``)
or its even and odd elements (``interleaved=True``): a tile of ``D/2`` elements
with stride 1 and dilation 2 starts at element 0 or 1 and takes every other one.
Each program rotates one ``(b, s, h)`` row: ``input[0]`` and ``input[1]`` are
the two ``D/2`` tiles of the pair.
"""

import functools

import torch

import ntsym
from ntsym import Tensor


def arrangement(input, sin_table, cos_table, head_dim, interleaved):
    tile_shape = (1, 1, 1, head_dim // 2)

    if interleaved:
        strides = (-1, -1, -1, 1)
        dilation = (1, 1, 1, 2)
    else:
        strides = None
        dilation = None

    input_arranged = input.tile(tile_shape, strides=strides, dilation=dilation)
    input_arranged = input_arranged.tile((1, 1, 1, 2))
    input_arranged.dtype = input_arranged.dtype.squeeze((0, 1, 2))
    input_arranged.dtype.dtype = input_arranged.dtype.dtype.squeeze((0, 1, 2))

    sin_table_arranged = sin_table.tile(tile_shape)
    sin_table_arranged.dtype = sin_table_arranged.dtype.squeeze((0, 1, 2))

    cos_table_arranged = cos_table.tile(tile_shape)
    cos_table_arranged.dtype = cos_table_arranged.dtype.squeeze((0, 1, 2))

    return input_arranged, sin_table_arranged, cos_table_arranged


def application(input, sin_table, cos_table):
    sin_table_loaded = sin_table
    cos_table_loaded = cos_table

    input_0 = input[0]
    input_1 = input[1]

    input[0] = input_0 * cos_table_loaded - input_1 * sin_table_loaded
    input[1] = input_0 * sin_table_loaded + input_1 * cos_table_loaded


@functools.lru_cache
def premake(head_dim, interleaved):
    """The kernel for one head size and layout (both compile-time)."""
    input_tensor = Tensor(shape=(None, None, None, head_dim))
    tables = tuple(Tensor(shape=(None, None, None, head_dim // 2)) for _ in range(2))
    bound = functools.partial(arrangement, head_dim=head_dim, interleaved=interleaved)
    return ntsym.make(bound, application, (input_tensor,) + tables, kernel_name="rope_interleaved")


def rope(x, sin, cos, interleaved=True):
    """``x`` rotated by the ``(S, D/2)`` tables ``sin`` and ``cos`` (a new tensor)."""
    output = x.clone()
    shape = x.shape[:-1] + (x.shape[-1] // 2,)
    sin, cos = (t[None, :, None, :].expand(shape) for t in (sin, cos))
    premake(x.shape[-1], bool(interleaved))(output, sin, cos)
    return output


def reference(x, sin, cos, interleaved=True):
    x = x.float()
    s, c = sin.float()[:, None, :], cos.float()[:, None, :]
    if interleaved:
        x1, x2 = x[..., 0::2], x[..., 1::2]
        return torch.stack((x1 * c - x2 * s, x1 * s + x2 * c), dim=-1).flatten(-2)
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((x1 * c - x2 * s, x1 * s + x2 * c), dim=-1)


if __name__ == "__main__":
    from examples._common import device, report

    b, s, h, d = (4, 1024, 48, 64) if device() == "cuda" else (2, 12, 3, 16)
    dtype = torch.float16 if device() == "cuda" else torch.float32
    x = torch.randn(b, s, h, d, device=device(), dtype=dtype)
    angles = torch.randn(s, d // 2, device=device())
    sin, cos = angles.sin().to(dtype), angles.cos().to(dtype)
    for interleaved in (True, False):
        report(
            f"rope (interleaved={interleaved})",
            rope(x, sin, cos, interleaved),
            reference(x, sin, cos, interleaved).to(dtype),
            1e-2, 1e-2,
            lambda: rope(x, sin, cos, interleaved),
            lambda: reference(x, sin, cos, interleaved),
        )
