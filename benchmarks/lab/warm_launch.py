"""Can a warm ntsym kernel be slow for a whole do_bench round, and why?

    python -m benchmarks.lab.warm_launch [--tasks rms_norm,softmax,add] [--rounds 30]
                                                 [--calls 20000] [--out DIR]

For each task at the paper's shape (float16), ntsym's example function and torch's, after
warming up, in one process:

1. Host time per call: ``--calls`` calls timed one by one with ``perf_counter_ns`` (the
   device synchronised every 32 calls, outside the timed part): percentiles and the calls
   over five times the median, with what happened meanwhile (below).
2. Rounds: ``--rounds`` rounds of ``triton.testing.do_bench(fn, warmup=25, rep=100,
   return_mode="median")``, ntsym and torch interleaved, as ``benchmarks/bench.py`` times
   them.  Per round: the median, the mean host time of a call inside do_bench, the
   process's CPU time over the round's wall time (below 1: the process waited for a CPU),
   Python's garbage collections and their time, the threads alive, and the kernel handle's
   counters (``CallCache.checked_launches``: calls that were validated again, a cache miss;
   ``jit_launches``: seen calls that went through Triton's JIT instead of the compiled
   binary).  Rounds over twice the median of all rounds are listed with those facts.
3. Host-bound threshold: ntsym's call with a busy wait of d µs before it, timed by do_bench:
   the host time per call from which do_bench's GPU-side timing grows.  do_bench records an
   event, calls ``fn``, records another, with an L2 flush (a 256 MB memset) before each:
   while the host issues a call faster than the GPU runs flush and kernel, the events time
   the kernel; once it is slower, the GPU waits between the events and they time the host.

A round ten times slower than the rest with no checked or JIT launch, no collection, and a
CPU-time ratio well below 1 is the host, not the kernel: something else took the CPU (the
ntsym call takes longer on the host than torch's, so it crosses the threshold of part 3
first).  A round with checked launches is a cache miss of the launcher, one with JIT
launches a guard of the direct launch that failed: both are bugs to fix.
"""

import argparse
import gc
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path

SHAPES = {
    "rms_norm": ((4096, 4096),),
    "softmax": ((4096, 4096),),
    "add": ((1 << 24,), (1 << 24,)),
}
DO_BENCH = dict(warmup=25, rep=100, return_mode="median")


class GcWatch:
    """Collections and the time they took, from gc.callbacks."""

    def __init__(self):
        self.count, self.seconds, self._start = 0, 0.0, None
        gc.callbacks.append(self._callback)

    def _callback(self, phase, info):
        if phase == "start":
            self._start = time.perf_counter()
        elif self._start is not None:
            self.count += 1
            self.seconds += time.perf_counter() - self._start
            self._start = None

    def snapshot(self):
        return self.count, self.seconds


class Timed:
    """``fn`` with its host time per call summed."""

    def __init__(self, fn):
        self.fn, self.calls, self.ns = fn, 0, 0

    def __call__(self):
        start = time.perf_counter_ns()
        out = self.fn()
        self.ns += time.perf_counter_ns() - start
        self.calls += 1
        return out

    def reset(self):
        self.calls, self.ns = 0, 0


def facts(cache, watch):
    count, seconds = watch.snapshot()
    times = os.times()
    return dict(checked=cache.checked_launches if cache else 0, jit=cache.jit_launches if cache else 0,
                gc=count, gc_s=seconds, cpu=times.user + times.system, wall=time.perf_counter(),
                threads=threading.active_count())


def delta(after, before):
    d = {k: after[k] - before[k] for k in ("checked", "jit", "gc", "gc_s", "cpu", "wall")}
    d["threads"] = after["threads"]
    d["cpu_ratio"] = d["cpu"] / d["wall"] if d["wall"] > 0 else None
    return d


