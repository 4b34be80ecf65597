"""Launch and make-time safety: shape calls in applications, version counters,
overlapping writes, tuning entries, the cache directory, interrupted tuning,
jagged offsets rewritten between calls, concurrent launches."""

import pytest
import torch

import ntsym
import ntsym.language as ntl
from ntsym import Symbol, Tensor

B = Symbol("B", constexpr=True)


# -- reshape, view, broadcast_to -------------------------------------------------------------

def test_reshape_view_and_broadcast_to_in_an_application():
    def arrangement(x, y):
        return x.tile((B, B)), y.tile((B, B))

    def application(x, y):
        t = ntl.reshape(x, (x.shape[0] * x.shape[1],))
        u = t.reshape((x.shape[0], x.shape[1]))
        v = ntl.view(u, (x.shape[0], x.shape[1]))
        s = ntl.sum(x, 1)
        y = v + ntl.broadcast_to(ntl.reshape(s, (x.shape[0], 1)), (x.shape[0], x.shape[1]))  # noqa: F841

    k = ntsym.make(arrangement, application, (Tensor(2), Tensor(2)))
    x = torch.randn(8, 8)
    y = torch.empty_like(x)
    k(x, y, B=4)
    rows = x.reshape(2, 4, 2, 4).sum(3, keepdim=True).expand(2, 4, 2, 4).reshape(8, 8)
    torch.testing.assert_close(y, x + rows)


def test_bincount_with_reshape_and_broadcast_to():
    def arrangement(input, output):
        out = output.tile((B,))
        return input.tile((-1,)).expand(out.shape), out

    def application(input, output):
        bins = output.offsets(0)
        column = ntl.reshape(input, (input.shape[0], 1))
        row = ntl.broadcast_to(ntl.reshape(bins, (1, output.shape[0])), (input.shape[0], output.shape[0]))
        output = ntl.sum((column == row).to(ntl.int64), 0)  # noqa: F841

    k = ntsym.make(arrangement, application, (Tensor(1, dtype=ntsym.int64), Tensor(1, dtype=ntsym.int64)))
    x = torch.tensor([0, 3, 1, 1, 4, 3, 1, 0])
    y = torch.empty(5, dtype=torch.int64)
    k(x, y, B=4)
    assert torch.equal(y, torch.bincount(x, minlength=5))
