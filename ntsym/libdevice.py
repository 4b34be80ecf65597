"""``libdevice`` for applications: Triton's own on a GPU; under Triton's
interpreter, which does not implement it, the same functions written with
``triton.language`` so kernels mean the same on CPU and GPU."""

import triton.language as tl

from codegen.runtime import interpreting


class _InterpreterLibdevice:
    """The libdevice functions the interpreter lacks, in portable form."""

    @staticmethod
    def _f32(x):
        return x.to(tl.float32) if hasattr(x, "to") else x

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
        return a * b + c

    def fmax(self, a, b):
        return tl.maximum(a, b)

    def fmin(self, a, b):
        return tl.minimum(a, b)

    def tanh(self, x):
        # Built from interpreter builtins only: ``tl.sigmoid`` is a JIT function,
        # which the interpreter cannot call from here when triton was imported
        # before interpreting was chosen.
        e = tl.exp(-2 * tl.abs(x))
        t = (1 - e) / (1 + e)
        t = tl.where(x < 0, -t, t)
        # Near zero, 1 - e cancels: the series' first two terms are exact to fp32 there.
        return tl.where(tl.abs(x) < 0.03, x - x * x * x / 3, t)

    def erf(self, x):
        return tl.erf(x)

    def pow(self, x, y):
        return tl.exp2(y * tl.log2(x))

    def div_rn(self, a, b):
        return a / b

    def __getattr__(self, name):
        raise AttributeError(f"libdevice.{name} has no interpreter fallback in ntsym")


def _load():
    if interpreting():
        return _InterpreterLibdevice()
    from triton.language.extra import libdevice

    return libdevice


libdevice = _load()
