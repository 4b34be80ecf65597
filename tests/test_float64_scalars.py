"""Float scalars with float64 tensors: on a GPU Triton passes a float
argument to a compiled kernel as float32, so a call whose float scalar
float32 does not hold exactly, beside float64 tensors, is refused there
(a silently rounded scalar before: 0.1 as 0.100000001490116 in every
product).  The interpreter passes the double: such calls run, exactly."""

import dataclasses

import pytest
import torch

import ntsym
from ntsym import Tensor
from ntsym_codegen import runtime


def arrangement(x, s, y, B=ntsym.block_size()):
    return x.tile((B,)), s, y.tile((B,))


def application(x, s, y):
    y = x * s  # noqa: F841


kernel = ntsym.make(arrangement, application, (Tensor(1), Tensor(0), Tensor(1)))


def test_the_interpreter_computes_with_the_double():
    x = torch.rand(20, dtype=torch.float64) + 1
    y = torch.empty_like(x)
    for s in (0.1, torch.tensor(0.1, dtype=torch.float64)):
        kernel(x, s, y)
        assert torch.equal(y, x * 0.1)


def test_on_a_gpu_a_float_scalar_float32_rounds_is_refused_beside_float64_tensors():
    gpu = dataclasses.replace(kernel.spec, interpreting=False)  # as a GPU launch sees the kernel
    x64, x32 = torch.rand(4, dtype=torch.float64), torch.rand(4)
    assert runtime.float64_scalars(gpu, [x64, x64.clone()])
    assert not runtime.float64_scalars(gpu, [x32, x32.clone()])  # float32 math: torch rounds the scalar too
    assert not runtime.float64_scalars(kernel.spec, [x64, x64.clone()])  # the interpreter
    for s in (0.1, 1e300, torch.tensor(0.1, dtype=torch.float64)):
        with pytest.raises(ntsym.LaunchError, match="(?s)`s` is .*float32 does not hold exactly.*as float32"):
            runtime.check_float64_scalars(gpu, (x64, s, x64))
    for s in (0.5, 3.0, -1.25, float("inf"), float("nan"), 7, True, 2**40):
        runtime.check_float64_scalars(gpu, (x64, s, x64))


def test_an_exported_module_refuses_it_too(tmp_path, monkeypatch):
    import importlib.util

    path = tmp_path / "scaled.py"
    kernel.export(str(path))
    module_spec = importlib.util.spec_from_file_location("scaled", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    x = torch.rand(8, dtype=torch.float64) + 1
    y = torch.empty_like(x)
    module.launch(x, 0.1, y)  # the interpreter here: the double
    assert torch.equal(y, x * 0.1)
    assert "runtime.check_float64_scalars(SPEC, ntsym_args)" in path.read_text()
    monkeypatch.setattr(module.SPEC, "interpreting", False)  # as a GPU launch sees it
    assert module.runtime.float64_scalars(module.SPEC, [x, y])
    with pytest.raises(Exception, match="float32 does not hold exactly"):
        module.runtime.check_float64_scalars(module.SPEC, (x, 0.1, y))
