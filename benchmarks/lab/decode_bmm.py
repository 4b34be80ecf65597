"""Does the tuner pick decode tiles for the NineToothed paper's Linear?  The
paper's end-to-end protocol replaces Llama's linear layers by a ``bmm`` of the
activations ``(B, 1, K)`` with the weight transposed and expanded over the
batch, ``weight.T.unsqueeze(0).expand(B, -1, -1)`` (``examples/bmm.py`` is that
program).  For each weight of the 8B Llama, batch 2, fp16, one process:

- ``ntsym, tuned``: ``examples.bmm.bmm`` as the tuner leaves it (products of at
  most 16 rows a matrix time the skinny decode tilings) and its choice;
- ``best GEMM tile``: the fastest of the candidates the tuner times for such a
  product when its rows are not taken into account (the GEMM shapes), each
  called at its configuration;
- ``torch.bmm`` of the same operands, and ``F.linear`` of the two rows at once
  (which reads the weight once, where a bmm of the expanded weight may read it
  once per batch).

Times: ``do_bench`` medians (L2 flushed before each call); and, as the
protocol runs them (eager, one call after another), wall time per call over
1,000 calls of ntsym's ``bmm()`` (which allocates its output, as the
protocol's wrapper does) and of ``torch.bmm``, which is the host's cost where
it exceeds the kernel's.

    python -m benchmarks.lab.decode_bmm
"""

import torch

import ntsym  # noqa: F401, I001  (without a GPU, selects the interpreter before triton loads)
import triton
from triton.testing import do_bench

from ntsym_codegen import tuning
from examples import bmm

SHAPES = {"q, o": (4096, 4096), "k, v": (1024, 4096), "gate, up": (14336, 4096), "down": (4096, 14336),
          "lm_head": (128256, 4096)}


def main():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = torch.float16 if device == "cuda" else torch.float32
    shapes = SHAPES if device == "cuda" else {"small": (96, 64)}
    bench = (lambda f: do_bench(f, warmup=10, rep=50, return_mode="median") * 1e3) if device == "cuda" else (
        lambda f: (f(), float("nan"))[1])
    gen = torch.Generator(device).manual_seed(0)
    name = torch.cuda.get_device_name() if device == "cuda" else "cpu"
    print(f"device {name}, torch {torch.__version__}, triton {triton.__version__}; {dtype}, batch 2, one row each")
    print("\n| weight | N x K | ntsym, tuned µs (choice) | best GEMM tile µs (its config) | torch.bmm µs | "
          "F.linear of both rows µs | weight TB/s: ntsym, bmm, linear | eager µs a call: ntsym, torch.bmm |")
    print("|---|---|---|---|---:|---:|---|---|")
    for label, (n, k) in shapes.items():
        x = torch.randn(2, 1, k, device=device, dtype=dtype, generator=gen)
        weight = torch.randn(n, k, device=device, dtype=dtype, generator=gen) / k ** 0.5
        other = weight.t().unsqueeze(0).expand(2, -1, -1)
        out = torch.empty(2, 1, n, device=device, dtype=dtype)
        reference = torch.bmm(x.float(), other.float())
        bmm.kernel(x, other, out)  # tunes
        error = (out.float() - reference).abs().max().item()
        assert error < 5e-2, error
        tuned = bench(lambda: bmm.kernel(x, other, out))
        choice = "; ".join(str(c) for c in list(bmm.kernel.calls.tuned.values())[-1:])
        gemm = []
        for config in tuning.candidates(bmm.kernel.spec, {}):
            kwargs = dict(dict(config.meta), num_warps=config.num_warps, num_stages=config.num_stages)
            try:
                bmm.kernel(x, other, out, **kwargs)
            except Exception:  # noqa: BLE001 - a configuration this GPU cannot run
                continue
            gemm.append((bench(lambda: bmm.kernel(x, other, out, **kwargs)), config))
        gemm.sort(key=lambda pair: pair[0])
        best, best_config = gemm[0] if gemm else (float("nan"), None)
        torch_bmm = bench(lambda: torch.bmm(x, other))
        linear = bench(lambda: torch.nn.functional.linear(x.view(2, k), weight))
        eager = [_eager(lambda: bmm.bmm(x, other), device), _eager(lambda: torch.bmm(x, other), device)]
        nbytes = n * k * x.element_size()
        tbs = lambda us: nbytes / (us * 1e-6) / 1e12  # noqa: E731
        print(f"| {label} | {n} x {k} | {tuned:.1f} ({choice}) | {best:.1f} ({best_config}) | {torch_bmm:.1f} | "
              f"{linear:.1f} | {tbs(tuned):.2f}, {tbs(torch_bmm):.2f}, {tbs(linear):.2f} | "
              f"{eager[0]:.1f}, {eager[1]:.1f} |", flush=True)


def _eager(f, device, calls=1000):
    import time

    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    calls = calls if device == "cuda" else 3
    f()
    sync()
    start = time.perf_counter()
    for _ in range(calls):
        f()
    sync()
    return (time.perf_counter() - start) / calls * 1e6


if __name__ == "__main__":
    main()
