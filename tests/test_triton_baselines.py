"""The hand-written Triton baselines of the benchmark suite against torch.

Without a GPU the kernels run through Triton's interpreter on the CPU, each
auto-tuner reduced to one small config. With a GPU they run natively, each
auto-tuner held to its first config (the largest tiles, so that the tiny shapes
here exercise the masks). Shapes are tiny and do not divide the block sizes.

Tolerances (assert_close: |out - ref| <= atol + rtol * |ref|):
float32: atol = rtol = 1e-4; products (GEMMs, conv2d, sdpa) 1e-3 in the interpreter,
3e-2 natively (Triton's float32 tl.dot runs in TF32 on NVIDIA GPUs);
float16: atol = rtol = 1e-2 against a float32 reference from the same float16 inputs.
"""

import os

import torch

ON_GPU = torch.cuda.is_available()
if not ON_GPU:
    # No GPU: Triton's interpreter, chosen before triton is imported (as ntsym does).
    os.environ["TRITON_INTERPRET"] = "1"

import pytest  # noqa: E402
import torch.nn.functional as F  # noqa: E402

try:
    from benchmarks import triton_baselines as tb  # noqa: E402
except RuntimeError as error:  # pragma: no cover - Triton 3.3's autotuner needs a GPU driver
    if ON_GPU or "active drivers" not in str(error):
        raise
    pytest.skip(f"this Triton's autotune needs a GPU driver even under the interpreter ({error})",
                allow_module_level=True)

if not ON_GPU and not tb.INTERPRET:  # pragma: no cover
    pytest.skip("no GPU, and triton was imported without TRITON_INTERPRET=1", allow_module_level=True)

DEVICE = "cpu" if tb.INTERPRET else "cuda"
F32 = dict(atol=1e-4, rtol=1e-4)
F32_GEMM = dict(atol=1e-3, rtol=1e-3) if tb.INTERPRET else dict(atol=3e-2, rtol=3e-2)
F16 = dict(atol=1e-2, rtol=1e-2)


@pytest.fixture(autouse=True)
def _device_and_seed():
    torch.manual_seed(0)
    with torch.device(DEVICE):
        yield


@pytest.fixture(autouse=True, scope="module")
def _one_config_each():
    """Natively, hold each auto-tuner to its first config (compiling all of them is the benchmark's job)."""
    saved = {}
    if not tb.INTERPRET:
        for names in tb.AUTOTUNED_KERNELS.values():
            for name in names:
                kernel = getattr(tb, name)
                saved[name] = kernel.configs
                kernel.configs = kernel.configs[:1]
    yield
    for name, configs in saved.items():
        getattr(tb, name).configs = configs


def _close(out, ref, tol, dtype):
    assert out.dtype == dtype
    assert out.shape == ref.shape
    torch.testing.assert_close(out.float(), ref.float(), **tol)


def _rms_norm_ref(x, eps=1e-6):
    x = x.float()
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


def _rope_ref(x, sin, cos):
    x = x.float()
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    s = sin.float()[None, :, None, :]
    c = cos.float()[None, :, None, :]
    return torch.cat([x1 * c - x2 * s, x1 * s + x2 * c], dim=-1)


# --- element-wise -------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 1000, 1537])
def test_add(n):
    x, y = torch.randn(n), torch.randn(n)
    _close(tb.add(x, y), x + y, F32, torch.float32)


def test_add_float16():
    x, y = torch.randn(1000).half(), torch.randn(1000).half()
    _close(tb.add(x, y), x.float() + y.float(), F16, torch.float16)


@pytest.mark.parametrize("n", [1000, 1537])
def test_silu(n):
    x = torch.randn(n) * 4
    _close(tb.silu(x), F.silu(x), F32, torch.float32)


def test_silu_float16():
    x = (torch.randn(1000) * 4).half()
    _close(tb.silu(x), F.silu(x.float()), F16, torch.float16)


# --- GEMMs ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("M,K,N", [(50, 40, 30), (1, 7, 1), (33, 65, 17)])
def test_mm(M, K, N):
    a, b = torch.randn(M, K), torch.randn(K, N)
    _close(tb.mm(a, b), a @ b, F32_GEMM, torch.float32)


def test_mm_transposed_strides():
    a, b = torch.randn(40, 50), torch.randn(30, 40)
    _close(tb.mm(a.t(), b.t()), a.t() @ b.t(), F32_GEMM, torch.float32)


def test_mm_float16():
    a, b = torch.randn(50, 40).half(), torch.randn(40, 30).half()
    _close(tb.mm(a, b), a.float() @ b.float(), F16, torch.float16)


@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, 2.0)])
def test_addmm(beta, alpha):
    c, a, b = torch.randn(50, 30), torch.randn(50, 40), torch.randn(40, 30)
    _close(tb.addmm(c, a, b, beta=beta, alpha=alpha), torch.addmm(c, a, b, beta=beta, alpha=alpha),
           F32_GEMM, torch.float32)


