"""Arrangements written for NineToothed, run unchanged: any callable as the
arrangement, NineToothed's dtype names, arrangements returning fewer tensors
than they take, ``None`` and ``...`` in indexing, compile-time values of 0,
outermost shapes that differ by unit dimensions, and outer extents that agree
only where masks cover the rest.  Each test launches a kernel through Triton
(the interpreter on a CPU) and compares with torch."""

import functools

import pytest
import torch

import ntsym
import ntsym.language as ntl
from ntsym import Symbol, Tensor


def scale_application(input, output):
    output = input * 2  # noqa: F841


def scale_arrangement(input, output, block_size=None):
    return input.tile((block_size,)), output.tile((block_size,))


def check_scale(kernel, **constexprs):
    x = torch.randn(37)
    y = torch.empty_like(x)
    kernel(x, y, **constexprs)
    torch.testing.assert_close(y, x * 2)
    return kernel


# -- any callable as the arrangement ------------------------------------------------


def test_partial_arrangement_names_its_block_size_after_the_keyword():
    arrangement = functools.partial(scale_arrangement, block_size=ntsym.block_size())
    kernel = check_scale(ntsym.make(arrangement, scale_application, (Tensor(1), Tensor(1))))
    assert "block_size: tl.constexpr" in kernel.kernel_source


def test_partial_arrangement_with_a_call_time_block_size():
    arrangement = functools.partial(scale_arrangement, block_size=Symbol("BLOCK", constexpr=True))
    check_scale(ntsym.make(arrangement, scale_application, (Tensor(1), Tensor(1))), BLOCK=8)


def test_partial_of_a_partial_binding_a_positional_argument():
    def arrangement(block_size, input, output):
        return input.tile((block_size,)), output.tile((block_size,))

    inner = functools.partial(arrangement, ntsym.block_size())
    kernel = check_scale(ntsym.make(functools.partial(inner), scale_application, (Tensor(1), Tensor(1))))
    assert "block_size: tl.constexpr" in kernel.kernel_source


class Arranger:
    def __init__(self):
        self.tile_size = ntsym.block_size()

    def arrange(self, input, output):
        return input.tile((self.tile_size,)), output.tile((self.tile_size,))

    def __call__(self, input, output):
        return self.arrange(input, output)


def test_bound_method_and_callable_object_arrangements():
    for arrangement in (Arranger().arrange, Arranger()):
        kernel = check_scale(ntsym.make(arrangement, scale_application, (Tensor(1), Tensor(1))))
        assert "tile_size: tl.constexpr" in kernel.kernel_source


def test_closure_and_lambda_arrangements():
    size = ntsym.block_size()

    def closure(input, output):
        return input.tile((size,)), output.tile((size,))

    kernel = check_scale(ntsym.make(closure, scale_application, (Tensor(1), Tensor(1))))
    assert "size: tl.constexpr" in kernel.kernel_source
    lam = lambda input, output: (input.tile((size,)), output.tile((size,)))  # noqa: E731
    check_scale(ntsym.make(lam, scale_application, (Tensor(1), Tensor(1))))


class Scaler:
    def application(self, input, output):
        output = input * 2  # noqa: F841


def test_partial_or_bound_method_application_is_refused_clearly():
    arrangement = functools.partial(scale_arrangement, block_size=ntsym.block_size())
    tensors = (Tensor(1), Tensor(1))
    with pytest.raises(ntsym.ApplicationError, match="functools.partial"):
        ntsym.make(arrangement, functools.partial(scale_application), tensors)
    with pytest.raises(ntsym.ApplicationError, match="bound method.*`self`"):
        ntsym.make(arrangement, Scaler().application, tensors)
    with pytest.raises(ntsym.ApplicationError, match="must be a function"):
        ntsym.make(arrangement, Arranger(), tensors)


# -- dtype names -------------------------------------------------------------------


def test_dtype_names_are_exported():
    names = ("float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64",
             "uint8", "uint16", "uint32", "uint64")
    for name in names:
        assert getattr(ntsym, name) is getattr(ntl, name)
        assert name in ntsym.__all__


@pytest.mark.parametrize("name", ["float64", "int32", "int64", "uint8", "int16"])
def test_dtype_names_declare_the_element_type(name):
    B = ntsym.block_size()

    def arrangement(input, scale, output):
        return input.tile((B,)), scale, output.tile((B,))

    def application(input, scale, output):
        output = input * scale  # noqa: F841

    dtype = getattr(ntsym, name)
    kernel = ntsym.make(arrangement, application, (Tensor(1, dtype=dtype), Tensor(0, dtype=dtype), Tensor(1, dtype=dtype)))
    torch_dtype = getattr(torch, name)
    x = torch.arange(20).to(torch_dtype)
    y = torch.empty_like(x)
    kernel(x, 3, y)
    torch.testing.assert_close(y, x * 3)
    # As in NineToothed, the tensors passed decide the element types.
    other = torch.float32 if torch_dtype != torch.float32 else torch.float64
    z = torch.empty_like(x, dtype=other)
    kernel(x.to(other), 3, z)
    torch.testing.assert_close(z, x.to(other) * 3)


