"""64-bit index math where a logical index passes 2**31 - 1 though the memory
a tensor spans is small (codegen/index_width.py)."""

import torch

import ntsym
import ntsym.language as ntl
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


def test_index_terms_without_the_program_index_are_widened_too():
    """One tile: the flat index is ``x_t0 + 2147483644`` (or ``268435456 *
    x_t0`` for a constant step), no program index or stride in it.  The
    64-bit math widens the tile's range as well; it wrapped at 2**31 (its
    mask computed from the same wrapped value) and read before the tensor."""
    base = torch.tensor([10.0, 20.0, 30.0]).view(3, 1).expand(3, 2**30)  # 12 bytes, 3 * 2**30 elements
    sliced = ntsym.make(lambda x, y: (x.flatten()[2**31 - 4:2**31 + 4].tile((8,)), y.tile((8,))), copy,
                        (Tensor(2), Tensor(1)))
    y = torch.zeros(8)
    sliced(base, y)
    assert y.tolist() == [20.0] * 4 + [30.0] * 4
    stepped = ntsym.make(lambda x, y: (x.flatten()[::2**28].tile((16,)), y.tile((16,))), copy, (Tensor(2), Tensor(1)))
    y = torch.zeros(12)
    stepped(base, y)
    assert y.tolist() == [10.0] * 4 + [20.0] * 4 + [30.0] * 4

    def offsets(x, y):
        y = x.offsets(0)  # noqa: F841

    positions = ntsym.make(lambda x, y: (x[2**31 - 4:2**31 + 4].tile((8,)), y.tile((8,))), offsets,
                           (Tensor(1), Tensor(1)))
    y = torch.zeros(8, dtype=torch.int64)
    positions(torch.tensor([5.0]).expand(2**31 + 8), y)
    assert y.tolist() == list(range(2**31 - 4, 2**31 + 4))


def test_loops_count_in_64_bits_under_64_bit_index_math():
    """A loop's index times a constant (``268435456 * i`` for a constant
    step) has no program index or stride in it: under 64-bit index math the
    loop counts in 64 bits (its stop plus an int64 zero).  On an H100 it
    wrapped at 2**31 (a maximum of offsets came out 7 * 2**28, not 9 * 2**28;
    a column sum read another row); the interpreter computes with Python
    ints, so this checks the form and the result."""

    def arrangement(x, y):
        return x[::2**28].tile((1,)).tile((-1,)), y.tile((1,))

    def furthest(x, y):
        acc = ntl.zeros((1,), dtype=ntl.int64)
        for i in range(10):
            acc = ntl.maximum(acc, x[i].offsets(0))
        y = ntl.sum(acc, 0)  # noqa: F841

    kernel = ntsym.make(arrangement, furthest, (Tensor(1), Tensor(1)))
    assert "for i in range(10 + ntsym_zero):" in kernel.kernel_source
    assert "ntsym_zero = tl.cast(0, tl.int64)" in kernel.kernel_source
    y = torch.zeros(1, dtype=torch.int64)
    kernel(torch.ones(1).expand(2**31 + 2**29 + 5), y)
    assert y.item() == 9 * 2**28
    assert _int64_launches(kernel) == [True]
