"""Where a warm call's host time goes on a GPU machine: a 3-tensor add called
20000 times plainly (µs per call), then under cProfile (functions by own
time), then torch's per-call pieces a launch reads, timed alone.

    python -m benchmarks.lab.warm_profile
"""

import cProfile
import io
import pstats
import time
import timeit

import torch

import ntsym
from ntsym import Tensor


def arrangement(x, y, z, B=ntsym.block_size()):
    return x.tile((B,)), y.tile((B,)), z.tile((B,))


def application(x, y, z):
    z = x + y  # noqa: F841


k = ntsym.make(arrangement, application, (Tensor(1), Tensor(1), Tensor(1)))
x, y = torch.randn(4096, device="cuda"), torch.randn(4096, device="cuda")
z = torch.empty_like(x)
for _ in range(100):
    k(x, y, z)
torch.cuda.synchronize()
N = 20000
t = time.perf_counter()
for _ in range(N):
    k(x, y, z)
torch.cuda.synchronize()
print(f"plain: {(time.perf_counter() - t) / N * 1e6:.2f} us/call")
pr = cProfile.Profile()
pr.enable()
for _ in range(N):
    k(x, y, z)
pr.disable()
torch.cuda.synchronize()
s = io.StringIO()
pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(25)
print(s.getvalue()[:6000])
# torch's pieces a launch reads, timed alone
for stmt in ["x.data_ptr()", "x.storage_offset()", "x.untyped_storage().nbytes()", "torch._C._increment_version([z])" ,
             "torch.cuda.current_stream()", "torch.add(x, y, out=z)"]:
    try:
        print(stmt, round(timeit.timeit(stmt, globals=globals(), number=N) / N * 1e6, 3), "us")
    except Exception as e:
        print(stmt, "fails", e)
