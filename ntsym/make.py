"""``make`` and ``jit``: the stages in order, one module each."""

import functools
import inspect
import itertools
import os
import pathlib
import weakref
from typing import Any, Callable, Optional, Sequence, Union

import torch

from ntsym_codegen import cache, runtime
from ntsym_codegen import options as launch_options
from ntsym_codegen.ir import padded_sizes
from ntsym import aot, library
from ntsym import compiler
from ntsym.errors import ApplicationError, LaunchError, NtsymError
from ntsym.explain import explain_ir


class Kernel:
    """A compiled ntsym kernel: call it like the application, with torch tensors.

    ``compiled`` is what compiling decided (``ntsym.compiler.Compiled``);
    ``calls`` what calls learn (validated call shapes, tuned configurations)."""

    def __init__(self, compiled, module, facts, remake):
        self.compiled = compiled
        self.ir = compiled.ir
        self.name = compiled.name
        self.__name__ = compiled.name
        self._module = module
        self._facts = facts  # runtime.LaunchFacts, which the launcher is bound to
        self._launch = module.make_launch(facts)
        # Call-time tile sizes this kernel takes as powers of two; another
        # value launches a variant made with that size padded and masked.
        self._any_size = padded_sizes(self.ir)
        # A call without keywords to a kernel with nothing to prepare (``_prepared``) goes
        # straight to the launcher.
        self._plain = not self.ir.jagged and not self.ir.ignored_args and not self._any_size
        self._remake = remake  # (arrangement, application, tensors, make's keywords)
        self._variant = None
        self._compile_launch = None  # the launcher of compile-only calls (``warmup``)
        self._apart = None
        self._key = next(_KEYS)  # names the operator a call inside torch.compile goes through
        _KERNELS[self._key] = self

    @property
    def spec(self):
        """The launch plan the runtime reads (frozen): ``compiled.spec``."""
        return self.compiled.spec

    @property
    def calls(self):
        """What calls learned (``runtime.CallCache``): checked call shapes in
        ``calls``, tuned configurations in ``tuned``."""
        return self._facts.cache

    @property
    def launch_facts(self):
        """The facts the launcher is bound to (``runtime.LaunchFacts``)."""
        return self._facts

    @property
    def stats(self):
        """What this kernel's calls cost so far (``ntsym.Stats``, frozen):
        ``compiles`` (kernel variants built: one per set of compile-time
        values, as Triton would compile them, counted the same way under
        its interpreter), ``tunes`` (full tuning searches run), ``shortlists``
        (new shapes of a size class already searched, for which the class's
        shortlist was timed), ``candidates_timed`` (configurations both
        kinds timed) and ``launches``; the variant of padded
        call-time tile sizes included.  ``ntsym.stats()`` sums every kernel's."""
        stats = self.calls.counts.snapshot()
        if self._variant is not None:
            stats = stats + self._variant.stats
        return stats

    def reset_stats(self):
        """Zero this kernel's counters (``ntsym.reset_stats()`` zeroes every
        kernel's); the variants built so far are forgotten too, so that a
        launch after it counts what it would build in a new process."""
        self.calls.counts.reset()
        if self._variant is not None:
            self._variant.reset_stats()

    def launcher_for(self, facts):
        """A launcher of this kernel's module bound to other ``facts`` (a
        replaced spec or call cache): how the runtime's paths are tried."""
        return self._module.make_launch(facts)

    def bound_to(self, facts):
        """A handle of this kernel bound to other ``facts`` (a replaced spec or
        call cache): its calls take every path of a call, ``__call__``'s
        included, as those facts lead them."""
        return Kernel(self.compiled, self._module, facts, self._remake)

    def __call__(self, *args, **kwargs):
        if _is_compiling() and _through_operator():
            return _traced_call(self, args, kwargs)
        if self._plain:
            table = self._facts.cache.express  # shapes launched before, written out (``runtime.express``)
            if table is not None and table.launch(args, kwargs):
                return None
            if not kwargs:  # the common call: positional tensors, nothing to prepare
                try:
                    return self._launch(*args)
                except LaunchError as refused:
                    return self._refused(refused, args, kwargs)
                except ZeroDivisionError as error:
                    raise self._divided_by_zero(args, error) from None
        target, args, kwargs = self._prepared(args, kwargs)
        try:
            if target is not self:
                return target._launch(*args, **kwargs)
            try:
                return self._launch(*args, **kwargs)
            except LaunchError as refused:
                return self._refused(refused, args, kwargs)
        except ZeroDivisionError as error:
            raise self._divided_by_zero(args, error) from None

    def _divided_by_zero(self, args, error):
        """The launch error for a call whose launch checks or grid divide by
        a size of 0 (a tile's stride or dilation taken from a tensor's size);
        ``error`` itself where no tensor given has a size of 0."""
        if not any(0 in tuple(getattr(a, "shape", ())) for a in args):
            return error
        shapes = ", ".join(f"{name} {tuple(a.shape)}" for (name, *_), a in zip(self.spec.call_params, args)
                           if hasattr(a, "shape"))
        return LaunchError(f"kernel `{self.spec.name}`: the arrangement divides by a size that is 0 in this call "
                           f"(a tile's stride or dilation given as a tensor's size, or a size used as a divisor); "
                           f"the sizes given: {shapes}")

    def _refused(self, refused, args, kwargs):
        """A launch this kernel refused: the variant that reads the tensors
        apart launches it where there is one; else the refusal stands."""
        if not self.ir.read_apart or self.ir.jagged:
            raise refused
        try:
            apart = self._apart_variant()
        except NtsymError:
            raise refused from None  # no such variant: this kernel's refusal stands
        return apart._launch(*args, **kwargs)

    def _prepared(self, args, kwargs):
        """The kernel a call launches (this one, or the variant of its padded
        call-time tile sizes) and the launcher's arguments."""
        if self.ir.jagged:
            from ntsym.jagged_launch import prepare

            args, kwargs = prepare(self.ir, self.spec, args, kwargs)
        args = _needed(self.ir, args)
        if kwargs and any(name in kwargs for name in launch_options.KEYWORDS):
            kwargs = _launch_options(kwargs, self.spec)
        for name in self._any_size:
            value = kwargs.get(name)
            if type(value) is int and value > 0 and value & (value - 1):
                return self._padded_variant(), args, kwargs
        return self, args, kwargs

    def warmup(self, *calls, dtype=None, device=None, threads=None):
        """Compile (and on a GPU tune) ahead of the first real calls; returns
        what it cost (``ntsym.Stats``: the compiles, tunes and launches it made).

        ``calls``: one per call to prepare, each a tuple of the kernel's
        arguments (or a dict of keyword arguments, with the positional ones
        under ``"args"``), where a tensor stands for a fresh one like it (same
        shape, strides, dtype, device and values), a tuple of ints for zeros of
        that shape (of ``dtype``, default float32, on ``device``), and a
        ``(shape, dtype)`` pair for zeros of that dtype; other values are
        passed as they are.  E.g. ``kernel.warmup(((64, 33), (64, 33)),
        (x, torch.empty_like(x)), dtype=torch.float16, device="cuda")``.
        ``threads``: how many calls compile at a time (default: one per CPU,
        at most 16, as ``NTSYM_COMPILE_THREADS`` says).  Each call's variant
        is compiled first, in threads; then each call runs once, in order,
        tuning where its size class was not tuned, so that the same call
        shapes later take the fast path (docs/performance.md)."""
        from ntsym.warmup import warmup

        return warmup(self, calls, dtype, device, threads)

    def _compile_call(self, args, kwargs):
        """Compile the variant a call would launch, running nothing (``warmup``)."""
        target, args, kwargs = self._prepared(args, kwargs)
        if target._compile_launch is None:
            from ntsym.warmup import compile_facts

            target._compile_launch = target._module.make_launch(compile_facts(target._facts))
        return target._compile_launch(*args, **kwargs)

    def save_tuning(self, path):
        """Write the configurations this kernel's size classes were tuned to
        (in this process, or stored in the cache by an earlier one) to a JSON
        file at ``path``, keyed by size class, with the device name in each
        key and the Triton version and kernel source digest in the header:
        portable to another machine or path with the same GPU and Triton
        (``load_tuning`` there).  Returns the number of classes written."""
        from ntsym_codegen.tuning import table

        return table.save(self.spec, self.calls.classes, path)

    def load_tuning(self, path):
        """Read a table ``save_tuning`` wrote at ``path``: a call shape of a
        size class it holds takes that class's choice without a search.  A
        table of another kernel source or Triton version is not used (a
        warning says why).  Returns the number of classes loaded."""
        from ntsym_codegen.tuning import table

        return table.load(self.spec, self.calls.classes, path)

    def _padded_variant(self):
        if self._variant is None:
            arrangement, application, tensors, options = self._remake
            self._variant = _make(arrangement, application, tensors, **{**options, "padded": frozenset(self._any_size)})
        return self._variant

    def _apart_variant(self):
        """The kernel whose tensors only read may have more tiles than there
        are programs along a first dimension this one equates, and tensors
        only assigned whole fewer (``ir.read_apart``: a larger batch of keys
        beside the queries' blocks), masked by their own sizes: launched
        where this kernel's launch refuses the call (its checks of equal
        sizes; the variant's own checks then decide)."""
        if self._apart is None:
            arrangement, application, tensors, options = self._remake
            self._apart = _make(arrangement, application, tensors, **{**options, "apart": True})
        return self._apart

    @property
    def source(self):
        """The generated module (kernel and launcher), as written to the cache."""
        return self.compiled.source

    @property
    def kernel_source(self):
        """The ``@triton.jit`` kernel (and its persistent variant)."""
        return self.compiled.kernel_source

    @property
    def launcher_source(self):
        """The torch launcher (``make_launch``)."""
        return self.compiled.launcher_source

    def explain(self):
        """What was proved, what is checked at launch, the masks; after calls,
        the configurations chosen for them."""
        from ntsym_codegen.tuning import describe

        text = explain_ir(self.ir, self.compiled.generated)
        chosen = dict.fromkeys(describe(config) for config in self.calls.tuned.values())
        if chosen:
            text = text.rstrip("\n") + "\nchosen    " + "\n          ".join(chosen) + "\n"
        return text

    def export(self, path):
        """Write this kernel as a standalone module needing only torch and
        triton (``ntsym.aot.export``), with the configurations its calls were
        tuned to and the variant of its padded call-time tile sizes; returns
        the path."""
        return aot.export(self, path, tuned=tuple(self.calls.tuned.values()))

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
    return not library.uses_triton_op()


