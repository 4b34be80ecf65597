"""The direct launch of a validated call shape: the compiled binary is run without
Triton's per-call argument binding, guarded by what Triton specializes on.

No GPU is needed: Triton's driver and the compiled kernel are stood in for, and
the tests check what the launch hands to the binary and when it declines."""

from types import SimpleNamespace

import pytest

import ntsym  # before triton: without a GPU, ntsym selects Triton's interpreter
from ntsym_codegen import runtime
from triton.runtime import driver  # noqa: E402  (isort: after ntsym on purpose)


class _Compiled:
    function = "FUNCTION"
    packed_metadata = "PACKED"

    def __init__(self):
        self.runs = []

    def launch_metadata(self, grid, stream, *args):
        return ("METADATA", grid, stream)

    def run(self, *args):
        self.runs.append(args)


class _Driver:
    def __init__(self, device=0):
        self.device = device

    def get_current_device(self):
        return self.device

    def get_current_stream(self, device):
        return 1000 + device


@pytest.fixture
def fake_driver():
    fake, saved = _Driver(), driver._active
    driver.set_active(fake)
    yield fake
    driver._active = saved  # reset_active() would create the real driver, which needs a GPU


def _kernel(names, constexpr):
    params = [SimpleNamespace(name=n, is_constexpr=n in constexpr) for n in names]
    return SimpleNamespace(params=params, arg_names=names)


def _spec(template):
    return SimpleNamespace(interpreting=False, arg_template=template)


# x (tensor), flag (constexpr bool given by the caller), n (int scalar), eps (float
# scalar), then a size from the call key, then the block size and int64 flag.
NAMES = ["x", "flag", "n", "eps", "x_size_0", "BLOCK", "INT64"]
TEMPLATE = (("arg", 0), ("arg", 1), ("scalar", 2), ("scalar", 3))


def _direct(call, compiled=None, grid=(7,)):
    kernel = _kernel(NAMES, {"flag", "BLOCK", "INT64"})
    return runtime.direct.direct_for(kernel, compiled or _Compiled(), call, {"BLOCK": 64, "INT64": False,
                                                                     "num_warps": 4}, _spec(TEMPLATE), grid)


def test_direct_launch_passes_what_triton_would(fake_driver):
    tensor = object()
    call = [tensor, True, 32, 0.5, 100]
    direct = _direct(call)
    assert direct.constexprs == (64, False)  # keyword parameters, in signature order
    assert [i for i, _ in direct.guard] == [1, 2]  # the constexpr flag and the int scalar
    assert runtime.direct.launch_direct(direct, (7,), [tensor, True, 48, 0.25, 100], 0)
    (args,) = direct.compiled.runs
    assert args[:6] == (7, 1, 1, 1000, "FUNCTION", "PACKED")
    assert args[9:] == (tensor, True, 48, 0.25, 100, 64, False)


def test_direct_launch_passes_launch_hooks_only_where_one_is_set(fake_driver, monkeypatch):
    from triton import knobs

    call = [object(), True, 32, 0.5, 100]
    direct = _direct(call)
    chains = type(knobs.runtime.launch_enter_hook).__name__ == "HookChain"  # else None unless set

    def hook(metadata):
        pass

    def set_hooks(enter, leave):
        for name, value in (("launch_enter_hook", enter), ("launch_exit_hook", leave)):
            if chains:  # a chain with or without the hook, the empty list back after the test
                monkeypatch.setattr(getattr(knobs.runtime, name), "calls", [hook] if value else [])
            else:
                monkeypatch.setattr(knobs.runtime, name, hook if value else None)
        return knobs.runtime.launch_enter_hook, knobs.runtime.launch_exit_hook

    set_hooks(False, False)
    assert runtime.direct.launch_direct(direct, (7,), call, 0)
    assert direct.compiled.runs[-1][6:9] == (None, None, None)  # no metadata built, no hook passed
    for enter, leave in ((True, False), (False, True), (True, True)):
        hooks = set_hooks(enter, leave)
        assert runtime.direct.launch_direct(direct, (7,), call, 0)
        assert direct.compiled.runs[-1][6:9] == (("METADATA", (7,), 1000), *hooks)


