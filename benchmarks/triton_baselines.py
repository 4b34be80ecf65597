# Over 600 lines: the hand-written Triton kernel of each of the ten tasks, kept side by side as one baseline.
"""Hand-written Triton baselines for the ntsym benchmark suite.

Ten kernels written the way the Triton tutorials write them, auto-tuned, so
that ntsym is compared against the strongest honest hand-written Triton code:

    add, silu, mm, addmm, bmm, conv2d, rms_norm, softmax, rope, sdpa

Every wrapper takes torch tensors with a torch-like signature, allocates its
output and returns it. Math is done in float32 (``tl.dot`` accumulates in
float32); outputs have the input dtype.

With ``TRITON_INTERPRET=1`` (Triton's CPU interpreter) every kernel gets a
single small config: auto-tuning many configs in the interpreter is far too
slow. The mode is read once, when this module is imported, so set the
variable before importing it.

Offsets: program-level base offsets (batch, row, head) are computed in int64
so that products of sizes and strides may pass 2**31; offsets inside one
matrix tile stay in int32 where they are bounded by a tile times a stride.

Written against ``triton.language`` basics, ``triton.autotune``,
``triton.heuristics`` and ``triton.Config``, which behave the same in
Triton 3.6 and 3.9.
"""

import inspect
import math
import os

import torch
import triton
import triton.language as tl

__all__ = [
    "INTERPRET",
    "add",
    "silu",
    "mm",
    "addmm",
    "bmm",
    "conv2d",
    "rms_norm",
    "softmax",
    "rope",
    "sdpa",
    "FUNCTIONS",
    "AUTOTUNED_KERNELS",
]

INTERPRET = os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def _configs(gpu_configs, interpreter_config):
    """The config list: all of ``gpu_configs`` on a GPU, one config in the interpreter."""
    return [interpreter_config] if INTERPRET else list(gpu_configs)


_AUTOTUNE_HAS_CACHE_RESULTS = "cache_results" in inspect.signature(triton.autotune).parameters


def _autotune(configs, key, prune=None):
    """``triton.autotune`` that keeps its results on disk where this Triton can.

    ``prune(configs, named_args, **kwargs)`` drops configs before benchmarking.
    """
    kwargs = {}
    if _AUTOTUNE_HAS_CACHE_RESULTS and not INTERPRET:
        kwargs["cache_results"] = True
    if prune is not None and not INTERPRET:
        kwargs["prune_configs_by"] = {"early_config_prune": prune}
    return triton.autotune(configs=configs, key=key, **kwargs)


def _cfg(num_warps, num_stages=None, **meta):
    if num_stages is None:
        return triton.Config(meta, num_warps=num_warps)
    return triton.Config(meta, num_warps=num_warps, num_stages=num_stages)


# ---------------------------------------------------------------------------
# Element-wise: add, silu
# ---------------------------------------------------------------------------

_ELEMENTWISE_CONFIGS = _configs(
    [_cfg(w, BLOCK_SIZE=b) for b in (1024, 2048, 4096) for w in (4, 8)],
    _cfg(4, BLOCK_SIZE=512),
)


@_autotune(_ELEMENTWISE_CONFIGS, key=["n_elements"])
@triton.jit
def _add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid.to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, (x + y).to(out_ptr.dtype.element_ty), mask=mask)


@_autotune(_ELEMENTWISE_CONFIGS, key=["n_elements"])
@triton.jit
def _silu_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid.to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    y = x / (1.0 + tl.exp(-x))
    tl.store(out_ptr + offsets, y.to(out_ptr.dtype.element_ty), mask=mask)


def _flat(t):
    return t if t.is_contiguous() else t.contiguous()


def add(input, other):
    """``input + other`` for two tensors of one shape (treated as 1-D)."""
    if input.shape != other.shape:
        raise ValueError(f"add: shapes differ: {tuple(input.shape)} and {tuple(other.shape)}")
    x, y = _flat(input), _flat(other)
    out = torch.empty_like(x)
    n = x.numel()
    if n == 0:
        return out

    def grid(meta):
        return (triton.cdiv(n, meta["BLOCK_SIZE"]),)

    _add_kernel[grid](x, y, out, n)
    return out


