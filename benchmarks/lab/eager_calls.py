"""What does an eager call of the NineToothed paper's decode kernels cost the
host?  Each kernel the paper's Llama modules call in a decode step (the
Linear's ``bmm`` with ``weight.T`` expanded, RMSNorm, SiLU, RoPE, SDPA), at
the 8B model's decode shapes, batch 2: host µs per call with the same shapes
every call, and with the key/value length one longer every call (SDPA, as a
decode step's cache grows), beside the torch operation; the ``bmm`` also
through a library built ahead of time (``make(..., caller="cuda")``, block
sizes 16 x 64 x 64); ``ntsym.stats()`` over the growing calls; then a
cProfile of the growing SDPA calls.  ``--layers``: instead, the decode
``bmm`` call layer by layer (the example function, the kernel called with its
output given, the call key, the quick match, ntsym's fast path, the direct
launch and Triton's compiled launcher alone), best of 5 batches; then the kernel's warm call with and without
its quick match, beside ``torch.bmm``, in 5 alternating rounds.

    python -m benchmarks.lab.eager_calls [--layers]
"""

import argparse
import functools
import tempfile
import time

import torch
import torch.nn.functional as F

import ntsym  # noqa: I001
from examples import bmm as bmm_example, mm, rope as rope_example, sdpa as sdpa_example, silu as silu_example
from examples.llm import kernels as llm_kernels

B, H, KV, D = 2, 32, 8, 128


def per_call(fn, calls=200):
    fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    host = (time.perf_counter() - start) / calls
    torch.cuda.synchronize()
    return host * 1e6


