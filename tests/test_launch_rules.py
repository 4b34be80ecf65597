"""Programs NineToothed runs correctly are launched, not refused: a refusal is
right only where the program, at the sizes given, would compute a wrong
result.  Each test is written from the construct, at tiny sizes, and
compares with torch."""

import pytest
import torch

import ntsym
import ntsym.language as ntl
from ntsym import Tensor


# -- a tensor the kernel never reads or writes --------------------------------


def _masked_add(x, m, with_mask, out):
    if with_mask:
        out = x + m  # noqa: F841
    else:
        out = x * 2  # noqa: F841


def _masked_add_arrangement(x, m, with_mask, out, BLOCK=ntsym.block_size()):
    return x.tile((BLOCK,)), m.tile((BLOCK,)), with_mask, out.tile((BLOCK,))


def _masked_add_kernel(with_mask):
    tensors = (Tensor(1), Tensor(1), Tensor(0, constexpr=True, value=with_mask), Tensor(1))
    return ntsym.make(_masked_add_arrangement, _masked_add, tensors)


def test_a_tensor_behind_a_branch_compiled_away_may_be_on_meta():
    kernel = _masked_add_kernel(False)
    x = torch.randn(10)
    for _ in range(2):  # the first launch validates; the second takes the fast path
        out = torch.empty(10)
        kernel(x, torch.empty(10, device="meta"), out, BLOCK=32)
        torch.testing.assert_close(out, x * 2)
    assert "m_ptr +" not in kernel.kernel_source  # the mask is never loaded


def test_the_branch_taken_reads_the_tensor():
    kernel = _masked_add_kernel(True)
    x, m, out = torch.randn(10), torch.randn(10), torch.empty(10)
    kernel(x, m, out, BLOCK=32)
    torch.testing.assert_close(out, x + m)


# -- plain values among `tensors` ----------------------------------------------


def _window(input, output, window, BLOCK=ntsym.block_size()):
    return input[window].tile((BLOCK, BLOCK)), output.tile((BLOCK, BLOCK))


def _doubled(input, output):
    output = input * 2  # noqa: F841


def test_a_tuple_of_slices_among_the_tensors_goes_to_the_arrangement():
    window = (slice(0, 8), slice(2, 9))
    kernel = ntsym.make(_window, _doubled, (Tensor(2), Tensor(2), window))
    x = torch.randn(8, 11)
    out = torch.empty(8, 7)
    kernel(x, out, BLOCK=32)  # the launcher takes the tensors only, as NineToothed's
    torch.testing.assert_close(out, x[window] * 2)


# -- expand over a dimension of size 0 -----------------------------------------


def _bias_add_arrangement(x, bias, out, BLOCK=ntsym.block_size()):
    x_arranged = x.tile((1, BLOCK))
    bias_arranged = bias.tile((1, BLOCK)).expand((x_arranged.shape[0], -1))
    return x_arranged, bias_arranged, out.tile((1, BLOCK))


def _add(x, bias, out):
    out = x + bias  # noqa: F841


def test_expand_of_an_empty_dimension_launches_nothing():
    kernel = ntsym.make(_bias_add_arrangement, _add, (Tensor(2), Tensor(2), Tensor(2)))
    x, bias = torch.randn(3, 5), torch.randn(1, 5)
    out = torch.empty(3, 5)
    kernel(x, bias, out, BLOCK=32)
    torch.testing.assert_close(out, x + bias)
    # An empty batch: torch broadcasts (0, 5) with (0, 5); no program runs.
    x, bias, out = torch.randn(0, 5), torch.randn(0, 5), torch.empty(0, 5)
    kernel(x, bias, out, BLOCK=32)
    assert out.shape == (x + bias).shape


def test_expand_of_an_empty_dimension_beside_programs_is_refused():
    kernel = ntsym.make(_bias_add_arrangement, _add, (Tensor(2), Tensor(2), Tensor(2)))
    x, bias, out = torch.randn(3, 5), torch.randn(0, 5), torch.empty(3, 5)
    with pytest.raises(ntsym.LaunchError, match=r"bias.shape\[0\] \(=0\) must equal 1"):
        kernel(x, bias, out, BLOCK=32)  # torch cannot broadcast (0, 5) to (3, 5) either


def _expanded_only(x, BLOCK=ntsym.block_size()):
    return (x.expand((BLOCK,)).tile((BLOCK,)),)


