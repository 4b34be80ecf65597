"""Llama's greedy decoding tensor-parallel over the ranks of a ``torchrun`` group, on ntsym kernels.

    torchrun --nproc-per-node 2 -m examples.llm.parallel     # GPUs: the 8B architecture, random fp16 weights
        [--layers 32] [--prompt 32] [--new-tokens 128] [--no-graph]
    python -m examples.llm.parallel --tiny                    # CPU or one GPU: the tiny model, as a group of one

Megatron's split of every layer: the query, key and value projections are
column-parallel (each rank holds ``heads / world`` query heads and
``key_value_heads / world`` key/value heads, and its share of the KV cache), the
attention runs on the rank's heads, the output projection is row-parallel and
ends in one all-reduce; the MLP's gate and up projections are column-parallel
(``intermediate / world`` features), the down projection row-parallel with one
all-reduce; ``lm_head`` is split over the vocabulary and its logits gathered.
The embedding, the norms and the RoPE tables are kept whole on every rank.  The
kernels are the ntsym ones of ``examples/llm/kernels.py`` (the model of
``examples/llm/model.py`` patched), the collectives ``torch.distributed``'s
(NCCL on GPUs, gloo on the CPU).  Every rank builds the whole model from one
seed and keeps its shard.

Printed (rank 0), as markdown: the devices and versions; whether the tensor-parallel
tokens equal one GPU's (ntsym and torch, the whole model on rank 0) with the largest
logit difference before the first differing token; tokens/s of a generation
(batch 2, prefill included) tensor-parallel and on one GPU; the decode step's
time (a CUDA-graph replay with the collectives inside, or eager with
``--no-graph``) against its bound: half the weights (all but the embedding) read
at the measured copy bandwidth, plus the step's collectives timed alone.  With
``$OUT`` set the tables also go to ``$OUT/llm-parallel.md``.  Exits 1 when the
tiny model's tokens differ from torch's.
"""

import argparse
import copy
import gc
import os
import sys
import time
import types

import torch
import torch.distributed as dist

import ntsym  # noqa: F401  (without a GPU, selects the interpreter before triton loads)
from examples.llm import model as llm
from examples.tensor_parallel import barrier, describe, process_group, versions

BATCH = 2
# all_gather_into_tensor is all_gather_single from torch 2.13 on (the old name warns there).
_all_gather = getattr(dist, "all_gather_single", dist.all_gather_into_tensor)


# -- sharding ---------------------------------------------------------------------------------


def shard_config(config, world):
    """The configuration of one rank's shard: a ``world``-th of the heads and MLP features."""
    for name in ("num_attention_heads", "num_key_value_heads", "intermediate_size", "vocab_size"):
        if getattr(config, name) % world:
            raise SystemExit(f"{name} = {getattr(config, name)} is not divisible by the world size {world}")
    shard = copy.deepcopy(config)
    shard.head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    shard.num_attention_heads //= world
    shard.num_key_value_heads //= world
    shard.intermediate_size //= world
    return shard


def _rows(weight, rank, world):
    size = weight.shape[0] // world
    return weight[rank * size:(rank + 1) * size]


def _columns(weight, rank, world):
    size = weight.shape[1] // world
    return weight[:, rank * size:(rank + 1) * size]


