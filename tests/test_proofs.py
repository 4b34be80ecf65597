"""Arrangement proofs, launch checks, mask elision, explain(), and the errors
people see, each naming the tensor, the dimension and the values."""

import pytest
import sympy
import torch

import ntsym
import ntsym.language as ntl
from tests.conftest import FP32_DOT_TOL
from ntsym import ApplicationError, ArrangementError, LaunchError, NtsymError, Symbol, Tensor

B = Symbol("B", meta=True, lower_bound=16, upper_bound=64, power_of_two=True)


def facts(kernel, kind):
    return [f for f in kernel.ir.facts if f[0] == kind]


def copy_app(x, y):
    y = x  # noqa: F841


def tile1(x, y):
    return x.tile((B,)), y.tile((B,))


# -- outermost shapes ----------------------------------------------------------------


def test_add_needs_equal_sizes_checked_at_launch():
    k = ntsym.make(tile1, copy_app, (Tensor(1), Tensor(1)))
    (check,) = k.ir.checks
    assert str(check.relation) == "Eq(x_size_0, y_size_0)"
    assert "needed for every B" in check.reason
    with pytest.raises(LaunchError, match=r"(?s)y.shape\[0\] \(=6\) must be <= x.shape\[0\] \(=5\).*no program would write"):
        k(torch.zeros(5), torch.zeros(6))


def test_same_symbols_are_proved():
    n = Symbol("n")
    k = ntsym.make(tile1, copy_app, (Tensor(shape=(n,)), Tensor(shape=(n,))))
    assert not k.ir.checks
    assert facts(k, "proved")


def test_concrete_equal_is_proved_and_unequal_raises():
    k = ntsym.make(tile1, copy_app, (Tensor(shape=(64,)), Tensor(shape=(64,))))
    assert not k.ir.checks
    with pytest.raises(ArrangementError, match="never be equal"):
        ntsym.make(lambda x, y: (x.tile((2,)), y.tile((2,))), copy_app,
                   (Tensor(shape=(4,)), Tensor(shape=(6,))))


def test_different_number_of_outer_dims_take_ninetoothed_split():
    """(cdiv(n, B),) beside (cdiv(a, B), cdiv(b, B)): either of `y`'s may be 1,
    or neither; `y` takes the program id split over its own outermost shape
    (tests/test_split_outer_shapes.py), and its tile count is checked."""
    k = ntsym.make(lambda x, y: (x.tile((B,)), y.tile((B, B))), copy_app, (Tensor(1), Tensor(2)))
    assert [str(c.relation) for c in k.ir.checks] == ["Eq(cdiv(y_size_0, B)*cdiv(y_size_1, B), cdiv(x_size_0, B))"]


def test_constexpr_sizes_unequal_for_some_block_sizes_only_checked_exactly():
    # cdiv(n, B) == cdiv(2 * n, 2 * B) holds for every B: proved.
    n = Symbol("n")
    k = ntsym.make(lambda x, y: (x.tile((B,)), y.tile((2 * B,))), copy_app,
                   (Tensor(shape=(n,)), Tensor(shape=(2 * n,))))
    assert not k.ir.checks


def mm_arrangement(input, other, output):
    output_arranged = output.tile((B, B))
    input_arranged = input.tile((B, B)).tile((1, -1))
    input_arranged = input_arranged.expand((-1, output_arranged.shape[1]))
    input_arranged.dtype = input_arranged.dtype.squeeze(0)
    other_arranged = other.tile((B, B)).tile((-1, 1))
    other_arranged = other_arranged.expand((output_arranged.shape[0], -1))
    other_arranged.dtype = other_arranged.dtype.squeeze(1)
    return input_arranged, other_arranged, output_arranged


def mm_application(input, other, output):
    accumulator = ntl.zeros(output.shape, dtype=ntl.float32)
    for k in range(input.shape[0]):
        accumulator += ntl.dot(input[k], other[k])
    output = accumulator  # noqa: F841


mm = ntsym.make(mm_arrangement, mm_application, (Tensor(2), Tensor(2), Tensor(2)))


def test_mm_checks():
    relations = {str(c.relation) for c in mm.ir.checks}
    assert relations == {"Eq(input_size_0, output_size_0)", "Eq(output_size_1, other_size_1)"}
    loop = [c for c in mm.source.splitlines() if "runtime.fail_check" in c]
    assert len(loop) == 3  # the k loop adds input.shape[1] == other.shape[0]


