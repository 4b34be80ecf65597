"""Symbolic tensors and meta-operations.

A *source* tensor (``Tensor(2)``) stands for a kernel argument: its sizes and
strides are symbols.  Meta-operations build *arranged* tensors: a stack of
levels, outermost first.  Everything about an arrangement lives in one immutable
:class:`Hierarchy` (``ntsym/hierarchy.py``):

- ``levels``: each level's shape and one index variable per dimension;
- ``index``: for every dimension of the source, a SymPy expression in the index
  variables giving the source index an element comes from;
- ``conditions``: relations in the index variables that must hold for the
  element to exist (the source bounds, and bounds that tiling past an edge or
  padding introduce).

A :class:`Tensor` object is a *view* of one level of a hierarchy.  ``t.dtype`` is
the view of the next level, and an operation on a view only rewrites the index
variables of its own level (it substitutes them by expressions in new
variables), so ``t.dtype = t.dtype.squeeze(0)`` simply adopts the new hierarchy.
Evaluating an arrangement with numbers (``index_table``, ``eval_expr``) is in
:mod:`ntsym.debugging`.
"""

import itertools

import sympy

from ntsym_codegen.intfuncs import FloorDiv, Mod
from ntsym import evaluation
from ntsym.errors import MetaOperationError
from ntsym.extents import slice_extent, window_count
from ntsym.hierarchy import Hierarchy, Level, _new_var
from ntsym.symbol import Symbol, as_expr
from ntsym.tensor_arguments import check_jagged, shape_options_per_dim


_instance_ids = itertools.count()


