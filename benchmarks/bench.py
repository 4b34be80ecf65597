# Over 600 lines: one command that checks and times every implementation of every task, and reports them.
"""Benchmark ntsym against hand-written Triton, NineToothed and torch on ten tasks.

    python -m benchmarks.bench [--tasks add,mm,...] [--impls ntsym,triton,...] [--sweep]
                               [--out DIR] [--precompile] [--cpu-smoke] [--dry-run]

Implementations of each task (each optional; a missing one is skipped with a note):

- ``ntsym``: ``examples/<task>.py`` of this repository, function ``<task>``;
- ``triton``: the hand-written, auto-tuned kernels of ``benchmarks/triton_baselines.py``;
- ``ninetoothed``: the same ``examples/<task>.py`` source run under the NineToothed package
  (``import ntsym`` resolves to ``ninetoothed`` while the file is loaded and first called);
- ``torch``: the torch operator (``benchmarks/tasks.py``).

Every implementation is first checked against a float32 reference computed from the same
inputs; one that fails the check is reported WRONG and not timed. Timing is
``triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")``, which flushes
the L2 cache before each run, in five rounds with the implementations interleaved; the
median of the rounds is reported. The same run measures the device's ceilings: memory
bandwidth from a 1 GiB device-to-device copy (bytes read + written over time) and compute
from a float16 ``torch.mm`` of 8192 x 8192 x 8192; each memory-bound case also times a
copy of its own bytes in its rounds.

Output: a markdown table on stdout and in ``<out>/results.md``, raw numbers in
``<out>/results.json``, and plots ``<out>/results.png`` (time relative to triton) and,
with ``--sweep``, ``<out>/sweep_mm.png`` and ``<out>/sweep_softmax.png`` when matplotlib
is importable.

``--cpu-smoke`` runs every available implementation on tiny shapes on the CPU through
Triton's interpreter, with the correctness checks and no timing. ``--dry-run`` only
prints the plan. The exit status is 1 when any implementation that ran was WRONG or
raised an error.
"""

import argparse
import contextlib
import datetime
import faulthandler
import functools
import importlib
import importlib.util
import json
import logging
import math
import os
import platform
import signal
import statistics
import subprocess
import sys
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
IMPLS = ("ntsym", "triton", "ninetoothed", "torch")
DO_BENCH = dict(warmup=25, rep=100, return_mode="median")
ROUNDS = 5  # do_bench runs per implementation, interleaved; the median is reported
UNSTABLE_SPREAD = 0.10  # rounds further apart than this (max - min over median) are listed
COPY_BYTES = 1 << 30  # bandwidth ceiling: a 1 GiB copy
MM_CEILING_SIZE = 8192  # compute ceiling: float16 torch.mm of this size, cubed


def log(*parts):
    print(*parts, file=sys.stderr, flush=True)


class Unavailable(Exception):
    """An implementation that is not there to run: reported as skipped, with the reason."""


# --- loading implementations --------------------------------------------------------------------

_SWAPPED = ("ntsym", "examples")


def _swapped_module_names():
    return [n for n in list(sys.modules) if any(n == p or n.startswith(p + ".") for p in _SWAPPED)]


@contextlib.contextmanager
def ninetoothed_as_ntsym():
    """Inside: ``import ntsym`` and ``import ntsym.language`` give NineToothed's modules.

    ``ntsym.*`` and ``examples.*`` modules already imported are set aside meanwhile (so an
    example that imports another one gets it under NineToothed too) and put back on exit.
    """
    import ninetoothed
    import ninetoothed.language

    saved = {name: sys.modules.pop(name) for name in _swapped_module_names()}
    sys.modules["ntsym"] = ninetoothed
    sys.modules["ntsym.language"] = ninetoothed.language
    try:
        yield
    finally:
        for name in _swapped_module_names():
            del sys.modules[name]
        sys.modules.update(saved)


def load_ntsym(task, examples_dir=None):
    """(function, context for its first call) of ``examples/<task>.py`` under ntsym."""
    if examples_dir is None:
        if not (EXAMPLES / f"{task}.py").exists():
            raise Unavailable(f"examples/{task}.py not found")
        if str(REPO) not in sys.path:
            sys.path.insert(0, str(REPO))
        module = importlib.import_module(f"examples.{task}")
    else:
        path = Path(examples_dir) / f"{task}.py"
        if not path.exists():
            raise Unavailable(f"{path} not found")
        module = _exec_file(path, f"_ntsym_examples_{task}")
    return _task_function(module, task), contextlib.nullcontext


def _exec_file(path, module_name):
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _task_function(module, task):
    fn = getattr(module, task, None)
    if fn is None:
        raise Unavailable(f"examples/{task}.py defines no function {task}")
    return fn


