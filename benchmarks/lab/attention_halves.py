"""Can attention's softmax hide behind the tensor cores if one program carries two independent
query tiles?  FlashAttention-3 overlaps one warpgroup's softmax with another's products by warp
specialization; this probe asks for the same overlap from the instruction stream alone. The
program's BM query rows are two halves, each with its own running maximum, sum and accumulator,
walking the same key/value blocks. In the loop body the products of half B are issued before the
softmax of half A and the second product of half A before the softmax of half B, so an
asynchronous tensor-core product always has independent work beside it.

Per shape: torch's default SDPA (cuDNN here), ntsym's sdpa as tuned, and the probe of
``attention_overlap.py`` at fixed configurations, one tile (``one``) and two halves
(``halves``); interleaved ``do_bench`` rounds, every probe result checked against torch first.

    python -m benchmarks.lab.attention_halves [--shapes B,H,S,D ...] [--dtype bfloat16]
    TRITON_INTERPRET=1 python -m benchmarks.lab.attention_halves --cpu
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
from benchmarks.lab.attention_overlap import _agrees, _allocator, _softmax_step, attention


@triton.jit
def _halves(q_ptr, k_ptr, v_ptr, o_ptr, sm_scale, H, S,
            sq0, sq1, sq2, sk0, sk1, sk2, sv0, sv1, sv2, so0, so1, so2,
            D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, CAUSAL: tl.constexpr):
    # S is a multiple of BM and BM of BN (the lab's shapes only).
    HM: tl.constexpr = BM // 2
    start_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H
    rows_a = start_m * BM + tl.arange(0, HM)
    rows_b = rows_a + HM
    cols = tl.arange(0, D)
    n0 = tl.arange(0, BN)
    qk_scale = sm_scale * 1.4426950408889634
    q_base = q_ptr + b * sq0 + h * sq1 + cols[None, :]
    qa = tl.load(q_base + rows_a[:, None] * sq2)
    qb = tl.load(q_base + rows_b[:, None] * sq2)
    qa = (qa * qk_scale).to(qa.dtype)
    qb = (qb * qk_scale).to(qb.dtype)
    k_base = k_ptr + b * sk0 + h * sk1 + n0[:, None] * sk2 + cols[None, :]
    v_base = v_ptr + b * sv0 + h * sv1 + n0[:, None] * sv2 + cols[None, :]
    m_a = tl.full((HM,), float("-inf"), dtype=tl.float32)
    m_b = tl.full((HM,), float("-inf"), dtype=tl.float32)
    l_a = tl.zeros((HM,), dtype=tl.float32)
    l_b = tl.zeros((HM,), dtype=tl.float32)
    acc_a = tl.zeros((HM, D), dtype=tl.float32)
    acc_b = tl.zeros((HM, D), dtype=tl.float32)
    hi = start_m * BM if CAUSAL else S
    for start_n in tl.range(0, hi, BN):
        kt = tl.trans(tl.load(k_base + start_n * sk2))
        qk_a = tl.dot(qa, kt)
        qk_b = tl.dot(qb, kt)
        v = tl.load(v_base + start_n * sv2)
        p_a, m_a, l_a, acc_a = _softmax_step(qk_a, m_a, l_a, acc_a, False)
        acc_a = tl.dot(p_a.to(v.dtype), v, acc_a)
        p_b, m_b, l_b, acc_b = _softmax_step(qk_b, m_b, l_b, acc_b, False)
        acc_b = tl.dot(p_b.to(v.dtype), v, acc_b)
    if CAUSAL:  # the diagonal's blocks, masked
        for start_n in tl.range(start_m * BM, (start_m + 1) * BM, BN):
            kt = tl.trans(tl.load(k_base + start_n * sk2))
            qk_a = tl.dot(qa, kt)
            qk_b = tl.dot(qb, kt)
            v = tl.load(v_base + start_n * sv2)
            qk_a = tl.where(rows_a[:, None] >= (start_n + n0)[None, :], qk_a, float("-inf"))
            qk_b = tl.where(rows_b[:, None] >= (start_n + n0)[None, :], qk_b, float("-inf"))
            p_a, m_a, l_a, acc_a = _softmax_step(qk_a, m_a, l_a, acc_a, False)
            acc_a = tl.dot(p_a.to(v.dtype), v, acc_a)
            p_b, m_b, l_b, acc_b = _softmax_step(qk_b, m_b, l_b, acc_b, False)
            acc_b = tl.dot(p_b.to(v.dtype), v, acc_b)
    o_base = o_ptr + b * so0 + h * so1 + cols[None, :]
    tl.store(o_base + rows_a[:, None] * so2, (acc_a / l_a[:, None]).to(o_ptr.dtype.element_ty))
    tl.store(o_base + rows_b[:, None] * so2, (acc_b / l_b[:, None]).to(o_ptr.dtype.element_ty))


@triton.jit
def _halves_step(qa, qb, kt, v, m_a, l_a, acc_a, m_b, l_b, acc_b):
    qk_a = tl.dot(qa, kt)
    qk_b = tl.dot(qb, kt)
    p_a, m_a, l_a, acc_a = _softmax_step(qk_a, m_a, l_a, acc_a, False)
    acc_a = tl.dot(p_a.to(v.dtype), v, acc_a)
    p_b, m_b, l_b, acc_b = _softmax_step(qk_b, m_b, l_b, acc_b, False)
    acc_b = tl.dot(p_b.to(v.dtype), v, acc_b)
    return m_a, l_a, acc_a, m_b, l_b, acc_b


@triton.jit
def _halves_desc(q_ptr, k_ptr, v_ptr, o_ptr, sm_scale, S, tiles,
                 D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, PERSISTENT: tl.constexpr):
    """Contiguous (B, H, S, D) tensors through tensor descriptors made on the device, non-causal;
    with PERSISTENT one program per multiprocessor walks the query tiles."""
    HM: tl.constexpr = BM // 2
    rows_total = tiles * BM
    q_desc = tl.make_tensor_descriptor(q_ptr, [rows_total, D], [D, 1], [HM, D])
    k_desc = tl.make_tensor_descriptor(k_ptr, [rows_total, D], [D, 1], [BN, D])
    v_desc = tl.make_tensor_descriptor(v_ptr, [rows_total, D], [D, 1], [BN, D])
    o_desc = tl.make_tensor_descriptor(o_ptr, [rows_total, D], [D, 1], [HM, D])
    qk_scale = sm_scale * 1.4426950408889634
    per_head = S // BM
    step = tl.num_programs(0) if PERSISTENT else tiles
    for tile in tl.range(tl.program_id(0), tiles, step):
        row0 = (tile // per_head) * S
        r = row0 + (tile % per_head) * BM
        qa = q_desc.load([r, 0])
        qb = q_desc.load([r + HM, 0])
        qa = (qa * qk_scale).to(qa.dtype)
        qb = (qb * qk_scale).to(qb.dtype)
        m_a = tl.full((HM,), float("-inf"), dtype=tl.float32)
        m_b = tl.full((HM,), float("-inf"), dtype=tl.float32)
        l_a = tl.zeros((HM,), dtype=tl.float32)
        l_b = tl.zeros((HM,), dtype=tl.float32)
        acc_a = tl.zeros((HM, D), dtype=tl.float32)
        acc_b = tl.zeros((HM, D), dtype=tl.float32)
        for start_n in tl.range(0, S, BN):
            kt = k_desc.load([row0 + start_n, 0]).T
            v = v_desc.load([row0 + start_n, 0])
            m_a, l_a, acc_a, m_b, l_b, acc_b = _halves_step(qa, qb, kt, v, m_a, l_a, acc_a, m_b, l_b, acc_b)
        o_desc.store([r, 0], (acc_a / l_a[:, None]).to(o_ptr.dtype.element_ty))
        o_desc.store([r + HM, 0], (acc_b / l_b[:, None]).to(o_ptr.dtype.element_ty))


def halves_desc(q, k, v, o, causal, bm, bn, warps, stages, persistent):
    assert not causal
    B, H, S, D = q.shape
    tiles = B * H * (S // bm)
    sms = torch.cuda.get_device_properties(0).multi_processor_count if q.is_cuda else 3
    programs = min(tiles, sms) if persistent else tiles
    _halves_desc[(programs,)](q, k, v, o, 1 / math.sqrt(D), S, tiles, D, bm, bn, persistent,
                              num_warps=warps, num_stages=stages)


def halves(q, k, v, o, causal, bm, bn, warps, stages):
    B, H, S, D = q.shape
    _halves[(S // bm, B * H)](q, k, v, o, 1 / math.sqrt(D), H, S,
                              *q.stride()[:3], *k.stride()[:3], *v.stride()[:3], *o.stride()[:3],
                              D, bm, bn, causal, num_warps=warps, num_stages=stages)


# (BM, BN, warps, stages)
ONE = ((128, 64, 8, 3), (256, 64, 8, 3))
HALVES = ((256, 64, 8, 3), (128, 64, 4, 3))
DESC = ((256, 64, 8, 2), (256, 64, 8, 3), (128, 64, 4, 2), (128, 64, 4, 3), (256, 128, 8, 2))
# ntsym's sdpa at fixed configurations, made with BLOCK_SIZE_M up to 256 (the example stops at 128).
NTSYM = ((128, 64, 8, 3), (256, 64, 8, 3))


def _wide_kernel():
    import ntsym
    from examples import sdpa as ex

    def arrangement(q, k, v, scale, is_causal, o,
                    BLOCK_SIZE_M=ntsym.block_size(lower_bound=16, upper_bound=256),
                    BLOCK_SIZE_N=ntsym.block_size(lower_bound=16, upper_bound=128)):
        return ex.arrangement(q, k, v, scale, is_causal, o, BLOCK_SIZE_M, BLOCK_SIZE_N)

    head = (None, None, None, {"constexpr": True, "upper_bound": 256, "power_of_two": True})
    return ntsym.make(arrangement, ex.application,
                      tuple(ntsym.Tensor(4, shape_options=head) for _ in range(3))
                      + (ntsym.Tensor(0), ntsym.Tensor(0, constexpr=True), ntsym.Tensor(4, shape_options=head)))


def run_shape(text, dtype, rounds, causals):
    from examples import sdpa as ex

    b, h, s, d = (int(x) for x in text.split(","))
    q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=dtype) for _ in range(3))
    o = torch.empty_like(q)
    for causal in causals:
        ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
        fns = {"torch default": lambda c=causal: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=c),
               "ntsym": lambda c=causal: ex.sdpa(q, k, v, c)}
        fns["ntsym"]()
        wide = _wide_kernel()
        candidates = [(f"ntsym {c[0]}x{c[1]} w{c[2]} s{c[3]}", lambda c=c, cz=causal: wide(
            q, k, v, 1 / math.sqrt(d), cz, o, BLOCK_SIZE_M=c[0], BLOCK_SIZE_N=c[1],
            ntsym_options={"num_warps": c[2], "num_stages": c[3]})) for c in NTSYM]
        candidates += [(f"one {c[0]}x{c[1]} w{c[2]} s{c[3]}", lambda c=c, cz=causal: attention(q, k, v, o, cz, *c, False, False))
                      for c in ONE]
        candidates += [(f"halves {c[0]}x{c[1]} w{c[2]} s{c[3]}", lambda c=c, cz=causal: halves(q, k, v, o, cz, *c))
                       for c in HALVES]
        if not causal:
            for c in DESC:
                for persistent in (False, True):
                    candidates.append((f"halves desc {c[0]}x{c[1]} w{c[2]} s{c[3]}" + (" persistent" if persistent else ""),
                                       lambda c=c, p=persistent: halves_desc(q, k, v, o, False, *c, p)))
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
            o.fill_(float("nan"))
            halves(q, k, v, o, causal, 32, 16, 4, 2)
            torch.testing.assert_close(o, ref, atol=1e-4, rtol=1e-4)
            if not causal:
                for persistent in (False, True):
                    o.fill_(float("nan"))
                    halves_desc(q, k, v, o, False, 32, 16, 4, 2, persistent)
                    torch.testing.assert_close(o, ref, atol=1e-4, rtol=1e-4)
    print("the two-halves probe agrees with torch on the interpreter")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--shapes", nargs="*", default=("16,16,1024,128", "4,16,4096,128", "4,32,4096,64"))
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--causal", action="store_true", help="also the causal form")
    parser.add_argument("--cpu", action="store_true")
    args = parser.parse_args()
    if args.cpu:
        return cpu_check()
    triton.set_allocator(_allocator)
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}")
    for text in args.shapes:
        run_shape(text, getattr(torch, args.dtype), args.rounds, (False, True) if args.causal else (False,))


if __name__ == "__main__":
    main()
