"""Two values whose lanes outside the tensor differ, combined elementwise
before a reduction.  Two tiles of one tensor along the same axis (two chunks
of one row): a lane inside either operand is an element of the combination,
the operand it lies outside of contributing its ``other``, as NineToothed
computes.  Along different axes (a broadcast) a lane outside one operand's
rows or columns is outside the result.  Two tensors of different lengths in
blocks of one extent: a lane inside either is an element (the shorter giving
its ``other``); where one block broadcasts along the other (an extent of 1),
only the lanes inside both are."""

import pytest
import torch
import torch.nn.functional as F

import ntsym
import ntsym.language as ntl
from ntsym import Tensor


def _chunks(x, out):
    return x.tile((1, 4)).tile((1, -1)), out.tile((1, 1))


def _run(application, x, other=None):
    out = torch.empty(x.shape[0], 1)
    ntsym.make(_chunks, application, (Tensor(2, other=other), Tensor(2)))(x, out)
    return out


def _rows_whose_maximum_is_element_3():
    x = -(torch.rand(3, 7) + 1)
    x[:, 3] = -0.5
    return x


def _unrolled_maximum(x, out):
    acc = ntl.maximum(x[0, 0], x[0, 1])
    out = ntl.max(acc, 1, keep_dims=True)  # noqa: F841


def test_the_loop_over_chunks_takes_every_element():
    def application(x, out):
        acc = x[0, 0]
        for k in range(1, x.shape[1]):
            acc = ntl.maximum(acc, x[0, k])
        out = ntl.max(acc, 1, keep_dims=True)  # noqa: F841

    x = _rows_whose_maximum_is_element_3()
    torch.testing.assert_close(_run(application, x), x.amax(1, keepdim=True))


def test_the_unrolled_maximum_of_two_chunks_takes_every_element():
    x = _rows_whose_maximum_is_element_3()
    torch.testing.assert_close(_run(_unrolled_maximum, x, other=float("-inf")), x.amax(1, keepdim=True))


def test_the_unrolled_maximum_reads_the_second_chunks_other_as_ninetoothed_does():
    x = _rows_whose_maximum_is_element_3()
    padded = F.pad(x, (0, 1))  # the second chunk's lane 3 reads other = 0
    expected = torch.maximum(padded[:, :4], padded[:, 4:]).amax(1, keepdim=True)
    torch.testing.assert_close(_run(_unrolled_maximum, x), expected)


def test_the_unrolled_sum_of_two_chunks_adds_every_element():
    def application(x, out):
        acc = ntl.exp(x[0, 0])
        acc += ntl.exp(x[0, 1])
        out = ntl.sum(acc, 1, keep_dims=True)  # noqa: F841

    x = torch.randn(3, 7)
    torch.testing.assert_close(_run(application, x, other=float("-inf")), x.exp().sum(1, keepdim=True))


def test_a_broadcast_of_two_padded_vectors_keeps_the_lanes_outside_either_out():
    def arrangement(x, y, out):
        return x.tile((4,)), y.tile((4,)), out.tile((4,))

    def application(x, y, out):
        out = ntl.max(ntl.expand_dims(x, 1) + ntl.expand_dims(y, 0), 1)  # noqa: F841

    x = -(torch.rand(3) + 1)
    y = -(torch.rand(3) + 1)
    out = torch.empty(3)
    ntsym.make(arrangement, application, (Tensor(1), Tensor(1), Tensor(1)))(x, y, out)
    torch.testing.assert_close(out, (x[:, None] + y[None, :]).amax(1))


def _two_lengths(application):
    def arrangement(x, z, out):
        return x.tile((1, -1)), z.tile((1, -1)), out.tile((1, 1))  # blocks of 8 for 5 and 7

    x = -(torch.rand(1, 5) + 1)
    z = -(torch.rand(1, 7) + 1)
    out = torch.empty(1, 1)
    ntsym.make(arrangement, application, (Tensor(2), Tensor(2), Tensor(2)))(x, z, out)
    return out, F.pad(x, (0, 2)) + z  # lanes 5 and 6: x's other (0) with z's elements


