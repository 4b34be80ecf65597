"""Jagged tensors: NineToothed's tests (tests/test_jagged.py there: to a padded
tensor, and a copy through expand), on small shapes, unchanged in what the
programs say; then ntsym's own: packed values + offsets, the examples against
per-sequence torch loops, explain(), and bad input refused with nothing
written."""

import functools
import random

import pytest
import torch

import ntsym
from ntsym import Symbol, Tensor
from ntsym.errors import ArrangementError, LaunchError, MetaOperationError
from tests.conftest import FP32_DOT_TOL


# -- NineToothed's programs ---------------------------------------------------------------


class ToPaddedTensor:
    BLOCK_SIZE = Symbol("block_size", constexpr=True)

    @staticmethod
    def arrangement(input, output, block_size=BLOCK_SIZE):
        tile_shape = (1,) + tuple(block_size for _ in range(1, input.ndim))

        return input.tile(tile_shape), output.tile(tile_shape)

    @staticmethod
    def application(input, output):
        output = input  # noqa: F841

    @staticmethod
    def premake(ndim, padding, jagged_dim, block_size=None):
        if block_size is not None:
            arrangement = functools.partial(ToPaddedTensor.arrangement, block_size=block_size)
        else:
            arrangement = ToPaddedTensor.arrangement

        tensors = (Tensor(ndim, jagged_dim=jagged_dim, other=padding), Tensor(ndim))

        return arrangement, ToPaddedTensor.application, tensors


def to_padded_tensor(input, padding, jagged_dim, block_size=4):
    max_seq_len = input.offsets().diff().max().item()
    output_shape = tuple(size if dim != jagged_dim else max_seq_len for dim, size in enumerate(input.shape))

    output = torch.empty(output_shape, dtype=input.dtype, device=input.device)

    kernel = ntsym.make(*ToPaddedTensor.premake(input.ndim, padding, jagged_dim))

    kernel(input, output, block_size=block_size)

    return output


def _manual_padded_reference(batches, output, padding, jagged_dim):
    expected = torch.full_like(output, padding)

    for batch_index, batch in enumerate(batches):
        index = [batch_index, *(slice(None) for _ in range(output.ndim - 1))]
        index[jagged_dim] = slice(0, batch.shape[jagged_dim - 1])
        expected[tuple(index)] = batch
    return expected


def _batches(ndim, jagged_dim, num_batches, upper_bound=12):
    def size():
        return random.randint(1, upper_bound)

    batch_shape = tuple(size() for _ in range(ndim - 1))
    return tuple(
        torch.randn(batch_shape[: jagged_dim - 1] + (size(),) + batch_shape[jagged_dim:])
        for _ in range(num_batches)
    )


@pytest.mark.parametrize("padding", (-1,))
@pytest.mark.parametrize("num_batches", (2, 3, 7))
@pytest.mark.parametrize("jagged_dim", (1, 2))
@pytest.mark.parametrize("ndim", (3,))
def test_to_padded_tensor(ndim, jagged_dim, num_batches, padding):
    random.seed(num_batches * 10 + jagged_dim)
    batches = _batches(ndim, jagged_dim, num_batches)
    input = torch.nested.nested_tensor(batches, layout=torch.jagged)

    output = to_padded_tensor(input, padding=padding, jagged_dim=jagged_dim)

    expected = _manual_padded_reference(batches, output, padding, jagged_dim)
    assert output.shape == expected.shape and torch.allclose(output, expected)


