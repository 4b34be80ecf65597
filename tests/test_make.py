"""End to end through Triton's interpreter: the seeds' add and mm, the jit
form, call-time constexprs, strides, dtypes, zero sizes, golden sources."""

import pytest
import torch

import ntsym
import ntsym.language as ntl
from ntsym import Symbol, Tensor
from tests.conftest import FP32_DOT_TOL, assert_module_golden


# -- vector addition, the paper's Listing 3 ------------------------------------------

BLOCK_SIZE = Symbol("BLOCK_SIZE", constexpr=True)


def add_arrangement(input, other, output, BLOCK_SIZE=BLOCK_SIZE):
    input_arranged = input.tile((BLOCK_SIZE,))
    other_arranged = other.tile((BLOCK_SIZE,))
    output_arranged = output.tile((BLOCK_SIZE,))
    return input_arranged, other_arranged, output_arranged


def add_application(input, other, output):
    output = input + other  # noqa: F841


add_kernel = ntsym.make(add_arrangement, add_application, tuple(Tensor(1) for _ in range(3)))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("size", [1, 1000, 1024])
def test_add(dtype, size):
    x, y = torch.randn(size, dtype=dtype), torch.randn(size, dtype=dtype)
    z = torch.empty_like(x)
    add_kernel(x, y, z, BLOCK_SIZE=256)
    torch.testing.assert_close(z, x + y)


def test_add_strided_inputs():
    base = torch.randn(3000)
    x, y = base[::3], torch.randn(2000)[::2]
    z = torch.empty(1000)
    add_kernel(x, y, z, BLOCK_SIZE=128)
    torch.testing.assert_close(z, x + y)


def test_add_missing_constexpr_is_named():
    x = torch.randn(8)
    with pytest.raises(ntsym.LaunchError, match="BLOCK_SIZE"):
        add_kernel(x, x, torch.empty_like(x))


def test_add_zero_size_does_not_launch():
    x = torch.randn(0)
    z = torch.empty(0)
    add_kernel(x, x, z, BLOCK_SIZE=64)
    assert z.numel() == 0


def test_tutorial_invocation():
    x = torch.tensor((1, 2, 3), dtype=torch.float16)
    y = torch.tensor((4, 5, 6), dtype=torch.float16)
    z = torch.empty_like(x)
    add_kernel(x, y, z, BLOCK_SIZE=1024)
    assert torch.allclose(z, torch.tensor((5, 7, 9), dtype=torch.float16))


# -- the README's jit form --------------------------------------------------------------

JIT_BLOCK = Symbol("JIT_BLOCK", meta=True, lower_bound=16, upper_bound=64, power_of_two=True)


@ntsym.jit
def add_jit(
    x: Tensor(1).tile((JIT_BLOCK,)),
    y: Tensor(1).tile((JIT_BLOCK,)),
    z: Tensor(1).tile((JIT_BLOCK,)),
):
    z = x + y  # noqa: F841


def test_jit_form():
    x, y = torch.randn(300), torch.randn(300)
    z = torch.empty_like(x)
    add_jit(x, y, z)
    torch.testing.assert_close(z, x + y)
    add_jit(x, y, z, JIT_BLOCK=32)
    torch.testing.assert_close(z, x + y)


# -- matrix multiplication, the tutorial's ---------------------------------------------

BM, BN, BK = (ntsym.block_size(lower_bound=16, upper_bound=64) for _ in range(3))


def mm_arrangement(input, other, output):
    output_arranged = output.tile((BM, BN))
    input_arranged = input.tile((BM, BK))
    input_arranged = input_arranged.tile((1, -1))
    input_arranged = input_arranged.expand((-1, output_arranged.shape[1]))
    input_arranged.dtype = input_arranged.dtype.squeeze(0)
    other_arranged = other.tile((BK, BN))
    other_arranged = other_arranged.tile((-1, 1))
    other_arranged = other_arranged.expand((output_arranged.shape[0], -1))
    other_arranged.dtype = other_arranged.dtype.squeeze(1)
    return input_arranged, other_arranged, output_arranged


def mm_application(input, other, output):
    accumulator = ntl.zeros(output.shape, dtype=ntl.float32)
    for k in range(input.shape[0]):
        accumulator += ntl.dot(input[k], other[k])
    output = accumulator  # noqa: F841


mm_kernel = ntsym.make(mm_arrangement, mm_application, (Tensor(2), Tensor(2), Tensor(2)))


@pytest.mark.parametrize("dtype, tol", [(torch.float32, FP32_DOT_TOL), (torch.float16, 1e-2)])
@pytest.mark.parametrize("transpose", [False, True])
def test_mm(dtype, tol, transpose):
    a = torch.randn(50, 40, dtype=dtype)
    b = torch.randn(30, 40, dtype=dtype).t() if transpose else torch.randn(40, 30, dtype=dtype)
    c = torch.empty(50, 30, dtype=dtype)
    mm_kernel(a, b, c)
    torch.testing.assert_close(c.float(), a.float() @ b.float(), atol=tol * 10, rtol=tol)


def test_mm_tutorial_values():
    a = torch.tensor(((1, 2), (3, 4)), dtype=torch.float16)
    b = torch.tensor(((5, 6), (7, 8)), dtype=torch.float16)
    c = torch.empty(2, 2, dtype=torch.float16)
    mm_kernel(a, b, c)
    assert torch.allclose(c, torch.tensor(((19, 22), (43, 50)), dtype=torch.float16))


def test_mm_explicit_block_sizes():
    a, b = torch.randn(33, 17), torch.randn(17, 9)
    c = torch.empty(33, 9)
    names = sorted(m.symbol.name for m in mm_kernel.ir.meta_params)
    mm_kernel(a, b, c, **{n: 16 for n in names})
    torch.testing.assert_close(c, a @ b, atol=FP32_DOT_TOL, rtol=FP32_DOT_TOL)


def test_mm_inner_dimension_zero_gives_zeros():
    a, b = torch.randn(5, 0), torch.randn(0, 3)
    c = torch.full((5, 3), 7.0)
    mm_kernel(a, b, c)
    assert (c == 0).all()


def test_last_partial_block_is_compiled_only_when_the_size_needs_it():
    # The reduction loop is peeled: whole blocks, then the last partial one,
    # which the launcher's NTSYM_WHOLE flag leaves out where K % BK == 0.
    assert "if not NTSYM_WHOLE_0:" in mm_kernel.kernel_source
    for k in (32, 40, 16, 17):
        a, b = torch.randn(24, k), torch.randn(k, 20)
        c = torch.full((24, 20), float("nan"))
        mm_kernel(a, b, c, BM=16, BN=16, BK=16)
        torch.testing.assert_close(c, a @ b, atol=FP32_DOT_TOL, rtol=FP32_DOT_TOL)
        entries = [e for key, e in mm_kernel.calls.calls.items() if key[0][0] == a.shape]
        assert entries and all(e.kwargs["NTSYM_WHOLE_0"] == (k % 16 == 0) for e in entries)


# -- golden generated code ------------------------------------------------------------


@pytest.mark.parametrize("name, kernel", [("add", add_kernel), ("mm", mm_kernel)])
def test_golden_source(name, kernel):
    assert_module_golden(name, kernel)


def test_source_is_deterministic_and_compiles():
    again = ntsym.make(add_arrangement, add_application, tuple(Tensor(1) for _ in range(3)))
    assert again.source == add_kernel.source
    compile(add_kernel.source, "<add>", "exec")
    assert "def launch(" in add_kernel.launcher_source
    assert add_kernel.kernel_source.startswith("@triton.jit")
