"""Jagged tensors' offsets and packed values, checked before a launch.

ntsym's launcher (``ntsym/jagged_launch.py``) takes a jagged argument as a
nested tensor or ``ntsym.jagged(values, offsets)``; a standalone module
(``kernel.export``) takes the view ntsym's launcher passes the kernel (its
values from their first row, ``(B, longest, ...)``, stride 0 along the
batch) and the offsets, as separate arguments.  Both run these functions (the
standalone module embeds them by their source: ``codegen/aot/embedded.py``),
so that both refuse the same calls: offsets that decrease, start below 0 or
end past the values, offsets that must be equal (the arrangement gives two
ragged dimensions one size) or place sequences of the same lengths (a loop
over one tensor's blocks indexes another's) and are not, written values
with stride 0 or overlapping elements, and written tensors sharing memory
with another tensor or with offsets the kernel reads."""

from ntsym_codegen.errors import fail
from ntsym_codegen.overlap import shared_elements, shared_region
from ntsym_codegen.runtime.checks import byte_extent
from ntsym_codegen.writes import check_written_layout


def offset_stats(offsets):
    """(first, last, smallest and largest difference) of non-empty offsets,
    read from the data."""
    import torch

    if offsets.numel() == 1:
        first = int(offsets[0])
        return first, first, 0, 0
    diff = offsets.diff()
    return tuple(int(v) for v in torch.stack([offsets[0], offsets[-1], diff.min(), diff.max()]).tolist())


def check_offsets(name, offsets, rows, stats):
    """(first, last, longest) of the offsets of the jagged tensor ``name``,
    whose values hold ``rows`` rows; ``stats`` reads them (``offset_stats``).
    A refusal where they are empty, decrease, start below 0 or end past the
    values."""
    if offsets.numel() < 1:
        fail(f"`{name}`: the offsets are empty", "a batch of B sequences has B + 1 offsets")
    first, last, smallest, longest = stats(offsets)
    if smallest < 0:
        bad = int((offsets.diff() < 0).nonzero()[0])
        fail(f"`{name}`: the offsets must not decrease, but offsets[{bad + 1}] = {int(offsets[bad + 1])} < "
             f"offsets[{bad}] = {int(offsets[bad])}", f"sequence {bad} would have a negative length")
    if first < 0:
        fail(f"`{name}`: offsets[0] = {first} is negative")
    if last > rows:
        fail(f"`{name}`: the last offset is {last} but the values hold {rows} rows",
             "the sequences would read past the end of the values")
    return first, last, longest


def same_offsets(a, b):
    """Whether two offsets tensors (None for a dense tensor's) place their
    sequences alike: one view of the same memory, or the same values."""
    if a is None or b is None:
        return a is b
    if a is b or (a.data_ptr() == b.data_ptr() and a.shape == b.shape and a.stride() == b.stride()
                  and a.dtype == b.dtype):
        return True
    return a.shape == b.shape and bool((a == b.to(a.dtype)).all())


