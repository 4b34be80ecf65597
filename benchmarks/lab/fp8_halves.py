"""fp8 GEMM with exact (float32) sums: can the float32 additions overlap the tensor cores?

With exact sums each K tile's product starts from zero in the tensor cores and is then added
to a float32 accumulator; Triton waits for the product before the addition, and the tensor
cores sit idle while it runs (``fp8_configs.py``: 73-76 % of ``torch._scaled_mm``). Here a
hand-written tensor-descriptor kernel splits each program's columns into two halves with
their own accumulators, so that one half's addition has the other half's product in flight:

- ``plain``: ``acc += dot(a, b)``, one tile (``fp8_configs.py``'s exact form);
- ``deferred``: one tile, each product added one iteration later;
- ``halves``: both halves' products issued, then both additions;
- ``skewed``: the second half's product added one iteration later, after the first half's
  next product is issued, so that each addition has a product beside it.

``--ntsym`` times the same as ntsym kernels, tuned and at fixed configurations: ``examples/fp8_mm.py``'s
exact kernel (one tile a program) and ``halves_kernel`` below (two), at M x N x K shapes.

    python -m benchmarks.lab.fp8_halves [--sizes 4096 8192]
    python -m benchmarks.lab.fp8_halves --ntsym [--shapes 4096,4096,4096 16,4096,4096 ...]
    TRITON_INTERPRET=1 python -m benchmarks.lab.fp8_halves --cpu
"""

import argparse
import statistics

import torch
import triton
import triton.language as tl

import ntsym
import ntsym.language as ntl
from ntsym import Tensor

PLAIN, DEFERRED, HALVES, SKEWED = range(4)
MODES = {PLAIN: "plain", DEFERRED: "deferred", HALVES: "halves", SKEWED: "skewed"}


@triton.jit
def _tile(M, N, BM: tl.constexpr, BN: tl.constexpr, GROUP: tl.constexpr):
    """This program's output tile (row and column block), in groups of GROUP row blocks."""
    pid = tl.program_id(0)
    grid_m = tl.cdiv(M, BM)
    grid_n = tl.cdiv(N, BN)
    in_group = GROUP * grid_n
    first_m = pid // in_group * GROUP
    size_m = min(grid_m - first_m, GROUP)
    return first_m + (pid % in_group) % size_m, (pid % in_group) // size_m


