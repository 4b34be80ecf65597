"""A store to a tile chosen by data (``output[row] = v``, ``row`` read from a
tensor or the program's id) is a scatter, as ``output.source[...] = v`` is:
programs that write different tiles of an output arranged whole for each
of them are not refused for the arrangement's overlap.  A tile chosen by
index math stays under the overlap rule, and a scatter into a tensor that
is also read keeps the data-race refusal.  The first case is NineToothed's
own ``test_squeezing_the_innermost_level``, at a small size."""

import pytest
import torch

import ntsym
import ntsym.language as ntl
from ntsym import Tensor
from tests.sources import application_from

CONSTANT = {"constexpr": True}


def _rows(input, output):
    input_arranged = input.tile((1, -1)).squeeze(1)
    input_arranged.dtype = input_arranged.dtype.squeeze(0)
    output_arranged = output.tile((1, -1)).tile((-1, -1)).squeeze(0).expand((input_arranged.shape[0],))
    output_arranged.dtype = output_arranged.dtype.squeeze(1)
    output_arranged.dtype.dtype = output_arranged.dtype.dtype.squeeze(0)
    return input_arranged, output_arranged


def _indexed_rows(input, indices, output):
    input_arranged, output_arranged = _rows(input, output)
    return input_arranged, indices.tile((1,)), output_arranged


def test_rows_stored_at_indices_read_from_a_tensor():
    def application(input, index, output):
        row = index
        output[row] = input

    kernel = ntsym.make(_indexed_rows, application, (Tensor(2, shape_options=CONSTANT),
                                                      Tensor(1, shape_options=CONSTANT), Tensor(2, shape_options=CONSTANT)))
    input, indices, output = torch.randn(3, 4), torch.tensor([5, 0, 2]), torch.zeros(6, 4)
    expected = output.clone()
    expected[indices] = input
    kernel(input, indices, output)
    torch.testing.assert_close(output, expected)


def _at_the_program_s_id_named(input, output):
    pid = ntl.program_id(0)
    output[pid] = input * 2


def _at_the_program_s_id(input, output):
    output[ntl.program_id(0)] = input * 2  # as NineToothed runs it


@pytest.mark.parametrize("application", [_at_the_program_s_id_named, _at_the_program_s_id])
def test_rows_stored_at_the_program_s_id(application):

    kernel = ntsym.make(_rows, application, (Tensor(2, shape_options=CONSTANT), Tensor(2, shape_options=CONSTANT)))
    input, output = torch.randn(4, 6), torch.zeros(4, 6)
    kernel(input, output)
    torch.testing.assert_close(output, 2 * input)


@pytest.mark.parametrize("row", ["row = 0", "row = input.shape[0] - 1", "row = min(0, 1)",
                                 "row = 0 if input.shape[0] > 0 else 1",
                                 "row = ntl.program_id(0)\n    row = 0",
                                 "row = 0\n    if input.shape[0] > 100:\n        row = ntl.program_id(0)"])
def test_a_tile_chosen_by_index_math_on_an_output_every_program_has_is_refused(row):
    """Every program writes the same tile: the overlap rule refuses it.  A
    local is data only where assigned once, in the body, from a value."""
    application = application_from("def application(input, output):\n"
                                   f"    {row}\n"
                                   "    output[row] = input  # noqa: F841\n")
    kernel = ntsym.make(_rows, application, (Tensor(2, shape_options=CONSTANT), Tensor(2, shape_options=CONSTANT)))
    with pytest.raises(ntsym.LaunchError, match="overlap across the programs"):
        kernel(torch.randn(3, 4), torch.zeros(3, 4))


def test_a_tile_chosen_by_data_of_an_output_also_read_is_refused():
    """A program may read a row another program scatters into."""
    def application(input, index, output):
        row = index
        output[row] = input + output[0]

    with pytest.raises(ntsym.NtsymError, match=r"`output` is scattered into .* and read through its tiles"):
        kernel = ntsym.make(_indexed_rows, application, (Tensor(2, shape_options=CONSTANT),
                                                          Tensor(1, shape_options=CONSTANT),
                                                          Tensor(2, shape_options=CONSTANT)))
        kernel(torch.randn(3, 4), torch.tensor([1, 0, 2]), torch.zeros(3, 4))