def _names_only(x):
    x  # noqa: B018  (NineToothed's tests write an application that does nothing so)


def test_expand_of_an_empty_dimension_of_a_tensor_never_named_runs():
    """NineToothed's own test of ``expand``: the application names the
    tensor alone, reading nothing, so its size-0 dimension is no wrong
    result; a tensor the application reads stays refused (above)."""
    kernel = ntsym.make(_expanded_only, _names_only, (Tensor(1),))
    for size in (0, 1):
        kernel(torch.empty(size))
    assert "tl.load" not in kernel.source  # the bare name loads nothing
    with pytest.raises(ntsym.LaunchError, match=r"x.shape\[0\] \(=2\) must equal 1"):
        kernel(torch.empty(2))  # 2 is neither: the expand needs one element or none


def _jagged_expanded_over_the_batch(y, x, BLOCK=ntsym.block_size()):
    y_arranged = y.tile((1, -1))
    return y_arranged, x.tile((1, BLOCK)).tile((1, -1)).expand((y_arranged.shape[0], -1))


def _add_one(y, x):
    y = y + 1  # noqa: F841


def test_an_empty_batch_of_a_jagged_tensor_never_named_is_refused():
    """Every program reads a jagged tensor's offsets at its batch index,
    named or not: an empty batch (one offset) would be read past."""
    kernel = ntsym.make(_jagged_expanded_over_the_batch, _add_one, (Tensor(2), Tensor(2, jagged_dim=1)))
    y = torch.zeros(3, 4)
    kernel(y, ntsym.jagged(torch.randn(4), torch.tensor([0, 4], dtype=torch.int32)), BLOCK=32)
    torch.testing.assert_close(y, torch.ones(3, 4))
    with pytest.raises(ntsym.LaunchError, match=r"x.shape\[0\] \(=0\) must equal 1"):
        kernel(y, ntsym.jagged(torch.randn(0), torch.tensor([0], dtype=torch.int32)), BLOCK=32)


def _expanded_beside(x, y, BLOCK=ntsym.block_size()):
    return x.expand((BLOCK,)).tile((BLOCK,)), y.tile((-1,))


def _fills(x, y):
    y = ntl.full(y.shape, 7.0, dtype=ntl.float32)  # noqa: F841  (x never named)


def test_expand_of_a_never_named_tensor_keeps_its_requirement_where_a_named_one_shares_the_size():
    """The size-0 relaxation holds only where no named tensor shares the size:
    there the size-1 assumption is a fact of the named tensor's sizes too."""
    n = ntsym.Symbol("n")
    kernel = ntsym.make(_expanded_beside, _fills, (Tensor(shape=(n,)), Tensor(shape=(n,))))
    y = torch.zeros(1)
    kernel(torch.empty(1), y)
    assert torch.equal(y, torch.full((1,), 7.0))
    with pytest.raises(ntsym.LaunchError, match=r"x.shape\[0\] \(=0\) must equal 1"):
        kernel(torch.empty(0), torch.zeros(0))
    apart = ntsym.make(_expanded_beside, _fills, (Tensor(1), Tensor(1)))
    apart(torch.empty(0), torch.zeros(3))  # sizes of their own: moot at 0


def test_expand_of_an_empty_dimension_read_beside_a_program_is_refused():
    def read(x):
        x = x * 2  # noqa: F841  (reads x)

    kernel = ntsym.make(_expanded_only, read, (Tensor(1),))
    with pytest.raises(ntsym.LaunchError, match=r"x.shape\[0\] \(=0\) must equal 1"):
        kernel(torch.empty(0))


# -- outermost shapes of different lengths -------------------------------------


def _quantile_like_arrangement(input, q, output):
    input_arranged = input.tile((-1,))  # (1,)
    output_arranged = output.permute((1, 0)).tile((1, -1))  # (output.shape[1], 1)
    output_arranged.dtype = output_arranged.dtype.squeeze(0)
    q_arranged = q.tile((-1,)).squeeze(0).unsqueeze(0).unsqueeze(0)
    q_arranged = q_arranged.expand(output_arranged.shape)
    return input_arranged, q_arranged, output_arranged


def _scaled_sum(input, q, output):
    output = q * ntl.sum(input, 0)  # noqa: F841


