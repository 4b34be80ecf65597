"""Configurations as stored entries: written to and read back from the
tuning files (``store``), where a file anyone may have edited is checked
before a launch takes what it says."""

import warnings

from ntsym_codegen.options import OPTIONS
from ntsym_codegen.tuning import store as tuning_store
from ntsym_codegen.tuning.config import Config


def _load(spec, key, shortlisted=False):
    """The configuration stored for ``key``, or None (none stored, an entry
    this version cannot read, or one chosen from a size class's shortlist
    where ``shortlisted`` does not allow those)."""
    entry = tuning_store.load(spec, key)
    if entry is not None and entry.get("shortlist") and not shortlisted:
        return None
    return config_from_entry(entry)


def _store(spec, key, config, shortlisted=False):
    entry = entry_from_config(config)
    if shortlisted:  # chosen among a shortlist: a full search replaces it
        entry["shortlist"] = True
    tuning_store.store(spec, key, entry)


def entry_from_config(config):
    """A configuration as a stored entry: its block sizes and each launch option."""
    return {"meta": [list(kv) for kv in config.meta], **{o.name: getattr(config, o.name) for o in OPTIONS}}


def config_from_entry(entry):
    """A stored entry as a configuration, or None where it cannot be read: a
    bool option missing from it (an entry older than the option) takes the
    schema's default; an int one is required."""
    try:
        values = {o.name: bool(entry.get(o.name, o.default)) if o.type is bool else int(entry[o.name])
                  for o in OPTIONS}
        return Config(tuple((k, int(v)) for k, v in entry["meta"]), **values)
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
    for option in OPTIONS:
        if not option.allows(getattr(config, option.name)):
            return f"{option.name}={getattr(config, option.name)} is not {option.allowed_text}"
    for name, value in launch.items():
        if getattr(config, name) != value:
            return f"{name}={getattr(config, name)} where the call asks for {value}"
    return None
