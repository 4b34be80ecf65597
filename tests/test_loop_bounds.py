"""Loop bounds the application computes (``first = ntl.min(x.offsets(0)) // b``)
are followed as index math: loads they keep inside the tensor lose their masks,
and only those; the range proofs behind it (``Min``/``Max`` in bounds)."""

import pytest
import sympy
import torch

import ntsym
import ntsym.language as ntl
from ntsym_codegen import bounds
from ntsym_codegen.intfuncs import CeilDiv, FloorDiv
from ntsym import Tensor


def arrangement(x, y, o, BLOCK=ntsym.block_size(lower_bound=16), BLOCK_N=ntsym.block_size(lower_bound=16)):
    x_arranged = x.tile((BLOCK,))
    y_arranged = y.tile((BLOCK_N,)).tile((-1,)).expand((x_arranged.shape[0],))
    return x_arranged, y_arranged, o.tile((BLOCK,))


def clamped(x, y, o):
    first = ntl.minimum(ntl.min(x.offsets(0), 0), y.source.shape[0]) // y[0].shape[0]
    acc = ntl.zeros(x.shape, dtype=ntl.float32)
    for i in range(first):
        acc += ntl.sum(y[i], 0)
    o = acc + x  # noqa: F841


def unclamped(x, y, o):
    first = ntl.min(x.offsets(0), 0) // y[0].shape[0]
    acc = ntl.zeros(x.shape, dtype=ntl.float32)
    for i in range(first):
        acc += ntl.sum(y[i], 0)
    o = acc + x  # noqa: F841


