"""RMS normalization over the last dimension (no weight): one program per row.

``y = x / sqrt(mean(x**2) + eps)``, computed in float32.  The tile is a whole
row, ``(1, -1)``, padded to the next power of two (padded lanes read 0, so the
sum of squares is exact; the mean divides by the true row length,
``input.source.shape[1]``).  The row length is a compile-time size
(``constexpr``, at most 2**15 elements, checked at launch), as in ``softmax``.  ``eps`` is a scalar argument.
"""

import torch

import ntsym
import ntsym.language as ntl
from ntsym import Tensor


def arrangement(input, eps, output):
    return input.tile((1, -1)), eps, output.tile((1, -1))


def application(input, eps, output):
    x = ntl.cast(input, ntl.float32)
    output = x * ntl.rsqrt(ntl.sum(x * x) / input.source.shape[1] + eps)  # noqa: F841


rows = (None, {"constexpr": True, "upper_bound": 2**15})  # a row is one tile
tensors = (Tensor(2, shape_options=rows), Tensor(0), Tensor(2, shape_options=rows))

kernel = ntsym.make(arrangement, application, tensors)


def rms_norm(x, eps=1e-6):
    if not x.is_floating_point():  # torch refuses; the kernel would truncate the result
        raise TypeError(f"rms_norm: expected a floating-point tensor, got {x.dtype}")
    if x.ndim == 2:  # the kernel's own layout: no views to make (host time)
        output = torch.empty_like(x, memory_format=torch.contiguous_format)
        kernel(x, eps, output)
        return output
    output = torch.empty_like(x, memory_format=torch.contiguous_format)
    kernel(x.reshape(-1, x.shape[-1]), eps, output.view(-1, x.shape[-1]))
    return output


if __name__ == "__main__":
    from examples._common import device, report

    shape = (4096, 4096) if device() == "cuda" else (100, 1000)
    dtype = torch.float16 if device() == "cuda" else torch.float32
    x = torch.randn(shape, device=device(), dtype=dtype)
    reference = torch.nn.functional.rms_norm
    report(
        "rms_norm", rms_norm(x), reference(x, x.shape[-1:], eps=1e-6), 1e-2, 1e-2,
        lambda: rms_norm(x), lambda: reference(x, x.shape[-1:], eps=1e-6),
    )
