"""What a kernel's calls cost: kernel variants built, tuning searches run,
configurations timed, launches; per kernel handle and for the whole process.

A *variant* is what Triton compiles once: the kernel (plain or persistent)
with one set of compile-time values, which are the constexpr arguments by
value (block sizes, padded blocks, constexpr sizes, flags), the launch
options (``num_warps``, ``num_stages``) and what Triton specializes the other
arguments on: each tensor's element type and 16-byte alignment, each
integer's being 1, a multiple of 16, and its width.  Variants are reckoned
here from the launch's arguments, the same way under Triton's interpreter
(which compiles nothing) as on a GPU, so that tests and benchmarks on a CPU
see what a GPU would compile.  ``note_variant`` is called where a launch's
arguments are put together (``tuning.launch_parts``) and where a remembered
call shape launches with integers that may differ from its first launch's."""

import threading
import weakref
from dataclasses import dataclass, fields


@dataclass(frozen=True)
class Stats:
    """A snapshot of the counters: ``compiles`` (distinct kernel variants
    built), ``tunes`` (full tuning searches run), ``candidates_timed``
    (configurations timed by searches of either kind), ``launches`` (calls
    that launched the kernel, tuning's timed runs not included) and
    ``shortlists`` (new shapes of a size class already searched, for which
    the class's shortlist was timed)."""

    compiles: int = 0
    tunes: int = 0
    candidates_timed: int = 0
    launches: int = 0
    shortlists: int = 0

    def __add__(self, other):
        return Stats(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(Stats)))

    def __sub__(self, other):
        return Stats(*(getattr(self, f.name) - getattr(other, f.name) for f in fields(Stats)))

    def as_dict(self):
        return {f.name: getattr(self, f.name) for f in fields(Stats)}


_NAMES = tuple(f.name for f in fields(Stats))


class Counter:
    """The counters of one kernel handle (kept in its ``CallCache``), with
    the variants it has built.  Counts of a collected counter are kept in the
    process's total."""

    __slots__ = _NAMES + ("variants", "__weakref__")

    def __init__(self):
        self.reset()
        _LIVE.add(self)

    def reset(self):
        for name in _NAMES:
            setattr(self, name, 0)
        self.variants = set()

    def snapshot(self):
        return Stats(*(getattr(self, name) for name in _NAMES))

    def __del__(self):
        try:
            _RETIRED[0] = _RETIRED[0] + self.snapshot()
        except Exception:  # interpreter shutdown: module globals may be gone
            pass


_LIVE = weakref.WeakSet()
_RETIRED = [Stats()]  # the counts of collected counters


def total():
    """The process's counts: every kernel handle's, collected ones included."""
    result = _RETIRED[0]
    for counter in list(_LIVE):
        result = result + counter.snapshot()
    return result


def reset():
    """Zero every counter and the process's total (tests, benchmarks)."""
    _RETIRED[0] = Stats()
    for counter in list(_LIVE):
        counter.reset()


def note_variant(counter, kernel, args, kwargs, options=()):
    """Count the variant a launch of ``kernel`` with ``args`` and ``kwargs``
    needs, where ``counter`` has not built it before (``counter`` None:
    nothing is counted).  ``options``: the configuration's warps and stages,
    which the interpreter is not given but a GPU compiles for."""
    if counter is None:
        return
    constexprs = _constexpr_positions(kernel)
    key = (id(kernel), tuple(hashable(a) if i in constexprs else _specialization(a) for i, a in enumerate(args)),
           tuple(sorted((k, hashable(v)) for k, v in kwargs.items())), options)
    if key in counter.variants:
        return
    with _LOCK:  # warm-up compiles calls in threads
        if key not in counter.variants:
            counter.variants.add(key)
            counter.compiles += 1


_CONSTEXPRS = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def _constexpr_positions(kernel):
    """The positions of ``kernel``'s ``tl.constexpr`` parameters (a
    ``JITFunction``'s ``params``, or the annotations of the function an
    ``InterpretedFunction`` wraps): passed positionally, they key a variant
    by value."""
    try:
        return _CONSTEXPRS[kernel]
    except (KeyError, TypeError):
        pass
    params = getattr(kernel, "params", None)
    if params is not None:
        positions = frozenset(i for i, p in enumerate(params) if p.is_constexpr)
    else:
        import inspect

        fn = getattr(kernel, "fn", None)
        try:
            signature = inspect.signature(fn)
        except (TypeError, ValueError):
            return frozenset()
        positions = frozenset(i for i, p in enumerate(signature.parameters.values())
                              if "constexpr" in str(p.annotation))
    try:
        _CONSTEXPRS[kernel] = positions
    except TypeError:  # not weakly referable: asked again next time
        pass
    return positions


def _specialization(value):
    """What Triton compiles an argument for (its ``specialize_impl``): a
    tensor's element type and 16-byte alignment; an integer's being 1 (a
    constant), a multiple of 16, and its width; other values by type."""
    if hasattr(value, "data_ptr") and hasattr(value, "dtype"):
        try:
            aligned = value.data_ptr() % 16 == 0
        except Exception:  # a fake tensor (traced): PyTorch's allocations are aligned
            aligned = True
        return ("tensor", value.dtype, aligned)
    if isinstance(value, bool) or value is None:
        return (type(value), value)
    if isinstance(value, int):
        if value == 1:
            return ("int", 1)
        width = 32 if -(2**31) <= value < 2**31 else 64 if -(2**63) <= value < 2**63 else "u64"
        return ("int", value % 16 == 0, width)
    return (type(value),)


def hashable(value):
    """``value`` as a compile-time value keys a variant (also the runtime's
    call keys): itself with its type, or its repr where it cannot be hashed."""
    if type(value) is float:  # -0.0 and 0.0 are different compile-time values (x * -0.0 differs in sign)
        return (float, repr(value))
    try:
        hash(value)
    except TypeError:
        return (type(value), repr(value))
    return (type(value), value)  # True and 1 differ as constexprs
