"""Does a library from ``ntsym.build`` pick decode tiles for decode calls?
NineToothed programs often build their products ahead of time over
configurations, with the block sizes as meta-parameters tuned by ``build``
(the NineToothed paper's end-to-end protocol does so for its Llama's
``bmm``).  Tuned at sizes of 256 only, a ``(2, 1, K)`` decode call gets tiles
chosen for 256 rows.  ``build`` now also tunes at sizes of 2 and dispatches
calls whose free sizes are all at most 16 to that choice.

Two libraries of ``examples/bmm.py``'s program over the same configurations
(the 8B Llama's q/o and down weights; block sizes 16 or 64 by 64 or 128 by 32
or 64, 4 or 8 warps, 3 or 4 stages): as built now, and without the small
class (the previous build).  Each called with the paper's Linear operands,
``x`` ``(2, 1, K)`` and ``weight.T`` expanded over the batch, timed as CUDA-graph
replays (``do_bench_cudagraph``, µs), beside ``torch.bmm``.

    python -m benchmarks.lab.build_decode [--same-config]

``--same-config``: instead, one configuration (block sizes 64 x 128 x 32, 4
warps, 3 stages) as a library (``make(..., caller="cuda")``) and as the JIT
kernel, with the weight expanded and not, at 1 and 64 rows a sequence.
"""

import functools
import itertools
import json
import pathlib
import tempfile

import torch

import ntsym  # noqa: I001  (without a GPU, selects the interpreter before triton loads)
import ntsym.aot as built
import triton
from ntsym import Tensor

from examples import bmm, mm

SHAPES = ((4096, 4096), (14336, 4096))  # (K, N): q/o, down


def premake(k, n, block_size_m, block_size_n, block_size_k):
    arrangement = functools.partial(bmm.arrangement, BLOCK_SIZE_M=block_size_m, BLOCK_SIZE_N=block_size_n,
                                    BLOCK_SIZE_K=block_size_k)
    batch = ({"upper_bound": 4}, None, None)  # as the paper's protocol declares its batch
    tensors = (Tensor(shape=(None, None, k), dtype=ntsym.float16, shape_options=batch),
               Tensor(shape=(None, k, n), dtype=ntsym.float16, shape_options=batch),
               Tensor(shape=(None, None, n), dtype=ntsym.float16, shape_options=batch))
    return arrangement, mm.application, tensors


CONFIGS = [((k, n), {"block_size_m": bm, "block_size_n": bn, "block_size_k": bk}, {"num_warps": w, "num_stages": s})
           for (k, n), bm, bn, bk, w, s in itertools.product(SHAPES, (16, 64), (64, 128), (32, 64), (4, 8), (3, 4))]
META = ("block_size_m", "block_size_n", "block_size_k")


def main():
    out_dir = pathlib.Path(tempfile.mkdtemp(prefix="ntsym_build_decode_"))
    now = ntsym.build(premake, CONFIGS, meta_parameters=META, kernel_name="bmm_now", output_dir=out_dir / "now")
    guard = built._small_guard
    built._small_guard = lambda kernel, plan: None  # the previous build: one choice a configuration
    try:
        before = ntsym.build(premake, CONFIGS, meta_parameters=META, kernel_name="bmm_before",
                             output_dir=out_dir / "before")
    finally:
        built._small_guard = guard
    print(f"device {torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}; "
          f"fp16, {len(CONFIGS)} configurations")
    tuned = json.loads((out_dir / "now" / "bmm_now.tuned.json").read_text())
    for key, entry in tuned.items():
        print(f"  (K, N) = {key}: sizes 256 {entry['meta']}, sizes 2 {entry.get('small', {}).get('meta', 'the same')}")
    print("\n| weight (K, N) | batch x rows | built now µs | built before µs | built now, weight not expanded µs "
          "| JIT kernel at the large choice µs | torch.bmm µs | max abs error |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    large = {tuple(json.loads(key)): entry["meta"] for key, entry in tuned.items()}
    gen = torch.Generator("cuda").manual_seed(0)
    for (k, n), rows in itertools.product(SHAPES, (1, 64)):
        x = torch.randn(2, rows, k, device="cuda", dtype=torch.float16, generator=gen)
        weight = torch.randn(n, k, device="cuda", dtype=torch.float16, generator=gen) / k ** 0.5
        other = weight.t().unsqueeze(0).expand(2, -1, -1)
        out = torch.empty(2, rows, n, device="cuda", dtype=torch.float16)
        times = []
        for lib in (now, before):
            lib(x, other, out, k, n)
            times.append(triton.testing.do_bench_cudagraph(lambda lib=lib: lib(x, other, out, k, n)) * 1e3)
        error = (out.float() - torch.bmm(x, other).float()).abs().max().item()
        whole = other.contiguous()
        times.append(triton.testing.do_bench_cudagraph(lambda: now(x, whole, out, k, n)) * 1e3)
        meta = {name.upper(): value for name, value in large[(k, n)].items()}
        config = next(c for c in CONFIGS if c[0] == (k, n) and {m.upper(): v for m, v in c[1].items()} == meta)
        bmm.kernel(x, other, out, **meta, **config[2])
        times.append(triton.testing.do_bench_cudagraph(lambda: bmm.kernel(x, other, out, **meta, **config[2])) * 1e3)
        reference = triton.testing.do_bench_cudagraph(lambda: torch.bmm(x, other)) * 1e3
        print(f"| {k} x {n} | 2 x {rows} | " + " | ".join(f"{t:.1f}" for t in times)
              + f" | {reference:.1f} | {error:.3g} |", flush=True)


def same_config():
    out_dir = pathlib.Path(tempfile.mkdtemp(prefix="ntsym_build_decode_"))
    print(f"device {torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}; fp16, "
          "block sizes 64 x 128 x 32, 4 warps, 3 stages")
    print("\n| weight (K, N) | batch x rows | weight | library µs | JIT µs | torch.bmm µs |")
    print("|---|---|---|---:|---:|---:|")
    gen = torch.Generator("cuda").manual_seed(0)
    meta = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 32}
    for k, n in SHAPES:
        arrangement, application, tensors = premake(k, n, 64, 128, 32)
        lib = ntsym.make(arrangement, application, tensors, caller="cuda", kernel_name=f"bmm_{k}_{n}",
                         output_dir=out_dir / f"{k}_{n}", num_warps=4, num_stages=3)
        for rows, expanded in itertools.product((1, 64), (True, False)):
            x = torch.randn(2, rows, k, device="cuda", dtype=torch.float16, generator=gen)
            weight = torch.randn(n, k, device="cuda", dtype=torch.float16, generator=gen) / k ** 0.5
            other = weight.t().unsqueeze(0).expand(2, -1, -1)
            other = other if expanded else other.contiguous()
            out = torch.empty(2, rows, n, device="cuda", dtype=torch.float16)
            lib(x, other, out)
            library = triton.testing.do_bench_cudagraph(lambda: lib(x, other, out)) * 1e3
            bmm.kernel(x, other, out, **meta, num_warps=4, num_stages=3)
            jit = triton.testing.do_bench_cudagraph(
                lambda: bmm.kernel(x, other, out, **meta, num_warps=4, num_stages=3)) * 1e3
            reference = triton.testing.do_bench_cudagraph(lambda: torch.bmm(x, other)) * 1e3
            print(f"| {k} x {n} | 2 x {rows} | {'expanded' if expanded else 'contiguous'} | {library:.1f} | "
                  f"{jit:.1f} | {reference:.1f} |", flush=True)


if __name__ == "__main__":
    import sys

    same_config() if "--same-config" in sys.argv else main()
