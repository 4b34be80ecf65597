"""Memory-bound bandwidth at the benchmark's sizes: copies of several sizes and elementwise add
variants, each timed three ways (do_bench, whose flush leaves dirty lines in L2; a flush that
only reads 256 MB; back-to-back launches over input sets larger than L2), plus ntsym's and
the Triton baseline's add and softmax.  ``python -m benchmarks.lab.bandwidth`` (GPU)."""
import os, sys, statistics
import torch, triton, triton.language as tl
from triton.testing import do_bench

DB = dict(warmup=25, rep=100, return_mode="median")
dev = "cuda"
props = torch.cuda.get_device_properties(0)
NSM = props.multi_processor_count
print(props.name, "SMs", NSM, "L2", props.L2_cache_size, "torch", torch.__version__, "triton", triton.__version__)


def rotated_ms(fns, iters=200):
    """Back-to-back launches cycling through input sets larger than L2 (no flush)."""
    for f in fns:
        f()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    res = []
    for _ in range(5):
        s.record()
        for i in range(iters):
            fns[i % len(fns)]()
        e.record()
        torch.cuda.synchronize()
        res.append(s.elapsed_time(e) / iters)
    return statistics.median(res)


def clean_flush_ms(fn):
    """do_bench-like, but the flush reads a 256 MB buffer (L2 left clean) instead of writing it."""
    buf = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device=dev).fill_(1)
    fn(); torch.cuda.synchronize()
    out = torch.empty((), dtype=torch.int64, device=dev)
    times = []
    for _ in range(300):
        buf.sum()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); fn(); e.record()
        times.append((s, e))
    torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) for a, b in times[50:])


rows = []


def rec(name, nbytes, ms_flush, ms_clean=None, ms_rot=None):
    rows.append((name, nbytes, ms_flush, ms_clean, ms_rot))


# --- copies
for mb in (32, 48, 64, 128, 512, 1024):
    n = mb * 1024 * 1024 // 2
    src = torch.randn(n, dtype=torch.float16, device=dev); dst = torch.empty_like(src)
    f = lambda: dst.copy_(src)
    sets = max(2, (400 * 2**20) // (2 * n * 2) + 1)
    pairs = [(torch.randn(n, dtype=torch.float16, device=dev), torch.empty(n, dtype=torch.float16, device=dev)) for _ in range(sets)]
    fns = [(lambda d=d, s_=s_: d.copy_(s_)) for s_, d in pairs]
    rec(f"torch copy {mb} MiB", 2 * n * 2, do_bench(f, **DB), clean_flush_ms(f), rotated_ms(fns))
    del pairs, fns, src, dst
    torch.cuda.empty_cache()


@triton.jit
def add_k(x, y, o, n, BLOCK: tl.constexpr, MASK: tl.constexpr, EVICT: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    if MASK:
        m = offs < n
        if EVICT:
            a = tl.load(x + offs, mask=m, eviction_policy="evict_first")
            b = tl.load(y + offs, mask=m, eviction_policy="evict_first")
        else:
            a = tl.load(x + offs, mask=m)
            b = tl.load(y + offs, mask=m)
        tl.store(o + offs, a + b, mask=m)
    else:
        a = tl.load(x + offs)
        b = tl.load(y + offs)
        tl.store(o + offs, a + b)


@triton.jit
def add_persistent(x, y, o, n, BLOCK: tl.constexpr, NPROG: tl.constexpr):
    pid = tl.program_id(0)
    tiles = tl.cdiv(n, BLOCK)
    for t in range(pid, tiles, NPROG):
        offs = t * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(o + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)


N = 16777216
x = torch.randn(N, dtype=torch.float16, device=dev); y = torch.randn_like(x); o = torch.empty_like(x)
sets = [(torch.randn_like(x), torch.randn_like(x), torch.empty_like(x)) for _ in range(6)]
nbytes = 3 * N * 2


def variant(name, launch):
    o.fill_(float("nan"))
    res = launch(x, y, o)
    torch.testing.assert_close(res if isinstance(res, torch.Tensor) else o, x + y)
    rec(name, nbytes, do_bench(lambda: launch(x, y, o), **DB), clean_flush_ms(lambda: launch(x, y, o)),
        rotated_ms([(lambda s=s: launch(*s)) for s in sets]))


variant("torch add", lambda a, b, c: torch.add(a, b, out=c))
for B in (1024, 2048, 4096, 8192, 16384):
    for w in (4, 8, 16):
        if B // (32 * w) < 8 and B < 8192:
            pass
        variant(f"add B={B} w={w}", lambda a, b, c, B=B, w=w: add_k[(triton.cdiv(N, B),)](a, b, c, N, B, True, False, num_warps=w))
for B, w in ((1024, 4), (2048, 8), (4096, 8)):
    variant(f"add B={B} w={w} nomask", lambda a, b, c, B=B, w=w: add_k[(triton.cdiv(N, B),)](a, b, c, N, B, False, False, num_warps=w))
    variant(f"add B={B} w={w} evict_first", lambda a, b, c, B=B, w=w: add_k[(triton.cdiv(N, B),)](a, b, c, N, B, True, True, num_warps=w))
for B, w, k in ((1024, 4, 8), (2048, 8, 4), (4096, 8, 2), (4096, 16, 4), (8192, 16, 2)):
    P = NSM * k
    variant(f"add persistent B={B} w={w} P={k}xSM", lambda a, b, c, B=B, w=w, P=P: add_persistent[(P,)](a, b, c, N, B, P, num_warps=w))

# ntsym add, tuned
sys.path.insert(0, os.getcwd())
try:
    from examples.add import add as nt_add
    variant("ntsym add (tuned)", lambda a, b, c: nt_add(a, b))
except Exception as exc:  # noqa
    print("ntsym add failed", exc)
from benchmarks import triton_baselines as tb
variant("triton baseline add", lambda a, b, c: tb.add(a, b))

# softmax 4096x4096: ntsym / triton baseline / torch, and a copy of the same bytes
xs = torch.randn(4096, 4096, dtype=torch.float16, device=dev)
ssets = [torch.randn_like(xs) for _ in range(8)]
from examples.softmax import softmax as nt_softmax
for name, f in (("ntsym softmax", nt_softmax), ("triton baseline softmax", tb.softmax), ("torch softmax", lambda t: torch.softmax(t, -1))):
    rec(name, 2 * xs.numel() * 2, do_bench(lambda: f(xs), **DB), clean_flush_ms(lambda: f(xs)), rotated_ms([(lambda s=s: f(s)) for s in ssets]))

cop = [r for r in rows if r[0] == "torch copy 1024 MiB"][0]
ceil = cop[1] / (cop[2] * 1e-3) / 1e9
print(f"\nceiling (1 GiB copy, do_bench) {ceil:.0f} GB/s\n")
print(f"| case | MB moved | do_bench ms | GB/s | % ceil | clean-flush ms | % ceil | rotated ms | % ceil |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for name, nb, a, b, c in rows:
    g = lambda ms: nb / (ms * 1e-3) / 1e9 if ms else float("nan")
    print(f"| {name} | {nb/1e6:.0f} | {a:.4f} | {g(a):.0f} | {100*g(a)/ceil:.1f} | {b:.4f} | {100*g(b)/ceil:.1f} | {c:.4f} | {100*g(c)/ceil:.1f} |")
