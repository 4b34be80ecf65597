"""``AutoTuner``: the fastest of several kernels for each call's arguments,
as NineToothed's ``auto_tuner.AutoTuner`` chooses among built kernels.

``AutoTuner(funcs, keys)`` is called like the kernels.  The first call with a
given set of argument shapes and dtypes (and other argument values) times
every kernel on those arguments and calls the fastest; later calls with the
same key call it directly.  Timings are kept on disk under
``CACHE_DIR / "auto_tuning"``, keyed by ``keys`` (one per kernel, naming it
across processes), the ntsym and Triton versions.  A kernel that refuses the
arguments (``LaunchError``) times as infinite.  Each kernel runs several
times while it is timed: give it outputs it may overwrite.

(Each ntsym kernel also tunes its own block sizes; this chooses between
kernels, such as variants made with different arrangements.)
"""

import hashlib
import json

from ntsym_codegen import runtime, triton_compat, tuning
from ntsym_codegen.cache import package_version
from ntsym_codegen.errors import LaunchError
from ntsym.generation import CACHE_DIR


class AutoTuner:
    def __init__(self, funcs, keys):
        self._funcs = tuple(funcs)
        self._keys = tuple(str(k) for k in keys)
        if len(self._funcs) != len(self._keys):
            raise ValueError(f"AutoTuner: {len(self._funcs)} kernels but {len(self._keys)} keys; give one key each")
        version = f"ntsym_{package_version()}_triton_{triton_compat.version()}".replace(".", "_")
        digest = hashlib.sha256(str(self._keys).encode()).hexdigest()
        self._path = CACHE_DIR / "auto_tuning" / version / f"{digest}.json"
        self._timings = _read(self._path)
        self._best = {}

    def __call__(self, *args, **kwargs):
        key = _arg_key(args, kwargs)
        best = self._best.get(key)
        if best is None:
            timings = self._timings.get(key)
            if timings is None or len(timings) != len(self._funcs):
                timings = [self._time(func, args, kwargs) for func in self._funcs]
                self._timings[key] = timings
                self._path.parent.mkdir(parents=True, exist_ok=True)
                self._path.write_text(json.dumps(self._timings))
            best = self._best[key] = self._funcs[timings.index(min(timings))]
        return best(*args, **kwargs)

    @staticmethod
    def _time(func, args, kwargs):
        try:
            return tuning.median_ms(_Timing(), lambda: func(*args, **kwargs))
        except LaunchError:
            return float("inf")


class _Timing:
    """What ``tuning.median_ms`` reads of a kernel: whether kernels run in the interpreter."""

    interpreting = runtime.interpreting()


def _read(path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _arg_key(args, kwargs):
    """The call's arguments as text: tensors by shape and dtype, others by value."""
    def one(a):
        if hasattr(a, "shape") and hasattr(a, "dtype"):
            return f"tensor(shape={tuple(a.shape)}, dtype={str(a.dtype).split('.')[-1]})"
        return str(a)

    return ", ".join([one(a) for a in args] + [f"{k}={one(v)}" for k, v in sorted(kwargs.items())])
