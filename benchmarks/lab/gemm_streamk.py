"""Stream-K against data-parallel tiles for square products whose tiles do not
fill whole waves of the GPU (1536^3: 144 tiles of 128x128 for 132
multiprocessors).  Hand-written Triton, tensor descriptors made on the device,
one program per multiprocessor:

- ``dp``: the persistent loop over whole tiles (what ntsym's persistent
  variant runs);
- ``sk1``: the tiles of the last, partial wave shared out by reduction steps
  (each program takes an equal run of them; a tile split between programs
  is finished by the last of them to arrive, which sums the others' partial
  results in program order: deterministic);
- ``sk2``: the last partial wave and one whole wave before it shared out
  (the stream-K paper's "two-tile" hybrid).

cuBLAS (``torch.mm``) and ntsym's tuned ``examples.mm`` are timed in the same
process (interleaved ``do_bench`` medians, L2 flushed).

    python -m benchmarks.lab.gemm_streamk [--sizes 1024 1536 2048] [--rounds 5]
    python -m benchmarks.lab.gemm_streamk --cpu-check   # correctness, interpreter
"""

import argparse
import os
import sys

CPU_CHECK = "--cpu-check" in sys.argv
if CPU_CHECK:
    os.environ["TRITON_INTERPRET"] = "1"

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

DEVICE = "cpu" if CPU_CHECK else "cuda"


@triton.jit
def _tile(pid, M, N, BM: tl.constexpr, BN: tl.constexpr):
    per_group = 8 * tl.cdiv(N, BN)
    first = pid // per_group * 8
    rows = tl.minimum(tl.cdiv(M, BM) - first, 8)
    return first + pid % per_group % rows, pid % per_group // rows