class Copy:
    BLOCK_SIZE = Symbol("block_size", constexpr=True)

    @staticmethod
    def arrangement(dst, src, jagged_dim, block_size=BLOCK_SIZE):
        tile_shape = (1,) + tuple(block_size for _ in range(1, dst.ndim))

        return dst.tile(tile_shape), src.expand(
            tuple(-1 if dim != jagged_dim else dst.shape[dim] for dim in range(src.ndim))
        ).tile(tile_shape)

    @staticmethod
    def application(dst, src):
        dst = src  # noqa: F841

    @staticmethod
    def premake(ndim, jagged_dim, block_size=None):
        arrangement = functools.partial(Copy.arrangement, jagged_dim=jagged_dim)

        if block_size is not None:
            arrangement = functools.partial(Copy.arrangement, block_size=block_size)

        tensors = (Tensor(ndim, jagged_dim=jagged_dim), Tensor(ndim))

        return arrangement, Copy.application, tensors


@pytest.mark.parametrize("num_batches", (2, 3, 7))
@pytest.mark.parametrize("jagged_dim", (1, 2))
@pytest.mark.parametrize("ndim", (3,))
def test_expand(ndim, jagged_dim, num_batches):
    random.seed(num_batches * 10 + jagged_dim + 1)
    batches = _batches(ndim, jagged_dim, num_batches)
    dst = torch.nested.nested_tensor(batches, layout=torch.jagged)
    src = torch.randn(
        tuple(size if dim != jagged_dim else 1 for dim, size in enumerate(dst.shape)), dtype=dst.dtype
    )

    kernel = ntsym.make(*Copy.premake(dst.ndim, jagged_dim))
    kernel(dst, src, block_size=4)

    for batch_index, actual in enumerate(dst.unbind()):
        expected = src[batch_index].expand_as(actual)
        assert actual.shape == expected.shape and torch.allclose(actual, expected)


# -- packed values and offsets ---------------------------------------------------------


def test_packed_values_and_offsets_match_nested():
    lengths = [3, 0, 9, 1]
    offsets = torch.tensor([0] + lengths).cumsum(0)
    values = torch.randn(int(offsets[-1]), 5)
    out = torch.empty(len(lengths), max(lengths), 5)
    kernel = ntsym.make(*ToPaddedTensor.premake(3, 0.0, 1))
    kernel(ntsym.jagged(values, offsets.to(torch.int32)), out, block_size=4)
    for b, (start, n) in enumerate(zip(offsets.tolist(), lengths)):
        assert torch.equal(out[b, :n], values[start:start + n])
        assert torch.equal(out[b, n:], torch.zeros_like(out[b, n:]))


def test_packed_offsets_may_start_inside_the_values():
    """Offsets of a slice of a larger batch: sequence b is rows offsets[b] to
    offsets[b + 1]; rows outside the offsets are neither read nor written."""
    from examples import jagged as ex

    values = torch.randn(20, 6)
    offsets = torch.tensor([4, 7, 15])
    out_values = torch.full_like(values, 7.0)
    ex.add_kernel(ntsym.jagged(values, offsets), ntsym.jagged(values, offsets), ntsym.jagged(out_values, offsets))
    assert torch.equal(out_values[4:15], 2 * values[4:15])
    assert torch.equal(out_values[:4], torch.full((4, 6), 7.0))
    assert torch.equal(out_values[15:], torch.full((5, 6), 7.0))


# -- the examples against per-sequence torch ------------------------------------------------


def _nested(lengths, d):
    return torch.nested.nested_tensor([torch.randn(n, d) for n in lengths], layout=torch.jagged)


@pytest.mark.parametrize("lengths", ([5, 1, 12], [7], [0, 4, 0]))
def test_example_add(lengths):
    from examples import jagged as ex

    x = _nested(lengths, 10)
    y = torch.nested.nested_tensor_from_jagged(torch.randn_like(x.values()), x.offsets())
    assert torch.equal(ex.add(x, y).values(), x.values() + y.values())


@pytest.mark.parametrize("lengths", ([5, 1, 12], [33], [0, 4, 0, 9]))
def test_example_sequence_softmax(lengths):
    from examples import jagged as ex

    x = _nested(lengths, 7)
    out = ex.sequence_softmax(x)
    for actual, sequence in zip(out.unbind(), x.unbind()):
        torch.testing.assert_close(actual, torch.softmax(sequence, 0))


