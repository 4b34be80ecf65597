"""Shortlists: the configurations that led a full search of one shape, which a
new shape of the same size class times instead of every candidate (with
NTSYM_TUNE_SHORTLIST=1)."""

import os

from ntsym_codegen.tuning import store as tuning_store
from ntsym_codegen.tuning.stored import config_from_entry, entry_from_config, _usable


# With NTSYM_TUNE_SHORTLIST=1, a call shape not tuned before whose size class
# (``store.class_key``: the sizes of a class within a factor of 1.5 of
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
    configs = [config_from_entry(e) for e in entry.get("configs", [])] if entry else []
    configs = [c for c in configs if c is not None and (not c.persistent or (
        persistent is not None and persistent.ready(dict(c.meta))))]
    fixed = dict(key_fixed) if key_fixed is not None else None
    configs = [c for c in configs if fixed is None or _usable(spec, c, fixed, {}, "a stored shortlist") is not None]
    return configs or None


def _store_shortlist(spec, key, ranked):
    """Store the SHORTLIST leaders of a full search's ``ranked`` configurations."""
    tuning_store.store(spec, key, {"configs": [entry_from_config(c) for c in ranked[:SHORTLIST]]}, "classes")


def compiled_sizes(spec):
    """(tensor position, dimension) of the sizes the kernel is compiled for
    (constexpr parameters): a size class keeps those exact."""
    tensors = [p for p in spec.params if p.kind == "tensor"]
    return frozenset((i, d) for i, p in enumerate(tensors) for d in range(p.ndim or 0)
                     if f"{p.name}_size_{d}: tl.constexpr" in spec.kernel_source)
