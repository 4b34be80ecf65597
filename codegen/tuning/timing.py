"""Timing: every candidate compiled ahead in threads, each timed once, the
leaders timed again in interleaved rounds, pointer advancing and the
persistent variant timed at the configurations that did best; what timing
overwrites restored after it."""

import logging
import math
import os
from dataclasses import replace

from ntsym_codegen import counters, progress, serial
from ntsym_codegen.errors import fail
from ntsym_codegen.tuning import verify
from ntsym_codegen.tuning.config import Config, _refused
from ntsym_codegen.tuning.space import candidates

logger = logging.getLogger("ntsym")


BENCHMARKS_RUN = 0  # configurations timed in this process (tests read it)


def time_ms(spec, fn, rep=20, warmup=5):
    """Median milliseconds of ``fn``: do_bench on a GPU, a wall clock in the
    interpreter (only when tuning there is asked for)."""
    if spec.interpreting:
        import time

        times = []
        for _ in range(3):
            start = time.perf_counter()
            fn()
            times.append((time.perf_counter() - start) * 1e3)
        return sorted(times)[1]
    import triton.testing

    return triton.testing.do_bench(fn, warmup=warmup, rep=rep, return_mode="median")


def median_ms(spec, fn):
    """Median milliseconds of ``fn``, as tuning times a configuration once (a
    ``do_bench`` on a GPU, a wall clock in the interpreter, where ``spec``
    says it runs)."""
    return time_ms(spec, fn)


# Configurations timed within this fraction of the fastest are timed again,
# longer and in interleaved rounds, before one is chosen: single short timings
# of memory-bound kernels move by a few percent from run to run, and those of
# compute-bound ones can favour a configuration that slows down once the GPU
# has run it for a while and its clock has come down (sdpa at 1k keys, head
# dim 64, on an H100: 64x64 with 4 warps timed 0.336 ms short and 0.373 ms
# after 25 ms of warm-up, 128x64 with 8 warps 0.339 and 0.351; at 16k keys
# 64x64 timed 4.78 ms short, 5.58 steady, more than 5 % ahead of the rest when
# timed short).  So the leaders are those within 15 %, and their second timing
# warms up as long as a steady run would.
RETIME_WITHIN = 0.15


RETIME_MAX = 4


RETIME_ROUNDS = 3


RETIME_WARMUP = 25


RETIME_REP = 100


# A shortlist's search (a new shape of a size class already searched) times
# its leaders again in two rounds of 50 ms after a 25 ms warm-up (a full
# search: three of 100 ms): the shortlist's configurations are already
# compiled, and the re-timing is much of what its first call costs.
SHORTLIST_RETIME = dict(rounds=2, warmup=25, rep=50, most=3)


