"""Host µs per call of a small add from PyTorch, five ways:

1. the ntsym kernel, output preallocated: ``kernel(x, y, out)``;
2. the kernel with its own allocation: ``kernel(x, y, torch.empty_like(x))``;
3. the registered operator (``ntsym.library.op``), eagerly: ``op(x, y)``;
4. the same operator under ``torch.compile(fullgraph=True)``;
5. torch: ``torch.add(x, y)``;

and, for reference, the operator through PyTorch's dispatcher
(``torch.ops.bench_host.add(x, y)``), which every call took before eager calls
skipped it, and the dispatch alone of an operator that does almost nothing,
registered by ``custom_op`` and by a bare ``Library.define``/``impl``.
Each variant is checked against torch once, then timed in
interleaved rounds (each round times a batch of ``--calls`` calls of every
variant in turn, alternating the order); the table gives the median over
rounds, with a CUDA synchronisation after each batch.

    python -m benchmarks.host_overhead                         # on a GPU
    python -m benchmarks.host_overhead --device cpu --calls 20 # interpreter: slow
    python -m benchmarks.host_overhead --device cpu --stub-launch  # host path only

``--stub-launch`` replaces the kernel's launch by nothing after the checks, so
that under Triton's interpreter (whose launch costs milliseconds) the table
shows the host path alone: what ntsym and PyTorch do around the launch.
``--cpu-time`` times with the thread's CPU time, which a machine shared with
other work inflates less than the wall clock.
"""

import argparse
import platform
import statistics
import sys
import time

import torch

import ntsym  # before triton: it picks the interpreter where there is no GPU
import ntsym.library
import triton  # noqa: I001
from examples import add


def parse(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--size", type=int, default=1024, help="elements (default 1024)")
    parser.add_argument("--calls", type=int, default=1000, help="calls per timed batch")
    parser.add_argument("--rounds", type=int, default=11, help="timed batches per variant")
    parser.add_argument("--warmup", type=int, default=None, help="untimed calls per variant first")
    parser.add_argument("--stub-launch", action="store_true",
                        help="time the host path without the launch itself (results not checked)")
    parser.add_argument("--no-compile", action="store_true", help="leave out the torch.compile variant")
    parser.add_argument("--cpu-time", action="store_true",
                        help="time with this thread's CPU time instead of the wall clock (a shared machine)")
    return parser.parse_args(argv)


def versions(device):
    """One line per version and the device, for the record."""
    lines = [f"python {platform.python_version()}, torch {torch.__version__}, triton {triton.__version__}, "
             f"ntsym {getattr(ntsym, '__version__', '?')}"]
    from ntsym_codegen.runtime import interpreting

    if device.startswith("cuda"):
        lines.append(f"device {torch.cuda.get_device_name(device)} (CUDA {torch.version.cuda}), "
                     f"operators are {'triton_op' if ntsym.library.uses_triton_op() else 'custom_op'}")
    else:
        lines.append(f"device cpu ({platform.processor() or platform.machine()}), "
                     f"{'Triton interpreter' if interpreting() else 'compiled'}, operators are custom_op")
    return lines


def variants(x, y, out, compile_it):
    """{name: fn()} of the calls to time, each returning its result."""
    kernel = add.kernel
    op = ntsym.library.op("bench_host::add", kernel)
    dispatched = torch.ops.bench_host.add

    def preallocated():
        kernel(x, y, out)
        return out

    def own_allocation():
        result = torch.empty_like(x)
        kernel(x, y, result)
        return result

    fns = {
        "kernel, output preallocated": preallocated,
        "kernel, own allocation (empty_like)": own_allocation,
        "registered op, eager": lambda: op(x, y),
        "registered op, through the dispatcher": lambda: dispatched(x, y),
    }
    if compile_it:
        compiled = torch.compile(lambda a, b: op(a, b), fullgraph=True)
        fns["registered op, torch.compile(fullgraph=True)"] = lambda: compiled(x, y)
    fns["torch.add"] = lambda: torch.add(x, y)
    fns.update(dispatch_only(x, y))
    return fns


def dispatch_only(x, y):
    """PyTorch's dispatch of a Python-defined operator that returns ``x``
    unchanged: as ``torch.library.custom_op`` registers it, and as a bare
    ``Library.define`` with one CompositeExplicitAutograd kernel (no autograd,
    fake or aliasing wrappers)."""

    @torch.library.custom_op("bench_host::nothing", mutates_args=())
    def nothing(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a.new_empty(0)

    nothing.register_fake(lambda a, b: a.new_empty(0))
    library = torch.library.Library("bench_host_bare", "DEF")
    library.define("nothing(Tensor a, Tensor b) -> Tensor")
    library.impl("nothing", lambda a, b: a.new_empty(0), "CompositeExplicitAutograd")
    bare = torch.ops.bench_host_bare.nothing.default
    dispatch_only.library = library  # kept alive with the operator
    return {"(custom_op returning new_empty(0): dispatch alone)": lambda: nothing(x, y),
            "(Library.define + CompositeExplicitAutograd, the same)": lambda: bare(x, y)}


def host_us(fns, calls, rounds, warmup, sync, clock=time.perf_counter):
    """{name: median host µs per call over ``rounds`` interleaved batches}."""
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    sync()
    samples = {name: [] for name in fns}
    for r in range(rounds):
        order = list(fns.items())
        if r % 2:
            order.reverse()
        for name, fn in order:
            start = clock()
            for _ in range(calls):
                fn()
            sync()
            samples[name].append((clock() - start) / calls * 1e6)
    return {name: statistics.median(values) for name, values in samples.items()}


def main(argv=None):
    args = parse(argv)
    device = args.device
    if device.startswith("cuda") and not torch.cuda.is_available():
        sys.exit("no CUDA device: pass --device cpu")
    for line in versions(device):
        print(line)
    x = torch.randn(args.size, device=device)
    y = torch.randn(args.size, device=device)
    out = torch.empty_like(x)
    fns = variants(x, y, out, not args.no_compile)
    expected = x + y
    for name, fn in fns.items():  # first calls: compile, tune, trace; and check
        if not name.startswith("("):
            torch.testing.assert_close(fn(), expected, msg=lambda m, name=name: f"{name}: {m}")
    if args.stub_launch:
        add.kernel._launch = lambda *a, **k: None
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    warmup = args.warmup if args.warmup is not None else max(args.calls // 10, 3)
    clock = time.thread_time if args.cpu_time else time.perf_counter
    times = host_us(fns, args.calls, args.rounds, warmup, sync, clock)
    what = "host path, launch stubbed" if args.stub_launch else "host µs per call"
    print(f"\n| {args.size}-element add, {device} | {what} (median of {args.rounds} rounds of {args.calls}) |")
    print("|---|---:|")
    for name, value in times.items():
        print(f"| {name} | {value:.2f} |")
    base = times["kernel, own allocation (empty_like)"]
    print(f"\nregistered op, eager, over the kernel with its own allocation: "
          f"{times['registered op, eager'] - base:+.2f} µs")
    return times


if __name__ == "__main__":
    main()
