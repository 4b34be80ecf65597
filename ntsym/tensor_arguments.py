"""Checks and normal forms of ``Tensor``'s constructor arguments (``ntsym/tensor.py``)."""

from ntsym.errors import MetaOperationError


def check_jagged(jagged_dim, ndim, shape, strides):
    """``Tensor(ndim, jagged_dim=d)``: a batch of sequences (dimension 0) whose
    dimension ``d`` has a length of its own per batch element, launched with
    a ``torch.nested`` tensor of the jagged layout or ``ntsym.jagged(values,
    offsets)`` (see docs/jagged.md)."""
    if not isinstance(jagged_dim, int) or isinstance(jagged_dim, bool):
        raise MetaOperationError(f"jagged_dim must be an int, got {jagged_dim!r}")
    if ndim is None or ndim < 2:
        raise MetaOperationError(
            f"a jagged tensor needs at least 2 dimensions (the batch, then the ragged one), got ndim={ndim}")
    if not 1 <= jagged_dim < ndim:
        raise MetaOperationError(
            f"jagged_dim={jagged_dim} must name a dimension after the batch dimension 0 "
            f"(1..{ndim - 1}), as torch.nested's jagged layout does")
    if shape is not None and any(shape[d] is not None for d in (0, jagged_dim)):
        raise MetaOperationError(
            f"a jagged tensor's batch size (dimension 0) and ragged length (dimension {jagged_dim}) "
            "come from its offsets at launch: leave them None in shape")
    if strides is not None:
        raise MetaOperationError("a jagged tensor's strides come from its values at launch: do not give strides")


def shape_options_per_dim(options, ndim):
    """``shape_options`` as one dict per dimension (one dict given: the same for each)."""
    if options is None:
        return [{} for _ in range(ndim)]
    if isinstance(options, dict):
        return [dict(options) for _ in range(ndim)]
    options = list(options)
    if len(options) != ndim:
        raise MetaOperationError(f"shape_options has {len(options)} entries for {ndim} dimensions")
    return [dict(o or {}) for o in options]