def rank(spec, timed, run, rounds=RETIME_ROUNDS, warmup=RETIME_WARMUP, rep=RETIME_REP, most=RETIME_MAX):
    """The configurations of ``timed`` ((ms, config) pairs from one short timing
    each), fastest first, and the first one's ms: the leaders within
    RETIME_WITHIN of the best (``most`` of them at most) are timed ``rounds``
    more times (``warmup`` and ``rep`` ms each), interleaved, and ordered by
    their medians; the rest follow in the order of their short timing."""
    timed = sorted(timed, key=lambda t: t[0])
    by_short = [c for _, c in timed]
    best_ms = timed[0][0]
    leaders = [c for ms, c in timed if ms <= best_ms * (1 + RETIME_WITHIN)][:most]
    if len(leaders) < 2:
        return by_short, best_ms
    times = {c: [] for c in leaders}
    for _ in range(rounds):
        for c in leaders:
            try:
                times[c].append(time_ms(spec, run(c), rep=rep, warmup=warmup))
            except Exception as e:  # it ran once already; a failure now is not expected
                logger.debug("ntsym: %s config %s failed when timed again: %s", spec.name, c, e)
    medians = {c: sorted(t)[len(t) // 2] for c, t in times.items() if t}
    if not medians:
        return by_short, best_ms
    ranked = sorted(medians, key=lambda c: (medians[c], leaders.index(c)))
    logger.debug("ntsym: %s timed again: %s", spec.name, ", ".join(f"{c} {medians[c]:.4f} ms" for c in medians))
    return ranked + [c for c in by_short if c not in medians], medians[ranked[0]]


def compile_threads():
    """Threads that compile tuning candidates side by side: ``NTSYM_COMPILE_THREADS``,
    or one per CPU up to 16 (1 compiles them one by one, as the timing loop meets them)."""
    value = os.environ.get("NTSYM_COMPILE_THREADS", "")
    if value.strip():
        return max(1, int(value))
    return max(1, min(16, os.cpu_count() or 1))


def compile_ahead(parts, spec, configs, tensors):
    """Compile every candidate before any is timed, in a thread pool: Triton's
    compiler spends its time in MLIR/LLVM passes and ``ptxas``, mostly outside the
    GIL.  The binaries land in Triton's in-memory and on-disk caches, where the
    timing loop finds them.  A config that fails to compile is left to the timing
    loop, which skips it.  Returns the threads used (0: nothing done)."""
    threads = min(compile_threads(), len(configs))
    if spec.interpreting or threads < 2 or not configs or not hasattr(parts(configs[0])[0], "warmup"):
        return 0
    from concurrent.futures import ThreadPoolExecutor

    devices = {t.device for t in tensors if t.device.type == "cuda"}
    device = devices.pop() if len(devices) == 1 else None

    def warm(config):
        try:
            if device is not None:
                import torch

                torch.cuda.set_device(device)  # the current device is per thread
            kernel, grid, args, kwargs = parts(config)
            kernel.warmup(*args, grid=grid, **kwargs)
        except Exception as e:
            logger.debug("ntsym: %s config %s did not compile: %s", spec.name, config, e)

    warm(configs[0])  # one first, on this thread: sets up the kernel's per-device state
    with ThreadPoolExecutor(threads, thread_name_prefix="ntsym-compile") as pool:
        list(pool.map(warm, configs[1:]))
    return threads


def _snapshot(t):
    """(tensor, copy) to restore what tuning overwrites: a view whose elements
    overlap (a jagged tensor's values, with stride 0 along the batch) is
    saved through its whole storage, which it cannot be copied back into."""
    if any(st == 0 and n > 1 for n, st in zip(t.shape, t.stride())):
        import torch

        flat = torch.empty(0, dtype=t.dtype, device=t.device).set_(t.untyped_storage())
        return flat, flat.clone()
    return t, t.clone()


def benchmark(kernel, spec, grid, args, derived, tensors, int64, fixed, persistent=None, only_persistent=False,
              advance=None, launch=None, shortlist=None, counter=None):
    """The fastest configuration, and the configurations timed, fastest first
    (``rank``); (None, []) where a ``shortlist`` was given and none of it
    runs.  ``advance`` True/False fixes how loops address tiles; None (where
    the kernel has the flag) times pointer advancing too, at the plain
    configurations that did best.  ``launch`` fixes ``num_warps`` and/or
    ``num_stages``: only the rest is tuned.  ``shortlist``: the configurations
    to time instead of every candidate (what led the tuning of another shape
    of the call's size class).  ``counter`` (``ntsym_codegen.counters``)
    counts the search, the configurations timed and the variants built."""
    if counter is not None:
        if shortlist:
            counter.shortlists += 1
        else:
            counter.tunes += 1
    before = BENCHMARKS_RUN
    # Timing runs the kernel many times: keep what it writes, to restore it
    # however the search ends (a failure, an interrupt: KeyboardInterrupt).
    names = [p.name for p in spec.params if p.kind == "tensor"]
    written = [(name, t) for name, t in zip(names, tensors) if name in spec.written]
    snapshot = [_snapshot(t) for _, t in written]

    def restore():
        # Through ``.data``, whose version counter is its own: the call bumps
        # the written tensors' counters once, for its own write, as torch's
        # in-place operations do; a restore is no write of the call.
        for t, saved in snapshot:
            t.data.copy_(saved)

    try:
        return _search(kernel, spec, grid, args, derived, tensors, int64, fixed, persistent, only_persistent,
                       advance, launch, shortlist, counter, (restore, written))
    finally:
        restore()
        if counter is not None:
            counter.candidates_timed += BENCHMARKS_RUN - before


def widest_block(config, derived, int64, spec):
    """The largest block extent a launch with ``config`` has: its block sizes
    and the blocks derived from the call's sizes (a whole row's padded length)."""
    kwargs = config.kwargs(derived, int64, spec)
    names = set(dict(config.meta)) | {k for k in derived if k.startswith("NTSYM_BLOCK_")}
    return max((v for k, v in kwargs.items() if k in names and isinstance(v, int)), default=1)


def _interpreted(kernel, grid, args, kwargs):
    with serial.INTERPRETER:
        kernel[grid](*args, **kwargs)


def _search(kernel, spec, grid, args, derived, tensors, int64, fixed, persistent, only_persistent, advance, launch,
            shortlist, counter=None, written=None):
    """``benchmark``'s search, which may overwrite the written tensors
    (``written``: a function restoring them, and their (name, tensor) pairs)."""
    import time

    device = tensors[0].get_device() if tensors else -1
    configs = list(shortlist) if shortlist else candidates(
        spec, fixed, tensors, lambda c: math.prod(c.grid(grid)), lambda c: widest_block(c, derived, int64, spec))
    if launch:
        configs = list(dict.fromkeys(replace(c, **launch) for c in configs))
    if advance:
        configs = [replace(c, advance=True) for c in configs]
    if only_persistent:
        wanted = persistent_candidates(configs, persistent, asked=True)
        if not wanted and configs:
            fail(_refused(spec, persistent, configs[0]))
        configs = wanted

    def parts(config):
        return launch_parts(kernel, persistent, config, grid, args, derived, int64, spec, device, counter)

    def run(config):
        k, g, a, kw = parts(config)
        if spec.interpreting:  # one interpreted launch at a time (codegen/serial.py)
            return lambda: _interpreted(k, g, a, kw)
        return lambda: k[g](*a, **kw)

    start = time.perf_counter()
    failures = []
    timed = time_all(spec, configs, parts, run, tensors, start, failures=failures)
    if shortlist and not timed:  # none of them runs at this shape: the caller searches in full
        return None, []
    extra = []
    by_time = [c for _, c in sorted(timed, key=lambda t: t[0])]
    if persistent is not None and timed and not only_persistent and not shortlist:
        # The persistent variant, at the block shapes that did best and at
        # the largest ones: it pays off where tiles stream through a loop,
        # which timing decides, and most with large tiles, which its tensor
        # descriptors feed where plain pointer loads may not keep up (fp8
        # 8192^3: 128x256x128 persistent fastest of all, plain among the slowest).
        shapes = leading(by_time) if persistent.per_tile else leading(by_time) + largest(by_time)
        extra += persistent_candidates(shapes, persistent)
    if spec.advance_flag and advance is None and not shortlist:
        # Advancing pointers, at the configurations that did best.
        extra += [replace(c, advance=True) for c in by_time[:ADVANCE_CONFIGS] if not c.persistent]
    if extra:
        timed += time_all(spec, extra, parts, run, tensors, start, len(configs))
        configs = configs + extra
    if timed and not spec.interpreting:
        ranked, best_time = rank(spec, timed, run, **(SHORTLIST_RETIME if shortlist else {}))
    elif timed:
        ranked = [c for _, c in sorted(timed, key=lambda t: t[0])]
        best_time = min(ms for ms, _ in timed)
    if not timed:
        why = ""
        if failures:  # the first one says what went wrong
            config, error = failures[0]
            why = f"; with {config}: {type(error).__name__}: {str(error).strip()[:2000]}"
        fail(f"kernel `{spec.name}`: no configuration could be compiled and run{why}")
    if written is not None:
        restore, pairs = written
        ranked = verify.verified(spec, ranked, run, restore, [t for _, t in pairs], [n for n, _ in pairs],
                                 lambda c: replace(c, persistent=False), [t.dtype for t in tensors])
        if not ranked:
            fail(f"kernel `{spec.name}`: the tensor-descriptor variant it was asked to run computes results that "
                 f"differ from the plain kernel's for these tensors (see the warning above); run it without "
                 f"ntsym_options['persistent']")
    best = ranked[0]
    logger.info("ntsym: %s tuned over %d configs%s: %s (%.4f ms)", spec.name, len(configs),
                " of its size class's shortlist" if shortlist else "", best, best_time)
    return best, ranked


# The fastest plain configurations that advancing pointers is timed at.
ADVANCE_CONFIGS = 4


# Block shapes (with their warps) of the fastest plain configurations that
# the persistent variant is timed at, each at these stage counts.
PERSISTENT_SHAPES = 3


PERSISTENT_STAGES = (3, 4)


# The stage counts the one-program-per-tile descriptor variant is timed at.
PER_TILE_STAGES = (2,)


def leading(configs):
    """The first PERSISTENT_SHAPES distinct (block sizes, warps) of ``configs``."""
    return _distinct_shapes(configs)[:PERSISTENT_SHAPES]


# Block shapes (with their warps) of the most elements that the persistent
# variant is timed at too, however fast their plain form was.
PERSISTENT_LARGEST = 2


def largest(configs):
    """The PERSISTENT_LARGEST distinct (block sizes, warps) of ``configs``
    whose blocks hold the most elements (the product of the block sizes)."""
    by_size = sorted(configs, key=lambda c: -math.prod(v for _, v in c.meta))
    return _distinct_shapes(by_size)[:PERSISTENT_LARGEST]


def _distinct_shapes(configs):
    """``configs`` without those repeating an earlier one's (block sizes, warps)."""
    seen = {}
    for c in configs:
        seen.setdefault((c.meta, c.num_warps), c)
    return list(seen.values())


def persistent_candidates(configs, persistent, asked=False):
    """The descriptor variant's configurations at the block shapes of
    ``configs``: each at PERSISTENT_STAGES; where the variant runs one program
    per tile, only those of eight warps or more, with half the warps, at
    PER_TILE_STAGES: tiles read through descriptors hold no pointers in
    registers, which is what the variant brings (attention's 128x64 tiles at
    head dim 128 ran fastest with 4 warps and 2 stages through descriptors,
    where 4 warps spill with pointer loads, and slower than plain with 8;
    H100, triton 3.6).  ``asked``: the call asks for the variant alone, which
    then runs at every shape, with its own warps too."""
    out = []
    for c in configs:
        if not persistent.ready(dict(c.meta)):
            continue
        if persistent.per_tile:
            warps = (c.num_warps,) if asked else ()
            warps += (c.num_warps // 2,) if c.num_warps >= 8 else ()
            stages = PER_TILE_STAGES
        else:
            warps = (c.num_warps,)
            stages = PERSISTENT_STAGES if c.num_stages in PERSISTENT_STAGES else (c.num_stages,)
        for w in warps:
            for st in stages:
                config = Config(c.meta, w, st, True, c.advance)
                if config not in out:
                    out.append(config)
    return out


def time_all(spec, configs, parts, run, tensors, start, done=0, failures=None):
    """(ms, config) for each of ``configs`` that compiles and runs; the others
    go to ``failures`` as (config, exception)."""
    global BENCHMARKS_RUN
    import time

    compiled = compile_ahead(parts, spec, configs, tensors)
    if compiled:
        logger.info(
            "ntsym: %s: compiled %d configs in %d threads, %.1f s",
            spec.name, len(configs), compiled, time.perf_counter() - start,
        )
    reported = False
    timed = []
    best, best_time = None, float("inf")
    for i, config in enumerate(configs):
        try:
            ms = time_ms(spec, run(config))
        except Exception as e:  # out of resources and the like: skip the config
            logger.debug("ntsym: %s config %s failed: %s", spec.name, config, e)
            if failures is not None:
                failures.append((config, e))
            continue
        finally:
            BENCHMARKS_RUN += 1
        timed.append((ms, config))
        logger.debug("ntsym: %s %s: %.4f ms", spec.name, config, ms)
        if ms < best_time:
            best, best_time = config, ms
        elapsed = time.perf_counter() - start
        if elapsed > 2 and (not reported or i == len(configs) - 1 or i % 4 == 0):
            reported = True
            logger.info(
                "ntsym: tuning %s: %d/%d configs, best so far %s (%.4f ms), %.1f s",
                spec.name, done + i + 1, done + len(configs), best, best_time, elapsed,
            )
        if elapsed > PROGRESS_AFTER and progress.wanted():
            progress.show(f"ntsym: tuning {spec.name}: {done + i + 1}/{done + len(configs)} configs, "
                          f"best so far {best} ({best_time:.4f} ms), {elapsed:.1f} s")
    return timed


# Tuning longer than this shows one line of progress on stderr (a terminal's,
# or anywhere with NTSYM_TUNING_PROGRESS=1; never with NTSYM_TUNING_PROGRESS=0):
# see codegen/progress.py.
PROGRESS_AFTER = 1.0


def variant_options(config):
    """What of ``config`` a variant is compiled for besides the launch's
    keyword arguments (``counters.note_variant``)."""
    return (config.num_warps, config.num_stages)


def launch_parts(kernel, persistent, config, grid, args, derived, int64, spec, device, counter=None):
    """(kernel, grid, arguments, keyword arguments) of a launch with ``config``:
    the plain kernel's, or the persistent variant's where the config says so.
    The variant they make is counted in ``counter`` (``ntsym_codegen.counters``)."""
    if config.persistent:
        parts = persistent.parts(config, grid, args, int64, spec, device)
    else:
        parts = kernel, config.grid(grid), args, config.kwargs(derived, int64, spec)
    counters.note_variant(counter, parts[0], parts[2], parts[3], variant_options(config))
    return parts
