"""``make`` and ``jit``: the stages in order, one module each."""

import dataclasses
import functools
import inspect
import itertools
import os
import pathlib
import weakref
from typing import Any, Callable, Optional, Sequence, Union

import torch

from codegen import cache, emit, runtime
from codegen.kernel import EmitError
from codegen.printer import PrintError
from ntsym.errors import ApplicationError, CodegenError
from ntsym.lower import lower


class Kernel:
    """A compiled ntsym kernel: call it like the application, with torch tensors."""

    def __init__(self, ir, generated, module, facts, launch):
        self.ir = ir
        self.name = ir.name
        self._generated = generated
        self._module = module
        self._facts = facts  # runtime.LaunchFacts, which the launcher is bound to
        self._spec = facts.spec  # what compilation decided (frozen)
        self._cache = facts.cache  # what calls learn: validated call shapes, tuned configurations
        self._launch = launch
        self.__name__ = ir.name
        # Call-time tile sizes this kernel takes as powers of two; another
        # value launches a variant made with that size padded and masked.
        self._any_size = tuple(
            m.symbol.name for m in ir.meta_params
            if not m.meta and m.power_of_two and not m.symbol.power_of_two
        )
        self._remake = None  # (arrangement, application, tensors, make's keywords)
        self._variant = None
        self._key = next(_KEYS)  # names the operator a call inside torch.compile goes through
        _KERNELS[self._key] = self

    def __call__(self, *args, **kwargs):
        if _is_compiling() and _through_operator():
            return _traced_call(self, args, kwargs)
        if self.ir.jagged:
            from ntsym.jagged_launch import prepare

            args, kwargs = prepare(self.ir, self._spec, args, kwargs)
        args = _needed(self.ir, args)
        if "num_warps" in kwargs or "num_stages" in kwargs:
            kwargs = _launch_options(kwargs, self._spec)
        for name in self._any_size:
            value = kwargs.get(name)
            if type(value) is int and value > 0 and value & (value - 1):
                return self._padded_variant()(*args, **kwargs)
        return self._launch(*args, **kwargs)

    def _padded_variant(self):
        if self._variant is None:
            arrangement, application, tensors, options = self._remake
            self._variant = _make(arrangement, application, tensors, **options, padded=frozenset(self._any_size))
        return self._variant

    @property
    def source(self):
        """The generated module (kernel and launcher), as written to the cache."""
        return self._generated.source

    @property
    def kernel_source(self):
        src = self._generated.source
        start = src.index("@triton.jit\ndef " + self._generated.kernel_name)
        end = src.index("\ndef make_launch(")
        return src[start:end].rstrip() + "\n"

    @property
    def launcher_source(self):
        src = self._generated.source
        return src[src.index("def make_launch("):]

    def explain(self):
        """What was proved, what is checked at launch, the masks; after calls,
        the configurations chosen for them."""
        from codegen.tuning import describe
        from ntsym.explain import explain_ir

        text = explain_ir(self.ir, self._generated)
        chosen = dict.fromkeys(describe(config) for config in self._cache.tuned.values())
        if chosen:
            text = text.rstrip("\n") + "\nchosen    " + "\n          ".join(chosen) + "\n"
        return text

    def export(self, path):
        """Write this kernel as a standalone module needing only torch and
        triton (``ntsym.aot.export``); returns the path."""
        from ntsym.aot import export

        return export(self, path)

    def __repr__(self):
        return f"<ntsym kernel {self.name}>"


_KEYS = itertools.count()
_KERNELS = weakref.WeakValueDictionary()
_is_compiling = torch.compiler.is_compiling
_is_dynamo_compiling = getattr(torch.compiler, "is_dynamo_compiling", torch.compiler.is_compiling)


def _through_operator():
    """Whether a call made while torch.compile or torch.export traces goes
    through the kernel's operator: always while Dynamo reads the Python code
    (it cannot follow the launcher); on fake tensors afterwards only where the
    launcher cannot record the launch itself (``wrap_triton`` needs a GPU)."""
    if _is_dynamo_compiling():
        return True
    from ntsym.library import uses_triton_op

    return not uses_triton_op()


