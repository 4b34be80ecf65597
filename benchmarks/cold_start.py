"""Cold start: a fixed list of (kernel, shape) pairs, each called once in a
fresh process with empty caches, for ntsym and for NineToothed running the
same kernel source.

    python -m benchmarks.cold_start [--impl ntsym,ninetoothed] [--out cold.json]
    python -m benchmarks.cold_start --quick --impl ntsym      # CPU: tiny shapes, interpreter

The kernels are the examples' (``examples/<task>.py``: add, softmax, rms_norm,
conv2d, mm, sdpa), written the NineToothed way, and two 3x3 poolings written
likewise (``benchmarks/cold_kernels``); under ``--impl ninetoothed`` the same
files load with ``import ntsym`` resolving to ``ninetoothed`` (as in
``benchmarks.bench``).  Each implementation runs in a process of its own, with
empty ntsym, Triton and NineToothed caches (fresh ``NTSYM_CACHE_DIR``,
``TRITON_CACHE_DIR`` and ``HOME``), and for each pair in order records:

- the wall time of loading the kernel's module (``make``; the first pair of a
  kernel only, and nothing where an earlier module imported it: conv2d imports
  mm) and of the first call (code generation, Triton compilation,
  tuning), synchronised;
- Triton compiles during the pair: calls of ``triton.compiler.compile``,
  counted by wrapping it wherever Triton's modules hold it (Triton 3.6 and 3.9
  alike; none under the interpreter, which compiles nothing);
- tuning searches: ``ntsym.stats().tunes`` for ntsym; for NineToothed the
  ``triton.autotune`` runs that time configurations (a key not cached yet) and
  its own ``AutoTuner``'s timings;
- whether the output matches a float32 torch reference.

Then a warm pass calls every pair again (``--warm-calls`` times), checks the
outputs once more and reports the median time per call.  Output: a table per
implementation, a comparison, and with ``--out`` the JSON of everything.
NineToothed needs a GPU (it asks Triton's driver for the device when it makes
a kernel): without one its pairs are reported as skipped, with the reason.
"""

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
KERNELS = Path(__file__).resolve().parent / "cold_kernels"
POOLING = ("max_pool2d", "avg_pool2d")

# (task, shapes of its input tensors): float16 on a GPU.
PAIRS = (
    [("add", ((n,), (n,))) for n in (1024, 65536, 1000003, 1 << 20, 1 << 24)]
    + [("softmax", (s,)) for s in ((128, 1000), (1024, 1024), (4096, 4096), (8, 32000), (2048, 3000))]
    + [("rms_norm", (s,)) for s in ((128, 768), (1024, 4096), (4096, 4096), (8192, 1024), (2, 8192))]
    + [("max_pool2d", (s,)) for s in ((2, 3, 18, 18), (4, 16, 48, 48), (8, 64, 96, 96), (2, 3, 222, 222),
                                      (4, 32, 57, 57))]
    + [("avg_pool2d", (s,)) for s in ((2, 3, 18, 18), (8, 64, 96, 96), (2, 3, 222, 222), (4, 32, 57, 57))]
    + [("conv2d", ((n, c, h, h), (k, c, 3, 3))) for n, c, h, k in (
        (2, 3, 32, 16), (1, 3, 224, 64), (4, 64, 56, 64), (8, 128, 28, 128), (4, 256, 14, 256),
        (4, 512, 14, 512))]
    + [("mm", ((m, k), (k, n))) for m, k, n in (
        (128, 128, 128), (256, 256, 256), (512, 512, 512), (1024, 1024, 1024), (2048, 2048, 2048),
        (4096, 4096, 4096), (4096, 1024, 4096), (1000, 1000, 1000))]
    + [("sdpa", ((b, h, s, d),) * 3) for b, h, s, d in (
        (1, 8, 128, 64), (2, 8, 256, 64), (2, 16, 512, 64), (1, 16, 1024, 64), (1, 16, 2048, 64),
        (1, 8, 1024, 128))]
)

