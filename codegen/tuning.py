# Over 600 lines: candidates and timing both read one Config and Spec, and change together.
"""Configuration choice: the meta-parameter values and launch options.

Candidates come from the meta symbols' bounds (powers of two where declared)
crossed with ``num_warps``/``num_stages``, pruned by block size.  In Triton's
interpreter (CPU) no benchmarking happens: a fixed, sensible configuration is
taken, so CPU runs stay fast and deterministic.  Choices are kept per process
and on disk (``tuning_store``).
"""

import functools
import itertools
import logging
import math
import os
import sys
import warnings
from dataclasses import dataclass, replace

from codegen import progress, serial, tuning_store
from codegen.tuning_store import ints, misalignment
from codegen.errors import fail

logger = logging.getLogger("ntsym")

MAX_BLOCK_ELEMENTS = 2**20  # Triton's limit on the elements of one block
DEFAULT_MAX_CONFIGS = 24


@dataclass(frozen=True)
class Config:
    meta: tuple  # ((name, value), ...)
    num_warps: int = 4
    num_stages: int = 3
    persistent: bool = False  # the persistent, tensor-descriptor variant
    advance: bool = False  # loops advance pointer blocks (spec.advance_flag)

    def kwargs(self, derived, int64, spec):
        """The keyword arguments of the kernel launch; cached per config and
        int64 mode unless there are derived values, which may depend on sizes."""
        key = int64
        cache = self.__dict__.setdefault("_kwargs", {})
        if derived or key not in cache:
            meta = dict(self.meta)
            kwargs = dict(meta)
            for name, fn in derived.items():
                kwargs[name] = fn(meta)
            kwargs[spec.int64_flag] = int64
            if spec.advance_flag:
                kwargs[spec.advance_flag] = self.advance
            if not spec.interpreting:
                kwargs["num_warps"] = self.num_warps
                kwargs["num_stages"] = self.num_stages
            if derived:
                return kwargs  # derived values may depend on sizes: not cached
            cache[key] = kwargs
        return cache[key]

    def grid(self, grid):
        return grid(dict(self.meta))

    def __str__(self):
        parts = [f"{k}={v}" for k, v in self.meta]
        parts += [f"num_warps={self.num_warps}", f"num_stages={self.num_stages}"]
        return ", ".join(parts + (["persistent"] if self.persistent else []) + (["advance"] if self.advance else []))


def shared_memory(spec, config, tensors):
    """Estimated shared memory of a configuration: the tiles loops stream
    through, times the pipeline depth (Triton buffers num_stages - 1 ahead)."""
    meta = dict(config.meta)
    total = 0
    for position, count, names, _ in spec.streamed_tiles:
        try:
            elements = count(*(meta[n] for n in names))
        except KeyError:
            continue
        total += int(elements) * tensors[position].element_size()
    return total * max(1, config.num_stages - 1)


def device_shared_memory(device):
    try:
        import triton

        props = triton.runtime.driver.active.utils.get_device_properties(device.index or 0)
        return props["max_shared_mem"]
    except Exception:
        return None


def candidates(spec, fixed, tensors=None, programs=None):
    """The configurations to time, given the values the caller fixed:
    those whose streamed tiles fit in shared memory and, where some do, that
    run enough programs to occupy half the GPU's multiprocessors (``programs``
    gives a configuration's grid size); at most ``max_num_configs``."""
    configs = _candidates(spec, fixed, _gemm_k_factor(spec, tensors))
    squares = [c for c in _square_candidates(spec, fixed) if c not in configs]
    configs += squares
    if tensors and tensors[0].device.type == "cuda":
        if spec.streamed_tiles:
            limit = device_shared_memory(tensors[0].device)
            if limit:
                fitting = [c for c in configs if shared_memory(spec, c, tensors) <= limit]
                configs = fitting or configs[:1]
        if programs is not None:
            half = multiprocessors(tensors[0].device) // 2
            busy = [c for c in configs if programs(c) >= half]
            configs = busy or configs
    if spec.max_num_configs:
        return configs[: spec.max_num_configs]
    # The squares come on top of the default budget.
    return configs[:DEFAULT_MAX_CONFIGS] + [c for c in configs[DEFAULT_MAX_CONFIGS:] if c in squares]


