"""A written tile whose inner level is expanded (``t.dtype.expand((2, -1))``)
maps two lanes of one store to each element: refused where the value may
differ between them (which lane lands is unspecified), run where it is
provably the same (codegen/lane_writes.py)."""

import pytest
import torch

import ntsym
import ntsym.language as ntl
from ntsym import Tensor
from tests.sources import application_from


def _expanded_rows(x, out):
    tile = x.tile((1, 8))
    tile.dtype = tile.dtype.expand((2, -1))
    written = out.tile((1, 8))
    written.dtype = written.dtype.expand((2, -1))
    return tile, written


def _plain_rows(x, out):
    written = out.tile((1, 8))
    written.dtype = written.dtype.expand((2, -1))
    return x.tile((1, 8)), written


def test_an_inner_expanded_output_written_with_different_lane_values_is_refused():
    def application(x, out):
        out = ntl.cumsum(x, 0)  # noqa: F841

    with pytest.raises(ntsym.ApplicationError, match=r"`out` is written through a tile whose dimension 0 is "
                       r"expanded.*2 lanes of one store write each element.*ntl.cumsum\(x, 0\)"):
        ntsym.make(_expanded_rows, application, (Tensor(2), Tensor(2)))


def _exp_twice_plus_one(x, out):
    out = ntl.exp(x) * 2.0 + 1.0  # noqa: F841


def _exp_twice_plus_one_through_locals(x, out):
    y = ntl.exp(x)
    z: ntl.float32 = y * 2.0
    out = z + 1.0  # noqa: F841


@pytest.mark.parametrize("application", [_exp_twice_plus_one, _exp_twice_plus_one_through_locals],
                         ids=["expression", "locals assigned once"])
def test_an_inner_expanded_output_written_with_a_value_equal_on_its_lanes_runs(application):
    x = torch.randn(3, 5)
    out = torch.empty(3, 5)
    ntsym.make(_expanded_rows, application, (Tensor(2), Tensor(2)))(x, out)
    torch.testing.assert_close(out, torch.exp(x) * 2.0 + 1.0)


def test_an_inner_expanded_output_written_from_a_row_tile_runs():
    def application(x, out):
        out = x - 1.0  # noqa: F841

    x = torch.randn(3, 5)
    out = torch.empty(3, 5)
    ntsym.make(_plain_rows, application, (Tensor(2), Tensor(2)))(x, out)
    torch.testing.assert_close(out, x - 1.0)


def test_an_inner_expanded_output_written_from_a_local_is_refused():
    def application(x, out):
        y = ntl.cumsum(x, 0)
        out = y  # noqa: F841

    with pytest.raises(ntsym.ApplicationError, match="`out` is written through a tile whose dimension 0"):
        ntsym.make(_expanded_rows, application, (Tensor(2), Tensor(2)))


def test_an_inner_expanded_output_written_from_a_local_assigned_twice_or_in_a_loop_is_refused():
    def twice(x, out):
        y = x * 2.0
        y = ntl.cumsum(x, 0)
        out = y  # noqa: F841

    def in_a_loop(x, out):
        y = x * 2.0
        for _ in range(2):
            y += 1.0
        out = y  # noqa: F841

    def through_a_local_assigned_twice(x, out):
        a = x
        y = a * 2.0
        a = ntl.cumsum(x, 0)
        out = y + a  # noqa: F841

    for application in (twice, in_a_loop, through_a_local_assigned_twice):
        with pytest.raises(ntsym.ApplicationError, match="`out` is written through a tile whose dimension 0"):
            ntsym.make(_expanded_rows, application, (Tensor(2), Tensor(2)))


def _scalar_and_expanded_rows(x, n, out):
    written = out.tile((1, 8))
    written.dtype = written.dtype.expand((2, -1))
    return x.tile((1, 8)), n, written


def test_an_inner_expanded_output_written_from_a_rebound_scalar_parameter_is_refused():
    """``n += arange`` leaves ``n`` a value of each lane, and so does ``n =``
    later in a loop whose store reads ``n`` first: its two rows differ, and
    the store would land either."""
    def augmented(x, n, out):
        n += ntl.arange(0, 2)[:, None] * 1.0
        out = x + n  # noqa: F841

    def rebound_later_in_a_loop(x, n, out):
        for _ in range(2):
            out = x + n  # noqa: F841
            n = ntl.arange(0, 2)[:, None] * 1.0

    for application in (augmented, rebound_later_in_a_loop):
        with pytest.raises(ntsym.ApplicationError, match=r"`out` is written through a tile whose dimension 0.*`x \+ n`"):
            ntsym.make(_scalar_and_expanded_rows, application, (Tensor(2), Tensor(0), Tensor(2)))


def test_an_inner_expanded_output_written_from_a_scalar_parameter_runs():
    def application(x, n, out):
        out = x + n  # noqa: F841

    x = torch.randn(3, 5)
    out = torch.empty(3, 5)
    ntsym.make(_scalar_and_expanded_rows, application, (Tensor(2), Tensor(0), Tensor(2)))(x, 1.5, out)
    torch.testing.assert_close(out, x + 1.5)


@pytest.mark.parametrize("value", ["x * 0.0 + ntl.max(x)", "x - x + ntl.sum(x, axis=None)", "x * 0.0 + x.max()"])
def test_an_inner_expanded_output_written_with_a_whole_reduction_runs(value):
    """A reduction over every axis is one value on every lane (the tile
    holds x's row twice, expanded: its sum is twice the row's)."""
    application = application_from(f"def application(x, out):\n    out = {value}  # noqa: F841\n")
    x = torch.randn(3, 5)
    out = torch.empty(3, 5)
    ntsym.make(_expanded_rows, application, (Tensor(2), Tensor(2)))(x, out)
    row = x.amax(1, keepdim=True) if "max" in value else 2 * x.sum(1, keepdim=True)
    torch.testing.assert_close(out, row.expand(3, 5))


def test_an_inner_expanded_output_written_with_a_reduction_along_one_axis_is_refused():
    def application(x, out):
        out = x * 0.0 + ntl.max(x, 1)[:, None]  # noqa: F841

    with pytest.raises(ntsym.ApplicationError, match="`out` is written through a tile whose dimension 0"):
        ntsym.make(_expanded_rows, application, (Tensor(2), Tensor(2)))