def test_two_tensors_of_different_lengths_in_one_block_sum_over_the_longer():
    def application(x, z, out):
        out = ntl.sum(x + z, 1, keep_dims=True)  # noqa: F841

    out, combined = _two_lengths(application)
    torch.testing.assert_close(out, combined.sum().reshape(1, 1))


def test_two_tensors_of_different_lengths_in_one_block_max_over_the_longer():
    def application(x, z, out):
        out = ntl.max(x + z, 1, keep_dims=True)  # noqa: F841

    out, combined = _two_lengths(application)
    torch.testing.assert_close(out, combined.max().reshape(1, 1))


def _broadcast(application, length):
    """x (1, 5) in a block of 8 against y (1, length) in blocks of 1 that
    broadcast along x's row: lanes 5..7 lie outside x, whatever y holds."""
    def arrangement(x, y, out):
        return x.tile((1, -1)), y.tile((1, 1)), out.tile((1, 1))

    x = -(torch.rand(1, 5) + 1)
    y = torch.full((1, length), -0.25)
    out = torch.empty(1, 1)
    ntsym.make(arrangement, application, (Tensor(2), Tensor(2), Tensor(2)))(x, y, out)
    return out, x + y[:, :1]


def test_a_block_of_one_broadcast_along_a_row_keeps_the_lanes_outside_the_row_out():
    def application(x, y, out):
        out = ntl.max(x + y, 1, keep_dims=True)  # noqa: F841

    out, combined = _broadcast(application, 1)
    torch.testing.assert_close(out, combined.max().reshape(1, 1))


@pytest.mark.parametrize("lengths", [(5, 7), (7, 5), (4, 4), (5, 8)])
def test_two_vectors_of_different_lengths_in_one_block_sum_as_ninetoothed(lengths):
    """A sum over x + z and x * z: the lanes inside either operand count, the
    other's ``other`` (0) standing in for its missing elements."""
    def arrangement(x, z, out, prod):
        return x.tile((-1,)), z.tile((-1,)), out.tile((1,)), prod.tile((1,))

    def application(x, z, out, prod):
        out = ntl.sum(x + z, 0)  # noqa: F841
        prod = ntl.sum(x * z, 0)  # noqa: F841

    x, z = torch.randn(lengths[0]), torch.randn(lengths[1])
    out, prod = torch.empty(1), torch.empty(1)
    ntsym.make(arrangement, application, tuple(Tensor(1) for _ in range(4)))(x, z, out, prod)
    n = max(lengths)
    xp, zp = F.pad(x, (0, n - len(x))), F.pad(z, (0, n - len(z)))
    torch.testing.assert_close(out, (xp + zp).sum().reshape(1))
    torch.testing.assert_close(prod, (xp * zp).sum().reshape(1))


def _chunks_and_a_shorter_vector(application, z_block):
    """x (1, 7) in chunks of 4 (the loop's), z (1, 3) in a block of 4 read
    in every iteration: lane 3 of chunk 0 holds x[0, 3] and z's other (0),
    an element of x + z as outside a loop."""
    def arrangement(x, z, out):
        return x.tile((1, 4)).tile((1, -1)), z.tile((1, z_block)), out.tile((1, 1))

    x = torch.tensor([[-5.0, -5.0, -5.0, -1.0, -5.0, -5.0, -4.0]])
    z = torch.tensor([[-1.0, -2.0, -1.5]])
    out = torch.empty(1, 1)
    ntsym.make(arrangement, application, (Tensor(2), Tensor(2), Tensor(2)))(x, z, out)
    chunks = F.pad(x, (0, 1)).reshape(2, 4) + F.pad(z, (0, 1))
    return out, chunks[:, :4].flatten()[:7]  # lane 3 of chunk 1 lies outside both


def _summed_over_chunks(x, z, out):
    acc = ntl.zeros((1, 4), ntl.float32)
    for k in range(x.shape[1]):
        acc += x[0, k] + z
    out = ntl.sum(acc, 1, keep_dims=True)  # noqa: F841