def load_ninetoothed(task, examples_dir=None):
    """(function, context for its first call) of ``examples/<task>.py`` under NineToothed."""
    path = Path(examples_dir or EXAMPLES) / f"{task}.py"
    if not path.exists():
        raise Unavailable(f"examples/{task}.py not found")
    try:
        import ninetoothed  # noqa: F401
    except ImportError:
        raise Unavailable("ninetoothed is not installed")
    with ninetoothed_as_ntsym():
        module = _exec_file(path, f"_ninetoothed_examples_{task}")
    return _task_function(module, task), ninetoothed_as_ntsym


def load_triton(task, examples_dir=None):
    from benchmarks import triton_baselines

    return triton_baselines.FUNCTIONS[task], contextlib.nullcontext


def load_torch(task, examples_dir=None):
    from benchmarks import tasks as T

    return T.TORCH_FUNCTIONS[task], contextlib.nullcontext


LOADERS = {"ntsym": load_ntsym, "triton": load_triton, "ninetoothed": load_ninetoothed, "torch": load_torch}


class Implementations:
    """Loads each (impl, task) once; remembers why one could not be loaded."""

    def __init__(self, examples_dir=None):
        self.examples_dir = examples_dir
        self._cache = {}

    def get(self, impl, task):
        key = (impl, task)
        if key not in self._cache:
            try:
                self._cache[key] = ("ok",) + LOADERS[impl](task, self.examples_dir)
            except Unavailable as exc:
                self._cache[key] = ("skipped", str(exc), None)
            except Exception as exc:
                # The system under test failing to load is an error; NineToothed failing
                # to run ntsym's example source is only noted.
                status = "skipped" if impl == "ninetoothed" else "ERROR"
                self._cache[key] = (status, f"loading failed: {_short(exc)}", None)
        return self._cache[key]


def _short(exc, limit=300):
    text = f"{type(exc).__name__}: {exc}".strip().replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --- running one case ---------------------------------------------------------------------------


def _synchronize(device):
    import torch

    if str(device).startswith("cuda"):
        torch.cuda.synchronize()


def compare(out, ref, atol, rtol, dtype=None):
    """(ok, note) for ``out`` against the float32 reference ``ref``; ``out`` must have ``dtype``."""
    import torch

    if not isinstance(out, torch.Tensor):
        return False, f"returned {type(out).__name__}, not a tensor"
    if dtype is not None and out.dtype != dtype:
        return False, f"dtype {out.dtype}, expected {dtype}"
    if tuple(out.shape) != tuple(ref.shape):
        return False, f"shape {tuple(out.shape)}, expected {tuple(ref.shape)}"
    diff = (out.float() - ref).abs()
    bad = ~(diff <= atol + rtol * ref.abs())  # also catches nan
    if bool(bad.any()):
        err = diff.nan_to_num(nan=float("inf")).max().item()
        return False, f"max abs error {err:.3g}, {int(bad.sum())} of {out.numel()} outside atol {atol}, rtol {rtol}"
    return True, f"max abs error {diff.max().item():.3g}"


class StickyCudaError(RuntimeError):
    """A CUDA error after which this process cannot launch anything more."""


def _is_sticky_cuda_error(exc):
    text = str(exc).lower()
    return any(s in text for s in ("illegal memory access", "illegal address", "device-side assert",
                                   "unspecified launch failure", "misaligned address"))


