"""ntsym kernels inside PyTorch programs: custom operators (functional and in
place), derived output shapes, autograd, torch.compile, export, CUDA graph
capture (simulated) and direct calls while compiling."""

import itertools

import pytest
import torch

import ntsym
import ntsym.library
from ntsym_codegen import runtime
from tests.conftest import FP32_DOT_TOL
from examples import add, conv2d, mm, softmax
from ntsym import Tensor
from ntsym.library import RegistrationError

_count = itertools.count()


def fresh(name):
    """An op name not used before in this process."""
    return f"ntsym_test::{name}_{next(_count)}"


def scale_kernel():
    def arrangement(x, BLOCK_SIZE=ntsym.block_size()):
        return (x.tile((BLOCK_SIZE,)),)

    def application(x):
        x = x * 2  # noqa: F841

    return ntsym.make(arrangement, application, (Tensor(1),))


def compile_counters():
    import torch._dynamo

    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    return torch._dynamo.utils.counters


# -- registration ---------------------------------------------------------------


def test_functional_add_returns_its_output():
    op = ntsym.library.op(fresh("add"), add.kernel)
    x, y = torch.randn(37), torch.randn(37)
    out = op(x, y)
    assert out.shape == (37,) and out.dtype == x.dtype
    torch.testing.assert_close(out, x + y)
    name = op._qualname.split("::")
    torch.testing.assert_close(getattr(getattr(torch.ops, name[0]), name[1])(x, y), x + y)


def test_decorator_form_with_jit():
    block = ntsym.block_size()

    @ntsym.library.op(fresh("neg"))
    @ntsym.jit
    def neg(x: Tensor(1).tile((block,)), y: Tensor(1).tile((block,))):
        y = -x  # noqa: F841

    x = torch.randn(20)
    torch.testing.assert_close(neg(x), -x)


def test_in_place_form():
    op = ntsym.library.op(fresh("add_out"), add.kernel, mutates_args=("output",))
    x, y, out = torch.randn(9), torch.randn(9), torch.empty(9)
    assert op(x, y, out) is None
    torch.testing.assert_close(out, x + y)
    torch.library.opcheck(op, (x, y, torch.empty(9)))


def test_malformed_and_taken_names():
    with pytest.raises(RegistrationError, match=r"'namespace::name'.*got 'add'"):
        ntsym.library.op("add", add.kernel)
    with pytest.raises(RegistrationError, match=r"got 'a::b.default'"):
        ntsym.library.op("a::b.default", add.kernel)
    name = fresh("twice")
    ntsym.library.op(name, add.kernel)
    with pytest.raises(RegistrationError, match=rf"`{name}` is already registered \(for kernel `add`\)"):
        ntsym.library.op(name, mm.kernel)
    with pytest.raises(RegistrationError, match=r"`aten::add` is already defined in PyTorch"):
        ntsym.library.op("aten::add", add.kernel)
    with pytest.raises(RegistrationError, match=r"expected a kernel made by ntsym.make"):
        ntsym.library.op(fresh("f"), lambda x: x)


def test_wrong_names_in_arguments():
    with pytest.raises(RegistrationError, match=r"mutates_args names `out`, which is not a parameter.*"
                                                 r"input, other, output"):
        ntsym.library.op(fresh("a"), add.kernel, mutates_args=("out",))
    with pytest.raises(RegistrationError, match=r"mutates_args names `input`, which the kernel does not write"):
        ntsym.library.op(fresh("a"), add.kernel, mutates_args=("input", "output"))
    with pytest.raises(RegistrationError, match=r"writes `output`, which mutates_args leaves out"):
        ntsym.library.op(fresh("a"), add.kernel, mutates_args=())
    with pytest.raises(RegistrationError, match=r"shapes= names `out`, which is not an output"):
        ntsym.library.op(fresh("a"), add.kernel, shapes={"out": "input"})
    with pytest.raises(RegistrationError, match=r"dtypes\['output'\] = 'x' is not an input"):
        ntsym.library.op(fresh("a"), add.kernel, dtypes={"output": "x"})


