import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Without a GPU, ntsym runs kernels through Triton's interpreter.  With one,
# the same tests compile natively: tensors are created on the GPU by default.
if torch.cuda.is_available():
    torch.set_default_device("cuda")
else:
    # No GPU: Triton's interpreter, chosen before any test module imports
    # triton (as ntsym does when it is imported first).
    os.environ.setdefault("TRITON_INTERPRET", "1")


# fp32 tl.dot runs in TF32 on NVIDIA GPUs (Triton's default), as torch.matmul
# does with allow_tf32; the interpreter computes it in full fp32.
FP32_DOT_TOL = 3e-2 if torch.cuda.is_available() else 1e-4