@pytest.mark.parametrize("causal", (False, True))
@pytest.mark.parametrize("lengths", ([5, 40, 17, 1], [16], [3, 0, 20]))
def test_example_varlen_sdpa(lengths, causal):
    from examples import varlen_sdpa as ex

    q, k, v, offsets = ex.packed(lengths, 2, 16, torch.float32, None)
    actual = ex.varlen_sdpa(q, k, v, offsets, is_causal=causal)
    torch.testing.assert_close(actual, ex.reference(q, k, v, offsets, is_causal=causal), atol=FP32_DOT_TOL, rtol=FP32_DOT_TOL)


@pytest.mark.parametrize("blocks", [(16, 16), (32, 16)])
def test_causal_varlen_sdpa_with_fewer_keys_than_queries(blocks):
    from examples import varlen_sdpa as ex

    cq, ck = torch.tensor([0, 40, 70, 75]), torch.tensor([0, 17, 50, 55])
    q, k, v = torch.randn(75, 2, 16), torch.randn(55, 2, 16), torch.randn(55, 2, 16)
    actual = ex.varlen_sdpa(q, k, v, cq, ck, is_causal=True, BLOCK_SIZE_M=blocks[0], BLOCK_SIZE_N=blocks[1])
    expected = ex.reference(q, k, v, cq, ck, is_causal=True)
    torch.testing.assert_close(actual, expected, atol=FP32_DOT_TOL, rtol=FP32_DOT_TOL)


@pytest.mark.parametrize("causal", (False, True))
def test_varlen_sdpa_gives_zeros_for_a_sequence_without_keys(causal):
    """Queries of a sequence whose keys are empty attend to nothing: zeros, as
    torch's attention over no keys (and ``reference``), not 0 / 0 = NaN."""
    from examples import varlen_sdpa as ex

    cq, ck = torch.tensor([0, 5, 8, 15]), torch.tensor([0, 6, 6, 13])
    q, k, v = torch.randn(15, 2, 16), torch.randn(13, 2, 16), torch.randn(13, 2, 16)
    actual = ex.varlen_sdpa(q, k, v, cq, ck, is_causal=causal)
    assert torch.equal(actual[5:8], torch.zeros(3, 2, 16))
    torch.testing.assert_close(actual, ex.reference(q, k, v, cq, ck, is_causal=causal), atol=FP32_DOT_TOL,
                               rtol=FP32_DOT_TOL)


def test_varlen_sdpa_with_nested_tensors():
    from examples import varlen_sdpa as ex

    q, k, v, offsets = ex.packed([6, 19], 2, 16, torch.float32, None)
    o = torch.empty_like(q)
    nested = [torch.nested.nested_tensor_from_jagged(t, offsets) for t in (q, k, v, o)]
    ex.kernel(nested[0], nested[1], nested[2], 0.25, True, nested[3])
    torch.testing.assert_close(o, ex.reference(q, k, v, offsets, is_causal=True, scale=0.25), atol=FP32_DOT_TOL, rtol=FP32_DOT_TOL)


def test_longer_keys_than_queries():
    """k and v with their own offsets (cross attention of packed sequences)."""
    from examples import varlen_sdpa as ex

    q, _, _, oq = ex.packed([4, 9], 2, 16, torch.float32, None)
    _, k, v, ok = ex.packed([30, 2], 2, 16, torch.float32, None)
    actual = ex.varlen_sdpa(q, k, v, oq, ok)
    torch.testing.assert_close(actual, ex.reference(q, k, v, oq, ok), atol=FP32_DOT_TOL, rtol=FP32_DOT_TOL)


# -- what explain() and the generated code say ------------------------------------------------


def test_explain_says_what_holds_for_every_row_length():
    from examples import jagged as ex

    text = ex.add_kernel.explain()
    assert "jagged    input: dimension 1 is ragged" in text
    assert "mask BLOCK_SIZE_J*pid_1 + t1 < input_seq_len kept" in text
    assert "proved for every row length (dropped)" in text
    assert "returns at once when" in text
    assert "non-decreasing" in text
    assert "equal offsets of `input`, `other`, `output`" in text


