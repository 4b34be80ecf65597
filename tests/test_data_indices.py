"""Gathers and scatters through ``x.source[index]``.

Lanes past the end of an index tile hold the index's ``other`` (0), a valid
index: a gather leaves them out of reductions and a scatter does not store
them.  A tensor reached through data indices and also written by another
access is refused at make where more than one program runs, and checked at
launch where the program count is not known (programs run in no fixed
order); one program runs its statements in order."""

import pytest
import torch

import ntsym
import ntsym.language as ntl
from ntsym import Tensor
from tests.sources import application_from


def _scatter_kernel():
    def arrangement(index, src, table):
        return index.tile((4,)), src.tile((4,)), table.tile((4,))

    def application(index, src, table):
        table.source[index] = src

    return ntsym.make(arrangement, application, (Tensor(1, dtype=ntsym.int64), Tensor(1), Tensor(1)))


def test_a_scatter_leaves_elements_no_index_names_as_they_were():
    table = torch.full((6,), -1.0)
    index = torch.tensor([5, 4, 3, 2, 1, 2])  # table[0] is never named
    src = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    _scatter_kernel()(index, src, table)
    # table[2] is named twice: which of its two values lands is unspecified, as
    # in torch's index_put_ (a GPU stores either; the interpreter the last).
    assert table[2].item() in (4.0, 6.0)
    expected = torch.tensor([-1.0, 5.0, table[2].item(), 3.0, 2.0, 1.0])
    torch.testing.assert_close(table, expected)


def _gather_reduce(application, table):
    def arrangement(index, table, out):
        return index.tile((8,)), table.tile((8,)), out.tile((1,))

    kernel = ntsym.make(arrangement, application, (Tensor(1, dtype=ntsym.int64), Tensor(1), Tensor(1)))
    index = torch.tensor([1, 2, 3, 4, 4])  # 5 indices in a tile of 8: 3 lanes past the end
    out = torch.empty(1)
    kernel(index, table, out)
    return index, out


def test_a_sum_over_a_gather_adds_the_named_elements_only():
    def application(index, table, out):
        out = ntl.sum(table.source[index], 0)  # noqa: F841

    table = torch.arange(5, dtype=torch.float32) + 10
    index, out = _gather_reduce(application, table)
    torch.testing.assert_close(out, table[index].sum().reshape(1))


def test_a_min_over_a_gather_reads_the_named_elements_only():
    def application(index, table, out):
        out = ntl.min(table.source[index], 0)  # noqa: F841

    table = torch.tensor([-100.0, 10.0, 11.0, 12.0, 13.0])
    index, out = _gather_reduce(application, table)
    torch.testing.assert_close(out, table[index].min().reshape(1))


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


def _read_and_scattered(block, shape=None):
    def arrangement(index, table):
        return index.tile((block,)), table.tile((block,))

    def application(index, table):
        table.source[index] = table + 1.0

    return ntsym.make(arrangement, application, (Tensor(1, dtype=ntsym.int64, shape=shape), Tensor(1, shape=shape)))


def test_a_table_read_by_tiles_and_scattered_into_by_several_programs_is_refused_at_make():
    with pytest.raises(ntsym.ApplicationError, match=r"`table` is scattered into .* and read through its tiles.*"
                       r"no fixed order"):
        _read_and_scattered(2, shape=(4,))


def test_a_launch_of_several_programs_reading_and_scattering_into_one_table_is_refused():
    kernel = _read_and_scattered(2)
    table = torch.arange(4.0)
    with pytest.raises(ntsym.LaunchError, match=r"must be <= 1\n`table` is scattered into"):
        kernel(torch.tensor([2, 3, 0, 1]), table)
    torch.testing.assert_close(table, torch.arange(4.0))


def test_one_program_reading_and_scattering_into_one_table_runs_in_order():
    kernel = _read_and_scattered(4)
    table = torch.arange(4.0)
    index = torch.tensor([2, 3, 0, 1])
    expected = table.clone()
    expected[index] = table + 1.0
    kernel(index, table)
    torch.testing.assert_close(table, expected)


def test_a_gather_from_a_table_read_by_tiles_and_never_written_runs():
    def arrangement(index, table, out):
        return index.tile((2,)), table.tile((2,)), out.tile((2,))

    def application(index, table, out):
        out = table.source[index] + table  # noqa: F841

    kernel = ntsym.make(arrangement, application, (Tensor(1, dtype=ntsym.int64), Tensor(1), Tensor(1)))
    table = torch.arange(5.0)
    index = torch.tensor([4, 3, 0, 1, 2])
    out = torch.empty(5)
    kernel(index, table, out)
    torch.testing.assert_close(out, table[index] + table)


def test_a_gather_of_a_written_tensor_at_its_own_tile_offsets_is_a_read_of_the_tile():
    """``y.source[y.offsets(0)]`` names the elements of the program's own
    tile of ``y``, as reading ``y`` does: no data index, no race with the
    tile's write, any number of programs."""
    def arrangement(x, y):
        return x.tile((4,)), y.tile((4,))

    def application(x, y):
        y = x + y.source[y.offsets(0)]  # noqa: F841

    x = torch.arange(10.0)
    y = torch.ones(10)
    ntsym.make(arrangement, application, (Tensor(1), Tensor(1)))(x, y)
    torch.testing.assert_close(y, torch.arange(10.0) + 1)


