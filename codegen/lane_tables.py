"""What the lanes rule knows of the application's functions
(``codegen/padding.py`` follows lanes with them, ``codegen/mixing.py`` reads
mixing operations through masks with them): which compute a known lane value
(SymPy), which are elementwise, which make fresh values, which reductions and
scans mix lanes and their identities, and the fills of those identities."""

import ast

import sympy

def _where(c, a, b):
    return a if c is sympy.true else b if c is sympy.false else None


_where.selects = True  # a known condition picks one operand: the other's data is not used
_where.passes_nan = (1, 2)  # its operands' NaN, not its condition's (``lane_values.NaNWhere``)


def _real_log(x, base):
    """A float's log: NaN below 0 (SymPy's ``log(-oo)`` is ``oo``)."""
    return sympy.nan if x.is_extended_negative else sympy.log(x, base)


def _passing(fn):
    """``fn``, marked as passing a NaN operand on to its result (``lane_values.apply``)."""
    fn.passes_nan = True
    return fn


# Elementwise functions whose value on a known lane value SymPy computes.
FUNCTIONS = {
    "exp": sympy.exp, "exp2": _passing(lambda x: 2**x), "log": _passing(lambda x: _real_log(x, sympy.E)),
    "log2": _passing(lambda x: _real_log(x, 2)),
    "abs": sympy.Abs, "sqrt": sympy.sqrt, "sin": sympy.sin, "cos": sympy.cos,
    "sigmoid": _passing(lambda x: 1 / (1 + sympy.exp(-x))),
    "maximum": sympy.Max, "minimum": sympy.Min,  # NaN passes: ntsym's propagate it (``codegen/semantics.py``)
    "where": _where,  # (a conversion: ``lanes.cast``)
}
# Elementwise functions whose lane value is not followed (the mask is).
ELEMENTWISE = {"fma", "erf", "rsqrt", "floor", "ceil", "tanh", "clamp", "fdiv", "div_rn", "sqrt_rn", "cdiv", "log1p",
                "expm1", "umulhi", "isnan", "isinf"}
# Functions whose result has no lanes from their operands (fresh values).
FRESH = {"zeros", "full", "arange", "zeros_like", "program_id", "num_programs", "load", "rand", "randn", "randint"}
OPERATORS = {ast.Add: _passing(lambda a, b: a + b), ast.Sub: _passing(lambda a, b: a - b),
             ast.Mult: _passing(lambda a, b: a * b), ast.Div: _passing(lambda a, b: a / b),
             ast.Pow: _passing(lambda a, b: a**b)}
COMPARE = {ast.Lt: sympy.Lt, ast.LtE: sympy.Le, ast.Gt: sympy.Gt, ast.GtE: sympy.Ge, ast.Eq: sympy.Eq,
            ast.NotEq: sympy.Ne}
# Reductions: their identity, and the position of ``keep_dims`` among the arguments.
REDUCTIONS = {"sum": (sympy.S.Zero, 2), "xor_sum": (sympy.S.Zero, 2), "max": (-sympy.oo, 4),
              "min": (sympy.oo, 4), "argmax": (-sympy.oo, 3), "argmin": (sympy.oo, 3), "reduce": (None, 3),
              "reduce_or": (sympy.S.Zero, 2)}
SCANS = {"cumsum": sympy.S.Zero, "cumprod": sympy.S.One, "associative_scan": None}
# Mixing operations that pass a NaN lane on to their result (``lane_values.NaNWhere``).
NAN_PASSING = frozenset({"sum", "max", "min", "dot", "cumsum", "cumprod", "softmax"})
# Other operations that mix lanes, read through the mask (``codegen/mixing.py``).
OTHER_MIXING = {"sort", "flip", "dot", "softmax", "topk", "histogram"}
FILLS = {-sympy.oo: "ntsym_lowest", sympy.oo: "ntsym_highest", sympy.nan: "ntsym_sort_fill"}


_INTEGER_TYPES = {"int1": "bool", "bool": "bool"}


def type_kind(node):
    """"float", "int" or "bool" for the type named by ``node`` (``tl.int8``,
    ``ntl.float16``, ``torch.int32``, ``"fp32"``), None where not known here
    (``x.dtype``)."""
    name = node.attr if isinstance(node, ast.Attribute) else node.value if isinstance(node, ast.Constant) else None
    if not isinstance(name, str):
        return None
    if name in _INTEGER_TYPES:
        return _INTEGER_TYPES[name]
    if name.startswith(("float", "bfloat", "fp", "bf")):
        return "float"
    if name.startswith(("int", "uint")):
        return "int"
    return None


def cast_kind(node, position):
    """The kind of type (``type_kind``) the conversion call ``node`` converts to:
    its argument at ``position`` or ``dtype=``."""
    bitcast = next((k.value for k in node.keywords if k.arg == "bitcast"),
                   node.args[position + 2] if len(node.args) > position + 2 else None)
    if bitcast is not None and not (isinstance(bitcast, ast.Constant) and bitcast.value is False):
        return "bits"
    target = next((k.value for k in node.keywords if k.arg == "dtype"),
                  node.args[position] if len(node.args) > position else None)
    return type_kind(target) if target is not None else None


def literal(node):
    """An integer literal (negative too), or None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        value = literal(node.operand)
        return None if value is None else -value
    return None
