"""Launches through Triton's interpreter, with the element types it cannot
compute in staged through float32 copies."""


def _staged_dtypes():
    import torch

    return {torch.bfloat16} | {getattr(torch, n) for n in ("float8_e4m3fn", "float8_e5m2") if hasattr(torch, n)}


def interpret(kernel, grid, args, kwargs, spec):
    """Run under Triton's interpreter, which computes bfloat16 arithmetic
    wrongly (silently) and cannot load fp8 (masked loads fail): such tensors
    are given to it as float32 copies with the same strides, one per storage
    and element type, and the elements the kernel changed in them are copied
    back (rounded, as a GPU stores float32 results)."""
    import torch

    staged_dtypes = _staged_dtypes()
    if not any(isinstance(a, torch.Tensor) and a.dtype in staged_dtypes for a in args):
        kernel[grid](*args, **kwargs)
        return
    names = [p.name for p in spec.params if not (p.kind == "constexpr" and p.value is not None) and p.kind != "shape"]
    staged, bases, written = list(args), {}, {}
    for i, a in enumerate(args):
        if isinstance(a, torch.Tensor) and a.dtype in staged_dtypes:
            # Stage the whole storage once per element type, so views
            # (expanded, overlapping, aliased between arguments) keep their
            # exact layout; views of another type read it apart.
            storage = a.untyped_storage()
            key = (storage.data_ptr(), a.dtype)
            if key not in bases:
                flat = torch.empty(0, dtype=a.dtype, device=a.device).set_(storage)
                bases[key] = (flat, flat.float())
            staged[i] = bases[key][1].as_strided(a.size(), a.stride(), a.storage_offset())
            if i < len(names) and names[i] in spec.written and key not in written:
                written[key] = bases[key][1].clone()
    kernel[grid](*staged, **kwargs)
    # Only the elements the kernel changed go back (bit for bit): the rest of
    # the storage may hold what it wrote through a tensor of another type.
    for key, before in written.items():
        flat, after = bases[key]
        changed = after.view(torch.int32) != before.view(torch.int32)
        flat[changed] = after[changed].to(flat.dtype)
