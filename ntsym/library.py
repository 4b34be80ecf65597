"""ntsym kernels as PyTorch operators.

``op(name, kernel)`` registers a kernel as a custom operator with
``torch.library.custom_op``: a fake implementation comes with it, so
``torch.compile(fullgraph=True)``, ``torch.export``, FakeTensor tracing and
``torch.library.opcheck`` see through it, and ``op.register_autograd`` attaches
a backward.  Two forms:

* functional (the default): the op takes the tensors the kernel reads and
  returns the ones it writes, allocated by the op.  Each output's shape comes
  from the inputs' shapes through the relations the kernel proves or checks
  (``output.shape[0] == input.shape[0]``); a dimension they leave open is
  refused here, with a request for ``shapes=``.  Dtype: ``dtypes=``, else the
  first input tensor's; device: the first input tensor's.
* mutating (``mutates_args=(names...)``): the op takes every parameter, as the
  kernel does, and writes the named ones in place (every tensor the kernel
  writes must be named).

An eager call with plain tensors that need no gradient, outside every tracer
and mode, runs the kernel directly instead of through PyTorch's dispatcher,
which would change nothing there and costs tens of microseconds
(``ntsym.eager``); ``torch.ops.namespace.name`` always dispatches.

See docs/torch.md."""

import itertools
import re

import sympy
import torch

from ntsym import eager
from ntsym.errors import NtsymError
from ntsym.output_shapes import compile_shape, derive_shapes

__all__ = ["RegistrationError", "op", "output_shapes", "uses_triton_op"]


class RegistrationError(NtsymError, ValueError):
    """A kernel cannot be registered as asked: the op's name is malformed or
    taken, a name given does not match the kernel, or an output's shape is not
    determined by the inputs."""


_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*::[A-Za-z_][A-Za-z0-9_]*$")
_REGISTERED = {}  # qualified name -> kernel, for ops made here


def op(name, kernel=None, /, *, mutates_args=None, shapes=None, dtypes=None, options=None):
    """Register ``kernel`` as the PyTorch operator ``name`` (``"namespace::op"``)
    and return it (a ``torch.library.CustomOpDef``: call it, or use
    ``torch.ops.namespace.op``; a plain eager call of the op itself skips
    PyTorch's dispatcher, see ``ntsym.eager``).  Without ``kernel``: a
    decorator.

    ``mutates_args``: None for the functional form; else the names of the
    parameters the op writes in place (all the tensors the kernel writes).
    ``shapes``: {output name: callable(*inputs) -> shape, or an input's name
    (the same shape)}; a callable alone stands for the only output.
    ``dtypes``: {output name: torch.dtype, an input's name, or
    callable(*inputs) -> dtype}; one value alone applies to every output.
    ``options``: keyword arguments every launch takes (compile-time values
    such as block sizes, ``ntsym_options``)."""
    if kernel is None:
        return lambda k: op(name, k, mutates_args=mutates_args, shapes=shapes, dtypes=dtypes, options=options)
    _check_name(name, kernel)
    plan = _Plan(name, kernel, mutates_args, shapes, dtypes, options)
    definition = _define(name, plan)
    _REGISTERED[name] = kernel
    return definition


def uses_triton_op():
    """Whether ops are made with ``torch.library.triton_op``: on a GPU, where
    torch.compile traces the op into the Triton kernel it launches (through
    ``torch.library.wrap_triton``), so Inductor compiles and calls the kernel
    itself; not under Triton's interpreter, whose kernels a compiled graph
    cannot call (there the op is a ``custom_op`` that runs the kernel
    eagerly).  ``NTSYM_TRITON_OP=0`` asks for ``custom_op`` everywhere."""
    import os

    from ntsym_codegen.runtime import interpreting

    return (hasattr(torch.library, "triton_op") and not interpreting()
            and os.environ.get("NTSYM_TRITON_OP", "1") != "0")


def _define(name, plan):
    if uses_triton_op():
        # Its fake implementation is the function itself, run on fake
        # tensors: the launcher then records the launch instead of running it.
        definition = torch.library.triton_op(name, plan.traceable(), mutates_args=plan.mutates)
    else:
        definition = torch.library.custom_op(name, plan.impl, mutates_args=plan.mutates, schema=plan.schema)
        definition.register_fake(plan.fake)
    # Eager calls of plain tensors skip the dispatcher (ntsym.eager).
    return eager.fast(definition, [_schema_type(p) for p in plan.taken], plan.impl,
                      [i for i, p in enumerate(plan.taken) if p.name in plan.mutates])


