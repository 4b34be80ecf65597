"""What brings conv2d (3x3, 512 channels, 14x14) near cuDNN? One process, one table per batch.

    python -m benchmarks.lab.conv2d_variants [--batches 2,4,...] [--splits 2,4,8] [--cpu]

Variants of ``examples/conv2d.py``, each timed end to end (copies and extra kernels included):

- ``listing8``: the paper's implicit GEMM (``conv2d.kernel``), NCHW, windows in (C, R, S) order;
- ``channels-last``: ``conv2d(x, w, split=1)``: input and filter copied to channels-last
  (``conv2d.to_channels_last``), windows in (R, S, C) order (``conv2d.channels_last_kernel``);
  ``channels-last, torch's copies``: the same kernel after ``tensor.contiguous(memory_format=...)``;
- ``split G``: ``conv2d(x, w, split=G)``: the channels in G groups, float32 partial sums, then
  ``conv2d.sum_kernel`` adds them; ``channels-last input split G``: the same on a channels-last
  input (no copies);
- ``conv2d``: ``conv2d(x, w)``, the split ``conv2d.split_count`` chooses.

``--configs`` instead times the channels-last kernel alone (inputs already channels-last, no copies)
at fixed configurations, as tuned, and cuDNN on the NCHW and the channels-last input.

``--split-configs`` times the split kernel alone (``conv2d.split_count``'s groups) at GEMM tiles and at
the tuner's skinny tiles (16 rows), and as tuned.

``--host`` prints, for ``conv2d(x, w)`` at each batch, the host time of a call (500 calls without
synchronising), the device time of its kernels (torch's profiler) and ``do_bench``'s median, which
reads the host's time where that is the longer.

``--cpu`` checks every variant against torch through the interpreter (small shapes)."""

import argparse
import os
import sys

if "--cpu" in sys.argv:
    os.environ["TRITON_INTERPRET"] = "1"

import torch
import torch.nn.functional as F

sys.path.insert(0, os.getcwd())

from examples import conv2d  # noqa: E402


def _output(x, w):
    """An NCHW output for ``conv2d(x, w)``."""
    return torch.empty((x.shape[0], w.shape[0], x.shape[2] - w.shape[2] + 1, x.shape[3] - w.shape[3] + 1),
                       dtype=x.dtype, device=x.device)


def listing8(x, w):
    out = _output(x, w)
    conv2d.kernel(x, w, out)
    return out


def torch_copies(x, w):
    """The channels-last kernel after torch's own copies to channels-last."""
    out = _output(x, w)
    conv2d.channels_last_kernel(x.contiguous(memory_format=torch.channels_last),
                                w.contiguous(memory_format=torch.channels_last), out)
    return out


def variants(splits):
    out = {"listing8": listing8, "channels-last": lambda x, w: conv2d.conv2d(x, w, split=1),
           "channels-last, torch's copies": torch_copies}
    for g in splits:
        out[f"split {g}"] = lambda x, w, g=g: conv2d.conv2d(x, w, split=g)
        out[f"channels-last input split {g}"] = \
            lambda x, w, g=g: conv2d.conv2d(x.contiguous(memory_format=torch.channels_last), w, split=g)
    out["conv2d"] = conv2d.conv2d
    return out


def cpu_check():
    torch.manual_seed(0)
    x = torch.randn(2, 8, 9, 10)
    w = torch.randn(5, 8, 3, 2)
    ref = F.conv2d(x, w)
    for name, fn in variants((2, 4)).items():
        err = (fn(x, w) - ref).abs().max().item()
        print(f"{name}: max error {err:.2e}")
        assert err < 1e-3, name


# (BLOCK_SIZE_0 rows, BLOCK_SIZE_1 columns, BLOCK_SIZE_2 reduction, warps, stages)
CONFIGS = [(128, 128, 64, 8, 3), (128, 128, 64, 8, 4), (128, 128, 64, 4, 4), (128, 256, 64, 8, 3),
           (256, 128, 64, 8, 3), (128, 128, 128, 8, 3), (128, 256, 32, 8, 4), (64, 256, 64, 4, 4),
           (128, 64, 64, 4, 4), (256, 64, 64, 8, 4)]


