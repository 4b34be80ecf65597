"""fp8 GEMM: ntsym's ``examples/fp8_mm.py`` against ``torch._scaled_mm`` (cuBLASLt).

    python -m benchmarks.fp8_gemm [--sizes 1024,2048,4096,6144,8192] [--out-dtype float16|bfloat16]
                                  [--rounds 5] [--fast-accum] [--out DIR] [--cpu-check]

Square M = N = K, ``float8_e4m3fn`` inputs with per-tensor float32 scales.  Per size:

- ``torch``: ``torch._scaled_mm(a, b, scale_a, scale_b, out_dtype=...)``, ``b`` column-major
  (what it requires);
- ``ntsym``: ``fp8_mm(a, b, ...)`` with the same column-major ``b`` (K-major, the layout the
  Hopper fp8 tensor-core instructions read);
- ``ntsym row-major b``: the same call with ``b`` made contiguous (N-major), to show what
  the layout costs;
- ``torch fp16 mm``: ``torch.mm`` of the same matrices in float16, for scale.

Every implementation is first checked against ``torch._scaled_mm``'s result; timing is
``triton.testing.do_bench`` (median, L2 flushed) in interleaved rounds, the median of the
rounds reported, as in ``benchmarks/bench.py``.  Goal: ntsym at least 85 % of
``torch._scaled_mm``'s throughput at 4096^3 - 8192^3.  Also reported: ntsym's first call at
each size in this process (compilation and tuning; the first size pays the compilation).
``--fast-accum`` passes ``use_fast_accum=True`` to both (the tensor cores' accumulator carried
over all K tiles: faster, less precise); the check's tolerance is the same.

Output: a markdown table on stdout and ``fp8_gemm.md``, ``fp8_gemm.json`` under ``--out``
(or ``$OUT``).  ``--cpu-check`` runs small shapes through Triton's interpreter against a
float32 reference instead (no timing).
"""

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

GOAL = 0.85
GOAL_FROM = 4096


def log(*parts):
    print(*parts, file=sys.stderr, flush=True)


def inputs(n, device, seed=0):
    import torch

    gen = torch.Generator(device="cpu").manual_seed(seed)
    a = (torch.randn(n, n, generator=gen) / 2).to(device=device, dtype=torch.float8_e4m3fn)
    b_t = (torch.randn(n, n, generator=gen) / 2).to(device=device, dtype=torch.float8_e4m3fn)
    scale_a = torch.tensor(0.75, device=device)
    scale_b = torch.tensor(1.25, device=device)
    return a, b_t.t(), scale_a, scale_b  # b column-major (K, N)


