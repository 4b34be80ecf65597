"""Size sweeps: ntsym against the hand-written Triton baselines and torch over the ranges
NineToothed's own example benchmarks sweep, in float16 or bfloat16.

    python -m benchmarks.sweep --tasks add,silu,softmax,rms_norm,rope [--dtype bfloat16]
                               [--impls ntsym,triton,torch] [--out DIR] [--rounds 5]
                               [--precompile] [--no-cold] [--sizes 8,16] [--cpu-smoke] [--dry-run]

| task | swept | fixed |
| --- | --- | --- |
| add, silu | elements 2^18 ... 2^27 | |
| mm | M = N = K 2^3 ... 2^12 | |
| bmm | M = N = K 2^3 ... 2^12 | batch 4 |
| addmm | M = N = K 128 * (2 ... 32) | beta 0.5, alpha 2 |
| softmax, rms_norm | columns 2^5 ... 2^14 | 4096 rows |
| rope | sequence 2^5 ... 2^14 | batch 4, 48 heads, head dim 64 |
| sdpa | sequence 2^7 ... 2^14 (2^15, 2^16 with ``--sizes``) | batch 4, 32 heads, head dim 64 |
| conv2d | batch 2 ... 1024 (powers of two) | 512 channels in and out, 14 x 14, 3 x 3 |

Every point runs ``benchmarks.bench.run_case``: each implementation is checked against a
float32 reference, then timed with ``triton.testing.do_bench`` in ``--rounds`` rounds with
the implementations interleaved (median of the rounds).  Per task: a markdown table (ms,
TFLOP/s or GB/s, ntsym's time over triton's and over torch's), the goals checked point by
point (below), and a plot ``sweep_<task>_<dtype>.png`` (when matplotlib is importable);
``sweep.md`` and ``sweep.json`` under ``--out``.

Goals checked: from the first point where the Triton baseline takes at least ``BUSY_MS``
(the GPU is busy; below that the launch dominates) ntsym takes at most 1.00x triton's time;
the geometric mean of ntsym/triton over those points is at most 0.95; mm and bmm reach 95 %
of torch (cuBLAS) from 1024^3 up; below the threshold ntsym is no slower than torch.

``--cold`` (default on a GPU) also times each task's largest point's first call in a fresh
process with empty ntsym and Triton caches: import, compilation and tuning included.

Sweep points take time to tune (ntsym and the Triton baselines tune each new shape): run
one task group per command, e.g. ``--tasks add,silu,softmax,rms_norm,rope``, then
``--tasks mm,bmm,addmm``, then ``--tasks sdpa,conv2d``.

``--cpu-smoke`` runs each task's smallest point through Triton's interpreter, checks only.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

from benchmarks import bench

REPO = bench.REPO
IMPLS = ("ntsym", "triton", "ninetoothed", "torch")
DEFAULT_IMPLS = ("ntsym", "triton", "torch")
BUSY_MS = 0.02  # points where the Triton baseline takes less are launch-bound
GEOMEAN_GOAL = 0.95
CUBLAS_GOAL = 0.95  # mm, bmm: ntsym's throughput over torch's, from CUBLAS_FROM^3 up
CUBLAS_FROM = 1024


def _pow2(lo, hi):
    return [2**i for i in range(lo, hi + 1)]


class Sweep:
    """One task's sweep: ``x_name``, the swept values ``xs`` and ``shapes(x)``, the input shapes."""

    def __init__(self, task, x_name, xs, shapes):
        self.task, self.x_name, self.xs, self.shapes = task, x_name, list(xs), shapes


