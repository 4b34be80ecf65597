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


def _is_positive(t):
    return t > 0.0


def _count_in_an_argument_right_of_and(x, out):
    c = 0.0
    for k in range(x.shape[1]):
        top = ntl.max(x[0, k])
        if top > 0.0 and _is_positive(_count(c, top)):  # never true: Python never counts
            c += 100.0
    out = c  # noqa: F841


def test_a_call_in_the_arguments_of_one_python_may_skip_must_not_write_the_caller_s_names():
    """`_count` is an argument of `_is_positive`, emitted among its
    parameters: it ran for every chunk (3 where Python leaves 0)."""
    with pytest.raises(ntsym.ApplicationError, match="a call in the arguments of `_is_positive` writes `c`"):
        _chunks(_count_in_an_argument_right_of_and)


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


def _peek(x, k, c, last):
    c = x[0, k]  # the caller's `c`: chunk 2 has a lane past the row
    return k < last


def _last_chunk_peeked_in_the_test(x, out):
    c = ntl.full((1, 4), -1000.0, dtype=ntl.float32)
    k = 0
    while _peek(x, k, c, x.shape[1] - 1):
        c = ntl.full((1, 4), -1000.0, dtype=ntl.float32)
        k += 1
    out = ntl.max(c)  # noqa: F841


def _raise(acc, chunk):
    higher = ntl.maximum(acc, chunk)
    acc = higher  # the caller's `acc`
    return higher


def _raised_in_a_branch(x, out):
    acc = ntl.full((1, 4), -1000.0, dtype=ntl.float32)
    top = ntl.max(x[0, 0])
    if top < 0.0:
        _raise(acc, x[0, 2])
    out = ntl.max(acc)  # noqa: F841


@pytest.mark.parametrize("application", [_last_chunk_peeked_in_the_test, _raised_in_a_branch])
def test_what_an_inlined_call_writes_on_one_path_joins_the_other_paths(application):
    """After the loop (its test ran last) or the `if`, the value holds the
    last chunk's lane past the row on one path only: refused, as the same
    program written without the helper is (both read 0 or `other` there)."""
    with pytest.raises(ntsym.ApplicationError, match="differ between the paths"):
        _chunks(application)


def _count_in_a_chained_comparison(x, out):
    c = 0.0
    for k in range(x.shape[1]):
        top = ntl.max(x[0, k])
        if 0.0 < top < _count(c, top):
            c += 100.0
    out = c  # noqa: F841


def test_an_inlined_call_in_a_chained_comparison_python_may_skip_must_not_write_the_caller_s_names():
    with pytest.raises(ntsym.ApplicationError, match="`_count` writes `c`"):
        _chunks(_count_in_a_chained_comparison)


def _increment(a):
    a = a + 1.0
    return a


def _above(t, threshold):
    s = t * 1.0
    _increment(s)  # writes the helper's own `s`, none of the caller's
    return s > threshold


def _count_above(x, out):
    c = 0.0
    for k in range(x.shape[1]):
        top = ntl.max(x[0, k])
        if top < 0.0 and _above(top, -1.5):
            c += 1.0
    out = c  # noqa: F841


def test_a_helper_right_of_and_may_call_one_that_writes_its_own_locals():
    x = -(torch.rand(3, 11) + 1.0)
    out = torch.empty(3)
    _chunks(_count_above)(x, out)
    chunks = [x[:, s:s + 4].max(1).values for s in range(0, 11, 4)]
    torch.testing.assert_close(out, sum((m + 1.0 > -1.5).float() for m in chunks))


def _max_plus_a_tile_while_less(x, w, out):
    acc = ntl.full((1, 4), -1000.0, dtype=ntl.float32)
    k = 0
    while _less(k, x.shape[1]):
        acc = ntl.maximum(acc, x[0, k] + w)  # `w` is read once, before the loop
        k += 1
    out = ntl.max(acc)  # noqa: F841


def test_an_inlined_while_test_keeps_what_is_hoisted_before_the_loop():
    """Code hoisted out of the loop after an inlined call went to a list
    already emitted: the kernel named a tile it never loaded."""
    def arrangement(x, w, out):
        return x.tile((1, 4)).tile((1, -1)), w.tile((1, 4)), out.tile((1,))

    x, w, out = -(torch.rand(3, 12) + 1.0), torch.rand(3, 4), torch.empty(3)
    ntsym.make(arrangement, _max_plus_a_tile_while_less, (Tensor(2), Tensor(2), Tensor(1)))(x, w, out)
    torch.testing.assert_close(out, (x.reshape(3, 3, 4) + w[:, None, :]).amax((1, 2)))
