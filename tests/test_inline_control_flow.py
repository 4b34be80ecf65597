"""Inlined functions where Python evaluates an expression more than once, or
not at all: a ``while`` test runs before every iteration, the right of
``and``/``or`` and the branches of ``x if c else y`` only on some paths.
ntsym runs an inlined body before its statement: before the loop and again
at the end of each iteration for a ``while`` test; an operand that writes the
caller's names on some paths only is refused.  Rows of 11 in chunks of 4."""

import pytest
import torch

import ntsym
import ntsym.language as ntl
from ntsym import Tensor


def _chunks(application, other=None):
    def arrangement(x, out):
        return x.tile((1, 4)).tile((1, -1)), out.tile((1,))

    return ntsym.make(arrangement, application, (Tensor(2, other=other), Tensor(1)))


def _less(a, b):
    return a < b


def _advance(k, n):
    k = k + 1  # the caller's `k`: a name passed is the parameter itself
    return k <= n


def _chunk_max_below(x, k, threshold):
    j = k * 1
    top = ntl.max(x[0, j])
    return top < threshold


def _count(c, t):
    c = c + 1.0  # the caller's `c`
    return t > 0.0


def _max_while_less(x, out):
    acc = ntl.full((1, 4), float("-inf"), dtype=ntl.float32)
    k = 0
    while _less(k, x.shape[1]):
        acc = ntl.maximum(acc, x[0, k])
        k += 1
    out = ntl.max(acc)  # noqa: F841


def _max_while_advancing(x, out):
    acc = ntl.full((1, 4), float("-inf"), dtype=ntl.float32)
    k = -1
    while _advance(k, x.shape[1] - 1):
        acc = ntl.maximum(acc, x[0, k])
    out = ntl.max(acc)  # noqa: F841


def _max_until_a_chunk_reaches_zero(x, out):
    acc = ntl.full((1, 4), float("-inf"), dtype=ntl.float32)
    k = 0
    while k < x.shape[1] and _chunk_max_below(x, k, 0.0):
        acc = ntl.maximum(acc, x[0, k])
        k += 1
    out = ntl.max(acc)  # noqa: F841


@pytest.mark.parametrize("other", [None, 100.0])
@pytest.mark.parametrize("application", [_max_while_less, _max_while_advancing])
def test_an_inlined_while_test_is_evaluated_before_every_iteration(application, other):
    """Evaluated once, before the loop, the test never changed: the loop did
    not end."""
    x = -(torch.rand(3, 11) + 1.0)
    out = torch.empty(3)
    _chunks(application, other)(x, out)
    torch.testing.assert_close(out, x.max(1).values)


def test_an_inlined_while_test_stops_the_loop_where_python_does():
    x = -(torch.rand(3, 11) + 1.0)
    x[0, 5], x[1, 9] = 1.0, 2.0
    out = torch.empty(3)
    _chunks(_max_until_a_chunk_reaches_zero)(x, out)
    torch.testing.assert_close(out, torch.stack([x[0, :4].max(), x[1, :8].max(), x[2].max()]))


def _count_in_and(x, out):
    c = 0.0
    for k in range(x.shape[1]):
        top = ntl.max(x[0, k])
        if top < 0.0 and _count(c, top):
            c += 100.0
    out = c  # noqa: F841


def _count_in_a_conditional_expression(x, out):
    c = 0.0
    for k in range(x.shape[1]):
        top = ntl.max(x[0, k])
        positive = _count(c, top) if top < 0.0 else False
        if positive:
            c += 100.0
    out = c  # noqa: F841


@pytest.mark.parametrize("application", [_count_in_and, _count_in_a_conditional_expression])
def test_an_inlined_call_python_may_skip_must_not_write_the_caller_s_names(application):
    """Run before the statement, `_count` would add 1 for every chunk, where
    Python adds it only for the chunks whose maximum is negative."""
    with pytest.raises(ntsym.ApplicationError, match="`_count` writes `c`"):
        _chunks(application)


def _positive_in_and(x, out):
    c = 0.0
    for k in range(x.shape[1]):
        top = ntl.max(x[0, k])
        if top < 0.0 and _less(0.0 - 2.0, top):
            c += 1.0
    out = c  # noqa: F841


def test_an_inlined_call_that_writes_nothing_of_the_caller_s_may_stand_right_of_and():
    x = torch.randn(3, 11) - 1.0
    out = torch.empty(3)
    _chunks(_positive_in_and)(x, out)
    chunks = [x[:, s:s + 4].max(1).values for s in range(0, 11, 4)]
    torch.testing.assert_close(out, sum(((m < 0) & (m > -2)).float() for m in chunks))
