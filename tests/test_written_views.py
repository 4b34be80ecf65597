"""A kernel that writes one view of a buffer while reading another view of it:
the decode step of attention with a KV cache, which writes the new key and
value into the cache's next slot (passed as arguments of their own) and
attends over the cache up to that slot.  The views share memory but no
element, so the launch accepts them and the result is torch's; where a view
read holds an element a view written holds, the result would depend on the
order of the programs' (and their threads') reads and writes, and the launch
refuses it, naming both tensors and a shared element."""

import pytest
import torch

import ntsym
import ntsym.language as ntl
from ntsym import Tensor
from ntsym.errors import LaunchError

B = ntsym.block_size(lower_bound=2, upper_bound=16)


def _one_row(t):
    """A (rows, n, d) tensor, one program per row: a (1, n, d) tile."""
    return t.tile((1, -1, -1))


def decode_app(q, k_new, v_new, k_past, v_past, k_slot, v_slot, out):
    k_slot = k_new  # noqa: F841
    v_slot = v_new  # noqa: F841
    s = ntl.sum(q * k_past, 2, keep_dims=True)  # (1, P, 1): the past positions' scores
    s_new = ntl.sum(q * k_new, 2, keep_dims=True)  # (1, 1, 1): the new position's
    m = ntl.maximum(ntl.max(s, 1, keep_dims=True), s_new)
    p = ntl.exp(s - m)
    p_new = ntl.exp(s_new - m)
    denom = ntl.sum(p, 1, keep_dims=True) + p_new
    out = (ntl.sum(p * v_past, 1, keep_dims=True) + p_new * v_new) / denom  # noqa: F841


decode = ntsym.make(lambda *ts: tuple(_one_row(t) for t in ts), decode_app, tuple(Tensor(3) for _ in range(8)))


def _reference(q, k, v):
    """Attention of each row's one query over its keys and values."""
    weights = torch.softmax((q * k).sum(-1), dim=-1)  # (rows, n)
    return (weights[..., None] * v).sum(1, keepdim=True)


def _caches(rows=3, length=8, d=4):
    torch.manual_seed(0)
    return torch.randn(rows, length, d), torch.randn(rows, length, d)


@pytest.mark.parametrize("pos", [1, 5])
def test_decode_step_writes_the_slot_and_attends_over_the_cache_before_it(pos):
    k_cache, v_cache = _caches()
    q, k_new, v_new = (torch.randn(3, 1, 4) for _ in range(3))
    expected_k, expected_v = k_cache.clone(), v_cache.clone()
    expected_k[:, pos] = k_new[:, 0]
    expected_v[:, pos] = v_new[:, 0]
    expected = _reference(q, expected_k[:, :pos + 1], expected_v[:, :pos + 1])
    out = torch.empty(3, 1, 4)
    decode(q, k_new, v_new, k_cache[:, :pos], v_cache[:, :pos], k_cache[:, pos:pos + 1],
           v_cache[:, pos:pos + 1], out)
    torch.testing.assert_close(out, expected)
    torch.testing.assert_close(k_cache, expected_k)
    torch.testing.assert_close(v_cache, expected_v)


def test_keys_and_values_in_one_buffer_write_their_own_slots():
    """One buffer holds keys and values, (2, rows, length, d): the two slots
    written and the two prefixes read are four views with no element in common."""
    kv = torch.randn(2, 3, 8, 4)
    q, k_new, v_new = (torch.randn(3, 1, 4) for _ in range(3))
    expected_kv = kv.clone()
    expected_kv[0, :, 4], expected_kv[1, :, 4] = k_new[:, 0], v_new[:, 0]
    expected = _reference(q, expected_kv[0, :, :5], expected_kv[1, :, :5])
    out = torch.empty(3, 1, 4)
    decode(q, k_new, v_new, kv[0, :, :4], kv[1, :, :4], kv[0, :, 4:5], kv[1, :, 4:5], out)
    torch.testing.assert_close(out, expected)
    torch.testing.assert_close(kv, expected_kv)


