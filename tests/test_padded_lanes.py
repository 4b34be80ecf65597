"""Lanes outside the arranged tensor never reach an operation that mixes
lanes (reductions, scans, sort, flip, dot, values a loop carries), whatever
the form of the operand; padding positions of ``pad()`` are elements and are
mixed in.  Each case is built from the construct at tiny sizes and compared
with torch."""

import pytest
import torch
import torch.nn.functional as F

import ntsym
import ntsym.language as ntl
from ntsym import Tensor
from tests.sources import application_from


def _rows(block):
    def arrangement(x, out):
        return x.tile((1, block)), out.tile((1, block))

    return arrangement


def _row_kernel(application, block=8, other=None, dtype=None):
    """Rows of 5 elements in a block of ``block``: 3 lanes past the row."""
    return ntsym.make(_rows(block), application, (Tensor(2, other=other), Tensor(2)))


def _negatives():
    return -(torch.rand(3, 5) + 1.0)


def _first_lane(value):
    """A row result written to the first lane of the output row."""
    return value


def test_max_of_a_cast_reads_through_the_mask():
    def app(x, out):
        out = ntl.max(ntl.cast(x, ntl.float32), axis=1, keep_dims=True) + ntl.zeros(out.shape, ntl.float32)  # noqa: F841

    x = _negatives()
    out = torch.empty(3, 5)
    _row_kernel(app)(x, out)
    torch.testing.assert_close(out, x.max(1, keepdim=True).values.expand(3, 5))


def test_argmax_of_a_cast_points_inside_the_row():
    def app(x, out):
        out = ntl.argmax(ntl.cast(x, ntl.float32), axis=1, keep_dims=True) + ntl.zeros(out.shape, ntl.int32)  # noqa: F841

    x = _negatives()
    out = torch.empty(3, 5, dtype=torch.int32)
    ntsym.make(_rows(8), app, (Tensor(2), Tensor(2)))(x, out)
    torch.testing.assert_close(out, x.argmax(1, keepdim=True).to(torch.int32).expand(3, 5))


def test_sum_of_exp_of_a_cast_adds_nothing_past_the_row():
    def app(x, out):
        out = ntl.sum(ntl.exp(ntl.cast(x, ntl.float32)), axis=1, keep_dims=True) + ntl.zeros(out.shape, ntl.float32)  # noqa: F841

    x = torch.randn(3, 5)
    out = torch.empty(3, 5)
    _row_kernel(app)(x, out)
    torch.testing.assert_close(out, x.exp().sum(1, keepdim=True).expand(3, 5))


def test_sum_of_a_comparison_counts_the_row_only():
    def app(x, out):
        out = ntl.sum(ntl.where(x > -100.0, 1.0, 0.0), axis=1, keep_dims=True) + ntl.zeros(out.shape, ntl.float32)  # noqa: F841

    x = torch.randn(3, 5)
    out = torch.empty(3, 5)
    _row_kernel(app)(x, out)
    torch.testing.assert_close(out, torch.full((3, 5), 5.0))


def test_max_of_the_sum_of_two_padded_tiles():
    def arrangement(x, z, out):
        return x.tile((1, 8)), z.tile((1, 8)), out.tile((1, 8))

    def app(x, z, out):
        out = ntl.max(x + z, axis=1, keep_dims=True) + ntl.zeros(out.shape, ntl.float32)  # noqa: F841

    x, z = _negatives(), _negatives()
    out = torch.empty(3, 5)
    ntsym.make(arrangement, app, (Tensor(2), Tensor(2), Tensor(2)))(x, z, out)
    torch.testing.assert_close(out, (x + z).max(1, keepdim=True).values.expand(3, 5))


def _padded(application):
    def arrangement(x, out):
        return x.pad(((1, 1),)).tile((4,)), out.tile((1,))

    return ntsym.make(arrangement, application, (Tensor(1, other=5.0), Tensor(1)))


def test_a_copy_of_pad_positions_reads_other():
    def arrangement(x, out):
        return x.pad(((1, 1),)).tile((4,)), out.tile((4,))

    def copy(x, out):
        out = x  # noqa: F841

    out = torch.empty(8)
    ntsym.make(arrangement, copy, (Tensor(1, other=5.0), Tensor(1)))(torch.ones(6), out)
    torch.testing.assert_close(out, F.pad(torch.ones(6), (1, 1), value=5.0))