# -- None and ... in indexing ----------------------------------------------------------


def test_none_and_ellipsis_insert_and_fill_dimensions():
    t = Tensor(shape=(3, 4))
    assert t[None, :].shape == (1, 3, 4)
    assert t[..., None].shape == (3, 4, 1)
    assert t[None, ..., None, 1].shape == (1, 3, 1)
    assert t[1, ...].shape == (4,)
    with pytest.raises(ntsym.MetaOperationError, match="single ellipsis"):
        t[..., ...]
    with pytest.raises(ntsym.MetaOperationError, match="too many indices"):
        t[None, 1, 2, 3]


def test_bias_broadcast_with_new_axes():
    B = ntsym.block_size()

    def arrangement(input, bias, output):
        n, _, h, w = input.shape
        bias_arranged = bias[None, :, None, None].expand((n, -1, h, w))
        tile = (1, 1, 1, B)
        return input.tile(tile), bias_arranged.tile(tile), output.tile(tile)

    def application(input, bias, output):
        output = input + bias  # noqa: F841

    kernel = ntsym.make(arrangement, application, (Tensor(4), Tensor(1), Tensor(4)))
    x, b = torch.randn(2, 3, 2, 5), torch.randn(3)
    y = torch.empty_like(x)
    kernel(x, b, y)
    torch.testing.assert_close(y, x + b[None, :, None, None])


# -- pad given as torch.nn.functional.pad takes it ------------------------------------------


def _padded_copy(x, out, pad=()):
    return x.pad(pad).tile((1, 1)), out.tile((1, 1))


def _copy(x, out):
    out = x  # noqa: F841


@pytest.mark.parametrize("pad", [(1, 2, 0, 1), (2, 0), (0, 1, 3, 0)])
def test_flat_pad_takes_the_last_dimension_first(pad):
    x = torch.randn(3, 4)
    expected = torch.nn.functional.pad(x, pad, value=-1.0)
    out = torch.empty_like(expected)
    arrangement = functools.partial(_padded_copy, pad=pad)
    ntsym.make(arrangement, _copy, (Tensor(2, other=-1.0), Tensor(2)))(x, out)
    torch.testing.assert_close(out, expected)


def test_flat_pad_of_an_odd_length_is_refused():
    with pytest.raises(ntsym.MetaOperationError, match="flat pad of 3 values"):
        Tensor(2).pad((1, 2, 3))


# -- compile-time values of 0 ---------------------------------------------------------


def test_constexpr_padding_of_zero():
    padding = Symbol("padding", constexpr=True)
    BLOCK = Symbol("BLOCK", constexpr=True)

    def arrangement(input, output, padding=padding):
        return input.pad(((padding, padding),)).tile((BLOCK,)), output.tile((BLOCK,))

    kernel = ntsym.make(arrangement, scale_application, (Tensor(1, other=0.0), Tensor(1)))
    x = torch.randn(10)
    for p in (0, 2):
        y = torch.empty(10 + 2 * p)
        kernel(x, y, padding=p, BLOCK=4)
        torch.testing.assert_close(y, torch.nn.functional.pad(x, (p, p)) * 2)
    with pytest.raises(ntsym.LaunchError, match="`padding` must be non-negative, got -1"):
        kernel(x, torch.empty(8), padding=-1, BLOCK=4)
    with pytest.raises(ntsym.LaunchError, match="(?s)`BLOCK` must be positive, got 0: .*tile size"):
        kernel(x, torch.empty(10), padding=0, BLOCK=0)


def test_constexpr_zero_in_window_arithmetic():
    """A pooling-style window whose padding is 0: the output size formula
    and the padded, strided tile hold for it."""
    padding = Symbol("padding", constexpr=True)
    stride = Symbol("stride", constexpr=True)
    window = 3

    def arrangement(input, output):
        padded = input.pad(((padding, padding),))
        windows = padded.tile((window,), strides=(stride,), floor_mode=True)
        return windows, output.tile((1,))

    def application(input, output):
        output = ntl.sum(input, 0)  # noqa: F841

    kernel = ntsym.make(arrangement, application, (Tensor(1, other=0.0), Tensor(1)))
    x = torch.randn(11)
    for p, s in ((0, 2), (1, 2), (0, 1)):
        expected = torch.nn.functional.avg_pool1d(x[None, None], window, s, p, count_include_pad=True)[0, 0] * window
        y = torch.empty_like(expected)
        kernel(x, y, padding=p, stride=s)
        torch.testing.assert_close(y, expected)


# -- outermost shapes that differ by unit dimensions ----------------------------------


