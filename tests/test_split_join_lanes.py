"""Lanes outside the tensor followed through ``split``, ``join`` and
``interleave``: a mixing operation after them reads through the operands'
masks moved the same way, so padded lanes stay out of it (they read
``other=5`` here, which would show in every result), and a ``where`` the
application writes itself after them is honoured rather than refused."""

import pytest
import torch

import ntsym
import ntsym.language as ntl
from ntsym import Tensor
from tests.sources import application_from

WEIGHTS = torch.tensor([2.0, 1.0] * 4)  # even columns doubled


def _tiles(x, y):
    return x.tile((4, 8)), y.tile((4,))


def _rows(application, other=5.0):
    """Rows of 7 in blocks of 8, 6 rows in blocks of 4: lanes past both."""
    kernel = ntsym.make(_tiles, application, (Tensor(2, other=other), Tensor(1)))
    x = torch.randn(6, 7)
    y = torch.empty(6)
    kernel(x, y)
    return x, y


def _pairs_summed_where(x, y):
    even, odd = ntl.split(ntl.reshape(x, (4, 4, 2)))
    v = ntl.reshape(ntl.join(even * 2, odd), (4, 8))
    v = ntl.where(x.offsets(1)[None, :] < x.source.shape[1], v, 0.0)
    y = ntl.sum(v, 1)  # noqa: F841


def _pairs_summed(x, y):
    even, odd = ntl.split(ntl.reshape(x, (4, 4, 2)))
    y = ntl.sum(ntl.reshape(ntl.join(even * 2, odd), (4, 8)), 1)  # noqa: F841


@pytest.mark.parametrize("application", [_pairs_summed_where, _pairs_summed])
def test_a_reduction_after_split_and_join_sums_the_elements_only(application):
    x, y = _rows(application)
    torch.testing.assert_close(y, (x * WEIGHTS[:7]).sum(1))


@pytest.mark.parametrize("pair", ["even, odd = ntl.split(ntl.reshape(x, (4, 4, 2)))",
                                  "even, odd = ntl.reshape(x, (4, 4, 2)).split()",
                                  "pair = ntl.split(ntl.reshape(x, (4, 4, 2)))\n    even, odd = pair[0], pair[1]"])
def test_the_parts_of_a_split_are_each_reduced_over_their_elements(pair):
    # Column 6 (even) is the row's last element; column 7 (odd) lies past it.
    source = ("def application(x, y):\n"
              f"    {pair}\n"
              "    y = ntl.sum(even, 1) - ntl.max(odd, 1)  # noqa: F841\n")
    x, y = _rows(application_from(source))
    torch.testing.assert_close(y, x[:, 0::2].sum(1) - x[:, 1::2].amax(1))


def test_a_split_indexed_in_place_is_followed():
    def application(x, y):
        y = ntl.max(ntl.split(ntl.reshape(x, (4, 4, 2)))[1], 1)  # noqa: F841

    x, y = _rows(application)
    torch.testing.assert_close(y, x[:, 1::2].amax(1))


def test_interleave_and_join_with_a_value_without_lanes_outside():
    def application(x, y):
        zeros = ntl.zeros(x.shape, ntl.float32)
        wide = ntl.interleave(x, zeros)  # (4, 16)
        paired = ntl.reshape(ntl.join(zeros - 1.0, x), (4, 16))
        y = ntl.sum(wide, 1) + ntl.max(paired, 1)  # noqa: F841

    x, y = _rows(application, other=50.0)
    torch.testing.assert_close(y, x.sum(1) + x.amax(1).clamp(min=-1.0))


def test_a_loop_over_chunks_reads_each_chunk_through_its_own_moved_mask():
    # Rows of 7 in chunks of 4: the last chunk holds 3 elements and a lane past the row.
    def arrangement(x, y):
        return x.tile((1, 4)).tile((1, -1)), y.tile((1,))

    def application(x, y):
        acc = ntl.zeros((1,), ntl.float32)
        for k in range(x.shape[1]):
            even, odd = ntl.split(ntl.reshape(x[0, k], (1, 2, 2)))
            acc += ntl.sum(ntl.reshape(ntl.join(even * 2, odd), (1, 4)), 1)
        y = acc  # noqa: F841

    kernel = ntsym.make(arrangement, application, (Tensor(2, other=5.0), Tensor(1)))
    x = torch.randn(3, 7)
    y = torch.empty(3)
    kernel(x, y)
    torch.testing.assert_close(y, (x * WEIGHTS[:7]).sum(1))


def test_a_split_of_a_tile_without_lanes_outside_is_written_as_given():
    def arrangement(x, y):
        return x.tile((1, -1)), y.tile((1,))

    def application(x, y):
        even, odd = ntl.split(ntl.reshape(x, (1, 4, 2)))
        y = ntl.sum(even - odd, 1)  # noqa: F841

    width = (None, {"constexpr": True, "power_of_two": True})
    kernel = ntsym.make(arrangement, application, (Tensor(2, shape_options=width), Tensor(1)))
    assert "tl.split(ntsym_reshape(x_tile" in kernel.source and "tl.where" not in kernel.source.split("def make_launch")[0]
    x = torch.randn(3, 8)
    y = torch.empty(3)
    kernel(x, y)
    torch.testing.assert_close(y, (x[:, 0::2] - x[:, 1::2]).sum(1))


def test_a_transpose_written_as_an_attribute_is_followed():
    def application(x, y):
        y = ntl.sum(x.T, 0)  # noqa: F841

    x, y = _rows(application)
    torch.testing.assert_close(y, x.sum(1))


def test_a_concatenation_of_a_padded_tile_is_refused_before_a_reduction():
    """Triton's ``cat`` may reorder the elements: which lanes lie inside is
    not known after it, so a reduction of it is refused (reducing first is
    the remedy)."""
    def application(x, y):
        y = ntl.sum(ntl.reshape(ntl.cat(x, x, can_reorder=True), (4, 16)), 1)  # noqa: F841

    with pytest.raises(ntsym.ApplicationError, match=r"(?s)`sum` mixes the lanes of .*such as `cat`.*reduce before"):
        ntsym.make(_tiles, application, (Tensor(2, other=5.0), Tensor(1)))