def _maximum_over_chunks(x, z, out):
    acc = ntl.full((1, 4), -100.0, ntl.float32)
    for k in range(x.shape[1]):
        acc = ntl.maximum(acc, x[0, k] * 2.0 + z)
    out = ntl.max(acc, 1, keep_dims=True)  # noqa: F841


def test_a_loop_over_chunks_plus_a_shorter_vector_keeps_the_chunks_elements():
    out, combined = _chunks_and_a_shorter_vector(_summed_over_chunks, 4)
    torch.testing.assert_close(out, combined.sum().reshape(1, 1))
    out, _ = _chunks_and_a_shorter_vector(_maximum_over_chunks, 4)
    torch.testing.assert_close(out, torch.tensor([[-2.0]]))  # x[0, 3] * 2 + 0, lane 3 of chunk 0


def test_a_loop_over_chunks_plus_a_vector_in_a_block_the_launch_decides_is_refused():
    """z's block (next_power_of_2 of its length) may equal the chunk's 4 (a
    lane past z's end inside the chunk is then an element) or be 1 (z then
    broadcasts): a carried value cannot follow both, so it is refused with
    the fix, where it kept z's mask and dropped x[0, 3] (-38, not -37)."""
    with pytest.raises(ntsym.ApplicationError, match=r"`acc` carries.*block whose extent the launch decides"):
        _chunks_and_a_shorter_vector(_summed_over_chunks, -1)


def test_a_tensor_filling_its_block_combined_with_a_shorter_one_keeps_its_elements():
    """z of compile-time shape (8,) fills its block of 8 (no mask); x holds 5
    of 8: lanes 5-7 are z's elements with x's other, as where z's shape is
    given at launch."""
    def arrangement(x, z, out):
        return x.tile((-1,)), z.tile((8,)), out.tile((1,))

    def application(x, z, out):
        out = ntl.sum(x + z, 0)  # noqa: F841

    x, z = torch.randn(5), torch.randn(8)
    out = torch.empty(1)
    ntsym.make(arrangement, application, (Tensor(shape=(5,)), Tensor(shape=(8,)), Tensor(1)))(x, z, out)
    torch.testing.assert_close(out, (F.pad(x, (0, 3)) + z).sum().reshape(1))


@pytest.mark.parametrize("shape", [(1, 8), (4, 8)])
def test_a_2d_tile_beside_a_tensor_filling_its_block_keeps_its_elements(shape):
    """x (3, 5) in a block chosen at launch, w of compile-time shape filling
    its block: where the blocks' extents match (the columns; the rows of a
    (4, 8) w) a lane inside w is an element; w's one row broadcasts."""
    def arrangement(x, w, out):
        return x.tile((-1, -1)), w.tile((-1, -1)), out.tile((1, 1))

    def application(x, w, out):
        out = ntl.sum(ntl.sum(x + w, 1, keep_dims=True), 0, keep_dims=True)  # noqa: F841

    x, w = torch.randn(3, 5), torch.randn(*shape)
    out = torch.empty(1, 1)
    ntsym.make(arrangement, application, (Tensor(2), Tensor(shape=shape), Tensor(2)))(x, w, out)
    padded = F.pad(x, (0, 3, 0, shape[0] - 3 if shape[0] > 1 else 0))
    torch.testing.assert_close(out, (padded + w).sum().reshape(1, 1))


def test_a_block_of_one_beside_a_full_row_keeps_the_lanes_outside_the_row_out():
    """y (1, 1) of compile-time shape broadcasts along x's row of 5 in a
    block of 8: its one lane is no element of the row's lanes 5-7."""
    def arrangement(x, y, out):
        return x.tile((1, -1)), y.tile((1, 1)), out.tile((1, 1))

    def application(x, y, out):
        out = ntl.max(x + y, 1, keep_dims=True)  # noqa: F841

    x = -(torch.rand(1, 5) + 1)
    y = torch.full((1, 1), -0.25)
    out = torch.empty(1, 1)
    ntsym.make(arrangement, application, (Tensor(shape=(1, 5)), Tensor(shape=(1, 1)), Tensor(2)))(x, y, out)
    torch.testing.assert_close(out, (x + y).max().reshape(1, 1))


