"""Strides declared at make (``Tensor(..., strides=...)``) are compile-time
constants of the kernel's addresses: every launcher checks them, as it
checks declared shapes, naming the tensor, dimension and both values."""

import functools
import importlib.util

import pytest
import torch

import ntsym
from ntsym import Tensor
from ntsym_codegen import aot


def _copy_arrangement(x, o, BLOCK=ntsym.block_size()):
    return x.tile((BLOCK,)), o.tile((BLOCK,))


def _copy(x, o):
    o = x  # noqa: F841


def _kernel():
    return ntsym.make(_copy_arrangement, _copy, (Tensor(1, strides=(1,)), Tensor(1)))


def test_a_declared_stride_is_checked_at_launch():
    kernel = _kernel()
    x, o = torch.arange(10.0)[::2], torch.zeros(5)
    with pytest.raises(ntsym.LaunchError, match=r"x\.stride\(\)\[0\] \(=2\) must equal 1"):
        kernel(x, o)
    assert torch.equal(o, torch.zeros(5))  # refused before anything ran


def test_a_declared_stride_matching_or_unused_runs():
    kernel = _kernel()
    x, o = torch.arange(5.0), torch.zeros(5)
    kernel(x, o)
    assert torch.equal(o, x)
    one = torch.arange(4.0)[::4]  # one element: its stride addresses nothing
    kernel(one, o[:1])
    assert o[0] == 0


def test_the_exported_module_checks_a_declared_stride(tmp_path):
    path = _kernel().export(tmp_path / "declared_strides_standalone.py")
    spec = importlib.util.spec_from_file_location("declared_strides_standalone", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(ValueError, match=r"x\.stride\(\)\[0\] \(=2\) must equal 1"):
        module.launch(torch.arange(10.0)[::2], torch.zeros(5))
    x, o = torch.arange(5.0), torch.zeros(5)
    module.launch(x, o)
    assert torch.equal(o, x)


def test_the_c_launcher_checks_a_declared_stride():
    tensors = (Tensor(1, strides=(1,), dtype=ntsym.float32), Tensor(1, dtype=ntsym.float32))
    compiled = ntsym.compile(functools.partial(_copy_arrangement, BLOCK=16), _copy, tensors)
    plan = aot.plan(compiled.ir, compiled.generated, compiled.spec, compiled.display, {})
    assert any("x.strides[0] != INT64_C(1)" in line and "x.stride()[0] (=%lld) must equal %lld" in line
               for line in plan.prologue)
