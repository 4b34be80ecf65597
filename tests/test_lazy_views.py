"""Views whose negation or conjugation torch applies on reading (the negative
and conjugate bits) are refused by name: a kernel reads and writes the stored
values."""

import pytest
import torch

import ntsym
from ntsym import Tensor


def add_one(x, y):
    y = x + 1  # noqa: F841


@pytest.fixture(scope="module")
def kernel():
    return ntsym.make(lambda x, y: (x.tile((8,)), y.tile((8,))), add_one, (Tensor(1), Tensor(1)))


def test_negative_bit_views_are_refused_and_resolved_ones_run(kernel):
    z = torch.complex(torch.randn(10), torch.randn(10))
    imag = z.conj().imag
    assert imag.is_neg()
    y = torch.empty(10)
    with pytest.raises(ntsym.LaunchError, match=r"(?s)`x` is a view with the negative bit set.*x.resolve_neg\(\)"):
        kernel(imag, y)
    kernel(imag.resolve_neg(), y)
    torch.testing.assert_close(y, imag + 1)


def test_negative_bit_view_after_a_plain_call_of_the_same_shape(kernel):
    # The validated call shape of a plain tensor must not let the view through.
    z = torch.complex(torch.randn(10), torch.randn(10))
    y = torch.empty(10)
    kernel(z.imag.contiguous(), y)
    plain = torch.randn(10, 2)[:, 1]
    kernel(plain, y)
    with pytest.raises(ntsym.LaunchError, match="negative bit"):
        kernel(z.conj().imag, y)


def test_written_negative_bit_view_is_refused(kernel):
    z = torch.complex(torch.randn(10), torch.randn(10))
    with pytest.raises(ntsym.LaunchError, match=r"(?s)`y` is a view with the negative bit set.*write into a resolved"):
        kernel(torch.randn(10), z.conj().imag)
