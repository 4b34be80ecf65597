"""Index width: whether a launch's index math needs 64 bits.

Two things can pass 2**31 - 1. The byte-free element offsets ``sum(index_d *
stride_d)`` reach the tensor's memory extent (``runtime.needs_int64``). And the
logical indices an arrangement computes before they become coordinates reach
the tensor's logical size, which for a view with stride 0 (``expand``) or a
flattened slice (``x.flatten()[2**31 - 8:]``) is far past its memory: the flat
index ``4096 * pid + t + 2**31 - 8`` overflows int32 even though every element
it finally addresses is near the start of memory.

The second is bounded here, at ``make``, with SymPy: for every index
expression, mask condition and level extent of a tensor, a bound on the
magnitude of every intermediate value the kernel computes for it (sums and
products of the operands' bounds; an index variable is below its level's
extent), as expressions in sizes and compile-time values. At launch they are
evaluated with the call's sizes (compile-time values not given yet at their
largest candidate); past 2**31 - 1, the launch takes the 64-bit index math,
in which the sizes that index math multiplies are widened too."""

import ast

import sympy

from ntsym_codegen.intfuncs import CeilDiv, FloorDiv, Mod

LIMIT = 2**31 - 1
_UNBOUNDED = 2**20  # a compile-time value with no candidates or bound: Triton's largest block


# Integer functions as Python computes them on ints (the bounds hold no others).
_INTEGER_FUNCTIONS = {
    "Max": max, "Min": min, "FloorDiv": lambda a, b: a // b, "CeilDiv": lambda a, b: -(-a // b),
    "cdiv": lambda a, b: -(-a // b), "Mod": lambda a, b: a % b,
}


class _Unknown(Exception):
    pass


def _magnitude(e, ranges, found):
    """A bound on ``|e|`` for every value of its variables; appends the
    bounds of ``e``'s intermediate values to ``found``."""
    if e.is_Number:
        return abs(e)
    if e.is_Symbol:
        if e in ranges:
            return sympy.Max(ranges[e] - 1, 0)
        return e if e.is_nonnegative else sympy.Abs(e)
    args = [_magnitude(a, ranges, found) for a in e.args]
    if isinstance(e, sympy.Add):
        m = sympy.Add(*args)
    elif isinstance(e, sympy.Mul):
        m = sympy.Mul(*args)
    elif isinstance(e, (FloorDiv, CeilDiv, Mod)):
        # ``a // b`` and ``a % b`` compute ``(a // b) * b``: up to |a| + |b|.
        m = args[0] + args[1]
    elif isinstance(e, (sympy.Max, sympy.Min)):
        m = sympy.Add(*args)
    elif isinstance(e, sympy.Pow) and e.exp.is_Integer and e.exp >= 0:
        m = args[0] ** e.exp
    elif isinstance(e, sympy.Abs):
        m = args[0]
    else:
        raise _Unknown(e)
    found.append(m)
    return m


def peaks(params):
    """Bounds (SymPy, in sizes and compile-time values) of every value the
    index math of the tensors ``params`` (``ir.TensorParam``) computes; None
    where an expression holds a function this does not bound."""
    found = []
    for p in params:
        if p.kind != "tensor" or not p.levels:
            continue
        ranges = {v: n for names, shape in zip(p.level_vars, p.levels) for v, n in zip(names, shape)}
        exprs = list(p.index) + [n for shape in p.levels for n in shape]
        exprs += [side for c in p.conditions if isinstance(c, sympy.core.relational.Relational) for side in c.args]
        for e in exprs:
            try:
                _magnitude(sympy.sympify(e), ranges, found)
            except _Unknown:
                return None
    return tuple(dict.fromkeys(f for f in found if not f.is_Number or f > LIMIT))


def multiplied_sizes(params, size_args):
    """The runtime size arguments the index math multiplies by another
    runtime value: under 64-bit index math they are widened first."""
    sizes = {a.symbol for a in size_args if a.kind == "size" and not a.constexpr}
    found = set()
    for p in params:
        if p.kind != "tensor":
            continue
        exprs = list(p.index) + [side for c in p.conditions if isinstance(c, sympy.core.relational.Relational)
                                 for side in c.args]
        for e in exprs:
            for term in sympy.preorder_traversal(sympy.sympify(e)):
                if isinstance(term, sympy.Mul):
                    symbols = [s for f in term.args for s in f.free_symbols]
                    mine = [s for s in symbols if s in sizes]
                    if mine and len(set(symbols)) > 1:
                        found.update(mine)
    return sorted(s.name for s in found)


class IndexPeak:
    """``peak(tensors, metas)``: whether a launch's logical indices can pass
    2**31 - 1 (see the module). ``tensors`` in the order of the tensor
    parameters; ``metas``: name -> the value the call gave, or None."""

    def __init__(self, bounds, size_args, tensor_names, meta_params, aliases=()):
        self.bounds = bounds
        self.sizes = {a.symbol: (tensor_names.index(a.param), a.kind, a.dim) for a in size_args
                      if a.param in tensor_names}
        self.metas = {m.symbol: m for m in meta_params}
        self.aliases = dict(aliases)  # symbol -> the size symbol whose value bounds it
        symbols = sorted(set().union(*(b.free_symbols for b in bounds or ())), key=lambda s: s.name)
        self.symbols = symbols
        self.function = None
        if bounds:
            self.function = sympy.lambdify(symbols, sympy.Max(*bounds), modules=[_INTEGER_FUNCTIONS, "math"])
        # Where each symbol's value comes from, decided once (a launch then
        # reads sizes and strides without hashing or comparing symbols).
        self.plan = tuple(self._source(s) for s in symbols)

    def __call__(self, tensors, metas):
        if self.bounds is None:
            return True  # an index expression this cannot bound: 64-bit
        if self.function is None:
            return False
        values = []
        for source in self.plan:
            value = _value(source, tensors, metas)
            if value is None:
                return True
            values.append(value)
        return self.function(*values) > LIMIT

    def _source(self, symbol):
        """("size" | "stride", tensor position, dimension), ("meta", name,
        the value where the call gives none), or None: a value unknown."""
        symbol = self.aliases.get(symbol, symbol)
        if symbol in self.sizes:
            i, kind, dim = self.sizes[symbol]
            return (kind, i, dim)
        meta = self.metas.get(symbol)
        if meta is None:
            return None
        if meta.candidates:
            return ("meta", symbol.name, max(meta.candidates))
        for value in (meta.upper_bound, meta.default):
            if value is not None:
                return ("meta", symbol.name, value)
        return ("meta", symbol.name, _UNBOUNDED)


def _value(source, tensors, metas):
    if source is None:
        return None
    kind, where, fallback = source
    if kind == "meta":
        given = (metas or {}).get(where)
        return fallback if given is None else given
    t = tensors[where]
    return t.shape[fallback] if kind == "size" else abs(t.stride(fallback))


def widened_ranges(defs, flag):
    """``if NTSYM_INT64:`` casting the tile index ranges (``x_t0 =
    tl.arange(0, B)[:, None]``, among the prologue's ``defs``, (name, node)
    pairs) to 64 bits.  The 64-bit index math widens the program index and
    the strides; a range is int32 in Triton, and an index term without
    either (``x_t0 + 2147483644`` in a flattened slice, ``268435456 * x_t0``
    for a constant step) wrapped at 2**31, its mask computed from the same
    wrapped value: a wrong element read, or memory before the tensor's."""
    names = [name for name, node in defs if _is_range(node)]
    if not names:
        return []
    casts = [ast.parse(f"{n} = {n}.to(tl.int64)").body[0] for n in names]
    return [ast.If(test=ast.Name(id=flag, ctx=ast.Load()), body=casts, orelse=[])]


def _is_range(node):
    if isinstance(node, ast.Subscript):
        node = node.value
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "arange"
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "tl")


