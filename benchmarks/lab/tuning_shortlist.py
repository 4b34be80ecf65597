"""A new shape's first call with the size class's choice (NTSYM_TUNE=class, the
default; ``--mode shortlist``: the class's shortlist timed) against a full search: per shape, the first call (tuning included; the first shape of
a class searches in full), the configurations timed, the choice and its steady time,
then a full search of the same shape, its choice, steady time and first-call time.
Run with an empty NTSYM_CACHE_DIR (the compiled kernels may be cached).

    python -m benchmarks.lab.tuning_shortlist [--mode class|shortlist]   # on a GPU
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
MODE = sys.argv[sys.argv.index("--mode") + 1] if "--mode" in sys.argv else "class"
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


def first_call(kernel, args):
    """(seconds, configurations timed, configuration chosen) of a call that tunes."""
    kernel.calls.calls.clear()
    kernel.calls.tuned.clear()
    before = tuning.timing.BENCHMARKS_RUN
    sync()
    start = time.perf_counter()
    kernel(*args)
    sync()
    (chosen,) = kernel.calls.tuned.values()
    return time.perf_counter() - start, tuning.timing.BENCHMARKS_RUN - before, chosen


def case(name, kernel, make_args, sizes):
    print(f"\n### {name}\n")
    print("| size | search | first call s | configs timed | choice | steady ms "
          "| full search's choice | its steady ms | its first call s |")
    print("|---|---|---:|---:|---|---:|---|---:|---:|")
    for n in sizes:
        args = make_args(n)
        os.environ["NTSYM_TUNE"] = MODE
        seconds, timed, chosen = first_call(kernel, args)
        search = "class" if timed == 0 else "shortlist" if timed <= tuning.shortlist.SHORTLIST else "full"
        row = [str(n), search, f"{seconds:.2f}", str(timed), tuning.describe(chosen),
               f"{steady_ms(kernel, args, chosen):.4f}"]
        if search != "full":
            os.environ["NTSYM_TUNE"] = "full"
            os.environ["NTSYM_RETUNE"] = "1"
            seconds, _, full = first_call(kernel, args)
            del os.environ["NTSYM_RETUNE"]
            row += [tuning.describe(full), f"{steady_ms(kernel, args, full):.4f}", f"{seconds:.2f}"]
        else:
            row += ["", "", ""]
        print("| " + " | ".join(row) + " |", flush=True)


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


if __name__ == "__main__":
    main()
