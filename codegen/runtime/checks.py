"""The checks a generated launcher runs on a call's arguments: binding them to
parameters, their kinds, dtypes, devices and layouts, aliasing between them,
the sizes ``shape_options`` declare, compile-time values, and the index width
the call needs.  The standalone module embeds these functions by their source
(codegen/aot/embedded.py): they read nothing outside this module but what it
stands in for."""

import functools
import itertools

from ntsym_codegen import promotion
from ntsym_codegen.errors import fail
from ntsym_codegen.overlap import shared_elements, shared_region
from ntsym_codegen.tracing import is_fake, traced
from ntsym_codegen.writes import check_written_layout


def scalar(value):
    """A runtime scalar argument: Python numbers pass through, one-element
    tensors are read."""
    if hasattr(value, "item") and hasattr(value, "numel"):
        return value.item()
    return value


def float64_scalars(spec, tensors):
    """Whether a call's float scalars need ``check_float64_scalars``: on a GPU,
    where a runtime scalar meets float64 tensors."""
    return (not spec.interpreting and any(kind == "scalar" for kind, _ in spec.arg_template)
            and any(str(t.dtype) == "torch.float64" for t in tensors))


def check_float64_scalars(spec, args):
    """Refuse a float scalar that float32 does not hold exactly, in a call
    with float64 tensors on a GPU: Triton passes a float argument to a
    compiled kernel as float32, so float64 arithmetic with it would use a
    rounded value (0.1 as 0.100000001490116: a relative error of 1.5e-8 in
    every product, where torch computes with the double).  The interpreter
    passes the double."""
    import struct

    for kind, position in spec.arg_template:
        if kind != "scalar":
            continue
        value = scalar(args[position])
        if not isinstance(value, float) or value != value:
            continue
        try:
            rounded = struct.unpack("f", struct.pack("f", value))[0]
        except OverflowError:
            rounded = None
        if rounded != value:
            name = spec.call_params[position][0]
            fail(f"`{name}` is {value!r}, which float32 does not hold exactly, and the call has float64 tensors",
                 "on a GPU, Triton passes a float scalar to the kernel as float32"
                 + (f" ({rounded!r} here)" if rounded is not None else " (out of its range here)")
                 + ": float64 arithmetic with it would not use the value given",
                 "give a value float32 holds exactly (a power of two times an integer below 2**24), or apply "
                 "it to the tensor with torch before or after the kernel")


def fail_check(check, values, display=None):
    """Raise for a failed launch check, in the user's terms:
    ``input.shape[1] (=40) must equal other.shape[0] (=41)``, then why."""
    def value(expr):
        return str(expr.xreplace({s: values[s.name] for s in expr.free_symbols if s.name in values}))

    fail(*check_lines(check, display or {}, value, lambda name: str(values[name]), set(values)))


def check_lines(check, display, value, given, known, relation=None):
    """A failed check's headline and explanation.  ``value(expr)`` and
    ``given(name)`` write a value, called in the order the values appear
    (the standalone module and the C launcher pass placeholders they fill at
    run time: ``check_template``); ``known``: the names that have values;
    ``relation``: the check's relation as tested (default: its own)."""
    rel = check.relation if relation is None else relation

    def shown(name):
        return display.get(name, name)

    def side(expr):
        text = side_free(expr, shown)
        if not expr.free_symbols:
            return text
        result = value(expr)
        if expr.is_Symbol:
            return f"{text} (={result})"
        # An expression: the sizes it was computed from too (cdiv(K, 16) (=3, K=40)).
        sizes = ", ".join(f"{shown(s.name)}={given(s.name)}"
                          for s in sorted(expr.free_symbols, key=lambda s: s.name) if s.name in known)
        return f"{text} (={result}, {sizes})" if sizes else f"{text} (={result})"

    kind = type(rel).__name__
    words = {"Equality": "must equal", "GreaterThan": "must be >=", "StrictGreaterThan": "must be >",
             "LessThan": "must be <=", "StrictLessThan": "must be <", "Unequality": "must differ from"}
    if kind in words:
        left = side(rel.lhs)
        text = f"{left} {words[kind]} {side(rel.rhs)}"
    elif kind == "Or" and all(type(a).__name__ == "Equality" and a.lhs == rel.args[0].lhs for a in rel.args):
        # One value that must equal one of several (a count of windows, or
        # the count of those starting inside).
        left = side(rel.args[0].lhs)
        text = f"{left} must equal " + " or ".join([side(a.rhs) for a in rel.args])
    else:
        names = sorted(s.name for s in rel.free_symbols if s.name in known)
        text = f"{side_free(rel, shown)} must hold (" + ", ".join([f"{shown(n)}={given(n)}" for n in names]) + ")"
    return text, check.reason or check.message, getattr(check, "why", "")


