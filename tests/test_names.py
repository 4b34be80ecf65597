"""Names the caller chooses (size symbols, the application's locals) against
the names the generated kernel and launcher give their own values: the
program index, the modules they import, the parameters derived from tensors.
A clash used to make the kernel read the wrong value (``Symbol("k")`` beside
the loop ``for k in ...`` of a matrix product gave a wrong product, no
error); the caller's names are now renamed away from the kernel's."""

import functools

import pytest
import torch

import ntsym
from examples import add, mm
from ntsym import Symbol, Tensor
from tests.conftest import FP32_DOT_TOL


def test_a_product_over_symbols_named_m_n_k():
    m, n, k = Symbol("m"), Symbol("n"), Symbol("k")
    kernel = ntsym.make(mm.arrangement, mm.application, (Tensor(shape=(m, k)), Tensor(shape=(k, n)),
                                                         Tensor(shape=(m, n))))
    a, b = torch.randn(50, 72), torch.randn(72, 40)
    out = torch.empty(50, 40)
    kernel(a, b, out, BLOCK_SIZE_M=16, BLOCK_SIZE_N=16, BLOCK_SIZE_K=16)
    torch.testing.assert_close(out, a @ b, atol=FP32_DOT_TOL, rtol=FP32_DOT_TOL)


@pytest.mark.parametrize("name", ["pid", "tl", "grid", "input", "range", "cdiv", "runtime", "meta", "x_t0", "mask_1"])
def test_a_size_symbol_named_as_the_kernels_own_names(name):
    n = Symbol(name)
    kernel = ntsym.make(functools.partial(add.arrangement, BLOCK_SIZE=16), add.application,
                        (Tensor(shape=(n,)), Tensor(shape=(n,)), Tensor(1)))
    x, y = torch.randn(40), torch.randn(40)
    out = torch.empty(40)
    kernel(x, y, out)
    torch.testing.assert_close(out, x + y)


def _arrangement(x, y):
    return x.tile((16,)), y.tile((16,))


@pytest.mark.parametrize("name", ["pid", "pid_0", "tl", "x_ptr", "x_size_0", "x_stride_0", "NTSYM_INT64", "range",
                                  "mask_1", "x_tile"])
def test_an_application_local_named_as_the_kernels_own_names(name, tmp_path):
    path = tmp_path / f"app_{name}.py"
    path.write_text("def application(x, y):\n"
                    f"    {name} = x + 1\n"
                    f"    y = {name} * 2 + x  # noqa: F841\n")
    namespace = {"__file__": str(path)}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    kernel = ntsym.make(_arrangement, namespace["application"], (Tensor(1), Tensor(1)))
    x = torch.randn(40)
    out = torch.empty(40)
    kernel(x, out)
    torch.testing.assert_close(out, (x + 1) * 2 + x)


@pytest.mark.parametrize("name", ["y_size_0", "x_stride_0", "runtime", "cdiv", "ntsym_scale"])
def test_a_parameter_named_as_a_size_or_the_launchers_names_is_refused(name, tmp_path):
    # A scalar named `y_size_0` beside a tensor `y` was replaced by y's size.
    path = tmp_path / f"scaled_{name}.py"
    path.write_text(f"def arrangement(x, {name}, y):\n    return x.tile((16,)), {name}, y.tile((16,))\n\n\n"
                    f"def application(x, {name}, y):\n    y = x * {name} + 1  # noqa: F841\n")
    namespace = {"__file__": str(path)}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    with pytest.raises(ntsym.CodegenError, match=f"`{name}`"):
        ntsym.make(namespace["arrangement"], namespace["application"], (Tensor(1), Tensor(0), Tensor(1)))


@pytest.mark.parametrize("names", [("grid", "key", "args"), ("tensors", "derived", "entry"),
                                   ("found", "unknown", "meta"), ("given", "config", "int64")])
def test_parameters_named_as_the_launchers_former_locals(names, tmp_path):
    """NineToothed takes any parameter name its launcher does not read: a
    tensor named ``grid`` (grid sampling) or ``key`` (attention).  ``key`` was
    taken by ntsym's launcher for the call's key: every call was keyed by the
    tensor, kept alive by the call cache, and never found again."""
    import importlib.util

    a, b, c = names
    path = tmp_path / f"named_{a}.py"
    path.write_text(f"def arrangement({a}, {b}, s, {c}):\n"
                    f"    return {a}.tile((16,)), {b}.tile((16,)), s, {c}.tile((16,))\n\n\n"
                    f"def application({a}, {b}, s, {c}):\n    {c} = {a} * s + {b}  # noqa: F841\n")
    namespace = {"__file__": str(path)}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    kernel = ntsym.make(namespace["arrangement"], namespace["application"], (Tensor(1), Tensor(1), Tensor(0),
                                                                             Tensor(1)))
    ntsym.aot.export(kernel, tmp_path / "exported.py")
    spec = importlib.util.spec_from_file_location(f"exported_{a}", tmp_path / "exported.py")
    exported = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(exported)
    x, y = torch.randn(40), torch.randn(40)
    for launch in (kernel, kernel, exported.launch):
        out = torch.zeros(40)
        launch(x, y, 3.0, out)
        torch.testing.assert_close(out, x * 3.0 + y)
    out = torch.zeros(40)
    kernel(**{a: x, b: y, "s": 2.0, c: out})
    torch.testing.assert_close(out, x * 2.0 + y)
    assert kernel.calls.calls and all(isinstance(k, tuple) for k in kernel.calls.calls)