def test_outermost_shapes_of_different_lengths_agree_where_a_size_is_one():
    kernel = ntsym.make(_quantile_like_arrangement, _scaled_sum, (Tensor(1), Tensor(1), Tensor(2)))
    x, q = torch.randn(7), torch.rand(3)
    out = torch.empty(3, 1)  # torch.quantile(x, q, dim=0, keepdim=True)'s shape
    kernel(x, q, out)
    torch.testing.assert_close(out, (q * x.sum())[:, None])
    # Two columns: one program (`input` has one tile) would write the first only.
    with pytest.raises(ntsym.LaunchError, match=r"output.shape\[1\] \(=2\) must equal 1"):
        kernel(x, q, torch.empty(3, 2))


# -- a tensor only read may have more outer tiles than there are programs --------


def _rows_arrangement(x, m, out, BLOCK=ntsym.block_size()):
    return x.tile((1, BLOCK)), m.tile((1, BLOCK)), out.tile((1, BLOCK))


def _add_rows(x, m, out):
    out = x + m  # noqa: F841


def test_a_tensor_only_read_may_have_more_tiles_than_programs():
    kernel = ntsym.make(_rows_arrangement, _add_rows, (Tensor(2), Tensor(2), Tensor(2)))
    x, m = torch.randn(2, 5), torch.randn(4, 5)  # programs read the first two rows of `m`
    out = torch.empty(2, 5)
    kernel(x, m, out, BLOCK=32)
    torch.testing.assert_close(out, x + m[:2])
    # Fewer rows than programs: the last program would read none.
    with pytest.raises(ntsym.LaunchError, match=r"x.shape\[0\] \(=2\) must be <= m.shape\[0\] \(=1\)"):
        kernel(x, torch.randn(1, 5), out, BLOCK=32)
    # A written tensor with more rows: no program would write the extra ones.
    with pytest.raises(ntsym.LaunchError, match=r"(?s)out.shape\[0\] \(=4\) must be <= x.shape\[0\] \(=2\).*no program "
                                                r"would write the extra ones"):
        kernel(x, m, torch.empty(4, 5), BLOCK=32)


# -- shape_options bounds -------------------------------------------------------


def _row_sum_arrangement(x, out):
    return x.tile((1, -1)), out.tile((1,))


def _row_sum(x, out):
    out = ntl.sum(x, 1)  # noqa: F841


def test_a_size_beyond_its_shape_options_upper_bound_computes():
    row = {"constexpr": True, "upper_bound": 8}
    kernel = ntsym.make(_row_sum_arrangement, _row_sum, (Tensor(2, shape_options=(None, row)), Tensor(1)))
    for n in (8, 20):  # the bound, and past it: NineToothed tunes with the bound, the result is the same
        x, out = torch.randn(3, n), torch.empty(3)
        kernel(x, out)
        torch.testing.assert_close(out, x.sum(1))


# -- the module names NineToothed users import ---------------------------------


def test_naming_marks_a_symbol_as_ninetoothed_names_do():
    from ntsym import naming

    block = naming.make_constexpr("BLOCK")
    assert naming.is_constexpr(block) and not naming.is_meta(block)
    assert naming.remove_prefixes(block) == "BLOCK"
    assert naming.is_meta(naming.make_meta("B")) and naming.is_constexpr(naming.make_meta("B"))
    symbol = ntsym.Symbol(block)  # the same as Symbol("BLOCK", constexpr=True)
    assert symbol.name == "BLOCK" and symbol.constexpr and not symbol.meta

    def arrangement(x, out, BLOCK=symbol):
        return x.tile((BLOCK,)), out.tile((BLOCK,))

    kernel = ntsym.make(arrangement, _doubled, (Tensor(1), Tensor(1)))
    x, out = torch.randn(10), torch.empty(10)
    kernel(x, out, BLOCK=4)  # given by its plain name, as NineToothed's launcher takes it
    torch.testing.assert_close(out, x * 2)


def test_generation_names_the_cache_of_generated_modules():
    from ntsym import generation

    kernel = ntsym.make(_window, _doubled, (Tensor(2), Tensor(2), (slice(0, 2), slice(0, 2))))
    path = generation.cache_source(kernel.source)
    assert path.parent == generation.CACHE_DIR and path.read_text().startswith(kernel.source)