SWEEPS = {
    "add": Sweep("add", "elements", _pow2(18, 27), lambda n: ((n,), (n,))),
    "silu": Sweep("silu", "elements", _pow2(18, 27), lambda n: ((n,),)),
    "mm": Sweep("mm", "M = N = K", _pow2(3, 12), lambda n: ((n, n), (n, n))),
    "bmm": Sweep("bmm", "M = N = K (batch 4)", _pow2(3, 12), lambda n: ((4, n, n), (4, n, n))),
    "addmm": Sweep("addmm", "M = N = K", [128 * i for i in range(2, 33)], lambda n: ((n, n), (n, n), (n, n))),
    "softmax": Sweep("softmax", "columns (4096 rows)", _pow2(5, 14), lambda n: ((4096, n),)),
    "rms_norm": Sweep("rms_norm", "columns (4096 rows)", _pow2(5, 14), lambda n: ((4096, n),)),
    "rope": Sweep("rope", "sequence (4 x 48 heads x 64)", _pow2(5, 14),
                  lambda s: ((4, s, 48, 64), (s, 32), (s, 32))),
    "sdpa": Sweep("sdpa", "sequence (4 x 32 heads x 64)", _pow2(7, 14),
                  lambda s: ((4, 32, s, 64), (4, 32, s, 64), (4, 32, s, 64))),
    "conv2d": Sweep("conv2d", "batch (512 x 14 x 14, 3 x 3, 512 out)", _pow2(1, 10),
                    lambda n: ((n, 512, 14, 14), (512, 512, 3, 3))),
}
GROUPS = ("add,silu,softmax,rms_norm,rope", "mm,bmm,addmm", "sdpa,conv2d")


def log(*parts):
    print(*parts, file=sys.stderr, flush=True)


# --- running --------------------------------------------------------------------------------


class OutOfTime(Exception):
    """The ``--budget`` is spent: the points left are not run."""


def run_sweep(sweep, xs, impls, loaded, device, dtype, timing, deadline=None, records=None):
    """The records of every point of ``sweep`` at ``xs``, each with its ``x``, appended to
    ``records`` as each point ends; raises OutOfTime (with the next x) once ``deadline``
    (perf_counter) is past."""
    records = [] if records is None else records
    for x in xs:
        if deadline is not None and time.perf_counter() > deadline:
            raise OutOfTime(x)
        shapes = sweep.shapes(x)
        log(f"sweep {sweep.task} {sweep.x_name} = {x}: {' x '.join(str(tuple(s)) for s in shapes)}")
        case = []
        try:
            bench.run_case(sweep.task, shapes, impls, loaded, device, dtype, timing, sink=case)
        finally:
            for rec in case:
                rec["x"] = x
            records += case
    return records


def cold_first_call(task, impl, x, dtype_name, timeout=540):
    """Seconds of the first call of ``impl`` at ``task``'s point ``x`` in a fresh process with
    empty ntsym and Triton caches (import, compilation and tuning included), or an error text."""
    with tempfile.TemporaryDirectory(prefix="ntsym-cold-") as tmp:
        env = dict(os.environ, NTSYM_CACHE_DIR=os.path.join(tmp, "ntsym"), TRITON_CACHE_DIR=os.path.join(tmp, "triton"))
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
        cmd = [sys.executable, "-m", "benchmarks.sweep", "--first-call", f"{task}:{impl}:{x}", "--dtype", dtype_name]
        try:
            done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return None, f"over {timeout} s"
    for line in done.stdout.splitlines():
        if line.startswith("first-call "):
            return float(line.split()[1]), None
    return None, (done.stderr.strip().splitlines() or ["no output"])[-1][:200]


def _first_call_main(spec, dtype_name):
    """In the fresh process of ``cold_first_call``: import, make the inputs, call once, print."""
    start = time.perf_counter()
    task, impl, x = spec.split(":")
    import torch

    from benchmarks import tasks as T

    fn, context = bench.LOADERS[impl](task)
    args, kwargs = T.make_inputs(task, SWEEPS[task].shapes(int(x)), "cuda", getattr(torch, dtype_name))
    torch.cuda.synchronize()
    inputs = time.perf_counter()
    with context():
        fn(*args, **kwargs)
    torch.cuda.synchronize()
    end = time.perf_counter()
    print(f"first-call {end - inputs:.3f} (import, load and inputs before it: {inputs - start:.1f} s)")
    return 0


# --- goals and reporting --------------------------------------------------------------------


def _ms_of(recs, impl):
    return bench._by_impl(recs).get(impl, {}).get("ms")


def points(records):
    """[(x, records of that point)] in order."""
    out = {}
    for rec in records:
        out.setdefault(rec["x"], []).append(rec)
    return list(out.items())