def test_a_cache_read_through_the_slot_it_writes_is_refused():
    """Reading the whole cache, the slot included, while writing the slot: a
    program would read the slot before or after it is written."""
    k_cache, v_cache = _caches()
    before = k_cache.clone(), v_cache.clone()
    q, k_new, v_new = (torch.randn(3, 1, 4) for _ in range(3))
    out = torch.zeros(3, 1, 4)
    with pytest.raises(LaunchError, match=r"`k_past` and `k_slot` share memory and the kernel writes `k_slot`\n"
                                          r"`k_past`\[0, 5, 0\] is `k_slot`\[0, 0, 0\], one of 12 elements"):
        decode(q, k_new, v_new, k_cache, v_cache, k_cache[:, 5:6], v_cache[:, 5:6], out)
    assert torch.equal(k_cache, before[0]) and torch.equal(v_cache, before[1])
    assert (out == 0).all()


def shift_app(x, y):
    y = x + 1  # noqa: F841


shift = ntsym.make(lambda x, y: (x.tile((B,)), y.tile((B,))), shift_app, (Tensor(1), Tensor(1)))


def test_every_other_element_written_from_the_ones_between():
    """Interleaved views (even positions written from the odd ones): their
    byte ranges overlap, their elements do not."""
    buf = torch.randn(20)
    expected = buf.clone()
    expected[0::2] = buf[1::2] + 1
    shift(buf[1::2], buf[0::2], B=4)
    torch.testing.assert_close(buf, expected)


def test_a_read_view_that_reaches_other_programs_writes_is_refused():
    """`y` is `x` moved by one element: program k writes what program k + 1
    reads (or has read), in no fixed order."""
    buf = torch.randn(12)
    before = buf.clone()
    with pytest.raises(LaunchError, match=r"`x` and `y` share memory and the kernel writes `y`\n`x`\[0\] is "
                                          r"`y`\[1\], one of 10 elements the two views share"):
        shift(buf[1:], buf[:-1][:11], B=4)
    assert torch.equal(buf, before)


def raw_app(x, y):
    y = x + x.source.data_ptr().to(x.dtype) * 0  # noqa: F841


def test_a_tensor_addressed_through_its_pointer_is_never_taken_apart():
    """`x.source.data_ptr()` lets the application reach past the view, so
    separate elements prove nothing: views sharing memory are refused."""
    k = ntsym.make(lambda x, y: (x.tile((B,)), y.tile((B,))), raw_app, (Tensor(1), Tensor(1)))
    buf = torch.randn(16)
    with pytest.raises(LaunchError, match="the kernel addresses `x` past its view"):
        k(buf[1::2], buf[0::2], B=4)


def _brute_shared(a, b):
    """How many elements of `a` have the address of an element of `b`."""
    def addresses(t):
        offsets = torch.zeros(t.shape, dtype=torch.int64)
        for d, (n, st) in enumerate(zip(t.shape, t.stride())):
            view = [1] * t.ndim
            view[d] = n
            offsets = offsets + (torch.arange(n) * st).reshape(view)
        return (offsets.reshape(-1) * t.element_size() + t.data_ptr()).tolist()
    theirs = set(addresses(b))
    return sum(1 for x in addresses(a) if x in theirs)


def test_shared_elements_against_every_address():
    """`ntsym_codegen.overlap.shared_elements` on views of one buffer (slices,
    steps, transposes, sliding windows that overlap themselves), against a
    comparison of every address; the element it names is in both."""
    from ntsym_codegen.overlap import shared_elements

    buf = torch.arange(64.0)
    views = [buf[:10], buf[10:20], buf[::2], buf[1::2], buf[3::5], buf[:48].view(6, 8)[:, 2:5],
             buf[:48].view(6, 8)[1::2, ::3], buf[:48].view(6, 8).t(), buf.as_strided((5, 4), (3, 1)),
             buf.as_strided((4, 3), (4, 3), 7), buf[:8].expand(3, 8), buf[40:64].view(2, 3, 4).permute(2, 0, 1)]
    for a in views:
        for b in views:
            shared = shared_elements(a, b)
            count = _brute_shared(a, b)
            if count == 0:
                assert shared is None, (a.shape, a.stride(), b.shape, b.stride())
                continue
            first, second, found = shared
            assert a[first].data_ptr() == b[second].data_ptr()
            assert found in (count, _brute_shared(b, a))


