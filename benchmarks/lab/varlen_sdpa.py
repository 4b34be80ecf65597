"""Variable-length attention over packed sequences (examples/varlen_sdpa.py)
against padding every sequence to the longest and running the dense ntsym
sdpa kernel (examples/sdpa.py), and against torch's
scaled_dot_product_attention on nested tensors of the jagged layout.

    python -m benchmarks.lab.varlen_sdpa [--batch 16] [--heads 16] [--seed 0]

Sequence lengths are drawn log-uniformly from 64..4096 (seeded; the longest
is set to 4096 and the shortest to 64 so that the spread is the same every
run), fp16, head dims 64 and 128, causal and not.  Columns:

- ntsym varlen: the jagged kernel on packed ``(total, H, D)`` tensors and
  their offsets (``ntsym.jagged``), checked against per-sequence torch SDPA;
- padded ntsym sdpa (kernel): the dense kernel over ``(B, H, longest, D)``,
  the padding included (its keys are not masked: timing only, the work a
  padded batch costs);
- padded + copies: the same with the packing to the padded layout and back
  (what a caller with packed sequences pays for the dense kernel);
- torch nested: ``F.scaled_dot_product_attention`` on jagged nested tensors
  ``(B, H, j, D)`` (transposed views of ``(B, j, H, D)``); where torch
  refuses a case, the table says so, with the error.

Prints markdown tables, with the device, versions, shapes and dtypes; the
TFLOP/s count the useful work only (sum over sequences of 4*H*L*L*D, half for
causal)."""

import argparse
import math
import random

import torch
import triton

import ntsym
from benchmarks.lab._rounds import interleaved
from examples import sdpa, varlen_sdpa


def lengths_for(batch, seed, low=64, high=4096):
    rng = random.Random(seed)
    lengths = [int(round(math.exp(rng.uniform(math.log(low), math.log(high))))) for _ in range(batch)]
    lengths[0], lengths[-1] = high, low
    return lengths


def pad(packed, offsets, longest):
    """``(total, H, D)`` -> ``(B, H, longest, D)``, zero padded."""
    b = offsets.numel() - 1
    nested = torch.nested.nested_tensor_from_jagged(packed, offsets)
    return nested.to_padded_tensor(0.0, output_size=(b, longest, *packed.shape[1:])).transpose(1, 2)


def unpad(padded, lengths):
    return torch.cat([padded[i, :, :n].transpose(0, 1) for i, n in enumerate(lengths)])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    dtype = torch.float16
    lengths = lengths_for(args.batch, args.seed)
    longest = max(lengths)
    print(f"device {torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}, "
          f"ntsym {ntsym.__version__}, CUDA {torch.version.cuda}")
    print(f"dtype float16, B={args.batch}, H={args.heads}, lengths (seed {args.seed}, log-uniform 64..4096): "
          f"{lengths}; total {sum(lengths)} rows, padded {args.batch * longest} rows "
          f"({sum(lengths) / (args.batch * longest):.0%} useful)")
    print()
    print("| D | causal | ntsym varlen ms | padded ntsym sdpa (kernel) ms | padded + copies ms | torch nested ms "
          "| varlen TFLOP/s | varlen / padded kernel | varlen / torch nested |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    notes = []
    for d in (64, 128):
        q, k, v, offsets = varlen_sdpa.packed(lengths, args.heads, d, dtype, "cuda")
        qp, kp, vp = (pad(t, offsets, longest).contiguous() for t in (q, k, v))
        nested = [torch.nested.nested_tensor_from_jagged(t, offsets, max_seqlen=longest, min_seqlen=min(lengths))
                  .transpose(1, 2) for t in (q, k, v)]
        for causal in (False, True):
            ours = varlen_sdpa.varlen_sdpa(q, k, v, offsets, is_causal=causal)  # tunes once
            ref = varlen_sdpa.reference(q, k, v, offsets, is_causal=causal)
            error = (ours.float() - ref.float()).abs().max().item()
            assert error < 2e-2, f"D={d} causal={causal}: max error {error}"
            fns = {
                "varlen": lambda: varlen_sdpa.varlen_sdpa(q, k, v, offsets, is_causal=causal),
                "padded": lambda: sdpa.sdpa(qp, kp, vp, causal),
                "copies": lambda: unpad(sdpa.sdpa(pad(q, offsets, longest), pad(k, offsets, longest),
                                                  pad(v, offsets, longest), causal), lengths),
            }
            sdpa.sdpa(qp, kp, vp, causal)  # tunes once
            torch_note = None
            try:
                out = torch.nn.functional.scaled_dot_product_attention(*nested, is_causal=causal)
                got = out.transpose(1, 2).values()
                terr = (got.float() - ref.float()).abs().max().item()
                assert terr < 2e-2, f"torch nested: max error {terr}"
                fns["torch"] = lambda: torch.nn.functional.scaled_dot_product_attention(*nested, is_causal=causal)
            except Exception as error:  # noqa: BLE001 - reported in the table
                torch_note = f"{type(error).__name__}: {str(error).splitlines()[0][:200]}"
                notes.append(f"D={d}, causal={causal}: torch SDPA on nested tensors failed: {torch_note}")
            times = interleaved(fns, rounds=args.rounds)
            ms = {name: sorted(t)[len(t) // 2] for name, t in times.items()}
            flops = sum(4 * args.heads * n * n * d for n in lengths) / (2 if causal else 1)
            tflops = flops / (ms["varlen"] * 1e-3) / 1e12
            torch_ms = f"{ms['torch']:.4f}" if "torch" in ms else "n/a (see below)"
            versus = f"{ms['varlen'] / ms['torch']:.3f}" if "torch" in ms else "n/a"
            print(f"| {d} | {causal} | {ms['varlen']:.4f} | {ms['padded']:.4f} | {ms['copies']:.4f} | {torch_ms} | "
                  f"{tflops:.0f} | {ms['varlen'] / ms['padded']:.3f} | {versus} |", flush=True)
    for note in notes:
        print(f"\n- {note}")


if __name__ == "__main__":
    main()
