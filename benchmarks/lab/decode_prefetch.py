"""Would a decode step go faster if the output projection's weight were read
into L2 while the attention runs?  In an 8B Llama decode step the memory
system idles during the split-KV attention (a few microseconds a layer, its
reads a few MB) and then the output projection reads its 32 MiB weight from
HBM.  Here a second branch of the CUDA graph reads (part of) that weight
while the attention runs, and the projection starts when both are done.

Per layer, in a CUDA graph of ``--layers`` layers (fp16, two rows, a cache of
288 positions holding ``--length``):

- ``evict`` reads and writes a 256 MiB buffer (what the MLP's products do to
  L2 between two layers' attentions);
- ``attention`` is ``examples.llm.kernels.decode_attention``;
- ``o`` is ``linear_add_squares`` (the example's output projection, with its
  residual and the next norm's operands);
- ``touch(f)`` reads the first ``f`` of each row of the projection's weight
  in programs of ``BLOCK_R`` rows (a sum stored per program, so the loads
  stay), on the graph's second branch beside the attention, or in line.

    python -m benchmarks.lab.decode_prefetch [--layers 32] [--length 160]

ms per layer (CUDA events around graph replays, the median of ``--replays``).
"""

import argparse
import statistics

import torch
import triton
import triton.language as tl

from examples.llm import kernels


@triton.jit
def touch_kernel(w_ptr, out_ptr, rows, columns, stride, BLOCK_R: tl.constexpr, BLOCK_K: tl.constexpr,
                 EVICT: tl.constexpr):
    """Reads ``w[r0:r0 + BLOCK_R, :columns]`` (one program per block of rows)."""
    pid = tl.program_id(0)
    r = pid * BLOCK_R + tl.arange(0, BLOCK_R)[:, None]
    acc = tl.zeros((BLOCK_R, BLOCK_K), dtype=tl.float32)
    for k in range(0, columns, BLOCK_K):
        c = k + tl.arange(0, BLOCK_K)[None, :]
        if EVICT:
            w = tl.load(w_ptr + r * stride + c, mask=(r < rows) & (c < columns), other=0.0,
                        eviction_policy="evict_last")
        else:
            w = tl.load(w_ptr + r * stride + c, mask=(r < rows) & (c < columns), other=0.0)
        acc = tl.maximum(acc, w.to(tl.float32))
    tl.store(out_ptr + pid, tl.max(tl.max(acc, 1), 0))


def touch(weight, fraction, scratch, block_r, evict):
    rows, cols = weight.shape
    columns = int(cols * fraction) // 64 * 64
    grid = (triton.cdiv(rows, block_r),)
    touch_kernel[grid](weight, scratch, rows, columns, weight.stride(0), BLOCK_R=block_r, BLOCK_K=256,
                       EVICT=evict, num_warps=4)


def _graph(layer, layers):
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(layers):
            layer()
    return graph


def _time(graph, replays):
    times = []
    for _ in range(replays):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layers", type=int, default=32)
    parser.add_argument("--length", type=int, default=160)
    parser.add_argument("--replays", type=int, default=30)
    args = parser.parse_args()
    torch.manual_seed(0)
    dev, dt = "cuda", torch.float16
    batch, heads, kv_heads, d, hidden, cache = 2, 32, 8, 128, 4096, 288
    q = torch.randn(batch, heads, 1, d, device=dev, dtype=dt)
    keys = torch.randn(batch, kv_heads, cache, d, device=dev, dtype=dt)
    values = torch.randn(batch, kv_heads, cache, d, device=dev, dtype=dt)
    length = torch.tensor([args.length], device=dev, dtype=torch.int64)
    weight = torch.randn(hidden, hidden, device=dev, dtype=dt) / 64
    residual = torch.randn(batch, 1, hidden, device=dev, dtype=dt)
    norm = torch.randn(hidden, device=dev, dtype=dt)
    big_src = torch.empty(2**27, device=dev, dtype=dt)
    big_dst = torch.empty_like(big_src)
    scratch = torch.empty(4096, device=dev, dtype=torch.float32)
    side = torch.cuda.Stream()

    def evict():
        big_dst.copy_(big_src)

    def attention():
        return kernels.decode_attention(q, keys, values, length, pending=1)

    def o(out):
        return kernels.linear_add_squares(out.transpose(1, 2).reshape(batch, 1, hidden), weight, residual, norm)

    def layer_plain():
        evict()
        o(attention())

    def layer_side(fraction, block_r, evict_last):
        def layer():
            evict()
            main = torch.cuda.current_stream()
            side.wait_stream(main)
            with torch.cuda.stream(side):
                touch(weight, fraction, scratch, block_r, evict_last)
            out = attention()
            main.wait_stream(side)
            o(out)
        return layer

    def layer_inline(fraction):
        def layer():
            evict()
            out = attention()
            touch(weight, fraction, scratch, 64, False)
            o(out)
        return layer

    def parts(*fns):
        def layer():
            for fn in fns:
                fn()
        return layer

    # Warm-up (tuning, compilation) outside the graphs.
    for fn in (layer_plain, layer_side(1.0, 64, False), layer_side(1.0, 64, True), layer_inline(1.0)):
        fn()
    torch.cuda.synchronize()
    attended = attention()
    reference = o(attended)

    rows = [("evict alone", parts(evict)),
            ("evict + attention", parts(evict, attention)),
            ("evict + o (cold)", parts(evict, lambda: o(attended))),
            ("evict + attention + o (as the step)", layer_plain),
            ("evict + touch all in line + o", parts(evict, lambda: touch(weight, 1.0, scratch, 64, False),
                                                   lambda: o(attended))),
            ("evict + touch all in line", parts(evict, lambda: touch(weight, 1.0, scratch, 64, False))),
            ("as the step, touch all in line after attention", layer_inline(1.0))]
    for fraction in (0.25, 0.5, 0.75, 1.0):
        for block_r in (32, 128):
            for evict_last in (False, True):
                rows.append((f"as the step, touch {fraction:.2f} beside attention, {block_r} rows a program"
                             + (", evict_last" if evict_last else ""), layer_side(fraction, block_r, evict_last)))
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}; "
          f"{args.layers} layers a graph, cache length {args.length} of {cache}, median of {args.replays} replays")
    print("| layer | us per layer |")
    print("|---|---:|")
    for _, fn in rows:  # every kernel compiled before capture
        fn()
    torch.cuda.synchronize()
    graphs = [(name, _graph(fn, args.layers)) for name, fn in rows]
    results = {name: [] for name, _ in graphs}
    for _ in range(3):  # interleaved rounds
        for name, graph in graphs:
            results[name].append(_time(graph, args.replays) * 1e3 / args.layers)
    for name, _ in graphs:
        print(f"| {name} | {min(results[name]):.2f} |")
    out = o(attended)
    torch.cuda.synchronize()
    print("o output equal to the reference:", all(torch.equal(a, b) for a, b in zip(out, reference)))


if __name__ == "__main__":
    main()
