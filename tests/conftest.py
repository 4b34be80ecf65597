import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Without a GPU, ntsym runs kernels through Triton's interpreter.  With one,
# the same tests compile natively: tensors are created on the GPU by default.
if torch.cuda.is_available():
    torch.set_default_device("cuda")
