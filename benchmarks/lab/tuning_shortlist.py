"""A new shape's first call under each tuning mode against a full search of
the same shape.  Per shape of a size class already searched: the class's
choice untimed (``NTSYM_TUNE=class``), the class's shortlist timed
(``shortlist``, the default) with its first-call seconds, and a full search
(``full``) with its; the steady time of each one's choice.  The first shape
of a class searches in full (its row says so).  The full searches made for
comparison do not replace the class's shortlist: every shape of a class is
compared against the shortlist of the class's first shape, as a process
would see it.

    python -m benchmarks.lab.tuning_shortlist            # on a GPU
    NTSYM_TUNE_IN_INTERPRETER=1 python -m benchmarks.lab.tuning_shortlist --cpu
"""
import os
import sys
import time

import torch

import ntsym  # noqa: F401  (before triton)
from ntsym_codegen import tuning
from examples import mm, sdpa

CPU = "--cpu" in sys.argv
DEVICE = "cpu" if CPU else "cuda"


def sync():
    if not CPU:
        torch.cuda.synchronize()


def as_call(config):
    """The keyword arguments that launch ``config``."""
    return dict(config.meta), {"num_warps": config.num_warps, "num_stages": config.num_stages,
                               "persistent": config.persistent, "advance": config.advance}


def steady_ms(kernel, args, config):
    if CPU:
        return float("nan")
    from triton.testing import do_bench

    meta, options = as_call(config)
    return min(do_bench(lambda: kernel(*args, **meta, ntsym_options=options), warmup=25, rep=100) for _ in range(3))


def first_call(kernel, args, mode):
    """(seconds, configurations timed, configuration chosen) of a call that
    tunes under ``NTSYM_TUNE=mode`` (``full`` searches again)."""
    kernel.calls.calls.clear()
    kernel.calls.tuned.clear()
    os.environ["NTSYM_TUNE"] = mode
    if mode == "full":
        os.environ["NTSYM_RETUNE"] = "1"
    before = tuning.timing.BENCHMARKS_RUN
    try:
        sync()
        start = time.perf_counter()
        kernel(*args)
        sync()
    finally:
        os.environ.pop("NTSYM_RETUNE", None)
    (chosen,) = kernel.calls.tuned.values()
    return time.perf_counter() - start, tuning.timing.BENCHMARKS_RUN - before, chosen


RESULTS = []


def case(name, kernel, make_args, sizes):
    print(f"\n### {name}\n")
    print("| size | class: choice | steady ms | shortlist: first call s | timed | choice | steady ms "
          "| full: first call s | timed | choice | steady ms | class / full | shortlist / full |")
    print("|---|---|---:|---:|---:|---|---:|---:|---:|---|---:|---:|---:|")
    for n in sizes:
        args = make_args(n)
        _, timed, class_choice = first_call(kernel, args, "class")
        if timed:  # the class's first shape: that was its full search
            ms = steady_ms(kernel, args, class_choice)
            print(f"| {n} | (first of its class: a full search of {timed}) | | | | | | | | "
                  f"{tuning.describe(class_choice)} | {ms:.4f} | | |", flush=True)
            continue
        short_s, short_timed, short = first_call(kernel, args, "shortlist")
        classes = dict(kernel.calls.classes)
        full_s, full_timed, full = first_call(kernel, args, "full")
        kernel.calls.classes.clear()
        kernel.calls.classes.update(classes)  # the class keeps its first shape's shortlist
        times = [steady_ms(kernel, args, c) for c in (class_choice, short, full)]
        RESULTS.append((name, n, *times))
        print(f"| {n} | {tuning.describe(class_choice)} | {times[0]:.4f} | {short_s:.2f} | {short_timed} "
              f"| {tuning.describe(short)} | {times[1]:.4f} | {full_s:.2f} | {full_timed} | {tuning.describe(full)} "
              f"| {times[2]:.4f} | {times[0] / times[2]:.3f} | {times[1] / times[2]:.3f} |", flush=True)


def mm_args(n):
    a = torch.randn(n, n, device=DEVICE, dtype=torch.float32 if CPU else torch.float16)
    return a, torch.randn_like(a), torch.empty_like(a)


def sdpa_args(s):
    batch, heads, dtype = (1, 1, torch.float32) if CPU else (4, 32, torch.bfloat16)
    q, k, v = (torch.randn(batch, heads, s, 64, device=DEVICE, dtype=dtype) for _ in range(3))
    return q, k, v, 0.125, False, torch.empty_like(q)


def main():
    print(torch.cuda.get_device_name() if not CPU else "CPU (interpreter)", torch.__version__)
    if CPU:
        case("mm", mm.kernel, mm_args, (20, 24, 40))
        case("sdpa", sdpa.kernel_pow2_head, sdpa_args, (40, 44))
    else:
        case("mm fp16", mm.kernel, mm_args, (2304, 2560, 3072, 2816, 1600, 1280, 1536, 1100))
        case("sdpa bf16, batch 4, 32 heads, d 64, non-causal", sdpa.kernel_pow2_head, sdpa_args, (3100, 3500, 4000, 2000, 1600))
    if RESULTS:
        print("\n| mode | shapes | within 3 % of full | worst (time / full's) |")
        print("|---|---:|---:|---:|")
        for column, mode in ((2, "class"), (3, "shortlist")):
            ratios = [r[column] / r[4] for r in RESULTS]
            print(f"| {mode} | {len(ratios)} | {sum(x <= 1.03 for x in ratios)} | {max(ratios):.3f} |")


if __name__ == "__main__":
    main()
