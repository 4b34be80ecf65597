"""The configurations worth timing: block sizes from the meta symbols' bounds
(powers of two where declared), shaped for matrix products where a kernel is
one, crossed with ``num_warps``/``num_stages`` and pruned by block size,
shared memory and occupancy; and the one configuration taken without
timing (``default_config``)."""

import functools
import itertools
import math

from ntsym_codegen.options import NUM_STAGES, NUM_WARPS
from ntsym_codegen.tuning.config import Config


MAX_BLOCK_ELEMENTS = 2**20  # Triton's limit on the elements of one block


DEFAULT_MAX_CONFIGS = 24


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


def candidates(spec, fixed, tensors=None, programs=None, widest=None):
    """The configurations to time, given the values the caller fixed:
    those whose streamed tiles fit in shared memory and, where some do, that
    run enough programs to occupy half the GPU's multiprocessors (``programs``
    gives a configuration's grid size); at most ``max_num_configs``.
    ``widest`` gives a configuration's largest block extent (derived blocks
    such as a whole row's included): where only the warps are left to tune,
    too few warps for it are not candidates (``warps_for_block``)."""
    configs = (skinny_candidates(spec, fixed, tensors)
               or _candidates(spec, fixed, _gemm_k_factor(spec, tensors), widest))
    squares = [c for c in square_candidates(spec, fixed) if c not in configs]
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


def square_candidates(spec, fixed):
    """Square blocks (every free block size equal, 64 or more) of a kernel whose
    free block sizes are two or more and whose loops stream tiles, but not a
    matrix product's (its GEMM shapes hold them): the tiles loops of products
    do best with, which the spread of block shapes may leave out (it left out
    attention's 64x64 and 128x128, and at head dim 128 and 1k keys the tuner
    then chose 64x32 where 64x64 is faster)."""
    free = [m for m in spec.metas if m.meta and fixed.get(m.symbol.name) is None]
    if len(free) < 2 or not spec.loops or spec.num_warps or gemm_roles(spec, free) is not None:
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
# The candidates are taken in this order up to the budget, after the shapes
# that would run fewer programs than half the multiprocessors are dropped:
# a small grid (1024^3: 64 tiles of 128x128) reaches the 128-deep reductions,
# which keep more bytes in flight per program (64x128x128, 4 warps, 4 stages:
# cuBLAS's time in fp16 and bf16 at 1024^3, where the tuner's choice without
# them took 1.10-1.16 of it; H100, 2026-11-27, benchmarks/lab/gemm_small.py).
GEMM_SHAPES = [
    (128, 256, 64), (256, 128, 64), (128, 128, 64), (128, 128, 32), (64, 256, 32),
    (128, 64, 32), (64, 128, 32), (64, 128, 64), (128, 64, 64), (64, 128, 128), (128, 64, 128), (64, 64, 64),
    (64, 32, 64), (32, 64, 64), (64, 32, 32), (32, 64, 32), (32, 32, 32), (16, 64, 64), (64, 16, 64),
]


# Tiles of products with at most 16 rows (a decode step's linear layers: a
# few rows of activations against a weight), which read the weight once and
# are bound by memory: (columns, reduction, num_warps, num_stages), the best
# of a sweep of 96 over the 8B Llama's weight shapes on an H200
# (benchmarks/lab/decode_gemv.py): narrow columns for many programs, long
# reductions and deep pipelines for many bytes in flight, four warps.
SKINNY_SHAPES = [
    (32, 256, 4, 6), (16, 256, 4, 6), (32, 512, 4, 4), (64, 128, 4, 3), (32, 128, 4, 3), (64, 512, 4, 3),
    (64, 256, 4, 4), (32, 256, 4, 4), (32, 128, 4, 6), (64, 128, 4, 5), (16, 512, 4, 3), (16, 128, 4, 4),
]
SKINNY_ROWS = 16


def skinny_candidates(spec, fixed, tensors):
    """SKINNY_SHAPES for a matrix product whose rows fit one block of 16:
    its rows block fixed at 16 or less by the caller, or its first operand a
    matrix (or a batch of them: bmm's, a decode step's ``(B, 1, K)``
    activations) of at most 16 rows (the rows block is then 16, dot's least).
    An operand of more dimensions says nothing of the product's rows (conv2d's
    ``(N, C, H, W)`` input of 14 rows makes N x 12 x 12 windows): not skinny.
    Empty where the kernel is no such product, the caller fixed the columns
    or reduction blocks, or fixed num_warps/num_stages at make."""
    metas = [m for m in spec.metas if m.meta]
    roles = gemm_roles(spec, metas)
    if roles is None or spec.num_warps or spec.num_stages:
        return []
    rows, columns, reduction = roles
    if fixed.get(columns) is not None or fixed.get(reduction) is not None:
        return []
    block = fixed.get(rows)
    if block is None:
        position = gemm_operands(spec, metas)[0]
        if not tensors or tensors[position].dim() not in (2, 3) or tensors[position].shape[-2] > SKINNY_ROWS:
            return []
        block = SKINNY_ROWS
    elif block > SKINNY_ROWS:
        return []
    by_name = {m.symbol.name: m for m in metas}
    k_factor = _gemm_k_factor(spec, tensors)
    configs = []
    for n, k, warps, stages in SKINNY_SHAPES:
        shape = {rows: block, columns: n, reduction: k * k_factor}
        if all(v in by_name[r].candidates for r, v in shape.items()):
            configs.append(Config(tuple(sorted({**fixed, **shape}.items())), warps, stages))
    return configs


