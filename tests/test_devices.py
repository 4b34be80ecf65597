"""Launches on several CUDA devices, without a GPU.

A process that drives more than one GPU (or one rank of a tensor-parallel job
that has not made its GPU the current one) calls kernels with tensors on a
device other than the current one.  Here two CUDA devices are stood in for:
tensors report ``cuda:0`` or ``cuda:1`` (their data stays on the CPU), the
current device is a variable that ``torch.cuda.device`` switches, and the
kernel's launch records the device current when it runs, then runs the real
kernel through Triton's interpreter.  The launcher under test is the generated
one, bound to the kernel's facts with ``interpreting=False`` (the GPU paths)."""

import contextlib
import dataclasses

import pytest
import torch

import ntsym  # before triton: without a GPU, ntsym selects Triton's interpreter
from ntsym_codegen import runtime, tuning
from ntsym import Tensor
from ntsym.errors import LaunchError

# Where CUDA is there, tuning and Triton's launch reach the real devices, which the stand-ins below are not.
pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="stands in for two CUDA devices on a machine without one")


class _OnDevice(torch.Tensor):
    """A CPU tensor that says it is on ``cuda:<INDEX>``."""

    __torch_function__ = torch._C._disabled_torch_function_impl  # results are plain tensors
    INDEX = 0

    @property
    def device(self):
        return torch.device("cuda", self.INDEX)

    def get_device(self):
        return self.INDEX


class _OnCuda0(_OnDevice):
    INDEX = 0


class _OnCuda1(_OnDevice):
    INDEX = 1


def on(index, tensor):
    return torch.Tensor._make_subclass((_OnCuda0, _OnCuda1)[index], tensor)


def plain(value):
    return value.as_subclass(torch.Tensor) if isinstance(value, torch.Tensor) else value


class Devices:
    """The current CUDA device, and what ran where."""

    def __init__(self):
        self.current = 0
        self.launches = []  # (current device, devices of the tensor arguments)
        self.timed = []  # current device of each timing


