"""The 3x3 max and average poolings of ``benchmarks/cold_kernels`` (fp16, on a
GPU): ntsym's tuned kernel against NineToothed 0.26's tuned kernel of the same
source and torch's, each timed with ``do_bench`` (kernel time, the host's cost
hidden), then ntsym's kernel at each block size and number of warps.  It says
whether a difference that ``benchmarks.cold_start``'s warm pass shows (a
median of ten synchronised calls, host time included) is the kernels'.

    python -m benchmarks.lab.pool_configs
"""
import torch
import torch.nn.functional as F
from triton.testing import do_bench

from benchmarks import bench
from benchmarks.cold_start import KERNELS

SHAPES = ((8, 64, 96, 96), (2, 3, 222, 222), (4, 32, 57, 57))


def main():
    for task in ("max_pool2d", "avg_pool2d"):
        ntsym_fn, _ = bench.load_ntsym(task, KERNELS)
        nt_fn, as_ntsym = bench.load_ninetoothed(task, KERNELS)
        kernel = ntsym_fn.__globals__["kernel"]
        reference = F.max_pool2d if task == "max_pool2d" else F.avg_pool2d
        for shape in SHAPES:
            x = torch.randn(shape, device="cuda", dtype=torch.float16)
            with as_ntsym():
                nt_fn(x)
            ntsym_fn(x)
            t_nt = do_bench(lambda: nt_fn(x), warmup=25, rep=100)
            t_ntsym = do_bench(lambda: ntsym_fn(x), warmup=25, rep=100)
            t_torch = do_bench(lambda: reference(x, 3), warmup=25, rep=100)
            chosen = list(kernel.calls.tuned.values())[-1]
            print(f"{task} {shape}: ntsym {t_ntsym:.4f} ms ({chosen}), NineToothed {t_nt:.4f}, torch {t_torch:.4f}")
            out = torch.empty((shape[0], shape[1], shape[2] // 3, shape[3] // 3), device="cuda", dtype=x.dtype)
            row = []
            for block in (64, 128, 256, 512, 1024, 2048):
                for warps in (2, 4, 8):
                    try:
                        t = do_bench(lambda: kernel(x, out, BLOCK_SIZE=block, ntsym_options={"num_warps": warps}),
                                     warmup=10, rep=40)
                        row.append(f"{block}/{warps}:{t:.4f}")
                    except Exception:  # a block past the kernel's bounds
                        row.append(f"{block}/{warps}:fail")
            print("   configs:", " ".join(row), flush=True)


if __name__ == "__main__":
    main()
