"""Configuration choice: the meta-parameter values and launch options of a
call.

Candidates come from the meta symbols' bounds (``space``), are timed
(``timing``), and the choice is kept per process and on disk (``store``,
``stored``, ``shortlist``); ``choice.choose`` puts these together.  In
Triton's interpreter (CPU) no benchmarking happens: a fixed, sensible
configuration is taken, so CPU runs stay fast and deterministic.

Tuning never imports ``ntsym_codegen.runtime``: the runtime calls it, and hands it
the persistent variant as an object (``usable``, ``ready``, ``parts``)."""

from ntsym_codegen.tuning.choice import OPTIONS, choose
from ntsym_codegen.tuning.config import Config, describe
from ntsym_codegen.tuning.space import (DEFAULT_MAX_CONFIGS, GEMM_SHAPES, MAX_BLOCK_ELEMENTS, candidates, default_config,
                                  device_shared_memory, multiprocessors, shared_memory)
from ntsym_codegen.tuning.timing import compile_ahead, compile_threads, launch_parts, median_ms

__all__ = [
    "Config", "DEFAULT_MAX_CONFIGS", "GEMM_SHAPES", "MAX_BLOCK_ELEMENTS", "OPTIONS", "candidates", "choose",
    "compile_ahead", "compile_threads", "default_config", "describe", "device_shared_memory", "launch_parts",
    "median_ms", "multiprocessors", "shared_memory",
]
