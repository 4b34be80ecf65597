"""Can attention's loop hide its softmax behind the next block's product on
Hopper, and skip most of the accumulator's rescaling?  Two of the tricks
FlashAttention-3 and -4 describe, tried in a hand-written Triton kernel
(``attention_hopper.py``'s probe, pointer loads) one at a time:

- ``pipe``: the scores of key block ``j + 1`` (``dot(q, k_{j+1})``) are issued
  before the softmax of block ``j``, so that the tensor cores run the next
  product while the softmax's exponentials run (FA3's intra-warpgroup
  overlap, written as a software-pipelined loop: two score tiles live).
- ``lazy``: the running maximum is raised, and the accumulator and the sum
  rescaled, only when a block's maximum exceeds it by more than 8 (log2
  units; FA4's conditional rescaling).  Probabilities are then at most 2**8
  before the final division, exact in fp16/bf16's range; the result is the
  same softmax.

Per shape (non-causal and causal): torch's default SDPA (cuDNN here), ntsym's
sdpa as tuned, the probe at fixed configurations plain and ``pipe`` (``lazy``
with ``--lazy``), and a third form: the loop of Triton's own attention
tutorial with every tensor read through tensor descriptors made on the
device, with and without ``warp_specialize`` on the key loop (Hopper's
warp-specialized producer and consumer groups); interleaved ``do_bench`` rounds, every
probe result checked against torch first.

    python -m benchmarks.lab.attention_overlap [--shapes B,H,S,D ...] [--dtype float16] [--lazy]
    TRITON_INTERPRET=1 python -m benchmarks.lab.attention_overlap --cpu
"""

import argparse
import math
import os
import sys

if "--cpu" in sys.argv:  # the interpreter is chosen when the kernels below are decorated
    os.environ["TRITON_INTERPRET"] = "1"

import torch
import triton
import triton.language as tl

from benchmarks.lab._rounds import flops_table, interleaved

sys.path.insert(0, os.getcwd())