def check_template(check, display, known, placeholder, relation=None):
    """A failed check's lines with ``placeholder`` (``%r``, ``%lld``) where
    each value goes, ``%`` elsewhere escaped, and what fills them in order:
    ``("value", expr)`` or ``("given", name)``."""
    fills = []

    def value(expr):
        fills.append(("value", expr))
        return "\0"

    def given(name):
        fills.append(("given", name))
        return "\0"

    lines = check_lines(check, display, value, given, known, relation)
    return [line.replace("%", "%%").replace("\0", placeholder) for line in lines], fills


def side_free(rel, shown):
    """A relation's text with its symbols as users write them."""
    text = str(rel)
    for s in sorted(rel.free_symbols, key=lambda s: -len(s.name)):
        text = text.replace(s.name, shown(s.name))
    return text


def unknown_keywords(spec, unknown):
    known = ", ".join(sorted(spec.meta_by_name)) or "none"
    params = ", ".join(p.name for p in spec.params)
    fail(f"kernel `{spec.name}` got unknown keyword argument(s) {', '.join(sorted(unknown))}",
         f"its parameters are: {params}",
         f"its compile-time parameters are: {known} (and ntsym_options)")


def bind_arguments(spec, args, keywords):
    """The kernel's own arguments, in order, of a call that names parameters by
    keyword or passes the values of ``Tensor(0, constexpr=True, value=v)``
    parameters (NineToothed's launcher takes every parameter, in its place or
    by keyword).  A value given must be the compiled one, of its type."""
    names = [p.name for p in spec.params]
    fixed = {p.name: p.value for p in spec.params if p.kind == "constexpr" and p.value is not None}
    unknown = set(keywords) - set(names)
    if unknown:
        unknown_keywords(spec, unknown)
    own = [n for n in names if n not in fixed]
    bound = None
    # Every parameter in its place (NineToothed's signature), else only the
    # kernel's own (ntsym's: the compiled values left out).
    for order in (names, own):
        if len(args) <= len(order) and not set(order[: len(args)]) & set(keywords):
            candidate = {**dict(zip(order, args)), **keywords}
            if all(n in candidate for n in own):
                bound = candidate
                break
    if bound is None:
        text = f"kernel `{spec.name}` takes {len(own)} arguments, got {len(args)}"
        if keywords:
            text += f" and keyword argument(s) {', '.join(keywords)}"
        more = ""
        if fixed:
            values = ", ".join(f"`{n}` (compiled as {v!r})" for n, v in fixed.items())
            more = f"{values} may be passed too, in its place or by keyword"
        fail(text, f"its arguments are: {', '.join(own)}", more)
    for name, value in fixed.items():
        if name in bound:
            given = bound[name]
            if not (type(given) is type(value) and (given == value or given != given and value != value)):
                fail(f"`{name}` was compiled as {value!r} but the call gives {_shown(given)}",
                     f"the kernel was made with Tensor(0, constexpr=True, value={value!r}) "
                     f"({type(value).__name__}) and would compute with {value!r}",
                     "make a kernel with the other value")
    return tuple(bound[n] for n in own)


def _shown(value):
    """A call's argument in a message: tensors by shape and dtype."""
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return f"a tensor of shape {tuple(value.shape)} ({value.dtype})"
    return f"{value!r} ({type(value).__name__})"


