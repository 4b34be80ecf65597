"""The ten benchmark tasks: shapes, inputs, torch implementations, work formulas and tolerances.

Importing this module imports torch but not triton, so that the harness can still
choose Triton's interpreter (``TRITON_INTERPRET=1``) after importing it.
"""

import math
from dataclasses import dataclass, field
from typing import Callable, Dict, Tuple

import torch
import torch.nn.functional as F

TASK_NAMES = ("add", "addmm", "bmm", "conv2d", "mm", "rms_norm", "rope", "sdpa", "silu", "softmax")

# Benchmark shapes (float16 on the GPU): one shape per input tensor.
BENCH_SHAPES = {
    "add": ((16777216,), (16777216,)),
    "addmm": ((4096, 4096), (4096, 4096), (4096, 4096)),
    "bmm": ((4, 2048, 2048), (4, 2048, 2048)),
    "conv2d": ((4, 512, 14, 14), (512, 512, 3, 3)),
    "mm": ((4096, 4096), (4096, 4096)),
    "rms_norm": ((4096, 4096),),
    "rope": ((4, 1024, 48, 64), (1024, 32), (1024, 32)),
    "sdpa": ((4, 48, 1024, 64), (4, 48, 1024, 64), (4, 48, 1024, 64)),
    "silu": ((16777216,),),
    "softmax": ((4096, 4096),),
}

# Tiny shapes for the CPU smoke run through Triton's interpreter (none divides a block size).
SMOKE_SHAPES = {
    "add": ((1000,), (1000,)),
    "addmm": ((50, 30), (50, 40), (40, 30)),
    "bmm": ((2, 33, 17), (2, 17, 29)),
    "conv2d": ((2, 3, 9, 10), (5, 3, 3, 3)),
    "mm": ((50, 40), (40, 30)),
    "rms_norm": ((7, 100),),
    "rope": ((2, 5, 3, 8), (5, 4), (5, 4)),
    "sdpa": ((1, 2, 40, 16), (1, 2, 40, 16), (1, 2, 40, 16)),
    "silu": ((1000,),),
    "softmax": ((7, 100),),
}

# Sweeps: square mm sizes, and softmax over 4096 rows of these many columns.
SWEEP_MM_SIZES = (512, 1024, 2048, 4096, 8192)
SWEEP_SOFTMAX_ROWS = 4096
SWEEP_SOFTMAX_COLS = (256, 512, 1024, 2048, 4096, 8192, 16384)

RMS_NORM_EPS = 1e-6
ADDMM_BETA = 0.5
ADDMM_ALPHA = 2.0

# Tolerances of the check against a float32 reference computed from the same inputs
# (allclose: |out - ref| <= atol + rtol * |ref|).
TOL_ELEMENTWISE = (1e-2, 1e-2)  # add, silu, rope, rms_norm, softmax: one rounding to float16
TOL_GEMM = (5e-2, 2e-2)  # mm, addmm, bmm, conv2d: outputs of magnitude ~sqrt(K), rounded once
TOL_ATTENTION = (2e-2, 2e-2)  # sdpa: probabilities rounded to float16 before P @ V
TOL_FLOAT32 = (1e-3, 1e-3)  # any task in float32 (CPU smoke runs)


# --- torch implementations ----------------------------------------------------------------------


def torch_rms_norm(x, eps=RMS_NORM_EPS):
    if hasattr(F, "rms_norm"):
        return F.rms_norm(x, (x.shape[-1],), eps=eps)
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


def torch_rope(x, sin, cos):
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    s = sin[None, :, None, :]
    c = cos[None, :, None, :]
    return torch.cat((x1 * c - x2 * s, x1 * s + x2 * c), dim=-1)


def torch_softmax(x, dim=-1):
    return torch.softmax(x, dim=dim)


def torch_sdpa(q, k, v, is_causal=False, scale=None):
    return F.scaled_dot_product_attention(q, k, v, is_causal=is_causal, scale=scale)


def torch_addmm(input, mat1, mat2, beta=1, alpha=1):
    return torch.addmm(input, mat1, mat2, beta=beta, alpha=alpha)


TORCH_FUNCTIONS = {
    "add": torch.add,
    "addmm": torch_addmm,
    "bmm": torch.bmm,
    "conv2d": F.conv2d,
    "mm": torch.mm,
    "rms_norm": torch_rms_norm,
    "rope": torch_rope,
    "sdpa": torch_sdpa,
    "silu": F.silu,
    "softmax": torch_softmax,
}


def _reference_rms_norm(x, eps=RMS_NORM_EPS):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


# float32 references (the formula itself, where torch's op could take another path).
REFERENCE_FUNCTIONS = dict(TORCH_FUNCTIONS, rms_norm=_reference_rms_norm)


# --- work formulas ------------------------------------------------------------------------------
# FLOP counts for compute-bound tasks (reported in TFLOP/s), bytes moved to and from
# device memory, counted once each, for memory-bound tasks (reported in GB/s).


def _numel(shape):
    return math.prod(shape)


def work_add(shapes, elem):  # read x and y, write out
    return 3 * _numel(shapes[0]) * elem


def work_silu(shapes, elem):  # read x, write out
    return 2 * _numel(shapes[0]) * elem


