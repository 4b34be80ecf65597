"""The ten example kernels (``examples/``) against their torch references.

Shapes are small (Triton's interpreter runs these on a CPU) and mostly do not
divide the block sizes; each op also gets strided or transposed inputs.  Every
reference is computed in float32 from the same (possibly low-precision) inputs.

Tolerances (``atol = rtol``): float32 1e-5 for element-wise and row-wise ops,
1e-4 for the ``dot``-based ones (mm, addmm, bmm, conv2d, sdpa; 3e-2 on a GPU,
where float32 ``dot`` runs in TF32); float16 1e-2; bfloat16 2e-2.

dtypes: float32, float16 and bfloat16 for every op (under Triton's
interpreter, ntsym stages bfloat16 through float32, whose own bfloat16
arithmetic and ``dot`` are wrong); the extra cases (strides, dims, block
sizes) in float32.
"""

import pytest
import torch
import torch.nn.functional as F

import ntsym  # noqa: F401  (without a GPU, selects the interpreter before triton loads)
from examples import add, addmm, bmm, conv2d, fp8_mm, mm, rms_norm, rope, rope_interleaved, sdpa, silu, softmax

# Every test runs twice: loops address tiles from the index, then advance pointers.
pytestmark = pytest.mark.usefixtures("loop_addressing")

TOL = {
    torch.float32: dict(atol=1e-5, rtol=1e-5),
    torch.float16: dict(atol=1e-2, rtol=1e-2),
    torch.bfloat16: dict(atol=2e-2, rtol=2e-2),
}
FP32_DOT = 3e-2 if torch.cuda.is_available() else 1e-4
GEMM_TOL = {**TOL, torch.float32: dict(atol=FP32_DOT, rtol=FP32_DOT)}

DTYPES = [torch.float32, torch.float16, torch.bfloat16]


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def check(out, ref, dtype, tol=TOL):
    assert out.dtype == dtype
    assert out.shape == ref.shape
    torch.testing.assert_close(out.float(), ref.float(), **tol[dtype])


def randn(*shape, dtype=torch.float32):
    return torch.randn(*shape).to(dtype)


# -- element-wise ---------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("size", [1, 1000])
def test_add(size, dtype):
    x, y = randn(size, dtype=dtype), randn(size, dtype=dtype)
    check(add.add(x, y), x.float() + y.float(), dtype)


def test_add_strided():
    x, y = randn(3000)[::3], randn(2000)[::2]
    check(add.add(x, y), x + y, torch.float32)


def test_add_refuses_operands_of_other_lengths_or_dtypes():
    """The kernel reads the first elements of a longer `other`; torch refuses
    the lengths, and promotes mixed dtypes where the kernel would store in
    `input`'s (an int `input` truncated a float `other`)."""
    with pytest.raises(ValueError, match="add"):
        add.add(randn(5), randn(7))
    with pytest.raises(ValueError, match="add"):
        add.add(torch.arange(5), randn(5))
    with pytest.raises(ValueError, match="add"):
        add.add(randn(5, dtype=torch.float16), randn(5))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1000,), (3, 7, 5)])
def test_silu(shape, dtype):
    x = randn(*shape, dtype=dtype)
    check(silu.silu(x), F.silu(x.float()), dtype)


def test_silu_and_rms_norm_refuse_integer_tensors():
    """torch refuses them; the kernels computed in float32 and stored a
    truncated integer."""
    x = torch.arange(12).reshape(3, 4)
    with pytest.raises(TypeError, match="silu: expected a floating-point tensor"):
        silu.silu(x)
    with pytest.raises(TypeError, match="rms_norm: expected a floating-point tensor"):
        rms_norm.rms_norm(x)


def test_silu_transposed():
    x = randn(20, 30).t()
    check(silu.silu(x), F.silu(x), torch.float32)


# -- row-wise -------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 300), (3, 17), (1, 1)])
def test_softmax(shape, dtype):
    x = randn(*shape, dtype=dtype)
    check(softmax.softmax(x), torch.softmax(x.float(), -1), dtype)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_dims_and_strides(dim):
    x = randn(6, 4, 9).transpose(0, 2)  # (9, 4, 6), not contiguous
    check(softmax.softmax(x, dim), torch.softmax(x, dim), torch.float32)