def _fixed(kernel, inputs, out, ref, shapes, label):
    """``kernel(*inputs, out)`` at each fixed (rows, columns, reduction, warps,
    stages) of ``shapes`` whose result matches ``ref``, by name."""
    fns = {}
    for bm, bn, bk, warps, stages in shapes:
        def f(bm=bm, bn=bn, bk=bk, warps=warps, stages=stages):
            kernel(*inputs, out, BLOCK_SIZE_0=bm, BLOCK_SIZE_1=bn, BLOCK_SIZE_2=bk,
                   ntsym_options={"num_warps": warps, "num_stages": stages})
        name = f"{label} {bm}x{bn}x{bk} w{warps} s{stages}"
        try:
            out.fill_(float("nan"))
            f()
            err = (out.float() - ref).abs().max().item()
            if not err <= 2e-2 * ref.abs().max().item():
                print(f"  {name}: WRONG (max error {err:.3g})")
                continue
            fns[name] = f
        except Exception as exc:
            print(f"  {name}: failed ({str(exc).splitlines()[0][:100]})")
    return fns


def configs(batches, rounds):
    import os

    from benchmarks.lab._rounds import flops_table, interleaved

    for batch in batches:
        x = torch.randn(batch, 512, 14, 14, device="cuda", dtype=torch.float16)
        w = torch.randn(512, 512, 3, 3, device="cuda", dtype=torch.float16)
        xc, wc = x.contiguous(memory_format=torch.channels_last), w.contiguous(memory_format=torch.channels_last)
        out = torch.empty(batch, 512, 12, 12, device="cuda", dtype=torch.float16)
        ref = F.conv2d(x.float(), w.float())
        fns = {"cudnn": lambda: F.conv2d(x, w), "cudnn channels-last input": lambda: F.conv2d(xc, wc)}
        os.environ["NTSYM_PRINT_TUNING"] = "1"
        conv2d.channels_last_kernel(xc, wc, out)
        os.environ.pop("NTSYM_PRINT_TUNING")
        fns["kernel tuned"] = lambda: conv2d.channels_last_kernel(xc, wc, out)
        fns.update(_fixed(conv2d.channels_last_kernel, (xc, wc), out, ref, CONFIGS, "kernel"))
        flops_table(f"batch {batch}: channels-last kernel alone, float16", interleaved(fns, rounds=rounds), "cudnn",
                    2 * batch * 144 * 512 * 4608, spread=True)


# The split kernel's tiles: GEMM shapes, then the skinny tiles (rows block 16).
SPLIT_CONFIGS = [(32, 64, 64, 4, 3), (64, 64, 64, 4, 3), (64, 64, 64, 4, 4), (64, 128, 64, 4, 3), (128, 64, 64, 4, 4),
                 (64, 128, 128, 4, 4), (32, 128, 64, 4, 3), (32, 64, 128, 4, 4), (128, 128, 64, 8, 3),
                 (16, 32, 256, 4, 6), (16, 16, 256, 4, 6), (16, 32, 512, 4, 4), (16, 64, 128, 4, 3),
                 (16, 32, 128, 4, 3), (16, 64, 256, 4, 4), (16, 32, 128, 4, 6), (16, 64, 128, 4, 5)]