def test_a_call_seen_before_checks_the_views_it_is_given_again():
    """The same shapes and strides again (a launch that skips validation):
    views apart run, views sharing elements are refused."""
    buf = torch.randn(22)
    expected = buf.clone()
    expected[0:20:2] = buf[1:21:2] + 1
    shift(buf[1:21:2], buf[0:20:2], B=4)
    expected[1:21:2] = expected[0:20:2] + 1
    shift(buf[0:20:2], buf[1:21:2], B=4)  # the same call shape, other pointers
    torch.testing.assert_close(buf, expected)
    before = buf.clone()
    with pytest.raises(LaunchError, match=r"`x`\[0\] is `y`\[1\], one of 9 elements the two views share"):
        shift(buf[2:22:2], buf[0:20:2], B=4)
    assert torch.equal(buf, before)


def test_a_view_of_the_same_bytes_with_wider_elements_is_not_the_same_view():
    # A float32 output over an int8 input's bytes has its pointer, shape and
    # strides, but each of its elements spans four of the input's: a program's
    # stores would overwrite input bytes other programs have not read yet.
    def app(x, y):
        y = x  # noqa: F841

    kernel = ntsym.make(lambda x, y: (x.tile((4,)), y.tile((4,))), app, (Tensor(1), Tensor(1)))
    buffer = torch.zeros(16, dtype=torch.float32)
    x = buffer.view(torch.int8)[:16]
    x.copy_(torch.arange(16, dtype=torch.int8))
    with pytest.raises(LaunchError, match="share memory"):
        kernel(x, buffer)
    same = torch.arange(16, dtype=torch.float32)
    kernel(same, same)  # one and the same view: in place, as proved
    torch.testing.assert_close(same, torch.arange(16, dtype=torch.float32))


def _chunked(application):
    def arrangement(x, y):
        return x.tile((2,)).tile((-1,)), y.tile((2,)).tile((-1,))

    return ntsym.make(arrangement, application, (Tensor(1), Tensor(1)))


def test_in_place_is_refused_where_a_program_reads_what_it_wrote():
    # One view for `x` and `y`: the arrangements match and no two programs
    # meet, but inside the program `x[0]` is read after `y[0]` (the same
    # elements) was written.
    def swap(x, y):
        y[0] = x[1]
        y[1] = x[0]

    def from_the_first_chunk(x, y):
        for k in range(x.shape[0]):
            y[k] = x[k] + x[0]  # x[0] read again after the first iteration wrote y[0]

    for app, why in ((swap, "reads `x` after it writes `y`"), (from_the_first_chunk, "in an iteration after")):
        kernel = _chunked(app)
        buffer = torch.arange(1.0, 7.0)
        with pytest.raises(LaunchError, match=why):
            kernel(buffer, buffer)
        separate = torch.empty(6)
        kernel(torch.arange(1.0, 7.0), separate)  # a separate output is as before


def _ones_then_twos_if_positive(x, y):
    y = ntl.zeros(y.shape, dtype=ntl.float32) + 1.0  # noqa: F841
    if ntl.sum(x, 0) > 0:  # x first read here, after y was stored
        y = ntl.zeros(y.shape, dtype=ntl.float32) + 2.0  # noqa: F841


def _store_then_read(a, b):
    b = ntl.zeros(b.shape, dtype=ntl.float32) + 1.0  # noqa: F841
    b = a * 3.0  # noqa: F841


def _in_a_condition(x, y):
    _ones_then_twos_if_positive(x, y)


def _in_a_helper(x, y):
    _store_then_read(x, y)


def _in_a_range(x, y):
    y = ntl.zeros(y.shape, dtype=ntl.float32) + 1.0  # noqa: F841
    for _ in range(ntl.sum(x, 0).to(ntl.int32) + 2):
        y = ntl.zeros(y.shape, dtype=ntl.float32) + 5.0  # noqa: F841


