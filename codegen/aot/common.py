"""What every part of the ahead-of-time path shares: the element types and
status codes of the C API, its error, and integer expressions as C (the C
member of the printer family)."""

import sympy

from ntsym_codegen.errors import CodegenError
from ntsym_codegen.printer import SymPyPrinter

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


class CPrinter(SymPyPrinter):
    """The C member of the printer family (codegen/printer.py): SymPy integer
    expressions (sizes, strides, block sizes) and launch checks as C over
    ``int64_t`` locals of the same names; integer division and ``Max``/``Min``
    through the exact helpers of the generated C source."""

    error = AotError
    FUNCTIONS = {"FloorDiv": "ntsym_floordiv", "CeilDiv": "ntsym_cdiv", "Mod": "ntsym_mod", "Max": "ntsym_max",
                 "Min": "ntsym_min"}
    RELATIONS = {"Equality": "==", "Unequality": "!=", "GreaterThan": ">=", "StrictGreaterThan": ">",
                 "LessThan": "<=", "StrictLessThan": "<"}

    def refuse(self, expr):
        raise self.error(f"the launch expression {expr} ({type(expr).__name__}) has no C form")

    def _print_BooleanTrue(self, expr):
        return "1"

    def _print_BooleanFalse(self, expr):
        return "0"

    def _print_Symbol(self, expr):
        return expr.name

    def _print_Integer(self, expr):
        return f"INT64_C({int(expr)})"

    def _joined(self, expr, op):
        return "(" + f" {op} ".join(self.doprint(a) for a in expr.args) + ")"

    def _print_Add(self, expr):
        return self._joined(expr, "+")

    def _print_Mul(self, expr):
        return self._joined(expr, "*")

    def _print_Pow(self, expr):
        if not (expr.exp.is_Integer and int(expr.exp) > 0):
            return self.refuse(expr)
        return "(" + " * ".join([self.doprint(expr.base)] * int(expr.exp)) + ")"

    def _function(self, expr):
        name = next(self.FUNCTIONS[k.__name__] for k in type(expr).__mro__ if k.__name__ in self.FUNCTIONS)
        args = [self.doprint(a) for a in expr.args]
        while len(args) > 2:  # Max/Min of several
            args = [f"{name}({args[0]}, {args[1]})"] + args[2:]
        return f"{name}({', '.join(args)})"

    _print_FloorDiv = _print_CeilDiv = _print_Mod = _print_Max = _print_Min = _function

    def _relation(self, expr):
        op = next(self.RELATIONS[k.__name__] for k in type(expr).__mro__ if k.__name__ in self.RELATIONS)
        return f"({self.doprint(expr.lhs)} {op} {self.doprint(expr.rhs)})"

    _print_Equality = _print_Unequality = _print_GreaterThan = _relation
    _print_StrictGreaterThan = _print_LessThan = _print_StrictLessThan = _relation

    def _print_And(self, expr):
        return self._joined(expr, "&&")

    def _print_Or(self, expr):
        return self._joined(expr, "||")

    def _print_Not(self, expr):
        return f"(!{self.doprint(expr.args[0])})"


def c_expr(expr):
    """A SymPy integer expression (sizes, strides, block sizes) as C (``CPrinter``)."""
    return CPrinter().doprint(expr)


def c_string(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def next_pow2(n):
    n = int(n)
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def float64_scalar_checks(params):
    """C: a scalar compiled as float32 (a float scalar not declared float64) in a
    library with float64 tensors refuses a value float32 does not hold exactly,
    as the torch launcher does (``runtime.check_float64_scalars``): the
    kernel's float64 arithmetic would use the rounded value."""
    if not any(p.kind == "tensor" and p.dtype == "float64" for p in params):
        return []
    checks = []
    for p in params:
        if p.kind != "scalar" or p.dtype != "float32":
            continue
        n, big = p.name, "3.4028234663852886e+38"
        message = c_string(f"`{n}` is %.17g, which float32 does not hold exactly, and the call has float64 "
                           f"tensors: `{n}` is compiled as float32 (declare it Tensor(0, dtype=ntsym.float64) for "
                           f"float64 arithmetic with the value given, or give a value float32 holds exactly)")
        checks.append(f"if ({n} == {n} && {n} - {n} == 0 && ({n} > {big} || {n} < -{big} || (double)(float){n} != {n})) "
                      f"return ntsym_fail(NTSYM_ERROR_ARGUMENT, {message}, (double){n});")
    return checks