@pytest.mark.parametrize(
    "shapes, message",
    [
        (((5, 40), (41, 3), (5, 3)), r"other.shape\[0\] \(=41\) must equal input.shape\[1\] \(=40\)\nthe loop over `k`"),
        (((5, 4), (4, 3), (6, 3)), r"input.shape\[0\] \(=5\) must equal output.shape\[0\] \(=6\)"),
        (((5, 4), (4, 3), (5, 2)), r"output.shape\[1\] \(=2\) must equal other.shape\[1\] \(=3\)"),
    ],
)
def test_mm_mismatches_raise_with_values_and_write_nothing(shapes, message):
    a, b, c = (torch.randn(s) for s in shapes)
    before = c.clone()
    with pytest.raises(LaunchError, match=message):
        mm(a, b, c)
    assert torch.equal(c, before)


def test_bmm_arrangement_proved_with_checks():
    def bmm_arrangement(input, other, output):
        output_arranged = output.tile((1, B, B))
        input_arranged = input.tile((1, B, B)).tile((1, 1, -1))
        input_arranged = input_arranged.expand((-1, -1, output_arranged.shape[2]))
        input_arranged.dtype = input_arranged.dtype.squeeze((0, 1))
        input_arranged.dtype.dtype = input_arranged.dtype.dtype.squeeze(0)
        other_arranged = other.tile((1, B, B)).tile((1, -1, 1))
        other_arranged = other_arranged.expand((-1, output_arranged.shape[1], -1))
        other_arranged.dtype = other_arranged.dtype.squeeze((0, 2))
        other_arranged.dtype.dtype = other_arranged.dtype.dtype.squeeze(0)
        output_arranged.dtype = output_arranged.dtype.squeeze(0)
        return input_arranged, other_arranged, output_arranged

    k = ntsym.make(bmm_arrangement, mm_application, (Tensor(3), Tensor(3), Tensor(3)))
    relations = {str(c.relation) for c in k.ir.checks}
    # `other` is only read: it may have more batches than there are programs.
    assert "input_size_0 <= other_size_0" in relations
    a, b = torch.randn(2, 20, 18), torch.randn(2, 18, 17)
    c = torch.empty(2, 20, 17)
    k(a, b, c)
    torch.testing.assert_close(c, a @ b, atol=FP32_DOT_TOL, rtol=FP32_DOT_TOL)


def test_conv2d_concrete_arrangement_is_fully_proved():
    def arrangement(input, filter, output):
        ia = input.tile((1, *filter.shape[1:]), strides=(-1, -1, 1, 1))
        ia = ia.squeeze(1)
        ia.dtype = ia.dtype.squeeze(0)
        ia = ia.ravel().flatten(end_dim=3).flatten(start_dim=1)
        fa = filter.flatten(start_dim=1).permute((1, 0))
        oa = output.permute((0, 2, 3, 1)).flatten(end_dim=3)
        return mm_arrangement(ia, fa, oa)

    shapes = ((2, 3, 6, 6), (4, 3, 3, 3), (2, 4, 4, 4))
    k = ntsym.make(arrangement, mm_application, tuple(Tensor(shape=s) for s in shapes))
    assert not k.ir.checks
    x, w = torch.randn(shapes[0]), torch.randn(shapes[1])
    out = torch.empty(shapes[2])
    k(x, w, out)
    torch.testing.assert_close(out, torch.nn.functional.conv2d(x, w), atol=FP32_DOT_TOL, rtol=FP32_DOT_TOL)
    with pytest.raises(LaunchError, match=r"input.shape\[2\] \(=7\) must equal 6"):
        k(torch.randn(2, 3, 7, 6), w, out)


# -- masks ---------------------------------------------------------------------------------


def test_no_mask_for_dividing_concrete_tiles():
    k = ntsym.make(lambda x, y: (x.tile((16, 16)), y.tile((16, 16))), copy_app,
                   (Tensor(shape=(64, 64)), Tensor(shape=(64, 64))))
    assert "mask=" not in k.source
    assert len([f for f in k.ir.facts if f[0] == "dropped"]) == 4
    x = torch.randn(64, 64)
    y = torch.empty_like(x)
    k(x, y)
    assert torch.equal(x, y)


