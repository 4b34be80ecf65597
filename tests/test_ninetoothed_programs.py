"""NineToothed programs, unchanged but for the import: what an application
sees of its tiles (``x.shape`` is the true extent, ``x.offsets()``), the
names it may use (``ntsym.language`` spelled out, ``libdevice``, global and
closure constants), call-time tile sizes that are not powers of two, and the
programs the seeds' README and the NineToothed paper publish."""

import functools
import math

import pytest
import torch

import ntsym
import ntsym.language as ntl
from examples import rope_interleaved
from ntsym import Symbol, Tensor, block_size
from ntsym.language import libdevice

# -- x.shape is the tile's true extent ---------------------------------------------------


def _rows(x, out):
    return x.tile((1, -1)).squeeze(1), out.tile((1,))


def _row_mean(x, out):
    out = ntl.sum(x) / x.shape[1]  # noqa: F841


@pytest.mark.parametrize("n", [451, 37, 64])
def test_shape_of_a_whole_row_is_its_length_not_the_padded_block(n):
    kernel = ntsym.make(_rows, _row_mean, (Tensor(2, other=0), Tensor(1)))
    x = torch.randn(3, n)
    out = torch.empty(3)
    kernel(x, out)
    torch.testing.assert_close(out, x.mean(1))


def test_shape_of_a_constant_size_that_is_not_a_power_of_two():
    kernel = ntsym.make(_rows, _row_mean, (Tensor(shape=(None, 451), other=0), Tensor(1)))
    x = torch.randn(3, 451)
    out = torch.empty(3)
    kernel(x, out)
    torch.testing.assert_close(out, x.mean(1))


def test_shapes_build_padded_blocks_and_count_true_elements():
    def arrangement(x, out):
        return x.tile((1, -1)).squeeze(1), out.tile((1, -1)).squeeze(1)

    def application(x, out):
        n = x.shape[1]
        shape = x.shape
        acc = ntl.zeros(shape, dtype=ntl.float32)  # a padded block
        idx = ntl.arange(0, n)[None, :]  # as long as the block
        acc += ntl.where(idx < n, x, 0.0)  # n: the true length
        count = 0
        for i in range(x.shape[1]):  # the true length
            count += 1
        out = acc - ntl.sum(acc) / n + count + ntl.full(x.shape, 0, dtype=ntl.float32)  # noqa: F841

    kernel = ntsym.make(arrangement, application, (Tensor(2, other=0), Tensor(2)))
    x = torch.randn(3, 37)
    out = torch.empty(3, 37)
    kernel(x, out)
    torch.testing.assert_close(out, x - x.mean(1, keepdim=True) + 37)


def test_comparison_with_the_true_extent_is_not_proved_away():
    """``offsets < shape`` holds for the real elements only: the padded lanes
    of a whole-row tile must see it false."""

    def arrangement(x, out):
        return x.tile((1, -1)).squeeze(1), out.tile((1,))

    def application(x, out):
        inside = x.offsets(1) < x.shape[1]
        out = ntl.sum(ntl.where(inside, 1, 0))  # noqa: F841

    kernel = ntsym.make(arrangement, application, (Tensor(2), Tensor(1, dtype=torch.int32)))
    out = torch.empty(2, dtype=torch.int32)
    kernel(torch.randn(2, 37), out)
    assert out.tolist() == [37, 37]


# -- x.offsets() and negative dimensions --------------------------------------------------


def test_flat_offsets_and_negative_dimensions():
    B = block_size()

    def arrangement(x, out, B=B):
        return x.tile((B, 4)), out.tile((B, 4))

    def application(x, out):
        out = x.offsets() + x.offsets(-1) * 1000 + x.offsets(-2)[:, None] * 100000  # noqa: F841

    kernel = ntsym.make(arrangement, application, (Tensor(2), Tensor(2, dtype=torch.int64)))
    x = torch.randn(6, 8)[:, :7]  # strides (8, 1): flat offsets are not the row-major index
    out = torch.empty(6, 7, dtype=torch.int64)
    kernel(x, out, B=32)
    i, j = torch.arange(6)[:, None], torch.arange(7)[None, :]
    assert torch.equal(out, i * x.stride(0) + j * x.stride(1) + j * 1000 + i * 100000)


