"""Quick native check of the add and mm examples against torch: correctness
and a first timing (median of triton.testing.do_bench), printed as a table."""

import torch
import triton
import triton.testing

import examples.add as add
import examples.mm as mm


def main():
    assert torch.cuda.is_available(), "needs a CUDA device"
    print(f"device: {torch.cuda.get_device_name()}  torch {torch.__version__}  triton {triton.__version__}")
    rows = []
    for n in (4096, 1 << 20, 1 << 24):
        x, y = torch.randn(n, device="cuda", dtype=torch.float16), torch.randn(n, device="cuda", dtype=torch.float16)
        z = add.add(x, y)
        ok = torch.equal(z, x + y)
        t_ntsym = triton.testing.do_bench(lambda: add.add(x, y), return_mode="median")
        t_torch = triton.testing.do_bench(lambda: x + y, return_mode="median")
        gbs = 3 * n * 2 / t_ntsym / 1e6
        rows.append(("add", f"({n},)", ok, t_ntsym, t_torch, f"{gbs:.0f} GB/s"))
    for n in (512, 2048, 4096):
        a = torch.randn(n, n, device="cuda", dtype=torch.float16)
        b = torch.randn(n, n, device="cuda", dtype=torch.float16)
        c = torch.empty(n, n, device="cuda", dtype=torch.float16)
        fixed = dict(BLOCK_SIZE_M=128, BLOCK_SIZE_N=128, BLOCK_SIZE_K=64, ntsym_options={"num_warps": 8, "num_stages": 3})
        mm.kernel(a, b, c, **fixed)
        ok = torch.allclose(c, a @ b, atol=1e-1, rtol=1e-2)
        t_ntsym = triton.testing.do_bench(lambda: mm.kernel(a, b, c, **fixed), return_mode="median")
        t_tuned = triton.testing.do_bench(lambda: mm.mm(a, b), return_mode="median")
        print(f"mm {n}: fixed 128x128x64 {t_ntsym:.4f} ms, tuned {t_tuned:.4f} ms")
        t_torch = triton.testing.do_bench(lambda: a @ b, return_mode="median")
        tf = 2 * n**3 / t_ntsym / 1e9
        rows.append(("mm", f"({n},{n})@({n},{n})", ok, t_ntsym, t_torch, f"{tf:.0f} TFLOP/s"))
    print("| op | shape (fp16) | correct | ntsym ms | torch ms | ntsym rate |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]:.4f} | {r[4]:.4f} | {r[5]} |")


if __name__ == "__main__":
    main()