def silu(input):
    """``input * sigmoid(input)``, computed in float32."""
    x = _flat(input)
    out = torch.empty_like(x)
    n = x.numel()
    if n == 0:
        return out

    def grid(meta):
        return (triton.cdiv(n, meta["BLOCK_SIZE"]),)

    _silu_kernel[grid](x, out, n)
    return out


# ---------------------------------------------------------------------------
# GEMMs: mm, addmm, bmm (grouped program ordering, as in the matmul tutorial)
# ---------------------------------------------------------------------------


def _gemm_cfg(bm, bn, bk, stages, warps, group=8):
    return _cfg(warps, stages, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=group)


_GEMM_CONFIGS = _configs(
    [
        _gemm_cfg(128, 256, 64, 3, 8),
        _gemm_cfg(256, 128, 64, 3, 8),
        _gemm_cfg(128, 128, 64, 4, 8),
        _gemm_cfg(128, 128, 64, 3, 4),
        _gemm_cfg(128, 128, 32, 4, 4),
        _gemm_cfg(64, 256, 32, 4, 4),
        _gemm_cfg(128, 64, 64, 4, 4),
        _gemm_cfg(64, 128, 64, 4, 4),
        _gemm_cfg(128, 64, 32, 4, 4),
        _gemm_cfg(64, 64, 64, 5, 4),
        _gemm_cfg(64, 32, 32, 5, 2),
    ],
    _gemm_cfg(32, 32, 32, 3, 4, group=4),
)

_GEMM_KEY = ["M", "N", "K"]