_KERNEL_OPS = {}  # kernel key -> name in torch.ops.ntsym_kernels


def kernel_op(kernel, key):
    """The in-place operator ``ntsym_kernels::<kernel>_<key>`` that a call of
    ``kernel`` inside torch.compile is traced as (made once per kernel)."""
    name = _KERNEL_OPS.get(key)
    if name is None:
        name = f"{re.sub(r'[^A-Za-z0-9_]', '_', kernel.name)}_{key}"
        written = tuple(p.name for p in _call_params(kernel) if p.name in set(kernel.compiled.written))
        plan = _Plan(f"ntsym_kernels::{name}", kernel, written, None, None, None)
        definition = _define(f"ntsym_kernels::{name}", plan)
        _KERNEL_OPS[key] = name
        _DEFINITIONS.append(definition)
    return name


_DEFINITIONS = []  # keeps the operators made by kernel_op alive


def output_shapes(kernel):
    """The shape of each output the kernel writes, as derived from its inputs'
    shapes: {output name: (expression or None per dimension)} in the user's
    terms (``input.shape[0]``); None marks a dimension the inputs leave open."""
    params = _call_params(kernel)
    written = set(kernel.compiled.written)
    inputs = [p for p in params if p.name not in written and p.kind in ("tensor", "shape")]
    outputs = [p for p in params if p.name in written]
    derived = derive_shapes(kernel, inputs, outputs)
    names = _display(kernel)
    return {p.name: tuple(None if e is None else _describe(e, names) for e in derived[p.name]) for p in outputs}


# -- definition ---------------------------------------------------------------


def _check_name(name, kernel):
    what = f"ntsym.library.op({name!r}, kernel `{getattr(kernel, 'name', kernel)}`)"
    if not isinstance(name, str) or not _NAME.match(name):
        raise RegistrationError(
            f"{what}: the op's name must be 'namespace::name' (letters, digits and underscores, no "
            f"overload), got {name!r}")
    if not hasattr(kernel, "ir") or not hasattr(kernel, "compiled"):
        raise RegistrationError(f"{what}: expected a kernel made by ntsym.make or @ntsym.jit, got "
                                f"{type(kernel).__name__}")
    if name in _REGISTERED:
        raise RegistrationError(f"{what}: the op `{name}` is already registered (for kernel "
                                f"`{_REGISTERED[name].name}`); choose another name")
    namespace, short = name.split("::")
    try:
        getattr(getattr(torch.ops, namespace), short)
    except (AttributeError, RuntimeError):
        return
    raise RegistrationError(f"{what}: the op `{name}` is already defined in PyTorch; choose another name")


def _call_params(kernel):
    """The parameters a call passes, in order (compile-time values fixed at
    make() left out)."""
    return list(kernel.ir.call_params)


def _display(kernel):
    return kernel.compiled.display


def _describe(expr, names):
    text = str(expr)
    for s in sorted(expr.free_symbols, key=lambda s: -len(s.name)):
        text = text.replace(s.name, names.get(s.name, s.name))
    return text


def _relation(rel, names):
    if isinstance(rel, sympy.Eq):
        return f"{_describe(rel.lhs, names)} == {_describe(rel.rhs, names)}"
    return _describe(rel, names)


def _schema_type(p):
    if p.kind in ("tensor", "shape"):
        return "Tensor"
    dtype = str(p.dtype or "").replace("torch.", "")
    if dtype == "bool":
        return "bool"
    if dtype.startswith(("float", "bfloat")):
        return "float"
    if dtype.startswith(("int", "uint")) or p.kind == "constexpr":
        return "int"
    return "Scalar"