@pytest.mark.parametrize("length", [6, 5])
def test_reductions_include_pad_positions_and_nothing_past_the_padded_extent(length):
    def total(x, out):
        out = ntl.sum(x)  # noqa: F841

    padded = F.pad(torch.ones(length), (1, 1), value=5.0)
    tiles = -(-padded.numel() // 4)
    out = torch.empty(tiles)
    _padded(total)(torch.ones(length), out)
    reference = F.pad(padded, (0, 4 * tiles - padded.numel())).reshape(tiles, 4).sum(1)
    torch.testing.assert_close(out, reference)


def test_flip_keeps_the_row_in_place():
    def app(x, out):
        out = ntl.flip(x, 1)  # noqa: F841

    x = torch.randn(3, 5)
    out = torch.empty(3, 5)
    _row_kernel(app)(x, out)
    torch.testing.assert_close(out, x.flip(1))


@pytest.mark.parametrize("descending", [False, True])
def test_sort_leaves_padding_past_the_row(descending):
    def app(x, out):
        out = ntl.sort(x, 1, False)  # noqa: F841

    def app_descending(x, out):
        out = ntl.sort(x, 1, True)  # noqa: F841

    x = torch.randn(3, 5)
    out = torch.empty(3, 5)
    _row_kernel(app_descending if descending else app)(x, out)
    torch.testing.assert_close(out, x.sort(1, descending=descending).values)


def test_reverse_cumprod_starts_at_the_row_end():
    def app(x, out):
        out = ntl.cumprod(x, 1, reverse=True)  # noqa: F841

    x = torch.rand(3, 5) + 0.5
    out = torch.empty(3, 5)
    _row_kernel(app)(x, out)
    torch.testing.assert_close(out, x.flip(1).cumprod(1).flip(1))


def test_xor_sum_skips_lanes_that_read_other():
    def app(x, out):
        out = ntl.xor_sum(x, 1, keep_dims=True) + ntl.zeros(out.shape, ntl.int32)  # noqa: F841

    x = torch.randint(0, 64, (3, 5), dtype=torch.int32)
    out = torch.empty(3, 5, dtype=torch.int32)
    ntsym.make(_rows(8), app, (Tensor(2, other=7), Tensor(2)))(x, out)
    reference = x[:, 0]
    for j in range(1, 5):
        reference = reference ^ x[:, j]
    torch.testing.assert_close(out, reference[:, None].expand(3, 5))


def _chunks(application):
    def arrangement(x, out, B=ntsym.block_size(lower_bound=4)):
        return x.tile((1, B)).tile((1, -1)), out.tile((1,))

    return ntsym.make(arrangement, application, (Tensor(2), Tensor(1)))


def test_a_running_maximum_over_row_chunks():
    def app(x, out):
        best = ntl.full((1, x.dtype.shape[1]), float("-inf"), dtype=ntl.float32)  # x[0, k] is a (1, B) tile
        for k in range(x.shape[1]):
            best = ntl.maximum(best, x[0, k])
        out = ntl.max(best)  # noqa: F841

    x = -(torch.rand(3, 11) + 1.0)
    out = torch.empty(3)
    _chunks(app)(x, out, B=4)
    torch.testing.assert_close(out, x.max(1).values)


def test_an_accumulated_exp_over_row_chunks():
    def app(x, out):
        acc = ntl.zeros((1, x.dtype.shape[1]), dtype=ntl.float32)  # x[0, k] is a (1, B) tile
        for k in range(x.shape[1]):
            acc += ntl.exp(x[0, k])
        out = ntl.sum(acc)  # noqa: F841

    x = torch.randn(3, 11)
    out = torch.empty(3)
    _chunks(app)(x, out, B=4)
    torch.testing.assert_close(out, x.exp().sum(1))


def test_an_integer_max_stays_exact():
    def app(x, out):
        out = ntl.max(x, axis=1, keep_dims=True) + ntl.zeros(out.shape, ntl.int32)  # noqa: F841

    x = -torch.randint(2**25, 2**30, (3, 5), dtype=torch.int32)
    out = torch.empty(3, 5, dtype=torch.int32)
    ntsym.make(_rows(8), app, (Tensor(2), Tensor(2)))(x, out)
    torch.testing.assert_close(out, x.max(1, keepdim=True).values.expand(3, 5))


def test_a_carried_value_read_before_the_iteration_assigns_it():
    # Chunks of 3 in blocks of 4: the fourth lane is outside in every
    # iteration, and `acc` takes it (other=5) from the first iteration on;
    # the sum at the top of the next iteration must not read it.
    def arrangement(x, out):
        return x.tile((1, 3)).tile((1, -1)), out.tile((1,))

    def app(x, out):
        acc = ntl.zeros((1, x.dtype.shape[1]), dtype=ntl.float32)  # x[0, k] is a (1, B) tile
        total = 0.0
        for k in range(x.shape[1]):
            total += ntl.sum(acc)
            acc = acc + x[0, k]
        out = total  # noqa: F841

    x = torch.randn(2, 9)
    out = torch.empty(2)
    ntsym.make(arrangement, app, (Tensor(2, other=5.0), Tensor(1)))(x, out)
    chunks = x.reshape(2, 3, 3).sum(2)
    torch.testing.assert_close(out, chunks[:, 0] * 2 + chunks[:, 1])


def test_a_reduction_after_a_reshape_reads_through_the_reshaped_mask():
    # A row of 5 (other=5) in a block of 8, as two halves of 4: the second
    # half holds one element and three lanes past the row.
    def app(x, out):
        halves = ntl.sum(ntl.reshape(x, (2, 4)), axis=1)
        out = ntl.reshape(ntl.max(halves[None, :], axis=1, keep_dims=True), (1, 1)) + ntl.zeros(out.shape, ntl.float32)  # noqa: F841

    x = torch.randn(3, 5)
    out = torch.empty(3, 5)
    _row_kernel(app, other=5.0)(x, out)
    expected = torch.maximum(x[:, :4].sum(1), x[:, 4])
    torch.testing.assert_close(out, expected[:, None].expand(3, 5))


def test_a_reduction_after_a_reshape_that_may_reorder_reads_in_order_through_the_mask():
    # A reshape allowed to reorder, of lanes outside: emitted in order, its
    # mask reshaped alike (other=5 would otherwise enter the second half).
    def app(x, out):
        halves = ntl.sum(ntl.reshape(x, (2, 4), can_reorder=True), axis=1)
        out = ntl.reshape(ntl.max(halves[None, :], axis=1, keep_dims=True), (1, 1)) + ntl.zeros(out.shape, ntl.float32)  # noqa: F841

    kernel = _row_kernel(app, other=5.0)
    assert "can_reorder" not in kernel.source
    x = torch.randn(3, 5)
    out = torch.empty(3, 5)
    kernel(x, out)
    expected = torch.maximum(x[:, :4].sum(1), x[:, 4])
    torch.testing.assert_close(out, expected[:, None].expand(3, 5))


@pytest.mark.parametrize("form", ["ntl.reshape(x, (2, 4), can_reorder=True)", "x.view(2, 4)"])
def test_a_reduction_after_a_reshape_that_may_reorder_reads_the_elements_only(form):
    """A row of 5 (other=5) in a block of 8, reshaped in an order the call
    allows (ntsym keeps the order) and summed whole: the three lanes past
    the row stay out, whatever the order."""
    source = ("def application(x, out):\n"
              f"    halves = ntl.sum({form}, axis=1)\n"
              "    out = ntl.sum(halves, axis=0) + ntl.zeros(out.shape, ntl.float32)  # noqa: F841\n")
    application = application_from(source)
    x = torch.randn(3, 5)
    out = torch.empty(3, 5)
    _row_kernel(application, other=5.0)(x, out)
    torch.testing.assert_close(out, x.sum(1, keepdim=True).expand(3, 5))



def test_a_reshape_of_a_tile_with_no_lanes_outside_is_reduced_as_written():
    # A whole row of a compile-time power-of-two width: no lane outside.
    def arrangement(x, out):
        return x.tile((1, -1)), out.tile((1, 2))

    def app(x, out):
        out = ntl.reshape(ntl.sum(ntl.reshape(x, (2, 4)), axis=1), (1, 2))  # noqa: F841

    width = (None, {"constexpr": True, "power_of_two": True})
    x = torch.randn(3, 8)
    out = torch.empty(3, 2)
    ntsym.make(arrangement, app, (Tensor(2, shape_options=width), Tensor(2)))(x, out)
    torch.testing.assert_close(out, x.reshape(3, 2, 4).sum(2))


def test_reductions_written_as_methods_read_through_the_mask():
    def app(x, out):
        out = x.max(1, keep_dims=True) + ntl.cast(x, ntl.float32).sum(1, keep_dims=True)  # noqa: F841

    x = _negatives()
    out = torch.empty(3, 5)
    _row_kernel(app)(x, out)
    torch.testing.assert_close(out, (x.max(1, keepdim=True).values + x.sum(1, keepdim=True)).expand(3, 5))


def _doubled(v):
    return v * 2.0


def test_the_result_of_an_inlined_function_keeps_its_lanes():
    def app(x, out):
        y = _doubled(x)
        out = ntl.max(y, axis=1, keep_dims=True) + ntl.zeros(out.shape, ntl.float32)  # noqa: F841

    x = _negatives()
    out = torch.empty(3, 5)
    _row_kernel(app)(x, out)
    torch.testing.assert_close(out, (2 * x).max(1, keepdim=True).values.expand(3, 5))


def _doubled_and_exp(v):
    """Two values of ``v``'s lanes, each with its own outside value."""
    doubled = v * 2.0
    exponentials = ntl.exp(v)
    return doubled, exponentials


def test_each_name_an_inlined_function_returns_keeps_its_own_lanes():
    """Unpacked from the call, each value is masked for what it holds past
    the row: 0 (above the negatives: a max would take it) and exp(0) = 1 (a
    sum would add it)."""
    def app(x, out):
        doubled, exponentials = _doubled_and_exp(x)
        high = ntl.max(doubled, axis=1, keep_dims=True)
        total = ntl.sum(exponentials, axis=1, keep_dims=True)
        out = high + total + ntl.zeros(out.shape, ntl.float32)  # noqa: F841

    x = _negatives()
    out = torch.empty(3, 5)
    _row_kernel(app)(x, out)
    expected = (2 * x).max(1, keepdim=True).values + x.exp().sum(1, keepdim=True)
    torch.testing.assert_close(out, expected.expand(3, 5))


def _add_chunk(acc, x, k):
    j = k * 1  # the helper's own local: renamed apart where it is inlined
    acc = acc + x[0, j]
    return acc, j


def _add_chunk_only(acc, x, k):
    j = k * 1
    acc = acc + x[0, j]
    return acc


def _load_chunk(x, k):
    j = k * 1
    chunk = x[0, j]
    return chunk


def _raise(acc, chunk):
    higher = ntl.maximum(acc, chunk)
    acc = higher  # the caller's `acc`: a name passed is the parameter itself
    return higher


def _chunks_summed_through_a_helper(x, out):
    acc = ntl.zeros((1, 4), dtype=ntl.float32)
    for k in range(x.shape[1]):
        acc, j = _add_chunk(acc, x, k)
    out = ntl.sum(acc)  # noqa: F841


def _chunks_summed_through_a_helper_returning_one_value(x, out):
    acc = ntl.zeros((1, 4), dtype=ntl.float32)
    for k in range(x.shape[1]):
        acc = _add_chunk_only(acc, x, k)
    out = ntl.sum(acc)  # noqa: F841


def _previous_chunk_summed(x, out):
    previous = ntl.zeros((1, 4), dtype=ntl.float32)
    total = 0.0
    for k in range(x.shape[1]):
        chunk = _load_chunk(x, k)
        total += ntl.sum(previous)  # the previous chunk: its own lanes, not this one's
        previous = chunk
    out = total  # noqa: F841


def _running_max_through_a_parameter(x, out):
    acc = ntl.full((1, 4), float("-inf"), dtype=ntl.float32)
    for k in range(x.shape[1]):
        _raise(acc, x[0, k])
    out = ntl.max(acc)  # noqa: F841


def _running_max_of_chunks_a_helper_loads(x, out):
    best = ntl.full((1, 4), float("-inf"), dtype=ntl.float32)
    for k in range(x.shape[1]):
        best = ntl.maximum(best, _load_chunk(x, k))
    out = ntl.max(best)  # noqa: F841


@pytest.mark.parametrize("other", [None, 5.0])
@pytest.mark.parametrize("application", [
    _chunks_summed_through_a_helper, _chunks_summed_through_a_helper_returning_one_value])
def test_a_chunk_index_a_helper_computes_in_a_loop_masks_each_chunk(application, other):
    """Rows of 11 in chunks of 4: the chunk index is the helper's local; each
    iteration's chunk is masked by its own lanes (the sum after the loop was
    masked by the last chunk's only)."""
    x = torch.randn(2, 11)
    out = torch.empty(2)
    _chunks_of_four(application, other)(x, out)
    torch.testing.assert_close(out, x.sum(1))


@pytest.mark.parametrize("other", [None, 100.0])
def test_a_running_max_of_chunks_a_helper_loads(other):
    x = -(torch.rand(3, 11) + 1.0)
    out = torch.empty(3)
    _chunks_of_four(_running_max_of_chunks_a_helper_loads, other)(x, out)
    torch.testing.assert_close(out, x.max(1).values)


def _raise_returned(acc, chunk):
    return ntl.maximum(acc, chunk)


def _raise_in_place(acc, chunk):
    acc = ntl.maximum(acc, chunk)  # the caller's `acc`


def _nested_running_max_through_a_parameter(x, out):
    acc = ntl.full((1, 4), -1000.0, dtype=ntl.float32)
    for k in range(x.shape[1]):
        for j in range(2):
            _raise_in_place(acc, x[0, k] + j)
    out = ntl.max(acc)  # noqa: F841


def _nested_running_max_returned(x, out):
    acc = ntl.full((1, 4), -1000.0, dtype=ntl.float32)
    for k in range(x.shape[1]):
        for j in range(2):
            acc = _raise_returned(acc, x[0, k] + j)
    out = ntl.max(acc)  # noqa: F841


@pytest.mark.parametrize("other", [None, 5.0])
@pytest.mark.parametrize("application", [_nested_running_max_through_a_parameter, _nested_running_max_returned])
def test_a_running_max_a_helper_keeps_in_nested_loops(application, other):
    """The inner loop is emitted again (its helper's locals change with it):
    each attempt starts from what the outer iteration had written before it
    (the carried value still reads the outer chunk's mask), and a value a
    helper returns is read again as the carried value it is."""
    x = -(torch.rand(3, 11) + 1.0)
    out = torch.empty(3)
    _chunks_of_four(application, other)(x, out)
    torch.testing.assert_close(out, x.max(1).values + 1.0)


def test_what_inlined_calls_assign_in_a_loop_changes_with_its_iterations():
    """A previous chunk is not reduced through this chunk's mask: refused, as
    its spelling without the helper is."""
    with pytest.raises(ntsym.ApplicationError, match="earlier iteration|do not settle"):
        _chunks_of_four(_previous_chunk_summed, 100.0)


@pytest.mark.parametrize("other", [None, 5.0])
def test_a_running_max_a_helper_assigns_through_its_parameter(other):
    """``higher = maximum(acc, chunk); acc = higher`` in the helper: the
    caller's ``acc`` takes a value read from its head value through
    ``higher``, so it is carried (the lanes past the row keep it), as
    ``acc = maximum(acc, chunk)`` is; it was refused (the lanes did not
    settle)."""
    x = -(torch.rand(3, 11) + 1.0)
    out = torch.empty(3)
    _chunks_of_four(_running_max_through_a_parameter, other)(x, out)
    torch.testing.assert_close(out, x.max(1).values)


def test_a_sum_over_zero_padded_chunks_needs_no_select():
    def app(x, out):
        acc = ntl.zeros((1, x.dtype.shape[1]), dtype=ntl.float32)  # x[0, k] is a (1, B) tile
        for k in range(x.shape[1]):
            acc += x[0, k]
        out = ntl.sum(acc)  # noqa: F841

    kernel = _chunks(app)
    assert "tl.where" not in kernel.source
    x = torch.randn(3, 11)
    out = torch.empty(3)
    kernel(x, out, B=4)
    torch.testing.assert_close(out, x.sum(1))



@pytest.mark.parametrize("other", [None, 5.0])
def test_a_rescaled_carried_sum_keeps_its_value_past_the_tensor(other):
    # ``acc * f + x[k]`` over the chunks of a longer jagged sequence with as
    # many chunks, as varlen attention rescales its accumulator: lanes past
    # x's sequence (k = 1 of sequence 0) keep the carried value.
    # With zeros there the select is on the factor only; with other=5 on the
    # whole value.
    def arrangement(x, y, out):
        def chunks(t):
            arranged = t.tile((1, 4)).tile((1, -1))
            arranged.dtype = arranged.dtype.squeeze(0)
            arranged.dtype.dtype = arranged.dtype.dtype.squeeze(0)
            return arranged

        return chunks(x), chunks(y), out.tile((1,))

    def app(x, y, out):
        acc = ntl.zeros(x.dtype.shape, dtype=ntl.float32)
        for k in range(y.shape[0]):
            acc = acc * 0.5 + x[k]
        out = ntl.sum(acc)  # noqa: F841

    tensors = (Tensor(2, jagged_dim=1, other=other), Tensor(2, jagged_dim=1), Tensor(1))
    kernel = ntsym.make(arrangement, app, tensors)
    xs, ys = [torch.randn(6), torch.randn(4)], [torch.randn(8), torch.randn(4)]
    out = torch.empty(2)
    x = ntsym.jagged(torch.cat(xs), torch.tensor([0, 6, 10]))
    y = ntsym.jagged(torch.cat(ys), torch.tensor([0, 8, 12]))
    kernel(x, y, out)
    expected = torch.stack([_rescaled_sum(a, len(b)) for a, b in zip(xs, ys)])
    torch.testing.assert_close(out, expected)
    factor_only = "acc * tl.where(" in kernel.source
    assert factor_only == (other is None), kernel.source


def _rescaled_sum(x, m, chunk=4):
    """Per lane of a chunk: ``a = a * 0.5 + x[k * chunk + lane]`` over the
    ``cdiv(m, chunk)`` chunks of a sequence of ``m``, kept where the element
    is past ``x``'s end; the lanes' sum."""
    total = torch.zeros(())
    for lane in range(chunk):
        a = torch.zeros(())
        for k in range(-(-m // chunk)):
            if k * chunk + lane < len(x):
                a = a * 0.5 + x[k * chunk + lane]
        total += a
    return total


def test_a_running_maximum_over_row_chunks_in_a_while_loop():
    def app(x, out):
        best = ntl.full((1, x.dtype.shape[1]), float("-inf"), dtype=ntl.float32)  # x[0, k] is a (1, B) tile
        k = 0
        while k < x.shape[1]:
            best = ntl.maximum(best, x[0, k])
            k += 1
        out = ntl.max(best)  # noqa: F841

    x = -(torch.rand(3, 11) + 1.0)
    out = torch.empty(3)
    _chunks(app)(x, out, B=4)
    torch.testing.assert_close(out, x.max(1).values)


@pytest.mark.parametrize("augmented", [False, True])
def test_a_while_loop_accumulates_only_the_lanes_inside(augmented):
    # Rows of 11 in chunks of 4, read with other=5: the last chunk's lane
    # past the row must not reach the sum, in either spelling.
    def arrangement(x, out, B=ntsym.block_size(lower_bound=4)):
        return x.tile((1, B)).tile((1, -1)), out.tile((1,))

    def app(x, out):
        acc = ntl.zeros((1, x.dtype.shape[1]), dtype=ntl.float32)  # x[0, k] is a (1, B) tile
        k = 0
        while k < x.shape[1]:
            acc = acc + x[0, k] * 2.0
            k += 1
        out = ntl.sum(acc)  # noqa: F841

    def app_augmented(x, out):
        acc = ntl.zeros((1, x.dtype.shape[1]), dtype=ntl.float32)  # x[0, k] is a (1, B) tile
        k = 0
        while k < x.shape[1]:
            acc += ntl.exp(x[0, k])
            k += 1
        out = ntl.sum(acc)  # noqa: F841

    x = torch.randn(3, 11)
    out = torch.empty(3)
    kernel = ntsym.make(arrangement, app_augmented if augmented else app, (Tensor(2, other=5.0), Tensor(1)))
    kernel(x, out, B=4)
    torch.testing.assert_close(out, x.exp().sum(1) if augmented else 2 * x.sum(1))


_LOOPS = {
    "while": "    k = x.shape[0]\n    while k < 1:\n        acc = {value}\n        k += 1\n",
    "for": "    for k in range(x.shape[0] - 1):\n        acc = {value}\n",
}


def _loop_that_may_not_run(loop, start, value):
    return application_from("def application(x, out):\n"
                            f"    acc = {start}\n"
                            + _LOOPS[loop].format(value=value) +
                            "    out = ntl.sum(acc, axis=1, keep_dims=True) + ntl.zeros(out.shape, ntl.float32)"
                            "  # noqa: F841\n")


@pytest.mark.parametrize("loop", ["while", "for"])
def test_a_loop_that_may_not_run_leaves_lanes_that_differ_from_its_own_refused(loop):
    """``acc`` enters holding the row's padding (other=5); the loop, which
    may run no iteration, sets a value whose every lane is an element: which
    lanes a sum after it leaves out depends on the path (the mask of ``x``
    would drop elements of the loop's value).  Here that value is zeros,
    which the mask would not change, but ntsym does not tell zeros from data
    on that path, so it refuses (before, it masked, right for zeros only)."""
    with pytest.raises(ntsym.ApplicationError, match=r"`sum` mixes the lanes of `acc`.*a loop that may run no"):
        _row_kernel(_loop_that_may_not_run(loop, "x * 1.0", "ntl.zeros(x.shape, ntl.float32)"), other=5.0)


def test_a_loop_that_runs_replaces_a_padded_value_by_one_whose_lanes_are_all_elements():
    """A wrong sum before: the loop's value (a whole row of ``y``) was read
    through ``x``'s mask, which dropped three of its elements."""
    def arrangement(x, y, out):
        return x.tile((1, -1)), y.tile((1, -1)), out.tile((1, 1))

    def application(x, y, out):
        acc = x * 1.0
        for k in range(x.source.shape[1] - 4):
            acc = y * 1.0
        out = ntl.sum(acc, 1, keep_dims=True)  # noqa: F841

    width = (None, {"constexpr": True, "power_of_two": True})
    with pytest.raises(ntsym.ApplicationError, match=r"`sum` mixes the lanes of `acc`.*differ between the paths"):
        ntsym.make(arrangement, application, (Tensor(2, other=5.0), Tensor(2, shape_options=width), Tensor(2)))


def test_a_row_of_a_reshape_wholly_past_the_tensor_stays_outside():
    # A row of 3 in a block of 8, as two rows of 4: the second lies wholly
    # past the row; its sum (0) must not reach the max of the two sums.
    def app(x, out):
        halves = ntl.sum(ntl.reshape(x, (2, 4)), axis=1)
        out = ntl.max(halves, axis=0) + ntl.zeros(out.shape, ntl.float32)  # noqa: F841

    x = -(torch.rand(3, 3) + 1.0)
    out = torch.empty(3, 3)
    _row_kernel(app)(x, out)
    torch.testing.assert_close(out, x.sum(1, keepdim=True).expand(3, 3))


@pytest.mark.parametrize("outer", ["for", "while"])
def test_a_carried_value_scaled_by_an_inner_loop_variable(outer):
    # `r + 1` reads a loop variable: a scalar, which keeps the lanes known.
    def for_app(x, out):
        acc = ntl.zeros((1, x.dtype.shape[1]), dtype=ntl.float32)  # x[0, k] is a (1, B) tile
        for k in range(x.shape[1]):
            for r in range(2):
                acc = acc + x[0, k] * (r + 1)
        out = ntl.sum(acc)  # noqa: F841

    def while_app(x, out):
        acc = ntl.zeros((1, x.dtype.shape[1]), dtype=ntl.float32)  # x[0, k] is a (1, B) tile
        k = 0
        while k < x.shape[1]:
            for r in range(2):
                acc = acc + x[0, k] * (r + 1)
            k += 1
        out = ntl.sum(acc)  # noqa: F841

    def arrangement(x, out, B=ntsym.block_size(lower_bound=4)):
        return x.tile((1, B)).tile((1, -1)), out.tile((1,))

    x = torch.randn(3, 11)
    out = torch.empty(3)
    ntsym.make(arrangement, for_app if outer == "for" else while_app, (Tensor(2, other=2.0), Tensor(1)))(x, out, B=4)
    torch.testing.assert_close(out, 3 * x.sum(1))


@pytest.mark.parametrize("outer", ["for", "while"])
def test_a_value_reset_in_each_outer_iteration_keeps_the_rows_outside_in_every_inner_one(outer):
    # Row blocks of 4 over 7 rows: the last block's row past the tensor is
    # outside in every iteration of the inner loop, which carries `acc` (set
    # afresh in each outer iteration): its -inf must not reach the sum.
    def for_app(x, out):
        total = 0.0
        for i in range(x.shape[0]):
            acc = ntl.full((4, 4), float("-inf"), ntl.float32)
            for j in range(x.shape[1]):
                acc = ntl.maximum(acc, x[i, j])
            total += ntl.sum(ntl.max(acc, 1))
        out = total  # noqa: F841

    def while_app(x, out):
        total = 0.0
        i = 0
        while i < x.shape[0]:
            acc = ntl.full((4, 4), float("-inf"), ntl.float32)
            for j in range(x.shape[1]):
                acc = ntl.maximum(acc, x[i, j])
            total += ntl.sum(ntl.max(acc, 1))
            i += 1
        out = total  # noqa: F841

    def arrangement(x, out):
        return x.tile((4, 4)).tile((-1, -1)), out.tile((1,))

    x = -(torch.rand(7, 6) + 1.0)
    out = torch.empty(1)
    ntsym.make(arrangement, for_app if outer == "for" else while_app, (Tensor(2), Tensor(1)))(x, out)
    torch.testing.assert_close(out, x.amax(1).sum().reshape(1))


@pytest.mark.parametrize("form", ["ntl.reshape(x, (32,))", "x.view(32)"])
def test_a_sort_of_a_flattened_tile_counts_the_elements_it_moved(form):
    """A (3, 5) tile in a block of (4, 8), flattened: its lanes outside lie
    at scattered positions.  The sort sends them (NaN, the identity) to the
    end; the lanes inside after it are the first 15, not the positions they
    had (which counted NaNs: a max of nan)."""
    source = ("def application(x, out):\n"
              f"    y = ntl.sort({form}, 0)\n"
              "    top = ntl.max(y, 0) + ntl.sum(y * 0.0 + 1.0, 0) * 100.0\n"
              "    out = top[None, None] + ntl.zeros((1, 1), ntl.float32)  # noqa: F841\n")
    application = application_from(source)

    def arrangement(x, out):
        return x.tile((-1, -1)), out.tile((1, 1))

    x = -(torch.rand(3, 5) + 1)
    out = torch.empty(1, 1)
    ntsym.make(arrangement, application, (Tensor(2, other=3.0), Tensor(2)))(x, out)
    torch.testing.assert_close(out, (x.max() + 1500.0).reshape(1, 1))


def test_a_condition_on_the_offsets_of_another_axis_keeps_the_mask():
    """``where(x.offsets(1) < n, x, -inf)`` on a ``(S, G)`` tile: the vector of
    dimension 1's offsets broadcasts along the last axis (G), so it tests
    nothing of the padded S lanes; their mask stays before ``max`` and ``sum``
    over S (they used to be taken as tested, and entered both)."""
    whole = {"constexpr": True, "upper_bound": 256}

    def arrangement(lse, out):
        arranged = lse.tile((1, -1, -1))
        arranged.dtype = arranged.dtype.squeeze(0)
        out_arranged = out.tile((1, -1))
        out_arranged.dtype = out_arranged.dtype.squeeze(0)
        return arranged, out_arranged

    def application(lse, out):
        weights = ntl.where(lse.offsets(1) < lse.source.shape[1], lse, float("-inf"))  # along G
        w = ntl.exp2(weights - ntl.max(weights, 0)[None, :])
        out = ntl.sum(w, 0)  # noqa: F841

    kernel = ntsym.make(arrangement, application,
                        (Tensor(3, shape_options=(None, whole, whole)), Tensor(2, shape_options=(None, whole))))
    lse = torch.randn(1, 3, 3) + 2  # above the padded lanes' zeros
    out = torch.empty(1, 3)
    kernel(lse, out)
    weights = lse[0]  # every real lane: G's offsets (< 3) all pass
    torch.testing.assert_close(out[0], torch.exp2(weights - weights.max(0).values).sum(0))


def _block_max(application):
    """A 1-D tile of 5 elements in a block of 8: three padded lanes (zeros),
    above the elements (all negative)."""
    def arrangement(x, out):
        return x.tile((8,)), out.tile((1,))

    kernel = ntsym.make(arrangement, application, (Tensor(1), Tensor(1)))
    x = -(torch.rand(5) + 1.0)
    out = torch.empty(1)
    kernel(x, out)
    return x, out


def test_an_augmented_offset_is_not_the_offsets_any_more():
    """``key -= 4`` changes ``key``: ``key < n`` then passes three padded
    lanes, whose mask stays before ``max`` (the old offsets used to be taken
    as tested, and the zeros entered the maximum)."""
    def application(x, out):
        key = x.offsets(0)
        key -= 4
        w = ntl.where(key < x.source.shape[0], x, float("-inf"))
        out = ntl.max(w, 0)  # noqa: F841

    x, out = _block_max(application)
    torch.testing.assert_close(out[0], x.max())


def test_an_annotated_reassignment_forgets_the_offsets():
    def application(x, out):
        key = x.offsets(0)
        key: ntl.int32 = 4 - key
        w = ntl.where(key < x.source.shape[0], x, float("-inf"))
        out = ntl.max(w, 0)  # noqa: F841

    x, out = _block_max(application)
    torch.testing.assert_close(out[0], x.max())


def test_a_new_axis_after_a_row_keeps_the_offsets_last():
    """``o[None, :][:, None]`` is ``(1, 1, B)``: Triton leaves the axes that no
    slice names at the end, so B's offsets run along the last axis (C), not
    along B; a condition on them tests nothing of the padded B lanes, whose
    mask stays before ``max`` over B (the offsets used to be placed on the
    middle axis, and the padded zeros entered the maximum)."""
    whole = {"constexpr": True, "upper_bound": 256}

    def arrangement(x, out):
        arranged = x.tile((1, -1, -1, -1))
        arranged.dtype = arranged.dtype.squeeze(0)
        out_arranged = out.tile((1, -1))
        out_arranged.dtype = out_arranged.dtype.squeeze(0)
        return arranged, out_arranged

    def application(x, out):
        # (1, 1, B) < n: B's offsets along C
        w = ntl.where(x.offsets(2)[None, :][:, None] < x.source.shape[2], x, float("-inf"))  # (A, B, C)
        out = ntl.max(ntl.max(w, 1), 0)  # noqa: F841

    kernel = ntsym.make(arrangement, application,
                        (Tensor(4, shape_options=(None, whole, whole, whole)), Tensor(2, shape_options=(None, whole))))
    x = -(torch.rand(1, 2, 3, 3) + 1.0)  # below the padded lanes' zeros
    out = torch.empty(1, 3)
    kernel(x, out)
    torch.testing.assert_close(out[0], x[0].amax((0, 1)))


def _chunks_of_four(app, other=None):
    """Rows of 11 in chunks of 4 (the last chunk one lane past the row),
    one program per row, ``app`` looping over the chunks."""
    def arrangement(x, out):
        return x.tile((1, 4)).tile((1, -1)), out.tile((1,))

    return ntsym.make(arrangement, app, (Tensor(2, other=other), Tensor(1)))


def _previous_chunk_sum(x, out):
    prev = ntl.zeros((1, 4), dtype=ntl.float32)
    total = 0.0
    for k in range(x.shape[1]):
        total += ntl.sum(prev)  # the chunk loaded in the iteration before
        prev = x[0, k]
    out = total  # noqa: F841


def _chunks_in_reverse_sum(x, out):
    cur = x[0, 0]
    total = 0.0
    for k in range(x.shape[1]):
        total += ntl.sum(cur)  # chunks 0, 2, 1: each summed an iteration after its load
        cur = x[0, x.shape[1] - 1 - k]
    out = total  # noqa: F841


@pytest.mark.parametrize("app", [_previous_chunk_sum, _chunks_in_reverse_sum])
def test_a_carried_chunk_is_not_masked_by_the_next_iterations_chunk(app):
    # The mask of a chunk loaded in one iteration reads the loop's variable:
    # evaluated again in the next iteration it names that iteration's lanes
    # (it dropped a real element, or added a padded one).  Where ntsym cannot
    # mask the carried lanes it refuses, saying so.
    x = torch.arange(1.0, 23.0).reshape(2, 11)
    with pytest.raises(ntsym.ApplicationError, match="earlier iteration of the loop"):
        _chunks_of_four(app, other=100.0)(x, torch.empty(2))


def test_a_carried_chunk_whose_padding_is_the_identity_needs_no_mask():
    # other=0 (the sum's identity), or the lanes set with `ntl.where` on the
    # offsets where the chunk is loaded: the carried lanes outside add nothing.
    def masked_where_loaded(x, out):
        prev = ntl.zeros((1, 4), dtype=ntl.float32)
        total = 0.0
        for k in range(x.shape[1]):
            total += ntl.sum(prev)
            prev = ntl.where(x[0, k].offsets(1) < x.source.shape[1], x[0, k], 0.0)
        out = total  # noqa: F841

    x = torch.arange(1.0, 23.0).reshape(2, 11)
    expected = x[:, :8].sum(1)  # chunks 0 and 1: the last one is loaded but never summed
    for kernel in (_chunks_of_four(_previous_chunk_sum, other=0.0), _chunks_of_four(masked_where_loaded)):
        out = torch.empty(2)
        kernel(x, out)
        torch.testing.assert_close(out, expected)
    # A running maximum read an iteration late, with -inf outside: the same.
    def previous_max(x, out):
        prev = ntl.zeros((1, 4), dtype=ntl.float32)
        total = 0.0
        for k in range(x.shape[1]):
            total += ntl.max(prev)
            prev = x[0, k]
        out = total  # noqa: F841

    out = torch.empty(2)
    _chunks_of_four(previous_max, other=float("-inf"))(x, out)
    torch.testing.assert_close(out, x[:, 3] + x[:, 7])


@pytest.mark.parametrize("form, other", [
    ("ntl.exp(x) * 0.0", 100.0),  # exact: exp(100) * 0 = 0; a GPU in float32: inf * 0 = NaN
    ("ntl.sqrt(x) * 0.0", -1.0),  # exact: I * 0 = 0; float32: NaN * 0 = NaN
    ("ntl.where(x + 0.2 == 0.3, 1.0, 0.0)", 0.1),  # exact (double): never; float32: 0.1 + 0.2 == 0.3
])
def test_padded_lanes_are_not_proved_by_arithmetic_a_gpu_does_not_do(form, other):
    # SymPy computes the padded lanes exactly; where float32 would not give the
    # identity there, the select stays and the row's sum takes only its elements.
    app = application_from(f"def app(x, out):\n    out = ntl.sum({form}, axis=1, keep_dims=True) + ntl.zeros(out.shape, "
                           "ntl.float32)  # noqa: F841\n", name="app")
    x = torch.rand(3, 5) + 1.0
    out = torch.empty(3, 5)
    _row_kernel(app, other=other)(x, out)
    # Every form is 0 on the row's own elements (x in [1, 2)).
    torch.testing.assert_close(out, torch.zeros(3, 5))
