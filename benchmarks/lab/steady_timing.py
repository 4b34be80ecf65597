"""Does a configuration's short timing (the tuner's first pass) rank it as a steady run does?

    python -m benchmarks.lab.steady_timing [--shapes B,H,S,D ...] [--dtype bfloat16] [--lengths]

Per shape and causal flag: ntsym's sdpa as tuned, the Triton baseline (tuned) and ntsym's
kernel at fixed configurations, each timed once short (``do_bench`` warm-up 5 ms, rep
20 ms: the tuner's first pass) and in 5 interleaved rounds of warm-up 25 ms, rep 100 ms.
``--lengths``: two fixed configurations at one shape, timed at growing warm-up and rep,
with the SM clock after each (``torch.cuda.clock_rate()``, where pynvml is installed)."""

import argparse
import statistics

import torch
from triton.testing import do_bench

from benchmarks.lab._rounds import interleaved

CONFIGS = ((64, 64, 4, 3, False), (128, 64, 8, 3, False), (128, 64, 8, 4, True), (128, 64, 8, 4, False),
           (128, 128, 8, 3, False), (64, 32, 4, 3, False))


def fixed(q, k, v, o, causal, bm, bn, warps, stages, advance):
    from examples import sdpa as ex

    options = {"num_warps": warps, "num_stages": stages, **({"advance": True} if advance else {})}
    return lambda: ex.kernel_pow2_head(q, k, v, q.shape[-1] ** -0.5, causal, o,
                                       BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, ntsym_options=options)


def short_and_steady(text, dtype):
    from benchmarks import triton_baselines as tb
    from examples import sdpa as ex

    b, h, s, d = (int(x) for x in text.split(","))
    q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=dtype) for _ in range(3))
    o = torch.empty_like(q)
    for causal in (False, True):
        ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
        fns = {"ntsym sdpa()": lambda c=causal: ex.sdpa(q, k, v, c), "baseline": lambda c=causal: tb.sdpa(q, k, v, c)}
        for cfg in CONFIGS:
            f = fixed(q, k, v, o, causal, *cfg)
            f()
            torch.testing.assert_close(o, ref, atol=2e-2, rtol=2e-2)
            fns[f"{cfg[0]}x{cfg[1]} w{cfg[2]} s{cfg[3]}{' adv' if cfg[4] else ''}"] = f
        for f in fns.values():
            f()
        short = {n: do_bench(f, warmup=5, rep=20, return_mode="median") for n, f in fns.items()}
        times = interleaved(fns, rounds=5)
        print(f"\n### {text} causal={causal} {str(dtype).split('.')[-1]}\n")
        print(f"baseline chose {tb._sdpa_kernel.best_config}\n")
        print("| impl | short ms | steady ms (5 rounds) | range |\n|---|---:|---:|---|")
        for n, ts in sorted(times.items(), key=lambda kv: statistics.median(kv[1])):
            print(f"| {n} | {short[n]:.4f} | {statistics.median(ts):.4f} | {min(ts):.4f}-{max(ts):.4f} |")


def lengths(text, dtype):
    b, h, s, d = (int(x) for x in text.split(","))
    q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=dtype) for _ in range(3))
    o = torch.empty_like(q)
    fns = {"64x64 w4 s3": fixed(q, k, v, o, False, 64, 64, 4, 3, False),
           "128x64 w8 s4 adv": fixed(q, k, v, o, False, 128, 64, 8, 4, True)}
    for f in fns.values():
        f()

    def clock():
        try:
            return torch.cuda.clock_rate()
        except Exception:  # no pynvml
            return None

    print(f"\n### {text} causal=False: do_bench at growing lengths\n")
    print("| config | warm-up, rep (ms) | round 1 | round 2 | round 3 | SM clock after (MHz) |\n|---|---|---:|---:|---:|---:|")
    for warmup, rep in ((5, 20), (5, 50), (25, 100), (100, 400)):
        for n, f in fns.items():
            ts = [do_bench(f, warmup=warmup, rep=rep, return_mode="median") for _ in range(3)]
            print(f"| {n} | {warmup}, {rep} | " + " | ".join(f"{t:.4f}" for t in ts) + f" | {clock()} |")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--shapes", nargs="*", default=("16,32,1024,64", "8,16,2048,128"))
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--lengths", action="store_true")
    args = parser.parse_args()
    dtype = getattr(torch, args.dtype)
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}")
    for text in args.shapes:
        (lengths if args.lengths else short_and_steady)(text, dtype)


if __name__ == "__main__":
    main()
