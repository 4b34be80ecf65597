"""Quick matching of a warm call: a call shape seen before, recognised
without building its call key.

A call given no options is remembered (at the second call of its shape, the
first that the call key finds; compile-time values it gives by keyword, as
NineToothed's calls give their block sizes, compared by type and value) with
torch's tensor guards for its tensors (``torch._C._dynamo.guards.
TensorGuards``, what torch.compile's graphs check their inputs with, in
C++): Python type, dispatch keys (device type, the negative and conjugate
bits, nested and sparse layouts), dtype, device index, requires_grad, sizes
and strides, over the distinct tensors (a tensor given twice, in place, is
matched by the same object at the same places).  The data pointers'
residues modulo 16 (what Triton specialises on) are compared apart, and
each other argument by its exact type (scalars) or type and value
(compile-time values).  Every fact the call key holds is among these, so a
call the guards pass has the key of the entry they were made for: only a
call that the key would also match is launched through them.  Two facts
are read apart because the guards cannot be trusted with them: a nested
tensor (the guards cannot read its strides and end the process) and the
negative bit (the guards see it as a dispatch key, which a thread's local
state may exclude).  The device type is also seen only as a dispatch key
(the index is compared itself): a thread's state would have to include
another backend's key to hide it, which torch does not do.  Where the
guards are missing or do not behave as this module expects (a check at
their first use), no call is remembered this way and every warm call builds
its key."""

from ntsym_codegen.counters import hashable
from ntsym_codegen.runtime.checks import _call_types

# The most call shapes a kernel handle remembers this way, the last learned
# tried first; learning one more forgets the oldest (a decode loop's growing
# cache makes a new shape every step).  A forgotten entry keeps its match: the
# next call its key finds puts it back in front, without building its guards
# again (a decode loop that replays its cache lengths, as each new generation
# does, matches all but the first call of each length without a key).
LIMIT = 16


# Compile-time values compared by value (others are not remembered).
_VALUES = (bool, int, float, str, type(None))


class Quick:
    __slots__ = ("guards", "aligns", "entry", "positions", "others", "repeats", "distinct", "metas", "express",
                 "tried")

    def __init__(self, guards, aligns, entry, positions, others, repeats=(), distinct=None, metas=None):
        self.guards = guards
        self.aligns = aligns  # each tensor's data pointer modulo 16
        self.entry = entry
        self.positions = positions  # the tensors' argument positions; None: every argument
        # ((position, type, value as the key holds it, compared by value), ...) of the other arguments
        self.others = others
        # A tensor given more than once (in place): (k, first) where the k-th
        # tensor is the first-th, and the indices of the distinct ones, which
        # the guards check (None: every tensor is distinct).
        self.repeats = repeats
        self.distinct = distinct
        self.metas = metas  # the compile-time values given by keyword (``_given``), or None
        # The express launch written for this shape (``runtime.express``), made at
        # its first launch through the compiled binary (tried: whether made yet).
        self.express = None
        self.tried = False


def find(table, args, metas=()):
    """The remembered entry this call matches and its tensors' data pointers
    (in the order of the entry's ``tensor_positions``), or None.  ``metas``:
    the compile-time values the call gave by keyword (None: not given)."""
    given = _given(metas)
    positions = tensors = None
    plain = False
    for quick in table:
        if quick.metas != given:
            continue
        if tensors is None or quick.positions != positions:
            positions = quick.positions
            tensors = args if positions is None else [args[i] for i in positions]
            plain = _plain(tensors)
        if not plain:  # not for the guards at these positions (a shape with others may match)
            continue
        if quick.others and not _others_match(quick, args):
            continue
        if quick.repeats and not all(tensors[k] is tensors[first] for k, first in quick.repeats):
            continue
        if quick.guards.check(*(tensors if quick.distinct is None else [tensors[k] for k in quick.distinct])):
            pointers = []
            for a, residue in zip(tensors, quick.aligns):
                pointer = a.data_ptr()
                if pointer & 15 != residue:
                    break
                pointers.append(pointer)
            else:
                return quick.entry, pointers
    return None


def _plain(tensors):
    """Whether the guards may be asked about ``tensors``: no nested tensor
    (the guards cannot read its strides, and end the process), no view with
    the negative bit (the guards see that bit as a dispatch key, which a
    thread may exclude; the call key reads it, and so does this)."""
    try:
        for t in tensors:  # one loop, attributes read directly: half the time of any(map(...)) twice
            if t.is_nested or t.is_neg():
                return False
        return True
    except (AttributeError, TypeError):  # not a tensor: the call key's path refuses it
        return False


