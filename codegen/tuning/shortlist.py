"""Size classes: the configurations that led a full search of one shape
(its *shortlist*, ``leaders``), kept per size class (``store.class_key``:
sizes within a factor of 1.5 of each other, the compile-time sizes exact, the
rest of the call's facts the same).  A new shape of a class already tuned takes
the class's choice untimed, or times the class's shortlist, instead of
searching every candidate, as ``tune_mode`` says."""

import os

from ntsym_codegen.errors import fail
from ntsym_codegen.tuning import store as tuning_store
from ntsym_codegen.tuning.stored import config_from_entry, entry_from_config, _usable


# The configurations of a full search a size class keeps (``leaders``).
# On an H100 (2026-11-26, benchmarks/lab/tuning_shortlist.py: fp16 mm at
# 2560-3072 after 2304 and 1536 after 1280, bf16 sdpa at 3500-4000 keys after
# 3100 and 1600 after 2000), timing these 24 chose within 3 % of a full search
# at 7 of 7 shapes (worst 1.004x); a new shape's first call took 1.0-1.6 s for
# mm (a full search 2.6-3.0 s) and about a full search's time for sdpa (1.4-6.5
# s against 2.4-6.1 s). Twelve, each shape's best only, chose within 3 % at 5
# of 7 (1.071x at mm 1536, where the leading shape's other stage count won);
# the class's choice untimed at 3-4 of 7 (up to 1.22x).
SHORTLIST = 24


# The shapes whose every variant a shortlist keeps (``leaders``).
LEADING_SHAPES = 3


MODES = ("class", "shortlist", "full")


def tune_mode():
    """How a call shape not tuned before is tuned, from ``NTSYM_TUNE``:

    - ``shortlist`` (the default): where its size class was tuned, the
      class's shortlist timed; else a full search, which sets the shortlist;
    - ``class``: where its class was tuned, the class's choice, untimed;
    - ``full``: a full search for every shape (``NTSYM_RETUNE=1`` too).

    ``NTSYM_TUNE_SHORTLIST=1`` (older) means ``shortlist``."""
    value = os.environ.get("NTSYM_TUNE", "").strip().lower()
    if not value:
        return "shortlist"
    if value not in MODES:
        fail(f"NTSYM_TUNE={value!r} is not one of {', '.join(MODES)}: set it to `shortlist` (time a size "
             "class's leaders, the default), `class` (reuse the class's choice untimed) or `full` (search every "
             "shape)")
    return value


def _class_configs(spec, key, persistent, key_fixed, classes):
    """The shortlist of ``key``'s size class, best first, without
    configurations this call cannot run: this kernel handle's (``classes``:
    tuned in this process, or loaded from a table), else the stored one;
    None where there is none."""
    configs = classes.get(key)
    if configs:
        configs = _runnable(spec, configs, persistent, key_fixed)
        if configs:
            return configs
    return _load_shortlist(spec, key, persistent, key_fixed)


def _runnable(spec, configs, persistent, key_fixed):
    configs = [c for c in configs if c is not None and (not c.persistent or (
        persistent is not None and persistent.ready(dict(c.meta))))]
    fixed = dict(key_fixed) if key_fixed is not None else None
    return [c for c in configs if fixed is None or _usable(spec, c, fixed, {}, "a stored shortlist") is not None]


def _load_shortlist(spec, key, persistent, key_fixed=None):
    """The stored shortlist of ``key``'s size class, without configurations
    this call cannot run; None where there is none."""
    entry = tuning_store.load(spec, key, "classes")
    configs = [config_from_entry(e) for e in entry.get("configs", [])] if entry else []
    return _runnable(spec, configs, persistent, key_fixed) or None


def leaders(ranked):
    """The configurations a size class keeps of a full search's ``ranked``
    ones (best first): the best of each block shape (the persistent variant
    counted as a shape of its own), in the order of their ranks, then every
    other variant (stages, warps, pointer advancing) of the LEADING_SHAPES
    best shapes, then the next best of any; SHORTLIST at most.  Another size
    of the class may favour another block shape as tiles per wave change (on
    an H100, fp16 mm at 2816 was fastest at 128x256, and the eight best of
    2304's search led it to 128x128, 1.10x slower), or another variant of the
    same shape (mm at 1536: 64x128 with three stages, 1.14x faster than the
    four that led at 1280)."""
    place, best, variants, rest = {}, [], [], []  # place: a shape's rank among the shapes
    for config in ranked:
        shape = (config.meta, config.persistent)
        if shape not in place:
            place[shape] = len(best)
            best.append(config)
        elif place[shape] < LEADING_SHAPES:
            variants.append(config)
        else:
            rest.append(config)
    return tuple((best + variants + rest)[:SHORTLIST])


def _store_shortlist(spec, key, ranked, classes=None):
    """Store the ``leaders`` of a full search's ``ranked`` configurations, on
    disk and in ``classes`` (the kernel handle's, where given)."""
    kept = leaders(ranked)
    if classes is not None:
        classes[key] = kept
    tuning_store.store(spec, key, {"configs": [entry_from_config(c) for c in kept]}, "classes")


def compiled_sizes(spec):
    """(tensor position, dimension) of the sizes the kernel is compiled for
    (constexpr parameters): a size class keeps those exact."""
    tensors = [p for p in spec.params if p.kind == "tensor"]
    return frozenset((i, d) for i, p in enumerate(tensors) for d in range(p.ndim or 0)
                     if f"{p.name}_size_{d}: tl.constexpr" in spec.kernel_source)