def test_a_parameter_named_as_the_standalone_modules_names_is_refused_at_export(tmp_path):
    path = tmp_path / "named_configs.py"
    path.write_text("def arrangement(x, CONFIGS):\n    return x.tile((16,)), CONFIGS.tile((16,))\n\n\n"
                    "def application(x, CONFIGS):\n    CONFIGS = x + 1  # noqa: F841\n")
    namespace = {"__file__": str(path)}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    kernel = ntsym.make(namespace["arrangement"], namespace["application"], (Tensor(1), Tensor(1)))
    x, out = torch.randn(40), torch.zeros(40)
    kernel(x, out)
    torch.testing.assert_close(out, x + 1)
    with pytest.raises(ntsym.CodegenError, match="`CONFIGS`"):
        ntsym.aot.export(kernel, tmp_path / "exported.py")


@pytest.mark.parametrize("declared", [Tensor(0), Tensor(0, constexpr=True)])
def test_a_scalar_named_as_the_program_index_is_refused(declared, tmp_path):
    path = tmp_path / "scaled_pid.py"
    path.write_text("def arrangement(x, pid, y):\n    return x.tile((16,)), pid, y.tile((16,))\n\n\n"
                    "def application(x, pid, y):\n    y = x * pid + 1  # noqa: F841\n")
    namespace = {"__file__": str(path)}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    with pytest.raises(ntsym.CodegenError, match="`pid`"):
        ntsym.make(namespace["arrangement"], namespace["application"], (Tensor(1), declared, Tensor(1)))


_SCALE = 2.0
_OFFSET = 100.0


def _bump(a):
    b = a + 1
    return b * _SCALE


def _plus_offset(v):
    return v + _OFFSET


def _shadowed(x, y):
    _SCALE = x * 0 + 5.0  # an application local named as the helper's global
    y = _bump(x) + _SCALE  # noqa: F841


def _prefixed(x, y):
    _bump_1_result = x * 0 + 100.0  # named as the inliner's temporary
    y = _bump(x) + _bump_1_result  # noqa: F841


def _offset(x, y):
    _OFFSET = x * 0  # noqa: F841
    y = _plus_offset(x)  # noqa: F841


@pytest.mark.parametrize("application, expected", [
    (_shadowed, lambda x: (x + 1) * 2 + 5),  # the helper's _SCALE is its module's, not the application's
    (_prefixed, lambda x: (x + 1) * 2 + 100),
    (_offset, lambda x: x + 100),
])
def test_inlined_helpers_keep_their_own_names(application, expected):
    kernel = ntsym.make(_arrangement, application, (Tensor(1), Tensor(1)))
    x = torch.arange(40.0)
    original = x.clone()
    out = torch.empty(40)
    kernel(x, out)
    torch.testing.assert_close(out, expected(original))
    assert torch.equal(x, original)


@pytest.mark.parametrize("name", ["ntsym_n", "NTSYM_N", "int64", "config", "stream", "n_i32"])
def test_size_symbols_named_as_generated_prefixes_or_export_locals(name, tmp_path):
    import importlib.util

    n = Symbol(name)
    kernel = ntsym.make(functools.partial(add.arrangement, BLOCK_SIZE=16), add.application,
                        (Tensor(shape=(n,)), Tensor(shape=(n,)), Tensor(1)))
    ntsym.aot.export(kernel, tmp_path / "exported.py")
    spec = importlib.util.spec_from_file_location(f"exported_{name}", tmp_path / "exported.py")
    exported = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(exported)
    x, y = torch.randn(40), torch.randn(40)
    for launch in (kernel, exported.launch):
        out = torch.zeros(40)
        launch(x, y, out)
        torch.testing.assert_close(out, x + y)


def _rebinds_scalar(x, s, y):
    s = s * 2  # the application's own rebinding of its scalar: accepted
    s += 1
    y = x * s  # noqa: F841


def _max_of_two(a, b):
    if b > a:
        a = b  # a combine function rebinding its parameter
    return a


def _reduced(x, y):
    y = ntsym.language.reduce(x, 0, _max_of_two)  # noqa: F841


_N = Symbol("n")
_SIGN = -1
_HALF = ntsym.language.constexpr(0.5)


def _reads_its_symbol(x, y):
    y = x * 0 + n  # noqa: F821, F841  (the size symbol, read as the global bound to it below)


def _half_of(v):
    return v * _HALF * _SIGN ** 2


def _halved(x, y):
    _HALF = x * 0 + 7.0  # noqa: F841  (the application's own _HALF must not reach the helper)
    y = _half_of(x)  # noqa: F841


n = _N


def test_what_the_name_checks_leave_alone():
    x = torch.arange(16.0)
    out = torch.empty(16)
    ntsym.make(lambda x, s, y: (x.tile((16,)), s, y.tile((16,))), _rebinds_scalar,
               (Tensor(1), Tensor(0), Tensor(1)))(x, 3.0, out)
    torch.testing.assert_close(out, x * 7)
    peak = torch.empty(1)
    ntsym.make(lambda x, y: (x.tile((16,)), y.tile((1,))), _reduced, (Tensor(1), Tensor(1)))(x, peak)
    assert peak.item() == 15.0
    ntsym.make(_arrangement, _reads_its_symbol, (Tensor(shape=(_N,)), Tensor(1)))(x, out)
    torch.testing.assert_close(out, torch.full((16,), 16.0))
    ntsym.make(_arrangement, _halved, (Tensor(1), Tensor(1)))(x, out)
    torch.testing.assert_close(out, x * 0.5)  # (-1) ** 2, not -(1 ** 2)