def test_read_and_written_tensor_needs_the_in_place_form():
    kernel = scale_kernel()
    with pytest.raises(RegistrationError, match=r"reads and writes `x`.*mutates_args=\('x',\)"):
        ntsym.library.op(fresh("scale"), kernel)
    op = ntsym.library.op(fresh("scale"), kernel, mutates_args=("x",))
    x = torch.randn(11)
    expected = x * 2
    op(x)
    torch.testing.assert_close(x, expected)


# -- shapes ---------------------------------------------------------------------


def test_derived_shapes():
    assert ntsym.library.output_shapes(add.kernel) == {"output": ("input.shape[0]",)}
    assert ntsym.library.output_shapes(mm.kernel) == {"output": ("input.shape[0]", "other.shape[1]")}
    # The softmax kernel accepts output rows of any length: only the row count is tied to the input.
    assert ntsym.library.output_shapes(softmax.kernel) == {"output": ("input.shape[0]", None)}
    assert ntsym.library.output_shapes(conv2d.kernel) == {"output": (None, "other.shape[0]", None, None)}


def test_mm_shape_derived():
    op = ntsym.library.op(fresh("mm"), mm.kernel)
    a, b = torch.randn(20, 33), torch.randn(33, 18)
    out = op(a, b)
    assert out.shape == (20, 18)
    torch.testing.assert_close(out, a @ b, atol=FP32_DOT_TOL, rtol=FP32_DOT_TOL)
    torch.library.opcheck(op, (a, b))


def test_softmax_needs_a_shape_and_takes_one():
    with pytest.raises(RegistrationError, match=r"shape of output `output` is not determined.*output.shape\[1\] is "
                                                 r"not related.*derived: output.shape\[0\] = input.shape\[0\].*"
                                                 r"shapes=\{'output': lambda input: \(...\)\}"):
        ntsym.library.op(fresh("softmax"), softmax.kernel)
    op = ntsym.library.op(fresh("softmax"), softmax.kernel, shapes={"output": "input"})
    x = torch.randn(6, 50)
    torch.testing.assert_close(op(x), torch.softmax(x, -1))
    torch.library.opcheck(op, (x,))


def test_conv2d_needs_a_shape_and_takes_one():
    with pytest.raises(RegistrationError, match=r"output.shape\[0\], output.shape\[2\], output.shape\[3\] are related "
                                                 r"to them only by input.shape\[0\]\*\(input.shape\[2\] - "
                                                 r"other.shape\[2\] \+ 1\).*== output.shape\[0\]\*output.shape\[2\]"
                                                 r"\*output.shape\[3\].*derived: output.shape\[1\] = other.shape\[0\]"):
        ntsym.library.op(fresh("conv2d"), conv2d.kernel)

    def shape(input, weight):
        n, _, h, w = input.shape
        k, _, r, s = weight.shape
        return n, k, h - r + 1, w - s + 1

    op = ntsym.library.op(fresh("conv2d"), conv2d.kernel, shapes=shape)
    x, w = torch.randn(2, 3, 7, 6), torch.randn(4, 3, 3, 2)
    torch.testing.assert_close(op(x, w), torch.nn.functional.conv2d(x, w), atol=FP32_DOT_TOL, rtol=FP32_DOT_TOL)
    torch.library.opcheck(op, (x, w))


def test_dtype_rule():
    op = ntsym.library.op(fresh("add64"), add.kernel, dtypes=torch.float64)
    x, y = torch.randn(5), torch.randn(5)
    out = op(x, y)
    assert out.dtype == torch.float64
    torch.testing.assert_close(out, (x + y).double())
    op = ntsym.library.op(fresh("add_like"), add.kernel, dtypes={"output": "other"})
    assert op(x, y.double()).dtype == torch.float64


