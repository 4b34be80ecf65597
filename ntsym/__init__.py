"""ntsym: GPU kernels as serial code, from arrangements of SymPy-backed symbolic
tensors and an application, compiled to Triton."""

import os as _os
import sys as _sys


def _select_interpreter():
    """Without a CUDA device, kernels run through Triton's interpreter.  Triton
    reads the switch when its language module is imported, so it is set here,
    before anything imports triton."""
    if _os.environ.get("TRITON_INTERPRET"):
        return
    import torch

    if not torch.cuda.is_available():
        _os.environ["TRITON_INTERPRET"] = "1"
        if "triton.language" in _sys.modules:
            import warnings

            warnings.warn(
                "ntsym: no CUDA device, but triton was imported before ntsym without "
                "TRITON_INTERPRET=1; set TRITON_INTERPRET=1 or import ntsym first",
                RuntimeWarning,
                stacklevel=3,
            )


_select_interpreter()

from ntsym.errors import (
    ApplicationError,
    ArrangementError,
    CodegenError,
    LaunchError,
    MetaOperationError,
    NtsymError,
)
from ntsym.dtype import (
    bfloat16,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
)
from ntsym.symbol import Symbol, block_size
from ntsym.tensor import Tensor
# ``ntsym.compile`` (the compile stage) is left out of __all__: a star import
# would hide the builtin ``compile``.
from ntsym.compiler import Compiled, compile  # noqa: A004
from ntsym.make import Kernel, jit, make
from ntsym.aot import build
from ntsym.explain import explain
from ntsym.jagged_launch import Jagged, jagged
from ntsym import auto_tuner, debugging, generation, language, library, naming, visualization
from ntsym.debugging import eval, eval_expr, index_table, subs  # noqa: A004 - NineToothed's names


from ntsym_codegen.cache import package_version as _package_version
from ntsym_codegen.counters import Stats


def stats() -> Stats:
    """What every kernel's calls in this process cost so far (``Kernel.stats``
    summed, kernels since collected included): ``compiles``, ``tunes``,
    ``candidates_timed``, ``launches``, ``shortlists``."""
    from ntsym_codegen import counters

    return counters.total()


def reset_stats() -> None:
    """Zero every kernel's counters and the process's total (tests, benchmarks)."""
    from ntsym_codegen import counters

    counters.reset()


__version__ = _package_version()

__all__ = [
    "ApplicationError",
    "ArrangementError",
    "CodegenError",
    "Compiled",
    "LaunchError",
    "MetaOperationError",
    "NtsymError",
    "Jagged",
    "Stats",
    "Symbol",
    "Tensor",
    "auto_tuner",
    "bfloat16",
    "block_size",
    "build",
    "debugging",
    "eval",
    "eval_expr",
    "explain",
    "float16",
    "float32",
    "float64",
    "generation",
    "index_table",
    "int8",
    "int16",
    "int32",
    "int64",
    "jagged",
    "jit",
    "language",
    "library",
    "make",
    "naming",
    "reset_stats",
    "stats",
    "subs",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "visualization",
]
