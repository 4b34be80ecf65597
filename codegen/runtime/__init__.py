"""What generated launchers call at run time, as ``runtime.<name>``: argument
checks, constexpr values and index width (``checks``), the call key
(``keys``) and warm calls matched without it (``quick``), the launch paths
(``launching``: first launch, fast path, traced launch), the persistent
variant (``persistent``), direct launch (``direct``) and the interpreter
(``interpreter``).

One direction: ``launching`` calls ``ntsym_codegen.tuning`` to choose a
configuration; tuning never imports the runtime (it is handed the
persistent variant as an object)."""

from ntsym_codegen.runtime.checks import (bind_arguments, check_arguments, check_float64_scalars, check_same,
                                    check_shape, check_size, check_stride, float64_scalars,
                                    constexpr_value, contiguous, fail_check, index_width, needs_int64, scalar,
                                    unknown_keywords)
from ntsym_codegen.runtime.environment import capturing, interpreting, on_device, refuse_capture
from ntsym_codegen.runtime.keys import call_key, refuse_transformed
from ntsym_codegen.runtime.launching import explain_failure, fast_launch, launch
from ntsym_codegen.runtime.persistent import (Persistent, ensure_allocator, persistent_programs, tma_problem, tma_ready,
                                        transposed)
from ntsym_codegen.runtime.quick import find as quick_entry, learn as learn_quick
from ntsym_codegen.runtime.spec import CallCache, LaunchFacts, Spec, TensorSpec, cdiv, next_power_of_2

__all__ = [
    "CallCache", "LaunchFacts", "Persistent", "Spec", "TensorSpec", "bind_arguments", "call_key", "capturing",
    "cdiv", "check_arguments", "check_float64_scalars", "check_same", "check_shape", "check_size", "check_stride",
    "constexpr_value", "contiguous", "ensure_allocator", "explain_failure", "fail_check", "fast_launch",
    "float64_scalars", "index_width", "interpreting", "launch", "learn_quick", "needs_int64", "next_power_of_2",
    "on_device", "persistent_programs", "quick_entry", "refuse_capture", "refuse_transformed", "scalar",
    "tma_problem", "tma_ready", "transposed", "unknown_keywords",
]
