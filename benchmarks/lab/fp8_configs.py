"""Where does fp8 GEMM time go? ntsym's fp8_mm at fixed configurations (plain and
persistent, the latter reading through tensor descriptors) and a hand-written
tensor-descriptor kernel with and without ``warp_specialize``, against
``torch._scaled_mm``, each with and without fast accumulation (the tensor cores'
accumulator carried over all K tiles), interleaved rounds; every result's largest
error against float32 products and sums beside its time.

    python -m benchmarks.lab.fp8_configs [--sizes 4096 8192] [--cpu]

``--cpu`` runs the hand-written kernel through the interpreter (float32 stand-ins)."""

import argparse
import os
import statistics
import sys
import time

if "--cpu" in sys.argv:  # the interpreter is chosen when the kernels below are decorated
    os.environ["TRITON_INTERPRET"] = "1"

import torch
import triton
import triton.language as tl

from benchmarks.lab._rounds import interleaved

sys.path.insert(0, os.getcwd())


@triton.jit
def _fp8_desc(a_desc, b_desc, c_ptr, sa_ptr, sb_ptr, M, N, K, stride_cm,
              BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr, WS: tl.constexpr,
              FAST: tl.constexpr):
    # FAST: 0 each K tile from zero, added in float32; 1 the tensor cores' accumulator
    # carried over all K tiles; 2 carried, Triton promoting the partial sum to float32
    # after each K tile (``max_num_imprecise_acc=BK``); 3 as 0, the float32 addition of
    # each tile's product deferred to the next iteration, so that it may overlap the
    # next tile's product.
    pid = tl.program_id(0)
    grid_m = tl.cdiv(M, BM)
    grid_n = tl.cdiv(N, BN)
    in_group = GROUP * grid_n
    group = pid // in_group
    first_m = group * GROUP
    size_m = min(grid_m - first_m, GROUP)
    pid_m = first_m + (pid % in_group) % size_m
    pid_n = (pid % in_group) // size_m
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    prev = tl.zeros((BM, BN), dtype=tl.float32)
    for k in tl.range(0, K, BK, warp_specialize=WS):
        a = a_desc.load([pid_m * BM, k])
        b = b_desc.load([pid_n * BN, k])  # b is given as (N, K), K contiguous
        if FAST == 1:
            acc = tl.dot(a, b.T, acc)  # products summed in the tensor cores' accumulator
        elif FAST == 2:
            acc = tl.dot(a, b.T, acc, max_num_imprecise_acc=BK)
        elif FAST == 3:
            cur = tl.dot(a, b.T)
            acc += prev
            prev = cur
        else:
            acc += tl.dot(a, b.T)  # each K tile from zero, added in float32
    acc = (acc + prev) * (tl.load(sa_ptr) * tl.load(sb_ptr))
    rows = pid_m * BM + tl.arange(0, BM)
    cols = pid_n * BN + tl.arange(0, BN)
    tl.store(c_ptr + rows[:, None] * stride_cm + cols[None, :], acc.to(c_ptr.dtype.element_ty),
             mask=(rows < M)[:, None] & (cols < N)[None, :])


def fp8_desc(a, b_nk, sa, sb, c, bm, bn, bk, warps, stages, ws, fast=1):
    from triton.tools.tensor_descriptor import TensorDescriptor

    M, K = a.shape
    N = b_nk.shape[0]
    grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn),)
    _fp8_desc[grid](TensorDescriptor.from_tensor(a, [bm, bk]), TensorDescriptor.from_tensor(b_nk, [bn, bk]),
                    c, sa, sb, M, N, K, c.stride(0), bm, bn, bk, 8, ws, fast, num_warps=warps, num_stages=stages)


NTSYM_CONFIGS = ((128, 256, 128, 8, 3), (128, 128, 128, 8, 4))
DESC_CONFIGS = ((128, 256, 128, 8, 3), (128, 128, 128, 8, 4))
WS = (False, True)
MODES = {0: "", 1: " fast", 2: " promoted", 3: " deferred add"}
NTSYM_KERNELS = True


