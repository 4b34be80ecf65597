"""The eager call of a registered operator, past PyTorch's dispatcher where
the dispatcher would change nothing.

A ``torch.library.custom_op`` (or ``triton_op``) call goes through the
dispatcher and three Python functions it registers: the autograd kernel
(checks ``requires_grad``, then redispatches below autograd), the
ADInplaceOrView kernel of a mutating op (bumps the version counters of the
tensors it mutates) and the backend wrapper (checks that outputs do not alias
inputs, under ``torch._disable_dynamo``).  On a host CPU that is tens of
microseconds per call, several times the launch of the kernel itself.

For a call whose tensors are plain and need no gradient, outside every
tracer, mode, transform and profiler, those steps decide nothing: the
autograd kernel only redispatches, the outputs of the functional form are
fresh allocations (no aliasing), and the version bump is done here.  Such a
call runs the operator's implementation directly; any other call (keywords,
tensor subclasses such as fake or functional tensors, meta tensors, tensors
whose dispatch keys stand for data not in memory as is (a conjugate or
negative view, an efficient zero tensor, whose data pointer is null), a tensor
that requires grad while grad mode is on, a dispatch or function mode (but
``torch.set_default_device``'s, which only places factory functions),
``vmap``/``grad``, ``torch.jit.trace``, the profiler,
torch.compile's tracing, or an argument of another type than the schema's)
goes through the dispatcher, as ``torch.ops.namespace.name`` always does."""

import torch
from torch.overrides import _get_current_function_mode_stack
from torch.utils._device import DeviceContext

_C = torch._C
_TENSORS = (torch.Tensor, torch.nn.Parameter)
# The Python types the dispatcher hands over unchanged, per schema type; a
# value of another type (an int for a float) is converted by the dispatcher,
# so such a call goes through it.
_KINDS = {"Tensor": None, "float": (float,), "int": (int,), "bool": (bool,), "Scalar": (int, float, bool)}
# While Dynamo traces, this reads as true; other tracers (make_fx, non-strict
# export) call with fake tensors under a dispatch mode, which the check sees.
_is_compiling = getattr(torch.compiler, "is_dynamo_compiling", torch.compiler.is_compiling)
_CustomOpDef = getattr(torch.library, "CustomOpDef", None)


def plain_check(kinds):
    """A function of a call's positional arguments: whether the call may skip
    the dispatcher (``kinds``: per parameter, its schema type).  Written out
    per schema, one test after another, since it runs at every call."""
    names = [f"a{i}" for i in range(len(kinds))]
    tensors = [n for n, k in zip(names, kinds) if _KINDS[k] is None]
    tests = [f"type({n}) not in tensors" if _KINDS[k] is None else f"type({n}) not in {k}_types"
             for n, k in zip(names, kinds)]
    tests += [f"{n}.is_meta or {n}.is_conj() or {n}.is_neg() or zero({n})" for n in tensors]
    tests += ["stack()", "function_mode()", "transforms()", "tracing() is not None", "profiling()"]
    grad = " or ".join(f"{n}.requires_grad" for n in tensors) or "False"
    source = (f"def plain(args):\n"
              f"    if len(args) != {len(kinds)}:\n"
              f"        return False\n"
              f"    {', '.join(names) + ',' if names else '_'} = args\n"
              f"    if {' or '.join(tests)}:\n"
              f"        return False\n"
              f"    return not (grad_enabled() and ({grad}))\n")
    scope = {"tensors": _TENSORS, "zero": torch._is_zerotensor, "stack": _C._len_torch_dispatch_stack,
             "function_mode": _function_mode,
             "transforms": _C._are_functorch_transforms_active, "tracing": _C._get_tracing_state,
             "profiling": _C._autograd._profiler_enabled, "grad_enabled": _C.is_grad_enabled}
    scope.update({f"{k}_types": v for k, v in _KINDS.items() if v is not None})
    exec(compile(source, "<ntsym eager check>", "exec"), scope)  # noqa: S102 - written above from fixed parts
    return scope["plain"]


def _function_mode():
    """Whether a torch function mode is on that may act on this call: any
    but ``torch.set_default_device``'s (``DeviceContext``), which only gives
    factory functions a device; the implementation allocates its outputs
    like its inputs, so that mode changes nothing here."""
    if not _C._is_torch_function_mode_enabled():
        return False
    return any(type(mode) is not DeviceContext for mode in _get_current_function_mode_stack())


def bumping(run, mutated):
    """``run``, after it bumps the version counters of the arguments at
    positions ``mutated``, as the dispatcher's ADInplaceOrView kernel does for
    a mutating op (autograd then sees that saved tensors were overwritten)."""
    if not mutated:
        return run
    increment = torch.autograd.graph.increment_version

    def bumped(*args):
        for i in mutated:
            increment(args[i])
        return run(*args)

    return bumped


def fast(definition, kinds, run, mutated=()):
    """``definition`` (a ``CustomOpDef``) made an ``EagerOp``: its calls that
    may skip the dispatcher run ``run`` directly (``kinds``: the schema type
    of each parameter; ``mutated``: the positions of the tensors it writes in
    place)."""
    if EagerOp is None or not isinstance(definition, _CustomOpDef):
        return definition
    definition._ntsym_plain = plain_check(kinds)
    definition._ntsym_run = bumping(run, tuple(mutated))
    definition.__class__ = EagerOp
    return definition


if _CustomOpDef is not None:

    class EagerOp(_CustomOpDef):
        """A registered op whose eager calls skip PyTorch's dispatcher where it
        would change nothing (see ``ntsym.eager``); everything else
        (``register_autograd``, ``opcheck``, torch.compile, export) is the
        ``CustomOpDef``'s.  torch.compile's tracer reads ``is_compiling()`` as
        true and so traces the dispatcher's call."""

        def __call__(self, *args, **kwargs):
            if _is_compiling() or kwargs or not self._ntsym_plain(args):
                return self._opoverload(*args, **kwargs)
            return self._ntsym_run(*args)

else:  # a PyTorch without CustomOpDef: every call goes through the dispatcher
    EagerOp = None
