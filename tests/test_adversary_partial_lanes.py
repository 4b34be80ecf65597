"""Two chunks of a row combined elementwise before a reduction, written
without a loop: ``ntl.maximum(x[0, 0], x[0, 1])`` over a row of 7 in chunks
of 4.  Lane 3 holds element 3 in the first chunk and nothing in the second;
ntsym takes the lane as outside the result (a lane outside one operand is
outside the result), so the reduction drops element 3 and the result is
wrong without an error.  The same computation written as a loop over the
chunks is right (the carried value keeps its lanes).  Strict xfail until the
unrolled form is right or refused by name."""

import pytest
import torch

import ntsym
import ntsym.language as ntl
from ntsym import Tensor


def _chunks(x, out):
    return x.tile((1, 4)).tile((1, -1)), out.tile((1, 1))


def _run(application, x):
    out = torch.empty(x.shape[0], 1)
    try:
        ntsym.make(_chunks, application, (Tensor(2), Tensor(2)))(x, out)
    except ntsym.NtsymError:
        return None
    return out


def _rows_whose_maximum_is_element_3():
    x = -(torch.rand(3, 7) + 1)
    x[:, 3] = -0.5
    return x


def test_the_loop_over_chunks_takes_every_element():
    def application(x, out):
        acc = x[0, 0]
        for k in range(1, x.shape[1]):
            acc = ntl.maximum(acc, x[0, k])
        out = ntl.max(acc, 1, keep_dims=True)  # noqa: F841

    x = _rows_whose_maximum_is_element_3()
    torch.testing.assert_close(_run(application, x), x.amax(1, keepdim=True))


@pytest.mark.xfail(strict=True, reason="maximum of the two chunks, then max: element 3 (the row's maximum, "
                   "-0.5) is dropped with lane 3 of the second chunk, which lies past the row")
def test_the_unrolled_maximum_of_two_chunks_takes_every_element():
    def application(x, out):
        acc = ntl.maximum(x[0, 0], x[0, 1])
        out = ntl.max(acc, 1, keep_dims=True)  # noqa: F841

    x = _rows_whose_maximum_is_element_3()
    out = _run(application, x)
    if out is not None:
        torch.testing.assert_close(out, x.amax(1, keepdim=True))


@pytest.mark.xfail(strict=True, reason="exp of the first chunk plus exp of the second, then sum: exp(x[:, 3]) "
                   "is dropped with lane 3 of the second chunk")
def test_the_unrolled_sum_of_two_chunks_adds_every_element():
    def application(x, out):
        acc = ntl.exp(x[0, 0])
        acc += ntl.exp(x[0, 1])
        out = ntl.sum(acc, 1, keep_dims=True)  # noqa: F841

    x = torch.randn(3, 7)
    out = _run(application, x)
    if out is not None:
        torch.testing.assert_close(out, x.exp().sum(1, keepdim=True))