def test_offsets_takes_a_constant_dimension():
    def application(x, out):
        out = x.offsets(x.shape[0])  # noqa: F841

    with pytest.raises(ntsym.ApplicationError, match="one constant source dimension"):
        ntsym.make(lambda x, out: (x.tile((4,)), out.tile((4,))), application, (Tensor(1), Tensor(1)))


def _tiles_2d(x, out, B=block_size()):
    return x.tile((B, B)), out.tile((B, B))


def _load_through_tile_pointer(x, out):
    out = ntl.load(x.data_ptr() + x.offsets(0)[:, None] * x.stride(0) + x.offsets(1)[None, :] * x.stride(1))  # noqa: F841


def _store_through_tile_pointer(x, out):
    rows, cols = out.offsets(0)[:, None], out.offsets(1)[None, :]
    mask = (rows < out.source.shape[0]) & (cols < out.source.shape[1])
    ntl.store(out.data_ptr() + rows * out.stride(0) + cols * out.stride(1), x * 2, mask=mask)


@pytest.mark.parametrize("application", [_load_through_tile_pointer, _store_through_tile_pointer])
def test_data_ptr_and_stride_of_a_tile_are_its_sources(application):
    """NineToothed's ``x.data_ptr()`` and ``x.stride(d)`` on a tile name the
    source tensor's pointer and strides, as ``x.source.data_ptr()`` does."""
    x = torch.empty_strided((13, 9), (12, 1))
    x.copy_(torch.randn(13, 9))
    out = torch.zeros(9, 13).t()
    ntsym.make(_tiles_2d, application, (Tensor(2), Tensor(2)))(x, out)
    assert torch.equal(out, x if application is _load_through_tile_pointer else x * 2)


# -- names an application may use ---------------------------------------------------------

SCALE = 3.0
TWO = ntl.constexpr(2)
PAIR = (1, 2)
ACC_DTYPE = ntl.float32
SHAPE_OWNER = [1, 2]


def test_libdevice_module_paths_and_constants():
    def arrangement(x, out, B=block_size()):
        return x.tile((B,)), out.tile((B,))

    def application(x, out):
        y = libdevice.cosh(x) + ntl.libdevice.atan(x) + ntsym.language.sqrt(2.0)
        out = (y + SCALE * TWO + math.pi + PAIR[1]).to(ACC_DTYPE)  # noqa: F841

    kernel = ntsym.make(arrangement, application, (Tensor(1), Tensor(1)))
    x = torch.randn(50) * 2
    out = torch.empty(50)
    kernel(x, out)
    expected = torch.cosh(x) + torch.atan(x) + math.sqrt(2) + 6 + math.pi + 2
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5)


LIBDEVICE_CASES = {
    "sinh": torch.sinh, "tan": torch.tan, "asin": torch.asin, "acos": torch.acos, "asinh": torch.asinh,
    "atanh": torch.atanh, "expm1": torch.expm1, "log1p": torch.log1p, "log10": torch.log10,
    "trunc": torch.trunc, "rint": torch.round, "cbrt": lambda x: x.sign() * x.abs() ** (1 / 3),
}


