"""Calls as NineToothed's launcher takes them: every parameter in its place or
by keyword (compile-time values included), tensors of dtypes other than the
declared ones, and a flattened tensor updated in place.  Each kernel runs
through Triton (the interpreter on the CPU) and is compared against torch."""

import pytest
import torch

import ntsym
import ntsym.language as ntl
from ntsym import Tensor
from ntsym.errors import LaunchError

B = ntsym.block_size(lower_bound=4, upper_bound=16)


# -- compile-time values passed at launch ----------------------------------------------------


def scale_app(x, factor, y):
    y = x * factor  # noqa: F841


scale = ntsym.make(lambda x, f, y: (x.tile((B,)), f, y.tile((B,))), scale_app,
                   (Tensor(1), Tensor(0, constexpr=True, value=3), Tensor(1)))


def _scaled(call):
    x = torch.randn(20)
    y = torch.zeros_like(x)
    call(x, y)
    torch.testing.assert_close(y, x * 3)


def test_compiled_value_passed_in_its_place():
    _scaled(lambda x, y: scale(x, 3, y))
    _scaled(lambda x, y: scale(x, 3, y, B=16))
    _scaled(lambda x, y: scale(x, y))  # left out, as before


def test_compiled_value_passed_by_keyword():
    _scaled(lambda x, y: scale(x, y, factor=3))
    _scaled(lambda x, y: scale(x, factor=3, y=y))
    _scaled(lambda x, y: scale(x=x, factor=3, y=y))
    _scaled(lambda x, y: scale(x=x, y=y))


@pytest.mark.parametrize("given", [4, 3.0, True])
def test_another_value_than_the_compiled_one_is_refused(given):
    x, y = torch.randn(8), torch.zeros(8)
    pattern = (rf"`factor` was compiled as 3 but the call gives {given!r} \({type(given).__name__}\)\n"
               r"the kernel was made with Tensor\(0, constexpr=True, value=3\) \(int\)")
    with pytest.raises(LaunchError, match=pattern):
        scale(x, given, y)
    with pytest.raises(LaunchError, match=pattern):
        scale(x, y, factor=given)
    assert (y == 0).all()


def test_wrong_argument_counts_name_the_optional_value():
    x = torch.randn(8)
    with pytest.raises(LaunchError, match=r"takes 2 arguments, got 4\nits arguments are: x, y\n`factor` \(compiled as 3\) may be passed"):
        scale(x, 3, x, x)
    with pytest.raises(LaunchError, match="(?s)got unknown keyword argument.*z\nits parameters are: x, factor, y"):
        scale(x, x, z=1)


# -- dtypes other than the declared ones -----------------------------------------------------


def add_one_app(x, y):
    y = x + 1  # noqa: F841


add_one = ntsym.make(lambda x, y: (x.tile((B,)), y.tile((B,))), add_one_app,
                     (Tensor(1, dtype=torch.int32), Tensor(1, dtype=ntl.int32)))


def test_declared_dtype_follows_the_call():
    # Values past int32: only a kernel compiled for int64 pointers gets them right.
    x = torch.arange(10, dtype=torch.int64) + 2**40
    y = torch.zeros_like(x)
    add_one(x, y)
    assert torch.equal(y, x + 1)
    x32 = torch.arange(10, dtype=torch.int32)  # the declared dtype, same shapes
    y32 = torch.zeros_like(x32)
    add_one(x32, y32)
    assert torch.equal(y32, x32 + 1)
    xf = torch.randn(10, dtype=torch.float64)
    yf = torch.zeros_like(xf)
    add_one(xf, yf)
    assert torch.equal(yf, xf + 1)


def test_declared_index_output_takes_int64():
    def application(x, output_idx):
        output_idx = ntl.argmax(x, 1)  # noqa: F841

    k = ntsym.make(lambda x, o: (x.tile((1, -1)), o.tile((1,)).unsqueeze(1)), application,
                   (Tensor(2), Tensor(1, dtype=ntl.int32)))
    x = torch.randn(5, 7)
    x[2] = -x[2].abs() - 1  # a row of negatives: the padded eighth lane must not win
    output_idx = torch.full((5,), -1, dtype=torch.int64)
    k(x, output_idx)
    assert torch.equal(output_idx, torch.argmax(x, 1))


def test_declared_dtype_read_by_the_application_is_the_tensors():
    def application(x, y):
        acc = ntl.zeros(x.shape, dtype=x.dtype)
        y = acc + x * 1.0001  # noqa: F841

    k = ntsym.make(lambda x, y: (x.tile((B,)), y.tile((B,))), application,
                   (Tensor(1, dtype=torch.float16), Tensor(1, dtype=torch.float16)))
    x = torch.randn(16, dtype=torch.float64)
    y = torch.zeros_like(x)
    k(x, y)
    torch.testing.assert_close(y, x * 1.0001, rtol=1e-7, atol=0)


