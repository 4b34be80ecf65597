"""Tensors a kernel never reads or writes.

An application may take a tensor it does not touch: a mask behind a branch on
a compile-time flag that is off (``if with_attn_mask:``), which Triton, and
so the emitter, compiles away.  The caller may then pass any tensor there,
one on the ``meta`` device among them: no element of it is read.  The
launcher reads its sizes and strides as of any tensor, but the checks of
what the kernel reads (the device, aliasing) skip it, and the kernel gets,
in its place, an empty tensor of its dtype on the device of the others (a
pointer it never follows: Triton's launch and its interpreter cannot take a
``meta`` tensor).
"""

import functools


def untouched_positions(params, untouched):
    """(kernel argument slots, positions among the tensor parameters) of the
    tensors named in ``untouched``, and the slot of the first tensor the
    kernel touches (None: none); ``params`` are the spec's parameters."""
    slots, positions, touched = [], [], None
    slot = position = 0
    for p in params:
        if p.kind == "shape":  # read by the launcher, not passed to the kernel
            continue
        if p.kind == "tensor":
            if p.name in untouched:
                slots.append(slot)
                positions.append(position)
            elif touched is None:
                touched = slot
            position += 1
        slot += 1
    return tuple(slots), tuple(positions), touched


@functools.lru_cache(maxsize=None)
def _placeholder(dtype, device):
    import torch

    return torch.empty(0, dtype=dtype, device=device)


def _device(spec, tensors):
    """The device of the tensors the kernel touches (None: it touches none)."""
    for i, t in enumerate(tensors):
        if i not in spec.untouched_tensors:
            return t.device
    return None


def substitute(spec, args, tensors):
    """``args`` (the kernel's arguments, slot by slot) and ``tensors`` (the
    tensor parameters) with each untouched tensor replaced by a placeholder
    on the device of the touched ones, where it is elsewhere."""
    device = _device(spec, tensors)
    if device is None:
        return args, tensors
    args, tensors = list(args), list(tensors)
    for slot, position in zip(spec.untouched_slots, spec.untouched_tensors):
        t = tensors[position]
        if t.device != device:
            tensors[position] = args[slot] = _placeholder(t.dtype, device)
    return tuple(args), tuple(tensors)


def substitute_call(spec, call):
    """``substitute`` for the argument list ``fast_launch`` builds (in place)."""
    if spec.touched_slot is None:
        return
    device = call[spec.touched_slot].device
    for slot in spec.untouched_slots:
        t = call[slot]
        if t.device != device:
            call[slot] = _placeholder(t.dtype, device)
