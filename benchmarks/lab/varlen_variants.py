"""Where the varlen kernel's time goes: the generated module of
examples/varlen_sdpa.py timed beside copies of it with one sound-by-default
construct taken out each (timing only: a copy is not a kernel ntsym would
emit), all bound to the same launch facts, so they run the configuration the
first call tuned.

    python -m benchmarks.lab.varlen_variants [--rounds 5]

Variants: ``as emitted``; ``tl.max`` (the NaN-propagating max replaced by
tl.max and a plain maximum); ``no alpha select`` (the accumulator's factor
``tl.where(i < v tiles, alpha, 1)`` replaced by ``alpha``); both."""

import argparse
import re

import torch
import triton

import ntsym
from benchmarks.lab._rounds import interleaved, ratio_table
from benchmarks.lab.varlen_sdpa import lengths_for
from examples import varlen_sdpa
from ntsym.jagged_launch import prepare
from ntsym_codegen import cache

MAX = (r"tl\.maximum\(m, ntsym_max\(s, 1\), propagate_nan=tl\.PropagateNan\.ALL\)", "tl.maximum(m, tl.max(s, 1))")
ALPHA = (r"acc \* tl\.where\([^,]+, alpha\[:, None\], 1\.0\)", "acc * alpha[:, None]")


def variant(source, *edits):
    for pattern, replacement in edits:
        source, n = re.subn(pattern, replacement, source)
        assert n, pattern
    return source


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    kernel = varlen_sdpa.kernel
    print(f"device {torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}, "
          f"ntsym {ntsym.__version__}; fp16, B=16, H=16, lengths log-uniform 64..4096 (seed 0)")
    sources = {
        "as emitted": kernel.source,
        "tl.max": variant(kernel.source, MAX),
        "no alpha select": variant(kernel.source, ALPHA),
        "both": variant(kernel.source, MAX, ALPHA),
    }
    lengths = lengths_for(16, 0)
    for d in (64, 128):
        q, k, v, offsets = varlen_sdpa.packed(lengths, 16, d, torch.float16, "cuda")
        for causal in (False, True):
            ref = varlen_sdpa.reference(q, k, v, offsets, is_causal=causal)
            varlen_sdpa.varlen_sdpa(q, k, v, offsets, is_causal=causal)  # tunes once
            fns = {}
            for label, source in sources.items():
                launch = cache.load(source, f"varlen_variant_{abs(hash(source))}").make_launch(kernel.launch_facts)
                o = torch.empty_like(q)
                jq, jo = ntsym.jagged(q, offsets), ntsym.jagged(o, offsets)
                jk, jv = ntsym.jagged(k, offsets), ntsym.jagged(v, offsets)
                call_args, kw = prepare(kernel.ir, kernel.spec, (jq, jk, jv, q.shape[-1] ** -0.5, causal, jo), {})
                launch(*call_args, **kw)
                error = (o.float() - ref.float()).abs().max().item()
                assert error < 2e-2, (label, error)
                fns[label] = lambda launch=launch, call_args=call_args, kw=kw: launch(*call_args, **kw)
            print(f"\n### D={d}, causal={causal}\n")
            print(ratio_table(interleaved(fns, rounds=args.rounds), "as emitted"))


if __name__ == "__main__":
    main()
