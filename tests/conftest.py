import os
import sys

import pytest
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


@pytest.fixture(params=[False, True], ids=["index", "advance"])
def loop_addressing(request, monkeypatch):
    """Run a test twice: loops address tiles from the loop index (the
    default), then advance pointers wherever a kernel can (the other form the
    tuner chooses between on a GPU)."""
    if request.param:
        from codegen import runtime, tuning

        choose, call_key = tuning.choose, runtime.call_key

        def forced(kernel, spec, grid, args, metas, derived, tensors, int64, options=None, persistent=None):
            if spec.advance_flag and (options or {}).get("advance") is None:
                options = {**(options or {}), "advance": True}
            return choose(kernel, spec, grid, args, metas, derived, tensors, int64, options, persistent)

        monkeypatch.setattr(tuning, "choose", forced)
        # Launches remembered by the other run must not be reused.
        monkeypatch.setattr(runtime, "call_key", lambda *a, **k: ("advance", call_key(*a, **k)))
    return request.param