def test_auto_tuner_calls_the_fastest_kernel(tmp_path, monkeypatch):
    from ntsym import auto_tuner

    monkeypatch.setattr(auto_tuner, "CACHE_DIR", tmp_path)
    calls = []

    def slow(x, out):
        calls.append("slow")
        torch.mul(x, 2, out=out)
        sum(range(200000))

    def fast(x, out):
        calls.append("fast")
        torch.mul(x, 2, out=out)

    tuner = auto_tuner.AutoTuner((slow, fast), ("slow", "fast"))
    x, out = torch.randn(8), torch.empty(8)
    tuner(x, out)
    torch.testing.assert_close(out, x * 2)
    calls.clear()
    tuner(x, out)
    assert calls == ["fast"]
    # Another process reads the timings from disk: no kernel is timed again.
    calls.clear()
    auto_tuner.AutoTuner((slow, fast), ("slow", "fast"))(x, out)
    assert calls == ["fast"]


def _add_rows_and_count(x, m, out):
    out = x + m + m.source.shape[0]  # noqa: F841


def test_a_read_tensor_with_more_tiles_keeps_its_own_sizes():
    kernel = ntsym.make(_rows_arrangement, _add_rows_and_count, (Tensor(2), Tensor(2), Tensor(2)))
    x, m, out = torch.randn(2, 5), torch.randn(4, 5), torch.empty(2, 5)
    kernel(x, m, out, BLOCK=32)
    torch.testing.assert_close(out, x + m[:2] + 4)


# -- a read tensor with more windows than programs ------------------------------


def _window_sums_arrangement(out, x):
    return out.tile((1,)), x.tile((3,), strides=(1,))


def _window_sums(out, x):
    out = ntl.sum(x, 0)  # noqa: F841


def test_a_read_tensor_may_have_more_windows_than_programs():
    """Sums of windows of 3: `x` of 10 elements has 8 windows, the output
    may take the first 8 or fewer (each program reads the window at its
    index, as NineToothed's do; the rest are not read), not more."""
    kernel = ntsym.make(_window_sums_arrangement, _window_sums, (Tensor(1), Tensor(1)))
    x = torch.randn(10)
    for n in (8, 5, 1):
        out = torch.full((n,), float("nan"))
        kernel(out, x)
        torch.testing.assert_close(out, x.unfold(0, 3, 1).sum(1)[:n])
    out = torch.full((9,), float("nan"))
    with pytest.raises(ntsym.LaunchError, match=r"(?s)out.shape\[0\] \(=9\) must be <= x.shape\[0\] - 2 \(=8, "
                                                r"x.shape\[0\]=10\).*would read none of its elements"):
        kernel(out, x)
    assert out.isnan().all()


def _window_sums_x_first(x, out):
    out = ntl.sum(x, 0)  # noqa: F841


def test_a_tensor_only_stored_to_beside_more_windows():
    """With `x` first, its 8 windows are the programs; `out`, which the
    application only assigns, may have fewer tiles (5): the programs past its
    last tile store nothing (masked by its own size, as in NineToothed), and
    the elements after it are untouched.  More tiles than programs are
    refused: no program would write them."""
    kernel = ntsym.make(lambda x, out: _window_sums_arrangement(out, x)[::-1], _window_sums_x_first,
                        (Tensor(1), Tensor(1)))
    x, buf = torch.randn(10), torch.full((9,), float("nan"))
    kernel(x, buf[:5])
    torch.testing.assert_close(buf[:5], x.unfold(0, 3, 1).sum(1)[:5])
    assert buf[5:].isnan().all()
    with pytest.raises(ntsym.LaunchError, match=r"out.shape\[0\] \(=9\) must be <= x.shape\[0\] - 2 "
                                                r"\(=8, x.shape\[0\]=10\)"):
        kernel(x, buf)


def _stride_of_a_size(y, x):
    return y.tile((1,), strides=(x.shape[0],)), x.tile((1,))


def _add_one(y, x):
    y = y + 1.0  # noqa: F841


def test_a_tile_stride_taken_from_a_size_of_0_is_a_launch_error():
    kernel = ntsym.make(_stride_of_a_size, _add_one, (Tensor(1), Tensor(1)))
    with pytest.raises(ntsym.LaunchError, match=r"divides by a size that is 0.*x \(0,\)"):
        kernel(torch.zeros(10), torch.zeros(0))
