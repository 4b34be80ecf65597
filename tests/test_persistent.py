"""The tensor-descriptor variant of kernels with loops: tiles that meet the
tensor memory accelerator's rules move through tensor descriptors; where a
tile's work is one loop streaming tiles, one program per multiprocessor walks
the tiles (persistent), else one program runs per tile (attention).  Under
Triton's interpreter the variant runs when asked for
(``ntsym_options={"persistent": True}``), a persistent one with a few
programs, each taking several tiles; shapes do not divide the block sizes."""

import pytest
import torch

import ntsym
import ntsym.language as ntl
from ntsym_codegen import runtime, tuning
from examples import addmm, bmm, mm, sdpa
from ntsym import Tensor
from tests.conftest import FP32_DOT_TOL
from tests.sources import application_from

PERSISTENT = {"persistent": True}
TOL = {
    torch.float32: dict(atol=FP32_DOT_TOL, rtol=FP32_DOT_TOL),
    torch.float16: dict(atol=1e-2, rtol=1e-2),
    torch.bfloat16: dict(atol=2e-2, rtol=2e-2),
}


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def ran_persistent(kernel):
    """Whether the call shape ``kernel`` saw last launched its persistent variant."""
    entries = list(kernel.calls.calls.values())
    return bool(entries) and entries[-1].kernel is not None


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_mm_bmm_addmm_match_torch(dtype):
    a, b = torch.randn(50, 72, dtype=dtype), torch.randn(72, 40, dtype=dtype)
    out = torch.empty(50, 40, dtype=dtype)
    mm.kernel(a, b, out, BLOCK_SIZE_M=16, BLOCK_SIZE_N=16, BLOCK_SIZE_K=16, ntsym_options=PERSISTENT)
    torch.testing.assert_close(out.float(), a.float() @ b.float(), **TOL[dtype])
    assert ran_persistent(mm.kernel)

    x, y = torch.randn(3, 33, 40, dtype=dtype), torch.randn(3, 40, 24, dtype=dtype)
    out = torch.empty(3, 33, 24, dtype=dtype)
    bmm.kernel(x, y, out, ntsym_options=PERSISTENT)
    torch.testing.assert_close(out.float(), x.float() @ y.float(), **TOL[dtype])
    assert ran_persistent(bmm.kernel)

    bias = torch.randn(50, 40, dtype=dtype)
    out = torch.empty(50, 40, dtype=dtype)
    addmm.kernel(bias, a, b, 0.5, 2.0, out, ntsym_options=PERSISTENT)
    ref = torch.addmm(bias.float(), a.float(), b.float(), beta=0.5, alpha=2.0)
    torch.testing.assert_close(out.float(), ref, **TOL[dtype])
    assert ran_persistent(addmm.kernel)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_column_major_operands_read_through_swapped_descriptors(dtype):
    """A tensor whose next-to-last dimension is the contiguous one (B of a
    GEMM given as the transpose of a row-major (N, K)) goes through a
    descriptor of the swapped view, its blocks swapped back; a row-major
    tensor through the same kernel takes the plain descriptor."""
    a, b_nk = torch.randn(48, 72, dtype=dtype), torch.randn(40, 72, dtype=dtype)
    for a_in, b_in in ((a, b_nk.t()), (a.t().contiguous().t(), b_nk.t()), (a, b_nk.t().contiguous())):
        out = torch.empty(48, 40, dtype=dtype)
        mm.kernel(a_in, b_in, out, BLOCK_SIZE_M=16, BLOCK_SIZE_N=16, BLOCK_SIZE_K=16, ntsym_options=PERSISTENT)
        assert ran_persistent(mm.kernel)
        torch.testing.assert_close(out.float(), a.float() @ b_nk.float().t(), **TOL[dtype])
    x, y_nk = torch.randn(3, 33, 40, dtype=dtype), torch.randn(3, 24, 40, dtype=dtype)
    out = torch.empty(3, 33, 24, dtype=dtype)
    bmm.kernel(x, y_nk.transpose(1, 2), out, ntsym_options=PERSISTENT)
    assert ran_persistent(bmm.kernel)
    torch.testing.assert_close(out.float(), x.float() @ y_nk.float().transpose(1, 2), **TOL[dtype])
    variant = mm.kernel.source[mm.kernel.source.index("def application_kernel_persistent"):]
    assert "if NTSYM_OTHER_DESC_T:" in variant and "tl.permute(other_desc.load([pid_1 * BLOCK_SIZE_N" in variant


