"""Loops that advance pointer blocks (``NTSYM_ADVANCE``) instead of computing
each tile's address from the loop index.  Both forms are in every kernel with
such a loop; the tuner times both on a GPU, the interpreter runs the index
form unless ``ntsym_options={"advance": True}`` asks for the other.  Each
kernel here runs both ways, through the interpreter, against torch."""

import re

import pytest
import torch

import ntsym
import ntsym.language as ntl
from ntsym_codegen import tuning
from examples import mm, sdpa
from ntsym import Tensor
from tests.conftest import FP32_DOT_TOL

ADVANCE = {"advance": True}
B = 4


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def both(kernel, *args, **kwargs):
    """Run ``kernel`` with each form; return the two results (copies of the
    last argument)."""
    out = []
    for options in (None, ADVANCE):
        args[-1].fill_(float("nan"))
        kernel(*args, **kwargs, ntsym_options=options)
        out.append(args[-1].clone())
    return out


def row_blocks(x, y):
    """Each program: one row of ``x`` (blocks of B), and one element of ``y``."""
    return x.tile((1, B)).tile((1, -1)).squeeze(1), y.tile((1,))


def planes(x, y, block):
    """Each program: one plane of ``x`` (rows of blocks), and one element of ``y``."""
    arranged = x.tile((1, 1, block)).tile((1, -1, -1))
    arranged.dtype = arranged.dtype.squeeze(0)
    return arranged.squeeze((1, 2)), y.tile((1,))


def test_peeled_matrix_product_both_forms():
    assert "if NTSYM_ADVANCE:" in mm.kernel.kernel_source
    for k in (48, 50):  # whole blocks only, and a last partial block
        a, b = torch.randn(40, k), torch.randn(k, 24)
        for c in both(mm.kernel, a, b, torch.empty(40, 24), BLOCK_SIZE_M=16, BLOCK_SIZE_N=16, BLOCK_SIZE_K=16):
            torch.testing.assert_close(c, a @ b, atol=FP32_DOT_TOL, rtol=FP32_DOT_TOL)


def test_attention_both_forms():
    q, k, v = (torch.randn(1, 2, 40, 16) for _ in range(3))
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    for o in both(sdpa.kernel_pow2_head, q, k, v, 0.25, True, torch.empty(1, 2, 40, 16), BLOCK_SIZE_M=16, BLOCK_SIZE_N=16):
        torch.testing.assert_close(o, ref, atol=FP32_DOT_TOL, rtol=FP32_DOT_TOL)


def test_range_with_start_and_step():
    def application(x, y):
        acc = ntl.zeros(x.dtype.shape, dtype=ntl.float32)
        for k in range(1, x.shape[1], 2):
            acc += x[0, k]
        y = ntl.sum(acc, 1)  # noqa: F841

    kernel = ntsym.make(row_blocks, application, (Tensor(2), Tensor(1)))
    assert re.search(r"x_ptrs_\d+ \+= 8 \* x_stride_1", kernel.kernel_source)  # step 2 of blocks of 4
    x = torch.randn(3, 37)
    blocks = x.new_zeros(3, 40)
    blocks[:, :37] = x
    want = blocks.reshape(3, 10, B)[:, 1::2].sum((1, 2))
    for y in both(kernel, x, torch.empty(3)):
        torch.testing.assert_close(y, want)