@triton.jit
def _fp8_halves(a_desc, b_desc, c_ptr, sa_ptr, sb_ptr, M, N, K, stride_cm,
                BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr, MODE: tl.constexpr):
    pid_m, pid_n = _tile(M, N, BM, BN, GROUP)
    HB: tl.constexpr = BN // 2
    acc0 = tl.zeros((BM, HB), dtype=tl.float32)  # columns [0, BN/2) of the tile
    acc1 = tl.zeros((BM, HB), dtype=tl.float32)  # columns [BN/2, BN)
    t1 = tl.zeros((BM, HB), dtype=tl.float32)  # skewed: the second half's product not yet added
    for k in range(0, K, BK):
        a = a_desc.load([pid_m * BM, k])
        b0 = b_desc.load([pid_n * BN, k])  # b given as (N, K), K contiguous; blocks of BN/2 rows
        b1 = b_desc.load([pid_n * BN + HB, k])
        if MODE == 3:  # skewed
            t0 = tl.dot(a, b0.T)
            acc1 += t1
            t1 = tl.dot(a, b1.T)
            acc0 += t0
        else:  # halves
            t0 = tl.dot(a, b0.T)
            t1 = tl.dot(a, b1.T)
            acc0 += t0
            acc1 += t1
    if MODE == 3:
        acc1 += t1
    scale = tl.load(sa_ptr) * tl.load(sb_ptr)
    rows = pid_m * BM + tl.arange(0, BM)
    cols = pid_n * BN + tl.arange(0, HB)
    mask = (rows < M)[:, None] & (cols < N)[None, :]
    tl.store(c_ptr + rows[:, None] * stride_cm + cols[None, :], (acc0 * scale).to(c_ptr.dtype.element_ty), mask=mask)
    cols += HB
    mask = (rows < M)[:, None] & (cols < N)[None, :]
    tl.store(c_ptr + rows[:, None] * stride_cm + cols[None, :], (acc1 * scale).to(c_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _fp8_one(a_desc, b_desc, c_ptr, sa_ptr, sb_ptr, M, N, K, stride_cm,
             BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr, MODE: tl.constexpr):
    pid_m, pid_n = _tile(M, N, BM, BN, GROUP)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    prev = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = a_desc.load([pid_m * BM, k])
        b = b_desc.load([pid_n * BN, k])
        if MODE == 1:
            cur = tl.dot(a, b.T)
            acc += prev
            prev = cur
        else:
            acc += tl.dot(a, b.T)
    acc = (acc + prev) * (tl.load(sa_ptr) * tl.load(sb_ptr))
    rows = pid_m * BM + tl.arange(0, BM)
    cols = pid_n * BN + tl.arange(0, BN)
    tl.store(c_ptr + rows[:, None] * stride_cm + cols[None, :], acc.to(c_ptr.dtype.element_ty),
             mask=(rows < M)[:, None] & (cols < N)[None, :])


# The halves as an ntsym kernel: examples/fp8_mm.py's arrangement with the
# output in pairs of tiles along N and B's tiles in pairs to match.
def halves_arrangement(
    input,
    other,
    scale_input,
    scale_other,
    output,
    BLOCK_SIZE_M=ntsym.block_size(lower_bound=16),
    BLOCK_SIZE_N=ntsym.block_size(lower_bound=16),
    BLOCK_SIZE_K=ntsym.block_size(lower_bound=32),
):
    output_arranged = output.tile((BLOCK_SIZE_M, BLOCK_SIZE_N)).tile((1, 2))  # pairs of tiles along N
    output_arranged.dtype = output_arranged.dtype.squeeze(0)

    input_arranged = input.tile((BLOCK_SIZE_M, BLOCK_SIZE_K)).tile((1, -1))
    input_arranged = input_arranged.expand((-1, output_arranged.shape[1]))
    input_arranged.dtype = input_arranged.dtype.squeeze(0)

    other_arranged = other.tile((BLOCK_SIZE_K, BLOCK_SIZE_N)).tile((-1, 2))  # (K tiles, 2) a program
    other_arranged = other_arranged.expand((output_arranged.shape[0], -1))

    def every_program(scale):
        return scale.tile((1, 1)).expand((output_arranged.shape[0], output_arranged.shape[1]))

    return input_arranged, other_arranged, every_program(scale_input), every_program(scale_other), output_arranged


def halves_application(input, other, scale_input, scale_other, output):
    accumulator_0 = ntl.zeros(output[0].shape, dtype=ntl.float32)
    accumulator_1 = ntl.zeros(output[1].shape, dtype=ntl.float32)

    for k in range(input.shape[0]):
        a = input[k]
        product_0 = ntl.dot(a, other[k, 0])
        product_1 = ntl.dot(a, other[k, 1])  # issued before the first addition
        accumulator_0 += product_0
        accumulator_1 += product_1

    scale = scale_input * scale_other
    output[0] = accumulator_0 * scale
    output[1] = accumulator_1 * scale


halves_kernel = ntsym.make(halves_arrangement, halves_application, tuple(Tensor(2) for _ in range(5)),
                            kernel_name="fp8_mm_halves")


def fp8(a, b_nk, sa, sb, c, bm, bn, bk, warps, stages, mode):
    from triton.tools.tensor_descriptor import TensorDescriptor

    M, K = a.shape
    N = b_nk.shape[0]
    grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn),)
    split = mode in (HALVES, SKEWED)
    kernel = _fp8_halves if split else _fp8_one
    b_block = [bn // 2 if split else bn, bk]
    kernel[grid](TensorDescriptor.from_tensor(a, [bm, bk]), TensorDescriptor.from_tensor(b_nk, b_block),
                 c, sa, sb, M, N, K, c.stride(0), bm, bn, bk, 8, 1 if mode == DEFERRED else mode,
                 num_warps=warps, num_stages=stages)


CONFIGS = ((128, 256, 128, 8, 3), (128, 128, 128, 8, 4), (256, 128, 128, 8, 3))


def run(n, rounds):
    from benchmarks.lab._rounds import flops_table, interleaved

    a = (torch.randn(n, n, device="cuda") / 2).to(torch.float8_e4m3fn)
    b_nk = (torch.randn(n, n, device="cuda") / 2).to(torch.float8_e4m3fn)
    sa, sb = torch.tensor(0.5, device="cuda"), torch.tensor(2.0, device="cuda")
    ref = (a.float() @ b_nk.float().t()) * (sa * sb)  # float32 products, float32 sums
    c = torch.empty(n, n, device="cuda", dtype=torch.float16)
    fns = {"torch._scaled_mm": lambda: torch._scaled_mm(a, b_nk.t(), sa, sb, out_dtype=torch.float16),
           "torch._scaled_mm fast": lambda: torch._scaled_mm(a, b_nk.t(), sa, sb, out_dtype=torch.float16,
                                                             use_fast_accum=True)}
    for bm, bn, bk, w, st in CONFIGS:
        for mode, label in MODES.items():
            fns[f"{label} {bm}x{bn}x{bk} w{w} s{st}"] = (
                lambda bm=bm, bn=bn, bk=bk, w=w, st=st, mode=mode: fp8(a, b_nk, sa, sb, c, bm, bn, bk, w, st, mode))
    errors = {}
    for name, f in list(fns.items()):
        try:
            out = f()
            out = c if out is None else out
            torch.cuda.synchronize()
            errors[name] = (out.float() - ref).abs().max().item()
            print(f"  {name}: max error {errors[name]:.4f}", flush=True)
        except Exception as exc:
            print(f"  {name}: failed ({str(exc).splitlines()[0][:160]})", flush=True)
            fns.pop(name)
    times = interleaved(fns, rounds=rounds)
    flops_table(f"{n}^3, e4m3 inputs, fp16 output", times, "torch._scaled_mm", 2 * n**3)
    print("max errors against float32 products and sums: "
          + ", ".join(f"{k} {v:.4f}" for k, v in errors.items()), flush=True)
    return statistics.median(times["torch._scaled_mm"])


FIXED = ((128, 128, 128, 8, 3), (128, 128, 128, 8, 4), (64, 128, 128, 4, 4))


def run_ntsym(m, n, k, rounds):
    import os

    from benchmarks.lab._rounds import flops_table, interleaved
    from examples import fp8_mm

    a = (torch.randn(m, k, device="cuda") / 2).to(torch.float8_e4m3fn)
    b = (torch.randn(n, k, device="cuda") / 2).to(torch.float8_e4m3fn).t()  # column-major (K, N)
    sa, sb = torch.tensor(0.5, device="cuda"), torch.tensor(2.0, device="cuda")
    ref = (a.float() @ b.float()) * (sa * sb)
    s1, s2 = sa.reshape(1, 1), sb.reshape(1, 1)
    c = torch.empty(m, n, device="cuda", dtype=torch.float16)
    fns = {"torch._scaled_mm": lambda: torch._scaled_mm(a, b, sa, sb, out_dtype=torch.float16),
           "ntsym one tile": lambda: fp8_mm.kernel(a, b, s1, s2, c),
           "ntsym halves": lambda: halves_kernel(a, b, s1, s2, c)}
    for bm, bn, bk, w, st in FIXED if m > 16 else ():
        for persistent in (False, True):
            options = {"num_warps": w, "num_stages": st, "persistent": persistent}
            fns[f"ntsym halves {bm}x2x{bn}x{bk} w{w} s{st}{' persistent' if persistent else ''}"] = (
                lambda bm=bm, bn=bn, bk=bk, options=options: halves_kernel(
                    a, b, s1, s2, c, BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, ntsym_options=options))
    os.environ["NTSYM_PRINT_TUNING"] = "1"
    for name, f in list(fns.items()):
        c.fill_(float("nan"))
        try:
            out = f()
        except Exception as exc:
            print(f"  {name}: failed ({str(exc).splitlines()[0][:160]})", flush=True)
            fns.pop(name)
            continue
        out = c if out is None else out
        torch.cuda.synchronize()
        print(f"  {name}: max error {(out.float() - ref).abs().max().item():.4f}", flush=True)
    os.environ.pop("NTSYM_PRINT_TUNING")
    flops_table(f"{m}x{n}x{k}, e4m3 inputs, fp16 output, exact sums", interleaved(fns, rounds=rounds),
                "torch._scaled_mm", 2 * m * n * k)


def cpu_check():
    a, b_nk = torch.randn(64, 96), torch.randn(48, 96)
    c = torch.empty(64, 48)
    sa, sb = torch.tensor([0.5]), torch.tensor([2.0])
    for mode in MODES:
        fp8(a, b_nk, sa, sb, c, 32, 32, 32, 4, 2, mode)
        torch.testing.assert_close(c, a @ b_nk.t(), atol=1e-3, rtol=1e-3)
    # ntsym's halves: an odd number of column tiles (the last pair's second
    # tile wholly past N), partial tiles, and B in either layout.
    for m, n, k in ((64, 48, 96), (17, 33, 70)):
        a, b = torch.randn(m, k), torch.randn(k, n)
        for other in (b, b.t().contiguous().t()):
            c = torch.empty(m, n)
            halves_kernel(a, other, torch.tensor([[0.5]]), torch.tensor([[2.0]]), c,
                          BLOCK_SIZE_M=16, BLOCK_SIZE_N=16, BLOCK_SIZE_K=32)
            torch.testing.assert_close(c, a @ b, atol=1e-4, rtol=1e-4)
    print("every form agrees with torch on the interpreter")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", nargs="*", type=int, default=(4096, 8192))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cpu", action="store_true")
    parser.add_argument("--ntsym", action="store_true")
    parser.add_argument("--shapes", nargs="*", default=("4096,4096,4096", "8192,8192,8192", "2048,2048,2048",
                                                        "16,4096,4096"))
    args = parser.parse_args()
    if args.cpu:
        return cpu_check()
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}", flush=True)
    if args.ntsym:
        for text in args.shapes:
            run_ntsym(*(int(x) for x in text.split(",")), args.rounds)
        return
    for n in args.sizes:
        run(n, args.rounds)


if __name__ == "__main__":
    main()
