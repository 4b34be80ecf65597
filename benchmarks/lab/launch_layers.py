"""What one warm launch costs the host, layer by layer: the example's function
(allocations and views included), the kernel called with its output given,
ntsym's Python alone (the compiled binary's launch replaced by a no-op), the
launch of the compiled binary as ntsym does it (guard, device and stream, Triton's
launcher) with the arguments already built, the same as Triton's JIT launches
(launch metadata built and the launch hook chains passed although empty),
Triton's launcher alone (``compiled.run`` with the stream looked up once), and
the torch operator.  Small shapes, so the device is idle and the host is what
is timed; per-call µs, the best of 7 batches, the columns taking turns batch by
batch.

    python -m benchmarks.lab.launch_layers          # on a GPU
    python -m benchmarks.lab.launch_layers --cpu    # the Python layer, Triton's interpreter stubbed
"""

import argparse
import contextlib
import time

import torch

import ntsym  # noqa: F401  (before triton)
from ntsym_codegen import runtime
from examples import add, conv2d, softmax


def interleaved_us(fns, calls, sync, rounds=7):
    """Per-call µs of each function: ``rounds`` batches of ``calls`` calls,
    the functions taking turns batch by batch; the best batch of each.
    ``fns``: name -> (function, context manager factory or None)."""
    for fn, context in fns.values():
        with context() if context else contextlib.nullcontext():
            for _ in range(200):
                fn()
    sync()
    best = {name: float("inf") for name in fns}
    for _ in range(rounds):
        for name, (fn, context) in fns.items():
            with context() if context else contextlib.nullcontext():
                start = time.perf_counter()
                for _ in range(calls):
                    fn()
                best[name] = min(best[name], (time.perf_counter() - start) / calls * 1e6)
                sync()
    return best


@contextlib.contextmanager
def patched(module, name, value):
    saved = getattr(module, name)
    setattr(module, name, value)
    try:
        yield
    finally:
        setattr(module, name, saved)


def cases(device):
    h = torch.float16 if device == "cuda" else torch.float32
    x, y, o = (torch.randn(1024, device=device, dtype=h) for _ in range(3))
    rows = torch.randn(64, 256, device=device, dtype=h)
    rows_out = torch.empty_like(rows)
    partials = torch.randn(4, 8192, device=device)
    summed = torch.empty(8192, device=device, dtype=h)
    # conv2d at batch 2 with the paper's channels, split into groups of 64.
    c = 512 if device == "cuda" else 16  # the interpreter runs the warm-up call
    image = torch.randn(2, c, 14, 14, device=device, dtype=h)
    weight = torch.randn(c, c, 3, 3, device=device, dtype=h)
    split = 8
    grouped_image = image.unflatten(1, (split, c // split))
    grouped_weight = weight.unflatten(1, (split, c // split))
    split_out = torch.empty(split, 2, c, 12, 12, device=device)
    return {
        "add (1024)": (lambda: add.add(x, y), add.kernel, (x, y, o), lambda: torch.add(x, y)),
        "softmax (64 x 256)": (lambda: softmax.softmax(rows), softmax.kernel, (rows, rows_out),
                               lambda: torch.softmax(rows, -1)),
        "conv2d sum_kernel (4 x 8192)": (None, conv2d.sum_kernel, (partials, summed),
                                         lambda: torch.sum(partials, 0, out=summed)),
        "conv2d split_kernel (5-D)": (None, conv2d.split_kernel, (grouped_image, grouped_weight, split_out), None),
        "conv2d() batch 2": (lambda: conv2d.conv2d(image, weight), None, None,
                             lambda: torch.nn.functional.conv2d(image, weight)),
    }


def only_entry(kernel):
    entries = list(kernel.calls.calls.values())
    assert len(entries) == 1, f"{kernel.name}: {len(entries)} call shapes"
    return entries[0]


def built_call(kernel, entry, args):
    spec = kernel.launch_facts.spec
    call = []
    for kind, value in spec.arg_template:
        call.append(args[value] if kind == "arg" else runtime.scalar(args[value]) if kind == "scalar" else value)
    call.extend(entry.tail)
    return call


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cpu", action="store_true")
    parser.add_argument("--calls", type=int, default=5000)
    options = parser.parse_args()
    device = "cpu" if options.cpu else "cuda"
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    print(torch.cuda.get_device_name() if device == "cuda" else "CPU (interpreter stubbed)",
          f"torch {torch.__version__}")
    table = cases(device)
    for function, kernel, args, _ in table.values():  # warm: tune, compile, validate
        if kernel is not None:
            kernel(*args)
        if function is not None:
            function()
    sync()
    print("\n| call | example function | kernel, output given | ntsym Python only | binary launch, args built"
          " | the same, hooks and metadata passed as Triton's JIT does | Triton launcher alone | torch |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    columns = ("function", "kernel", "python", "binary", "binary, hooks", "launcher", "torch")
    for name, (function, kernel, args, op) in table.items():
        fns = {}
        if function is not None and device == "cuda":
            fns["function"] = (function, None)
        if kernel is not None:
            kernel.calls.calls.clear()  # this call's shape only (conv2d() ran others)
            kernel(*args)
            entry = only_entry(kernel)
            if device == "cuda":
                fns["kernel"] = (lambda: kernel(*args), None)
                fns["python"] = (lambda: kernel(*args), lambda: patched(runtime, "_launch_direct", lambda *a: True))
                call = built_call(kernel, entry, args)
                direct = entry.direct
                if direct is not None:
                    fns["binary"] = (lambda: runtime.direct._launch_direct(direct, entry.grid, call, entry.device), None)
                    fns["binary, hooks"] = (lambda: triton_jit_style(direct, entry.grid, call), None)
                    compiled = direct.compiled
                    stream = direct.driver.active.get_current_stream(entry.device)
                    values = (*call, *direct.constexprs)
                    g = tuple(entry.grid) + (1,) * (3 - len(entry.grid))
                    run, function_handle, packed = compiled.run, compiled.function, compiled.packed_metadata
                    fns["launcher"] = (lambda: run(g[0], g[1], g[2], stream, function_handle, packed, None, None, None,
                                                   *values), None)
            else:
                fns["python"] = (lambda: kernel(*args), lambda: patched(runtime, "_run", lambda *a, **k: None))
        if op is not None and device == "cuda":
            fns["torch"] = (op, None)
        times = interleaved_us(fns, options.calls, sync)
        print(f"| {name} | " + " | ".join(f"{times[c]:.1f}" if c in times else "" for c in columns) + " |")


def triton_jit_style(direct, grid, call):
    """The binary's launch as Triton's JIT makes it: the launch metadata built
    and the hook chains passed, whether or not a hook is set."""
    active = direct.driver.active
    device = active.get_current_device()
    stream = active.get_current_stream(device)
    compiled = direct.compiled
    values = (*call, *direct.constexprs)
    metadata = compiled.launch_metadata(grid, stream, *values)
    g1 = grid[1] if len(grid) > 1 else 1
    g2 = grid[2] if len(grid) > 2 else 1
    compiled.run(grid[0], g1, g2, stream, compiled.function, compiled.packed_metadata, metadata,
                 direct.knobs.launch_enter_hook, direct.knobs.launch_exit_hook, *values)


if __name__ == "__main__":
    main()