def main():
    dev, f16 = "cuda", torch.float16
    x = torch.randn(B, 1, 4096, device=dev, dtype=f16)
    w = torch.randn(4096, 4096, device=dev, dtype=f16)
    wt = w.T.unsqueeze(0).expand(B, -1, -1)
    norm_w = torch.randn(4096, device=dev, dtype=f16)
    gate = torch.randn(B, 1, 14336, device=dev, dtype=f16)
    q = torch.randn(B, 1, H, D, device=dev, dtype=f16)
    sin = torch.randn(1, D // 2, device=dev, dtype=f16)
    cos = torch.randn(1, D // 2, device=dev, dtype=f16)
    blocks = dict(BLOCK_SIZE_M=16, BLOCK_SIZE_N=64, BLOCK_SIZE_K=64)
    tensors = tuple(ntsym.Tensor(shape=shape, dtype=ntsym.float16) for shape in
                    ((None, None, 4096), (None, 4096, 4096), (None, None, 4096)))
    library = ntsym.make(functools.partial(bmm_example.arrangement, **blocks), mm.application, tensors,
                         caller="cuda", kernel_name="eager_bmm", output_dir=tempfile.mkdtemp())

    def library_bmm():
        out = torch.empty(B, 1, 4096, device=dev, dtype=f16)
        library(x, wt, out)
        return out

    rows = [
        ("bmm (2,1,4096) x weight.T expanded", lambda: bmm_example.bmm(x, wt), lambda: torch.bmm(x, wt)),
        ("the same bmm through a library", library_bmm, lambda: torch.bmm(x, wt)),
        ("rms_norm (2,1,4096)", lambda: llm_kernels.rms_norm(x, norm_w, 1e-5),
         lambda: F.rms_norm(x, (4096,), norm_w, 1e-5)),
        ("silu (2,1,14336)", lambda: silu_example.silu(gate), lambda: F.silu(gate)),
        # torch: one element-wise operation for scale (torch has no RoPE operation)
        ("rope (2,1,32,128); torch: q * 2", lambda: rope_example.rope(q, sin, cos), lambda: q * 2),
    ]
    cache_k = torch.randn(B, H, 4096, D, device=dev, dtype=f16)
    qh = q.transpose(1, 2)
    fixed = 300
    keys = cache_k[:, :, :fixed]
    rows.append(("sdpa, 300 keys every call", lambda: sdpa_example.sdpa(qh, keys, keys),
                 lambda: F.scaled_dot_product_attention(qh, keys, keys)))
    print(f"device {torch.cuda.get_device_name()}, torch {torch.__version__}; host µs per call (200 calls, "
          "enqueue time: the GPU runs behind)\n")
    print("| call | ntsym µs | torch µs |\n|---|---:|---:|")
    for name, ours, theirs in rows:
        print(f"| {name} | {per_call(ours):.1f} | {per_call(theirs):.1f} |", flush=True)

    for label, start in (("first pass", 301), ("second pass, the same lengths again: each learned", 301),
                         ("third pass, the same lengths again", 301)):
        length = [start]

        def growing():
            n = length[0]
            length[0] += 1
            return sdpa_example.sdpa(qh, cache_k[:, :, :n], cache_k[:, :, :n])

        ntsym.reset_stats()
        us = per_call(growing, 100)
        print(f"| sdpa, one key more every call ({label}) | {us:.1f} | |")
        print(f"  stats: {ntsym.stats()}")
    length = [600]

    def growing_again():
        n = length[0]
        length[0] += 1
        return sdpa_example.sdpa(qh, cache_k[:, :, :n], cache_k[:, :, :n])

    from benchmarks.lab.host_profile import profile_text

    text = profile_text(growing_again, 50, sort="cumulative", top=35, synchronize=True)
    print("\ncProfile of 50 sdpa calls, one key more each (cumulative, top 35):")
    print(text)


def layers():
    from benchmarks.lab.host_profile import per_call_us
    from ntsym_codegen import runtime
    from ntsym_codegen.runtime import direct

    dev, f16 = "cuda", torch.float16
    x = torch.randn(B, 1, 4096, device=dev, dtype=f16)
    wt = torch.randn(1024, 4096, device=dev, dtype=f16).T.unsqueeze(0).expand(B, -1, -1)
    out = torch.empty(B, 1, 1024, device=dev, dtype=f16)
    kernel = bmm_example.kernel
    kernel(x, wt, out)
    kernel(x, wt, out)  # the second call of a call shape learns its quick match
    entry = next(e for e in kernel.calls.calls.values() if e.grid is not None)
    quick = kernel.calls.quick
    call = [(x, wt, out)[value] if kind == "arg" else value for kind, value in kernel.spec.arg_template]
    call.extend(entry.tail)
    compiled, stream = entry.direct.compiled, torch.cuda.current_stream().cuda_stream
    values = (*call, *entry.direct.constexprs)
    grid = tuple(entry.grid) + (1,) * (3 - len(entry.grid))
    pointers = [t.data_ptr() for t in (x, wt, out)]
    print(f"quick matches learned: {len(quick)}; Triton's launcher called without run: "
          f"{entry.direct.launch is not compiled.run}")
    rows = {
        "torch.bmm": lambda: torch.bmm(x, wt),
        "torch.empty (2, 1, 1024)": lambda: torch.empty((B, 1, 1024), dtype=f16, device=dev),
        "examples.bmm.bmm": lambda: bmm_example.bmm(x, wt),
        "the kernel, output given": lambda: kernel(x, wt, out),
        "its call key": lambda: runtime.call_key((x, wt, out), (None, None, None), None),
        "its quick match (runtime.quick_entry)": lambda: runtime.quick_entry(quick, (x, wt, out)),
        "its fast path (runtime.fast_launch)": lambda: runtime.fast_launch(kernel.launch_facts, entry, (x, wt, out)),
        "its fast path, pointers read": lambda: runtime.fast_launch(kernel.launch_facts, entry, (x, wt, out),
                                                                     pointers, True),
        "of which the direct launch": lambda: direct.launch_direct(entry.direct, entry.grid, call, entry.device),
        "Triton's compiled launcher (run)": lambda: compiled.run(*grid, stream, compiled.function,
                                                                  compiled.packed_metadata, None, None, None,
                                                                  *values),
        "F.silu (2, 1, 4096)": lambda: F.silu(x),
        "examples.silu (2, 1, 4096)": lambda: silu_example.silu(x),
    }
    print(f"device {torch.cuda.get_device_name()}, torch {torch.__version__}; host µs per call, best of 5 "
          "batches of 2000\n\n| layer | µs |\n|---|---:|")
    for name, fn in rows.items():
        print(f"| {name} | {per_call_us(fn, 2000):.2f} |", flush=True)
    # The same warm calls with and without their quick match, in alternating rounds.
    learned = list(quick)
    alternatives = {"the kernel, quick match": learned, "the kernel, call key": [], "torch.bmm": None}
    rounds = {name: [] for name in alternatives}
    for _ in range(5):
        for name, table in alternatives.items():
            if table is None:
                rounds[name].append(per_call_us(rows["torch.bmm"], 2000))
                continue
            quick[:] = table
            rounds[name].append(per_call_us(lambda: kernel(x, wt, out), 2000))
    quick[:] = learned
    print("\nAlternating rounds (best of 5 batches each), µs:\n\n| call | rounds | best |\n|---|---|---:|")
    for name, values in rounds.items():
        print(f"| {name} | {' / '.join(f'{v:.2f}' for v in values)} | {min(values):.2f} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--layers", action="store_true")
    layers() if parser.parse_args().layers else main()
