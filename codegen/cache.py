"""Generated modules on disk: written once, atomically, keyed by a hash of
their source; imported from there so tracebacks and Triton see real files."""

import hashlib
import importlib.util
import os
import shutil
import sys
import tempfile
import threading
import warnings


def package_version():
    """The installed ntsym's version ("0+unknown" when it is not installed):
    ``ntsym.__version__``, and part of the tuning files' keys."""
    try:
        from importlib.metadata import version

        return version("ntsym")
    except Exception:
        return "0+unknown"


def default_cache_dir():
    """``$XDG_CACHE_HOME/ntsym`` (the XDG base directory rule: only an
    absolute ``XDG_CACHE_HOME`` counts), else ``~/.cache/ntsym``."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = xdg if os.path.isabs(xdg) else os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "ntsym")


def cache_dir():
    """Where generated modules and tuning files go: ``$NTSYM_CACHE_DIR``, else
    ``default_cache_dir()``; where that cannot be used (a file, no permission),
    a temporary directory of this process, with a warning naming the variable."""
    path = os.environ.get("NTSYM_CACHE_DIR") or default_cache_dir()
    try:
        os.makedirs(path, exist_ok=True)
        if not os.access(path, os.W_OK | os.X_OK):
            raise PermissionError(f"no permission to write in {path}")
        return path
    except OSError as error:
        if path in _WARNED:
            return _fallback()
        _WARNED.add(path)
        resolved = _fallback()
        warnings.warn(f"ntsym: the cache directory {path!r} (NTSYM_CACHE_DIR, default $XDG_CACHE_HOME/ntsym "
                      f"or ~/.cache/ntsym) cannot be used ({type(error).__name__}: {error}); generated kernels and tuning choices go to "
                      f"{resolved} for this process; set NTSYM_CACHE_DIR to a writable directory",
                      stacklevel=2)
        return resolved


_WARNED = set()  # unusable cache directories already warned about


def _fallback():
    """A temporary directory, made once per process."""
    global _TEMPORARY
    if _TEMPORARY is None or not os.path.isdir(_TEMPORARY):
        _TEMPORARY = tempfile.mkdtemp(prefix="ntsym-cache-")
    return _TEMPORARY


_TEMPORARY = None


def _marker(source):
    return "# ntsym-sha256: " + hashlib.sha256(source.encode()).hexdigest() + "\n"


def write(source, name):
    """The path of a module holding ``source`` (written if not already there)."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:24]
    path = os.path.join(cache_dir(), f"{name}_{digest}.py")
    text = source + _marker(source)
    if not _valid(path, text):
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp_", suffix=".py")
        try:
            with os.fdopen(fd, "w") as f:
                f.write(text)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    return path


def _valid(path, text):
    """A cached file is used only if it is exactly what would be written."""
    try:
        with open(path) as f:
            return f.read() == text
    except OSError:
        return False


# One module loaded at a time: a module is in ``sys.modules`` while it runs,
# and another thread must not take it before it has run to its end.
_LOADING = threading.RLock()


def load(source, name):
    path = write(source, name)
    module_name = "ntsym_generated." + os.path.splitext(os.path.basename(path))[0]
    with _LOADING:
        if module_name in sys.modules:
            return sys.modules[module_name]
        spec = importlib.util.spec_from_file_location(module_name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[module_name]
            raise
    return module


# What ntsym writes in the cache directory: generated modules (``NAME_HASH.py``),
# half-written files (``.tmp_*``), tuning choices and NineToothed-style
# auto-tuning records (folders).
_FOLDERS = ("tuning", "auto_tuning")


def _own_entries(path):
    """The cache's entries ntsym wrote (nothing else in the folder is touched)."""
    if not os.path.isdir(path):
        return []
    found = []
    for name in sorted(os.listdir(path)):
        full = os.path.join(path, name)
        if name in _FOLDERS and os.path.isdir(full):
            found.append(full)
        elif os.path.isfile(full) and (name.startswith(".tmp_") or (name.endswith(".py") and _is_generated(full))):
            found.append(full)
    return found


def _is_generated(path):
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.path.getsize(path) - 100))
            return b"# ntsym-sha256: " in f.read()
    except OSError:
        return False


def _size_and_files(path):
    if os.path.isfile(path):
        return os.path.getsize(path), 1
    size = files = 0
    for root, _, names in os.walk(path):
        for name in names:
            try:
                size += os.path.getsize(os.path.join(root, name))
            except OSError:
                continue
            files += 1
    return size, files


def summary(path=None):
    """``{"path", "modules", "tuning_files", "bytes"}`` of the cache at ``path``
    (default: ``cache_dir()``)."""
    path = path or cache_dir()
    modules = tuning = total = 0
    for entry in _own_entries(path):
        size, files = _size_and_files(entry)
        total += size
        if os.path.basename(entry) in _FOLDERS:
            tuning += files
        else:
            modules += 1
    return {"path": path, "modules": modules, "tuning_files": tuning, "bytes": total}


def clear(path=None):
    """Remove what ntsym wrote in the cache at ``path`` (default:
    ``cache_dir()``); returns the number of bytes freed."""
    path = path or cache_dir()
    freed = 0
    for entry in _own_entries(path):
        freed += _size_and_files(entry)[0]
        if os.path.isdir(entry):
            shutil.rmtree(entry, ignore_errors=True)
        else:
            try:
                os.unlink(entry)
            except OSError:
                pass
    return freed
