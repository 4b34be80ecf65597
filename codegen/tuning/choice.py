"""``choose``: the configuration of a call, from what the call fixes, what
this process or an earlier one chose for the same facts, or a search."""

import functools
import os
import sys

from codegen.errors import fail
from codegen.tuning import store as tuning_store
from codegen.tuning.config import Config, _no_persistent, _refused, describe
from codegen.tuning.shortlist import _compiled_sizes, _full_search, _load_shortlist, _store_shortlist
from codegen.tuning.space import default_config
from codegen.tuning.store import ints, misalignment
from codegen.tuning.stored import _load, _store, _usable
from codegen.tuning.timing import _benchmark, _end_progress


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
                _store_shortlist(spec, class_key, ranked)
    _end_progress()
    if os.environ.get("NTSYM_PRINT_TUNING") == "1":
        print(f"ntsym: {spec.name} {tuning_store.disk_key(fixed_items, int64, tensors, given)}: {describe(config)}", file=sys.stderr)
    if config.persistent and not persistent.ready(dict(config.meta)):
        fail(_refused(spec, persistent, config))
    tuned[key] = config
    return config


def _tensor_key(tensors):
    """Shapes, strides, dtypes, 16-byte alignment and device: what a tuned
    choice may depend on."""
    return tuple((ints(t.shape), ints(t.stride()), t.dtype, misalignment(t), t.device) for t in tensors)
