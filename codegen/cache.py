"""Generated modules on disk: written once, atomically, keyed by a hash of
their source; imported from there so tracebacks and Triton see real files."""

import hashlib
import importlib.util
import os
import sys
import tempfile


def package_version():
    """The installed ntsym's version ("0+unknown" when it is not installed):
    ``ntsym.__version__``, and part of the tuning files' keys."""
    try:
        from importlib.metadata import version

        return version("ntsym")
    except Exception:
        return "0+unknown"


def cache_dir():
    path = os.environ.get("NTSYM_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "ntsym")
    os.makedirs(path, exist_ok=True)
    return path


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


def load(source, name):
    path = write(source, name)
    module_name = "ntsym_generated." + os.path.splitext(os.path.basename(path))[0]
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