class _Plan:
    """How the op's arguments map to the kernel's and what it returns."""

    def __init__(self, name, kernel, mutates_args, shapes, dtypes, options):
        self.name = name
        self.kernel = kernel
        self.options = dict(options or {})
        params = _call_params(kernel)
        self.params = params
        names = [p.name for p in params]
        written = set(kernel.compiled.written)
        where = f"op `{name}` (kernel `{kernel.name}`)"
        if not written:
            raise RegistrationError(f"{where}: the kernel writes no tensor, so the op would have no effect")
        if mutates_args is not None:
            if isinstance(mutates_args, str):
                mutates_args = (mutates_args,)
            mutates_args = tuple(mutates_args)
            for n in mutates_args:
                if n not in names:
                    raise RegistrationError(f"{where}: mutates_args names `{n}`, which is not a parameter of the "
                                            f"kernel (its parameters: {', '.join(names)})")
                if n not in written:
                    raise RegistrationError(f"{where}: mutates_args names `{n}`, which the kernel does not write "
                                            f"(it writes: {', '.join(sorted(written))})")
            missing = [n for n in names if n in written and n not in mutates_args]
            if missing:
                raise RegistrationError(f"{where}: the kernel writes {', '.join(f'`{n}`' for n in missing)}, which "
                                        f"mutates_args leaves out; name every tensor it writes")
            if shapes is not None or dtypes is not None:
                raise RegistrationError(f"{where}: shapes= and dtypes= describe the outputs of the functional "
                                        "form; with mutates_args the caller passes them")
            self.mutates = mutates_args
            letters = iter("abcdefghijklmnopqrstuvwxyz")
            args = [f"{_schema_type(p)}{'(' + next(letters) + '!)' if p.name in mutates_args else ''} {p.name}"
                    for p in params]
            self.schema = f"({', '.join(args)}) -> ()"
            self.taken = params
            tensors = [i for i, p in enumerate(params) if p.kind in ("tensor", "shape")]
            self.first = tensors[0] if tensors else None
            self.impl = self._mutating
            self.fake = _nothing
            return
        read = kernel.compiled.read
        both = [n for n in names if n in written and n in read]
        if both:
            raise RegistrationError(
                f"{where}: the kernel reads and writes {', '.join(f'`{n}`' for n in both)}, so the functional "
                f"form cannot allocate it; register the in-place form: "
                f"ntsym.library.op({name!r}, kernel, mutates_args={tuple(n for n in names if n in written)!r})")
        self.inputs = [p for p in params if p.name not in written]
        self.outputs = [p for p in params if p.name in written]
        tensors = [i for i, p in enumerate(self.inputs) if p.kind in ("tensor", "shape")]
        self.first = tensors[0] if tensors else None
        self.mutates = ()
        args = ", ".join(f"{_schema_type(p)} {p.name}" for p in self.inputs)
        returns = "Tensor" if len(self.outputs) == 1 else "(" + ", ".join("Tensor" for _ in self.outputs) + ")"
        self.schema = f"({args}) -> {returns}"
        self.order = tuple(("out" if p.name in written else "in", k) for k, p in
                           zip(_positions(params, written), params))
        self.shape_fns = self._shapes(shapes)
        self.dtype_fns = self._dtypes(dtypes)
        self.single = len(self.outputs) == 1
        self.taken = self.inputs
        self.allocators = [_allocator(shape, dtype, self.first, like) for shape, dtype, like in
                           zip(self.shape_fns, self.dtype_fns, self.like)]
        self.trailing = self.order == tuple(("in", k) for k in range(len(self.inputs))) + tuple(
            ("out", k) for k in range(len(self.outputs)))
        self.impl = self._direct() or self._functional
        self.fake = self._allocate

    def traceable(self):
        """``impl`` with the op's signature spelled out (names and types), as
        ``torch.library.triton_op`` reads it."""
        import inspect

        annotations = {"Tensor": torch.Tensor, "float": float, "int": int, "bool": bool, "Scalar": float}
        parameters = [inspect.Parameter(p.name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                        annotation=annotations[_schema_type(p)]) for p in self.taken]
        if self.mutates:
            returns = None
        elif self.single:
            returns = torch.Tensor
        else:
            returns = tuple.__class_getitem__(tuple(torch.Tensor for _ in self.outputs))
        signature = inspect.Signature(parameters, return_annotation=returns)
        impl = self.impl

        def fn(*args, **kwargs):
            if kwargs:
                args = signature.bind(*args, **kwargs).args
            return impl(*args)

        fn.__signature__ = signature
        fn.__name__ = fn.__qualname__ = self.name.split("::")[1]
        return fn

    # - functional form -

    def _shapes(self, shapes):
        where = f"op `{self.name}` (kernel `{self.kernel.name}`)"
        out_names = [p.name for p in self.outputs]
        in_names = [p.name for p in self.inputs]
        if callable(shapes) and not isinstance(shapes, dict):
            if len(self.outputs) != 1:
                raise RegistrationError(f"{where}: a single shape function given but the kernel writes "
                                        f"{len(self.outputs)} tensors ({', '.join(out_names)}); give "
                                        "shapes={name: function}")
            shapes = {out_names[0]: shapes}
        shapes = dict(shapes or {})
        for n in shapes:
            if n not in out_names:
                raise RegistrationError(f"{where}: shapes= names `{n}`, which is not an output (the outputs: "
                                        f"{', '.join(out_names)}; the inputs: {', '.join(in_names)})")
        fns = []
        self.like = []  # per output: whether it has the first input tensor's shape
        derived = None
        for p in self.outputs:
            given = shapes.get(p.name)
            self.like.append(isinstance(given, str) and given == in_names[self.first] if self.first is not None
                             else False)
            if isinstance(given, str):
                fns.append(self._like(p, given, where, in_names))
                continue
            if given is not None:
                if not callable(given):
                    raise RegistrationError(f"{where}: shapes[{p.name!r}] must be a function of the inputs "
                                            f"({', '.join(in_names)}) or an input's name, got {given!r}")
                fns.append(_checked_shape(given, self.name, p))
                continue
            if derived is None:
                derived = derive_shapes(self.kernel, self.inputs, self.outputs)
            exprs = derived[p.name]
            if any(e is None for e in exprs):
                self._undetermined(p, exprs, where, in_names)
            if self.first is not None:
                self.like[-1] = list(exprs) == list(self.inputs[self.first].source_sizes)
            fns.append(compile_shape(exprs, self.inputs))
        return fns

    def _like(self, p, given, where, in_names):
        if given not in in_names:
            raise RegistrationError(f"{where}: shapes[{p.name!r}] = {given!r} is not an input (the inputs: "
                                    f"{', '.join(in_names)})")
        i = in_names.index(given)
        if self.inputs[i].kind not in ("tensor", "shape"):
            raise RegistrationError(f"{where}: shapes[{p.name!r}] = {given!r} names a scalar input")
        if self.inputs[i].ndim != p.ndim:
            raise RegistrationError(f"{where}: shapes[{p.name!r}] = {given!r}, but `{given}` has "
                                    f"{self.inputs[i].ndim} dimensions and `{p.name}` {p.ndim}")
        return lambda args: args[i].shape

    def _undetermined(self, p, exprs, where, in_names):
        names = _display(self.kernel)
        open_dims = [f"{p.name}.shape[{d}]" for d, e in enumerate(exprs) if e is None]
        known = [f"{p.name}.shape[{d}] = {_describe(e, names)}" for d, e in enumerate(exprs) if e is not None]
        open_symbols = {s for s, e in zip(p.source_sizes, exprs) if e is None and isinstance(s, sympy.Symbol)}
        related = [_relation(c.relation, names) for c in self.kernel.ir.checks
                   if getattr(c.relation, "free_symbols", set()) & open_symbols]
        text = (f"{where}: the shape of output `{p.name}` is not determined by the inputs' shapes: "
                f"{', '.join(open_dims)} {'is' if len(open_dims) == 1 else 'are'} ")
        text += ("related to them only by " + "; ".join(related)) if related else "not related to them by the kernel"
        if known:
            text += f" (derived: {', '.join(known)})"
        text += (f"; give it: shapes={{{p.name!r}: lambda {', '.join(in_names)}: (...)}}, or shapes={{{p.name!r}: "
                 f"'<input name>'}} for an input's shape")
        raise RegistrationError(text)

    def _dtypes(self, dtypes):
        where = f"op `{self.name}` (kernel `{self.kernel.name}`)"
        out_names = [p.name for p in self.outputs]
        in_names = [p.name for p in self.inputs]
        if dtypes is None or not isinstance(dtypes, dict):
            dtypes = {n: dtypes for n in out_names} if dtypes is not None else {}
        for n in dtypes:
            if n not in out_names:
                raise RegistrationError(f"{where}: dtypes= names `{n}`, which is not an output (the outputs: "
                                        f"{', '.join(out_names)})")
        if self.first is None:
            raise RegistrationError(f"{where}: the kernel reads no tensor, so the functional form has no device "
                                    "to allocate its outputs on; register the in-place form with mutates_args")
        fns = []
        first = self.first
        for p in self.outputs:
            rule = dtypes.get(p.name)
            if rule is None:
                fns.append(None)  # the first input tensor's
            elif isinstance(rule, torch.dtype):
                fns.append(lambda args, rule=rule: rule)
            elif isinstance(rule, str):
                if rule not in in_names:
                    raise RegistrationError(f"{where}: dtypes[{p.name!r}] = {rule!r} is not an input (the inputs: "
                                            f"{', '.join(in_names)})")
                i = in_names.index(rule)
                fns.append(None if i == first else lambda args, i=i: args[i].dtype)
            elif callable(rule):
                fns.append(lambda args, rule=rule: rule(*args))
            else:
                raise RegistrationError(f"{where}: dtypes[{p.name!r}] must be a torch.dtype, an input's name or a "
                                        f"function of the inputs, got {rule!r}")
        return fns

    def _allocate(self, *args):
        if self.single:
            return self.allocators[0](args)
        return tuple(allocate(args) for allocate in self.allocators)

    def _functional(self, *args):
        if self.single:
            out = self.allocators[0](args)
            outs, given = out, (out,)
        else:
            outs = given = tuple(allocate(args) for allocate in self.allocators)
        if self.trailing:
            call = (*args, *given)
        else:
            call = [(given if where == "out" else args)[k] for where, k in self.order]
        if self.first is not None and args[self.first].is_meta:  # shapes only (a GPU's triton_op runs this for meta tensors)
            return outs
        try:
            if self.options:
                self.kernel(*call, **self.options)
            else:
                self.kernel(*call)
        except NtsymError as e:
            raise _named(e, self.name) from None
        return outs

    def _direct(self):
        """``_functional`` for the common case, in fewer steps (it runs at
        every eager call): one output, after the inputs, no options."""
        if not (self.single and self.trailing and not self.options):
            return None
        allocate, kernel, name, first = self.allocators[0], self.kernel, self.name, self.first
        if self.like[0] and self.dtype_fns[0] is None:
            return self._direct_like()

        def functional(*args):
            out = allocate(args)
            if first is not None and args[first].is_meta:  # shapes only
                return out
            try:
                kernel(*args, out)
            except NtsymError as e:
                raise _named(e, name) from None
            return out

        return functional

    def _direct_like(self):
        """``_direct`` where the output is the first input tensor's
        ``empty_like`` (``_allocator``), written in place of the call."""
        first, kernel, name = self.first, self.kernel, self.name
        empty_like, contiguous = torch.empty_like, torch.contiguous_format

        def functional(*args):
            out = empty_like(args[first], memory_format=contiguous)
            if out.is_meta:  # shapes only
                return out
            try:
                kernel(*args, out)
            except NtsymError as e:
                raise _named(e, name) from None
            return out

        return functional

    # - mutating form -

    def _mutating(self, *args):
        if self.first is not None and args[self.first].is_meta:  # no data to write
            return None
        try:
            self.kernel(*args, **self.options)
        except NtsymError as e:
            raise _named(e, self.name) from None


