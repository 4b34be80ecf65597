"""64-bit index math where a logical index passes 2**31 - 1 though the memory
a tensor spans is small (codegen/index_width.py)."""

import torch

import ntsym
from ntsym import Tensor


def copy(x, y):
    y = x  # noqa: F841


def test_a_flattened_slice_of_an_expanded_tensor_past_int32():
    # 2**31 + 2**16 logical elements over 2**16 floats of memory (stride 0):
    # the flat index 4096 * pid + t + 2**31 - 8 passes int32.
    kernel = ntsym.make(lambda x, y: (x.flatten()[2**31 - 8:].tile((4096,)), y.tile((4096,))), copy,
                        (Tensor(2), Tensor(1)))
    x = torch.arange(2.0**16).expand(2**15 + 1, 2**16)
    y = torch.empty(2**16 + 8)
    kernel(x, y)
    flat = torch.arange(2**31 - 8, 2**31 + 2**16, dtype=torch.int64)
    assert torch.equal(y, x[flat // 2**16, flat % 2**16])
    assert "x_size_0 = tl.cast(x_size_0, tl.int64)" in kernel.kernel_source  # x_size_0 * x_size_1 is widened too
    assert _int64_launches(kernel) == [True]


def test_small_logical_indices_keep_32_bit_index_math():
    kernel = ntsym.make(lambda x, y: (x.flatten()[8:].tile((64,)), y.tile((64,))), copy, (Tensor(2), Tensor(1)))
    x = torch.arange(2.0**6).expand(3, 2**6)
    y = torch.empty(3 * 2**6 - 8)
    kernel(x, y)
    assert torch.equal(y, x.flatten()[8:])
    assert _int64_launches(kernel) == [False]


def _int64_launches(kernel):
    """The index width each validated call shape launched with."""
    return [entry.kwargs["NTSYM_INT64"] for entry in kernel.calls.calls.values()]


def test_exported_module_takes_the_same_index_width(tmp_path):
    import os
    import subprocess
    import sys

    kernel = ntsym.make(lambda x, y: (x.flatten()[2**31 - 8:].tile((4096,)), y.tile((4096,))), copy,
                        (Tensor(2), Tensor(1)))
    kernel.export(tmp_path / "flat_standalone.py")
    script = (
        "import torch, flat_standalone\n"
        "x = torch.arange(2.0**16).expand(2**15 + 1, 2**16)\n"
        "y = torch.empty(2**16 + 8)\n"
        "flat_standalone.launch(x, y)\n"
        "flat = torch.arange(2**31 - 8, 2**31 + 2**16, dtype=torch.int64)\n"
        "assert torch.equal(y, x[flat // 2**16, flat % 2**16])\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["TRITON_INTERPRET"] = "1"
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
