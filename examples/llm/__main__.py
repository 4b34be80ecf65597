"""Greedy generation with a Llama model on ntsym kernels; tokens/s against torch and Triton.

    python -m examples.llm                  # tiny model (CPU or GPU): tokens equal to torch's, a short table
    python -m examples.llm --bench          # GPU: the 8B architecture, random fp16 weights (~16 GB)
    python -m examples.llm --bench --quick  # GPU: 4 layers, outputs of 32 and 128 tokens

``--bench``: batch 2 (``--batch``), 32-token prompts, outputs of 128, 512 and 2048 tokens,
for the variants ``torch`` (transformers eager, its default SDPA attention),
``compile`` (``torch.compile(mode="reduce-overhead")`` of the unmodified model's
decode step), ``triton`` (hand-written Triton kernels where they apply, decode
captured in a CUDA graph) and ``ntsym`` (ntsym kernels, decode captured in a CUDA
graph).  Each (variant, length): one warm-up generation (tuning, compilation,
graph capture), then ``--runs`` measured ones (3; the 2048-token output gets
``--long-runs``, 1 by default, to keep the whole run within 8 minutes).
tokens/s = batch * new tokens / wall time of a generation (prefill included).
Then: agreement of fp16 logits with torch, the decode step's time as a graph
replay against the weight-reading bound, and a torch-profiler breakdown of one
ntsym decode step by kernel.  Tables go to stdout and, with ``$OUT`` set, to
``$OUT/llm-bench.md`` and ``$OUT/llm-bench.json``.
"""

import argparse
import datetime
import json
import os
import platform
import time

import torch

import ntsym  # noqa: F401  (without a GPU, selects the interpreter before triton loads)
from examples.llm import model as llm

BATCH, PROMPT = 2, 32


def _sync():
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def _make_generator(model, variant, new_tokens, device):
    if variant in llm.BACKENDS:
        llm.patch(model, llm.BACKENDS[variant]())
    else:
        llm.unpatch(model)
    graph = device == "cuda" and variant in llm.BACKENDS
    generator = llm.Generator(model, BATCH, PROMPT, new_tokens, graph=graph)
    if variant == "compile":
        generator.step_fn = torch.compile(generator._forward, mode="reduce-overhead")
    return generator


def timed_generations(model, variant, new_tokens, prompt, runs, device):
    generator = _make_generator(model, variant, new_tokens, device)
    start = time.perf_counter()
    generator(prompt)
    _sync()
    warm = time.perf_counter() - start
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        tokens = generator(prompt)
        _sync()
        times.append(time.perf_counter() - start)
    return {"variant": variant, "new_tokens": new_tokens, "warmup_s": warm, "times_s": times,
            "tokens_per_s": BATCH * new_tokens / (sum(times) / len(times)), "tokens": tokens.tolist()}


def logits_agreement(model, variant, prompt, steps, reference):
    """Max |logits - torch's| over the steps before the first differing token, relative to max |logits|."""
    generator = _make_generator(model, variant, steps, prompt.device.type)
    generator.graph_wanted = False
    agree, diff, top = llm.agreement(generator(prompt, keep_logits=True), reference)
    return {"variant": variant, "steps_equal": agree, "steps": steps, "max_abs_diff": diff, "max_abs_logit": top}