def _square_candidates(spec, fixed):
    """Square blocks (every free block size equal, 64 or more) of a kernel whose
    free block sizes are two or more and whose loops stream tiles, but not a
    matrix product's (its GEMM shapes hold them): the tiles loops of products
    do best with, which the spread of block shapes may leave out (it left out
    attention's 64x64 and 128x128, and at head dim 128 and 1k keys the tuner
    then chose 64x32 where 64x64 is faster)."""
    free = [m for m in spec.metas if m.meta and fixed.get(m.symbol.name) is None]
    if len(free) < 2 or not spec.loops or spec.num_warps or _gemm_roles(spec, free) is not None:
        return []
    stages = [spec.num_stages] if spec.num_stages else [3, 4]
    out = []
    for value in sorted(set.intersection(*(set(m.candidates) for m in free))):
        elements = value ** len(free)
        if value < 64 or elements > MAX_BLOCK_ELEMENTS or value * value > 2**15:
            continue
        meta = dict(fixed)
        meta.update({m.symbol.name: value for m in free})
        out += [Config(tuple(sorted(meta.items())), _warps_for(value * value), st) for st in stages]
    return out


# Block shapes that serve matrix products well on NVIDIA GPUs (Triton's matmul
# tutorial's list, plus larger tiles for Hopper): (rows, columns, reduction).
GEMM_SHAPES = [
    (128, 256, 64), (256, 128, 64), (128, 128, 64), (128, 128, 32), (64, 256, 32),
    (128, 64, 32), (64, 128, 32), (64, 128, 64), (128, 64, 64), (64, 64, 64),
    (64, 32, 64), (32, 64, 64), (64, 32, 32), (32, 64, 32), (32, 32, 32), (16, 64, 64), (64, 16, 64),
]


def _gemm_roles(spec, free):
    """For a matrix-product-like kernel (two streamed tiles sharing one block
    size): the meta names of (rows, columns, reduction), else None."""
    if len(spec.streamed_tiles) != 2 or len(free) != 3:
        return None
    (_, _, _, a), (_, _, _, b) = spec.streamed_tiles
    if len(a) != 2 or len(b) != 2 or not all(len(d) == 1 for d in a + b):
        return None
    (a0,), (a1,) = a
    (b0,), (b1,) = b
    if a1 != b0 or len({a0, a1, b1}) != 3:
        return None
    names = {m.symbol.name for m in free}
    return (a0, b1, a1) if {a0, b1, a1} == names else None


def _gemm_k_factor(spec, tensors):
    """How many times longer than GEMM_SHAPES' the reduction tiles of a
    matrix product are: 2 where both streamed operands have 1-byte elements
    (fp8, int8), so that a tile holds the bytes of a 2-byte one; else 1."""
    if not tensors or len(spec.streamed_tiles) != 2:
        return 1
    sizes = {tensors[position].element_size() for position, _, _, _ in spec.streamed_tiles}
    return 2 if sizes == {1} else 1


def _candidates(spec, fixed, k_factor=1):
    free = [m for m in spec.metas if m.meta and fixed.get(m.symbol.name) is None]
    roles = _gemm_roles(spec, free)
    if roles is not None:
        by_name = {m.symbol.name: m for m in free}
        stages = [spec.num_stages] if spec.num_stages else [3, 4]
        configs = []
        for rows, columns, reduction in GEMM_SHAPES:
            shape = (rows, columns, reduction * k_factor)
            if all(v in by_name[r].candidates for r, v in zip(roles, shape)):
                meta = dict(fixed)
                meta.update(dict(zip(roles, shape)))
                warps = spec.num_warps or (8 if shape[0] * shape[1] >= 128 * 128 else 4)
                configs += [Config(tuple(sorted(meta.items())), warps, st) for st in stages]
        if configs:
            return configs
    return _spread_candidates(spec, fixed)


WARPS_ONLY = (1, 2, 4, 8, 16)