def from_max(x, y, o):
    # Blocks up to the one holding the tile's last offset, at most all of them.
    last = ntl.minimum(ntl.max(x.offsets(0), 0) // y[0].shape[0] + 1, y.shape[0])
    acc = ntl.zeros(x.shape, dtype=ntl.float32)
    for i in range(1, last):
        acc += ntl.sum(y[i], 0)
    o = acc + x  # noqa: F841


def reference(x, y, block, block_n, application):
    out = x.clone()
    for start in range(0, len(x), block):
        if application is clamped:
            ys = y[: min(start, len(y)) // block_n * block_n]
        elif application is unclamped:
            ys = y[: start // block_n * block_n]
        else:
            last = min((start + block - 1) // block_n + 1, -(-len(y) // block_n))
            ys = y[block_n: last * block_n]
        out[start:start + block] += ys.sum()
    return out


def loop_source(kernel):
    source = kernel.kernel_source if isinstance(kernel.kernel_source, str) else kernel.kernel_source()
    return source[source.index("for i in range("):]


def y_loads(text):
    return [line for line in text.splitlines() if "tl.load(y_ptr" in line or "y_ptrs" in line and "tl.load" in line]


def loop_loads(kernel):
    return y_loads(loop_source(kernel))


def peeled_loads(kernel):
    """The loads of ``y`` in the loop over whole blocks and in the one, behind
    the launch flag, over the partial block."""
    return [y_loads(part) for part in loop_source(kernel).split("if not NTSYM_WHOLE_0:")]


@pytest.mark.parametrize("application, masked", [(clamped, False), (unclamped, True), (from_max, "peeled")])
@pytest.mark.parametrize("sizes", [(64, 40), (40, 64), (48, 48)])
def test_loop_bound_from_offsets(application, masked, sizes):
    kernel = ntsym.make(arrangement, application, (Tensor(1), Tensor(1), Tensor(1)))
    if masked == "peeled":
        # range(1, last), last <= cdiv(n, b): split where the whole blocks end.
        whole, partial = peeled_loads(kernel)
        assert whole and all("mask=" not in line for line in whole), whole
        assert partial and all("mask=" in line for line in partial), partial
    else:
        loads = loop_loads(kernel)
        assert loads and all(("mask=" in line) == masked for line in loads), loads
    x, y = torch.randn(sizes[0]), torch.randn(sizes[1])
    for block, block_n in ((16, 16), (32, 16), (16, 32)):
        o = torch.empty_like(x)
        kernel(x, y, o, BLOCK=block, BLOCK_N=block_n)
        torch.testing.assert_close(o, reference(x, y, block, block_n, application), atol=1e-4, rtol=1e-4)


def test_a_range_whose_bound_the_body_changes_is_not_split():
    """The split's second loop would read ``last`` after the first loop changed it."""

    def changing(x, y, o):
        last = ntl.minimum(ntl.max(x.offsets(0), 0) // y[0].shape[0] + 1, y.shape[0])
        acc = ntl.zeros(x.shape, dtype=ntl.float32)
        for i in range(1, last):
            acc += ntl.sum(y[i], 0)
            last = last - 1  # noqa: F841  (the loop's range was fixed when it began)
        o = acc + x  # noqa: F841

    kernel = ntsym.make(arrangement, changing, (Tensor(1), Tensor(1), Tensor(1)))
    assert "NTSYM_WHOLE" not in loop_source(kernel)
    x, y = torch.randn(64), torch.randn(40)
    o = torch.empty_like(x)
    kernel(x, y, o, BLOCK=16, BLOCK_N=16)
    torch.testing.assert_close(o, reference(x, y, 16, 16, from_max), atol=1e-4, rtol=1e-4)


def test_a_range_with_a_start_bounds_its_variable_from_zero_to_its_stop():
    """``range(1, last)`` with ``last <= cdiv(n, b)``: the tile index needs no
    ``0 <= i < cdiv(n, b)`` guard (only the partial block's row mask stays)."""
    kernel = ntsym.make(arrangement, from_max, (Tensor(1), Tensor(1), Tensor(1)))
    whole, partial = peeled_loads(kernel)
    for load in whole + partial:
        assert "i >= 0" not in load and "tl.where" not in load, load


def whole_then_partial(x, y, o):
    # The whole blocks of y, then the rest: two loops, each over part of y's level.
    whole = y.source.shape[0] // y[0].shape[0]
    acc = ntl.zeros(x.shape, dtype=ntl.float32)
    for i in range(whole):
        acc += ntl.sum(y[i], 0)
    for j in range(whole, y.shape[0]):
        acc += 2 * ntl.sum(y[j], 0)
    o = acc + x  # noqa: F841


@pytest.mark.parametrize("n", [40, 48, 8])
def test_a_loop_over_the_whole_blocks_reads_a_sub_range_without_a_launch_check(n):
    """``range(n // b)`` is at most the level's ``cdiv(n, b)`` tiles: it reads
    a sub-range, which lengths that are not a multiple of the block allow
    (it was checked equal to the level's count at launch, refusing them)."""
    kernel = ntsym.make(arrangement, whole_then_partial, (Tensor(1), Tensor(1), Tensor(1)))
    assert "the loop over `i` reads `y`" not in kernel.explain()
    whole_loop = loop_source(kernel).split("for j in range(")[0]
    assert all("mask=" not in line for line in y_loads(whole_loop)), whole_loop
    x, y = torch.randn(64), torch.randn(n)
    o = torch.empty_like(x)
    kernel(x, y, o, BLOCK=16, BLOCK_N=16)
    whole = n // 16 * 16
    expected = x + y[:whole].sum() + 2 * y[whole:].sum()
    torch.testing.assert_close(o, expected, atol=1e-4, rtol=1e-4)


def one_block_more(x, y, o):
    acc = ntl.zeros(x.shape, dtype=ntl.float32)
    for i in range(y.source.shape[0] // y[0].shape[0] + 1):
        acc += ntl.sum(y[i], 0)
    o = acc + x  # noqa: F841


def test_a_loop_not_proved_within_the_level_keeps_its_launch_check():
    """``range(n // b + 1)`` passes the last tile where ``n`` is a multiple
    of ``b``: no proof, so the launch check stays and such a call is refused."""
    kernel = ntsym.make(arrangement, one_block_more, (Tensor(1), Tensor(1), Tensor(1)))
    assert "the loop over `i` reads `y`" in kernel.explain()
    with pytest.raises(ntsym.LaunchError, match="the loop over `i` reads `y`"):
        kernel(torch.randn(64), torch.randn(48), torch.empty(64), BLOCK=16, BLOCK_N=16)
    o = torch.empty(64)
    x, y = torch.randn(64), torch.randn(40)  # 40 // 16 + 1 = 3 = cdiv(40, 16): runs
    kernel(x, y, o, BLOCK=16, BLOCK_N=16)
    torch.testing.assert_close(o, x + y.sum(), atol=1e-4, rtol=1e-4)


P = sympy.Symbol("P", integer=True, nonnegative=True)
K, B = sympy.symbols("K B", integer=True, positive=True)
i, t = sympy.symbols("i t", integer=True)


@pytest.mark.parametrize("cond, ranges, expected", [
    # i < min(P, K) // B: whole blocks inside K.
    (sympy.Lt(i * B + t, K), {i: FloorDiv(sympy.Min(P, K), B), t: B}, True),
    (sympy.Lt(i, CeilDiv(K, B)), {i: FloorDiv(sympy.Min(P, K), B)}, True),
    # Without the clamp nothing bounds P by K.
    (sympy.Lt(i * B + t, K), {i: FloorDiv(P, B), t: B}, False),
    # A Min the expression rises with is not replaced by an argument.
    (sympy.Lt(K - sympy.Min(K, P), K), {}, False),
    (sympy.Gt(sympy.Max(P, 1), 0), {}, True),
    (sympy.Gt(sympy.Min(P, 1), 0), {}, False),
    # i < min(P // B + 1, cdiv(K, B)) stays below cdiv(K, B).
    (sympy.Lt(i, CeilDiv(K, B)), {i: sympy.Min(FloorDiv(P, B) + 1, CeilDiv(K, B))}, True),
])
def test_min_and_max_in_range_proofs(cond, ranges, expected):
    assert bounds.holds(cond, ranges) is expected
