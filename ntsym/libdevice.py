"""``libdevice`` for applications: Triton's own on a GPU; under Triton's
interpreter, which does not implement it, fallbacks that compute what the
GPU's libdevice computes, so kernels mean the same on CPU and GPU.

The interpreter keeps every value as a NumPy array, so a fallback either calls
the ``triton.language`` function that means the same (``tl.exp``) or applies
NumPy's C-library function to the arrays (``np.power``, ``np.arctan2``): the
C library and libdevice follow the same C99 rules for special values
(``pow(-2, 2) == 4``, ``pow(x, 0) == 1`` even for NaN, ``hypot(inf, nan) ==
inf``) and round within an ulp or two, where a formula written with ``tl``
would not (``exp2(y * log2(x))`` is NaN for every negative ``x``)."""

import math

import numpy as np
import triton.language as tl

from ntsym_codegen import triton_compat
from ntsym_codegen.runtime import interpreting


def _value(arg):
    """An argument's array (or Python number) and its Triton dtype (None for a
    Python number)."""
    if isinstance(arg, tl.constexpr):
        arg = arg.value
    if isinstance(arg, tl.tensor):
        return arg.handle.data, arg.dtype
    return arg, None


def _result_dtype(dtypes):
    """libdevice's result type: the floating dtype of its first floating
    tensor argument (``pow(fp32, int32)`` is fp32), fp32 for Python numbers."""
    for dtype in dtypes:
        if dtype is not None and dtype.is_floating():
            return dtype
    return tl.float32


def _tensor(data, dtype):
    """A tensor of the interpreter holding ``data`` as ``dtype``."""
    return triton_compat.interpreter_tensor(data, dtype)


def _numpy(function, *args, result=None):
    """``function`` applied to the arrays of ``args``, each first converted to
    the result's floating dtype (fp16 and bf16, which libdevice has no
    functions for, are computed in fp32 and rounded back); the result is of
    that dtype, or ``result`` where given (the predicates)."""
    pairs = [_value(arg) for arg in args]
    dtype = _result_dtype([d for _, d in pairs])
    compute = np.float64 if dtype == tl.float64 else np.float32
    arrays = []
    for (data, arg_dtype), arg in zip(pairs, args):
        if arg_dtype is not None and arg_dtype.is_floating() and arg_dtype not in (tl.float32, tl.float64):
            data = arg.to(tl.float32).handle.data
        arrays.append(np.asarray(data).astype(compute))
    with np.errstate(all="ignore"):
        out = function(*arrays)
    if result is not None:
        return _tensor(out, result)
    if dtype in (tl.float32, tl.float64):
        return _tensor(out, dtype)
    return _tensor(out, tl.float32).to(dtype)


def _exp10(x):
    return np.power(np.asarray(10.0, x.dtype), x)


def _round(x):
    """Halfway cases away from zero (C's ``round``); ``x - trunc(x)`` is exact."""
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.copysign(np.asarray(1.0, x.dtype), x), t)


_erfc = np.vectorize(math.erfc, otypes=[np.float64])


def _erfc_of(x):
    return _erfc(x.astype(np.float64)).astype(x.dtype)


def _signbit(x):
    return np.signbit(x).astype(np.int32)


# libdevice functions that NumPy's C-library functions compute.
_NUMPY = {
    "tanh": np.tanh, "pow": np.power, "sinh": np.sinh, "cosh": np.cosh, "tan": np.tan,
    "atan": np.arctan, "atan2": np.arctan2, "asin": np.arcsin, "acos": np.arccos,
    "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh, "expm1": np.expm1,
    "log1p": np.log1p, "log10": np.log10, "exp10": _exp10, "cbrt": np.cbrt,
    "hypot": np.hypot, "trunc": np.trunc, "round": _round, "rint": np.rint,
    "nearbyint": np.rint, "fmod": np.fmod, "copysign": np.copysign, "erfc": _erfc_of,
}

# Predicates, with the dtype the GPU's libdevice returns.
_PREDICATES = {"isnan": (np.isnan, tl.int1), "isinf": (np.isinf, tl.int1), "signbit": (_signbit, tl.int32)}


class _InterpreterLibdevice:
    """The libdevice functions the interpreter lacks, in portable form: the
    ``tl`` function where one means the same, else NumPy's (see the module)."""

    def rsqrt(self, x):
        return tl.rsqrt(x)

    def sqrt(self, x):
        return tl.sqrt(x)

    def exp(self, x):
        return tl.exp(x)

    def exp2(self, x):
        return tl.exp2(x)

    def log(self, x):
        return tl.log(x)

    def log2(self, x):
        return tl.log2(x)

    def sin(self, x):
        return tl.sin(x)

    def cos(self, x):
        return tl.cos(x)

    def abs(self, x):
        return tl.abs(x)

    fabs = abs

    def floor(self, x):
        return tl.floor(x)

    def ceil(self, x):
        return tl.ceil(x)

    def fma(self, a, b, c):
        return tl.fma(a, b, c)

    def fmax(self, a, b):
        return _numpy(np.fmax, a, b)

    def fmin(self, a, b):
        return _numpy(np.fmin, a, b)

    def erf(self, x):
        return tl.erf(x)

    def div_rn(self, a, b):
        return a / b

    def __getattr__(self, name):
        if name in _NUMPY:
            function = _NUMPY[name]
            return lambda *args: _numpy(function, *args)
        if name in _PREDICATES:
            function, dtype = _PREDICATES[name]
            return lambda x: _numpy(function, x, result=dtype)
        raise AttributeError(f"libdevice.{name} has no interpreter fallback in ntsym")


def _load():
    if interpreting():
        return _InterpreterLibdevice()
    return triton_compat.gpu_libdevice()


libdevice = _load()
