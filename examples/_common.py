"""Shared helpers for running the examples as scripts."""

import time

import torch


def device():
    return "cuda" if torch.cuda.is_available() else "cpu"


def timed(fn, repeat=3):
    """Median wall time of ``fn()`` in milliseconds (synchronised on GPU)."""
    times = []
    for _ in range(repeat):
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        times.append((time.perf_counter() - start) * 1e3)
    return sorted(times)[len(times) // 2]


def report(name, result, reference, atol, rtol, fn, ref_fn):
    ok = torch.allclose(result.float(), reference.float(), atol=atol, rtol=rtol)
    err = (result.float() - reference.float()).abs().max().item()
    print(f"{name}: {'matches' if ok else 'DOES NOT MATCH'} torch (max abs error {err:.3g}) on {device()}")
    where = "" if torch.cuda.is_available() else \
        "   (ntsym's time is Triton's interpreter on the CPU: it says nothing of a GPU's)"
    print(f"  ntsym {timed(fn):8.3f} ms   torch {timed(ref_fn):8.3f} ms{where}")
    if not ok:
        raise SystemExit(1)