def busy_threshold(records):
    """The first x from which the Triton baseline (torch where it is missing) takes at least BUSY_MS."""
    for x, recs in points(records):
        ms = _ms_of(recs, "triton") or _ms_of(recs, "torch")
        if ms is not None and ms >= BUSY_MS:
            return x
    return None


def goals(task, records):
    """(summary dict, [misses as text]) of one task's sweep."""
    threshold = busy_threshold(records)
    misses, busy_ratios = [], []
    started = False
    for x, recs in points(records):
        started = started or (threshold is not None and x == threshold)
        nt = _ms_of(recs, "ntsym")
        tr, to = _ms_of(recs, "triton"), _ms_of(recs, "torch")
        if nt is None:
            status = bench._by_impl(recs).get("ntsym", {}).get("status")
            if status:
                misses.append(f"{task} {x}: ntsym {status}")
            continue
        if started and tr:
            busy_ratios.append(nt / tr)
            if nt / tr > 1.0:
                misses.append(f"{task} {x}: ntsym/triton {nt / tr:.3f} (> 1.00)")
        if not started and to and nt > to:
            misses.append(f"{task} {x}: launch-bound, ntsym/torch {nt / to:.3f} (> 1.00)")
        if task in ("mm", "bmm") and x >= CUBLAS_FROM and to and to / nt < CUBLAS_GOAL:
            misses.append(f"{task} {x}: {100 * to / nt:.1f} % of cuBLAS (< {100 * CUBLAS_GOAL:.0f} %)")
    gm = bench.geomean(busy_ratios)
    if gm is not None and gm > GEOMEAN_GOAL:
        misses.append(f"{task}: geometric mean of ntsym/triton from {threshold} up {gm:.3f} (> {GEOMEAN_GOAL})")
    all_gm = bench.geomean([_ms_of(r, "ntsym") / _ms_of(r, "triton") for _, r in points(records)
                            if _ms_of(r, "ntsym") and _ms_of(r, "triton")])
    return dict(threshold=threshold, geomean_busy=gm, geomean_all=all_gm, points_busy=len(busy_ratios)), misses


def task_table(sweep, records):
    impls = [i for i in IMPLS if any(r["impl"] == i for r in records)]
    unit = records[0]["unit"] if records else ""
    head = [sweep.x_name] + [f"{i} ms" for i in impls] + [f"{i} {unit}" for i in impls] + ["ntsym/triton", "ntsym/torch"]
    lines = ["| " + " | ".join(head) + " |", "|" + " ---: |" * len(head)]
    for x, recs in points(records):
        by = bench._by_impl(recs)
        ms = [(bench._ms(by[i]["ms"]) if by[i]["ms"] is not None else by[i]["status"]) if i in by else "" for i in impls]
        thr = [bench._fmt(by[i]["throughput"]) if i in by else "" for i in impls]
        r_tr, r_to = bench.ratio(recs, "ntsym", "triton"), bench.ratio(recs, "ntsym", "torch")
        lines.append("| " + " | ".join([str(x)] + ms + thr + [f"{r_tr:.3f}" if r_tr else "", f"{r_to:.3f}" if r_to else ""])
                     + " |")
    return lines


