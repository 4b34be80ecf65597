"""Are ahead-of-time libraries as fast as the JIT kernel at a decode step's
products?  ``examples/bmm.py``'s program at one configuration (block sizes
64 x 128 x 32, 4 warps, 3 stages) for two 8B Llama weights (q/o and down), as
a library (``make(..., caller="cuda")``) and as the JIT kernel, called with the
NineToothed paper's Linear operands (``x`` ``(2, rows, K)``, ``weight.T``
expanded over the batch) and with the weight copied contiguous, at 1 and 64
rows a sequence, beside ``torch.bmm``: CUDA-graph replays
(``do_bench_cudagraph``, µs).

    python -m benchmarks.lab.build_decode
"""

import functools
import itertools
import pathlib
import tempfile

import torch

import ntsym  # noqa: I001  (without a GPU, selects the interpreter before triton loads)
import triton
from ntsym import Tensor

from examples import bmm, mm

SHAPES = ((4096, 4096), (14336, 4096))  # (K, N): q/o, down
BLOCKS = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 32}
WARPS, STAGES = 4, 3


def premake(k, n):
    arrangement = functools.partial(bmm.arrangement, **BLOCKS)
    batch = ({"upper_bound": 4}, None, None)  # as the paper's protocol declares its batch
    tensors = (Tensor(shape=(None, None, k), dtype=ntsym.float16, shape_options=batch),
               Tensor(shape=(None, k, n), dtype=ntsym.float16, shape_options=batch),
               Tensor(shape=(None, None, n), dtype=ntsym.float16, shape_options=batch))
    return arrangement, mm.application, tensors


def main():
    out_dir = pathlib.Path(tempfile.mkdtemp(prefix="ntsym_build_decode_"))
    blocks = " x ".join(str(v) for v in BLOCKS.values())
    print(f"device {torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}; fp16, "
          f"block sizes {blocks}, {WARPS} warps, {STAGES} stages")
    print("\n| weight (K, N) | batch x rows | weight | library µs | JIT µs | torch.bmm µs |")
    print("|---|---|---|---:|---:|---:|")
    gen = torch.Generator("cuda").manual_seed(0)
    for k, n in SHAPES:
        arrangement, application, tensors = premake(k, n)
        lib = ntsym.make(arrangement, application, tensors, caller="cuda", kernel_name=f"bmm_{k}_{n}",
                         output_dir=out_dir / f"{k}_{n}", num_warps=WARPS, num_stages=STAGES)
        for rows, expanded in itertools.product((1, 64), (True, False)):
            x = torch.randn(2, rows, k, device="cuda", dtype=torch.float16, generator=gen)
            weight = torch.randn(n, k, device="cuda", dtype=torch.float16, generator=gen) / k ** 0.5
            other = weight.t().unsqueeze(0).expand(2, -1, -1)
            other = other if expanded else other.contiguous()
            out = torch.empty(2, rows, n, device="cuda", dtype=torch.float16)
            lib(x, other, out)
            library = triton.testing.do_bench_cudagraph(lambda: lib(x, other, out)) * 1e3
            config = dict(BLOCKS, num_warps=WARPS, num_stages=STAGES)
            bmm.kernel(x, other, out, **config)
            jit = triton.testing.do_bench_cudagraph(lambda: bmm.kernel(x, other, out, **config)) * 1e3
            reference = triton.testing.do_bench_cudagraph(lambda: torch.bmm(x, other)) * 1e3
            print(f"| {k} x {n} | 2 x {rows} | {'expanded' if expanded else 'contiguous'} | {library:.1f} | "
                  f"{jit:.1f} | {reference:.1f} |", flush=True)


if __name__ == "__main__":
    main()
