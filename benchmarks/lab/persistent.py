"""ntsym's plain kernel vs its persistent (tensor-descriptor) variant vs the Triton
baseline vs torch, for mm, bmm, addmm (and sdpa, where the variant is not emitted),
in one process at the benchmark shapes, fp16; each ntsym form tuned with
``ntsym_options={"persistent": False/True}`` and "auto" (the tuner chooses).
Logs every timed configuration (ntsym logger at DEBUG).

Usage (GPU): python -m benchmarks.lab.persistent mm bmm addmm
"""
import logging, os, statistics, sys, time
import torch, triton
from benchmarks.lab._rounds import interleaved
h = logging.StreamHandler(sys.stdout); h.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S"))
logging.getLogger("ntsym").addHandler(h); logging.getLogger("ntsym").setLevel(logging.DEBUG)
from benchmarks import tasks, triton_baselines as tb
import examples.mm as mm, examples.bmm as bmm, examples.addmm as addmm, examples.sdpa as sdpa

dev, dt = "cuda", torch.float16
print(torch.cuda.get_device_name(), torch.__version__, triton.__version__, flush=True)
rows = []
for name in [a for a in sys.argv[1:] if not a.startswith('-')]:
    args, kw = tasks.make_inputs(name, tasks.BENCH_SHAPES[name], dev, dt)
    if name == "mm":
        a, b = args; out = torch.empty(a.shape[0], b.shape[1], device=dev, dtype=dt)
        nt = lambda o: (lambda: mm.kernel(a, b, out, ntsym_options=o))
        tri = lambda: tb.mm(a, b); ref = lambda: torch.mm(a, b)
    elif name == "bmm":
        a, b = args; out = torch.empty(a.shape[0], a.shape[1], b.shape[2], device=dev, dtype=dt)
        nt = lambda o: (lambda: bmm.kernel(a, b, out, ntsym_options=o))
        tri = lambda: tb.bmm(a, b); ref = lambda: torch.bmm(a, b)
    elif name == "addmm":
        i, a, b = args; out = torch.empty(a.shape[0], b.shape[1], device=dev, dtype=dt)
        nt = lambda o: (lambda: addmm.kernel(i, a, b, kw["beta"], kw["alpha"], out, ntsym_options=o))
        tri = lambda: tb.addmm(i, a, b, **kw); ref = lambda: torch.addmm(i, a, b, **kw)
    elif name == "sdpa":
        q, k, v = args; out = torch.empty_like(q)
        nt = lambda o: (lambda: sdpa.kernel(q, k, v, q.shape[-1] ** -0.5, False, out, ntsym_options=o))
        tri = lambda: tb.sdpa(q, k, v); ref = lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v)
    expect = ref().float()
    fns = {}
    for label, fn in (("ntsym plain", nt({"persistent": False})), ("ntsym persistent", nt({"persistent": True})),
                      ("ntsym auto", nt(None)), ("triton", tri), ("torch", ref)):
        t0 = time.time()
        try:
            out.fill_(float("nan")); r = fn()
            got = (r if r is not None else out).float()
            err = ((got - expect).norm() / expect.norm()).item()
        except Exception as e:
            print(name, label, "FAILED", type(e).__name__, str(e)[:400], flush=True); continue
        print(f"{name} {label}: first call {time.time()-t0:.1f}s rel err {err:.2e}", flush=True)
        if err < 1e-2:
            fns[label] = fn
    times = interleaved(fns)
    base = statistics.median(times.get("triton", [1]))
    tor = statistics.median(times.get("torch", [1]))
    for l in fns:
        ms = statistics.median(times[l])
        rows.append(f"| {name} | {l} | {ms:.4f} | {ms/base:.3f} | {100*tor/ms:.1f}% | {min(times[l]):.4f}-{max(times[l]):.4f} |")
print("| task | impl | ms | /triton | % of torch | range |\n|---|---|---:|---:|---:|---|")
print("\n".join(rows))