def test_empty_programs_return_and_loops_use_the_row_length():
    from examples import jagged as ex
    from examples import varlen_sdpa as vs

    assert "return" in ex.add_kernel.kernel_source
    softmax = ex.softmax_kernel.kernel_source
    assert "range(input_seq_len // BLOCK_SIZE_J + ntsym_zero)" in softmax
    assert "return" not in softmax  # three levels: no tile-emptiness test
    assert "k_seq_len" in vs.kernel.kernel_source and "o_seq_len" in vs.kernel.kernel_source


def test_dense_output_is_written_past_the_row_end():
    """to_padded_tensor writes a dense tensor: programs past a row's end still
    run (they write the padding), so no early return."""
    kernel = ntsym.make(*ToPaddedTensor.premake(3, -1, 1))
    assert "return" not in kernel.kernel_source


# -- refusals -----------------------------------------------------------------------------------


def test_declaration_errors():
    with pytest.raises(MetaOperationError, match="after the batch dimension"):
        Tensor(3, jagged_dim=0)
    with pytest.raises(MetaOperationError, match="after the batch dimension"):
        Tensor(3, jagged_dim=3)
    with pytest.raises(MetaOperationError, match="at least 2 dimensions"):
        Tensor(1, jagged_dim=1)
    with pytest.raises(MetaOperationError, match="leave them None"):
        Tensor(shape=(None, 8, None), jagged_dim=1)


def test_tile_over_the_whole_ragged_dimension_is_refused():
    def arrangement(x, y):
        return x.tile((1, -1, 4)), y.tile((1, -1, 4))

    def application(x, y):
        y = x  # noqa: F841

    with pytest.raises(ArrangementError, match="spans the whole ragged dimension"):
        ntsym.make(arrangement, application, (Tensor(3, jagged_dim=1), Tensor(3, jagged_dim=1)))


def test_tile_over_several_sequences_is_refused():
    def arrangement(x, y):
        return x.tile((2, 4, 4)), y.tile((2, 4, 4))

    def application(x, y):
        y = x  # noqa: F841

    with pytest.raises(ArrangementError, match="tile the batch dimension 0 by 1"):
        ntsym.make(arrangement, application, (Tensor(3, jagged_dim=1), Tensor(3, jagged_dim=1)))


def _add_case():
    from examples import jagged as ex

    x = _nested([3, 5], 4)
    out_values = torch.full_like(x.values(), 9.0)
    out = torch.nested.nested_tensor_from_jagged(out_values, x.offsets())
    return ex, x, out, out_values


def test_offsets_not_increasing_are_refused_and_nothing_written():
    ex, x, out, out_values = _add_case()
    values = torch.randn(8, 4)
    bad = torch.tensor([0, 5, 3])
    with pytest.raises(LaunchError, match="must not decrease"):
        ex.add_kernel(ntsym.jagged(values, bad), ntsym.jagged(values, bad), ntsym.jagged(out_values, bad))
    past = torch.tensor([0, 5, 12])
    with pytest.raises(LaunchError, match="past the end of the values"):
        ex.add_kernel(ntsym.jagged(values, past), ntsym.jagged(values, past), ntsym.jagged(out_values, past))
    with pytest.raises(LaunchError, match="1-D int32 or int64"):
        f = torch.tensor([0.0, 3.0])
        ex.add_kernel(ntsym.jagged(values, f), ntsym.jagged(values, f), ntsym.jagged(out_values, f))
    assert torch.equal(out_values, torch.full_like(out_values, 9.0))