@pytest.mark.parametrize("fp8", ["float8_e4m3fn", "float8_e5m2"])
def test_fp8_gemm_with_column_major_b(fp8):
    """fp8 tiles move through descriptors too (one byte an element: rows of
    64 elements are 64 bytes), B read as its row-major transpose."""
    from examples import fp8_mm

    fp8 = getattr(torch, fp8)
    a, b_nk = (torch.randn(48, 64) * 3).to(fp8), (torch.randn(40, 64) * 3).to(fp8)
    scale_a, scale_b = torch.tensor([[0.5]]), torch.tensor([[2.0]])
    out = torch.empty(48, 40, dtype=torch.float16)
    fp8_mm.kernel(a, b_nk.t(), scale_a, scale_b, out, BLOCK_SIZE_M=16, BLOCK_SIZE_N=16, BLOCK_SIZE_K=32,
                  ntsym_options=PERSISTENT)
    assert ran_persistent(fp8_mm.kernel)
    ref = (a.float() @ b_nk.float().t()) * 1.0
    torch.testing.assert_close(out.float(), ref, atol=1e-1, rtol=1e-2)


def test_second_call_takes_the_recorded_variant():
    a, b = torch.randn(40, 48), torch.randn(48, 56)
    out = torch.zeros(40, 56)
    for _ in range(2):  # the second call goes through the fast path
        a.normal_()
        mm.kernel(a, b, out, BLOCK_SIZE_M=16, BLOCK_SIZE_N=32, BLOCK_SIZE_K=16, ntsym_options=PERSISTENT)
        torch.testing.assert_close(out, a @ b, atol=FP32_DOT_TOL, rtol=FP32_DOT_TOL)


def test_plain_and_persistent_agree_and_default_is_plain_in_the_interpreter():
    a, b = torch.randn(33, 68), torch.randn(68, 20)  # rows of 272 and 80 bytes
    plain, persistent = torch.empty(33, 20), torch.empty(33, 20)
    mm.kernel(a, b, plain)
    assert not ran_persistent(mm.kernel)
    mm.kernel(a, b, persistent, ntsym_options=PERSISTENT)
    torch.testing.assert_close(plain, persistent, atol=1e-5, rtol=1e-5)


def test_generated_variant_reads_through_descriptors():
    source = mm.kernel.source
    variant = source[source.index("def application_kernel_persistent"):source.index("def make_launch")]
    assert variant.count("tl.make_tensor_descriptor(") == 5  # input and other also swapped
    assert "flatten=True" in variant and "tl.load(" not in variant and "tl.store(" not in variant
    assert "NTSYM_WHOLE_0" not in variant.split("):", 1)[1]  # no peeled remainder: the hardware masks
    # Attention loads q before its loop: one program per tile, no loop over tiles.
    variant = sdpa.kernel.source[sdpa.kernel.source.index("def application_kernel_persistent"):]
    assert "pid = tl.program_id(0)" in variant and "flatten=True" not in variant and "NTSYM_TILES, " in variant
    assert "k_desc.load(" in variant and "v_desc.load(" in variant and "o_desc.store(" in variant


@pytest.mark.parametrize(
    "make, why",
    [
        (lambda a, b: (torch.randn(50, 144)[:, ::2], b), "`input` .* last dimension is not contiguous"),
        (lambda a, b: (torch.randn(50 * 72 + 1)[1:].view(50, 72), b), "`input` .* not 16-byte aligned"),
        (lambda a, b: (a, torch.randn(72, 41)[:, :40]), "`other` .* dimension 0 is 164 bytes"),
    ],
)
def test_refused_with_the_reason_when_asked_for(make, why):
    a, b = make(torch.randn(50, 72), torch.randn(72, 40))
    out = torch.empty(50, 40)
    with pytest.raises(ntsym.LaunchError, match=why):
        mm.kernel(a, b, out, BLOCK_SIZE_M=16, BLOCK_SIZE_N=16, BLOCK_SIZE_K=16, ntsym_options=PERSISTENT)
    mm.kernel(a, b, out, BLOCK_SIZE_M=16, BLOCK_SIZE_N=16, BLOCK_SIZE_K=16)  # the plain kernel takes them
    torch.testing.assert_close(out, a @ b, atol=FP32_DOT_TOL, rtol=FP32_DOT_TOL)


