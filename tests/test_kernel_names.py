"""The name a kernel is shown by (ntsym.kernel_names): where the application's
name is the generic ``application``, messages, caches and progress lines name
the kernel after its arrangement and file; ``kernel_name`` still wins, and the
emitted function keeps the application's name."""

import os
import pathlib
import subprocess
import sys
import textwrap

import pytest
import torch

import ntsym
from examples import add, conv2d
from ntsym import Tensor


def test_generic_application_is_shown_by_its_file_and_arrangement():
    assert add.kernel.name == "add"
    assert conv2d.channels_last_kernel.name == "conv2d_channels_last"
    # The emitted function keeps NineToothed's name.
    assert "def application_kernel(" in add.kernel.source


def test_launch_errors_name_the_shown_kernel():
    x = torch.arange(5.0)
    with pytest.raises(ntsym.LaunchError, match=r"kernel `add` takes 3 arguments"):
        add.kernel(x, x)
    out = torch.empty(5)
    add.kernel(x, x, out)
    torch.testing.assert_close(out, x + x)


def test_kernel_name_and_a_specific_application_name_win():
    named = ntsym.make(add.arrangement, add.application, tuple(Tensor(1) for _ in range(3)), kernel_name="twice")
    assert named.name == "twice" and "def twice_kernel(" in named.source

    def doubled(input, other, output):
        output = input + other  # noqa: F841

    own = ntsym.make(add.arrangement, doubled, tuple(Tensor(1) for _ in range(3)))
    assert own.name == "doubled"
    x, out = torch.arange(3.0), torch.empty(3)
    own(x, x, out)
    torch.testing.assert_close(out, 2 * x)


def test_a_script_names_its_kernel_after_its_file(tmp_path):
    script = tmp_path / "scale_rows.py"
    script.write_text(textwrap.dedent("""
        import ntsym
        from ntsym import Tensor

        def arrangement(x, y, BLOCK=ntsym.block_size()):
            return x.tile((BLOCK,)), y.tile((BLOCK,))

        def application(x, y):
            y = x * 2  # noqa: F841

        if __name__ == "__main__":
            kernel = ntsym.make(arrangement, application, (Tensor(1), Tensor(1)))
            print(kernel.name)
    """))
    root = str(pathlib.Path(__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "scale_rows"