def test_fake_tensors_get_derived_shapes():
    from torch._subclasses.fake_tensor import FakeTensorMode

    op = ntsym.library.op(fresh("mm"), mm.kernel)
    with FakeTensorMode():
        out = op(torch.empty(7, 5), torch.empty(5, 3))
    assert out.shape == (7, 3)


# -- autograd -------------------------------------------------------------------


@pytest.mark.skipif(torch.cuda.is_available(), reason="float64 gradcheck through the interpreter: the GPU's tl.dot takes no float64 accumulator here")
@pytest.mark.slow
def test_autograd_gradcheck():
    op = ntsym.library.op(fresh("mm"), mm.kernel)

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)

    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return op(grad, b.t()), op(a.t(), grad)

    op.register_autograd(backward, setup_context=setup_context)
    a = torch.randn(5, 4, dtype=torch.float64, requires_grad=True)
    b = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(op, (a, b))
    torch.library.opcheck(op, (a, b))


# -- torch.compile and export ------------------------------------------------------


class Block(torch.nn.Module):
    def __init__(self, mm_op, add_op, softmax_op):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(24, 16))
        self.bias = torch.nn.Parameter(torch.randn(16 * 8))
        self.ops = mm_op, add_op, softmax_op

    def forward(self, x):
        mm_op, add_op, softmax_op = self.ops
        h = mm_op(x, self.weight)
        h = add_op(h.reshape(-1), self.bias).reshape(h.shape)
        return softmax_op(h * 0.5)


def block():
    torch.manual_seed(0)
    return Block(ntsym.library.op(fresh("mm"), mm.kernel), ntsym.library.op(fresh("add"), add.kernel),
                 ntsym.library.op(fresh("softmax"), softmax.kernel, shapes={"output": "input"}))


def test_compile_fullgraph_matches_eager():
    model = block()
    x = torch.randn(8, 24)
    counters = compile_counters()
    with torch.no_grad():
        expected = model(x)
        compiled = torch.compile(model, fullgraph=True)
        torch.testing.assert_close(compiled(x), expected)
    assert not counters["graph_break"]


def test_explain_finds_no_graph_break():
    import torch._dynamo

    model = block()
    with torch.no_grad():
        explanation = torch._dynamo.explain(model)(torch.randn(8, 24))
    assert explanation.graph_break_count == 0 and explanation.graph_count == 1


def test_export():
    model = block()
    x = torch.randn(8, 24)
    with torch.no_grad():
        exported = torch.export.export(model, (x,))
        torch.testing.assert_close(exported.module()(x), model(x))
    assert "ntsym_test" in str(exported.graph)


def test_direct_call_inside_compile():
    counters = compile_counters()

    def f(x, y):
        out = torch.empty_like(x)
        add.kernel(x, y, out)
        return out * 2

    x, y = torch.randn(30), torch.randn(30)
    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    torch.testing.assert_close(compiled(x, y), f(x, y))
    assert not counters["graph_break"]


@pytest.mark.parametrize("split", [None, 2])
def test_conv2d_wrapper_inside_compile(split):
    """conv2d's wrapper (layout copies, channel groups, two kernels) traces
    without a graph break, on either layout."""
    counters = compile_counters()
    compiled = torch.compile(lambda x, w: conv2d.conv2d(x, w, split=split), fullgraph=True, backend="aot_eager")
    w = torch.randn(5, 8, 3, 2)
    for x in (torch.randn(2, 8, 9, 10), torch.randn(2, 8, 9, 10).to(memory_format=torch.channels_last)):
        torch.testing.assert_close(compiled(x, w), torch.nn.functional.conv2d(x, w), atol=FP32_DOT_TOL,
                                   rtol=FP32_DOT_TOL)
    assert not counters["graph_break"]


def test_direct_call_with_keywords_inside_compile_points_to_op():
    compile_counters()

    def f(x, y):
        out = torch.empty_like(x)
        add.kernel(x, y, out, BLOCK_SIZE=16)
        return out

    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    with pytest.raises(Exception, match=r"(?s)kernel `add` was called inside torch.compile with keyword "
                                        r"arguments \(BLOCK_SIZE\).*ntsym.library.op\('mylib::add', kernel, "
                                        r"options="):
        compiled(torch.randn(4), torch.randn(4))


