"""A scalar parameter (a ``Tensor(0)`` the arrangement passes as it is) goes
to the kernel by value: an application that assigns it before reading it
stores nothing.  A tensor given for such a parameter kept its old value with
no error; the launcher now refuses it, and a number is still taken."""

import pytest
import torch

import ntsym
import ntsym.language as ntl
from ntsym import Tensor


def whole(x, out):
    return x.tile((-1,)), out


def one_element(x, out):
    return x.tile((-1,)), out.unsqueeze(0).tile((1,))


def assigns(x, out):
    out = ntl.max(x)  # noqa: F841


def rebinds(x, out):
    out = out * 2
    x = x * out  # noqa: F841


def assigns_on_one_path(x, out):
    if ntl.max(x) > 0:
        out = ntl.max(x)  # noqa: F841


def assigns_in_a_loop(x, out):
    for i in range(2):
        out = ntl.max(x) + i  # noqa: F841


def adds_to_it(x, out):
    out += 1
    x = x * out  # noqa: F841


def reads_then_assigns(x, out):
    x = x * out
    out = ntl.max(x)  # noqa: F841


def unpacks(x, out):
    y, out = x * 2, ntl.max(x)
    x = y  # noqa: F841


def outputs_of(application, arrangement=whole):
    return ntsym.compile(arrangement, application, (Tensor(1), Tensor(0))).spec.scalar_outputs


def test_which_scalars_are_assigned_before_they_are_read():
    assert outputs_of(assigns) == {"out"}
    assert outputs_of(assigns_on_one_path) == {"out"}
    assert outputs_of(assigns_in_a_loop) == {"out"}
    assert outputs_of(unpacks) == {"out"}
    for application in (rebinds, adds_to_it, reads_then_assigns):
        assert outputs_of(application) == frozenset(), application.__name__


def test_a_tensor_given_for_an_assigned_scalar_is_refused():
    kernel = ntsym.make(whole, assigns, (Tensor(1), Tensor(0)))
    x = torch.rand(13) + 1
    out = torch.full((), 7.0)
    with pytest.raises(ntsym.LaunchError, match=r"(?s)`out` is a scalar parameter.*assigns before reading it.*"
                                                r"would keep its old value.*out.unsqueeze\(0\).tile"):
        kernel(x, out)
    assert out.item() == 7.0
    kernel(x, 7.0)  # a number: nothing to write back into


def test_a_scalar_read_first_still_takes_a_tensor():
    kernel = ntsym.make(lambda x, out: (x.tile((4,)), out), rebinds, (Tensor(1), Tensor(0)))
    x = torch.rand(10)
    expected = x * 6
    kernel(x, torch.tensor(3.0))
    torch.testing.assert_close(x, expected)


def test_arranged_as_one_element_it_is_written():
    kernel = ntsym.make(one_element, assigns, (Tensor(1), Tensor(0)))
    assert kernel.spec.scalar_outputs == frozenset()
    x = torch.rand(13) + 1
    out = torch.full((), 7.0)
    kernel(x, out)
    assert out.item() == x.max().item()
