"""The eager call of a registered op: plain calls run the kernel without
PyTorch's dispatcher (ntsym.eager), with the kernel's and torch's results;
every call the dispatcher could change goes through it."""

import itertools

import pytest
import torch

import ntsym
import ntsym.library
from examples import add, softmax
from ntsym import Tensor, eager

_count = itertools.count()


def fresh(name):
    return f"ntsym_eager_test::{name}_{next(_count)}"


class Spy:
    """Stands in for an op's dispatcher entry, counting the calls it passes on."""

    def __init__(self, op):
        self.target, self.calls = op._opoverload, 0
        op._opoverload = self

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.target(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.target, name)


def test_plain_call_skips_the_dispatcher_and_matches_kernel_and_torch():
    op = ntsym.library.op(fresh("add"), add.kernel)
    assert isinstance(op, torch.library.CustomOpDef) and isinstance(op, eager.EagerOp)
    spy = Spy(op)
    x, y = torch.randn(37), torch.randn(37)
    out = torch.empty(37)
    add.kernel(x, y, out)
    result = op(x, y)
    assert spy.calls == 0
    assert result.shape == (37,) and result.is_contiguous()
    torch.testing.assert_close(result, out, rtol=0, atol=0)
    torch.testing.assert_close(result, x + y)
    # A parameter is a plain tensor too; no gradient is needed under no_grad.
    with torch.no_grad():
        torch.testing.assert_close(op(torch.nn.Parameter(x), y), x + y)
    assert spy.calls == 0
    # The output is contiguous even for a strided input, as the dispatcher's is.
    strided = torch.randn(74)[::2]
    torch.testing.assert_close(op(strided, y), strided + y)
    assert op(strided, y).stride() == (1,)


class _Mode(torch.overrides.TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def test_calls_the_dispatcher_could_change_go_through_it():
    op = ntsym.library.op(fresh("add"), add.kernel)
    spy = Spy(op)
    x, y = torch.randn(9), torch.randn(9)
    torch.testing.assert_close(op(x, other=y), x + y)  # keywords: the dispatcher binds them
    assert spy.calls == 1
    with _Mode():  # a function mode
        torch.testing.assert_close(op(x, y), x + y)
    assert spy.calls == 2
    with torch.device(x.device):  # places factory functions only: changes nothing here
        torch.testing.assert_close(op(x, y), x + y)
    assert spy.calls == 2
    meta = op(x.to("meta"), y.to("meta"))  # the fake implementation's output
    assert meta.device.type == "meta" and meta.shape == (9,) and spy.calls == 3
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode() as mode:
        fake = op(mode.from_tensor(x), mode.from_tensor(y))
    assert fake.shape == (9,) and spy.calls == 4
    # A tensor that needs a gradient: autograd's kernel refuses a backward
    # no formula was registered for, as it did before.
    leaf = x.clone().requires_grad_()
    with pytest.raises(RuntimeError, match="no autograd formula was registered"):
        op(leaf, y).sum().backward()
    assert spy.calls == 5
    with pytest.raises(RuntimeError):  # not a tensor: the schema's error
        op(x, [1.0] * 9)
    assert spy.calls == 6
    # A negative view and an efficient zero tensor (no memory: a null data
    # pointer): the dispatcher materializes them for the implementation.
    torch.testing.assert_close(op(torch._neg_view(x), y), y - x)
    torch.testing.assert_close(op(x, torch._efficientzerotensor(9, device=x.device)), x)
    assert spy.calls == 8


def test_scalar_arguments_of_another_type_go_through_the_dispatcher():
    block = ntsym.block_size()

    @ntsym.library.op(fresh("scale"), shapes={"y": "x"})
    @ntsym.jit
    def scale(x: Tensor(1).tile((block,)), factor: Tensor(0, dtype=torch.float32), y: Tensor(1).tile((block,))):
        y = x * factor  # noqa: F841

    spy = Spy(scale)
    x = torch.randn(20)
    torch.testing.assert_close(scale(x, 2.5), x * 2.5)
    assert spy.calls == 0
    torch.testing.assert_close(scale(x, 3), x * 3)  # an int for a float: the dispatcher converts it
    assert spy.calls == 1


def test_in_place_form_bumps_versions_as_the_dispatcher_does():
    op = ntsym.library.op(fresh("add_out"), add.kernel, mutates_args=("output",))
    spy = Spy(op)
    x, y, out = torch.randn(12), torch.randn(12), torch.empty(12)
    before = out._version
    op._opoverload.target(x, y, out)  # through the dispatcher
    through = out._version - before
    assert op(x, y, out) is None
    torch.testing.assert_close(out, x + y)
    assert spy.calls == 0 and out._version - before == 2 * through
    # Autograd sees the overwrite of a tensor it saved.
    w = torch.randn(12, requires_grad=True)
    product = w * out
    op(x, y, out)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        product.sum().backward()


def test_launch_errors_on_the_direct_path_name_the_op():
    name = fresh("add")
    op = ntsym.library.op(name, add.kernel)
    with pytest.raises(ntsym.LaunchError, match=rf"(?s)op `{name}`: .*other"):
        op(torch.randn(6), torch.randn(5))  # `other` has fewer tiles than there are programs


def test_a_triton_op_definition_takes_the_direct_path_too(monkeypatch):
    """On a GPU ops are ``torch.library.triton_op``s: the same class, the same
    direct path (here under the interpreter, eagerly)."""
    monkeypatch.setattr(ntsym.library, "uses_triton_op", lambda: True)
    op = ntsym.library.op(fresh("softmax"), softmax.kernel, shapes={"output": "input"})
    assert isinstance(op, eager.EagerOp)
    spy = Spy(op)
    x = torch.randn(3, 10)
    torch.testing.assert_close(op(x), torch.softmax(x, dim=-1))
    assert spy.calls == 0
    torch.testing.assert_close(getattr(torch.ops.ntsym_eager_test, op._qualname.split("::")[1])(x),
                               torch.softmax(x, dim=-1))


def test_compile_fullgraph_traces_the_dispatcher_call():
    import torch._dynamo

    torch._dynamo.reset()
    op = ntsym.library.op(fresh("add"), add.kernel)
    x, y = torch.randn(21), torch.randn(21)
    compiled = torch.compile(lambda a, b: op(a, b) * 2, fullgraph=True, backend="aot_eager")
    torch.testing.assert_close(compiled(x, y), (x + y) * 2)
    torch.testing.assert_close(op(x, y) * 2, compiled(x, y))


def test_two_outputs_in_any_order_match_torch_both_ways():
    block = ntsym.block_size()

    @ntsym.library.op(fresh("split"), shapes={"double": "x", "shifted": "x"}, dtypes={"shifted": torch.float64})
    @ntsym.jit
    def split(double: Tensor(1).tile((block,)), x: Tensor(1).tile((block,)), shifted: Tensor(1).tile((block,))):
        double = x * 2  # noqa: F841
        shifted = x + 1  # noqa: F841

    spy = Spy(split)
    x = torch.randn(19)
    for call in (split, spy.target):  # directly, then through the dispatcher
        double, shifted = call(x)
        torch.testing.assert_close(double, x * 2)
        torch.testing.assert_close(shifted, (x + 1).double())
        assert shifted.dtype == torch.float64
    assert spy.calls == 0