def _running_max(x, out):
    best = ntl.full((x.dtype.shape[0],), float("-inf"), dtype=ntl.float32)
    for k in range(x.shape[0]):
        best = ntl.maximum(best, ntl.max(x[k], 1))
    out = best[:, None]  # noqa: F841


def _rows_in_column_blocks(x, out, B=ntsym.block_size(lower_bound=16)):
    x_arranged = x.tile((B, B)).tile((1, -1))
    x_arranged.dtype = x_arranged.dtype.squeeze(0)
    return x_arranged, out.tile((B, 1))


def test_refused_without_a_variant_and_for_bad_option():
    # Its one loop reads a tile padded with -inf, which a descriptor cannot.
    kernel = ntsym.make(_rows_in_column_blocks, _running_max, (Tensor(2, other=float("-inf")), Tensor(2)))
    with pytest.raises(ntsym.LaunchError, match="no persistent variant"):
        kernel(torch.randn(20, 40), torch.empty(20, 1), B=16, ntsym_options=PERSISTENT)
    a, b = torch.randn(16, 16), torch.randn(16, 16)
    with pytest.raises(ntsym.LaunchError, match="True or False"):
        mm.kernel(a, b, torch.empty(16, 16), ntsym_options={"persistent": 1})


def test_tile_in_another_order_than_its_source():
    """``input`` is stored (K, M) and its tiles are permuted to (BM, BK): the
    descriptor loads the block in the source's order and permutes it."""
    BM, BN, BK = (ntsym.block_size(lower_bound=16) for _ in range(3))

    def arrangement(input_t, other, output, BM=BM, BN=BN, BK=BK):
        output_arranged = output.tile((BM, BN))
        input_arranged = input_t.tile((BK, BM)).tile((-1, 1))
        input_arranged = input_arranged.permute((1, 0))
        input_arranged = input_arranged.expand((-1, output_arranged.shape[1]))
        input_arranged.dtype = input_arranged.dtype.squeeze(1)
        input_arranged.dtype.dtype = input_arranged.dtype.dtype.permute((1, 0))
        other_arranged = other.tile((BK, BN)).tile((-1, 1))
        other_arranged = other_arranged.expand((output_arranged.shape[0], -1))
        other_arranged.dtype = other_arranged.dtype.squeeze(1)
        return input_arranged, other_arranged, output_arranged

    kernel = ntsym.make(arrangement, mm.application, (Tensor(2), Tensor(2), Tensor(2)))
    assert "tl.permute(input_desc.load(" in kernel.source  # named after mm.application's parameters
    a_t, b = torch.randn(72, 52), torch.randn(72, 40)  # rows of 208 and 160 bytes
    out = torch.empty(52, 40)
    kernel(a_t, b, out, BM=16, BN=16, BK=16, ntsym_options=PERSISTENT)
    torch.testing.assert_close(out, a_t.t() @ b, atol=FP32_DOT_TOL, rtol=FP32_DOT_TOL)
    assert ran_persistent(kernel)