def test_a_gather_of_a_written_tensor_at_its_own_tile_offsets_counted_from_the_last_is_a_read_of_the_tile():
    """``y.offsets(-1)`` names the same dimension as ``y.offsets(0)`` of a
    1-D ``y``: the program's own tile, over any number of programs."""
    def arrangement(x, y):
        return x.tile((4,)), y.tile((4,))

    def application(x, y):
        y = x + y.source[y.offsets(-1)]  # noqa: F841

    x = torch.arange(10.0)
    y = torch.ones(10)
    ntsym.make(arrangement, application, (Tensor(1), Tensor(1)))(x, y)
    torch.testing.assert_close(y, torch.arange(10.0) + 1)


@pytest.mark.parametrize("index", ["x.offsets(0)", "y.offsets(0) + 1", "9 - y.offsets(0)"])
def test_a_gather_of_a_written_tensor_at_other_indices_is_still_refused(index):
    """Offsets of another tensor's tile, or shifted ones: elements another
    program may write."""
    application = application_from(f"def application(x, y):\n    y = x + y.source[{index}]  # noqa: F841\n")

    def arrangement(x, y):
        return x.tile((4,)), y.tile((4,))

    k = ntsym.make(arrangement, application, (Tensor(1), Tensor(1)))
    with pytest.raises(ntsym.LaunchError, match="gathered from through `y.source"):
        k(torch.arange(10.0), torch.ones(10))


def test_an_index_tensor_shared_by_every_program_is_read_not_written():
    """``x.source[b, position, d] = v`` with ``position`` one value broadcast to
    every program: an index is read (it was taken for a written tensor whose
    tiles overlap across programs, and refused).  The scalar indices (each
    program's row) meet the block's as a mask Triton 3.9's interpreter takes."""
    def arrangement(v, position, table):
        v_arranged = v.tile((1, -1))
        v_arranged.dtype = v_arranged.dtype.squeeze(0)
        position_arranged = position.tile((1,)).expand((v_arranged.shape[0],))
        table_arranged = table.tile((1, -1, -1)).squeeze((1, 2))
        return v_arranged, position_arranged, table_arranged

    def application(v, position, table):
        table.source[v.offsets(0), position, v.offsets(1)] = v

    kernel = ntsym.make(arrangement, application, (Tensor(2), Tensor(1, dtype=ntsym.int64), Tensor(3)))
    v = torch.arange(12.0).reshape(3, 4)
    table = torch.zeros(3, 5, 4)
    kernel(v, torch.tensor([2]), table)
    expected = torch.zeros(3, 5, 4)
    expected[:, 2] = v
    torch.testing.assert_close(table, expected)


@pytest.mark.parametrize("source, written", [
    ("y[k] = v", ["y"]), ("y.source[b, p, d] = v", ["y"]), ("a, y[i] = v", ["a", "y"]),
    ("y[(k := k + 1)] = v", ["y", "k"]), ("x += y[i]", ["x"]), ("for k in range(3): pass", ["k"])])
def test_an_assignment_writes_its_target_s_base_and_reads_its_indices(source, written):
    import ast

    from ntsym_codegen.analysis import assigned_in

    names = {"y", "k", "b", "p", "d", "v", "a", "i", "x"}
    assert assigned_in(ast.parse(source).body[0], names, loops=True) == written


def _scatter_into_whole(application):
    """Each program scatters into ``table``, which every program has whole
    (expanded over the programs): no program stores a tile of it."""
    def arrangement(index, src, table):
        index_arranged = index.tile((2,))
        return index_arranged, src.tile((2,)), table.tile((-1,)).expand((index_arranged.shape[0],))

    return ntsym.make(arrangement, application, (Tensor(1, dtype=ntsym.int64), Tensor(1), Tensor(1)))


def test_a_table_only_scattered_into_may_be_expanded_over_the_programs():
    """Its tiles overlap, but none is stored: the writes are the scatter's, by
    its indices (and ``table.source.shape`` reads no element)."""
    def application(index, src, table):
        table.source[index] = src * table.source.shape[0]

    table = torch.full((6,), -1.0)
    index = torch.tensor([5, 3, 1, 0])
    src = torch.tensor([1.0, 2.0, 3.0, 4.0])
    _scatter_into_whole(application)(index, src, table)
    torch.testing.assert_close(table, torch.tensor([24.0, 18.0, -1.0, 12.0, -1.0, 6.0]))


def test_a_table_scattered_into_and_stored_through_its_expanded_tiles_is_refused():
    def application(index, src, table):
        table.source[index] = src
        table = src[0] + ntl.zeros(table.shape, dtype=ntl.float32)  # noqa: F841

    with pytest.raises(ntsym.NtsymError, match="`table` is (written by the kernel and its tiles overlap|scattered into)"):
        _scatter_into_whole(application)(torch.tensor([5, 3, 1, 0]), torch.arange(4.0), torch.zeros(6))
