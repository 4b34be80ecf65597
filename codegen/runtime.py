# Over 600 lines: it is the one `runtime.` namespace generated launchers call, from checks to launch paths.
"""What generated launchers call at run time: argument validation, constexpr
values, index width, configuration choice and the launch itself."""

import contextlib
import functools
import itertools
import logging
import os
from dataclasses import dataclass, field
from typing import Any

from codegen import promotion, serial, tuning
from codegen.errors import ApplicationError, LaunchError, fail
from codegen.placeholders import substitute, substitute_call, untouched_positions
from codegen.tracing import is_fake, traced
from codegen.writes import check_no_overlap, note_writes

logger = logging.getLogger("ntsym")


def cdiv(a, b):
    return -(-a // b)


def next_power_of_2(n):
    n = int(n)
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


@dataclass(frozen=True)
class TensorSpec:
    name: str
    kind: str
    ndim: int = 0
    dtype: Any = None
    written: bool = False
    value: Any = None


@dataclass(frozen=True, eq=False)
class Spec:
    """What compilation decided about a kernel, as the runtime reads it; fixed
    once ``make`` returns (what calls learn is kept in a ``CallCache``)."""

    name: str
    params: tuple
    metas: tuple
    int64_flag: str
    advance_flag: Any = None  # compile-time flag: loops advance pointers (None: no loop can)
    num_warps: Any = None
    num_stages: Any = None
    max_num_configs: Any = None
    streamed_tiles: tuple = ()  # (tensor position, elements(meta...), meta names)
    loops: bool = True  # whether the kernel has a loop (num_stages matters)
    aliasing: dict = field(default_factory=dict)  # (a, b) -> bool: in-place use is safe
    kernel_source: str = ""
    locations: dict = field(default_factory=dict)  # generated line -> user location
    arg_template: tuple = ()  # per parameter: ("arg"|"scalar", index) or ("value", v)
    meta_by_name: dict = field(default_factory=dict)
    interpreting: bool = False  # kernels run through Triton's interpreter (``interpreting()`` at make)
    arithmetic: frozenset = frozenset()  # tensors whose values reach arithmetic (codegen.analysis.arithmetic_parameters)
    meetings: tuple = ()  # operations where tensors' values meet (codegen.promotion.meetings)
    index_peak: Any = None  # (tensors, metas) -> whether logical indices pass int32 (codegen.index_width)
    jagged: frozenset = frozenset()  # jagged tensors: given as views of their values with stride 0 along the batch
    untouched: frozenset = frozenset()  # tensors the kernel neither reads nor writes (codegen/placeholders.py)
    # Derived from ``params``: the call's parameters (name, kind, ndim, written),
    # the compiled values left out, and the names of the tensors the kernel writes.
    call_params: tuple = field(init=False)
    written: frozenset = field(init=False)
    constexpr_slots: tuple = field(init=False)  # kernel argument positions of the constexprs a call gives
    # The call's argument positions the kernel takes first, where it takes them
    # as given (no scalar to convert, no fixed value): None otherwise.
    gather: Any = field(init=False)
    written_positions: tuple = field(init=False)  # the call's argument positions of the tensors it writes
    # The untouched tensors' kernel argument slots and positions among the
    # tensors, and the slot of the first tensor the kernel touches.
    untouched_slots: tuple = field(init=False)
    untouched_tensors: tuple = field(init=False)
    touched_slot: Any = field(init=False)

    def __post_init__(self):
        # A declared dtype is not required of the call: the kernel reads every
        # element type from its pointer, and Triton compiles it for each call's
        # dtypes, as NineToothed's launcher does.
        params = [p for p in self.params if not (p.kind == "constexpr" and p.value is not None)]
        object.__setattr__(self, "call_params", tuple((p.name, p.kind, p.ndim, p.written) for p in params))
        object.__setattr__(self, "written", frozenset(p.name for p in self.params if p.written))
        object.__setattr__(self, "written_positions", tuple(
            i for i, p in enumerate(params) if p.written and p.kind == "tensor"))
        object.__setattr__(self, "constexpr_slots", tuple(
            i for i, (kind, position) in enumerate(self.arg_template)
            if kind == "arg" and params[position].kind == "constexpr"))
        object.__setattr__(self, "gather", tuple(position for _, position in self.arg_template)
                           if all(kind == "arg" for kind, _ in self.arg_template) else None)
        slots, positions, touched = untouched_positions(self.params, self.untouched)
        object.__setattr__(self, "untouched_slots", slots)
        object.__setattr__(self, "untouched_tensors", positions)
        object.__setattr__(self, "touched_slot", touched)


@dataclass(eq=False)
class CallCache:
    """What a kernel handle's launches learn, for the calls after them."""

    calls: dict = field(default_factory=dict)  # call_key -> _Entry (validated calls)
    tuned: dict = field(default_factory=dict)  # tuning.choose's key -> Config chosen in this process
    # Where a call's time went, for finding a warm call that was slow: launches
    # that validated their arguments (a call shape not seen before), and
    # launches of a seen call shape that went through Triton's JIT although
    # its compiled binary was known (a guard of ``_launch_direct`` failed).
    checked_launches: int = 0
    jit_launches: int = 0


@dataclass(frozen=True)
class LaunchFacts:
    """What a kernel's launcher hands the runtime that no call changes, made
    once per kernel by ``make``: the generated launcher passes it, then only
    the call's own values (arguments, compile-time values, tensors, options,
    and the grid and derived-flag functions, which read the call's sizes)."""

    kernel: Any  # the @triton.jit function
    spec: Spec
    checks: tuple = ()  # the launch checks, by index (``fail_check``)
    display: dict = field(default_factory=dict)  # size and stride symbol -> how the user writes it
    persistent_kernel: Any = None  # the persistent variant's @triton.jit function, or None
    # The one part that changes: filled by calls (the binding to this kernel does not).
    cache: CallCache = field(default_factory=CallCache)


def interpreting():
    """Whether kernels run through Triton's interpreter (no GPU, or asked for).
    Decided once per process, when first asked."""
    global _INTERPRETING
    if _INTERPRETING is None:
        value = os.environ.get("TRITON_INTERPRET", "")
        _INTERPRETING = value.lower() in ("1", "true", "yes", "on") or not _cuda_available()
        if _INTERPRETING:
            from codegen import interpreter_compat

            interpreter_compat.install()
    return _INTERPRETING


_INTERPRETING = None
# NTSYM_DIRECT_LAUNCH=0: every launch goes through Triton's JIT (``kernel[grid](...)``).
_DIRECT_OFF = os.environ.get("NTSYM_DIRECT_LAUNCH", "") == "0"


def _cuda_available():
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:  # pragma: no cover - torch always importable here
        return False


def scalar(value):
    """A runtime scalar argument: Python numbers pass through, one-element
    tensors are read."""
    if hasattr(value, "item") and hasattr(value, "numel"):
        return value.item()
    return value


def fail_check(check, values, display=None):
    """Raise for a failed launch check, in the user's terms:
    ``input.shape[1] (=40) must equal other.shape[0] (=41): <why>``."""
    display = display or {}
    rel = check.relation

    def side(expr):
        names = sorted(expr.free_symbols, key=lambda s: -len(s.name))
        text = str(expr)
        for s in names:
            text = text.replace(s.name, display.get(s.name, s.name))
        value = expr.xreplace({s: values[s.name] for s in expr.free_symbols if s.name in values})
        if not expr.free_symbols:
            return text
        if expr.is_Symbol:
            return f"{text} (={value})"
        # An expression: the sizes it was computed from too (cdiv(K, 16) (=3, K=40)).
        given = ", ".join(f"{display.get(s.name, s.name)}={values[s.name]}"
                          for s in sorted(expr.free_symbols, key=lambda s: s.name) if s.name in values)
        return f"{text} (={value}, {given})" if given else f"{text} (={value})"

    kind = type(rel).__name__
    words = {"Equality": "must equal", "GreaterThan": "must be >=", "StrictGreaterThan": "must be >",
             "LessThan": "must be <=", "StrictLessThan": "must be <", "Unequality": "must differ from"}
    if kind in words:
        text = f"{side(rel.lhs)} {words[kind]} {side(rel.rhs)}"
    elif kind == "Or" and all(type(a).__name__ == "Equality" and a.lhs == rel.args[0].lhs for a in rel.args):
        # One value that must equal one of several (a count of windows, or
        # the count of those starting inside).
        text = f"{side(rel.args[0].lhs)} must equal " + " or ".join(side(a.rhs) for a in rel.args)
    else:
        text = f"{rel} must hold; got " + ", ".join(f"{display.get(k, k)}={v}" for k, v in values.items())
    reason = check.reason or check.message
    why = getattr(check, "why", "")
    fail(f"{text}: {reason}" + (f"; {why}" if why else ""))


def unknown_keywords(spec, unknown):
    known = ", ".join(sorted(spec.meta_by_name)) or "none"
    params = ", ".join(p.name for p in spec.params)
    fail(
        f"kernel `{spec.name}` got unknown keyword argument(s) {', '.join(sorted(unknown))}; "
        f"its parameters are: {params}; its compile-time parameters are: {known} (and ntsym_options)"
    )


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
        text = f"kernel `{spec.name}` takes {len(own)} arguments ({', '.join(own)}), got {len(args)}"
        if keywords:
            text += f" and keyword argument(s) {', '.join(keywords)}"
        if fixed:
            values = ", ".join(f"`{n}` (compiled as {v!r})" for n, v in fixed.items())
            text += f"; {values} may be passed too, in its place or by keyword"
        fail(text)
    for name, value in fixed.items():
        if name in bound:
            given = bound[name]
            if not (type(given) is type(value) and (given == value or given != given and value != value)):
                fail(
                    f"`{name}` was compiled with the value {value!r} ({type(value).__name__}, from "
                    f"Tensor(0, constexpr=True, value={value!r})) but the call gives {_shown(given)}: "
                    f"the kernel would compute with {value!r}; make a kernel with the other value"
                )
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
        fail(f"{where} must be a power of two: its shape_options say so (tiles over it are unpadded)")


def check_shape(name, tensor, dim, expected):
    if tensor.shape[dim] != expected:
        fail(f"{name}.shape[{dim}] (={tensor.shape[dim]}) must equal {expected}: the arrangement fixes it")


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
        fail(f"kernel `{spec.name}` takes {len(params)} arguments ({', '.join(p[0] for p in params)}), got {len(args)}")
    supported, bool_dtype, tensor_type, strided = _call_types()
    device = None
    tensors = []
    for (name, kind, ndim, written), a in zip(params, args):
        if kind in ("tensor", "shape") and getattr(a, "is_nested", False):
            fail(_nested_refusal(name, a, ndim))
        if kind == "tensor" and isinstance(a, tensor_type) and a.layout is not strided:
            fail(f"`{name}` is a {a.layout} tensor; kernels read strided (dense) tensors only: "
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
                fail(f"`{name}` has dtype {a.dtype}, which Triton kernels cannot read")
            if a.is_neg() or a.is_conj():
                fail(_lazy_view_refusal(name, a, written))
            if a.dtype == bool_dtype and name in spec.arithmetic:
                fail(f"`{name}` is a bool tensor and the application computes arithmetic on its values: "
                     "Triton adds booleans as 1-bit integers (True + True is False), torch does not; "
                     f"pass `{name}` as an integer tensor (e.g. {name}.to(torch.int8))")
            if name in spec.untouched:
                continue  # never read nor written: any device (codegen/placeholders.py)
            if device is None:
                device = a.device
                if device.type == "cpu" and not spec.interpreting:
                    fail(f"`{name}` is on the CPU but kernels run on the GPU; move it with .cuda()")
            elif a.device != device:
                fail(f"all tensors must be on one device: `{tensors[0][0]}` is on {device}, `{name}` on {a.device}")
            if written and 0 in a.stride() and name not in spec.jagged:
                for d, (n, st) in enumerate(zip(a.shape, a.stride())):
                    if st == 0 and n > 1:
                        fail(
                            f"`{name}` is written by the kernel but dimension {d} has stride 0 "
                            "(an expanded view): several programs would write one element; pass a "
                            "contiguous tensor"
                        )
            if written and name not in spec.jagged and not is_fake(a):  # fake tensors have no memory
                check_no_overlap(name, a)
            tensors.append((name, a))
        elif kind == "shape":
            if not isinstance(a, tensor_type):
                fail(f"`{name}` must be a torch.Tensor (the kernel reads its shape), got {type(a).__name__}")
            if a.ndim != ndim:
                fail(f"`{name}` must have {ndim} dimensions, got {a.ndim} (shape {tuple(a.shape)})")
        elif kind == "scalar":
            if isinstance(a, tensor_type):
                if a.numel() != 1:
                    fail(f"`{name}` is a scalar parameter; got a tensor of shape {tuple(a.shape)}")
            elif not isinstance(a, (int, float, bool)):
                fail(f"`{name}` must be a number, got {type(a).__name__}")
    if spec.meetings:
        refused = promotion.refusal(spec.meetings, {name: t.dtype for name, t in tensors})
        if refused:
            fail(refused)
    if spec.written and len(tensors) > 1 and not traced([t for _, t in tensors]):
        _check_aliasing(spec, tensors)  # fake tensors have no memory to share


def _lazy_view_refusal(name, a, written):
    """A tensor whose negation or conjugation torch applies lazily, on reading
    (``z.conj().imag`` has the negative bit): kernels read and write the stored
    values, so the sign would be wrong."""
    bit, resolve = ("negative", "resolve_neg") if a.is_neg() else ("conjugate", "resolve_conj")
    use = ("the kernel would write the stored values, which the view shows negated; write into a "
           f"resolved tensor ({name}.{resolve}()) and copy back") if written else \
        f"the kernel would read the stored values, without the sign; pass {name}.{resolve}()"
    return f"`{name}` is a view with the {bit} bit set (torch applies it lazily, e.g. z.conj().imag): {use}"


def _offset_dtypes():
    import torch

    return (torch.int32, torch.int64)


def _nested_refusal(name, a, ndim):
    import torch

    if a.layout != torch.jagged:
        return (f"`{name}` is a nested tensor in the {a.layout} layout; ntsym reads nested tensors of the "
                "jagged layout only (torch.nested.nested_tensor(..., layout=torch.jagged)), declared "
                "Tensor(ndim, jagged_dim=d)")
    return (f"`{name}` is a jagged nested tensor (shape {tuple(a.shape)}) but the kernel declares it dense, "
            f"Tensor({ndim}); declare it Tensor({a.ndim}, jagged_dim={a._ragged_idx}) to launch with "
            "sequences of different lengths, or pass a dense tensor (e.g. nested.to_padded_tensor(0.0))")


def _extent(t):
    """The byte range a tensor's elements span."""
    start = t.data_ptr()
    span = 1
    for n, st in zip(t.shape, t.stride()):
        if n == 0:
            return start, start
        span += (n - 1) * abs(st)
    return start, start + span * t.element_size()


def _check_aliasing(spec, tensors):
    written = spec.written
    extents = [_extent(t) for _, t in tensors]
    for i, j in itertools.combinations(range(len(tensors)), 2):
        (na, a), (nb, b) = tensors[i], tensors[j]
        if na not in written and nb not in written:
            continue
        (a0, a1), (b0, b1) = extents[i], extents[j]
        if not (a0 < b1 and b0 < a1):
            continue
        safe = spec.aliasing.get((na, nb), spec.aliasing.get((nb, na), False))
        identical = a.data_ptr() == b.data_ptr() and a.stride() == b.stride() and a.shape == b.shape
        if not (safe is True and identical):
            why = "the views are not identical" if safe is True or not identical else safe
            fail(
                f"`{na}` and `{nb}` share memory and the kernel writes "
                f"`{na if na in written else nb}`: programs would read elements that other "
                f"programs write ({why}); pass a separate output"
            )


def _supported():
    import torch

    names = ("uint16", "uint32", "uint64", "float8_e4m3fn", "float8_e5m2")
    return {
        torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int8, torch.int16,
        torch.int32, torch.int64, torch.uint8, torch.bool,
    } | {getattr(torch, n) for n in names if hasattr(torch, n)}


def constexpr_value(spec, name, given):
    meta = spec.meta_by_name[name]
    if given is None:
        if meta.meta:
            return None
        fail(f"kernel `{spec.name}` needs the compile-time value `{name}`: call it with `{name}=...`")
    if isinstance(given, bool) or not isinstance(given, int):
        if hasattr(given, "__index__") and not isinstance(given, bool):
            given = given.__index__()
        else:
            fail(f"`{name}` must be an int, got {given!r}")
    if meta.power_of_two and given > 0 and given & (given - 1):
        fail(f"`{name}`={given} must be a power of two")
    if meta.lower_bound is not None and given < meta.lower_bound:
        fail(f"`{name}`={given} is below its lower bound {meta.lower_bound}")
    if meta.upper_bound is not None and given > meta.upper_bound:
        fail(f"`{name}`={given} is above its upper bound {meta.upper_bound}")
    if given < 0 or (given == 0 and meta.symbol.is_positive):
        kind = "positive" if meta.symbol.is_positive else "non-negative"
        reason = getattr(meta.symbol, "positive_reason", "")
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


# Element types the tensor memory accelerator moves (by torch name).
TMA_DTYPES = {"float16", "bfloat16", "float32", "float64", "int8", "uint8", "int16", "int32", "int64",
              "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"}


def tma_ready(tiles):
    """Whether every (name, tensor, block shape) in ``tiles`` meets the rules
    of the tensor memory accelerator (see ``tma_problem``)."""
    return tma_problem(tiles) is None


def tma_problem(tiles):
    """Why some (name, tensor, block shape) in ``tiles`` cannot go through a
    tensor descriptor, or None: the rules are a 16-byte aligned base, unit
    inner stride, the other strides positive multiples of 16 bytes, sizes
    below 2**31, power-of-two block dimensions of at most 256 with at least
    16 bytes innermost.  A tile may carry a fourth item, True where the
    kernel can read it with the last two dimensions swapped: then a tensor
    whose next-to-last dimension is the contiguous one is checked as that
    transposed view (see ``transposed``)."""
    for name, tensor, block, *swappable in tiles:
        if swappable and swappable[0] and transposed(tensor):
            tensor = tensor.transpose(-1, -2)
            block = tuple(block[:-2]) + (block[-1], block[-2])
        size = tensor.element_size()
        where = f"`{name}` ({tuple(tensor.shape)}, strides {tuple(tensor.stride())}, {tensor.dtype})"
        if str(tensor.dtype).replace("torch.", "") not in TMA_DTYPES:
            return f"{where}: the dtype is not one the hardware moves"
        if tensor.data_ptr() % 16:
            return f"{where}: its data is not 16-byte aligned (address % 16 = {tensor.data_ptr() % 16})"
        if tensor.stride(-1) != 1:
            return f"{where}: its last dimension is not contiguous (stride {tensor.stride(-1)})"
        for d, stride in enumerate(tensor.stride()[:-1]):
            if stride <= 0 or stride * size % 16 or stride * size >= 2**40:
                return f"{where}: the stride of dimension {d} is {stride * size} bytes, not a positive multiple of 16"
        if any(n >= 2**31 for n in tensor.shape):
            return f"{where}: a size is 2**31 or more"
        if any(b < 1 or b > 256 or b & (b - 1) for b in block):
            return f"{where}: block shape {tuple(block)} has a dimension that is not a power of two up to 256"
        if block[-1] * size < 16:
            return f"{where}: block shape {tuple(block)} has {block[-1] * size} bytes innermost, fewer than 16"
    return None


def transposed(tensor):
    """Whether a tensor descriptor reads ``tensor`` with its last two
    dimensions swapped: the last is not the contiguous one."""
    return tensor.dim() >= 2 and tensor.stride(-1) != 1


class Persistent:
    """The persistent variant of a kernel, for one call: ``kernel`` takes the
    plain kernel's arguments, then ``extra``, then the tile count;
    ``problem(meta)`` says why the tensors do not allow it with those block
    sizes (None: they do); ``derived`` as the plain kernel's, for its own
    compile-time parameters; ``flags``: compile-time flag -> the tensor whose
    descriptor reads its last two dimensions swapped where it is set."""

    def __init__(self, kernel, problem, extra, derived, flags=None):
        self.kernel = kernel
        self.problem = problem  # meta -> None, or why the tensors do not allow it
        self.extra = tuple(extra)
        self.derived = derived
        self.flags = {flag: transposed(t) for flag, t in (flags or {}).items()}

    def ready(self, meta):
        return self.problem(meta) is None

    def usable(self, spec, tensors, int64):
        """Whether it may run at all here: 32-bit index math, and on a GPU,
        one with a tensor memory accelerator (compute capability 9.0 or newer)."""
        if int64:
            return False
        if spec.interpreting:
            return True
        return _capability(tensors[0].device) >= (9, 0) if tensors else False

    def parts(self, config, grid, args, int64, spec, device):
        """(kernel, grid, arguments, keyword arguments) of a launch."""
        tiles = config.grid(grid)[0]
        programs = min(tiles, persistent_programs(device, spec))
        if not spec.interpreting:
            ensure_allocator()
        kwargs = config.kwargs(self.derived, int64, spec)
        if self.flags:
            kwargs = {**kwargs, **self.flags}  # the config's own dict is cached
        return self.kernel, (programs,), tuple(args) + self.extra + (tiles,), kwargs


@functools.lru_cache(maxsize=None)
def _capability(device):
    import torch

    return torch.cuda.get_device_capability(device) if device.type == "cuda" else (0, 0)


# Programs of a persistent kernel in the interpreter: a few, so that each walks several tiles.
INTERPRETER_PROGRAMS = 3


def persistent_programs(device, spec):
    """How many programs a persistent kernel runs: one per multiprocessor."""
    if spec.interpreting or device < 0:
        return INTERPRETER_PROGRAMS
    return tuning.multiprocessors(device)


def _allocate(size, alignment, stream):
    import torch

    return torch.empty(size, dtype=torch.int8, device="cuda")


def ensure_allocator():
    """Tensor descriptors made on the device need scratch memory, which Triton
    takes from the allocator given to ``triton.set_allocator``; where none is
    set (in this thread's context), one that allocates torch tensors is."""
    try:
        from triton.runtime import _allocation

        if not isinstance(_allocation._allocator.get(), _allocation.NullAllocator):
            return
    except (ImportError, AttributeError):
        pass
    import triton

    triton.set_allocator(_allocate)


def explain_failure(spec, error):
    """Re-raise a Triton compilation or interpreter error as an error that
    points at the application line it came from."""
    import linecache
    import traceback

    text = None
    node = getattr(error, "node", None)
    src = getattr(error, "src", None)
    if src and node is not None and getattr(node, "lineno", None):
        src_lines = src.split("\n")
        if 0 < node.lineno <= len(src_lines):
            text = src_lines[node.lineno - 1].strip()
    if text is None:
        chain, e = [], error
        while e is not None and e not in chain:
            chain.append(e)
            e = e.__cause__ or e.__context__
        for e in chain:
            for frame in traceback.extract_tb(e.__traceback__):
                line = (frame.line or linecache.getline(frame.filename, frame.lineno)).strip()
                if line in spec.locations:
                    text = line
    where = spec.locations.get(text) if text else None
    first = str(error).strip().splitlines()
    reason = first[-1] if first else type(error).__name__
    if where is None:
        return None
    filename, lineno, line = where
    message = f"kernel `{spec.name}`: {reason}\n  File \"{filename}\", line {lineno}"
    if line:
        message += f"\n    {line}"
    return ApplicationError(message)


def call_key(args, metas, options, constexprs=()):
    """What a call's validation and configuration depend on, except the data
    pointers: shapes, strides, dtypes, devices, scalar types, given constexprs
    (by value: the argument positions ``constexprs``, which select the
    compiled kernel and so its tuned configuration).  None for a call traced
    with fake tensors (it is not remembered)."""
    key = [tuple(_hashable(args[i]) for i in constexprs if i < len(args))] if constexprs else []
    try:
        return _call_key(key, args, metas, options)
    except RuntimeError:
        refuse_transformed(args)
        raise


def _call_key(key, args, metas, options):
    tensor_type, strided = _call_types()[2:]
    for a in args:
        if type(a) is tensor_type and not a.is_nested and a.layout is strided:  # the common case first
            key.append((a.shape, a.stride(), a.dtype, a.device, a.data_ptr() % 16, a.is_neg()))
            continue
        try:
            shape = getattr(a, "shape", None)
            if shape is not None and getattr(a, "layout", strided) is not strided:
                shape = None  # sparse: no strides, no data pointer; check_arguments refuses it
        except RuntimeError:  # a nested tensor of the strided layout: check_arguments refuses it
            key.append(type(a))
            continue
        if shape is not None and hasattr(a, "stride"):
            if type(a) is not tensor_type and is_fake(a):
                return None
            neg = getattr(a, "is_neg", None)
            key.append((shape, a.stride(), a.dtype, a.device, a.data_ptr() % 16, neg() if neg else False))
        else:
            key.append(type(a))
    key.append(metas)
    if options:
        key.append(tuple(sorted(options.items())))
    return tuple(key)


def refuse_transformed(args):
    """Refuse tensors of a ``torch.func`` transform (``vmap``'s batched
    tensors, ``grad``'s wrapped ones): they have no memory a kernel could
    read, and the kernel has no batching or differentiation rule."""
    import torch

    wrapped = getattr(torch._C._functorch, "is_functorch_wrapped_tensor", None)
    batched = getattr(torch._C._functorch, "is_batchedtensor", None)
    for a in args:
        if isinstance(a, torch.Tensor) and wrapped is not None and wrapped(a):
            what = "torch.vmap" if batched is not None and batched(a) else "a torch.func transform (grad, jvp, vmap)"
            fail(f"a kernel was called on a tensor inside {what}: ntsym kernels do not support torch.func "
                 "transforms (the tensor has no memory of its own to launch on); call the kernel outside the "
                 "transform, e.g. on the whole batch, with the batch as a dimension of the arrangement")


def _hashable(value):
    try:
        hash(value)
    except TypeError:
        return (type(value), repr(value))
    return (type(value), value)  # True and 1 differ as constexprs


class _Entry:
    """A validated call shape: everything the launch needs but the tensors."""

    __slots__ = ("grid", "tail", "kwargs", "spans", "tensor_positions", "device", "direct", "kernel")

    def __init__(self, grid, tail, kwargs, spans, tensor_positions, device, direct=None, kernel=None):
        self.kernel = kernel  # the persistent variant, or None: the plain kernel
        self.grid = grid
        self.tail = tail
        self.kwargs = kwargs
        self.spans = spans
        self.tensor_positions = tensor_positions
        self.device = device
        self.direct = direct  # _Direct, or None: launch through Triton's JIT


class _Direct:
    """The binary a validated call shape compiled to, launched without Triton's
    per-call argument binding and cache lookup (what ``JITFunction.run`` does
    after them, done here).  Valid while what Triton specializes on stays the
    same: pointer alignment, sizes and strides (all in the call key) and the
    values in ``guard``: constexpr parameters by value, integer arguments by
    the facts Triton specializes them on."""

    __slots__ = ("compiled", "constexprs", "guard", "knobs", "driver")

    def __init__(self, compiled, constexprs, guard):
        from triton import knobs
        from triton.runtime import driver

        self.compiled = compiled
        self.constexprs = constexprs  # values of the parameters passed by keyword, in order
        self.guard = guard  # ((position, token), ...)
        self.knobs = knobs.runtime  # launch hooks, read at each launch as Triton does
        self.driver = driver  # its active driver, likewise


def _int_facts(value):
    """What Triton specializes an integer argument on."""
    return (value == 1, value % 16 == 0, -(2**31) <= value < 2**31)


def _guard_token(value, constexpr):
    if constexpr:
        return ("value", type(value), value)
    if isinstance(value, int) and not isinstance(value, bool):
        return ("int", _int_facts(value))
    return None


def _direct_for(kernel, compiled, call, kwargs, spec):
    """A _Direct for this launch, or None where the Triton version or the call does
    not allow one (the launch then goes through ``kernel[grid]`` each time)."""
    if spec.interpreting or compiled is None or hasattr(compiled, "result"):
        return None
    if not all(hasattr(compiled, a) for a in ("run", "function", "packed_metadata", "launch_metadata")):
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
    return _Direct(compiled, constexprs, tuple(guard))


def _launch_direct(direct, grid, call, device):
    """Launch the compiled binary as ``JITFunction.run`` does once it has found it;
    False when this call must go through Triton instead."""
    for i, token in direct.guard:
        value = call[i]
        if token != _guard_token(value, token[0] == "value"):
            return False
    active = direct.driver.active
    current = active.get_current_device()
    if device >= 0 and device != current:
        return False
    stream = active.get_current_stream(current)
    compiled = direct.compiled
    values = (*call, *direct.constexprs)
    enter, leave = direct.knobs.launch_enter_hook, direct.knobs.launch_exit_hook
    if _no_hook(enter) and _no_hook(leave):
        # What the launch hooks would be given is not built where no hook
        # is set (Triton builds it each launch where its hooks are chains).
        metadata = enter = leave = None
    else:
        metadata = compiled.launch_metadata(grid, stream, *values)
    g0 = grid[0]
    g1 = grid[1] if len(grid) > 1 else 1
    g2 = grid[2] if len(grid) > 2 else 1
    compiled.run(g0, g1, g2, stream, compiled.function, compiled.packed_metadata, metadata, enter, leave, *values)
    return True


def _no_hook(hook):
    """Whether a launch hook calls nothing: None, or an empty ``HookChain``
    (Triton 3.6 and 3.9 keep their hooks as chains, never None)."""
    return hook is None or (type(hook).__name__ == "HookChain" and not getattr(hook, "calls", True))


def fast_launch(facts, entry, args):
    """Launch a call whose shapes were validated before: only aliasing, which
    depends on the data pointers, is checked again."""
    spec = facts.spec
    if entry.spans is not None and spec.written:
        pointers = [args[i].data_ptr() for i in entry.tensor_positions]
        for a in range(len(pointers)):
            for b in range(a + 1, len(pointers)):
                if pointers[a] < pointers[b] + entry.spans[b] and pointers[b] < pointers[a] + entry.spans[a]:
                    # Possible overlap: let the full check decide (and raise).
                    _check_aliasing(spec, [(spec.call_params[i][0], args[i]) for i in entry.tensor_positions])
                    break
    if spec.written_positions:
        note_writes(spec, args, spec.written_positions)
    if entry.grid is None:
        return None
    if spec.gather is not None:
        call = [args[i] for i in spec.gather]
    else:
        call = []
        for kind, value in spec.arg_template:
            if kind == "arg":
                call.append(args[value])
            elif kind == "scalar":
                call.append(scalar(args[value]))
            else:
                call.append(value)
    call.extend(entry.tail)
    if spec.untouched_slots:
        substitute_call(spec, call)
    if entry.kernel is not None:
        kernel = entry.kernel
        if not spec.interpreting:
            ensure_allocator()
    else:
        kernel = facts.kernel
    if entry.direct is not None:
        if _launch_direct(entry.direct, entry.grid, call, entry.device):
            return None
        facts.cache.jit_launches += 1
    _run(kernel, entry.grid, call, entry.kwargs, spec, entry.device)
    return None


def _run(kernel, grid, args, kwargs, spec, device):
    """Launch through the interpreter, or on ``device`` (Triton launches on the
    current CUDA device: switch to the tensors' one when it differs).  Returns
    Triton's compiled kernel where it gives one."""
    if spec.interpreting:
        with serial.INTERPRETER:
            _interpret(kernel, grid, args, kwargs, spec)
        return None
    with on_device(device, spec):
        return kernel[grid](*args, **kwargs)


def _remember(facts, key, grid, args, kwargs, tensors, user_args, direct=None, kernel=None):
    if key is None:
        return
    positions = tuple(i for i, a in enumerate(user_args) if any(a is t for t in tensors))
    spans = None
    if len(positions) > 1:
        spans = []
        for i in positions:
            start, end = _extent(user_args[i])
            spans.append(end - start)
    params = len(facts.spec.arg_template)
    device = tensors[0].get_device() if tensors else -1
    facts.cache.calls[key] = _Entry(grid, tuple(args[params:]), kwargs, spans, positions, device, direct, kernel)


def _traced_launch(facts, args, metas, tensors, grid, derived, options, late_checks):
    """The launch as torch.compile records it: the Triton kernel wrapped with
    ``torch.library.wrap_triton``, with a configuration chosen without running
    anything (fake tensors have no data to time): the one an earlier real call
    of this shape tuned, else the default.  The plain kernel only: the
    persistent variant's tensor descriptors need alignment a trace cannot see."""
    kernel, spec = facts.kernel, facts.spec
    if spec.interpreting:
        fail(f"kernel `{spec.name}` is traced with fake tensors (torch.compile, torch.export), but kernels run "
             "through Triton's interpreter here, which a compiled graph cannot call; register the kernel as an "
             "operator (ntsym.library.op), which runs it eagerly inside the graph")
    from torch.library import wrap_triton

    int64 = index_width(spec, tensors, metas)
    config = tuning.choose(kernel, spec, grid, args, metas, derived, tensors, int64, options, None,
                           tuned=facts.cache.tuned, timed=False)
    if config is None:
        return None
    if config.persistent:  # tuned on a real call: the same blocks, plain
        config = tuning.Config(config.meta, config.num_warps, config.num_stages, False, config.advance)
    if late_checks is not None:
        late_checks(dict(config.meta))
    if config.grid(grid)[0] == 0:
        return None
    kernel, grid_size, args, kwargs = tuning.launch_parts(kernel, None, config, grid, args, derived, int64, spec, -1)
    wrap_triton(kernel)[grid_size](*args, **kwargs)
    return None


def capturing():
    """Whether a CUDA graph is being captured on the current stream (False in
    a build without CUDA).  Asked on a call shape's first launch only: a
    validated one takes ``fast_launch``, which captures as any launch."""
    import torch

    try:
        return torch.cuda.is_current_stream_capturing()
    except RuntimeError:  # torch built without CUDA
        return False


def refuse_capture(spec):
    fail(
        f"kernel `{spec.name}` was launched during CUDA graph capture with a call shape (shapes, strides, "
        "dtypes, device, 16-byte alignment) it has not run before: a first launch validates the arguments, "
        "compiles and may tune the kernel (timed runs, synchronisation), none of which a capture may contain; "
        "warm up first: run the captured code once on the same tensors before torch.cuda.graph"
    )


def launch(facts, args, metas, tensors, *, grid, derived, options=None, key=None, user_args=None,
           late_checks=None, persistent=None):
    """Choose the configuration, then launch ``facts.kernel`` (or its
    ``persistent`` variant, where the configuration says so) over ``grid``.

    ``args``: the kernel's arguments but the configuration's; ``metas``: the
    compile-time values the call gave (None: to choose); ``grid(meta)`` and
    ``derived`` (name -> ``f(meta)``): the grid and the compile-time flags
    that follow from the chosen ones; ``key``: the call's ``call_key``, under
    which the launch is remembered for ``fast_launch``; ``user_args``: the
    call's arguments; ``late_checks(meta)``: the launch checks that read the
    chosen block sizes."""
    spec = facts.spec
    if spec.untouched_slots and not traced(tensors):  # placeholders are real tensors (cached)
        args, tensors = substitute(spec, args, tensors)
    if traced(tensors):
        return _traced_launch(facts, args, metas, tensors, grid, derived, options, late_checks)
    facts.cache.checked_launches += 1
    if spec.written_positions and user_args is not None:
        note_writes(spec, user_args, spec.written_positions)
    device = tensors[0].get_device() if tensors else -1
    # Tuning times launches with events and synchronisation of the current
    # device, and Triton launches on it: make it the tensors' one meanwhile.
    with on_device(device, spec):
        return _first_launch(facts, args, metas, tensors, grid, derived, options, key, user_args or args,
                             late_checks, persistent, device)


def on_device(device, spec):
    """A context in which CUDA device ``device`` is the current one: nothing
    to do where it already is, for CPU tensors (-1), or in the interpreter."""
    if spec.interpreting or device < 0:
        return contextlib.nullcontext()
    import torch

    if device == torch.cuda.current_device():
        return contextlib.nullcontext()
    return torch.cuda.device(device)


def _first_launch(facts, args, metas, tensors, grid, derived, options, key, user_args, late_checks, persistent,
                  device):
    """``launch`` of a call shape not validated before, on the tensors' device."""
    kernel, spec = facts.kernel, facts.spec
    if capturing():
        refuse_capture(spec)
    int64 = index_width(spec, tensors, metas)
    config = tuning.choose(kernel, spec, grid, args, metas, derived, tensors, int64, options, persistent,
                           tuned=facts.cache.tuned)
    if config is None:  # an empty problem: no programs to run
        _remember(facts, key, None, args, None, tensors, user_args)
        return None
    if late_checks is not None:
        late_checks(dict(config.meta))
    if config.grid(grid)[0] == 0:
        _remember(facts, key, None, args, None, tensors, user_args)
        return None
    kernel, grid_size, args, kwargs = tuning.launch_parts(kernel, persistent, config, grid, args, derived, int64, spec, device)
    variant = kernel if config.persistent else None
    try:
        compiled = _run(kernel, grid_size, args, kwargs, spec, device)
        direct = None if _DIRECT_OFF else _direct_for(kernel, compiled, args, kwargs, spec)
        _remember(facts, key, grid_size, args, kwargs, tensors, user_args, direct, variant)
    except Exception as error:
        if isinstance(error, LaunchError):
            raise
        mapped = explain_failure(spec, error)
        if mapped is None:
            raise
        raise mapped from error
    return None


def _staged_dtypes():
    import torch

    return {torch.bfloat16} | {getattr(torch, n) for n in ("float8_e4m3fn", "float8_e5m2") if hasattr(torch, n)}


def _interpret(kernel, grid, args, kwargs, spec):
    """Run under Triton's interpreter, which computes bfloat16 arithmetic
    wrongly (silently) and cannot load fp8 (masked loads fail): such tensors
    are given to it as float32 copies with the same strides, and the ones the
    kernel writes are copied back (rounded, as a GPU stores float32 results)."""
    import torch

    staged_dtypes = _staged_dtypes()
    if not any(isinstance(a, torch.Tensor) and a.dtype in staged_dtypes for a in args):
        kernel[grid](*args, **kwargs)
        return
    names = [p.name for p in spec.params if not (p.kind == "constexpr" and p.value is not None) and p.kind != "shape"]
    staged, bases, written = list(args), {}, set()
    for i, a in enumerate(args):
        if isinstance(a, torch.Tensor) and a.dtype in staged_dtypes:
            # Stage the whole storage once, so views (expanded, overlapping,
            # aliased between arguments) keep their exact layout.
            storage = a.untyped_storage()
            key = storage.data_ptr()
            if key not in bases:
                flat = torch.empty(0, dtype=a.dtype, device=a.device).set_(storage)
                bases[key] = (flat, flat.float())
            staged[i] = bases[key][1].as_strided(a.size(), a.stride(), a.storage_offset())
            if i < len(names) and names[i] in spec.written:
                written.add(key)
    kernel[grid](*staged, **kwargs)
    for key in written:
        flat, base = bases[key]
        flat.copy_(base)