def test_options_reach_every_launch():
    op = ntsym.library.op(fresh("add64"), add.kernel, options={"BLOCK_SIZE": 64})
    x, y = torch.randn(40), torch.randn(40)
    torch.testing.assert_close(op(x, y), x + y)


def test_launch_errors_name_the_op():
    name = fresh("mm")
    op = ntsym.library.op(name, mm.kernel)
    with pytest.raises(ntsym.LaunchError, match=rf"op `{name}`: other.shape\[0\] \(=6\) must equal input.shape\[1\] \(=5\)"):
        op(torch.randn(4, 5), torch.randn(6, 3))


# -- CUDA graph capture (simulated) -----------------------------------------------------


def test_capture_refuses_a_first_launch_and_keeps_validated_ones(monkeypatch):
    kernel = ntsym.make(add.arrangement, add.application, tuple(Tensor(1) for _ in range(3)))
    x, y, out = torch.randn(33), torch.randn(33), torch.empty(33)
    kernel(x, y, out)  # warm up
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: True)
    out.zero_()
    kernel(x, y, out)  # validated before: launches
    torch.testing.assert_close(out, x + y)
    with pytest.raises(ntsym.LaunchError, match=r"(?s)kernel `add` was launched during CUDA graph capture "
                                                r"with a call shape it has not run before.*warm up first"):
        kernel(x[:20], y[:20], out[:20])


# -- on a GPU --------------------------------------------------------------------------

cuda = pytest.mark.skipif(runtime.interpreting(), reason="needs a GPU (kernels not interpreted)")


@cuda
def test_gpu_capture_replays_warmed_launches_and_refuses_new_ones():
    kernel = ntsym.make(add.arrangement, add.application, tuple(Tensor(1) for _ in range(3)))
    op = ntsym.library.op(fresh("add"), kernel)
    x, y = torch.randn(4096, device="cuda"), torch.randn(4096, device="cuda")
    out = torch.empty_like(x)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm up, as torch.cuda.graph's documentation asks
        kernel(x, y, out)
        op(x, y)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        kernel(x, y, out)
        result = op(x, y)
    x.copy_(torch.randn_like(x))
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(out, x + y)
    torch.testing.assert_close(result, x + y)
    with pytest.raises(ntsym.LaunchError, match=r"(?s)during CUDA graph capture.*warm up first"):
        with torch.cuda.graph(torch.cuda.CUDAGraph()):
            kernel(x[:100], y[:100], out[:100])


@cuda
def test_gpu_launches_on_the_current_stream():
    kernel = ntsym.make(add.arrangement, add.application, tuple(Tensor(1) for _ in range(3)))
    x, y = torch.randn(1 << 20, device="cuda"), torch.randn(1 << 20, device="cuda")
    out = torch.empty_like(x)
    kernel(x, y, out)  # validated: the next launches take the direct path
    (entry,) = kernel.calls.calls.values()
    if entry.direct is None:
        pytest.skip("this Triton gives no binary to launch directly")
    compiled, streams = entry.direct.compiled, []

    class Spy:
        """The compiled kernel, noting the stream of each launch."""

        def __getattr__(self, name):
            return getattr(compiled, name)

        def run(self, *args):
            streams.append(args[3])
            return compiled.run(*args)

    entry.direct.compiled = Spy()
    try:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            out.zero_()
            kernel(x, y, out)
        kernel(x, y, out)
    finally:
        entry.direct.compiled = compiled
    torch.cuda.synchronize()
    torch.testing.assert_close(out, x + y)
    assert streams == [side.cuda_stream, torch.cuda.current_stream().cuda_stream]