def _summed_through_a_temporary(x, z, out):
    acc = ntl.zeros((1, 4), ntl.float32)
    for k in range(x.shape[1]):
        t = x[0, k] + z
        acc += t
    out = ntl.sum(acc, 1, keep_dims=True)  # noqa: F841


def test_a_loop_over_chunks_plus_a_shorter_vector_through_a_temporary_keeps_the_chunks_elements():
    out, combined = _chunks_and_a_shorter_vector(_summed_through_a_temporary, 4)
    torch.testing.assert_close(out, combined.sum().reshape(1, 1))


def _chunks_beside_a_full_block(x, w, out):
    return x.tile((1, 4)).tile((1, -1)), w.tile((1, 4)), out.tile((1,))


def _beside_w(application, w_shape=None):
    """Runs ``application`` over rows of 11 in chunks of 4 (x's ``other`` 5)
    beside ``w``, a full block (shaped at launch, or ``w_shape`` at make);
    returns the output and the row's values beside w, the lane past the row
    -inf."""
    x, w = -(torch.rand(3, 11) + 1.0), torch.rand(3, 4)
    out = torch.empty(3)
    w_tensor = Tensor(2) if w_shape is None else Tensor(shape=w_shape)
    ntsym.make(_chunks_beside_a_full_block, application, (Tensor(2, other=5.0), w_tensor, Tensor(1)))(x, w, out)
    return out, (F.pad(x, (0, 1), value=float("-inf")).reshape(3, 3, 4) + w[:, None, :]).reshape(3, 12)


def _max_direct(x, w, out):
    acc = ntl.full((1, 4), -1000.0, dtype=ntl.float32)
    for k in range(x.shape[1]):
        acc = ntl.maximum(acc, x[0, k] + w)
    out = ntl.max(acc)  # noqa: F841


def _max_through_a_temporary(x, w, out):
    acc = ntl.full((1, 4), -1000.0, dtype=ntl.float32)
    for k in range(x.shape[1]):
        t = x[0, k] + w
        acc = ntl.maximum(acc, t)
    out = ntl.max(acc)  # noqa: F841


def _plus(a, b):
    return a + b


def _max_through_a_helper(x, w, out):
    acc = ntl.full((1, 4), -1000.0, dtype=ntl.float32)
    for k in range(x.shape[1]):
        acc = ntl.maximum(acc, _plus(x[0, k], w))
    out = ntl.max(acc)  # noqa: F841


def _step(acc, chunk, w):
    t = chunk + w
    return ntl.maximum(acc, t)


def _max_through_a_helper_with_a_temporary(x, w, out):
    acc = ntl.full((1, 4), -1000.0, dtype=ntl.float32)
    for k in range(x.shape[1]):
        acc = _step(acc, x[0, k], w)
    out = ntl.max(acc)  # noqa: F841


def _max_through_a_tuple(x, w, out):
    acc = ntl.full((1, 4), -1000.0, dtype=ntl.float32)
    for k in range(x.shape[1]):
        t, u = x[0, k] + w, w
        acc = ntl.maximum(acc, t)
    out = ntl.max(acc)  # noqa: F841


def _max_through_a_branch(x, w, out):
    acc = ntl.full((1, 4), -1000.0, dtype=ntl.float32)
    for k in range(x.shape[1]):
        if k > 100:
            t = x[0, k] + w * 2.0
        else:
            t = x[0, k] + w
        acc = ntl.maximum(acc, t)
    out = ntl.max(acc)  # noqa: F841


@pytest.mark.parametrize("application", [_max_direct, _max_through_a_temporary, _max_through_a_helper,
                                         _max_through_a_helper_with_a_temporary, _max_through_a_tuple,
                                         _max_through_a_branch])