def _traced_call(kernel, args, kwargs):
    """A call met while torch.compile traces: the launcher reads data pointers
    and may tune, which tracing cannot follow, so the call goes through a
    custom operator made for the kernel (it mutates what the kernel writes)."""
    args = _needed(kernel.ir, args)
    if kwargs:
        from ntsym.errors import LaunchError

        raise LaunchError(
            f"kernel `{kernel.name}` was called inside torch.compile with keyword arguments "
            f"({', '.join(kwargs)}): register it as an operator that takes them, "
            f"ntsym.library.op('mylib::{kernel.name}', kernel, options={{...}}), and call that")
    return getattr(torch.ops.ntsym_kernels, _kernel_op(kernel._key))(*args)


def _kernel_op(key):
    """The name of the operator (in ``torch.ops.ntsym_kernels``) that launches
    kernel ``key``; made on first use.  Tracing evaluates this once and keeps
    the name as a constant."""
    from ntsym.library import kernel_op

    return kernel_op(_KERNELS[key], key)


# What torch.compiler.assume_constant_result does, without importing
# torch._dynamo when ntsym is imported.
_kernel_op._dynamo_marked_constant = True


def make(arrangement: Callable, application: Callable, tensors: Sequence[Any], caller: str = "torch",
         kernel_name: Optional[str] = None, output_dir: Union[str, os.PathLike, None] = None,
         num_warps: Optional[int] = None, num_stages: Optional[int] = None, max_num_configs: Optional[int] = None,
         aot_options: Optional[dict] = None) -> "Kernel":
    """Compile ``application`` over ``arrangement(*tensors)`` into a kernel.

    ``arrangement``: a function of the tensors (and of block sizes, as keyword
    defaults such as ``BLOCK=ntsym.block_size()``) that returns the arranged
    tensors, one per parameter of ``application``, by meta-operations
    (``tile``, ``expand``, ...).
    ``application``: the serial code one program runs, over the arranged
    tensors' innermost levels (``ntsym.language`` as ``ntl``); it writes an
    output by assigning to its parameter.
    ``tensors``: the source tensors, ``ntsym.Tensor`` (``Tensor(2)``,
    ``Tensor(shape=(4, 8))``, ``Tensor(0)`` for a scalar), in the
    arrangement's parameter order.
    ``caller``: ``"torch"`` (a ``Kernel`` called with torch tensors) or
    ``"cuda"``: build a C library in ``output_dir`` instead (docs/aot.md),
    with ``aot_options`` (``meta``: block sizes, ``specialize``: compile-time
    values to compile, ``target``: a ``(backend, arch, warp_size)`` triple).
    ``kernel_name``: the name of the kernel, its generated module and its
    cache entries (default: the application's ``__name__``).
    ``output_dir``: also write the generated module there, as ``<kernel_name>.py``.
    ``num_warps``, ``num_stages``: fix Triton's launch options instead of
    tuning them (a call's ``num_warps=`` / ``num_stages=`` overrides them).
    ``max_num_configs``: at most this many configurations are timed when the
    kernel is tuned.

    Returns a ``Kernel``: call it with torch tensors (and the block sizes to
    fix, as keywords); ``source`` and ``explain()`` show what was made."""
    return _make(arrangement, application, tensors, caller, kernel_name, output_dir, num_warps, num_stages,
                 max_num_configs, aot_options)


