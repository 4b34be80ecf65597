"""Exported standalone modules refuse what the torch launcher refuses: their
argument checks are the runtime's own, embedded (codegen/aot/embedded.py)."""

import ast
import os
import subprocess
import sys

import pytest
import torch

import ntsym
from examples import add

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
