#!/usr/bin/env python3
"""How close does Triton get to cuBLAS on Hopper for fp16 mm / bmm?

Variants: torch (cuBLAS), plain (tutorial pointer kernel), tma (device-side
tensor descriptors, one tile per program), tma_persistent (grid = #SMs,
flattened tile loop), tma_persistent_ws (as persistent, inner K loop with
warp_specialize=True), plus an extra tma_persistent_ws_outer (warp_specialize on
the outer tile loop, as Triton's tutorial 09 does) on two configs.

Usage:
    python -m benchmarks.lab.gemm_tma              # on the GPU
    python -m benchmarks.lab.gemm_tma --cpu-check  # correctness only, tiny shapes, interpreter

Written against the APIs common to triton 3.6.0 and 3.9.0:
  tl.make_tensor_descriptor(base, shape, strides, block_shape), desc.load/store,
  tl.range(..., flatten=, warp_specialize=), triton.set_allocator,
  triton.testing.do_bench(fn, warmup, rep, return_mode=).
"""
import os
import sys

CPU_CHECK = "--cpu-check" in sys.argv
if CPU_CHECK:
    # must be set before triton is imported / kernels are decorated
    os.environ["TRITON_INTERPRET"] = "1"

import inspect  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

DEVICE = "cpu" if CPU_CHECK else "cuda"
VERBOSE = "--verbose" in sys.argv


def _range_params():
    try:
        return set(inspect.signature(tl.range.__init__).parameters)
    except Exception:  # pragma: no cover
        return set()


_RP = _range_params()
HAS_FLATTEN = "flatten" in _RP
HAS_WS = "warp_specialize" in _RP
HAS_DESC = hasattr(tl, "make_tensor_descriptor")
HAS_ALLOC = hasattr(triton, "set_allocator")

if HAS_ALLOC:
    # scratch for device-side TMA descriptors (created once per launch)
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device=DEVICE))


def err_line(e):
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    # Triton CompilationError starts with "at L:C:" + source; the reason is usually last
    msg = lines[-1] if lines else ""
    if lines and not lines[0].startswith("at "):
        msg = lines[0]
    return f"{type(e).__name__}: {msg}"[:200]


