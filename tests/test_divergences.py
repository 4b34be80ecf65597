"""Constructs that Triton's interpreter and compiled Triton treat differently
are lowered to forms that mean the same on both."""

import os

import pytest
import torch

import ntsym
import ntsym.language as ntl
from ntsym import Symbol, Tensor

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


@pytest.mark.skipif(torch.cuda.is_available(), reason="the interpreter's fallbacks: a machine without a GPU")
def test_libdevice_fallbacks_work_when_triton_was_imported_first(tmp_path):
    # A program that imports triton (here triton.testing, for do_bench) before
    # ntsym has chosen the interpreter: the fallbacks must not call JIT functions.
    import subprocess
    import sys

    program = (
        "import triton.testing\n"
        "import torch, ntsym, ntsym.language as ntl\n"
        "from ntsym import Tensor\n"
        "def arrangement(a, o):\n"
        "    return a.tile((8,)), o.tile((8,))\n"
        "def app(a, out):\n"
        "    out = ntl.libdevice.tanh(a)\n"
        "k = ntsym.make(arrangement, app, (Tensor(1), Tensor(1)))\n"
        "x = torch.cat([torch.linspace(-30, 30, 36), torch.tensor([1e-6, -2e-4, 0.02, 0.0])])\n"
        "y = torch.empty_like(x)\n"
        "k(x, y)\n"
        "torch.testing.assert_close(y, torch.tanh(x), atol=1e-9, rtol=1e-5)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    script = tmp_path / "program.py"
    script.write_text(program)
    result = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]


# -- a loop's variable after the loop -------------------------------------------------


def rows(x, y):
    return x.tile((1, 4)).tile((1, -1)).squeeze(1), y.tile((1, 4)).tile((1, -1)).squeeze(1)


def read_after_the_loop(x, y):
    for k in range(x.shape[1]):
        y[0, k] = x[0, k]
    y[0, k] = x[0, 0]


def read_after_an_inner_loop_reusing_the_name(x, y):
    for k in range(x.shape[1]):
        t = x[0, k]
        for k in range(1):
            t = t + 0
        y[0, k] = t


def read_in_the_next_iteration(x, y):
    k = 0
    for j in range(x.shape[1]):
        y[0, k] = x[0, j]
        for k in range(2):
            pass


def reassigned_before_read(x, y):
    for k in range(x.shape[1]):
        y[0, k] = x[0, k]
    k = 0
    y[0, k] = x[0, 1]
    for k in range(x.shape[1]):  # a new loop binds it again
        y[0, k] = y[0, k] + 1


@pytest.mark.parametrize("application", [
    read_after_the_loop, read_after_an_inner_loop_reusing_the_name, read_in_the_next_iteration,
])
def test_a_loop_variable_read_after_its_loop_is_refused(application):
    # Compiled Triton leaves it undefined there (an H100 read out of bounds);
    # the interpreter, as Python, keeps the last value.
    with pytest.raises(ntsym.ApplicationError, match="`k` is read after the loop it indexes"):
        ntsym.make(rows, application, (Tensor(2), Tensor(2)))


def test_a_loop_variable_assigned_again_may_be_read():
    kernel = ntsym.make(rows, reassigned_before_read, (Tensor(2), Tensor(2)))
    x = torch.arange(24.0).reshape(2, 12)
    y = torch.zeros(2, 12)
    kernel(x, y)
    want = x + 1
    want[:, :4] = x[:, 4:8] + 1
    torch.testing.assert_close(y, want)


def _carried_before_the_inner_loop(x, y):
    acc = ntl.zeros(x.dtype.shape, dtype=ntl.float32)
    n = 1
    for j in range(3):
        n = n + 1
        for k in range(n - 1):
            acc += x[0, k]
    y = ntl.sum(acc, 1)  # noqa: F841


def _computed_from_the_index(x, y):
    acc = ntl.zeros(x.dtype.shape, dtype=ntl.float32)
    for j in range(3):
        m = j + 1
        for k in range(m):
            acc += x[0, k]
    y = ntl.sum(acc, 1)  # noqa: F841


def test_inner_loop_bound_carried_by_the_enclosing_loop_is_refused():
    """Seen on an H100 with Triton 3.6: an inner ``range`` whose bound the
    enclosing loop carries runs with the bound from before that loop.  A bound
    computed from the enclosing loop's index compiles correctly, and runs."""
    B = Symbol("B", constexpr=True)

    def arrangement(x, y, B=B):
        return x.tile((1, B)).tile((1, -1)).squeeze(1), y.tile((1,))

    with pytest.raises(ntsym.ApplicationError, match=r"`n` bounds a loop(.|\n)*range\(n - 1\)"):
        ntsym.make(arrangement, _carried_before_the_inner_loop, (Tensor(2), Tensor(1)))
    kernel = ntsym.make(arrangement, _computed_from_the_index, (Tensor(2), Tensor(1)))
    x = torch.randn(2, 64)
    y = torch.empty(2)
    kernel(x, y, B=16)
    blocks = x.view(2, 4, 16).sum(2)
    torch.testing.assert_close(y, 3 * blocks[:, 0] + 2 * blocks[:, 1] + blocks[:, 2])
