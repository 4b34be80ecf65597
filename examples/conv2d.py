"""2-D convolution (NCHW, stride 1, no padding) as an implicit GEMM on mm's kernel:
the paper's Listing 8, as written there (``kernel``), and the arrangements of the
same product that ``conv2d()`` runs because they are faster on a GPU.

Input ``(N, C, H, W)``, filter ``(K, C, R, S)``, output ``(N, K, P, Q)`` with
``P = H - R + 1`` and ``Q = W - S + 1``.  Tiling the input by the filter's
``(C, R, S)`` with stride 1 over ``H`` and ``W`` gives, for each output pixel,
the window it reads; flattening turns input, filter and output into matrices of
shapes ``(N*P*Q, C*R*S)``, ``(C*R*S, K)`` and ``(N*P*Q, K)``, which mm's
arrangement and application multiply.  ntsym proves the three matrices fit
together once ``N*(H-R+1)*(W-S+1) == N*P*Q`` (checked at launch, for every
block size) and ``C*R*S`` agrees (the k loop).  Sizes are compile-time
constants (``shape_options``), as in the paper: the index math that gathers the
windows then divides by constants, and each new shape compiles a new kernel.

What ``conv2d()`` runs instead (measured on an H100 against cuDNN, 512 channels,
14x14, 3x3: benchmarks/results/2026-11-25-h100-conv2d.md):

- ``channels_last_kernel``: the window's elements ordered ``(R, S, C)`` instead of
  ``(C, R, S)``, over a channels-last input and filter.  A K tile then reads
  consecutive channels of one filter tap, contiguous in memory, where Listing
  8's K tile gathers elements ``H*W`` apart.  NCHW tensors are copied to
  channels-last first (``to_channels_last``, by ``layout_kernel``).
- ``split_kernel`` / ``channels_last_split_kernel``: where the output has few
  tiles (a small batch: too few programs for the GPU), the channels are split
  into ``G`` groups, each group's implicit GEMM one batch of bmm's arrangement
  writing float32 partial sums, and ``sum_kernel`` adds the ``G`` partials into
  the output: ``G`` times the programs, each with a ``G`` times shorter k loop.
"""

import torch

import ntsym
import ntsym.language as ntl
from examples import bmm, mm
from ntsym import Tensor


def arrangement(input, filter, output):
    input_arranged = input.tile((1, *filter.shape[1:]), strides=(-1, -1, 1, 1))
    input_arranged = input_arranged.squeeze(1)
    input_arranged.dtype = input_arranged.dtype.squeeze(0)
    input_arranged = input_arranged.ravel()
    input_arranged = input_arranged.flatten(end_dim=3).flatten(start_dim=1)

    filter_arranged = filter.flatten(start_dim=1)
    filter_arranged = filter_arranged.permute((1, 0))

    output_arranged = output.permute((0, 2, 3, 1)).flatten(end_dim=3)

    return mm.arrangement(input_arranged, filter_arranged, output_arranged)


shape_options = {"constexpr": True}
tensors = tuple(Tensor(4, shape_options=shape_options) for _ in range(3))

kernel = ntsym.make(arrangement, mm.application, tensors)


def _windows(input, filter, channels_last):
    """The input's windows as a ``(G, N*P*Q, C'*R*S)`` tensor, each window's
    elements in ``(C', R, S)`` order or, for ``channels_last``, ``(R, S, C')``:
    ``input`` is ``(N, G, C', H, W)`` and ``filter`` ``(K, G, C', R, S)``."""
    windows = input.tile((1, 1, *filter.shape[2:]), strides=(-1, -1, -1, 1, 1))
    windows = windows.squeeze(2)
    windows.dtype = windows.dtype.squeeze((0, 1))
    if channels_last:
        windows.dtype = windows.dtype.permute((1, 2, 0))
    windows = windows.ravel()
    windows = windows.permute((1, 0, 2, 3, 4, 5, 6))
    return windows.flatten(start_dim=1, end_dim=4).flatten(start_dim=2)


def _grouped_filter(filter, channels_last):
    """``(K, G, C', R, S)`` as ``(G, C'*R*S, K)``, in the windows' order."""
    order = (1, 3, 4, 2, 0) if channels_last else (1, 2, 3, 4, 0)
    return filter.permute(order).flatten(start_dim=1, end_dim=4)


def _split(input, filter, output, channels_last):
    output_arranged = output.permute((0, 1, 3, 4, 2)).flatten(start_dim=1, end_dim=4)
    return bmm.arrangement(_windows(input, filter, channels_last), _grouped_filter(filter, channels_last),
                           output_arranged)