def test_padded_reads_keep_pointer_loads():
    """A tensor read with a padding value other than zero (here ``-inf``, for a
    running max) keeps its masked pointer load: the hardware fills zeros.  (Its
    peeled loop is two loops: the variant runs one program per tile.)"""
    import ast

    from ntsym_codegen.kernel import KernelEmitter
    from ntsym_codegen.strategies import DESCRIPTORS

    B = ntsym.block_size(lower_bound=16)

    def arrangement(x, y, out, B=B):
        out_arranged = out.tile((B, 1))
        x_arranged = x.tile((B, B)).tile((1, -1))
        x_arranged.dtype = x_arranged.dtype.squeeze(0)
        y_arranged = y.tile((B, B)).tile((1, -1))
        y_arranged.dtype = y_arranged.dtype.squeeze(0)
        return x_arranged, y_arranged, out_arranged

    def application(x, y, out):
        best = ntl.full((x.dtype.shape[0],), float("-inf"), dtype=ntl.float32)
        total = ntl.zeros((y.dtype.shape[0],), dtype=ntl.float32)
        for k in range(x.shape[0]):
            best = ntl.maximum(best, ntl.max(x[k], 1))
            total += ntl.sum(y[k], 1)
        out = (best + total)[:, None]  # noqa: F841

    kernel = ntsym.make(arrangement, application, (Tensor(2, other=float("-inf")), Tensor(2), Tensor(2)))
    body = ast.unparse(ast.Module(body=KernelEmitter(kernel.ir, access=DESCRIPTORS).emit_body(), type_ignores=[]))
    assert "y_desc.load(" in body and "x_desc" not in body and "tl.load(x_ptr" in body
    assert "pid = tl.program_id(0)" in _variant(kernel) and "flatten=True" not in _variant(kernel)
    x, y = -1 - torch.rand(20, 40), torch.randn(20, 40)
    out = torch.empty(20, 1)
    kernel(x, y, out, B=16, ntsym_options=PERSISTENT)
    assert ran_persistent(kernel)
    torch.testing.assert_close(out[:, 0], x.amax(1) + y.sum(1), atol=1e-5, rtol=1e-5)


def test_descriptor_lanes_past_the_tensor_are_left_out_of_a_reduction():
    """A tile read through a descriptor holds zeros past the tensor, where a
    masked load's conditions fail: a running max over negative elements
    leaves them out with the mask the pointer load would have used."""
    kernel = ntsym.make(_rows_in_column_blocks, _running_max, (Tensor(2), Tensor(2)))
    assert "x_desc.load(" in _variant(kernel) and "ntsym_lowest(k * B + x_t1 < x_size_1" in _variant(kernel)
    x = -1 - torch.rand(20, 40)  # 40 columns in blocks of 16: the last block is half outside
    out = torch.empty(20, 1)
    kernel(x, out, B=16, ntsym_options=PERSISTENT)
    assert ran_persistent(kernel)
    torch.testing.assert_close(out[:, 0], x.amax(1))


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("head", [16, 24])
def test_attention_one_program_per_tile_matches_torch(causal, head):
    q, k, v = (torch.randn(2, 2, 40, head) for _ in range(3))
    out = torch.empty_like(q)
    kernel = sdpa.kernel_pow2_head if head == 16 else sdpa.kernel
    kernel(q, k, v, head ** -0.5, causal, out, BLOCK_SIZE_M=16, BLOCK_SIZE_N=16, ntsym_options=PERSISTENT)
    assert ran_persistent(kernel)
    reference = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
    torch.testing.assert_close(out, reference, atol=FP32_DOT_TOL / 10, rtol=FP32_DOT_TOL / 10)  # TF32 on a GPU


def test_tma_rules():
    x = torch.empty(64, 64, dtype=torch.float16)

    def problem(t, block):
        return runtime.tma_problem((("x", t, block),))

    assert problem(x, (32, 32)) is None and runtime.tma_ready((("x", x, (32, 32)),))
    assert problem(x[:, :56], (32, 32)) is None  # a view: rows still 128 bytes apart
    assert "4 bytes innermost" in problem(x, (32, 2))
    assert "not a power of two" in problem(x, (32, 48))
    assert "not a power of two up to 256" in problem(x, (512, 32))
    assert "not contiguous" in problem(x.t(), (32, 32))
    # Read with the last two dimensions swapped, column-major is the swapped view's row-major.
    assert runtime.tma_problem((("x", x.t(), (32, 16), True),)) is None
    assert "stride of dimension 0 is 120 bytes" in runtime.tma_problem(
        (("x", torch.empty(64, 60, dtype=torch.float16).t(), (32, 32), True),))
    assert "not contiguous" in runtime.tma_problem((("x", x[:, ::2], (32, 16), True),))
    assert "4 bytes innermost" in runtime.tma_problem((("x", x.t(), (2, 32), True),))
    assert "120 bytes" in problem(torch.empty(64, 60, dtype=torch.float16), (32, 32))
    assert "dtype" in problem(torch.empty(8, 16, dtype=torch.bool), (8, 16))


