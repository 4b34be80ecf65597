"""Where the host time of a small launch goes: per-call host µs of each
example's function, of the kernel called with its output given, and of the
torch operator, then a cProfile of the example's function (top entries by
own time).  Small shapes, so the device is idle and the host is what is timed.

    python -m benchmarks.lab.host_profile
"""

import cProfile
import io
import pstats
import time

import torch

import ntsym  # noqa: F401  (before triton)


def per_call_us(fn, calls=5000):
    for _ in range(200):
        fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - start) / calls * 1e6)
        torch.cuda.synchronize()
    return best


def profile_text(fn, calls, sort="tottime", top=12, synchronize=False):
    """The cProfile of ``calls`` calls of ``fn`` (the device waited for
    inside the profile with ``synchronize``), its ``top`` entries by ``sort``."""
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(calls):
        fn()
    if synchronize:
        torch.cuda.synchronize()
    profile.disable()
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats(sort).print_stats(top)
    return text.getvalue()


def main():
    from examples import add, rms_norm, softmax

    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}")
    x = torch.randn(64, 256, device="cuda", dtype=torch.float16)
    y = torch.randn_like(x)
    w = torch.randn(256, device="cuda", dtype=torch.float16)
    out = torch.empty_like(x)
    flat, flat_y, flat_out = x.view(-1), y.view(-1), out.view(-1)
    cases = {
        "add": (lambda: add.add(flat, flat_y), lambda: add.kernel(flat, flat_y, flat_out), lambda: torch.add(flat, flat_y)),
        "softmax": (lambda: softmax.softmax(x), lambda: softmax.kernel(x, out), lambda: torch.softmax(x, -1)),
        "rms_norm": (lambda: rms_norm.rms_norm(x), None, lambda: torch.nn.functional.rms_norm(x, (256,))),
    }
    print("\n| task (64 x 256 fp16) | example function µs | kernel, output given µs | torch µs |")
    print("|---|---:|---:|---:|")
    for name, (example, kernel, op) in cases.items():
        row = [per_call_us(example), per_call_us(kernel) if kernel else float("nan"), per_call_us(op)]
        print(f"| {name} | " + " | ".join(f"{v:.1f}" for v in row) + " |")
    for name, (example, _, _) in cases.items():
        text = profile_text(example, 3000)
        print(f"\n### {name}: cProfile of 3000 calls, by own time\n")
        print("\n".join(line for line in text.splitlines() if line.strip())[:3000])


if __name__ == "__main__":
    main()