@triton.jit
def _softmax_step(qk, m_i, l_i, acc, LAZY: tl.constexpr):
    """One block's online-softmax update (scores in log2 units); returns the
    probabilities to multiply with the block's values."""
    m_blk = tl.max(qk, 1)
    if LAZY:
        m_new = tl.maximum(m_i, m_blk)
        if tl.max(m_new - m_i, 0) > 8.0:  # some row's maximum grew past 2**8: rescale every row
            alpha = tl.math.exp2(m_i - m_new)
            l_i = l_i * alpha
            acc = acc * alpha[:, None]
            m_i = m_new
        p = tl.math.exp2(qk - m_i[:, None])
        l_i = l_i + tl.sum(p, 1)
    else:
        m_new = tl.maximum(m_i, m_blk)
        p = tl.math.exp2(qk - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        m_i = m_new
    return p, m_i, l_i, acc


@triton.jit
def _attention(q_ptr, k_ptr, v_ptr, o_ptr, sm_scale, H, S,
               sq0, sq1, sq2, sk0, sk1, sk2, sv0, sv1, sv2, so0, so1, so2,
               D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, CAUSAL: tl.constexpr,
               PIPE: tl.constexpr, LAZY: tl.constexpr):
    # S is a multiple of BM and BM of BN (the lab's shapes only).
    start_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H
    rows = start_m * BM + tl.arange(0, BM)
    cols = tl.arange(0, D)
    n0 = tl.arange(0, BN)
    qk_scale = sm_scale * 1.4426950408889634
    q = tl.load(q_ptr + b * sq0 + h * sq1 + rows[:, None] * sq2 + cols[None, :])
    q = (q * qk_scale).to(q.dtype)  # the scale folded into q once
    k_base = k_ptr + b * sk0 + h * sk1 + n0[:, None] * sk2 + cols[None, :]
    v_base = v_ptr + b * sv0 + h * sv1 + n0[:, None] * sv2 + cols[None, :]
    m_i = tl.full((BM,), float("-inf"), dtype=tl.float32)
    l_i = tl.zeros((BM,), dtype=tl.float32)
    acc = tl.zeros((BM, D), dtype=tl.float32)
    hi = start_m * BM if CAUSAL else S
    if PIPE:
        if hi > 0:
            qk = tl.dot(q, tl.trans(tl.load(k_base)))
            for start_n in tl.range(BN, hi, BN):
                qk_next = tl.dot(q, tl.trans(tl.load(k_base + start_n * sk2)))
                p, m_i, l_i, acc = _softmax_step(qk, m_i, l_i, acc, LAZY)
                v = tl.load(v_base + (start_n - BN) * sv2)
                acc = tl.dot(p.to(v.dtype), v, acc)
                qk = qk_next
            p, m_i, l_i, acc = _softmax_step(qk, m_i, l_i, acc, LAZY)
            v = tl.load(v_base + (hi - BN) * sv2)
            acc = tl.dot(p.to(v.dtype), v, acc)
    else:
        for start_n in tl.range(0, hi, BN):
            qk = tl.dot(q, tl.trans(tl.load(k_base + start_n * sk2)))
            p, m_i, l_i, acc = _softmax_step(qk, m_i, l_i, acc, LAZY)
            v = tl.load(v_base + start_n * sv2)
            acc = tl.dot(p.to(v.dtype), v, acc)
    if CAUSAL:  # the diagonal's blocks, masked, as before
        for start_n in tl.range(start_m * BM, (start_m + 1) * BM, BN):
            qk = tl.dot(q, tl.trans(tl.load(k_base + start_n * sk2)))
            qk = tl.where(rows[:, None] >= (start_n + n0)[None, :], qk, float("-inf"))
            p, m_i, l_i, acc = _softmax_step(qk, m_i, l_i, acc, LAZY)
            v = tl.load(v_base + start_n * sv2)
            acc = tl.dot(p.to(v.dtype), v, acc)
    acc = acc / l_i[:, None]
    tl.store(o_ptr + b * so0 + h * so1 + rows[:, None] * so2 + cols[None, :], acc.to(o_ptr.dtype.element_ty))


@triton.jit
def _attention_ws(q_ptr, k_ptr, v_ptr, o_ptr, sm_scale, H, S,
                  D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, CAUSAL: tl.constexpr, WS: tl.constexpr):
    """Contiguous (B, H, S, D) tensors through tensor descriptors made on the
    device, the key loop warp-specialized (``WS``)."""
    start_m = tl.program_id(0)
    bh = tl.program_id(1)
    rows_total = tl.num_programs(1) * S
    q_desc = tl.make_tensor_descriptor(q_ptr, [rows_total, D], [D, 1], [BM, D])
    k_desc = tl.make_tensor_descriptor(k_ptr, [rows_total, D], [D, 1], [BN, D])
    v_desc = tl.make_tensor_descriptor(v_ptr, [rows_total, D], [D, 1], [BN, D])
    o_desc = tl.make_tensor_descriptor(o_ptr, [rows_total, D], [D, 1], [BM, D])
    row0 = bh * S
    rows = start_m * BM + tl.arange(0, BM)
    n0 = tl.arange(0, BN)
    qk_scale = sm_scale * 1.4426950408889634
    q = q_desc.load([row0 + start_m * BM, 0])
    m_i = tl.full((BM,), float("-inf"), dtype=tl.float32)
    l_i = tl.zeros((BM,), dtype=tl.float32)
    acc = tl.zeros((BM, D), dtype=tl.float32)
    hi = start_m * BM if CAUSAL else S
    for start_n in tl.range(0, hi, BN, warp_specialize=WS):
        qk = tl.dot(q, k_desc.load([row0 + start_n, 0]).T)
        m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
        p = tl.math.exp2(qk * qk_scale - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_ij = tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = v_desc.load([row0 + start_n, 0])
        acc = tl.dot(p.to(v.dtype), v, acc)
        l_i = l_i * alpha + l_ij
        m_i = m_ij
    if CAUSAL:
        for start_n in tl.range(start_m * BM, (start_m + 1) * BM, BN, warp_specialize=WS):
            qk = tl.dot(q, k_desc.load([row0 + start_n, 0]).T)
            qk = qk * qk_scale + tl.where(rows[:, None] >= (start_n + n0)[None, :], 0.0, -1.0e6)
            m_ij = tl.maximum(m_i, tl.max(qk, 1))
            p = tl.math.exp2(qk - m_ij[:, None])
            alpha = tl.math.exp2(m_i - m_ij)
            l_ij = tl.sum(p, 1)
            acc = acc * alpha[:, None]
            v = v_desc.load([row0 + start_n, 0])
            acc = tl.dot(p.to(v.dtype), v, acc)
            l_i = l_i * alpha + l_ij
            m_i = m_ij
    acc = acc / l_i[:, None]
    o_desc.store([row0 + start_m * BM, 0], acc.to(o_ptr.dtype.element_ty))


def attention(q, k, v, o, causal, bm, bn, warps, stages, pipe, lazy):
    B, H, S, D = q.shape
    _attention[(S // bm, B * H)](q, k, v, o, 1 / math.sqrt(D), H, S,
                                 *q.stride()[:3], *k.stride()[:3], *v.stride()[:3], *o.stride()[:3],
                                 D, bm, bn, causal, pipe, lazy, num_warps=warps, num_stages=stages)


def attention_ws(q, k, v, o, causal, bm, bn, warps, stages, ws):
    B, H, S, D = q.shape
    _attention_ws[(S // bm, B * H)](q, k, v, o, 1 / math.sqrt(D), H, S, D, bm, bn, causal, ws,
                                    num_warps=warps, num_stages=stages)


def _allocator(size, alignment, stream):  # the scratch tensor descriptors made on the device take
    return torch.empty(size, dtype=torch.int8, device="cuda")


CONFIGS = ((128, 64, 8, 3), (128, 64, 4, 2), (128, 64, 4, 3), (64, 64, 4, 3))
WS_CONFIGS = ((128, 64, 4, 2), (128, 64, 4, 3), (128, 128, 4, 2))
# ntsym's sdpa at fixed configurations: (BLOCK_SIZE_M, BLOCK_SIZE_N, num_warps, num_stages).
NTSYM_CONFIGS = ((128, 64, 4, 2), (128, 64, 4, 3), (128, 64, 8, 3), (64, 64, 4, 3))
VARIANTS = ((False, False), (True, False))


def _name(cfg, pipe, lazy):
    return f"probe {cfg[0]}x{cfg[1]} w{cfg[2]} s{cfg[3]}" + (" pipe" if pipe else "") + (" lazy" if lazy else "")


def _agrees(name, f, o, ref):
    """Whether ``f`` (writing ``o``) runs and agrees with ``ref``; says why not."""
    try:
        o.fill_(float("nan"))
        f()
        torch.cuda.synchronize()
    except Exception as exc:
        print(f"  {name}: failed ({str(exc).splitlines()[0][:120]})")
        return False
    err = (o.float() - ref.float()).abs().max().item()
    if not err < 2e-2:
        print(f"  {name}: WRONG (max error {err})")
    return err < 2e-2


def run_shape(text, dtype, rounds):
    from examples import sdpa as ex

    b, h, s, d = (int(x) for x in text.split(","))
    q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=dtype) for _ in range(3))
    o = torch.empty_like(q)
    for causal in (False, True):
        ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
        fns = {"torch default": lambda c=causal: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=c),
               "ntsym": lambda c=causal: ex.sdpa(q, k, v, c)}
        os.environ["NTSYM_PRINT_TUNING"] = "1"
        fns["ntsym"]()
        os.environ.pop("NTSYM_PRINT_TUNING")
        kernel = ex.kernel_pow2_head if d & (d - 1) == 0 else ex.kernel
        candidates = []
        for bm, bn, warps, stages in NTSYM_CONFIGS:
            candidates.append((f"ntsym {bm}x{bn} w{warps} s{stages}", lambda bm=bm, bn=bn, w=warps, st=stages, c=causal: kernel(
                q, k, v, 1 / math.sqrt(d), c, o, BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn,
                ntsym_options={"num_warps": w, "num_stages": st})))
        for cfg in CONFIGS:
            for pipe, lazy in VARIANTS:
                candidates.append((_name(cfg, pipe, lazy), lambda cfg=cfg, pipe=pipe, lazy=lazy, c=causal:
                                   attention(q, k, v, o, c, *cfg, pipe, lazy)))
        for cfg in WS_CONFIGS:
            for ws in (False, True):
                candidates.append((f"descriptors {cfg[0]}x{cfg[1]} w{cfg[2]} s{cfg[3]}" + (" ws" if ws else ""),
                                   lambda cfg=cfg, ws=ws, c=causal: attention_ws(q, k, v, o, c, *cfg, ws)))
        for name, f in candidates:
            if _agrees(name, f, o, ref):
                fns[name] = f
        flops_table(f"{text} causal={causal} {str(dtype).split('.')[-1]}", interleaved(fns, rounds=rounds),
                    "torch default", 4 * b * h * s * s * d / (2 if causal else 1), spread=True)


def cpu_check():
    for d, s in ((16, 64), (32, 128)):
        q, k, v = (torch.randn(1, 2, s, d) * 3 for _ in range(3))
        o = torch.empty_like(q)
        for causal in (False, True):
            ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
            for pipe, lazy in VARIANTS:
                o.fill_(float("nan"))
                attention(q, k, v, o, causal, 32, 16, 4, 2, pipe, lazy)
                torch.testing.assert_close(o, ref, atol=1e-4, rtol=1e-4)
            o.fill_(float("nan"))
            attention_ws(q, k, v, o, causal, 32, 16, 4, 2, False)
            torch.testing.assert_close(o, ref, atol=1e-4, rtol=1e-4)
    print("every variant agrees with torch on the interpreter")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--shapes", nargs="*", default=("16,16,1024,128", "4,16,4096,128", "4,32,4096,64"))
    parser.add_argument("--dtype", default="float16")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cpu", action="store_true")
    parser.add_argument("--lazy", action="store_true", help="also time the conditional rescaling")
    args = parser.parse_args()
    if args.lazy:
        global VARIANTS
        VARIANTS = VARIANTS + ((False, True), (True, True))
    if args.cpu:
        return cpu_check()
    triton.set_allocator(_allocator)
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}")
    for text in args.shapes:
        run_shape(text, getattr(torch, args.dtype), args.rounds)


if __name__ == "__main__":
    main()
