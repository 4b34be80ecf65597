"""Launches on a second GPU, for real: the tests of ``test_devices.py`` on two CUDA
devices instead of stand-ins.  They skip with fewer than two GPUs.

A kernel called with tensors on ``cuda:1`` while ``cuda:0`` is current runs on
``cuda:1`` (on that device's current stream), tunes there, keeps its validated call
shapes and tuned choices per device, leaves the current device as it was, and
refuses tensors on two devices with nothing written."""

import pytest
import torch

import ntsym
from ntsym_codegen import tuning
from examples import add as add_example
from examples import mm as mm_example
from ntsym import Tensor
from ntsym.errors import LaunchError

pytestmark = pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.device_count() < 2,
                                reason="needs two CUDA devices")

N = 1 << 20


@pytest.fixture
def cuda0_current(monkeypatch, tmp_path):
    monkeypatch.setenv("NTSYM_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("NTSYM_RETUNE", raising=False)
    previous = torch.cuda.current_device()
    torch.cuda.set_device(0)
    yield
    torch.cuda.set_device(previous)


def _add():
    return ntsym.make(add_example.arrangement, add_example.application, tuple(Tensor(1) for _ in range(3)))


def _devices_of(cache):
    calls = sorted({str(key[0][3]) for key in cache.calls})
    tuned = sorted({str(part[-1]) for key in cache.tuned for part in key  # a tensor's key ends in its device
                    if isinstance(part, tuple) and part and isinstance(part[-1], torch.device)})
    return calls, tuned


def test_a_call_on_cuda1_runs_there_and_keeps_the_current_device(cuda0_current):
    add = _add()
    for index in (0, 1, 1, 0):  # each device's first call, then its validated call shape
        device = torch.device("cuda", index)
        x, y = torch.randn(N, device=device), torch.randn(N, device=device)
        z = torch.empty_like(x)
        add(x, y, z)
        torch.cuda.synchronize(device)
        torch.testing.assert_close(z, x + y, rtol=0, atol=0)
        assert torch.cuda.current_device() == 0
    calls, tuned = _devices_of(add.calls)
    assert calls == ["cuda:0", "cuda:1"]  # validated per device, not device 0's fast path on cuda:1
    assert tuned == ["cuda:0", "cuda:1"]
    assert add.calls.checked_launches == 2


def test_tuning_on_cuda1_times_on_cuda1(cuda0_current, monkeypatch):
    mm = ntsym.make(mm_example.arrangement, mm_example.application, mm_example.tensors, max_num_configs=4)
    timed_on = []
    real_time = tuning.timing.time_ms

    def time(*args, **kwargs):
        timed_on.append(torch.cuda.current_device())
        return real_time(*args, **kwargs)

    monkeypatch.setattr(tuning.timing, "time_ms", time)
    device = torch.device("cuda", 1)
    a = torch.randn(256, 128, device=device, dtype=torch.float16)
    b = torch.randn(128, 192, device=device, dtype=torch.float16)
    c = torch.empty(256, 192, device=device, dtype=torch.float16)
    mm(a, b, c)
    torch.cuda.synchronize(device)
    assert timed_on and set(timed_on) == {1}
    torch.testing.assert_close(c.float(), a.float() @ b.float(), atol=5e-2, rtol=1e-2)
    assert torch.cuda.current_device() == 0


def test_a_launch_on_cuda1_joins_its_current_stream(cuda0_current):
    add = _add()
    cuda1 = torch.device("cuda", 1)
    x = torch.ones(N, device=cuda1)
    y = torch.empty_like(x)
    add(x, x, y)  # validated and tuned: the next call takes the fast path
    stream = torch.cuda.Stream(device=cuda1)
    torch.cuda.synchronize(cuda1)
    with torch.cuda.device(1):
        saved = torch.cuda.current_stream()
        torch.cuda.set_stream(stream)
    try:
        with torch.cuda.stream(stream):
            torch.cuda._sleep(200_000_000)  # ~0.1 s: a launch on another stream would see x == 1
            x.fill_(2.0)
        torch.cuda.set_device(0)
        add(x, x, y)
    finally:
        with torch.cuda.device(1):
            torch.cuda.set_stream(saved)
    torch.cuda.synchronize(cuda1)
    assert bool((y == 4).all()), y[:4]


def test_tensors_on_two_devices_are_refused_with_nothing_written(cuda0_current):
    add = _add()
    x0 = torch.randn(N, device="cuda:0")
    y1, z1 = torch.randn(N, device="cuda:1"), torch.zeros(N, device="cuda:1")
    with pytest.raises(LaunchError, match="all tensors must be on one device"):
        add(x0, y1, z1)
    add(y1, y1, z1.clone())  # validated on cuda:1 alone, then mixed again
    with pytest.raises(LaunchError, match="all tensors must be on one device"):
        add(y1, x0, z1)
    torch.cuda.synchronize()
    assert not z1.any()
