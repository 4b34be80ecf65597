"""fp8 matrix multiplication with per-tensor scales: ``(a * scale_a) @ (b * scale_b)``.

``a`` (M, K) and ``b`` (K, N) are ``float8_e4m3fn`` (or ``float8_e5m2``), of any strides;
``scale_a`` and ``scale_b`` are float32 tensors of one element (as ``torch._scaled_mm``
takes them), read on the device, so a call does not synchronise with the host.  The
arrangement is mm's; each scale is one ``(1, 1)`` tile that every program reads.  Products
accumulate in float32 (``dot`` of fp8 tiles), the scales multiply the accumulator once, and
the result is stored in the output's dtype (``out_dtype``: float16 or bfloat16).

On Hopper GPUs the fp8 tensor-core instructions read both operands K-major: give ``b`` as a
column-major (K, N) matrix (``b_t.t()`` of a contiguous (N, K) one), the layout
``torch._scaled_mm`` requires as well; a row-major ``b`` is correct too, but Triton then
transposes its tiles in shared memory.  ``BLOCK_SIZE_K`` is at least 32 (fp8 ``dot``'s
minimum on the GPU); the tuner tries K tiles twice as long as for 2-byte inputs, the same
bytes per tile.
"""

import torch

import ntsym
import ntsym.language as ntl
from examples import mm
from ntsym import Tensor


def arrangement(
    input,
    other,
    scale_input,
    scale_other,
    output,
    BLOCK_SIZE_M=ntsym.block_size(lower_bound=16),
    BLOCK_SIZE_N=ntsym.block_size(lower_bound=16),
    BLOCK_SIZE_K=ntsym.block_size(lower_bound=32),
):
    input_arranged, other_arranged, output_arranged = mm.arrangement(
        input, other, output, BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K
    )

    def every_program(scale):
        return scale.tile((1, 1)).expand((output_arranged.shape[0], output_arranged.shape[1]))

    return input_arranged, other_arranged, every_program(scale_input), every_program(scale_other), output_arranged


def application(input, other, scale_input, scale_other, output):
    accumulator = ntl.zeros(output.shape, dtype=ntl.float32)

    for k in range(input.shape[0]):
        accumulator += ntl.dot(input[k], other[k])

    output = accumulator * (scale_input * scale_other)  # noqa: F841


def fast_accum_application(input, other, scale_input, scale_other, output):
    accumulator = ntl.zeros(output.shape, dtype=ntl.float32)

    for k in range(input.shape[0]):
        accumulator = ntl.dot(input[k], other[k], accumulator)

    output = accumulator * (scale_input * scale_other)  # noqa: F841


tensors = (Tensor(2), Tensor(2), Tensor(2), Tensor(2), Tensor(2))

kernel = ntsym.make(arrangement, application, tensors)
fast_accum_kernel = ntsym.make(arrangement, fast_accum_application, tensors)


def fp8_mm(input, other, scale_input, scale_other, out_dtype=torch.float16, use_fast_accum=False):
    """``torch._scaled_mm(input, other, scale_input, scale_other, out_dtype=out_dtype,
    use_fast_accum=use_fast_accum)``.  With ``use_fast_accum`` the products of all K
    tiles accumulate in the tensor cores' own accumulator (on Hopper, fp8 products
    are added there in less than float32's precision), as torch's fast accumulation
    does; without it each K tile's ``dot`` starts from zero and is added to the
    float32 accumulator."""
    for name, scale in (("scale_input", scale_input), ("scale_other", scale_other)):
        if scale.numel() != 1 or scale.dtype != torch.float32:
            raise ValueError(f"fp8_mm: {name} must be one float32 element (a per-tensor scale), "
                             f"got shape {tuple(scale.shape)} of {scale.dtype}")
    output = torch.empty((input.shape[0], other.shape[1]), dtype=out_dtype, device=input.device)
    (fast_accum_kernel if use_fast_accum else kernel)(
        input, other, scale_input.reshape(1, 1), scale_other.reshape(1, 1), output)
    return output


if __name__ == "__main__":
    from examples._common import device, report

    m, n, k = (4096, 4096, 4096) if device() == "cuda" else (96, 80, 128)
    a = (torch.randn(m, k, device=device()) / 2).to(torch.float8_e4m3fn)
    b = (torch.randn(n, k, device=device()) / 2).to(torch.float8_e4m3fn).t()  # column-major (K, N)
    scale_a = torch.tensor(0.5, device=device())
    scale_b = torch.tensor(2.0, device=device())

    def reference():
        if device() == "cuda":
            return torch._scaled_mm(a, b, scale_a, scale_b, out_dtype=torch.float16)
        return ((a.float() * scale_a) @ (b.float() * scale_b)).half()

    report("fp8_mm", fp8_mm(a, b, scale_a, scale_b), reference(), 5e-2, 1e-2,
           lambda: fp8_mm(a, b, scale_a, scale_b), reference)