def split_arrangement(input, filter, output):
    """``input`` ``(N, G, C', H, W)``, ``filter`` ``(K, G, C', R, S)``, ``output``
    ``(G, N, K, P, Q)``: group ``g``'s partial sums in ``output[g]``."""
    return _split(input, filter, output, False)


def channels_last_split_arrangement(input, filter, output):
    """``split_arrangement`` with each window read in ``(R, S, C')`` order."""
    return _split(input, filter, output, True)


def channels_last_arrangement(input, filter, output):
    """Listing 8 with each window read in ``(R, S, C)`` order."""
    input_arranged = input.tile((1, *filter.shape[1:]), strides=(-1, -1, 1, 1))
    input_arranged = input_arranged.squeeze(1)
    input_arranged.dtype = input_arranged.dtype.squeeze(0)
    input_arranged.dtype = input_arranged.dtype.permute((1, 2, 0))
    input_arranged = input_arranged.ravel()
    input_arranged = input_arranged.flatten(end_dim=3).flatten(start_dim=1)

    filter_arranged = filter.permute((0, 2, 3, 1)).flatten(start_dim=1)
    filter_arranged = filter_arranged.permute((1, 0))

    output_arranged = output.permute((0, 2, 3, 1)).flatten(end_dim=3)

    return mm.arrangement(input_arranged, filter_arranged, output_arranged)


def layout_arrangement(input, output, BLOCK_SIZE_C=ntsym.block_size(), BLOCK_SIZE_L=ntsym.block_size()):
    """``input`` and ``output`` ``(N, C, L)`` in different layouts (NCHW and
    channels-last, ``L = H*W``): each program copies a ``(C, L)`` block,
    read along the one layout's contiguous dimension and written along the
    other's (Triton exchanges the elements through shared memory)."""
    input_arranged = input.tile((1, BLOCK_SIZE_C, BLOCK_SIZE_L))
    input_arranged.dtype = input_arranged.dtype.squeeze(0)
    output_arranged = output.tile((1, BLOCK_SIZE_C, BLOCK_SIZE_L))
    output_arranged.dtype = output_arranged.dtype.squeeze(0)
    return input_arranged, output_arranged


def layout_application(input, output):
    output = input  # noqa: F841


def sum_arrangement(partials, output, BLOCK_SIZE=ntsym.block_size()):
    """``partials`` ``(G, L)``, ``output`` ``(L,)``: each program a column block
    of all ``G`` rows."""
    partials_arranged = partials.tile((-1, BLOCK_SIZE))
    partials_arranged = partials_arranged.squeeze(0)
    return partials_arranged, output.tile((BLOCK_SIZE,))


def sum_application(partials, output):
    output = ntl.sum(partials, 0)  # noqa: F841


channels_last_kernel = ntsym.make(channels_last_arrangement, mm.application,
                                  tuple(Tensor(4, shape_options=shape_options) for _ in range(3)))
split_kernel = ntsym.make(split_arrangement, mm.application,
                          tuple(Tensor(5, shape_options=shape_options) for _ in range(3)))
channels_last_split_kernel = ntsym.make(channels_last_split_arrangement, mm.application,
                                        tuple(Tensor(5, shape_options=shape_options) for _ in range(3)))
sum_kernel = ntsym.make(sum_arrangement, sum_application, (Tensor(2, shape_options=(shape_options, {})), Tensor(1)))
layout_kernel = ntsym.make(layout_arrangement, layout_application, (Tensor(3), Tensor(3)))

# Output tiles of this many rows and columns size the split (the tuner's
# usual choice for these shapes); a group's k loop stays this long at least.
_SPLIT_TILE = 128
_SPLIT_MIN_K = 256
_SPLIT_MAX = 8