def test_the_index_form_moves_the_scalar_pointer_first_where_both_parts_are_non_negative():
    """``x_ptr + k * step + x_base`` widens the two offsets to 64 bits one by
    one: right where each is at most their sum, which 32-bit index math
    holds for every element that exists.  A shifted tile (``x[k - 2]``)
    leaves a negative term in the hoisted part and a loop part that may pass
    the tensor's end by as much: there the sum is taken first, in 32 bits,
    as before (near 2**31 elements the split would address wrongly)."""
    def plain(x, y):
        acc = ntl.zeros(x.dtype.shape, dtype=ntl.float32)
        for k in range(x.shape[1]):
            acc += x[0, k]
        y = ntl.sum(acc, 1)  # noqa: F841

    def shifted(x, y):
        acc = ntl.zeros(x.dtype.shape, dtype=ntl.float32)
        for k in range(2, x.shape[1] + 2):
            acc += x[0, k - 2]
        y = ntl.sum(acc, 1)  # noqa: F841

    x = torch.randn(3, 37)
    for application, split in ((plain, True), (shifted, False)):
        kernel = ntsym.make(row_blocks, application, (Tensor(2), Tensor(1)))
        source = kernel.kernel_source
        assert bool(re.search(r"else tl.broadcast_to\(x_ptr \+ 4 \* k \* x_stride_1 \+ x_base_\d+,", source)) == split
        assert bool(re.search(r"else tl.broadcast_to\(x_ptr \+ \(x_base_\d+ \+ ", source)) == (not split), source
        for y in both(kernel, x, torch.empty(3)):
            torch.testing.assert_close(y, x.sum(1), atol=1e-5, rtol=1e-5)


def test_a_loop_part_not_proved_non_negative_keeps_the_sum_first():
    def application(x, y):
        acc = ntl.zeros(x.dtype.shape, dtype=ntl.float32)
        for i in range(1):
            for k in range(-1, x.shape[1] - 1):  # k < 0 at first: its range is not known
                acc += x[0, k + 1]
        y = ntl.sum(acc, 1)  # noqa: F841

    kernel = ntsym.make(row_blocks, application, (Tensor(2), Tensor(1)))
    assert re.search(r"x_ptr \+ \(x_base_\d+ \+ 4 \* k \* x_stride_1\)", kernel.kernel_source), kernel.kernel_source
    x = torch.randn(3, 37)
    for y in both(kernel, x, torch.empty(3)):
        torch.testing.assert_close(y, x.sum(1), atol=1e-5, rtol=1e-5)


def _rebinds_by_assignment(x, y):
    acc = ntl.zeros(x.dtype.shape, dtype=ntl.float32)
    for k in range(x.shape[1]):
        k = k - 2  # tiles -2, -1 (none: masked), then 0, 1
        acc += x[0, k]
    y = ntl.sum(acc, 1)  # noqa: F841


def _rebinds_by_an_inner_loop(x, y):
    acc = ntl.zeros(x.dtype.shape, dtype=ntl.float32)
    for k in range(2):
        for k in range(-1, 1):  # tile -1 (none: masked), then 0; twice
            acc += x[0, k]
    y = ntl.sum(acc, 1)  # noqa: F841


@pytest.mark.parametrize("application, blocks", [(_rebinds_by_assignment, (0, 1)), (_rebinds_by_an_inner_loop, (0, 0))])
def test_a_loop_variable_the_body_rebinds_has_no_range_for_the_proofs(application, blocks):
    """A mask the loop's range would prove (``k >= 0``) stays where the body
    moves ``k`` out of that range."""
    x = torch.arange(48, dtype=torch.float32).reshape(3, 16)
    y = torch.empty(3)
    ntsym.make(row_blocks, application, (Tensor(2), Tensor(1)))(x, y)
    torch.testing.assert_close(y, sum(x[:, b * B:(b + 1) * B].sum(1) for b in blocks))


def test_nested_loops_advance_the_inner_pointers_from_where_the_outer_loop_is():
    def arrangement(x, y):
        return planes(x, y, B)

    def application(x, y):
        acc = ntl.zeros(x.dtype.shape, dtype=ntl.float32)
        for j in range(x.shape[0]):
            for k in range(j, x.shape[1]):  # starts where the outer loop is
                acc += x[j, k]
        y = ntl.sum(ntl.sum(acc, 2), 1)  # noqa: F841

    kernel = ntsym.make(arrangement, application, (Tensor(3), Tensor(1)))
    x = torch.randn(2, 3, 4 * B)
    want = torch.zeros(2)
    for j in range(3):
        want += x[:, j, j * B:].sum(1)
    for y in both(kernel, x, torch.empty(2)):
        torch.testing.assert_close(y, want)