@pytest.fixture(scope="module")
def libdevice_applications(tmp_path_factory):
    """One application per function, in a module of its own (ntsym reads
    applications from their source files)."""
    import importlib.util

    path = tmp_path_factory.mktemp("libdevice") / "libdevice_applications.py"
    path.write_text("from ntsym.language import libdevice\n" + "".join(
        f"\n\ndef {name}_application(x, out):\n    out = libdevice.{name}(x)\n" for name in LIBDEVICE_CASES))
    spec = importlib.util.spec_from_file_location("libdevice_applications", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", sorted(LIBDEVICE_CASES))
def test_libdevice_functions_run_on_cpu(name, libdevice_applications):
    application = getattr(libdevice_applications, f"{name}_application")
    kernel = ntsym.make(lambda x, out: (x.tile((64,)), out.tile((64,))), application, (Tensor(1), Tensor(1)))
    x = torch.linspace(-0.95, 0.95, 41) + (2.5 if name in ("log10", "log1p") else 0)
    if name in ("trunc", "rint", "cbrt"):
        x = x * 7
    out = torch.empty_like(x)
    kernel(x, out)
    torch.testing.assert_close(out, LIBDEVICE_CASES[name](x), rtol=2e-6, atol=2e-6)


def test_closure_constants():
    def make(scale, offset):
        def application(x, out):
            out = x * scale + offset  # noqa: F841

        return ntsym.make(lambda x, out: (x.tile((16,)), out.tile((16,))), application, (Tensor(1), Tensor(1)))

    x = torch.randn(40)
    for scale, offset in ((2.0, 1), (-1.5, 3)):
        out = torch.empty(40)
        make(scale, offset)(x, out)
        torch.testing.assert_close(out, x * scale + offset)


def test_global_that_is_not_a_constant_is_refused_at_make():
    def application(x, out):
        out = x * SHAPE_OWNER[0]  # noqa: F841

    with pytest.raises(ntsym.ApplicationError, match=r"`SHAPE_OWNER` is a list .* global or closure"):
        ntsym.make(lambda x, out: (x.tile((16,)), out.tile((16,))), application, (Tensor(1), Tensor(1)))


# -- call-time tile sizes that are not powers of two ----------------------------------------

KH = Symbol("kernel_size_h", constexpr=True)
KW = Symbol("kernel_size_w", constexpr=True)


def _pool_arrangement(input, output, kernel_size_h=KH, kernel_size_w=KW):
    input_arranged = input.tile((1, 1, kernel_size_h, kernel_size_w))
    input_arranged.dtype = input_arranged.dtype.squeeze((0, 1))
    return input_arranged, output.tile((1, 1, 1, 1))


def _pool_application(input, output):
    output = ntl.max(ntl.max(input, 1), 0)  # noqa: F841


@pytest.mark.slow
def test_pooling_with_a_window_of_three():
    kernel = ntsym.make(_pool_arrangement, _pool_application, (Tensor(4, other=float("-inf")), Tensor(4)))
    x = torch.randn(2, 3, 12, 12)
    for k in (3, 2):  # padded to 4 (a variant), then the power-of-two kernel
        out = torch.empty(2, 3, 12 // k, 12 // k)
        kernel(x, out, kernel_size_h=k, kernel_size_w=k)
        assert torch.equal(out, torch.nn.functional.max_pool2d(x, k))
    assert "NTSYM_BLOCK" not in kernel.kernel_source


def test_call_time_block_of_24():
    C = Symbol("C", constexpr=True)

    def application(x, y):
        y = x + 1  # noqa: F841

    kernel = ntsym.make(lambda x, y: (x.tile((C,)), y.tile((C,))), application, (Tensor(1), Tensor(1)))
    x = torch.randn(100)
    y = torch.empty(100)
    kernel(x, y, C=24)
    torch.testing.assert_close(y, x + 1)


# -- the seeds' README -----------------------------------------------------------------------


def test_readme_vector_addition():
    BLOCK_SIZE = Symbol("BLOCK_SIZE", meta=True)

    @ntsym.jit
    def add_kernel(
        x: Tensor(1).tile((BLOCK_SIZE,)),
        y: Tensor(1).tile((BLOCK_SIZE,)),
        z: Tensor(1).tile((BLOCK_SIZE,)),
    ):
        z = x + y  # noqa: F841

    x, y = torch.randn(1000), torch.randn(1000)
    z = torch.empty(1000)
    add_kernel(x, y, z, BLOCK_SIZE=256)
    torch.testing.assert_close(z, x + y)


def test_readme_matrix_multiplication():
    BLOCK_SIZE_M = Symbol("BLOCK_SIZE_M", meta=True)
    BLOCK_SIZE_N = Symbol("BLOCK_SIZE_N", meta=True)
    BLOCK_SIZE_K = Symbol("BLOCK_SIZE_K", meta=True)

    a_tiled = Tensor(2).tile((BLOCK_SIZE_M, BLOCK_SIZE_K)).tile((1, -1))
    b_tiled = Tensor(2).tile((BLOCK_SIZE_K, BLOCK_SIZE_N)).tile((-1, 1))
    c_tiled = Tensor(2).tile((BLOCK_SIZE_M, BLOCK_SIZE_N))

    a_tiled = a_tiled.expand((-1, c_tiled.shape[1]))
    b_tiled = b_tiled.expand((c_tiled.shape[0], -1))

    a_tiled.dtype = a_tiled.dtype.squeeze(0)
    b_tiled.dtype = b_tiled.dtype.squeeze(1)

    @ntsym.jit
    def matmul_kernel(a: a_tiled, b: b_tiled, c: c_tiled):
        accumulator = ntsym.language.zeros(
            c.shape, dtype=ntsym.language.float32
        )
        for k in range(a.shape[0]):
            accumulator += ntsym.language.dot(a[k], b[k])
        c = accumulator.to(ntsym.language.float16)  # noqa: F841

    a = torch.randn(40, 24, dtype=torch.float16)
    b = torch.randn(24, 36, dtype=torch.float16)
    c = torch.empty(40, 36, dtype=torch.float16)
    matmul_kernel(a, b, c, BLOCK_SIZE_M=16, BLOCK_SIZE_N=16, BLOCK_SIZE_K=16)
    torch.testing.assert_close(c.float(), a.float() @ b.float(), rtol=1e-2, atol=1e-2)


# -- the paper's published kernels -------------------------------------------------------------


@pytest.mark.parametrize("interleaved", [False, True])
def test_paper_rope_with_a_partial_arrangement(interleaved):
    head_dim = 16
    # examples/rope_interleaved.py holds the paper's arrangement and application as published.
    arrangement = functools.partial(rope_interleaved.arrangement, head_dim=head_dim, interleaved=interleaved)
    tensors = (Tensor(shape=(None, None, None, head_dim)),) + tuple(
        Tensor(shape=(None, None, None, head_dim // 2)) for _ in range(2)
    )
    kernel = ntsym.make(arrangement, rope_interleaved.application, tensors)
    x = torch.randn(2, 3, 2, head_dim)
    sin, cos = torch.randn(2, 3, 1, head_dim // 2).expand(2, 3, 2, -1), torch.randn(2, 3, 1, head_dim // 2).expand(2, 3, 2, -1)
    expected = x.clone()
    if interleaved:
        a, b = x[..., 0::2], x[..., 1::2]
        expected[..., 0::2], expected[..., 1::2] = a * cos - b * sin, a * sin + b * cos
    else:
        a, b = x[..., : head_dim // 2], x[..., head_dim // 2:]
        expected[..., : head_dim // 2], expected[..., head_dim // 2:] = a * cos - b * sin, a * sin + b * cos
    kernel(x, sin, cos)
    torch.testing.assert_close(x, expected)


SDPA_BLOCK_SIZE_M = block_size()
SDPA_BLOCK_SIZE_N = block_size()


def _sdpa_arrangement(
    q, k, v, scale, q_start, o, BLOCK_SIZE_M=SDPA_BLOCK_SIZE_M, BLOCK_SIZE_N=SDPA_BLOCK_SIZE_N
):
    def arrange_q_or_o(input):
        arranged = input.tile((1, 1, BLOCK_SIZE_M, -1))
        arranged.dtype = arranged.dtype.squeeze((0, 1))

        return arranged

    def arrange_k_or_v(input):
        arranged = input.tile((1, 1, BLOCK_SIZE_N, -1))
        arranged = arranged.tile((1, 1, -1, -1))
        arranged = arranged.expand((-1, -1, q_arranged.shape[-2], -1))
        arranged.dtype = arranged.dtype.squeeze((0, 1, 3))
        arranged.dtype.dtype = arranged.dtype.dtype.squeeze((0, 1))

        return arranged

    q_arranged = arrange_q_or_o(q)

    return (
        q_arranged,
        arrange_k_or_v(k),
        arrange_k_or_v(v),
        scale,
        q_start,
        arrange_q_or_o(o),
    )


def _sdpa_application(q, k, v, scale, q_start, o):
    q_loaded = (q * scale * 1.44269504089).to(q.dtype)

    acc = ntl.zeros((q.shape[-2], q.shape[-1]), dtype=ntl.float32)
    l_i = ntl.full((q.shape[-2],), 1, dtype=ntl.float32)
    m_i = ntl.full((q.shape[-2],), float("-inf"), dtype=ntl.float32)

    for i in range(k.shape[0]):
        qk = ntl.dot(q_loaded, ntl.trans(k[i]))
        qk = ntl.where(
            (q.offsets(-2) + q_start)[:, None] >= k[i].offsets(-2),
            qk,
            float("-inf"),
        )

        m_ij = ntl.maximum(m_i, ntl.max(qk, 1))
        p = ntl.exp2(qk - m_ij[:, None])
        l_ij = ntl.sum(p, 1)

        alpha = ntl.exp2(m_i - m_ij)
        acc = acc * alpha[:, None] + ntl.dot(p.to(v.dtype.dtype), v[i])
        m_i = m_ij
        l_i = l_i * alpha + l_ij

    acc /= l_i[:, None]
    o = acc.to(o.dtype)  # noqa: F841


def test_paper_causal_attention_with_negative_offsets():
    shape_options = (None, None, None, {"constexpr": True, "upper_bound": 128})
    q_, k_, v_, o_ = (Tensor(4, shape_options=shape_options) for _ in range(4))
    kernel = ntsym.make(_sdpa_arrangement, _sdpa_application, (q_, k_, v_, Tensor(0), Tensor(0), o_))
    q, k, v = (torch.randn(1, 2, 40, 24) for _ in range(3))  # head dim 24: padded to 32
    o = torch.empty_like(q)
    kernel(q, k, v, 1 / math.sqrt(24), 0, o, BLOCK_SIZE_M=32, BLOCK_SIZE_N=32)
    expected = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    tolerance = 3e-2 if torch.cuda.is_available() else 1e-4  # tl.dot runs fp32 in TF32 on a GPU
    torch.testing.assert_close(o, expected, rtol=tolerance, atol=tolerance)


# -- bool and fp8 tensors ----------------------------------------------------------------------


def _elementwise(application, count):
    def arrangement(*tensors, B=block_size()):
        return tuple(t.tile((B,)) for t in tensors)

    return ntsym.make(arrangement, application, tuple(Tensor(1) for _ in range(count)))


def _bool_add(a, b, c):
    c = a + b  # noqa: F841


def _bool_and(a, b, c):
    c = a & b  # noqa: F841


def _bool_select(m, x, y):
    y = ntl.where(m, x * 2, x)  # noqa: F841


def test_bool_arithmetic_is_refused_by_name():
    """Triton adds booleans modulo 2 (True + True == False), torch does not."""
    kernel = _elementwise(_bool_add, 3)
    a, b = torch.tensor([True, True, False]), torch.tensor([True, False, False])
    c = torch.empty(3, dtype=torch.bool)
    with pytest.raises(ntsym.LaunchError, match="`a` is a bool tensor and the application computes arithmetic"):
        kernel(a, b, c)
    ints = torch.empty(3, dtype=torch.int8)
    kernel(a.to(torch.int8), b.to(torch.int8), ints)  # as integers: what torch computes
    assert ints.bool().tolist() == (a + b).tolist()


def test_bool_logic_and_masks_run():
    a, b = torch.tensor([True, True, False, False]), torch.tensor([True, False, True, False])
    c = torch.empty(4, dtype=torch.bool)
    _elementwise(_bool_and, 3)(a, b, c)
    assert c.tolist() == (a & b).tolist()
    x, y = torch.randn(4), torch.empty(4)
    _elementwise(_bool_select, 3)(a, x, y)
    assert torch.equal(y, torch.where(a, x * 2, x))


def _to_float32(x, y):
    y = x.to(ntl.float32) * 2  # noqa: F841


def _from_float32(x, y):
    y = x  # noqa: F841


@pytest.mark.parametrize("name", ["float8_e4m3fn", "float8_e5m2"])
def test_fp8_tensors(name):
    dtype = getattr(torch, name)
    x = torch.randn(40).to(dtype)
    y = torch.empty(40)
    _elementwise(_to_float32, 2)(x, y)
    torch.testing.assert_close(y, x.float() * 2)
    back = torch.empty(40, dtype=dtype)
    _elementwise(_from_float32, 2)(y, back)
    assert torch.equal(back.float(), y.to(dtype).float())
