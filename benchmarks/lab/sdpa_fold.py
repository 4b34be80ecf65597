"""The scale inside the exponent (``s * c - m``, one fused multiply-add a
score, where a key block has no mask) against the scale applied to the
scores first (``s = dot * c``, then ``s - m``: the example's form), in
ntsym's sdpa at fixed configurations, each application made here from the
example's arrangement; interleaved ``do_bench`` rounds in one process
(torch's default SDPA beside them), every result checked against torch.

- ``folded``: the scale inside the exponent where a block has no mask, its
  sign carried by q (``q_loaded = where(scale < 0, -q, q)``, ``abs(scale)``);
- ``folded, no sign``: the same for a positive scale only (q as loaded);
- ``sign only``: the example's form with the sign carried by q.

    python -m benchmarks.lab.sdpa_fold [--shapes B,H,S,D ...] [--dtype bfloat16]
"""

import argparse
import math
import os
import sys

import torch

import ntsym
import ntsym.language as ntl
from benchmarks.lab._rounds import flops_table, interleaved
from examples import sdpa

sys.path.insert(0, os.getcwd())


def folded(q, k, v, scale, is_causal, o):
    # q is loaded once, outside the loops, with the scale's sign: the scores
    # are then scaled by a factor c >= 0, for which max(s) * c == max(s * c).
    q_loaded = ntl.where(scale < 0, -q, q)
    scale_log2 = ntl.abs(scale) * 1.4426950408889634  # exp(x) == exp2(x * log2(e))
    acc = ntl.zeros(o.shape, dtype=ntl.float32)
    m = ntl.full((q.shape[0],), float("-inf"), dtype=ntl.float32)
    l = ntl.zeros((q.shape[0],), dtype=ntl.float32)

    # The loops repeat one body, each with the masks its blocks need:
    # written out, each keeps what ntsym proves of its own blocks.  Where a
    # block has no mask, the scale goes inside the exponent's argument
    # (`s * scale_log2 - m`: one fused multiply-add a score); where it has
    # one, the scores are scaled before the mask, so that a masked score is
    # -inf whatever the scale (-inf * 0 would be NaN).
    # Non-causal first: its loops over every key block have ntsym check at
    # launch that `v` has `k`'s length, which the causal loops then use.
    if not is_causal:
        whole = k.source.shape[2] // k[0].shape[0]  # the key blocks inside the keys
        for i in range(whole):
            s = ntl.dot(q_loaded, ntl.trans(k[i]))
            m_new = ntl.maximum(m, ntl.max(s, 1) * scale_log2)
            p = ntl.exp2(s * scale_log2 - m_new[:, None])
            alpha = ntl.exp2(m - m_new)
            acc = acc * alpha[:, None] + ntl.dot(p.to(v[i].dtype), v[i])
            l = l * alpha + ntl.sum(p, 1)
            m = m_new
        for i in range(whole, k.shape[0]):  # the last block, where the keys end inside it
            key = k[i].offsets(2)[None, :]  # offsets(2): the block's key positions, a vector
            s = ntl.dot(q_loaded, ntl.trans(k[i])) * scale_log2
            s = ntl.where(key < k.source.shape[2], s, float("-inf"))

            m_new = ntl.maximum(m, ntl.max(s, 1))
            p = ntl.exp2(s - m_new[:, None])
            alpha = ntl.exp2(m - m_new)
            acc = acc * alpha[:, None] + ntl.dot(p.to(v[i].dtype), v[i])
            l = l * alpha + ntl.sum(p, 1)
            m = m_new
    else:
        # Key blocks wholly before the block's first query (and wholly
        # inside the keys) need no mask; those past its last query are all
        # masked: not visited.  ntsym follows `first` and `last` as index
        # math: the first loop's loads are proved whole and carry no mask.
        first = ntl.minimum(ntl.min(q.offsets(2), 0), k.source.shape[2]) // k[0].shape[0]
        last = ntl.minimum(ntl.max(q.offsets(2), 0) // k[0].shape[0] + 1, k.shape[0])
        for i in range(first):
            s = ntl.dot(q_loaded, ntl.trans(k[i]))
            m_new = ntl.maximum(m, ntl.max(s, 1) * scale_log2)
            p = ntl.exp2(s * scale_log2 - m_new[:, None])
            alpha = ntl.exp2(m - m_new)
            acc = acc * alpha[:, None] + ntl.dot(p.to(v[i].dtype), v[i])
            l = l * alpha + ntl.sum(p, 1)
            m = m_new
        for j in range(first, last):
            key = k[j].offsets(2)[None, :]
            s = ntl.dot(q_loaded, ntl.trans(k[j])) * scale_log2
            # Two selects, not one of `&`: where the key block is whole, ntsym
            # proves the first and drops it.
            s = ntl.where(key < k.source.shape[2], s, float("-inf"))
            s = ntl.where(q.offsets(2)[:, None] >= key, s, float("-inf"))
            m_new = ntl.maximum(m, ntl.max(s, 1))
            p = ntl.exp2(s - m_new[:, None])
            alpha = ntl.exp2(m - m_new)
            acc = acc * alpha[:, None] + ntl.dot(p.to(v[j].dtype), v[j])
            l = l * alpha + ntl.sum(p, 1)
            m = m_new

    o = acc / l[:, None]  # noqa: F841


def folded_no_sign(q, k, v, scale, is_causal, o):
    # q is loaded once, outside the loops, with the scale's sign: the scores
    # are then scaled by a factor c >= 0, for which max(s) * c == max(s * c).
    q_loaded = q
    scale_log2 = scale * 1.4426950408889634  # exp(x) == exp2(x * log2(e))
    acc = ntl.zeros(o.shape, dtype=ntl.float32)
    m = ntl.full((q.shape[0],), float("-inf"), dtype=ntl.float32)
    l = ntl.zeros((q.shape[0],), dtype=ntl.float32)

    # The loops repeat one body, each with the masks its blocks need:
    # written out, each keeps what ntsym proves of its own blocks.  Where a
    # block has no mask, the scale goes inside the exponent's argument
    # (`s * scale_log2 - m`: one fused multiply-add a score); where it has
    # one, the scores are scaled before the mask, so that a masked score is
    # -inf whatever the scale (-inf * 0 would be NaN).
    # Non-causal first: its loops over every key block have ntsym check at
    # launch that `v` has `k`'s length, which the causal loops then use.
    if not is_causal:
        whole = k.source.shape[2] // k[0].shape[0]  # the key blocks inside the keys
        for i in range(whole):
            s = ntl.dot(q_loaded, ntl.trans(k[i]))
            m_new = ntl.maximum(m, ntl.max(s, 1) * scale_log2)
            p = ntl.exp2(s * scale_log2 - m_new[:, None])
            alpha = ntl.exp2(m - m_new)
            acc = acc * alpha[:, None] + ntl.dot(p.to(v[i].dtype), v[i])
            l = l * alpha + ntl.sum(p, 1)
            m = m_new
        for i in range(whole, k.shape[0]):  # the last block, where the keys end inside it
            key = k[i].offsets(2)[None, :]  # offsets(2): the block's key positions, a vector
            s = ntl.dot(q_loaded, ntl.trans(k[i])) * scale_log2
            s = ntl.where(key < k.source.shape[2], s, float("-inf"))

            m_new = ntl.maximum(m, ntl.max(s, 1))
            p = ntl.exp2(s - m_new[:, None])
            alpha = ntl.exp2(m - m_new)
            acc = acc * alpha[:, None] + ntl.dot(p.to(v[i].dtype), v[i])
            l = l * alpha + ntl.sum(p, 1)
            m = m_new
    else:
        # Key blocks wholly before the block's first query (and wholly
        # inside the keys) need no mask; those past its last query are all
        # masked: not visited.  ntsym follows `first` and `last` as index
        # math: the first loop's loads are proved whole and carry no mask.
        first = ntl.minimum(ntl.min(q.offsets(2), 0), k.source.shape[2]) // k[0].shape[0]
        last = ntl.minimum(ntl.max(q.offsets(2), 0) // k[0].shape[0] + 1, k.shape[0])
        for i in range(first):
            s = ntl.dot(q_loaded, ntl.trans(k[i]))
            m_new = ntl.maximum(m, ntl.max(s, 1) * scale_log2)
            p = ntl.exp2(s * scale_log2 - m_new[:, None])
            alpha = ntl.exp2(m - m_new)
            acc = acc * alpha[:, None] + ntl.dot(p.to(v[i].dtype), v[i])
            l = l * alpha + ntl.sum(p, 1)
            m = m_new
        for j in range(first, last):
            key = k[j].offsets(2)[None, :]
            s = ntl.dot(q_loaded, ntl.trans(k[j])) * scale_log2
            # Two selects, not one of `&`: where the key block is whole, ntsym
            # proves the first and drops it.
            s = ntl.where(key < k.source.shape[2], s, float("-inf"))
            s = ntl.where(q.offsets(2)[:, None] >= key, s, float("-inf"))
            m_new = ntl.maximum(m, ntl.max(s, 1))
            p = ntl.exp2(s - m_new[:, None])
            alpha = ntl.exp2(m - m_new)
            acc = acc * alpha[:, None] + ntl.dot(p.to(v[j].dtype), v[j])
            l = l * alpha + ntl.sum(p, 1)
            m = m_new

    o = acc / l[:, None]  # noqa: F841


def sign_only(q, k, v, scale, is_causal, o):
    q_loaded = ntl.where(scale < 0, -q, q)
    scale_log2 = ntl.abs(scale) * 1.4426950408889634  # exp(x) == exp2(x * log2(e))
    acc = ntl.zeros(o.shape, dtype=ntl.float32)
    m = ntl.full((q.shape[0],), float("-inf"), dtype=ntl.float32)
    l = ntl.zeros((q.shape[0],), dtype=ntl.float32)

    # The three loops repeat one body, each with the masks its blocks need:
    # written out, each keeps what ntsym proves of its own blocks.
    # Non-causal first: its loop over every key block has ntsym check at
    # launch that `v` has `k`'s length, which the causal loops then use.
    if not is_causal:
        for i in range(k.shape[0]):
            key = k[i].offsets(2)[None, :]  # offsets(2): the block's key positions, a vector
            s = ntl.dot(q_loaded, ntl.trans(k[i])) * scale_log2
            s = ntl.where(key < k.source.shape[2], s, float("-inf"))

            m_new = ntl.maximum(m, ntl.max(s, 1))
            p = ntl.exp2(s - m_new[:, None])
            alpha = ntl.exp2(m - m_new)
            acc = acc * alpha[:, None] + ntl.dot(p.to(v[i].dtype), v[i])
            l = l * alpha + ntl.sum(p, 1)
            m = m_new
    else:
        # Key blocks wholly before the block's first query (and wholly
        # inside the keys) need no mask; those past its last query are all
        # masked: not visited.  ntsym follows `first` and `last` as index
        # math: the first loop's loads are proved whole and carry no mask.
        first = ntl.minimum(ntl.min(q.offsets(2), 0), k.source.shape[2]) // k[0].shape[0]
        last = ntl.minimum(ntl.max(q.offsets(2), 0) // k[0].shape[0] + 1, k.shape[0])
        for i in range(first):
            s = ntl.dot(q_loaded, ntl.trans(k[i])) * scale_log2
            m_new = ntl.maximum(m, ntl.max(s, 1))
            p = ntl.exp2(s - m_new[:, None])
            alpha = ntl.exp2(m - m_new)
            acc = acc * alpha[:, None] + ntl.dot(p.to(v[i].dtype), v[i])
            l = l * alpha + ntl.sum(p, 1)
            m = m_new
        for j in range(first, last):
            key = k[j].offsets(2)[None, :]
            s = ntl.dot(q_loaded, ntl.trans(k[j])) * scale_log2
            # Two selects, not one of `&`: where the key block is whole, ntsym
            # proves the first and drops it.
            s = ntl.where(key < k.source.shape[2], s, float("-inf"))
            s = ntl.where(q.offsets(2)[:, None] >= key, s, float("-inf"))
            m_new = ntl.maximum(m, ntl.max(s, 1))
            p = ntl.exp2(s - m_new[:, None])
            alpha = ntl.exp2(m - m_new)
            acc = acc * alpha[:, None] + ntl.dot(p.to(v[j].dtype), v[j])
            l = l * alpha + ntl.sum(p, 1)
            m = m_new

    o = acc / l[:, None]  # noqa: F841


head = (None, None, None, {"constexpr": True, "upper_bound": 256, "power_of_two": True})
TENSORS = (ntsym.Tensor(4, shape_options=head), ntsym.Tensor(4, shape_options=head),
           ntsym.Tensor(4, shape_options=head), ntsym.Tensor(0), ntsym.Tensor(0, constexpr=True),
           ntsym.Tensor(4, shape_options=head))
KERNELS = {name: ntsym.make(sdpa.arrangement, app, TENSORS) for name, app in (
    ("scaled first", sdpa.application), ("folded", folded), ("folded, no sign", folded_no_sign), ("sign only", sign_only))}

# (BLOCK_SIZE_M, BLOCK_SIZE_N, warps, stages, descriptor variant)
CONFIGS = ((128, 64, 4, 2, True), (128, 64, 8, 3, False), (64, 64, 4, 3, False), (128, 128, 8, 2, True))


def tuned(shapes, dtype, forms):
    """Each application as the tuner leaves it, by default and with the
    descriptor variant asked for (``ntsym_options={"persistent": True}``):
    the choice, its largest error against torch, its time.  The tuner checks
    a variant it would choose against the plain kernel and warns where one
    disagrees."""
    os.environ["NTSYM_PRINT_TUNING"] = "1"
    for text in shapes:
        b, h, s, d = (int(x) for x in text.split(","))
        q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=dtype) for _ in range(3))
        o = torch.empty_like(q)
        for causal in (False, True):
            ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
            for label, kernel in KERNELS.items():
                if forms and label not in forms:
                    continue
                for options in ({}, {"persistent": True}):
                    f = (lambda kernel=kernel, options=options, c=causal: kernel(
                        q, k, v, 1 / math.sqrt(d), c, o, ntsym_options=options))
                    try:
                        o.fill_(float("nan"))
                        f()
                    except Exception as exc:
                        print(f"  {text} causal={causal} {label} {options}: refused ({str(exc).splitlines()[0][:200]})")
                        continue
                    error = (o.float() - ref.float()).abs().max().item()
                    ms = interleaved({"x": f}, rounds=1)["x"][0]
                    print(f"  {text} causal={causal} {label} {options}: max error {error:.2e}, {ms:.4f} ms", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--shapes", nargs="*", default=("16,16,1024,128", "4,16,4096,128", "16,32,1024,64", "4,32,4096,64"))
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--forms", nargs="*", help="only these applications (labels of KERNELS)")
    parser.add_argument("--configs", nargs="*", help="BM,BN,warps,stages,desc(0/1)")
    parser.add_argument("--tune", action="store_true", help="each application as tuned (see ``tuned``)")
    args = parser.parse_args()
    dtype = getattr(torch, args.dtype)
    if args.tune:
        return tuned(args.shapes, dtype, args.forms)
    configs = tuple(tuple(int(x) for x in c.split(","))[:4] + (c.endswith(",1"),) for c in args.configs) if args.configs else CONFIGS
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, {args.dtype}")
    for text in args.shapes:
        b, h, s, d = (int(x) for x in text.split(","))
        q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=dtype) for _ in range(3))
        o = torch.empty_like(q)
        for causal in (False, True):
            ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
            fns = {"torch default": lambda c=causal: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=c)}
            for bm, bn, w, st, desc in configs:
                options = {"num_warps": w, "num_stages": st, "persistent": desc}
                for label, kernel in KERNELS.items():
                    if args.forms and label not in args.forms:
                        continue
                    name = f"{label} {bm}x{bn} w{w} s{st}" + (" desc" if desc else "")
                    f = (lambda kernel=kernel, bm=bm, bn=bn, options=options, c=causal: kernel(
                        q, k, v, 1 / math.sqrt(d), c, o, BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, ntsym_options=options))
                    try:
                        o.fill_(float("nan"))
                        f()
                    except Exception as exc:
                        print(f"  {name}: failed ({str(exc).splitlines()[0][:120]})")
                        continue
                    error = (o.float() - ref.float()).abs().max().item()
                    if not error < 2e-2:
                        print(f"  {name}: WRONG (max error {error})")
                        continue
                    fns[name] = f
            flops_table(f"{text} causal={causal} {args.dtype}", interleaved(fns, rounds=args.rounds), "torch default",
                        4 * b * h * s * s * d / (2 if causal else 1), spread=True)


if __name__ == "__main__":
    main()