def run_case(task, shapes, impls, loaded, device, dtype, timing, sink=None):
    """Check, then (with ``timing``) time each implementation of ``task`` at ``shapes``.

    Returns a list of records (dicts), one per implementation; each record is also appended
    to ``sink`` as soon as it exists, so that a run stopped by a sticky CUDA error still
    reports what it measured.
    """
    import torch

    from benchmarks import tasks as T

    spec = T.TASKS[task]
    args, kwargs = T.make_inputs(task, shapes, device, dtype)
    ref_args, ref_kwargs = T.upcast(args, kwargs)
    ref = T.REFERENCE_FUNCTIONS[task](*ref_args, **ref_kwargs).float()
    del ref_args, ref_kwargs
    atol, rtol = T.tolerance(task, dtype)
    elem = torch.empty((), dtype=dtype).element_size()
    work = spec.work(shapes, elem)
    records = []
    to_time = []  # (record, function) of the implementations that passed the check
    for impl in impls:
        rec = dict(task=task, shape=T.format_shapes(shapes), shapes=[list(s) for s in shapes], impl=impl,
                   dtype=str(dtype).replace("torch.", ""), status=None, note="", ms=None,
                   work=work, unit=spec.unit, throughput=None, fraction_of_ceiling=None)
        records.append(rec)
        if sink is not None:
            sink.append(rec)
        status, fn_or_note, first_call = loaded.get(impl, task)
        if status != "ok":
            rec["status"], rec["note"] = status, fn_or_note
            log(f"  {task:8s} {impl:12s} {status}: {fn_or_note}")
            continue
        fn = fn_or_note
        try:
            started = time.perf_counter()
            with first_call():
                out = fn(*args, **kwargs)
            _synchronize(device)
            log(f"  {task:8s} {impl:12s} first call (compiling, tuning) {time.perf_counter() - started:.1f} s")
        except Exception as exc:
            if _is_sticky_cuda_error(exc):
                rec["status"], rec["note"] = "ERROR", f"call failed: {_short(exc)}"
                raise StickyCudaError(f"{task} {impl}: {_short(exc)}") from exc
            rec["status"] = "skipped" if impl == "ninetoothed" else "ERROR"
            rec["note"] = f"call failed: {_short(exc)}"
            log(f"  {task:8s} {impl:12s} {rec['status']}: {rec['note']}")
            if impl != "ninetoothed":
                log(traceback.format_exc(limit=6))
            continue
        ok, note = compare(out, ref, atol, rtol, dtype)
        del out
        rec["note"] = note
        if not ok:
            rec["status"] = "WRONG"
            log(f"  {task:8s} {impl:12s} WRONG: {note}")
            continue
        rec["status"] = "ok"
        if timing:
            to_time.append((rec, fn))
        else:
            log(f"  {task:8s} {impl:12s} ok ({note})")
    if to_time:
        _time_in_rounds(task, spec, to_time, args, kwargs, work, device)
    del args, kwargs, ref
    if str(device).startswith("cuda"):
        torch.cuda.empty_cache()
    return records