def markdown(env, dtype_name, results, timing, cold):
    lines = [f"# ntsym size sweeps ({dtype_name})", "", "| | |", "| --- | --- |", f"| date | {env['date']} |"]
    if env.get("gpu"):
        lines += [f"| GPU | {env['gpu']} |", f"| driver | {env.get('driver') or 'unknown'} |"]
    else:
        lines.append(f"| device | {env['device']} (Triton interpreter) |")
    lines.append(f"| python, torch, triton | {env['python']}, {env['torch']}, {env['triton']} |")
    if env.get("commit"):
        lines.append(f"| commit | {env['commit']} |")
    if timing:
        lines.append(f"| timing | `triton.testing.do_bench(fn, warmup={bench.DO_BENCH['warmup']}, rep={bench.DO_BENCH['rep']}, "
                     f"return_mode=\"median\")`, L2 flushed before each run; {bench.ROUNDS} rounds, the "
                     "implementations interleaved, median of the rounds |")
        lines.append(f"| GPU-busy threshold | the first point where triton takes at least {BUSY_MS} ms |")
    else:
        lines.append("| timing | none: correctness checks only |")
    lines.append("")
    all_misses = []
    if timing:
        lines += ["## Summary", "",
                  "| task | busy from | points | geomean ntsym/triton (busy) | geomean ntsym/triton (all) | "
                  "cold first call, largest point |", "| --- | ---: | ---: | ---: | ---: | --- |"]
        for task, records in results.items():
            summary, misses = goals(task, records)
            all_misses += misses
            c = cold.get(task, {})
            cold_text = ", ".join(f"{impl} {v}" for impl, v in c.items())
            gm_b, gm_a = summary["geomean_busy"], summary["geomean_all"]
            lines.append(f"| {task} | {summary['threshold'] if summary['threshold'] is not None else ''} | "
                         f"{summary['points_busy']} | {f'{gm_b:.3f}' if gm_b else ''} | {f'{gm_a:.3f}' if gm_a else ''} | "
                         f"{cold_text} |")
        lines += ["", "## Points that miss a goal", ""]
        lines += [f"- {m}" for m in all_misses] or ["none"]
        lines.append("")
    for task, records in results.items():
        lines += [f"## {task}", ""] + task_table(SWEEPS[task], records) + [""]
    notes = [r for records in results.values() for r in records if r["status"] != "ok" and r["note"]]
    if notes:
        lines += ["## Notes", ""]
        lines += list(dict.fromkeys(f"- {r['task']} {r['x']} {r['impl']} {r['status']}: {r['note']}" for r in notes))
        lines.append("")
    unstable = [r for records in results.values() for r in records if (r.get("spread") or 0) > bench.UNSTABLE_SPREAD]
    if unstable:
        lines += [f"## Unstable timings (rounds spread over {100 * bench.UNSTABLE_SPREAD:.0f} % of the median)", ""]
        lines += [f"- {r['task']} {r['x']} {r['impl']}: " + ", ".join(f"{t:.4f}" for t in r["rounds"]) + " ms"
                  for r in unstable]
        lines.append("")
    hosted = bench.host_bound([r for records in results.values() for r in records])
    if hosted:
        lines += [f"## {bench.HOST_BOUND_TITLE}", ""]
        lines += [f"- {r['task']} {r['x']} {r['impl']}: host {r['host_ms']:.4f} ms, measured {r['ms']:.4f} ms"
                  for r in hosted]
        lines.append("")
    return "\n".join(lines), all_misses


def plot(sweep, records, dtype_name, path):
    plt = bench._pyplot()
    if plt is None or not records:
        return False
    fig, (ax, ax_ratio) = plt.subplots(1, 2, figsize=(12, 4.5))
    for impl in IMPLS:
        pts = [(x, bench._by_impl(r)[impl]["throughput"]) for x, r in points(records)
               if impl in bench._by_impl(r) and bench._by_impl(r)[impl]["throughput"] is not None]
        if pts:
            ax.plot(*zip(*pts), marker="o", label=impl)
    for other in ("triton", "torch"):
        pts = [(x, bench.ratio(r, "ntsym", other)) for x, r in points(records) if bench.ratio(r, "ntsym", other)]
        if pts:
            ax_ratio.plot(*zip(*pts), marker="o", label=f"ntsym / {other}")
    threshold = busy_threshold(records)
    for a in (ax, ax_ratio):
        a.set_xscale("log", base=2)
        a.set_xlabel(sweep.x_name)
        a.grid(True, alpha=0.3)
        if threshold is not None:
            a.axvline(threshold, color="grey", linestyle=":", linewidth=0.8)
    ax.set_yscale("log")  # the ranges span orders of magnitude
    ax.set_ylabel(records[0]["unit"])
    ax.set_title(f"{sweep.task}, {dtype_name}")
    ax.legend()
    ax_ratio.axhline(1.0, color="black", linewidth=0.8)
    ax_ratio.set_ylabel("time ratio (below 1: ntsym faster)")
    ax_ratio.set_title(f"{sweep.task}: ntsym's time over the others' (dotted: GPU busy from here)")
    ax_ratio.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def plot_from(path, out=None):
    """The plots of the sweeps in ``path`` (a sweep_*.json), written to ``out`` or beside it."""
    raw = json.loads(path.read_text())
    out = out or path.parent
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for task, records in raw["results"].items():
        name = f"sweep_{task}_{raw['dtype']}.png"
        if plot(SWEEPS[task], [r for r in records if r["status"] == "ok"] or records, raw["dtype"], out / name):
            written.append(name)
    log(f"wrote {', '.join(written) or 'no plot'} to {out}")
    return 0 if written else 1


