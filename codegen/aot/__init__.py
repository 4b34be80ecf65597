"""Ahead-of-time kernels: the C launcher of a made kernel, its variants
compiled to cubins, and the shared library around them.

The launcher in C does what the Python launcher (``emit._launcher`` and
``runtime``) does, from the same facts: it reads sizes and strides from the
tensor structs, runs the shape checks and the launch checks (same messages),
chooses 64-bit index math where an offset can reach 2**31, and computes the
compile-time flags (peeled loops, contiguous layouts) and the grid.  What the
Python launcher gives Triton at run time as compile-time values, the C launcher
can only choose among cubins compiled beforehand: every combination of those
flags is compiled (``plan``), plus specialised variants for 16-byte aligned
data, strides that are multiples of 16 and unit last strides, with sizes that
are multiples of 16 or not, and one per read-only input whose unit stride is
its next-to-last (a transposed operand).

The parts: ``common`` (element types, status codes, SymPy to C), ``planning``
(the plan and its variants), ``build`` (cubins, the C compiler, the build
cache's key), ``csource`` (the header and C sources), ``standalone`` (a Python
module that needs only torch and triton).

Nothing here imports ``ntsym``; ``triton`` is imported where a variant is
compiled, in worker processes (``compile_variants``).
"""

from ntsym_codegen.aot.build import (c_compiler, cache_key, compile_library, compile_variants, cuda_include,
                               plan_fingerprint, triton_version)
from ntsym_codegen.aot.common import (DTYPES, ELEMENT_SIZES, INT32_MAX, STATUS, TRITON_TYPES, AotError, c_expr, c_string,
                                dtype_name, next_pow2)
from ntsym_codegen.aot.csource import config_dispatch, header, launcher_c, library_c, single_dispatch
from ntsym_codegen.aot.planning import Axis, Param, Plan, Variant, plan
from ntsym_codegen.aot.standalone import standalone_source

__all__ = ["AotError", "DTYPES", "STATUS", "plan", "compile_variants", "header", "library_c", "single_dispatch",
           "config_dispatch", "compile_library", "cache_key", "plan_fingerprint", "c_compiler", "cuda_include",
           "triton_version", "dtype_name", "standalone_source", "c_expr", "c_string", "launcher_c", "Param", "Axis",
           "Variant", "Plan", "ELEMENT_SIZES", "TRITON_TYPES", "INT32_MAX", "next_pow2"]
