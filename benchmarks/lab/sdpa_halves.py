"""ntsym's attention with each program's queries as two tiles, interleaved (``examples/sdpa.py``'s
``kernel_pairs``) against one tile a program (``kernel_pow2_head``).

The pairs' arrangement tiles the queries (and the output) twice, ``(BLOCK_SIZE_M, D)`` tiles in
pairs, and the application walks the key/value blocks once for both, the products of the second
tile issued before the first tile's softmax. In hand-written Triton (``attention_halves.py``) the
form was 4-5 % faster than ntsym's tuned attention at head dim 128 on an H200 and no faster at 64.
Timed here as ntsym compiles and tunes both, beside torch's default SDPA (cuDNN), interleaved
rounds in one process, every result checked against torch first.

    python -m benchmarks.lab.sdpa_halves [--shapes B,H,S,D ...] [--dtypes bfloat16 float16] [--causal 0 1]
    TRITON_INTERPRET=1 python -m benchmarks.lab.sdpa_halves --cpu
"""

import argparse
import math

import torch

from examples.sdpa import kernel_pairs, kernel_pow2_head


def run(kernel, q, k, v, is_causal, **fixed):
    o = torch.empty_like(q)
    kernel(q, k, v, 1 / math.sqrt(q.shape[-1]), is_causal, o, **fixed)
    return o


# --fixed: the pairs at these (BLOCK_SIZE_M, BLOCK_SIZE_N, num_warps, num_stages, persistent), beside the tuned ones.
FIXED = ((128, 64, 8, 3, False), (128, 64, 8, 3, True), (128, 64, 8, 2, True), (128, 64, 8, 4, True))


def cpu_check():
    for s, sk in ((64, 64), (100, 70), (17, 33)):
        q, k, v = torch.randn(2, 3, s, 16), torch.randn(2, 3, sk, 16), torch.randn(2, 3, sk, 16)
        for causal in (False, True):
            o = torch.empty_like(q)
            kernel_pairs(q, k, v, 0.3, causal, o, BLOCK_SIZE_M=16, BLOCK_SIZE_N=16)
            ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=0.3, is_causal=causal)
            torch.testing.assert_close(o, ref, atol=1e-5, rtol=1e-5)
    print("the two-halves form agrees with torch on the interpreter")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--shapes", nargs="*", default=("16,16,1024,128", "8,16,2048,128", "4,16,4096,128",
                                                        "1,16,16384,128", "4,32,4096,64"))
    parser.add_argument("--dtypes", nargs="*", default=("bfloat16", "float16"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--causal", nargs="*", type=int, default=(0, 1))
    parser.add_argument("--cpu", action="store_true")
    parser.add_argument("--fixed", action="store_true", help="also the pairs at FIXED configurations")
    args = parser.parse_args()
    if args.cpu:
        return cpu_check()
    from benchmarks.lab._rounds import flops_table, interleaved

    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}", flush=True)
    for text in args.shapes:
        b, h, s, d = (int(x) for x in text.split(","))
        for dtype, causal in ((getattr(torch, name), bool(c)) for name in args.dtypes for c in args.causal):
            q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=dtype) for _ in range(3))
            ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
            fns = {"torch default": lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal),
                   "ntsym one tile": lambda: run(kernel_pow2_head, q, k, v, causal),
                   "ntsym pairs": lambda: run(kernel_pairs, q, k, v, causal)}
            for bm, bn, w, st, p in FIXED if args.fixed else ():
                fns[f"pairs 2x{bm}x{bn} w{w} s{st}{' persistent' if p else ''}"] = (
                    lambda bm=bm, bn=bn, options={"num_warps": w, "num_stages": st, "persistent": p}: run(
                        kernel_pairs, q, k, v, causal, BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, ntsym_options=options))
            for name in list(fns)[1:]:
                try:
                    err = (fns[name]().float() - ref.float()).abs().max().item()
                except Exception as exc:  # a fixed configuration Triton cannot compile
                    print(f"  {name}: failed ({str(exc).splitlines()[0][:160]})", flush=True)
                    fns.pop(name)
                    continue
                print(f"  {name}: max error {err:.1e}", flush=True)
                assert err < 2e-2, name
            flops_table(f"{text} causal={causal} {str(dtype)[6:]}", interleaved(fns, rounds=args.rounds),
                        "torch default", 4 * b * h * s * s * d / (2 if causal else 1), spread=True)


if __name__ == "__main__":
    main()