# --- main -----------------------------------------------------------------------------------


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks.sweep", description=__doc__.split("\n\n")[0])
    p.add_argument("--tasks", default=GROUPS[0], help=f"comma-separated tasks (default {GROUPS[0]}; all: {','.join(SWEEPS)})")
    p.add_argument("--impls", default=",".join(DEFAULT_IMPLS), help="comma-separated implementations")
    p.add_argument("--dtype", default=None, choices=("float16", "bfloat16", "float32"),
                   help="input dtype (default float16; float32 with --cpu-smoke)")
    p.add_argument("--out", default=None, help="output folder for sweep.md, sweep.json and the plots ($OUT if set)")
    p.add_argument("--rounds", type=int, default=bench.ROUNDS, help="interleaved do_bench rounds per point")
    p.add_argument("--warmup", type=int, default=10, help="do_bench warmup (ms)")
    p.add_argument("--rep", type=int, default=50, help="do_bench rep (ms)")
    p.add_argument("--sizes", default=None, help="comma-separated x values instead of the task's range (one task)")
    p.add_argument("--every", type=int, default=1, help="take every n-th point of each range (the largest always)")
    p.add_argument("--precompile", action="store_true", help="compile the Triton baselines' configs in worker processes first")
    p.add_argument("--workers", type=int, default=None)
    p.add_argument("--budget", type=float, default=None,
                   help="seconds: start no point or cold call after this, and report what ran")
    p.add_argument("--no-cold", action="store_true", help="skip the cold first call of each task's largest point")
    p.add_argument("--cpu-smoke", action="store_true", help="each task's smallest point through Triton's interpreter, checks only")
    p.add_argument("--dry-run", action="store_true", help="print the points and their work; run nothing")
    p.add_argument("--plot-from", default=None,
                   help="draw the plots of a sweep_*.json written by an earlier run (next to it, or under --out)")
    p.add_argument("--first-call", default=None, help=argparse.SUPPRESS)  # task:impl:x, in cold_first_call's process
    args = p.parse_args(argv)
    args.tasks = bench._parse_list(args.tasks, tuple(SWEEPS), "task")
    args.impls = bench._parse_list(args.impls, IMPLS, "implementation")
    if args.sizes and len(args.tasks) != 1:
        raise SystemExit("--sizes needs exactly one task")
    return args


def points_of(args, task):
    if args.sizes:
        return [int(s) for s in args.sizes.split(",") if s.strip()]
    xs = SWEEPS[task].xs
    if args.cpu_smoke:
        return xs[:1]
    picked = xs[:: max(1, args.every)]
    return picked if picked[-1] == xs[-1] else picked + [xs[-1]]