def _spread_candidates(spec, fixed):
    free = [m for m in spec.metas if m.meta and fixed.get(m.symbol.name) is None]
    if not free:
        meta = tuple(sorted(fixed.items()))
        return [Config(meta, w, spec.num_stages or 3) for w in ([spec.num_warps] if spec.num_warps else WARPS_ONLY)]
    values = [m.candidates for m in free]
    warps = [spec.num_warps] if spec.num_warps else [4, 8]
    stages = [spec.num_stages] if spec.num_stages else [2, 3, 4]
    if len(free) > 1:
        # Multi-dimensional tiles beyond 256 a side rarely pay off.
        values = [[v for v in vals if v <= 256] or [min(vals)] for vals in values]
    combos = []
    for combo in itertools.product(*values):
        meta = dict(fixed)
        meta.update({m.symbol.name: v for m, v in zip(free, combo)})
        elements = math.prod(combo) if combo else 1
        if elements > MAX_BLOCK_ELEMENTS or (len(free) > 1 and max(combo) * sorted(combo)[-2] > 2**15):
            continue
        combos.append((elements, tuple(sorted(meta.items()))))
    # Spread the budget over small to large blocks; unless given, the number
    # of warps follows the block size, so the budget goes to block shapes.
    combos.sort()
    limit = spec.max_num_configs or DEFAULT_MAX_CONFIGS
    if not spec.num_warps:
        pair = lambda meta: math.prod(sorted(v for _, v in meta)[-2:])  # noqa: E731
        if not spec.loops:
            # No loop to pipeline: the stages change nothing, so the budget
            # goes to the warps (the default for the block size and twice it).
            combos = _evenly(combos, limit // 2)
            stage = spec.num_stages or 3
            configs = []
            for _, meta in combos:
                warps = _warps_for(pair(meta))
                configs += [Config(meta, warps, stage), Config(meta, 2 * warps, stage)]
            return configs[:limit]
        stages = [spec.num_stages] if spec.num_stages else [3, 4]
        combos = _evenly(combos, limit // max(1, len(stages)))
        return [Config(meta, _warps_for(pair(meta)), st) for _, meta in combos for st in stages][:limit]
    combos = _evenly(combos, limit // max(1, len(warps) * len(stages)))
    configs = [Config(meta, w, s) for _, meta in combos for w, s in itertools.product(warps, stages)]
    return configs[:limit]


def _evenly(items, count):
    """At most ``count`` (at least one) of ``items``, evenly spread."""
    count = max(1, count)
    if len(items) <= count:
        return items
    step = len(items) / count
    return [items[int(i * step)] for i in range(count)]


def _warps_for(elements):
    return 4 if elements <= 2**12 else 8


def default_config(spec, fixed):
    """One configuration without benchmarking: blocks near 2**15 elements in all."""
    free = [m for m in spec.metas if m.meta and fixed.get(m.symbol.name) is None]
    meta = dict(fixed)
    if free:
        target = (2**15) ** (1 / len(free))
        for m in free:
            meta[m.symbol.name] = min(m.candidates, key=lambda v: (abs(math.log2(v) - math.log2(target)), v))
    return Config(tuple(sorted(meta.items())), spec.num_warps or 4, spec.num_stages or 3)


BENCHMARKS_RUN = 0  # configurations timed in this process (tests read it)


def _tune_in_interpreter():
    return os.environ.get("NTSYM_TUNE_IN_INTERPRETER", "") == "1"


# What ``ntsym_options`` may say.
OPTIONS = ("num_warps", "num_stages", "persistent", "advance")


def choose(kernel, spec, grid, args, metas, derived, tensors, int64, options=None, persistent=None, *, tuned,
           timed=True):
    """The configuration for this call (None when the problem is empty).
    ``persistent`` is the kernel's persistent variant (:class:`codegen.runtime.Persistent`) or
    None; ``ntsym_options={"persistent": True/False}`` asks for it or rules it
    out, ``{"advance": True/False}`` fixes how loops address tiles.
    ``tuned``: the kernel handle's choices so far (``CallCache.tuned``), which
    this one joins.  ``timed=False`` (a call traced with fake tensors) runs
    nothing: a choice stored for the call's shape, else the default."""
    fixed_items = tuple(sorted((k, v) for k, v in metas.items() if v is not None))
    # Constexprs the call gives select the compiled kernel (a causal flag):
    # each value is tuned on its own.
    given = tuple(args[i] for i in spec.constexpr_slots if i < len(args))
    # Kept per kernel handle: a table keyed by id(spec) would hand a later
    # kernel, made where a collected one was, that kernel's choice.
    key = (fixed_items, int64, tuple(options.items()) if options else (), given) + _tensor_key(tensors)
    config = tuned.get(key)
    if config is not None:
        return config
    options = options or {}
    unknown = sorted(set(options) - set(OPTIONS), key=str)
    if unknown:
        fail(f"kernel `{spec.name}`: unknown ntsym_options {', '.join(map(repr, unknown))}; "
                     f"known: {', '.join(OPTIONS)}")
    fixed = dict(fixed_items)
    probe = default_config(spec, fixed)
    if grid(dict(probe.meta))[0] == 0:
        return None
    wanted = options.get("persistent")
    if wanted is not None and not isinstance(wanted, bool):
        fail(f"kernel `{spec.name}`: ntsym_options['persistent'] must be True or False, got {wanted!r}")
    if wanted is False or (persistent is not None and not persistent.usable(spec, tensors, int64)):
        if wanted:
            fail(_no_persistent(spec, "needs 32-bit index math and a GPU of compute capability 9.0 or newer"))
        persistent = None
    if wanted and persistent is None:
        fail(_no_persistent(spec, "has no persistent variant (no loop reads a tile through a tensor descriptor)"))
    launch = {name: options[name] for name in ("num_warps", "num_stages") if options.get(name) is not None}
    for name, value in launch.items():
        valid = {1, 2, 4, 8, 16, 32} if name == "num_warps" else range(1, 9)
        if type(value) is not int or value not in valid:
            allowed = "1, 2, 4, 8, 16 or 32" if name == "num_warps" else "an int from 1 to 8"
            fail(f"kernel `{spec.name}`: {name} must be {allowed}, got {value!r}")
    advance = options.get("advance")
    if advance is not None and not isinstance(advance, bool):
        fail(f"kernel `{spec.name}`: ntsym_options['advance'] must be True or False, got {advance!r}")
    if advance and not spec.advance_flag:
        fail(f"kernel `{spec.name}`: ntsym_options asks loops to advance pointers, but no loop of the kernel "
                     "reads or writes a tile at an address affine in its index")
    # With nothing to tune but the warps (whole-row kernels), a GPU still
    # times a few numbers of warps unless they are given.
    warps_only = not any(m.meta for m in spec.metas) and not (options.get("num_warps") or spec.num_warps)
    if all(m.symbol.name in fixed for m in spec.metas if m.meta) and (spec.interpreting or not warps_only):
        config = Config(
            fixed_items,
            options.get("num_warps") or spec.num_warps or 4,
            options.get("num_stages") or spec.num_stages or 3,
            bool(wanted),
            bool(advance),
        )
    elif spec.interpreting and not _tune_in_interpreter():
        # The interpreter times nothing meaningful: no tuning.
        config = Config(probe.meta, launch.get("num_warps", probe.num_warps),
                        launch.get("num_stages", probe.num_stages), bool(wanted), bool(advance))
    else:
        # A choice restricted by the caller is stored apart.
        restricted = "" if wanted is None else "|persistent" if wanted else "|plain"
        if advance is not None:
            restricted += "|advance" if advance else "|index"
        restricted += "".join(f"|{name}={value}" for name, value in sorted(launch.items()))
        disk_key = tuning_store.disk_key(fixed_items, int64, tensors, given) + restricted
        retune = os.environ.get("NTSYM_RETUNE") == "1" and timed
        config = None if retune else _load(spec, disk_key, shortlisted=not _full_search())
        config = _usable(spec, config, fixed, launch, "a stored choice")
        if config is not None and config.persistent and (persistent is None or not persistent.ready(dict(config.meta))):
            config = None
        if config is None and not timed:
            # Not stored: a real call of this shape still tunes.
            return Config(probe.meta, launch.get("num_warps", probe.num_warps),
                          launch.get("num_stages", probe.num_stages), False, bool(advance))
        if config is None:
            class_key = tuning_store.class_key(fixed_items, int64, tensors, given, _compiled_sizes(spec)) + restricted
            shortlist = None if retune or _full_search() else _load_shortlist(spec, class_key, persistent, fixed_items)
            search = functools.partial(_benchmark, kernel, spec, grid, args, derived, tensors, int64, fixed,
                                       persistent, bool(wanted), advance, launch)
            config, ranked = search(shortlist) if shortlist else (None, [])
            if config is None:  # no shortlist, or none of it runs at this shape
                shortlist = None
                config, ranked = search()
            _store(spec, disk_key, config, shortlisted=shortlist is not None)
            if shortlist is None:  # only a full search sets its class's shortlist
                _store_shortlist(spec, class_key, ranked[:SHORTLIST])
    progress.end()
    if os.environ.get("NTSYM_PRINT_TUNING") == "1":
        print(f"ntsym: {spec.name} for {_shapes(tensors)}: {describe(config)}", file=sys.stderr)
    if config.persistent and not persistent.ready(dict(config.meta)):
        fail(_refused(spec, persistent, config))
    tuned[key] = config
    return config


def _shapes(tensors):
    """The call's tensors as ``shape dtype`` (what NTSYM_PRINT_TUNING shows)."""
    return ", ".join(f"{tuple(t.shape)} {str(t.dtype).replace('torch.', '')}" for t in tensors) or "no tensors"


def describe(config):
    """A configuration as the keyword arguments that ask for it."""
    chosen = "".join(f"{k}={v}, " for k, v in config.meta)
    variant = ", 'persistent': True" if config.persistent else ""
    variant += ", 'advance': True" if config.advance else ""
    return f"{chosen}ntsym_options={{'num_warps': {config.num_warps}, 'num_stages': {config.num_stages}{variant}}}"


def _no_persistent(spec, why):
    return f"kernel `{spec.name}`: ntsym_options asks for the persistent variant, but the kernel {why}"


def _refused(spec, persistent, config):
    """Why the call's tensors keep the persistent variant from running with ``config``."""
    return _no_persistent(spec, f"cannot use tensor descriptors here ({config}): {persistent.problem(dict(config.meta))}")


def _tensor_key(tensors):
    """Shapes, strides, dtypes, 16-byte alignment and device: what a tuned
    choice may depend on."""
    return tuple((ints(t.shape), ints(t.stride()), t.dtype, misalignment(t), t.device) for t in tensors)


def _load(spec, key, shortlisted=False):
    """The configuration stored for ``key``, or None (none stored, an entry
    this version cannot read, or one chosen from a size class's shortlist
    where ``shortlisted`` does not allow those)."""
    entry = tuning_store.load(spec, key)
    if entry is not None and entry.get("shortlist") and not shortlisted:
        return None
    return _config(entry)


def _store(spec, key, config, shortlisted=False):
    entry = _entry(config)
    if shortlisted:  # chosen among a shortlist: a full search replaces it
        entry["shortlist"] = True
    tuning_store.store(spec, key, entry)


def _entry(config):
    return {"meta": [list(kv) for kv in config.meta], "num_warps": config.num_warps,
            "num_stages": config.num_stages, "persistent": config.persistent, "advance": config.advance}


def _config(entry):
    try:
        return Config(tuple((k, int(v)) for k, v in entry["meta"]), int(entry["num_warps"]), int(entry["num_stages"]),
                      bool(entry.get("persistent", False)), bool(entry.get("advance", False)))
    except (TypeError, KeyError, ValueError):
        return None


def _usable(spec, config, fixed, launch, what):
    """``config`` where a launch may take it, else None with a warning: a
    stored entry is read back from a file anyone may have edited, and a block
    size of -64 would run no program (the output left as it was), one of 3 or
    0 fail inside Triton."""
    if config is None:
        return None
    problem = _entry_problem(spec, config, fixed, launch)
    if problem is None:
        return config
    path = tuning_store.location(spec)
    warnings.warn(f"ntsym: {what} for kernel `{spec.name}` in {path} is not usable ({problem}); tuning again",
                  stacklevel=2)
    return None


def _entry_problem(spec, config, fixed, launch):
    """Why a stored configuration cannot run this call, or None."""
    meta = dict(config.meta)
    tuned = {m.symbol.name: m for m in spec.metas if m.meta and fixed.get(m.symbol.name) is None}
    if set(meta) != set(tuned) | set(fixed):
        return f"it sets {sorted(meta)}, the kernel takes {sorted(set(tuned) | set(fixed))}"
    for name, value in fixed.items():
        if meta[name] != value:
            return f"{name}={meta[name]} where the call gives {value}"
    for name, m in tuned.items():
        if m.candidates and meta[name] not in m.candidates:
            return f"{name}={meta[name]} is not one of the candidates {list(m.candidates)}"
        if not m.candidates and (meta[name] < 1 or meta[name] & (meta[name] - 1)):
            return f"{name}={meta[name]} is not a positive power of two"
    if config.num_warps not in (1, 2, 4, 8, 16, 32):
        return f"num_warps={config.num_warps} is not 1, 2, 4, 8, 16 or 32"
    if not 1 <= config.num_stages <= 8:
        return f"num_stages={config.num_stages} is not from 1 to 8"
    for name, value in launch.items():
        if getattr(config, name) != value:
            return f"{name}={getattr(config, name)} where the call asks for {value}"
    return None


# With NTSYM_TUNE_SHORTLIST=1, a call shape not tuned before whose size class
# (``tuning_store.class_key``: the sizes of a class within a factor of 1.5 of
# each other, the rest of the call's facts the same) was searched in full for
# another shape times the SHORTLIST configurations that led that search
# instead of every candidate.
# Off by default: on an H100 (2026-11-25, mm fp16 2560-3072 after 2304, sdpa
# bf16 3500-4000 keys after 3100) it cut a new shape's first call from 2.1-3.1 s
# to 1.5-1.9 s (the steady re-timing of the leaders is most of what is left),
# and the kernel it chose was 0.2-4.2 % slower than a full search's at 2 of 5
# shapes.  Every full search stores its class's shortlist; NTSYM_RETUNE=1
# searches in full.
SHORTLIST = 8


def _full_search():
    return os.environ.get("NTSYM_TUNE_SHORTLIST") != "1"


def _load_shortlist(spec, key, persistent, key_fixed=None):
    """The stored shortlist of ``key``'s size class, without configurations
    this call cannot run; None where there is none."""
    entry = tuning_store.load(spec, key, "classes")
    configs = [_config(e) for e in entry.get("configs", [])] if entry else []
    configs = [c for c in configs if c is not None and (not c.persistent or (
        persistent is not None and persistent.ready(dict(c.meta))))]
    fixed = dict(key_fixed) if key_fixed is not None else None
    configs = [c for c in configs if fixed is None or _usable(spec, c, fixed, {}, "a stored shortlist") is not None]
    return configs or None


def _store_shortlist(spec, key, configs):
    tuning_store.store(spec, key, {"configs": [_entry(c) for c in configs]}, "classes")


def _compiled_sizes(spec):
    """(tensor position, dimension) of the sizes the kernel is compiled for
    (constexpr parameters): a size class keeps those exact."""
    tensors = [p for p in spec.params if p.kind == "tensor"]
    return frozenset((i, d) for i, p in enumerate(tensors) for d in range(p.ndim or 0)
                     if f"{p.name}_size_{d}: tl.constexpr" in spec.kernel_source)


def _time(spec, fn, rep=20, warmup=5):
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


def _rank(spec, timed, run):
    """The configurations of ``timed`` ((ms, config) pairs from one short timing
    each), fastest first, and the first one's ms: the leaders within
    RETIME_WITHIN of the best are timed RETIME_ROUNDS more times, interleaved,
    and ordered by their medians; the rest follow in the order of their short
    timing."""
    timed = sorted(timed, key=lambda t: t[0])
    by_short = [c for _, c in timed]
    best_ms = timed[0][0]
    leaders = [c for ms, c in timed if ms <= best_ms * (1 + RETIME_WITHIN)][:RETIME_MAX]
    if len(leaders) < 2:
        return by_short, best_ms
    rounds = {c: [] for c in leaders}
    for _ in range(RETIME_ROUNDS):
        for c in leaders:
            try:
                rounds[c].append(_time(spec, run(c), rep=RETIME_REP, warmup=RETIME_WARMUP))
            except Exception as e:  # it ran once already; a failure now is not expected
                logger.debug("ntsym: %s config %s failed when timed again: %s", spec.name, c, e)
    medians = {c: sorted(t)[len(t) // 2] for c, t in rounds.items() if t}
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


def _benchmark(kernel, spec, grid, args, derived, tensors, int64, fixed, persistent=None, only_persistent=False,
               advance=None, launch=None, shortlist=None):
    """The fastest configuration, and the configurations timed, fastest first
    (``_rank``); (None, []) where a ``shortlist`` was given and none of it
    runs.  ``advance`` True/False fixes how loops address tiles; None (where
    the kernel has the flag) times pointer advancing too, at the plain
    configurations that did best.  ``launch`` fixes ``num_warps`` and/or
    ``num_stages``: only the rest is tuned.  ``shortlist``: the configurations
    to time instead of every candidate (what led the tuning of another shape
    of the call's size class)."""
    # Timing runs the kernel many times: keep what it writes, to restore it
    # however the search ends (a failure, an interrupt: KeyboardInterrupt).
    names = [p.name for p in spec.params if p.kind == "tensor"]
    snapshot = [_snapshot(t) for name, t in zip(names, tensors) if name in spec.written]
    try:
        return _search(kernel, spec, grid, args, derived, tensors, int64, fixed, persistent, only_persistent,
                       advance, launch, shortlist)
    finally:
        for t, saved in snapshot:
            t.copy_(saved)


def _interpreted(kernel, grid, args, kwargs):
    with serial.INTERPRETER:
        kernel[grid](*args, **kwargs)


def _search(kernel, spec, grid, args, derived, tensors, int64, fixed, persistent, only_persistent, advance, launch,
            shortlist):
    """``_benchmark``'s search, which may overwrite the written tensors."""
    import time

    device = tensors[0].get_device() if tensors else -1
    configs = list(shortlist) if shortlist else candidates(spec, fixed, tensors, lambda c: math.prod(c.grid(grid)))
    if launch:
        configs = list(dict.fromkeys(replace(c, **launch) for c in configs))
    if advance:
        configs = [replace(c, advance=True) for c in configs]
    if only_persistent:
        wanted = _persistent_candidates(configs, persistent)
        if not wanted and configs:
            fail(_refused(spec, persistent, configs[0]))
        configs = wanted

    def parts(config):
        return launch_parts(kernel, persistent, config, grid, args, derived, int64, spec, device)

    def run(config):
        k, g, a, kw = parts(config)
        if spec.interpreting:  # one interpreted launch at a time (codegen/serial.py)
            return lambda: _interpreted(k, g, a, kw)
        return lambda: k[g](*a, **kw)

    start = time.perf_counter()
    failures = []
    timed = _time_all(spec, configs, parts, run, tensors, start, failures=failures)
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
        extra += _persistent_candidates(_leading(by_time) + _largest(by_time), persistent)
    if spec.advance_flag and advance is None and not shortlist:
        # Advancing pointers, at the configurations that did best.
        extra += [replace(c, advance=True) for c in by_time[:ADVANCE_CONFIGS] if not c.persistent]
    if extra:
        timed += _time_all(spec, extra, parts, run, tensors, start, len(configs))
        configs = configs + extra
    if timed and not spec.interpreting:
        ranked, best_time = _rank(spec, timed, run)
    elif timed:
        ranked = [c for _, c in sorted(timed, key=lambda t: t[0])]
        best_time = min(ms for ms, _ in timed)
    if not timed:
        why = ""
        if failures:  # the first one says what went wrong
            config, error = failures[0]
            why = f"; with {config}: {type(error).__name__}: {str(error).strip()[:2000]}"
        fail(f"kernel `{spec.name}`: no configuration could be compiled and run{why}")
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


def _leading(configs):
    """The first PERSISTENT_SHAPES distinct (block sizes, warps) of ``configs``."""
    return _distinct_shapes(configs)[:PERSISTENT_SHAPES]


# Block shapes (with their warps) of the most elements that the persistent
# variant is timed at too, however fast their plain form was.
PERSISTENT_LARGEST = 2


def _largest(configs):
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


def _persistent_candidates(configs, persistent):
    out = []
    for c in configs:
        if not persistent.ready(dict(c.meta)):
            continue
        stages = PERSISTENT_STAGES if c.num_stages in PERSISTENT_STAGES else (c.num_stages,)
        for st in stages:
            config = Config(c.meta, c.num_warps, st, True, c.advance)
            if config not in out:
                out.append(config)
    return out


def _time_all(spec, configs, parts, run, tensors, start, done=0, failures=None):
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
            ms = _time(spec, run(config))
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


def launch_parts(kernel, persistent, config, grid, args, derived, int64, spec, device):
    """(kernel, grid, arguments, keyword arguments) of a launch with ``config``:
    the plain kernel's, or the persistent variant's where the config says so."""
    if config.persistent:
        return persistent.parts(config, grid, args, int64, spec, device)
    return kernel, config.grid(grid), args, config.kwargs(derived, int64, spec)


@functools.lru_cache(maxsize=None)
def multiprocessors(device):
    """The streaming multiprocessors of a CUDA device (index or torch.device)."""
    import torch

    return torch.cuda.get_device_properties(device).multi_processor_count
