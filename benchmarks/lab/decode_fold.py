"""Does the split decode attention need its second kernel?  The split form
(``examples.llm.kernels.decode_attention`` on caches longer than
``UNSPLIT_CACHE_LEN``) stores each split's partial result, then a combine
kernel merges them.  Folded, each program counts itself on an atomic counter
once its part is stored, and the last of a group's splits to arrive combines
them: one kernel per layer.

Per layer, in a CUDA graph of ``--layers`` layers (fp16, batch 2 or 1, 32 query
heads, 8 key/value heads, head dim 128), each layer first reads and writes a
256 MiB buffer (what the products do to L2 between two attentions):

- ``combine``: the splits, then the combine kernel (``fold=False``);
- ``fold``: the splits, the last program of each group combining;
- ``unsplit``: one program per batch and key/value head (``unsplit_up_to`` the cache).

    python -m benchmarks.lab.decode_fold [--layers 32] [--batch 2]
    TRITON_INTERPRET=1 python -m benchmarks.lab.decode_fold --cpu

µs per layer, the evict's own time taken off (CUDA events around graph
replays, the best of three interleaved rounds of the median of ``--replays``).
"""

import argparse

import torch

import ntsym
import ntsym.language as ntl
from benchmarks.lab.decode_prefetch import _graph, _time  # the same graph timing
from examples.llm import kernels
from ntsym import Tensor

_D = {"constexpr": True, "upper_bound": 256, "power_of_two": True}
_SPLITS = {"constexpr": True, "upper_bound": 256}


def decode_fold_arrangement(q, k, v, length, pending, scale, o, lse, arrivals, output, SPLITS, GROUPS,
                            BLOCK_SIZE_G=ntsym.block_size(lower_bound=16, upper_bound=16),
                            BLOCK_SIZE_N=ntsym.block_size(lower_bound=16, upper_bound=128)):
    # As ``decode_arrangement``; ``arrivals`` (B, Hkv, G) int32 and ``output`` (B, Hkv, G, D)
    # are reached only through their pointers.
    arranged = kernels.decode_arrangement(q, k, v, length, pending, scale, o, lse, BLOCK_SIZE_G, BLOCK_SIZE_N)
    grid = tuple(arranged[-1].shape)

    def arrange_whole(x):
        whole = x.tile(tuple(-1 for _ in x.shape))
        for _ in range(len(x.shape), len(grid)):
            whole = whole.unsqueeze(len(whole.shape))
        return whole.expand(grid)

    return (*arranged, arrange_whole(arrivals), arrange_whole(output), SPLITS, GROUPS)