def _others_match(quick, args):
    """Whether the arguments besides the tensors match ``quick``'s."""
    for i, kind, value, by_value in quick.others:
        a = args[i]
        if type(a) is not kind or (by_value and hashable(a) != value):
            return False
    return True


def _given(metas):
    """The compile-time values a call gave by keyword, as the match compares
    them (by type and value); None where it gave none."""
    if metas.count(None) == len(metas):
        return None
    return tuple(hashable(m) for m in metas)


def learn(cache, entry, args, constexprs=(), metas=()):
    """Remember ``entry`` (the one the call key found for ``args``, whose
    launch went through) for quick matching, once, where its tensors are
    plain tensors and its compile-time values (the argument positions
    ``constexprs``) are numbers, strings or None.  A tensor given twice (in
    place) is matched by the same object given at the same places."""
    entry.learned = True
    if any(m is not None and type(m) not in _VALUES for m in metas):
        return  # keyed by more than a value compared here
    if entry.quick is not None:  # made before, forgotten since
        _remember(cache, entry.quick)
        return
    guards_type = _guards()
    if guards_type is None:
        return
    positions = entry.tensor_positions
    tensors = [args[i] for i in positions]
    tensor_type = _call_types()[2]
    if any(type(a) is not tensor_type for a in tensors):
        return
    firsts = {}
    pattern = [firsts.setdefault(id(a), k) for k, a in enumerate(tensors)]
    repeats = tuple((k, first) for k, first in enumerate(pattern) if first != k)
    distinct = tuple(k for k, first in enumerate(pattern) if first == k) if repeats else None
    unique = tensors if distinct is None else [tensors[k] for k in distinct]
    others = []
    for i, a in enumerate(args):
        if i in positions:
            continue
        if isinstance(a, tensor_type) or hasattr(a, "shape") or (i in constexprs and type(a) not in _VALUES):
            return  # keyed by more than its type (or a value not compared here)
        others.append((i, type(a), hashable(a), i in constexprs))  # by value as the call key holds it
    try:
        guards = guards_type(*unique, dynamic_dims_sizes=None, dynamic_dims_strides=None)
        if not guards.check(*unique):  # a state the guards read (dispatch keys) moved meanwhile
            return
        aligns = tuple(a.data_ptr() & 15 for a in tensors)
    except Exception:
        return
    every = len(positions) == len(args)
    entry.quick = Quick(guards, aligns, entry, None if every else positions, tuple(others), repeats, distinct,
                        _given(metas))
    _remember(cache, entry.quick)


def _remember(cache, quick):
    """Put ``quick`` in front of ``cache.quick``; the oldest beyond ``LIMIT``
    are forgotten with their express launches, their entries offered again
    at their next keyed call."""
    table = cache.quick
    table.insert(0, quick)
    for forgotten in table[LIMIT:]:
        forgotten.entry.learned = False
        if forgotten.express is not None:  # made again at its next launch, if learned again
            cache.express.remove(forgotten.express)
            forgotten.express, forgotten.tried = None, False
    del table[LIMIT:]


def _guards():
    global _GUARDS
    if _GUARDS is False:
        _GUARDS = _probe()
    return _GUARDS


_GUARDS = False  # not asked yet


def _probe():
    """torch's TensorGuards, where they exist and tell apart every fact of a
    call key that a CPU can show (sizes, strides, dtype, the negative bit,
    requires_grad, the Python type, a tensor given twice); else None."""
    try:
        import torch
        from torch._C._dynamo.guards import TensorGuards

        a = torch.zeros(2, 3)
        b = torch.zeros(3, 2).t()
        guards = TensorGuards(a, b, dynamic_dims_sizes=None, dynamic_dims_strides=None)
        same = guards.check(torch.ones(2, 3), torch.ones(3, 2).t())
        others = (
            (torch.zeros(2, 4), b),
            (a, torch.zeros(2, 3)),  # strides
            (a.double(), b),
            (torch._neg_view(a), b),
            (a.clone().requires_grad_(), b),
            (torch.nn.Parameter(a.clone(), requires_grad=False), b),
            (a, a),  # shape and strides differ too, and one tensor twice
            (torch.zeros(2, 3, 1), b),
        )
        if same is not True or any(guards.check(*pair) is not False for pair in others):
            return None
        return TensorGuards
    except Exception:
        return None