def _time_in_rounds(task, spec, to_time, args, kwargs, work, device):
    """Time each checked implementation ROUNDS times with do_bench, the
    implementations interleaved round by round (drifting clocks or a busy
    neighbour then touch all of them alike); a record's time is the median of
    its rounds.  Memory-bound tasks also time a device-to-device copy of the
    same bytes, the bandwidth that a kernel this size can reach as measured."""
    import torch
    import triton.testing

    runs = [(rec, functools.partial(fn, *args, **kwargs)) for rec, fn in to_time]
    copy_rec = None
    copy_elements = max(1, int(work) // 4)  # int16: read and written, 4 bytes each
    if not spec.compute_bound and str(device).startswith("cuda"):
        src = torch.empty(copy_elements, dtype=torch.int16, device=device).random_(-100, 100)
        dst = torch.empty_like(src)
        copy_rec = dict(rounds=[])
        runs.append((copy_rec, lambda: dst.copy_(src)))
    failed = set()
    for _ in range(ROUNDS):
        for rec, run in runs:
            if id(rec) in failed:
                continue
            try:
                ms = triton.testing.do_bench(run, **DO_BENCH)
            except Exception as exc:
                failed.add(id(rec))
                rec["status"], rec["note"], rec["ms"] = "ERROR", f"timing failed: {_short(exc)}", None
                if _is_sticky_cuda_error(exc):
                    raise StickyCudaError(f"{task} {rec.get('impl', 'copy')}: {_short(exc)}") from exc
                log(f"  {task:8s} {rec.get('impl', 'copy'):12s} ERROR: {rec['note']}")
                continue
            rec.setdefault("rounds", []).append(float(ms))
    copy_gbps = None
    if copy_rec and copy_rec["rounds"] and id(copy_rec) not in failed:
        copy_gbps = 4 * copy_elements / (statistics.median(copy_rec["rounds"]) * 1e-3) / 1e9
    scale = 1e12 if spec.compute_bound else 1e9
    for rec, _ in runs:
        if rec is copy_rec or id(rec) in failed:
            continue
        ms = statistics.median(rec["rounds"])
        rec["ms"] = ms
        rec["throughput"] = work / (ms * 1e-3) / scale
        if copy_gbps:
            rec["same_bytes_copy_GBps"] = copy_gbps
            rec["fraction_of_same_bytes_copy"] = rec["throughput"] / copy_gbps
        spread = (max(rec["rounds"]) - min(rec["rounds"])) / ms
        rec["spread"] = spread
        log(f"  {task:8s} {rec['impl']:12s} {ms:9.4f} ms  {rec['throughput']:9.1f} {spec.unit}"
            f"  (rounds {', '.join(f'{t:.4f}' for t in rec['rounds'])}; spread {100 * spread:.1f} %)")
    if copy_gbps:
        log(f"  {task:8s} {'copy':12s} same bytes: {copy_gbps:9.1f} GB/s")
    if str(device).startswith("cuda"):
        for rec, run in runs:
            if rec is not copy_rec and id(rec) not in failed:
                rec["host_ms"] = host_ms_per_call(run, rec["ms"])
                if rec["host_ms"] >= rec["ms"]:
                    log(f"  {task:8s} {rec['impl']:12s} host-bound: {rec['host_ms']:.4f} ms of host time a call")


def host_ms_per_call(run, device_ms, budget_ms=20.0):
    """The host's time of one call of ``run``: calls issued back to back
    without synchronising (as many as ``budget_ms`` of the measured
    ``device_ms`` allows, 10 to 200), the median of three batches.  Where it
    is at least the measured time, calls made one by one are bound by the
    host, and ``do_bench`` (which flushes the L2 between calls) reads the
    host's time wherever the host falls behind the flush and the kernel."""
    import torch

    calls = max(10, min(200, int(budget_ms / max(device_ms, 1e-3))))
    times = []
    for _ in range(3):
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(calls):
            run()
        times.append((time.perf_counter() - start) * 1e3 / calls)
        torch.cuda.synchronize()
    return statistics.median(times)


def host_bound(records):
    """The records whose host time a call (``host_ms``) is at least their measured time."""
    return [r for r in records if r.get("host_ms") is not None and r.get("ms") and r["host_ms"] >= r["ms"]]


HOST_BOUND_TITLE = ("Host-bound points (a call's host time at least its measured time: calls made one by one "
                    "wait for the host, and the reading may be the host's where it fell behind)")


# --- ceilings and environment -------------------------------------------------------------------


def _copy_ms(n_bytes):
    import torch
    import triton.testing

    src = torch.ones(n_bytes // 2, dtype=torch.float16, device="cuda")
    dst = torch.empty_like(src)
    return triton.testing.do_bench(lambda: dst.copy_(src), **DO_BENCH)


def _mm_ms(size):
    import torch
    import triton.testing

    a = torch.randn(size, size, dtype=torch.float16, device="cuda")
    b = torch.randn(size, size, dtype=torch.float16, device="cuda")
    return triton.testing.do_bench(lambda: torch.mm(a, b), **DO_BENCH)


def measure_ceilings():
    """The device's ceilings, measured with do_bench: memory bandwidth (GB/s) and compute (TFLOP/s)."""
    import torch

    ms_copy = _copy_ms(COPY_BYTES)
    ms_mm = _mm_ms(MM_CEILING_SIZE)
    torch.cuda.empty_cache()
    size = MM_CEILING_SIZE
    return {
        "bandwidth_GBps": 2 * COPY_BYTES / (ms_copy * 1e-3) / 1e9,
        "compute_TFLOPs": 2 * size**3 / (ms_mm * 1e-3) / 1e12,
        "copy_ms": ms_copy,
        "mm_ms": ms_mm,
        "bandwidth_method": "1 GiB device-to-device copy (dst.copy_(src)), bytes read + written",
        "compute_method": f"torch.mm float16 {size}x{size}x{size}, 2*{size}^3 FLOP",
    }


def _commit():
    """The checkout's commit, marked where tracked files differ from it (a copy
    of a working tree whose ``.git`` is older says so instead of naming a
    commit it does not hold).  The caller takes NTSYM_BENCH_COMMIT instead
    where it is set."""
    def git(*args):
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, timeout=10).stdout.strip()

    commit = git("rev-parse", "--short", "HEAD") or None
    if commit and git("status", "--porcelain", "--untracked-files=no"):
        commit += " + uncommitted changes"
    return commit


def _version(dist, module=None):
    try:
        from importlib.metadata import version

        return version(dist)
    except Exception:
        pass
    try:
        return getattr(importlib.import_module(module or dist), "__version__", "installed")
    except Exception:
        return "not installed"


def environment(device):
    import torch
    import triton

    env = {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "host": platform.node(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "ninetoothed": _version("ninetoothed"),
        "ntsym": _version("ntsym"),
        "device": str(device),
        "gpu": None,
        "driver": None,
        "commit": None,
    }
    try:
        env["commit"] = os.environ.get("NTSYM_BENCH_COMMIT") or _commit()
    except Exception:
        pass
    if str(device).startswith("cuda"):
        env["gpu"] = torch.cuda.get_device_name()
        try:
            line = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                                  capture_output=True, text=True, timeout=30).stdout.strip().splitlines()[0]
            name, driver = [p.strip() for p in line.split(",")[:2]]
            env["gpu"], env["driver"] = name, driver
        except Exception:
            pass
    return env


# --- reporting ----------------------------------------------------------------------------------


def _fmt(x):
    if x is None:
        return ""
    if abs(x) >= 100:
        return f"{x:.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    return f"{x:.3g}"


def _ms(x):
    return "" if x is None else f"{x:.4f}"


def _by_impl(records):
    return {r["impl"]: r for r in records}


def ratio(records, num, den):
    """Time ratio num/den for one case, None where either did not time."""
    r = _by_impl(records)
    a, b = r.get(num, {}).get("ms"), r.get(den, {}).get("ms")
    return a / b if a and b else None


def geomean(values):
    values = [v for v in values if v]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def add_fractions(records, ceilings):
    for rec in records:
        if rec["throughput"] is None or not ceilings:
            continue
        ceiling = ceilings["compute_TFLOPs"] if rec["unit"] == "TFLOP/s" else ceilings["bandwidth_GBps"]
        rec["fraction_of_ceiling"] = rec["throughput"] / ceiling


def group_cases(records):
    """[(task, shape), records] in order of first appearance."""
    cases = {}
    for rec in records:
        cases.setdefault((rec["task"], rec["shape"]), []).append(rec)
    return list(cases.items())


def markdown_report(env, ceilings, records, sweeps, timing):
    lines = ["# ntsym benchmark results", ""]
    lines += ["| | |", "| --- | --- |"]
    lines.append(f"| date | {env['date']} |")
    if env.get("gpu"):
        lines.append(f"| GPU | {env['gpu']} |")
        lines.append(f"| driver | {env.get('driver') or 'unknown'} |")
    else:
        lines.append(f"| device | {env['device']} (Triton interpreter)" + " |")
    lines.append(f"| python, torch, triton | {env['python']}, {env['torch']}, {env['triton']} |")
    lines.append(f"| ninetoothed | {env['ninetoothed']} |")
    if env.get("commit"):
        lines.append(f"| commit | {env['commit']} |")
    dtypes = sorted({r["dtype"] for r in records})
    lines.append(f"| dtype | {', '.join(dtypes)} |")
    if timing:
        lines.append("| timing | `triton.testing.do_bench(fn, warmup=25, rep=100, return_mode=\"median\")`, "
                     f"L2 flushed before each run; {ROUNDS} rounds, the implementations interleaved, "
                     "median of the rounds |")
    else:
        lines.append("| timing | none: correctness checks only |")
    if ceilings:
        lines.append(f"| bandwidth ceiling | {ceilings['bandwidth_GBps']:.0f} GB/s: {ceilings['bandwidth_method']} |")
        lines.append(f"| compute ceiling | {ceilings['compute_TFLOPs']:.0f} TFLOP/s: {ceilings['compute_method']} |")
    ratios = [ratio(recs, "ntsym", "triton") for _, recs in group_cases(records)]
    gm = geomean(ratios)
    n = len([r for r in ratios if r])
    if timing:
        lines.append(f"| geometric mean of ntsym/triton time | "
                     f"{_fmt(gm) if gm else 'n/a'} over {n} tasks (below 1: ntsym faster) |")
    lines.append("")
    lines.append("Throughput: TFLOP/s for mm, addmm, bmm, conv2d and sdpa (FLOP counts in "
                 "`benchmarks/tasks.py`), GB/s of device memory traffic for the others. "
                 "Ratios are of times: ntsym's time over the other's. \"Of same-bytes copy\": "
                 "throughput over that of a device-to-device copy moving the task's bytes, timed "
                 "the same way in the same rounds (what a kernel of this size can reach as measured: "
                 "do_bench's flush leaves the L2 full of dirty lines that the timed kernel writes back).")
    lines.append("")
    lines.append("## Results")
    lines.append("")
    lines.append("| task | shape | impl | status | ms | throughput | of ceiling | of same-bytes copy "
                 "| ntsym/triton | ntsym/ninetoothed |")
    lines.append("| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for (task, shape), recs in group_cases(records):
        r_tr = ratio(recs, "ntsym", "triton")
        r_nt = ratio(recs, "ntsym", "ninetoothed")
        for rec in recs:
            thr = f"{_fmt(rec['throughput'])} {rec['unit']}" if rec["throughput"] is not None else ""
            frac = f"{100 * rec['fraction_of_ceiling']:.0f}%" if rec["fraction_of_ceiling"] is not None else ""
            same = rec.get("fraction_of_same_bytes_copy")
            same = f"{100 * same:.0f}%" if same is not None else ""
            is_ntsym = rec["impl"] == "ntsym"
            lines.append(
                f"| {task} | {shape} | {rec['impl']} | {rec['status']} | {_ms(rec['ms'])} | {thr} | {frac} | {same} | "
                f"{_fmt(r_tr) if is_ntsym and r_tr else ''} | {_fmt(r_nt) if is_ntsym and r_nt else ''} |"
            )
    if timing:
        lines += ["", "## Summary (ms)", ""]
        lines.append("| task | " + " | ".join(IMPLS) + " | ntsym/triton | ntsym/ninetoothed |")
        lines.append("| --- |" + " ---: |" * (len(IMPLS) + 2))
        for (task, _), recs in group_cases(records):
            by = _by_impl(recs)
            cells = [_ms(by[i]["ms"]) if i in by and by[i]["ms"] else (by[i]["status"] if i in by else "") for i in IMPLS]
            r_tr, r_nt = ratio(recs, "ntsym", "triton"), ratio(recs, "ntsym", "ninetoothed")
            lines.append(f"| {task} | " + " | ".join(cells) + f" | {_fmt(r_tr) if r_tr else ''} | "
                         f"{_fmt(r_nt) if r_nt else ''} |")
    for name, sweep in (sweeps or {}).items():
        lines += ["", f"## Sweep: {name}", ""]
        lines += sweep_table(sweep)
    notes = [r for r in records + [r for s in (sweeps or {}).values() for r in s["records"]]
             if r["status"] != "ok" and r["note"]]
    if notes:
        lines += ["", "## Notes", ""]
        grouped = {}  # one line per (impl, status, note), listing the cases it applies to
        for r in notes:
            cases = grouped.setdefault((r["impl"], r["status"], r["note"]), [])
            if (r["task"], r["shape"]) not in cases:
                cases.append((r["task"], r["shape"]))
        for (impl, status, note), cases in grouped.items():
            where = ", ".join(f"{t} {shape}" for t, shape in cases) if len(cases) <= 2 else \
                ", ".join(dict.fromkeys(t for t, _ in cases))
            lines.append(f"- {impl} {status} ({where}): {note}")
    every = records + [r for s in (sweeps or {}).values() for r in s["records"]]
    unstable = [r for r in every if (r.get("spread") or 0) > UNSTABLE_SPREAD]
    if unstable:
        lines += ["", f"## Unstable timings (rounds spread over {100 * UNSTABLE_SPREAD:.0f} % of the median)", ""]
        for r in unstable:
            rounds = ", ".join(f"{t:.4f}" for t in r["rounds"])
            lines.append(f"- {r['task']} {r['shape']} {r['impl']}: {rounds} ms ({100 * r['spread']:.0f} %)")
    hosted = host_bound(every)
    if hosted:
        lines += ["", f"## {HOST_BOUND_TITLE}", ""]
        lines += [f"- {r['task']} {r['shape']} {r['impl']}: host {r['host_ms']:.4f} ms, measured {r['ms']:.4f} ms"
                  for r in hosted]
    return "\n".join(lines) + "\n"


def sweep_table(sweep):
    impls = [i for i in IMPLS if any(r["impl"] == i for r in sweep["records"])]
    unit = sweep["unit"]
    lines = [f"| {sweep['x_name']} | " + " | ".join(f"{i} ms ({unit})" for i in impls) + " | ntsym/triton |",
             "| ---: |" + " ---: |" * (len(impls) + 1)]
    for x, recs in zip(sweep["x"], sweep["cases"]):
        by = _by_impl(recs)
        cells = []
        for i in impls:
            r = by.get(i)
            if r is None:
                cells.append("")
            elif r["ms"] is None:
                cells.append(r["status"])
            else:
                cells.append(f"{r['ms']:.4f} ({_fmt(r['throughput'])})")
        r_tr = ratio(recs, "ntsym", "triton")
        lines.append(f"| {x} | " + " | ".join(cells) + f" | {_fmt(r_tr) if r_tr else ''} |")
    return lines


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        return plt
    except Exception:
        return None


def plot_results(records, path):
    plt = _pyplot()
    if plt is None:
        log("matplotlib is not importable: no plot")
        return False
    cases = [(task, recs) for (task, _), recs in group_cases(records) if _by_impl(recs).get("triton", {}).get("ms")]
    if not cases:
        return False
    impls = [i for i in IMPLS if any(_by_impl(recs).get(i, {}).get("ms") for _, recs in cases)]
    width = 0.8 / max(1, len(impls))
    fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(cases) + 2), 4.5))
    for k, impl in enumerate(impls):
        xs, ys = [], []
        for j, (task, recs) in enumerate(cases):
            ms = _by_impl(recs).get(impl, {}).get("ms")
            if ms:
                xs.append(j + (k - (len(impls) - 1) / 2) * width)
                ys.append(ms / _by_impl(recs)["triton"]["ms"])
        ax.bar(xs, ys, width, label=impl)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(cases)))
    ax.set_xticklabels([t for t, _ in cases], rotation=30, ha="right")
    ax.set_ylabel("time relative to hand-written Triton")
    ax.set_title("Time relative to triton (lower is faster)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def plot_sweep(sweep, path):
    plt = _pyplot()
    if plt is None:
        return False
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for impl in IMPLS:
        xs, ys = [], []
        for x, recs in zip(sweep["x"], sweep["cases"]):
            r = _by_impl(recs).get(impl)
            if r and r["throughput"] is not None:
                xs.append(x)
                ys.append(r["throughput"])
        if xs:
            ax.plot(xs, ys, marker="o", label=impl)
    ax.set_xscale("log", base=2)
    ax.set_xticks(sweep["x"])
    ax.set_xticklabels([str(x) for x in sweep["x"]])
    ax.minorticks_off()
    ax.set_xlabel(sweep["x_name"])
    ax.set_ylabel(sweep["unit"])
    ax.set_title(sweep["title"])
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


# --- main ---------------------------------------------------------------------------------------


def _parse_list(text, allowed, what):
    items = [t.strip() for t in text.split(",") if t.strip()]
    bad = [t for t in items if t not in allowed]
    if bad:
        raise SystemExit(f"unknown {what}: {', '.join(bad)} (choose from {', '.join(allowed)})")
    return items


def parse_args(argv=None):
    from benchmarks.tasks import TASK_NAMES  # imports torch, not triton

    p = argparse.ArgumentParser(prog="python -m benchmarks.bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--tasks", default=",".join(TASK_NAMES), help="comma-separated tasks (default: all ten)")
    p.add_argument("--impls", default=",".join(IMPLS), help="comma-separated implementations (default: all four)")
    p.add_argument("--sweep", action="store_true", help="also sweep mm (square sizes) and softmax (columns)")
    p.add_argument("--out", default=None, help="output folder (default: benchmarks/results; none for --cpu-smoke)")
    p.add_argument("--precompile", action="store_true",
                   help="compile the Triton baselines' and NineToothed's auto-tuning configs in parallel worker processes first")
    p.add_argument("--workers", type=int, default=None, help="worker processes for --precompile")
    p.add_argument("--cpu-smoke", action="store_true",
                   help="tiny shapes on the CPU through Triton's interpreter: correctness only, no timing")
    p.add_argument("--dtype", default=None, choices=("float16", "float32", "bfloat16"),
                   help="input dtype (default: float16; float32 with --cpu-smoke)")
    p.add_argument("--dry-run", action="store_true", help="print the plan and which implementations exist; run nothing")
    args = p.parse_args(argv)
    args.tasks = _parse_list(args.tasks, TASK_NAMES, "task")
    args.impls = _parse_list(args.impls, IMPLS, "implementation")
    return args


def dry_run(args):
    from benchmarks import tasks as T

    shapes_of = T.SMOKE_SHAPES if args.cpu_smoke else T.BENCH_SHAPES
    try:
        import ninetoothed  # noqa: F401

        nt = "installed"
    except Exception as exc:
        nt = f"not importable ({type(exc).__name__})"
    print(f"ninetoothed: {nt}")
    print("| task | shapes | work | impls |")
    print("| --- | --- | ---: | --- |")
    for task in args.tasks:
        spec = T.TASKS[task]
        shapes = shapes_of[task]
        work = spec.work(shapes, 2)
        work_text = f"{work / 1e9:.3g} GFLOP" if spec.compute_bound else f"{work / 1e6:.4g} MB (float16)"
        have = []
        for impl in args.impls:
            if impl in ("ntsym", "ninetoothed") and not (EXAMPLES / f"{task}.py").exists():
                have.append(f"{impl} (no examples/{task}.py)")
            else:
                have.append(impl)
        print(f"| {task} | {T.format_shapes(shapes)} | {work_text} | {', '.join(have)} |")
    return 0


def main(argv=None):
    args = parse_args(argv)
    if args.dry_run:
        return dry_run(args)
    if args.cpu_smoke:
        os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))

    import torch

    from benchmarks import tasks as T

    dtype = getattr(torch, args.dtype or ("float32" if args.cpu_smoke else "float16"))
    if args.cpu_smoke and dtype == torch.bfloat16:
        log("note: Triton's interpreter gets bfloat16 arithmetic wrong (numpy has no bfloat16); expect WRONG results")
    if args.cpu_smoke:
        device, timing, shapes_of = "cpu", False, T.SMOKE_SHAPES
        out = Path(args.out) if args.out else None
    else:
        if not torch.cuda.is_available():
            log("no CUDA device: use --cpu-smoke (interpreter, correctness only) or --dry-run")
            return 2
        device, timing, shapes_of = "cuda", True, T.BENCH_SHAPES
        out = Path(args.out or REPO / "benchmarks" / "results")
        # Tuning progress in the log, and where it was when a time limit stopped it.
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S"))
        logging.getLogger("ntsym").addHandler(handler)
        logging.getLogger("ntsym").setLevel(logging.INFO)
        faulthandler.register(signal.SIGTERM, all_threads=True, chain=True)
    # float32 references must be plain float32 (no TF32) to be references.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

    import triton  # noqa: F401  (after TRITON_INTERPRET is settled)

    precompiled = [i for i in ("triton", "ninetoothed") if i in args.impls]
    if args.precompile and not args.cpu_smoke and precompiled:
        from benchmarks.precompile import precompile

        jobs = [(t, shapes_of[t]) for t in args.tasks]
        if args.sweep:
            if "mm" in args.tasks:
                jobs += [("mm", ((n, n), (n, n))) for n in T.SWEEP_MM_SIZES]
            if "softmax" in args.tasks:
                jobs += [("softmax", ((T.SWEEP_SOFTMAX_ROWS, n),)) for n in T.SWEEP_SOFTMAX_COLS]
        try:
            precompile(jobs, str(dtype).replace("torch.", ""), args.workers, log=log, impls=precompiled)
        except Exception:
            log("precompile failed; going on without it\n" + traceback.format_exc(limit=3))

    env = environment(device)
    log(f"ntsym benchmarks on {env.get('gpu') or device}: torch {env['torch']}, triton {env['triton']}, "
        f"ninetoothed {env['ninetoothed']}")
    ceilings = None
    records, sweeps = [], {}
    loaded = Implementations()
    status = 0
    try:
        if timing:
            ceilings = measure_ceilings()
            log(f"ceilings: {ceilings['bandwidth_GBps']:.0f} GB/s, {ceilings['compute_TFLOPs']:.0f} TFLOP/s")
        for task in args.tasks:
            log(f"{task} {T.format_shapes(shapes_of[task])}")
            run_case(task, shapes_of[task], args.impls, loaded, device, dtype, timing, sink=records)
        if args.sweep and not args.cpu_smoke:
            sweep_specs = []
            if "mm" in args.tasks:
                sweep_specs.append(("mm", "M = N = K", list(T.SWEEP_MM_SIZES),
                                    lambda n: ((n, n), (n, n)), "mm, float16, square"))
            if "softmax" in args.tasks:
                sweep_specs.append(("softmax", f"columns ({T.SWEEP_SOFTMAX_ROWS} rows)", list(T.SWEEP_SOFTMAX_COLS),
                                    lambda n: ((T.SWEEP_SOFTMAX_ROWS, n),), f"softmax, float16, {T.SWEEP_SOFTMAX_ROWS} rows"))
            for task, x_name, xs, shapes_fn, title in sweep_specs:
                sweep = sweeps[task] = dict(x_name=x_name, x=[], cases=[], unit=T.TASKS[task].unit, title=title,
                                            records=[])
                for x in xs:
                    log(f"sweep {task} {x}")
                    case = []
                    sweep["x"].append(x)
                    sweep["cases"].append(case)
                    run_case(task, shapes_fn(x), args.impls, loaded, device, dtype, timing, sink=case)
                    sweep["records"].extend(case)
    except KeyboardInterrupt:
        log("interrupted: reporting what ran")
        status = 130
    except StickyCudaError as exc:
        log(f"the run stopped early: a CUDA error leaves this process unable to launch more ({exc}); "
            "reporting what ran. Run again with --tasks leaving that task out.")
        status = 1
    except Exception:
        log("the run stopped early: reporting what ran\n" + traceback.format_exc())
        status = 1
    finally:
        add_fractions(records + [r for s in sweeps.values() for r in s["records"]], ceilings)
        report = markdown_report(env, ceilings, records, sweeps, timing)
        print(report)
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
            (out / "results.md").write_text(report)
            gm = geomean([ratio(recs, "ntsym", "triton") for _, recs in group_cases(records)])
            raw = dict(environment=env, ceilings=ceilings, do_bench=DO_BENCH, results=records,
                       geomean_ntsym_over_triton=gm,
                       sweeps={k: {kk: vv for kk, vv in v.items() if kk != "cases"} for k, v in sweeps.items()})
            (out / "results.json").write_text(json.dumps(raw, indent=1))
            written = ["results.md", "results.json"]
            if timing and plot_results(records, out / "results.png"):
                written.append("results.png")
            for name, sweep in sweeps.items():
                if plot_sweep(sweep, out / f"sweep_{name}.png"):
                    written.append(f"sweep_{name}.png")
            log(f"wrote {', '.join(written)} to {out}")
    if status == 0 and any(r["status"] in ("WRONG", "ERROR") for r in records + [r for s in sweeps.values() for r in s["records"]]):
        status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