# Tiny shapes for the CPU (Triton's interpreter), float32; none divides a block size.
QUICK_PAIRS = [
    ("add", ((1000,), (1000,))),
    ("softmax", ((7, 100),)),
    ("rms_norm", ((7, 100),)),
    ("max_pool2d", ((2, 3, 9, 12),)),
    ("avg_pool2d", ((2, 3, 9, 12),)),
    ("conv2d", ((2, 3, 9, 10), (5, 3, 3, 3))),
    ("mm", ((50, 40), (40, 30))),
    ("sdpa", ((1, 2, 40, 16),) * 3),
]


def parse(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--impl", default="ntsym,ninetoothed", help="comma-separated: ntsym, ninetoothed")
    parser.add_argument("--quick", action="store_true", help="tiny shapes on the CPU (interpreter), float32")
    parser.add_argument("--limit", type=int, default=None, help="only the first N pairs")
    parser.add_argument("--tasks", default=None, help="comma-separated: only these kernels' pairs (add, mm, ...)")
    parser.add_argument("--warm-calls", type=int, default=None, help="calls per pair in the warm pass")
    parser.add_argument("--out", default=None, help="write the results as JSON here")
    parser.add_argument("--budget", type=float, default=None,
                        help="seconds an implementation's process may run; past it the process is stopped and "
                             "the pairs done so far are reported (its cold pass marked unfinished)")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)  # internal: one impl, JSON here
    return parser.parse_args(argv)


def pairs(args):
    chosen = QUICK_PAIRS if args.quick else PAIRS
    if args.tasks:
        tasks = {t.strip() for t in args.tasks.split(",") if t.strip()}
        unknown = tasks - {task for task, _ in chosen}
        if unknown:
            raise SystemExit(f"--tasks: no pairs of {', '.join(sorted(unknown))}")
        chosen = [(task, shapes) for task, shapes in chosen if task in tasks]
    return list(chosen[: args.limit] if args.limit else chosen)


# --- the parent: one fresh process per implementation -------------------------------------------


def main(argv=None):
    args = parse(argv)
    if args.child:
        return child(args)
    impls = [i.strip() for i in args.impl.split(",") if i.strip()]
    results = {}
    for impl in impls:
        results[impl] = run_fresh(impl, argv if argv is not None else sys.argv[1:], args.budget)
    print_tables(results)
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))
        print(f"\nwrote {args.out}")
    failed = [impl for impl, r in results.items() if (r.get("error") and not r.get("unfinished")) or any(
        p["status"] == "WRONG" or p["status"] == "ERROR" for p in r.get("pairs", ()))]
    return 1 if failed and not all(results[i].get("skipped") for i in failed) else 0


