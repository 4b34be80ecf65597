"""``choose``: the configuration of a call, from what the call fixes, what
this process or an earlier one chose for the same facts, or a search."""

import functools
import os
import sys

from ntsym_codegen import options as launch_options
from ntsym_codegen import progress
from ntsym_codegen.errors import fail
from ntsym_codegen.tuning import store as tuning_store
from ntsym_codegen.tuning.config import Config, _no_persistent, _refused, describe
from ntsym_codegen.tuning.shortlist import _class_configs, _store_shortlist, compiled_sizes, tune_mode
from ntsym_codegen.tuning.space import default_config
from ntsym_codegen.tuning.store import ints, misalignment
from ntsym_codegen.tuning.stored import _load, _store, _usable
from ntsym_codegen.tuning.timing import benchmark


def _tune_in_interpreter():
    return os.environ.get("NTSYM_TUNE_IN_INTERPRETER", "") == "1"


# Shortlist timings of one size class after which its latest choice stands
# for the class's later shapes even where no two timings agreed.
SETTLE_AFTER = 3


# What ``ntsym_options`` may say (codegen/options.py).
OPTIONS = launch_options.NAMES


def choose(kernel, spec, grid, args, metas, derived, tensors, int64, options=None, persistent=None, *, tuned,
           timed=True, counter=None, classes=None, settled=None):
    """The configuration for this call (None when the problem is empty).
    ``persistent`` is the kernel's persistent variant (:class:`ntsym_codegen.runtime.Persistent`) or
    None; ``ntsym_options={"persistent": True/False}`` asks for it or rules it
    out, ``{"advance": True/False}`` fixes how loops address tiles.
    ``tuned``: the kernel handle's choices so far (``CallCache.tuned``), which
    this one joins.  ``timed=False`` (a call traced with fake tensors) runs
    nothing: a choice stored for the call's shape, else its size class's,
    else the default.  ``counter`` (``ntsym_codegen.counters.Counter``) counts searches and
    what they time; ``classes`` (``CallCache.classes``) holds the size
    classes this kernel handle tuned or was given (``load_tuning``);
    ``settled`` (``CallCache.settled``) what each class's shortlist timings
    chose, from which ``_settled`` reads whether the class has settled."""
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
    launch_options.validate(spec.name, options)
    probe = default_config(spec, dict(fixed_items))
    if grid(dict(probe.meta))[0] == 0:
        return None
    persistent = _variant(spec, options.get("persistent"), persistent, tensors, int64)
    if options.get("advance") and not spec.advance_flag:
        fail(f"kernel `{spec.name}`: ntsym_options asks loops to advance pointers, but no loop of the kernel "
             "reads or writes a tile at an address affine in its index")
    search = _Search(kernel, spec, grid, args, derived, tensors, int64, fixed_items, given, options, persistent,
                     counter, classes, settled)
    config = search.untimed(probe)
    if config is None:
        config = search.stored_or_timed(probe, timed)
        if config is None:  # a trace: not stored, and nothing may be timed
            return search.fallback(probe)
    progress.end()
    if os.environ.get("NTSYM_PRINT_TUNING") == "1":
        print(f"ntsym: {spec.name} for {_shapes(tensors)}: {describe(config)}", file=sys.stderr)
    if config.persistent and not persistent.ready(dict(config.meta)):
        fail(_refused(spec, persistent, config))
    tuned[key] = config
    return config


def _variant(spec, wanted, persistent, tensors, int64):
    """The persistent variant this call may run (None: the plain kernel only),
    refusing a call that asks for one it cannot have."""
    if wanted is False or (persistent is not None and not persistent.usable(spec, tensors, int64)):
        if wanted:
            fail(_no_persistent(spec, "needs 32-bit index math and a GPU of compute capability 9.0 or newer"))
        return None
    if wanted and persistent is None:
        fail(_no_persistent(spec, "has no persistent variant (no loop reads a tile through a tensor descriptor)"))
    return persistent