def test_softmax_large_magnitudes_and_inf():
    x = randn(3, 50) * 100
    x[1, ::3] = float("-inf")
    check(softmax.softmax(x), torch.softmax(x, -1), torch.float32)


@pytest.mark.parametrize("dtype", DTYPES)
def test_row_wise_long_rows(dtype):
    x = randn(2, 3000, dtype=dtype)
    check(softmax.softmax(x), torch.softmax(x.float(), -1), dtype)
    check(rms_norm.rms_norm(x), F.rms_norm(x.float(), (3000,), eps=1e-6), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 300), (3, 5, 33)])
def test_rms_norm(shape, dtype):
    x = randn(*shape, dtype=dtype)
    check(rms_norm.rms_norm(x), F.rms_norm(x.float(), shape[-1:], eps=1e-6), dtype)


def test_rms_norm_transposed_and_eps():
    x = randn(40, 6).t()
    check(rms_norm.rms_norm(x, eps=0.5), F.rms_norm(x, (40,), eps=0.5), torch.float32)


# -- GEMMs ------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m, k, n", [(50, 40, 30), (17, 70, 9)])
def test_mm(m, k, n, dtype):
    a, b = randn(m, k, dtype=dtype), randn(k, n, dtype=dtype)
    check(mm.mm(a, b), a.float() @ b.float(), dtype, GEMM_TOL)


def test_mm_transposed():
    a, b = randn(40, 50).t(), randn(30, 40).t()
    check(mm.mm(a, b), a @ b, torch.float32, GEMM_TOL)


@pytest.mark.parametrize("dtype", DTYPES)
def test_mm_small_blocks(dtype):
    """16x16x16 blocks: 4x2 programs, each looping over 7 blocks of K, the last partial."""
    a, b, c = randn(50, 100, dtype=dtype), randn(100, 30, dtype=dtype), torch.empty(50, 30, dtype=dtype)
    mm.kernel(a, b, c, BLOCK_SIZE_M=16, BLOCK_SIZE_N=16, BLOCK_SIZE_K=16)
    check(c, a.float() @ b.float(), dtype, GEMM_TOL)


def test_mm_shape_mismatch_is_caught_at_launch():
    with pytest.raises(ntsym.LaunchError):
        mm.mm(randn(5, 4), randn(3, 6))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("beta, alpha", [(1, 1), (0.5, -2.0)])
def test_addmm(beta, alpha, dtype):
    input, mat1, mat2 = randn(50, 30, dtype=dtype), randn(50, 40, dtype=dtype), randn(40, 30, dtype=dtype)
    reference = torch.addmm(input.float(), mat1.float(), mat2.float(), beta=beta, alpha=alpha)
    check(addmm.addmm(input, mat1, mat2, beta, alpha), reference, dtype, GEMM_TOL)