def gemm_roles(spec, free):
    """For a matrix-product-like kernel: the meta names of (rows, columns,
    reduction), else None.  Such a kernel streams a (rows, reduction) tile
    and a (reduction, columns) tile whose three block sizes are the free
    ones; any other tile of more than two levels spans only blocks of one of
    the two (an operand of a prologue, such as a second (rows, reduction)
    tile or a row of scales along the reduction) or of the output (a
    (rows, columns) tile: an output in pairs of tiles, an addend)."""
    found = _gemm_match(spec, free)
    return None if found is None else found[0]


def gemm_operands(spec, free):
    """The tensor positions of the (rows, reduction) and (reduction, columns)
    tiles of a matrix-product-like kernel (see ``gemm_roles``), else None."""
    found = _gemm_match(spec, free)
    return None if found is None else found[1]


def _gemm_match(spec, free):
    names = {m.symbol.name for m in free}
    if len(names) != 3:
        return None
    tiles = [(position, dims) for position, _, _, dims in spec.streamed_tiles]
    for position_a, a in tiles:
        for position_b, b in tiles:
            if position_a == position_b or len(a) != 2 or len(b) != 2 or not all(len(d) == 1 for d in a + b):
                continue
            (a0,), (a1,) = a
            (b0,), (b1,) = b
            if a1 != b0 or {a0, a1, b1} != names:
                continue
            others = [{n for d in dims for n in d} for p, dims in tiles if p not in (position_a, position_b)]
            if all(o <= {a0, a1} or o <= {a1, b1} or o <= {a0, b1} for o in others):
                return (a0, b1, a1), (position_a, position_b)
    return None


def _gemm_k_factor(spec, tensors):
    """How many times longer than GEMM_SHAPES' the reduction tiles of a
    matrix product are: 2 where both operands of its product have 1-byte
    elements (fp8, int8), so that a tile holds the bytes of a 2-byte one;
    else 1."""
    operands = gemm_operands(spec, [m for m in spec.metas if m.meta]) if tensors else None
    if operands is None:
        return 1
    sizes = {tensors[position].element_size() for position in operands}
    return 2 if sizes == {1} else 1


def _candidates(spec, fixed, k_factor=1, widest=None):
    free = [m for m in spec.metas if m.meta and fixed.get(m.symbol.name) is None]
    roles = gemm_roles(spec, free)
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
    return _spread_candidates(spec, fixed, widest)


WARPS_ONLY = (1, 2, 4, 8, 16)


# Elements of one block a thread may hold before fewer warps stop being
# candidates.  A whole-row kernel of 32,768 elements (softmax at 32,000
# columns) with one warp holds 1,024 per thread: its compile alone took most
# of a 44 s first call on an H100, and it is never the fastest.
MAX_ELEMENTS_PER_THREAD = 128


def warps_for_block(elements):
    """The numbers of warps of WARPS_ONLY that hold a block of ``elements``
    with at most MAX_ELEMENTS_PER_THREAD a thread; the largest where none does."""
    kept = [w for w in WARPS_ONLY if elements <= MAX_ELEMENTS_PER_THREAD * 32 * w]
    return kept or [max(WARPS_ONLY)]


def _spread_candidates(spec, fixed, widest=None):
    free = [m for m in spec.metas if m.meta and fixed.get(m.symbol.name) is None]
    if not free:
        meta = tuple(sorted(fixed.items()))
        stages = spec.num_stages or NUM_STAGES.default
        if spec.num_warps:
            return [Config(meta, spec.num_warps, stages)]
        warps = WARPS_ONLY if widest is None else warps_for_block(widest(Config(meta, WARPS_ONLY[0], stages)))
        return [Config(meta, w, stages) for w in warps]
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
            stage = spec.num_stages or NUM_STAGES.default
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
    warps, stages = spec.num_warps or NUM_WARPS.default, spec.num_stages or NUM_STAGES.default
    return Config(tuple(sorted(meta.items())), warps, stages)


@functools.lru_cache(maxsize=None)
def multiprocessors(device):
    """The streaming multiprocessors of a CUDA device (index or torch.device)."""
    import torch

    return torch.cuda.get_device_properties(device).multi_processor_count
