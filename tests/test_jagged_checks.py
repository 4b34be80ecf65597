"""What the launchers check of jagged arguments, from their data: offsets the
kernel reads as validated (a strided view of them included), written values
refused as dense outputs are (stride 0, overlapping elements), offsets that
share memory with a written tensor, sequences of different lengths where a
loop over one tensor's blocks indexes another's, and the same checks in a
standalone module (``kernel.export``)."""

import importlib.util

import pytest
import torch

import ntsym
import ntsym.language as ntl
from examples import varlen_sdpa
from ntsym import LaunchError, Tensor


def _double_arrangement(input, output, BJ=ntsym.block_size(), BD=ntsym.block_size()):
    return input.tile((1, BJ, BD)), output.tile((1, BJ, BD))


def _double(input, output):
    output = input * 2  # noqa: F841


def _copy(input, output):
    output = input  # noqa: F841


def _kernel(application=_double):
    return ntsym.make(_double_arrangement, application, (Tensor(3, jagged_dim=1), Tensor(3, jagged_dim=1)))


def test_strided_offsets_are_read_as_they_were_validated():
    values = torch.arange(24.0).reshape(12, 2)
    offsets = torch.tensor([0, 1, 6, 2, 12, 3])[::2]  # [0, 6, 12], every other entry
    out = torch.full((12, 2), -1.0)
    _kernel()(ntsym.jagged(values, offsets), ntsym.jagged(out, offsets))
    assert torch.equal(out, 2 * values)


def test_offsets_of_one_pointer_and_other_strides_are_compared_by_value():
    storage = torch.tensor([0, 2, 4, 4, 8])
    values, out = torch.randn(8, 2), torch.zeros(8, 2)
    with pytest.raises(LaunchError, match="`input` and `output` must hold sequences of the same lengths"):
        _kernel()(ntsym.jagged(values, storage[:3]), ntsym.jagged(out, storage[::2]))  # [0, 2, 4] and [0, 4, 8]
    assert torch.equal(out, torch.zeros(8, 2))


@pytest.mark.parametrize("make_out, refusal", [
    (lambda: torch.zeros(4, 1).expand(4, 2), r"`output` is written by the kernel but dimension 2 .* stride 0"),
    (lambda: torch.zeros(5).as_strided((4, 2), (1, 1)), "`output` is written by the kernel but its elements overlap"),
])
def test_written_values_are_refused_where_a_dense_output_is(make_out, refusal):
    values, offsets = torch.arange(8.0).reshape(4, 2), torch.tensor([0, 2, 4])
    with pytest.raises(LaunchError, match=refusal):
        _kernel()(ntsym.jagged(values, offsets), ntsym.jagged(make_out(), offsets))


def test_offsets_sharing_memory_with_an_output_are_refused():
    x = torch.tensor([[0], [3], [2], [3]])
    buf = torch.tensor([0, 2, 4, -1])  # the output, whose first three entries are the offsets
    with pytest.raises(LaunchError, match="the offsets of `input` share memory with `output`"):
        _kernel(_copy)(ntsym.jagged(x, buf[:3]), ntsym.jagged(buf.view(4, 1), buf[:3]))
    assert buf.tolist() == [0, 2, 4, -1]


def test_offsets_beside_the_output_in_one_buffer_run():
    x = torch.tensor([[0], [3], [2], [3]])
    buf = torch.tensor([0, 2, 4, -1, -1, -1, -1])
    _kernel(_copy)(ntsym.jagged(x, buf[:3]), ntsym.jagged(buf[3:].view(4, 1), buf[:3]))
    assert buf[3:].tolist() == [0, 3, 2, 3]


def _attention_inputs(ck, cv):
    torch.manual_seed(0)
    cq = torch.tensor([0, 4, 8])
    q, k, v = torch.randn(8, 1, 16), torch.randn(int(ck[-1]), 1, 16), torch.randn(int(cv[-1]), 1, 16)
    return (ntsym.jagged(q, cq), ntsym.jagged(k, ck), ntsym.jagged(v, cv), 0.25, False,
            ntsym.jagged(torch.zeros(8, 1, 16), cq))


def test_keys_and_values_of_other_lengths_are_refused():
    """The loop over `k`'s blocks of its sequence indexes `v`'s: the dense
    kernel checks `v.shape[2] == k.shape[2]`, the jagged one each length."""
    args = _attention_inputs(torch.tensor([0, 3, 8]), torch.tensor([0, 5, 8]))
    with pytest.raises(LaunchError, match="`k` and `v` must hold sequences of the same lengths, but sequence 0 "
                                          "has 3 rows in `k` and 5 in `v`"):
        varlen_sdpa.kernel(*args)
    assert not args[-1].values.any()


def test_keys_and_values_of_the_same_lengths_at_other_offsets_run():
    q, k, v, scale, causal, o = _attention_inputs(torch.tensor([0, 3, 8]), torch.tensor([2, 5, 10]))
    varlen_sdpa.kernel(q, k, v, scale, causal, o)
    for b in range(2):
        qs, ks, vs = (t.values[int(t.offsets[b]):int(t.offsets[b + 1]), 0] for t in (q, k, v))
        expected = torch.softmax(qs @ ks.T * scale, -1) @ vs
        torch.testing.assert_close(o.values[int(o.offsets[b]):int(o.offsets[b + 1]), 0], expected,
                                   atol=1e-4, rtol=1e-4)


