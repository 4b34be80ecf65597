"""Torch's meaning of the application's operators, where Triton's differs.

- ``//`` and ``%`` round the quotient toward negative infinity, as Python and
  torch do (``-7 // 2 == -4``, ``-7 % 2 == 1``, ``-7.5 % 2 == 0.5``); Triton
  truncates signed integers (-3 and -1), takes C's ``fmod`` for float ``%``
  and has no float ``//`` (``ntsym_float_floordiv`` computes torch's
  ``floor_divide`` of floats: signed zeros, inf and NaN as torch gives them).
  Where both operands are proved non-negative (index math over offsets, loop
  variables and sizes) or are Python numbers at compile time, the two agree
  and the operator is emitted as written; otherwise through ``ntsym_py_floordiv``
  or ``ntsym_py_mod``, which add one select.
- ``maximum``, ``minimum`` and ``clamp`` propagate NaN, as torch's do (Triton's
  default returns the other operand), and the ``max`` and ``min`` reductions
  return NaN where their operand holds one (``ntsym_max``, ``ntsym_min``:
  Triton's drop NaN; on a GPU one reduction combining with ``maximum``'s NaN
  form, in the interpreter a second reduction counting NaNs, as the
  interpreter would run a combine function lane by lane); ``argmax`` and
  ``argmin`` point at the first NaN, as torch's do. Index math is exempt: it
  holds no NaN.
"""

import ast

from ntsym_codegen import bounds, debug_checks
from ntsym_codegen.sorting import SORTS

def _nan_reduction(name, combine):
    """The source of ``ntsym_<name>``: ``tl.<name>`` returning NaN where the
    operand holds one; on a GPU one reduction whose combine is ``<combine>``'s
    NaN form, in the interpreter a second reduction counting NaNs."""
    return f"""
@triton.jit
def ntsym_{name}_nan(a, b):
    return tl.{combine}(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def ntsym_{name}(x, axis: tl.constexpr = None, keep_dims: tl.constexpr = False):
    \"\"\"tl.{name} that returns NaN where the operand holds one, as torch.{name} does.\"\"\"
    if tl.constexpr(x.dtype.is_floating()):
        if NTSYM_INTERPRETING:  # the interpreter would run a combine function lane by lane
            m = tl.{name}(x, axis, keep_dims=keep_dims)
            m = tl.where(tl.max((x != x).to(tl.int32), axis, keep_dims=keep_dims) != 0, float("nan"), m)
        else:  # one reduction, as tl.{name}'s (narrow floats in float32), combining with {combine}.NaN
            y = x
            if tl.constexpr(x.dtype.primitive_bitwidth < 32):
                y = x.to(tl.float32)
            m = tl.reduce(y, axis, ntsym_{name}_nan, keep_dims=keep_dims)
    else:
        m = tl.{name}(x, axis, keep_dims=keep_dims)
    return m
"""


def _nan_arg_reduction(name):
    """The source of ``ntsym_<name>``: ``tl.<name>`` pointing at the first NaN
    where the operand holds one, as torch's does."""
    return f"""
@triton.jit
def ntsym_{name}(x, axis: tl.constexpr, tie_break_left: tl.constexpr = True, keep_dims: tl.constexpr = False):
    \"\"\"tl.{name} that points at the first NaN where the operand holds one, as torch.{name} does.\"\"\"
    i = tl.{name}(x, axis, tie_break_left=tie_break_left, keep_dims=keep_dims)
    if tl.constexpr(x.dtype.is_floating()):
        nan = (x != x).to(tl.int32)
        i = tl.where(tl.max(nan, axis, keep_dims=keep_dims) != 0, tl.argmax(nan, axis, keep_dims=keep_dims), i)
    return i
"""