def cpu_check():
    os.environ["TRITON_INTERPRET"] = "1"
    import torch

    from examples.fp8_mm import fp8_mm

    failures = 0
    for n in (40, 96):
        a, b, sa, sb = inputs(n, "cpu")
        ref = (a.float() * sa) @ (b.float() * sb)
        for out_dtype in (torch.float16, torch.bfloat16):
            for layout, bb in (("column-major b", b), ("row-major b", b.contiguous())):
                out = fp8_mm(a, bb, sa, sb, out_dtype=out_dtype)
                ok = out.dtype == out_dtype and torch.allclose(out.float(), ref, atol=5e-2, rtol=2e-2)
                failures += not ok
                print(f"fp8_mm {n}^3 {layout} -> {out_dtype}: {'ok' if ok else 'WRONG'}")
    return 1 if failures else 0


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks.fp8_gemm", description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="1024,2048,4096,6144,8192")
    p.add_argument("--out-dtype", default="float16", choices=("float16", "bfloat16"))
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--fast-accum", action="store_true", help="use_fast_accum=True for torch and ntsym")
    p.add_argument("--out", default=None)
    p.add_argument("--cpu-check", action="store_true")
    args = p.parse_args(argv)
    repo = str(Path(__file__).resolve().parents[1])
    if repo not in sys.path:
        sys.path.insert(0, repo)
    if args.cpu_check:
        return cpu_check()
    import torch
    import triton
    import triton.testing

    from benchmarks import bench

    if not torch.cuda.is_available():
        log("no CUDA device: use --cpu-check")
        return 2
    started = time.perf_counter()
    from examples.fp8_mm import fp8_mm

    out_dtype = getattr(torch, args.out_dtype)
    fast = args.fast_accum
    env = bench.environment("cuda")
    rows, status = [], 0
    for n in [int(s) for s in args.sizes.split(",")]:
        a, b, sa, sb = inputs(n, "cuda")
        b_row = b.contiguous()
        a16, b16 = a.to(torch.float16), b.to(torch.float16)
        impls = {
            "torch": lambda: torch._scaled_mm(a, b, sa, sb, out_dtype=out_dtype, use_fast_accum=fast),
            "ntsym": lambda: fp8_mm(a, b, sa, sb, out_dtype=out_dtype, use_fast_accum=fast),
            "ntsym row-major b": lambda: fp8_mm(a, b_row, sa, sb, out_dtype=out_dtype, use_fast_accum=fast),
            "torch fp16 mm": lambda: torch.mm(a16, b16),
        }
        ref = impls["torch"]().float()
        row = dict(n=n, out_dtype=args.out_dtype, ms={}, rounds={}, first_call_s={}, check={})
        for name, fn in impls.items():
            t0 = time.perf_counter()
            out = fn()
            torch.cuda.synchronize()
            row["first_call_s"][name] = time.perf_counter() - t0
            scale = (sa * sb).item() if name == "torch fp16 mm" else 1.0  # the fp16 mm leaves the scales out
            diff = (out.float() * scale - ref).abs()
            err = diff.max().item()
            ok = bool((diff <= 0.1 + 2e-2 * ref.abs()).all())
            del out, diff
            row["check"][name] = f"{'ok' if ok else 'WRONG'} (max abs error {err:.3g})"
            if not ok:
                status = 1
            log(f"{n}^3 {name}: first call {row['first_call_s'][name]:.2f} s, {row['check'][name]}")
        for _ in range(args.rounds):
            for name, fn in impls.items():
                if row["check"][name].startswith("ok"):
                    row["rounds"].setdefault(name, []).append(triton.testing.do_bench(fn, **bench.DO_BENCH))
        for name, rounds in row["rounds"].items():
            row["ms"][name] = statistics.median(rounds)
        row["tflops"] = {k: 2 * n**3 / (ms * 1e-3) / 1e12 for k, ms in row["ms"].items()}
        rows.append(row)
        log(f"{n}^3: " + ", ".join(f"{k} {v:.4f} ms ({row['tflops'][k]:.0f} TFLOP/s)" for k, v in row["ms"].items()))
        torch.cuda.empty_cache()
    names = ["torch", "ntsym", "ntsym row-major b", "torch fp16 mm"]
    lines = [f"# fp8 GEMM (float8_e4m3fn, per-tensor scales, {args.out_dtype} output"
             f"{', use_fast_accum=True' if fast else ''})", "",
             f"{env.get('gpu')}, driver {env.get('driver')}; python {env['python']}, torch {env['torch']}, "
             f"triton {env['triton']}; commit {env.get('commit')}; {env['date']}.",
             f"do_bench(warmup={bench.DO_BENCH['warmup']}, rep={bench.DO_BENCH['rep']}, median), {args.rounds} "
             "interleaved rounds, median of the rounds.", "",
             "| M = N = K | " + " | ".join(f"{k} ms (TFLOP/s)" for k in names) +
             " | ntsym / torch throughput | goal | ntsym first call s |",
             "| ---: |" + " ---: |" * (len(names) + 3)]
    misses = []
    for row in rows:
        cells = [f"{row['ms'][k]:.4f} ({row['tflops'][k]:.0f})" if k in row["ms"] else row["check"].get(k, "")
                 for k in names]
        frac = row["tflops"].get("ntsym", 0) / row["tflops"]["torch"] if "torch" in row["tflops"] else None
        goal = ""
        if frac is not None and row["n"] >= GOAL_FROM:
            goal = "met" if frac >= GOAL else "MISSED"
            if frac < GOAL:
                misses.append(f"{row['n']}^3: {100 * frac:.1f} % of torch._scaled_mm")
        lines.append(f"| {row['n']} | " + " | ".join(cells) +
                     f" | {f'{100 * frac:.1f} %' if frac else ''} | {goal} | {row['first_call_s']['ntsym']:.1f} |")
    lines += ["", f"Goal: ntsym >= {100 * GOAL:.0f} % of torch._scaled_mm from {GOAL_FROM}^3 up: "
              + ("; ".join(misses) if misses else "met at every such size") + "."]
    text = "\n".join(lines) + "\n"
    print(text)
    out = args.out or os.environ.get("OUT")
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        stem = f"fp8_gemm_{args.out_dtype}{'_fast_accum' if fast else ''}"
        Path(out, f"{stem}.md").write_text(text)
        Path(out, f"{stem}.json").write_text(json.dumps(dict(environment=env, rows=rows, misses=misses), indent=1))
        log(f"wrote {stem}.md, {stem}.json to {out}")
    log(f"took {time.perf_counter() - started:.0f} s")
    return status


if __name__ == "__main__":
    sys.exit(main())
