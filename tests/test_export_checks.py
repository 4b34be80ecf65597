"""Exported standalone modules refuse what the torch launcher refuses, and
nothing more: their argument checks are the runtime's own, embedded
(codegen/aot/embedded.py), and their launch checks are tested as the torch
launcher tests them (``Check.tested``), as the C launcher's are."""

import ast
import importlib.util
import os
import subprocess
import sys

import pytest
import torch

import ntsym
from examples import add
import ntsym.language as ntl
from ntsym import Tensor
from ntsym_codegen import aot

CASES = (
    # (the call, as source over torch; what the refusal names)
    ("x = torch.tensor([True, False, True]); add_standalone.launch(x, x, torch.empty(3, dtype=torch.bool))",
     "bool tensor and the application computes arithmetic"),
    ("x = torch.randn(11); add_standalone.launch(x[:-1], torch.randn(10), x[1:])", "share memory"),
    ("add_standalone.launch(torch.randn(10), torch.randn(10), torch.empty(1).expand(10))", "stride 0"),
    ("z = torch.complex(torch.randn(10), torch.randn(10)); "
     "add_standalone.launch(z.conj().imag, torch.randn(10), torch.empty(10))", "negative bit"),
)


def _torch_refusal(call):
    add_standalone = type("launcher", (), {"launch": staticmethod(add.kernel)})  # noqa: F841
    with pytest.raises(ntsym.LaunchError) as caught:
        exec(call)
    return str(caught.value)