@triton.jit
def _grouped_program_ids(pid, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    """Map a 1-D program id to a (pid_m, pid_n) tile, GROUP_M row-tiles at a time (L2 reuse)."""
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@triton.jit
def _gemm_tile(a_ptr, b_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, pid_m, pid_n,
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """float32 accumulator of one (BLOCK_M, BLOCK_N) tile of A @ B."""
    # Rows and columns past M and N wrap around (they are never stored), so only
    # the K tail needs a mask on the loads.
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_am[:, None].to(tl.int64) * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_bn[None, :].to(tl.int64) * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_remaining = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=offs_k[None, :] < k_remaining, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < k_remaining, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    return acc


@_autotune(_GEMM_CONFIGS, key=_GEMM_KEY)
@triton.jit
def _mm_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
               stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid_m, pid_n = _grouped_program_ids(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    acc = _gemm_tile(a_ptr, b_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, pid_m, pid_n,
                     BLOCK_M, BLOCK_N, BLOCK_K)
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + offs_cm[:, None].to(tl.int64) * stride_cm + offs_cn[None, :] * stride_cn
    mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=mask)


@_autotune(_GEMM_CONFIGS, key=_GEMM_KEY)
@triton.jit
def _addmm_kernel(in_ptr, a_ptr, b_ptr, c_ptr, M, N, K, beta, alpha,
                  stride_im, stride_in, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  HAS_INPUT: tl.constexpr,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid_m, pid_n = _grouped_program_ids(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    acc = _gemm_tile(a_ptr, b_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, pid_m, pid_n,
                     BLOCK_M, BLOCK_N, BLOCK_K)
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    acc = acc * alpha
    if HAS_INPUT:
        i_ptrs = in_ptr + offs_cm[:, None].to(tl.int64) * stride_im + offs_cn[None, :] * stride_in
        acc += beta * tl.load(i_ptrs, mask=mask, other=0.0).to(tl.float32)
    c_ptrs = c_ptr + offs_cm[:, None].to(tl.int64) * stride_cm + offs_cn[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=mask)


@_autotune(_GEMM_CONFIGS, key=["B"] + _GEMM_KEY)
@triton.jit
def _bmm_kernel(a_ptr, b_ptr, c_ptr, B, M, N, K,
                stride_ab, stride_am, stride_ak, stride_bb, stride_bk, stride_bn, stride_cb, stride_cm, stride_cn,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid_b = tl.program_id(1).to(tl.int64)
    a_ptr += pid_b * stride_ab
    b_ptr += pid_b * stride_bb
    c_ptr += pid_b * stride_cb
    pid_m, pid_n = _grouped_program_ids(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    acc = _gemm_tile(a_ptr, b_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, pid_m, pid_n,
                     BLOCK_M, BLOCK_N, BLOCK_K)
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + offs_cm[:, None].to(tl.int64) * stride_cm + offs_cn[None, :] * stride_cn
    mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=mask)


def _check_mm(name, a, b):
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"{name}: cannot multiply {tuple(a.shape)} by {tuple(b.shape)}")
    if a.dtype != b.dtype:
        raise ValueError(f"{name}: dtypes differ: {a.dtype} and {b.dtype}")


def _tile_grid(M, N):
    def grid(meta):
        return (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)

    return grid


def mm(input, other):
    """``input @ other`` for 2-D tensors of any strides; float32 accumulation."""
    _check_mm("mm", input, other)
    M, K = input.shape
    N = other.shape[1]
    out = torch.empty((M, N), device=input.device, dtype=input.dtype)
    if M == 0 or N == 0:
        return out
    if K == 0:
        return out.zero_()
    _mm_kernel[_tile_grid(M, N)](
        input, other, out, M, N, K,
        input.stride(0), input.stride(1), other.stride(0), other.stride(1), out.stride(0), out.stride(1),
    )
    return out


def addmm(input, mat1, mat2, beta=1, alpha=1):
    """``beta * input + alpha * (mat1 @ mat2)``; ``input`` broadcasts to (M, N)."""
    _check_mm("addmm", mat1, mat2)
    M, K = mat1.shape
    N = mat2.shape[1]
    out = torch.empty((M, N), device=mat1.device, dtype=mat1.dtype)
    if M == 0 or N == 0:
        return out
    bias = input.expand(M, N)
    has_input = beta != 0  # as in torch: with beta == 0, input is ignored (nan and inf too)
    _addmm_kernel[_tile_grid(M, N)](
        bias, mat1, mat2, out, M, N, K, float(beta), float(alpha),
        bias.stride(0), bias.stride(1), mat1.stride(0), mat1.stride(1),
        mat2.stride(0), mat2.stride(1), out.stride(0), out.stride(1),
        HAS_INPUT=has_input,
    )
    return out


def bmm(input, other):
    """Batched ``input @ other``: (B, M, K) @ (B, K, N) -> (B, M, N)."""
    if input.dim() != 3 or other.dim() != 3 or input.shape[0] != other.shape[0] or input.shape[2] != other.shape[1]:
        raise ValueError(f"bmm: cannot multiply {tuple(input.shape)} by {tuple(other.shape)}")
    Bsz, M, K = input.shape
    N = other.shape[2]
    out = torch.empty((Bsz, M, N), device=input.device, dtype=input.dtype)
    if Bsz == 0 or M == 0 or N == 0:
        return out
    if K == 0:
        return out.zero_()

    def grid(meta):
        return (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]), Bsz)

    _bmm_kernel[grid](
        input, other, out, Bsz, M, N, K,
        input.stride(0), input.stride(1), input.stride(2),
        other.stride(0), other.stride(1), other.stride(2),
        out.stride(0), out.stride(1), out.stride(2),
    )
    return out


# ---------------------------------------------------------------------------
# conv2d as an implicit GEMM
# ---------------------------------------------------------------------------

_CONV_CONFIGS = _configs(
    [
        _gemm_cfg(128, 128, 64, 3, 8),
        _gemm_cfg(128, 128, 32, 4, 4),
        _gemm_cfg(128, 64, 64, 4, 4),
        _gemm_cfg(64, 128, 64, 4, 4),
        _gemm_cfg(64, 64, 64, 4, 4),
        _gemm_cfg(64, 64, 32, 5, 4),
        _gemm_cfg(64, 32, 64, 4, 4),
        _gemm_cfg(32, 64, 64, 4, 4),
        _gemm_cfg(32, 32, 64, 5, 2),
    ],
    _gemm_cfg(32, 32, 32, 3, 4, group=4),
)


@_autotune(_CONV_CONFIGS, key=["GEMM_M", "GEMM_N", "GEMM_K"])
@triton.jit
def _conv2d_kernel(x_ptr, w_ptr, y_ptr, R, S, P, Q, GEMM_M, GEMM_N, GEMM_K,
                   sxn, sxc, sxh, sxw, swk, swc, swr, sws, syn, syk, syp, syq,
                   W_CONTIGUOUS: tl.constexpr,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    # GEMM view: rows m = (n, p, q), columns = output channels k, reduction = (c, r, s).
    pid_m, pid_n = _grouped_program_ids(tl.program_id(0), GEMM_M, GEMM_N, BLOCK_M, BLOCK_N, GROUP_M)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    m = offs_m % GEMM_M  # wrapped: rows past GEMM_M are computed but never stored
    kout = offs_n % GEMM_N
    PQ = P * Q
    n_img = m // PQ
    pq = m % PQ
    p = pq // Q
    q = pq % Q
    x_rows = n_img.to(tl.int64) * sxn + p * sxh + q * sxw
    w_cols = kout.to(tl.int64) * swk
    RS = R * S
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, GEMM_K, BLOCK_K):
        kk = k0 + offs_k
        c = kk // RS
        rs = kk % RS
        r = rs // S
        s = rs % S
        k_mask = kk < GEMM_K
        a = tl.load(x_ptr + x_rows[:, None] + (c * sxc + r * sxh + s * sxw)[None, :],
                    mask=k_mask[None, :], other=0.0)
        if W_CONTIGUOUS:
            # weight[k, c, r, s] sits at k * C*R*S + (c, r, s): the tile is contiguous along the reduction.
            w_rows = kk
        else:
            w_rows = c * swc + r * swr + s * sws
        b = tl.load(w_ptr + w_rows[:, None] + w_cols[None, :], mask=k_mask[:, None], other=0.0)
        acc = tl.dot(a, b, acc)
    y_ptrs = y_ptr + (n_img.to(tl.int64) * syn + p * syp + q * syq)[:, None] + kout[None, :].to(tl.int64) * syk
    mask = (offs_m[:, None] < GEMM_M) & (offs_n[None, :] < GEMM_N)
    tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=mask)


def conv2d(input, weight):
    """2-D convolution, NCHW, stride 1, no padding: (N, C, H, W) * (K, C, R, S) -> (N, K, H-R+1, W-S+1)."""
    if input.dim() != 4 or weight.dim() != 4 or input.shape[1] != weight.shape[1]:
        raise ValueError(f"conv2d: bad shapes {tuple(input.shape)} and {tuple(weight.shape)}")
    Nb, C, H, W = input.shape
    Kc, _, R, S = weight.shape
    P, Q = H - R + 1, W - S + 1
    if P <= 0 or Q <= 0:
        raise ValueError("conv2d: the filter is larger than the input")
    out = torch.empty((Nb, Kc, P, Q), device=input.device, dtype=input.dtype)
    gemm_m, gemm_n, gemm_k = Nb * P * Q, Kc, C * R * S
    if gemm_m == 0 or gemm_n == 0:
        return out
    _conv2d_kernel[_tile_grid(gemm_m, gemm_n)](
        input, weight, out, R, S, P, Q, gemm_m, gemm_n, gemm_k,
        *input.stride(), *weight.stride(), *out.stride(),
        W_CONTIGUOUS=weight.is_contiguous(),
    )
    return out


# ---------------------------------------------------------------------------
# Row-wise reductions: rms_norm, softmax (one row per program, row in one block)
# ---------------------------------------------------------------------------

_ROW_CONFIGS = _configs([_cfg(w) for w in (1, 2, 4, 8, 16)], _cfg(4))


def _row_config_fits(config, block):
    """Whether ``config`` gives each thread 1 to 64 elements of a row of ``block`` elements.

    Far more than that spills registers (and takes ptxas minutes to compile).
    """
    return 1 <= block // (32 * config.num_warps) <= 64


def _row_configs_for(configs, block):
    kept = [c for c in configs if _row_config_fits(c, block)]
    return kept or [max(configs, key=lambda c: c.num_warps)]


def _prune_row_configs(configs, named_args, **kwargs):
    return _row_configs_for(configs, kwargs.get("BLOCK_N", named_args.get("BLOCK_N")))



@_autotune(_ROW_CONFIGS, key=["N", "BLOCK_N"], prune=_prune_row_configs)
@triton.jit
def _rms_norm_kernel(x_ptr, y_ptr, N, stride_xm, stride_xn, stride_ym, stride_yn, eps,
                     BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK_N)
    mask = offs < N
    x = tl.load(x_ptr + row * stride_xm + offs * stride_xn, mask=mask, other=0.0).to(tl.float32)
    mean_sq = tl.sum(x * x, axis=0) / N
    y = x * tl.rsqrt(mean_sq + eps)
    tl.store(y_ptr + row * stride_ym + offs * stride_yn, y.to(y_ptr.dtype.element_ty), mask=mask)


@_autotune(_ROW_CONFIGS, key=["N", "BLOCK_N"], prune=_prune_row_configs)
@triton.jit
def _softmax_kernel(x_ptr, y_ptr, N, stride_xm, stride_xn, stride_ym, stride_yn, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK_N)
    mask = offs < N
    x = tl.load(x_ptr + row * stride_xm + offs * stride_xn, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    y = num / tl.sum(num, axis=0)
    tl.store(y_ptr + row * stride_ym + offs * stride_yn, y.to(y_ptr.dtype.element_ty), mask=mask)


def _rows(input):
    """(2-D view of ``input`` as rows of its last dim, row length)."""
    N = input.shape[-1]
    return input.reshape(-1, N), N


def rms_norm(input, eps=1e-6):
    """``input * rsqrt(mean(input**2, -1) + eps)``, no weight, float32 math."""
    x, N = _rows(input)
    y = torch.empty(x.shape, device=x.device, dtype=x.dtype)
    if x.numel() == 0:
        return y.view(input.shape)
    _rms_norm_kernel[(x.shape[0],)](
        x, y, N, x.stride(0), x.stride(1), y.stride(0), y.stride(1), float(eps),
        BLOCK_N=triton.next_power_of_2(N),
    )
    return y.view(input.shape)


def softmax(input, dim=-1):
    """Softmax over the last dim (fused, one row per program), float32 math."""
    if dim not in (-1, input.dim() - 1):
        raise ValueError("softmax: only the last dim is supported")
    x, N = _rows(input)
    y = torch.empty(x.shape, device=x.device, dtype=x.dtype)
    if x.numel() == 0:
        return y.view(input.shape)
    _softmax_kernel[(x.shape[0],)](
        x, y, N, x.stride(0), x.stride(1), y.stride(0), y.stride(1), BLOCK_N=triton.next_power_of_2(N),
    )
    return y.view(input.shape)


# ---------------------------------------------------------------------------
# rope: rotary position embedding, non-interleaved halves
# ---------------------------------------------------------------------------

_ROPE_CONFIGS = _configs(
    [_cfg(w, BLOCK_R=r) for r in (16, 32, 64, 128) for w in (2, 4, 8)],
    _cfg(4, BLOCK_R=8),
)


@_autotune(_ROPE_CONFIGS, key=["n_rows", "HALF"])
@triton.jit
def _rope_kernel(x_ptr, sin_ptr, cos_ptr, y_ptr, n_rows, S, H, HALF,
                 sxb, sxs, sxh, sxd, s_sin_s, s_sin_d, s_cos_s, s_cos_d, syb, sys, syh, syd,
                 BLOCK_R: tl.constexpr, BLOCK_D: tl.constexpr):
    # Each program rotates BLOCK_R rows (b, s, h) of head_dim 2 * HALF.
    # Row indices fit int32 (the wrapper checks); offsets are int64.
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    row_mask = rows < n_rows
    h = (rows % H).to(tl.int64)
    bs = rows // H
    s = (bs % S).to(tl.int64)
    b = (bs // S).to(tl.int64)
    d = tl.arange(0, BLOCK_D)
    mask = row_mask[:, None] & (d < HALF)[None, :]
    x_lo = x_ptr + (b * sxb + s * sxs + h * sxh)[:, None] + d[None, :] * sxd
    y_lo = y_ptr + (b * syb + s * sys + h * syh)[:, None] + d[None, :] * syd
    x1 = tl.load(x_lo, mask=mask, other=0.0).to(tl.float32)
    x2 = tl.load(x_lo + HALF * sxd, mask=mask, other=0.0).to(tl.float32)
    sin = tl.load(sin_ptr + (s * s_sin_s)[:, None] + d[None, :] * s_sin_d, mask=mask, other=0.0).to(tl.float32)
    cos = tl.load(cos_ptr + (s * s_cos_s)[:, None] + d[None, :] * s_cos_d, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_lo, (x1 * cos - x2 * sin).to(y_ptr.dtype.element_ty), mask=mask)
    tl.store(y_lo + HALF * syd, (x1 * sin + x2 * cos).to(y_ptr.dtype.element_ty), mask=mask)


def rope(input, sin, cos):
    """Rotary embedding of ``input`` (B, S, H, D) with ``sin``/``cos`` (S, D/2), returned as a new tensor.

    With x1 = input[..., :D/2] and x2 = input[..., D/2:]:
    out[..., :D/2] = x1*cos - x2*sin and out[..., D/2:] = x1*sin + x2*cos.
    """
    if input.dim() != 4 or input.shape[-1] % 2:
        raise ValueError(f"rope: input must be (B, S, H, D) with D even, got {tuple(input.shape)}")
    Bsz, S, H, D = input.shape
    half = D // 2
    if tuple(sin.shape) != (S, half) or tuple(cos.shape) != (S, half):
        raise ValueError(f"rope: sin and cos must be {(S, half)}, got {tuple(sin.shape)} and {tuple(cos.shape)}")
    out = torch.empty(input.shape, device=input.device, dtype=input.dtype)
    n_rows = Bsz * S * H
    if n_rows == 0 or half == 0:
        return out
    if n_rows >= 2**31 - 1024:
        raise ValueError("rope: more than 2**31 rows")

    def grid(meta):
        return (triton.cdiv(n_rows, meta["BLOCK_R"]),)

    _rope_kernel[grid](
        input, sin, cos, out, n_rows, S, H, half,
        *input.stride(), *sin.stride(), *cos.stride(), *out.stride(),
        BLOCK_D=triton.next_power_of_2(half),
    )
    return out


# ---------------------------------------------------------------------------
# sdpa: FlashAttention-2 forward (online softmax), as in the fused-attention tutorial
# ---------------------------------------------------------------------------

_SDPA_CONFIGS = _configs(
    [
        _cfg(w, s, BLOCK_M=bm, BLOCK_N=bn)
        for bm, bn in ((128, 64), (128, 128), (128, 32), (64, 64), (64, 32))
        for w in (4, 8)
        for s in (3, 4)
        if not (bm == 64 and w == 8)
    ],
    _cfg(4, 3, BLOCK_M=16, BLOCK_N=16),
)


@triton.jit
def _attn_inner(acc, l_i, m_i, q, k_ptrs, v_ptrs, stride_kn, stride_vn,
                offs_m, offs_d, S_K, lo, hi, qk_scale,
                HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr,
                CAUSAL_MASK: tl.constexpr, EVEN_N: tl.constexpr):
    """Online-softmax update over the key blocks [lo, hi).

    ``k_ptrs`` (HEAD_DIM x BLOCK_N) and ``v_ptrs`` (BLOCK_N x HEAD_DIM) point at key ``lo``.
    """
    offs_n0 = tl.arange(0, BLOCK_N)
    d_mask = offs_d < HEAD_DIM
    for start_n in range(lo, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        offs_n = start_n + offs_n0
        if EVEN_N:
            k = tl.load(k_ptrs, mask=d_mask[:, None], other=0.0)
        else:
            k = tl.load(k_ptrs, mask=d_mask[:, None] & (offs_n < S_K)[None, :], other=0.0)
        qk = tl.dot(q, k) * qk_scale
        if CAUSAL_MASK:
            qk = tl.where(offs_m[:, None] >= offs_n[None, :], qk, -float("inf"))
        if not EVEN_N:
            qk = tl.where((offs_n < S_K)[None, :], qk, -float("inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        if EVEN_N:
            v = tl.load(v_ptrs, mask=d_mask[None, :], other=0.0)
        else:
            v = tl.load(v_ptrs, mask=d_mask[None, :] & (offs_n < S_K)[:, None], other=0.0)
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_ij
        k_ptrs += BLOCK_N * stride_kn
        v_ptrs += BLOCK_N * stride_vn
    return acc, l_i, m_i


@_autotune(_SDPA_CONFIGS, key=["S_Q", "S_K", "HEAD_DIM", "IS_CAUSAL"])
@triton.heuristics({"EVEN_N": lambda args: args["S_K"] % args["BLOCK_N"] == 0})
@triton.jit
def _sdpa_kernel(q_ptr, k_ptr, v_ptr, o_ptr, sm_scale, H, S_Q, S_K,
                 sqb, sqh, sqm, sqd, skb, skh, skn, skd, svb, svh, svn, svd, sob, soh, som, sod,
                 HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, IS_CAUSAL: tl.constexpr,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, EVEN_N: tl.constexpr):
    start_m = tl.program_id(0)
    pid_bh = tl.program_id(1)
    b = (pid_bh // H).to(tl.int64)
    h = (pid_bh % H).to(tl.int64)
    first_m = (start_m * BLOCK_M).to(tl.int64)
    # Program-level offsets in int64; offsets inside one (BLOCK, HEAD_DIM) tile in int32.
    q_base = q_ptr + b * sqb + h * sqh + first_m * sqm
    o_base = o_ptr + b * sob + h * soh + first_m * som
    k_base = k_ptr + b * skb + h * skh
    v_base = v_ptr + b * svb + h * svh

    rows = tl.arange(0, BLOCK_M)
    offs_m = start_m * BLOCK_M + rows
    offs_d = tl.arange(0, BLOCK_D)
    offs_n = tl.arange(0, BLOCK_N)
    qo_mask = (offs_m < S_Q)[:, None] & (offs_d < HEAD_DIM)[None, :]
    q = tl.load(q_base + rows[:, None] * sqm + offs_d[None, :] * sqd, mask=qo_mask, other=0.0)
    k_tile = offs_n[None, :] * skn + offs_d[:, None] * skd  # (BLOCK_D, BLOCK_N): K^T
    v_tile = offs_n[:, None] * svn + offs_d[None, :] * svd  # (BLOCK_N, BLOCK_D)

    m_i = tl.full((BLOCK_M,), -float("inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, BLOCK_D), dtype=tl.float32)
    qk_scale = sm_scale * 1.4426950408889634  # softmax in base 2: exp(x) = exp2(x * log2(e))

    if IS_CAUSAL:
        # Key j is seen by query i when j <= i (top-left aligned, as torch's is_causal).
        # Key blocks wholly below the diagonal need no mask ...
        diag = start_m * BLOCK_M
        acc, l_i, m_i = _attn_inner(acc, l_i, m_i, q, k_base + k_tile, v_base + v_tile, skn, svn,
                                    offs_m, offs_d, S_K, 0, tl.minimum(diag, S_K), qk_scale,
                                    HEAD_DIM, BLOCK_N, False, EVEN_N)
        # ... and the blocks on it do.
        acc, l_i, m_i = _attn_inner(acc, l_i, m_i, q, k_base + first_m * skn + k_tile,
                                    v_base + first_m * svn + v_tile, skn, svn,
                                    offs_m, offs_d, S_K, diag, tl.minimum(diag + BLOCK_M, S_K), qk_scale,
                                    HEAD_DIM, BLOCK_N, True, EVEN_N)
    else:
        acc, l_i, m_i = _attn_inner(acc, l_i, m_i, q, k_base + k_tile, v_base + v_tile, skn, svn,
                                    offs_m, offs_d, S_K, 0, S_K, qk_scale,
                                    HEAD_DIM, BLOCK_N, False, EVEN_N)

    acc = acc / l_i[:, None]
    tl.store(o_base + rows[:, None] * som + offs_d[None, :] * sod, acc.to(o_ptr.dtype.element_ty), mask=qo_mask)


def sdpa(q, k, v, is_causal=False, scale=None):
    """Scaled dot-product attention, (B, H, S, D) layout, FlashAttention-2 forward.

    ``scale`` defaults to 1/sqrt(D); ``is_causal`` masks key j > query i (top-left aligned).
    """
    if q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        raise ValueError("sdpa: q, k and v must be (B, H, S, D)")
    Bsz, H, S_Q, D = q.shape
    S_K = k.shape[2]
    if k.shape[:2] != (Bsz, H) or v.shape[:3] != k.shape[:3] or k.shape[3] != D or v.shape[3] != D:
        raise ValueError(f"sdpa: shapes {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)} do not fit")
    if S_K == 0:
        raise ValueError("sdpa: no keys")
    out = torch.empty(q.shape, device=q.device, dtype=q.dtype)
    if Bsz * H * S_Q == 0:
        return out
    sm_scale = 1.0 / math.sqrt(D) if scale is None else float(scale)
    block_d = max(triton.next_power_of_2(D), 16)

    def grid(meta):
        return (triton.cdiv(S_Q, meta["BLOCK_M"]), Bsz * H)

    _sdpa_kernel[grid](
        q, k, v, out, sm_scale, H, S_Q, S_K,
        *q.stride(), *k.stride(), *v.stride(), *out.stride(),
        HEAD_DIM=D, BLOCK_D=block_d, IS_CAUSAL=bool(is_causal),
    )
    return out


FUNCTIONS = {
    "add": add,
    "addmm": addmm,
    "bmm": bmm,
    "conv2d": conv2d,
    "mm": mm,
    "rms_norm": rms_norm,
    "rope": rope,
    "sdpa": sdpa,
    "silu": silu,
    "softmax": softmax,
}

# The auto-tuned kernels behind each task (for warming their compile caches ahead of time).
AUTOTUNED_KERNELS = {
    "add": ["_add_kernel"],
    "addmm": ["_addmm_kernel"],
    "bmm": ["_bmm_kernel"],
    "conv2d": ["_conv2d_kernel"],
    "mm": ["_mm_kernel"],
    "rms_norm": ["_rms_norm_kernel"],
    "rope": ["_rope_kernel"],
    "sdpa": ["_sdpa_kernel"],
    "silu": ["_silu_kernel"],
    "softmax": ["_softmax_kernel"],
}


def configs_to_compile(task, *args, **kwargs):
    """(kernel name, config index) pairs that ``FUNCTIONS[task](*args, **kwargs)`` may compile.

    For warming Triton's compile cache ahead of time, one config at a time.
    """
    pairs = []
    for name in AUTOTUNED_KERNELS[task]:
        configs = globals()[name].configs
        if task in ("rms_norm", "softmax"):
            usable = _row_configs_for(configs, triton.next_power_of_2(args[0].shape[-1]))
        else:
            usable = configs
        pairs += [(name, i) for i, c in enumerate(configs) if c in usable]
    return pairs
