"""The persistent variant of a kernel at run time: whether a call's tensors
allow tensor descriptors (the tensor memory accelerator's rules), how many
programs it runs, and the scratch allocator its descriptors need."""

import functools

from ntsym_codegen import triton_compat
from ntsym_codegen.tuning import space


# Element types the tensor memory accelerator moves (by torch name).
TMA_DTYPES = {"float16", "bfloat16", "float32", "float64", "int8", "uint8", "int16", "int32", "int64",
              "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"}


def tma_ready(tiles):
    """Whether every (name, tensor, block shape) in ``tiles`` meets the rules
    of the tensor memory accelerator (see ``tma_problem``)."""
    return tma_problem(tiles) is None


def tma_problem(tiles):
    """Why some (name, tensor, block shape) in ``tiles`` cannot go through a
    tensor descriptor, or None: the rules are a 16-byte aligned base, unit
    inner stride, the other strides positive multiples of 16 bytes, sizes
    below 2**31, power-of-two block dimensions of at most 256 with at least
    16 bytes innermost.  A tile may carry a fourth item, True where the
    kernel can read it with the last two dimensions swapped: then a tensor
    whose next-to-last dimension is the contiguous one is checked as that
    transposed view (see ``transposed``)."""
    for name, tensor, block, *swappable in tiles:
        if swappable and swappable[0] and transposed(tensor):
            tensor = tensor.transpose(-1, -2)
            block = tuple(block[:-2]) + (block[-1], block[-2])
        size = tensor.element_size()
        where = f"`{name}` ({tuple(tensor.shape)}, strides {tuple(tensor.stride())}, {tensor.dtype})"
        if str(tensor.dtype).replace("torch.", "") not in TMA_DTYPES:
            return f"{where}: the dtype is not one the hardware moves"
        if tensor.data_ptr() % 16:
            return f"{where}: its data is not 16-byte aligned (address % 16 = {tensor.data_ptr() % 16})"
        if tensor.stride(-1) != 1:
            return f"{where}: its last dimension is not contiguous (stride {tensor.stride(-1)})"
        for d, stride in enumerate(tensor.stride()[:-1]):
            if stride <= 0 or stride * size % 16 or stride * size >= 2**40:
                return f"{where}: the stride of dimension {d} is {stride * size} bytes, not a positive multiple of 16"
        if any(n >= 2**31 for n in tensor.shape):
            return f"{where}: a size is 2**31 or more"
        if any(b < 1 or b > 256 or b & (b - 1) for b in block):
            return f"{where}: block shape {tuple(block)} has a dimension that is not a power of two up to 256"
        if block[-1] * size < 16:
            return f"{where}: block shape {tuple(block)} has {block[-1] * size} bytes innermost, fewer than 16"
    return None


def transposed(tensor):
    """Whether a tensor descriptor reads ``tensor`` with its last two
    dimensions swapped: the last is not the contiguous one."""
    return tensor.dim() >= 2 and tensor.stride(-1) != 1


class Persistent:
    """The tensor-descriptor variant of a kernel, for one call: ``kernel``
    takes the plain kernel's arguments, then ``extra``, then the tile count;
    ``problem(meta)`` says why the tensors do not allow it with those block
    sizes (None: they do); ``derived`` as the plain kernel's, for its own
    compile-time parameters; ``flags``: compile-time flag -> the tensor whose
    descriptor reads its last two dimensions swapped where it is set;
    ``per_tile``: it runs one program per tile (a tile's work is not one loop
    streaming tiles), else one per multiprocessor, each walking tiles."""

    def __init__(self, kernel, problem, extra, derived, flags=None, per_tile=False):
        self.kernel = kernel
        self.problem = problem  # meta -> None, or why the tensors do not allow it
        self.extra = tuple(extra)
        self.derived = derived
        self.flags = {flag: transposed(t) for flag, t in (flags or {}).items()}
        self.per_tile = per_tile

    def ready(self, meta):
        return self.problem(meta) is None

    def usable(self, spec, tensors, int64):
        """Whether it may run at all here: 32-bit index math, and on a GPU,
        one with a tensor memory accelerator (compute capability 9.0 or newer)."""
        if int64:
            return False
        if spec.interpreting:
            return True
        return _capability(tensors[0].device) >= (9, 0) if tensors else False

    def parts(self, config, grid, args, int64, spec, device):
        """(kernel, grid, arguments, keyword arguments) of a launch."""
        tiles = config.grid(grid)[0]
        programs = tiles if self.per_tile else min(tiles, persistent_programs(device, spec))
        if not spec.interpreting:
            ensure_allocator()
        kwargs = config.kwargs(self.derived, int64, spec)
        if self.flags:
            kwargs = {**kwargs, **self.flags}  # the config's own dict is cached
        return self.kernel, (programs,), tuple(args) + self.extra + (tiles,), kwargs


@functools.lru_cache(maxsize=None)
def _capability(device):
    import torch

    return torch.cuda.get_device_capability(device) if device.type == "cuda" else (0, 0)


# Programs of a persistent kernel in the interpreter: a few, so that each walks several tiles.
INTERPRETER_PROGRAMS = 3


def persistent_programs(device, spec):
    """How many programs a persistent kernel runs: one per multiprocessor."""
    if spec.interpreting or device < 0:
        return INTERPRETER_PROGRAMS
    return space.multiprocessors(device)


def _allocate(size, alignment, stream):
    import torch

    return torch.empty(size, dtype=torch.int8, device="cuda")


def ensure_allocator():
    """Tensor descriptors made on the device need scratch memory, which Triton
    takes from the allocator given to ``triton.set_allocator``; where none is
    set (in this thread's context), one that allocates torch tensors is."""
    if not triton_compat.allocator_set():
        triton_compat.set_allocator(_allocate)