@pytest.mark.slow
def test_exported_module_refuses_what_the_launcher_refuses(tmp_path):
    add.kernel.export(tmp_path / "add_standalone.py")
    expected = [_torch_refusal(call) for call, _ in CASES]
    lines = ["import sys", "import torch", "import add_standalone",
             "assert 'ntsym' not in sys.modules and 'ntsym_codegen' not in sys.modules",
             "x, y, o = torch.randn(10), torch.randn(10), torch.empty(10)",
             "add_standalone.launch(x, y, o)",
             "torch.testing.assert_close(o, x + y)",
             # views of one buffer that share no element run (interleaved halves)
             "b = torch.randn(20); e = b[1::2] * 2; add_standalone.launch(b[1::2], b[1::2], b[0::2])",
             "torch.testing.assert_close(b[0::2], e)"]
    for call, _ in CASES:
        lines += ["try:", f"    {call}", "    print('ran')", "except ValueError as e:", "    print('refused:', repr(str(e)))"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["TRITON_INTERPRET"] = "1"
    done = subprocess.run([sys.executable, "-c", "\n".join(lines)], cwd=tmp_path, env=env, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    refusals = [ast.literal_eval(line[len("refused: "):]) for line in done.stdout.splitlines()]
    assert refusals == expected, done.stdout
    for message, (_, words) in zip(refusals, CASES):
        assert words in message


def _broadcast_bias(x, bias, y, BLOCK=ntsym.block_size()):
    return x.tile((1, BLOCK)), bias.expand((x.shape[0], -1)).tile((1, BLOCK)), y.tile((1, BLOCK))


def _add_bias(x, bias, y):
    y = x + bias  # noqa: F841 - stored


def test_every_launcher_runs_an_empty_batch_that_a_broadcast_assumed_of_size_1(tmp_path):
    """``bias.expand`` assumes ``bias.shape[0] == 1``; a call with no program
    to run (an empty batch: ``bias`` of shape (0, N)) reads and writes
    nothing, so the torch launcher returns without a refusal; the standalone
    module and the C launcher test the check as it does (``Check.tested``),
    and all three refuse the call with programs to run."""
    tensors = tuple(Tensor(2, dtype=ntsym.float32) for _ in range(3))
    compiled = ntsym.compile(_broadcast_bias, _add_bias, tensors)
    kernel = ntsym.make(_broadcast_bias, _add_bias, tensors)
    path = ntsym.aot.export(compiled, tmp_path / "add_bias.py")
    spec = importlib.util.spec_from_file_location("add_bias", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    empty = torch.randn(0, 5), torch.randn(0, 5), torch.empty(0, 5)
    kernel(*empty, BLOCK=32)
    module.launch(*empty)
    x, y = torch.randn(3, 5), torch.empty(3, 5)
    with pytest.raises(ntsym.LaunchError, match=r"bias\.shape\[0\]"):
        kernel(x, torch.randn(2, 5), y, BLOCK=32)
    with pytest.raises(ValueError, match=r"bias\.shape\[0\] \(=2\) must equal 1"):
        module.launch(x, torch.randn(2, 5), y)
    bias = torch.randn(1, 5)
    module.launch(x, bias, y)
    torch.testing.assert_close(y, x + bias)
    plan = aot.plan(compiled.ir, compiled.generated, compiled.spec, compiled.display, {"BLOCK": 32})
    check = next(line for line in plan.prologue if "bias_size_0 == " in line)
    assert check.startswith("if ((!(bias_size_0 == INT64_C(1))) && ((bias_size_1 * x_size_0)) != 0) ")


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


W = ntsym.Symbol("W", constexpr=True)


def _windows(x, y, W=W):
    return x.tile((W,), strides=(1,)), y.tile((1,))


def _window_sum(x, y):
    y = ntl.sum(x)  # noqa: F841 - stored


def _refusal(call):
    with pytest.raises(ValueError) as caught:
        call()
    return str(caught.value)


def test_a_compile_time_value_the_call_must_give_is_refused_without_it(tmp_path):
    """A tile size the call gives (``Symbol(constexpr=True)``) is not a
    tuned setting: the torch launcher refuses a call without it, and so does
    the exported module (not taking the value its CONFIGS hold); a value
    given is checked as the launcher checks it and used."""
    kernel = ntsym.make(_windows, _window_sum, (Tensor(1), Tensor(1)))
    module = _load(kernel.export(tmp_path / "window_sum_a.py"), "window_sum_a")
    x = torch.arange(1.0, 11.0)
    expected = _refusal(lambda: kernel(x, torch.zeros(7)))
    assert "needs the compile-time value `W`" in expected
    assert _refusal(lambda: module.launch(x, torch.zeros(7))) == expected
    assert _refusal(lambda: module.launch(x, torch.zeros(11), W=0)) == _refusal(lambda: kernel(x, torch.zeros(11), W=0))
    for w in (2, 8):
        y = torch.zeros(11 - w)
        module.launch(x, y, W=w)
        torch.testing.assert_close(y, x.unfold(0, w, 1).sum(1))


def test_a_call_time_tile_size_that_is_not_a_power_of_two_runs_padded(tmp_path):
    """The torch launcher runs a call-time tile size that is not a power of
    two through the variant that pads it; the module exported from the
    kernel holds that variant too and computes the same, and one exported
    from a ``Compiled`` (which has no variant) refuses such a value."""
    kernel = ntsym.make(_windows, _window_sum, (Tensor(1), Tensor(1)))
    module = _load(kernel.export(tmp_path / "window_sum_b.py"), "window_sum_b")
    x = torch.arange(1.0, 11.0)
    for w in (3, 5, 4):
        y, z = torch.zeros(11 - w), torch.zeros(11 - w)
        kernel(x, y, W=w)
        module.launch(x, z, W=w)
        torch.testing.assert_close(z, x.unfold(0, w, 1).sum(1))
        torch.testing.assert_close(z, y)
    assert _refusal(lambda: module.launch(x, torch.zeros(9), W=3)) == _refusal(lambda: kernel(x, torch.zeros(9), W=3))
    compiled = ntsym.compile(_windows, _window_sum, (Tensor(1), Tensor(1)))
    bare = _load(ntsym.aot.export(compiled, tmp_path / "window_sum_c.py"), "window_sum_c")
    message = _refusal(lambda: bare.launch(x, torch.zeros(8), W=3))
    assert "`W`=3 is not a power of two" in message and "pads the tile" in message


def test_written_tensors_are_treated_as_the_launcher_treats_them(tmp_path):
    """A written tensor that requires grad is refused in the launcher's
    words, and every written tensor's version counter is bumped, so a
    backward that saved it raises instead of reading the new values."""
    module = _load(add.kernel.export(tmp_path / "add_written.py"), "add_written")
    a = torch.randn(10)
    for out in (torch.zeros(10, requires_grad=True), torch.zeros(12, requires_grad=True)[2:]):
        expected = _refusal(lambda: add.kernel(a, a, out))
        assert _refusal(lambda: module.launch(a, a, out)) == expected
    with torch.no_grad():
        out = torch.zeros(10, requires_grad=True)
        module.launch(a, a, out)
    torch.testing.assert_close(out.detach(), a + a)
    w, o = torch.ones(10, requires_grad=True), torch.zeros(10)
    loss = (w * o).sum()  # saves o
    version = o._version
    module.launch(a, a, o)
    assert o._version == version + 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()
