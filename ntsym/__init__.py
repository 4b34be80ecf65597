"""ntsym: GPU kernels as serial code, from arrangements of SymPy-backed symbolic
tensors and an application, compiled to Triton."""

from ntsym.errors import (
    ApplicationError,
    ArrangementError,
    CodegenError,
    LaunchError,
    MetaOperationError,
    NtsymError,
)
from ntsym.symbol import Symbol, block_size
from ntsym.tensor import Tensor, eval_expr, index_table

__all__ = [
    "ApplicationError",
    "ArrangementError",
    "CodegenError",
    "LaunchError",
    "MetaOperationError",
    "NtsymError",
    "Symbol",
    "Tensor",
    "block_size",
    "eval_expr",
    "index_table",
]
