"""Does attention gain from a persistent grid on Hopper, where the sequences
are short?  At 1k tokens each program runs only 8 to 16 key blocks, so its
prologue (the query tile's load, the pipeline's fill) and its epilogue (the
division, the store) weigh more than at 16k, and ntsym's attention is furthest
behind cuDNN there (1.35x at 16,16,1024,128, bf16).

A hand-written kernel, every tensor read through tensor descriptors made on the
device (the form of ntsym's descriptor variant), in these forms:

- ``tile``: one program per query tile (what ntsym's descriptor variant runs);
- ``persistent``: as many programs as fit on the machine (``--waves`` per
  multiprocessor), each looping over query tiles with a stride of the grid;
- ``persistent flat``: the same with ``flatten=True`` on the tile loop, which asks
  Triton to fuse it with the key loop into one software-pipelined loop, so that
  the next tile's first loads overlap this tile's last blocks and its store;
- ``ws``: ``warp_specialize`` on the key loop of the above (Hopper's producer
  and consumer warp groups), checked against torch like every other form.

Non-causal only (equal work per tile).  Every form is checked against torch
first and dropped with a note when it fails or differs; then interleaved
``do_bench`` rounds with torch's default SDPA and ntsym's sdpa as tuned.

    python -m benchmarks.lab.attention_persistent [--shapes B,H,S,D ...] [--dtype bfloat16]
    python -m benchmarks.lab.attention_persistent --cpu
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
from benchmarks.lab.attention_overlap import _agrees

sys.path.insert(0, os.getcwd())


@triton.jit
def _max_nan(a, b):
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def _tile(q_desc, k_desc, v_desc, o_desc, row0, start_m, S, qk_scale,
          D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, WS: tl.constexpr, FOLD: tl.constexpr):
    """One query tile's attention over all ``S`` keys; stores it.  ``FOLD``:
    the scale applied inside the exponent's argument (``qk * scale - m``, one
    fused multiply-add; the tutorial's form, right for a positive scale only);
    otherwise as ntsym's sdpa writes it (the scores scaled first, then the
    NaN-propagating row maximum, then the difference)."""
    q = q_desc.load([row0 + start_m * BM, 0])
    m_i = tl.full((BM,), float("-inf"), dtype=tl.float32)
    l_i = tl.zeros((BM,), dtype=tl.float32)
    acc = tl.zeros((BM, D), dtype=tl.float32)
    for start_n in tl.range(0, S, BN, warp_specialize=WS):
        qk = tl.dot(q, k_desc.load([row0 + start_n, 0]).T)
        if FOLD:
            m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
            p = tl.math.exp2(qk * qk_scale - m_ij[:, None])
        else:
            qk = qk * qk_scale
            m_ij = tl.maximum(m_i, tl.reduce(qk, 1, _max_nan), propagate_nan=tl.PropagateNan.ALL)
            p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        acc = acc * alpha[:, None]
        v = v_desc.load([row0 + start_n, 0])
        acc = tl.dot(p.to(v.dtype), v, acc)
        l_i = l_i * alpha + tl.sum(p, 1)
        m_i = m_ij
    o_desc.store([row0 + start_m * BM, 0], (acc / l_i[:, None]).to(o_desc.dtype))


@triton.jit
def _attention(q_ptr, k_ptr, v_ptr, o_ptr, sm_scale, BH, S,
               D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
               PERSISTENT: tl.constexpr, FLAT: tl.constexpr, WS: tl.constexpr, FOLD: tl.constexpr):
    """Contiguous (B, H, S, D) tensors seen as (B*H*S, D); S a multiple of BM."""
    rows_total = BH * S
    q_desc = tl.make_tensor_descriptor(q_ptr, [rows_total, D], [D, 1], [BM, D])
    k_desc = tl.make_tensor_descriptor(k_ptr, [rows_total, D], [D, 1], [BN, D])
    v_desc = tl.make_tensor_descriptor(v_ptr, [rows_total, D], [D, 1], [BN, D])
    o_desc = tl.make_tensor_descriptor(o_ptr, [rows_total, D], [D, 1], [BM, D])
    qk_scale = sm_scale * 1.4426950408889634
    tiles_m = S // BM
    if PERSISTENT:
        n_tiles = BH * tiles_m
        for tile in tl.range(tl.program_id(0), n_tiles, tl.num_programs(0), flatten=FLAT):
            bh = tile // tiles_m
            _tile(q_desc, k_desc, v_desc, o_desc, bh * S, tile % tiles_m, S, qk_scale, D, BM, BN, WS, FOLD)
    else:
        _tile(q_desc, k_desc, v_desc, o_desc, tl.program_id(1) * S, tl.program_id(0), S, qk_scale,
              D, BM, BN, WS, FOLD)


def attention(q, k, v, o, bm, bn, warps, stages, persistent=0, flat=False, ws=False, fold=True):
    """``persistent``: programs per multiprocessor (0: one program per tile)."""
    B, H, S, D = q.shape
    if persistent:
        sms = torch.cuda.get_device_properties(q.device).multi_processor_count if q.is_cuda else 4
        grid = (min(persistent * sms, B * H * (S // bm)),)
    else:
        grid = (S // bm, B * H)
    _attention[grid](q, k, v, o, 1 / math.sqrt(D), B * H, S, D, bm, bn, bool(persistent), flat, ws, fold,
                     num_warps=warps, num_stages=stages)


def _allocator(size, alignment, stream):  # the scratch tensor descriptors made on the device take
    return torch.empty(size, dtype=torch.int8, device="cuda")


# (BM, BN, warps, stages): the descriptor variant's choices at head dim 128, and 64x64.
CONFIGS = ((128, 64, 4, 2), (128, 64, 8, 2), (128, 128, 8, 2), (64, 64, 4, 3))
FORMS = (  # (label, persistent programs per SM, flatten, warp_specialize)
    ("tile", 0, False, False),
    ("persistent", 1, False, False),
    ("persistent x2", 2, False, False),
    ("tile ws", 0, False, True),
    ("persistent ws", 1, False, True),
    ("persistent ws x2", 2, False, True),
)
# Fusing the tile loop with the key loop (``flatten=True``) fails in Triton 3.6's
# TMA lowering at every configuration tried (an ``scf.if`` yielding a mutable
# shared-memory buffer where an immutable one is expected); the form is kept for
# newer Tritons behind --flat.
FOLDS = (True,)  # --ntsym-form adds False
FLAT_FORMS = (("persistent flat", 1, True, False), ("persistent flat x2", 2, True, False))


def repeat_check(text, dtype, configs, times):
    """Run each warp-specialized form ``times`` times on one input: a race
    between producer and consumer warps shows as outputs that differ."""
    b, h, s, d = (int(x) for x in text.split(","))
    q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=dtype) for _ in range(3))
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v)
    for cfg in configs:
        for label, persistent, flat, ws in FORMS:
            if not ws:
                continue
            o = torch.full_like(q, float("nan"))
            try:
                attention(q, k, v, o, *cfg, persistent, flat, ws)
            except Exception as exc:
                print(f"  {label} {cfg}: failed ({str(exc).splitlines()[0][:120]})")
                continue
            first = o.clone()
            differ = 0
            for _ in range(times):
                o.fill_(float("nan"))
                attention(q, k, v, o, *cfg, persistent, flat, ws)
                differ += not torch.equal(o, first)
            err = (first.float() - ref.float()).abs().max().item()
            print(f"  repeat {text} {label} {cfg}: {differ} of {times} runs differ from the first; "
                  f"max error against torch {err:.2e}")


def run_shape(text, dtype, rounds, configs):
    from examples import sdpa as ex

    b, h, s, d = (int(x) for x in text.split(","))
    q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=dtype) for _ in range(3))
    o = torch.empty_like(q)
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v)
    fns = {"torch default": lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v),
           "ntsym": lambda: ex.sdpa(q, k, v, False)}
    os.environ["NTSYM_PRINT_TUNING"] = "1"
    fns["ntsym"]()
    os.environ.pop("NTSYM_PRINT_TUNING")
    for cfg in configs:
        for label, persistent, flat, ws in FORMS:
            for fold in FOLDS:
                name = f"{label} {cfg[0]}x{cfg[1]} w{cfg[2]} s{cfg[3]}" + ("" if fold else " ntsym-form")
                f = (lambda cfg=cfg, p=persistent, fl=flat, w=ws, fo=fold: attention(q, k, v, o, *cfg, p, fl, w, fo))
                if _agrees(name, f, o, ref):
                    fns[name] = f
    flops_table(f"{text} non-causal {str(dtype).split('.')[-1]}", interleaved(fns, rounds=rounds),
                "torch default", 4 * b * h * s * s * d, spread=True)


def cpu_check():
    for d, s in ((16, 64), (32, 128)):
        q, k, v = (torch.randn(2, 2, s, d) * 3 for _ in range(3))
        o = torch.empty_like(q)
        ref = torch.nn.functional.scaled_dot_product_attention(q, k, v)
        for _, persistent, flat, ws in FORMS:
            for fold in (True, False):
                o.fill_(float("nan"))
                attention(q, k, v, o, 32, 16, 4, 2, persistent, flat, ws, fold)
                torch.testing.assert_close(o, ref, atol=1e-4, rtol=1e-4)
    print("every form agrees with torch on the interpreter")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--shapes", nargs="*", default=("16,16,1024,128", "16,32,1024,64", "4,16,4096,128"))
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--configs", nargs="*", help="BM,BN,warps,stages (default: the lab's four)")
    parser.add_argument("--cpu", action="store_true")
    parser.add_argument("--flat", action="store_true", help="also the flattened persistent forms")
    parser.add_argument("--ntsym-form", action="store_true", help="also each form in ntsym's sdpa's arithmetic")
    parser.add_argument("--forms", nargs="*", help="only these forms (labels)")
    parser.add_argument("--repeat", type=int, default=0, help="only run the ws forms this many times each")
    args = parser.parse_args()
    if args.cpu:
        return cpu_check()
    configs = tuple(tuple(int(x) for x in c.split(",")) for c in args.configs) if args.configs else CONFIGS
    global FORMS, FOLDS
    if args.flat:
        FORMS = FORMS + FLAT_FORMS
    if args.forms:
        FORMS = tuple(f for f in FORMS if f[0] in args.forms)
    if args.ntsym_form:
        FOLDS = (True, False)
    triton.set_allocator(_allocator)
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}")
    for text in args.shapes:
        if args.repeat:
            repeat_check(text, getattr(torch, args.dtype), configs, args.repeat)
            continue
        run_shape(text, getattr(torch, args.dtype), args.rounds, configs)


if __name__ == "__main__":
    main()