def test_strided_nested_tensor_is_refused():
    ex, x, out, out_values = _add_case()
    strided = torch.nested.nested_tensor([torch.randn(3, 4), torch.randn(5, 4)])
    with pytest.raises(LaunchError, match="strided layout"):
        ex.add_kernel(strided, x, out)
    from examples import add

    with pytest.raises(LaunchError, match="strided layout"):
        add.kernel(torch.nested.nested_tensor([torch.randn(3), torch.randn(5)]), torch.randn(8), torch.randn(8))
    assert torch.equal(out_values, torch.full_like(out_values, 9.0))


@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_sparse_tensor_is_refused(layout):
    from examples import add

    x = torch.randn(8)
    sparse = x.to_sparse() if layout == "coo" else x.reshape(2, 4).to_sparse_csr()  # CSR is 2-D
    out = torch.zeros(8)
    with pytest.raises(LaunchError, match=r"(?s)`input` is a torch.sparse_\w+ tensor.*input.to_dense\(\)"):
        add.kernel(sparse, torch.randn(8), out)
    assert torch.equal(out, torch.zeros(8))


def test_dense_where_jagged_expected_and_vice_versa():
    ex, x, out, out_values = _add_case()
    with pytest.raises(LaunchError, match="(?s)declared jagged.*dense tensor"):
        ex.add_kernel(torch.randn(2, 5, 4), x, out)
    from examples import add

    y = _nested([3, 5], 1)
    with pytest.raises(LaunchError, match="declares it dense"):
        add.kernel(y, y, y)
    assert torch.equal(out_values, torch.full_like(out_values, 9.0))


def test_different_row_lengths_where_the_arrangement_pairs_them():
    ex, x, out, out_values = _add_case()
    y = _nested([5, 3], 4)
    with pytest.raises(LaunchError, match="same lengths"):
        ex.add_kernel(x, y, out)
    assert torch.equal(out_values, torch.full_like(out_values, 9.0))


def test_wrong_ragged_dimension_and_holes():
    kernel = ntsym.make(*ToPaddedTensor.premake(3, 0.0, 2))
    x = _nested([3, 5], 4)  # ragged dimension 1
    with pytest.raises(LaunchError, match="ragged dimension is 1"):
        kernel(x, torch.empty(2, 4, 5), block_size=4)
    holes = torch.nested.narrow(torch.randn(2, 8, 4), 1, torch.tensor([0, 1]), torch.tensor([3, 7]),
                                layout=torch.jagged)
    padded = ntsym.make(*ToPaddedTensor.premake(3, 0.0, 1))
    with pytest.raises(LaunchError, match="holes"):
        padded(holes, torch.empty(2, 7, 4), block_size=4)


def test_written_jagged_output_sharing_memory_is_refused():
    ex, x, out, out_values = _add_case()
    other = torch.nested.nested_tensor_from_jagged(out_values, x.offsets())
    in_place = ex.add_kernel  # add(x, out) into out: the same elements, element-wise: allowed
    in_place(x, other, out)
    torch.testing.assert_close(out_values, x.values() + 9.0)
    shifted = ntsym.jagged(out_values[1:], torch.tensor([0, 3, 7]))
    with pytest.raises(LaunchError, match="share memory"):
        ex.add_kernel(ntsym.jagged(x.values()[:7], torch.tensor([0, 3, 7])), shifted,
                      ntsym.jagged(out_values[:7], torch.tensor([0, 3, 7])))


def test_a_dense_output_in_the_values_past_the_longest_sequence_is_refused():
    """The kernel reads every row of a jagged input's values, not only the
    rows of its launcher view (as long as the longest sequence): an output
    lying in its last rows shares elements with it."""
    kernel = ntsym.make(*ToPaddedTensor.premake(3, 0.0, 1))
    buf = torch.randn(18, 4)
    x = ntsym.jagged(buf[:8], torch.tensor([0, 3, 8]))  # rows 0-7, the longest sequence 5 rows
    out = buf[5:15].unflatten(0, (2, 5))  # rows 5-14: rows 5-7 are the second sequence's
    before = buf.clone()
    with pytest.raises(LaunchError, match=r"(?s)share memory and the kernel writes `.*`.*one of 12 elements"):
        kernel(x, out, block_size=4)
    assert torch.equal(buf, before)