def check_size(name, dim, value, lower, upper, power_of_two):
    """A size declared with ``shape_options``.  Only ``power_of_two`` is a
    requirement: tiles over the size are unpadded, so another value would
    read and write the wrong elements.  ``lower`` and ``upper`` are the
    bounds NineToothed prunes its tuning configurations with; no code ntsym
    generates depends on them, so a size outside them computes correctly and
    is launched (a tile as long as the size may then compile to more
    registers than the configurations were chosen for: slower, not wrong)."""
    where = f"{name}.shape[{dim}] (={value})"
    if power_of_two and (value <= 0 or value & (value - 1)):
        fail(f"{where} must be a power of two", "its shape_options say so (tiles over it are unpadded)")


def check_same(here, value, there, expected, symbol):
    """A size (or stride) several parameters share: ``here`` and ``there`` are
    (parameter, "shape" or "stride", dimension); the kernel takes one value
    for both."""
    if value != expected:
        where = lambda p: f"{p[0]}.{p[1]}{'()' if p[1] == 'stride' else ''}[{p[2]}]"  # noqa: E731
        fail(f"{where(here)} (={value}) must equal {where(there)} (={expected})",
             f"the kernel takes one value `{symbol}` for both (one ntsym.Symbol, or one Tensor object, declares them)")


def check_shape(name, tensor, dim, expected):
    if tensor.shape[dim] != expected:
        fail(f"{name}.shape[{dim}] (={tensor.shape[dim]}) must equal {expected}", "the arrangement fixes it")


def check_stride(name, tensor, dim, expected):
    """A stride declared at make (``Tensor(..., strides=...)``), which the
    kernel computes addresses with; any stride serves a dimension of size 1
    (its index is 0) or an empty tensor (nothing is addressed)."""
    if tensor.stride(dim) != expected and tensor.shape[dim] > 1 and tensor.numel():
        fail(f"{name}.stride()[{dim}] (={tensor.stride(dim)}) must equal {expected}",
             "the strides declared at make (Tensor(..., strides=...)) are the ones the kernel addresses with",
             f"pass a tensor with those strides (e.g. {name}.contiguous()), or declare `{name}` without strides")


@functools.lru_cache(maxsize=None)
def _call_types():
    """(dtypes Triton kernels read, torch.bool, torch.Tensor, torch.strided):
    looked up once."""
    import torch

    return frozenset(_supported()), torch.bool, torch.Tensor, torch.strided


