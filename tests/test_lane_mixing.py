"""Operations that mix lanes read the tensor's elements only: ``topk``,
``histogram`` and ``reduce_or`` of a padded tile never take in the lanes it
holds past the tensor's end (its ``other``); a ``tl`` function ntsym does not
read through the mask is refused where its operand holds such lanes."""

import pytest
import torch

import ntsym
import ntsym.language as ntl
from ntsym import Tensor


def test_topk_of_a_padded_row_reads_the_row_only():
    def arrangement(x, out):
        return x.tile((1, 8)), out.tile((1, 2))

    def application(x, out):
        out = ntl.topk(x, 2, dim=1)  # noqa: F841

    x = -(torch.rand(3, 5) + 1)
    out = torch.empty(3, 2)
    kernel = ntsym.make(arrangement, application, (Tensor(2), Tensor(2)))
    kernel(x, out)
    torch.testing.assert_close(out, x.topk(2, 1).values)


def test_histogram_of_a_padded_tile_counts_the_elements_only():
    def arrangement(x, out):
        return x.tile((8,)), out.tile((4,))

    def application(x, out):
        out = ntl.histogram(x, 4)  # noqa: F841

    x = torch.tensor([1, 2, 3, 1, 2], dtype=torch.int32)
    out = torch.empty(4, dtype=torch.int32)
    kernel = ntsym.make(arrangement, application, (Tensor(1), Tensor(1)))
    kernel(x, out)
    torch.testing.assert_close(out, torch.bincount(x, minlength=4).to(torch.int32))


def test_reduce_or_of_a_padded_row_with_other_reads_the_row_only():
    def arrangement(x, out):
        return x.tile((1, 8)), out.tile((1, 1))

    def application(x, out):
        out = ntl.reduce_or(x, 1, keep_dims=True)  # noqa: F841

    x = torch.tensor([[0, 2, 4, 0, 0], [0, 0, 0, 0, 0], [8, 0, 0, 0, 1]], dtype=torch.int32)
    out = torch.empty(3, 1, dtype=torch.int32)
    kernel = ntsym.make(arrangement, application, (Tensor(2, other=1), Tensor(2)))
    kernel(x, out)
    expected = x[:, :1].clone()
    for j in range(1, 5):
        expected |= x[:, j:j + 1]
    torch.testing.assert_close(out, expected)


def test_topk_ascending_of_a_padded_row_reads_the_row_only():
    def arrangement(x, out):
        return x.tile((1, 8)), out.tile((1, 2))

    def application(x, out):
        out = ntl.topk(x, 2, dim=1, descending=False)  # noqa: F841

    x = torch.rand(3, 5) + 1
    out = torch.empty(3, 2)
    ntsym.make(arrangement, application, (Tensor(2), Tensor(2)))(x, out)
    torch.testing.assert_close(out, x.topk(2, 1, largest=False).values)


def _padded_gather(method):
    def arrangement(x, i, out):
        return x.tile((8,)), i.tile((8,)), out.tile((8,))

    def application(x, i, out):
        out = x.gather(i, 0) if method else ntl.gather(x, i, 0)  # noqa: F841

    return ntsym.make(arrangement, application, (Tensor(1), Tensor(1), Tensor(1)))


@pytest.mark.parametrize("method", [False, True])
def test_gather_of_a_padded_tile_picks_the_lanes_its_indices_name(method, monkeypatch):
    """Indices inside the row of 5 (in a block of 8): torch's gather."""
    monkeypatch.delenv("NTSYM_DEBUG", raising=False)
    x = torch.rand(13)
    index = torch.tensor([4, 0, 3, 1, 2, 7, 0, 7, 2, 4, 4, 1, 3], dtype=torch.int32)
    out = torch.empty(13)
    _padded_gather(method)(x, index, out)
    expected = torch.cat([x[:8].gather(0, index[:8].long()), x[8:].gather(0, index[8:].long())])
    torch.testing.assert_close(out, expected)


@pytest.mark.parametrize("method", [False, True])
def test_gather_naming_a_lane_past_the_end_reads_other_and_the_debug_switch_raises(method, monkeypatch):
    """Index 6 of the last tile names a lane past x's end (13 = 8 + 5): it
    reads the tile's other (0); under NTSYM_DEBUG the kernel raises."""
    x = torch.rand(13) + 1
    index = torch.tensor([0] * 8 + [0, 6, 1, 2, 3], dtype=torch.int32)
    out = torch.empty(13)
    monkeypatch.delenv("NTSYM_DEBUG", raising=False)
    _padded_gather(method)(x, index, out)
    assert out[9] == 0 and out[8] == x[8]
    monkeypatch.setenv("NTSYM_DEBUG", "1")
    kernel = _padded_gather(method)
    assert "ntsym_check_index" in kernel.source
    if not torch.cuda.is_available():  # on a GPU a device assert leaves the CUDA context unusable
        with pytest.raises(Exception, match=r"tl.gather: an index in `i` names a lane of `x` outside the tensor"):
            kernel(x, index, out)
    index[9] = 4
    kernel(x, index, out)  # every index inside: no error
    torch.testing.assert_close(out[8:], x[8:].gather(0, index[8:].long()))


def test_a_sum_over_a_gather_of_a_padded_tile_keeps_the_index_lanes_out():
    """The gather's lanes are its index's: lanes past the end of i (5 in a block
    of 8) are kept out of the sum, whatever the index's other names."""
    def arrangement(x, i, out):
        return x.tile((8,)), i.tile((8,)), out.tile((1,))

    def application(x, i, out):
        out = ntl.sum(ntl.gather(x, i, 0), 0)  # noqa: F841

    x = torch.rand(5) + 1
    index = torch.tensor([4, 4, 0, 1, 2], dtype=torch.int32)
    out = torch.empty(1)
    ntsym.make(arrangement, application, (Tensor(1), Tensor(1), Tensor(1)))(x, index, out)
    torch.testing.assert_close(out, x.gather(0, index.long()).sum().reshape(1))


