"""Gathers through ``x.source[...]`` with indices from data: an index
outside ``[0, size)`` reads ``other`` (0) and a store through it is dropped;
under ``NTSYM_DEBUG=1`` the kernel checks each such index and raises
(``codegen/debug_checks.py``)."""

import pytest
import torch
import triton

import ntsym
import ntsym.language as ntl
from examples import mm
from ntsym import Tensor


def _gather_kernel():
    def arrangement(index, table, out):
        return index.tile((4,)), table.tile((4,)), out.tile((4,))

    def application(index, table, out):
        out = table.source[index] + ntl.zeros(out.shape, ntl.float32)  # noqa: F841

    return ntsym.make(arrangement, application,
                      (Tensor(1, dtype=ntsym.int64), Tensor(1, shape_options={"constexpr": False}), Tensor(1)))


def test_an_index_out_of_range_reads_other_without_the_switch(monkeypatch):
    monkeypatch.delenv("NTSYM_DEBUG", raising=False)
    kernel = _gather_kernel()
    assert "ntsym_check_index" not in kernel.source and "debug=True" not in kernel.source
    table = torch.arange(6, dtype=torch.float32) + 10
    index = torch.tensor([0, 5, 6, -1, 2, 3])
    out = torch.empty(6)
    kernel(index, table, out)
    assert out.tolist() == [10.0, 15.0, 0.0, 0.0, 12.0, 13.0]


def test_an_index_out_of_range_raises_under_the_switch(monkeypatch):
    monkeypatch.setenv("NTSYM_DEBUG", "1")
    kernel = _gather_kernel()
    assert "ntsym_check_index(" in kernel.source and "@triton.jit(debug=True)" in kernel.source
    table = torch.arange(6, dtype=torch.float32) + 10
    out = torch.empty(6)
    kernel(torch.tensor([0, 5, 1, 4, 2, 3]), table, out)  # in range: runs, and lanes past the end are not checked
    assert out.tolist() == [10.0, 15.0, 11.0, 14.0, 12.0, 13.0]
    if torch.cuda.is_available():  # a device assert leaves the process's CUDA context unusable
        _raises_in_a_subprocess()
        return
    with pytest.raises(Exception, match=r"table.source\[...\]: the index `index` along dimension 0 is outside"):
        kernel(torch.tensor([0, 5, 6, 1, 2, 3]), table, out)


def _raises_in_a_subprocess():
    """On a GPU: the out-of-range call in a process of its own fails, and
    the device assert names the tensor, the index and the dimension."""
    import os
    import pathlib
    import subprocess
    import sys

    here = pathlib.Path(__file__).resolve()
    code = (f"import sys; sys.path[:0] = [{str(here.parent)!r}, {str(here.parents[1])!r}]\n"
            "import torch, test_gather_debug as t\n"
            "kernel = t._gather_kernel()\n"
            "table = torch.arange(6, dtype=torch.float32, device='cuda') + 10\n"
            "kernel(torch.tensor([0, 5, 6, 1, 2, 3], device='cuda'), table, torch.empty(6, device='cuda'))\n"
            "torch.cuda.synchronize()\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=dict(os.environ, NTSYM_DEBUG="1"), timeout=300)
    assert done.returncode != 0, done.stdout + done.stderr
    assert "is outside" in done.stdout + done.stderr, done.stdout[-2000:] + done.stderr[-2000:]


@triton.jit
def _larger(a, b):
    return ntl.maximum(a, b)


def _scaled_mm_arrangement(input, other, index, scale, output, BLOCK_SIZE_M=ntsym.block_size(),
                           BLOCK_SIZE_N=ntsym.block_size(), BLOCK_SIZE_K=ntsym.block_size()):
    input, other, output = mm.arrangement(input, other, output, BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K)
    return input, other, index.tile((BLOCK_SIZE_M, BLOCK_SIZE_N)), scale, output


def _scaled_mm(input, other, index, scale, output):
    accumulator = ntl.zeros(output.shape, dtype=ntl.float32)
    for k in range(input.shape[0]):
        accumulator += ntl.dot(input[k], other[k])
    largest = ntl.reduce(ntl.zeros(output.shape, ntl.float32), 1, _larger, keep_dims=True)  # an ntsym_fn_ helper
    output = accumulator * scale.source[index] + largest  # noqa: F841


def test_the_persistent_variant_checks_indices_as_the_plain_kernel_does(monkeypatch):
    monkeypatch.setenv("NTSYM_DEBUG", "1")
    kernel = ntsym.make(_scaled_mm_arrangement, _scaled_mm,
                        (Tensor(2), Tensor(2), Tensor(2, dtype=ntsym.int64), Tensor(1, shape_options={"constexpr": False}),
                         Tensor(2)))
    source = kernel.source
    if "_persistent(" not in source:
        pytest.skip("this Triton has no tensor descriptors: no persistent variant")
    variant = source[source.index("def _scaled_mm_kernel_persistent"):source.index("def make_launch")]
    assert "@triton.jit(debug=True)\ndef _scaled_mm_kernel_persistent" in source  # device asserts fire on a GPU
    assert "ntsym_check_index(" in variant and "ntsym_fn__larger" in variant and "def ntsym_fn__larger(" in source
    # The variant runs only under 32-bit index math, which an index read from data does not bound: the
    # plain kernel runs here, checked, and computes torch's result.
    a, b, scale = torch.randn(9, 12), torch.randn(12, 10), torch.randn(5)
    index = torch.randint(0, 5, (9, 10))
    out = torch.empty(9, 10)
    kernel(a, b, index, scale, out)
    tolerance = 2e-2 if out.is_cuda else 1e-4  # a GPU's float32 dot rounds its inputs to tf32
    torch.testing.assert_close(out, (a @ b) * scale[index], atol=tolerance, rtol=tolerance)
    if torch.cuda.is_available():
        return  # a device assert leaves the process's CUDA context unusable (the plain kernel's test runs it apart)
    index[3, 4] = 5
    with pytest.raises(Exception, match=r"scale.source\[...\]: the index `index` along dimension 0 is outside"):
        kernel(a, b, index, scale, out)
