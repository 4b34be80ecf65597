"""Gathers and scatters through ``x.source[index]`` whose index tile is
padded past the end of ``index``: the padded lanes load the index's ``other``
(0), a valid index, so a scatter stores the padded lanes of its value into
element 0 of the table (an element no lane of the program owns), and a
reduction over a gather takes in copies of element 0.  Wrong results without
an error; strict xfail until the lanes past ``index``'s end are left out."""

import pytest
import torch

import ntsym
import ntsym.language as ntl
from ntsym import Tensor


def _scatter_kernel():
    def arrangement(index, src, table):
        return index.tile((4,)), src.tile((4,)), table.tile((4,))

    def application(index, src, table):
        table.source[index] = src

    return ntsym.make(arrangement, application, (Tensor(1, dtype=ntsym.int64), Tensor(1), Tensor(1)))


@pytest.mark.xfail(strict=True, reason="a scatter stores the lanes past the end of `index` (index 0, value 0) "
                   "into table[0]: 6 indices in tiles of 4 overwrite table[0] with 0")
def test_a_scatter_leaves_elements_no_index_names_as_they_were():
    table = torch.full((6,), -1.0)
    index = torch.tensor([5, 4, 3, 2, 1, 2])  # table[0] is never named
    src = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    _scatter_kernel()(index, src, table)
    expected = torch.full((6,), -1.0)
    expected[index] = src
    torch.testing.assert_close(table, expected)


def _gather_reduce(application, table):
    def arrangement(index, table, out):
        return index.tile((8,)), table.tile((8,)), out.tile((1,))

    kernel = ntsym.make(arrangement, application, (Tensor(1, dtype=ntsym.int64), Tensor(1), Tensor(1)))
    index = torch.tensor([1, 2, 3, 4, 4])  # 5 indices in a tile of 8: 3 lanes past the end
    out = torch.empty(1)
    kernel(index, table, out)
    return index, out


@pytest.mark.xfail(strict=True, reason="a sum over a gather adds table[0] once per lane past the end of `index`")
def test_a_sum_over_a_gather_adds_the_named_elements_only():
    def application(index, table, out):
        out = ntl.sum(table.source[index], 0)  # noqa: F841

    table = torch.arange(5, dtype=torch.float32) + 10
    index, out = _gather_reduce(application, table)
    torch.testing.assert_close(out, table[index].sum().reshape(1))


@pytest.mark.xfail(strict=True, reason="a min over a gather takes table[0] from the lanes past the end of `index`")
def test_a_min_over_a_gather_reads_the_named_elements_only():
    def application(index, table, out):
        out = ntl.min(table.source[index], 0)  # noqa: F841

    table = torch.tensor([-100.0, 10.0, 11.0, 12.0, 13.0])
    index, out = _gather_reduce(application, table)
    torch.testing.assert_close(out, table[index].min().reshape(1))


@pytest.mark.xfail(strict=True, reason="a tensor read through its tiles and written through `.source[index]` "
                   "runs: program 1 reads the tile program 0 has scattered into, so the result depends on the "
                   "order of the programs (the interpreter gives [2, 3, 1, 2])")
def test_a_table_read_by_tiles_and_scattered_into_is_refused_or_reads_the_old_values():
    def arrangement(index, table):
        return index.tile((2,)), table.tile((2,))

    def application(index, table):
        table.source[index] = table + 1.0

    kernel = ntsym.make(arrangement, application, (Tensor(1, dtype=ntsym.int64), Tensor(1)))
    table = torch.arange(4.0)
    index = torch.tensor([2, 3, 0, 1])
    expected = table.clone()
    expected[index] = table + 1.0
    try:
        kernel(index, table)
    except ntsym.NtsymError:
        return
    torch.testing.assert_close(table, expected)


@pytest.mark.xfail(strict=True, reason="a tensor gathered from through `.source[index]` and written through its "
                   "tiles runs: program 1 gathers elements program 0 has written, so the interpreter gives "
                   "[4, 6, 8, 12] where torch gives [4, 6, 0, 2]")
def test_a_table_gathered_from_and_written_by_tiles_is_refused_or_reads_the_old_values():
    def arrangement(index, table):
        return index.tile((2,)), table.tile((2,))

    def application(index, table):
        table = table.source[index] * 2.0  # noqa: F841

    kernel = ntsym.make(arrangement, application, (Tensor(1, dtype=ntsym.int64), Tensor(1)))
    table = torch.arange(4.0)
    index = torch.tensor([2, 3, 0, 1])
    expected = table[index] * 2.0
    try:
        kernel(index, table)
    except ntsym.NtsymError:
        return
    torch.testing.assert_close(table, expected)
