"""A written tile whose inner level is expanded (``t.dtype.expand((2, -1))``)
maps two lanes of one store to each element; where the two lanes hold
different values (a cumsum along the expanded axis gives ``x`` and ``2 * x``)
which one lands is up to the hardware (the interpreter keeps the last).
Writes whose elements overlap across programs are refused, and outputs
whose elements overlap in memory are; this overlap inside one tile runs.
Strict xfail until it is refused (or proved to store one value)."""

import pytest
import torch

import ntsym
import ntsym.language as ntl
from ntsym import Tensor


def _expanded_rows(x, out):
    tile = x.tile((1, 8))
    tile.dtype = tile.dtype.expand((2, -1))
    written = out.tile((1, 8))
    written.dtype = written.dtype.expand((2, -1))
    return tile, written


@pytest.mark.xfail(strict=True, reason="two lanes of one store write x and 2 * x to each element of `out`; "
                   "the launch runs and the result depends on which lane's store lands")
def test_an_inner_expanded_output_written_with_different_lane_values_is_refused():
    def application(x, out):
        out = ntl.cumsum(x, 0)  # noqa: F841

    x = torch.randn(3, 5)
    out = torch.empty(3, 5)
    with pytest.raises(ntsym.NtsymError):
        ntsym.make(_expanded_rows, application, (Tensor(2), Tensor(2)))(x, out)
