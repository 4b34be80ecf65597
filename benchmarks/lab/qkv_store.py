"""The 8B Llama's decode q/k/v product with the rotation and the cache store in
its epilogue (``examples/llm/qkv_store.py``) against the two kernels apart
(``linear_normed`` then ``rope_and_store``): two rows, fp16, a 1024-position
cache.  Each as the tuner leaves it, then the fused kernel at fixed
configurations; CUDA-graph replays (``do_bench_cudagraph`` medians), one
process.

    python -m benchmarks.lab.qkv_store
"""

import itertools
import os

import torch

import ntsym  # noqa: F401,I001  (without a GPU, selects the interpreter before triton loads)
import triton
from examples.llm import kernels, qkv_store


def main():
    gen = torch.Generator("cuda").manual_seed(0)
    b, heads, kv_heads, d, k_dim, cache_len = 2, 32, 8, 128, 4096, 1024
    x = torch.randn(b, 1, k_dim, device="cuda", dtype=torch.float16, generator=gen)
    norm_weight = torch.rand(k_dim, device="cuda", dtype=torch.float16, generator=gen) + 0.5
    weight = torch.randn((heads + 2 * kv_heads) * d, k_dim, device="cuda", dtype=torch.float16,
                         generator=gen) / k_dim ** 0.5
    normed, squares = kernels.row_squares(x, norm_weight)
    angles = torch.randn(b, 1, d // 2, device="cuda", generator=gen)
    cos, sin = (t.repeat(1, 1, 2).half() for t in (angles.cos(), angles.sin()))
    position = torch.tensor(300, device="cuda")
    caches = [torch.zeros(b, kv_heads, cache_len, d, device="cuda", dtype=torch.float16) for _ in range(4)]

    def apart():
        qkv = kernels.linear_normed(normed, squares, 1e-5, weight)
        q, k, v = qkv.split([heads * d, kv_heads * d, kv_heads * d], -1)
        return kernels.rope_and_store(q.view(b, 1, heads, d), k.view(b, 1, kv_heads, d), v.view(b, 1, kv_heads, d),
                                      cos, sin, caches[0], caches[1], position)

    def fused(**options):
        return qkv_store.qkv_store(normed, squares, 1e-5, weight, cos, sin, caches[2], caches[3], position, heads,
                                   **options)

    os.environ["NTSYM_PRINT_TUNING"] = "1"
    expected, got = apart(), fused()
    os.environ.pop("NTSYM_PRINT_TUNING")
    torch.cuda.synchronize()
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}")
    print(f"max |q| difference {(got - expected).abs().max().item():.3g}, keys "
          f"{(caches[2] - caches[0]).abs().max().item():.3g}, values {(caches[3] - caches[1]).abs().max().item():.3g}")
    only = lambda: kernels.linear_normed(normed, squares, 1e-5, weight)  # noqa: E731
    rows = [("linear_normed alone (tuned)", only), ("linear_normed + rope_and_store (tuned)", apart),
            ("qkv_store (tuned)", fused)]
    for bn, bk, warps, stages in itertools.product((16, 32), (128, 256, 512), (4,), (3, 4, 6)):
        options = dict(BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, ntsym_options={"num_warps": warps, "num_stages": stages})
        rows.append((f"qkv_store {bn}x{bk} w{warps} s{stages}", lambda o=options: fused(**o)))
    print("\n| kernel | µs (graph replay) |\n|---|---:|")
    for name, fn in rows:
        try:
            fn()
            us = triton.testing.do_bench_cudagraph(fn, rep=200) * 1e3
            print(f"| {name} | {us:.1f} |", flush=True)
        except Exception as exc:  # a configuration past the shared memory
            print(f"| {name} | failed: {str(exc).splitlines()[0][:80]} |", flush=True)


if __name__ == "__main__":
    main()