def test_direct_launch_gives_the_binary_data_pointers_unless_a_hook_is_set(fake_driver, monkeypatch):
    """Integers at the tensors' places: Triton's launcher then reads no
    ``data_ptr()`` and asks the driver nothing about them.  A launch hook is
    given the tensors, as Triton gives them."""
    from triton import knobs

    tensor = object()
    call = [tensor, True, 32, 0.5, 100]
    direct = _direct(call)
    assert runtime.direct.launch_direct(direct, (7,), call, 0, [0x7F0000001000], ((0, 0),))
    assert direct.compiled.runs[-1][9:] == (0x7F0000001000, True, 32, 0.5, 100, 64, False)
    assert call[0] is tensor  # the caller's list is left as it was
    assert runtime.direct.launch_direct(direct, (7,), call, 0)  # no pointers given: the tensor
    assert direct.compiled.runs[-1][9] is tensor

    def hook(metadata):
        pass

    if type(knobs.runtime.launch_enter_hook).__name__ == "HookChain":
        monkeypatch.setattr(knobs.runtime.launch_enter_hook, "calls", [hook])
    else:
        monkeypatch.setattr(knobs.runtime, "launch_enter_hook", hook)
    assert runtime.direct.launch_direct(direct, (7,), call, 0, [0x7F0000001000], ((0, 0),))
    assert direct.compiled.runs[-1][9] is tensor


class _Launcher36:
    """Triton 3.6's ``CudaLauncher``, as far as a launch reads it: ``__call__``
    is its code, word for word."""

    num_ctas = 1
    global_scratch_align = profile_scratch_align = 1
    launch_cooperative_grid, launch_pdl = "COOPERATIVE", "PDL"

    def __init__(self, scratch=0, profile=0):
        self.global_scratch_size, self.profile_scratch_size = scratch, profile
        self.launches = []
        self.launch = lambda *args: self.launches.append(args)

    def __call__(self, gridX, gridY, gridZ, stream, function, *args):

        def allocate_scratch(size, align, allocator):
            if size > 0:
                grid_size = gridX * gridY * gridZ
                alloc_size = grid_size * self.num_ctas * size
                alloc_fn = allocator.get()
                return alloc_fn(alloc_size, align, stream)
            return None

        global_scratch = allocate_scratch(self.global_scratch_size, self.global_scratch_align, _allocation._allocator)
        profile_scratch = allocate_scratch(self.profile_scratch_size, self.profile_scratch_align,
                                           _allocation._profile_allocator)
        self.launch(gridX, gridY, gridZ, stream, function, self.launch_cooperative_grid, self.launch_pdl,
                    global_scratch, profile_scratch, *args)


_allocation = SimpleNamespace(_allocator=None, _profile_allocator=None)


class _Launcher36Scratch(_Launcher36):
    def __call__(self, gridX, gridY, gridZ, stream, function, *args):  # another body: always through ``run``
        self.launch(gridX, gridY, gridZ, stream, function, *args)


def test_direct_launch_calls_the_compiled_launcher_where_run_adds_nothing(fake_driver):
    from ntsym_codegen import triton_compat

    compiled = _Compiled()
    compiled.run = _Launcher36()
    call = [object(), True, 32, 0.5, 100]
    direct = _direct(call, compiled, grid=(7, 2))
    assert runtime.direct.launch_direct(direct, (7, 2), call, 0)
    (args,) = compiled.run.launches
    assert args == (7, 2, 1, 1000, "FUNCTION", "COOPERATIVE", "PDL", None, None, "PACKED", None, None, None,
                    *call, 64, False)
    # the same arguments as through ``run``
    compiled.run(7, 2, 1, 1000, "FUNCTION", "PACKED", None, None, None, *call, 64, False)
    assert compiled.run.launches[1] == args
    # scratch memory to allocate, or a launcher whose ``__call__`` is not 3.6's: through ``run``
    assert triton_compat.raw_launch(SimpleNamespace(run=_Launcher36(scratch=8))) is None
    assert triton_compat.raw_launch(SimpleNamespace(run=_Launcher36(profile=8))) is None
    assert triton_compat.raw_launch(SimpleNamespace(run=_Launcher36Scratch())) is None
    assert triton_compat.raw_launch(_Compiled()) is None


@pytest.mark.parametrize(
    "changed",
    [
        {1: False},  # a constexpr argument changed: another binary
        {2: 1},  # an int became 1 (Triton specializes it away)
        {2: 33},  # an int lost its divisibility by 16
        {2: 2**31},  # an int needs 64 bits
    ],
)
def test_direct_launch_declines_when_the_specialization_changes(fake_driver, changed):
    call = [object(), True, 32, 0.5, 100]
    direct = _direct(call)
    other = list(call)
    for i, v in changed.items():
        other[i] = v
    assert not runtime.direct.launch_direct(direct, (1,), other, 0)
    assert direct.compiled.runs == []


def test_direct_launch_declines_minus_zero_for_zero(fake_driver):
    direct = _direct([object(), 0.0, 32, 0.5, 100])
    assert not runtime.direct.launch_direct(direct, (1,), [object(), -0.0, 32, 0.5, 100], 0)
    assert runtime.direct.launch_direct(direct, (1,), [object(), 0.0, 32, 0.5, 100], 0)


