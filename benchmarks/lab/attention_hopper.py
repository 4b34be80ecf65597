"""What does attention need on Hopper to come near torch's SDPA? One process, one table per shape.

    python -m benchmarks.lab.attention_hopper [--shapes B,H,S,D ...] [--cpu]

Per shape (non-causal and causal): torch's default SDPA and each of its backends it
has (flash, cuDNN, efficient), the Triton baseline (tuned), ntsym's sdpa (tuned; its
choice printed), and a hand-written probe kernel at fixed configurations with one
thing changed at a time: keys and values loaded through pointers or tensor
descriptors (TMA), the key loop with ``warp_specialize`` on or off, and for causal
attention the query blocks run last-first (the longest programs start first).
``--cpu`` runs the probe kernel's variants through the interpreter against torch
(correctness only)."""

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
def _probe(q_ptr, k_ptr, v_ptr, o_ptr, k_desc, v_desc, sm_scale, H, S,
           sq0, sq1, sq2, sk0, sk1, sk2, sv0, sv1, sv2, so0, so1, so2,
           D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, CAUSAL: tl.constexpr,
           TMA: tl.constexpr, WS: tl.constexpr, REVERSE: tl.constexpr):
    # S is a multiple of BM and BM of BN (the probe's shapes only).
    start_m = tl.program_id(0)
    if REVERSE:
        start_m = tl.num_programs(0) - 1 - start_m
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H
    rows = start_m * BM + tl.arange(0, BM)
    cols = tl.arange(0, D)
    n0 = tl.arange(0, BN)
    q = tl.load(q_ptr + b * sq0 + h * sq1 + rows[:, None] * sq2 + cols[None, :])
    k_base = k_ptr + b * sk0 + h * sk1 + n0[:, None] * sk2 + cols[None, :]
    v_base = v_ptr + b * sv0 + h * sv1 + n0[:, None] * sv2 + cols[None, :]
    row0 = bh * S  # the (B*H*S, D) view's first row of this head
    qk_scale = sm_scale * 1.4426950408889634
    m_i = tl.full((BM,), float("-inf"), dtype=tl.float32)
    l_i = tl.zeros((BM,), dtype=tl.float32)
    acc = tl.zeros((BM, D), dtype=tl.float32)
    hi = start_m * BM if CAUSAL else S
    for start_n in tl.range(0, hi, BN, warp_specialize=WS):
        if TMA:
            k = k_desc.load([row0 + start_n, 0])
        else:
            k = tl.load(k_base + start_n * sk2)
        qk = tl.dot(q, tl.trans(k))
        m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
        p = tl.math.exp2(qk * qk_scale - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        if TMA:
            v = v_desc.load([row0 + start_n, 0])
        else:
            v = tl.load(v_base + start_n * sv2)
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_ij
    if CAUSAL:
        for start_n in tl.range(start_m * BM, (start_m + 1) * BM, BN):
            k = tl.load(k_base + start_n * sk2)
            qk = tl.dot(q, tl.trans(k)) * qk_scale
            qk = tl.where(rows[:, None] >= (start_n + n0)[None, :], qk, float("-inf"))
            m_ij = tl.maximum(m_i, tl.max(qk, 1))
            p = tl.math.exp2(qk - m_ij[:, None])
            alpha = tl.math.exp2(m_i - m_ij)
            l_i = l_i * alpha + tl.sum(p, 1)
            acc = acc * alpha[:, None]
            v = tl.load(v_base + start_n * sv2)
            acc = tl.dot(p.to(v.dtype), v, acc)
            m_i = m_ij
    acc = acc / l_i[:, None]
    tl.store(o_ptr + b * so0 + h * so1 + rows[:, None] * so2 + cols[None, :], acc.to(o_ptr.dtype.element_ty))


def probe(q, k, v, o, causal, bm, bn, warps, stages, tma, ws, reverse):
    from triton.tools.tensor_descriptor import TensorDescriptor

    B, H, S, D = q.shape
    if tma:
        k_desc = TensorDescriptor.from_tensor(k.view(B * H * S, D), [bn, D])
        v_desc = TensorDescriptor.from_tensor(v.view(B * H * S, D), [bn, D])
    else:
        k_desc = v_desc = k  # unused
    _probe[(S // bm, B * H)](q, k, v, o, k_desc, v_desc, 1 / math.sqrt(D), H, S,
                             *q.stride()[:3], *k.stride()[:3], *v.stride()[:3], *o.stride()[:3],
                             D, bm, bn, causal, tma, ws, reverse, num_warps=warps, num_stages=stages)


CONFIGS = ((128, 64, 4, 3), (128, 64, 8, 3), (128, 128, 8, 2))
VARIANTS = ((False, False, False), (True, False, False), (False, True, False), (True, True, False))


def torch_backends():
    from torch.nn.attention import SDPBackend, sdpa_kernel

    out = {"torch default": None}
    for name in ("FLASH_ATTENTION", "CUDNN_ATTENTION", "EFFICIENT_ATTENTION"):
        if hasattr(SDPBackend, name):
            out[f"torch {name.split('_')[0].lower()}"] = (sdpa_kernel, getattr(SDPBackend, name))
    return out


def run_shape(text, dtype, rounds):
    from benchmarks import triton_baselines as tb
    from examples import sdpa as ex

    b, h, s, d = (int(x) for x in text.split(","))
    q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=dtype) for _ in range(3))
    o = torch.empty_like(q)
    for causal in (False, True):
        ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
        fns = {}
        for name, backend in torch_backends().items():
            if backend is None:
                fns[name] = lambda c=causal: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=c)
                continue
            ctx, which = backend

            def f(c=causal, ctx=ctx, which=which):
                with ctx(which):
                    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=c)
            try:
                f()
                fns[name] = f
            except Exception as exc:
                print(f"  {name}: not available ({str(exc).splitlines()[0][:80]})")
        fns["triton baseline"] = lambda c=causal: tb.sdpa(q, k, v, c)
        fns["triton baseline"]()
        print(f"  triton baseline chose {tb._sdpa_kernel.best_config}")
        os.environ["NTSYM_PRINT_TUNING"] = "1"
        fns["ntsym"] = lambda c=causal: ex.sdpa(q, k, v, c)
        fns["ntsym"]()
        os.environ.pop("NTSYM_PRINT_TUNING")
        for cfg in CONFIGS:
            for tma, ws, rev in VARIANTS + (((False, False, True),) if causal and VARIANTS else ()):
                name = f"probe {cfg[0]}x{cfg[1]} w{cfg[2]} s{cfg[3]}{' tma' if tma else ''}{' ws' if ws else ''}{' reverse' if rev else ''}"
                f = lambda cfg=cfg, tma=tma, ws=ws, rev=rev, c=causal: probe(q, k, v, o, c, *cfg, tma, ws, rev)
                try:
                    o.fill_(float("nan"))
                    f()
                    torch.cuda.synchronize()
                    err = (o.float() - ref.float()).abs().max().item()
                    if not err < 2e-2:
                        print(f"  {name}: WRONG (max error {err})")
                        continue
                    fns[name] = f
                except Exception as exc:
                    print(f"  {name}: failed ({str(exc).splitlines()[0][:120]})")
        flops_table(f"{text} causal={causal} {str(dtype).split('.')[-1]}", interleaved(fns, rounds=rounds),
                    "torch default", 4 * b * h * s * s * d / (2 if causal else 1))


def cpu_check():
    os.environ["TRITON_INTERPRET"] = "1"
    q, k, v = (torch.randn(1, 2, 32, 16) for _ in range(3))
    o = torch.empty_like(q)
    for causal in (False, True):
        ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
        for rev in (False, True):
            probe(q, k, v, o, causal, 16, 16, 4, 2, False, False, rev)
            torch.testing.assert_close(o, ref, atol=1e-4, rtol=1e-4)
    print("probe kernel agrees with torch on the interpreter")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--shapes", nargs="*", default=("4,32,4096,64", "4,16,4096,128"))
    parser.add_argument("--dtype", default="float16")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cpu", action="store_true")
    parser.add_argument("--probe", default="all", choices=("all", "plain", "none"),
                        help="probe variants: all, plain (pointer loads, no warp specialization), none")
    args = parser.parse_args()
    global CONFIGS, VARIANTS
    if args.probe != "all":
        VARIANTS = VARIANTS[:1] if args.probe == "plain" else ()
        CONFIGS = CONFIGS[1:2] if args.probe == "plain" else ()
    if args.cpu:
        return cpu_check()
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}")
    for text in args.shapes:
        run_shape(text, getattr(torch, args.dtype), args.rounds)


if __name__ == "__main__":
    main()