def split_count(input_shape, filter_shape, multiprocessors=132):
    """How many channel groups ``conv2d`` splits into: the largest power of
    two up to 8 that keeps the output tiles times the groups within the
    multiprocessors, divides the channels and leaves each group a k loop of
    at least 256; 1 (no split) below 4 groups."""
    n, c, h, w = input_shape
    k, _, r, s = filter_shape
    tiles = -(-n * (h - r + 1) * (w - s + 1) // _SPLIT_TILE) * -(-k // _SPLIT_TILE)
    groups = 1
    while (groups < _SPLIT_MAX and tiles * groups * 2 <= multiprocessors and c % (groups * 2) == 0
           and c // (groups * 2) * r * s >= _SPLIT_MIN_K):
        groups *= 2
    return groups if groups >= 4 else 1


_MULTIPROCESSORS = {}  # device -> its multiprocessor count, read once


def _multiprocessors(device):
    if device.type != "cuda":
        return 132
    index = torch.cuda.current_device() if device.index is None else device.index
    count = _MULTIPROCESSORS.get(index)
    if count is None:
        count = _MULTIPROCESSORS[index] = torch.cuda.get_device_properties(index).multi_processor_count
    return count


# From this many bytes an NCHW tensor goes to channels-last through
# layout_kernel; below, torch's copy costs the host less than a launch more.
LAYOUT_KERNEL_BYTES = 8 << 20


def to_channels_last(tensor):
    """``tensor.contiguous(memory_format=torch.channels_last)``; an NCHW-contiguous
    tensor of LAYOUT_KERNEL_BYTES or more is copied by ``layout_kernel`` (on an
    H100, torch's copy of this permutation ran at about a third of its speed)."""
    if tensor.is_contiguous(memory_format=torch.channels_last):
        return tensor
    if not tensor.is_contiguous() or tensor.numel() * tensor.element_size() < LAYOUT_KERNEL_BYTES:
        return tensor.contiguous(memory_format=torch.channels_last)
    n, c, h, w = tensor.shape
    output = torch.empty_like(tensor, memory_format=torch.channels_last)
    layout_kernel(tensor.view(n, c, h * w), output.view(n, c, h * w))
    return output


def _is_channels_last(tensor):
    return not tensor.is_contiguous() and tensor.is_contiguous(memory_format=torch.channels_last)


def conv2d(input, weight, split=None):
    """``F.conv2d(input, weight)`` (stride 1, no padding).  ``split`` channel
    groups (``None``: ``split_count``'s choice; 1: none).  The output is
    channels-last where the input or the filter is, as torch's."""
    n, c, h, w = input.shape
    k, weight_channels, r, s = weight.shape
    if weight_channels != c or r > h or s > w:
        raise ValueError(f"conv2d: a filter {tuple(weight.shape)} does not fit an input {tuple(input.shape)} "
                         "(its channels must be the input's, its height and width at most the input's)")
    if split is None:
        split = split_count(input.shape, weight.shape, _multiprocessors(input.device))
    if split < 1 or c % split:
        raise ValueError(f"conv2d: split={split} must be a positive divisor of the {c} input channels")
    channels_last = _is_channels_last(input)  # how the split path reads
    output_channels_last = channels_last or _is_channels_last(weight)
    memory_format = torch.channels_last if output_channels_last else torch.contiguous_format
    output = torch.empty((n, k, h - r + 1, w - s + 1), dtype=input.dtype, device=input.device,
                         memory_format=memory_format)
    if split == 1:
        channels_last_kernel(to_channels_last(input), to_channels_last(weight), output)
        return output
    # Partial sums laid out as the output is, so that adding them runs over memory in order.
    shape = (split, n, k, h - r + 1, w - s + 1)
    partial_dtype = torch.float64 if input.dtype == torch.float64 else torch.float32  # never narrower than the sums
    if output_channels_last:
        flat = torch.empty((split, n, shape[3], shape[4], k), dtype=partial_dtype, device=input.device)
        partials = flat.permute(0, 1, 4, 2, 3)
        physical = output.permute(0, 2, 3, 1)
    else:
        partials = flat = torch.empty(shape, dtype=partial_dtype, device=input.device)
        physical = output
    kernel = channels_last_split_kernel if channels_last else split_kernel
    weight = to_channels_last(weight) if channels_last else weight.contiguous()
    kernel(input.unflatten(1, (split, c // split)), weight.unflatten(1, (split, c // split)), partials)
    sum_kernel(flat.view(split, -1), physical.view(-1))
    return output


if __name__ == "__main__":
    from examples._common import device, report

    if device() == "cuda":
        input_shape, filter_shape, dtype = (4, 512, 14, 14), (512, 512, 3, 3), torch.float16
    else:
        input_shape, filter_shape, dtype = (2, 6, 9, 10), (8, 6, 3, 2), torch.float32
    x = torch.randn(input_shape, device=device(), dtype=dtype)
    w = torch.randn(filter_shape, device=device(), dtype=dtype)
    def reference():
        return torch.nn.functional.conv2d(x, w)

    report("conv2d", conv2d(x, w), reference(), 1e-2, 1e-2, lambda: conv2d(x, w), reference)
