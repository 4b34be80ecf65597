"""Attention as the tuner leaves it, against torch's default SDPA (cuDNN on an
H100): ms, TFLOP/s, the configuration chosen and whether it is the variant
that reads through tensor descriptors, one program per tile
(``'persistent': True`` in the printed choice), and the largest error
against torch.  Run once from a tree with that variant and once from a tree
without it (``cd old && python -m benchmarks.lab.attention_descriptors``) to
compare; each shape's two implementations take turns in interleaved rounds.

    python -m benchmarks.lab.attention_descriptors [--dtype bfloat16] [--shapes B,H,S,D ...]
    python -m benchmarks.lab.attention_descriptors --check

``--check``: the descriptor variant forced (``ntsym_options={"persistent": True}``)
at shapes whose lengths and head dims do not divide the blocks, against torch,
fp16 and bf16, causal and not.
"""

import argparse
import os
import statistics

import torch

from benchmarks.lab._rounds import interleaved

# FlashAttention-3's forward points (batch x sequence 16k, hidden 2048), a subset.
SHAPES = ("16,16,1024,128", "8,16,2048,128", "4,16,4096,128", "1,16,16384,128", "16,32,1024,64", "4,32,4096,64")


def check():
    from examples import sdpa

    for dtype in (torch.float16, torch.bfloat16):
        for b, h, s, d in ((2, 3, 1000, 128), (1, 4, 777, 64), (2, 2, 333, 80)):
            q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=dtype) for _ in range(3))
            kernel = sdpa.kernel_pow2_head if d & (d - 1) == 0 else sdpa.kernel
            for causal in (False, True):
                for bm, bn, warps in ((128, 64, 4), (64, 64, 4), (128, 128, 8)):
                    out = torch.full_like(q, float("nan"))
                    kernel(q, k, v, d ** -0.5, causal, out, BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn,
                           ntsym_options={"persistent": True, "num_warps": warps, "num_stages": 2})
                    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
                    error = (out.float() - ref.float()).abs().max().item()
                    status = "ok" if error < 2e-2 else "WRONG"
                    print(f"{status} {str(dtype)[6:]} {(b, h, s, d)} causal={causal} {bm}x{bn} w{warps}: "
                          f"max error {error:.1e}", flush=True)


def main():
    os.environ.setdefault("NTSYM_PRINT_TUNING", "1")  # each tuned choice, printed as made
    import ntsym  # noqa: F401  (the tree under test)
    from examples import sdpa

    parser = argparse.ArgumentParser()
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--shapes", nargs="*", default=SHAPES)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    if args.check:
        return check()
    dtype = getattr(torch, args.dtype)
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, {args.dtype}")
    print("\n| B,H,S,D | causal | torch ms | ntsym ms | ntsym / torch | ntsym TFLOP/s | max error | ntsym's variant |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    for text in args.shapes:
        b, h, s, d = (int(x) for x in text.split(","))
        q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=dtype) for _ in range(3))
        for causal in (False, True):
            ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
            out = sdpa.sdpa(q, k, v, causal)
            error = (out.float() - ref.float()).abs().max().item()
            kernel = sdpa.kernel_pow2_head if d & (d - 1) == 0 else sdpa.kernel
            entries = list(kernel.calls.calls.values())
            variant = "descriptors, per tile" if entries and entries[-1].kernel is not None else "plain"
            times = interleaved({
                "torch": lambda c=causal: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=c),
                "ntsym": lambda c=causal: sdpa.sdpa(q, k, v, c),
            }, rounds=args.rounds)
            t, n = statistics.median(times["torch"]), statistics.median(times["ntsym"])
            flops = 4 * b * h * s * s * d / (2 if causal else 1)
            print(f"| {text} | {causal} | {t:.4f} | {n:.4f} | {n / t:.3f} | {flops / n / 1e9:.0f} | {error:.1e} | {variant} |",
                  flush=True)


if __name__ == "__main__":
    main()