def test_scalar_takes_the_type_of_the_value_given():
    def application(x, alpha, y):
        y = x * alpha  # noqa: F841

    k = ntsym.make(lambda x, a, y: (x.tile((B,)), a, y.tile((B,))), application,
                   (Tensor(1), Tensor(0, dtype=ntl.int32), Tensor(1)))
    x = torch.randn(12)
    y = torch.zeros_like(x)
    k(x, 2.5, y)  # a float for an int-declared scalar computes with the float
    torch.testing.assert_close(y, x * 2.5)
    k = ntsym.make(lambda x, a, y: (x.tile((B,)), a, y.tile((B,))), application,
                   (Tensor(1), Tensor(0, dtype=torch.float32), Tensor(1)))
    x = torch.arange(12, dtype=torch.int64) + 2**40 + 1
    y = torch.zeros_like(x)
    k(x, 3, y)  # an int for a float-declared scalar stays an int: exact
    assert torch.equal(y, x * 3)


def test_dtype_triton_cannot_read_is_refused():
    x = torch.zeros(8, dtype=torch.complex64)
    with pytest.raises(LaunchError, match="`x` has dtype torch.complex64\nTriton kernels cannot read that dtype"):
        add_one(x, torch.zeros(8, dtype=torch.int32))


# -- in place on a flattened tensor ----------------------------------------------------------


def double_app(x, y):
    y = x * 2  # noqa: F841


double_flat = ntsym.make(lambda x, y: (x.flatten().tile((B,)), y.flatten().tile((B,))), double_app,
                         (Tensor(2), Tensor(2)))


def test_in_place_on_a_flattened_tensor():
    x = torch.randn(3, 7)
    expected = x * 2
    double_flat(x, x, B=8)
    torch.testing.assert_close(x, expected)
    t = torch.randn(5, 4).t()  # not contiguous: the same view still aliases safely
    expected = t * 2
    double_flat(t, t, B=8)
    torch.testing.assert_close(t, expected)


def test_in_place_on_flattened_3d_tensor_with_a_flattened_leading_pair():
    k = ntsym.make(lambda x, y: (x.flatten(0, 2).tile((B, -1)), y.flatten(0, 2).tile((B, -1))), double_app,
                   (Tensor(3), Tensor(3)))
    x = torch.randn(2, 3, 4)
    expected = x * 2
    k(x, x, B=4)
    torch.testing.assert_close(x, expected)


def test_flattened_tensor_read_at_shifted_positions_is_refused():
    base = torch.randn(13)
    before = base.clone()
    with pytest.raises(LaunchError, match="`x` and `y` share memory and the kernel writes `y`"):
        double_flat(base[1:].view(3, 4), base[:12].view(3, 4), B=8)
    assert torch.equal(base, before)


def test_flattened_tensor_read_transposed_is_refused():
    k = ntsym.make(lambda x, y: (x.permute((1, 0)).flatten().tile((B,)), y.flatten().tile((B,))), double_app,
                   (Tensor(2), Tensor(2)))
    x = torch.randn(4, 4)
    before = x.clone()
    with pytest.raises(LaunchError, match="`x` and `y` share memory"):
        k(x, x, B=8)
    assert torch.equal(x, before)
    y = torch.empty(4, 4)
    k(x, y, B=8)
    torch.testing.assert_close(y, x.t().reshape(4, 4) * 2)


def test_in_place_where_programs_share_elements_is_refused():
    def add_one(x, y):
        y = x + 1  # noqa: F841

    overlapping = ntsym.make(lambda x, y: (x.tile((4,), strides=(2,)), y.tile((4,), strides=(2,))), add_one,
                             (Tensor(1), Tensor(1)))
    broadcast = ntsym.make(lambda x, y: (x.tile((-1,)).unsqueeze(0).expand((3, -1)),
                                         y.tile((-1,)).unsqueeze(0).expand((3, -1))), add_one,
                           (Tensor(1), Tensor(1)))
    for k in (overlapping, broadcast):
        x = torch.zeros(10)
        with pytest.raises(LaunchError, match="(?s)share memory.*several programs reach one element"):
            k(x, x)
        assert (x == 0).all()


def test_in_place_with_source_indexing_is_refused():
    def rotate(x, y):
        positions = x.offsets(0)
        y = x.source[(positions + 1) % x.source.shape[0]]  # noqa: F841

    k = ntsym.make(lambda x, y: (x.tile((B,)), y.tile((B,))), rotate, (Tensor(1), Tensor(1)))
    x = torch.arange(16, dtype=torch.float32)
    with pytest.raises(LaunchError, match=r"(?s)share memory.*indexes `x.source`"):
        k(x, x, B=4)
    y = torch.empty_like(x)
    k(x, y, B=4)
    assert torch.equal(y, torch.roll(x, -1))