def test_persistent_candidates_follow_the_fastest_plain_shapes():
    configs = [tuning.Config((("B", b),), w, s) for b in (16, 32, 64, 128) for w, s in ((4, 3), (4, 4))]
    timed = sorted(configs, key=lambda c: -dict(c.meta)["B"])  # the fastest first: 128, 64, 32, ...

    class Variant:
        per_tile = False

        def ready(self, meta):
            return meta["B"] != 64

    leading = tuning.timing.leading(timed)
    assert [dict(c.meta)["B"] for c in leading] == [128, 64, 32]
    chosen = tuning.timing.persistent_candidates(leading, Variant())
    assert [(dict(c.meta)["B"], c.num_stages, c.persistent) for c in chosen] == [
        (128, 3, True), (128, 4, True), (32, 3, True), (32, 4, True)]
    assert "persistent" in str(chosen[0])


def test_persistent_candidates_include_the_largest_blocks():
    """The largest blocks are timed persistent however slow their plain
    form: 128x256 is the fastest persistent fp8 shape at 8192^3 and among
    the slowest plain ones."""
    shapes = [(64, 64), (128, 64), (64, 128), (32, 32), (128, 128), (128, 256), (256, 128)]
    ranked = [tuning.Config((("M", m), ("N", n)), 8 if m * n >= 128 * 128 else 4, 3) for m, n in shapes]

    class Variant:
        per_tile = False

        def ready(self, meta):
            return True

    largest = tuning.timing.largest(ranked)
    assert [dict(c.meta) for c in largest] == [{"M": 128, "N": 256}, {"M": 256, "N": 128}]
    chosen = tuning.timing.persistent_candidates(tuning.timing.leading(ranked) + largest, Variant())
    assert [(dict(c.meta)["M"], dict(c.meta)["N"], c.num_stages) for c in chosen] == [
        (64, 64, 3), (64, 64, 4), (128, 64, 3), (128, 64, 4), (64, 128, 3), (64, 128, 4),
        (128, 256, 3), (128, 256, 4), (256, 128, 3), (256, 128, 4)]


def test_one_program_per_tile_candidates_halve_the_warps():
    """Tiles read through descriptors hold no pointers in registers: the
    per-tile variant is timed with half the warps of shapes of eight or
    more, at two stages."""
    ranked = [tuning.Config((("M", 128), ("N", 64)), 8, 3), tuning.Config((("M", 64), ("N", 64)), 4, 3)]

    class Variant:
        per_tile = True

        def ready(self, meta):
            return True

    chosen = tuning.timing.persistent_candidates(ranked, Variant())
    assert [(dict(c.meta)["M"], c.num_warps, c.num_stages) for c in chosen] == [(128, 4, 2)]
    # Asked for alone, the variant runs at every shape, with its own warps too.
    chosen = tuning.timing.persistent_candidates(ranked, Variant(), asked=True)
    assert [(dict(c.meta)["M"], c.num_warps) for c in chosen] == [(128, 8), (128, 4), (64, 4)]


def _gemm_like(application):
    BM, BN, BK = (ntsym.block_size(lower_bound=16) for _ in range(3))

    def arrangement(input, other, output, BM=BM, BN=BN, BK=BK):
        return mm.arrangement(input, other, output, BM, BN, BK)

    return ntsym.make(arrangement, application, (Tensor(2), Tensor(2), Tensor(2)))


def _variant(kernel):
    source = kernel.source
    return source[source.index("_persistent("):source.index("def make_launch")] if "_persistent(" in source else None


def test_a_tensor_written_twice_is_written_with_pointer_stores():
    """Two writes of the same elements through descriptors (or one through a
    descriptor and one by pointer) are not ordered without fences."""

    def application(input, other, output):
        accumulator = ntl.zeros(output.shape, dtype=ntl.float32)
        for k in range(input.shape[0]):
            accumulator += ntl.dot(input[k], other[k])
        output = accumulator  # noqa: F841
        output = accumulator * 2  # noqa: F841

    kernel = _gemm_like(application)
    variant = _variant(kernel)
    assert "input_desc.load(" in variant and "output_desc" not in variant and variant.count("tl.store(") == 2
    a, b = torch.randn(40, 48), torch.randn(48, 32)
    out = torch.empty(40, 32)
    kernel(a, b, out, BM=16, BN=16, BK=16, ntsym_options=PERSISTENT)
    torch.testing.assert_close(out, 2 * (a @ b), atol=FP32_DOT_TOL, rtol=FP32_DOT_TOL)