def test_outer_shapes_of_different_length_with_unit_dimensions():
    B = ntsym.block_size()

    def arrangement(input, scale, output):
        scale_arranged = scale.tile((B,))
        scale_arranged.dtype = scale_arranged.dtype.unsqueeze(1)
        return input.tile((B, -1)), scale_arranged, output.tile((B, -1))

    def application(input, scale, output):
        output = input * scale  # noqa: F841

    kernel = ntsym.make(arrangement, application, (Tensor(2), Tensor(1), Tensor(2)))
    x, s = torch.randn(37, 3), torch.randn(37)
    y = torch.empty_like(x)
    kernel(x, s, y)
    torch.testing.assert_close(y, x * s[:, None])


def test_outer_unit_dimensions_in_other_places():
    """(1, M) beside (M,) beside (M, 1): one program per element, each tensor
    indexed by its own non-unit dimension."""
    B = ntsym.block_size()

    def arrangement(input, other, output):
        input_arranged = input.tile((-1, B))  # (1, cdiv(N, B))
        other_arranged = other.tile((B,))  # (cdiv(N, B),)
        other_arranged.dtype = other_arranged.dtype.unsqueeze(0)
        output_arranged = output.tile((B, -1)).permute((1, 0))  # (cdiv(N, B), 1)
        output_arranged.dtype = output_arranged.dtype.permute((1, 0))
        return input_arranged, other_arranged, output_arranged

    def application(input, other, output):
        output = input + other  # noqa: F841

    kernel = ntsym.make(arrangement, application, (Tensor(2), Tensor(1), Tensor(2)))
    x, o = torch.randn(1, 45), torch.randn(45)
    y = torch.empty(45, 1)
    kernel(x, o, y)
    torch.testing.assert_close(y, (x[0] + o)[:, None])


def test_outer_shapes_differing_beyond_unit_dimensions_take_ninetoothed_split():
    """(cdiv(m, B), n) beside (cdiv(k, B),): the output takes the program id
    split over its own outermost shape, as in NineToothed, and must have one
    tile per program (tests/test_split_outer_shapes.py runs such kernels)."""
    B = ntsym.block_size()

    def arrangement(input, output):
        return input.tile((B, 1)), output.tile((B,))

    kernel = ntsym.make(arrangement, scale_application, (Tensor(2), Tensor(1)))
    with pytest.raises(ntsym.LaunchError, match=r"(?s)cdiv\(output.shape\[0\], B\) \(=1, .* must equal"):
        kernel(torch.randn(32, 3), torch.empty(32), B=32)


# -- arrangements returning fewer tensors than they take -------------------------------


def test_tensor_given_for_its_shape_only():
    """3 tensors in, 2 arranged out: `like` gives the length to copy; the
    kernel takes it, in the order of `tensors`, and reads its sizes."""
    B = ntsym.block_size()

    def arrangement(input, like, output):
        return input[: like.shape[0]].tile((B,)), output.tile((B,))

    kernel = ntsym.make(arrangement, scale_application, (Tensor(1), Tensor(1), Tensor(1)))
    x, like = torch.randn(30), torch.empty(20)
    y = torch.empty(20)
    kernel(x, like, y)
    torch.testing.assert_close(y, x[:20] * 2)
    assert "like_ptr" not in kernel.kernel_source  # no pointer: sizes only
    # As in NineToothed, the slice is not clipped: its extent is like.shape[0].
    with pytest.raises(ntsym.LaunchError, match=r"output.shape\[0\] \(=20\) must be <= like.shape\[0\] \(=19\)"):
        kernel(x, torch.empty(19), y)
    # Longer than the input: the elements past its end are masked (0).
    y = torch.full((40,), float("nan"))
    kernel(x, torch.empty(40), y)
    torch.testing.assert_close(y, torch.cat([x * 2, torch.zeros(10)]))
    with pytest.raises(ntsym.LaunchError, match="`like` must have 1 dimensions"):
        kernel(x, torch.empty(4, 5), y)


def test_tensor_not_returned_and_not_needed_takes_either_call():
    """NineToothed's launcher takes the returned tensors; ntsym takes that
    call, or every tensor given to make()."""
    B = ntsym.block_size()

    def arrangement(input, unused, output):
        return input.tile((B,)), output.tile((B,))

    kernel = ntsym.make(arrangement, scale_application, (Tensor(1), Tensor(2), Tensor(1)))
    x = torch.randn(30)
    for args in ((x,), (x, torch.empty(2, 2))):
        y = torch.empty_like(x)
        kernel(*args, y)
        torch.testing.assert_close(y, x * 2)


def test_results_pair_with_the_application_in_order():
    B = ntsym.block_size()

    def arrangement(input, other, output):
        return other.tile((B,)), output.tile((B,))

    def application(x, y):
        y = x + 1  # noqa: F841

    kernel = ntsym.make(arrangement, application, (Tensor(1), Tensor(1), Tensor(1)))
    x = torch.randn(25)
    y = torch.empty_like(x)
    kernel(x, y)
    torch.testing.assert_close(y, x + 1)
    with pytest.raises(ntsym.ArrangementError, match="returned 2 tensors for the 3 parameters"):
        ntsym.make(arrangement, lambda_free_application, (Tensor(1), Tensor(1), Tensor(1)))


def lambda_free_application(a, b, c):
    c = a + b  # noqa: F841
