"""``uint8`` meeting ``int8`` is refused at launch wherever the two values
meet: directly, inside a helper (a plain function or a ``@triton.jit`` one,
inlined: its arguments are taken to meet there) or after a tuple assignment
(followed element by element).  Triton would compute the pair as ``uint8``
(200 + 100 is 44) where torch gives ``int16`` (300)."""

import pytest
import torch
import triton

import ntsym
from ntsym import Tensor
from ntsym.errors import LaunchError


def _arrangement(x, y, out):
    return x.tile((4,)), y.tile((4,)), out.tile((4,))


def _plain_add(a, b):
    return a + b


@triton.jit
def _jit_add(a, b):
    return a + b


def _kernel(application):
    return ntsym.make(_arrangement, application, (Tensor(1), Tensor(1), Tensor(1)))


def _refused(application, out_dtype, operation):
    x = torch.tensor([200, 1], dtype=torch.uint8)
    y = torch.tensor([100, -5], dtype=torch.int8)
    with pytest.raises(LaunchError, match=rf"`x` \(uint8\) and `y` \(int8\) meet in `{operation}`"):
        _kernel(application)(x, y, torch.empty(2, dtype=out_dtype))


def test_uint8_meeting_int8_in_a_plain_helper_is_refused():
    def application(x, y, out):
        out = _plain_add(x, y)  # noqa: F841

    _refused(application, torch.int16, r"_plain_add\(x, y\)")


def test_uint8_meeting_int8_in_a_jit_helper_is_refused():
    def application(x, y, out):
        out = _jit_add(x, y)  # noqa: F841

    _refused(application, torch.int16, r"_jit_add\(x, y\)")


def test_uint8_meeting_int8_after_a_tuple_assignment_is_refused():
    def application(x, y, out):
        a, b = x, y
        out = a < b  # noqa: F841

    _refused(application, torch.bool, "a < b")


def test_a_helper_of_uint8_and_int16_runs_as_torch():
    def application(x, y, out):
        out = _jit_add(x, y)  # noqa: F841

    x = torch.tensor([200, 1, 7], dtype=torch.uint8)
    y = torch.tensor([100, -5, 3], dtype=torch.int16)
    out = torch.empty(3, dtype=torch.int16)
    _kernel(application)(x, y, out)
    torch.testing.assert_close(out, x + y)


def test_a_tuple_assignment_keeps_each_names_values_apart():
    def application(x, y, out):
        a, b = x, y
        out = a + a  # noqa: F841

    x = torch.tensor([100, 1, 7], dtype=torch.uint8)
    y = torch.tensor([100, -5, 3], dtype=torch.int8)
    out = torch.empty(3, dtype=torch.uint8)
    _kernel(application)(x, y, out)
    torch.testing.assert_close(out, x + x)