def test_a_carried_value_leaves_out_the_lanes_past_the_row_however_it_is_spelled(application):
    """Rows of 11 in chunks of 4 beside a full block of ``w``: outside a loop
    a lane inside ``w`` is an element of ``x[0, k] + w``, but the running max
    keeps its value on the lanes outside this iteration's chunk, whether the
    sum is written in the call, through a temporary (assigned alone, in a
    tuple or on both paths of an ``if``), or in a helper.  Through a
    temporary (and a helper's) the lane past the row was taken, holding x's
    ``other`` (5) plus w: 5.2 where the row's maximum is -0.9."""
    out, values = _beside_w(application)
    torch.testing.assert_close(out, values.amax(1))


def _max_through_a_second_name(x, w, out):
    acc = ntl.full((1, 4), -1000.0, dtype=ntl.float32)
    for k in range(x.shape[1]):
        new = ntl.maximum(acc, x[0, k] + w)
        acc = new
    out = ntl.max(acc)  # noqa: F841


def _max_twice_an_iteration(x, w, out):
    acc = ntl.full((1, 4), -1000.0, dtype=ntl.float32)
    for k in range(x.shape[1]):
        acc = ntl.maximum(acc, x[0, k] + w)
        acc = ntl.maximum(acc, x[0, k] + w)
    out = ntl.max(acc)  # noqa: F841


def _online_logsumexp(x, w, out):
    m = ntl.full((1, 4), -1000.0, dtype=ntl.float32)
    s = ntl.zeros((1, 4), dtype=ntl.float32)
    for k in range(x.shape[1]):
        m_new = ntl.maximum(m, x[0, k] + w)
        s = s * ntl.exp(m - m_new) + ntl.exp(x[0, k] + w - m_new)
        m = m_new
    top = ntl.max(m)
    out = top + ntl.log(ntl.sum(s * ntl.exp(m - top)))  # noqa: F841


@pytest.mark.parametrize("w_shape", [None, (3, 4)])
@pytest.mark.parametrize("application, reduce", [(_max_through_a_second_name, "max"), (_max_twice_an_iteration, "max"),
                                                 (_online_logsumexp, "logsumexp")])
def test_a_value_carried_through_another_name_or_updated_twice_leaves_out_the_lanes_past_the_row(
        application, reduce, w_shape):
    """A name is carried where its value reads its value at the iteration's
    head, through names assigned since (``new = maximum(acc, t); acc = new``,
    ``m = m_new``) or a first update in the same iteration.  With a full
    block of ``w`` of compile-time shape beside the chunk, these took the lane
    past the row (x's ``other`` 5 plus w: 5.2 for a maximum of -0.9); with
    ``w`` shaped at launch they were refused."""
    out, values = _beside_w(application, w_shape)
    torch.testing.assert_close(out, values.amax(1) if reduce == "max" else torch.logsumexp(values, 1))


def _sum_of_a_temporary_set_in_an_inner_loop(x, w, out):
    acc = ntl.zeros((1, 4), dtype=ntl.float32)
    for k in range(x.shape[1]):
        t = w * 0.0
        for j in range(1):
            t = x[0, k] + w
        acc += t
    out = ntl.sum(acc)  # noqa: F841


def test_a_temporary_an_inner_loop_may_set_is_refused_before_a_reduction():
    """After an inner loop (which may run no iteration) ``t`` holds either
    ``w * 0`` or this chunk beside ``w``: the lanes past the row differ
    between the two, so the sum after the outer loop is refused; it took the
    lane past the row (x's ``other`` plus w)."""
    with pytest.raises(ntsym.ApplicationError, match="differ between the paths"):
        ntsym.make(_chunks_beside_a_full_block, _sum_of_a_temporary_set_in_an_inner_loop,
                   (Tensor(2, other=5.0), Tensor(2), Tensor(1)))


def _rows_in_chunks(x, out):
    return x.tile((1, 4)).tile((1, -1)), out.tile((1,))