HELPERS = {
    "ntsym_fmod": """
@triton.jit
def ntsym_fmod(a, b):
    \"\"\"C's fmod of floats, exact as torch's (Triton's float `%` on a GPU is
    a - b * trunc(a / b), which rounds); half precision in float32.\"\"\"
    t: tl.constexpr = (a + b).dtype
    if tl.constexpr(t.primitive_bitwidth < 32):
        r = libdevice.fmod(tl.cast(a, tl.float32), tl.cast(b, tl.float32)).to(t)
    else:
        r = libdevice.fmod(tl.cast(a, t), tl.cast(b, t))
    return r
""",
    "ntsym_py_floordiv": """
@triton.jit
def ntsym_exact_div(x, y):
    \"\"\"x / y rounded to nearest (Triton's float32 `/` may be approximate).\"\"\"
    if tl.constexpr(x.dtype == tl.float64):
        q = x / y
    else:
        q = tl.math.div_rn(x, y)
    return q


@triton.jit
def ntsym_float_floordiv(a, b):
    \"\"\"torch.floor_divide of floats: floor(a / b) computed from fmod as
    torch does (half precision in float32), -0.0 where the quotient is a
    negative zero, a / b (inf, NaN) where b is 0.\"\"\"
    t: tl.constexpr = (a + b).dtype
    if tl.constexpr(t.primitive_bitwidth < 32):
        x = tl.cast(a, tl.float32)
        y = tl.cast(b, tl.float32)
    else:
        x = tl.cast(a, t)
        y = tl.cast(b, t)
    mod = ntsym_fmod(x, y)
    div = ntsym_exact_div(x - mod, y)
    div = tl.where((mod != 0) & ((y < 0) != (mod < 0)), div - 1, div)
    q = tl.floor(div)
    q = tl.where(div - q > 0.5, q + 1, q)
    q = tl.where(div != 0, q, ntsym_exact_div(x, y) * 0.0)
    q = tl.where(y == 0, ntsym_exact_div(x, y), q)
    return q.to(t)


@triton.jit
def ntsym_py_floordiv(a, b):
    \"\"\"a // b as Python and torch compute it: rounded toward negative
    infinity, where Triton truncates signed integers (and has no float //).\"\"\"
    if tl.constexpr((a + b).dtype.is_floating()):
        q = ntsym_float_floordiv(a, b)
    else:
        q = a // b
        r = a % b
        q = tl.where((r != 0) & ((r < 0) != (b < 0)), q - 1, q)
    return q
""",
    "ntsym_py_mod": """
@triton.jit
def ntsym_py_mod(a, b):
    \"\"\"a % b as Python and torch compute it: the sign of b, where Triton's
    remainder (and C's fmod) has the sign of a.\"\"\"
    if tl.constexpr((a + b).dtype.is_floating()):
        r = ntsym_fmod(a, b)
    else:
        r = a % b
    return tl.where((r != 0) & ((r < 0) != (b < 0)), r + b, r)
""",
    "ntsym_max": _nan_reduction("max", "maximum"),
    "ntsym_min": _nan_reduction("min", "minimum"),
    "ntsym_argmax": _nan_arg_reduction("argmax"),
    "ntsym_argmin": _nan_arg_reduction("argmin"),
    "ntsym_check_index": debug_checks.HELPER,  # NTSYM_DEBUG only
}

# Module-level constant of the helpers that differ between the interpreter and a
# GPU: Triton's own switch (TRITON_INTERPRET, which ntsym sets where no GPU is).
INTERPRETING = (
    'NTSYM_INTERPRETING = tl.constexpr(os.environ.get("TRITON_INTERPRET", "0").lower() in ("1", "true", "yes", "on"))'
)

_ELEMENTWISE = {"maximum", "minimum", "clamp"}
_REDUCTIONS = {"max": "ntsym_max", "min": "ntsym_min", "argmax": "ntsym_argmax", "argmin": "ntsym_argmin"}


class SemanticsMixin:
    """Torch's meaning of ``//``, ``%`` and NaN in the emitted kernel (see the
    module). Needs the emitter's ``expr``, ``index_value``, ``number``,
    ``alias`` and ranges."""

    def division(self, node):
        """``a // b`` or ``a % b`` of the application, floored."""
        left, right = self.expr(node.left), self.expr(node.right)
        if self._floors_as_written(node):
            return ast.BinOp(left=left, op=node.op, right=right)
        name = "ntsym_py_floordiv" if isinstance(node.op, ast.FloorDiv) else "ntsym_py_mod"
        return ast.Call(func=ast.Name(id=name, ctx=ast.Load()), args=[left, right], keywords=[])

    def _floors_as_written(self, node):
        """Whether Triton's ``//``/``%`` of ``node`` equal Python's: Python
        numbers on both sides, or a dividend proved >= 0 and a divisor >= 1."""
        if self.number(node.left) and self.number(node.right):
            return True
        a, b = self.index_value(node.left), self.index_value(node.right)
        if a is None or b is None:
            return False
        ranges = {**self.base_ranges(), **self.values.tile_vars}
        return bounds.nonnegative(a, ranges) and bounds.nonnegative(b - 1, ranges)

    def nan_semantics(self, node, emitted):
        """``emitted``, the call ``node`` became, with NaN propagated as torch
        does: ``propagate_nan=ALL`` for maximum, minimum and clamp; the
        ``max``/``min`` reductions through ``ntsym_max``/``ntsym_min``."""
        if not (isinstance(emitted, ast.Call) and isinstance(emitted.func, ast.Attribute)
                and isinstance(emitted.func.value, ast.Name) and emitted.func.value.id == "tl"):
            return emitted
        if emitted.func.attr in SORTS:  # NaN the largest, signed zeros kept (codegen/sorting.py)
            return ast.Call(func=ast.Name(id=SORTS[emitted.func.attr], ctx=ast.Load()), args=emitted.args,
                            keywords=emitted.keywords)
        from_application = self.alias(node.func.value) == "tl" if isinstance(node.func, ast.Attribute) else (
            isinstance(node.func, ast.Name) and node.func.id in ("max", "min"))
        if not from_application or self.index_value(node) is not None:
            return emitted
        name = emitted.func.attr
        if name in _ELEMENTWISE and not any(k.arg == "propagate_nan" for k in emitted.keywords):
            propagate = ast.parse("tl.PropagateNan.ALL", mode="eval").body
            return ast.Call(func=emitted.func, args=emitted.args,
                            keywords=emitted.keywords + [ast.keyword(arg="propagate_nan", value=propagate)])
        allowed = ("axis", "keep_dims", "tie_break_left") if name.startswith("arg") else ("axis", "keep_dims")
        if name in _REDUCTIONS and len(emitted.args) <= 2 and all(k.arg in allowed for k in emitted.keywords):
            return ast.Call(func=ast.Name(id=_REDUCTIONS[name], ctx=ast.Load()), args=emitted.args,
                            keywords=emitted.keywords)
        return emitted
