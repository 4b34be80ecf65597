"""Integer reductions follow Triton's dtype rules, as NineToothed's do: a
``sum`` or ``cumprod`` of int32 is int32 and wraps (torch accumulates in
int64); casting to int64 first gives torch's result (docs/design.md,
semantic rules)."""

import torch

import ntsym
import ntsym.language as ntl
from ntsym import Tensor


def _sum(application):
    def arrangement(x, out):
        return x.tile((1, 8)), out.tile((1, 1))

    x = torch.full((1, 8), 2**30, dtype=torch.int32)
    out = torch.empty(1, 1, dtype=torch.int64)
    ntsym.make(arrangement, application, (Tensor(2), Tensor(2)))(x, out)
    return x, out


def _cumprod(application):
    def arrangement(x, out):
        return x.tile((1, 4)), out.tile((1, 4))

    x = torch.full((1, 4), 1000, dtype=torch.int32)
    out = torch.empty(1, 4, dtype=torch.int64)
    ntsym.make(arrangement, application, (Tensor(2), Tensor(2)))(x, out)
    return x, out


def test_an_int32_sum_wraps_in_int32():
    def application(x, out):
        out = ntl.sum(x, 1, keep_dims=True)  # noqa: F841

    x, out = _sum(application)
    torch.testing.assert_close(out, x.sum(1, keepdim=True, dtype=torch.int32).to(torch.int64))
    assert int(out) == 0  # 8 * 2**30 wraps to 0 in int32


def test_an_int32_sum_cast_to_int64_first_is_torchs():
    def application(x, out):
        out = ntl.sum(x.to(ntl.int64), 1, keep_dims=True)  # noqa: F841

    x, out = _sum(application)
    torch.testing.assert_close(out, x.sum(1, keepdim=True))


def test_an_int32_cumprod_wraps_in_int32():
    def application(x, out):
        out = ntl.cumprod(x, 1)  # noqa: F841

    x, out = _cumprod(application)
    torch.testing.assert_close(out, x.cumprod(1, dtype=torch.int32).to(torch.int64))
    assert int(out[0, 3]) == -727379968  # 1000**4 wraps in int32


def test_an_int32_cumprod_cast_to_int64_first_is_torchs():
    def application(x, out):
        out = ntl.cumprod(x.to(ntl.int64), 1)  # noqa: F841

    x, out = _cumprod(application)
    torch.testing.assert_close(out, x.cumprod(1))
