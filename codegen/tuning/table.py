"""A portable table of tuned choices: a kernel's size classes and the
configurations that led their searches, as one JSON file to ship with a
program (``Kernel.save_tuning`` / ``Kernel.load_tuning``).

Keys are ``store.class_key`` texts: block sizes the call fixed, the index
width, compile-time values, and per tensor its size classes, dtype, layout
and alignment facts and the device by name (``NVIDIA H100 80GB HBM3``): no
path, no process.  The header names the kernel, the digest of its source and
the Triton version: a table is used only by the same kernel source under the
same Triton version, as the cache's tuning files are (their entries are
valid elsewhere, but what is fastest moves with the compiler)."""

import hashlib
import json
import os
import warnings

from ntsym_codegen.tuning import store as tuning_store
from ntsym_codegen.tuning.stored import config_from_entry, entry_from_config

FORMAT = "ntsym-tuning-table/1"


def header(spec):
    """What a table must match to be used: format, kernel, source, Triton."""
    from ntsym_codegen import triton_compat

    digest = hashlib.sha256(spec.kernel_source.encode()).hexdigest()[:24]
    return {"format": FORMAT, "kernel": spec.name, "source": digest, "triton": triton_compat.version()}


def save(spec, classes, path):
    """Write ``spec``'s tuned size classes (the cache's file of shortlists,
    then ``classes``, the kernel handle's, which win) to ``path``; returns
    how many were written."""
    stored = tuning_store._read(tuning_store._path(spec, "classes"))
    table = {key: entry["configs"] for key, entry in stored.items()
             if isinstance(entry, dict) and isinstance(entry.get("configs"), list)}
    table.update({key: [entry_from_config(c) for c in configs] for key, configs in classes.items()})
    data = {**header(spec), "classes": table}
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1, sort_keys=True)
    os.replace(tmp, path)
    return len(table)


def load(spec, classes, path):
    """Add the size classes of the table at ``path`` to ``classes``; returns
    how many were added (0, with a warning, for a table of another kernel
    source or Triton version; entries a launch could not take are left out)."""
    with open(path) as f:
        data = json.load(f)
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        warnings.warn(f"ntsym: {path} is not a tuning table ({FORMAT}); not used", stacklevel=3)
        return 0
    expected = header(spec)
    for field, what in (("source", "kernel source"), ("triton", "Triton version")):
        if data.get(field) != expected[field]:
            warnings.warn(f"ntsym: the tuning table {path} was saved for kernel `{data.get('kernel')}` with another "
                          f"{what} ({data.get(field)!r}, here {expected[field]!r}); not used: tune here and save "
                          "again", stacklevel=3)
            return 0
    added = 0
    for key, entries in (data.get("classes") or {}).items():
        configs = tuple(c for c in (config_from_entry(e) for e in entries if isinstance(e, dict)) if c is not None)
        if configs:
            classes[key] = configs
            added += 1
    return added
