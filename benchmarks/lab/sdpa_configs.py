"""sdpa: ntsym at forced configs vs the Triton baseline (its tuned config) vs torch, interleaved rounds."""
import math, sys, os, torch, triton
from benchmarks.lab._rounds import interleaved, ratio_table
sys.path.insert(0, os.getcwd())
from examples import sdpa as ex
from benchmarks import triton_baselines as tb

q, k, v = (torch.randn(4, 48, 1024, 64, device="cuda", dtype=torch.float16) for _ in range(3))
ref = torch.nn.functional.scaled_dot_product_attention(q, k, v)
scale = 1 / math.sqrt(64)
o = torch.empty_like(q)
fns = {"torch flash": lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v),
       "triton baseline": lambda: tb.sdpa(q, k, v)}
tb.sdpa(q, k, v)
print("baseline best config:", tb._sdpa_kernel.best_config)
for bm, bn, w, s in ((128, 64, 8, 3), (128, 64, 4, 3), (128, 64, 4, 4), (128, 64, 8, 4), (128, 128, 8, 3), (128, 32, 4, 3), (64, 64, 4, 3), (64, 64, 4, 4)):
    name = f"ntsym BM={bm} BN={bn} w{w} s{s}"
    f = lambda bm=bm, bn=bn, w=w, s=s: ex.kernel_pow2_head(q, k, v, scale, False, o, BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, ntsym_options={"num_warps": w, "num_stages": s})
    try:
        f(); torch.cuda.synchronize()
        torch.testing.assert_close(o, ref, atol=1e-2, rtol=1e-2)
        fns[name] = f
    except Exception as e:
        print(name, "failed", str(e).splitlines()[0][:200])
f = lambda: ex.sdpa(q, k, v)
f(); fns["ntsym tuned"] = f
print(ratio_table(interleaved(fns), "triton baseline"))