def split_configs(batches, rounds):
    import os

    from benchmarks.lab._rounds import flops_table, interleaved

    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for batch in batches:
        x = torch.randn(batch, 512, 14, 14, device="cuda", dtype=torch.float16)
        w = torch.randn(512, 512, 3, 3, device="cuda", dtype=torch.float16)
        g = conv2d.split_count(x.shape, w.shape, sms)
        if g == 1:
            print(f"batch {batch}: no split")
            continue
        xs, ws = x.unflatten(1, (g, 512 // g)), w.unflatten(1, (g, 512 // g))
        partials = torch.empty(g, batch, 512, 12, 12, device="cuda", dtype=torch.float32)
        ref = torch.stack([F.conv2d(xs[:, i].float(), ws[:, i].float()) for i in range(g)])
        os.environ["NTSYM_PRINT_TUNING"] = "1"
        conv2d.split_kernel(xs, ws, partials)
        os.environ.pop("NTSYM_PRINT_TUNING")
        fns = {"cudnn (whole conv2d)": lambda: F.conv2d(x, w),
               "split kernel tuned": lambda: conv2d.split_kernel(xs, ws, partials)}
        fns.update(_fixed(conv2d.split_kernel, (xs, ws), partials, ref, SPLIT_CONFIGS, "split kernel"))
        flops_table(f"batch {batch}: split kernel alone ({g} groups), float16", interleaved(fns, rounds=rounds),
                    "cudnn (whole conv2d)", 2 * batch * 144 * 512 * 4608, spread=True)


def host_and_device(batches):
    import time

    from triton.testing import do_bench

    for batch in batches:
        x = torch.randn(batch, 512, 14, 14, device="cuda", dtype=torch.float16)
        w = torch.randn(512, 512, 3, 3, device="cuda", dtype=torch.float16)
        for _ in range(20):
            conv2d.conv2d(x, w)
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(500):
            conv2d.conv2d(x, w)
        host = (time.perf_counter() - start) / 500 * 1e6
        torch.cuda.synchronize()
        bench = do_bench(lambda: conv2d.conv2d(x, w), warmup=10, rep=50, return_mode="median") * 1e3
        cudnn = do_bench(lambda: F.conv2d(x, w), warmup=10, rep=50, return_mode="median") * 1e3
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            for _ in range(20):
                conv2d.conv2d(x, w)
            torch.cuda.synchronize()
        device = sum(e.self_device_time_total for e in prof.key_averages()) / 20
        print(f"batch {batch}: host {host:.1f} us a call, device {device:.1f} us a call, do_bench {bench:.1f} us "
              f"(cuDNN's do_bench {cudnn:.1f} us)")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batches", default="2,4,8,16,32,64,256,1024")
    parser.add_argument("--splits", default="2,4,8")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--configs", action="store_true")
    parser.add_argument("--split-configs", action="store_true")
    parser.add_argument("--host", action="store_true")
    parser.add_argument("--cpu", action="store_true")
    args = parser.parse_args()
    if args.cpu:
        return cpu_check()
    if args.configs:
        print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, triton {__import__('triton').__version__}")
        return configs([int(b) for b in args.batches.split(",")], args.rounds)
    if args.host:
        print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, triton {__import__('triton').__version__}")
        return host_and_device([int(b) for b in args.batches.split(",")])
    if args.split_configs:
        print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, triton {__import__('triton').__version__}")
        return split_configs([int(b) for b in args.batches.split(",")], args.rounds)
    from benchmarks.lab._rounds import flops_table, interleaved

    splits = [int(g) for g in args.splits.split(",") if g]
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, triton {__import__('triton').__version__}")
    for batch in (int(b) for b in args.batches.split(",")):
        x = torch.randn(batch, 512, 14, 14, device="cuda", dtype=torch.float16)
        w = torch.randn(512, 512, 3, 3, device="cuda", dtype=torch.float16)
        ref = F.conv2d(x.float(), w.float())
        print(f"batch {batch}: conv2d splits into {conv2d.split_count(x.shape, w.shape, torch.cuda.get_device_properties(0).multi_processor_count)}")
        fns = {"cudnn": lambda: F.conv2d(x, w)}
        for name, fn in variants(splits).items():
            err = (fn(x, w).float() - ref).abs().max().item()
            scale = ref.abs().max().item()
            if not err <= 2e-2 * scale:
                print(f"  {name}: WRONG (max error {err:.3g} of {scale:.3g})")
                continue
            fns[name] = lambda fn=fn: fn(x, w)
        flops_table(f"batch {batch} (512 x 14 x 14, 3 x 3, 512 out), float16", interleaved(fns, rounds=args.rounds),
                    "cudnn", 2 * batch * 144 * 512 * 4608, spread=True)


if __name__ == "__main__":
    main()