# The zero that a loop's stop is added to: 0, or an int64 0 under 64-bit index math.
ZERO = "ntsym_zero"


def widened_loops(body, flag):
    """Under ``flag`` (``NTSYM_INT64``), the ``range(...)`` loops of ``body``
    count in 64 bits: each stop becomes ``stop + ntsym_zero``, with
    ``ntsym_zero`` an int64 0 there (0 otherwise; the statements defining it
    are returned, none where there is no such loop).  Triton gives a loop
    the index type of its bounds, int32 for sizes and constants the 64-bit
    math does not widen, and a term of the index times a constant
    (``8192 * i * BLOCK`` for a declared stride, ``268435456 * i`` for a
    constant step) wrapped at 2**31 on a GPU: another row read with no error."""
    loops = [n for statement in body for n in ast.walk(statement)
             if isinstance(n, ast.For) and isinstance(n.iter, ast.Call) and isinstance(n.iter.func, ast.Name)
             and n.iter.func.id == "range" and 1 <= len(n.iter.args) <= 3]
    for loop in loops:
        stop = 0 if len(loop.iter.args) == 1 else 1
        zero = ast.Name(id=ZERO, ctx=ast.Load())
        loop.iter.args[stop] = ast.BinOp(left=loop.iter.args[stop], op=ast.Add(), right=zero)
    if not loops:
        return []
    return ast.parse(f"{ZERO} = 0\nif {flag}:\n    {ZERO} = tl.cast(0, tl.int64)").body