def _traced_call(kernel, args, kwargs):
    """A call met while torch.compile traces: the launcher reads data pointers
    and may tune, which tracing cannot follow, so the call goes through a
    custom operator made for the kernel (it mutates what the kernel writes)."""
    args = _needed(kernel.ir, args)
    if kwargs:
        raise LaunchError(
            f"kernel `{kernel.name}` was called inside torch.compile with keyword arguments ({', '.join(kwargs)})\n"
            "register it as an operator that takes them, "
            f"ntsym.library.op('mylib::{kernel.name}', kernel, options={{...}}), and call that")
    return getattr(torch.ops.ntsym_kernels, _kernel_op(kernel._key))(*args)


def _kernel_op(key):
    """The name of the operator (in ``torch.ops.ntsym_kernels``) that launches
    kernel ``key``; made on first use.  Tracing evaluates this once and keeps
    the name as a constant."""
    return library.kernel_op(_KERNELS[key], key)


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
    cache entries (default: the application's ``__name__``; where that is
    the generic ``application``, messages, caches and files show the
    arrangement's file and name instead, e.g. ``conv2d_channels_last``).
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
          num_warps=None, num_stages=None, max_num_configs=None, aot_options=None, padded=frozenset(),
          apart=False):
    """``make``, and the variants of a kernel: whose call-time tile sizes
    ``padded`` are padded to a power of two; whose tensors only read are
    ``apart`` (``Kernel._apart_variant``)."""
    if caller == "cuda":
        return aot.make_cuda(arrangement, application, tensors, kernel_name=kernel_name, output_dir=output_dir,
                             num_warps=num_warps, num_stages=num_stages, **(aot_options or {}))
    if caller != "torch":
        raise NotImplementedError(f"caller {caller!r}: ntsym launches kernels from torch, or C ('cuda')")
    if runtime.interpreting():
        os.environ["TRITON_INTERPRET"] = "1"
    compiled = compiler.compile(arrangement, application, tensors, kernel_name, num_warps, num_stages, max_num_configs,
                       padded, apart)
    kernel = _kernel(compiled, (arrangement, application, tensors, dict(
        caller=caller, kernel_name=kernel_name, num_warps=num_warps, num_stages=num_stages,
        max_num_configs=max_num_configs, padded=padded, apart=apart)))
    if output_dir is not None:
        path = pathlib.Path(output_dir)
        path.mkdir(parents=True, exist_ok=True)
        (path / f"{compiled.name}.py").write_text(compiled.source)
    return kernel


def _kernel(compiled, remake):
    """The torch target: the generated module loaded (from the cache) and its
    launcher bound to the compiled launch plan."""
    generated = compiled.generated
    module = cache.load(compiled.source, compiled.name)
    persistent = getattr(module, generated.persistent_name) if generated.persistent_name else None
    facts = runtime.LaunchFacts(kernel=getattr(module, generated.kernel_name), spec=compiled.spec,
                                checks=tuple(compiled.checks), display=compiled.display,
                                persistent_kernel=persistent)
    return Kernel(compiled, module, facts, remake)


def _launch_options(kwargs, spec):
    """The launch options given as Triton users give them (``num_warps=``,
    ``num_stages=``: those codegen/options.py marks ``keyword``): the same as
    ``ntsym_options={"num_warps": ...}`` (unless the kernel has a parameter
    of that name)."""
    return launch_options.keywords(kwargs, set(spec.meta_by_name) | {p.name for p in spec.params})


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
    return len(ir.call_params)


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
