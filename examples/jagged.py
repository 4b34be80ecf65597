"""Jagged tensors: batches of sequences of different lengths, ``(B, j, D)``.

Two kernels over ``Tensor(3, jagged_dim=1)`` parameters, launched with
``torch.nested`` tensors of the jagged layout or with packed rows,
``ntsym.jagged(values, offsets)`` (values ``(total, D)``, ``B + 1`` offsets):

- ``add``: element-wise addition.  One program per ``(sequence, block of
  rows, block of columns)``; the grid runs over the longest sequence, and a
  program whose block lies past its own sequence's end returns at once.
- ``sequence_softmax``: the softmax of each sequence over its rows (for every
  column), as attention pooling needs.  One program per ``(sequence, block of
  columns)`` loops over the sequence's row blocks twice (an online max and
  sum, then the normalised output); the loop bound is that sequence's own
  block count, read from its offsets.

Every mask against the ragged length uses the program's own sequence length
(``explain()`` lists them); the offsets are checked at launch.  See
docs/jagged.md.
"""

import torch

import ntsym
import ntsym.language as ntl
from ntsym import Tensor


def add_arrangement(input, other, output, BLOCK_SIZE_J=ntsym.block_size(), BLOCK_SIZE_D=ntsym.block_size()):
    def arrange(x):
        return x.tile((1, BLOCK_SIZE_J, BLOCK_SIZE_D))

    return arrange(input), arrange(other), arrange(output)


def add_application(input, other, output):
    output = input + other  # noqa: F841


add_kernel = ntsym.make(add_arrangement, add_application, tuple(Tensor(3, jagged_dim=1) for _ in range(3)))


def add(input, other):
    """``input + other`` for two nested tensors (jagged layout) of one layout."""
    values = torch.empty_like(input.values())
    output = torch.nested.nested_tensor_from_jagged(values, input.offsets())
    add_kernel(input, other, output)
    return output


def softmax_arrangement(input, output, BLOCK_SIZE_J=ntsym.block_size(), BLOCK_SIZE_D=ntsym.block_size()):
    def arrange(x):
        arranged = x.tile((1, BLOCK_SIZE_J, BLOCK_SIZE_D))  # (B, rows / BJ, D / BD) of (1, BJ, BD)
        arranged.dtype = arranged.dtype.squeeze(0)
        arranged = arranged.tile((1, -1, 1))  # one program per (sequence, column block)
        arranged.dtype = arranged.dtype.squeeze((0, 2))  # its row blocks, to loop over
        return arranged

    return arrange(input), arrange(output)


def softmax_application(input, output):
    m = ntl.full((input[0].shape[1],), float("-inf"), dtype=ntl.float32)
    l = ntl.zeros((input[0].shape[1],), dtype=ntl.float32)
    for i in range(input.shape[0]):  # this sequence's row blocks
        x = ntl.cast(input[i], ntl.float32)
        m_new = ntl.maximum(m, ntl.max(x, 0))
        l = l * ntl.exp(m - m_new) + ntl.sum(ntl.exp(x - m_new[None, :]), 0)
        m = m_new
    for i in range(input.shape[0]):
        output[i] = ntl.exp(ntl.cast(input[i], ntl.float32) - m[None, :]) / l[None, :]


softmax_kernel = ntsym.make(
    softmax_arrangement, softmax_application,
    (Tensor(3, jagged_dim=1, other=float("-inf")), Tensor(3, jagged_dim=1)),
)


def sequence_softmax(input):
    """The softmax of each sequence of ``input`` (a nested tensor of the
    jagged layout, ``(B, j, D)``) over its rows."""
    values = torch.empty_like(input.values())
    output = torch.nested.nested_tensor_from_jagged(values, input.offsets())
    softmax_kernel(input, output)
    return output


def _nested(lengths, d, dtype, device):
    sequences = [torch.randn(n, d, dtype=dtype, device=device) for n in lengths]
    return torch.nested.nested_tensor(sequences, layout=torch.jagged)


if __name__ == "__main__":
    import random

    from examples._common import device, report

    random.seed(0)
    lengths = [random.randint(1, 2048 if device() == "cuda" else 40) for _ in range(16 if device() == "cuda" else 4)]
    d = 512 if device() == "cuda" else 24
    dtype = torch.float16 if device() == "cuda" else torch.float32
    x = _nested(lengths, d, dtype, device())
    y = torch.nested.nested_tensor_from_jagged(torch.randn_like(x.values()), x.offsets())
    report("jagged add", add(x, y).values(), x.values() + y.values(), 1e-6, 1e-6,
           lambda: add(x, y), lambda: x.values() + y.values())

    def reference():
        return torch.cat([torch.softmax(s.float(), 0).to(dtype) for s in x.unbind()])

    report("jagged sequence softmax", sequence_softmax(x).values(), reference(), 1e-3, 1e-3,
           lambda: sequence_softmax(x), reference)