def work_row(shapes, elem):  # rms_norm, softmax: read x, write out
    return 2 * _numel(shapes[0]) * elem


def work_rope(shapes, elem):  # read x, write out, read sin and cos once
    (B, S, H, D), sin_shape, cos_shape = shapes
    return (2 * B * S * H * D + _numel(sin_shape) + _numel(cos_shape)) * elem


def work_mm(shapes, elem):  # 2*M*N*K
    (M, K), (_, N) = shapes
    return 2 * M * N * K


def work_addmm(shapes, elem):  # 2*M*N*K for the product + 3*M*N for beta*input + alpha*product
    _, (M, K), (_, N) = shapes
    return 2 * M * N * K + 3 * M * N


def work_bmm(shapes, elem):  # 2*B*M*N*K
    (B, M, K), (_, _, N) = shapes
    return 2 * B * M * N * K


def work_conv2d(shapes, elem):  # 2*N*K*P*Q*C*R*S (implicit GEMM: M = N*P*Q, N = K, K = C*R*S)
    (N, C, H, W), (K, _, R, S) = shapes
    P, Q = H - R + 1, W - S + 1
    return 2 * N * K * P * Q * C * R * S


def work_sdpa(shapes, elem):  # 4*B*H*S_q*S_k*D: Q @ K^T and P @ V, non-causal
    (B, H, S_q, D), (_, _, S_k, _), _ = shapes
    return 4 * B * H * S_q * S_k * D


# --- inputs -------------------------------------------------------------------------------------


def _randn(shape, device, dtype, gen):
    if str(device) == "meta":
        return torch.empty(shape, device="meta", dtype=dtype)
    return torch.randn(shape, generator=gen, dtype=torch.float32, device="cpu").to(device=device, dtype=dtype)


def _rope_tables(S, half, device, dtype):
    # theta_i = 10000^(-i/half), angle(s, i) = s * theta_i
    inv_freq = 10000.0 ** (-torch.arange(half, dtype=torch.float32, device="cpu") / half)
    angles = torch.arange(S, dtype=torch.float32, device="cpu")[:, None] * inv_freq[None, :]
    return angles.sin().to(device=device, dtype=dtype), angles.cos().to(device=device, dtype=dtype)


def make_inputs(task, shapes, device, dtype, seed=0):
    """(args, kwargs) for a call of any implementation of ``task`` at ``shapes``."""
    gen = torch.Generator(device="cpu").manual_seed(seed)  # inputs are made on the CPU, then moved
    if task == "rope":
        (B, S, H, D), _, _ = shapes
        sin, cos = _rope_tables(S, D // 2, device, dtype)
        return (_randn(shapes[0], device, dtype, gen), sin, cos), {}
    tensors = tuple(_randn(s, device, dtype, gen) for s in shapes)
    if task == "rms_norm":
        return tensors + (RMS_NORM_EPS,), {}
    if task == "addmm":
        return tensors, {"beta": ADDMM_BETA, "alpha": ADDMM_ALPHA}
    return tensors, {}


def upcast(args, kwargs, dtype=torch.float32):
    """The same arguments with their floating-point tensors in ``dtype``."""

    def cast(a):
        return a.to(dtype) if isinstance(a, torch.Tensor) and a.is_floating_point() else a

    return tuple(cast(a) for a in args), {k: cast(v) for k, v in kwargs.items()}


@dataclass(frozen=True)
class Task:
    name: str
    work: Callable[[Tuple[Tuple[int, ...], ...], int], int]
    unit: str  # "TFLOP/s" (work counts FLOPs) or "GB/s" (work counts bytes)
    tolerance: Tuple[float, float]  # (atol, rtol) in float16
    bench_shapes: tuple = field(default=())
    smoke_shapes: tuple = field(default=())

    @property
    def compute_bound(self):
        return self.unit == "TFLOP/s"


TASKS: Dict[str, Task] = {
    name: Task(name, work, unit, tol, BENCH_SHAPES[name], SMOKE_SHAPES[name])
    for name, work, unit, tol in (
        ("add", work_add, "GB/s", TOL_ELEMENTWISE),
        ("addmm", work_addmm, "TFLOP/s", TOL_GEMM),
        ("bmm", work_bmm, "TFLOP/s", TOL_GEMM),
        ("conv2d", work_conv2d, "TFLOP/s", TOL_GEMM),
        ("mm", work_mm, "TFLOP/s", TOL_GEMM),
        ("rms_norm", work_row, "GB/s", TOL_ELEMENTWISE),
        ("rope", work_rope, "GB/s", TOL_ELEMENTWISE),
        ("sdpa", work_sdpa, "TFLOP/s", TOL_ATTENTION),
        ("silu", work_silu, "GB/s", TOL_ELEMENTWISE),
        ("softmax", work_row, "GB/s", TOL_ELEMENTWISE),
    )
}


def tolerance(task, dtype):
    """(atol, rtol) of the check of ``task`` in ``dtype``: bfloat16 keeps 3 fewer mantissa bits than float16."""
    if dtype == torch.float16:
        return TASKS[task].tolerance
    if dtype == torch.bfloat16:
        atol, rtol = TASKS[task].tolerance
        return 8 * atol, 8 * rtol
    return TOL_FLOAT32


def format_shapes(shapes):
    return " x ".join(str(tuple(s)) for s in shapes)