def main(argv=None):
    args = parse_args(argv)
    if args.first_call:
        return _first_call_main(args.first_call, args.dtype or "float16")
    if args.plot_from:
        return plot_from(Path(args.plot_from), Path(args.out) if args.out else None)
    if args.dry_run:
        from benchmarks import tasks as T

        for task in args.tasks:
            spec = T.TASKS[task]
            for x in points_of(args, task):
                work = spec.work(SWEEPS[task].shapes(x), 2)
                text = f"{work / 1e9:.4g} GFLOP" if spec.compute_bound else f"{work / 1e6:.4g} MB (2-byte)"
                print(f"{task} {x}: {T.format_shapes(SWEEPS[task].shapes(x))} {text}")
        return 0
    if args.cpu_smoke:
        os.environ["TRITON_INTERPRET"] = "1"
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    import torch

    dtype_name = args.dtype or ("float32" if args.cpu_smoke else "float16")
    dtype = getattr(torch, dtype_name)
    timing = not args.cpu_smoke
    if timing and not torch.cuda.is_available():
        log("no CUDA device: use --cpu-smoke (interpreter, correctness only) or --dry-run")
        return 2
    device = "cuda" if timing else "cpu"
    out = args.out or os.environ.get("OUT")
    out = Path(out) if out else (None if args.cpu_smoke else REPO / "benchmarks" / "results" / "sweep")
    bench.ROUNDS = args.rounds
    bench.DO_BENCH = dict(warmup=args.warmup, rep=args.rep, return_mode="median")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    import triton  # noqa: F401  (after TRITON_INTERPRET is settled)

    from benchmarks import tasks as T

    if args.precompile and timing and "triton" in args.impls:
        from benchmarks.precompile import precompile

        jobs = [(t, SWEEPS[t].shapes(x)) for t in args.tasks for x in points_of(args, t)]
        try:
            precompile(jobs, dtype_name, args.workers, log=log, impls=("triton",))
        except Exception:
            log("precompile failed; going on without it\n" + traceback.format_exc(limit=3))
    env = bench.environment(device)
    log(f"ntsym sweeps on {env.get('gpu') or device}: torch {env['torch']}, triton {env['triton']}, {dtype_name}")
    loaded = bench.Implementations()
    results, cold, status = {}, {}, 0
    started = time.perf_counter()
    deadline = started + args.budget if args.budget else None

    def stop(signum, frame):  # a time limit's SIGTERM: report what ran
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        for task in args.tasks:
            results[task] = []
            xs = points_of(args, task)
            task_start = time.perf_counter()
            try:
                run_sweep(SWEEPS[task], xs, args.impls, loaded, device, dtype, timing, deadline, results[task])
            except OutOfTime as exc:
                log(f"{task}: out of time (--budget {args.budget} s) before {exc.args[0]}; reporting what ran")
                status = 3
                break
            log(f"{task}: {len(xs)} points in {time.perf_counter() - task_start:.0f} s")
            if timing and not args.no_cold:
                cold[task] = {}
                for impl in [i for i in ("ntsym", "triton") if i in args.impls]:
                    if deadline is not None and time.perf_counter() > deadline:
                        cold[task][impl] = "not run (out of time)"
                        continue
                    seconds, error = cold_first_call(task, impl, xs[-1], dtype_name)
                    cold[task][impl] = f"{seconds:.1f} s" if seconds is not None else f"failed ({error})"
                    log(f"{task} {impl}: cold first call at {xs[-1]}: {cold[task][impl]}")
    except KeyboardInterrupt:
        log("interrupted: reporting what ran")
        status = 130
    except bench.StickyCudaError as exc:
        log(f"the run stopped early: a CUDA error leaves this process unable to launch more ({exc})")
        status = 1
    except Exception:
        log("the run stopped early: reporting what ran\n" + traceback.format_exc())
        status = 1
    finally:
        signal.signal(signal.SIGTERM, previous)
        text, misses = markdown(env, dtype_name, results, timing, cold)
        print(text)
        log(f"sweeps took {time.perf_counter() - started:.0f} s")
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
            stem = f"sweep_{'_'.join(args.tasks)}_{dtype_name}" if len(args.tasks) < len(SWEEPS) else f"sweep_{dtype_name}"
            (out / f"{stem}.md").write_text(text)
            raw = dict(environment=env, dtype=dtype_name, do_bench=bench.DO_BENCH, rounds=bench.ROUNDS, busy_ms=BUSY_MS,
                       results=results, cold_first_call=cold, misses=misses,
                       summary={t: goals(t, r)[0] for t, r in results.items()})
            (out / f"{stem}.json").write_text(json.dumps(raw, indent=1, default=str))
            written = [f"{stem}.md", f"{stem}.json"]
            if timing:
                for task, records in results.items():
                    name = f"sweep_{task}_{dtype_name}.png"
                    if plot(SWEEPS[task], [r for r in records if r["status"] == "ok"] or records, dtype_name, out / name):
                        written.append(name)
            log(f"wrote {', '.join(written)} to {out}")
    if status == 0 and any(r["status"] in ("WRONG", "ERROR") for rs in results.values() for r in rs):
        status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
