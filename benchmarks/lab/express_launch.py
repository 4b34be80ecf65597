"""What does a warm call cost the host through the express launch (a
function written for the call shape, ``runtime.express``) against the
general path (quick match, ``fast_launch``, ``launch_direct``) and torch's
own operator?  For each kernel, two handles: one warmed with the express
launch turned off, one with it on; both called with their outputs given,
timed call by call in interleaved rounds beside torch's equivalent.  Then
the examples' own functions (which allocate their outputs), whose kernels
take the express launch.

    python -m benchmarks.lab.express_launch [--calls 20000] [--rounds 7]
"""

import argparse
import statistics
import time

import torch

import ntsym
from examples import bmm, mm, rms_norm, silu
from ntsym import Tensor
from ntsym_codegen import runtime


def add_arrangement(x, y, z, B=ntsym.block_size()):
    return x.tile((B,)), y.tile((B,)), z.tile((B,))


def add_application(x, y, z):
    z = x + y  # noqa: F841


def handles(arrangement, application, tensors, name, args):
    """(general, express): two handles of one kernel, warmed on ``args``."""
    made = []
    for disabled in (True, False):
        runtime.express.DISABLED = disabled
        kernel = ntsym.make(arrangement, application, tensors, kernel_name=f"{name}_{'general' if disabled else 'express'}")
        for _ in range(4):
            kernel(*args)
        quick = kernel.calls.quick
        assert quick and (quick[0].express is None) is disabled, (name, disabled)
        made.append(kernel)
    runtime.express.DISABLED = False
    return made


def rounds(fns, calls, n_rounds):
    times = {k: [] for k in fns}
    for _ in range(n_rounds):
        for k, f in fns.items():
            torch.cuda.synchronize()
            t = time.perf_counter()
            for _ in range(calls):
                f()
            torch.cuda.synchronize()
            times[k].append((time.perf_counter() - t) / calls * 1e6)
    return times


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=7)
    a = parser.parse_args()
    h = torch.float16
    x, y = torch.randn(4096, device="cuda"), torch.randn(4096, device="cuda")
    z = torch.empty_like(x)
    r = torch.randn(2, 4096, device="cuda", dtype=h)
    ro = torch.empty_like(r)
    s = torch.randn(2, 14336, device="cuda", dtype=h)
    so = torch.empty_like(s)
    p, q = torch.randn(4, 64, 64, device="cuda", dtype=h), torch.randn(4, 64, 64, device="cuda", dtype=h)
    pq = torch.empty(4, 64, 64, device="cuda", dtype=h)
    weight = torch.ones(4096, device="cuda", dtype=h)
    cases = {
        "add, 3 × 4096 fp32": (handles(add_arrangement, add_application, (Tensor(1), Tensor(1), Tensor(1)), "add",
                                       (x, y, z)), (x, y, z), lambda: torch.add(x, y, out=z), "torch.add(out=)"),
        "rms_norm kernel, 2 × 4096 fp16, eps": (handles(rms_norm.arrangement, rms_norm.application, rms_norm.tensors,
                                                        "rms", (r, 1e-6, ro)), (r, 1e-6, ro),
                                                lambda: torch.nn.functional.rms_norm(r, (4096,), weight, 1e-6),
                                                "F.rms_norm"),
        "silu kernel, 2 × 14336 fp16": (handles(silu.arrangement, silu.application, (Tensor(1), Tensor(1)), "silu",
                                                (s.view(-1), so.view(-1))), (s.view(-1), so.view(-1)),
                                        lambda: torch.nn.functional.silu(s), "F.silu"),
        "bmm kernel, 4 × 64³ fp16": (handles(bmm.arrangement, mm.application, (Tensor(3), Tensor(3), Tensor(3)),
                                             "bmm", (p, q, pq)), (p, q, pq), lambda: torch.bmm(p, q, out=pq),
                                     "torch.bmm(out=)"),
    }
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}; warm calls, {a.calls} a round, "
          f"{a.rounds} interleaved rounds; µs per call, median (min-max)")
    print("\n| kernel | general path | express | torch | torch's call |\n|---|---:|---:|---:|---|")
    for name, ((general, express), args, torch_fn, torch_name) in cases.items():
        res = rounds({"general": lambda: general(*args), "express": lambda: express(*args), "torch": torch_fn},
                     a.calls, a.rounds)
        cells = [f"{statistics.median(v):.2f} ({min(v):.2f}-{max(v):.2f})" for v in res.values()]
        print(f"| {name} | {' | '.join(cells)} | `{torch_name}` |")
        assert express.stats.launches >= a.calls * a.rounds
    # The examples' functions, whose module kernels take the express launch.
    examples = {
        "rms_norm(x), 2 × 4096": (lambda: rms_norm.rms_norm(r), lambda: torch.nn.functional.rms_norm(r, (4096,),
                                                                                                    weight, 1e-6)),
        "silu(x), 2 × 14336": (lambda: silu.silu(s), lambda: torch.nn.functional.silu(s)),
        "bmm(a, b), 4 × 64³": (lambda: bmm.bmm(p, q), lambda: torch.bmm(p, q)),
    }
    print("\n| example function | ntsym | torch |\n|---|---:|---:|")
    for name, (fn, torch_fn) in examples.items():
        for _ in range(4):
            fn()
        res = rounds({"ntsym": fn, "torch": torch_fn}, a.calls, a.rounds)
        print(f"| {name} | " + " | ".join(f"{statistics.median(v):.2f} ({min(v):.2f}-{max(v):.2f})"
                                          for v in res.values()) + " |")
    torch.testing.assert_close(rms_norm.rms_norm(r), torch.nn.functional.rms_norm(r, (4096,), weight, 1e-6),
                               atol=2e-3, rtol=2e-3)
    torch.testing.assert_close(silu.silu(s), torch.nn.functional.silu(s), atol=2e-3, rtol=2e-3)
    torch.testing.assert_close(bmm.bmm(p, q), torch.bmm(p, q), atol=5e-2, rtol=1e-2)


if __name__ == "__main__":
    main()
