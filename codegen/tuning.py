"""Configuration choice: the meta-parameter values and launch options.

Candidates come from the meta symbols' bounds (powers of two where declared)
crossed with ``num_warps``/``num_stages``, pruned by block size.  In Triton's
interpreter (CPU) no benchmarking happens: a fixed, sensible configuration is
taken, so CPU runs stay fast and deterministic.
"""

import itertools
import math
from dataclasses import dataclass

from codegen import runtime

MAX_BLOCK_ELEMENTS = 2**20  # Triton's limit on the elements of one block
DEFAULT_MAX_CONFIGS = 24


@dataclass(frozen=True)
class Config:
    meta: tuple  # ((name, value), ...)
    num_warps: int = 4
    num_stages: int = 3

    def __str__(self):
        parts = [f"{k}={v}" for k, v in self.meta]
        return ", ".join(parts + [f"num_warps={self.num_warps}", f"num_stages={self.num_stages}"])


def candidates(spec, fixed):
    """All configurations to consider, given the values the caller fixed."""
    free = [m for m in spec.metas if m.meta and fixed.get(m.symbol.name) is None]
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
        stages = [spec.num_stages] if spec.num_stages else [3, 4]
        per = max(1, len(stages))
        keep = max(1, limit // per)
        if len(combos) > keep:
            step = len(combos) / keep
            combos = [combos[int(i * step)] for i in range(keep)]
        pair = lambda meta: math.prod(sorted(v for _, v in meta)[-2:])  # noqa: E731
        return [Config(meta, _warps_for(pair(meta)), st) for _, meta in combos for st in stages][:limit]
    per_combo = max(1, len(warps) * len(stages))
    keep = max(1, limit // per_combo)
    if len(combos) > keep:
        step = len(combos) / keep
        combos = [combos[int(i * step)] for i in range(keep)]
    configs = [Config(meta, w, s) for _, meta in combos for w, s in itertools.product(warps, stages)]
    return configs[:limit]


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


_memory = {}


def choose(kernel, spec, grid, args, metas, derived, tensors, int64, options=None):
    options = options or {}
    fixed = {k: v for k, v in metas.items() if v is not None}
    if all(m.symbol.name in fixed for m in spec.metas if m.meta):
        return Config(
            tuple(sorted(fixed.items())),
            options.get("num_warps") or spec.num_warps or 4,
            options.get("num_stages") or spec.num_stages or 3,
        )
    if runtime.interpreting():
        return default_config(spec, fixed)
    key = (spec.name, id(kernel), tuple(sorted(fixed.items())), int64) + _tensor_key(tensors)
    if key not in _memory:
        _memory[key] = _benchmark(kernel, spec, grid, args, derived, tensors, int64, fixed)
    return _memory[key]


def _tensor_key(tensors):
    key = []
    for t in tensors:
        key.append((tuple(t.shape), str(t.dtype), tuple(s == 1 for s in t.stride()), t.data_ptr() % 16 == 0, str(t.device)))
    return tuple(key)


def _benchmark(kernel, spec, grid, args, derived, tensors, int64, fixed):
    import torch
    import triton.testing

    snapshot = [t.clone() for t in tensors]
    best, best_time = None, float("inf")
    configs = candidates(spec, fixed)
    for config in configs:
        meta = dict(config.meta)
        kwargs = dict(meta)
        for name, fn in derived.items():
            kwargs[name] = fn(meta)
        kwargs[spec.int64_flag] = int64
        kwargs["num_warps"] = config.num_warps
        kwargs["num_stages"] = config.num_stages
        g = grid(meta)
        try:
            ms = triton.testing.do_bench(lambda: kernel[g](*args, **kwargs), warmup=5, rep=20)
        except Exception as e:  # out of resources and the like: skip the config
            runtime.logger.debug("config %s failed: %s", config, e)
            continue
        if ms < best_time:
            best, best_time = config, ms
    for t, s in zip(tensors, snapshot):
        t.copy_(s)
    if best is None:
        runtime.fail(f"kernel `{spec.name}`: no configuration could be compiled and run")
    runtime.logger.info("ntsym: %s tuned over %d configs: %s (%.3f ms)", spec.name, len(configs), best, best_time)
    return best
