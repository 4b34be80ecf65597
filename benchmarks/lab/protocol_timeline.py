"""Where does a generation of the NineToothed paper's eager protocol spend
its time, step by step?  The 8B Llama architecture (random fp16 weights,
batch 2, 32-token prompts) with the paper's modules on the ``torch`` and the
``ntsym`` kernels (``benchmarks.paper_inference``), one warm-up generation
each, then rounds that take turns between the backends.  Per generation:
its wall time, the prompt with the first token, the first decode steps, the
median, mean and slowest step (each step stamped by a stopping criterion),
and for ntsym the launches that were validated (a call shape met for the
first time) or went through Triton's JIT (``CallCache.checked_launches``,
``jit_launches``) and ``ntsym.stats()``.

    python -m benchmarks.lab.protocol_timeline [--layers 32] [--tokens 128] [--rounds 3]
"""

import argparse
import statistics
import time

import torch

import ntsym  # noqa: I001  (before triton)
from benchmarks import paper_inference as protocol
from examples import bmm as bmm_example, rope as rope_example, sdpa as sdpa_example, silu as silu_example
from examples.llm import kernels as llm_kernels, model as llm

KERNELS = {"bmm": bmm_example.kernel, "sdpa": sdpa_example.kernel_pow2_head, "silu": silu_example.kernel,
           "rope": rope_example.kernel, "rms_norm": llm_kernels.rms_norm_kernel}


def _stamp():
    from transformers import StoppingCriteria

    class Stamp(StoppingCriteria):
        """Records the time of each step; stops nothing."""

        def __init__(self):
            self.times = []

        def __call__(self, input_ids, scores, **kwargs):
            self.times.append(time.perf_counter())
            return torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)

    return Stamp()


def generation(model, prompt, tokens):
    """One timed generation: (wall s, the prompt and first token s, the decode steps' s)."""
    from transformers import StoppingCriteriaList

    stamp = _stamp()
    start = time.perf_counter()
    model.generate(input_ids=prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=tokens,
                   min_new_tokens=tokens, do_sample=False, pad_token_id=0,
                   stopping_criteria=StoppingCriteriaList([stamp]))
    torch.cuda.synchronize()
    end = time.perf_counter()
    return end - start, stamp.times[0] - start, [b - a for a, b in zip(stamp.times, stamp.times[1:])]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--layers", type=int, default=32)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    config = llm.llama_8b_config(args.layers)
    model = llm.build_model(config, torch.float16, "cuda")
    model.generation_config.pad_token_id = 0
    prompt = torch.randint(0, config.vocab_size, (protocol.BATCH, protocol.PROMPT), device="cuda",
                           generator=torch.Generator("cuda").manual_seed(0))
    ops = {"torch": protocol.torch_ops, "ntsym": protocol.ntsym_ops}
    for name in ("ntsym", "torch"):  # the warm-up generations (ntsym tunes its shapes here)
        llm.unpatch(model)
        protocol.patch(model, ops[name]())
        generation(model, prompt, args.tokens)
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}; {args.layers} layers, {args.tokens} new "
          "tokens, ms\n")
    print("| round | backend | generation s | prompt and first token | first 5 steps | median step | mean step | "
          "slowest step (index) | ntsym: validated / JIT launches, stats |")
    print("|---:|---|---:|---:|---|---:|---:|---:|---|")
    for round_ in range(args.rounds):
        for name in ("torch", "ntsym"):
            llm.unpatch(model)
            protocol.patch(model, ops[name]())
            before = {k: (v.calls.checked_launches, v.calls.jit_launches) for k, v in KERNELS.items()}
            ntsym.reset_stats()
            wall, first, steps = generation(model, prompt, args.tokens)
            extra = ""
            if name == "ntsym":
                counts = {k: (v.calls.checked_launches - before[k][0], v.calls.jit_launches - before[k][1])
                          for k, v in KERNELS.items()}
                extra = f"{counts}, {ntsym.stats()}"
            slowest = max(steps)
            print(f"| {round_} | {name} | {wall:.3f} | {1e3 * first:.1f} | "
                  f"{' / '.join(f'{1e3 * s:.1f}' for s in steps[:5])} | {1e3 * statistics.median(steps):.2f} | "
                  f"{1e3 * statistics.mean(steps):.2f} | {1e3 * slowest:.1f} ({steps.index(slowest)}) | {extra} |",
                  flush=True)
    llm.unpatch(model)


if __name__ == "__main__":
    main()