def _max_of_the_head_value_saved_before_a_reset(x, out):
    acc = ntl.full((1, 4), -1000.0, dtype=ntl.float32)
    for k in range(x.shape[1]):
        prev = acc
        acc = x[0, k]
        acc = ntl.maximum(acc, prev)
    out = ntl.max(acc)  # noqa: F841


@pytest.mark.parametrize("other", [None, float("-inf"), 5.0])
def test_a_name_set_afresh_is_not_carried_by_what_it_was_saved_as(other):
    """``acc = x[0, k]`` sets ``acc`` afresh: the update after it reads the
    head value only through ``prev``, and ``acc`` no longer holds it, so a
    select keeping ``acc`` on the lanes past the row would keep the chunk's
    padding (and lose the row's earlier elements there).  Refused, never that
    wrong result."""
    x = -(torch.rand(3, 11) + 1.0)
    x[:, 7] = -0.25  # the row's maximum, on lane 3
    out = torch.empty(3)
    try:
        ntsym.make(_rows_in_chunks, _max_of_the_head_value_saved_before_a_reset, (Tensor(2, other=other), Tensor(1)))(
            x, out)
    except ntsym.ApplicationError as error:
        assert "do not settle" in str(error) or "differ between the paths" in str(error)
        return
    torch.testing.assert_close(out, x.amax(1))


def _max_of_the_head_value_saved_before_a_reset_beside_w(x, w, out):
    acc = ntl.full((1, 4), -1000.0, dtype=ntl.float32)
    for k in range(x.shape[1]):
        prev = acc
        acc = x[0, k] + w
        acc = ntl.maximum(acc, prev)
    out = ntl.max(acc)  # noqa: F841


def _max_through_a_cycle_of_names(x, w, out):
    a = ntl.full((1, 4), -1000.0, dtype=ntl.float32)
    b = ntl.full((1, 4), -1000.0, dtype=ntl.float32)
    for k in range(x.shape[1]):
        t = a
        a = b
        b = ntl.maximum(t, x[0, k] + w)
    out = ntl.max(ntl.maximum(a, b))  # noqa: F841


@pytest.mark.parametrize("w_shape", [None, (3, 4)])
@pytest.mark.parametrize("application", [_max_of_the_head_value_saved_before_a_reset_beside_w,
                                         _max_through_a_cycle_of_names])
def test_a_carried_name_given_a_value_built_from_carried_values_keeps_the_lanes_past_the_row_out(application, w_shape):
    """``acc`` (or ``b``) is no update of its own head value, but its value
    reads the values the loop carries and reaches the next iteration: the
    lanes past the row beside a full block of ``w`` are not its elements.
    With ``w`` of compile-time shape they were (x's ``other`` 5 plus w: 5.9
    for a maximum of -0.8); refused now, or right."""
    try:
        out, values = _beside_w(application, w_shape)
    except ntsym.ApplicationError as error:
        assert "do not settle" in str(error) or "differ between the paths" in str(error) or "holds lanes" in str(error)
        return
    torch.testing.assert_close(out, values.amax(1))


def _pair_of(a, b):
    return a, b


def _last_chunk_beside_the_head_value(x, out):
    acc = ntl.zeros((1, 4), dtype=ntl.float32)
    for k in range(x.shape[1]):
        t, u = x[0, k], acc  # `t` reads no head value; `u` does
        acc = t
    out = ntl.sum(acc)  # noqa: F841


def _last_chunk_beside_the_head_value_returned(x, out):
    acc = ntl.zeros((1, 4), dtype=ntl.float32)
    for k in range(x.shape[1]):
        t, u = _pair_of(x[0, k], acc)
        acc = t
    out = ntl.sum(acc)  # noqa: F841


@pytest.mark.parametrize("application", [_last_chunk_beside_the_head_value,
                                         _last_chunk_beside_the_head_value_returned])
def test_each_name_of_a_tuple_reads_only_its_own_elements_head_values(application):
    """``acc = t`` where ``t`` came from a tuple beside ``acc`` itself: ``acc``
    is set afresh to the last chunk, not carried (a select would keep the
    previous chunk's element on the lane past the row: -100 here)."""
    x = -(torch.rand(3, 11) + 1.0)
    x[:, 7] = -100.0
    out = torch.empty(3)
    ntsym.make(_rows_in_chunks, application, (Tensor(2), Tensor(1)))(x, out)
    torch.testing.assert_close(out, x[:, 8:].sum(1))


