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

    def sinh(self, x):
        e = tl.exp(x)
        s = (e - 1 / e) / 2
        # Near zero, e - 1/e cancels: the series' first two terms are exact to fp32 there.
        return tl.where(tl.abs(x) < 0.03, x + x * x * x / 6, s)

    def cosh(self, x):
        e = tl.exp(x)
        return (e + 1 / e) / 2

    def tan(self, x):
        return tl.sin(x) / tl.cos(x)

    def atan(self, x):
        # Cephes' atanf: reduce to |x| <= tan(pi/8), then a minimax polynomial.
        a = tl.abs(x)
        big = a > 2.414213562373095
        mid = (a > 0.4142135623730950) & ~big
        base = tl.where(big, 1.5707963267948966, tl.where(mid, 0.7853981633974483, 0.0))
        r = tl.where(big, -1 / tl.where(big, a, 1.0), tl.where(mid, (a - 1) / (a + 1), a))
        z = r * r
        p = (((8.05374449538e-2 * z - 1.38776856032e-1) * z + 1.99777106478e-1) * z - 3.33329491539e-1) * z * r + r
        y = base + p
        return tl.where(x < 0, -y, y)

    def atan2(self, y, x):
        t = self.atan(y / tl.where(x == 0, 1.0, x))
        pi = 3.141592653589793
        t = tl.where(x < 0, tl.where(y < 0, t - pi, t + pi), t)
        t = tl.where(x == 0, tl.where(y > 0, pi / 2, tl.where(y < 0, -pi / 2, 0.0)), t)
        return t

    def asin(self, x):
        return self.atan2(x, tl.sqrt((1 - x) * (1 + x)))

    def acos(self, x):
        return self.atan2(tl.sqrt((1 - x) * (1 + x)), x)

    def asinh(self, x):
        a = tl.abs(x)
        y = tl.log(a + tl.sqrt(a * a + 1))
        y = tl.where(a < 0.03, a - a * a * a / 6, y)
        return tl.where(x < 0, -y, y)

    def acosh(self, x):
        return tl.log(x + tl.sqrt(x * x - 1))

    def atanh(self, x):
        y = 0.5 * tl.log((1 + x) / (1 - x))
        return tl.where(tl.abs(x) < 0.03, x + x * x * x / 3, y)

    def expm1(self, x):
        return tl.where(tl.abs(x) < 0.03, x + x * x / 2 + x * x * x / 6, tl.exp(x) - 1)

    def log1p(self, x):
        return tl.where(tl.abs(x) < 0.03, x - x * x / 2 + x * x * x / 3, tl.log(1 + x))

    def log10(self, x):
        return tl.log2(x) * 0.30102999566398120

    def exp10(self, x):
        return tl.exp2(x * 3.3219280948873623)

    def cbrt(self, x):
        y = tl.exp2(tl.log2(tl.abs(x)) / 3)
        return tl.where(x < 0, -y, tl.where(x == 0, x, y))

    def hypot(self, a, b):
        return tl.sqrt(a * a + b * b)

    def trunc(self, x):
        return tl.where(x < 0, tl.ceil(x), tl.floor(x))

    def round(self, x):
        # Halfway cases away from zero.
        return tl.where(x < 0, tl.ceil(x - 0.5), tl.floor(x + 0.5))

    def rint(self, x):
        # Halfway cases to even.
        r = tl.floor(x + 0.5)
        odd = (r - 2 * tl.floor(r * 0.5)) != 0
        return tl.where(((r - x) == 0.5) & odd, r - 1, r)

    nearbyint = rint

    def fmod(self, a, b):
        return a - self.trunc(a / b) * b

    def copysign(self, a, b):
        return tl.where(b < 0, -tl.abs(a), tl.abs(a))

    def erfc(self, x):
        return 1 - tl.erf(x)

    def isnan(self, x):
        return x != x

    def isinf(self, x):
        return tl.abs(x) == float("inf")

    def signbit(self, x):
        return x < 0

    def __getattr__(self, name):
        raise AttributeError(f"libdevice.{name} has no interpreter fallback in ntsym")


def _load():
    if interpreting():
        return _InterpreterLibdevice()
    from triton.language.extra import libdevice

    return libdevice


libdevice = _load()