def _named(error, name):
    """The kernel's error, said of the op."""
    try:
        return type(error)(f"op `{name}`: {error}")
    except TypeError:  # an error class that takes other arguments
        return error


def _nothing(*args):
    return None


def _allocator(shape, dtype, first, like):
    """A function (the op's arguments) -> a fresh contiguous output on the
    first input tensor's device, of that tensor's dtype where ``dtype`` is
    None.  ``like``: the output has the first input's shape, so (with its
    dtype) it is that tensor's ``empty_like``, the cheapest allocation
    (``new_empty`` and ``torch.empty`` cost several microseconds more per
    call); both work on fake tensors and symbolic sizes."""
    empty_like, contiguous = torch.empty_like, torch.contiguous_format
    if like and dtype is None:
        return lambda args: empty_like(args[first], memory_format=contiguous)
    if dtype is None:
        return lambda args: args[first].new_empty(shape(args))
    return lambda args: args[first].new_empty(shape(args), dtype=dtype(args))


def _positions(params, written):
    """Per parameter: its index among the inputs or among the outputs."""
    counters = {True: itertools.count(), False: itertools.count()}
    return [next(counters[p.name in written]) for p in params]


def _checked_shape(fn, name, p):
    def shape(args):
        value = tuple(fn(*args))
        if len(value) != p.ndim:
            raise RegistrationError(f"op `{name}`: the shape function of `{p.name}` gave {value}, "
                                    f"{len(value)} dimensions; `{p.name}` has {p.ndim}")
        return value

    return shape


# -- shape derivation -----------------------------------------------------------