def run(n):
    from examples import fp8_mm

    a = (torch.randn(n, n, device="cuda") / 2).to(torch.float8_e4m3fn)
    b_nk = (torch.randn(n, n, device="cuda") / 2).to(torch.float8_e4m3fn)
    b = b_nk.t()
    sa, sb = torch.tensor(0.5, device="cuda"), torch.tensor(2.0, device="cuda")
    ref = (a.float() @ b.float()) * (sa * sb)  # float32 products, float32 sums
    c = torch.empty(n, n, device="cuda", dtype=torch.float16)
    fns = {}
    for fast in (False, True):
        fns[f"torch._scaled_mm{' fast' if fast else ''}"] = lambda fast=fast: torch._scaled_mm(
            a, b, sa, sb, out_dtype=torch.float16, use_fast_accum=fast)
        os.environ["NTSYM_PRINT_TUNING"] = "1"
        name = f"ntsym tuned{' fast' if fast else ''}"
        fns[name] = lambda fast=fast: fp8_mm.fp8_mm(a, b, sa, sb, use_fast_accum=fast)
        fns[name]()
        os.environ.pop("NTSYM_PRINT_TUNING")
    s1, s2 = sa.reshape(1, 1), sb.reshape(1, 1)
    candidates = []
    for bm, bn, bk, w, st in NTSYM_CONFIGS if NTSYM_KERNELS else ():
        # The persistent variant reads column-major b through a descriptor
        # of its transpose (b_nk), as the hand-written kernel does.
        for persistent in (False, True):
            for fast in (False, True):
                kernel = fp8_mm.fast_accum_kernel if fast else fp8_mm.kernel
                name = f"ntsym {bm}x{bn}x{bk} w{w} s{st}{' persistent' if persistent else ''}{' fast' if fast else ''}"
                candidates.append((name, lambda bm=bm, bn=bn, bk=bk, w=w, st=st, p=persistent, kernel=kernel: kernel(
                    a, b, s1, s2, c, BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk,
                    ntsym_options={"num_warps": w, "num_stages": st, "persistent": p})))
    for bm, bn, bk, w, st in DESC_CONFIGS:
        for ws in WS:
            for fast, mode in MODES.items():
                name = f"descriptors {bm}x{bn}x{bk} w{w} s{st}{' ws' if ws else ''}{mode}"
                candidates.append((name, lambda bm=bm, bn=bn, bk=bk, w=w, st=st, ws=ws, fast=fast: fp8_desc(
                    a, b_nk, sa, sb, c, bm, bn, bk, w, st, ws, fast)))
    errors = {}
    for name, f in list(fns.items()) + candidates:
        start = time.perf_counter()
        try:
            out = f()
            if out is None:
                out = c
            torch.cuda.synchronize()
            errors[name] = (out.float() - ref).abs().max().item()
            fns[name] = f
            print(f"  {name}: first call {time.perf_counter() - start:.1f} s, max error {errors[name]:.4f}", flush=True)
        except Exception as exc:
            print(f"  {name}: failed ({str(exc).splitlines()[0][:160]})")
            fns.pop(name, None)
    times = interleaved(fns, rounds=3)
    base = statistics.median(times["torch._scaled_mm"])
    print(f"\n### {n}^3, e4m3 inputs, fp16 output (max error against float32 products and sums)\n\n"
          "| impl | ms | TFLOP/s | / torch | max error |\n|---|---:|---:|---:|---:|")
    for name, ts in sorted(times.items(), key=lambda kv: statistics.median(kv[1])):
        ms = statistics.median(ts)
        print(f"| {name} | {ms:.4f} | {2 * n**3 / ms / 1e9:.0f} | {ms / base:.3f} | {errors[name]:.4f} |")
    print(flush=True)


def cpu_check():
    a = torch.randn(64, 96)
    b_nk = torch.randn(48, 96)
    c = torch.empty(64, 48)
    sa, sb = torch.tensor([0.5]), torch.tensor([2.0])
    for fast in MODES:
        if fast == 2:
            continue  # max_num_imprecise_acc: the interpreter's dot takes no such argument for float32
        fp8_desc(a, b_nk, sa, sb, c, 32, 16, 32, 4, 2, False, fast)
        torch.testing.assert_close(c, a @ b_nk.t(), atol=1e-3, rtol=1e-3)
    print("descriptor kernel agrees with torch on the interpreter")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", nargs="*", type=int, default=(4096, 8192))
    parser.add_argument("--cpu", action="store_true")
    parser.add_argument("--no-ws", action="store_true", help="leave out the warp-specialized descriptor kernels")
    parser.add_argument("--no-ntsym-configs", action="store_true", help="leave out ntsym at fixed configurations")
    args = parser.parse_args()
    global WS, NTSYM_KERNELS
    if args.no_ws:
        WS = (False,)
    NTSYM_KERNELS = not args.no_ntsym_configs
    if args.cpu:
        return cpu_check()
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}")
    for n in args.sizes:
        run(n)


if __name__ == "__main__":
    main()