def test_addmm_beta_zero_ignores_input():
    c = torch.full((50, 30), float("nan"))
    a, b = torch.randn(50, 40), torch.randn(40, 30)
    _close(tb.addmm(c, a, b, beta=0, alpha=1.5), 1.5 * (a @ b), F32_GEMM, torch.float32)


def test_bmm():
    a, b = torch.randn(3, 33, 17), torch.randn(3, 17, 29)
    _close(tb.bmm(a, b), torch.bmm(a, b), F32_GEMM, torch.float32)


def test_bmm_transposed_strides():
    a, b = torch.randn(2, 17, 33), torch.randn(2, 29, 17)
    a_t, b_t = a.transpose(1, 2), b.transpose(1, 2)
    _close(tb.bmm(a_t, b_t), torch.bmm(a_t, b_t), F32_GEMM, torch.float32)


# --- conv2d --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "x_shape,w_shape",
    [((2, 3, 9, 10), (5, 3, 3, 2)), ((1, 4, 6, 6), (3, 4, 1, 1)), ((2, 5, 7, 8), (33, 5, 3, 3))],
)
def test_conv2d(x_shape, w_shape):
    x, w = torch.randn(x_shape), torch.randn(w_shape)
    _close(tb.conv2d(x, w), F.conv2d(x, w), F32_GEMM, torch.float32)


def test_conv2d_non_contiguous_operands():
    x = torch.randn(2, 9, 3, 10).transpose(1, 2)  # (N, C, H, W) = (2, 3, 9, 10), H and C strides swapped
    w = torch.randn(5, 3, 2, 3).transpose(2, 3)  # (K, C, R, S) = (5, 3, 3, 2), not contiguous
    _close(tb.conv2d(x, w), F.conv2d(x, w), F32_GEMM, torch.float32)


def test_conv2d_float16():
    x, w = torch.randn(2, 3, 9, 10).half(), torch.randn(5, 3, 3, 3).half()
    _close(tb.conv2d(x, w), F.conv2d(x.float(), w.float()), F16, torch.float16)


# --- row reductions ------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(7, 100), (3, 4, 33), (5, 1)])
def test_rms_norm(shape):
    x = torch.randn(shape)
    _close(tb.rms_norm(x, 1e-5), _rms_norm_ref(x, 1e-5), F32, torch.float32)


def test_rms_norm_float16():
    x = torch.randn(7, 100).half()
    _close(tb.rms_norm(x), _rms_norm_ref(x), F16, torch.float16)


@pytest.mark.parametrize("shape", [(7, 100), (3, 4, 33), (5, 1)])
def test_softmax(shape):
    x = torch.randn(shape) * 3
    _close(tb.softmax(x), torch.softmax(x, dim=-1), F32, torch.float32)


def test_softmax_float16():
    x = (torch.randn(7, 100) * 3).half()
    _close(tb.softmax(x), torch.softmax(x.float(), dim=-1), F16, torch.float16)


# --- rope ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(2, 5, 3, 8), (1, 7, 5, 6)])
def test_rope(shape):
    B, S, H, D = shape
    x = torch.randn(shape)
    angles = torch.randn(S, D // 2)
    sin, cos = angles.sin(), angles.cos()
    out = tb.rope(x, sin, cos)
    assert out.data_ptr() != x.data_ptr()
    _close(out, _rope_ref(x, sin, cos), F32, torch.float32)


def test_rope_non_contiguous_input():
    x = torch.randn(2, 3, 5, 8).transpose(1, 2)  # (B, S, H, D) view with S and H strides swapped
    angles = torch.randn(5, 4)
    sin, cos = angles.sin(), angles.cos()
    _close(tb.rope(x, sin, cos), _rope_ref(x, sin, cos), F32, torch.float32)


def test_rope_float16():
    x = torch.randn(2, 5, 3, 8).half()
    angles = torch.randn(5, 4)
    sin, cos = angles.sin().half(), angles.cos().half()
    _close(tb.rope(x, sin, cos), _rope_ref(x, sin, cos), F16, torch.float16)


# --- sdpa ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("is_causal", [False, True])
@pytest.mark.parametrize("s_q,s_k,d", [(40, 40, 16), (40, 37, 16), (20, 48, 12)])
def test_sdpa(is_causal, s_q, s_k, d):
    q = torch.randn(1, 2, s_q, d)
    k = torch.randn(1, 2, s_k, d)
    v = torch.randn(1, 2, s_k, d)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=is_causal)
    _close(tb.sdpa(q, k, v, is_causal=is_causal), ref, F32_GEMM, torch.float32)


def test_sdpa_scale():
    q, k, v = (torch.randn(2, 1, 24, 16) for _ in range(3))
    ref = F.scaled_dot_product_attention(q, k, v, scale=0.3)
    _close(tb.sdpa(q, k, v, scale=0.3), ref, F32_GEMM, torch.float32)


