"""Jagged tensors at launch: a batch of sequences of different lengths.

A kernel parameter declared ``Tensor(ndim, jagged_dim=d)`` takes either a
``torch.nested`` tensor of the jagged layout (``_ragged_idx == d``), as in
NineToothed, or, for packed buffers, ``ntsym.jagged(values, offsets)``: the
sequences' rows one after another in ``values`` (dimension ``d - 1`` of
``values`` runs over all rows of all sequences) and ``offsets`` (``B + 1``
integers, cu_seqlens style) where sequence ``b`` is rows ``offsets[b]`` to
``offsets[b + 1]``.

Before the launch, each jagged argument becomes a dense view of its values,
``(B, longest, ...)`` with stride 0 along the batch, and its offsets are
passed beside it; the kernel moves each program's pointer to its sequence and
masks with its length (see docs/jagged.md).  The offsets are validated
(integers, on the values' device, non-decreasing, within the values) from
the data, once per state of the offsets tensor (``_offset_stats_once``), by
the checks a standalone module runs too (``codegen/runtime/jagged.py``).
"""

import weakref
from typing import Optional

import numpy
import torch

from ntsym_codegen.errors import LaunchError
from ntsym_codegen.runtime.jagged import check_jagged_memory, check_offsets, check_same_offsets, offset_stats


class Jagged:
    """A batch of sequences kept as packed ``values`` and their ``offsets``
    (see :func:`jagged`, which makes one and checks its arguments):
    ``jagged_dim`` is the ragged dimension of the tensor the kernel sees,
    ``max_length`` the longest sequence where it is known."""

    __slots__ = ("values", "offsets", "jagged_dim", "max_length")

    def __init__(self, values, offsets, jagged_dim=1, max_length=None):
        self.values = values
        self.offsets = offsets
        self.jagged_dim = jagged_dim
        self.max_length = max_length

    @property
    def shape(self):
        """``(B, ..., None, ...)``: the ragged dimension's length is per sequence."""
        rest = list(self.values.shape)
        rest[self.jagged_dim - 1] = None
        return (self.offsets.numel() - 1, *rest)

    @property
    def dtype(self):
        return self.values.dtype

    @property
    def device(self):
        return self.values.device

    def lengths(self):
        return self.offsets.diff()

    def unbind(self):
        """The sequences, as views of ``values``."""
        bounds = self.offsets.tolist()
        d = self.jagged_dim - 1
        return tuple(self.values.narrow(d, a, b - a) for a, b in zip(bounds, bounds[1:]))

    def __repr__(self):
        return f"ntsym.Jagged(shape={self.shape}, dtype={self.values.dtype}, device={self.values.device})"


def jagged(values: torch.Tensor, offsets: torch.Tensor, *, jagged_dim: int = 1,
           max_length: Optional[int] = None) -> "Jagged":
    """Packed sequences for a ``Tensor(values.ndim + 1, jagged_dim=jagged_dim)``
    parameter: ``values`` holds the rows of every sequence one after another
    along its dimension ``jagged_dim - 1``; ``offsets`` (1-D, int32 or int64,
    ``B + 1`` entries, non-decreasing) says where each sequence starts and
    ends.  ``jagged_dim``: the ragged dimension of the tensor the kernel sees
    (1, the dimension after the batch, by default).  ``max_length`` is not needed (it is computed from the offsets
    while they are validated)."""
    if not isinstance(values, torch.Tensor) or not isinstance(offsets, torch.Tensor):
        raise LaunchError("ntsym.jagged(values, offsets): both must be torch tensors")
    if getattr(values, "is_nested", False):
        raise LaunchError("ntsym.jagged(values, offsets): values must be a dense tensor\n"
                          "pass a nested tensor of the jagged layout to the kernel directly")
    if not isinstance(jagged_dim, int) or not 1 <= jagged_dim <= values.ndim:
        raise LaunchError(f"ntsym.jagged: jagged_dim={jagged_dim!r} must be in 1..{values.ndim} "
                          f"(values has {values.ndim} dimensions)")
    return Jagged(values, offsets, jagged_dim, max_length)


_LISTED = 32  # offsets on the CPU up to this many entries are read as a list, more through numpy

