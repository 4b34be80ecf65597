"""The C launcher refuses what the torch launcher refuses, and nothing more:
its plan is printed without building a library (no GPU, no C compiler)."""

import functools

import pytest
import torch

import ntsym
import ntsym.language as ntl
from ntsym_codegen import aot
from examples import add
from ntsym import Tensor


def _plan(arrangement, application, tensors, meta=None, specialize=None):
    compiled = ntsym.compile(arrangement, application, tensors)
    return aot.plan(compiled.ir, compiled.generated, compiled.spec, compiled.display, meta or {},
                    specialize=specialize)


def test_shape_option_bounds_are_not_refusals():
    """``lower_bound``/``upper_bound`` only prune tuning: the torch launcher
    launches a size outside them, and so does the C launcher."""
    options = ({"lower_bound": 8, "upper_bound": 16},)
    tensors = tuple(Tensor(1, dtype=ntsym.float32, shape_options=options) for _ in range(3))
    arrangement = functools.partial(add.arrangement, BLOCK_SIZE=16)
    prologue = "\n".join(_plan(arrangement, add.application, tensors).prologue)
    assert "must be at most" not in prologue and "must be at least" not in prologue
    kernel = ntsym.make(arrangement, add.application, tensors)
    x, y, z = torch.randn(40), torch.randn(40), torch.empty(40)  # above the upper bound
    kernel(x, y, z)
    torch.testing.assert_close(z, x + y)


def test_a_power_of_two_size_stays_a_refusal():
    options = ({"power_of_two": True},)
    tensors = tuple(Tensor(1, dtype=ntsym.float32, shape_options=options) for _ in range(3))
    names = ("input", "other", "output")
    plan = _plan(functools.partial(add.arrangement, BLOCK_SIZE=16), add.application, tensors,
                 {f"{n}_size_0": 16 for n in names}, {f"{n}.shape[0]": (16,) for n in names})
    assert "input.shape[0] (=%lld) must be a power of two" in "\n".join(plan.prologue)


def _bool_add(a, b, c):
    c = a + b  # noqa: F841


def _mixed(a, b, c):
    c = (a + b).to(ntl.int32)  # noqa: F841


def _elementwise(x, y, z, BLOCK=ntsym.block_size()):
    return x.tile((BLOCK,)), y.tile((BLOCK,)), z.tile((BLOCK,))


@pytest.mark.parametrize("application, dtypes, values, refusal", [
    (_bool_add, ("bool", "bool", "bool"), ([True, True], [True, False]),
     "`a` is a bool tensor and the application computes arithmetic"),
    (_mixed, ("uint8", "int8", "int32"), ([200, 100], [100, -100]), r"`a` \(uint8\) and `b` \(int8\) meet in `a \+ b`"),
])
def test_dtypes_the_torch_launcher_refuses_are_refused_when_building(application, dtypes, values, refusal, tmp_path):
    """The library takes only the dtypes it is built for, so a refusal of
    those dtypes would refuse every call: the build refuses instead."""
    kernel = ntsym.make(_elementwise, application, tuple(Tensor(1) for _ in range(3)))
    a, b = (torch.tensor(v, dtype=getattr(torch, d)) for v, d in zip(values, dtypes))
    with pytest.raises(ntsym.LaunchError, match=refusal):
        kernel(a, b, torch.empty(2, dtype=getattr(torch, dtypes[2])))
    typed = tuple(Tensor(1, dtype=getattr(torch, d)) for d in dtypes)  # ntsym names no bool dtype
    with pytest.raises(aot.AotError, match=refusal):
        _plan(functools.partial(_elementwise, BLOCK=16), application, typed)
    with pytest.raises(aot.AotError, match=refusal):
        ntsym.make(functools.partial(_elementwise, BLOCK=16), application, typed, caller="cuda",
                   kernel_name="refused", output_dir=tmp_path, aot_options={"target": ("cuda", 90, 32)})
    assert not (tmp_path / "refused.so").exists()


def _row_min(x, out):
    out = ntl.min(x, 0)  # noqa: F841


def test_an_other_the_declared_dtype_cannot_hold_is_refused_when_building():
    # The torch launcher refuses such a call (its proofs take other=inf as min's identity);
    # a library built for int32 would refuse every call: the build refuses.
    tensors = (Tensor(1, dtype=ntsym.int32, other=float("inf")), Tensor(1, dtype=ntsym.int32))
    with pytest.raises(aot.AotError, match="cannot hold its other=inf"):
        _plan(lambda x, out: (x.tile((8,)), out.tile((1,))), _row_min, tensors)
