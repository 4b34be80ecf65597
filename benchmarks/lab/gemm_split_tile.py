"""Matrix products with a tile of three power-of-two parts: 128x192 (or 192x128) as two products.

Triton's tensors have power-of-two shapes, so a tile of 128x192 is two accumulators, 128x128 and
128x64, fed from one load of the left operand's block (or, split along rows, 128x128 and 64x128
fed from one load of the right operand's block). At 1536^3 such tiles make 96 programs, one wave
on 132 multiprocessors, where 128x128 tiles make 144 (two waves, the second of 12).

    python -m benchmarks.lab.gemm_split_tile [--sizes 1536 ...] [--rounds 5]
    TRITON_INTERPRET=1 python -m benchmarks.lab.gemm_split_tile --cpu-check

Pointer loads, as the kernel ntsym's tuner picks at these sizes; cuBLAS (``torch.mm``) and ntsym's
tuned ``examples.mm`` are timed in the same process, interleaved rounds.
"""

import argparse
import re
import statistics

import torch
import triton
import triton.language as tl


@triton.jit
def _split_mm(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
              BM1: tl.constexpr, BM2: tl.constexpr, BN1: tl.constexpr, BN2: tl.constexpr,
              BK: tl.constexpr, GROUP_M: tl.constexpr, EVEN: tl.constexpr):
    # A tile of (BM1 + BM2) x (BN1 + BN2); one of BM2, BN2 is 0 (that part absent).
    BM: tl.constexpr = BM1 + BM2
    BN: tl.constexpr = BN1 + BN2
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    group = GROUP_M * num_pid_n
    first_m = (pid // group) * GROUP_M
    size_m = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group) % size_m
    pid_n = (pid % group) // size_m
    rm1 = pid_m * BM + tl.arange(0, BM1)
    rn1 = pid_n * BN + tl.arange(0, BN1)
    rk = tl.arange(0, BK)
    a1 = a_ptr + rm1[:, None] * sam + rk[None, :] * sak
    b1 = b_ptr + rk[:, None] * sbk + rn1[None, :] * sbn
    acc11 = tl.zeros((BM1, BN1), tl.float32)
    if BN2 > 0:
        rn2 = pid_n * BN + BN1 + tl.arange(0, BN2)
        b2 = b_ptr + rk[:, None] * sbk + rn2[None, :] * sbn
        acc12 = tl.zeros((BM1, BN2), tl.float32)
    if BM2 > 0:
        rm2 = pid_m * BM + BM1 + tl.arange(0, BM2)
        a2 = a_ptr + rm2[:, None] * sam + rk[None, :] * sak
        acc21 = tl.zeros((BM2, BN1), tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        if EVEN:
            x1 = tl.load(a1)
            y1 = tl.load(b1)
        else:
            kk = k * BK + rk
            x1 = tl.load(a1, mask=(rm1[:, None] < M) & (kk[None, :] < K), other=0.0)
            y1 = tl.load(b1, mask=(kk[:, None] < K) & (rn1[None, :] < N), other=0.0)
        acc11 = tl.dot(x1, y1, acc11)
        if BN2 > 0:
            if EVEN:
                y2 = tl.load(b2)
            else:
                y2 = tl.load(b2, mask=(kk[:, None] < K) & (rn2[None, :] < N), other=0.0)
            acc12 = tl.dot(x1, y2, acc12)
            b2 += BK * sbk
        if BM2 > 0:
            if EVEN:
                x2 = tl.load(a2)
            else:
                x2 = tl.load(a2, mask=(rm2[:, None] < M) & (kk[None, :] < K), other=0.0)
            acc21 = tl.dot(x2, y1, acc21)
            a2 += BK * sak
        a1 += BK * sak
        b1 += BK * sbk
    c11 = c_ptr + rm1[:, None] * scm + rn1[None, :] * scn
    tl.store(c11, acc11.to(c_ptr.dtype.element_ty), mask=(rm1[:, None] < M) & (rn1[None, :] < N))
    if BN2 > 0:
        c12 = c_ptr + rm1[:, None] * scm + rn2[None, :] * scn
        tl.store(c12, acc12.to(c_ptr.dtype.element_ty), mask=(rm1[:, None] < M) & (rn2[None, :] < N))
    if BM2 > 0:
        c21 = c_ptr + rm2[:, None] * scm + rn1[None, :] * scn
        tl.store(c21, acc21.to(c_ptr.dtype.element_ty), mask=(rm2[:, None] < M) & (rn1[None, :] < N))


def split_mm(a, b, c, bm1, bm2, bn1, bn2, bk, warps, stages, group=8):
    M, K = a.shape
    N = b.shape[1]
    even = M % (bm1 + bm2) == 0 and N % (bn1 + bn2) == 0 and K % bk == 0
    grid = (triton.cdiv(M, bm1 + bm2) * triton.cdiv(N, bn1 + bn2),)
    _split_mm[grid](a, b, c, M, N, K, *a.stride(), *b.stride(), *c.stride(),
                    BM1=bm1, BM2=bm2, BN1=bn1, BN2=bn2, BK=bk, GROUP_M=group, EVEN=even,
                    num_warps=warps, num_stages=stages)


# (BM1, BM2, BN1, BN2, BK, warps, stages)
CONFIGS = [
    (128, 0, 128, 64, 64, 8, 3), (128, 0, 128, 64, 64, 8, 4), (128, 0, 128, 64, 64, 4, 3),
    (128, 0, 128, 64, 32, 8, 4), (128, 0, 128, 64, 32, 8, 5),
    (128, 0, 64, 128, 64, 8, 3),
    (128, 64, 128, 0, 64, 8, 3), (128, 64, 128, 0, 64, 8, 4), (128, 64, 128, 0, 32, 8, 5),
    (64, 0, 128, 64, 64, 4, 4), (64, 0, 128, 64, 64, 4, 3),
    (128, 0, 128, 0, 64, 8, 3), (128, 0, 128, 0, 64, 4, 4),
]


def cpu_check():
    torch.manual_seed(0)
    cases = 0
    for M, N, K in ((48, 40, 32), (64, 96, 64), (100, 70, 50)):
        a = torch.randn(M, K)
        b = torch.randn(K, N)
        ref = a @ b
        for bm1, bm2, bn1, bn2 in ((32, 0, 32, 16), (32, 16, 32, 0), (16, 0, 16, 0)):
            c = torch.empty(M, N)
            split_mm(a, b, c, bm1, bm2, bn1, bn2, 16, 4, 1)
            err = (c - ref).abs().max().item()
            assert err < 1e-3, (M, N, K, bm1, bm2, bn1, bn2, err)
            cases += 1
    print(f"{cases} cases agree with torch")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", nargs="*", type=int, default=(1536, 1024, 2048, 3072))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dtypes", nargs="*", default=("float16", "bfloat16"))
    parser.add_argument("--cpu-check", action="store_true")
    parser.add_argument("--configs", nargs="*", default=None,
                        help="BM1+BM2xBN1+BN2xBK/warps/stages, e.g. 128+0x128+64x32/8/5")
    args = parser.parse_args()
    if args.cpu_check:
        return cpu_check()
    from benchmarks.lab._rounds import interleaved
    from examples import mm

    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}, "
          f"{torch.cuda.get_device_properties(0).multi_processor_count} multiprocessors", flush=True)
    for size in args.sizes:
        for dtype in (getattr(torch, d) for d in args.dtypes):
            a, b = (torch.randn(size, size, device="cuda", dtype=dtype) for _ in range(2))
            ref = a.float() @ b.float()
            fns = {"cuBLAS": lambda: torch.mm(a, b), "ntsym tuned": lambda: mm.mm(a, b)}
            fns["ntsym tuned"]()
            configs = CONFIGS if args.configs is None else [
                tuple(int(v) for v in re.split(r"[+x/]", c)) for c in args.configs]
            for bm1, bm2, bn1, bn2, bk, warps, stages in configs:
                label = f"{bm1}+{bm2}x{bn1}+{bn2}x{bk} w{warps} s{stages}"
                out = torch.empty(size, size, device="cuda", dtype=dtype)

                def run(cfg=(bm1, bm2, bn1, bn2, bk, warps, stages), out=out):
                    split_mm(a, b, out, *cfg)
                try:
                    run()
                    torch.cuda.synchronize()
                except Exception as exc:
                    print(f"  {label}: failed ({str(exc).splitlines()[0][:100]})")
                    continue
                error = ((out.float() - ref).abs().max() / ref.abs().max()).item()
                if error > 1e-2:
                    print(f"  {label}: WRONG (relative error {error:.1e})")
                    continue
                fns[label] = run
            times = interleaved(fns, rounds=args.rounds)
            base = statistics.median(times["cuBLAS"])
            print(f"\n### {size}^3 {str(dtype)[6:]}\n")
            print("| variant | ms | / cuBLAS | TFLOP/s | range |\n|---|---:|---:|---:|---|")
            for label, ts in sorted(times.items(), key=lambda kv: statistics.median(kv[1])):
                ms = statistics.median(ts)
                print(f"| {label} | {ms:.4f} | {ms / base:.3f} | {2 * size**3 / ms / 1e9:.0f} "
                      f"| {min(ts):.4f}-{max(ts):.4f} |")
            print(flush=True)


if __name__ == "__main__":
    main()