@cuda
def test_gpu_compile_fullgraph_matches_eager():
    model = block().cuda()
    x = torch.randn(8, 24, device="cuda")
    counters = compile_counters()
    with torch.no_grad():
        expected = model(x)
        torch.testing.assert_close(torch.compile(model, fullgraph=True)(x), expected, atol=1e-3, rtol=1e-3)
        torch.testing.assert_close(torch.compile(model, fullgraph=True, mode="reduce-overhead")(x), expected,
                                   atol=1e-3, rtol=1e-3)
    assert not counters["graph_break"]


@cuda
def test_gpu_ops_are_triton_ops_that_inductor_launches_itself():
    from torch._inductor.utils import run_and_get_code

    assert ntsym.library.uses_triton_op()
    name = fresh("softmax")
    ntsym.library.op(name, softmax.kernel, shapes={"output": "input"})
    namespace, short = name.split("::")
    op = getattr(getattr(torch.ops, namespace), short)
    x = torch.randn(64, 1000, device="cuda")
    expected = torch.softmax(x, -1)
    torch.testing.assert_close(op(x), expected)  # eager: the launcher, tuned
    counters = compile_counters()
    compiled, (code, *_) = run_and_get_code(torch.compile(lambda t: op(t) * 2, fullgraph=True), x)
    torch.testing.assert_close(compiled, expected * 2)
    assert not counters["graph_break"]
    # The compiled code calls the ntsym kernel itself, not the operator.
    assert softmax.kernel.compiled.generated.kernel_name in code
    assert f"{namespace}.{short}" not in code


@cuda
def test_gpu_a_trace_before_any_real_call_takes_the_default_configuration():
    kernel = ntsym.make(add.arrangement, add.application, tuple(Tensor(1) for _ in range(3)))

    def f(x, y):
        out = torch.empty_like(x)
        kernel(x, y, out)  # a direct call inside torch.compile
        return out + 1

    x, y = torch.randn(5000, device="cuda"), torch.randn(5000, device="cuda")
    counters = compile_counters()
    torch.testing.assert_close(torch.compile(f, fullgraph=True)(x, y), x + y + 1)
    assert not counters["graph_break"]
    assert not kernel.calls.tuned  # nothing was timed on fake tensors


@cuda
def test_gpu_triton_op_passes_opcheck_and_export():
    op = ntsym.library.op(fresh("mm"), mm.kernel)
    a, b = torch.randn(64, 32, device="cuda"), torch.randn(32, 48, device="cuda")
    torch.library.opcheck(op, (a, b))

    class M(torch.nn.Module):
        def forward(self, a, b):
            return op(a, b)

    exported = torch.export.export(M(), (a, b))
    torch.testing.assert_close(exported.module()(a, b), a @ b, atol=FP32_DOT_TOL, rtol=FP32_DOT_TOL)


@cuda
def test_gpu_traced_launch_of_a_persistently_tuned_kernel_is_plain():
    # Tuned eagerly (perhaps to the persistent variant); the trace launches
    # the plain kernel with the same blocks, and agrees.
    op = ntsym.library.op(fresh("mm"), mm.kernel)
    a = torch.randn(512, 512, device="cuda", dtype=torch.float16)
    b = torch.randn(512, 512, device="cuda", dtype=torch.float16)
    expected = op(a, b)
    compile_counters()
    torch.testing.assert_close(torch.compile(op, fullgraph=True)(a, b), expected)


@cuda
def test_gpu_side_stream_launch_is_ordered_by_events():
    kernel = ntsym.make(add.arrangement, add.application, tuple(Tensor(1) for _ in range(3)))
    n = 1 << 22
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    kernel(x, y, out)  # validated and tuned on the default stream
    side = torch.cuda.Stream()
    ready, done = torch.cuda.Event(), torch.cuda.Event()
    for _ in range(3):
        x.copy_(torch.randn_like(x))  # on the default stream, then
        ready.record()
        with torch.cuda.stream(side):
            side.wait_event(ready)  # the side stream waits for it
            out.zero_()
            kernel(x, y, out)  # launched on the side stream, after the wait
            done.record(side)
        torch.cuda.current_stream().wait_event(done)
        torch.testing.assert_close(out, x + y)
