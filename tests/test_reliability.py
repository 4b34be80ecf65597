"""Nothing silently wrong: 64-bit indexing, a matrix of bad inputs (each a
clear LaunchError with outputs untouched), device selection, cache damage."""

import dataclasses
import os
import sys

import pytest
import torch

import ntsym
import ntsym.language as ntl
from ntsym_codegen import cache, runtime
from ntsym import LaunchError, Symbol, Tensor

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def copy_app(x, y):
    y = x  # noqa: F841


def scale_app(x, alpha, y):
    y = x * alpha  # noqa: F841


B = Symbol("B", meta=True, lower_bound=16, upper_bound=64, power_of_two=True)
C = Symbol("C", constexpr=True)

copy = ntsym.make(lambda x, y: (x.tile((B,)), y.tile((B,))), copy_app, (Tensor(1), Tensor(1)))
copy_c = ntsym.make(lambda x, y: (x.tile((C,)), y.tile((C,))), copy_app, (Tensor(1), Tensor(1)))
copy_f16 = ntsym.make(lambda x, y: (x.tile((B,)), y.tile((B,))), copy_app,
                      (Tensor(1, dtype=torch.float16), Tensor(1)))
scale = ntsym.make(lambda x, a, y: (x.tile((B,)), a, y.tile((B,))), scale_app, (Tensor(1), Tensor(0), Tensor(1)))
fixed = ntsym.make(lambda x, y: (x.tile((16, 16)), y.tile((16, 16))), copy_app,
                   (Tensor(shape=(32, 32)), Tensor(shape=(32, 32))))
squeezed = ntsym.make(lambda x, y: (x.squeeze(0).tile((B,)), y.tile((B,))), copy_app, (Tensor(2), Tensor(1)))
windows = ntsym.make(lambda x, y: (x.tile((3,), strides=(1,)), y.tile((1, 3)).squeeze(1)), copy_app,
                     (Tensor(1), Tensor(2)))


def mm_arrangement(input, other, output, BM=B, BN=B, BK=B):
    output_arranged = output.tile((BM, BN))
    input_arranged = input.tile((BM, BK)).tile((1, -1)).expand((-1, output_arranged.shape[1]))
    input_arranged.dtype = input_arranged.dtype.squeeze(0)
    other_arranged = other.tile((BK, BN)).tile((-1, 1)).expand((output_arranged.shape[0], -1))
    other_arranged.dtype = other_arranged.dtype.squeeze(1)
    return input_arranged, other_arranged, output_arranged


def mm_app(input, other, output):
    acc = ntl.zeros(output.shape, dtype=ntl.float32)
    for k in range(input.shape[0]):
        acc += ntl.dot(input[k], other[k])
    output = acc  # noqa: F841


mm = ntsym.make(mm_arrangement, mm_app, (Tensor(2), Tensor(2), Tensor(2)))


def t(*shape, dtype=torch.float32, device=DEVICE):
    return torch.arange(int(torch.tensor(shape).prod()) if shape else 1, dtype=torch.float32,
                        device=device).reshape(shape).to(dtype)


BASE = t(64)