def test_symbolic_sizes_keep_exactly_the_needed_mask():
    opts = (None, {"constexpr": True})
    k = ntsym.make(lambda x, y: (x.tile((16, -1)), y.tile((16, -1))), copy_app,
                   (Tensor(2, shape_options=opts), Tensor(2, shape_options=opts)))
    # The row overhang, and the whole-row tile padded to a power of two.
    rows, cols = k.ir.params[0].conditions
    assert str(rows).endswith("< x_size_0") and str(cols).endswith("< x_size_1")
    assert k.kernel_source.count("mask=") == 2
    # With a power-of-two constexpr row the column mask is dropped.
    k2 = ntsym.make(lambda x, y: (x.tile((16, -1)), y.tile((16, -1))), copy_app,
                    (Tensor(shape=(None, 8)), Tensor(shape=(None, 8))))
    (rows,) = k2.ir.params[0].conditions
    assert str(rows).endswith("< x_size_0")
    x = torch.randn(37, 5)
    y = torch.empty_like(x)
    k(x, y)
    assert torch.equal(x, y)


def test_non_power_of_two_constexpr_row():
    def app(x, y):
        y = x * 2  # noqa: F841

    k = ntsym.make(lambda x, y: (x.tile((1, -1)), y.tile((1, -1))), app,
                   tuple(Tensor(2, shape_options={"constexpr": True}) for _ in range(2)))
    x = torch.randn(3, 781)
    y = torch.empty_like(x)
    k(x, y)
    torch.testing.assert_close(y, x * 2)


# -- explain -------------------------------------------------------------------------------


def test_explain_without_make():
    text = ntsym.explain(lambda x, y: (x.tile((16, 16)), y.tile((16, 16))),
                         (Tensor(shape=(64, 64)), Tensor(shape=(64, 64))))
    assert "none (every element is provably in bounds)" in text
    assert "dropped" in text


def _copy_tiles(x, y):
    y = x  # noqa: F841


def test_explain_takes_what_make_takes_or_a_kernel():
    def arrangement(x, y):
        return x.tile((16, 16)), y.tile((16, 16))

    tensors = (Tensor(2), Tensor(2))
    kernel = ntsym.make(arrangement, _copy_tiles, tensors)
    assert ntsym.explain(arrangement, _copy_tiles, tensors) == kernel.explain()
    assert ntsym.explain(arrangement, tensors, _copy_tiles) == kernel.explain()
    assert ntsym.explain(kernel) == kernel.explain()


# -- application errors -----------------------------------------------------------------------


def _make(app):
    return ntsym.make(tile1, app, (Tensor(1), Tensor(1)))


def test_unknown_language_function():
    def app(x, y):
        y = ntl.frobnicate(x)  # noqa: F841

    with pytest.raises(ApplicationError) as info:
        _make(app)
    text = str(info.value)
    assert "ntl.frobnicate" in text and "test_proofs.py" in text and "^^^" in text
    assert isinstance(info.value, TypeError) and isinstance(info.value, NtsymError)


def test_indexing_too_deep():
    def app(x, y):
        y = x[0, 1]  # noqa: F841

    with pytest.raises(ApplicationError, match="too many indices for `x`"):
        _make(app)


def test_tile_with_levels_left_used_as_a_value():
    def app(input, other, output):
        output = input  # noqa: F841

    with pytest.raises(ApplicationError, match="still has 1 level"):
        ntsym.make(mm_arrangement, app, (Tensor(2), Tensor(2), Tensor(2)))


def test_loop_variable_shadowing_a_parameter():
    def app(x, y):
        for x in range(3):  # noqa: B007
            pass

    with pytest.raises(ApplicationError, match="shadows the parameter `x`"):
        _make(app)


def test_unsupported_syntax():
    def app(x, y):
        with open("f"):
            pass

    with pytest.raises(ApplicationError, match="`With` statements are not supported"):
        _make(app)


def test_wrong_tensor_count_at_make():
    with pytest.raises(ArrangementError, match="takes 2 parameters"):
        ntsym.make(tile1, copy_app, (Tensor(1),))


# -- launch validation ----------------------------------------------------------------------------


k_copy = ntsym.make(tile1, copy_app, (Tensor(1), Tensor(1)))


