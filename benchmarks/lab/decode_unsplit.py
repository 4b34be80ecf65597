"""Does a decode step's attention need its split over the cache and the combine
kernel after it?  The example splits the cache into blocks of 64 positions
(one program each per batch and key/value head), then merges the splits in a
second kernel.  With two rows and 8 key/value heads, one program per batch and
head walking every valid block writes its result at once: one kernel instead
of two, but 16 programs each reading the whole valid cache.

Per layer, in a CUDA graph of ``--layers`` layers (fp16, batch 2, 32 query
heads, 8 key/value heads, head dim 128), each layer first reads and writes a
256 MiB buffer (what the products do to L2 between two attentions):

- ``split``: ``examples.llm.kernels.decode_attention`` as committed;
- ``unsplit BN``: its ``decode_kernel`` with one split (blocks of BN keys),
  writing the fp16 output directly, no combine.

    python -m benchmarks.lab.decode_unsplit [--layers 32]
    TRITON_INTERPRET=1 python -m benchmarks.lab.decode_unsplit --cpu

µs per layer, the evict's own time taken off (CUDA events around graph
replays, the best of three interleaved rounds of the median of ``--replays``).
"""

import argparse
import statistics

import torch

from benchmarks.lab.decode_prefetch import _graph, _time  # the same graph timing
from examples.llm import kernels


def decode_unsplit(q, k_cache, v_cache, length, block_n, pending=1, out=None, **config):
    b, h, _, d = q.shape
    kv_heads = k_cache.shape[1]
    groups = h // kv_heads
    out = torch.empty(q.shape, dtype=q.dtype, device=q.device) if out is None else out
    lse = torch.empty((b, kv_heads, 1, groups), dtype=torch.float32, device=q.device)
    kernels.decode_kernel(q.reshape(b, kv_heads, 1, groups, d), k_cache.unflatten(2, (1, -1)),
                          v_cache.unflatten(2, (1, -1)), length.reshape(1), int(pending), float(d**-0.5),
                          out.view(b, kv_heads, 1, groups, d), lse, BLOCK_SIZE_G=16, BLOCK_SIZE_N=block_n, **config)
    return out


def _operands(dev, cache, length, dt=torch.float16, d=128):
    torch.manual_seed(0)
    q = torch.randn(2, 32, 1, d, device=dev, dtype=dt)
    keys = torch.randn(2, 8, cache, d, device=dev, dtype=dt)
    values = torch.randn(2, 8, cache, d, device=dev, dtype=dt)
    return q, keys, values, torch.tensor([length], device=dev, dtype=torch.int64)


def cpu_check():
    for cache, length in ((192, 95), (192, 100), (64, 10)):
        q, keys, values, n = _operands("cpu", cache, length, torch.float32, 16)
        split = kernels.decode_attention(q, keys, values, n, pending=1)
        for block_n in (16, 64):
            got = decode_unsplit(q, keys, values, n, block_n)
            print(f"cache {cache}, length {length}, BN {block_n}: max |unsplit - split| "
                  f"{(got - split).abs().max().item():.2e}")


def configs(args, evict):
    import itertools

    grid = list(itertools.product((64, 128), (4, 8), (2, 3, 4, 5)))
    print("| cache | length | split | " + " | ".join(f"{bn} w{w} s{s}" for bn, w, s in grid) + " |")
    print("|---:|---:|---:|" + "---:|" * len(grid))
    for cache, length in ((1024, 160), (1024, 288), (1024, 543), (1024, 1000)):
        q, keys, values, n = _operands("cuda", cache, length)
        out = torch.empty_like(q)
        reference = kernels.decode_attention(q, keys, values, n, pending=1).clone()
        forms = {"evict": evict,
                 "split": lambda: (evict(), kernels.decode_attention(q, keys, values, n, pending=1, out=out))}
        for bn, w, s in grid:
            forms[(bn, w, s)] = (lambda bn=bn, w=w, s=s: (
                evict(), decode_unsplit(q, keys, values, n, bn, out=out, num_warps=w, num_stages=s)))
        usable = {}
        for name, fn in forms.items():
            try:
                fn()
                torch.cuda.synchronize()
            except Exception as error:  # noqa: BLE001 - a configuration that does not fit
                print(f"<!-- {name}: {type(error).__name__} -->")
                continue
            if name != "evict" and (out - reference).abs().max().item() > 2e-3:
                print(f"<!-- {name}: wrong, {(out - reference).abs().max().item():.1e} -->")
                continue
            usable[name] = fn
        graphs = {name: _graph(fn, args.layers) for name, fn in usable.items()}
        results = {name: [] for name in graphs}
        for _ in range(3):
            for name, graph in graphs.items():
                results[name].append(_time(graph, args.replays) * 1e3 / args.layers)
        base = min(results["evict"])
        cells = [f"{min(results[k]) - base:.2f}" if k in results else "-" for k in ["split", *grid]]
        print(f"| {cache} | {length} | " + " | ".join(cells) + " |", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layers", type=int, default=32)
    parser.add_argument("--replays", type=int, default=30)
    parser.add_argument("--cpu", action="store_true")
    parser.add_argument("--configs", action="store_true",
                        help="the unsplit kernel at fixed block, warps and stages instead")
    args = parser.parse_args()
    if args.cpu:
        return cpu_check()
    import triton

    big_src = torch.empty(2**27, device="cuda", dtype=torch.float16)
    big_dst = torch.empty_like(big_src)

    def evict():
        big_dst.copy_(big_src)

    if args.configs:
        return configs(args, evict)
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}; "
          f"{args.layers} layers a graph, median of {args.replays} replays, best of 3 rounds; "
          "µs per layer beyond the evict")
    print("| cache | length | split | unsplit 64 | unsplit 128 | max abs difference |")
    print("|---:|---:|---:|---:|---:|---:|")
    for cache, length in ((192, 33), (192, 96), (192, 158), (1024, 33), (1024, 160), (1024, 288), (1024, 543),
                          (1024, 1000)):
        q, keys, values, n = _operands("cuda", cache, length)
        out = torch.empty_like(q)
        forms = {"evict": evict,
                 "split": lambda: (evict(), kernels.decode_attention(q, keys, values, n, pending=1, out=out)),
                 "unsplit 64": lambda: (evict(), decode_unsplit(q, keys, values, n, 64, out=out)),
                 "unsplit 128": lambda: (evict(), decode_unsplit(q, keys, values, n, 128, out=out))}
        reference = kernels.decode_attention(q, keys, values, n, pending=1).clone()
        diff = 0.0
        for name, fn in forms.items():
            fn()  # tuned and compiled before capture
            torch.cuda.synchronize()
            if name != "evict":
                diff = max(diff, (out - reference).abs().max().item())
        graphs = {name: _graph(fn, args.layers) for name, fn in forms.items()}
        results = {name: [] for name in graphs}
        for _ in range(3):
            for name, graph in graphs.items():
                results[name].append(_time(graph, args.replays) * 1e3 / args.layers)
        base = min(results["evict"])
        cells = " | ".join(f"{min(results[name]) - base:.2f}" for name in ("split", "unsplit 64", "unsplit 128"))
        print(f"| {cache} | {length} | {cells} | {diff:.1e} |", flush=True)


if __name__ == "__main__":
    main()