@triton.jit
def streamk_kernel(a_ptr, b_ptr, c_ptr, work_ptr, locks_ptr, M, N, K, sam, sbk, scm, DP_TILES, SK_TILES,
                   BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, FIXUP: tl.constexpr = 1,
                   SUBTILE: tl.constexpr = False, STREAMK: tl.constexpr = True):
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[sam, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[sbk, 1], block_shape=[BK, BN])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[scm, 1], block_shape=[BM, BN])
    half_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[scm, 1], block_shape=[BM, BN // 2])
    iters = tl.cdiv(K, BK)
    g = tl.program_id(0)
    programs = tl.num_programs(0)
    for pid in tl.range(g, DP_TILES, programs, flatten=True):
        pid_m, pid_n = _tile(pid, M, N, BM, BN)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(iters):
            acc += tl.dot(a_desc.load([pid_m * BM, k * BK]), b_desc.load([k * BK, pid_n * BN]))
        if SUBTILE:  # the epilogue in two halves: half the shared memory for the store
            halves = tl.permute(tl.reshape(acc, (BM, 2, BN // 2)), (0, 2, 1))
            left, right = tl.split(halves)
            half_desc.store([pid_m * BM, pid_n * BN], left.to(c_ptr.dtype.element_ty))
            half_desc.store([pid_m * BM, pid_n * BN + BN // 2], right.to(c_ptr.dtype.element_ty))
        else:
            c_desc.store([pid_m * BM, pid_n * BN], acc.to(c_ptr.dtype.element_ty))
    if STREAMK:
        total = SK_TILES * iters
        # Every program that takes part runs at least one step (empty runs would
        # not arrive at the tiles they fall in).
        workers = tl.maximum(tl.minimum(programs, total), 1)
        start = tl.minimum(g, workers) * total // workers
        end = tl.minimum(g + 1, workers) * total // workers
        rows = tl.arange(0, BM)[:, None]
        cols = tl.arange(0, BN)[None, :]
        it = start
        while it < end:
            t = it // iters
            k_first = it - t * iters
            k_last = tl.minimum(iters, end - t * iters)
            pid_m, pid_n = _tile(DP_TILES + t, M, N, BM, BN)
            acc = tl.zeros((BM, BN), dtype=tl.float32)
            for k in range(k_first, k_last):
                acc += tl.dot(a_desc.load([pid_m * BM, k * BK]), b_desc.load([k * BK, pid_n * BN]))
            if (k_first == 0 and k_last == iters) or FIXUP == 0:
                c_desc.store([pid_m * BM, pid_n * BN], acc.to(c_ptr.dtype.element_ty))
            elif FIXUP == 2:  # timing only: the partial result stored, nothing summed
                tl.store(work_ptr + (2 * g) * BM * BN + rows * BN + cols, acc)
                c_desc.store([pid_m * BM, pid_n * BN], acc.to(c_ptr.dtype.element_ty))
            elif FIXUP == 3:  # timing only: the arrivals counted, nothing stored or summed
                tl.debug_barrier()
                arrived = tl.atomic_add(locks_ptr + t, 1)
                first = ((t * iters + 1) * workers - 1) // total
                last = ((t + 1) * iters * workers - 1) // total
                if arrived == last - first:
                    c_desc.store([pid_m * BM, pid_n * BN], acc.to(c_ptr.dtype.element_ty))
                    tl.atomic_xchg(locks_ptr + t, 0)
            else:
                # The programs whose runs meet tile t, and this run's slot: a
                # program's first run (slot 0) or, where it began in an earlier
                # tile, its last (slot 1).
                first = ((t * iters + 1) * workers - 1) // total
                last = ((t + 1) * iters * workers - 1) // total
                slot = 2 * g + (start < t * iters).to(tl.int32)
                tl.store(work_ptr + slot * BM * BN + rows * BN + cols, acc)
                tl.debug_barrier()
                arrived = tl.atomic_add(locks_ptr + t, 1)
                if arrived == last - first:
                    if FIXUP == 4:  # this run's result from registers, the others' loaded
                        whole = tl.zeros((BM, BN), dtype=tl.float32)
                        for c in range(first, last + 1):
                            c_slot = 2 * c + ((c * total // workers) < t * iters).to(tl.int32)
                            part = tl.load(work_ptr + c_slot * BM * BN + rows * BN + cols,
                                           mask=(rows * 0 + cols * 0 + c) != g, other=0.0, cache_modifier=".cg")
                            whole += tl.where(c == g, acc, part)
                        c_desc.store([pid_m * BM, pid_n * BN], whole.to(c_ptr.dtype.element_ty))
                    else:  # every run's result loaded, summed in program order
                        whole = tl.zeros((BM, BN), dtype=tl.float32)
                        for c in range(first, last + 1):
                            c_slot = 2 * c + ((c * total // workers) < t * iters).to(tl.int32)
                            whole += tl.load(work_ptr + c_slot * BM * BN + rows * BN + cols, cache_modifier=".cg")
                        out_rows = pid_m * BM + rows
                        out_cols = pid_n * BN + cols
                        tl.store(c_ptr + out_rows * scm + out_cols, whole.to(c_ptr.dtype.element_ty),
                                 mask=(out_rows < M) & (out_cols < N))
                    tl.atomic_xchg(locks_ptr + t, 0)
            it = t * iters + k_last


_scratch = {}


def _alloc(size, align, stream):
    return torch.empty(size, dtype=torch.int8, device=DEVICE)


def streamk_mm(a, b, out, bm, bn, bk, warps, stages, mode, programs):
    m, k = a.shape
    n = b.shape[1]
    tiles = triton.cdiv(m, bm) * triton.cdiv(n, bn)
    # timing only: -nofix stores each run's result as the tile's (nothing
    # summed); -store stores the partial results but sums none; -count counts
    # arrivals but stores and sums nothing
    fixup = {"-nofix": 0, "-store": 2, "-count": 3, "-regs": 4}.get(mode[mode.find("-"):] if "-" in mode else "", 1)
    mode = mode.split("-")[0]
    subtile = mode == "dps"  # dp with the epilogue stored in two halves
    mode = "dp" if subtile else mode
    if mode in ("dpgrid", "skexact"):  # one program per tile, through either loop
        programs = tiles
    if mode in ("dp", "dpgrid"):
        sk = 0
    elif mode == "skexact":
        sk = tiles
    elif tiles < programs:
        sk = tiles
    else:
        sk = tiles % programs + (programs if mode == "sk2" and tiles >= 2 * programs else 0)
    key = (bm, bn, programs, tiles)
    if key not in _scratch:
        _scratch[key] = (torch.empty(2 * programs * bm * bn, dtype=torch.float32, device=a.device),
                         torch.zeros(tiles, dtype=torch.int32, device=a.device))
    work, locks = _scratch[key]
    if locks.numel() < sk:
        locks = torch.zeros(sk, dtype=torch.int32, device=a.device)
        _scratch[key] = (work, locks)
    streamk_kernel[(programs,)](a, b, out, work, locks, m, n, k, a.stride(0), b.stride(0), out.stride(0),
                                tiles - sk, sk, BM=bm, BN=bn, BK=bk, FIXUP=fixup, SUBTILE=subtile, STREAMK=sk > 0, num_warps=warps, num_stages=stages)
    return out


def cpu_check():
    triton.set_allocator(_alloc)
    torch.manual_seed(0)
    cases = 0
    for m, n, k in ((64, 48, 80), (96, 64, 112), (40, 72, 48), (128, 128, 64)):
        a = torch.randn(m, k)
        b = torch.randn(k, n)
        ref = a @ b
        for programs in (3, 5, 7):
            for mode in ("dp", "dps", "sk1", "sk2"):
                out = torch.empty(m, n)
                _scratch.clear()
                streamk_mm(a, b, out, 16, 16, 16, 4, 2, mode, programs)
                torch.testing.assert_close(out, ref, atol=1e-4, rtol=1e-4)
                again = torch.empty(m, n)
                streamk_mm(a, b, again, 16, 16, 16, 4, 2, mode, programs)
                assert torch.equal(again, out), "not deterministic"
                assert int(_scratch[(16, 16, programs, triton.cdiv(m, 16) * triton.cdiv(n, 16))][1].abs().sum()) == 0, "locks not reset"
                cases += 1
    print(f"cpu check: {cases} cases match torch, repeat bit for bit, leave the locks at zero")


CONFIGS = ((128, 128, 64, 8, 3), (128, 128, 64, 4, 4), (128, 256, 64, 8, 3), (128, 64, 64, 4, 4),
           (64, 128, 64, 4, 4), (64, 128, 128, 4, 4))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", nargs="*", type=int, default=(1024, 1536, 2048, 2560, 3072, 4096))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cpu-check", action="store_true")
    parser.add_argument("--dtypes", nargs="*", default=("float16",))
    parser.add_argument("--modes", nargs="*", default=("dp", "sk1", "sk2"))
    parser.add_argument("--configs", nargs="*", default=None, help="BMxBNxBK/warps/stages")
    args = parser.parse_args()
    if args.cpu_check:
        return cpu_check()
    from benchmarks.lab._rounds import interleaved
    from examples import mm
    import statistics

    triton.set_allocator(_alloc)
    programs = torch.cuda.get_device_properties(0).multi_processor_count
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}, "
          f"{programs} multiprocessors", flush=True)
    for size in args.sizes:
        for dtype in (getattr(torch, d) for d in args.dtypes):
            a, b = (torch.randn(size, size, device="cuda", dtype=dtype) for _ in range(2))
            ref = a.float() @ b.float()
            fns = {"cuBLAS": lambda: torch.mm(a, b), "ntsym tuned": lambda: mm.mm(a, b)}
            fns["ntsym tuned"]()
            outs = {}
            configs = CONFIGS if args.configs is None else [
                tuple(int(v) for v in c.replace("/", "x").split("x")) for c in args.configs]
            for bm, bn, bk, warps, stages in configs:
                for mode in args.modes:
                    label = f"{mode} {bm}x{bn}x{bk} w{warps} s{stages}"
                    out = outs[label] = torch.empty(size, size, device="cuda", dtype=dtype)

                    def run(bm=bm, bn=bn, bk=bk, w=warps, st=stages, mode=mode, out=out):
                        streamk_mm(a, b, out, bm, bn, bk, w, st, mode, programs)
                    try:
                        run()
                        torch.cuda.synchronize()
                        first = out.clone()
                        run()
                        torch.cuda.synchronize()
                    except Exception as exc:
                        print(f"  {label}: failed ({str(exc).splitlines()[0][:100]})")
                        continue
                    error = ((out.float() - ref).abs().max() / ref.abs().max()).item()
                    if (error > 1e-2 or not torch.equal(first, out)) and mode.split("-")[-1] in ("regs", mode):
                        print(f"  {label}: WRONG (relative error {error:.1e}, repeat equal {torch.equal(first, out)})")
                        continue
                    fns[label] = run
            times = interleaved(fns, rounds=args.rounds)
            base = statistics.median(times["cuBLAS"])
            print(f"\n### {size}^3 {str(dtype)[6:]}\n")
            print("| variant | ms | / cuBLAS | TFLOP/s |\n|---|---:|---:|---:|")
            for label, ts in sorted(times.items(), key=lambda kv: statistics.median(kv[1])):
                ms = statistics.median(ts)
                print(f"| {label} | {ms:.4f} | {ms / base:.3f} | {2 * size**3 / ms / 1e9:.0f} |")
            print(flush=True)


if __name__ == "__main__":
    main()
