"""Ahead-of-time kernels on a GPU: the C library (``ntsym.make(...,
caller="cuda")``) and the exported standalone module against torch for add,
mm, softmax, rms_norm, sdpa and conv2d; a non-contiguous input (the general
variant); a tensor of more than 2**31 elements (the 64-bit variant); host
launch cost of the C path, the Python launcher and a plain Triton launch; the
build time of mm over its configurations, serial and in parallel.

    python -m benchmarks.lab.aot      # prints a markdown table; results under $OUT if set
"""

import functools
import importlib.util
import json
import math
import os
import pathlib
import platform
import shutil
import sys
import tempfile
import time

import torch
import triton

import ntsym
from examples import add, conv2d, mm, rms_norm, sdpa, softmax
from ntsym import Tensor

F16 = ntsym.float16
ROWS = (None, {"constexpr": True, "upper_bound": 2**15})
HEAD = (None, None, None, {"constexpr": True, "upper_bound": 256, "power_of_two": True})


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cases():
    """(name, arrangement, application, typed tensors, torch kernel, inputs, reference, aot options)."""
    x, y = torch.randn(2**20, device="cuda", dtype=torch.float16), torch.randn(2**20, device="cuda", dtype=torch.float16)
    a, b = (torch.randn(1000, 768, device="cuda", dtype=torch.float16),
            torch.randn(768, 1024, device="cuda", dtype=torch.float16))
    s = torch.randn(512, 1024, device="cuda", dtype=torch.float16)
    q, k, v = (torch.randn(2, 4, 256, 64, device="cuda", dtype=torch.float16) for _ in range(3))
    img, w = (torch.randn(4, 64, 14, 14, device="cuda", dtype=torch.float16),
              torch.randn(128, 64, 3, 3, device="cuda", dtype=torch.float16))
    conv_out = (4, 128, 12, 12)
    conv_names = [p.name for p in conv2d.kernel.ir.params]
    sizes = lambda t, name: {f"{name}.shape[{d}]": (n,) for d, n in enumerate(t.shape)}  # noqa: E731
    yield ("add", functools.partial(add.arrangement, BLOCK_SIZE=1024), add.application,
           tuple(Tensor(1, dtype=F16) for _ in range(3)), add.kernel,
           lambda: (x, y, torch.empty_like(x)), lambda: x + y, {})
    yield ("mm", mm.arrangement, mm.application, tuple(Tensor(2, dtype=F16) for _ in range(3)), mm.kernel,
           lambda: (a, b, torch.empty(1000, 1024, device="cuda", dtype=torch.float16)), lambda: a @ b,
           {"meta": {"BM": 128, "BN": 128, "BK": 64}, "num_warps": 8})
    yield ("softmax", softmax.arrangement, softmax.application,
           (Tensor(2, other=float("-inf"), shape_options=ROWS, dtype=F16), Tensor(2, shape_options=ROWS, dtype=F16)),
           softmax.kernel, lambda: (s, torch.empty_like(s)), lambda: torch.softmax(s.float(), -1).half(),
           {"specialize": {"input.shape[1]": (1024,), "output.shape[1]": (1024,)}})
    yield ("rms_norm", rms_norm.arrangement, rms_norm.application,
           (Tensor(2, shape_options=ROWS, dtype=F16), Tensor(0, dtype=ntsym.float32),
            Tensor(2, shape_options=ROWS, dtype=F16)), rms_norm.kernel,
           lambda: (s, 1e-6, torch.empty_like(s)),
           lambda: torch.nn.functional.rms_norm(s.float(), (1024,), eps=1e-6).half(),
           {"specialize": {"input.shape[1]": (1024,), "output.shape[1]": (1024,)}})
    yield ("sdpa", sdpa.arrangement, sdpa.application,
           (Tensor(4, shape_options=HEAD, dtype=F16), Tensor(4, shape_options=HEAD, dtype=F16),
            Tensor(4, shape_options=HEAD, dtype=F16), Tensor(0, dtype=ntsym.float32), Tensor(0, constexpr=True),
            Tensor(4, shape_options=HEAD, dtype=F16)), sdpa.kernel_pow2_head,
           lambda: (q, k, v, 0.125, False, torch.empty_like(q)),
           lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v),
           {"meta": {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 64}, "num_warps": 8,
            "specialize": {**{f"{t}.shape[3]": (64,) for t in ("q", "k", "v", "o")}, "is_causal": (0, 1)}})
    yield ("conv2d", conv2d.arrangement, mm.application,
           tuple(Tensor(4, shape_options={"constexpr": True}, dtype=F16) for _ in range(3)), conv2d.kernel,
           lambda: (img, w, torch.empty(conv_out, device="cuda", dtype=torch.float16)),
           lambda: torch.nn.functional.conv2d(img, w),
           {"meta": {"BLOCK_SIZE_0": 64, "BLOCK_SIZE_1": 64, "BLOCK_SIZE_2": 32, "output_size_1": 128},
            "specialize": {**sizes(img, conv_names[0]), **sizes(w, conv_names[1]),
                           **sizes(torch.empty(conv_out), conv_names[2])}})