# --------------------------------------------------------------------------- kernels
@triton.jit
def _grouped_pid(tile_id, num_pid_m, num_pid_n, GROUP_M: tl.constexpr):
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = tile_id // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((tile_id % num_pid_in_group) % group_size_m)
    pid_n = (tile_id % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@triton.jit
def mm_plain_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                    stride_ab, stride_am, stride_ak,
                    stride_bb, stride_bk, stride_bn,
                    stride_cb, stride_cm, stride_cn,
                    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    pid_b = tl.program_id(1)
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    pid_m, pid_n = _grouped_pid(pid, num_pid_m, num_pid_n, GROUP_M)
    offs_am = (pid_m * BM + tl.arange(0, BM)) % M
    offs_bn = (pid_n * BN + tl.arange(0, BN)) % N
    offs_k = tl.arange(0, BK)
    a_ptrs = a_ptr + pid_b * stride_ab + offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + pid_b * stride_bb + offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BK, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BK, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK * stride_ak
        b_ptrs += BK * stride_bk
    c = acc.to(c_ptr.dtype.element_ty)
    offs_cm = pid_m * BM + tl.arange(0, BM)
    offs_cn = pid_n * BN + tl.arange(0, BN)
    c_ptrs = c_ptr + pid_b * stride_cb + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn
    tl.store(c_ptrs, c, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


# B (batch) is not specialized so mm (B=1) and bmm (B=4) share one compiled kernel per config.
@triton.jit(do_not_specialize=["B"])
def mm_tma_kernel(a_ptr, b_ptr, c_ptr, B, M, N, K,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr):
    # flattened 2-D views: A (B*M, K), Bmat (B*K, N), C (B*M, N); M, K multiples of BM, BK
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[B * M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[B * K, N], strides=[N, 1], block_shape=[BK, BN])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[B * M, N], strides=[N, 1], block_shape=[BM, BN])
    pid = tl.program_id(0)
    pid_b = tl.program_id(1)
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    pid_m, pid_n = _grouped_pid(pid, num_pid_m, num_pid_n, GROUP_M)
    off_am = pid_b * M + pid_m * BM
    off_bk = pid_b * K
    off_n = pid_n * BN
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = a_desc.load([off_am, k * BK])
        b = b_desc.load([off_bk + k * BK, off_n])
        acc = tl.dot(a, b, acc)
    c_desc.store([off_am, off_n], acc.to(c_ptr.dtype.element_ty))


@triton.jit(do_not_specialize=["B"])
def mm_tma_persistent_kernel(a_ptr, b_ptr, c_ptr, B, M, N, K,
                             BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr,
                             NUM_SMS: tl.constexpr, FLATTEN: tl.constexpr,
                             WS_OUTER: tl.constexpr, WS_INNER: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[B * M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[B * K, N], strides=[N, 1], block_shape=[BK, BN])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[B * M, N], strides=[N, 1], block_shape=[BM, BN])
    start_pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    k_tiles = tl.cdiv(K, BK)
    tiles_per_batch = num_pid_m * num_pid_n
    num_tiles = B * tiles_per_batch
    # separate epilogue tile counter (as in Triton tutorial 09) so the flattened
    # loop's prologue and epilogue do not depend on each other
    tile_id_c = start_pid - NUM_SMS
    for tile_id in tl.range(start_pid, num_tiles, NUM_SMS, flatten=FLATTEN, warp_specialize=WS_OUTER):
        pid_b = tile_id // tiles_per_batch
        pid_m, pid_n = _grouped_pid(tile_id % tiles_per_batch, num_pid_m, num_pid_n, GROUP_M)
        off_am = pid_b * M + pid_m * BM
        off_bk = pid_b * K
        off_n = pid_n * BN
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for ki in tl.range(0, k_tiles, warp_specialize=WS_INNER):
            a = a_desc.load([off_am, ki * BK])
            b = b_desc.load([off_bk + ki * BK, off_n])
            acc = tl.dot(a, b, acc)
        tile_id_c += NUM_SMS
        pid_bc = tile_id_c // tiles_per_batch
        pid_mc, pid_nc = _grouped_pid(tile_id_c % tiles_per_batch, num_pid_m, num_pid_n, GROUP_M)
        c_desc.store([pid_bc * M + pid_mc * BM, pid_nc * BN], acc.to(c_ptr.dtype.element_ty))


# --------------------------------------------------------------------------- wrappers
GROUP_M = 8


def _as3(a, b):
    if a.dim() == 2:
        return a.unsqueeze(0), b.unsqueeze(0)
    return a, b


def make_plain(a, b, cfg):
    BM, BN, BK, w, s = cfg
    a3, b3 = _as3(a, b)
    Bt, M, K = a3.shape
    N = b3.shape[2]
    c3 = torch.empty((Bt, M, N), dtype=a.dtype, device=a.device)
    grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN), Bt)

    def fn():
        mm_plain_kernel[grid](a3, b3, c3, M, N, K,
                              a3.stride(0), a3.stride(1), a3.stride(2),
                              b3.stride(0), b3.stride(1), b3.stride(2),
                              c3.stride(0), c3.stride(1), c3.stride(2),
                              BM=BM, BN=BN, BK=BK, GROUP_M=GROUP_M, num_warps=w, num_stages=s)
        return c3.view(a.shape[:-1] + (N,))
    return fn


def _tma_prep(a, b, BM, BK):
    if not HAS_DESC:
        raise RuntimeError("tl.make_tensor_descriptor not available")
    a3, b3 = _as3(a, b)
    a3, b3 = a3.contiguous(), b3.contiguous()
    Bt, M, K = a3.shape
    N = b3.shape[2]
    if M % BM or K % BK:
        raise RuntimeError("flattened-descriptor bmm needs M % BM == 0 and K % BK == 0")
    c3 = torch.empty((Bt, M, N), dtype=a.dtype, device=a.device)
    return a3, b3, c3, Bt, M, N, K


def make_tma(a, b, cfg):
    BM, BN, BK, w, s = cfg
    a3, b3, c3, Bt, M, N, K = _tma_prep(a, b, BM, BK)
    grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN), Bt)

    def fn():
        mm_tma_kernel[grid](a3, b3, c3, Bt, M, N, K, BM=BM, BN=BN, BK=BK, GROUP_M=GROUP_M,
                            num_warps=w, num_stages=s)
        return c3.view(a.shape[:-1] + (N,))
    return fn


def num_sms():
    if CPU_CHECK:
        return 3  # deliberately not dividing the tile count
    return torch.cuda.get_device_properties(0).multi_processor_count


def make_tma_persistent(a, b, cfg, ws_inner=False, ws_outer=False):
    BM, BN, BK, w, s = cfg
    if (ws_inner or ws_outer) and not HAS_WS:
        raise NotImplementedError("tl.range has no warp_specialize parameter")
    a3, b3, c3, Bt, M, N, K = _tma_prep(a, b, BM, BK)
    nsm = num_sms()
    num_tiles = Bt * triton.cdiv(M, BM) * triton.cdiv(N, BN)
    grid = (min(nsm, num_tiles),)
    # inner-loop WS: keep outer loop unflattened so the WS attribute stays on the K loop
    flatten = HAS_FLATTEN and not ws_inner

    def fn():
        fn.compiled = mm_tma_persistent_kernel[grid](a3, b3, c3, Bt, M, N, K, BM=BM, BN=BN, BK=BK,
                                                     GROUP_M=GROUP_M, NUM_SMS=nsm, FLATTEN=flatten,
                                                     WS_OUTER=ws_outer, WS_INNER=ws_inner,
                                                     num_warps=w, num_stages=s)
        return c3.view(a.shape[:-1] + (N,))
    fn.compiled = None
    fn.wants_ws = ws_inner or ws_outer
    return fn