def check_same_offsets(spec, offsets):
    """``offsets``: jagged tensor name -> its offsets.  Equal offsets where
    the arrangement gives ragged dimensions one size (``spec.same_rows``),
    sequences of the same lengths where a loop over one tensor's blocks of
    its sequence indexes another's (``spec.same_lengths``)."""
    for group in spec.same_rows:
        for other in group[1:]:
            if not same_offsets(offsets[group[0]], offsets[other]):
                fail(f"`{group[0]}` and `{other}` must hold sequences of the same lengths (equal offsets)",
                     "the arrangement gives their ragged dimensions one size")
    for a, b, block, why in spec.same_lengths:
        oa, ob = offsets[a], offsets[b]
        if same_offsets(oa, ob):
            continue
        if oa.shape != ob.shape:
            fail(f"`{a}` and `{b}` must hold the same number of sequences, but `{a}` has {oa.numel() - 1} and "
                 f"`{b}` {ob.numel() - 1}", why)
        la, lb = oa.diff(), ob.diff().to(oa.dtype)
        differ = ((la + block - 1) // block != (lb + block - 1) // block).nonzero()
        if differ.numel():
            s = int(differ[0])
            what = "lengths" if block == 1 else f"number of blocks of {block} rows"
            fail(f"`{a}` and `{b}` must hold sequences of the same {what}, but sequence {s} has "
                 f"{int(la[s])} rows in `{a}` and {int(lb[s])} in `{b}`", why)


def check_jagged_memory(spec, tensors, packed, offsets):
    """The call's ``tensors`` ((name, tensor) pairs, a jagged one as its
    whole packed values: ``packed`` names them) and ``offsets`` (jagged
    tensor name -> its offsets), where the kernel writes: written values
    with stride 0 or overlapping elements, offsets sharing memory with a
    written tensor, and pairs the launcher leaves to this check
    (``_check_jagged_pairs``)."""
    for name, t in tensors:
        if name in packed and name in spec.written:
            check_written_layout(name, t, dimension="dimension {e} (dimension {d} of its values)",
                                 fix="pass contiguous values")
    written = [(name, t) for name, t in tensors if name in spec.written]
    for owner, offs in offsets.items() if written else ():
        (o0, o1) = byte_extent(offs)
        for name, t in written:
            (t0, t1) = byte_extent(t)
            if o0 < t1 and t0 < o1 and shared_elements(offs, t) is not None:
                fail(f"the offsets of `{owner}` share memory with `{name}`, which the kernel writes",
                     "programs read the offsets to find their sequences while others write, in no fixed order",
                     "pass offsets in memory of their own (e.g. offsets.clone())")
    _check_jagged_pairs(spec, tensors, packed, offsets)


def _check_jagged_pairs(spec, tensors, packed, offsets):
    """Tensors that share memory where the kernel writes one of them and
    one is jagged, decided on a jagged tensor's whole packed values (the
    launcher sees only its view, which programs address past): refused where
    some element is in both (``codegen/overlap.py``, as the launcher decides
    it for dense views), unless they are one and the same tensor and in-place
    use is proved safe (jagged ones with the same offsets too), or where
    either is a tensor the kernel addresses past its view and their bytes
    overlap."""
    for i, (na, a) in enumerate(tensors):
        for nb, b in tensors[i + 1:]:
            if not ({na, nb} & set(packed) and {na, nb} & spec.written):
                continue
            (a0, a1), (b0, b1) = byte_extent(a), byte_extent(b)
            if not (a0 < b1 and b0 < a1):
                continue
            identical = a.data_ptr() == b.data_ptr() and a.stride() == b.stride() and a.shape == b.shape \
                and a.element_size() == b.element_size() and same_offsets(offsets.get(na), offsets.get(nb))
            if identical and spec.aliasing.get((na, nb), spec.aliasing.get((nb, na), False)) is True:
                continue
            written = na if na in spec.written else nb
            addressed = sorted({na, nb} & spec.addressed)
            if addressed:
                fail(f"`{na}` and `{nb}` share memory and the kernel writes `{written}`",
                     f"programs would read elements that other programs write (the kernel addresses "
                     f"`{addressed[0]}` past its view)", "pass a separate output")
            shared = shared_elements(a, b)
            if shared is not None:
                fail(*shared_region(na, nb, written, shared))


def check_jagged(spec, args):
    """A standalone module's jagged arguments: each jagged tensor given as
    the view ntsym's launcher makes and its offsets (``spec.ragged``).
    Returns the arguments with contiguous offsets (those the kernel reads as
    contiguous memory, validated here)."""
    args = list(args)
    names = [p[0] for p in spec.call_params]
    offsets, packed = {}, {}
    for name, dim, offsets_name in spec.ragged:
        view, k = args[names.index(name)], names.index(offsets_name)
        offs = args[k] = args[k].contiguous()
        if offs.device != view.device:
            fail(f"`{name}`: the offsets are on {offs.device} but the values on {view.device}")
        if view.shape[0] != offs.numel() - 1:
            fail(f"`{name}`.shape[0] (={view.shape[0]}) must equal the number of sequences, "
                 f"{offs.numel() - 1} ({offsets_name} holds {offs.numel()} offsets)")
        _, last, longest = check_offsets(name, offs, float("inf"), offset_stats)
        if longest > view.shape[dim]:
            fail(f"`{name}`.shape[{dim}] (={view.shape[dim]}) must be at least the longest sequence, {longest}",
                 "the grid runs over it: rows past it would not be computed")
        shape, strides = list(view.shape[1:]), view.stride()[1:]
        shape[dim - 1] = last
        end = view.storage_offset() + sum((n - 1) * st for n, st in zip(shape, strides)) + 1
        if min(shape) > 0 and end * view.element_size() > view.untyped_storage().nbytes():
            fail(f"`{name}`: the last offset is {last} but the storage of the values ends before row {last - 1}",
                 "the sequences would read past the end of the values")
        offsets[name], packed[name] = offs, view.as_strided(shape, strides, view.storage_offset())
    tensors = [(name, packed.get(name, a)) for (name, kind, _, _), a in zip(spec.call_params, args)
               if kind == "tensor" and name not in spec.untouched]
    check_same_offsets(spec, offsets)
    check_jagged_memory(spec, tensors, packed, offsets)
    return tuple(args)
