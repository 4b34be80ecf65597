"""ntsym's bmm kernel as generated, and the same body inside a loop over tiles (persistent grids)."""
import statistics, torch, triton, triton.language as tl
from benchmarks.lab._rounds import interleaved


@triton.jit
def gen(input_ptr, other_ptr, output_ptr, input_size_0, input_size_1, input_size_2, input_stride_0, input_stride_1, input_stride_2, other_size_1, other_size_2, other_stride_0, other_stride_1, other_stride_2, output_stride_0, output_stride_1, output_stride_2, BLOCK_SIZE_K: tl.constexpr, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, LOOP: tl.constexpr, FLATTEN: tl.constexpr):
    if LOOP:
        tiles = input_size_0 * ((BLOCK_SIZE_M + input_size_1 - 1) // BLOCK_SIZE_M) * ((BLOCK_SIZE_N + other_size_2 - 1) // BLOCK_SIZE_N)
        for pid in tl.range(tl.program_id(0), tiles, tl.num_programs(0), flatten=FLATTEN):
            pid_2 = pid % ((BLOCK_SIZE_N + other_size_2 - 1) // BLOCK_SIZE_N)
            rest_2 = pid // ((BLOCK_SIZE_N + other_size_2 - 1) // BLOCK_SIZE_N)
            pid_1 = rest_2 % ((BLOCK_SIZE_M + input_size_1 - 1) // BLOCK_SIZE_M)
            pid_0 = rest_2 // ((BLOCK_SIZE_M + input_size_1 - 1) // BLOCK_SIZE_M)
            input_t0 = tl.arange(0, BLOCK_SIZE_M)[:, None]
            input_t1 = tl.arange(0, BLOCK_SIZE_K)[None, :]
            other_t0 = tl.arange(0, BLOCK_SIZE_K)[:, None]
            other_t1 = tl.arange(0, BLOCK_SIZE_N)[None, :]
            output_t0 = tl.arange(0, BLOCK_SIZE_M)[:, None]
            output_t1 = tl.arange(0, BLOCK_SIZE_N)[None, :]
            accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
            input_base_0 = input_stride_1 * input_t0 + input_stride_2 * input_t1 + pid_0 * input_stride_0 + pid_1 * input_stride_1 * BLOCK_SIZE_M
            mask_1 = pid_1 * BLOCK_SIZE_M + input_t0 < input_size_1
            other_base_2 = other_stride_1 * other_t0 + other_stride_2 * other_t1 + pid_0 * other_stride_0 + pid_2 * other_stride_2 * BLOCK_SIZE_N
            mask_3 = pid_2 * BLOCK_SIZE_N + other_t1 < other_size_2
            for k in range(input_size_2 // BLOCK_SIZE_K):
                accumulator += tl.dot(tl.load(input_ptr + (input_base_0 + k * input_stride_2 * BLOCK_SIZE_K), mask=mask_1, other=0), tl.load(other_ptr + (other_base_2 + k * other_stride_1 * BLOCK_SIZE_K), mask=mask_3, other=0))
            if not FLATTEN:
                for k in range(input_size_2 // BLOCK_SIZE_K, (BLOCK_SIZE_K + input_size_2 - 1) // BLOCK_SIZE_K):
                    accumulator += tl.dot(tl.load(input_ptr + (input_base_0 + k * input_stride_2 * BLOCK_SIZE_K), mask=mask_1 & (k * BLOCK_SIZE_K + input_t1 < input_size_2), other=0), tl.load(other_ptr + (other_base_2 + k * other_stride_1 * BLOCK_SIZE_K), mask=mask_3 & (k * BLOCK_SIZE_K + other_t0 < input_size_2), other=0))
            tl.store(output_ptr + (pid_0 * output_stride_0 + output_stride_1 * (pid_1 * BLOCK_SIZE_M + output_t0) + output_stride_2 * (pid_2 * BLOCK_SIZE_N + output_t1)), accumulator.to(output_ptr.dtype.element_ty), mask=(pid_1 * BLOCK_SIZE_M + output_t0 < input_size_1) & (pid_2 * BLOCK_SIZE_N + output_t1 < other_size_2))
    else:
        pid = tl.program_id(0)
        pid_2 = pid % ((BLOCK_SIZE_N + other_size_2 - 1) // BLOCK_SIZE_N)
        rest_2 = pid // ((BLOCK_SIZE_N + other_size_2 - 1) // BLOCK_SIZE_N)
        pid_1 = rest_2 % ((BLOCK_SIZE_M + input_size_1 - 1) // BLOCK_SIZE_M)
        pid_0 = rest_2 // ((BLOCK_SIZE_M + input_size_1 - 1) // BLOCK_SIZE_M)
        input_t0 = tl.arange(0, BLOCK_SIZE_M)[:, None]
        input_t1 = tl.arange(0, BLOCK_SIZE_K)[None, :]
        other_t0 = tl.arange(0, BLOCK_SIZE_K)[:, None]
        other_t1 = tl.arange(0, BLOCK_SIZE_N)[None, :]
        output_t0 = tl.arange(0, BLOCK_SIZE_M)[:, None]
        output_t1 = tl.arange(0, BLOCK_SIZE_N)[None, :]
        accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
        input_base_0 = input_stride_1 * input_t0 + input_stride_2 * input_t1 + pid_0 * input_stride_0 + pid_1 * input_stride_1 * BLOCK_SIZE_M
        mask_1 = pid_1 * BLOCK_SIZE_M + input_t0 < input_size_1
        other_base_2 = other_stride_1 * other_t0 + other_stride_2 * other_t1 + pid_0 * other_stride_0 + pid_2 * other_stride_2 * BLOCK_SIZE_N
        mask_3 = pid_2 * BLOCK_SIZE_N + other_t1 < other_size_2
        for k in range(input_size_2 // BLOCK_SIZE_K):
            accumulator += tl.dot(tl.load(input_ptr + (input_base_0 + k * input_stride_2 * BLOCK_SIZE_K), mask=mask_1, other=0), tl.load(other_ptr + (other_base_2 + k * other_stride_1 * BLOCK_SIZE_K), mask=mask_3, other=0))
        for k in range(input_size_2 // BLOCK_SIZE_K, (BLOCK_SIZE_K + input_size_2 - 1) // BLOCK_SIZE_K):
            accumulator += tl.dot(tl.load(input_ptr + (input_base_0 + k * input_stride_2 * BLOCK_SIZE_K), mask=mask_1 & (k * BLOCK_SIZE_K + input_t1 < input_size_2), other=0), tl.load(other_ptr + (other_base_2 + k * other_stride_1 * BLOCK_SIZE_K), mask=mask_3 & (k * BLOCK_SIZE_K + other_t0 < input_size_2), other=0))
        tl.store(output_ptr + (pid_0 * output_stride_0 + output_stride_1 * (pid_1 * BLOCK_SIZE_M + output_t0) + output_stride_2 * (pid_2 * BLOCK_SIZE_N + output_t1)), accumulator.to(output_ptr.dtype.element_ty), mask=(pid_1 * BLOCK_SIZE_M + output_t0 < input_size_1) & (pid_2 * BLOCK_SIZE_N + output_t1 < other_size_2))


def run(a, b, c, BM, BN, BK, w, s, loop, flatten, programs):
    B, M, K = a.shape
    N = b.shape[2]
    tiles = B * triton.cdiv(M, BM) * triton.cdiv(N, BN)
    grid = (tiles if programs is None else min(tiles, programs),)
    gen[grid](a, b, c, B, M, K, *a.stride(), K, N, *b.stride(), *c.stride(), BK, BM, BN, loop, flatten, num_warps=w, num_stages=s)


def main():
    import sys
    cpu = "--cpu" in sys.argv
    dev = "cpu" if cpu else "cuda"
    nsm = 3 if cpu else torch.cuda.get_device_properties(0).multi_processor_count
    print(torch.__version__, triton.__version__, "" if cpu else torch.cuda.get_device_name())
    cases = {"bmm 4x2048^3": (4, 2048, 2048, 2048), "mm 4096^3": (1, 4096, 4096, 4096)} if not cpu else {"small": (2, 96, 80, 72)}
    cfgs = [(128, 256, 64, 8, 3), (128, 128, 64, 8, 4)] if not cpu else [(32, 32, 32, 4, 2)]
    rows = []
    for name, (B, M, K, N) in cases.items():
        dt = torch.float32 if cpu else torch.float16
        a = torch.randn(B, M, K, device=dev, dtype=dt); b = torch.randn(B, K, N, device=dev, dtype=dt)
        c = torch.empty(B, M, N, device=dev, dtype=dt)
        ref = torch.bmm(a.float(), b.float())
        variants = [("torch", None)]
        for cfg in cfgs:
            for label, loop, flatten, programs in (("generated", False, False, None), ("loop, grid=tiles", True, False, None),
                                                  ("persistent SMs", True, False, nsm), ("persistent 2xSMs", True, False, 2 * nsm),
                                                  ("persistent SMs flatten", True, True, nsm)):
                if flatten and K % cfg[2]:
                    continue
                variants.append((f"{label} {cfg}", (cfg, loop, flatten, programs)))
        fns = []
        for label, v in variants:
            if v is None:
                fn = lambda: torch.bmm(a, b, out=c)
            else:
                cfg, loop, flatten, programs = v
                fn = lambda cfg=cfg, loop=loop, flatten=flatten, programs=programs: run(a, b, c, *cfg, loop, flatten, programs)
            try:
                c.fill_(float("nan")); fn()
                err = ((c.float() - ref).norm() / ref.norm()).item()
                ok = err < 1e-2
            except Exception as e:
                print(label, "error", str(e).splitlines()[0][:150]); continue
            print(f"check {name} {label}: rel err {err:.1e}")
            if ok:
                fns.append((label, fn))
        if cpu:
            continue
        times = interleaved(fns)
        t0 = statistics.median(times["torch"])
        for l, _ in fns:
            ms = statistics.median(times[l])
            rows.append(f"| {name} | {l} | {ms:.4f} | {100 * t0 / ms:.1f}% | {min(times[l]):.4f}-{max(times[l]):.4f} |")
    print("| case | variant | ms (median of 5 rounds) | % of torch | range |\n|---|---|---:|---:|---|")
    print("\n".join(rows))


main()
