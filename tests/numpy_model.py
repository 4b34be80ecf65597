"""Plain NumPy reference model of the arrangement meta-operations.

A hierarchical tensor is modelled by one integer array ``comp`` of shape
``(src_ndim, *level0_shape, *level1_shape, ...)``: ``comp[:, e]`` is the source
index that the element ``e`` of the hierarchical tensor refers to.  Elements that
fall outside the source (padding, overhanging tiles) hold the sentinel ``-1`` in
every component, so validity is simply ``comp[0] >= 0`` and it propagates
through gathers, padding and reshapes without any extra bookkeeping.

Every operation is carried out with array primitives (``np.indices``,
``np.pad`` with the sentinel, ``sliding_window_view``, ``broadcast_to``,
``transpose``, ``reshape``, basic indexing); no index formula is derived by hand
except the tile count, which is part of the specification.

The public accessors follow the layout of ``ntsym.index_table``:

* ``shapes``: list of tuples, one per level, outermost first;
* ``source``: int64 array of shape ``(*all level dims, src_ndim)``;
* ``valid``: bool array of shape ``(*all level dims)``.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

SENTINEL = -1


def tile_count(n, t, s, d, floor_mode):
    """Number of tiles along one dim of size ``n`` (spec formula)."""
    span = d * (t - 1) + 1
    # NineToothed's count; where s > span its last window may start at or past
    # the end, every element of it outside the source. A count NineToothed
    # computes as negative is an empty level.
    if floor_mode:
        return max((n - span) // s + 1, 0)
    return max((n - span + s - 1) // s + 1, 0)


def nt_slice_start(k, n):
    """NineToothed's start of the slice ``k`` over ``n`` elements."""
    step = 1 if k.step is None else k.step
    start = k.start if k.start is not None else (0 if step > 0 else n - 1)
    return start + n if start < 0 else start


