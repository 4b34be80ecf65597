"""Shapes and index values: what the application's integer expressions are as
SymPy.

- Tile shapes: ``x.shape`` is a tile's true extents, except inside the shape
  argument of ``zeros``, ``full``, ``arange``, ``reshape``... (a *shape
  context*), where it is the padded power-of-two block the tile is loaded
  in (``block_extent_expr``); locals holding shapes follow.
- Index expressions: ``to_sympy`` (loop bounds, ``x[k]`` keys) and
  ``index_value`` (what a local holds as index math, e.g. offsets of a
  tile), which lets ``proved`` decide comparisons for every element.
"""

import ast
import contextlib

import sympy

from ntsym_codegen import bounds
from ntsym_codegen.astutil import is_int, literal_int
from ntsym_codegen.emit_error import EmitError
from ntsym_codegen.intfuncs import FloorDiv, Mod
from ntsym_codegen.refs import SourceRef, TileRef


def block_extent_expr(n, pow2_names):
    """The power-of-two block extent for a dimension of size ``n``."""
    n = sympy.sympify(n)
    if is_pow2(n):
        return n
    if n.is_Integer:
        return sympy.Integer(1 << (int(n) - 1).bit_length())
    if n not in pow2_names:
        pow2_names[n] = sympy.Symbol(f"NTSYM_BLOCK_{len(pow2_names)}", integer=True, positive=True)
    return pow2_names[n]


def is_pow2(n):
    if n.is_Integer:
        v = int(n)
        return v > 0 and v & (v - 1) == 0
    if n.is_Symbol:
        if getattr(n, "padded", False):
            return False
        # Call-time constexpr block sizes are checked to be powers of two at
        # launch (other values launch a variant where they are padded).
        return bool(getattr(n, "power_of_two", False)) or (
            bool(getattr(n, "constexpr", False)) and not getattr(n, "is_size", True)
        )
    if isinstance(n, sympy.Mul):
        return all(is_pow2(f) for f in n.args)
    return False


# Arguments of ``triton.language`` functions that are shapes or extents.
_TL_SHAPE_SLOTS = {
    "zeros": ({0}, ("shape",)),
    "full": ({0}, ("shape",)),
    "arange": ({1}, ("end",)),
    "reshape": ("rest", ("shape",)),
    "view": ("rest", ("shape",)),
    "broadcast_to": ("rest", ("shape",)),
}


# Methods of tile values whose arguments are a shape.
_SHAPE_METHODS = {"reshape", "view", "broadcast_to"}


