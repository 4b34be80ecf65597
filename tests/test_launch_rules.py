"""Programs NineToothed runs correctly are launched, not refused: a refusal is
right only where the program, at the sizes given, would compute a wrong
result.  Each test is written from the construct, at tiny sizes, and
compares with torch."""

import torch

import ntsym
from ntsym import Tensor


# -- a tensor the kernel never reads or writes --------------------------------


def _masked_add(x, m, with_mask, out):
    if with_mask:
        out = x + m  # noqa: F841
    else:
        out = x * 2  # noqa: F841


def _masked_add_arrangement(x, m, with_mask, out, BLOCK=ntsym.block_size()):
    return x.tile((BLOCK,)), m.tile((BLOCK,)), with_mask, out.tile((BLOCK,))


def _masked_add_kernel(with_mask):
    tensors = (Tensor(1), Tensor(1), Tensor(0, constexpr=True, value=with_mask), Tensor(1))
    return ntsym.make(_masked_add_arrangement, _masked_add, tensors)


def test_a_tensor_behind_a_branch_compiled_away_may_be_on_meta():
    kernel = _masked_add_kernel(False)
    x = torch.randn(10)
    for _ in range(2):  # the first launch validates; the second takes the fast path
        out = torch.empty(10)
        kernel(x, torch.empty(10, device="meta"), out, BLOCK=32)
        torch.testing.assert_close(out, x * 2)
    assert "m_ptr +" not in kernel.kernel_source  # the mask is never loaded


def test_the_branch_taken_reads_the_tensor():
    kernel = _masked_add_kernel(True)
    x, m, out = torch.randn(10), torch.randn(10), torch.empty(10)
    kernel(x, m, out, BLOCK=32)
    torch.testing.assert_close(out, x + m)


# -- plain values among `tensors` ----------------------------------------------


def _window(input, output, window, BLOCK=ntsym.block_size()):
    return input[window].tile((BLOCK, BLOCK)), output.tile((BLOCK, BLOCK))


def _doubled(input, output):
    output = input * 2  # noqa: F841


def test_a_tuple_of_slices_among_the_tensors_goes_to_the_arrangement():
    window = (slice(0, 8), slice(2, 9))
    kernel = ntsym.make(_window, _doubled, (Tensor(2), Tensor(2), window))
    x = torch.randn(8, 11)
    out = torch.empty(8, 7)
    kernel(x, out, BLOCK=32)  # the launcher takes the tensors only, as NineToothed's
    torch.testing.assert_close(out, x[window] * 2)
