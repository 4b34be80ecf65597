"""How loops address their tiles: ntsym's kernels at fixed configurations with
``ntsym_options={"advance": False}`` (each iteration computes the address
from the loop index: ``ptr + (base + i * step)``) and ``{"advance": True}``
(pointer blocks set before the loop and advanced each iteration), against the
Triton baseline (tuned), at the benchmark shapes, fp16, interleaved rounds.

Usage (GPU): python -m benchmarks.lab.addressing [--dtype bfloat16] [--tasks sdpa sdpa_causal mm]
"""
import argparse

import torch
import triton

from benchmarks import tasks, triton_baselines as tb
from benchmarks.lab._rounds import interleaved, ratio_table
import examples.addmm as addmm
import examples.bmm as bmm
import examples.mm as mm
import examples.sdpa as sdpa

GEMM = (dict(BLOCK_SIZE_M=128, BLOCK_SIZE_N=256, BLOCK_SIZE_K=64), 8, 3)
CASES = {
    "sdpa": [(dict(BLOCK_SIZE_M=64, BLOCK_SIZE_N=64), 4, 3), (dict(BLOCK_SIZE_M=128, BLOCK_SIZE_N=64), 8, 3),
             (dict(BLOCK_SIZE_M=128, BLOCK_SIZE_N=64), 8, 4)],
    "sdpa_causal": [(dict(BLOCK_SIZE_M=64, BLOCK_SIZE_N=64), 4, 3), (dict(BLOCK_SIZE_M=128, BLOCK_SIZE_N=64), 8, 3)],
    "mm": [GEMM], "bmm": [GEMM],
    "addmm": [(dict(BLOCK_SIZE_0=128, BLOCK_SIZE_1=256, BLOCK_SIZE_2=64), 8, 3)],
}

parser = argparse.ArgumentParser()
parser.add_argument("--dtype", default="float16")
parser.add_argument("--tasks", nargs="*", default=list(CASES))
options_ = parser.parse_args()
dev, dt = "cuda", getattr(torch, options_.dtype)
print(torch.cuda.get_device_name(), torch.__version__, triton.__version__, options_.dtype, flush=True)
for name in options_.tasks:
    configs = CASES[name]
    causal = name == "sdpa_causal"
    args, kw = tasks.make_inputs(name.removesuffix("_causal"), tasks.BENCH_SHAPES["sdpa" if causal else name], dev, dt)
    if causal:
        kw = dict(kw, is_causal=True)
    if name.startswith("sdpa"):
        q, k, v = args
        out = torch.empty_like(q)
        run = lambda meta, o: sdpa.kernel_pow2_head(q, k, v, q.shape[-1] ** -0.5, causal, out, **meta, ntsym_options=o)  # noqa: E731
        ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
    elif name == "addmm":
        i, a, b = args
        out = torch.empty(a.shape[0], b.shape[1], device=dev, dtype=dt)
        run = lambda meta, o: addmm.kernel(i, a, b, kw["beta"], kw["alpha"], out, **meta, ntsym_options=o)  # noqa: E731
        ref = torch.addmm(i, a, b, **kw)
    else:
        a, b = args
        out = torch.empty(*a.shape[:-1], b.shape[-1], device=dev, dtype=dt)
        kernel = mm.kernel if name == "mm" else bmm.kernel
        run = lambda meta, o: kernel(a, b, out, **meta, ntsym_options=o)  # noqa: E731
        ref = a @ b
    fns = {}
    for meta, warps, stages in configs:
        for advance in (False, True):
            options = {"num_warps": warps, "num_stages": stages, "persistent": False, "advance": advance}
            label = f"{name} {'x'.join(str(v) for v in meta.values())} w{warps} s{stages} {'advance' if advance else 'index'}"
            fn = lambda meta=meta, options=options: run(meta, options)  # noqa: E731
            out.fill_(float("nan"))
            fn()
            torch.testing.assert_close(out, ref, atol=5e-2, rtol=2e-2)
            fns[label] = fn
    baseline = f"{name} triton baseline"
    fns[baseline] = lambda name=name.removesuffix("_causal"), args=args, kw=kw: tb.FUNCTIONS[name](*args, **kw)
    fns[baseline]()
    times = interleaved(fns)
    print(ratio_table(times, baseline), flush=True)
    kernel_name = {"sdpa": "_sdpa_kernel", "sdpa_causal": "_sdpa_kernel", "mm": "_mm_kernel", "bmm": "_bmm_kernel", "addmm": "_addmm_kernel"}[name]
    print("baseline's configuration:", getattr(getattr(tb, kernel_name), "best_config", "?"), "\n", flush=True)
