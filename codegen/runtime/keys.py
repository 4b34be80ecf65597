"""The key a validated call is remembered under: what its validation and
configuration depend on, except the data pointers."""

from ntsym_codegen.counters import hashable as _hashable
from ntsym_codegen.errors import fail
from ntsym_codegen.runtime.checks import _call_types
from ntsym_codegen.tracing import is_fake


def call_key(args, metas, options, constexprs=()):
    """What a call's validation and configuration depend on, except the data
    pointers: shapes, strides, dtypes, devices, scalar types, given constexprs
    (by value: the argument positions ``constexprs``, which select the
    compiled kernel and so its tuned configuration).  None for a call traced
    with fake tensors (it is not remembered)."""
    key = [tuple(_hashable(args[i]) for i in constexprs if i < len(args))] if constexprs else []
    try:
        return _call_key(key, args, metas, options)
    except RuntimeError:
        refuse_transformed(args)
        raise


def _call_key(key, args, metas, options):
    tensor_type, strided = _call_types()[2:]
    for a in args:
        if type(a) is tensor_type and not a.is_nested and a.layout is strided:  # the common case first
            key.append((a.shape, a.stride(), a.dtype, a.device, a.data_ptr() % 16, a.is_neg()))
            continue
        try:
            shape = getattr(a, "shape", None)
            if shape is not None and getattr(a, "layout", strided) is not strided:
                shape = None  # sparse: no strides, no data pointer; check_arguments refuses it
        except RuntimeError:  # a nested tensor of the strided layout: check_arguments refuses it
            key.append(type(a))
            continue
        if shape is not None and hasattr(a, "stride"):
            if type(a) is not tensor_type and is_fake(a):
                return None
            neg = getattr(a, "is_neg", None)
            key.append((shape, a.stride(), a.dtype, a.device, a.data_ptr() % 16, neg() if neg else False))
        else:
            key.append(type(a))
    key.append(metas)
    if options:
        key.append(tuple(sorted(options.items())))
    return tuple(key)


def refuse_transformed(args):
    """Refuse tensors of a ``torch.func`` transform (``vmap``'s batched
    tensors, ``grad``'s wrapped ones): they have no memory a kernel could
    read, and the kernel has no batching or differentiation rule."""
    import torch

    wrapped = getattr(torch._C._functorch, "is_functorch_wrapped_tensor", None)
    batched = getattr(torch._C._functorch, "is_batchedtensor", None)
    for a in args:
        if isinstance(a, torch.Tensor) and wrapped is not None and wrapped(a):
            what = "torch.vmap" if batched is not None and batched(a) else "a torch.func transform (grad, jvp, vmap)"
            fail(f"a kernel was called on a tensor inside {what}",
                 "ntsym kernels do not support torch.func transforms (the tensor has no memory of its own to "
                 "launch on)", "call the kernel outside the transform, e.g. on the whole batch, with the batch "
                 "as a dimension of the arrangement")
