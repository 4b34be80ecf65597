"""Direct launch: the binary a validated call shape compiled to, launched
without Triton's per-call argument binding and cache lookup."""

import os

from ntsym_codegen import triton_compat
from ntsym_codegen.counters import hashable


# NTSYM_DIRECT_LAUNCH=0: every launch goes through Triton's JIT (``kernel[grid](...)``).
_DIRECT_OFF = os.environ.get("NTSYM_DIRECT_LAUNCH", "") == "0"


class _Direct:
    """The binary a validated call shape compiled to, launched without Triton's
    per-call argument binding and cache lookup (what ``JITFunction.run`` does
    after them, done here).  Valid while what Triton specializes on stays the
    same: pointer alignment, sizes and strides (all in the call key) and the
    values in ``guard``: constexpr parameters by value, integer arguments by
    the facts Triton specializes them on."""

    __slots__ = ("compiled", "constexprs", "guard", "knobs", "driver", "grid", "launch", "prefix", "chain",
                 "device_getter")

    def __init__(self, compiled, constexprs, guard, grid):
        self.compiled = compiled
        self.constexprs = constexprs  # values of the parameters passed by keyword, in order
        self.guard = guard  # ((position, token), ...)
        self.knobs = triton_compat.runtime_knobs()  # launch hooks, read at each launch as Triton does
        self.driver = triton_compat.driver()  # its active driver, likewise
        self.grid = (grid[0], grid[1] if len(grid) > 1 else 1, grid[2] if len(grid) > 2 else 1)
        # Triton's compiled launcher called without ``run``'s Python where
        # ``run`` adds nothing to it (triton_compat.raw_launch).
        raw = triton_compat.raw_launch(compiled)
        self.launch, self.prefix = raw if raw is not None else (compiled.run, ())
        hook = self.knobs.launch_enter_hook
        # The type of Triton's hook chains, whose emptiness is read at each launch.
        self.chain = type(hook) if type(hook).__name__ == "HookChain" and hasattr(hook, "calls") else None
        self.device_getter = None  # the current device's getter, bound at the first launch


def _int_facts(value):
    """What Triton specializes an integer argument on: 1, divisibility by
    16, and its type (i32, i64, u64, or none: Triton refuses it)."""
    if -(2**31) <= value < 2**31:
        width = "i32"
    elif -(2**63) <= value < 2**63:
        width = "i64"
    else:
        width = "u64" if 0 <= value < 2**64 else None
    return (value == 1, value % 16 == 0, width)


def _guard_token(value, constexpr):
    if constexpr:
        return ("value", hashable(value))  # as the call key holds it (-0.0 apart from 0.0)
    if isinstance(value, int) and not isinstance(value, bool):
        return ("int", _int_facts(value))
    return None


def direct_for(kernel, compiled, call, kwargs, spec, grid):
    """A _Direct for this launch, or None where the Triton version or the call does
    not allow one (the launch then goes through ``kernel[grid]`` each time)."""
    if spec.interpreting or not triton_compat.launchable(compiled):
        return None
    params = getattr(kernel, "params", None)
    names = getattr(kernel, "arg_names", None)
    if params is None or names is None or len(names) < len(call):
        return None
    try:
        constexprs = tuple(kwargs[n] for n in names[len(call):])
    except KeyError:
        return None
    guard = []
    for i, value in enumerate(call[: len(spec.arg_template)]):
        if spec.arg_template[i][0] == "value":
            continue  # the same value every call
        token = _guard_token(value, params[i].is_constexpr)
        if token is not None:
            guard.append((i, token))
    return _Direct(compiled, constexprs, tuple(guard), grid)


def launch_direct(direct, grid, call, device, pointers=None, slots=()):
    """Launch the compiled binary as ``JITFunction.run`` does once it has found it;
    False when this call must go through Triton instead.  ``pointers``: the
    data pointers of the call's tensors, given in their place at ``slots``
    ((index in ``call``, index in ``pointers``), ...) where no launch hook is
    set (a hook is given the tensors)."""
    for i, token in direct.guard:
        value = call[i]
        if token != _guard_token(value, token[0] == "value"):
            return False
    active = direct.driver.active
    getter = direct.device_getter
    if getter is None:
        getter = direct.device_getter = triton_compat.current_device_getter(active)
    current = getter()
    if device >= 0 and device != current:
        return False
    stream = active.get_current_stream(current)
    compiled = direct.compiled
    values = (*call, *direct.constexprs)
    enter, leave = direct.knobs.launch_enter_hook, direct.knobs.launch_exit_hook
    if triton_compat.hooks_are_empty(enter, leave, direct.chain):
        # What the launch hooks would be given is not built where no hook
        # is set (Triton builds it each launch where its hooks are chains).
        metadata = enter = leave = None
        if slots:
            values = list(values)
            for j, k in slots:
                values[j] = pointers[k]
    else:
        metadata = compiled.launch_metadata(grid, stream, *values)
    g0, g1, g2 = direct.grid
    direct.launch(g0, g1, g2, stream, compiled.function, *direct.prefix, compiled.packed_metadata, metadata, enter,
                  leave, *values)
    return True