def check_arguments(spec, args):
    """Validate the call's arguments; return the tensors, in order."""
    params = spec.call_params
    if len(args) != len(params):
        fail(f"kernel `{spec.name}` takes {len(params)} arguments, got {len(args)}",
             f"its arguments are: {', '.join(p[0] for p in params)}")
    supported, bool_dtype, tensor_type, strided = _call_types()
    device = None
    tensors = []
    for (name, kind, ndim, written), a in zip(params, args):
        if kind in ("tensor", "shape") and getattr(a, "is_nested", False):
            fail(*_nested_refusal(name, a, ndim))
        if kind == "tensor" and isinstance(a, tensor_type) and a.layout is not strided:
            fail(f"`{name}` is a {a.layout} tensor", "kernels read strided (dense) tensors only",
                 f"pass {name}.to_dense()")
        if kind == "offsets":
            if not isinstance(a, tensor_type) or a.ndim != 1 or a.dtype not in _offset_dtypes():
                fail(f"`{name}` must be a 1-D int32 or int64 tensor of sequence offsets")
            continue
        if kind == "tensor":
            if not isinstance(a, tensor_type):
                fail(f"`{name}` must be a torch.Tensor, got {type(a).__name__}")
            if a.ndim != ndim:
                fail(f"`{name}` must have {ndim} dimensions, got {a.ndim} (shape {tuple(a.shape)})")
            if a.dtype not in supported:
                fail(f"`{name}` has dtype {a.dtype}", "Triton kernels cannot read that dtype")
            if a.is_neg() or a.is_conj():
                fail(*_lazy_view_refusal(name, a, written))
            if a.dtype == bool_dtype and name in spec.arithmetic:
                fail(f"`{name}` is a bool tensor and the application computes arithmetic on its values",
                     "Triton adds booleans as 1-bit integers (True + True is False), torch does not",
                     f"pass `{name}` as an integer tensor (e.g. {name}.to(torch.int8))")
            if name in spec.untouched:
                continue  # never read nor written: any device (codegen/placeholders.py)
            if device is None:
                device = a.device
                if device.type == "cpu" and not spec.interpreting:
                    fail(f"`{name}` is on the CPU but kernels run on the GPU", "move it with .cuda()")
            elif a.device != device:
                fail(f"`{tensors[0][0]}` is on {device}, `{name}` on {a.device}", "all tensors must be on one device")
            if a.device.type == "meta" and not is_fake(a):
                fail(f"`{name}` is on the meta device: it holds no data for a kernel to read or write",
                     "give a tensor on the device the kernel runs on (a registered operator "
                     "(ntsym.library.op) computes the output shapes of meta tensors without a launch)")
            if not is_fake(a):
                _check_storage(name, a)
            if written and name not in spec.jagged:  # fake tensors have no memory to overlap in
                check_written_layout(name, a, overlap=not is_fake(a))
            tensors.append((name, a))
        elif kind == "shape":
            if not isinstance(a, tensor_type):
                fail(f"`{name}` must be a torch.Tensor (the kernel reads its shape), got {type(a).__name__}")
            if a.ndim != ndim:
                fail(f"`{name}` must have {ndim} dimensions, got {a.ndim} (shape {tuple(a.shape)})")
        elif kind == "scalar":
            if isinstance(a, tensor_type):
                if name in spec.scalar_outputs:
                    fail(f"`{name}` is a scalar parameter (a Tensor(0) the arrangement passes as it is) that the "
                         "application assigns before reading it, and the call gives a tensor for it",
                         "a scalar is passed by value: the kernel cannot store into the tensor given, so it "
                         "would keep its old value",
                         f"to write it, arrange it as one element (`{name}.unsqueeze(0).tile((1,))` in the "
                         "arrangement, assigning it the same way)")
                if a.numel() != 1:
                    fail(f"`{name}` is a scalar parameter but got a tensor of shape {tuple(a.shape)}",
                         "pass a number or a one-element tensor")
            elif not isinstance(a, (int, float, bool)):
                fail(f"`{name}` must be a number, got {type(a).__name__}")
        elif kind == "constexpr" and type(a) is float and a == 0 and str(a)[0] == "-":
            fail(f"`{name}` is -0.0, a compile-time value Triton does not tell from 0.0",
                 "Triton keeps one kernel for both (compiled, or in its interpreter), so the kernel made for 0.0 "
                 "could run (x * -0.0 differs from x * 0.0 in sign)",
                 f"pass 0.0, or declare `{name}` as a scalar (Tensor(0))")
    _check_declarations(spec, args, params, tensor_type)
    if spec.meetings:
        refused = promotion.refusal(spec.meetings, {name: t.dtype for name, t in tensors})
        if refused:
            fail(*refused.split("\n"))
    if spec.written and len(tensors) > 1 and not traced([t for _, t in tensors]):
        _check_aliasing(spec, tensors)  # fake tensors have no memory to share


def _check_declarations(spec, args, params, tensor_type):
    """What the declarations at make fixed for the arguments: a tensor's
    ``other`` its dtype must hold, one set of sizes and strides for the
    parameters one ``Tensor`` object declares."""
    for name, kind, text in spec.others:
        a, other = args[[c[0] for c in params].index(name)], int(text) if kind == "int" else float(text)
        if isinstance(a, tensor_type) and not holds(a.dtype, other):
            fail(f"`{name}` is a {a.dtype} tensor, which cannot hold its other={other!r} exactly",
                 "the lanes a load reads past the tensor would hold another value than the one the kernel "
                 "was compiled for", f"declare `{name}` with an `other=` its dtype holds (or none)")
    for i, j in spec.declared_together:
        a, b = args[i], args[j]
        if isinstance(a, tensor_type) and isinstance(b, tensor_type) and (
                a.shape != b.shape or a.stride() != b.stride()):
            fail(f"`{params[i][0]}` and `{params[j][0]}` are declared by one Tensor object, so the kernel takes one "
                 f"set of sizes and strides for both, but they differ: shapes {tuple(a.shape)} and "
                 f"{tuple(b.shape)}, strides {a.stride()} and {b.stride()}",
                 "give each parameter its own Tensor(...) at make")


