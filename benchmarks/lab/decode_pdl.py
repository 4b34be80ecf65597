"""Would programmatic dependent launch (PDL) bring a decode step's products
nearer the weight-read bound?  A chain of an 8B Llama step's products (two
rows, fp16: q/k/v, o, gate/up, down for each of 32 layers, each product's
input the previous one's output), captured in a CUDA graph, with a plain
Triton GEMV at the tilings ntsym's tuner picks for these shapes.  Variants:

- ``plain``: launched as usual (each kernel starts when the one before ends);
- ``pdl``: launched with ``launch_pdl=True``; each program signals
  ``gdc_launch_dependents`` and then waits (``gdc_wait``) before its first load,
  so the next kernel's programs are scheduled during this one's tail;
- ``pdl+prefetch`` (``PREFETCH``; no longer in the list: it doubled and tripled
  the time): as ``pdl``, but before waiting each program asks L2 for its first
  weight tiles (``prefetch.global.L2``; the weights do not depend on the kernel
  before);
- ``pdl+early``: as ``pdl``, but each program loads its first ``EARLY`` weight
  tiles into registers before waiting, so those loads run during the previous
  kernel's tail; the loop takes the rest;
- ``pdl+bulk``: as ``pdl``, but before waiting each program asks L2 for the
  first ``BULK`` bytes of each of its weight rows, one bulk prefetch
  (``cp.async.bulk.prefetch.L2``) a row; the loop then starts on L2 hits;
- ``pdl, no wait``: as ``pdl`` without ``gdc_wait`` (``PREFETCH=-1``): a kernel
  may read its input before the one before has written it, so its result
  differs; its time shows how far the launches overlap at all.

Each variant is timed in a CUDA graph and launched eagerly (stream order).

    python -m benchmarks.lab.decode_pdl [--layers 32] [--replays 50]

ms per chain (CUDA events around graph replays), against the weight bytes at
the device copy bandwidth (``copy_`` of 1 GiB, read + write halved); the
outputs of every variant are compared with the plain one's.
"""

import argparse

import torch
import triton
import triton.language as tl

# (N, K) and (BLOCK_N, BLOCK_K, num_warps, num_stages): a layer's products.
PRODUCTS = [((6144, 4096), (32, 128, 4, 6)), ((4096, 4096), (32, 128, 4, 6)),
            ((28672, 4096), (32, 512, 4, 4)), ((4096, 14336), (32, 256, 4, 6))]


@triton.jit
def _prefetch(ptrs):
    return tl.inline_asm_elementwise("prefetch.global.L2 [$1]; mov.u32 $0, 0;", "=r,l", [ptrs], dtype=tl.int32,
                                     is_pure=False, pack=1)


@triton.jit
def _bulk_prefetch(ptrs, sizes):
    """One ``cp.async.bulk.prefetch.L2`` per element: ``sizes`` bytes from ``ptrs`` into L2."""
    return tl.inline_asm_elementwise("cp.async.bulk.prefetch.L2.global [$1], $2; mov.u32 $0, 0;", "=r,l,r",
                                     [ptrs, sizes], dtype=tl.int32, is_pure=False, pack=1)


@triton.jit
def gemv(x_ptr, w_ptr, y_ptr, M, N, K, stride_x, stride_w, stride_y, BLOCK_M: tl.constexpr,
         BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, PDL: tl.constexpr, PREFETCH: tl.constexpr,
         EARLY: tl.constexpr, BULK: tl.constexpr):
    pid = tl.program_id(0)
    rm = tl.arange(0, BLOCK_M)
    rn = pid * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    w_ptrs = w_ptr + rn[None, :] * stride_w + rk[:, None]  # a (BLOCK_K, BLOCK_N) tile of W.T
    x_ptrs = x_ptr + rm[:, None] * stride_x + rk[None, :]
    if PDL:
        tl.extra.cuda.gdc_launch_dependents()
        for p in tl.static_range(PREFETCH):
            _prefetch(w_ptrs + p * BLOCK_K)
        if BULK > 0:  # the first BULK bytes of each of the program's weight rows, into L2
            _bulk_prefetch(w_ptr + rn * stride_w, tl.full((BLOCK_N,), BULK, tl.int32))
        if EARLY == 0 and PREFETCH >= 0:
            tl.extra.cuda.gdc_wait()
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    if EARLY >= 1:  # weights do not depend on the kernel before: load them first
        w0 = tl.load(w_ptrs)
        if EARLY >= 2:
            w1 = tl.load(w_ptrs + BLOCK_K)
        tl.extra.cuda.gdc_wait()
        x = tl.load(x_ptrs, mask=rm[:, None] < M, other=0.0)
        acc += tl.dot(x, w0)
        if EARLY >= 2:
            x = tl.load(x_ptrs + BLOCK_K, mask=rm[:, None] < M, other=0.0)
            acc += tl.dot(x, w1)
        x_ptrs += EARLY * BLOCK_K
        w_ptrs += EARLY * BLOCK_K
    for _ in range(EARLY * BLOCK_K, K, BLOCK_K):
        x = tl.load(x_ptrs, mask=rm[:, None] < M, other=0.0)
        w = tl.load(w_ptrs)
        acc += tl.dot(x, w)
        x_ptrs += BLOCK_K
        w_ptrs += BLOCK_K
    y_ptrs = y_ptr + rm[:, None] * stride_y + rn[None, :]
    tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=rm[:, None] < M)


