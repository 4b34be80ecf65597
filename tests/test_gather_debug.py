"""Gathers through ``x.source[...]`` with indices from data: an index
outside ``[0, size)`` reads ``other`` (0) and a store through it is dropped;
under ``NTSYM_DEBUG=1`` the kernel checks each such index and raises
(``codegen/debug_checks.py``)."""

import pytest
import torch

import ntsym
import ntsym.language as ntl
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
    with pytest.raises(Exception, match=r"table.source\[...\]: the index `index` along dimension 0 is outside"):
        kernel(torch.tensor([0, 5, 6, 1, 2, 3]), table, out)