def test_sdpa_float16():
    q, k, v = (torch.randn(1, 2, 40, 16).half() for _ in range(3))
    ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=True)
    _close(tb.sdpa(q, k, v, is_causal=True), ref, F16, torch.float16)


# Baselines that load bfloat16 and compute in float32: right in the interpreter too, whose
# own bfloat16 arithmetic and dot are wrong (numpy has no bfloat16).
BF16_IN_FLOAT32 = {"rms_norm", "rope", "silu", "softmax"}


@pytest.mark.parametrize("task", sorted(tb.FUNCTIONS))
def test_bfloat16(task):
    """Every baseline takes bfloat16 and returns it (the sweeps run them in bfloat16);
    its values are checked natively, and in the interpreter where they do not depend on its
    bfloat16 arithmetic."""
    from benchmarks import bench
    from benchmarks import tasks as T

    args, kwargs = T.make_inputs(task, T.SMOKE_SHAPES[task], DEVICE, torch.bfloat16)
    ref_args, ref_kwargs = T.upcast(args, kwargs)
    ref = T.REFERENCE_FUNCTIONS[task](*ref_args, **ref_kwargs).float()
    out = tb.FUNCTIONS[task](*args, **kwargs)
    assert out.dtype == torch.bfloat16 and out.shape == ref.shape
    if ON_GPU or task in BF16_IN_FLOAT32:
        ok, note = bench.compare(out, ref, *T.tolerance(task, torch.bfloat16), torch.bfloat16)
        assert ok, note


def test_functions_table():
    assert sorted(tb.FUNCTIONS) == sorted(
        ["add", "addmm", "bmm", "conv2d", "mm", "rms_norm", "rope", "sdpa", "silu", "softmax"]
    )
    for task, names in tb.AUTOTUNED_KERNELS.items():
        for name in names:
            assert len(getattr(tb, name).configs) == 1, (task, name)  # one config (see _one_config_each)


# --- the harness (benchmarks/bench.py) on the CPU ------------------------------------------------


@pytest.mark.skipif(not tb.INTERPRET, reason="--cpu-smoke needs the baselines built for the interpreter")
def test_bench_cpu_smoke_writes_reports(tmp_path, monkeypatch):
    import json

    from benchmarks import bench

    monkeypatch.setenv("TRITON_INTERPRET", "1")  # main() sets it too; restored after the test

    status = bench.main(["--cpu-smoke", "--tasks", "add,softmax,sdpa", "--impls", "triton,torch", "--out", str(tmp_path)])
    assert status == 0
    report = (tmp_path / "results.md").read_text()
    assert "| add | (1000,) x (1000,) | triton | ok |" in report
    raw = json.loads((tmp_path / "results.json").read_text())
    assert {(r["task"], r["impl"], r["status"]) for r in raw["results"]} == {
        (t, i, "ok") for t in ("add", "softmax", "sdpa") for i in ("triton", "torch")
    }


def test_bench_reports_wrong_results():
    from benchmarks import bench

    records = bench.run_case("add", ((100,), (100,)), ["broken"], _Loaded(lambda x, y: x - y), "cpu", torch.float32,
                             timing=False)
    assert records[0]["status"] == "WRONG"
    assert "outside atol" in records[0]["note"]


class _Loaded:
    def __init__(self, fn):
        self.fn = fn

    def get(self, impl, task):
        import contextlib

        return "ok", self.fn, contextlib.nullcontext


def test_ninetoothed_loader_runs_the_example_source_under_ninetoothed(tmp_path, monkeypatch):
    import sys
    import types

    from benchmarks import bench

    fake = types.ModuleType("ninetoothed")
    fake.language = types.ModuleType("ninetoothed.language")
    fake.MARK, fake.language.MARK = "ninetoothed", "ninetoothed.language"
    monkeypatch.setitem(sys.modules, "ninetoothed", fake)
    monkeypatch.setitem(sys.modules, "ninetoothed.language", fake.language)
    (tmp_path / "add.py").write_text(
        "import ntsym\nimport ntsym.language as ntl\nfrom ntsym import MARK\n\n"
        "def add(input, other):\n    return ntsym.MARK, ntl.MARK, MARK\n"
    )
    before = {name: sys.modules.get(name) for name in ("ntsym", "ntsym.language")}
    fn, first_call = bench.load_ninetoothed("add", examples_dir=tmp_path)
    assert fn(None, None) == ("ninetoothed", "ninetoothed.language", "ninetoothed")
    assert {name: sys.modules.get(name) for name in ("ntsym", "ntsym.language")} == before
    with first_call():
        assert sys.modules["ntsym"] is fake
    assert sys.modules.get("ntsym") is before["ntsym"]
    with pytest.raises(bench.Unavailable):
        bench.load_ninetoothed("mm", examples_dir=tmp_path)
    with pytest.raises(bench.Unavailable):
        bench.load_ntsym("mm", examples_dir=tmp_path)