def decode_fold_application(q, k, v, length, pending, scale, o, lse, arrivals, output, SPLITS, GROUPS):
    # The split's walk, as ``kernels.decode_application``'s.
    q_loaded = q
    scale_log2 = scale * 1.4426950408889634
    acc = ntl.zeros(o.shape, dtype=ntl.float32)
    m = ntl.full((q.shape[0],), float("-inf"), dtype=ntl.float32)
    l = ntl.zeros((q.shape[0],), dtype=ntl.float32)
    split = lse.offsets(2)
    valid = ntl.sum(length, 0) + pending - split * k.source.shape[3]
    count = ntl.minimum(ntl.maximum(valid + k[0].shape[0] - 1, 0) // k[0].shape[0], k.shape[0])
    for i in range(count):
        key = k[i].offsets(3)[None, :]
        s = ntl.dot(q_loaded, ntl.trans(k[i])) * scale_log2
        s = ntl.where((key < valid) & (key < k.source.shape[3]), s, float("-inf"))
        m_new = ntl.maximum(m, ntl.max(s, 1))
        p = ntl.exp2(s - m_new[:, None])
        alpha = ntl.exp2(m - m_new)
        acc = acc * alpha[:, None] + ntl.dot(p.to(v[i].dtype), v[i])
        l = l * alpha + ntl.sum(p, 1)
        m = m_new
    o = acc / ntl.where(l > 0, l, 1.0)[:, None]  # noqa: F841
    lse = m + ntl.log2(l)  # noqa: F841
    # Each program counts itself at its block's first query head once its part is
    # stored (the barrier: every thread's stores before the count, which releases
    # them); the last of the group's splits to arrive combines them (its count
    # acquires the others' parts) and resets the count for the next launch.
    b = lse.offsets(0)
    h = lse.offsets(1)
    heads = lse.offsets(3)
    first = ntl.min(heads, 0)
    counter = (arrivals.source.data_ptr() + b * arrivals.source.stride(0) + h * arrivals.source.stride(1)
               + first * arrivals.source.stride(2))
    ntl.debug_barrier()
    ticket = ntl.atomic_add(counter, 1, sem="acq_rel")
    splits = lse.source.shape[2]
    if ticket == splits - 1:
        part = ntl.arange(0, SPLITS)
        d = o.offsets(4)
        lse_base = lse.source.data_ptr() + b * lse.source.stride(0) + h * lse.source.stride(1)
        o_base = o.source.data_ptr() + b * o.source.stride(0) + h * o.source.stride(1)
        out_base = output.source.data_ptr() + b * output.source.stride(0) + h * output.source.stride(1)
        # The block's query heads at once (GROUPS: a power of two at least their count).
        g = first + ntl.arange(0, GROUPS)
        inside = (g < lse.source.shape[3]) & (g < first + lse.shape[0])
        weights_log2 = ntl.load(lse_base + part[:, None] * lse.source.stride(2) + g[None, :] * lse.source.stride(3),
                                mask=(part < splits)[:, None] & inside[None, :], other=float("-inf"))
        top = ntl.where(inside, ntl.max(weights_log2, 0), 0.0)
        w = ntl.exp2(weights_log2 - top[None, :])
        parts = ntl.load(o_base + part[:, None, None] * o.source.stride(2) + g[None, :, None] * o.source.stride(3)
                         + d[None, None, :] * o.source.stride(4),
                         mask=((part < splits)[:, None] & inside[None, :])[:, :, None], other=0.0)
        combined = ntl.sum(parts * w[:, :, None], 0) / ntl.where(inside, ntl.sum(w, 0), 1.0)[:, None]
        ntl.store(out_base + g[:, None] * output.source.stride(2) + d[None, :] * output.source.stride(3),
                  combined.to(output.source.dtype), mask=inside[:, None])
        ntl.store(counter, 0)


decode_fold_kernel = ntsym.make(
    decode_fold_arrangement,
    decode_fold_application,
    (Tensor(shape=(None, None, 1, None, None), shape_options=(None, None, None, None, _D)),
     Tensor(5, shape_options=(None, None, None, None, _D)),
     Tensor(5, shape_options=(None, None, None, None, _D)),
     Tensor(shape=(1,)),
     Tensor(0, dtype=ntsym.int64),
     Tensor(0),
     Tensor(5, shape_options=(None, None, _SPLITS, None, _D)),
     Tensor(4, shape_options=(None, None, _SPLITS, None)),
     Tensor(3, dtype=ntsym.int32),
     Tensor(4, shape_options=(None, None, None, _D)),
     Tensor(0, constexpr=True),
     Tensor(0, constexpr=True)),
)


_ARRIVALS = {}


def _arrivals(b, kv_heads, groups, device):
    """Zeroed counters, one set per device and stream: each launch leaves them
    at zero, and launches on one stream do not overlap."""
    stream = torch.cuda.current_stream(device).cuda_stream if device.type == "cuda" else 0
    key = (device, stream, b, kv_heads, groups)
    if key not in _ARRIVALS:
        _ARRIVALS[key] = torch.zeros((b, kv_heads, groups), dtype=torch.int32, device=device)
    return _ARRIVALS[key]


def decode_fold(q, k_cache, v_cache, length, pending=0, out=None):
    """``kernels.decode_attention`` on a split cache, its combine folded in."""
    b, h, _, d = q.shape
    kv_heads, cache_len = k_cache.shape[1], k_cache.shape[2]
    block_n, splits = kernels.decode_splits(cache_len)
    groups = h // kv_heads
    out = torch.empty(q.shape, dtype=q.dtype, device=q.device) if out is None else out
    lse = torch.empty((b, kv_heads, splits, groups), dtype=torch.float32, device=q.device)
    o = torch.empty((b, kv_heads, splits, groups, d), dtype=torch.float32, device=q.device)
    decode_fold_kernel(q.reshape(b, kv_heads, 1, groups, d), k_cache.unflatten(2, (splits, -1)),
                       v_cache.unflatten(2, (splits, -1)), length.reshape(1), int(pending), float(d**-0.5), o, lse,
                       _arrivals(b, kv_heads, groups, q.device), out.view(b, kv_heads, groups, d),
                       1 << (splits - 1).bit_length(), 1 << (min(groups, 16) - 1).bit_length(),
                       BLOCK_SIZE_G=16, BLOCK_SIZE_N=block_n)
    return out


FORMS = {"combine": lambda *args, **options: kernels.decode_attention(*args, **options),
         "fold": decode_fold,
         "unsplit": lambda *args, **options: kernels.decode_attention(*args, unsplit_up_to=1 << 30, **options)}


def _operands(dev, batch, cache, length, dt=torch.float16, d=128, heads=32, kv_heads=8):
    torch.manual_seed(0)
    q = torch.randn(batch, heads, 1, d, device=dev, dtype=dt)
    keys = torch.randn(batch, kv_heads, cache, d, device=dev, dtype=dt)
    values = torch.randn(batch, kv_heads, cache, d, device=dev, dtype=dt)
    return q, keys, values, torch.tensor([length], device=dev, dtype=torch.int64)


def cpu_check():
    for cache, length in ((320, 9), (1024, 700), (640, 639)):
        q, keys, values, n = _operands("cpu", 2, cache, length, torch.float32, 16, 8, 2)
        got = {name: form(q, keys, values, n, pending=1) for name, form in FORMS.items()}
        print(f"cache {cache}, length {length}: max |fold - combine| "
              f"{(got['fold'] - got['combine']).abs().max().item():.2e}, max |fold - unsplit| "
              f"{(got['fold'] - got['unsplit']).abs().max().item():.2e}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layers", type=int, default=32)
    parser.add_argument("--replays", type=int, default=30)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--cpu", action="store_true")
    args = parser.parse_args()
    if args.cpu:
        return cpu_check()
    import triton

    big_src = torch.empty(2**27, device="cuda", dtype=torch.float16)
    big_dst = torch.empty_like(big_src)

    def evict():
        big_dst.copy_(big_src)

    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}; batch "
          f"{args.batch}; {args.layers} layers a graph, median of {args.replays} replays, best of 3 rounds; "
          "µs per layer beyond the evict")
    print("| cache | length | " + " | ".join(FORMS) + " | fold / combine | max abs difference |")
    print("|---:|---:|" + "---:|" * (len(FORMS) + 2))
    for cache, length in ((512, 300), (1024, 288), (1024, 543), (1024, 800), (1024, 1000), (4096, 3000)):
        q, keys, values, n = _operands("cuda", args.batch, cache, length)
        out = torch.empty_like(q)
        reference = kernels.decode_attention(q, keys, values, n, pending=1).clone()
        forms = {"evict": evict}
        for name, form in FORMS.items():
            forms[name] = lambda form=form: (evict(), form(q, keys, values, n, pending=1, out=out))
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
        # The graphs replayed again: a fold that left a counter off zero would now be wrong.
        for name in FORMS:
            out.zero_()
            graphs[name].replay()
            torch.cuda.synchronize()
            diff = max(diff, (out - reference).abs().max().item())
        base = min(results["evict"])
        times = {name: min(results[name]) - base for name in FORMS}
        cells = " | ".join(f"{times[name]:.2f}" for name in FORMS)
        print(f"| {cache} | {length} | {cells} | {times['fold'] / times['combine']:.3f} | {diff:.1e} |", flush=True)


if __name__ == "__main__":
    main()