def test_one_program_per_tile_where_a_return_would_end_the_program():
    """A return would end the persistent program, not its tile: the variant
    runs one program per tile instead."""
    def application(input, other, output):
        accumulator = ntl.zeros(output.shape, dtype=ntl.float32)
        for k in range(input.shape[0]):
            accumulator += ntl.dot(input[k], other[k])
        output = accumulator  # noqa: F841
        return

    kernel = _gemm_like(application)
    assert "flatten=True" not in _variant(kernel) and "pid = tl.program_id(0)" in _variant(kernel)
    a, b = torch.randn(40, 48), torch.randn(48, 32)
    out = torch.empty(40, 32)
    kernel(a, b, out, BM=16, BN=16, BK=16, ntsym_options=PERSISTENT)
    assert ran_persistent(kernel)
    torch.testing.assert_close(out, a @ b, atol=FP32_DOT_TOL, rtol=FP32_DOT_TOL)


def _write(out, value):
    out = value  # noqa: F841


def test_a_tensor_also_written_by_an_inlined_function_keeps_pointer_stores():
    def application(input, other, output):
        accumulator = ntl.zeros(output.shape, dtype=ntl.float32)
        for k in range(input.shape[0]):
            accumulator += ntl.dot(input[k], other[k])
        output = accumulator * 2  # noqa: F841
        _write(output, accumulator)

    variant = _variant(_gemm_like(application))
    assert "output_desc" not in variant and variant.count("tl.store(output_ptr") == 2


def _accumulate(input, other, output):
    accumulator = ntl.zeros(output.shape, dtype=ntl.float32)  # the output's shape only: no write
    for k in range(input.shape[0]):
        accumulator += ntl.dot(input[k], other[k])
    return accumulator


def _scatter_first(out, value):
    out.source[out.offsets(0)[:, None], out.offsets(1)[None, :]] = value


def _pass_on(out, value):
    _write(out, value)


def _store_through_pointer(out, value):
    pointer = out.data_ptr()  # a tile's pointer is its tensor's
    ntl.store(pointer + out.offsets(0)[:, None] * out.stride(0) + out.offsets(1)[None, :] * out.stride(1), value)


def test_a_tensor_an_inlined_function_only_reads_keeps_its_descriptor_store():
    """Passing the output to a helper that reads its shape does not make it
    written twice; a helper that writes it, through ``source``, through its
    pointer or by passing it on, does, and so does the application's own
    store through the pointer: a descriptor store and another are not ordered."""
    def application(input, other, output):
        output = _accumulate(input, other, output)  # noqa: F841

    variant = _variant(_gemm_like(application))
    assert "output_desc.store(" in variant and "tl.store(output_ptr" not in variant
    kernel = _gemm_like(application)
    a, b = torch.randn(40, 48), torch.randn(48, 32)
    out = torch.empty(40, 32)
    kernel(a, b, out, BM=16, BN=16, BK=16, ntsym_options=PERSISTENT)
    torch.testing.assert_close(out, a @ b, atol=FP32_DOT_TOL, rtol=FP32_DOT_TOL)
    for helper in (_scatter_first, _pass_on, _store_through_pointer):
        source = ("def application(input, other, output):\n"
                  "    output = accumulate(input, other, output)\n"
                  "    helper(output, output * 0)\n")
        written = _gemm_like(application_from(source, accumulate=_accumulate, helper=helper))
        assert "output_desc" not in _variant(written), helper.__name__
    source = ("def application(input, other, output):\n"  # the application's own store through the pointer
              "    output = accumulate(input, other, output)\n"
              "    ntl.store(output.source.data_ptr() + output.offsets(0)[:, None] * output.stride(0)\n"
              "              + output.offsets(1)[None, :] * output.stride(1), output * 0)\n")
    assert "output_desc" not in _variant(_gemm_like(application_from(source, accumulate=_accumulate)))


