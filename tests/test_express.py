"""The express launch of a warm call (``runtime.express``), without a GPU.

The kernel's GPU paths are taken (its facts bound with ``interpreting=False``),
with Triton's driver and the compiled binary stood in for: the binary records
what it is given and runs the real kernel through Triton's interpreter on the
tensors whose data pointers it was given.  Each test compares the express
launch with the general path (quick match, ``fast_launch``, ``launch_direct``)
on the same calls: what reaches the binary, the version counters, the launch
counts, and the calls each declines."""

import dataclasses
import inspect
from types import SimpleNamespace

import pytest
import torch

import ntsym  # before triton: without a GPU, ntsym selects Triton's interpreter
from ntsym import Tensor
from ntsym.errors import LaunchError
from ntsym_codegen import runtime, tuning
from triton import knobs
from triton.runtime import driver  # noqa: E402  (isort: after ntsym on purpose)


class Binary:
    """Stands in for a compiled kernel: records each launch's arguments, then
    runs the real kernel on the tensors its data pointers name."""

    function = "FUNCTION"
    packed_metadata = "PACKED"

    def __init__(self, jit, grid, kwargs, spec, tensors):
        self.jit, self.grid, self.kwargs, self.spec, self.tensors = jit, grid, kwargs, spec, tensors

    def launch_metadata(self, grid, stream, *args):
        return ("METADATA", grid, stream)

    def run(self, gx, gy, gz, stream, function, packed, metadata, enter, leave, *values):
        self.tensors.launches.append((self.tensors.named(values), metadata, enter, leave))
        names = self.jit.arg_names
        call = [self.tensors.tensor(v) for v in values[: len(values) - len(self.kwargs)]]
        kwargs = {n: values[names.index(n)] for n in self.kwargs}
        runtime.interpreter.interpret(self.jit, (gx, gy, gz), call, kwargs, self.spec)


class Stand:
    """Stands in for the @triton.jit kernel on a GPU: runs it in the
    interpreter and returns a Binary, as Triton returns its compiled kernel."""

    def __init__(self, real, spec, tensors):
        self.real, self.spec, self.tensors = real, spec, tensors
        signature = inspect.signature(real.fn).parameters.values()
        self.params = [SimpleNamespace(name=p.name, is_constexpr="constexpr" in str(p.annotation)) for p in signature]
        self.arg_names = real.arg_names

    def __getitem__(self, grid):
        def run(*args, **kwargs):
            options = {k: v for k, v in kwargs.items() if k not in ("num_warps", "num_stages")}
            self.tensors.jit_launches += 1
            runtime.interpreter.interpret(self.real, grid, list(args), options, self.spec)
            grid3 = tuple(grid) + (1,) * (3 - len(grid))
            return Binary(self.real, grid3, options, self.spec, self.tensors)

        return run


class Tensors:
    """The tensors the binary may be given, by data pointer; what it was given."""

    def __init__(self):
        self.order, self.launches, self.jit_launches = [], [], 0

    def __call__(self, *tensors):
        self.order += tensors
        return tensors

    def tensor(self, value):
        """The tensor a data pointer given to the binary names (the latest
        registered with it), or ``value`` itself."""
        if isinstance(value, int) and not isinstance(value, bool):
            for t in reversed(self.order):
                if t.data_ptr() == value:
                    return t
        return value

    def named(self, values):
        """``values`` with each data pointer or tensor replaced by its place in
        registration order: launches of tensors made alike compare equal."""
        places = []
        for v in values:
            t = self.tensor(v)
            if isinstance(v, torch.Tensor) or t is not v:
                kind = "tensor" if t is v else "pointer"
                v = (kind, next(k for k, u in enumerate(self.order) if u is t))
            places.append(v)
        return tuple(places)


class FakeDriver:
    def get_current_device(self):
        return 0

    def get_current_stream(self, device):
        return 1000 + device


STANDS_IN = pytest.mark.skipif(torch.cuda.is_available(), reason="stands in for a GPU (tuning would compile for a real "
                               "one); where there is one, the tests at the end launch on it")


