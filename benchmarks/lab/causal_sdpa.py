"""Causal attention that stops at the diagonal, against non-causal attention
and torch's scaled_dot_product_attention (flash on an H100), in one process.

    python -m benchmarks.lab.causal_sdpa [--shapes B,H,S,D ...]

Prints one table: ms and TFLOP/s (causal counts half the work) per shape and
implementation, and ntsym's time as a fraction of torch's."""

import argparse

import torch

from benchmarks.lab._rounds import interleaved
from examples import sdpa

DEFAULT_SHAPES = ("4,48,1024,64", "4,32,4096,64", "2,32,4096,128", "1,16,16384,128")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--shapes", nargs="*", default=DEFAULT_SHAPES)
    parser.add_argument("--dtype", default="float16")
    args = parser.parse_args()
    dtype = getattr(torch, args.dtype)
    print(f"device {torch.cuda.get_device_name()}, torch {torch.__version__}, dtype {args.dtype}")
    print("| shape (B,H,S,D) | causal | ntsym ms | torch ms | ntsym TFLOP/s | torch TFLOP/s | ntsym/torch |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for text in args.shapes:
        b, h, s, d = (int(v) for v in text.split(","))
        q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=dtype) for _ in range(3))
        for causal in (False, True):
            ours = sdpa.sdpa(q, k, v, causal)  # tunes once
            ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
            error = (ours.float() - ref.float()).abs().max().item()
            assert error < 2e-2, f"{text} causal={causal}: max error {error}"
            times = interleaved({
                "ntsym": lambda: sdpa.sdpa(q, k, v, causal),
                "torch": lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal),
            }, rounds=3)
            ms = {name: sorted(t)[len(t) // 2] for name, t in times.items()}
            flops = 4 * b * h * s * s * d / (2 if causal else 1)
            tf = {name: flops / (t * 1e-3) / 1e12 for name, t in ms.items()}
            print(f"| {text} | {causal} | {ms['ntsym']:.4f} | {ms['torch']:.4f} | {tf['ntsym']:.0f} | "
                  f"{tf['torch']:.0f} | {ms['ntsym'] / ms['torch']:.3f} |", flush=True)


if __name__ == "__main__":
    main()