def test_writes_in_the_loop_and_a_tile_read_twice():
    def arrangement(x, y):
        return x.tile((1, B)).tile((1, -1)).squeeze(1), y.tile((1, B)).tile((1, -1)).squeeze(1)

    def application(x, y):
        for k in range(x.shape[1]):
            y[0, k] = x[0, k] * 2 + x[0, k]

    kernel = ntsym.make(arrangement, application, (Tensor(2), Tensor(2)))
    source = kernel.kernel_source
    assert len(set(re.findall(r"x_ptrs_\d+", source))) == 1  # one pointer block for both reads
    assert len(set(re.findall(r"y_ptrs_\d+", source))) == 1
    x = torch.randn(3, 18)
    for y in both(kernel, x, torch.empty(3, 18)):
        torch.testing.assert_close(y, 3 * x)


def test_loop_inside_a_branch_and_a_while_inside_the_loop():
    def application(x, flag, y):
        acc = ntl.zeros(x.dtype.shape, dtype=ntl.float32)
        if flag > 0:
            for k in range(x.shape[1]):
                n = 0
                while n < 2:
                    acc += x[0, k]
                    n += 1
        y = ntl.sum(acc, 1)  # noqa: F841

    def arrangement(x, flag, y):
        x, y = row_blocks(x, y)
        return x, flag, y

    kernel = ntsym.make(arrangement, application, (Tensor(2), Tensor(0), Tensor(1)))
    x = torch.randn(3, 10)
    for flag, factor in ((1, 2), (0, 0)):
        for y in both(kernel, x, flag, torch.empty(3)):
            torch.testing.assert_close(y, factor * x.sum(1))