def test_descriptor_names_do_not_take_the_applications_names():
    def application(input, other, output):
        accumulator = ntl.zeros(output.shape, dtype=ntl.float32)
        for k in range(input.shape[0]):
            accumulator += ntl.dot(input[k], other[k])
        other_desc = accumulator * 2
        output = other_desc  # noqa: F841

    kernel = _gemm_like(application)
    variant = _variant(kernel)  # the application's local is renamed away from the descriptor's name
    assert "other_desc = tl.make_tensor_descriptor(" in variant and "other_desc_local = accumulator * 2" in variant
    a, b = torch.randn(40, 48), torch.randn(48, 32)
    out = torch.empty(40, 32)
    kernel(a, b, out, BM=16, BN=16, BK=16, ntsym_options=PERSISTENT)
    torch.testing.assert_close(out, 2 * (a @ b), atol=FP32_DOT_TOL, rtol=FP32_DOT_TOL)


def test_refusal_names_the_reason_when_tuning_too(monkeypatch):
    monkeypatch.setenv("NTSYM_TUNE_IN_INTERPRETER", "1")
    monkeypatch.setenv("NTSYM_RETUNE", "1")
    a, b = torch.randn(50, 144)[:, ::2], torch.randn(72, 40)
    with pytest.raises(ntsym.LaunchError, match="(?s)`input` .* last dimension is not contiguous"):
        mm.kernel(a, b, torch.empty(50, 40), ntsym_options=PERSISTENT)


def test_a_variant_that_disagrees_with_the_plain_kernel_is_not_chosen():
    """The tuner runs its fastest configuration, where it is the descriptor
    variant, against the plain kernel on the call's tensors: one that
    disagrees is dropped for the next; the written tensors are restored."""
    from ntsym_codegen.tuning import verify

    out = torch.zeros(4)
    right = torch.tensor([1.0, 2.0, float("nan"), float("inf")])
    results = {"plain": right, "variant ok": right + 1e-7, "variant wrong": right + torch.tensor([0, 0.5, 0, 0]),
               "variant nan": torch.tensor([1.0, float("nan"), float("nan"), float("inf")])}
    configs = {name: tuning.Config((("B", i),), 4, 2, name != "plain") for i, name in enumerate(results)}
    names = {c: name for name, c in configs.items()}
    ran = []

    def run(config):
        def launch():
            ran.append(names[config])
            out.copy_(results[names[config]])
        return launch

    def restore():
        out.zero_()

    class Spec:
        name = "k"

    def ranked(*order):
        kept = verify.verified(Spec, [configs[n] for n in order], run, restore, [out], ["out"], None)
        return [names[c] for c in kept]

    assert ranked("variant wrong", "variant nan", "variant ok", "plain") == ["variant ok", "plain"]
    assert ran == ["plain", "variant wrong", "variant nan", "variant ok"] and torch.equal(out, torch.zeros(4))
    ran.clear()
    assert ranked("plain", "variant wrong") == ["plain", "variant wrong"] and ran == []  # plain first: nothing run
    # No plain configuration among them: the plain one at the variant's shape.
    kept = verify.verified(Spec, [configs["variant wrong"]], run, restore, [out], ["out"],
                           lambda c: configs["plain"])
    assert kept == []
    assert "differs by 0.5" in verify.difference([right + torch.tensor([0, 0.5, 0, 0])], [right], ["out"])
    assert "NaN" in verify.difference([results["variant nan"]], [right], ["out"])
    assert verify.difference([right.half()], [(right + 1e-3).half()], ["out"]) is None
    assert verify.difference([torch.tensor([1, 2])], [torch.tensor([1, 3])], ["out"]) is not None


def test_the_variants_check_scales_by_what_was_written_and_the_narrowest_type():
    """Elements neither kernel wrote (what an empty output held) are left out
    of the comparison's scale; float16 inputs summed into a float32 output
    move by float16's precision, not float32's."""
    from ntsym_codegen.tuning import verify

    garbage = torch.tensor([3.0e30, 0.0, 0.0, 0.0])
    before = torch.cat([torch.zeros(4), garbage])
    right = torch.cat([torch.tensor([1.0, 2.0, 3.0, 4.0]), garbage])
    wrong = torch.cat([torch.tensor([-5.0, 7.0, 0.0, 9.0]), garbage])
    assert verify.difference([wrong], [right], ["out"]) is None  # the untouched 3e30 hides it
    assert "differs by 6" in verify.difference([wrong], [right], ["out"], [before])
    moved = right + 1e-3
    assert verify.difference([moved], [right], ["out"], [before], (torch.float16,)) is None
    assert verify.difference([moved], [right], ["out"], [before], (torch.float32,)) is not None
