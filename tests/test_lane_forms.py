"""Forms Triton accepts whose meaning ntsym knows under another spelling run:
``for k in ntl.range(n)`` is a ``range`` loop; a padded tile reached through
a tuple assignment (``a, b = x, x``) or the ``x.trans()`` method keeps its
lanes, and a reduction of it reads the tensor's elements only."""

import torch

import ntsym
import ntsym.language as ntl
from ntsym import Tensor


def _blocks_of_rows(x, out):
    return x.tile((4, 8)), out.tile((4, 1))


def _row_maxima(application, arrangement=_blocks_of_rows, columns=5):
    """Rows of ``columns`` negatives: their maxima, as torch's."""
    x = -(torch.rand(3, columns) + 1)
    out = torch.empty(3, 1)
    ntsym.make(arrangement, application, (Tensor(2), Tensor(2)))(x, out)
    torch.testing.assert_close(out, x.amax(1, keepdim=True))


def test_a_loop_over_ntl_range():
    def arrangement(x, out):
        return x.tile((1, 4)).tile((1, -1)), out.tile((1, 1))

    def application(x, out):
        acc = ntl.full(x.dtype.shape, float("-inf"), ntl.float32)
        for k in ntl.range(x.shape[1]):
            acc = ntl.maximum(acc, x[0, k])
        out = ntl.max(acc, 1, keep_dims=True)  # noqa: F841

    _row_maxima(application, arrangement, columns=7)


def test_a_reduction_of_a_tile_bound_by_a_tuple_assignment():
    def application(x, out):
        a, b = x, x
        out = ntl.max(a, 1, keep_dims=True)  # noqa: F841

    _row_maxima(application)


def test_a_reduction_of_the_trans_method():
    def application(x, out):
        out = ntl.reshape(ntl.max(x.trans(), 0), (4, 1))  # noqa: F841

    _row_maxima(application)


def test_a_reduction_of_ntl_trans_runs():
    def application(x, out):
        out = ntl.reshape(ntl.max(ntl.trans(x), 0), (4, 1))  # noqa: F841

    _row_maxima(application)


def test_a_tuple_assignment_of_two_tiles_keeps_each_ones_lanes():
    def arrangement(x, y, out):
        return x.tile((4, 8)), y.tile((4, 8)), out.tile((4, 1))

    def application(x, y, out):
        a, b = x, y + 1.0
        out = ntl.max(a, 1, keep_dims=True) + ntl.min(b, 1, keep_dims=True)  # noqa: F841

    x = -(torch.rand(3, 5) + 1)
    y = torch.rand(3, 5) + 1
    out = torch.empty(3, 1)
    ntsym.make(arrangement, application, (Tensor(2), Tensor(2), Tensor(2)))(x, y, out)
    torch.testing.assert_close(out, x.amax(1, keepdim=True) + (y + 1).amin(1, keepdim=True))
