"""The express launch (``runtime.express``) against the general warm-call path
(``NTSYM_EXPRESS=0``) on the same scripts of calls, without a GPU (the
stand-in driver and binary of tests/test_express.py): for every call, the
outcome or error, what reached the binary, launch hooks, launches through
Triton's JIT, the handle's launch count, the version counters and the
tensors' values must agree.  The scripts try what a warm call may change:
scalars Triton specializes, layouts, alignment, aliasing, storage, autograd
and inference modes, keywords, types, several shapes, a shape forgotten by
the quick match."""

import tempfile

import pytest
import torch

import ntsym
from ntsym import Tensor
from ntsym.errors import LaunchError
from ntsym_codegen import runtime
from tests.test_express import (STANDS_IN, Tensors, _add, _flagged, _scaled, add, gpu, on_gpu,  # noqa: F401 (fixtures)
                                warm)


def _copy2d():
    def arrangement(x, z, BM=ntsym.block_size(), BN=ntsym.block_size()):
        return x.tile((BM, BN)), z.tile((BM, BN))

    def application(x, z):
        z = x  # noqa: F841

    return ntsym.make(arrangement, application, (Tensor(2), Tensor(2)), max_num_configs=1)


# -- the comparison harness ------------------------------------------------------------------------------------


class Run:
    """One run of a script of calls on a fresh handle: what each call did."""

    def __init__(self, make):
        self.tensors = Tensors()
        self.handle = on_gpu(make(), self.tensors)
        self.log = []
        self.express = []  # what Table.launch returned at each call (enabled runs only)

    def reg(self, *tensors):
        return self.tensors(*tensors)

    def __call__(self, *args, **kwargs):
        ts = [a for a in args if isinstance(a, torch.Tensor)]
        for t in ts:
            if not t.is_nested and t.layout is torch.strided and t.device.type == "cpu":
                try:
                    if t.data_ptr():
                        self.tensors(t)
                except Exception:
                    pass
        n, jit, launches = len(self.tensors.launches), self.tensors.jit_launches, self.handle.stats.launches

        def versions():
            out = []
            for t in ts:
                try:
                    out.append(t._version)
                except Exception as e:
                    out.append(type(e).__name__)
            return out

        try:
            self.handle(*args, **kwargs)
            outcome = "ok"
        except Exception as error:  # noqa: BLE001
            outcome = (type(error).__name__, str(error).splitlines()[0] if str(error) else "")
        values = []
        for t in ts:
            try:
                fits = t.untyped_storage().nbytes() >= (t.storage_offset() + 1) * t.element_size() + sum(
                    (n - 1) * st * t.element_size() for n, st in zip(t.shape, t.stride()))
                values.append(t.detach().clone() if not t.is_nested and fits and t.numel() else None)
            except Exception:
                values.append(None)
        entry = dict(outcome=outcome, binary=[v[0] for v in self.tensors.launches[n:]],
                     hooks=[v[1:] != (None, None, None) for v in self.tensors.launches[n:]],
                     jit=self.tensors.jit_launches - jit, launches=self.handle.stats.launches - launches,
                     versions=versions(), values=values)
        self.log.append(entry)
        return entry


