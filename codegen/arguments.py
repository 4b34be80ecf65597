"""Where each parameter of the generated kernel takes its value from: one
classification that every launcher writer prints (the torch launcher's
module, the standalone module, the C launcher's variants), so that they
cannot disagree on what a parameter is."""

from dataclasses import dataclass

# The sources, in the order a name is matched against them.
SOURCES = (
    "tensor",      # a tensor's data pointer; detail: the tensor parameter
    "fixed",       # a compile-time value fixed at make(); detail: the value
    "scalar",      # a number the call passes; detail: the parameter
    "constexpr",   # a compile-time value the call passes; detail: the parameter
    "parameter",   # another parameter the call passes by name (a jagged tensor's offsets)
    "size",        # a size or stride read from a tensor; detail: the SizeArg
    "pow2",        # a padded power-of-two block; detail: the size it pads
    "whole",       # a peeled loop's flag; detail: (size, block), true where size % block == 0
    "contiguous",  # a tensor's contiguity flag; detail: the tensor's name
    "int64",       # 64-bit index math
    "advance",     # loops carry pointers
    "meta",        # a block size of the configuration
    "unknown",     # none of the above: a launcher that must compute it refuses the kernel
)


@dataclass(frozen=True)
class KernelArgument:
    """One parameter of the ``@triton.jit`` kernel, in the kernel's order."""

    name: str
    constexpr: bool
    source: str  # one of SOURCES
    detail: object = None


def kernel_arguments(ir, kernel_args, flags):
    """The kernel's parameters (``kernel_args``: (name, constexpr), in order)
    classified by where their values come from; ``flags``: the emitter's
    ``ModuleFlags``."""
    by_name = {p.name: p for p in ir.params}
    sizes = {a.symbol.name: a for a in ir.size_args}
    pow2 = {s.name: n for n, s in flags.pow2.items()}
    contig = {flag: tensor for tensor, flag in flags.contiguity_flags.items()}
    metas = {m.symbol.name for m in ir.meta_params}
    out = []
    for name, constexpr in kernel_args:
        source, detail = _source(name, by_name, sizes, pow2, flags, contig, metas)
        out.append(KernelArgument(name, constexpr, source, detail))
    return tuple(out)


def _source(name, by_name, sizes, pow2, flags, contig, metas):
    tensor = by_name.get(name[:-4]) if name.endswith("_ptr") else None
    if tensor is not None and tensor.kind == "tensor":
        return "tensor", tensor
    p = by_name.get(name)
    if p is not None:
        if p.kind == "constexpr":
            return ("fixed", p.value) if p.value is not None else ("constexpr", p)
        return ("scalar", p) if p.kind == "scalar" else ("parameter", p)
    if name in sizes:
        return "size", sizes[name]
    if name in pow2:
        return "pow2", pow2[name]
    if name in flags.whole:
        return "whole", flags.whole[name]
    if name in contig:
        return "contiguous", contig[name]
    if name == flags.int64_flag:
        return "int64", None
    if name == flags.advance_flag:
        return "advance", None
    if name in metas:
        return "meta", None
    return "unknown", None
