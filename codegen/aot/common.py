"""What every part of the ahead-of-time path shares: the element types and
status codes of the C API, its error, and integer expressions as C."""

import sympy

from codegen.errors import CodegenError
from codegen.intfuncs import CeilDiv, FloorDiv, Mod

# The element types a tensor struct names, by code (NineToothed's order, bool last).
DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "bfloat16", "float32", "float64", "bool")
TRITON_TYPES = {"int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8", "uint16": "u16",
                "uint32": "u32", "uint64": "u64", "float16": "fp16", "bfloat16": "bf16", "float32": "fp32",
                "float64": "fp64", "bool": "i1"}
ELEMENT_SIZES = {"int8": 1, "int16": 2, "int32": 4, "int64": 8, "uint8": 1, "uint16": 2, "uint32": 4,
                 "uint64": 8, "float16": 2, "bfloat16": 2, "float32": 4, "float64": 8, "bool": 1}

# Status codes of the C API (docs/aot.md).
STATUS = {"NTSYM_SUCCESS": 0, "NTSYM_ERROR_ARGUMENT": 1, "NTSYM_ERROR_SHAPE": 2, "NTSYM_ERROR_NO_VARIANT": 3,
          "NTSYM_ERROR_CUDA": 4, "NTSYM_ERROR_CONFIG": 5}

INT32_MAX = 2**31 - 1


class AotError(CodegenError):
    """A kernel that cannot be built ahead of time as asked."""


def dtype_name(dtype):
    """``torch.float16``, ``ntsym.float16`` or ``"float16"`` as ``"float16"``."""
    text = str(getattr(dtype, "name", None) or dtype).replace("torch.", "")
    triton_names = {v: k for k, v in TRITON_TYPES.items()} | {"int1": "bool"}
    return {"half": "float16", "float": "float32", "double": "float64"}.get(text, triton_names.get(text, text))


# --- SymPy to C ---------------------------------------------------------------


def c_expr(expr):
    """A SymPy integer expression (sizes, strides, block sizes) as C over
    ``int64_t`` locals of the same names."""
    expr = sympy.sympify(expr)
    if expr is sympy.true:
        return "1"
    if expr is sympy.false:
        return "0"
    if isinstance(expr, sympy.Symbol):
        return expr.name
    if isinstance(expr, sympy.Integer):
        return f"INT64_C({int(expr)})"
    if isinstance(expr, sympy.Add):
        return "(" + " + ".join(c_expr(a) for a in expr.args) + ")"
    if isinstance(expr, sympy.Mul):
        return "(" + " * ".join(c_expr(a) for a in expr.args) + ")"
    if isinstance(expr, sympy.Pow) and expr.exp.is_Integer and int(expr.exp) > 0:
        return "(" + " * ".join([c_expr(expr.base)] * int(expr.exp)) + ")"
    functions = {FloorDiv: "ntsym_floordiv", CeilDiv: "ntsym_cdiv", Mod: "ntsym_mod",
                 sympy.Max: "ntsym_max", sympy.Min: "ntsym_min"}
    for cls, name in functions.items():
        if isinstance(expr, cls):
            args = [c_expr(a) for a in expr.args]
            while len(args) > 2:  # Max/Min of several
                args = [f"{name}({args[0]}, {args[1]})"] + args[2:]
            return f"{name}({', '.join(args)})"
    relations = {sympy.Eq: "==", sympy.Ne: "!=", sympy.Ge: ">=", sympy.Gt: ">", sympy.Le: "<=", sympy.Lt: "<"}
    for cls, op in relations.items():
        if isinstance(expr, cls):
            return f"({c_expr(expr.lhs)} {op} {c_expr(expr.rhs)})"
    if isinstance(expr, sympy.And):
        return "(" + " && ".join(c_expr(a) for a in expr.args) + ")"
    if isinstance(expr, sympy.Or):
        return "(" + " || ".join(c_expr(a) for a in expr.args) + ")"
    if isinstance(expr, sympy.Not):
        return f"(!{c_expr(expr.args[0])})"
    raise AotError(f"the launch expression {expr} ({type(expr).__name__}) has no C form")


def c_string(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def next_pow2(n):
    n = int(n)
    return 1 if n <= 1 else 1 << (n - 1).bit_length()