def both(make, script):
    """Runs ``script(run)`` with the express launch off, then on; returns the two Runs."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        return _both(make, script, monkeypatch)


def _both(make, script, monkeypatch):
    runs = {}
    original = runtime.express.Table.launch
    for disabled in (True, False):
        runtime.express.DISABLED = disabled
        torch.manual_seed(0)
        monkeypatch.setenv("NTSYM_CACHE_DIR", tempfile.mkdtemp(prefix="ntsym-express-"))  # each run tunes alike
        run = Run(make)

        def launch(table, args, kwargs, run=run):
            done = original(table, args, kwargs)
            run.express.append(done)
            return done

        runtime.express.Table.launch = launch
        try:
            script(run)
        finally:
            runtime.express.Table.launch = original
            runtime.express.DISABLED = False
        runs[disabled] = run
    return runs[True], runs[False]


def differences(general, express):
    """The calls whose logs differ, as (index, key, general's, express's)."""
    found = []
    assert len(general.log) == len(express.log)
    for i, (g, e) in enumerate(zip(general.log, express.log)):
        for key in g:
            a, b = g[key], e[key]
            if key == "values":
                same = len(a) == len(b) and all(_same_values(u, v) for u, v in zip(a, b))
            else:
                same = repr(a) == repr(b)
            if not same:
                found.append((i, key, a if key != "values" else "...", b if key != "values" else "..."))
    return found


def _same_values(u, v):
    if u is None or v is None:
        return u is None and v is None
    if u.shape != v.shape or u.dtype != v.dtype:
        return False
    if u.dtype.is_floating_point:
        return torch.equal(u.nan_to_num(), v.nan_to_num())
    return torch.equal(u, v)


def same(make, script):
    general, express = both(make, script)
    diff = differences(general, express)
    if diff:
        for g, e in zip(general.log, express.log):
            print("G", g["outcome"], g["binary"], g["jit"], g["versions"])
            print("E", e["outcome"], e["binary"], e["jit"], e["versions"])
        print("express returned", express.express)
    assert not diff, diff
    return general, express


# -- the comparisons -----------------------------------------------------------------------------------


def _warm_add(run, n=300):
    x, y, z = run.reg(torch.randn(n), torch.randn(n), torch.zeros(n))
    for _ in range(3):
        run(x, y, z)
    return x, y, z


@STANDS_IN
def test_scalars(gpu):
    def script(run):
        x, z = run.reg(torch.randn(300), torch.zeros(300))
        for _ in range(3):
            run(x, z, 0.5, 3)
        for n in (5, 1, 16, 32, -1, -16, 0, 2**31 - 1, 2**31, -2**31, -2**31 - 1, 2**40, 2**63 - 1, 2**63, 2**64 - 1,
                  True, False, 3.0, 5):
            run(x, z, 0.5, n)
        for alpha in (2.0, -0.0, float("nan"), float("inf"), 1e300, 1, True, 0.5):
            run(x, z, alpha, 3)
    same(_scaled, script)


@STANDS_IN
def test_layouts(gpu):
    def script(run):
        x, y, z = _warm_add(run)
        big = run.reg(torch.randn(1000))[0]
        run(big[::2][:300], y, z)  # strided read
        run(x, y, big[1:301])  # offset by one element (alignment)
        run(x, y, big[4:304])  # offset by 16 bytes
        run(x, torch.randn(1).expand(300), z)  # expanded read
        run(x, y, torch.zeros(1).expand(300))  # expanded write
        run(x.double(), y.double(), z.double())
        run(x.half(), y.half(), z.half())
        run(torch._neg_view(x), y, z)
        run(x, y, torch._neg_view(z))
        run(x, y, z)
    same(_add, script)


@STANDS_IN
def test_aliasing(gpu):
    def script(run):
        x, y, z = _warm_add(run)
        run(x, y, x)
        run(x, y, y)
        run(x, x, x)
        run(x, y, x[:])  # another view object of x's memory
        base = run.reg(torch.randn(700))[0]
        run(base[:300], y, base[300:600])  # adjacent, disjoint
        run(base[:300], y, base[299:599])  # one element shared
        run(base[0:600:2], y, base[1:601:2])  # interleaved, disjoint
        run(x, y, z)
        run(z, y, z)
    same(_add, script)


@STANDS_IN
def test_aliasing_learned_in_place(gpu):
    def script(run):
        x, y = run.reg(torch.randn(300), torch.randn(300))
        for _ in range(3):
            run(x, y, x)
        z = run.reg(torch.zeros(300))[0]
        run(x, y, z)
        run(y, y, y)
        run(x, y, y)
        run(x, x, x)
        run(x, y, x[:])
        run(x, y, x)
    same(_add, script)


@STANDS_IN
def test_grad_and_inference(gpu):
    def script(run):
        x, y, z = _warm_add(run)
        w = run.reg(torch.zeros(300, requires_grad=True))[0]
        run(x, y, w)
        with torch.no_grad():
            for _ in range(3):
                run(x, y, w)
        run(x, y, w)
        r = run.reg(torch.randn(300, requires_grad=True))[0]
        run(r, y, z)
        run(r, y, z)
        with torch.inference_mode():
            inf = run.reg(torch.zeros(300))[0]
            run(x, y, inf)
            run(x, y, inf)
            run(x, y, z)
        run(x, y, inf)
        run(x, y, z)
        with torch.inference_mode():
            for _ in range(3):
                run(x, y, inf)
        run(x, y, inf)
    same(_add, script)


@STANDS_IN
def test_storage(gpu):
    def script(run):
        x, y, z = _warm_add(run)
        small = run.reg(torch.zeros(300))[0]
        small.untyped_storage().resize_(1200 - 4)
        run(x, y, small)
        s2 = torch.zeros(600)
        v = s2[300:]
        run.reg(v)
        s2.untyped_storage().resize_(2400 - 4)
        run(x, y, v)
        t = torch.empty(0)
        t.set_(torch.zeros(300).untyped_storage(), 0, (300,), (1,))
        run.reg(t)
        run(x, y, t)
        read_small = run.reg(torch.randn(300))[0]
        read_small.untyped_storage().resize_(1000)
        run.reg(read_small)
        run(read_small, y, z)
    same(_add, script)


@STANDS_IN
def test_keywords_and_arity(gpu):
    def script(run):
        x, y, z = _warm_add(run)
        run(x, y, z, BLOCK=64)
        run(x, y, z, BLOCK=None)
        run(x, y, z, ntsym_options=None)
        run(x, y, z, BLOK=3)
        run(x, y)
        run(x, y, z, z)
        run(x, y, None)
        run(x, y, 3)
        run(x, y, z=z)
        for _ in range(3):
            run(x, y, z, BLOCK=64)
        run(x, y, z, BLOCK=64.0)
        run(x, y, z, BLOCK=True)
        run(x, y, z, BLOCK=128)
        run(x, y, z)
        run(x, y, z, BLOCK=64, BLOK=1)
        run(x, y, z=z, BLOCK=64)
    same(_add, script)


@STANDS_IN
def test_types(gpu):
    class Sub(torch.Tensor):
        pass

    def script(run):
        x, y, z = _warm_add(run)
        run(x.as_subclass(Sub), y, z)
        run(torch.nn.Parameter(x, requires_grad=False), y, z)
        run(x, y, z)
        run(torch.zeros(0), torch.zeros(0), torch.zeros(0))
        run(x.unsqueeze(0), y, z)
        nested = torch.nested.nested_tensor([torch.randn(3), torch.randn(4)])
        run(nested, y, z)
        run(x, y, z)
    same(_add, script)


@STANDS_IN
def test_shapes_table(gpu):
    def script(run):
        xa, ya, za = _warm_add(run, 300)
        xb, yb, zb = _warm_add(run, 64)
        big = run.reg(torch.randn(600))[0]
        run(big[::2], ya, za)
        run(big[::2], ya, za)
        run(big[::2], ya, za)
        run(xa, ya, za)
        run(xb, yb, zb)
        run(big[1::2], ya, za)
        run(xa, ya, za[:])
    same(_add, script)


@STANDS_IN
def test_flag(gpu):
    def script(run):
        x, z = run.reg(torch.randn(40), torch.zeros(40))
        for _ in range(3):
            run(x, False, z)
        run(x, True, z)
        run(x, 0, z)
        run(x, 1, z)
        run(x, False, z)
        for _ in range(3):
            run(x, 1, z)
        run(x, True, z)
        run(x, 2, z)
        run(x, 1, z)
    same(_flagged, script)


@STANDS_IN
def test_2d(gpu):
    def script(run):
        x, z = run.reg(torch.randn(40, 24), torch.zeros(40, 24))
        for _ in range(3):
            run(x, z)
        xt = run.reg(torch.randn(24, 40))[0].t()
        run(xt, z)
        run(x, z.t().contiguous().t())
        run(x, z)
        zz = run.reg(torch.zeros(40, 48))[0][:, :24]
        run(x, zz)
        run(x, x)
        run(z, z)
        run(x.expand(40, 24), z)
    same(_copy2d, script)


@STANDS_IN
def test_inference_tensor_learned_in_inference_mode(gpu):
    """Guards learned inside inference mode pass an inference tensor outside it."""
    def script(run):
        _warmed_in_inference_mode(run)
        with torch.inference_mode():
            xi, yi, zi = run.reg(torch.randn(300), torch.randn(300), torch.zeros(300))
        run(xi, yi, zi)  # outside inference mode: an inference tensor written
        run(xi, yi, zi)
    same(_add, script)


def _warmed_in_inference_mode(run):
    """Shape 300 of the add learned inside inference mode, on normal tensors."""
    x, y, z = run.reg(torch.randn(300), torch.randn(300), torch.zeros(300))
    with torch.inference_mode():
        for _ in range(3):
            run(x, y, z)


@STANDS_IN
def test_inference_tensor_after_the_quick_match_is_forgotten(gpu):
    def script(run):
        _warmed_in_inference_mode(run)
        for n in range(1, runtime.quick.LIMIT + 1):  # as many other shapes: shape 300's quick match is forgotten
            a, b, c = run.reg(torch.randn(n), torch.randn(n), torch.zeros(n))
            run(a, b, c)
            run(a, b, c)
        with torch.inference_mode():
            xi, yi, zi = run.reg(torch.randn(300), torch.randn(300), torch.zeros(300))
        run(xi, yi, zi)
    general, express = both(_add, script)
    assert differences(general, express) == []


@STANDS_IN
def test_huge_integers(gpu):
    def script(run):
        x, z = run.reg(torch.randn(300), torch.zeros(300))
        for _ in range(3):
            run(x, z, 0.5, 2**40)
        for n in (2**40 + 1, 2**63 - 1, 2**63, 2**64 - 1, 2**64, -2**63, -2**63 - 1, 3):
            run(x, z, 0.5, n)
    same(_scaled, script)


@STANDS_IN
def test_transforms_and_modes(gpu):
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    class Function(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    class Dispatch(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    def script(run):
        x, y, z = _warm_add(run)
        with Function():
            run(x, y, z)
        with Dispatch():
            run(x, y, z)
        run(x, y, z)
        with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            run(x, y, z)
        with torch.enable_grad():
            run(x, y, z)

    same(_add, script)


@STANDS_IN
def test_vmap(gpu):
    def script(run):
        x, y, z = _warm_add(run)
        xs = torch.randn(2, 300)

        def f(a):
            run(a, y, z)
            return a

        torch.vmap(f)(xs)
    same(_add, script)


def _two_outputs():
    def arrangement(x, u, v, BLOCK=ntsym.block_size()):
        return x.tile((BLOCK,)), u.tile((BLOCK,)), v.tile((BLOCK,))

    def application(x, u, v):
        u = x + 1  # noqa: F841
        v = x * 2  # noqa: F841

    return ntsym.make(arrangement, application, (Tensor(1), Tensor(1), Tensor(1)), max_num_configs=1)


@STANDS_IN
def test_two_outputs(gpu):
    def script(run):
        x, u, v = run.reg(torch.randn(300), torch.zeros(300), torch.zeros(300))
        for _ in range(3):
            run(x, u, v)
        run(x, u, u)
        run(x, x, v)
        run(x, v, u)
        base = run.reg(torch.zeros(600))[0]
        run(x, base[:300], base[300:])
        run(x, base[:300], base[299:599])
        w = run.reg(torch.zeros(300, requires_grad=True))[0]
        run(x, u, w)
        with torch.no_grad():
            run(x, u, w)
    same(_two_outputs, script)


@STANDS_IN
def test_zero_dim_scalars(gpu):
    def script(run):
        x, z = run.reg(torch.randn(300), torch.zeros(300))
        for _ in range(3):
            run(x, z, 0.5, 3)
        run(x, z, torch.tensor(2.0), 3)
        run(x, z, 0.5, torch.tensor(3))
        run(x, z, torch.tensor([2.0]), 3)
        run(x, z, 0.5, 3)
        for _ in range(3):
            run(x, z, torch.tensor(2.0), 3)
        run(x, z, 2.0, 3)
    same(_scaled, script)


# -- what both paths must refuse or leave to Triton --------------------------------------------------------------


@STANDS_IN
@pytest.mark.parametrize("disabled", [True, False])
def test_a_shape_learned_in_inference_mode_refuses_an_inference_tensor_written_outside_it(gpu, add, disabled):
    """Guards made inside inference mode (on normal tensors) pass inference
    tensors outside it: the inference test is made on matched calls too."""
    runtime.express.DISABLED = disabled
    try:
        tensors = Tensors()
        handle = on_gpu(add, tensors)
        x, y, z = tensors(torch.randn(300), torch.randn(300), torch.zeros(300))
        with torch.inference_mode():
            warm(handle, x, y, z)
            xi, yi, zi = tensors(torch.randn(300), torch.randn(300), torch.zeros(300))
        with pytest.raises(RuntimeError, match="inference"):
            zi.add_(1)  # torch refuses it (once it has written it)
        before, written = len(tensors.launches), zi.clone()
        with pytest.raises(LaunchError, match="`z` is an inference tensor, written outside inference mode"):
            handle(xi, yi, zi)
        assert len(tensors.launches) == before and torch.equal(zi, written)
    finally:
        runtime.express.DISABLED = False


@STANDS_IN
@pytest.mark.parametrize("disabled", [True, False])
def test_integers_past_int64_go_to_triton_not_to_the_binary_made_for_int64(gpu, disabled):
    """Triton passes an integer from 2**63 to 2**64 as u64 (another variant)
    and refuses a larger one: warmed with 2**40 (i64), neither reaches that
    binary."""
    runtime.express.DISABLED = disabled
    try:
        tensors = Tensors()
        handle = on_gpu(_scaled(), tensors)
        x, z = tensors(torch.randn(300), torch.zeros(300))
        warm(handle, x, z, 0.5, 2**40)
        for n in (2**63, 2**64):
            jit, binary = tensors.jit_launches, len(tensors.launches)
            try:
                handle(x, z, 0.5, n)
            except OverflowError:
                pass  # the stand-in's interpreter cannot hold it either
            assert (tensors.jit_launches - jit, len(tensors.launches) - binary) == (1, 0), n
    finally:
        runtime.express.DISABLED = False


@STANDS_IN
def test_a_forgotten_shape_loses_its_express_launch_and_gets_one_again_when_learned_again(gpu, add):
    """The table of express launches follows the quick match's (at most
    ``quick.LIMIT`` shapes): a decode loop's every length is not kept."""
    tensors = Tensors()
    handle = on_gpu(add, tensors)
    x, y, z = tensors(torch.randn(300), torch.randn(300), torch.zeros(300))
    warm(handle, x, y, z)
    table = handle.calls.express
    assert table.count == 1 and table.only is not None
    for n in range(1, runtime.quick.LIMIT + 1):  # as many other shapes: shape 300's quick match is forgotten
        warm(handle, *tensors(torch.randn(n), torch.randn(n), torch.zeros(n)))
    shapes = {key for _, _, by_shapes in table.groups for key in by_shapes}
    assert table.count == runtime.quick.LIMIT == len(shapes) and (torch.Size([300]),) * 3 not in shapes
    warm(handle, x, y, z)  # learned again, its express launch made again
    shapes = {key for _, _, by_shapes in table.groups for key in by_shapes}
    assert table.count == runtime.quick.LIMIT and (torch.Size([300]),) * 3 in shapes
    before = len(tensors.launches)
    assert table.launch((x, y, z), {}) is True and len(tensors.launches) == before + 1
    torch.testing.assert_close(z, x + y)
