"""Warm the Triton compile cache of the baselines in parallel worker processes.

Auto-tuning compiles every config of a kernel, one after the other, in the process
that calls it. Here each (task, kernel, config) job runs in a worker of a
``spawn`` process pool with that kernel restricted to the one config, so the
compiled binaries land in the shared ``TRITON_CACHE_DIR``; the main process then
auto-tunes with the binaries already on disk. Best effort: any failure is reported
and the benchmark goes on without it.
"""

import multiprocessing
import os
import time
import traceback
from concurrent.futures import ProcessPoolExecutor, TimeoutError, as_completed

_INPUTS = {}  # per worker: (task, shapes) -> (args, kwargs)


def _job(task, shapes, kernel_name, config_index, dtype_name, device="cuda"):
    import torch

    from benchmarks import tasks as T
    from benchmarks import triton_baselines as tb

    key = (task, shapes)
    if key not in _INPUTS:
        _INPUTS.clear()  # one input set at a time
        _INPUTS[key] = T.make_inputs(task, shapes, device, getattr(torch, dtype_name))
    args, kwargs = _INPUTS[key]
    kernel = getattr(tb, kernel_name)
    if not hasattr(kernel, "_all_configs"):
        kernel._all_configs = list(kernel.configs)
    kernel.configs = [kernel._all_configs[config_index]]
    start = time.time()
    tb.FUNCTIONS[task](*args, **kwargs)
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


def precompile(jobs, dtype_name="float16", workers=None, log=print, device="cuda", timeout=600):
    """Run ``jobs`` [(task, shapes)] through the baselines' configs in a spawn pool.

    Gives up after ``timeout`` seconds. Returns (jobs, jobs failed or not done, seconds).
    """
    import torch

    from benchmarks import tasks as T
    from benchmarks import triton_baselines as tb

    os.environ["TRITON_CACHE_DIR"] = default_cache_dir()  # the workers inherit it
    start = time.time()
    work = []
    for task, shapes in jobs:
        # Which configs a call may compile depends on the inputs' shapes only: meta tensors do.
        args, kwargs = T.make_inputs(task, shapes, "meta", getattr(torch, dtype_name))
        for kernel_name, index in tb.configs_to_compile(task, *args, **kwargs):
            work.append((task, tuple(tuple(s) for s in shapes), kernel_name, index, dtype_name, device))
    if not work:
        return 0, 0, 0.0
    workers = workers or max(1, min(8, (os.cpu_count() or 2) - 1, len(work)))
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
                log(f"precompile: {w[0]} {w[2]} config {w[3]} failed: {type(exc).__name__}: {str(exc)[:200]}")
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