BAD = [
    # (kernel, args, kwargs, exception, message)
    (copy, lambda: (t(8),), {}, LaunchError, "takes 2 arguments"),
    (copy, lambda: (t(8), t(8), t(8)), {}, LaunchError, "takes 2 arguments"),
    (copy, lambda: (t(8, 1), t(8)), {}, LaunchError, "`x` must have 1 dimensions, got 2"),
    (copy, lambda: (t(8), t(2, 4)), {}, LaunchError, "`y` must have 1 dimensions, got 2"),
    (copy, lambda: ([1.0] * 8, t(8)), {}, LaunchError, "`x` must be a torch.Tensor, got list"),
    (copy, lambda: (t(8).numpy() if DEVICE == "cpu" else 3, t(8)), {}, LaunchError, "`x` must be a torch.Tensor"),
    (copy, lambda: (t(8), t(9)), {}, LaunchError, r"y.shape\[0\] \(=9\) must be <= x.shape\[0\] \(=8\)"),
    (copy, lambda: (t(8), t(8).to(torch.complex64)), {}, LaunchError, "complex64"),
    (copy, lambda: (t(8).to(torch.complex128), t(8)), {}, LaunchError, "complex128"),
    (copy_f16, lambda: (t(8).to(torch.complex64), t(8)), {}, LaunchError, "`x` has dtype torch.complex64"),
    (copy, lambda: (t(8), torch.empty(8, device="meta")), {}, LaunchError, "all tensors must be on one device"),
    (copy, lambda: (t(8), t(1).expand(8)), {}, LaunchError, "dimension 0 has stride 0"),
    (copy, lambda: (t(8), t(8)), {"B": 32.5}, LaunchError, "`B` must be an int"),
    (copy, lambda: (t(8), t(8)), {"B": -16}, LaunchError, "below its lower bound"),
    (copy, lambda: (t(8), t(8)), {"B": True}, LaunchError, "`B` must be an int"),
    (copy, lambda: (t(8), t(8)), {"B": 128}, LaunchError, "above its upper bound 64"),
    (copy, lambda: (t(8), t(8)), {"B": 8}, LaunchError, "below its lower bound 16"),
    (copy, lambda: (t(8), t(8)), {"B": 48}, LaunchError, "must be a power of two"),
    (copy, lambda: (t(8), t(8)), {"BLOCK": 16}, LaunchError, "unknown keyword argument"),
    (copy_c, lambda: (t(8), t(8)), {}, LaunchError, "needs the compile-time value `C`"),
    (copy_c, lambda: (t(8), t(8)), {"C": 0}, LaunchError, "must be positive"),
    (copy_c, lambda: (t(8), t(8)), {"C": "16"}, LaunchError, "`C` must be an int"),
    (scale, lambda: (t(8), t(2), t(8)), {}, LaunchError, "`alpha` is a scalar parameter"),
    (scale, lambda: (t(8), "2", t(8)), {}, LaunchError, "`alpha` must be a number"),
    (fixed, lambda: (t(32, 31), t(32, 32)), {}, LaunchError, r"x.shape\[1\] \(=31\) must equal 32"),
    (squeezed, lambda: (t(2, 8), t(8)), {}, LaunchError, r"x.shape\[0\] \(=2\) must equal 1"),
    (windows, lambda: (t(1), t(0, 3)), {}, LaunchError, r"x.shape\[0\] - 2 \(=-1, x.shape\[0\]=1\) must be >= 0"),
    (mm, lambda: (t(4, 5), t(6, 3), t(4, 3)), {}, LaunchError, r"other.shape\[0\] \(=6\) must equal input.shape\[1\] \(=5\)"),
    (mm, lambda: (t(4, 5), t(5, 3), t(5, 3)), {}, LaunchError, r"input.shape\[0\] \(=4\) must equal output.shape\[0\] \(=5\)"),
    (mm, lambda: (BASE[:20].view(4, 5), t(5, 4), BASE[:16].view(4, 4)), {}, LaunchError, "share memory"),
    (copy, lambda: (BASE[1:9], BASE[:8]), {}, LaunchError, "share memory"),
    (copy, lambda: (BASE[:8], BASE[::2][:8]), {}, LaunchError, "share memory"),
]


@pytest.mark.parametrize("case", range(len(BAD)))
def test_bad_input(case):
    kernel, make_args, kwargs, exception, message = BAD[case]
    args = make_args()
    before = [a.clone() if isinstance(a, torch.Tensor) and a.device.type != "meta" else None for a in args]
    with pytest.raises(exception, match=message):
        kernel(*args, **kwargs)
    for a, b in zip(args, before):
        if b is not None:
            assert torch.equal(a, b), "an argument was modified by a rejected call"


def test_matrix_has_at_least_thirty_cases():
    assert len(BAD) >= 30


def test_cpu_tensors_when_compiled_for_gpu(monkeypatch):
    k = ntsym.make(lambda x, y: (x.tile((B,)), y.tile((B,))), copy_app, (Tensor(1), Tensor(1)))
    x, y = torch.zeros(8, device="cpu"), torch.zeros(8, device="cpu")
    if not torch.cuda.is_available():
        k(x, y)
    # The same kernel's launcher, bound to facts that say kernels run on a GPU.
    facts = dataclasses.replace(k.launch_facts, spec=dataclasses.replace(k.spec, interpreting=False),
                                cache=runtime.CallCache())
    launch = k.launcher_for(facts)
    with pytest.raises(LaunchError, match="is on the CPU but kernels run on the GPU"):
        launch(x, y)