class Tensor:
    """A symbolic tensor, or one level of an arranged (hierarchical) tensor.

    ``Tensor(ndim)`` has symbolic sizes and strides; ``Tensor(shape=(4, 8))`` is
    concrete (entries may mix ints, symbols and ``None`` for a fresh symbol).
    ``Tensor(0)`` is a scalar argument; ``Tensor(0, constexpr=True, value=v)`` a
    compile-time one.  ``dtype`` is the element type (a torch or ``ntl`` dtype,
    or ``None`` for any) and ``other`` the value read outside the bounds.

    ``ndim``: the number of dimensions (or give ``shape``).
    ``shape``: the sizes: ints, SymPy expressions or ``None`` (a fresh symbol).
    One symbol in several shapes is one size: the launcher reads it from the
    first tensor and refuses a call whose tensors differ there (as it does
    for the parameters one ``Tensor`` object declares, strides included).
    ``shape_options``: the options of the size symbols (``Symbol``'s:
    ``constexpr``, ``upper_bound``, ``power_of_two``, ...), one dict for every
    dimension or a sequence of one per dimension (``None`` for none).
    ``name``: the tensor's name in generated code and messages (default: the
    parameter's name in the arrangement).
    ``constexpr``: a 0-dimensional compile-time value; ``value``: that value,
    fixed at ``make`` (otherwise given at each call).
    ``jagged_dim``: the ragged dimension of a jagged tensor (docs/jagged.md).
    ``strides``: the strides, where they are known (default: symbols given
    at launch).
    """

    def __init__(
        self,
        ndim=None,
        shape=None,
        dtype=None,
        other=None,
        shape_options=None,
        name=None,
        constexpr=None,
        value=None,
        jagged_dim=None,
        strides=None,
    ):
        if isinstance(dtype, Tensor):
            raise MetaOperationError(
                "a source tensor's dtype must be an element type; hierarchical tensors "
                "come from meta-operations such as tile"
            )
        if ndim is None and shape is None:
            raise MetaOperationError("Tensor needs ndim or shape")
        if ndim is not None and shape is not None and len(shape) != ndim:
            raise MetaOperationError(f"Tensor: ndim={ndim} but shape has {len(shape)} entries")
        if ndim is not None and (not isinstance(ndim, int) or ndim < 0):
            raise MetaOperationError(f"Tensor: ndim must be a non-negative int, got {ndim!r}")
        if constexpr and (ndim or (shape and len(shape))):
            raise MetaOperationError("only 0-dimensional tensors can be constexpr")
        ndim_given = len(shape) if shape is not None else ndim
        if jagged_dim is not None:
            check_jagged(jagged_dim, ndim_given, shape, strides)
        self.jagged_dim = jagged_dim
        self._instance = next(_instance_ids)
        self._parent = None
        self.name = name if name is not None else f"ntsym_tensor_{self._instance}"
        self._auto_named = name is None
        self.element_dtype = dtype
        self.other = other
        self.constexpr = bool(constexpr)
        self.value = value
        if value is not None and not self.constexpr:
            raise MetaOperationError("Tensor(value=...) requires constexpr=True")
        ndim = len(shape) if shape is not None else ndim
        options = shape_options_per_dim(shape_options, ndim)
        sizes = []
        for d in range(ndim):
            entry = None if shape is None else shape[d]
            if entry is None:
                opts = dict(options[d])
                if opts.get("power_of_two"):
                    # Tiles over it are unpadded blocks: their extent is the
                    # size itself, which Triton needs at compile time.
                    opts["constexpr"] = True
                symbol = Symbol(f"{self.name}_size_{d}", nonnegative=False, **opts)
                symbol.is_size = True
                symbol.jagged = d == jagged_dim
                sizes.append(symbol)
            else:
                size = as_expr(entry)
                if size.is_positive is False:
                    raise MetaOperationError(
                        f"Tensor {self.name}: shape[{d}] = {size} must be positive"
                    )
                sizes.append(size)
        self.source_shape = tuple(sizes)
        if strides is None:
            # A jagged tensor's batch dimension has no stride: each sequence
            # starts where the offsets say (NineToothed's stride 0).
            self.source_strides = tuple(
                sympy.S.Zero if d == 0 and jagged_dim is not None
                else Symbol(f"{self.name}_stride_{d}", nonnegative=True) for d in range(ndim)
            )
        else:
            self.source_strides = tuple(as_expr(s) for s in strides)
        vars = tuple(_new_var("s") for _ in range(ndim))
        conditions = [sympy.Lt(v, n) for v, n in zip(vars, sizes)]
        self._hier = Hierarchy(self, [Level(sizes, vars)], vars, conditions)
        self._level = 0

    # -- views --------------------------------------------------------------

    @classmethod
    def _view(cls, hier, level, parent=None):
        view = cls.__new__(cls)
        view._hier = hier
        view._level = level
        view._parent = parent  # the view whose `.dtype` this is (for write-through)
        return view

    @property
    def source(self):
        """The source tensor this arrangement reads and writes."""
        return self._hier.source

    @property
    def hierarchy(self):
        return self._hier

    @property
    def level(self):
        """Which level of the hierarchy this view stands for (0 = outermost)."""
        return self._level

    @property
    def _lvl(self):
        return self._hier.levels[self._level]

    @property
    def shape(self):
        return self._lvl.shape

    @property
    def ndim(self):
        return len(self._lvl.shape)

    def size(self, dim=None):
        return self.shape if dim is None else self.shape[dim]

    @property
    def strides(self):
        """Strides of a source tensor (symbols unless given)."""
        if self._is_source():
            return self.source.source_strides
        raise AttributeError(
            "an arranged tensor has index maps, not strides: see `index_map` or "
            "use `t.source.strides`"
        )

    def stride(self, dim=None):
        return self.strides if dim is None else self.strides[dim]

    def _is_source(self):
        hier = self._hier
        return hier is self.source._hier and self._level == 0

    @property
    def dtype(self):
        """The next level (a Tensor), or the element type at the innermost level."""
        if self._level + 1 < len(self._hier.levels):
            return Tensor._view(self._hier, self._level + 1, parent=self)
        return self.source.element_dtype

    @dtype.setter
    def dtype(self, value):
        if not isinstance(value, Tensor):
            if self._level + 1 < len(self._hier.levels):
                raise MetaOperationError(
                    "cannot replace an inner level by an element type; assign a tensor "
                    "derived from `t.dtype`"
                )
            if not self._is_source():
                raise MetaOperationError("set the element dtype on the source tensor")
            self.source.element_dtype = value
            return
        if value._level != self._level + 1 or value._hier.source is not self._hier.source:
            raise MetaOperationError(
                "`t.dtype = x` needs x derived from `t.dtype` (the next level of the same "
                "arrangement)"
            )
        ours, theirs = self._hier.levels[: self._level + 1], value._hier.levels[: self._level + 1]
        if any(a is not b for a, b in zip(ours, theirs)):
            raise MetaOperationError(
                "`t.dtype = x`: x was derived from a different version of this arrangement"
            )
        self._hier = value._hier
        # `t.dtype.dtype = x` assigns through the temporary view `t.dtype`.
        parent = getattr(self, "_parent", None)
        while parent is not None:
            prefix = parent._hier.levels[: parent._level + 1]
            if any(a is not b for a, b in zip(prefix, value._hier.levels)):
                break
            parent._hier = value._hier
            parent = getattr(parent, "_parent", None)
        """Per source dimension, the source index as an expression in index variables."""
        return self._hier.index

    @property
    def conditions(self):
        return self._hier.conditions

    def __repr__(self):
        shapes = " / ".join(
            "(" + ", ".join(str(s) for s in level.shape) + ("," if len(level.shape) == 1 else "") + ")"
            for level in self._hier.levels[self._level :]
        )
        return f"Tensor[{self.source.name}]{shapes}"

    # -- meta-operations ----------------------------------------------------

    def _derive(self, mapping, new_levels, extra_conditions=(), requirements=(), live=None, padding=()):
        hier = self._hier.substitute(mapping, self._level, new_levels, extra_conditions, requirements, live, padding)
        return Tensor._view(hier, self._level)

    def _check_dims(self, op, arg_name, values):
        if len(values) != self.ndim:
            raise MetaOperationError(
                f"{op}: {arg_name} has {len(values)} entries but the tensor level has "
                f"{self.ndim} dimensions (shape {_fmt(self.shape)})"
            )

    def _dim(self, op, dim, extra=0):
        ndim = self.ndim + extra
        if not isinstance(dim, int) or isinstance(dim, bool):
            raise MetaOperationError(f"{op}: dim must be an int, got {dim!r}")
        if not -ndim <= dim < max(ndim, 1):
            raise MetaOperationError(
                f"{op}: dim {dim} out of range for shape {_fmt(self.shape)}"
            )
        return dim % ndim if ndim else 0

    def tile(self, tile_shape, strides=None, dilation=None, floor_mode=False):
        """Split this level into an outer level of tiles and an inner level.

        Along each dimension, tile ``o`` element ``u`` is element
        ``o * stride + u * dilation``; ``-1`` as a tile size means the whole
        dimension, ``-1`` (or ``None``) as a stride means the tile size.
        """
        tile_shape = tuple(tile_shape)
        self._check_dims("tile", "tile_shape", tile_shape)
        strides = (-1,) * self.ndim if strides is None else tuple(strides)
        dilation = (1,) * self.ndim if dilation is None else tuple(dilation)
        self._check_dims("tile", "strides", strides)
        self._check_dims("tile", "dilation", dilation)
        outer_shape, inner_shape, outer_vars, inner_vars = [], [], [], []
        mapping, conditions, requirements, live = {}, [], [], {}
        for j, (n, var, t, s, d) in enumerate(
            zip(self.shape, self._lvl.vars, tile_shape, strides, dilation)
        ):
            t = n if _is_minus_one(t) else as_expr(t)
            s = t if s is None or _is_minus_one(s) else as_expr(s)
            d = as_expr(d)
            for label, value in (("tile_shape", t), ("strides", s), ("dilation", d)):
                if value.is_positive is False:
                    raise MetaOperationError(
                        f"tile: {label}[{j}] = {value} must be positive (or -1) "
                        f"for shape {_fmt(self.shape)}"
                    )
                if value.is_positive is not True:
                    # A compile-time value the caller gives may be 0: make()
                    # takes a bare one as positive, the launcher checks it.
                    requirements.append(sympy.Ge(value, 1))
            outer, live_count, required = window_count(n, t, s, d, floor_mode)
            requirements += required
            outer = sympy.sympify(outer)
            o, u = _new_var("o"), _new_var("t")
            outer_vars.append(o)
            inner_vars.append(u)
            outer_shape.append(outer)
            inner_shape.append(t)
            if live_count is not None:
                live[o] = live_count
            o_term = sympy.S.Zero if outer == 1 else o
            u_term = sympy.S.Zero if t == 1 else u
            expr = o_term * s + u_term * d
            mapping[var] = expr
            if not _provably_below(expr, n, {o: outer, u: t}):
                conditions.append(sympy.Lt(expr, n))
        return self._derive(
            mapping,
            [Level(outer_shape, outer_vars), Level(inner_shape, inner_vars)],
            conditions,
            requirements,
            live,
        )

    def expand(self, shape):
        """Broadcast singleton dimensions to ``shape`` (``-1`` keeps a size)."""
        shape = tuple(shape)
        self._check_dims("expand", "shape", shape)
        new_shape, new_vars, mapping, requirements = [], [], {}, []
        for j, (n, var, m) in enumerate(zip(self.shape, self._lvl.vars, shape)):
            if _is_minus_one(m):
                new_shape.append(n)
                new_vars.append(var)
                continue
            m = as_expr(m)
            if m == n:
                new_shape.append(n)
                new_vars.append(var)
                continue
            requirements += _require_one("expand", j, n, self.shape)
            if m.is_positive is False:
                raise MetaOperationError(f"expand: shape[{j}] = {m} must be positive")
            mapping[var] = sympy.S.Zero
            new_shape.append(m)
            new_vars.append(_new_var("e"))
        return self._derive(mapping, [Level(new_shape, new_vars)], requirements=requirements)

    def squeeze(self, dim):
        """Remove singleton dimension(s) ``dim`` (an int or a tuple of ints)."""
        dims = dim if isinstance(dim, (tuple, list)) else (dim,)
        dims = {self._dim("squeeze", d) for d in dims}
        mapping, requirements = {}, []
        for j in dims:
            requirements += _require_one("squeeze", j, self.shape[j], self.shape)
            mapping[self._lvl.vars[j]] = sympy.S.Zero
        keep = [j for j in range(self.ndim) if j not in dims]
        level = Level([self.shape[j] for j in keep], [self._lvl.vars[j] for j in keep])
        return self._derive(mapping, [level], requirements=requirements)

    def unsqueeze(self, dim):
        """Insert a singleton dimension at position ``dim``."""
        dim = self._dim("unsqueeze", dim, extra=1)
        shape, vars = list(self.shape), list(self._lvl.vars)
        shape.insert(dim, sympy.S.One)
        vars.insert(dim, _new_var("u"))
        return self._derive({}, [Level(shape, vars)])

    def permute(self, dims):
        """Reorder dimensions: new dimension ``i`` is old dimension ``dims[i]``."""
        dims = tuple(dims)
        normalized = [self._dim("permute", d) for d in dims]
        if sorted(normalized) != list(range(self.ndim)):
            raise MetaOperationError(
                f"permute: {dims} is not a permutation of the {self.ndim} dimensions of "
                f"shape {_fmt(self.shape)}"
            )
        level = Level([self.shape[d] for d in normalized], [self._lvl.vars[d] for d in normalized])
        return self._derive({}, [level])

    def flatten(self, start_dim=None, end_dim=None):
        """Merge dimensions ``[start_dim, end_dim)`` (end exclusive) into one,
        the last fastest."""
        start = 0 if start_dim is None else start_dim
        end = self.ndim if end_dim is None else end_dim
        if start < 0:
            start += self.ndim
        if end < 0:
            end += self.ndim
        if not 0 <= start < end <= self.ndim:
            raise MetaOperationError(
                f"flatten: start_dim={start_dim}, end_dim={end_dim} (end exclusive) select no "
                f"dimensions of shape {_fmt(self.shape)}"
            )
        sizes = self.shape[start:end]
        f = _new_var("f")
        mapping, inner = {}, sympy.S.One
        for k in reversed(range(start, end)):
            n = self.shape[k]
            expr = FloorDiv(f, inner)
            if k != start:
                expr = Mod(expr, n)
            mapping[self._lvl.vars[k]] = expr
            inner = inner * n
        shape = self.shape[:start] + (sympy.Mul(*sizes),) + self.shape[end:]
        vars = self._lvl.vars[:start] + (f,) + self._lvl.vars[end:]
        return self._derive(mapping, [Level(shape, vars)])

    def ravel(self):
        """Merge this level and all levels inside it into one level."""
        levels = self._hier.levels[self._level :]
        shape = tuple(s for level in levels for s in level.shape)
        vars = tuple(v for level in levels for v in level.vars)
        hier = self._hier
        merged = Hierarchy(
            hier.source,
            hier.levels[: self._level] + (Level(shape, vars),),
            hier.index,
            hier.conditions,
            hier.requirements,
            hier.live,
            hier.padding,
        )
        return Tensor._view(merged, self._level)

    def pad(self, pad):
        """Pad each dimension by ``(before, after)``, or, given a flat sequence, as
        ``torch.nn.functional.pad`` does (the last dimension first); padding reads ``other``."""
        pad = tuple(pad)
        if pad and not any(isinstance(p, (tuple, list)) for p in pad):  # (left, right, top, bottom, ...)
            if len(pad) % 2 or len(pad) > 2 * self.ndim:
                raise MetaOperationError(f"pad: a flat pad of {len(pad)} values for {self.ndim} dimensions")
            pad = ((0, 0),) * (self.ndim - len(pad) // 2) + tuple(zip(pad[-2::-2], pad[::-1][::2]))
        pad = tuple(tuple(p) for p in pad)
        self._check_dims("pad", "pad", pad)
        shape, vars, mapping, conditions = [], [], {}, []
        for j, (n, var, (before, after)) in enumerate(zip(self.shape, self._lvl.vars, pad)):
            before, after = as_expr(before), as_expr(after)
            if before.is_negative or after.is_negative:
                raise MetaOperationError(f"pad: pad[{j}] = ({before}, {after}) must be non-negative")
            if before == 0 and after == 0:
                shape.append(n)
                vars.append(var)
                continue
            p = _new_var("p")
            expr = p - before
            mapping[var] = expr
            if before != 0:
                conditions.append(sympy.Ge(expr, 0))
            if after != 0:
                conditions.append(sympy.Lt(expr, n))
            shape.append(n + before + after)
            vars.append(p)
        return self._derive(mapping, [Level(shape, vars)], conditions, padding=conditions)

    def __getitem__(self, key):
        """Select (int) or slice (``a:b:c``) dimensions of this level, as NumPy
        does: ``None`` inserts a new dimension of size 1 and ``...`` stands for
        as many full slices as the other entries leave."""
        key = self._expand_key(key if isinstance(key, tuple) else (key,))
        shape, vars, mapping, conditions = [], [], {}, []
        dims = iter(enumerate(zip(self.shape, self._lvl.vars)))
        for k in key:
            if k is None:
                shape.append(sympy.S.One)
                vars.append(_new_var("u"))
                continue
            j, (n, var) = next(dims)
            if isinstance(k, slice):
                size, start, step, bounds = slice_extent(k, n, j, self.shape)
                if start == 0 and step == 1 and size == n:
                    shape.append(n)
                    vars.append(var)
                    continue
                v = _new_var("l")
                mapping[var] = start + v * step
                conditions += bounds(v)
                shape.append(size)
                vars.append(v)
            else:
                i = as_expr(k)
                if i.is_negative:
                    i = i + n
                if (i - n).is_nonnegative or i.is_negative:
                    raise MetaOperationError(
                        f"index {k} out of range for dimension {j} of shape {_fmt(self.shape)}"
                    )
                if not _provably_below(i, n, {}):
                    conditions.append(sympy.Lt(i, n))
                mapping[var] = i
        return self._derive(mapping, [Level(shape, vars)], conditions)

    def _expand_key(self, key):
        """``key`` with ``...`` replaced by full slices and full slices
        appended for the dimensions it leaves out."""
        ellipses = sum(1 for k in key if k is Ellipsis)
        if ellipses > 1:
            raise MetaOperationError(f"an index can only have a single ellipsis ('...'), got {key!r}")
        used = sum(1 for k in key if k is not None and k is not Ellipsis)
        if used > self.ndim:
            raise MetaOperationError(
                f"too many indices ({used}) for shape {_fmt(self.shape)}"
                + (" (None entries add dimensions and do not count)" if None in key else "")
            )
        fill = (slice(None),) * (self.ndim - used)
        if ellipses:
            at = key.index(Ellipsis)
            return key[:at] + fill + key[at + 1 :]
        return key + fill

    # -- evaluation ---------------------------------------------------------

    def eval(self, subs=None):
        """The flat source offset of every element of every level, -1 where
        none (see :func:`ntsym.evaluation.eval`)."""
        return evaluation.eval(self, subs)

    def subs(self, subs):
        """This arrangement with the values ``subs`` gives substituted (see
        :func:`ntsym.evaluation.subs`)."""
        return evaluation.subs(self, subs)

    def innermost(self):
        """The innermost level (the tiles an application computes on)."""
        return Tensor._view(self._hier, len(self._hier.levels) - 1, parent=None)

    def names(self):
        """The symbols this arrangement depends on: sizes and strides of its
        source, block sizes and other symbols in its levels' shapes."""
        hier = self._hier
        exprs = [s for level in hier.levels[self._level:] for s in level.shape]
        exprs += list(self.source.source_shape) + list(self.source.source_strides)
        return {s for e in exprs for s in sympy.sympify(e).free_symbols if isinstance(s, Symbol)}


def _is_minus_one(value):
    return not isinstance(value, sympy.Basic) and not isinstance(value, bool) and value == -1


def _fmt(shape):
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def _require_one(op, j, n, shape):
    if n == 1:
        return []
    if sympy.Eq(n, 1) is sympy.false or (n - 1).is_positive:
        raise MetaOperationError(
            f"{op}: dimension {j} of shape {_fmt(shape)} has size {n}, not 1"
        )
    return [sympy.Eq(n, 1)]


def _provably_below(expr, bound, ranges):
    """Whether ``expr < bound`` for every value of the variables in ``ranges``
    (var -> exclusive upper bound).  Monotone in non-negative linear terms."""
    expr = sympy.expand(expr)
    high = expr
    for var, size in ranges.items():
        coeff = expr.coeff(var)
        if coeff == 0:
            continue
        if coeff.is_nonnegative is not True:
            return False
        high = high.subs(var, size - 1)
    return (bound - high).is_positive is True
