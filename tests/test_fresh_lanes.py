"""Values made afresh over a padded block: a tile of 5 is loaded in a block of
8, and a shape built from it (``x.shape``, ``(1, 5)``) is the block, so
``full``, ``zeros``, ``arange`` and ``zeros_like`` have lanes past the true
extent.  An operation mixing lanes reads them as outside the tile."""

import pytest
import torch

import ntsym
import ntsym.language as ntl
from ntsym import Tensor


def _rows(x, out):
    return x.tile((1, 5)), out.tile((1, 1))


def _count_full(x, out):
    out = ntl.sum(ntl.full(x.shape, 1.0, dtype=ntl.float32), 1)  # noqa: F841


def _sum_arange(x, out):
    out = ntl.sum(ntl.arange(0, x.shape[1]), 0)  # noqa: F841


def _argmax_arange(x, out):
    out = ntl.argmax(ntl.arange(0, x.shape[1]), 0)  # noqa: F841


def _count_zeros_like(x, out):
    out = ntl.sum(ntl.zeros_like(x) + 1, 1)  # noqa: F841


def _count_tuple_shape(x, out):
    out = ntl.sum(ntl.full((1, x.shape[1]), 2.0, dtype=ntl.float32), 1)  # noqa: F841


def _max_of_zeros_then_data(x, out):
    acc = ntl.full(x.shape, 7.0, dtype=ntl.float32)
    acc = ntl.minimum(acc, x)
    out = ntl.max(acc, 1)  # noqa: F841


def _sum_of_squares_into_zeros(x, out):
    acc = ntl.zeros(x.shape, dtype=ntl.float32)
    acc += x * x
    out = ntl.sum(acc, 1)  # noqa: F841


def _sum_of_a_broadcast_maximum(x, out):
    out = ntl.sum(ntl.broadcast_to(ntl.max(x, 1, keep_dims=True), x.shape), 1)  # noqa: F841


def _sum_of_a_broadcast_method(x, out):
    m = ntl.max(x, 1, keep_dims=True)
    out = ntl.sum(m.broadcast_to(x.shape), 1)  # noqa: F841


@pytest.mark.parametrize("application, expected", [
    (_sum_of_a_broadcast_maximum, lambda x: 5 * x.amax(1, keepdim=True)),
    (_sum_of_a_broadcast_method, lambda x: 5 * x.amax(1, keepdim=True)),
    (_count_full, lambda x: torch.full((3, 1), 5.0)),
    (_sum_arange, lambda x: torch.full((3, 1), 10.0)),
    (_argmax_arange, lambda x: torch.full((3, 1), 4.0)),
    (_count_zeros_like, lambda x: torch.full((3, 1), 5.0)),
    (_count_tuple_shape, lambda x: torch.full((3, 1), 10.0)),
    (_max_of_zeros_then_data, lambda x: x.clamp(max=7.0).amax(1, keepdim=True)),
    (_sum_of_squares_into_zeros, lambda x: (x * x).sum(1, keepdim=True)),
])
def test_a_fresh_value_over_a_padded_block_is_reduced_over_the_true_extent(application, expected):
    kernel = ntsym.make(_rows, application, (Tensor(2), Tensor(2)))
    x = -torch.rand(3, 5) - 1  # negative: a padded lane of 0 or 7 would win a max
    out = torch.empty(3, 1)
    kernel(x, out)
    torch.testing.assert_close(out, expected(x))


def _max_beside_a_partial_tile(x, out):
    acc = ntl.full(x.shape, -100.0, dtype=ntl.float32)
    out = ntl.max(ntl.maximum(acc, x), 1)  # noqa: F841


def _max_carried_beside_partial_chunks(x, out):
    acc = ntl.full(x[0].shape, -100.0, dtype=ntl.float32)
    for k in range(x.shape[0]):
        acc = ntl.maximum(acc, ntl.minimum(ntl.full(x[k].shape, 7.0, dtype=ntl.float32), x[k]))
    out = ntl.max(acc, 1)  # noqa: F841


def _chunked_rows(x, out):
    chunks = x.tile((1, 5)).tile((1, -1))
    chunks.dtype = chunks.dtype.squeeze(0)
    return chunks, out.tile((1, 1))


def test_a_fresh_value_beside_a_tile_past_the_tensor_end_leaves_the_tile_lanes_outside():
    """The tensor ends inside the tile (a row of 7 in tiles of 5): the fresh
    value's true extent meets the tile's mask, it does not widen it to the
    tile's lanes past the tensor, which hold ``other``."""
    kernel = ntsym.make(_rows, _max_beside_a_partial_tile, (Tensor(2), Tensor(2)))
    x = -torch.rand(3, 7) - 1
    out = torch.empty(3, 2)
    kernel(x, out)
    torch.testing.assert_close(out, torch.stack([x[:, :5].amax(1), x[:, 5:].amax(1)], 1))
    kernel = ntsym.make(_chunked_rows, _max_carried_beside_partial_chunks, (Tensor(2), Tensor(2)))
    x = -torch.rand(3, 13) - 1
    out = torch.empty(3, 1)
    kernel(x, out)
    torch.testing.assert_close(out, x.amax(1, keepdim=True))