def test_gather_by_a_padded_index_runs():
    def arrangement(i, out):
        return i.tile((8,)), out.tile((8,))

    def application(i, out):
        out = ntl.gather(ntl.arange(0, 8) * 3, i, 0)  # noqa: F841

    index = torch.tensor([3, 0, 7, 1, 2], dtype=torch.int32)
    out = torch.empty(5, dtype=torch.int32)
    ntsym.make(arrangement, application, (Tensor(1), Tensor(1)))(index, out)
    torch.testing.assert_close(out, index * 3)


def test_every_member_of_a_triton_tile_is_classified_by_the_lanes_rule():
    """A member function Triton adds that ntsym does not know of could mix
    lanes unread through the mask: each is in one of the lanes rule's tables."""
    import triton.language as tl

    from ntsym_codegen import lane_tables, mixing

    known = (set(mixing.MIXING) | mixing.LANE_PRESERVING | lane_tables.ELEMENTWISE | lane_tables.FRESH
             | set(lane_tables.FUNCTIONS) | mixing.UNFOLLOWED_METHODS | mixing.NOT_MIXING_MEMBERS)
    members = {name for name in dir(tl.tensor) if not name.startswith("_")}
    assert sorted(members - known) == []


def test_topk_past_a_row_s_elements_is_refused_at_launch():
    """A row of fewer than ``k`` elements would give the fill of its lanes
    outside among its ``k`` largest; torch.topk refuses ``k`` past the row.
    Checked at launch over every program's row: a whole-row tile needs the
    row's length, one tile of several the last tile's share."""
    def whole(x, out):
        return x.tile((1, -1)), out.tile((1, -1))

    def application(x, out):
        out = ntl.topk(x * 2, 4)  # noqa: F841

    kernel = ntsym.make(whole, application, (Tensor(2), Tensor(2)))
    x = torch.randn(3, 6)
    out = torch.empty(3, 4)
    kernel(x, out)
    torch.testing.assert_close(out, (x * 2).topk(4).values)
    out = torch.zeros(3, 4)
    with pytest.raises(ntsym.LaunchError, match=r"(?s)x.shape\[1\] \(=3\) must be >= 4.*topk\(x \* 2, 4\)"):
        kernel(torch.randn(3, 3), out)
    assert torch.equal(out, torch.zeros(3, 4))  # nothing written

    def blocks(x, out):
        return x.tile((1, 4)), out.tile((1, 2))

    def pairs(x, out):
        out = ntl.topk(x, 2)  # noqa: F841

    kernel = ntsym.make(blocks, pairs, (Tensor(2), Tensor(2)))
    x = torch.randn(3, 6)  # the last tile holds 2 of its 4 lanes
    out = torch.empty(3, 4)
    kernel(x, out)
    torch.testing.assert_close(out[:, 2:], x[:, 4:].topk(2).values)
    with pytest.raises(ntsym.LaunchError, match=r"must be >= 2"):
        kernel(torch.randn(3, 5), torch.empty(3, 4))  # its last tile holds 1

    def flattened(x, out):  # the tiles' grid flattened: read through // and %
        return x.tile((1, 4)).flatten(), out.tile((1, 2)).flatten()

    kernel = ntsym.make(flattened, pairs, (Tensor(2), Tensor(2)))
    out = torch.empty(3, 4)
    kernel(x, out)
    torch.testing.assert_close(out[:, 2:], x[:, 4:].topk(2).values)
    with pytest.raises(ntsym.LaunchError, match=r"must be >= 2"):
        kernel(torch.randn(3, 5), torch.empty(3, 4))

    def past_the_tiles(x, out):  # a third tile of a row of 6 holds nothing: its programs read no element
        return x.tile((1, 4))[:, :3].flatten(), out.tile((1, 2))[:, :3].flatten()

    with pytest.raises(ntsym.LaunchError, match=r"x.shape\[1\] - 8 \(=-2"):
        ntsym.make(past_the_tiles, pairs, (Tensor(2), Tensor(2)))(torch.randn(2, 6), torch.empty(2, 6))

    def every_other(x, out):  # tiles 0 and 2 of a row of 13, both whole: the last tile is never read
        return x.tile((1, 4))[:, ::2].flatten(), out.tile((1, 2))[:, ::2].flatten()

    x = torch.randn(2, 13)
    out = torch.zeros(2, 8)
    ntsym.make(every_other, pairs, (Tensor(2), Tensor(2)))(x, out)
    torch.testing.assert_close(out[:, 4:6], x[:, 8:12].topk(2).values)


def test_topk_over_a_jagged_sequence_is_refused_when_made():
    """A sequence's length is known in its program only: no launch check can
    bound it, so ``topk`` along it is refused."""
    def arrangement(x, out, BJ=ntsym.block_size()):
        xa = x.tile((1, BJ, 1))
        xa.dtype = xa.dtype.squeeze((0, 2))
        oa = out.tile((1, 1, 1))
        oa.dtype = oa.dtype.squeeze((0, 2))
        return xa, oa

    def application(x, out):
        out = ntl.topk(x, 1)  # noqa: F841

    with pytest.raises(ntsym.ApplicationError, match="jagged sequence's own length"):
        ntsym.make(arrangement, application, (Tensor(3, jagged_dim=1), Tensor(3)))
