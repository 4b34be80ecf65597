"""Running the arrangement on the source tensors: which parameter of the
application each tensor is, and its arranged form.

As in NineToothed, the arrangement's results pair with the application's
parameters in order; a tensor it does not return is still an argument of
the kernel (for its sizes), named after the arrangement's parameter.
"""

import ast
import inspect

from ntsym.errors import ArrangementError
from ntsym.extents import check_inner_extents
from ntsym.tensor import Tensor


def arrange(arrangement, values, app_names, app_def):
    """Run the arrangement on ``values``: each Tensor's parameter name, and
    its arranged form (None for a tensor the arrangement does not return).

    As in NineToothed, the arrangement's results pair with the application's
    parameters in order.  It may return fewer tensors than it takes: the
    others (used for their sizes) are still arguments of the kernel, named
    after the arrangement's parameters."""
    positions = [i for i, v in enumerate(values) if isinstance(v, Tensor)]
    tensors = [values[i] for i in positions]
    names = list(app_names)
    if len(app_names) != len(tensors):
        names = _shape_only_names(arrangement, positions, app_names, app_def)
    for name, tensor in zip(names, tensors):
        if tensor._auto_named:
            tensor._display = name
    try:
        arranged = arrangement(*values)
    except TypeError as e:
        raise ArrangementError(f"calling the arrangement failed: {e}") from e
    if isinstance(arranged, Tensor):
        arranged = (arranged,)
    if not isinstance(arranged, (tuple, list)):
        where = _where(arrangement)
        raise ArrangementError(
            f"the arrangement{where} returned {arranged!r}, not the arranged tensors: end it with "
            f"`return {', '.join(f'{n}_arranged' for n in app_names)}` (one tensor per parameter of the "
            "application, in order)")
    arranged = tuple(arranged)
    if len(arranged) != len(app_names):
        raise ArrangementError(
            f"the arrangement returned {len(arranged)} tensors for the {len(app_names)} "
            f"parameters of the application ({', '.join(app_names)}); they pair in order"
        )
    by_tensor = [None] * len(tensors)
    for position, (name, result) in enumerate(zip(app_names, arranged)):
        if not isinstance(result, Tensor):
            raise ArrangementError(f"the arrangement returned {result!r} for `{name}`, not a Tensor")
        if len(arranged) == len(tensors):
            index = position
            if result.source is not tensors[position]:
                raise ArrangementError(
                    f"the arrangement returned, in the place of `{name}`, a tensor derived from "
                    f"`{result.source.name}`; return the arranged tensors in parameter order"
                )
        else:
            index = next((i for i, t in enumerate(tensors) if t is result.source), None)
            if index is None or by_tensor[index] is not None:
                raise ArrangementError(
                    f"the arrangement returned, for `{name}`, a tensor derived from "
                    f"`{result.source.name}`, which is not one of the tensors given or is returned twice"
                )
            names[index] = name
        if result.level != 0:
            raise ArrangementError(
                f"`{name}`: the arrangement returned an inner level; assign it back with "
                f"`t.dtype = ...` and return the outer tensor"
            )
        check_inner_extents(name, result)
        by_tensor[index] = result
    return names, by_tensor


def _where(fn):
    """`` `name` (file, line n)`` of a function, where known."""
    fn = getattr(fn, "func", fn)  # functools.partial
    code = getattr(fn, "__code__", None)
    if code is None:
        return ""
    return f" `{fn.__name__}` ({code.co_filename}, line {code.co_firstlineno})"


def _shape_only_names(arrangement, positions, app_names, app_def):
    """Names for tensors the arrangement may not return (at ``positions`` of
    its arguments): its own parameter names, unless the application uses the
    name (then ``<name>_shape``)."""
    try:
        params = [p.name for p in inspect.signature(arrangement).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)]
    except (TypeError, ValueError):
        params = []
    used = {n.id for n in ast.walk(app_def) if isinstance(n, ast.Name)} | set(app_names)
    names = []
    for i in positions:
        name = params[i] if i < len(params) and params[i].isidentifier() else f"tensor_{i}"
        while name in used or name in names:
            name += "_shape"
        names.append(name)
    return names

