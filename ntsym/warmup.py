"""``Kernel.warmup``: compile (and on a GPU tune) ahead of the first real
calls, from example tensors or shapes.

Two passes.  The first compiles, for every call, the variant it would launch
with the configuration chosen without timing (one stored for the shape or its
size class, else the default), several calls at a time in threads (Triton's
compiler spends its time outside the GIL); nothing runs.  The second makes
each call for real, one after another (timings of one GPU must not overlap):
a call whose size class was not tuned tunes (its candidates compiled in
parallel, ``tuning.compile_ahead``), every call is validated and remembered,
so that the same call shape later takes the fast path."""

import dataclasses
from concurrent.futures import ThreadPoolExecutor

import torch

from ntsym.errors import LaunchError


def warmup(kernel, calls, dtype=None, device=None, threads=None):
    """Warm ``kernel`` up for ``calls`` (see ``Kernel.warmup``); returns what
    it cost (``ntsym.Stats``)."""
    before = kernel.stats
    made = [_arguments(kernel, call, dtype, device) for call in calls]
    from ntsym_codegen import tuning

    workers = max(1, min(threads or tuning.compile_threads(), len(made)))
    if made:
        # One first, on this thread: it sets up the kernel's per-device state
        # (as ``tuning.compile_ahead`` does).
        kernel._compile_call(*made[0])
    if workers < 2:
        for args, kwargs in made[1:]:
            kernel._compile_call(args, kwargs)
    else:
        with ThreadPoolExecutor(workers, thread_name_prefix="ntsym-warmup") as pool:
            list(pool.map(lambda call: kernel._compile_call(*call), made[1:]))
    for args, kwargs in made:
        kernel(*args, **kwargs)
    return kernel.stats - before


def _arguments(kernel, call, dtype, device):
    """The positional and keyword arguments of one warm-up call, with fresh
    tensors (the kernel writes its outputs: never the caller's own)."""
    kwargs = {}
    if isinstance(call, dict):
        call = dict(call)
        args = call.pop("args", ())
        kwargs = call
    elif isinstance(call, (tuple, list)):
        args = call
    else:
        raise LaunchError(f"kernel `{kernel.name}`: warmup takes one tuple of arguments per call (tensors, shapes, "
                          f"(shape, dtype) pairs, scalars) or a dict of keyword arguments, got {call!r}")
    return tuple(_argument(kernel, a, dtype, device) for a in args), kwargs


def _argument(kernel, value, dtype, device):
    """A tensor like ``value`` (same shape, strides, dtype, device and
    values: an index tensor must stay in range), zeros of a shape, or the
    value itself."""
    if isinstance(value, torch.Tensor):
        copy = torch.empty_strided(value.shape, value.stride(), dtype=value.dtype, device=value.device)
        return value if _overlapping(value) else copy.copy_(value)  # overlapping: read only
    if _is_shape(value):
        return torch.zeros(tuple(value), dtype=dtype or torch.float32, device=device)
    if (isinstance(value, tuple) and len(value) == 2 and _is_shape(value[0])
            and isinstance(value[1], torch.dtype)):
        return torch.zeros(tuple(value[0]), dtype=value[1], device=device)
    return value


def _is_shape(value):
    return isinstance(value, (tuple, list, torch.Size)) and all(
        isinstance(n, int) and not isinstance(n, bool) for n in value)


def _overlapping(t):
    """Whether ``t``'s elements overlap (stride 0 along a dimension of more
    than one element): such a view cannot be copied into."""
    return any(st == 0 and n > 1 for n, st in zip(t.shape, t.stride()))


def compile_facts(facts):
    """``facts`` for compile-only calls: the kernel's counters and size
    classes, but calls of their own (nothing is remembered for the fast
    path) and choices of their own (an untimed choice must not stand in for
    a real call's tuning)."""
    from ntsym_codegen import runtime

    cache = runtime.CallCache(counts=facts.cache.counts, classes=facts.cache.classes,
                              settled=facts.cache.settled)
    return dataclasses.replace(facts, cache=cache, compile_only=True)