class _Search:
    """``choose``'s ways to a configuration once the options are valid: fixed
    by the call, the interpreter's default, stored, or timed."""

    def __init__(self, kernel, spec, grid, args, derived, tensors, int64, fixed_items, given, options, persistent,
                 counter=None, classes=None, settled=None):
        self.kernel, self.spec, self.grid, self.args, self.derived = kernel, spec, grid, args, derived
        self.counter, self.classes = counter, classes if classes is not None else {}
        self.settled = settled if settled is not None else {}
        self.tensors, self.int64, self.fixed_items, self.given = tensors, int64, fixed_items, given
        self.options, self.persistent = options, persistent
        self.fixed = dict(fixed_items)
        self.wanted = options.get("persistent")
        self.advance = options.get("advance")
        # The launch options the call fixes that timing keeps as they are.
        self.launch = {o.name: options[o.name] for o in launch_options.OPTIONS
                       if o.type is int and options.get(o.name) is not None}

    def untimed(self, probe):
        """The configuration where nothing is timed: every block size fixed
        (unless only warps are left to time on a GPU), or the interpreter's."""
        spec, options = self.spec, self.options
        # With nothing to tune but the warps (whole-row kernels), a GPU still
        # times a few numbers of warps unless they are given.
        warps_only = not any(m.meta for m in spec.metas) and not (options.get("num_warps") or spec.num_warps)
        if all(m.symbol.name in self.fixed for m in spec.metas if m.meta) and (spec.interpreting or not warps_only):
            warps = options.get("num_warps") or spec.num_warps or launch_options.NUM_WARPS.default
            stages = options.get("num_stages") or spec.num_stages or launch_options.NUM_STAGES.default
            return Config(self.fixed_items, warps, stages, bool(self.wanted), bool(self.advance))
        if spec.interpreting and not _tune_in_interpreter():
            # The interpreter times nothing meaningful: no tuning.
            return Config(probe.meta, self.launch.get("num_warps", probe.num_warps),
                          self.launch.get("num_stages", probe.num_stages), bool(self.wanted), bool(self.advance))
        return None

    def fallback(self, probe):
        """A traced call's configuration where nothing is stored: a real call
        of this shape still tunes."""
        return Config(probe.meta, self.launch.get("num_warps", probe.num_warps),
                      self.launch.get("num_stages", probe.num_stages), False, bool(self.advance))

    def stored_or_timed(self, probe, timed):
        """A stored choice, else (where ``timed``) its size class's choice or
        the fastest of a search (``shortlist.tune_mode``); None where nothing is
        stored and nothing may be timed."""
        spec, persistent = self.spec, self.persistent
        # A choice restricted by the caller is stored apart.
        restricted = launch_options.tuning_key(self.options)
        disk_key = tuning_store.disk_key(self.fixed_items, self.int64, self.tensors, self.given) + restricted
        retune = os.environ.get("NTSYM_RETUNE") == "1" and timed
        mode = "full" if retune else tune_mode()
        stored = None if retune else _load(spec, disk_key, shortlisted=mode != "full")
        config = _usable(spec, stored, self.fixed, self.launch, "a stored choice")
        if stored is not None and config is None:
            mode = "full"  # a damaged entry is searched again, and replaced
        if config is not None and config.persistent and (persistent is None or not persistent.ready(dict(config.meta))):
            config = None
        if config is not None:
            return config
        class_key = tuning_store.class_key(self.fixed_items, self.int64, self.tensors, self.given,
                                           compiled_sizes(spec)) + restricted
        shortlist = None if mode == "full" else _class_configs(spec, class_key, persistent, self.fixed_items,
                                                               self.classes)
        settled = _settled(self.settled.get(class_key), shortlist)
        if settled is not None and mode != "full":  # its timings agreed: untimed
            return settled
        if (mode == "class" or not timed) and shortlist:  # the class was tuned: its choice, untimed
            return shortlist[0]
        if not timed:
            return None
        search = functools.partial(benchmark, self.kernel, spec, self.grid, self.args, self.derived, self.tensors,
                                   self.int64, self.fixed, persistent, bool(self.wanted), self.advance, self.launch,
                                   counter=self.counter)
        config, ranked = search(shortlist=shortlist) if shortlist else (None, [])
        if config is None:  # no shortlist, or none of it runs at this shape
            shortlist = None
            config, ranked = search()
        _store(spec, disk_key, config, shortlisted=shortlist is not None)
        if shortlist is None:  # only a full search sets its class's shortlist
            _store_shortlist(spec, class_key, ranked, self.classes)
        else:
            history = self.settled.setdefault(class_key, [])  # what ``_settled`` reads
            history.append(config)
            del history[:-SETTLE_AFTER]  # a class that never settles keeps timing, not a growing list
        return config


def _settled(history, shortlist):
    """The configuration a size class's later shapes take untimed, or None:
    where the class's latest shortlist timing chose what its search chose
    (``shortlist[0]``) or what the timing before chose, or after
    ``SETTLE_AFTER`` timings, its choice.  A decode loop's cache length, one
    longer each step, would otherwise time the shortlist at every step."""
    if not history or not shortlist or history[-1] not in shortlist:
        return None
    last = history[-1]
    if last == shortlist[0] or history[-2:-1] == [last] or len(history) >= SETTLE_AFTER:
        return last
    return None


def _tensor_key(tensors):
    """Shapes, strides, dtypes, 16-byte alignment and device: what a tuned
    choice may depend on."""
    return tuple((ints(t.shape), ints(t.stride()), t.dtype, misalignment(t), t.device) for t in tensors)


def _shapes(tensors):
    """The call's tensors as ``shape dtype`` (what NTSYM_PRINT_TUNING shows)."""
    return ", ".join(f"{tuple(t.shape)} {str(t.dtype).replace('torch.', '')}" for t in tensors) or "no tensors"