def test_indices_not_affine_in_the_loop_keep_the_index_form():
    def application(x, y):
        acc = ntl.zeros(x.dtype.shape, dtype=ntl.float32)
        for k in range(2 * x.shape[1]):
            acc += x[0, k // 2]  # each block twice
        y = ntl.sum(acc, 1)  # noqa: F841

    kernel = ntsym.make(row_blocks, application, (Tensor(2), Tensor(1)))
    assert "NTSYM_ADVANCE" not in kernel.kernel_source
    x = torch.randn(3, 16)
    with pytest.raises(ntsym.LaunchError, match="advance pointers, but no loop"):
        kernel(x, torch.empty(3), ntsym_options=ADVANCE)
    y = torch.empty(3)
    kernel(x, y)
    torch.testing.assert_close(y, 2 * x.sum(1))


def test_a_step_the_loop_changes_keeps_the_index_form():
    def application(x, s, y):
        acc = ntl.zeros(x.dtype.shape, dtype=ntl.float32)
        step = s
        for k in range(0, x.shape[1], step):
            acc += x[0, k]
            step = step + 1  # range() took the step already
        y = ntl.sum(acc, 1)  # noqa: F841

    def arrangement(x, s, y):
        x, y = row_blocks(x, y)
        return x, s, y

    kernel = ntsym.make(arrangement, application, (Tensor(2), Tensor(0), Tensor(1)))
    assert "NTSYM_ADVANCE" not in kernel.kernel_source
    x = torch.randn(3, 16)
    y = torch.empty(3)
    kernel(x, 2, y)
    torch.testing.assert_close(y, x.reshape(3, 4, B)[:, ::2].sum((1, 2)))


def test_a_step_known_when_the_loop_starts_is_taken_then():
    def application(x, y):
        acc = ntl.zeros(x.dtype.shape, dtype=ntl.float32)
        s = 2
        for k in range(0, x.shape[1], s):
            acc += x[0, k]
            s = 1  # range() took the step already
        y = ntl.sum(acc, 1)  # noqa: F841

    kernel = ntsym.make(row_blocks, application, (Tensor(2), Tensor(1)))
    x = torch.randn(3, 16)
    for y in both(kernel, x, torch.empty(3)):
        torch.testing.assert_close(y, x.reshape(3, 4, B)[:, ::2].sum((1, 2)))


def test_bad_option_value_and_unknown_option():
    with pytest.raises(ntsym.LaunchError, match=r"ntsym_options\['advance'\] must be True or False"):
        mm.kernel(torch.randn(4, 4), torch.randn(4, 4), torch.empty(4, 4), ntsym_options={"advance": 1})
    with pytest.raises(ntsym.LaunchError, match=r"unknown ntsym_options 'advanced'\nknown: num_warps, num_stages"):
        mm.kernel(torch.randn(4, 4), torch.randn(4, 4), torch.empty(4, 4), ntsym_options={"advanced": True})


def test_tuner_times_the_advancing_form_at_the_best_configurations(monkeypatch):
    timed = []

    def time_all(spec, configs, parts, run, tensors, start, done=0, failures=None):
        timed.extend(configs)
        # Fake timings: the larger the blocks the faster; advancing faster still.
        return [(1.0 / (dict(c.meta)["BLOCK_SIZE_M"] * dict(c.meta)["BLOCK_SIZE_N"]) - c.advance * 1e-6, c)
                for c in configs]

    monkeypatch.setattr(tuning.timing, "time_all", time_all)
    a, b = torch.randn(40, 48), torch.randn(48, 24)
    spec = mm.kernel.spec
    grid = lambda meta: (1,)  # noqa: E731
    best, _ = tuning.timing.benchmark(None, spec, grid, (), {}, (a, b, torch.empty(40, 24)), False, {})
    plain = [c for c in timed if not c.advance]
    advancing = [c for c in timed if c.advance]
    assert len(advancing) == tuning.timing.ADVANCE_CONFIGS
    ranked = sorted(plain, key=lambda c: 1.0 / (dict(c.meta)["BLOCK_SIZE_M"] * dict(c.meta)["BLOCK_SIZE_N"]))
    assert [(c.meta, c.num_warps, c.num_stages) for c in advancing] == [
        (c.meta, c.num_warps, c.num_stages) for c in ranked[: tuning.timing.ADVANCE_CONFIGS]
    ]
    assert best.advance
    assert best.kwargs({}, False, spec)["NTSYM_ADVANCE"] is True


# -- where the body changes what an address is made of ---------------------------------


def rows(x, y):
    return x.tile((1, B)).tile((1, -1)).squeeze(1), y.tile((1, B)).tile((1, -1)).squeeze(1)


def reversed_blocks(x, y):
    for k in range(x.shape[1]):
        t = x[0, k]
        k = x.shape[1] - 1 - k
        y[0, k] = t


def into_block_0_by_unpacking(x, y):
    for k in range(x.shape[1]):
        t = x[0, k]
        k, j = 0, k
        y[0, k] = y[0, k] + t


def into_block_0_in_a_branch(x, y):
    for k in range(x.shape[1]):
        t = x[0, k]
        if k > 0:
            k = 0
        y[0, k] = y[0, k] + t


def reset(y, t, k):
    k = k * 0
    y[0, k] = y[0, k] + t


def into_block_0_by_an_inlined_function(x, y):
    for k in range(x.shape[1]):
        t = x[0, k]
        reset(y, t, k)


@pytest.mark.parametrize("application", [
    reversed_blocks, into_block_0_by_unpacking, into_block_0_in_a_branch,
    into_block_0_by_an_inlined_function,
])
def test_a_loop_index_the_body_rebinds_keeps_the_index_form(application):
    kernel = ntsym.make(rows, application, (Tensor(2), Tensor(2)))
    assert "NTSYM_ADVANCE" not in kernel.kernel_source
    x = torch.arange(24.0).reshape(2, 12)
    y = torch.zeros(2, 12)
    kernel(x, y)
    blocks = x.reshape(2, 3, B)
    if application is reversed_blocks:
        want = blocks.flip(1).reshape(2, 12)
    else:
        want = torch.zeros(2, 12)
        want[:, :B] = blocks.sum(1)
    torch.testing.assert_close(y, want)


def put(y, t, k, s):
    s = s * 0  # keeps the parameter's type (a loop-carried value in Triton)
    y[0, k + s] = t


def test_a_name_an_inlined_function_rebinds_keeps_that_access_in_the_index_form():
    # The inlined `put` assigns `s`, which its parameter became: the store
    # through `y[0, k + s]` is addressed from the index; `x[0, k]` advances.
    def application(x, s, y):
        for k in range(x.shape[1]):
            t = x[0, k]
            put(y, t, k, s)

    def arrangement(x, s, y):
        x, y = rows(x, y)
        return x, s, y

    kernel = ntsym.make(arrangement, application, (Tensor(2), Tensor(0), Tensor(2)))
    source = kernel.kernel_source
    assert "x_ptrs_" in source and "y_ptrs_" not in source
    x = torch.arange(24.0).reshape(2, 12)
    for options in (None, ADVANCE):
        padded = torch.zeros(2, 24)  # catches writes past the row
        kernel(x, 3, padded[:, :12], ntsym_options=options)  # not 1: Triton makes a 1 a constant
        torch.testing.assert_close(padded[:, :12], x)
        assert not padded[:, 12:].any()


def pick(x, k):
    j = 0
    return x[0, k + j]


def test_an_inlined_functions_local_in_an_address():
    def application(x, y):
        for k in range(x.shape[1]):
            y[0, k] = pick(x, k)

    kernel = ntsym.make(rows, application, (Tensor(2), Tensor(2)))
    x = torch.arange(24.0).reshape(2, 12)
    for y in both(kernel, x, torch.zeros(2, 12)):
        torch.testing.assert_close(y, x)


def test_peeled_inner_loop_beside_a_tile_the_outer_loop_carries():
    def arrangement(x, y, BLOCK=ntsym.block_size(lower_bound=4)):
        return planes(x, y, BLOCK)

    def application(x, y):
        acc = ntl.zeros(x.dtype.shape, dtype=ntl.float32)
        for j in range(x.shape[0]):
            for k in range(x.shape[1]):  # cdiv(10, 4) blocks: peeled
                acc += x[j, 0] + x[j, k]
        y = ntl.sum(ntl.sum(acc, 2), 1)  # noqa: F841

    kernel = ntsym.make(arrangement, application, (Tensor(3), Tensor(1)))
    x = torch.randn(2, 3, 10)
    # Each block k adds x[j, 0] on the lanes block k has: lanes past the end
    # of the last block (10 = 4 + 4 + 2) leave the accumulator as it was.
    want = x.sum((1, 2)) + 2 * x[..., :B].sum((1, 2)) + x[..., :10 - 2 * B].sum((1, 2))
    for y in both(kernel, x, torch.empty(2), BLOCK=B):
        torch.testing.assert_close(y, want)


def test_one_offset_two_tile_shapes():
    def application(x, y):
        acc = ntl.zeros((x.dtype.shape[1],), dtype=ntl.float32)
        for k in range(x.shape[1]):
            acc += x[0, k][0] + ntl.sum(x[0, k], 0)  # (B,) and (1, B) summed to (B,)
        y = ntl.sum(acc, 0)  # noqa: F841

    kernel = ntsym.make(row_blocks, application, (Tensor(2), Tensor(1)))
    x = torch.randn(3, 16)
    for y in both(kernel, x, torch.empty(3)):
        torch.testing.assert_close(y, 2 * x.sum(1))


def test_advancing_with_64_bit_index_math(monkeypatch):
    from ntsym_codegen import runtime

    monkeypatch.setattr(runtime.checks, "needs_int64", lambda tensors: True)
    a, b = torch.randn(40, 50), torch.randn(50, 24)
    for c in both(mm.kernel, a, b, torch.empty(40, 24), BLOCK_SIZE_M=16, BLOCK_SIZE_N=16, BLOCK_SIZE_K=16):
        torch.testing.assert_close(c, a @ b, atol=FP32_DOT_TOL, rtol=FP32_DOT_TOL)


def test_persistent_variant_with_the_flag():
    a, b = torch.randn(40, 52), torch.randn(52, 24)  # rows of 16-byte multiples
    for options in ({"persistent": True}, {"persistent": True, "advance": True}):
        c = torch.full((40, 24), float("nan"))
        mm.kernel(a, b, c, BLOCK_SIZE_M=16, BLOCK_SIZE_N=16, BLOCK_SIZE_K=16, ntsym_options=options)
        torch.testing.assert_close(c, a @ b, atol=FP32_DOT_TOL, rtol=FP32_DOT_TOL)
