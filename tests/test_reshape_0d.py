"""``reshape`` of a 0-d value (a reduction's result), as torch reshapes it: to
any shape of one element (Triton's own reshape reads a block shape, which a
0-d value lacks); to more elements, refused at the application's line."""

import pytest
import torch

import ntsym
import ntsym.language as ntl
from ntsym import Tensor


def rows(x, y):
    return x.tile((1, -1)).squeeze(1), y.tile((1,))


def to_one(x, y):
    y = ntl.reshape(ntl.sum(x), (1,))  # noqa: F841


def through_zero_d(x, y):
    y = ntl.reshape(ntl.reshape(ntl.max(x), ()), (1,)) + ntl.sum(x).reshape(1)  # noqa: F841


def to_two(x, y):
    y = ntl.reshape(ntl.sum(x), (2,))  # noqa: F841


@pytest.mark.parametrize("application, expected", [
    (to_one, lambda x: x.sum(1)),
    (through_zero_d, lambda x: x.amax(1) + x.sum(1)),
])
def test_a_reduction_reshaped_to_one_element(application, expected):
    kernel = ntsym.make(rows, application, (Tensor(2), Tensor(1)))
    x, y = torch.randn(3, 6), torch.zeros(3)
    kernel(x, y)
    torch.testing.assert_close(y, expected(x))
    assert "ntsym_reshape(" in kernel.source


def test_a_0d_value_reshaped_to_more_elements_is_refused_at_its_line():
    kernel = ntsym.make(rows, to_two, (Tensor(2), Tensor(1)))
    with pytest.raises(ntsym.ApplicationError, match=r"(?s)cannot change total number of elements.*reshape\(ntl.sum"):
        kernel(torch.ones(3, 8), torch.zeros(3))