def host_times(fn, calls, cache, watch):
    import torch

    times = []
    before = facts(cache, watch)
    for i in range(calls):
        if i % 32 == 0:
            torch.cuda.synchronize()
        start = time.perf_counter_ns()
        fn()
        times.append((time.perf_counter_ns() - start) / 1e3)
    torch.cuda.synchronize()
    after = facts(cache, watch)
    times_sorted = sorted(times)
    median = times_sorted[len(times) // 2]

    def pct(p):
        return times_sorted[min(len(times) - 1, int(p * len(times)))]

    over = [t for t in times if t > 5 * median]
    return dict(median_us=median, p90_us=pct(0.9), p99_us=pct(0.99), p999_us=pct(0.999), max_us=times_sorted[-1],
                over_5x=len(over), over_5x_us=sorted(over)[-10:], during=delta(after, before))


def rounds(impls, n_rounds, watch):
    import triton.testing

    out = {name: [] for name in impls}
    for r in range(n_rounds):
        for name, (timed, cache) in impls.items():
            timed.reset()
            before = facts(cache, watch)
            ms = triton.testing.do_bench(timed, **DO_BENCH)
            d = delta(facts(cache, watch), before)
            d.update(round=r, ms=ms, host_us=timed.ns / max(1, timed.calls) / 1e3, calls=timed.calls)
            out[name].append(d)
    return out


def host_bound(fn, waits_us):
    import triton.testing

    rows = []
    for wait in waits_us:
        def delayed(wait_ns=wait * 1000):
            end = time.perf_counter_ns() + wait_ns
            while time.perf_counter_ns() < end:
                pass
            return fn()

        rows.append((wait, triton.testing.do_bench(delayed, **DO_BENCH)))
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks.lab.warm_launch")
    p.add_argument("--tasks", default="rms_norm,softmax,add")
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--calls", type=int, default=20000)
    p.add_argument("--out", default=os.environ.get("OUT"))
    args = p.parse_args(argv)
    import torch

    from benchmarks import bench
    from benchmarks import tasks as T

    watch = GcWatch()
    lines = [f"# Warm launches: {torch.cuda.get_device_name()}, torch {torch.__version__}, "
             f"triton {__import__('triton').__version__}", ""]
    raw = {}
    for task in args.tasks.split(","):
        fn_nt, _ = bench.load_ntsym(task)
        module = sys.modules[f"examples.{task}"]
        cache = module.kernel.calls
        inputs, kwargs = T.make_inputs(task, SHAPES[task], "cuda", torch.float16)
        calls = {"ntsym": lambda: fn_nt(*inputs, **kwargs),
                 "torch": lambda: T.TORCH_FUNCTIONS[task](*inputs, **kwargs)}
        for fn in calls.values():
            for _ in range(3):
                fn()
        torch.cuda.synchronize()
        print(f"{task}: warm", file=sys.stderr, flush=True)
        host = {name: host_times(fn, args.calls, cache if name == "ntsym" else None, watch) for name, fn in calls.items()}
        rs = rounds({name: (Timed(fn), cache if name == "ntsym" else None) for name, fn in calls.items()}, args.rounds, watch)
        bound = host_bound(calls["ntsym"], (0, 10, 25, 50, 100, 200, 400))
        raw[task] = dict(host=host, rounds=rs, host_bound=bound)

        lines += [f"## {task} {T.format_shapes(SHAPES[task])} float16", "",
                  "| impl | host µs median | p90 | p99 | p99.9 | max | calls > 5x median | checked | JIT | "
                  "collections (s) |", "| --- |" + " ---: |" * 9]
        for name, h in host.items():
            d = h["during"]
            lines.append(f"| {name} | {h['median_us']:.1f} | {h['p90_us']:.1f} | {h['p99_us']:.1f} | "
                         f"{h['p999_us']:.1f} | {h['max_us']:.0f} | {h['over_5x']} | {d['checked']} | {d['jit']} | "
                         f"{d['gc']} ({d['gc_s']:.3f}) |")
        lines += ["", "| impl | rounds | median of rounds ms | min | max | host µs/call (median round) | "
                  "slow rounds (> 2x median) |", "| --- |" + " ---: |" * 6]
        slow_all = []
        for name, rows in rs.items():
            ms = [r["ms"] for r in rows]
            med = statistics.median(ms)
            slow = [r for r in rows if r["ms"] > 2 * med]
            slow_all += [(name, r) for r in slow]
            lines.append(f"| {name} | {len(rows)} | {med:.4f} | {min(ms):.4f} | {max(ms):.4f} | "
                         f"{statistics.median(r['host_us'] for r in rows):.1f} | {len(slow)} |")
        for name, r in slow_all:
            lines.append(f"\n- slow round {r['round']} of {name}: {r['ms']:.4f} ms, host {r['host_us']:.1f} µs/call "
                         f"over {r['calls']} calls, CPU/wall {r['cpu_ratio']:.2f}, checked {r['checked']}, "
                         f"JIT {r['jit']}, collections {r['gc']} ({r['gc_s']:.3f} s), threads {r['threads']}")
        lines += ["", "| busy wait before the ntsym call, µs | do_bench ms |", "| ---: | ---: |"]
        lines += [f"| {w} | {ms:.4f} |" for w, ms in bound]
        lines.append("")
        torch.cuda.empty_cache()
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        Path(args.out, "warm_launch.md").write_text(text)
        Path(args.out, "warm_launch.json").write_text(json.dumps(raw, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
