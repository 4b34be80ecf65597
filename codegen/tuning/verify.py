"""The tensor-descriptor variant checked against the plain kernel before the
tuner chooses it.

The variant reads (and may write) its tiles through the tensor memory
accelerator, a part of Triton that compiles the same program along another
path: on an H100 with Triton 3.6, a sdpa application whose query tile was
selected by the scale's sign (``where(scale < 0, -q, q)``) and whose scale
moved into the exponent computed errors of 0.2-0.9 through the variant, at
several block shapes, and right results through the plain kernel
(2026-11-28, ``benchmarks/lab/sdpa_fold.py``).  ntsym cannot prove the
compiler right, so the tuner checks: where its fastest configuration is the
variant, the variant's results on the call's own tensors are compared with
the plain kernel's, and a variant that disagrees is not chosen (with a
warning naming the tensor and the difference)."""

import logging

logger = logging.getLogger("ntsym")


# How far a result may move between the two kernels: their tiles may differ
# (block sizes, warps), which reorders floating-point sums; measured against
# the largest magnitude of the plain kernel's result where either kernel wrote
# (elements neither wrote hold what they held before: left out, however large).
# The narrowest float type among the call's tensors decides (float16 inputs
# summed into a float32 output move by their own precision).
TOLERANCE = {"float64": 1e-9, "float32": 1e-4}
NARROW_FLOAT_TOLERANCE = 2e-2  # 16-bit and 8-bit floats: a few units in the last place


def tolerance(dtypes):
    """The tolerance of the narrowest float type among ``dtypes``."""
    tolerances = [TOLERANCE.get(str(d).replace("torch.", ""), NARROW_FLOAT_TOLERANCE)
                  for d in dtypes if d.is_floating_point]
    return max(tolerances, default=0.0)


def difference(outputs, reference, names, before=None, dtypes=()):
    """Why ``outputs`` (the written tensors after the variant ran) disagree
    with ``reference`` (the same after the plain kernel ran), or None.
    ``before``: what they held before either ran (the elements neither kernel
    wrote are left out of the comparison's scale); ``dtypes``: the call's
    other tensors' types (see ``tolerance``)."""
    import torch

    for i, (name, out, ref) in enumerate(zip(names, outputs, reference)):
        if out.dtype.is_floating_point:
            wide = torch.promote_types(out.dtype, torch.float32)  # exact for every narrower float
            a, b = out.to(wide), ref.to(wide)
            if not torch.equal(torch.isnan(a), torch.isnan(b)):
                return f"`{name}` holds NaN where the plain kernel's does not, or the other way"
            finite = torch.isfinite(b)
            if not torch.equal(a[~finite & ~torch.isnan(b)], b[~finite & ~torch.isnan(b)]):
                return f"`{name}` differs from the plain kernel's where that one is infinite"
            if not torch.equal(torch.isfinite(a), finite):
                return f"`{name}` is infinite where the plain kernel's is finite"
            if before is not None:
                old = before[i].to(wide)
                finite &= (a != old) | (b != old)  # written by either kernel
            if finite.any():
                scale = b[finite].abs().max().item()
                err = (a[finite] - b[finite]).abs().max().item()
                if err > tolerance((out.dtype, *dtypes)) * scale:
                    return f"`{name}` differs by {err:.3g} where the plain kernel's largest magnitude is {scale:.3g}"
        elif not torch.equal(out, ref):
            return f"`{name}` differs from the plain kernel's"
    return None


def verified(spec, ranked, run, restore, outputs, names, plain_like, dtypes=()):
    """``ranked`` (configurations, fastest first) without the variant's that
    disagree with the plain kernel, checked from the front until the first
    that is plain or agrees.  ``run(config)`` gives a function that launches
    it once; ``restore()`` puts back what the call's written tensors held;
    ``outputs`` are those tensors (``names`` theirs); ``plain_like(config)``
    is the plain configuration to compare a variant with where none of
    ``ranked`` is plain; ``dtypes``: the element types of the call's tensors."""
    ranked = list(ranked)
    if not outputs or not ranked or not ranked[0].persistent:
        return ranked
    reference = None
    try:
        while ranked and ranked[0].persistent:
            config = ranked[0]
            if reference is None:
                plain = next((c for c in ranked if not c.persistent), None) or plain_like(config)
                restore()
                before = [t.clone() for t in outputs]
                try:
                    run(plain)()
                except Exception as e:  # nothing to compare with: the variant is all that runs
                    logger.warning("ntsym: %s: the plain kernel at %s failed (%s): the tensor-descriptor variant "
                                   "is not checked", spec.name, plain, e)
                    return ranked
                reference = [t.clone() for t in outputs]
            restore()
            run(config)()
            why = difference(outputs, reference, names, before, dtypes)
            if why is None:
                break
            logger.warning("ntsym: %s: the tensor-descriptor variant at %s disagrees with the plain kernel (%s): "
                           "not used", spec.name, config, why)
            ranked = ranked[1:]
    finally:
        restore()
    return ranked