def holds(dtype, value):
    """Whether tensors of ``dtype`` hold ``value`` exactly (NaN as NaN)."""
    import torch

    try:
        wide = torch.tensor(value, dtype=torch.int64 if isinstance(value, int) else torch.float64)
        back = wide.to(dtype).to(wide.dtype)
    except (RuntimeError, OverflowError, TypeError):
        return False
    return bool(back == wide) or (bool(wide.isnan()) and bool(back.isnan()))


def _lazy_view_refusal(name, a, written):
    """A tensor whose negation or conjugation torch applies lazily, on reading
    (``z.conj().imag`` has the negative bit): kernels read and write the stored
    values, so the sign would be wrong."""
    bit, resolve = ("negative", "resolve_neg") if a.is_neg() else ("conjugate", "resolve_conj")
    use = ("the kernel would write the stored values, which the view shows negated",
           f"write into a resolved tensor ({name}.{resolve}()) and copy back") if written else \
        ("the kernel would read the stored values, without the sign", f"pass {name}.{resolve}()")
    return (f"`{name}` is a view with the {bit} bit set",
            "torch applies it lazily (e.g. z.conj().imag)") + use


def _offset_dtypes():
    import torch

    return (torch.int32, torch.int64)


def _nested_refusal(name, a, ndim):
    import torch

    if a.layout != torch.jagged:
        return (f"`{name}` is a nested tensor in the {a.layout} layout",
                "ntsym reads nested tensors of the jagged layout only "
                "(torch.nested.nested_tensor(..., layout=torch.jagged)), declared Tensor(ndim, jagged_dim=d)")
    return (f"`{name}` is a jagged nested tensor (shape {tuple(a.shape)}) but the kernel declares it dense",
            f"the kernel declares Tensor({ndim}); declare it Tensor({a.ndim}, jagged_dim={a._ragged_idx}) to "
            "launch with sequences of different lengths, or pass a dense tensor (e.g. nested.to_padded_tensor(0.0))")


def _check_storage(name, a):
    """Refuse a tensor whose elements reach past its storage's bytes (a
    storage resized or freed after the view was made): the kernel would read
    or write memory that is not the tensor's."""
    if a.numel() == 0:
        return
    storage = a.untyped_storage()
    base, size = storage.data_ptr(), storage.nbytes()
    start, end = byte_extent(a)
    if base == 0 or start < base or end > base + size:
        fail(f"`{name}` needs bytes {start - base} to {end - base} of its storage, which holds {size} bytes",
             "the storage was resized or freed after the view was made (as FSDP frees parameters)",
             "launch on a tensor whose storage holds its elements (e.g. after the storage is allocated again)")


def byte_extent(t):
    """The byte range a tensor's elements span."""
    start = t.data_ptr()
    span = 1
    for n, st in zip(t.shape, t.stride()):
        if n == 0:
            return start, start
        span += (n - 1) * abs(st)
    return start, start + span * t.element_size()