class ShapesMixin:
    """Tile shapes, shape arguments and index values, for ``KernelEmitter``.

    Reads ``shapes`` (writes ``building``), ``values``, ``names.locals``,
    ``loops.ranges``/``trips`` and ``records.pow2`` (adds padded blocks);
    uses the visitor's ``resolve``, ``expr``, ``attribute``, ``printer`` and
    ``alias``/``_constant_key`` from ``GlobalNamesMixin``."""

    # -- integer expressions and sizes -----------------------------------------

    def to_sympy(self, node):
        """An integer index expression of the application as SymPy."""
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
            return sympy.Integer(node.value)
        if isinstance(node, ast.Name):
            if node.id in self.tensors and node.id not in self.names.locals:
                raise self.error(f"`{node.id}` is a tensor, not an index", node)
            if self.shapes.building and node.id in self.shapes.padded_sizes:
                return self.shapes.padded_sizes[node.id]
            if node.id in self.values.sizes:
                return self.values.sizes[node.id]
            key = self._constant_key(node)
            if key is not None and is_int(self.ir.constants[key]):
                return sympy.Integer(self.ir.constants[key])
            return sympy.Symbol(node.id, integer=True)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -self.to_sympy(node.operand)
        if isinstance(node, ast.BinOp):
            value = _arithmetic(node.op, self.to_sympy(node.left), self.to_sympy(node.right))
            if value is not None:
                return value
        shape = self.shape_value(node)
        if shape is not None:
            return shape
        raise self.error(
            "index expressions must be integer arithmetic on loop variables, constants and "
            f"`x.shape[i]`; got `{ast.unparse(node)}`",
            node,
        )

    def _padded_value(self, node):
        """What a local assigned ``node`` holds where a shape is built (see
        :meth:`ref_shape`): SymPy for sizes (``n = x.shape[1]``), AST for
        shapes (``s = x.shape``, ``(m, n)``), else None.  No side effects."""
        with self._building_shape():
            value = self._size_value(node)
            if value is not None:
                return value
            if isinstance(node, ast.Attribute) and node.attr == "shape" and isinstance(self.resolve(node.value), TileRef):
                return self.attribute(node)
            if isinstance(node, (ast.Tuple, ast.List)):
                values = [self._size_value(e) for e in node.elts]
                if all(v is not None for v in values):
                    return ast.Tuple(elts=[self.printer()(v) for v in values], ctx=ast.Load())
        return None

    def _size_value(self, node):
        """The value of an integer expression in sizes and block sizes, if it is
        one (``n = x.shape[0]``), else None."""
        try:
            value = self.to_sympy(node)
        except EmitError:
            return None
        known = set(self.ir.symbols.values()) | set(self.ir.program_vars) | set(self.records.pow2.values())
        return value if value.free_symbols <= known else None

    def shape_value(self, node):
        """SymPy value of ``x.shape[i]`` / ``x.dtype.shape[i]`` nodes, else None."""
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.slice, ast.UnaryOp)
            and isinstance(node.slice.op, ast.USub)
            and isinstance(node.slice.operand, ast.Constant)
        ):
            node = ast.Subscript(value=node.value, slice=ast.Constant(-node.slice.operand.value), ctx=ast.Load())
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            base = node.value
            if isinstance(base, ast.Attribute) and base.attr == "shape":
                ref = self.resolve(base.value)
                if isinstance(ref, SourceRef):
                    return ref.param.sizes[node.slice.value]
                if isinstance(ref, TileRef):
                    shape = self.ref_shape(ref)
                    i = node.slice.value
                    if not -len(shape) <= i < len(shape):
                        raise self.error(
                            f"`{ast.unparse(node)}`: `{ref.param.name}` has {len(shape)} dimensions here",
                            node,
                        )
                    return shape[i]
        return None

    # -- tile shapes, true or padded -------------------------------------------

    def ref_shape(self, ref):
        """A tile's shape as the application sees it: the true extents (a
        whole dimension of 451 is 451), except where a shape is built
        (``zeros``, ``arange``, ``reshape``...), which needs the power-of-two
        block the tile is loaded in."""
        shape = ref.shape()
        if ref.innermost and self.shapes.building:
            return [block_extent_expr(n, self.records.pow2) for n in shape]
        return shape

    @contextlib.contextmanager
    def _building_shape(self, on=True):
        """Inside: ``x.shape`` of an innermost tile is its padded block."""
        saved, self.shapes.building = self.shapes.building, on
        try:
            yield
        finally:
            self.shapes.building = saved

    def shape_argument(self, node):
        """An argument that gives a shape or an extent: tile shapes (and locals
        holding them) are the padded blocks."""
        with self._building_shape():
            return self.expr(node)

    def _shape_slots(self, func):
        """Which arguments of a call give a shape or an extent: positions (a
        set, "rest" for all but the first, "all") and keyword names."""
        if not isinstance(func, ast.Attribute):
            return (), ()
        name = func.attr
        if self.alias(func.value) == "tl":
            return _TL_SHAPE_SLOTS.get(name, ((), ()))
        if name in _SHAPE_METHODS:
            return "all", ("shape",)
        return (), ()

    # -- index values: what a local holds, as index math -----------------------

    def index_value(self, node):
        """The value of ``node`` as SymPy index math over loop variables, tile
        index variables, sizes and block sizes, or None.  Only values built
        from one tile's offsets (moved around by ``trans`` or new axes, which
        keep the set of values) and scalars are followed."""
        try:
            return self._index_value(node)
        except (_NotIndex, EmitError):
            return None

    def _index_value(self, node):
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
            return sympy.Integer(node.value)
        if isinstance(node, ast.Name):
            if node.id in self.values.index:
                return self.values.index[node.id]
            var = sympy.Symbol(node.id, integer=True)
            if var in self.loops.trips:
                return var
            if node.id in self.values.sizes:
                return self.values.sizes[node.id]
            key = self._constant_key(node)
            if key is not None and is_int(self.ir.constants[key]):
                return sympy.Integer(self.ir.constants[key])
            raise _NotIndex
        shape = self.shape_value(node)
        if shape is not None:
            return shape
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and len(node.args) == 1 and not node.keywords:
            ref = self.resolve(node.func.value)
            if isinstance(ref, TileRef) and node.func.attr == "offsets":
                return self._offsets_value(ref, node)
            if node.func.attr == "trans" and self.alias(node.func.value) == "tl":
                return self._index_value(node.args[0])
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and self.alias(node.func.value) == "tl":
            if node.func.attr in ("minimum", "maximum") and len(node.args) == 2 and not node.keywords:
                a, b = self._index_value(node.args[0]), self._index_value(node.args[1])
                if a.free_symbols & b.free_symbols & set(self.values.tile_vars):
                    raise _NotIndex
                return (sympy.Min if node.func.attr == "minimum" else sympy.Max)(a, b)
            if node.func.attr in ("min", "max"):
                return self._extreme_offset(node, node.func.attr == "min")
        if isinstance(node, ast.Subscript):
            keys = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if all(
                (isinstance(k, ast.Constant) and k.value is None)
                or (isinstance(k, ast.Slice) and k.lower is None and k.upper is None and k.step is None)
                for k in keys
            ) and self.resolve(node.value) is None:
                return self._index_value(node.value)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -self._index_value(node.operand)
        if isinstance(node, ast.BinOp):
            a, b = self._index_value(node.left), self._index_value(node.right)
            if a.free_symbols & b.free_symbols & set(self.values.tile_vars):
                raise _NotIndex  # elementwise pairs of one tile's values: not followed
            value = _arithmetic(node.op, a, b)
            if value is not None:
                return value
        raise _NotIndex

    def _extreme_offset(self, node, smallest):
        """``ntl.min(x.offsets(d))`` (or ``max``, over axis 0 or all): the
        offsets' value at the end of the tile where it is smallest (largest).
        Exact, not a bound: only an offset vector (one dimension, every lane
        reduced) whose value is affine in its tile variable is followed."""
        args = list(node.args)
        axis = next((k.value for k in node.keywords if k.arg == "axis"), None)
        if any(k.arg != "axis" for k in node.keywords) or not 1 <= len(args) <= 2:
            raise _NotIndex
        if len(args) == 2:
            axis = args[1]
        if axis is not None and literal_int(axis) != 0:
            raise _NotIndex
        inner = args[0]
        if not (isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) and inner.func.attr == "offsets"
                and isinstance(self.resolve(inner.func.value), TileRef)):
            raise _NotIndex
        value = self._index_value(inner)
        tiles = [v for v in value.free_symbols if v in self.values.tile_vars]
        if len(tiles) != 1:
            raise _NotIndex
        (t,) = tiles
        slope = sympy.expand(sympy.diff(value, t))
        if slope.has(t) or not sympy.expand(value - slope * t).free_symbols.isdisjoint({t}):
            raise _NotIndex
        if slope.is_nonnegative:
            rising = True
        elif slope.is_nonpositive:
            rising = False
        else:
            raise _NotIndex
        end = sympy.S.Zero if rising == smallest else self.values.tile_vars[t] - 1
        return value.xreplace({t: end})

    def _offsets_value(self, ref, node):
        d = literal_int(node.args[0])
        p = ref.param
        if not isinstance(d, int) or not -p.ndim <= d < p.ndim:
            raise _NotIndex
        vars = p.level_vars[ref.depth]
        for j in ref.dims:
            self.values.tile_vars[vars[j]] = block_extent_expr(p.levels[ref.depth][j], self.records.pow2)
        return ref.offsets(d)[0]

    def index_placement(self, node):
        """For an ``index_value`` node: the axis of its value along which each
        tile variable runs (counted from the last, -1, as broadcasting aligns
        values), or None where that is not followed.  ``x.offsets(d)`` of one
        tile dimension is a vector (its variable on axis -1); new axes
        (``v[None, :]``) and ``trans`` move it; operands of arithmetic and
        comparisons broadcast against each other."""
        try:
            return self._placement(node)
        except _NotIndex:
            return None

    def _placement(self, node):
        if isinstance(node, ast.Constant):
            return {}
        if isinstance(node, ast.Name):
            if node.id in self.values.index:
                if node.id not in self.values.placement:
                    raise _NotIndex
                return dict(self.values.placement[node.id])
            return {}  # a loop variable, a size, a constant: one value
        if self.shape_value(node) is not None:
            return {}
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and len(node.args) == 1 \
                and not node.keywords:
            ref = self.resolve(node.func.value)
            if isinstance(ref, TileRef) and node.func.attr == "offsets":
                d = literal_int(node.args[0])
                p = ref.param
                if not isinstance(d, int) or not -p.ndim <= d < p.ndim:
                    raise _NotIndex
                vars = p.level_vars[ref.depth]
                running = ref.offsets(d)[1]
                if len(running) == 1:  # a vector along that dimension
                    return {vars[running[0]]: -1}
                rank = len(ref.dims)
                return {vars[j]: ref.dims.index(j) - rank for j in running}
            if node.func.attr == "trans" and self.alias(node.func.value) == "tl":
                inner = self._placement(node.args[0])
                if any(a < -2 for a in inner.values()):
                    raise _NotIndex
                return {v: -3 - a for v, a in inner.items()}  # -1 <-> -2
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and self.alias(node.func.value) == "tl":
            if node.func.attr in ("minimum", "maximum") and len(node.args) == 2 and not node.keywords:
                return _broadcast(self._placement(node.args[0]), self._placement(node.args[1]))
            if node.func.attr in ("min", "max"):
                return {}  # one value
        if isinstance(node, ast.Subscript):
            keys = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            inner = self._placement(node.value)
            slices = [i for i, k in enumerate(keys) if isinstance(k, ast.Slice)]
            if any(not (isinstance(k, ast.Constant) and k.value is None) and not isinstance(k, ast.Slice)
                   for k in keys):
                raise _NotIndex
            if not inner:
                return {}
            # The value's axes, in order, take the slices' places; None adds an
            # axis; axes no slice names stay last (Triton's indexing).
            rank = self.lanes_of(node.value).rank
            if rank is None or len(slices) > rank or max(-a for a in inner.values()) > rank:
                raise _NotIndex
            new_rank = rank + len(keys) - len(slices)
            positions = slices + list(range(len(keys), new_rank))
            return {v: positions[rank + a] - new_rank for v, a in inner.items()}
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return self._placement(node.operand)
        if isinstance(node, ast.BinOp):
            return _broadcast(self._placement(node.left), self._placement(node.right))
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            return _broadcast(self._placement(node.left), self._placement(node.comparators[0]))
        raise _NotIndex

    def index_comparison(self, node):
        """``(relation, left, right)`` of a single ``<``, ``<=``, ``>`` or ``>=``
        between two index values (SymPy), or None."""
        if not (isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _RELATIONS):
            return None
        a, b = self.index_value(node.left), self.index_value(node.comparators[0])
        if a is None or b is None:
            return None
        return _RELATIONS[type(node.ops[0])], a, b

    def proved(self, node):
        """Whether the comparison ``node`` holds for every element and every
        iteration it can see (its sides' tile values compared pairwise in
        any arrangement: they may share no tile variable)."""
        comparison = self.index_comparison(node)
        if comparison is None:
            return False
        relation, a, b = comparison
        tiles = set(self.values.tile_vars)
        if a.free_symbols & b.free_symbols & tiles:
            return False
        ranges = {**self.base_ranges(), **self.values.tile_vars}
        return bounds.holds(relation(a, b), ranges)


_RELATIONS = {ast.Lt: sympy.Lt, ast.LtE: sympy.Le, ast.Gt: sympy.Gt, ast.GtE: sympy.Ge}


def _broadcast(a, b):
    """Placements of two operands broadcast together (axes counted from the
    last): a variable on two different axes is not followed."""
    for v, axis in b.items():
        if a.get(v, axis) != axis:
            raise _NotIndex
    return {**a, **b}


def _arithmetic(op, a, b):
    """``a op b`` in SymPy for the integer operators of index math (division
    and remainder by a positive divisor only), else None."""
    if isinstance(op, ast.Add):
        return a + b
    if isinstance(op, ast.Sub):
        return a - b
    if isinstance(op, ast.Mult):
        return a * b
    if isinstance(op, ast.FloorDiv) and b.is_positive:
        return FloorDiv(a, b)
    if isinstance(op, ast.Mod) and b.is_positive:
        return Mod(a, b)
    return None


class _NotIndex(Exception):
    pass
