"""What does a warm call cost the host when Triton's launcher is given the
tensors (it reads each ``data_ptr()`` and asks the driver about it) rather
than their data pointers as integers (what ntsym's direct launch gives it)?
Two kernels of one 3-tensor add (4096 fp32), one made with the pointers
turned off, timed call by call in interleaved rounds beside
``torch.add(x, y, out=z)``.

    python -m benchmarks.lab.launch_pointers
"""

import statistics
import time

import torch

import ntsym
from ntsym import Tensor
from ntsym_codegen.runtime import launching


def arrangement(x, y, z, B=ntsym.block_size()):
    return x.tile((B,)), y.tile((B,)), z.tile((B,))


def application(x, y, z):
    z = x + y  # noqa: F841


tensors = (Tensor(1), Tensor(1), Tensor(1))
original = launching._pointer_slots
launching._pointer_slots = lambda spec, entry: ()
off = ntsym.make(arrangement, application, tensors, kernel_name="add_off")
x, y = torch.randn(4096, device="cuda"), torch.randn(4096, device="cuda")
z = torch.empty_like(x)
off(x, y, z); off(x, y, z); off(x, y, z)
launching._pointer_slots = original
on = ntsym.make(arrangement, application, tensors, kernel_name="add_on")
on(x, y, z); on(x, y, z); on(x, y, z)
assert torch.equal(z, x + y)
fns = {"tensors (before)": lambda: off(x, y, z), "pointers (now)": lambda: on(x, y, z),
       "torch.add(out=)": lambda: torch.add(x, y, out=z)}
N = 20000
res = {k: [] for k in fns}
for _ in range(7):
    for k, f in fns.items():
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(N):
            f()
        torch.cuda.synchronize()
        res[k].append((time.perf_counter() - t) / N * 1e6)
print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}; warm calls of a 3-tensor add (4096 fp32), "
      f"{N} calls a round, 7 interleaved rounds; µs per call (median, min-max)")
print("| launch | µs per call | range |\n|---|---:|---|")
for k, v in res.items():
    print(f"| {k} | {statistics.median(v):.2f} | {min(v):.2f}-{max(v):.2f} |")
z.zero_(); on(x, y, z); torch.cuda.synchronize(); assert torch.equal(z, x + y)