def test_valid_edge_cases():
    x = torch.zeros(0, device=DEVICE)
    y = torch.zeros(0, device=DEVICE)
    copy(x, y)  # zero size: no launch, no error
    z = t(100)
    scale(z, 2.0, z)  # in place, identical arrangement: allowed
    torch.testing.assert_close(z, t(100) * 2)
    scale(z, torch.tensor(0.5), z)  # a one-element tensor as a scalar
    torch.testing.assert_close(z, t(100))


# -- 64-bit indexing ------------------------------------------------------------------


def test_int64_selection():
    small = torch.empty(10)
    assert not runtime.needs_int64([small])
    big = torch.empty(2**31 + 64, dtype=torch.int8)  # untouched pages: no real allocation
    assert runtime.needs_int64([big[:: 2**30]])
    assert runtime.needs_int64([big.as_strided((2, 2), (2**31, 1))])
    assert not runtime.needs_int64([big.as_strided((2, 2), (2**29, 1))])
    assert runtime.needs_int64([big])


@pytest.mark.skipif(DEVICE == "cuda", reason="covered by the GPU run with a real large tensor")
def test_offsets_past_two_to_the_31_are_correct():
    base = torch.empty(2**31 + 64, dtype=torch.int8)  # untouched pages: no real allocation
    base[0], base[2**30], base[2**31] = 1, 2, 3
    x = base[:: 2**30]
    assert x.tolist() == [1, 2, 3] and runtime.needs_int64([x])
    y = torch.zeros(3, dtype=torch.int8)
    copy(x, y)
    assert y.tolist() == [1, 2, 3]


@pytest.mark.skipif(DEVICE != "cuda", reason="needs a GPU with > 4 GiB free")
def test_large_tensor_on_gpu():
    n = 2**31 + 1024
    x = torch.ones(n, dtype=torch.int8, device="cuda")
    x[-5:] = torch.arange(5, dtype=torch.int8, device="cuda")
    y = torch.zeros_like(x)
    copy(x, y)
    assert torch.equal(y[-5:], x[-5:]) and int(y[:1024].sum()) == 1024
    del x, y


# -- device selection ---------------------------------------------------------------------


def test_launch_sets_the_tensors_device(monkeypatch):
    """Triton launches on the current CUDA device; ntsym switches to the
    tensors' device for the launch when they differ."""
    seen = []

    class FakeTensor:
        def __init__(self, device):
            self.device_index = device
            self.shape, self.dtype = (4,), torch.float32

        def get_device(self):
            return self.device_index

        def stride(self):
            return (1,)

    class FakeKernel:
        def __getitem__(self, grid):
            return lambda *a, **k: seen.append(("launch", current[0]))

    current = [0]

    class DeviceContext:
        def __init__(self, index):
            self.index = index

        def __enter__(self):
            self.saved, current[0] = current[0], self.index

        def __exit__(self, *exc):
            current[0] = self.saved

    monkeypatch.setattr(torch.cuda, "current_device", lambda: current[0])
    monkeypatch.setattr(torch.cuda, "device", DeviceContext)
    spec = dataclasses.replace(copy.spec, interpreting=False)
    from ntsym_codegen import tuning

    config = tuning.Config((("B", 16),), 4, 3)
    monkeypatch.setattr(tuning, "choose", lambda *a, **k: config)
    facts = runtime.LaunchFacts(kernel=FakeKernel(), spec=spec)
    runtime.launch(facts, (), {"B": 16}, (FakeTensor(1),), grid=lambda meta: (1,), derived={})
    runtime.launch(facts, (), {"B": 16}, (FakeTensor(0),), grid=lambda meta: (1,), derived={})
    assert seen == [("launch", 1), ("launch", 0)]
    assert current[0] == 0


# -- cache robustness -------------------------------------------------------------------------


def test_damaged_cached_module_is_rewritten(tmp_path, monkeypatch):
    monkeypatch.setenv("NTSYM_CACHE_DIR", str(tmp_path))
    source = copy.source
    path = cache.write(source, "damaged")
    with open(path) as f:
        good = f.read()
    with open(path, "w") as f:
        f.write(good[: len(good) // 2])  # truncated, as by a crash mid-write
    assert cache.write(source, "damaged") == path
    with open(path) as f:
        assert f.read() == good
    with open(path, "w") as f:
        f.write("raise SystemExit('must never be imported')\n")
    path2 = cache.write(source, "damaged")
    sys.modules.pop("ntsym_generated." + os.path.splitext(os.path.basename(path2))[0], None)
    module = cache.load(source, "damaged")
    assert hasattr(module, "make_launch")
