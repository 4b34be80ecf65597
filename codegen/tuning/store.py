"""Tuned choices on disk: one JSON file per kernel source, Triton version and
ntsym version under ``$NTSYM_CACHE_DIR/tuning/``, keyed by the call's facts as
text (``disk_key``), so that a later process reuses what an earlier one timed;
beside it a file of shortlists, keyed by the same facts with sizes in classes
(``class_key``): the configurations that led a full tuning of one shape, which
a new shape of the class times instead of every candidate.  Writers lock the
file and replace it atomically; a damaged file reads as empty and is
rewritten.  ``stored`` turns entries into configurations."""

import hashlib
import json
import os

from ntsym_codegen.tracing import traced


def ints(sizes):
    """Sizes or strides as Python ints: a trace with dynamic shapes gives
    symbolic ones, which cannot be hashed; ``int`` specializes the trace to
    this call's values (a choice made for one shape is valid for that shape)."""
    return tuple(map(int, sizes))


def misalignment(t):
    """The data pointer modulo 16; 0 for a fake tensor (traced by
    torch.compile: no data), as PyTorch's allocations are aligned."""
    return 0 if traced((t,)) else t.data_ptr() % 16


def disk_key(fixed_items, int64, tensors, constexprs=()):
    """The same facts as text, stable across processes (device by name)."""
    return _key(fixed_items, int64, tensors, constexprs, lambda i, d, n: n)


def class_key(fixed_items, int64, tensors, constexprs=(), exact=frozenset()):
    """``disk_key`` with each size replaced by its size class (``size_class``),
    but the sizes in ``exact`` ((tensor position, dimension) pairs: those the
    kernel is compiled for) kept as they are."""
    return _key(fixed_items, int64, tensors, constexprs,
                lambda i, d, n: n if (i, d) in exact else size_class(n))


def size_class(n):
    """The smallest of 1, 2, 3, 4, 6, 8, 12, 16, 24, ... (powers of two and
    their halfway points) that is at least ``n``: the sizes of one class are
    within a factor of 1.5 of each other."""
    if n <= 2:
        return n
    power = 1 << (n - 1).bit_length()
    return power * 3 // 4 if power * 3 // 4 >= n else power


def _key(fixed_items, int64, tensors, constexprs, size):
    import torch

    parts = [f"fixed={list(fixed_items)}", f"int64={int64}"]
    if constexprs:
        parts.append(f"constexprs={list(constexprs)}")
    for i, t in enumerate(tensors):
        device = torch.cuda.get_device_name(t.device) if t.device.type == "cuda" else t.device.type
        contiguous = [st == 1 for st in ints(t.stride())]
        base = misalignment(t) == 0
        aligned = base and all(st * t.element_size() % 16 == 0 for st in t.stride()[:-1])
        shape = tuple(size(i, d, n) for d, n in enumerate(ints(t.shape)))
        parts.append(
            f"{shape}:{str(t.dtype)[6:]}:{contiguous}:{t.is_contiguous()}:{base}:"
            f"{aligned}:{device}"
        )
    return "|".join(parts)


def _path(spec, kind="choices"):
    """The file of ``spec``'s stored entries of one kind: ``choices`` (a
    configuration per call shape), ``classes`` (shortlists per size class)."""
    from ntsym_codegen import cache, triton_compat

    ident = "\n".join([spec.kernel_source, triton_compat.version(), cache.package_version()])
    digest = hashlib.sha256(ident.encode()).hexdigest()[:24]
    folder = os.path.join(cache.cache_dir(), "tuning")
    os.makedirs(folder, exist_ok=True)
    suffix = "" if kind == "choices" else f".{kind}"
    return os.path.join(folder, f"{spec.name}_{digest}{suffix}.json")


def location(spec):
    """Where ``spec``'s stored choices are (for messages)."""
    return _path(spec)


def _read(path):
    """The stored entries, or {} when the file is missing or damaged."""
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def load(spec, key, kind="choices"):
    """The stored entry for ``key`` (a dict as ``store`` was given it), or None."""
    entry = _read(_path(spec, kind)).get(key)
    return entry if isinstance(entry, dict) else None


def store(spec, key, entry, kind="choices"):
    """Add one entry to the file: locked read-modify-write (``filelock``, which
    locks on every platform torch runs on), atomic replace."""
    import tempfile

    from filelock import FileLock

    path = _path(spec, kind)
    with FileLock(path + ".lock"):
        data = _read(path)
        data[key] = entry
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp_", suffix=".json")
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=1, sort_keys=True)
        os.replace(tmp, path)