@pytest.mark.parametrize("application", [_ones_then_twos_if_positive, _in_a_condition, _in_a_helper, _in_a_range])
def test_in_place_is_refused_where_a_condition_a_range_or_a_helper_reads_after_a_write(application):
    kernel = ntsym.make(lambda x, y: (x.tile((4,)), y.tile((4,))), application, (Tensor(1), Tensor(1)))
    separate = torch.zeros(8)
    kernel(-torch.ones(8), separate)
    buffer = -torch.ones(8)
    with pytest.raises(LaunchError, match="after it writes"):
        kernel(buffer, buffer)
    assert torch.equal(buffer, -torch.ones(8))


def test_in_place_through_a_helper_that_reads_before_it_writes_runs():
    def double(a, b):
        b = a * 2.0  # noqa: F841

    def application(x, y):
        double(x, y)

    kernel = ntsym.make(lambda x, y: (x.tile((4,)), y.tile((4,))), application, (Tensor(1), Tensor(1)))
    buffer = torch.arange(8.0)
    kernel(buffer, buffer)
    assert torch.equal(buffer, torch.arange(8.0) * 2)


def test_in_place_is_kept_where_every_read_comes_before_the_writes_it_meets():
    def swap_after_loading(x, y):  # both halves loaded before either is stored (as the RoPE example does)
        a = x[0]
        b = x[1]
        y[0] = b
        y[1] = a

    def chunk_by_chunk(x, y):
        for k in range(x.shape[0]):
            y[k] = x[k] * 2  # each iteration reads the chunk it then writes

    buffer = torch.arange(1.0, 7.0)
    _chunked(swap_after_loading)(buffer, buffer)
    torch.testing.assert_close(buffer, torch.tensor([3.0, 4.0, 1.0, 2.0, 5.0, 6.0]))
    buffer = torch.arange(1.0, 7.0)
    _chunked(chunk_by_chunk)(buffer, buffer)
    torch.testing.assert_close(buffer, torch.arange(1.0, 7.0) * 2)


def test_views_of_one_storage_in_other_element_types_through_the_interpreter():
    # Without a GPU, bfloat16 and fp8 tensors run as float32 copies of their
    # storage: a copy per element type (an fp8 view does not read the bf16
    # view's copy), and only the written views' elements copied back (an
    # output of another type in the same storage keeps what the kernel wrote).
    from ntsym_codegen import runtime

    if not runtime.interpreting():
        pytest.skip("the CPU interpreter's staging")

    def app(x, a, b):
        a = x * 2  # noqa: F841
        b = x + 1  # noqa: F841

    kernel = ntsym.make(lambda x, a, b: (x.tile((4,)), a.tile((4,)), b.tile((4,))), app,
                        tuple(Tensor(1) for _ in range(3)))
    x = torch.arange(8, dtype=torch.float32)
    buffer = torch.zeros(48, dtype=torch.uint8)
    a, b = buffer[:16].view(torch.bfloat16), buffer[16:48].view(torch.float32)
    kernel(x, a, b)
    torch.testing.assert_close(a, (x * 2).to(torch.bfloat16))
    torch.testing.assert_close(b, x + 1)

    def copies(x, z, o1, o2):
        o1 = x  # noqa: F841
        o2 = z  # noqa: F841

    kernel = ntsym.make(lambda *t: tuple(u.tile((4,)) for u in t), copies, tuple(Tensor(1) for _ in range(4)))
    buffer = torch.zeros(24, dtype=torch.uint8)
    z, x = buffer[:8].view(torch.float8_e4m3fn), buffer[8:24].view(torch.bfloat16)
    x.copy_(torch.arange(8.0))
    z.copy_(torch.arange(8.0) + 0.5)
    o1, o2 = torch.zeros(8), torch.zeros(8)
    kernel(x, z, o1, o2)
    torch.testing.assert_close(o1, x.float())
    torch.testing.assert_close(o2, z.float())