def bench(fn, reps=2000):
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(reps):
        fn()
    elapsed = time.perf_counter() - start
    torch.cuda.synchronize()
    return elapsed / reps * 1e6


def main():
    out = pathlib.Path(os.environ.get("OUT") or tempfile.mkdtemp())
    work = out / "aot_build"
    if work.exists():
        shutil.rmtree(work)
    rows, results = [], {"device": torch.cuda.get_device_name(), "driver": torch.version.cuda,
                         "torch": torch.__version__, "triton": triton.__version__, "python": platform.python_version()}
    print(f"device {results['device']}, CUDA {results['driver']}, torch {results['torch']}, "
          f"triton {results['triton']}, python {results['python']}\n")
    print("| kernel | .so max error | exported max error | status |")
    print("|---|---|---|---|")
    libraries = {}
    for name, arrangement, application, tensors, kernel, inputs, reference, options in cases():
        try:
            options = dict(options)
            num_warps = options.pop("num_warps", None)
            lib = ntsym.make(arrangement, application, tensors, caller="cuda", kernel_name=f"{name}_f16",
                             output_dir=work, num_warps=num_warps, aot_options=options)
            libraries[name] = lib
            args = inputs()
            lib(*args)
            torch.cuda.synchronize()
            expected = reference()
            error_so = (args[-1].float() - expected.float()).abs().max().item()
            kernel(*inputs()[:-1], args[-1])  # tuned configurations for the export
            module = load(kernel.export(work / f"{name}_standalone.py"), f"{name}_standalone")
            args2 = inputs()
            module.launch(*args2)
            torch.cuda.synchronize()
            error_py = (args2[-1].float() - expected.float()).abs().max().item()
            # fp16 outputs: within 1 % or 0.02 of the float32 reference (a
            # 4608-term conv2d sum of size ~64 is rounded to 1/32 steps).
            ok = all(torch.allclose(a[-1].float(), expected.float(), rtol=1e-2, atol=2e-2) for a in (args, args2))
            rows.append((name, error_so, error_py, "ok" if ok else "WRONG"))
        except Exception as e:  # report and go on
            rows.append((name, math.nan, math.nan, f"error: {type(e).__name__}: {str(e)[:300]}"))
        print("| %s | %.3g | %.3g | %s |" % rows[-1])
    results["correctness"] = rows

    extra = []
    lib = libraries.get("add")
    if lib is not None:
        # Non-contiguous input: the general variant.
        x = torch.randn(2**20 * 2, device="cuda", dtype=torch.float16)[::2]
        y = torch.randn(2**20, device="cuda", dtype=torch.float16)
        o = torch.empty_like(y)
        lib(x, y, o)
        torch.cuda.synchronize()
        extra.append(("non-contiguous add (general variant)", bool(torch.equal(o, x + y))))
        # 2**31 + 16 elements: the 64-bit variant.
        n = 2**31 + 16
        try:
            big = torch.ones(n, device="cuda", dtype=torch.float16)
            out_big = torch.empty_like(big)
            lib(big, big, out_big)
            torch.cuda.synchronize()
            tail = out_big[-1024:]
            extra.append(("2**31+16-element add (64-bit variant)", bool((tail == 2).all().item())
                          and bool((out_big[:1024] == 2).all().item())))
            del big, out_big
        except torch.cuda.OutOfMemoryError:
            extra.append(("2**31+16-element add (64-bit variant)", "out of memory"))
        torch.cuda.empty_cache()
    print("\n| check | result |\n|---|---|")
    for label, value in extra:
        print(f"| {label} | {value} |")
    results["checks"] = extra

    # Host launch cost on a small add (the GPU time is below the host's).
    timings = []
    if lib is not None:
        x = torch.randn(4096, device="cuda", dtype=torch.float16)
        y, o = torch.randn_like(x), torch.empty_like(x)
        add.kernel(x, y, o)
        module = load(work / "add_standalone.py", "add_standalone")
        raw = lib.entry
        structs = [ntsym.aot.c_tensor(t) for t in (x, y, o)]
        stream = torch.cuda.current_stream().cuda_stream
        compiled = add.kernel.launch_facts.kernel
        timings = [
            ("C library, ctypes with prepared structs", bench(lambda: raw(stream, *structs))),
            ("C library, ntsym.aot.Library call", bench(lambda: lib(x, y, o))),
            ("ntsym Python launcher", bench(lambda: add.kernel(x, y, o))),
            ("exported standalone module", bench(lambda: module.launch(x, y, o))),
            ("plain Triton launch (kernel[grid])", bench(lambda: compiled[(4,)](
                x, y, o, 4096, 1, 1, 1, BLOCK_SIZE=1024, NTSYM_INT64=False))),
        ]
    print("\n| launch path (add, 4096 elements) | host µs per call |\n|---|---|")
    for label, us in timings:
        print(f"| {label} | {us:.2f} |")
    results["launch_us"] = timings

    # Build time of mm over its configurations: serial, then parallel.
    def premake(BM, BN, BK):
        return (functools.partial(mm.arrangement, BLOCK_SIZE_M=BM, BLOCK_SIZE_N=BN, BLOCK_SIZE_K=BK),
                mm.application, tuple(Tensor(2, dtype=F16) for _ in range(3)))

    configs = [((), {"BM": bm, "BN": bn, "BK": bk}, {"num_warps": w, "num_stages": 3})
               for bm, bn, bk, w in ((64, 64, 32, 4), (128, 128, 32, 8), (128, 64, 64, 4), (64, 128, 64, 4))]
    builds = []
    for label, workers in (("serial", 1), ("parallel", os.cpu_count())):
        directory = work / f"mm_build_{label}"
        start = time.perf_counter()
        built = ntsym.build(premake, configs, meta_parameters=("BM", "BN", "BK"), kernel_name="mm_tuned",
                            output_dir=directory, workers=workers)
        builds.append((label, workers, time.perf_counter() - start))
        start = time.perf_counter()
        ntsym.build(premake, configs, meta_parameters=("BM", "BN", "BK"), kernel_name="mm_tuned",
                    output_dir=directory, workers=workers)
        builds.append((label + ", again (cached)", workers, time.perf_counter() - start))
    a, b = torch.randn(1000, 768, device="cuda", dtype=torch.float16), torch.randn(768, 1024, device="cuda",
                                                                                    dtype=torch.float16)
    c = torch.empty(1000, 1024, device="cuda", dtype=torch.float16)
    built(a, b, c)
    torch.cuda.synchronize()
    print("\n| mm build, 4 configurations | workers | seconds |\n|---|---|---|")
    for label, workers, seconds in builds:
        print(f"| {label} | {workers} | {seconds:.1f} |")
    print(f"\ntuned winners: {json.dumps(built.tuned)}; tuned mm max error "
          f"{(c.float() - (a @ b).float()).abs().max().item():.3g}")
    results["build_s"] = builds
    results["tuned"] = built.tuned
    (out / "aot.json").write_text(json.dumps(results, indent=1, default=str))
    return 0 if all(r[3] == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
