"""Part of the softmax's exponentials on the FMA units: at head dim 64 an
attention's ``exp2`` (the multi-function unit, 16 a clock per multiprocessor
on Hopper) takes about as long as its two products on the tensor cores.
Here a share of each block's scores goes through a cubic polynomial for
``2**f`` on ``[0, 1]`` and an exponent shift instead (relative error
1.5e-4, below the 16-bit rounding of ``p`` before the second product), the
rest through ``exp2``.  Interleaved ``do_bench`` rounds in one process, torch's
default SDPA beside them, every result checked against torch:

- ``ntsym exp2``: the example's application as tuned;
- ``ntsym all``: the same with every exponential of the scores through the
  polynomial (the running maxima's rescale keeps ``exp2``);
- ``triton exp2`` / ``half`` / ``all`` (non-causal only): a hand-written kernel
  with ``exp2``, the odd columns of each block through the polynomial
  (``reshape``, ``split``, ``join``; written when ntsym refused that form in an
  application, which it now follows: not measured in ntsym), or all of them;
  each at the fastest of ``TRITON_CONFIGS``.

    python -m benchmarks.lab.sdpa_exp_split [--shapes B,H,S,D ...] [--dtype bfloat16] [--tune]
    TRITON_INTERPRET=1 python -m benchmarks.lab.sdpa_exp_split --cpu
"""

import argparse
import math

import torch

import ntsym
import ntsym.language as ntl
import triton
import triton.language as tl
from benchmarks.lab._rounds import flops_table, interleaved
from examples import sdpa

ROUND = 12582912.0  # 1.5 * 2**23: adding it rounds a float of magnitude under 2**22 to an integer
ROUND_BITS = 0x4B400000  # its bits


def exp2_poly(x):
    """``2**x`` for ``x <= 0`` (``-inf`` gives 0) on the FMA units: ``x = j + f``
    with ``j = floor(x)``, ``2**f`` a cubic on ``[0, 1]``, ``j`` added to its
    exponent."""
    x = ntl.maximum(x, -127.0)
    t = (x - 0.5) + ROUND  # floor(x) in its low bits
    f = x - (t - ROUND)
    p = 1.0 + f * (0.6951461434364319 + f * (0.22756439447402954 + f * 0.07729916274547577))
    shift = (t.to(ntl.int32, bitcast=True) - ROUND_BITS) << 23
    return (p.to(ntl.int32, bitcast=True) + shift).to(ntl.float32, bitcast=True)


@triton.jit
def _poly(x):
    x = tl.maximum(x, -127.0)
    t = (x - 0.5) + 12582912.0
    f = x - (t - 12582912.0)
    p = 1.0 + f * (0.6951461434364319 + f * (0.22756439447402954 + f * 0.07729916274547577))
    shift = (t.to(tl.int32, bitcast=True) - 0x4B400000) << 23
    return (p.to(tl.int32, bitcast=True) + shift).to(tl.float32, bitcast=True)


