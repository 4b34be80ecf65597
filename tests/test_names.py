"""Names the caller chooses (size symbols, the application's locals) against
the names the generated kernel and launcher give their own values: the
program index, the modules they import, the parameters derived from tensors.
A clash used to make the kernel read the wrong value (``Symbol("k")`` beside
the loop ``for k in ...`` of a matrix product gave a wrong product, no
error); the caller's names are now renamed away from the kernel's."""

import functools

import pytest
import torch

import ntsym
from examples import add, mm
from ntsym import Symbol, Tensor


def test_a_product_over_symbols_named_m_n_k():
    m, n, k = Symbol("m"), Symbol("n"), Symbol("k")
    kernel = ntsym.make(mm.arrangement, mm.application, (Tensor(shape=(m, k)), Tensor(shape=(k, n)),
                                                         Tensor(shape=(m, n))))
    a, b = torch.randn(50, 72), torch.randn(72, 40)
    out = torch.empty(50, 40)
    kernel(a, b, out, BLOCK_SIZE_M=16, BLOCK_SIZE_N=16, BLOCK_SIZE_K=16)
    torch.testing.assert_close(out, a @ b, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("name", ["pid", "tl", "grid", "input", "range", "cdiv", "runtime", "meta", "x_t0", "mask_1"])
def test_a_size_symbol_named_as_the_kernels_own_names(name):
    n = Symbol(name)
    kernel = ntsym.make(functools.partial(add.arrangement, BLOCK_SIZE=16), add.application,
                        (Tensor(shape=(n,)), Tensor(shape=(n,)), Tensor(1)))
    x, y = torch.randn(40), torch.randn(40)
    out = torch.empty(40)
    kernel(x, y, out)
    torch.testing.assert_close(out, x + y)


def _arrangement(x, y):
    return x.tile((16,)), y.tile((16,))


@pytest.mark.parametrize("name", ["pid", "pid_0", "tl", "x_ptr", "x_size_0", "x_stride_0", "NTSYM_INT64", "range",
                                  "mask_1", "x_tile"])
def test_an_application_local_named_as_the_kernels_own_names(name, tmp_path):
    path = tmp_path / f"app_{name}.py"
    path.write_text("def application(x, y):\n"
                    f"    {name} = x + 1\n"
                    f"    y = {name} * 2 + x  # noqa: F841\n")
    namespace = {"__file__": str(path)}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    kernel = ntsym.make(_arrangement, namespace["application"], (Tensor(1), Tensor(1)))
    x = torch.randn(40)
    out = torch.empty(40)
    kernel(x, out)
    torch.testing.assert_close(out, (x + 1) * 2 + x)
