"""What generated launchers call at run time: argument validation, constexpr
values, index width, configuration choice and the launch itself."""

import functools
import itertools
import logging
import os
from dataclasses import dataclass, field
from typing import Any

logger = logging.getLogger("ntsym")


def cdiv(a, b):
    return -(-a // b)


def next_power_of_2(n):
    n = int(n)
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


class LaunchError(ValueError):
    """Arguments that do not fit the kernel; ntsym re-exports a subclass."""


# ntsym replaces this by its own LaunchError class (a subclass of NtsymError).
LAUNCH_ERROR = LaunchError


@dataclass(frozen=True)
class TensorSpec:
    name: str
    kind: str
    ndim: int = 0
    dtype: Any = None
    written: bool = False
    value: Any = None


@dataclass
class Spec:
    name: str
    params: tuple
    metas: tuple
    int64_flag: str
    num_warps: Any = None
    num_stages: Any = None
    max_num_configs: Any = None
    index_maps: dict = field(default_factory=dict)
    checks: tuple = ()
    aliasing: dict = field(default_factory=dict)  # (a, b) -> bool: same index maps
    kernel_source: str = ""
    tuner: Any = None


def interpreting():
    """Whether kernels run through Triton's interpreter (no GPU, or asked for)."""
    value = os.environ.get("TRITON_INTERPRET", "")
    if value.lower() in ("1", "true", "yes", "on"):
        return True
    return not _cuda_available()


@functools.lru_cache(maxsize=None)
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


def fail(message):
    raise LAUNCH_ERROR(message)


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
        return f"{text} (={value})" if expr.free_symbols else text

    kind = type(rel).__name__
    words = {"Equality": "must equal", "GreaterThan": "must be >=", "StrictGreaterThan": "must be >",
             "LessThan": "must be <=", "StrictLessThan": "must be <", "Unequality": "must differ from"}
    if kind in words:
        text = f"{side(rel.lhs)} {words[kind]} {side(rel.rhs)}"
    else:
        text = f"{rel} must hold; got " + ", ".join(f"{display.get(k, k)}={v}" for k, v in values.items())
    reason = check.reason or check.message
    fail(f"{text}: {reason}")


def check_shape(name, tensor, dim, expected):
    if tensor.shape[dim] != expected:
        fail(f"{name}.shape[{dim}] (={tensor.shape[dim]}) must equal {expected}: the arrangement fixes it")


def check_arguments(spec, args):
    import torch

    params = [p for p in spec.params if not (p.kind == "constexpr" and p.value is not None)]
    if len(args) != len(params):
        fail(f"kernel `{spec.name}` takes {len(params)} arguments ({', '.join(p.name for p in params)}), got {len(args)}")
    device = None
    tensors = []
    for p, a in zip(params, args):
        if p.kind == "tensor":
            if not isinstance(a, torch.Tensor):
                fail(f"`{p.name}` must be a torch.Tensor, got {type(a).__name__}")
            if a.ndim != p.ndim:
                fail(f"`{p.name}` must have {p.ndim} dimensions, got {a.ndim} (shape {tuple(a.shape)})")
            if p.dtype is not None and _torch_dtype(p.dtype) is not None and a.dtype != _torch_dtype(p.dtype):
                fail(f"`{p.name}` must have dtype {_torch_dtype(p.dtype)}, got {a.dtype}")
            if device is None:
                device = a.device
            elif a.device != device:
                fail(f"all tensors must be on one device: `{tensors[0][0]}` is on {device}, `{p.name}` on {a.device}")
            if a.device.type == "cpu" and not interpreting():
                fail(f"`{p.name}` is on the CPU but kernels run on the GPU; move it with .cuda()")
            if a.dtype not in _SUPPORTED:
                fail(f"`{p.name}` has dtype {a.dtype}, which Triton kernels cannot read")
            if p.written and a.numel() > 1:
                for d in range(a.ndim):
                    if a.stride(d) == 0 and a.shape[d] > 1:
                        fail(
                            f"`{p.name}` is written by the kernel but dimension {d} has stride 0 "
                            "(an expanded view): several programs would write one element; pass a "
                            "contiguous tensor"
                        )
            tensors.append((p.name, a))
        elif p.kind == "scalar":
            if isinstance(a, torch.Tensor):
                if a.numel() != 1:
                    fail(f"`{p.name}` is a scalar parameter; got a tensor of shape {tuple(a.shape)}")
            elif not isinstance(a, (int, float, bool)):
                fail(f"`{p.name}` must be a number, got {type(a).__name__}")
    _check_aliasing(spec, tensors)


def _check_aliasing(spec, tensors):
    written = {p.name for p in spec.params if p.written}
    for (na, a), (nb, b) in itertools.combinations(tensors, 2):
        if na not in written and nb not in written:
            continue
        if a.numel() == 0 or b.numel() == 0 or not _overlap(a, b):
            continue
        same = (
            spec.aliasing.get((na, nb)) or spec.aliasing.get((nb, na))
        ) and a.data_ptr() == b.data_ptr() and a.stride() == b.stride() and a.shape == b.shape
        if not same:
            fail(
                f"`{na}` and `{nb}` share memory and the kernel writes "
                f"`{na if na in written else nb}`: programs would read elements that other "
                "programs write (their arrangements differ, or the views are not identical); "
                "pass a separate output"
            )


def _overlap(a, b):
    sa, sb = a.untyped_storage(), b.untyped_storage()
    if sa.data_ptr() != sb.data_ptr():
        return False

    def extent(t):
        start = t.data_ptr()
        span = sum((n - 1) * abs(s) for n, s in zip(t.shape, t.stride())) + 1
        return start, start + span * t.element_size()

    a0, a1 = extent(a)
    b0, b1 = extent(b)
    return a0 < b1 and b0 < a1


def _torch_dtype(dtype):
    import torch

    if isinstance(dtype, torch.dtype):
        return dtype
    name = getattr(dtype, "name", None) or str(dtype)
    mapping = {
        "fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32, "fp64": torch.float64,
        "int8": torch.int8, "int16": torch.int16, "int32": torch.int32, "int64": torch.int64,
        "uint8": torch.uint8, "int1": torch.bool,
    }
    return mapping.get(name)


def _supported():
    import torch

    return {
        torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int8, torch.int16,
        torch.int32, torch.int64, torch.uint8, torch.bool,
    } | {getattr(torch, n) for n in ("float8_e4m3fn", "float8_e5m2") if hasattr(torch, n)}


class _Lazy:
    def __contains__(self, item):
        return item in _supported()


_SUPPORTED = _Lazy()


def constexpr_value(spec, name, given):
    meta = next(m for m in spec.metas if m.symbol.name == name)
    if given is None:
        if meta.meta:
            return None
        fail(f"kernel `{spec.name}` needs the compile-time value `{name}`: call it with `{name}=...`")
    if isinstance(given, bool) or not isinstance(given, int):
        if hasattr(given, "__index__") and not isinstance(given, bool):
            given = given.__index__()
        else:
            fail(f"`{name}` must be an int, got {given!r}")
    if meta.lower_bound is not None and given < meta.lower_bound:
        fail(f"`{name}`={given} is below its lower bound {meta.lower_bound}")
    if meta.upper_bound is not None and given > meta.upper_bound:
        fail(f"`{name}`={given} is above its upper bound {meta.upper_bound}")
    if given <= 0:
        fail(f"`{name}` must be positive, got {given}")
    if meta.power_of_two and given & (given - 1):
        fail(f"`{name}`={given} must be a power of two")
    return given


def needs_int64(tensors):
    """Whether some element offset can reach 2**31: then index math is 64-bit."""
    for t in tensors:
        extent = sum((n - 1) * abs(s) for n, s in zip(t.shape, t.stride()) if n > 0)
        if extent >= 2**31 - 1 or any(n >= 2**31 - 1 for n in t.shape):
            return True
    return False


def launch(kernel, spec, grid, args, metas, derived, tensors, options=None):
    """Choose the configuration, then launch ``kernel`` over ``grid``."""
    import torch

    int64 = needs_int64(tensors)
    from codegen import tuning

    probe = tuning.default_config(spec, {k: v for k, v in metas.items() if v is not None})
    if grid(dict(probe.meta))[0] == 0:  # an empty problem: no programs to run
        return None
    config = tuning.choose(kernel, spec, grid, args, metas, derived, tensors, int64, options)
    meta = dict(config.meta)
    constexprs = dict(meta)
    for name, fn in derived.items():
        constexprs[name] = fn(meta)
    constexprs[spec.int64_flag] = int64
    grid_size = grid(meta)
    if grid_size[0] == 0:  # no programs: nothing to compute
        return None
    device = tensors[0].device if tensors else None
    kwargs = dict(constexprs)
    if not interpreting():
        kwargs["num_warps"] = config.num_warps
        kwargs["num_stages"] = config.num_stages
    if device is not None and device.type == "cuda":
        with torch.cuda.device(device):
            kernel[grid_size](*args, **kwargs)
    else:
        kernel[grid_size](*args, **kwargs)
    return None
