"""The costs users feel besides kernel time: ``make()`` wall time (SymPy work
included), the first call (code generation, Triton compilation, tuning), and
the steady-state host overhead of one launch of a tiny kernel, next to a plain
``@triton.jit`` kernel launched directly.  Prints a markdown table.

    python -m benchmarks.overhead            # on a GPU machine

Host time per launch is measured in interleaved rounds (each round times every
variant once, in turn), so drifts of clock speed and the order of measurement
weigh on all variants alike; the table gives the median over rounds.  The first
call of an auto-tuned mm is measured in fresh processes with cold caches, with
candidates compiled side by side (the default) and one by one.
"""

import os
import statistics
import subprocess
import sys
import tempfile
import time

# Cold caches for the first-call measurement.
os.environ.setdefault("NTSYM_CACHE_DIR", tempfile.mkdtemp(prefix="ntsym_cache_"))
os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp(prefix="triton_cache_"))

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
import triton.testing  # noqa: E402

import ntsym  # noqa: E402
import ntsym.language as ntl  # noqa: E402
from ntsym import Tensor  # noqa: E402


@triton.jit
def plain_add_kernel(x_ptr, y_ptr, z_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(z_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def add_parts():
    block = ntsym.block_size()

    def arrangement(input, other, output, BLOCK_SIZE=block):
        return input.tile((BLOCK_SIZE,)), other.tile((BLOCK_SIZE,)), output.tile((BLOCK_SIZE,))

    def application(input, other, output):
        output = input + other  # noqa: F841

    return arrangement, application, tuple(Tensor(1) for _ in range(3))


def mm_parts():
    bm, bn, bk = (ntsym.block_size(lower_bound=16) for _ in range(3))

    def arrangement(input, other, output, BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk):
        output_arranged = output.tile((BLOCK_SIZE_M, BLOCK_SIZE_N))
        input_arranged = input.tile((BLOCK_SIZE_M, BLOCK_SIZE_K)).tile((1, -1))
        input_arranged = input_arranged.expand((-1, output_arranged.shape[1]))
        input_arranged.dtype = input_arranged.dtype.squeeze(0)
        other_arranged = other.tile((BLOCK_SIZE_K, BLOCK_SIZE_N)).tile((-1, 1))
        other_arranged = other_arranged.expand((output_arranged.shape[0], -1))
        other_arranged.dtype = other_arranged.dtype.squeeze(1)
        return input_arranged, other_arranged, output_arranged

    def application(input, other, output):
        accumulator = ntl.zeros(output.shape, dtype=ntl.float32)
        for k in range(input.shape[0]):
            accumulator += ntl.dot(input[k], other[k])
        output = accumulator  # noqa: F841

    return arrangement, application, (Tensor(2), Tensor(2), Tensor(2))


def time_make(parts, repeat=5):
    times = []
    for _ in range(repeat):
        arrangement, application, tensors = parts()
        start = time.perf_counter()
        kernel = ntsym.make(arrangement, application, tensors)
        times.append(time.perf_counter() - start)
    return statistics.median(times), kernel


def host_us_per_call(fns, calls=1000, rounds=21):
    """Host µs of enqueuing one launch (no synchronisation inside a batch) for each
    of ``fns`` {name: fn}: per round, each fn times a batch of ``calls`` launches in
    turn; returns {name: list of per-round µs}."""
    for fn in fns.values():
        for _ in range(100):
            fn()
    torch.cuda.synchronize()
    samples = {name: [] for name in fns}
    for r in range(rounds):
        order = list(fns.items())
        if r % 2:
            order.reverse()  # neither variant always goes first
        for name, fn in order:
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            samples[name].append((time.perf_counter() - start) / calls * 1e6)
            torch.cuda.synchronize()
    return samples


def first_call_mm(n=512):
    """Child process: ms of the first call of an auto-tuned mm (cold caches)."""
    _, kernel = time_make(mm_parts, repeat=1)
    a = torch.randn(n, n, device="cuda", dtype=torch.float16)
    c = torch.empty_like(a)
    start = time.perf_counter()
    kernel(a, a, c)
    torch.cuda.synchronize()
    print(f"{(time.perf_counter() - start) * 1e3:.0f}")


def first_call_mm_in_child(**env):
    environment = dict(os.environ, NTSYM_CACHE_DIR=tempfile.mkdtemp(prefix="ntsym_cache_"),
                       TRITON_CACHE_DIR=tempfile.mkdtemp(prefix="triton_cache_"), **env)
    out = subprocess.run([sys.executable, "-m", "benchmarks.overhead", "--first-call-mm"], env=environment,
                         capture_output=True, text=True)
    if out.returncode != 0:
        return f"failed: {out.stderr.strip().splitlines()[-1] if out.stderr.strip() else out.returncode}"
    return f"{int(out.stdout.strip().splitlines()[-1])} ms"


def main():
    assert torch.cuda.is_available(), "run on a GPU machine"
    rows = []
    make_add, add_kernel = time_make(add_parts)
    make_mm, mm_kernel = time_make(mm_parts)
    rows.append(("make() add", f"{make_add * 1e3:.1f} ms"))
    rows.append(("make() mm", f"{make_mm * 1e3:.1f} ms"))

    x = torch.randn(1024, device="cuda", dtype=torch.float16)
    y, z = torch.randn_like(x), torch.empty_like(x)
    start = time.perf_counter()
    add_kernel(x, y, z, BLOCK_SIZE=1024)
    torch.cuda.synchronize()
    rows.append(("first call add (BLOCK_SIZE fixed; generate + compile)", f"{(time.perf_counter() - start) * 1e3:.0f} ms"))
    from ntsym_codegen import tuning

    rows.append((f"first call mm 512^3, tuning, candidates compiled in {tuning.compile_threads()} threads (cold caches)",
                 first_call_mm_in_child()))
    rows.append(("first call mm 512^3, tuning, candidates compiled one by one (cold caches)",
                 first_call_mm_in_child(NTSYM_COMPILE_THREADS="1")))
    a = torch.randn(512, 512, device="cuda", dtype=torch.float16)
    c = torch.empty_like(a)
    mm_kernel(a, a, c)  # tunes (caches warm from make() in this process only)
    torch.cuda.synchronize()
    start = time.perf_counter()
    mm_kernel(a, a, c)
    torch.cuda.synchronize()
    rows.append(("second call mm 512^3 (tuned choice cached)", f"{(time.perf_counter() - start) * 1e3:.2f} ms"))

    add_kernel(x, y, z)  # tune before timing launches
    samples = host_us_per_call({
        "plain": lambda: plain_add_kernel[(1,)](x, y, z, 1024, BLOCK=1024),
        "fixed": lambda: add_kernel(x, y, z, BLOCK_SIZE=1024),
        "tuned": lambda: add_kernel(x, y, z),
    })
    plain = statistics.median(samples["plain"])
    rows.append((f"host µs per launch, plain @triton.jit add (median of {len(samples['plain'])} rounds)",
                 f"{plain:.1f} (rounds {min(samples['plain']):.1f}–{max(samples['plain']):.1f})"))
    for name, label in (("fixed", "BLOCK_SIZE given"), ("tuned", "tuned")):
        us = statistics.median(samples[name])
        ratios = [a / b for a, b in zip(samples[name], samples["plain"])]
        rows.append((f"host µs per launch, ntsym add ({label})",
                     f"{us:.1f}; per-round ratio to plain: median {statistics.median(ratios):.2f}x "
                     f"(range {min(ratios):.2f}–{max(ratios):.2f})"))
    entry = next(e for k, e in add_kernel.calls.calls.items() if None in k[-1])
    rows.append(("tuned add config (1024 elements)", ", ".join(f"{k}={v}" for k, v in entry.kwargs.items())))
    rows.append(("GPU ms, ntsym add tuned / plain", f"{triton.testing.do_bench(lambda: add_kernel(x, y, z)):.4f} / "
                 f"{triton.testing.do_bench(lambda: plain_add_kernel[(1,)](x, y, z, 1024, BLOCK=1024)):.4f}"))

    print(f"device: {torch.cuda.get_device_name()}  torch {torch.__version__}  triton {triton.__version__}")
    print("| measurement | value |")
    print("|---|---|")
    for name, value in rows:
        print(f"| {name} | {value} |")


if __name__ == "__main__":
    if sys.argv[1:] == ["--first-call-mm"]:
        first_call_mm()
    else:
        main()