def _make(arrangement, application, tensors, caller="torch", kernel_name=None, output_dir=None,
          num_warps=None, num_stages=None, max_num_configs=None, aot_options=None, padded=frozenset()):
    """``make``, and the variant of a kernel whose call-time tile sizes
    ``padded`` are padded to a power of two."""
    if caller == "cuda":
        from ntsym.aot import make_cuda

        return make_cuda(arrangement, application, tensors, kernel_name=kernel_name, output_dir=output_dir,
                         num_warps=num_warps, num_stages=num_stages, **(aot_options or {}))
    if caller != "torch":
        raise NotImplementedError(f"caller {caller!r}: ntsym launches kernels from torch, or C ('cuda')")
    if runtime.interpreting():
        os.environ["TRITON_INTERPRET"] = "1"
    ir = lower(arrangement, application, tensors, kernel_name, num_warps, num_stages, max_num_configs, padded)
    try:
        generated = emit.emit(ir)
    except EmitError as e:
        raise ApplicationError(str(e)) from None
    except PrintError as e:
        raise CodegenError(str(e)) from None
    from ntsym.proofs import aliasing_table

    spec = dataclasses.replace(emit.spec(ir, generated), aliasing=aliasing_table(ir, generated.sourced))
    module = cache.load(generated.source, ir.name)
    persistent = getattr(module, generated.persistent_name) if generated.persistent_name else None
    facts = runtime.LaunchFacts(kernel=getattr(module, generated.kernel_name), spec=spec,
                                checks=tuple(generated.checks), display=_display_names(ir),
                                persistent_kernel=persistent)
    launch = module.make_launch(facts)
    kernel = Kernel(ir, generated, module, facts, launch)
    kernel._remake = (arrangement, application, tensors, dict(
        caller=caller, kernel_name=kernel_name, num_warps=num_warps, num_stages=num_stages,
        max_num_configs=max_num_configs))
    if output_dir is not None:
        path = pathlib.Path(output_dir)
        path.mkdir(parents=True, exist_ok=True)
        (path / f"{ir.name}.py").write_text(generated.source)
    return kernel


def _launch_options(kwargs, spec):
    """``num_warps=`` and ``num_stages=`` given as Triton users give them: the
    same as ``ntsym_options={"num_warps": ...}`` (unless the kernel has a
    parameter of that name)."""
    kwargs = dict(kwargs)
    options = dict(kwargs.get("ntsym_options") or {})
    for name in ("num_warps", "num_stages"):
        if name in kwargs and name not in spec.meta_by_name and all(p.name != name for p in spec.params):
            options[name] = kwargs.pop(name)
    kwargs["ntsym_options"] = options
    return kwargs


def _needed(ir, args):
    """``args`` without the tensors the kernel does not need, where every
    tensor of ``tensors`` was given (NineToothed's launcher takes the
    arranged ones only; either call is accepted)."""
    ignored = ir.ignored_args
    if ignored and len(args) == _call_arity(ir) + len(ignored):
        return tuple(a for i, a in enumerate(args) if i not in ignored)
    return args


def _call_arity(ir):
    """How many arguments the launcher takes: every parameter but the
    compile-time values fixed at make()."""
    return sum(1 for p in ir.params if not (p.kind == "constexpr" and p.value is not None))


def _display_names(ir):
    """Size and stride symbols as the user writes them: ``input.shape[1]``."""
    names = {}
    for p in ir.params:
        for d, s in enumerate(p.source_sizes):
            if hasattr(s, "name"):
                names.setdefault(s.name, f"{p.name}.shape[{d}]")
        for d, s in enumerate(p.strides):
            if hasattr(s, "name"):
                names.setdefault(s.name, f"{p.name}.stride({d})")
    return names


def jit(func: Optional[Callable] = None, *, caller: str = "torch", kernel_name: Optional[str] = None,
        num_warps: Optional[int] = None, num_stages: Optional[int] = None,
        max_num_configs: Optional[int] = None):
    """Decorator form of ``make``: the application's parameters are annotated
    with arranged tensors (``x: Tensor(1).tile((B,))``), which are the
    arrangement.

    ``func``: the application (``@ntsym.jit``), or None (``@ntsym.jit(...)``
    with options).  ``caller``, ``kernel_name`` (default: ``func.__name__``),
    ``num_warps``, ``num_stages``, ``max_num_configs``: as for ``make``.
    Returns the ``Kernel`` (or, without ``func``, the decorator)."""

    def wrap(fn):
        params = list(inspect.signature(fn).parameters.values())
        arranged = []
        for p in params:
            if p.annotation is inspect.Parameter.empty:
                raise ApplicationError(f"@ntsym.jit: parameter `{p.name}` needs an arranged-tensor annotation")
            arranged.append(p.annotation)
        sources = tuple(t.source for t in arranged)

        def arrangement(*tensors):
            return tuple(arranged)

        kernel = make(arrangement, fn, sources, caller=caller, kernel_name=kernel_name or fn.__name__,
                      num_warps=num_warps, num_stages=num_stages, max_num_configs=max_num_configs)
        functools.update_wrapper(kernel, fn, updated=())
        return kernel

    return wrap if func is None else wrap(func)
