"""Launch refusals lead with one short line that says what is wrong (the
tensor, dimension, expected and given values); the why and the fix follow on
lines of their own."""

import pytest
import torch

import ntsym
import ntsym.language as ntl
from examples import add, mm
from tests.conftest import FP32_DOT_TOL

x = torch.arange(5.0)
z = torch.complex(torch.randn(4), torch.randn(4))
CALLS = {
    # name: (call, the headline's facts)
    "shape": (lambda: mm.kernel(torch.randn(5, 4), torch.randn(6, 3), torch.empty(5, 3)),
              "other.shape[0] (=6) must equal input.shape[1] (=4)"),
    "stride 0": (lambda: add.kernel(torch.randn(4), torch.randn(4), torch.empty(1).expand(4)),
                 "`output` is written by the kernel but dimension 0 has stride 0 (an expanded view)"),
    "count": (lambda: add.kernel(torch.randn(4), torch.randn(4)), "kernel `add` takes 3 arguments, got 2"),
    "shared": (lambda: add.kernel(x[:4], x[1:], x[1:]),
               "`input` and `output` share memory and the kernel writes `output`"),
    "negative bit": (lambda: add.kernel(z.conj().imag, torch.randn(4), torch.empty(4)),
                     "`input` is a view with the negative bit set"),
    "keyword": (lambda: add.kernel(torch.randn(4), torch.randn(4), torch.empty(4), BOGUS=3),
                "kernel `add` got unknown keyword argument(s) BOGUS"),
    "overlap": (lambda: mm.kernel(torch.randn(5, 4), torch.randn(4, 3), torch.empty(16).as_strided((5, 3), (1, 1))),
                "`output` is written by the kernel but its elements overlap in memory"),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_a_refusal_leads_with_what_is_wrong(name):
    call, headline = CALLS[name]
    with pytest.raises(ntsym.LaunchError) as caught:
        call()
    lines = str(caught.value).splitlines()
    assert lines[0] == headline and len(lines[0]) <= 100
    assert len(lines) >= 2 and all(lines[1:]), lines  # the why (and the fix) follow


def test_the_refused_call_runs_once_fixed():
    a, b = torch.randn(5, 4), torch.randn(4, 3)
    c = torch.empty(5, 3)
    mm.kernel(a, b, c)
    torch.testing.assert_close(c, a @ b, rtol=FP32_DOT_TOL, atol=FP32_DOT_TOL)


def test_parameters_declared_by_one_tensor_object_must_agree():
    # `(t, t)` at make: both parameters read one set of size and stride symbols,
    # so arguments that differ in them would be indexed with one's strides.
    def app(x, y):
        y = x + 1  # noqa: F841

    t = ntsym.Tensor(1)
    kernel = ntsym.make(lambda x, y: (x.tile((4,)), y.tile((4,))), app, (t, t))
    y = torch.zeros(4)
    with pytest.raises(ntsym.LaunchError, match="declared by one Tensor object"):
        kernel(torch.arange(8.0)[::2], y)
    assert torch.equal(y, torch.zeros(4))  # refused before any launch
    x = torch.arange(4.0)
    kernel(x, y)  # alike: as one declaration says
    torch.testing.assert_close(y, x + 1)


def test_one_symbol_in_several_shapes_must_agree(tmp_path):
    # `Tensor(shape=(n,))` twice: one size for both, read from the first; a second
    # argument of another size was taken at its size, so the first was read past
    # its end (a wrong result, no error).
    import functools
    import importlib.util

    n = ntsym.Symbol("n")
    kernel = ntsym.make(functools.partial(add.arrangement, BLOCK_SIZE=16), add.application,
                        (ntsym.Tensor(shape=(n,)), ntsym.Tensor(shape=(n,)), ntsym.Tensor(1)))
    ntsym.aot.export(kernel, tmp_path / "exported.py")
    spec = importlib.util.spec_from_file_location("exported_add", tmp_path / "exported.py")
    exported = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(exported)
    for launch in (kernel, exported.launch):
        x, y, out = torch.arange(100.0)[:30], torch.zeros(40), torch.zeros(40)
        with pytest.raises(ValueError, match=r"other.shape\[0\] \(=40\) must equal input.shape\[0\] \(=30\)"):
            launch(x, y, out)
        assert torch.equal(out, torch.zeros(40))
        x = torch.arange(40.0)
        launch(x, y, out)
        torch.testing.assert_close(out, x)


@pytest.mark.parametrize("other, dtype", [(float("inf"), torch.int32), (float("nan"), torch.int8), (-1, torch.uint8),
                                          (2.0, torch.bool), (float("-inf"), torch.float8_e4m3fn)])
def test_an_other_the_tensors_dtype_cannot_hold_is_refused(other, dtype):
    # The proofs take an `other` they use (NaN, an infinity, a small integer) at its
    # value (min's identity +inf); a tensor that loads it as another value would
    # make them wrong.  Others they do not use (0.1) run as declared.
    def row_min(x, out):
        out = ntl.min(x, 0)  # noqa: F841

    kernel = ntsym.make(lambda x, out: (x.tile((8,)), out.tile((1,))), row_min,
                        (ntsym.Tensor(1, other=other), ntsym.Tensor(1)))
    with pytest.raises(ntsym.LaunchError, match="cannot hold its other="):
        kernel(torch.ones(5).to(dtype), torch.empty(1).to(dtype))


def test_an_other_the_dtype_holds_runs():
    def row_min(x, out):
        out = ntl.min(x, 0)  # noqa: F841

    kernel = ntsym.make(lambda x, out: (x.tile((8,)), out.tile((1,))), row_min,
                        (ntsym.Tensor(1, other=float("inf")), ntsym.Tensor(1)))
    x = torch.tensor([5.0, 6.0, 7.0, 8.0, 9.0], dtype=torch.float16)
    out = torch.empty(1, dtype=torch.float16)
    kernel(x, out)
    assert out.item() == 5.0