def test_a_dense_output_beside_the_jagged_input_in_one_buffer_runs():
    """The input's values are the first 4 columns of a buffer, the output its
    last 4: their bytes interleave, no element is in both, so the kernel runs
    (as the launcher accepts such dense views) and pads each sequence."""
    kernel = ntsym.make(*ToPaddedTensor.premake(3, -1.0, 1))
    buf = torch.randn(10, 8)
    values = buf[:8, :4].clone()
    x = ntsym.jagged(buf[:8, :4], torch.tensor([0, 3, 8]))
    out = buf[:, 4:].unflatten(0, (2, 5))
    kernel(x, out, block_size=4)
    expected = torch.full((2, 5, 4), -1.0)
    expected[0, :3], expected[1] = values[:3], values[3:8]
    torch.testing.assert_close(out, expected)
    torch.testing.assert_close(buf[:8, :4], values)


def _remembered_add(monkeypatch, offsets):
    """(values, out, call): the jagged add of ``values`` to itself into ``out``
    over ``offsets``, with the offsets' reads remembered per state as on a GPU
    (where there is none, the CPU stands in for it)."""
    from examples import jagged as ex
    from ntsym import jagged_launch

    if not torch.cuda.is_available():
        monkeypatch.setattr(jagged_launch, "REMEMBERED", frozenset({"cpu"}))
    values, out = torch.randn(10, 4), torch.zeros(10, 4)

    def call():
        ex.add_kernel(ntsym.jagged(values, offsets), ntsym.jagged(values, offsets), ntsym.jagged(out, offsets))

    return values, out, call


def test_offsets_are_read_once_per_state_where_remembered(monkeypatch):
    # On a GPU an unchanged offsets tensor is validated once (its read is a
    # synchronisation).
    from ntsym import jagged_launch

    offsets = torch.tensor([0, 3, 10])
    values, out, call = _remembered_add(monkeypatch, offsets)
    before = jagged_launch.stats_reads
    call()
    call()
    torch.testing.assert_close(out, 2 * values)
    assert jagged_launch.stats_reads - before == 1
    offsets[2] = 14  # in place: the version counter moves, and the offsets are read again
    with pytest.raises(ntsym.LaunchError, match="last offset is 14"):
        call()
    assert jagged_launch.stats_reads - before == 2
    offsets[2] = 8
    out.zero_()
    call()
    torch.testing.assert_close(out[:8], 2 * values[:8])
    assert jagged_launch.stats_reads - before == 3


def test_strided_offsets_are_copied_and_read_once_per_state_where_remembered(monkeypatch):
    """Offsets that are a strided view are copied for the kernel; the copy is
    made (and read) once per state of the view, not on every call."""
    from ntsym import jagged_launch

    offsets = torch.tensor([0, 99, 3, 99, 10])[::2]  # [0, 3, 10], not contiguous
    values, out, call = _remembered_add(monkeypatch, offsets)
    before = jagged_launch.stats_reads
    call()
    call()
    torch.testing.assert_close(out, 2 * values)
    assert jagged_launch.stats_reads - before == 1


@pytest.mark.skipif(torch.cuda.is_available(), reason="kernels run on the GPU where there is one")
def test_offsets_on_the_cpu_are_read_on_every_call():
    from examples import jagged as ex
    from ntsym import jagged_launch

    values, offsets, out = torch.randn(10, 4), torch.tensor([0, 3, 10]), torch.zeros(10, 4)
    before = jagged_launch.stats_reads
    for _ in range(2):
        ex.add_kernel(ntsym.jagged(values, offsets), ntsym.jagged(values, offsets), ntsym.jagged(out, offsets))
    assert jagged_launch.stats_reads - before == 2 * 3  # three jagged arguments, two calls
