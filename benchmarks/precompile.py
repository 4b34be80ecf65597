"""Warm the Triton compile cache of the comparison implementations in parallel worker processes.

Triton's auto-tuner compiles every config of a kernel, one after the other, in the
process that calls it: the hand-written baselines' dozens of configs, and
NineToothed's hundred and more per GEMM kernel (its block sizes range over all powers
of two its size limit allows).  Here each (implementation, task, kernel, config) job
runs in a worker of a ``spawn`` process pool with that kernel restricted to the one
config, so the compiled binaries land in the shared ``TRITON_CACHE_DIR``; the main
process then auto-tunes with the binaries already on disk.  Best effort: any failure
is reported and the benchmark goes on without it.  (ntsym compiles its own candidates
side by side in threads as it tunes: ``ntsym_codegen.tuning.compile_ahead``.)
"""

import multiprocessing
import os
import sys
import time
import traceback
from concurrent.futures import ProcessPoolExecutor, TimeoutError, as_completed

_INPUTS = {}  # per worker: (task, shapes) -> (args, kwargs)
_NINETOOTHED = {}  # per worker: task -> (function, context, tuners)


def ninetoothed_tuners(fn):
    """The Triton auto-tuners behind the NineToothed kernels that an example's function uses."""
    import triton

    tuners = []
    for value in list(fn.__globals__.values()):
        source = getattr(value, "_source", None)
        if type(value).__name__ == "_Handle" and source in sys.modules:
            module = vars(sys.modules[source])
            tuners += [v for v in module.values() if isinstance(v, triton.runtime.Autotuner)]
    return tuners


def _restrict(tuner, index):
    if not hasattr(tuner, "_all_configs"):
        tuner._all_configs = list(tuner.configs)
    tuner.configs = [tuner._all_configs[min(index, len(tuner._all_configs) - 1)]]


def _job(impl, task, shapes, kernel_name, config_index, dtype_name, device="cuda"):
    import torch

    from benchmarks import tasks as T

    key = (task, shapes)
    if key not in _INPUTS:
        _INPUTS.clear()  # one input set at a time
        _INPUTS[key] = T.make_inputs(task, shapes, device, getattr(torch, dtype_name))
    args, kwargs = _INPUTS[key]
    start = time.time()
    if impl == "triton":
        from benchmarks import triton_baselines as tb

        _restrict(getattr(tb, kernel_name), config_index)
        tb.FUNCTIONS[task](*args, **kwargs)
    else:
        if task not in _NINETOOTHED:
            from benchmarks.bench import load_ninetoothed

            fn, context = load_ninetoothed(task)
            _NINETOOTHED[task] = fn, context, ninetoothed_tuners(fn)
        fn, context, tuners = _NINETOOTHED[task]
        for tuner in tuners:
            _restrict(tuner, config_index)
        with context():
            fn(*args, **kwargs)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    return time.time() - start


def default_cache_dir():
    return os.environ.get("TRITON_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".triton", "cache")


def _stop(pool):
    """Cancel what has not started and end the pool's worker processes (started here)."""
    if pool is None:
        return
    processes = list(getattr(pool, "_processes", {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        process.join(timeout=10)


def _ninetoothed_config_count(task, log):
    """Configs of the largest auto-tuner behind ``examples/<task>.py`` under NineToothed (0: none)."""
    from benchmarks.bench import Unavailable, load_ninetoothed

    try:
        fn, _ = load_ninetoothed(task)
    except Unavailable:
        return 0
    except Exception as exc:
        log(f"precompile: {task} does not load under NineToothed: {type(exc).__name__}: {str(exc)[:200]}")
        return 0
    return max((len(t.configs) for t in ninetoothed_tuners(fn)), default=0)


def precompile(jobs, dtype_name="float16", workers=None, log=print, device="cuda", timeout=600,
               impls=("triton",)):
    """Run ``jobs`` [(task, shapes)] through the configs of ``impls`` ("triton": the
    hand-written baselines, "ninetoothed") in a spawn pool.

    Gives up after ``timeout`` seconds. Returns (jobs, jobs failed or not done, seconds).
    """
    import torch

    from benchmarks import tasks as T
    from benchmarks import triton_baselines as tb

    os.environ["TRITON_CACHE_DIR"] = default_cache_dir()  # the workers inherit it
    start = time.time()
    work = []
    for task, shapes in jobs:
        shapes = tuple(tuple(s) for s in shapes)
        if "triton" in impls:
            # Which configs a call may compile depends on the inputs' shapes only: meta tensors do.
            args, kwargs = T.make_inputs(task, shapes, "meta", getattr(torch, dtype_name))
            for kernel_name, index in tb.configs_to_compile(task, *args, **kwargs):
                work.append(("triton", task, shapes, kernel_name, index, dtype_name, device))
        if "ninetoothed" in impls:
            count = _ninetoothed_config_count(task, log)
            work += [("ninetoothed", task, shapes, "", i, dtype_name, device) for i in range(count)]
    if not work:
        return 0, 0, 0.0
    workers = workers or max(1, min(16, (os.cpu_count() or 2) - 1, len(work)))
    log(f"precompile: {len(work)} kernel configs in {workers} worker processes, cache {os.environ['TRITON_CACHE_DIR']}")
    failed = done = 0
    pool = None
    try:
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))
        futures = {pool.submit(_job, *w): w for w in work}
        for future in as_completed(futures, timeout=timeout):
            done += 1
            try:
                future.result()
            except Exception as exc:  # a config that fails here fails in auto-tuning too
                failed += 1
                w = futures[future]
                log(f"precompile: {w[0]} {w[1]} {w[3]} config {w[4]} failed: {type(exc).__name__}: {str(exc)[:200]}")
    except TimeoutError:
        log(f"precompile: not done after {timeout} s; going on without the rest")
        _stop(pool)
        pool = None
        return len(work), len(work) - done, time.time() - start
    except Exception:
        log("precompile: the worker pool failed; going on without it\n" + traceback.format_exc(limit=3))
        _stop(pool)
        pool = None
        return len(work), len(work), time.time() - start
    finally:
        if pool is not None:
            pool.shutdown(wait=True)
    seconds = time.time() - start
    log(f"precompile: done in {seconds:.1f} s ({failed} failed)")
    return len(work), failed, seconds