def decode_step_time(model, variant, new_tokens, prompt, replays=40):
    """ms per decode step as a CUDA-graph replay, with the cache near ``PROMPT + new_tokens // 2``."""
    generator = _make_generator(model, variant, new_tokens, "cuda")
    generator(prompt)  # captures the graph
    # The timed steps see a cache of PROMPT + new_tokens // 2 valid positions and more.
    for layer in generator.cache.layers:
        layer.cumulative_length.fill_(PROMPT + new_tokens // 2)
    generator.positions.fill_(PROMPT + new_tokens // 2)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(replays):
        generator.graph.replay()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / replays, generator


def kernel_breakdown(generator, steps=5):
    """Device time per step of each kernel of the captured decode step (torch profiler)."""
    from torch.profiler import ProfilerActivity, profile

    def run(step):
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(steps):
                step()
            torch.cuda.synchronize()
        return [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]

    events = run(generator.graph.replay)
    if not events:  # kernels of graph replays not traced: the same step, launched eagerly
        events = run(generator._step)
    rows = {}
    for event in events:
        row = rows.setdefault(event.name, [0, 0.0])
        row[0] += 1
        row[1] += event.device_time
    total = sum(r[1] for r in rows.values()) / steps
    table = sorted(((n, c / steps, t / steps) for n, (c, t) in rows.items()), key=lambda r: -r[2])
    return table, total


def weight_bytes(model):
    every = sum(p.numel() * p.element_size() for p in model.parameters())
    embedding = model.model.embed_tokens.weight
    return every, every - embedding.numel() * embedding.element_size()


def measured_bandwidth(size=2**30):
    a = torch.empty(size, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    for _ in range(3):
        b.copy_(a)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(10):
        b.copy_(a)
    end.record()
    torch.cuda.synchronize()
    return 2 * size * 10 / (start.elapsed_time(end) / 1e3)  # bytes read + written per second


def environment():
    info = {"date": datetime.date.today().isoformat(), "python": platform.python_version(),
            "torch": torch.__version__}
    import triton
    import transformers

    info.update(triton=triton.__version__, transformers=transformers.__version__)
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name()
        try:
            import subprocess

            info["driver"] = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                            capture_output=True, text=True).stdout.strip()
        except OSError:
            info["driver"] = "unknown"
        info["cuda"] = torch.version.cuda
    return info


def bench(args):
    device = "cuda"
    layers = 4 if args.quick else args.layers
    lengths = [32, 128] if args.quick else args.lengths
    config = llm.llama_8b_config(num_hidden_layers=layers)
    model = llm.build_model(config, torch.float16, device)
    prompt = torch.randint(0, config.vocab_size, (BATCH, PROMPT), device=device,
                           generator=torch.Generator(device).manual_seed(0))
    every, read = weight_bytes(model)
    lines = [f"# Llama ({layers} layers of the 8B architecture), random fp16 weights, batch {BATCH}, "
             f"{PROMPT}-token prompts", "", "`" + json.dumps(environment()) + "`", ""]
    results = {"environment": environment(), "layers": layers, "weights_bytes": every,
               "weights_read_per_step_bytes": read, "generations": [], "agreement": [], "decode": {}}

    def emit(text=""):
        print(text, flush=True)
        lines.append(text)

    emit("| variant | " + " | ".join(f"{n} tokens: tokens/s" for n in lengths) + " | warm-up s (first length) |")
    emit("|---|" + "---:|" * (len(lengths) + 1))
    for variant in args.variants:
        row = []
        for n in lengths:
            runs = args.long_runs if n >= 2048 else args.runs
            try:
                result = timed_generations(model, variant, n, prompt, runs, device)
            except Exception as error:  # a variant that cannot run is reported, the others go on
                row.append(f"failed: {type(error).__name__}: {str(error)[:120]}")
                continue
            results["generations"].append(result)
            row.append(f"{result['tokens_per_s']:.1f} ({len(result['times_s'])} runs)")
            torch.cuda.empty_cache()
        warm = next((r["warmup_s"] for r in results["generations"] if r["variant"] == variant), float("nan"))
        emit(f"| {variant} | " + " | ".join(row) + f" | {warm:.1f} |")
        torch._dynamo.reset()
    emit()

    # fp16 agreement with torch: logits before the first differing greedy token.
    emit("| variant | greedy steps equal to torch's (of 32) | max abs logit diff | max abs logit |")
    emit("|---|---:|---:|---:|")
    llm.unpatch(model)
    reference = llm.Generator(model, BATCH, PROMPT, 32)(prompt, keep_logits=True)
    for variant in [v for v in args.variants if v in llm.BACKENDS]:
        a = logits_agreement(model, variant, prompt, 32, reference)
        results["agreement"].append(a)
        emit(f"| {variant} | {a['steps_equal']} | {a['max_abs_diff']:.3g} | {a['max_abs_logit']:.3g} |")
    emit()

    bandwidth = measured_bandwidth()
    n = lengths[-1] if args.quick else 512
    emit(f"Decode step as a CUDA-graph replay, cache at {PROMPT + n // 2} positions; weights read per step "
         f"{read / 1e9:.2f} GB (all {every / 1e9:.2f} GB but the embedding), device copy bandwidth "
         f"{bandwidth / 1e12:.2f} TB/s, bound {read / bandwidth * 1e3:.2f} ms")
    emit()
    emit(f"| variant | ms per step | tokens/s (batch {BATCH}) | step / bound |")
    emit("|---|---:|---:|---:|")
    kept = None
    for variant in [v for v in args.variants if v in llm.BACKENDS]:
        ms, generator = decode_step_time(model, variant, n, prompt)
        results["decode"][variant] = ms
        emit(f"| {variant} | {ms:.3f} | {BATCH * 1e3 / ms:.1f} | {ms / (read / bandwidth * 1e3):.2f} |")
        if variant == "ntsym":
            kept = generator
    emit()
    if kept is not None:
        try:
            table, total = kernel_breakdown(kept)
        except Exception as error:
            emit(f"kernel breakdown failed: {type(error).__name__}: {error}")
            table, total = [], 0.0
    if kept is not None and total:
        emit(f"ntsym decode step by kernel (device time per step, total {total / 1e3:.3f} ms):")
        emit()
        emit("| kernel | launches per step | µs per step | share |")
        emit("|---|---:|---:|---:|")
        for name, calls, t in table[:25]:
            emit(f"| `{name[:70]}` | {calls:.0f} | {t:.1f} | {100 * t / total:.1f} % |")
        results["breakdown"] = [{"kernel": name, "calls": c, "us": t} for name, c, t in table]
    out = os.environ.get("OUT")
    if out:
        with open(os.path.join(out, "llm-bench.md"), "w") as f:
            f.write("\n".join(lines) + "\n")
        with open(os.path.join(out, "llm-bench.json"), "w") as f:
            json.dump(results, f, indent=1)


def tiny(args):
    device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = torch.float16 if device == "cuda" else torch.float32
    model = llm.build_model(llm.tiny_config(), dtype, device)
    prompt = torch.randint(0, 256, (BATCH, 8), device=device, generator=torch.Generator(device).manual_seed(1))
    llm.unpatch(model)
    print(f"tiny Llama on {device}, {dtype}: 16 greedy tokens", flush=True)
    if device == "cpu":
        print("(kernels run through Triton's interpreter: the first run of each variant takes minutes, "
              "and tokens/s are the interpreter's, not a GPU's)", flush=True)
    reference, ref_logits = llm.Generator(model, BATCH, 8, 16)(prompt, keep_logits=True)
    rows = []
    for variant in ("torch", "ntsym", "triton"):
        print(f"running {variant} ...", flush=True)
        generator = _make_generator(model, variant, 16, device)
        generator.graph_wanted = False
        tokens, logits = generator(prompt, keep_logits=True)
        _sync()
        start = time.perf_counter()
        generator(prompt)
        _sync()
        rate = BATCH * 16 / (time.perf_counter() - start)
        diff = (logits - ref_logits).abs().max().item()
        rows.append(f"| {variant} | {bool(torch.equal(tokens, reference))} | {diff:.3g} | {rate:.1f} |")
    print("| variant | tokens equal to torch's | max abs logit diff | tokens/s (2nd run) |")
    print("|---|---|---:|---:|")
    print("\n".join(rows))


def main():
    global BATCH
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bench", action="store_true", help="the 8B architecture on a GPU")
    parser.add_argument("--quick", action="store_true", help="with --bench: 4 layers, outputs of 32 and 128 tokens")
    parser.add_argument("--layers", type=int, default=32)
    parser.add_argument("--lengths", type=int, nargs="+", default=[128, 512, 2048])
    parser.add_argument("--runs", type=int, default=3, help="measured generations per length")
    parser.add_argument("--long-runs", type=int, default=1, help="measured generations of 2048 tokens or more")
    parser.add_argument("--variants", nargs="+", default=["torch", "compile", "triton", "ntsym"],
                        choices=["torch", "compile", "triton", "ntsym", "ntsym-norms", "ntsym-store", "ntsym-split"])
    parser.add_argument("--batch", type=int, default=BATCH, help="with --bench: sequences generated together")
    args = parser.parse_args()
    BATCH = args.batch
    if args.bench:
        if not torch.cuda.is_available():
            raise SystemExit("--bench needs a CUDA device")
        bench(args)
    else:
        tiny(args)


if __name__ == "__main__":
    main()
