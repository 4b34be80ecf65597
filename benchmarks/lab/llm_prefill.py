"""Where does a generation's time go besides its decode steps?  The 8B Llama
example (random fp16 weights, batch 2, 32-token prompts), each backend in one
process: the prompt's forward pass as ``Generator`` runs it (eager, cache reset
first; median of 5 after a warm-up), a whole generation of ``--tokens`` new tokens
(median of 3 after a warm-up), and a decode step as a CUDA-graph replay (ntsym:
median of 40 replays), so that generation = prefill + steps + the rest.

    python -m benchmarks.lab.llm_prefill [--tokens 128] [--layers 32] [--variants torch ntsym] [--profile N]

``--profile N``: a cProfile of 3 prefills of each variant, its N costliest functions by own time.
"""

import argparse
import statistics
import time

import torch

import ntsym  # noqa: F401  (without a GPU, selects the interpreter before triton loads)
from examples.llm import model as llm

BATCH, PROMPT = 2, 32


def _wall_ms(fn):
    torch.cuda.synchronize()
    start = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) * 1e3


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--layers", type=int, default=32)
    parser.add_argument("--variants", nargs="+", default=["torch", "ntsym"])
    parser.add_argument("--profile", type=int, default=0)
    args = parser.parse_args()
    config = llm.llama_8b_config(num_hidden_layers=args.layers)
    model = llm.build_model(config, torch.float16, "cuda")
    prompt = torch.randint(0, config.vocab_size, (BATCH, PROMPT), device="cuda",
                           generator=torch.Generator("cuda").manual_seed(0))
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, triton {__import__('triton').__version__}; "
          f"{args.layers} layers, batch {BATCH}, {PROMPT}-token prompts, {args.tokens} new tokens\n")
    print("| variant | prefill ms (wall, eager) | prefill host ms | generation ms | step ms (graph replay) "
          "| steps x step ms | generation - prefill - steps ms |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for variant in args.variants:
        if variant in llm.BACKENDS:
            llm.patch(model, llm.BACKENDS[variant]())
        else:
            llm.unpatch(model)
        graph = variant in llm.BACKENDS
        generator = llm.Generator(model, BATCH, PROMPT, args.tokens, graph=graph)
        positions = torch.arange(PROMPT, device="cuda").expand(BATCH, -1)

        @torch.no_grad()
        def prefill():
            generator.cache.reset()
            return generator.model(input_ids=prompt, position_ids=positions, cache=generator.cache, use_cache=True,
                                   logits_to_keep=1, **generator._kwargs()).logits[:, -1]

        prefill()
        prefills = [_wall_ms(prefill) for _ in range(5)]
        torch.cuda.synchronize()
        hosts = []
        for _ in range(5):
            start = time.perf_counter()
            prefill()
            hosts.append((time.perf_counter() - start) * 1e3)
            torch.cuda.synchronize()
        generator(prompt)
        generations = [_wall_ms(lambda: generator(prompt)) for _ in range(3)]
        step = float("nan")
        if generator.graph is not None:
            replays = [_wall_ms(generator.graph.replay) for _ in range(40)]
            step = statistics.median(replays)
        p, g = statistics.median(prefills), statistics.median(generations)
        steps = (args.tokens - 1) * step
        print(f"| {variant} | {p:.2f} | {statistics.median(hosts):.2f} | {g:.1f} | {step:.3f} | {steps:.1f} "
              f"| {g - p - steps:.1f} |", flush=True)
        if args.profile:
            from benchmarks.lab.host_profile import profile_text

            text = profile_text(prefill, 3, top=args.profile, synchronize=True)
            print(f"\n{variant}: 3 prefills\n```\n{text.strip()}\n```\n", flush=True)
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
