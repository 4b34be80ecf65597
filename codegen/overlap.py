"""Whether two strided views share an element, decided exactly from their
data pointers, shapes and strides.

A kernel may write one view of a buffer while it reads another view of the
same buffer (a KV cache read up to a position, and the slot after it written
as a separate argument).  Their byte ranges interleave, yet no element is
both; what the launch must know is whether some *element* is.  The elements
of a view are ``base + sum(i_d * stride_d)``; where a view's dimensions,
sorted by stride, each step past the span of the smaller ones ("nested", as
every dense or sliced layout is), an offset decomposes into indices greedily,
so membership of every element of the other view is a few vector operations
over that view's elements.  Layouts neither view of which is nested are
compared element by element up to a limit; past it the answer is "unknown",
which the caller treats as shared.
"""

# Layouts with no nested view are compared element by element up to this many
# elements in all (sorting both offset lists).
_EXACT_LIMIT = 1 << 24


def shared_elements(a, b):
    """None where no element of tensor ``a`` has the address of an element of
    tensor ``b``; else ``(index in a, index in b, count)`` of one such
    element and how many elements of one view are in the other (indices
    empty and count None where the layouts were not compared).  Plain tuples:
    standalone modules embed this module's functions (``codegen/aot``)."""
    if a.numel() == 0 or b.numel() == 0:
        return None
    size = a.element_size()
    delta = b.data_ptr() - a.data_ptr()
    if size != b.element_size() or delta % size:
        return (), (), None  # elements of different widths or misaligned: not compared
    la = _layout(a, 0)
    lb = _layout(b, delta // size)
    # Enumerate the smaller view where the other is nested (a cache slot, not
    # the cache): the cost is that view's element count.
    if _nested(lb) and (a.numel() <= b.numel() or not _nested(la)):
        return _members(la, lb, swap=False)
    if _nested(la):
        return _members(lb, la, swap=True)
    if a.numel() + b.numel() <= _EXACT_LIMIT:
        return _sorted_members(la, lb)
    return (), (), None  # too many elements to compare


def _layout(t, base):
    """(base offset in elements, shape, strides) of ``t``."""
    return base, tuple(t.shape), tuple(t.stride())


def _nested(layout):
    """Whether, sorted by stride, each dimension's stride exceeds the span of
    the smaller ones (then an offset has at most one index, found greedily).
    Dimensions of size 1 and stride 0 add no element and are left out."""
    _, shape, strides = layout
    span = 0
    for st, n in sorted((st, n) for n, st in zip(shape, strides) if n > 1 and st != 0):
        if st < 0 or st <= span:
            return False
        span += (n - 1) * st
    return True


def _offsets(layout):
    """Every element's offset, in row-major order of its indices (int64, CPU)."""
    import torch

    base, shape, strides = layout
    offsets = torch.full((), base, dtype=torch.int64)
    for d, (n, st) in enumerate(zip(shape, strides)):
        view = [1] * len(shape)
        view[d] = n
        offsets = offsets + (torch.arange(n, dtype=torch.int64) * st).reshape(view)
    return offsets.reshape(-1)


def _unravel(flat, shape):
    """The index of row-major position ``flat`` in ``shape``."""
    index = []
    for n in reversed(shape):
        index.append(flat % n)
        flat //= n
    return tuple(reversed(index))


def _members(enumerated, nested, swap):
    """Elements of ``enumerated`` that are elements of the nested layout
    ``nested``, by greedy decomposition of their offsets."""
    import torch

    offsets = _offsets(enumerated)
    base, shape, strides = nested
    rest = offsets - base
    found = rest >= 0
    index = [torch.zeros_like(rest) for _ in shape]
    for st, n, d in sorted(((st, n, d) for d, (n, st) in enumerate(zip(shape, strides)) if n > 1 and st != 0),
                           reverse=True):
        i = torch.div(rest.clamp(min=0), st, rounding_mode="floor")
        found &= i < n
        index[d] = i.clamp(max=n - 1)
        rest = rest - index[d] * st
    found &= rest == 0
    count = int(found.sum())
    if count == 0:
        return None
    k = int(found.nonzero()[0, 0])
    mine = _unravel(k, enumerated[1])
    theirs = tuple(int(i[k]) for i in index)
    return (theirs, mine, count) if swap else (mine, theirs, count)


def _sorted_members(la, lb):
    """Elements of ``la`` that are elements of ``lb``, by sorting ``lb``'s offsets."""
    import torch

    oa, ob = _offsets(la), _offsets(lb)
    sorted_b, order = torch.sort(ob)
    at = torch.searchsorted(sorted_b, oa).clamp(max=ob.numel() - 1)
    found = sorted_b[at] == oa
    count = int(found.sum())
    if count == 0:
        return None
    k = int(found.nonzero()[0, 0])
    return _unravel(k, la[1]), _unravel(int(order[at[k]]), lb[1]), count


def shared_region(na, nb, written, shared):
    """The refusal of two views ``na`` and ``nb`` that share ``shared``
    elements where the kernel writes ``written``: which element, how many
    (the headline, the why and the fix)."""
    other = nb if written == na else na
    first, second, count = shared
    if count is None:
        where = ("their layouts interleave in a way not compared element by element, so some element may "
                 "be in both")
    else:
        where = (f"`{na}`{list(first)} is `{nb}`{list(second)}, one of {count} "
                 f"element{'s' if count != 1 else ''} the two views share")
    return (f"`{na}` and `{nb}` share memory and the kernel writes `{written}`",
            f"{where}. A program may read such an element through `{other}` before or after a program "
            f"(the same one or another) writes it, in no fixed order, so the result would depend on scheduling",
            f"pass views that share no element (read `{other}` only where `{written}` does not reach, e.g. a "
            "cache up to the written slot) or write into a separate tensor")