def _check_aliasing(spec, tensors):
    """Refuse two tensors that share memory where the kernel writes one of
    them, unless the views are one and the same and in-place use is proved
    safe, or no element of one is an element of the other (a KV cache read
    up to a position beside its next slot, written: ``codegen/overlap.py``)."""
    written = spec.written
    extents = [byte_extent(t) for _, t in tensors]
    for i, j in itertools.combinations(range(len(tensors)), 2):
        (na, a), (nb, b) = tensors[i], tensors[j]
        if na not in written and nb not in written:
            continue
        if {na, nb} & spec.jagged:
            continue  # decided on the jagged tensor's whole values before the launch (ntsym/jagged_launch.py)
        (a0, a1), (b0, b1) = extents[i], extents[j]
        if not (a0 < b1 and b0 < a1):
            continue
        safe = spec.aliasing.get((na, nb), spec.aliasing.get((nb, na), False))
        # One and the same view: elements of one width too (a float32 view of an int8 tensor's bytes,
        # with its pointer, shape and strides, holds other elements).
        identical = a.data_ptr() == b.data_ptr() and a.stride() == b.stride() and a.shape == b.shape \
            and a.element_size() == b.element_size()
        if safe is True and identical:
            continue
        shared = shared_elements(a, b)
        raw = {na, nb} & (spec.addressed | spec.jagged)
        if shared is None and not raw:
            continue  # separate elements: no program reads what another writes
        if shared is not None and not identical and not raw:
            fail(*shared_region(na, nb, na if na in written else nb, shared))
        why = "the views are not identical" if safe is True or not identical else safe
        if raw:
            why = f"the kernel addresses `{sorted(raw)[0]}` past its view"
        if na in written and nb in written:
            fail(f"`{na}` and `{nb}` share memory and the kernel writes both",
                 f"an element would be stored through both, or read through one after the other wrote it ({why})",
                 "pass separate outputs")
        fail(f"`{na}` and `{nb}` share memory and the kernel writes `{na if na in written else nb}`",
             f"programs would read elements that other programs write ({why})", "pass a separate output")


def _supported():
    import torch

    names = ("uint16", "uint32", "uint64", "float8_e4m3fn", "float8_e5m2")
    return {
        torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int8, torch.int16,
        torch.int32, torch.int64, torch.uint8, torch.bool,
    } | {getattr(torch, n) for n in names if hasattr(torch, n)}


def constexpr_value(spec, name, given):
    """The compile-time value ``name`` the call gives (None: not given, for
    the configuration to choose where it is tuned), checked as declared."""
    tuned, power_of_two, lower_bound, upper_bound, positive, reason = spec.constexpr_facts[name]
    if given is None:
        if tuned:
            return None
        fail(f"kernel `{spec.name}` needs the compile-time value `{name}`", f"call it with `{name}=...`")
    if isinstance(given, bool) or not isinstance(given, int):
        if hasattr(given, "__index__") and not isinstance(given, bool):
            given = given.__index__()
        else:
            fail(f"`{name}` must be an int, got {given!r}")
    if power_of_two and given > 0 and given & (given - 1):
        fail(f"`{name}`={given} must be a power of two")
    if lower_bound is not None and given < lower_bound:
        fail(f"`{name}`={given} is below its lower bound {lower_bound}")
    if upper_bound is not None and given > upper_bound:
        fail(f"`{name}`={given} is above its upper bound {upper_bound}")
    if given < 0 or (given == 0 and positive):
        kind = "positive" if positive else "non-negative"
        fail(f"`{name}` must be {kind}, got {given}" + (f": {reason}" if reason else ""))
    return given


def needs_int64(tensors):
    """Whether some element offset can reach 2**31: then index math is 64-bit."""
    for t in tensors:
        extent = 0
        for n, st in zip(t.shape, t.stride()):
            if n > 0:
                extent += (n - 1) * (st if st >= 0 else -st)
            if n >= 2**31 - 1:
                return True
        if extent >= 2**31 - 1:
            return True
    return False


def index_width(spec, tensors, metas):
    """Whether the launch takes 64-bit index math: an element offset (the
    memory extent) or a logical index (``spec.index_peak``) can pass 2**31 - 1."""
    return needs_int64(tensors) or (spec.index_peak is not None and spec.index_peak(tensors, metas))


def contiguous(tensor, tensors):
    """Whether ``tensor`` may take the kernel's contiguous-layout addresses:
    it is contiguous and the index math is 32-bit (those addresses multiply
    sizes, which only strides are widened for)."""
    return tensor.is_contiguous() and not needs_int64(tensors)
