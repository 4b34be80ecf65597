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


def test_an_index_over_lanes_a_join_moved_before_the_elements_is_refused():
    """``join(odd, even)`` puts a lane past the row (holding -inf, argmax's
    identity) before the row's elements: where they are all -inf it would
    tie with them and win (the first index)."""
    def application(x, y):
        even, odd = ntl.split(ntl.reshape(x, (4, 4, 2)))
        y = ntl.argmax(ntl.reshape(ntl.join(odd, even), (4, 8)), 1)  # noqa: F841

    with pytest.raises(ntsym.ApplicationError, match=r"`argmax` over lanes .* moved.*take the index before"):
        ntsym.make(_tiles, application, (Tensor(2), Tensor(1)))


def test_a_name_split_then_assigned_again_keeps_the_mask_of_what_was_split():
    # The mask reads the split operand's shape: a copy is taken, `v` changes shape after.
    def application(x, y):
        v = ntl.reshape(x, (4, 4, 2))
        even, odd = ntl.split(v)
        v = ntl.reshape(ntl.join(even * 2, odd), (4, 8))
        y = ntl.sum(v, 1)  # noqa: F841

    x, y = _rows(application)
    torch.testing.assert_close(y, (x * WEIGHTS[:7]).sum(1))


def _by_sign(x, s, y):
    a, b = ntl.split(ntl.reshape(x, (4, 4, 2)))
    if s > 0:
        v = ntl.join(a, b)  # lane 7 of a row outside
    else:
        v = ntl.join(b, a)  # lane 6 outside, lane 7 the row's column 6
    y = ntl.sum(ntl.reshape(v, (4, 8)), 1)  # noqa: F841


def _by_sign_reduced_on_each_path(x, s, y):
    a, b = ntl.split(ntl.reshape(x, (4, 4, 2)))
    if s > 0:
        y = ntl.sum(ntl.reshape(ntl.join(a, b), (4, 8)), 1)  # noqa: F841
    else:
        y = ntl.sum(ntl.reshape(ntl.join(b, a), (4, 8)), 1)  # noqa: F841


def _by_sign_transposed(x, s, y):
    if s > 0:
        v = x
    else:
        v = x.T
    y = ntl.sum(v, 1)  # noqa: F841


def _signed(block):
    def arrangement(x, s, y):
        return x.tile((block, 8)), s, y.tile((block,))

    return arrangement


@pytest.mark.parametrize("application, block", [(_by_sign, 4), (_by_sign_transposed, 8)])
def test_a_value_whose_lanes_outside_differ_between_the_paths_of_an_if_is_not_reduced_through_either(application,
                                                                                                       block):
    """Masking by both paths' masks dropped an element on either path (a
    wrong sum); which to use depends on the path taken."""
    with pytest.raises(ntsym.ApplicationError, match=r"`sum` mixes the lanes of .*differ between the paths before it \(the branches of an `if`"):
        ntsym.make(_signed(block), application, (Tensor(2, other=5.0), Tensor(0), Tensor(1)))


@pytest.mark.parametrize("other", [5.0, 0.0])
def test_each_path_of_an_if_reduces_its_own_moved_lanes(other):
    kernel = ntsym.make(_signed(4), _by_sign_reduced_on_each_path, (Tensor(2, other=other), Tensor(0), Tensor(1)))
    x = torch.randn(6, 7)
    for s in (1, -1):
        y = torch.empty(6)
        kernel(x, s, y)
        torch.testing.assert_close(y, x.sum(1))


def test_paths_of_an_if_whose_lanes_outside_hold_the_identity_need_no_mask():
    # other=0 on both paths, the sum's identity: nothing to leave out on either.
    kernel = ntsym.make(_signed(8), _by_sign_transposed, (Tensor(2), Tensor(0), Tensor(1)))
    x = torch.randn(7, 7)
    for s, expected in ((1, x.sum(1)), (-1, x.sum(0))):
        y = torch.empty(7)
        kernel(x, s, y)
        torch.testing.assert_close(y, expected)


def test_trans_without_dims_of_a_3d_tile_swaps_the_last_two_axes_and_is_followed():
    def arrangement(x, y):
        return x.tile((2, 4, 8)), y.tile((2, 8))

    def application(x, y):
        y = ntl.sum(ntl.trans(x), 2)  # (2, 8, 4): over the 4 rows of each column  # noqa: F841

    kernel = ntsym.make(arrangement, application, (Tensor(3, other=5.0), Tensor(2)))
    x = torch.randn(2, 3, 7)
    y = torch.empty(2, 7)
    kernel(x, y)
    torch.testing.assert_close(y, x.sum(1))


def test_a_tile_on_one_path_of_an_if_and_data_on_the_other_is_not_reduced_through_the_tile_s_mask():
    """On the path without the tile every lane of ``w`` is an element: the
    tile's mask would drop one of them (a sum of -7 where -8 is right)."""
    def arrangement(x, s, a, b):
        return x.tile((8, 8)), s, a.tile((8,)), b.tile((8,))

    def application(x, s, a, b):
        if s > 0:
            v = x
            w = x
        else:
            v = 0.0
            w = ntl.zeros((8, 8), ntl.float32) + s
        a = ntl.sum(v, 1)  # noqa: F841
        b = ntl.sum(w, 1)  # noqa: F841

    with pytest.raises(ntsym.ApplicationError, match=r"`sum` mixes the lanes of `v`.*differ between the paths"):
        ntsym.make(arrangement, application, (Tensor(2, other=5.0), Tensor(0), Tensor(1), Tensor(1)))
