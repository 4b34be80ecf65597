"""Is there a tiling of ``examples/mm.py`` at cuBLAS's speed for a product
whose grid is small against the GPU (1024^3: 64 tiles of 128x128 for 132
multiprocessors)?  cuBLAS (``torch.mm``), ntsym's mm as tuned (its choice
printed) and at fixed configurations, fp16 and bf16, interleaved
``do_bench`` rounds in one process.

    python -m benchmarks.lab.gemm_small [--sizes 1024 1536] [--rounds 5] [--tuned-only]

``--tuned-only``: cuBLAS and the tuned kernel alone (run from two trees to
compare their tuners' choices).
"""

import argparse
import os

import torch

from benchmarks.lab._rounds import ratio_table, interleaved

# (BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, num_warps), each at 3, 4 and 5 stages.
SHAPES = ((64, 64, 64, 4), (128, 64, 64, 4), (64, 128, 64, 4), (128, 64, 128, 4), (64, 128, 128, 4),
          (128, 128, 64, 8))
STAGES = (3, 4, 5)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", nargs="*", type=int, default=(1024,))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tuned-only", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("NTSYM_PRINT_TUNING", "1")
    from examples import mm

    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}")
    for size in args.sizes:
        for dtype in (torch.float16, torch.bfloat16):
            a, b = (torch.randn(size, size, device="cuda", dtype=dtype) for _ in range(2))
            out = torch.empty(size, size, device="cuda", dtype=dtype)
            ref = a.float() @ b.float()
            fns = {"cuBLAS": lambda: torch.mm(a, b), "ntsym tuned": lambda: mm.mm(a, b)}
            fns["ntsym tuned"]()
            for bm, bn, bk, warps in () if args.tuned_only else SHAPES:
                for stages in STAGES:
                    def run(bm=bm, bn=bn, bk=bk, w=warps, st=stages):
                        mm.kernel(a, b, out, BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk,
                                  ntsym_options={"num_warps": w, "num_stages": st})
                    try:
                        run()
                        torch.cuda.synchronize()
                    except Exception as exc:
                        print(f"  {bm}x{bn}x{bk} w{warps} s{stages}: failed ({str(exc).splitlines()[0][:100]})")
                        continue
                    error = ((out.float() - ref).abs().max() / ref.abs().max()).item()
                    if error > 1e-2:
                        print(f"  {bm}x{bn}x{bk} w{warps} s{stages}: WRONG (relative error {error:.1e})")
                        continue
                    fns[f"ntsym {bm}x{bn}x{bk} w{warps} s{stages}"] = run
            times = interleaved(fns, rounds=args.rounds)
            print(f"\n### {size}^3 {str(dtype)[6:]}\n")
            print(ratio_table(times, "cuBLAS"))


if __name__ == "__main__":
    main()