@triton.jit
def _kernel(q_ptr, k_ptr, v_ptr, o_ptr, scale_log2, S, D: tl.constexpr,
            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, POLY: tl.constexpr):
    start = tl.program_id(0) * BLOCK_M
    head = tl.program_id(1).to(tl.int64)
    base = head * S * D
    rows = start + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, D)
    keys = tl.arange(0, BLOCK_N)
    q = tl.load(q_ptr + base + rows[:, None] * D + cols[None, :])
    acc = tl.zeros((BLOCK_M, D), dtype=tl.float32)
    m = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)
    l = tl.zeros((BLOCK_M,), dtype=tl.float32)
    for n in range(0, S, BLOCK_N):
        k = tl.load(k_ptr + base + (n + keys)[None, :] * D + cols[:, None])
        s = tl.dot(q, k) * scale_log2
        m_new = tl.maximum(m, tl.max(s, 1))
        x = s - m_new[:, None]
        if POLY == 0:
            p = tl.math.exp2(x)
        elif POLY == 1:
            even, odd = tl.split(tl.reshape(x, (BLOCK_M, BLOCK_N // 2, 2)))
            p = tl.reshape(tl.join(tl.math.exp2(even), _poly(odd)), (BLOCK_M, BLOCK_N))
        else:
            p = _poly(x)
        alpha = tl.math.exp2(m - m_new)
        l = l * alpha + tl.sum(p, 1)
        v = tl.load(v_ptr + base + (n + keys)[:, None] * D + cols[None, :])
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
        m = m_new
    tl.store(o_ptr + base + rows[:, None] * D + cols[None, :], (acc / l[:, None]).to(o_ptr.dtype.element_ty))


def triton_attention(q, k, v, scale, poly_mode, block_m, block_n, warps, stages):
    """A hand-written non-causal attention (whole blocks, power-of-two head
    dimension, ``(B, H, S, D)`` contiguous) with ``poly_mode``: 0 ``exp2``
    everywhere, 1 the odd columns of each block through the polynomial
    (``reshape``, ``split``, ``join``), 2 every column through it."""
    b, h, s, d = q.shape
    o = torch.empty_like(q)
    _kernel[(s // block_m, b * h)](q, k, v, o, scale * 1.4426950408889634, s, d, block_m, block_n, poly_mode,
                                   num_warps=warps, num_stages=stages)
    return o


# (BLOCK_M, BLOCK_N, warps, stages) tried for each hand-written form; the best is kept
TRITON_CONFIGS = ((128, 64, 4, 3), (128, 64, 8, 3), (128, 128, 8, 2), (128, 128, 8, 3), (64, 64, 4, 3),
                  (128, 64, 4, 4))


def _application(exp):
    def application(q, k, v, scale, is_causal, o):
        q_loaded = q
        scale_log2 = scale * 1.4426950408889634
        acc = ntl.zeros(o.shape, dtype=ntl.float32)
        m = ntl.full((q.shape[0],), float("-inf"), dtype=ntl.float32)
        l = ntl.zeros((q.shape[0],), dtype=ntl.float32)
        if not is_causal:
            for i in range(k.shape[0]):
                key = k[i].offsets(2)[None, :]
                s = ntl.dot(q_loaded, ntl.trans(k[i])) * scale_log2
                s = ntl.where(key < k.source.shape[2], s, float("-inf"))
                m_new = ntl.maximum(m, ntl.max(s, 1))
                # Past the keys' end p is 0 already; said again, as written when ntsym
                # did not follow lanes through a split.
                p = ntl.where((key < k.source.shape[2]) & (q.offsets(2)[:, None] < q.source.shape[2]), exp(s - m_new[:, None]), 0.0)
                alpha = ntl.exp2(m - m_new)
                acc = acc * alpha[:, None] + ntl.dot(p.to(v[i].dtype), v[i])
                l = l * alpha + ntl.sum(p, 1)
                m = m_new
        else:
            first = ntl.minimum(ntl.min(q.offsets(2), 0), k.source.shape[2]) // k[0].shape[0]
            last = ntl.minimum(ntl.max(q.offsets(2), 0) // k[0].shape[0] + 1, k.shape[0])
            for i in range(first):
                key = k[i].offsets(2)[None, :]
                s = ntl.dot(q_loaded, ntl.trans(k[i])) * scale_log2
                m_new = ntl.maximum(m, ntl.max(s, 1))
                p = ntl.where((key < k.source.shape[2]) & (q.offsets(2)[:, None] < q.source.shape[2]), exp(s - m_new[:, None]), 0.0)
                alpha = ntl.exp2(m - m_new)
                acc = acc * alpha[:, None] + ntl.dot(p.to(v[i].dtype), v[i])
                l = l * alpha + ntl.sum(p, 1)
                m = m_new
            for j in range(first, last):
                key = k[j].offsets(2)[None, :]
                s = ntl.dot(q_loaded, ntl.trans(k[j])) * scale_log2
                s = ntl.where(key < k.source.shape[2], s, float("-inf"))
                s = ntl.where(q.offsets(2)[:, None] >= key, s, float("-inf"))
                m_new = ntl.maximum(m, ntl.max(s, 1))
                p = ntl.exp2(s - m_new[:, None])
                alpha = ntl.exp2(m - m_new)
                acc = acc * alpha[:, None] + ntl.dot(p.to(v[j].dtype), v[j])
                l = l * alpha + ntl.sum(p, 1)
                m = m_new
        o = acc / l[:, None]  # noqa: F841

    return application


head = (None, None, None, {"constexpr": True, "upper_bound": 256, "power_of_two": True})
TENSORS = (ntsym.Tensor(4, shape_options=head), ntsym.Tensor(4, shape_options=head),
           ntsym.Tensor(4, shape_options=head), ntsym.Tensor(0), ntsym.Tensor(0, constexpr=True),
           ntsym.Tensor(4, shape_options=head))
KERNELS = {"ntsym exp2": ntsym.make(sdpa.arrangement, sdpa.application, TENSORS),
           "ntsym all": ntsym.make(sdpa.arrangement, _application(exp2_poly), TENSORS)}


def cpu_check():
    x = torch.linspace(-130.0, 0.0, 100001)
    x = torch.cat([x, torch.tensor([float("-inf"), -1e30, -3.0, -1.0, -0.5])])
    out = torch.empty_like(x)
    poly = ntsym.make(_flat_arrangement, exp2_poly_store, (ntsym.Tensor(1), ntsym.Tensor(1)))
    poly(x, out)
    exact = torch.exp2(x.double())
    rel = ((out.double() - exact).abs() / exact.clamp_min(1e-300)).where(exact > 2.0**-126, torch.zeros(()))
    print(f"polynomial 2**x on [-126, 0]: max relative error {rel.max().item():.2e}; "
          f"below 2**-127: max {out[exact <= 2.0**-126].abs().max().item():.2e}")
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, 70, 16) for _ in range(3))
    for causal in (False, True):
        ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=0.25)
        for label, kernel in KERNELS.items():
            o = torch.empty_like(q)
            kernel(q, k, v, 0.25, causal, o, BLOCK_SIZE_M=16, BLOCK_SIZE_N=16)
            print(f"causal={causal} {label}: max error {(o - ref).abs().max().item():.2e}")
    q, k, v = (torch.randn(1, 2, 64, 16) for _ in range(3))
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v)
    for mode in range(3):
        print(f"triton POLY={mode}: max error {(triton_attention(q, k, v, 0.25, mode, 16, 16, 4, 1) - ref).abs().max().item():.2e}")


def _flat_arrangement(a, b):
    return a.tile((1024,)), b.tile((1024,))


def exp2_poly_store(a, b):
    b = exp2_poly(a)  # noqa: F841


def _best_triton(q, k, v, d, ref, rounds):
    """Each hand-written form at its fastest configuration (one round to pick)."""
    best = {}
    for mode, label in enumerate(("triton exp2", "triton half", "triton all")):
        fns = {}
        for bm, bn, w, st in TRITON_CONFIGS:
            f = lambda mode=mode, bm=bm, bn=bn, w=w, st=st: triton_attention(  # noqa: E731
                q, k, v, 1 / math.sqrt(d), mode, bm, bn, w, st)
            try:
                error = (f().float() - ref.float()).abs().max().item()
            except Exception as exc:  # noqa: BLE001 - a configuration that does not fit
                print(f"  {label} {bm}x{bn} w{w} s{st}: failed ({str(exc).splitlines()[0][:120]})")
                continue
            if error < 2e-2:
                fns[f"{label} {bm}x{bn} w{w} s{st}"] = f
            else:
                print(f"  {label} {bm}x{bn} w{w} s{st}: WRONG (max error {error:.2e})")
        if fns:
            times = interleaved(fns, rounds=1)
            name = min(times, key=lambda n: times[n][0])
            best[name] = fns[name]
    return best


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--shapes", nargs="*", default=("16,32,1024,64", "4,32,4096,64", "16,16,1024,128",
                                                         "4,16,4096,128"))
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--forms", nargs="*", help="only these applications (labels of KERNELS)")
    parser.add_argument("--cpu", action="store_true")
    args = parser.parse_args()
    if args.cpu:
        return cpu_check()
    dtype = getattr(torch, args.dtype)
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, {args.dtype}; each application as tuned")
    for text in args.shapes:
        b, h, s, d = (int(x) for x in text.split(","))
        q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=dtype) for _ in range(3))
        o = torch.empty_like(q)
        for causal in (False, True):
            ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
            fns = {"torch default": lambda c=causal: torch.nn.functional.scaled_dot_product_attention(
                q, k, v, is_causal=c)}
            for label, kernel in KERNELS.items():
                if args.forms and label not in args.forms:
                    continue
                f = lambda kernel=kernel, c=causal: kernel(q, k, v, 1 / math.sqrt(d), c, o)  # noqa: E731
                try:
                    o.fill_(float("nan"))
                    f()
                except Exception as exc:  # noqa: BLE001 - reported, the others still run
                    print(f"  {label}: failed ({str(exc).splitlines()[0][:160]})")
                    continue
                error = (o.float() - ref.float()).abs().max().item()
                print(f"  {text} causal={causal} {label}: max error {error:.2e}", flush=True)
                if error < 2e-2:
                    fns[label] = f
            if not causal:
                fns.update(_best_triton(q, k, v, d, ref, args.rounds))
            flops_table(f"{text} causal={causal} {args.dtype}", interleaved(fns, rounds=args.rounds), "torch default",
                        4 * b * h * s * s * d / (2 if causal else 1), spread=True)


if __name__ == "__main__":
    main()
