"""Calls as NineToothed's launcher takes them: every parameter in its place or
by keyword, compile-time values included.  Each kernel runs through Triton
(the interpreter on the CPU) and is compared against torch."""

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


def test_compiled_flag_passed_in_its_place():
    def application(x, flag, y):
        if flag:
            y = x + 1  # noqa: F841
        else:
            y = x - 1  # noqa: F841

    for value, delta in ((True, 1), (False, -1)):
        k = ntsym.make(lambda x, f, y: (x.tile((B,)), f, y.tile((B,))), application,
                       (Tensor(1), Tensor(0, constexpr=True, value=value), Tensor(1)))
        x = torch.randn(12)
        y = torch.zeros_like(x)
        k(x, value, y)
        torch.testing.assert_close(y, x + delta)


@pytest.mark.parametrize("given", [4, 3.0, True])
def test_another_value_than_the_compiled_one_is_refused(given):
    x, y = torch.randn(8), torch.zeros(8)
    pattern = rf"`factor` was compiled with the value 3 \(int.*the call gives {given!r} \({type(given).__name__}\)"
    with pytest.raises(LaunchError, match=pattern):
        scale(x, given, y)
    with pytest.raises(LaunchError, match=pattern):
        scale(x, y, factor=given)
    assert (y == 0).all()


def test_wrong_argument_counts_name_the_optional_value():
    x = torch.randn(8)
    with pytest.raises(LaunchError, match=r"takes 2 arguments \(x, y\), got 4; `factor` \(compiled as 3\) may be passed"):
        scale(x, 3, x, x)
    with pytest.raises(LaunchError, match="got unknown keyword argument.*z; its parameters are: x, factor, y"):
        scale(x, x, z=1)