@pytest.fixture
def gpu(monkeypatch, tmp_path):
    saved = driver._active
    fake = FakeDriver()
    driver.set_active(fake)
    monkeypatch.setattr(tuning.space, "multiprocessors", lambda d: 4)
    monkeypatch.setattr(tuning.timing, "time_ms", lambda spec, fn, rep=20: (fn(), 1.0)[1])
    monkeypatch.setenv("NTSYM_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("NTSYM_RETUNE", raising=False)
    # The tensors stay on the CPU: their arguments are checked as the interpreter's are.
    checked = runtime.check_arguments

    def check_arguments(spec, args):
        return checked(dataclasses.replace(spec, interpreting=True), args)

    monkeypatch.setattr(runtime, "check_arguments", check_arguments)
    monkeypatch.setattr(runtime.launching, "check_arguments", check_arguments)
    yield fake
    driver._active = saved


def on_gpu(kernel, tensors):
    """A handle of ``kernel`` launched on the GPU paths, with fresh caches."""
    facts = kernel.launch_facts
    spec = dataclasses.replace(facts.spec, interpreting=False)
    gpu = runtime.LaunchFacts(kernel=Stand(facts.kernel, facts.spec, tensors), spec=spec, checks=facts.checks,
                              display=facts.display)
    return kernel.bound_to(gpu)


def _add():
    def arrangement(x, y, z, BLOCK=ntsym.block_size()):
        return x.tile((BLOCK,)), y.tile((BLOCK,)), z.tile((BLOCK,))

    def application(x, y, z):
        z = x + y  # noqa: F841

    return ntsym.make(arrangement, application, (Tensor(1), Tensor(1), Tensor(1)), max_num_configs=1)


def _scaled():
    def arrangement(x, z, alpha, n, BLOCK=ntsym.block_size()):
        return x.tile((BLOCK,)), z.tile((BLOCK,)), alpha, n

    def application(x, z, alpha, n):
        z = x * alpha + n  # noqa: F841

    return ntsym.make(arrangement, application, (Tensor(1), Tensor(1), Tensor(0), Tensor(0)), max_num_configs=1)


def warm(handle, *args, calls=3, **kwargs):
    """Calls enough for the shape's express launch to be made (the first
    validates, the second learns the quick match, the third makes it)."""
    for _ in range(calls):
        handle(*args, **kwargs)


def express_of(handle):
    (quick,) = handle.calls.quick
    return quick.express


def counted(handle):
    """What the handle's express launches return at each call from here on."""
    table, returned = handle.calls.express, []

    def wrapped(inner):
        def express(args, kwargs):
            returned.append(inner(args, kwargs))
            return returned[-1]

        return express

    for _, _, by_shapes in table.groups:
        for functions in by_shapes.values():
            functions[:] = [wrapped(f) for f in functions]
    if table.only is not None:
        (table.only,) = [f for _, _, by_shapes in table.groups for functions in by_shapes.values() for f in functions]
    return returned


def warmed(kernel, n=300):
    """A handle of the add ``kernel`` on the GPU paths, warmed on three tensors of ``n``."""
    tensors = Tensors()
    handle = on_gpu(kernel, tensors)
    operands = tensors(torch.randn(n), torch.randn(n), torch.zeros(n))
    warm(handle, *operands)
    return tensors, handle, operands


@pytest.fixture
def add():
    return _add()


@STANDS_IN
def test_a_warm_call_takes_the_express_launch_with_what_the_general_path_gives(gpu, add, monkeypatch):
    seen = {}
    for disabled in (True, False):
        monkeypatch.setattr(runtime.express, "DISABLED", disabled)
        tensors = Tensors()
        handle = on_gpu(add, tensors)
        x, y, z = tensors(torch.randn(300), torch.randn(300), torch.zeros(300))
        warm(handle, x, y, z)
        assert (express_of(handle) is None) is disabled
        before, version = handle.stats.launches, z._version
        del tensors.launches[:]
        z.zero_()
        returned = [] if disabled else counted(handle)
        handle(x, y, z)
        assert returned == ([] if disabled else [True])
        torch.testing.assert_close(z, x + y)
        assert handle.stats.launches == before + 1
        assert z._version == version + 2  # the launch's bump, and zero_'s
        assert x._version == 0 and y._version == 0
        seen[disabled] = tensors.launches
    assert seen[False] == seen[True]  # the same arguments, pointers and constants, no hooks or metadata
    (values, metadata, enter, leave), = seen[False]
    assert metadata is None and enter is None and leave is None
    assert values[:3] == (("pointer", 0), ("pointer", 1), ("pointer", 2))


@STANDS_IN
def test_scalars_reach_the_binary_as_given_and_an_integer_specialised_otherwise_is_declined(gpu):
    seen = {}
    for disabled in (True, False):
        runtime.express.DISABLED = disabled
        try:
            tensors = Tensors()
            handle = on_gpu(_scaled(), tensors)
            x, z = tensors(torch.randn(300), torch.zeros(300))
            warm(handle, x, z, 0.5, 3)
            del tensors.launches[:]
            tensors.jit_launches = 0  # (a first process tunes: it launches more)
            handle(x, z, 2.0, 5)
            torch.testing.assert_close(z, x * 2.0 + 5)
            handle(x, z, 2.0, 16)  # divisible by 16: Triton specialises on it, another binary
            torch.testing.assert_close(z, x * 2.0 + 16)
            seen[disabled] = (tensors.launches, tensors.jit_launches)
        finally:
            runtime.express.DISABLED = False
    assert seen[False] == seen[True]


@STANDS_IN
def test_a_call_of_another_shape_or_layout_is_not_matched(gpu, add):
    tensors, handle, (x, y, z) = warmed(add)
    express = express_of(handle)
    before = len(tensors.launches), handle.stats.launches, z._version
    a, b, c = tensors(torch.randn(200), torch.randn(200), torch.zeros(200))
    assert express((a, b, c), {}) is False
    assert express((x, y), {}) is False
    assert express((x, y, 3), {}) is False
    assert express((x.double(), y, z), {}) is False
    assert express((torch._neg_view(x), y, z), {}) is False
    assert express((x[1:], y[1:], z[1:]), {}) is False  # 4 bytes past the alignment the binary was built for
    assert express((x, y, z), {"BLOCK": 64}) is False  # a keyword its shape was not learned with
    assert (len(tensors.launches), handle.stats.launches, z._version) == before  # nothing launched, nothing bumped
    handle(a, b, c)  # a shape of its own, validated
    torch.testing.assert_close(c, a + b)


def _declined(handle, tensors, args):
    """Runs the express launch on ``args``: it must decline (None) and launch nothing."""
    express = express_of(handle)
    before = len(tensors.launches), handle.stats.launches, [a._version for a in args]
    assert express(args, {}) is None
    assert (len(tensors.launches), handle.stats.launches, [a._version for a in args]) == before


@STANDS_IN
def test_a_written_tensor_that_requires_grad_is_declined_under_grad_mode_and_refused(gpu, add):
    tensors = Tensors()
    handle = on_gpu(add, tensors)
    x, y, w = tensors(torch.randn(300), torch.randn(300), torch.zeros(300, requires_grad=True))
    with torch.no_grad():  # outside grad mode, a tensor that requires grad may be written
        warm(handle, x, y, w)
        returned = counted(handle)
        handle(x, y, w)
        assert returned == [True]
    torch.testing.assert_close(w.detach(), x + y)
    _declined(handle, tensors, (x, y, w))
    with pytest.raises(LaunchError, match="requires grad"):
        handle(x, y, w)


@STANDS_IN
def test_a_storage_resized_smaller_is_declined_and_refused(gpu, add):
    tensors, handle, (x, y, z) = warmed(add)
    w = tensors(torch.zeros(300))[0]
    w.untyped_storage().resize_(512)
    tensors(w)
    _declined(handle, tensors, (x, y, w))
    with pytest.raises(LaunchError):
        handle(x, y, w)


@STANDS_IN
def test_overlap_of_a_written_tensor_is_declined_and_checked(gpu, add):
    tensors, handle, (x, y, z) = warmed(add)
    base = torch.randn(320)
    a, w = tensors(base[:300], base[16:316])
    _declined(handle, tensors, (a, y, w))
    with pytest.raises(LaunchError):
        handle(a, y, w)
    expected = x + y
    handle(x, y, x)  # the same tensor read and written, proved safe: launched
    torch.testing.assert_close(x, expected)


@STANDS_IN
def test_a_launch_hook_another_driver_or_device_is_declined_to_the_general_path(gpu, add, monkeypatch):
    tensors, handle, (x, y, z) = warmed(add)
    hook = lambda metadata: None  # noqa: E731
    knobs.runtime.launch_enter_hook.add(hook)
    try:
        _declined(handle, tensors, (x, y, z))
        handle(x, y, z)  # the general path gives the hook the tensors and the metadata
        (values, metadata, enter, leave) = tensors.launches[-1]
        assert values[2] == ("tensor", 2) and metadata is not None and enter is not None
    finally:
        knobs.runtime.launch_enter_hook.remove(hook)
    driver.set_active(FakeDriver())
    _declined(handle, tensors, (x, y, z))
    handle(x, y, z)
    torch.testing.assert_close(z, x + y)


@STANDS_IN
def test_a_tensor_given_twice_in_place_is_matched_by_the_same_object(gpu, add):
    tensors = Tensors()
    handle = on_gpu(add, tensors)
    x, y = tensors(torch.randn(300), torch.randn(300))
    warm(handle, x, y, x)
    returned = counted(handle)
    expected = x + y
    handle(x, y, x)
    torch.testing.assert_close(x, expected)
    a, b, c = tensors(torch.randn(300), torch.randn(300), torch.zeros(300))
    handle(a, b, c)  # three tensors: not this shape of the call (the general path's)
    torch.testing.assert_close(c, a + b)
    assert returned == [True, False]
    assert tensors.launches[-2][0][:3] == (("pointer", 0), ("pointer", 1), ("pointer", 0))


CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")


@CUDA
def test_on_a_gpu_warm_calls_take_the_express_launch_and_decline_what_the_general_path_refuses():
    kernel = _add()
    x, y, z = (torch.randn(3000, device="cuda") for _ in range(3))
    warm(kernel, x, y, z)
    returned = counted(kernel)
    for _ in range(3):
        z.zero_()
        version, launches = z._version, kernel.stats.launches
        kernel(x, y, z)
        torch.testing.assert_close(z, x + y)
        assert (z._version, kernel.stats.launches) == (version + 1, launches + 1)
    assert returned == [True] * 3
    w = torch.zeros(3000, device="cuda", requires_grad=True)
    with torch.no_grad():
        kernel(x, y, w)  # learned outside grad mode: the same guards as below
        kernel(x, y, w)
    with pytest.raises(LaunchError, match="requires grad"):
        kernel(x, y, w)
    base = torch.randn(3200, device="cuda")
    with pytest.raises(LaunchError):
        kernel(base[:3000], y, base[64:3064])
    small = torch.zeros(3000, device="cuda")
    small.untyped_storage().resize_(4096)
    with pytest.raises(LaunchError):
        kernel(x, y, small)
    hook = lambda metadata: None  # noqa: E731
    knobs.runtime.launch_enter_hook.add(hook)
    try:
        kernel(x, y, z)
        torch.testing.assert_close(z, x + y)
    finally:
        knobs.runtime.launch_enter_hook.remove(hook)
    assert returned[-1] is None  # the hook: the general path, which gives it the launch metadata


@CUDA
def test_on_a_gpu_the_scalars_reach_the_kernel():
    kernel = _scaled()
    x, z = torch.randn(3000, device="cuda"), torch.zeros(3000, device="cuda")
    warm(kernel, x, z, 0.5, 3)
    for alpha, n in ((2.0, 5), (-1.5, 7), (0.25, 16), (3.0, 1)):
        kernel(x, z, alpha, n)
        torch.testing.assert_close(z, x * alpha + n)
    assert kernel.calls.quick[0].express is not None


@STANDS_IN
def test_calls_of_several_shapes_find_their_own_express_launch_by_their_shapes(gpu, add):
    tensors = Tensors()
    handle = on_gpu(add, tensors)
    shapes = (300, 64, 1000)
    operands = {n: tensors(torch.randn(n), torch.randn(n), torch.zeros(n)) for n in shapes}
    for n in shapes:
        warm(handle, *operands[n])
    strided = tensors(torch.randn(600)[::2], torch.randn(300), torch.zeros(300))  # 300 too, other strides
    warm(handle, *strided)
    returned = counted(handle)
    for n in (*shapes, *shapes[::-1]):
        x, y, z = operands[n]
        z.zero_()
        handle(x, y, z)
        torch.testing.assert_close(z, x + y)
    handle(*strided)
    torch.testing.assert_close(strided[2], strided[0] + strided[1])
    assert returned[:6] == [True] * 6
    assert returned[6:] in ([True], [False, True])  # the shapes of 300 have two launches, tried in turn
    handle(*tensors(torch.randn(7), torch.randn(7), torch.zeros(7)))  # no launch for its shapes: none tried
    assert len(returned) in (7, 8)


@STANDS_IN
def test_a_call_whose_shapes_cannot_be_read_goes_to_the_general_path(gpu, add):
    tensors = Tensors()
    handle = on_gpu(add, tensors)
    for n in (300, 64):  # two shapes: calls are told apart by their tensors' shapes
        warm(handle, *tensors(torch.randn(n), torch.randn(n), torch.zeros(n)))
    nested = torch.nested.nested_tensor([torch.randn(3), torch.randn(4)])  # its .shape raises
    with pytest.raises(LaunchError, match="nested"):
        handle(nested, nested, nested)
    with pytest.raises(LaunchError):
        handle(torch.randn(300), None, torch.zeros(300))


def _flagged():
    """A flag between the tensors: a compile-time value the binary is given."""

    def arrangement(x, flag, z, BLOCK=ntsym.block_size()):
        return x.tile((BLOCK,)), flag, z.tile((BLOCK,))

    def application(x, flag, z):
        if flag:
            z = -x  # noqa: F841
        else:
            z = x  # noqa: F841

    return ntsym.make(arrangement, application, (Tensor(1), Tensor(0, constexpr=True), Tensor(1)), max_num_configs=1)


@STANDS_IN
def test_shapes_with_their_tensors_at_other_places_each_keep_their_express_launch(gpu):
    tensors = Tensors()
    handle = on_gpu(_flagged(), tensors)
    one, out = tensors(torch.tensor([2.5]), torch.empty(1))
    warm(handle, one, one, out)  # the flag given the tensor itself: tensors at 0, 1 and 2
    x, z = tensors(torch.randn(40), torch.empty(40))
    warm(handle, x, False, z)  # tensors at 0 and 2
    returned = counted(handle)
    for _ in range(2):
        handle(x, False, z)
        torch.testing.assert_close(z, x)
    assert returned == [True, True]
    assert sorted(positions for positions, _, _ in handle.calls.express.groups) == [(0, 1, 2), (0, 2)]


@STANDS_IN
def test_a_block_size_given_by_keyword_takes_the_express_launch_of_its_value(gpu, add):
    tensors = Tensors()
    handle = on_gpu(add, tensors)
    x, y, z = tensors(torch.randn(300), torch.randn(300), torch.zeros(300))
    warm(handle, x, y, z, BLOCK=64)
    returned = counted(handle)
    z.zero_()
    handle(x, y, z, BLOCK=64)
    torch.testing.assert_close(z, x + y)
    assert returned == [True]
    z.zero_()
    handle(x, y, z, BLOCK=128)  # another value: not this shape's
    handle(x, y, z, BLOCK=64, ntsym_options={"num_warps": 2})  # options: the general path
    torch.testing.assert_close(z, x + y)
    assert returned[1:] == [False, False]
    with pytest.raises(LaunchError):
        handle(x, y, z, BLOK=64)  # a keyword the kernel does not take: refused as before