def _max_annotated(x, w, out):
    acc = ntl.full((1, 4), -1000.0, dtype=ntl.float32)
    for k in range(x.shape[1]):
        acc: ntl.tensor = ntl.maximum(acc, x[0, k] + w)
    out = ntl.max(acc)  # noqa: F841


def _logsumexp_updated_as_a_tuple(x, w, out):
    m = ntl.full((1, 4), -1000.0, dtype=ntl.float32)
    s = ntl.zeros((1, 4), dtype=ntl.float32)
    for k in range(x.shape[1]):
        m_new = ntl.maximum(m, x[0, k] + w)
        s_new = s * ntl.exp(m - m_new) + ntl.exp(x[0, k] + w - m_new)
        m, s = m_new, s_new
    top = ntl.max(m)
    out = top + ntl.log(ntl.sum(s * ntl.exp(m - top)))  # noqa: F841


def _max_after_an_inner_loop_that_may_reset(x, w, out):
    acc = ntl.full((1, 4), -1000.0, dtype=ntl.float32)
    for k in range(x.shape[1]):
        for j in range(x.shape[1] - 3):  # no iteration at these sizes
            acc = x[0, k] + w
        acc = ntl.maximum(acc, x[0, k] + w)
    out = ntl.max(acc)  # noqa: F841


def _max_of_the_head_value_saved_in_an_inner_loop(x, w, out):
    acc = ntl.full((1, 4), -1000.0, dtype=ntl.float32)
    for k in range(x.shape[1]):
        for j in range(1):
            prev = acc
            acc = x[0, k] + w
            acc = ntl.maximum(acc, prev)
    out = ntl.max(acc)  # noqa: F841


@pytest.mark.parametrize("w_shape", [None, (3, 4)])
@pytest.mark.parametrize("application, reduce", [
    (_max_annotated, "max"), (_logsumexp_updated_as_a_tuple, "logsumexp"),
    (_max_after_an_inner_loop_that_may_reset, "max"), (_max_of_the_head_value_saved_in_an_inner_loop, "max")])
def test_other_spellings_of_a_carried_value_never_take_the_lanes_past_the_row(application, reduce, w_shape):
    """An annotated assignment is carried as a plain one; a tuple of names the
    loop carries, an inner loop that may or may not set the name afresh, and
    a fresh value inside an inner loop combined with the saved head value are
    refused where ntsym does not follow them.  Beside a ``w`` of compile-time
    shape each took the lane past the row (x's ``other`` plus w)."""
    try:
        out, values = _beside_w(application, w_shape)
    except ntsym.ApplicationError as error:
        assert application is not _max_annotated, str(error)
        return
    torch.testing.assert_close(out, values.amax(1) if reduce == "max" else torch.logsumexp(values, 1))


def _products_of_successive_chunks(x, out):
    acc = ntl.zeros((1, 4), dtype=ntl.float32)
    prev = ntl.zeros((1, 4), dtype=ntl.float32)
    for k in range(x.shape[1]):
        acc += prev * x[0, k]
        prev = x[0, k]
    out = ntl.sum(acc)  # noqa: F841


@pytest.mark.parametrize("other", [None, 5.0])
def test_a_sum_of_products_of_successive_chunks(other):
    """``prev`` holds the previous iteration's chunk, its mask stale at the
    loop's head: the sum keeps the carried value outside this chunk."""
    x = -(torch.rand(3, 11) + 1.0)
    out = torch.empty(3)
    ntsym.make(_rows_in_chunks, _products_of_successive_chunks, (Tensor(2, other=other), Tensor(1)))(x, out)
    chunks = F.pad(x, (0, 1)).reshape(3, 3, 4)
    torch.testing.assert_close(out, (chunks[:, :-1] * chunks[:, 1:]).sum((1, 2)))