@pytest.fixture
def devices(monkeypatch, tmp_path):
    state = Devices()

    @contextlib.contextmanager
    def device(d):
        index = d.index if isinstance(d, torch.device) else int(d)
        saved, state.current = state.current, index
        try:
            yield
        finally:
            state.current = saved

    def time(spec, fn, rep=20):
        state.timed.append(state.current)
        fn()
        return 1.0

    monkeypatch.setattr(torch.cuda, "current_device", lambda: state.current)
    monkeypatch.setattr(torch.cuda, "device", device)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda d=None: f"GPU {torch.device(d).index}")
    monkeypatch.setattr(tuning.space, "multiprocessors", lambda d: 4)
    monkeypatch.setattr(tuning.timing, "time_ms", time)
    monkeypatch.setenv("NTSYM_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("NTSYM_RETUNE", raising=False)
    return state


class _Recording:
    """Stands in for the @triton.jit kernel on a GPU: records the current
    device, then runs the real kernel in the interpreter on the CPU data."""

    def __init__(self, real, spec, state):
        self.real, self.spec, self.state = real, spec, state

    def __getitem__(self, grid):
        def run(*args, **kwargs):
            tensors = [a.get_device() for a in args if isinstance(a, torch.Tensor)]
            self.state.launches.append((self.state.current, tensors))
            options = {k: v for k, v in kwargs.items() if k not in ("num_warps", "num_stages")}
            runtime.interpreter.interpret(self.real, grid, [plain(a) for a in args], options, self.spec)

        return run


def gpu_launcher(kernel, state):
    """``kernel``'s generated launcher on the GPU paths, with fresh caches."""
    facts = kernel.launch_facts
    spec = dataclasses.replace(facts.spec, interpreting=False)
    gpu = runtime.LaunchFacts(kernel=_Recording(facts.kernel, facts.spec, state), spec=spec, checks=facts.checks,
                              display=facts.display)
    return kernel.launcher_for(gpu), gpu.cache


def _add_kernel():
    def arrangement(x, y, z, BLOCK=ntsym.block_size()):
        return x.tile((BLOCK,)), y.tile((BLOCK,)), z.tile((BLOCK,))

    def application(x, y, z):
        z = x + y  # noqa: F841

    return ntsym.make(arrangement, application, (Tensor(1), Tensor(1), Tensor(1)), max_num_configs=3)


def _operands(index, n=300):
    x, y = torch.randn(n), torch.randn(n)
    return on(index, x), on(index, y), on(index, torch.zeros(n)), x + y


def test_a_call_on_another_device_launches_inside_that_device(devices):
    launch, _ = gpu_launcher(_add_kernel(), devices)
    x, y, z, expected = _operands(1)
    launch(x, y, z, BLOCK=64)
    assert devices.launches == [(1, [1, 1, 1])]
    assert devices.current == 0  # the caller's current device is left as it was
    torch.testing.assert_close(plain(z), expected)
    # The validated call shape (fast path) too.
    x2, y2, z2, expected2 = _operands(1)
    launch(x2, y2, z2, BLOCK=64)
    assert devices.launches[-1] == (1, [1, 1, 1])
    torch.testing.assert_close(plain(z2), expected2)


def test_tuning_runs_on_the_tensors_device(devices):
    launch, cache = gpu_launcher(_add_kernel(), devices)
    x, y, z, expected = _operands(1)
    launch(x, y, z)  # BLOCK is tuned
    assert devices.timed and set(devices.timed) == {1}
    assert {current for current, _ in devices.launches} == {1}
    torch.testing.assert_close(plain(z), expected)  # what timing wrote was restored, then the launch wrote


def test_call_shapes_and_tuned_choices_are_kept_per_device(devices):
    launch, cache = gpu_launcher(_add_kernel(), devices)
    x, y, z, expected = _operands(0)
    launch(x, y, z)
    assert cache.checked_launches == 1 and len(cache.tuned) == 1
    timed_on_0 = len(devices.timed)
    assert set(devices.timed) == {0}
    # The same shapes, strides and dtypes on device 1: not device 0's entry.
    x1, y1, z1, expected1 = _operands(1)
    devices.launches.clear()
    launch(x1, y1, z1)
    assert cache.checked_launches == 2  # validated again, not the fast path
    assert len(cache.calls) == 2 and {key[0][3] for key in cache.calls} == {torch.device("cuda", 0),
                                                                          torch.device("cuda", 1)}
    assert len(cache.tuned) == 2  # a choice per device
    assert set(devices.timed[timed_on_0:]) == {1}  # device 1 tuned on device 1 (another GPU model here)
    assert {current for current, _ in devices.launches} == {1}
    torch.testing.assert_close(plain(z1), expected1)
    # Each device then takes its own fast path.
    for index in (0, 1, 0):
        x, y, z, expected = _operands(index)
        launch(x, y, z)
        assert devices.launches[-1] == (index, [index] * 3)
        torch.testing.assert_close(plain(z), expected)
    assert cache.checked_launches == 2


def test_devices_of_one_model_share_the_stored_choice(devices, monkeypatch):
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda d=None: "GPU")
    launch, cache = gpu_launcher(_add_kernel(), devices)
    launch(*_operands(0)[:3])
    timed = len(devices.timed)
    launch(*_operands(1)[:3])
    assert len(devices.timed) == timed  # read from the tuning file (keyed by the device's name)
    assert len(cache.tuned) == 2 and len(set(cache.tuned.values())) == 1


def test_tensors_on_two_devices_are_refused_before_anything_runs(devices):
    launch, cache = gpu_launcher(_add_kernel(), devices)
    x, _, _, _ = _operands(0)
    _, y, z, _ = _operands(1)
    with pytest.raises(LaunchError, match=r"`x` is on cuda:0, `y` on cuda:1\nall tensors must be on one device"):
        launch(x, y, z, BLOCK=64)
    assert not plain(z).any()
    assert devices.launches == [] and not cache.calls
    # Also after the call shapes were validated on each device alone.
    launch(*_operands(0)[:3], BLOCK=64)
    launch(*_operands(1)[:3], BLOCK=64)
    for mixed in ((x, y, z), (y, x, z), (on(1, plain(x)), y, on(0, plain(z)))):
        with pytest.raises(LaunchError, match="all tensors must be on one device"):
            launch(*mixed, BLOCK=64)
    assert not plain(z).any()
    assert len(devices.launches) == 2