def test_direct_launch_declines_on_another_current_device(fake_driver):
    call = [object(), True, 32, 0.5, 100]
    direct = _direct(call)
    fake_driver.device = 1
    assert not runtime.direct.launch_direct(direct, (1,), call, 0)
    assert runtime.direct.launch_direct(direct, (1,), call, 1)  # launched when its device is the current one
    assert direct.compiled.runs[0][3] == 1001  # on that device's stream


def test_no_direct_launch_without_a_compiled_kernel_or_in_the_interpreter():
    call = [object(), True, 32, 0.5, 100]
    kernel = _kernel(NAMES, {"flag", "BLOCK", "INT64"})
    kwargs = {"BLOCK": 64, "INT64": False}
    assert runtime.direct.direct_for(kernel, None, call, kwargs, _spec(TEMPLATE), (1,)) is None
    spec = _spec(TEMPLATE)
    spec.interpreting = True
    assert runtime.direct.direct_for(kernel, _Compiled(), call, kwargs, spec, (1,)) is None
    # a keyword parameter the launch does not give: no direct launch
    assert runtime.direct.direct_for(kernel, _Compiled(), call, {"BLOCK": 64}, _spec(TEMPLATE), (1,)) is None


def test_repeated_calls_follow_changing_constexpr_and_int_arguments():
    """Same shapes, so the same validated call shape; the results must follow the
    values (natively on a GPU this is the direct launch's guard at work)."""
    import torch

    from ntsym import Tensor

    def arrangement(x, flag, n, y, BLOCK=ntsym.block_size()):
        return x.tile((BLOCK,)), flag, n, y.tile((BLOCK,))

    def application(x, flag, n, y):
        if flag:
            y = x * n  # noqa: F841
        else:
            y = x - n  # noqa: F841

    kernel = ntsym.make(arrangement, application, (Tensor(1), Tensor(0, constexpr=True), Tensor(0), Tensor(1)))
    x = torch.arange(40, dtype=torch.float32)
    y = torch.empty_like(x)
    for flag, n in [(True, 16), (True, 16), (False, 16), (True, 1), (True, 17), (False, 2**31), (True, 16)]:
        kernel(x, flag, n, y, BLOCK=32)
        expected = x * n if flag else x - n
        assert torch.equal(y, expected), (flag, n)


def test_counters_tell_checked_launches_from_warm_ones(monkeypatch):
    """A warm call shape is checked once; later calls, with other tensors of the same
    shapes, take the fast path; a seen call shape that Triton's JIT launches (its direct
    launch declined) is counted apart."""
    import torch

    from ntsym import Tensor

    def arrangement(x, y, BLOCK=ntsym.block_size()):
        return x.tile((BLOCK,)), y.tile((BLOCK,))

    def application(x, y):
        y = x + 1  # noqa: F841

    kernel = ntsym.make(arrangement, application, (Tensor(1), Tensor(1)))
    cache = kernel.calls
    for _ in range(3):
        x = torch.randn(40)
        y = torch.empty_like(x)
        kernel(x, y, BLOCK=32)
        assert torch.equal(y, x + 1)
    assert (cache.checked_launches, cache.jit_launches) == (1, 0)
    kernel(torch.randn(50), torch.empty(50), BLOCK=32)  # another call shape: checked
    assert (cache.checked_launches, cache.jit_launches) == (2, 0)
    for entry in cache.calls.values():
        entry.direct = object()  # as on a GPU: a compiled binary known for the call shape
    monkeypatch.setattr(runtime.launching, "launch_direct", lambda *args: False)  # ... whose guard declines
    kernel(x, y, BLOCK=32)
    assert torch.equal(y, x + 1)
    assert (cache.checked_launches, cache.jit_launches) == (2, 1)


def test_the_installed_triton_s_launcher_is_called_itself_only_in_3_6_s_form():
    """Triton 3.6's ``CudaLauncher.__call__`` is recognised (its compiled
    launcher is then called itself); a later form, which passes more, is not."""
    import inspect

    from triton.backends.nvidia.driver import CudaLauncher

    from ntsym_codegen import triton_compat

    run = object.__new__(CudaLauncher)  # no compilation: only what a launch reads
    run.global_scratch_size = run.profile_scratch_size = 0
    run.launch_cooperative_grid, run.launch_pdl = False, True
    run.launch = launch = object()
    raw = triton_compat.raw_launch(SimpleNamespace(run=run))
    if list(inspect.signature(CudaLauncher.__call__).parameters) == ["self", "gridX", "gridY", "gridZ", "stream",
                                                                      "function", "args"]:
        assert raw == (launch, (False, True, None, None))
    else:
        assert raw is None
