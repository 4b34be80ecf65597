"""Every ``libdevice`` function ntsym runs under Triton's interpreter, compared
with torch (or Python's C-library ``math`` where torch has no such function)
over special values: signed zeros, negatives with integral and fractional
exponents, infinities, NaN, subnormals, arguments near overflow, halfway
cases. The GPU's libdevice follows the same C99 rules."""

import decimal
import importlib.util
import math

import pytest
import torch

import ntsym
from ntsym import Tensor

INF, NAN = math.inf, math.nan
SPECIAL = [
    0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5, 3.5, 0.49999997, -0.49999997, 3.0, -3.0, 1e-3, -1e-3,
    0.02, -0.02, 1e-40, -1e-40, 1.4e-45, 88.5, -88.5, 89.5, -89.5, 1e10, -1e10, 3e38, -3e38,
    8388609.0, -8388609.0, 0.99, -0.99, 1.5, 10.0, 30.0, INF, -INF, NAN,
]
PAIRS = [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 3.0, -3.0, 2.5, -2.5, 1e-40, 1e30, -1e30, INF, -INF, NAN]


def _round_half_away(v):
    if math.isnan(v) or math.isinf(v):
        return v
    with decimal.localcontext() as context:
        context.prec = 400
        r = float(decimal.Decimal(v).quantize(decimal.Decimal(1), rounding=decimal.ROUND_HALF_UP))
    return math.copysign(r, v)


def _elementwise(function):
    return lambda x: torch.tensor([function(v) for v in x.tolist()], dtype=torch.float64)


def _elementwise2(function):
    return lambda x, y: torch.tensor([function(a, b) for a, b in zip(x.tolist(), y.tolist())], dtype=torch.float64)


def _safe(function):
    def call(*args):
        try:
            return function(*args)
        except (ValueError, OverflowError):
            return NAN
    return call


UNARY = {
    "rsqrt": torch.rsqrt, "sqrt": torch.sqrt, "exp": torch.exp, "exp2": torch.exp2, "log": torch.log,
    "log2": torch.log2, "sin": torch.sin, "cos": torch.cos, "abs": torch.abs, "fabs": torch.abs,
    "floor": torch.floor, "ceil": torch.ceil, "tanh": torch.tanh, "erf": torch.erf, "sinh": torch.sinh,
    "cosh": torch.cosh, "tan": torch.tan, "atan": torch.atan, "asin": torch.asin, "acos": torch.acos,
    "asinh": torch.asinh, "acosh": torch.acosh, "atanh": torch.atanh, "expm1": torch.expm1,
    "log1p": torch.log1p, "log10": torch.log10, "exp10": lambda x: torch.pow(10.0, x),
    "cbrt": _elementwise(_safe(math.cbrt)), "trunc": torch.trunc, "round": _elementwise(_round_half_away),
    "rint": torch.round, "nearbyint": torch.round, "erfc": torch.erfc,
}
PREDICATES = {"isnan": torch.isnan, "isinf": torch.isinf, "signbit": torch.signbit}
BINARY = {
    "fmax": torch.fmax, "fmin": torch.fmin, "pow": torch.pow, "div_rn": torch.div, "atan2": torch.atan2,
    "hypot": torch.hypot, "fmod": torch.fmod, "copysign": torch.copysign,
}


@pytest.fixture(scope="module")
def applications(tmp_path_factory):
    """One application per function, in a module of its own (ntsym reads
    applications from their source files)."""
    source = "from ntsym.language import libdevice\n"
    for name in list(UNARY) + list(PREDICATES):
        source += f"\n\ndef {name}_application(x, out):\n    out = libdevice.{name}(x)  # noqa: F841\n"
    for name in BINARY:
        source += f"\n\ndef {name}_application(x, y, out):\n    out = libdevice.{name}(x, y)  # noqa: F841\n"
    source += "\n\ndef fma_application(x, y, out):\n    out = libdevice.fma(x, y, x)  # noqa: F841\n"
    source += "\n\ndef square_application(x, out):\n    out = libdevice.pow(x, 2.0)  # noqa: F841\n"
    path = tmp_path_factory.mktemp("libdevice") / "libdevice_special_values.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("libdevice_special_values", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(application, *inputs, dtype=None):
    kernel = ntsym.make(lambda *ts: tuple(t.tile((64,)) for t in ts), application,
                        tuple(Tensor(1) for _ in range(len(inputs) + 1)))
    out = torch.empty(inputs[0].shape, dtype=dtype or inputs[0].dtype)
    kernel(*inputs, out)
    return out


def _assert_matches(out, expected, zero_signs=True):
    """Within a few ulp (subnormals absolutely), the same infinities and NaNs,
    and the sign of every zero."""
    torch.testing.assert_close(out, expected, rtol=2e-6, atol=3e-45, equal_nan=True)
    if not zero_signs:
        return
    zeros = expected == 0
    assert torch.equal(torch.signbit(out[zeros]), torch.signbit(expected[zeros])), (out, expected)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_function_over_special_values(name, applications):
    x = torch.tensor(SPECIAL)
    out = _run(getattr(applications, f"{name}_application"), x)
    _assert_matches(out, UNARY[name](x.double()).float())


@pytest.mark.parametrize("name", sorted(PREDICATES))
def test_predicate_over_special_values(name, applications):
    x = torch.tensor(SPECIAL)
    out = _run(getattr(applications, f"{name}_application"), x, dtype=torch.int32)
    assert torch.equal(out != 0, PREDICATES[name](x))


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_function_over_special_values(name, applications):
    values = torch.tensor(PAIRS)
    x = values.repeat_interleave(len(PAIRS))
    y = values.repeat(len(PAIRS))
    out = _run(getattr(applications, f"{name}_application"), x, y)
    # C leaves open which zero fmax(+0, -0) and fmin(+0, -0) return.
    _assert_matches(out, BINARY[name](x.double(), y.double()).float(), zero_signs=name not in ("fmax", "fmin"))


def test_fma_rounds_once(applications):
    x = torch.tensor([1 + 2.0 ** -12, 3.0, -0.0, INF, NAN])
    y = torch.tensor([1 - 2.0 ** -12, 0.0, 0.0, 0.0, 1.0])
    out = _run(applications.fma_application, x, y)
    expected = (x.double() * y.double() + x.double()).float()
    _assert_matches(out, expected)


def test_square_of_negative_numbers_is_not_nan(applications):
    # An Lp pool of order 2 squares its window with ``libdevice.pow(x, 2.0)``.
    x = torch.linspace(-3, 3, 50)
    torch.testing.assert_close(_run(applications.square_application, x), x * x, rtol=1e-6, atol=0)


def test_half_precision_arguments_are_computed_in_fp32(applications):
    x = torch.tensor([-2.0, -0.5, 0.0, 1.5, 3.0], dtype=torch.float16)
    out = _run(applications.square_application, x)
    assert out.dtype == torch.float16
    assert torch.equal(out, x * x)


def test_double_arguments_keep_their_precision(applications):
    x = torch.tensor([-1.5, 0.25, 1e-300, 700.0, -0.0], dtype=torch.float64)
    torch.testing.assert_close(_run(applications.sinh_application, x), torch.sinh(x), rtol=1e-15, atol=0)