# id of an offsets tensor -> (weak reference to it, the state its stats were read in, the stats).
_READ = {}
stats_reads = 0  # how many times offsets were read from the data (a counter tests read)
# Device types whose offsets are read once per state: where the read is a
# synchronisation.  On the CPU it costs microseconds and catches every write,
# those that bypass the version counter too.
REMEMBERED = frozenset({"cuda", "xpu", "hip", "mps"})


def _state(offsets):
    """What identifies the offsets' contents without reading them: where
    they are, their layout and torch's version counter, which every in-place
    write through the tensor or a view of it bumps (ntsym kernels bump the
    tensors they write); None where torch keeps no counter (inference mode)."""
    try:
        version = offsets._version
    except RuntimeError:
        return None
    return (offsets.data_ptr(), offsets.untyped_storage().data_ptr(), version, tuple(offsets.shape),
            offsets.stride(), offsets.dtype, offsets.device)


def _once_per_state(table, offsets, make):
    """``make(offsets)``, kept in ``table`` (id -> (weak reference, state,
    value)) and made again only where the offsets' state (``_state``) has
    changed, on a device of ``REMEMBERED``; made on every call elsewhere."""
    state = _state(offsets) if offsets.device.type in REMEMBERED else None
    entry = table.get(id(offsets))
    if state is not None and entry is not None and entry[0]() is offsets and entry[1] == state:
        return entry[2]
    value = make(offsets)
    if state is not None:
        key = id(offsets)
        table[key] = (weakref.ref(offsets, lambda _, key=key: table.pop(key, None)), state, value)
    return value


def _offset_stats_once(offsets):
    """``_offset_stats`` of ``offsets``, read from the data once per state
    (``_state``) on a GPU, where the read is a synchronisation that a loop
    over the same batch would pay on every call (on the CPU, every call).  A write that bypasses the
    version counter (through ``.data``, another tensor made over the same
    memory, a raw kernel) is not seen: rewrite offsets in place through the
    tensor itself, or pass a new tensor."""
    return _once_per_state(_READ, offsets, _counted_stats)


def _counted_stats(offsets):
    global stats_reads
    stats_reads += 1
    return _offset_stats(offsets)


def _offset_stats(offsets):
    """(first, last, smallest and largest difference) of non-empty offsets."""
    if offsets.numel() == 1:
        first = int(offsets[0])
        return first, first, 0, 0
    if offsets.device.type == "cpu":
        if offsets.numel() <= _LISTED:
            values = offsets.tolist()
            steps = [b - a for a, b in zip(values, values[1:])]
            return values[0], values[-1], min(steps), max(steps)
        values = offsets.detach().numpy()
        steps = numpy.diff(values)
        return int(values[0]), int(values[-1]), int(steps.min()), int(steps.max())
    return offset_stats(offsets)


def _unpack(name, a, dim, ndim):
    """(values, offsets) of a jagged argument; a LaunchError for anything else."""
    if isinstance(a, Jagged):
        if a.jagged_dim != dim:
            raise LaunchError(f"`{name}` is declared with jagged_dim={dim} but ntsym.jagged(..., "
                              f"jagged_dim={a.jagged_dim}) was given")
        values, offsets = a.values, a.offsets
    elif isinstance(a, torch.Tensor) and a.is_nested:
        if a.layout != torch.jagged:
            raise LaunchError(
                f"`{name}` is a nested tensor in the {a.layout} layout\njagged parameters take nested "
                "tensors of the jagged layout (torch.nested.nested_tensor(..., layout=torch.jagged)) or "
                "ntsym.jagged(values, offsets)")
        if a._ragged_idx != dim:
            raise LaunchError(
                f"`{name}` is declared with jagged_dim={dim} but the nested tensor's ragged dimension is "
                f"{a._ragged_idx} (shape {tuple(a.shape)})")
        if a.lengths() is not None:
            raise LaunchError(
                f"`{name}` is a nested tensor with holes (offsets and lengths, from narrow)\npass "
                "a contiguous one (.contiguous())")
        values, offsets = a.values(), a.offsets()
    elif isinstance(a, torch.Tensor):
        raise LaunchError(
            f"`{name}` is declared jagged, Tensor({ndim}, jagged_dim={dim}), but got a dense tensor of "
            f"shape {tuple(a.shape)}\npass a nested tensor of the jagged layout, or packed rows as "
            "ntsym.jagged(values, offsets)")
    else:
        raise LaunchError(f"`{name}` is declared jagged but got {type(a).__name__}")
    if values.ndim != ndim - 1:
        raise LaunchError(f"`{name}` must have {ndim} dimensions (values of {ndim - 1}), got values of shape "
                          f"{tuple(values.shape)}")
    if getattr(offsets, "is_nested", False) or offsets.ndim != 1 or offsets.dtype not in (torch.int32, torch.int64):
        raise LaunchError(f"`{name}`: the offsets must be a 1-D int32 or int64 tensor, got "
                          f"{offsets.dtype} of shape {tuple(offsets.shape)}")
    if offsets.device != values.device:
        raise LaunchError(f"`{name}`: the offsets are on {offsets.device} but the values on {values.device}")
    return values, offsets