def _exported(kernel, path):
    spec = importlib.util.spec_from_file_location(path.stem, kernel.export(path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _view(values, offsets):
    """The view ntsym's launcher passes the kernel: from the values' first row, the longest sequence."""
    longest = int(offsets.diff().max())
    return values.as_strided((offsets.numel() - 1, longest, *values.shape[1:]), (0, *values.stride()),
                             values.storage_offset())


def test_the_exported_module_validates_offsets(tmp_path):
    module = _exported(_kernel(), tmp_path / "jagged_double_standalone.py")
    values, out = torch.arange(8.0).reshape(4, 2), torch.full((4, 2), -1.0)
    good, other = torch.tensor([0, 2, 4]), torch.tensor([1, 2, 4])
    with pytest.raises(ValueError, match="`input` and `output` must hold sequences of the same lengths"):
        module.launch(_view(values, good), _view(out, other), good, other)
    bad = torch.tensor([0, 3, 1])
    with pytest.raises(ValueError, match=r"`input`: the offsets must not decrease, but offsets\[2\] = 1"):
        module.launch(_view(values, torch.tensor([0, 3, 3])), _view(out, torch.tensor([0, 3, 3])), bad, bad)
    with pytest.raises(ValueError, match="the storage of the values ends before row 5"):
        far = torch.tensor([0, 2, 6])
        module.launch(_view(values, far), _view(out, far), far, far)
    with pytest.raises(ValueError, match="`output` is written by the kernel but its elements overlap"):
        module.launch(_view(values, good), _view(torch.zeros(5).as_strided((4, 2), (1, 1)), good), good, good)
    assert torch.equal(out, torch.full((4, 2), -1.0))
    strided = torch.tensor([0, 9, 2, 9, 4])[::2]
    module.launch(_view(values, good), _view(out, good), strided, strided)
    assert torch.equal(out, 2 * values)


def test_the_exported_module_compares_key_and_value_lengths(tmp_path):
    module = _exported(varlen_sdpa.kernel, tmp_path / "varlen_sdpa_standalone.py")
    q, k, v, scale, causal, o = _attention_inputs(torch.tensor([0, 3, 8]), torch.tensor([0, 5, 8]))
    views = [_view(t.values, t.offsets) for t in (q, k, v)]
    with pytest.raises(ValueError, match="`k` and `v` must hold sequences of the same lengths"):
        module.launch(*views, scale, causal, _view(o.values, o.offsets), q.offsets, k.offsets, v.offsets,
                      o.offsets)


def _chunks_arrangement(x, y, out):
    def chunks(t):
        arranged = t.tile((1, 4)).tile((1, -1))
        arranged.dtype = arranged.dtype.squeeze(0)
        arranged.dtype.dtype = arranged.dtype.dtype.squeeze(0)
        return arranged

    return chunks(x), chunks(y), out.tile((1,))


def _chunk_sum(x, y, out):
    acc = ntl.zeros(x.dtype.shape, dtype=ntl.float32)
    for k in range(y.shape[0]):
        acc += x[k]
    out = ntl.sum(acc)  # noqa: F841


def test_a_loop_over_another_sequences_chunks_needs_as_many_chunks():
    kernel = ntsym.make(_chunks_arrangement, _chunk_sum, (Tensor(2, jagged_dim=1), Tensor(2, jagged_dim=1), Tensor(1)))
    x, out = ntsym.jagged(torch.randn(10), torch.tensor([0, 6, 10])), torch.zeros(2)
    with pytest.raises(LaunchError, match="same number of blocks of 4 rows, but sequence 0 has 6 rows in `x` "
                                          "and 12 in `y`"):
        kernel(x, ntsym.jagged(torch.randn(16), torch.tensor([0, 12, 16])), out)
    kernel(x, ntsym.jagged(torch.randn(12), torch.tensor([0, 8, 12])), out)  # 2 and 1 chunks each
    torch.testing.assert_close(out, torch.stack([x.values[:6].sum(), x.values[6:].sum()]))


def _rows_times_table_arrangement(x, w, o, B=ntsym.block_size(lower_bound=16, upper_bound=16)):
    xa = x.tile((1, B, -1)).tile((1, -1, 1))
    xa.dtype = xa.dtype.squeeze((0, 2))
    xa.dtype.dtype = xa.dtype.dtype.squeeze(0)
    wa = w.tile((B, -1)).tile((-1, 1))
    wa = wa.expand((xa.shape[0], -1))
    wa.dtype = wa.dtype.squeeze(1)
    return xa, wa, o.tile((1, -1))


def _rows_times_table(x, w, o):
    acc = ntl.zeros((x.dtype.shape[1],), dtype=ntl.float32)
    for i in range(x.shape[0]):
        acc += ntl.sum(x[i] * w[i], 0)
    o = acc[None, :]  # noqa: F841


def test_a_loop_over_a_sequences_blocks_may_read_a_dense_table():
    """A loop over a jagged tensor's blocks of its sequence reading the same
    positions of a dense table: no launch check can compare a sequence's
    length with the table's, and none is needed (the loads past the shorter
    one are masked), so it runs, as NineToothed runs it."""
    kernel = ntsym.make(_rows_times_table_arrangement, _rows_times_table,
                        (Tensor(3, jagged_dim=1), Tensor(2), Tensor(2)))
    offsets, values, w = torch.tensor([0, 5, 25, 26]), torch.randn(26, 4), torch.randn(40, 4)
    o = torch.zeros(3, 4)
    kernel(ntsym.jagged(values, offsets), w, o)
    expected = torch.stack([(values[offsets[b]:offsets[b + 1]] * w[:offsets[b + 1] - offsets[b]]).sum(0)
                            for b in range(3)])
    torch.testing.assert_close(o, expected, atol=1e-5, rtol=1e-5)