def _chain(weights, buffers, pdl, prefetch, early=0, bulk=0):
    for layer in weights:
        for ((n, k), (bn, bk, warps, stages)), w, (x, y) in zip(PRODUCTS, layer, buffers):
            gemv[(n // bn,)](x, w, y, x.shape[0], n, k, x.stride(0), w.stride(0), y.stride(0), BLOCK_M=16,
                             BLOCK_N=bn, BLOCK_K=bk, PDL=pdl, PREFETCH=prefetch, EARLY=early, BULK=bulk,
                             num_warps=warps,
                             num_stages=stages, launch_pdl=pdl)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--layers", type=int, default=32)
    parser.add_argument("--replays", type=int, default=50)
    parser.add_argument("--bulk", type=int, nargs="*", default=(1024, 2048, 4096),
                        help="bytes of each weight row to prefetch into L2 before the wait")
    args = parser.parse_args()
    gen = torch.Generator("cuda").manual_seed(0)
    weights = [[torch.randn(n, k, device="cuda", dtype=torch.float16, generator=gen) / k ** 0.5
                for (n, k), _ in PRODUCTS] for _ in range(args.layers)]
    nbytes = sum(w.numel() * w.element_size() for layer in weights for w in layer)
    # Each product reads the previous one's output (its first K columns).
    outs = [torch.zeros(2, n, device="cuda", dtype=torch.float16) for (n, _), _ in PRODUCTS]
    first = torch.randn(2, 14336, device="cuda", dtype=torch.float16, generator=gen)
    buffers = []
    for i, ((n, k), _) in enumerate(PRODUCTS):
        source = outs[i - 1] if i else first
        buffers.append((source[:, :k], outs[i]))
    big = torch.empty(2**29, device="cuda", dtype=torch.float16)
    dst = torch.empty_like(big)
    copy = triton.testing.do_bench(lambda: dst.copy_(big), warmup=25, rep=100, return_mode="median")
    bandwidth = big.numel() * 2 / (copy / 2 * 1e-3)
    bound = nbytes / bandwidth * 1e3
    print(f"device {torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}; "
          f"{args.layers} layers x {len(PRODUCTS)} products, {nbytes / 1e9:.2f} GB of weights, copy "
          f"{bandwidth / 1e12:.2f} TB/s, bound {bound:.3f} ms")
    print("\n| variant | ms per chain (graph) | chain / bound | ms per chain (eager) | max abs difference from plain |")
    print("|---|---:|---:|---:|---:|")
    reference = None
    variants = [("plain", False, 0, 0, 0), ("pdl", True, 0, 0, 0), ("pdl+early 1", True, 0, 1, 0),
                ("pdl+early 2", True, 0, 2, 0), ("pdl, no wait", True, -1, 0, 0)]
    variants += [(f"pdl+bulk L2 {b} B a row", True, 0, 0, b) for b in args.bulk]
    variants += [("plain (again)", False, 0, 0, 0)]
    for name, pdl, prefetch, early, bulk in variants:
        _chain(weights, buffers, pdl, prefetch, early, bulk)  # compiles
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            _chain(weights, buffers, pdl, prefetch, early, bulk)
        graph.replay()
        torch.cuda.synchronize()
        result = outs[-1].float().clone()
        reference = result if reference is None else reference
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        for _ in range(5):
            graph.replay()
        start.record()
        for _ in range(args.replays):
            graph.replay()
        end.record()
        torch.cuda.synchronize()
        ms = start.elapsed_time(end) / args.replays
        diff = (result - reference).abs().max().item()
        for _ in range(3):
            _chain(weights, buffers, pdl, prefetch, early, bulk)
        start.record()
        for _ in range(10):
            _chain(weights, buffers, pdl, prefetch, early, bulk)
        end.record()
        torch.cuda.synchronize()
        eager = start.elapsed_time(end) / 10
        print(f"| {name} | {ms:.3f} | {ms / bound:.3f} | {eager:.3f} | {diff:.3g} |", flush=True)


if __name__ == "__main__":
    main()
