"""The tensors a kernel writes, treated as torch treats the outputs of its
in-place and ``out=`` operations.

- Autograd: a kernel's writes are not recorded by autograd, so a written
  tensor that requires grad while grad mode is on is refused (torch refuses
  ``out=`` arguments that require grad, and in-place writes to leaves that
  do); and every written tensor's version counter is bumped once per call, so
  that a backward that saved one of them before the kernel overwrote it
  raises instead of computing with the new values.
- Overlap: a written tensor whose elements share memory (``as_strided`` with
  overlapping strides) would have several lanes or programs store to one
  address in an unspecified order; it is refused unless its layout is proved
  free of overlap (what torch's in-place operations check).

The per-call work (``note_writes``) is a grad-mode test, an inference-mode
test and one call that bumps the version counters of all written tensors;
the overlap test runs on a call shape's first launch only (it depends on
shapes and strides alone).
"""

from ntsym_codegen.errors import fail

# Layouts the sorted-stride test cannot prove free of overlap are checked
# element by element up to this many elements (a first launch only).
_EXACT_LIMIT = 1 << 24


def note_writes(spec, args, positions):
    """Before a launch: refuse a written tensor autograd would get wrong, or
    an inference tensor outside inference mode (torch refuses to update one
    in place), then bump the version counter of every written one
    (``args[i]`` for ``i`` in ``positions``, the call's written tensors).
    Calls matched by torch's tensor guards are tested too: guards made in
    inference mode pass inference tensors outside it."""
    if _TORCH is None:
        _bind()
    written = [args[i] for i in positions]
    if _TORCH.grad_enabled():
        for i, t in zip(positions, written):
            if t.requires_grad:
                _refuse_grad(spec.call_params[i][0], t)
    for i, t in zip(positions, written):
        if t.is_inference() and not _TORCH.inference_mode():
            fail(f"`{spec.call_params[i][0]}` is an inference tensor, written outside inference mode",
                 "torch refuses to update an inference tensor in place outside torch.inference_mode()",
                 "write a clone of it, or launch inside torch.inference_mode()")
    _TORCH.increment_version(written)


class _Torch:
    """torch's functions that ``note_writes`` calls, bound once: the back end
    imports torch where it runs, not at import, and a warm launch pays for
    no attribute look-ups."""

    def __init__(self):
        import torch

        self.grad_enabled = torch._C.is_grad_enabled
        self.increment_version = torch._C._increment_version
        self.inference_mode = torch.is_inference_mode_enabled


_TORCH = None


def _bind():
    global _TORCH
    _TORCH = _Torch()


def _refuse_grad(name, t):
    if t.is_leaf:
        what, why = "a leaf tensor that requires grad", "torch refuses in-place writes to it"
    elif t._base is not None and t._base.is_leaf and t._base.requires_grad:
        what, why = "a view of a leaf tensor that requires grad", "torch refuses in-place writes to it"
    else:
        what, why = "a tensor that requires grad", (
            "torch refuses it as an `out=` argument, and autograd does not record the kernel's writes, "
            "so its gradient would follow the values it held before")
    fail(f"`{name}` is written by the kernel and is {what}", f"{why} (requires_grad=True while grad mode is on)",
         f"write into a tensor that does not require grad (e.g. {name}.detach() or a new output), or call "
         "the kernel under torch.no_grad()")


def check_written_layout(name, t, overlap=True, dimension="dimension {d}", fix="pass a contiguous tensor"):
    """Refuse a written tensor with an expanded dimension (stride 0), which
    several programs would write, and (``overlap``) one some of whose
    elements share an address (``check_no_overlap``).  ``dimension``: how a
    message names dimension ``d`` (a jagged tensor's values name theirs
    after the batch's); ``fix``: what it suggests."""
    for d, (n, st) in enumerate(zip(t.shape, t.stride())):
        if st == 0 and n > 1:
            fail(f"`{name}` is written by the kernel but {dimension.format(d=d, e=d + 1)} has stride 0 "
                 "(an expanded view)", "several programs would write one element", fix)
    if overlap:
        check_no_overlap(name, t)


def check_no_overlap(name, t):
    """Refuse a written tensor some of whose elements share an address."""
    import torch

    if t.numel() <= 1 or _sorted_strides_disjoint(t.shape, t.stride()):
        return
    if torch._debug_has_internal_overlap(t) == 0:
        return
    if t.numel() <= _EXACT_LIMIT and _offsets_distinct(t):
        return
    fail(f"`{name}` is written by the kernel but its elements overlap in memory",
         f"shape {tuple(t.shape)}, strides {tuple(t.stride())}: several elements share an address, and the "
         "stores to it would race (torch refuses such a tensor in in-place operations too)",
         f"pass a tensor without overlap (e.g. {name}.contiguous() or torch.empty_like({name}))")


def _sorted_strides_disjoint(shape, strides):
    """Whether every element has its own address: with dimensions sorted by
    stride, each stride exceeds the span of the smaller ones."""
    span = 0
    for st, n in sorted((abs(st), n) for n, st in zip(shape, strides) if n > 1):
        if st <= span:
            return False
        span += (n - 1) * st
    return True


def _offsets_distinct(t):
    """Whether the element offsets of ``t``'s layout are all different."""
    import torch

    offsets = torch.zeros((), dtype=torch.int64, device="cpu")
    for d, (n, st) in enumerate(zip(t.shape, t.stride())):
        shape = [1] * t.ndim
        shape[d] = n
        offsets = offsets + (torch.arange(n, dtype=torch.int64, device="cpu") * st).reshape(shape)
    flat = offsets.reshape(-1)
    return torch.unique(flat).numel() == flat.numel()
