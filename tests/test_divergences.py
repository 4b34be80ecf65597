"""Constructs that Triton's interpreter and compiled Triton treat differently
are lowered to forms that mean the same on both."""

import pytest
import torch

import ntsym
import ntsym.language as ntl
from ntsym import Tensor

B = 64


def make(app, n=3):
    return ntsym.make(lambda *ts: tuple(t.tile((B,)) for t in ts), app, tuple(Tensor(1) for _ in range(n)))


def run(kernel, *inputs):
    out = torch.empty_like(inputs[0])
    kernel(*inputs, out)
    return out


x = torch.linspace(-2, 2, 100)
y = torch.linspace(1, -1, 100)


def test_builtin_max_min_are_elementwise():
    def app(a, b, out):
        out = max(a, b) - min(a, b)  # noqa: F841

    k = make(app)
    assert "tl.maximum" in k.kernel_source and "tl.minimum" in k.kernel_source
    torch.testing.assert_close(run(k, x, y), (x - y).abs())


def test_python_and_or_are_elementwise():
    def app(a, b, out):
        out = ntl.where((a > 0) and (b > 0) or (a < -1), 1.0, 0.0)  # noqa: F841

    k = make(app)
    assert " and " not in k.kernel_source and " or " not in k.kernel_source
    expected = (((x > 0) & (y > 0)) | (x < -1)).float()
    torch.testing.assert_close(run(k, x, y), expected)


def test_libdevice_functions_run_everywhere():
    def app(a, out):
        out = ntl.libdevice.tanh(a) + ntl.libdevice.rsqrt(a * a + 1.0)  # noqa: F841

    k = make(app, 2)
    torch.testing.assert_close(run(k, x), torch.tanh(x) + torch.rsqrt(x * x + 1), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_math_with_python_scalars(dtype):
    def app(a, out):
        out = ntl.sqrt(a * 2.0 + 5.0) + ntl.exp(a)  # noqa: F841

    k = make(app, 2)
    h = x.to(dtype)
    expected = torch.sqrt(h.float() * 2 + 5) + torch.exp(h.float())
    torch.testing.assert_close(run(k, h).float(), expected, atol=3e-2, rtol=2e-2)