@pytest.mark.parametrize("out_dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("fp8", ["float8_e4m3fn", "float8_e5m2"])
def test_fp8_mm(fp8, out_dtype):
    """Per-tensor scales; ``b`` column-major (the fast layout on Hopper) and row-major;
    K = 70 leaves a partial block of K."""
    fp8 = getattr(torch, fp8)
    a = (randn(50, 70) * 3).to(fp8)
    b_t = (randn(30, 70) * 3).to(fp8)
    scale_a, scale_b = torch.tensor(0.37), torch.tensor(1.9)
    reference = (a.float() * scale_a) @ (b_t.float().t() * scale_b)
    for b in (b_t.t(), b_t.t().contiguous()):
        for fast in (False, True):
            check(fp8_mm.fp8_mm(a, b, scale_a, scale_b, out_dtype=out_dtype, use_fast_accum=fast),
                  reference, out_dtype, GEMM_TOL)
    assert "tl.dot(" in fp8_mm.fast_accum_kernel.source and ", accumulator)" in fp8_mm.fast_accum_kernel.source


def test_fp8_mm_refuses_a_scale_that_is_not_per_tensor():
    a = randn(8, 32).to(torch.float8_e4m3fn)
    with pytest.raises(ValueError, match="scale_other must be one float32 element"):
        fp8_mm.fp8_mm(a, a.t(), torch.tensor(1.0), torch.ones(8))


def test_addmm_broadcast_bias_and_transposed():
    bias, mat1, mat2 = randn(30), randn(40, 50).t(), randn(30, 40).t()
    check(addmm.addmm(bias, mat1, mat2, 2, 3), torch.addmm(bias, mat1, mat2, beta=2, alpha=3), torch.float32, GEMM_TOL)


@pytest.mark.parametrize("dtype", DTYPES)
def test_bmm(dtype):
    x, y = randn(3, 20, 40, dtype=dtype), randn(3, 40, 18, dtype=dtype)
    check(bmm.bmm(x, y), torch.bmm(x.float(), y.float()), dtype, GEMM_TOL)


def test_bmm_transposed():
    x, y = randn(2, 40, 20).transpose(1, 2), randn(18, 2, 40).permute(1, 2, 0)
    check(bmm.bmm(x, y), torch.bmm(x, y), torch.float32, GEMM_TOL)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("input_shape, filter_shape", [((2, 3, 9, 10), (4, 3, 3, 2)), ((1, 5, 6, 7), (3, 5, 1, 1))])
def test_conv2d(input_shape, filter_shape, dtype):
    x, w = randn(*input_shape, dtype=dtype), randn(*filter_shape, dtype=dtype)
    check(conv2d.conv2d(x, w), F.conv2d(x.float(), w.float()), dtype, GEMM_TOL)


def test_conv2d_small_blocks():
    x, w = randn(2, 3, 9, 10), randn(20, 3, 3, 2)
    y = torch.empty(2, 20, 7, 9)
    conv2d.kernel(x, w, y, BLOCK_SIZE_0=16, BLOCK_SIZE_1=16, BLOCK_SIZE_2=16)
    check(y, F.conv2d(x, w), torch.float32, GEMM_TOL)


def test_conv2d_channels_last():
    x = randn(2, 4, 8, 8).to(memory_format=torch.channels_last)
    w = randn(5, 4, 3, 3)
    y = conv2d.conv2d(x, w)
    check(y, F.conv2d(x, w), torch.float32, GEMM_TOL)
    assert y.is_contiguous(memory_format=torch.channels_last)


def test_conv2d_listing8_kernel():
    x, w = randn(2, 6, 9, 10), randn(8, 6, 3, 2)
    y = torch.empty(2, 8, 7, 9)
    conv2d.kernel(x, w, y)
    check(y, F.conv2d(x, w), torch.float32, GEMM_TOL)


@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("split", [2, 4])
@pytest.mark.parametrize("dtype", DTYPES)
def test_conv2d_split(split, channels_last, dtype):
    """Channel groups summed by a second kernel, for either layout; a filter
    tap count (3x2) and pixel counts that divide no block size."""
    x, w = randn(2, 8, 9, 10, dtype=dtype), randn(5, 8, 3, 2, dtype=dtype)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    y = conv2d.conv2d(x, w, split=split)
    check(y, F.conv2d(x.float(), w.float()), dtype, GEMM_TOL)
    assert y.is_contiguous(memory_format=torch.channels_last if channels_last else torch.contiguous_format)


@pytest.mark.parametrize("shape", [(2, 8, 9, 10), (3, 5, 1, 7), (2, 70, 3, 3)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_to_channels_last(shape, dtype, monkeypatch):
    monkeypatch.setattr(conv2d, "LAYOUT_KERNEL_BYTES", 0)  # the kernel, however small
    launches = []
    monkeypatch.setattr(conv2d, "layout_kernel", lambda *a, k=conv2d.layout_kernel: launches.append(k(*a)))
    x = randn(*shape, dtype=dtype)
    y = conv2d.to_channels_last(x)
    assert launches
    assert y.is_contiguous(memory_format=torch.channels_last) and y.data_ptr() != x.data_ptr()
    assert torch.equal(y, x)


def test_conv2d_through_the_layout_kernel(monkeypatch):
    monkeypatch.setattr(conv2d, "LAYOUT_KERNEL_BYTES", 0)
    x, w = randn(2, 8, 9, 10), randn(5, 8, 3, 2)
    check(conv2d.conv2d(x, w, split=1), F.conv2d(x, w), torch.float32, GEMM_TOL)


def test_to_channels_last_keeps_or_copies_other_layouts():
    x = randn(2, 9, 10, 8).permute(0, 3, 1, 2)  # channels-last already
    assert conv2d.to_channels_last(x) is x
    x = randn(2, 8, 9, 20)[..., ::2]  # neither layout: torch copies it
    y = conv2d.to_channels_last(x)
    assert torch.equal(y, x) and y.is_contiguous(memory_format=torch.channels_last)


@pytest.mark.parametrize("split", [1, 2])
def test_conv2d_channels_last_filter_gives_channels_last_output(split):
    x, w = randn(2, 4, 6, 7), randn(3, 4, 3, 2).contiguous(memory_format=torch.channels_last)
    y = conv2d.conv2d(x, w, split=split)
    expected = F.conv2d(x, w)
    check(y, expected, torch.float32, GEMM_TOL)
    assert y.is_contiguous(memory_format=torch.channels_last) == expected.is_contiguous(memory_format=torch.channels_last)


def test_conv2d_split_must_divide_channels():
    with pytest.raises(ValueError, match="split=3 must be a positive divisor of the 8 input channels"):
        conv2d.conv2d(randn(1, 8, 5, 5), randn(2, 8, 3, 3), split=3)


@pytest.mark.parametrize("batch, groups", [(1, 8), (2, 8), (4, 4), (8, 1), (64, 1)])
def test_conv2d_split_count(batch, groups):
    # 512 channels, 14x14, 3x3 on 132 multiprocessors: output tiles of 128x128.
    assert conv2d.split_count((batch, 512, 14, 14), (512, 512, 3, 3), 132) == groups


def test_conv2d_split_count_keeps_k_loops_long():
    assert conv2d.split_count((1, 16, 14, 14), (16, 16, 3, 3), 132) == 1  # 16 / 4 * 9 < 256
    assert conv2d.split_count((1, 6, 14, 14), (16, 6, 3, 3), 132) == 1  # 6 channels: no 4 groups


# -- rope ---------------------------------------------------------------------------------


def rope_reference(x, sin, cos):
    x1, x2 = x.float().chunk(2, dim=-1)
    sin, cos = sin.float()[:, None, :], cos.float()[:, None, :]
    return torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)


def tables(s, half, dtype):
    angles = torch.randn(s, half)
    return angles.sin().to(dtype), angles.cos().to(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(2, 6, 5, 16), (1, 3, 2, 20)])
def test_rope(shape, dtype):
    x = randn(*shape, dtype=dtype)
    sin, cos = tables(shape[1], shape[3] // 2, dtype)
    check(rope.rope(x, sin, cos), rope_reference(x, sin, cos), dtype)


def test_rope_strided():
    x = randn(2, 5, 6, 16).transpose(1, 2)  # (B, S, H, D) view of a (B, H, S, D) tensor
    sin, cos = tables(6, 8, torch.float32)
    check(rope.rope(x, sin, cos), rope_reference(x, sin, cos), torch.float32)


@pytest.mark.parametrize("interleaved", [True, False])
@pytest.mark.parametrize("shape", [(2, 4, 3, 16), (1, 3, 2, 12)])  # D/2 = 6: padded to 8
def test_rope_interleaved(shape, interleaved):
    x = randn(*shape)
    sin, cos = tables(shape[1], shape[3] // 2, torch.float32)
    result = rope_interleaved.rope(x, sin, cos, interleaved)
    check(result, rope_interleaved.reference(x, sin, cos, interleaved), torch.float32)
    if interleaved:  # the pairs are neighbours: not the halves
        assert not torch.allclose(result, rope_reference(x, sin, cos), atol=1e-3)


# -- sdpa ---------------------------------------------------------------------------------


def sdpa_reference(q, k, v, is_causal, scale=None):
    return F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=is_causal, scale=scale)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("is_causal", [False, True])
def test_sdpa(is_causal, dtype):
    q, k, v = (randn(1, 2, 40, 16, dtype=dtype) for _ in range(3))
    check(sdpa.sdpa(q, k, v, is_causal), sdpa_reference(q, k, v, is_causal), dtype, GEMM_TOL)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("is_causal", [False, True])
def test_sdpa_several_key_blocks(is_causal, dtype):
    """Blocks of 16 queries and 16 keys: the online softmax runs over three key
    blocks, the last one partial; fewer queries than keys; a given scale."""
    q, k, v = randn(2, 1, 24, 16, dtype=dtype), randn(2, 1, 40, 16, dtype=dtype), randn(2, 1, 40, 16, dtype=dtype)
    o = torch.empty_like(q)
    sdpa.kernel(q, k, v, 0.3, is_causal, o, BLOCK_SIZE_M=16, BLOCK_SIZE_N=16)
    check(o, sdpa_reference(q, k, v, is_causal, scale=0.3), dtype, GEMM_TOL)


@pytest.mark.parametrize("lengths", [(80, 40), (50, 37), (33, 16)])
@pytest.mark.parametrize("blocks", [(16, 16), (32, 16), (16, 32)])
def test_causal_sdpa_with_more_queries_than_keys(lengths, blocks):
    """Queries past the last key see every key (top-left aligned): the key
    blocks before a query block's diagonal stop at the keys' end; the block
    the keys end in is masked, never read as zeros."""
    sq, sk = lengths
    q, k, v = randn(1, 2, sq, 16), randn(1, 2, sk, 16), randn(1, 2, sk, 16)
    o = torch.empty_like(q)
    sdpa.kernel_pow2_head(q, k, v, 0.25, True, o, BLOCK_SIZE_M=blocks[0], BLOCK_SIZE_N=blocks[1])
    check(o, sdpa_reference(q, k, v, True, scale=0.25), torch.float32, GEMM_TOL)


@pytest.mark.parametrize("scale", [-0.3, 0.0, 0.3])
@pytest.mark.parametrize("is_causal", [False, True])
def test_sdpa_scale_of_either_sign_and_zero(is_causal, scale):
    """Where a key block has no mask the scale multiplies inside the exponent
    (``max(s) * c == max(s * c)`` needs ``c >= 0``: q carries the scale's sign);
    masked blocks scale before the mask (``-inf * 0`` would be NaN).  The
    reference is written out: torch's CPU attention returns NaN for a causal
    mask with a scale of 0 or less."""
    q, k, v = randn(1, 2, 24, 16), randn(1, 2, 40, 16), randn(1, 2, 40, 16)
    s = q @ k.transpose(-1, -2) * scale
    if is_causal:
        s = s.masked_fill(~torch.ones(24, 40, dtype=torch.bool).tril(), float("-inf"))
    reference = torch.softmax(s, -1) @ v
    for kernel in (sdpa.kernel, sdpa.kernel_pow2_head, sdpa.kernel_pairs):
        o = torch.empty_like(q)
        kernel(q, k, v, scale, is_causal, o, BLOCK_SIZE_M=16, BLOCK_SIZE_N=16)
        check(o, reference, torch.float32, GEMM_TOL)


@pytest.mark.parametrize("is_causal", [False, True])
@pytest.mark.parametrize("lengths", [(40, 40), (24, 40), (80, 40), (17, 33), (50, 16)])
@pytest.mark.parametrize("blocks", [(16, 16), (16, 32), (32, 16), (16, 64)])
def test_sdpa_pairs(lengths, blocks, is_causal):
    """Two query blocks a program: the second one partial, or wholly past the
    queries (17 and 50 queries in blocks of 16 and 32); more queries than keys
    and fewer; each block's diagonal its own."""
    sq, sk = lengths
    q, k, v = randn(2, 1, sq, 16), randn(2, 1, sk, 16), randn(2, 1, sk, 16)
    o = torch.empty_like(q)
    sdpa.kernel_pairs(q, k, v, 0.3, is_causal, o, BLOCK_SIZE_M=blocks[0], BLOCK_SIZE_N=blocks[1])
    check(o, sdpa_reference(q, k, v, is_causal, scale=0.3), torch.float32, GEMM_TOL)


@pytest.mark.parametrize("queries, is_causal, pairs",
                         [(1024, False, True), (1023, False, False), (2048, True, False), (4096, True, True)])
def test_sdpa_takes_the_pairs_at_head_dim_128_from_1024_queries_4096_causal(queries, is_causal, pairs):
    q, k, v = randn(1, 1, queries, 128), randn(1, 1, 24, 128), randn(1, 1, 24, 128)
    calls = []
    original = sdpa.kernel_pairs
    sdpa.kernel_pairs = lambda *args: calls.append(args) or original(*args)
    try:
        result = sdpa.sdpa(q, k, v, is_causal)
    finally:
        sdpa.kernel_pairs = original
    assert len(calls) == (1 if pairs else 0)
    check(result, sdpa_reference(q, k, v, is_causal), torch.float32, GEMM_TOL)


def test_sdpa_transposed_and_odd_head_dim():
    q, k, v = (randn(1, 33, 2, 12).transpose(1, 2) for _ in range(3))  # (B, H, S, D) views
    check(sdpa.sdpa(q, k, v, True), sdpa_reference(q, k, v, True), torch.float32, GEMM_TOL)


# -- the wrappers take what torch takes, and refuse what it refuses ----------------------


def test_wrappers_refuse_shapes_torch_refuses():
    """A read-only tensor with more tiles than the output is valid for a
    kernel (only its first tiles are read); the torch-like wrappers check
    the shapes as torch does instead of computing with part of an operand."""
    with pytest.raises(ValueError, match="bmm"):
        bmm.bmm(randn(2, 5, 7), randn(3, 7, 4))
    with pytest.raises(ValueError, match="conv2d"):
        conv2d.conv2d(randn(2, 4, 9, 10), randn(8, 6, 3, 2))  # 4 input channels, a 6-channel filter
    with pytest.raises(ValueError, match="conv2d"):
        conv2d.conv2d(randn(2, 6, 9, 10), randn(8, 6, 10, 2))  # a filter taller than the input
    with pytest.raises(ValueError, match="rope"):
        rope.rope(randn(1, 2, 1, 8), randn(2, 3), randn(2, 3))  # tables of D/2 = 4 columns needed
    with pytest.raises(ValueError, match="rope"):
        rope.rope(randn(8), randn(2, 4), randn(2, 4))
    with pytest.raises(ValueError, match="head dimension"):
        sdpa.sdpa(randn(1, 2, 9, 12), randn(1, 2, 11, 12), randn(1, 2, 11, 8))
    with pytest.raises(RuntimeError):
        sdpa.sdpa(randn(2, 2, 9, 12), randn(3, 2, 11, 12), randn(3, 2, 11, 12))  # batches 2 and 3


def test_sdpa_broadcasts_batch_and_heads_and_takes_no_keys():
    q, k, v = randn(1, 2, 9, 12), randn(2, 1, 11, 12), randn(2, 1, 11, 12)
    check(sdpa.sdpa(q, k, v), F.scaled_dot_product_attention(q, k, v), torch.float32, GEMM_TOL)
    empty = randn(1, 2, 0, 12)
    assert torch.equal(sdpa.sdpa(q, empty, empty), F.scaled_dot_product_attention(q, empty, empty))


def test_conv2d_split_keeps_float64_partial_sums():
    x, w = randn(2, 6, 9, 10, dtype=torch.float64), randn(8, 6, 3, 2, dtype=torch.float64)
    torch.testing.assert_close(conv2d.conv2d(x, w, split=2), F.conv2d(x, w), atol=1e-12, rtol=1e-12)