@pytest.mark.parametrize(
    "args, message",
    [
        ((torch.zeros(4),), "takes 2 arguments"),
        ((torch.zeros(4), torch.zeros(4), torch.zeros(4)), "takes 2 arguments"),
        ((torch.zeros(4, 1), torch.zeros(4)), r"`x` must have 1 dimensions, got 2"),
        ((torch.zeros(4), [1, 2, 3, 4]), "`y` must be a torch.Tensor"),
        ((torch.zeros(4), torch.zeros(1).expand(4)), "stride 0"),
        ((torch.zeros(4, dtype=torch.complex64), torch.zeros(4)), "complex64"),
    ],
)
def test_bad_launch_arguments(args, message):
    outputs = [a.clone() for a in args if isinstance(a, torch.Tensor)]
    with pytest.raises(LaunchError, match=message):
        k_copy(*args)
    for a, before in zip([a for a in args if isinstance(a, torch.Tensor)], outputs):
        assert torch.equal(a, before)


def test_block_size_out_of_bounds_and_bad_constexpr():
    x = torch.zeros(4)
    with pytest.raises(LaunchError, match="above its upper bound 64"):
        k_copy(x, x.clone(), B=128)
    with pytest.raises(LaunchError, match="power of two"):
        k_copy(x, x.clone(), B=48)
    with pytest.raises(LaunchError, match="must be an int"):
        k_copy(x, x.clone(), B=32.0)


# -- aliasing -------------------------------------------------------------------------------------------


def test_in_place_elementwise_is_allowed():
    def app(x, y):
        y = x + 1  # noqa: F841

    k = _make(app)
    x = torch.zeros(100)
    k(x, x)
    assert (x == 1).all()


def test_one_view_for_two_written_tensors_is_an_error():
    """Each element would be stored twice, by stores with no order between
    them (two values may be laid out over a program's threads differently)."""

    def arrangement(x, a, b, BLOCK=ntsym.block_size()):
        return x.tile((BLOCK,)), a.tile((BLOCK,)), b.tile((BLOCK,))

    def app(x, a, b):
        a = x + 1  # noqa: F841
        b = x * 2  # noqa: F841

    k = ntsym.make(arrangement, app, (Tensor(1), Tensor(1), Tensor(1)))
    out = torch.zeros(64)
    with pytest.raises(LaunchError, match="writes both"):
        k(torch.randn(64), out, out)
    x, a, b = torch.randn(64), torch.empty(64), torch.empty(64)
    k(x, a, b)  # separate outputs
    torch.testing.assert_close(a, x + 1)
    torch.testing.assert_close(b, x * 2)


def test_aliasing_that_programs_would_race_on_is_an_error():
    a = torch.randn(32, 32)
    b = torch.randn(32, 32)
    with pytest.raises(LaunchError, match="share memory"):
        mm(a, b, a)
    with pytest.raises(LaunchError, match="share memory"):
        k_copy(a.view(-1)[1:], a.view(-1)[:-1])


def test_triton_errors_point_at_the_application_line():
    def arrangement(x, y):
        return x.tile((16, 16)), y.tile((16, 16))

    def app(x, y):
        z = ntl.dot(x, ntl.zeros((8, 8), dtype=ntl.float32))
        y = z  # noqa: F841

    k = ntsym.make(arrangement, app, (Tensor(2), Tensor(2)))
    with pytest.raises(ApplicationError) as info:
        k(torch.randn(16, 16), torch.empty(16, 16))
    text = str(info.value)
    assert "test_proofs.py" in text and "z = ntl.dot(x, ntl.zeros((8, 8), dtype=ntl.float32))" in text


def test_power_of_two_sizes_need_no_padding_and_are_checked():
    opts = (None, {"power_of_two": True})
    k = ntsym.make(lambda x, y: (x.tile((1, -1)), y.tile((1, -1))), copy_app,
                   (Tensor(2, shape_options=opts), Tensor(2, shape_options=opts)))
    assert "NTSYM_BLOCK" not in k.kernel_source and "mask=" not in k.kernel_source
    x = torch.randn(3, 8)
    y = torch.empty_like(x)
    k(x, y)
    assert torch.equal(x, y)
    with pytest.raises(LaunchError, match=r"x.shape\[1\] \(=6\) must be a power of two"):
        k(torch.randn(3, 6), torch.empty(3, 6))


def test_explain_of_a_kernel_with_a_loop_matches_the_kernel():
    from examples import mm

    assert ntsym.explain(mm.arrangement, mm.application, (Tensor(2), Tensor(2), Tensor(2))) == \
        ntsym.make(mm.arrangement, mm.application, (Tensor(2), Tensor(2), Tensor(2))).explain()
