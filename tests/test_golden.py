"""Golden files for every example kernel: the generated module in two files,
the kernels (with the module's header and the helpers they call; the
advancing-pointer form behind the NTSYM_ADVANCE flag; the persistent variant
where there is one) in ``<name>.kernel.py.expected`` and the torch launcher
in ``<name>.launcher.py.expected``, so that a change of the launcher leaves
the kernels' goldens alone; and ``explain()``.

Examples that make several kernels are covered with the kernels their tests
launch: sdpa's two (any head size, power-of-two head sizes) and
rope_interleaved's, made on demand for each head size and layout.  The
persistent variants appear only where this Triton has tensor descriptors.

Refresh, after reviewing the diff, with NTSYM_UPDATE_GOLDEN=1; see
tests/conftest.py."""

import pathlib

import pytest

import ntsym  # noqa: F401  (without a GPU, selects the interpreter before triton loads)
from examples import (add, addmm, bmm, conv2d, fp8_mm, jagged, mm, rms_norm, rope, rope_interleaved, sdpa, silu, softmax,
                      varlen_sdpa)
from tests.conftest import assert_golden, assert_module_golden


# golden name -> (example module, its kernel; made on first use)
KERNELS = {
    "add": (add, lambda: add.kernel),
    "addmm": (addmm, lambda: addmm.kernel),
    "bmm": (bmm, lambda: bmm.kernel),
    "conv2d": (conv2d, lambda: conv2d.kernel),
    "conv2d_channels_last": (conv2d, lambda: conv2d.channels_last_kernel),
    "conv2d_split": (conv2d, lambda: conv2d.split_kernel),
    "conv2d_channels_last_split": (conv2d, lambda: conv2d.channels_last_split_kernel),
    "conv2d_sum": (conv2d, lambda: conv2d.sum_kernel),
    "conv2d_layout": (conv2d, lambda: conv2d.layout_kernel),
    "fp8_mm": (fp8_mm, lambda: fp8_mm.kernel),
    "jagged_add": (jagged, lambda: jagged.add_kernel),
    "jagged_softmax": (jagged, lambda: jagged.softmax_kernel),
    "mm": (mm, lambda: mm.kernel),
    "rms_norm": (rms_norm, lambda: rms_norm.kernel),
    "rope": (rope, lambda: rope.kernel),
    # tests/test_examples.py: head sizes 16 and 12 (D/2 = 6, padded), both layouts.
    "rope_interleaved_16_interleaved": (rope_interleaved, lambda: rope_interleaved.premake(16, True)),
    "rope_interleaved_16_halves": (rope_interleaved, lambda: rope_interleaved.premake(16, False)),
    "rope_interleaved_12_interleaved": (rope_interleaved, lambda: rope_interleaved.premake(12, True)),
    "rope_interleaved_12_halves": (rope_interleaved, lambda: rope_interleaved.premake(12, False)),
    "sdpa": (sdpa, lambda: sdpa.kernel),
    "sdpa_pow2_head": (sdpa, lambda: sdpa.kernel_pow2_head),
    "sdpa_pairs": (sdpa, lambda: sdpa.kernel_pairs),
    "silu": (silu, lambda: silu.kernel),
    "softmax": (softmax, lambda: softmax.kernel),
    "varlen_sdpa": (varlen_sdpa, lambda: varlen_sdpa.kernel),
}


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_example_source(name):
    assert_module_golden(f"examples/{name}", KERNELS[name][1]())


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_example_explain(name):
    text = KERNELS[name][1]().explain()
    # What make() knows; the configurations chosen by calls (other tests'
    # calls of the same kernel) follow it under "chosen".
    static = text.split("\nchosen    ")[0].rstrip("\n") + "\n"
    assert_golden(f"examples/{name}.explain.expected", static)


def test_every_example_has_goldens():
    examples = {p.stem for p in (pathlib.Path(__file__).parent.parent / "examples").glob("*.py")}
    examples -= {"__init__", "_common", "tensor_parallel"}  # tensor_parallel runs the Llama example's kernels
    assert examples == {module.__name__.rsplit(".", 1)[1] for module, _ in KERNELS.values()}
    files = {p.name for p in (pathlib.Path(__file__).parent / "golden" / "examples").iterdir()}
    assert files == {f"{name}.{kind}.expected" for name in KERNELS for kind in ("kernel.py", "launcher.py", "explain")}