def shard_model(full, rank, world):
    """Rank ``rank``'s shard of the ``LlamaForCausalLM`` ``full``, on full's device and dtype."""
    weight = full.lm_head.weight
    config = shard_config(full.config, world)
    with torch.device("meta"):
        from transformers import LlamaForCausalLM

        shard = LlamaForCausalLM(config)
        shard.lm_head = torch.nn.Linear(config.hidden_size, config.vocab_size // world, bias=False)
    # Column-parallel: output features (rows of the weight); row-parallel: input features.
    split = {"q_proj": _rows, "k_proj": _rows, "v_proj": _rows, "gate_proj": _rows, "up_proj": _rows,
             "o_proj": _columns, "down_proj": _columns}
    tensors = {}
    for name, value in full.state_dict().items():
        kind = name.split(".")[-2]
        if kind in split:
            value = split[kind](value, rank, world)
        elif name == "lm_head.weight":
            value = _rows(value, rank, world)  # a share of the vocabulary
        tensors[name] = value.contiguous()
    shard.load_state_dict(tensors, assign=True)
    # Buffers outside the state dict: the RoPE tables, the same on every rank.
    shard.model.rotary_emb = copy.deepcopy(full.model.rotary_emb)
    return shard.to(weight.device).eval().requires_grad_(False)


def _all_reduced_linear(backend, group):
    def forward(self, x):
        out = backend.linear(x, self.weight)  # this rank's partial sum
        dist.all_reduce(out, group=group)
        return out

    return forward


def _gathered_linear(backend, group, world):
    def forward(self, x):
        local = backend.linear(x, self.weight).contiguous()
        parts = torch.empty((world * local.shape[0], *local.shape[1:]), dtype=local.dtype, device=local.device)
        _all_gather(parts, local, group=group)  # rank by rank along the first dimension
        return parts.view(world, *local.shape).movedim(0, -2).reshape(*local.shape[:-1], world * local.shape[-1])

    return forward


def patch_parallel(shard, backend, world, group=None):
    """``llm.patch`` of the shard, then the collectives: all-reduce after the
    row-parallel projections, all-gather of the vocabulary-parallel logits."""
    # The residual is added once, after the all-reduce: transformers' own layers.
    llm.patch(shard, backend, layers=False)
    reduce = _all_reduced_linear(backend, group)
    for layer in shard.model.layers:
        for module in (layer.self_attn.o_proj, layer.mlp.down_proj):
            module.forward = types.MethodType(reduce, module)
    shard.lm_head.forward = types.MethodType(_gathered_linear(backend, group, world), shard.lm_head)
    shard.patched_with = f"{backend.name}, tensor-parallel over {world}"
    return shard


# -- measuring ----------------------------------------------------------------------------------


def _sync():
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def generate(model, prompt, new_tokens, graph, keep_logits=False):
    generator = llm.Generator(model, prompt.shape[0], prompt.shape[1], new_tokens, graph=graph)
    return generator, generator(prompt, keep_logits=keep_logits)


def tokens_per_second(generator, prompt, runs):
    times = []
    for _ in range(runs):
        _sync()
        barrier(prompt.device)
        start = time.perf_counter()
        generator(prompt)
        _sync()
        times.append(time.perf_counter() - start)
    seconds = torch.tensor([sum(times) / len(times)], device=prompt.device)
    if dist.is_initialized():
        dist.all_reduce(seconds, op=dist.ReduceOp.MAX)
    return prompt.shape[0] * generator.new_tokens / seconds.item()


def step_ms(generator, cached, replays=40):
    """ms per decode step (the slowest rank), the cache at ``cached`` valid positions."""
    for layer in generator.cache.layers:
        layer.cumulative_length.fill_(cached)
    generator.positions.fill_(cached)
    step = generator.graph.replay if generator.graph is not None else generator._step
    with torch.no_grad():
        for _ in range(3):
            step()
        torch.cuda.synchronize()
        barrier(generator.ids.device)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(replays):
            step()
        end.record()
        torch.cuda.synchronize()
    ms = torch.tensor([start.elapsed_time(end) / replays], device=generator.ids.device)
    dist.all_reduce(ms, op=dist.ReduceOp.MAX)
    return ms.item()


def collectives_ms(config, world, dtype, device, replays=20):
    """ms of one decode step's collectives alone, as the step runs them (captured in
    a CUDA graph, no host time): two all-reduces of (B, 1, hidden) a layer and the
    all-gather of the logits; and the ms of one all-reduce and of the all-gather."""
    hidden = torch.randn(BATCH, 1, config.hidden_size, dtype=dtype, device=device)
    local = torch.randn(BATCH, 1, config.vocab_size // world, dtype=dtype, device=device)
    parts = torch.empty((world * BATCH, *local.shape[1:]), dtype=dtype, device=device)

    def timed(fn, count):
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(count):
                fn()
        graph.replay()
        torch.cuda.synchronize()
        barrier(device)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(replays):
            graph.replay()
        end.record()
        torch.cuda.synchronize()
        ms = torch.tensor([start.elapsed_time(end) / replays / count], device=device)
        dist.all_reduce(ms, op=dist.ReduceOp.MAX)
        return ms.item()

    reduce = timed(lambda: dist.all_reduce(hidden), 2 * config.num_hidden_layers)
    gather = timed(lambda: _all_gather(parts, local), 8)
    return 2 * config.num_hidden_layers * reduce + gather, reduce, gather


# -- the runs ---------------------------------------------------------------------------------------


def check_tokens(full, shard, prompt, steps, log):
    """The tensor-parallel ntsym tokens against one device's ntsym and torch tokens; True if all equal."""
    llm.unpatch(full)
    torch_ref = generate(full, prompt, steps, graph=False, keep_logits=True)[1]
    llm.patch(full, llm.NtsymBackend())
    ntsym_ref = generate(full, prompt, steps, graph=False, keep_logits=True)[1]
    parallel = generate(shard, prompt, steps, graph=False, keep_logits=True)[1]
    log(f"| tokens of | compared with | greedy steps equal (of {steps}) | max abs logit diff | max abs logit |")
    log("|---|---|---:|---:|---:|")
    rows = {"tensor-parallel ntsym | ntsym, one device": llm.agreement(parallel, ntsym_ref),
            "tensor-parallel ntsym | torch, one device": llm.agreement(parallel, torch_ref)}
    one_device = {"ntsym, one device | torch, one device": llm.agreement(ntsym_ref, torch_ref)}
    for name, (agree, diff, top) in {**rows, **one_device}.items():
        log(f"| {name} | {agree} | {diff:.3g} | {top:.3g} |")
    log()
    return all(agree == steps for agree, _, _ in rows.values())


def tiny(log):
    """The tiny model: tensor-parallel tokens must equal torch's on one device."""
    with process_group() as (rank, world, device):
        dtype = torch.float32 if device.type == "cpu" else torch.float16
        full = llm.build_model(llm.tiny_config(), dtype, device)
        shard = patch_parallel(shard_model(full, rank, world), llm.NtsymBackend(), world)
        prompt = torch.randint(0, full.config.vocab_size, (BATCH, 8), generator=torch.Generator().manual_seed(1),
                               device="cpu")
        log = log if rank == 0 else (lambda *a, **k: None)
        log(f"tiny Llama, {world} rank(s) on {device}, {dtype}: 12 greedy tokens\n")
        ok = check_tokens(full, shard, prompt.to(device), 12, log)
        flags = torch.tensor([int(ok)], device=device)
        dist.all_reduce(flags, op=dist.ReduceOp.MIN)
        ok = bool(flags.item())
        log("all checks passed" if ok else "SOME CHECK FAILED")
    return 0 if ok else 1


def bench(args, log):
    from examples.llm.__main__ import environment, measured_bandwidth, weight_bytes

    with process_group() as (rank, world, device):
        if device.type != "cuda":
            raise SystemExit("the benchmark needs GPUs: use --tiny on the CPU")
        log = log if rank == 0 else (lambda *a, **k: None)
        began = time.perf_counter()
        dtype = torch.float16
        config = llm.llama_8b_config(num_hidden_layers=args.layers)
        full = llm.build_model(config, dtype, device)
        shard = patch_parallel(shard_model(full, rank, world), llm.NtsymBackend(), world)
        prompt = torch.randint(0, config.vocab_size, (BATCH, args.prompt), generator=torch.Generator().manual_seed(0),
                               device="cpu")
        prompt = prompt.to(device)
        devices = [None] * world
        dist.all_gather_object(devices, describe(device))
        log(f"# Llama ({args.layers} layers of the 8B architecture), random fp16 weights, batch {BATCH}, "
            f"{args.prompt}-token prompts, tensor-parallel over {world}\n")
        for r, text in enumerate(devices):
            log(f"- rank {r}: {text}")
        log(f"- {versions()}; `{environment()}`\n")

        log(f"(model built and sharded: {time.perf_counter() - began:.0f} s)\n")
        start = time.perf_counter()
        # Also the warm-up: tunes every kernel shape at the generation's cache length.
        check_tokens(full, shard, prompt, args.new_tokens, log)
        log(f"(warm-up and agreement: {time.perf_counter() - start:.0f} s)\n")

        graph = not args.no_graph
        parallel, _ = generate(shard, prompt, args.new_tokens, graph)
        one, _ = generate(full, prompt, args.new_tokens, graph)  # full is patched with ntsym by check_tokens
        rates = {"tensor-parallel": tokens_per_second(parallel, prompt, args.runs),
                 "one GPU": tokens_per_second(one, prompt, args.runs)}
        cached = args.prompt + args.new_tokens // 2
        steps = {"tensor-parallel": step_ms(parallel, cached), "one GPU": step_ms(one, cached)}
        bandwidth = measured_bandwidth()
        collectives, reduce, gather = collectives_ms(config, world, dtype, device)
        read = {"tensor-parallel": weight_bytes(shard)[1], "one GPU": weight_bytes(full)[1]}  # all but the embedding
        bounds = {"tensor-parallel": read["tensor-parallel"] / bandwidth * 1e3 + collectives,
                  "one GPU": read["one GPU"] / bandwidth * 1e3}
        how = "CUDA-graph replay" if graph else "eager"
        log(f"Generation of {args.new_tokens} tokens (mean of {args.runs}); decode step as a {how} with "
            f"{cached} cached positions. Bound: weights read per GPU (all but the embedding) at the device "
            f"copy bandwidth {bandwidth / 1e12:.2f} TB/s, plus, tensor-parallel, the step's collectives alone "
            f"(a CUDA graph of them): {2 * args.layers} all-reduces of ({BATCH}, 1, {config.hidden_size}) at {reduce * 1e3:.1f} µs "
            f"and one all-gather of the logits at {gather * 1e3:.1f} µs = {collectives:.3f} ms.\n")
        log("| variant | tokens/s | ms per step | weights read per GPU GB | bound ms | step / bound |")
        log("|---|---:|---:|---:|---:|---:|")
        for name in ("one GPU", "tensor-parallel"):
            log(f"| ntsym, {name} | {rates[name]:.1f} | {steps[name]:.3f} | {read[name] / 1e9:.2f} | "
                f"{bounds[name]:.3f} | {steps[name] / bounds[name]:.2f} |")
        log(f"\ntensor-parallel speedup: {rates['tensor-parallel'] / rates['one GPU']:.2f}× tokens/s, "
            f"{steps['one GPU'] / steps['tensor-parallel']:.2f}× per decode step")
        # The graphs hold captured collectives: release them before the group goes
        # (a generator refers to itself through its step function, so ``del`` is not enough).
        for generator in (parallel, one):
            if generator.graph is not None:
                generator.graph.reset()
                generator.graph = None
        del parallel, one
        gc.collect()
        torch.cuda.synchronize()
        barrier(device)
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="the tiny model: tokens checked against torch")
    parser.add_argument("--layers", type=int, default=32)
    parser.add_argument("--prompt", type=int, default=32)
    parser.add_argument("--new-tokens", type=int, default=128)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-graph", action="store_true", help="eager decode steps, no CUDA graph")
    args = parser.parse_args(argv)
    out = os.environ.get("OUT")
    path = os.path.join(out, "llm-parallel.md") if out else None

    def log(text=""):
        print(text, flush=True)
        if path:  # line by line: what was measured stays if a later step fails
            with open(path, "a") as f:
                f.write(text + "\n")

    if args.tiny:
        return tiny(log)
    code = bench(args, log)
    sys.stdout.flush()
    return code


if __name__ == "__main__":
    sys.exit(main())
