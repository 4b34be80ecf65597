"""Launches through Triton's interpreter, with the element types it cannot
compute in staged through float32 copies."""


def _staged_dtypes():
    import torch

    return {torch.bfloat16} | {getattr(torch, n) for n in ("float8_e4m3fn", "float8_e5m2") if hasattr(torch, n)}


def interpret(kernel, grid, args, kwargs, spec):
    """Run under Triton's interpreter, which computes bfloat16 arithmetic
    wrongly (silently) and cannot load fp8 (masked loads fail): such tensors
    are given to it as float32 copies with the same strides, and the ones the
    kernel writes are copied back (rounded, as a GPU stores float32 results)."""
    import torch

    staged_dtypes = _staged_dtypes()
    if not any(isinstance(a, torch.Tensor) and a.dtype in staged_dtypes for a in args):
        kernel[grid](*args, **kwargs)
        return
    names = [p.name for p in spec.params if not (p.kind == "constexpr" and p.value is not None) and p.kind != "shape"]
    staged, bases, written = list(args), {}, set()
    for i, a in enumerate(args):
        if isinstance(a, torch.Tensor) and a.dtype in staged_dtypes:
            # Stage the whole storage once, so views (expanded, overlapping,
            # aliased between arguments) keep their exact layout.
            storage = a.untyped_storage()
            key = storage.data_ptr()
            if key not in bases:
                flat = torch.empty(0, dtype=a.dtype, device=a.device).set_(storage)
                bases[key] = (flat, flat.float())
            staged[i] = bases[key][1].as_strided(a.size(), a.stride(), a.storage_offset())
            if i < len(names) and names[i] in spec.written:
                written.add(key)
    kernel[grid](*staged, **kwargs)
    for key in written:
        flat, base = bases[key]
        flat.copy_(base)