def nt_slice_size(k, n):
    """NineToothed's element count of the slice ``k`` over ``n`` elements
    (an empty slice for a count it computes as negative)."""
    step = 1 if k.step is None else k.step
    if step == 0:
        raise ValueError("slice step cannot be zero")
    stop = k.stop if k.stop is not None else (n if step > 0 else -1)
    if stop < 0 if step > 0 else stop < -1:
        stop += n
    start = nt_slice_start(k, n)
    return max((stop - start + step - (1 if step > 0 else -1)) // step, 0)


class Model:
    """Immutable hierarchical tensor; every operation returns a new model."""

    def __init__(self, comp, ndims):
        comp = np.ascontiguousarray(comp, dtype=np.int64)
        ndims = [int(k) for k in ndims]
        assert comp.ndim == 1 + sum(ndims), (comp.shape, ndims)
        self.comp = comp
        self.ndims = ndims

    # ------------------------------------------------------------ creation
    @classmethod
    def source(cls, shape):
        shape = tuple(int(n) for n in shape)
        return cls(np.indices(shape, dtype=np.int64), [len(shape)])

    def __repr__(self):
        return f"Model(shapes={self.shapes})"

    # ------------------------------------------------------------ accessors
    @property
    def src_ndim(self):
        return self.comp.shape[0]

    @property
    def num_levels(self):
        return len(self.ndims)

    @property
    def shapes(self):
        out, pos = [], 1
        for k in self.ndims:
            out.append(tuple(int(n) for n in self.comp.shape[pos : pos + k]))
            pos += k
        return out

    @property
    def source_table(self):
        return np.moveaxis(self.comp, 0, -1)

    @property
    def valid(self):
        if self.src_ndim == 0:
            return np.ones(self.comp.shape[1:], dtype=bool)
        return self.comp[0] >= 0

    @property
    def size(self):
        return int(math.prod(self.comp.shape[1:]))

    def level_shape(self, level=0):
        return self.shapes[level]

    def _axes(self, level):
        """First axis of ``level`` in ``comp`` and its number of dims."""
        if not 0 <= level < self.num_levels:
            raise IndexError(f"level {level} out of range")
        return 1 + sum(self.ndims[:level]), self.ndims[level]

    def _with(self, comp, level, new_ndims):
        ndims = list(self.ndims)
        ndims[level : level + 1] = list(new_ndims)
        return Model(comp, ndims)

    # ------------------------------------------------------------ operations
    def tile(self, tile_shape, strides=None, dilation=None, floor_mode=False, level=0):
        p, nd = self._axes(level)
        shape = self.shapes[level]
        tile_shape = tuple(tile_shape)
        if len(tile_shape) != nd:
            raise ValueError("tile_shape must have one entry per dim")
        ts, ss, ds, counts = [], [], [], []
        for j, n in enumerate(shape):
            t = n if tile_shape[j] == -1 else int(tile_shape[j])
            s = t if strides is None or strides[j] in (None, -1) else int(strides[j])
            d = 1 if dilation is None or dilation[j] is None else int(dilation[j])
            c = tile_count(n, t, s, d, floor_mode)
            if t < 1 or s < 1 or d < 1:
                raise ValueError(f"degenerate tile along dim {j}: n={n} t={t} s={s} d={d}")
            ts.append(t), ss.append(s), ds.append(d), counts.append(c)
        spans = [d * (t - 1) + 1 for t, d in zip(ts, ds)]
        comp = self.comp
        # Pad every tiled dim with the sentinel far enough that all windows exist.
        widths = [(0, 0)] * comp.ndim
        for j, n in enumerate(shape):
            needed = (counts[j] - 1) * ss[j] + spans[j]
            widths[p + j] = (0, max(0, needed - n))
        comp = np.pad(comp, widths, constant_values=SENTINEL)
        axes = tuple(range(p, p + nd))
        # Windows of length ``span`` start at every position; window axes go last.
        win = sliding_window_view(comp, window_shape=spans, axis=axes)
        # Keep every s-th window start (the first ``count`` of them) and every
        # d-th element inside a window.
        key = [slice(None)] * win.ndim
        for j in range(nd):
            key[p + j] = slice(0, (counts[j] - 1) * ss[j] + 1, ss[j])
            key[comp.ndim + j] = slice(None, None, ds[j])
        win = win[tuple(key)]
        # Move the inner (window) axes right after the outer axes of the level.
        inner_src = list(range(comp.ndim, comp.ndim + nd))
        inner_dst = list(range(p + nd, p + 2 * nd))
        out = np.moveaxis(win, inner_src, inner_dst)
        assert out.shape[p : p + nd] == tuple(counts)
        assert out.shape[p + nd : p + 2 * nd] == tuple(ts)
        return self._with(out, level, [nd, nd])

    def expand(self, shape, level=0):
        p, nd = self._axes(level)
        old = self.shapes[level]
        shape = tuple(shape)
        if len(shape) != nd:
            raise ValueError("expand needs one entry per dim")
        target = list(self.comp.shape)
        for j, (n, m) in enumerate(zip(old, shape)):
            if m == -1:
                continue
            if n != 1:
                raise ValueError("only size-1 dims can be expanded")
            target[p + j] = int(m)
        return self._with(np.broadcast_to(self.comp, target), level, [nd])

    def squeeze(self, dim, level=0):
        p, nd = self._axes(level)
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        shape = self.shapes[level]
        for d in dims:
            if shape[d] != 1:
                raise ValueError("only size-1 dims can be squeezed")
        comp = np.squeeze(self.comp, axis=tuple(p + d for d in dims))
        return self._with(comp, level, [nd - len(set(dims))])

    def unsqueeze(self, dim, level=0):
        p, nd = self._axes(level)
        if not 0 <= dim <= nd:
            raise ValueError("unsqueeze position out of range")
        return self._with(np.expand_dims(self.comp, p + dim), level, [nd + 1])

    def permute(self, dims, level=0):
        p, nd = self._axes(level)
        dims = tuple(dims)
        if sorted(dims) != list(range(nd)):
            raise ValueError("not a permutation")
        order = list(range(self.comp.ndim))
        order[p : p + nd] = [p + d for d in dims]
        return self._with(np.transpose(self.comp, order), level, [nd])

    def flatten(self, start_dim=None, end_dim=None, level=0):
        p, nd = self._axes(level)
        start = 0 if start_dim is None else start_dim
        end = nd if end_dim is None else end_dim  # exclusive
        if not 0 <= start < end <= nd:
            raise ValueError("bad flatten range")
        shape = list(self.comp.shape)
        merged = math.prod(shape[p + start : p + end])
        new_shape = shape[: p + start] + [merged] + shape[p + end :]
        return self._with(self.comp.reshape(new_shape), level, [nd - (end - start) + 1])

    def ravel(self, level=0):
        self._axes(level)
        ndims = self.ndims[:level] + [sum(self.ndims[level:])]
        return Model(self.comp, ndims)

    def pad(self, pad, level=0):
        p, nd = self._axes(level)
        pad = [tuple(int(x) for x in pair) for pair in pad]
        if len(pad) != nd:
            raise ValueError("pad needs one (before, after) pair per dim")
        widths = [(0, 0)] * self.comp.ndim
        for j, (before, after) in enumerate(pad):
            if before < 0 or after < 0:
                raise ValueError("negative padding is not modelled")
            widths[p + j] = (before, after)
        comp = np.pad(self.comp, widths, constant_values=SENTINEL)
        return self._with(comp, level, [nd])

    def getitem(self, key, level=0):
        """Select (int) or slice dimensions of ``level``. Slices follow
        NineToothed: nothing is clipped (elements outside the dimension are
        the sentinel) and a stop of -1 with a negative step is "past the
        beginning"."""
        p, nd = self._axes(level)
        if not isinstance(key, tuple):
            key = (key,)
        if len(key) > nd:
            raise IndexError("too many indices")
        comp, axis, removed = self.comp, p, 0
        for k in key:
            n = comp.shape[axis]
            if isinstance(k, slice):
                idx = np.arange(nt_slice_size(k, n)) * (k.step or 1) + nt_slice_start(k, n)
                inside = (idx >= 0) & (idx < n)
                comp = np.take(comp, np.clip(idx, 0, max(n - 1, 0)), axis=axis)
                shape = [1] * comp.ndim
                shape[axis] = len(idx)
                comp = np.where(inside.reshape(shape), comp, SENTINEL)
                axis += 1
            elif isinstance(k, (int, np.integer)):
                if not -n <= k < n:
                    raise IndexError(f"index {k} out of range")
                comp = np.take(comp, k % n, axis=axis)
                removed += 1
            else:
                raise TypeError(f"unsupported index {k!r}")
        return self._with(comp, level, [nd - removed])

    # Uniform entry point used by the property test.
    def apply(self, name, args=(), kwargs=None, level=0):
        kwargs = dict(kwargs or {})
        if name == "__getitem__":
            return self.getitem(*args, level=level)
        return getattr(self, name)(*args, level=level, **kwargs)