_COPIES = {}  # id(strided offsets) -> (weak reference, state, the contiguous copy)


def _contiguous_once(offsets):
    """A contiguous copy of strided ``offsets``, made once per state
    (``_state``) on a GPU, so that ``_offset_stats_once`` reads the copy's
    statistics once too (a new copy every call would be read every call)."""
    return _once_per_state(_COPIES, offsets, torch.Tensor.contiguous)


_COMPARED = {}  # (id(spec), the offsets' states) -> their spec: compared equal where they must be


def _check_same_offsets_once(spec, offsets):
    """``check_same_offsets``, once per state of the offsets (``_state``) on a
    GPU, where comparing two offsets tensors is a synchronisation that a loop
    over the same batch would pay on every call; with the caveat of
    ``_offset_stats_once`` (a write the version counter does not see)."""
    if not (spec.same_rows or spec.same_lengths) or len(offsets) < 2:
        return
    states = tuple(_state(o) if o.device.type in REMEMBERED else None for o in offsets.values())
    key = (id(spec), states)
    if None not in states and _COMPARED.get(key) is spec:
        return
    check_same_offsets(spec, offsets)
    if None not in states:
        if len(_COMPARED) > 256:
            _COMPARED.clear()
        _COMPARED[key] = spec


def prepare(ir, spec, args, kwargs):
    """The launcher's arguments for a call of a kernel with jagged
    parameters: each jagged argument replaced by its dense view, the offsets
    appended in the order of ``ir.jagged``."""
    names = [p.name for p in ir.params if p.kind != "offsets"]
    baked = {p.name for p in ir.params if p.kind == "constexpr" and p.value is not None}
    own = [n for n in names if n not in baked]
    given = {k: kwargs[k] for k in kwargs if k in names}
    if given:
        kwargs = {k: v for k, v in kwargs.items() if k not in given}
        for order in (names, own):
            bound = {**dict(zip(order, args)), **given}
            if len(args) <= len(order) and all(n in bound for n in own):
                args = tuple(bound[n] for n in own)
                break
    elif len(args) == len(names) and baked:
        args = tuple(a for n, a in zip(names, args) if n not in baked)
    if len(args) != len(own):
        raise LaunchError(f"kernel `{ir.shown_name}` takes {len(own)} arguments, got {len(args)}\n"
                          f"its arguments are: {', '.join(own)}")
    args = list(args)
    jagged = {j.name: j for j in ir.jagged}
    params = {p.name: p for p in ir.params}
    offsets, packed = {}, {}
    for i, name in enumerate(own):
        j = jagged.get(name)
        if j is None:
            continue
        values, offs = _unpack(name, args[i], j.dim, params[name].ndim)
        # The kernel reads the offsets as contiguous memory: a strided view
        # is copied, and the copy is what is validated and launched.
        offs = offs if offs.is_contiguous() else _contiguous_once(offs)
        _, _, longest = check_offsets(name, offs, values.shape[j.dim - 1], _offset_stats_once)
        shape = list(values.shape)
        shape[j.dim - 1] = longest
        view = values.as_strided((offs.numel() - 1, *shape), (0, *values.stride()), values.storage_offset())
        args[i] = view
        offsets[name] = offs
        packed[name] = values
    _check_same_offsets_once(spec, offsets)
    tensors = [(name, packed.get(name, arg)) for name, arg in zip(own, args)]
    check_jagged_memory(spec, [(name, t) for name, t in tensors if isinstance(t, torch.Tensor)], packed, offsets)
    return tuple(args) + tuple(offsets[j.name] for j in ir.jagged), kwargs