def run_fresh(impl, argv, budget=None):
    """Run ``impl``'s pairs in a new process with empty caches; its results."""
    with tempfile.TemporaryDirectory(prefix=f"cold_{impl}_") as tmp:
        tmp = Path(tmp)
        env = dict(os.environ, NTSYM_CACHE_DIR=str(tmp / "ntsym"), TRITON_CACHE_DIR=str(tmp / "triton"),
                   HOME=str(tmp / "home"), PYTHONPATH=os.pathsep.join(
                       [str(REPO)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
        (tmp / "home").mkdir()
        out = tmp / "result.json"
        rest = _drop_values(argv, ("--impl", "--out", "--budget"))
        command = [sys.executable, "-m", "benchmarks.cold_start", *rest, "--impl", impl, "--child", str(out)]
        start = time.perf_counter()
        # The child's stderr passes through: a line per pair as it finishes.
        process = subprocess.Popen(command, cwd=REPO, env=env, text=True, stdout=subprocess.PIPE)
        try:
            process.communicate(timeout=budget)
            stopped = None
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            stopped = budget
        elapsed = time.perf_counter() - start
        if not out.exists():
            if stopped:
                return {"impl": impl, "process_s": elapsed, "unfinished": f"stopped by the {stopped:.0f} s budget",
                        "error": f"stopped after {stopped:.0f} s, before its first pair ended"}
            return {"impl": impl, "process_s": elapsed, "error": f"the process exited with {process.returncode}"}
        result = json.loads(out.read_text())  # written after every pair: what was done so far
        result["process_s"] = elapsed
        if stopped:
            result["unfinished"] = f"stopped by the {stopped:.0f} s budget"
            result["cold_s"] = elapsed  # a lower bound: the cold pass had not ended
            result["compiles"] = sum(p["compiles"] for p in result["pairs"])
            result["tunes"] = sum(p["tunes"] for p in result["pairs"])
        return result


def _drop_values(argv, options):
    kept, skip = [], False
    for a in argv:
        if skip:
            skip = False
            continue
        if a in options:
            skip = True
            continue
        if any(a.startswith(o + "=") for o in options):
            continue
        kept.append(a)
    return kept


# --- the child: one implementation, cold then warm ----------------------------------------------


def child(args):
    impl = args.impl
    if args.quick:
        os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported
    import torch

    counts = Counters()
    record = {"impl": impl, "quick": args.quick, "env": environment(impl), "pairs": []}
    if not args.quick and not torch.cuda.is_available():
        record.update(error="no GPU here: the full list runs on a GPU; --quick runs tiny shapes on the CPU")
        Path(args.child).write_text(json.dumps(record))
        return 0
    try:
        counts.install(impl)
    except Unavailable as e:
        record.update(skipped=True, error=str(e))
        Path(args.child).write_text(json.dumps(record))
        return 0
    device = "cpu" if args.quick else "cuda"
    dtype = torch.float32 if args.quick else torch.float16
    warm_calls = args.warm_calls or (2 if args.quick else 10)
    chosen = pairs(args)
    loaded = {}
    start = time.perf_counter()
    for task, shapes in chosen:
        pair = cold_pair(impl, task, shapes, loaded, counts, device, dtype)
        record["pairs"].append(pair)
        Path(args.child).write_text(json.dumps(record))  # kept if the process is stopped later
        print(f"{impl}: {_pair_name(pair)}: {pair['status']}, {pair['wall_s']:.2f} s, {pair['compiles']} compiles, "
              f"{pair['tunes']} tunes", file=sys.stderr, flush=True)
    record["cold_s"] = time.perf_counter() - start
    record["compiles"] = sum(p["compiles"] for p in record["pairs"])
    record["tunes"] = sum(p["tunes"] for p in record["pairs"])
    for p, (task, shapes) in zip(record["pairs"], chosen):
        if p["status"] == "ok":
            warm_pair(p, task, shapes, loaded, device, dtype, warm_calls)
    record["stats"] = counts.stats()
    Path(args.child).write_text(json.dumps(record))
    return 0


class Unavailable(Exception):
    """An implementation that cannot run here."""


class Counters:
    """Triton compiles and tuning searches, counted from the start of the process."""

    def __init__(self):
        import threading

        self.compiles = 0
        self.searches = 0
        self._stats = None
        self._lock = threading.Lock()  # tuning compiles candidates on several threads

    def install(self, impl):
        import triton  # noqa: F401
        import triton.compiler.compiler as compiler

        original = compiler.compile

        def compile(*args, **kwargs):
            with self._lock:
                self.compiles += 1
            return original(*args, **kwargs)

        for name, module in list(sys.modules.items()):
            if name.split(".")[0] == "triton" and getattr(module, "compile", None) is original:
                module.compile = compile
        self._count_autotune()
        if impl == "ntsym":
            self._count_ntsym()
        elif impl == "ninetoothed":
            self._count_ninetoothed()
        else:
            raise SystemExit(f"unknown implementation {impl!r} (ntsym, ninetoothed)")

    def _count_autotune(self):
        from triton.runtime import autotuner

        run = autotuner.Autotuner.run

        def counted(tuner, *args, **kwargs):
            before = len(tuner.cache)
            try:
                return run(tuner, *args, **kwargs)
            finally:
                self.searches += len(tuner.cache) > before

        autotuner.Autotuner.run = counted

    def _count_ntsym(self):
        import ntsym

        self._stats = ntsym.stats

    def _count_ninetoothed(self):
        try:
            from ninetoothed import auto_tuner
        except ImportError:
            raise Unavailable("ninetoothed is not installed") from None
        import triton

        try:
            triton.runtime.driver.active.get_current_device()
        except Exception as e:  # noqa: BLE001 - any failure means no device here
            raise Unavailable("NineToothed makes its kernels for the active GPU (it asks Triton's driver "
                              f"for the device) and there is none here ({type(e).__name__}: {e})") from None
        get = auto_tuner.AutoTuner._get_timings

        def counted(tuner, args, kwargs):
            if type(tuner)._make_arg_key(args, kwargs) not in tuner._timings:
                self.searches += 1
            return get(tuner, args, kwargs)

        auto_tuner.AutoTuner._get_timings = counted

    def stats(self):
        """ntsym's own counters (``ntsym.stats()``: compiles, tunes,
        candidates timed, launches), or None for NineToothed."""
        import dataclasses

        return None if self._stats is None else dataclasses.asdict(self._stats())

    def tunes(self):
        """Tuning searches so far."""
        return self.searches if self._stats is None else self._stats().tunes


def _loader(impl, task):
    from benchmarks import bench

    return bench.LOADERS[impl](task, KERNELS if task in POOLING else None)


def _inputs(task, shapes, device, dtype):
    from benchmarks import tasks as T

    if task in POOLING:
        import torch

        gen = torch.Generator(device="cpu").manual_seed(0)
        x = torch.randn(shapes[0], generator=gen).to(device=device, dtype=dtype)
        return (x,), {}
    return T.make_inputs(task, shapes, device, dtype)


def _reference(task, args, kwargs):
    import torch.nn.functional as F

    from benchmarks import tasks as T

    ref_args, ref_kwargs = T.upcast(args, kwargs)
    if task == "max_pool2d":
        return F.max_pool2d(ref_args[0], 3)
    if task == "avg_pool2d":
        return F.avg_pool2d(ref_args[0], 3)
    return T.REFERENCE_FUNCTIONS[task](*ref_args, **ref_kwargs)


def _check(task, out, args, kwargs, dtype):
    from benchmarks import bench
    from benchmarks import tasks as T

    atol, rtol = T.tolerance("add" if task in POOLING else task, dtype)
    return bench.compare(out, _reference(task, args, kwargs), atol, rtol, dtype)


def _sync(device):
    import torch

    if device == "cuda":
        torch.cuda.synchronize()


def cold_pair(impl, task, shapes, loaded, counts, device, dtype):
    """Load (once per task) and call ``task`` at ``shapes`` for the first time."""
    from benchmarks import bench

    rec = {"task": task, "shapes": [list(s) for s in shapes], "load_s": 0.0, "call_s": None, "status": "ok"}
    compiles, tunes = counts.compiles, counts.tunes()
    start = time.perf_counter()
    try:
        if task not in loaded:
            loaded[task] = _loader(impl, task)
            rec["load_s"] = time.perf_counter() - start
        fn, context = loaded[task]
        args, kwargs = _inputs(task, shapes, device, dtype)
        _sync(device)
        begin = time.perf_counter()
        with context():
            out = fn(*args, **kwargs)
        _sync(device)
        rec["call_s"] = time.perf_counter() - begin
        ok, rec["note"] = _check(task, out, args, kwargs, dtype)
        rec["status"] = "ok" if ok else "WRONG"
        rec["cold_ok"] = ok
    except bench.Unavailable as e:
        rec.update(status="skipped", note=str(e))
    except Exception as e:  # noqa: BLE001 - reported per pair
        rec.update(status="skipped" if impl == "ninetoothed" else "ERROR", note=bench._short(e))
    rec["wall_s"] = time.perf_counter() - start
    rec["compiles"], rec["tunes"] = counts.compiles - compiles, counts.tunes() - tunes
    return rec


def warm_pair(rec, task, shapes, loaded, device, dtype, calls):
    """Call the pair ``calls`` more times: the median time per call, and the check again."""
    fn, _ = loaded[task]
    args, kwargs = _inputs(task, shapes, device, dtype)
    times = []
    for _ in range(calls):
        _sync(device)
        start = time.perf_counter()
        out = fn(*args, **kwargs)
        _sync(device)
        times.append(time.perf_counter() - start)
    ok, note = _check(task, out, args, kwargs, dtype)
    rec["warm_ms"] = statistics.median(times) * 1e3
    rec["warm_ok"] = ok
    if not ok:
        rec["status"], rec["note"] = "WRONG", f"warm pass: {note}"


def environment(impl):
    from benchmarks import bench

    import platform

    import torch

    env = {"python": platform.python_version(), "torch": torch.__version__,
           "triton": bench._version("triton"), impl: bench._version(impl)}
    env["device"] = torch.cuda.get_device_name() if torch.cuda.is_available() and not os.environ.get(
        "TRITON_INTERPRET") else "cpu (Triton interpreter)"
    return env


# --- reporting -----------------------------------------------------------------------------------


def _pair_name(p):
    return f"{p['task']} " + " x ".join("(" + ", ".join(map(str, s)) + ")" for s in p["shapes"])


def print_tables(results):
    for impl, r in results.items():
        env = r.get("env", {})
        print(f"\n## {impl}: " + ", ".join(f"{k} {v}" for k, v in env.items()))
        if r.get("error"):
            print(f"not run: {r['error']}")
            continue
        print("\n| pair | status | load s | first call s | compiles | tunes | warm ms/call |")
        print("|---|---|---:|---:|---:|---:|---:|")
        for p in r["pairs"]:
            call = f"{p['call_s']:.3f}" if p["call_s"] is not None else "-"
            warm = f"{p['warm_ms']:.3f}" if "warm_ms" in p else "-"
            status = p["status"] if p["status"] == "ok" else f"{p['status']}: {p.get('note', '')}"
            print(f"| {_pair_name(p)} | {status} | {p['load_s']:.3f} | {call} | {p['compiles']} | {p['tunes']} "
                  f"| {warm} |")
    print("\n| implementation | pairs | matched (cold, warm) | wall s (cold pass) | process s | compiles | tunes |")
    print("|---|---:|---|---:|---:|---:|---:|")
    for impl, r in results.items():
        if r.get("error"):
            print(f"| {impl} | - | not run | - | - | - | - |")
            continue
        ps = r["pairs"]
        cold = sum(bool(p.get("cold_ok")) for p in ps)
        warm = sum(bool(p.get("warm_ok")) for p in ps)
        wall = f"> {r['cold_s']:.2f} ({r['unfinished']})" if r.get("unfinished") else f"{r['cold_s']:.2f}"
        print(f"| {impl} | {len(ps)} | {cold}, {warm} | {wall} | {r['process_s']:.2f} | "
              f"{r['compiles']} | {r['tunes']} |")
    _print_common(results)


def _print_common(results):
    """ntsym against NineToothed on the pairs both ran and matched (all of them, or
    those an unfinished run reached): cold seconds summed, and warm time per call."""
    if not all(i in results and not results[i].get("error") for i in ("ntsym", "ninetoothed")):
        return
    done = {i: {_pair_name(p): p for p in results[i]["pairs"] if p["status"] == "ok"}
            for i in ("ntsym", "ninetoothed")}
    common = [name for name in done["ninetoothed"] if name in done["ntsym"]]
    if not common:
        return
    cold = {i: sum(done[i][n]["wall_s"] for n in common) for i in done}
    print(f"\nOn the {len(common)} pairs both ran and matched: cold seconds ntsym {cold['ntsym']:.2f}, "
          f"NineToothed {cold['ninetoothed']:.2f}, ratio {cold['ntsym'] / cold['ninetoothed']:.3f}")
    print("\n| kernel | pairs | ntsym cold s | NineToothed cold s | ratio |")
    print("|---|---:|---:|---:|---:|")
    for task in dict.fromkeys(done["ntsym"][n]["task"] for n in common):
        names = [n for n in common if done["ntsym"][n]["task"] == task]
        a, b = (sum(done[i][n]["wall_s"] for n in names) for i in ("ntsym", "ninetoothed"))
        print(f"| {task} | {len(names)} | {a:.2f} | {b:.2f} | {a / b:.3f} |")
    warm = [done["ntsym"][n]["warm_ms"] / done["ninetoothed"][n]["warm_ms"] for n in common
            if done["ntsym"][n].get("warm_ms") and done["ninetoothed"][n].get("warm_ms")]
    if warm:
        print(f"warm time per call ntsym / NineToothed over {len(warm)} pairs: geometric mean "
              f"{math.exp(sum(map(math.log, warm)) / len(warm)):.3f}, largest {max(warm):.3f}")


if __name__ == "__main__":
    sys.exit(main())