def ws_note(fn):
    """For WS variants: did the compiler actually emit a ttg.warp_specialize region?
    (On sm_90 Triton may silently ignore the loop attribute.)"""
    if not getattr(fn, "wants_ws", False):
        return ""
    try:
        ttgir = fn.compiled.asm["ttgir"]
        nw = fn.compiled.metadata.num_warps
        if "ttg.warp_specialize(" in ttgir:
            return f" [WS applied, {nw} warps]"
        return " [WS NOT applied: attribute ignored]"
    except Exception:
        return " [WS applied: unknown]"


def make_tma_persistent_ws(a, b, cfg):
    return make_tma_persistent(a, b, cfg, ws_inner=True)


def make_tma_persistent_ws_outer(a, b, cfg):
    return make_tma_persistent(a, b, cfg, ws_outer=True)


CONFIGS = [(128, 256, 64, 8, 3), (128, 256, 64, 8, 4), (256, 128, 64, 8, 3),
           (128, 128, 64, 8, 4), (128, 128, 64, 4, 4)]
# (name, factory, configs)
VARIANTS = [
    ("plain", make_plain, CONFIGS),
    ("tma", make_tma, CONFIGS),
    ("tma_persistent", make_tma_persistent, CONFIGS),
    ("tma_persistent_ws", make_tma_persistent_ws, CONFIGS),
    # extra, not in the brief: WS on the outer tile loop (tutorial-09 style), 2 configs only
    ("tma_persistent_ws_outer", make_tma_persistent_ws_outer, [CONFIGS[0], CONFIGS[3]]),
]


def cfg_str(cfg):
    return "BM{} BN{} BK{} w{} s{}".format(*cfg)


def rel_err(out, ref):
    ref = ref.float()
    return ((out.float() - ref).abs().max() / ref.abs().max().clamp_min(1e-30)).item()


# --------------------------------------------------------------------------- cpu check
def cpu_check():
    print(f"torch {torch.__version__}  triton {triton.__version__}  TRITON_INTERPRET=1 (CPU)")
    print(f"flatten param: {HAS_FLATTEN}  warp_specialize param: {HAS_WS}  "
          f"make_tensor_descriptor: {HAS_DESC}  set_allocator: {HAS_ALLOC}")
    torch.manual_seed(0)
    cases = [("mm 256^3", torch.randn(256, 256, dtype=torch.float16), torch.randn(256, 256, dtype=torch.float16)),
             ("bmm 2x128^3", torch.randn(2, 128, 128, dtype=torch.float16),
              torch.randn(2, 128, 128, dtype=torch.float16))]
    cfg = (64, 64, 32, 4, 3)
    ok_all = True
    for cname, a, b in cases:
        ref = torch.matmul(a.float(), b.float())
        for vname, factory, _ in VARIANTS:
            t0 = time.time()
            try:
                out = factory(a, b, cfg)()
                e = rel_err(out, ref)
                status = "ok" if e < 1e-2 else "WRONG"
                ok_all &= status == "ok"
                print(f"  {cname:12s} {vname:24s} {status:5s} rel_err={e:.2e} ({time.time() - t0:.1f}s)")
            except Exception as ex:
                ok_all = False
                print(f"  {cname:12s} {vname:24s} ERROR {err_line(ex)}")
                if VERBOSE:
                    traceback.print_exc()
    print("ALL OK" if ok_all else "SOME FAILED")
    return 0 if ok_all else 1


