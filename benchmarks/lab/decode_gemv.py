"""The decode linears of an 8B Llama (two rows, fp16) over a grid of
configurations of examples/llm/kernels.py's GEMV tiling: which reach the copy
bandwidth, and what the tuner picks.

    python -m benchmarks.lab.decode_gemv [--workers 16] [--rounds 3]

For each weight shape (N, K) of a decoder layer and the LM head, and each
configuration (BLOCK_SIZE_N, BLOCK_SIZE_K, num_warps, num_stages), the time
of one ``linear`` (do_bench median, L2 flushed) and the weight bytes read per
second; beside them the tuner's own choice (the kernel called without a
configuration), cuBLAS (``torch.nn.functional.linear``) and a device copy of
as many bytes (``torch.Tensor.copy_``), all in one process.  The
configurations are compiled first in worker processes into one
``TRITON_CACHE_DIR``."""

import argparse
import itertools
import os
from concurrent.futures import ProcessPoolExecutor

import torch
import triton
from triton.testing import do_bench

SHAPES = {"q, o": (4096, 4096), "k, v": (1024, 4096), "gate, up": (14336, 4096), "down": (4096, 14336),
          "qkv fused": (6144, 4096), "gate+up fused": (28672, 4096), "lm_head": (128256, 4096)}
GRID = list(itertools.product((16, 32, 64, 128), (128, 256, 512), (4, 8), (3, 4, 5, 6)))


def _call(kernels, x, w, out, config):
    bn, bk, warps, stages = config
    kernels.gemv_kernel(x, w.t(), out, BLOCK_SIZE_M=16, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk,
                        num_warps=warps, num_stages=stages)


def _compile(config):
    from examples.llm import kernels

    x = torch.randn(2, 4096, dtype=torch.float16, device="cuda")
    w = torch.randn(1024, 4096, dtype=torch.float16, device="cuda")
    out = torch.empty(2, 1024, dtype=torch.float16, device="cuda")
    try:
        _call(kernels, x, w, out, config)
        torch.cuda.synchronize()
        return None
    except Exception as error:  # noqa: BLE001 - reported
        return f"{config}: {type(error).__name__}: {str(error)[:120]}"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=16)
    parser.add_argument("--top", type=int, default=5)
    args = parser.parse_args()
    import multiprocessing

    with ProcessPoolExecutor(args.workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        failed = [f for f in pool.map(_compile, GRID) if f]
    from examples.llm import kernels

    print(f"device {torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}; "
          f"fp16, x (2, K), weight (N, K); {len(GRID)} configurations, {len(failed)} failed to compile")
    for f in failed[:5]:
        print("  failed:", f)
    print("\n| weight | N x K | copy TB/s | cuBLAS TB/s | tuned TB/s (config) | best TB/s | best configs (BN, BK, warps, stages: TB/s) |")
    print("|---|---|---:|---:|---:|---:|---|")
    for label, (n, k) in SHAPES.items():
        x = torch.randn(2, k, dtype=torch.float16, device="cuda")
        w = torch.randn(n, k, dtype=torch.float16, device="cuda") / k ** 0.5
        out = torch.empty(2, n, dtype=torch.float16, device="cuda")
        ref = torch.nn.functional.linear(x, w)
        nbytes = w.numel() * w.element_size()
        tbs = lambda ms: nbytes / (ms * 1e-3) / 1e12  # noqa: E731
        dst = torch.empty_like(w)
        copy = do_bench(lambda: dst.copy_(w), warmup=10, rep=50, return_mode="median") / 2  # read + write
        cublas = do_bench(lambda: torch.nn.functional.linear(x, w), warmup=10, rep=50, return_mode="median")
        kernels.linear(x, w, out)  # tunes
        assert torch.allclose(out.float(), ref.float(), atol=2e-2, rtol=2e-2)
        tuned = do_bench(lambda: kernels.linear(x, w, out), warmup=10, rep=50, return_mode="median")
        chosen = [str(c) for c in kernels.gemv_kernel.calls.tuned.values()][-1:]
        results = []
        for config in GRID:
            if any(f.startswith(str(config)) for f in failed):
                continue
            _call(kernels, x, w, out, config)
            ms = do_bench(lambda: _call(kernels, x, w, out, config), warmup=5, rep=25, return_mode="median")
            results.append((ms, config))
        results.sort()
        _call(kernels, x, w, out, results[0][1])
        assert torch.allclose(out.float(), ref.float(), atol=2e-2, rtol=2e-2)
        best = ", ".join(f"{c}: {tbs(ms):.2f}" for ms, c in results[:args.top])
        print(f"| {label} | {n} x {k} | {tbs(copy):.2f} | {tbs(cublas):.2f} | {tbs(tuned):.2f} ({'; '.join(chosen)}) "
              f"| {tbs(results[0][0]):.2f} | {best} |", flush=True)


if __name__ == "__main__":
    main()
