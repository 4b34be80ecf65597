"""One stream-K launch of ``gemm_streamk`` per mode, for a profiler:

    ncu --kernel-name streamk_kernel --launch-skip 2 ... python -m benchmarks.lab.streamk_profile
"""
import sys

import torch
import triton

from benchmarks.lab import gemm_streamk as sk


def main():
    size = int(sys.argv[1]) if len(sys.argv) > 1 else 1536
    modes = sys.argv[2:] or ["sk2", "sk2-nofix"]
    triton.set_allocator(sk._alloc)
    programs = torch.cuda.get_device_properties(0).multi_processor_count
    a, b = (torch.randn(size, size, device="cuda", dtype=torch.float16) for _ in range(2))
    for mode in modes:
        out = torch.empty(size, size, device="cuda", dtype=torch.float16)
        for _ in range(3):
            sk.streamk_mm(a, b, out, 128, 128, 64, 8, 3, mode, programs)
        torch.cuda.synchronize()


if __name__ == "__main__":
    main()