# --------------------------------------------------------------------------- benchmark
def bench():
    from triton.testing import do_bench
    t_start = time.time()
    print(f"torch {torch.__version__}")
    print(f"triton {triton.__version__}")
    print(f"GPU {torch.cuda.get_device_name(0)} (sm_{''.join(map(str, torch.cuda.get_device_capability(0)))}, "
          f"{num_sms()} SMs)")
    print(f"flatten param: {HAS_FLATTEN}  warp_specialize param: {HAS_WS}  "
          f"make_tensor_descriptor: {HAS_DESC}  set_allocator: {HAS_ALLOC}")
    print(f"torch allow_fp16_reduced_precision_reduction="
          f"{torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction}")
    sys.stdout.flush()

    torch.manual_seed(0)
    cases = []
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
    b = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
    cases.append(("mm 4096^3", a, b, 2.0 * 4096 ** 3))
    a = torch.randn(4, 2048, 2048, device="cuda", dtype=torch.float16)
    b = torch.randn(4, 2048, 2048, device="cuda", dtype=torch.float16)
    cases.append(("bmm 4x2048^3", a, b, 2.0 * 4 * 2048 ** 3))

    entries = []  # dicts: case, variant, config, flops, fn, status, times
    for cname, a, b, flops in cases:
        ref = torch.matmul(a, b)
        out_t = torch.empty_like(ref)
        if a.dim() == 2:
            torch_fn = (lambda a=a, b=b, o=out_t: torch.mm(a, b, out=o))
        else:
            torch_fn = (lambda a=a, b=b, o=out_t: torch.bmm(a, b, out=o))
        entries.append(dict(case=cname, variant="torch", config="cuBLAS (out=)", flops=flops, fn=torch_fn,
                            status=None, times=[]))
        for vname, factory, cfgs in VARIANTS:
            for cfg in cfgs:
                ent = dict(case=cname, variant=vname, config=cfg_str(cfg), flops=flops, fn=None, status=None,
                           times=[])
                entries.append(ent)
                t0 = time.time()
                try:
                    fn = factory(a, b, cfg)
                    out = fn()  # compiles lazily on first call
                    torch.cuda.synchronize()
                    e = rel_err(out, ref)
                    if not (e < 1e-2):  # also catches NaN
                        ent["status"] = f"WRONG (rel err {e:.2e})"
                    else:
                        ent["fn"] = fn
                    ent["config"] += ws_note(fn)
                    msg = ent["status"] or f"ok rel_err={e:.1e}"
                except NotImplementedError as ex:
                    ent["status"] = f"skipped: {ex}"
                    msg = ent["status"]
                except Exception as ex:
                    el = err_line(ex)
                    ent["status"] = ("skipped: " if vname.startswith("tma_persistent_ws") else "error: ") + el
                    msg = ent["status"]
                    if VERBOSE:
                        traceback.print_exc()
                    try:
                        torch.cuda.synchronize()
                    except Exception:
                        pass
                print(f"[check] {cname:13s} {vname:24s} {ent['config']:24s} {msg}  ({time.time() - t0:.1f}s)")
                sys.stdout.flush()

    n_rounds = 3
    for r in range(n_rounds):
        t0 = time.time()
        for ent in entries:
            if ent["fn"] is None:
                continue
            try:
                ent["times"].append(do_bench(ent["fn"], warmup=25, rep=100, return_mode="median"))
            except Exception as ex:
                ent["status"] = "error in timing: " + err_line(ex)
                ent["fn"] = None
                print(f"[bench] {ent['case']} {ent['variant']} {ent['config']}: {ent['status']}")
        print(f"[bench] round {r + 1}/{n_rounds} done ({time.time() - t0:.1f}s)")
        sys.stdout.flush()

    torch_ms = {}
    for ent in entries:
        if ent["variant"] == "torch" and ent["times"]:
            torch_ms[ent["case"]] = statistics.median(ent["times"])

    print()
    print("| case | variant | config | ms | TFLOP/s | % of torch |")
    print("|---|---|---|---|---|---|")
    for ent in entries:
        if ent["times"] and ent["fn"] is not None:
            ms = statistics.median(ent["times"])
            tflops = ent["flops"] / (ms * 1e-3) / 1e12
            pct = f"{100.0 * torch_ms[ent['case']] / ms:.1f}%" if ent["case"] in torch_ms else "-"
            print(f"| {ent['case']} | {ent['variant']} | {ent['config']} | {ms:.4f} | {tflops:.1f} | {pct} |")
        else:
            st = (ent["status"] or "not run").replace("|", "/")
            print(f"| {ent['case']} | {ent['variant']} | {ent['config']} | {st} | - | - |")

    # best per variant
    print()
    print("| case | variant | best config | ms | TFLOP/s | % of torch |")
    print("|---|---|---|---|---|---|")
    for cname, _, _, flops in cases:
        for vname in ["torch"] + [v[0] for v in VARIANTS]:
            cands = [e for e in entries if e["case"] == cname and e["variant"] == vname and e["times"]
                     and e["fn"] is not None]
            if not cands:
                print(f"| {cname} | {vname} | none | - | - | - |")
                continue
            best = min(cands, key=lambda e: statistics.median(e["times"]))
            ms = statistics.median(best["times"])
            pct = f"{100.0 * torch_ms[cname] / ms:.1f}%" if cname in torch_ms else "-"
            print(f"| {cname} | {vname} | {best['config']} | {ms:.4f} | {flops / ms / 1e9:.1f} | {pct} |")
    print(f"\ntotal time {time.time() - t_start:.1f}s")
    return 0


if __name__ == "__main__":
    if CPU_CHECK:
        sys.exit(cpu_check())
    if not torch.cuda.is_available():
        print("CUDA not available; use --cpu-check for an interpreter correctness run")
        sys.exit(1)
    sys.exit(bench())