def _keep_second(a, b):
    return b


def _last_chunk_through_a_helper(x, out):
    acc = ntl.zeros((1, 4), dtype=ntl.float32)
    for k in range(x.shape[1]):
        acc = _keep_second(acc, x[0, k])
    out = ntl.sum(acc)  # noqa: F841


def _last_chunk_through_a_part_of_a_pair(x, out):
    acc = ntl.zeros((1, 4), dtype=ntl.float32)
    for k in range(x.shape[1]):
        acc = _pair_of(acc, x[0, k])[1]
    out = ntl.sum(acc)  # noqa: F841


@pytest.mark.parametrize("application", [_last_chunk_through_a_helper, _last_chunk_through_a_part_of_a_pair])
def test_a_helper_given_the_name_but_returning_the_chunk_sets_it_afresh(application):
    """What an inlined call reads of the loop's head values is what it
    returns: ``acc`` is set afresh, not carried (a select kept the previous
    chunk's element on the lane past the row: -100 here)."""
    x = -(torch.rand(3, 11) + 1.0)
    x[:, 7] = -100.0
    out = torch.empty(3)
    ntsym.make(_rows_in_chunks, application, (Tensor(2), Tensor(1)))(x, out)
    torch.testing.assert_close(out, x[:, 8:].sum(1))


def _head_value_read_in_a_sibling_branch(x, out):
    acc = ntl.zeros((1, 4), dtype=ntl.float32)
    t = ntl.zeros((1, 4), dtype=ntl.float32)
    for k in range(x.shape[1]):
        if k > 100:  # not taken
            t = acc
        else:
            acc = t + x[0, k]
    out = ntl.sum(acc)  # noqa: F841


def _head_value_read_on_a_branch_not_taken(x, out):
    acc = ntl.zeros((1, 4), dtype=ntl.float32)
    t = ntl.zeros((1, 4), dtype=ntl.float32)
    for k in range(x.shape[1]):
        if k > 100:  # not taken
            t = acc
        acc = t + x[0, k]
    out = ntl.sum(acc)  # noqa: F841


@pytest.mark.parametrize("application", [_head_value_read_in_a_sibling_branch, _head_value_read_on_a_branch_not_taken])
def test_a_head_value_read_on_some_paths_only_does_not_make_the_name_carried(application):
    """``t = acc`` on a branch: on the path taken ``acc = t + x[0, k]`` sets
    ``acc`` afresh; a select on every path kept the previous chunk's element
    on the lane past the row (-100).  What a branch sets holds on its own
    path, and a name it set reads the head values of no other name for
    certain after it: refused, or right."""
    x = -(torch.rand(3, 11) + 1.0)
    x[:, 7] = -100.0
    out = torch.empty(3)
    try:
        ntsym.make(_rows_in_chunks, application, (Tensor(2), Tensor(1)))(x, out)
    except ntsym.ApplicationError as error:
        assert "differ between the paths" in str(error) or "do not settle" in str(error)
        return
    torch.testing.assert_close(out, x[:, 8:].sum(1))


def _sum_and_its_chunk(chunk, w):
    s = chunk + w
    return chunk, s


def _max_of_a_part_of_a_returned_pair(x, w, out):
    acc = ntl.full((1, 4), -1000.0, dtype=ntl.float32)
    for k in range(x.shape[1]):
        acc = ntl.maximum(acc, _sum_and_its_chunk(x[0, k], w)[1])
    out = ntl.max(acc)  # noqa: F841


@pytest.mark.parametrize("w_shape", [None, (3, 4)])
def test_a_part_of_a_pair_a_helper_returns_is_read_where_lanes_meet(w_shape):
    """``helper(...)[1]`` in a carried expression reads the returned name's
    lanes where operands meet, as the name unpacked would be: the lane past
    the row stays out (it was taken: x's ``other`` plus w)."""
    out, values = _beside_w(_max_of_a_part_of_a_returned_pair, w_shape)
    torch.testing.assert_close(out, values.amax(1))
