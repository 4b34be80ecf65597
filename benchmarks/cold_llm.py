"""The Llama example's generation, cold: how long until the first token when
nothing is compiled or tuned yet.

    python -m benchmarks.cold_llm                 # GPU: the 8B architecture, random fp16 weights
    python -m benchmarks.cold_llm --layers 4      # fewer layers (the same kernels and shapes)
    python -m benchmarks.cold_llm --tiny          # CPU or GPU: the tiny model (a check that it runs)

The process starts with empty ntsym and Triton caches (``NTSYM_CACHE_DIR`` and
``TRITON_CACHE_DIR`` in a temporary folder, set before ntsym loads) and the
default tuning (``NTSYM_TUNE`` unset: size classes' shortlists).  The model of
``examples/llm`` is built (random weights; not timed as part of the first token),
patched with its ntsym kernels (rms_norm, RoPE, attention, the linear layers'
products, silu-and-mul: the kernels are written the NineToothed way), then, for
batch 2 and a 32-token prompt, each synchronised and timed:

- the first token: the prefill forward and its argmax, cold (every kernel of
  the prefill compiled and tuned here);
- the second token: the first decode step, cold (the decode shapes' kernels);
- the rest of a ``--new-tokens`` generation, with the decode step captured in a
  CUDA graph on a GPU (the Generator of the example);
- the same generation again, warm, for comparison.

With each: ntsym's counters (Triton compiles, tuning searches, candidates
timed).  A table to stdout and, with ``$OUT`` set, ``$OUT/cold-llm.md``.
"""

import argparse
import os
import sys
import tempfile
import time


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=32)
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--tiny", action="store_true", help="the tiny model")
    parser.add_argument("--keep-caches", action="store_true", help="use the caches already set (a warm start)")
    args = parser.parse_args(argv)

    tmp = None
    if not args.keep_caches:
        tmp = tempfile.TemporaryDirectory(prefix="cold_llm_")
        os.environ["NTSYM_CACHE_DIR"] = os.path.join(tmp.name, "ntsym")
        os.environ["TRITON_CACHE_DIR"] = os.path.join(tmp.name, "triton")
    process_start = time.perf_counter()

    import torch

    import ntsym
    from examples.llm import model as llm

    cuda = torch.cuda.is_available()
    device = "cuda" if cuda else "cpu"
    dtype = torch.float16 if cuda else torch.float32
    out = os.environ.get("OUT")
    lines = []

    def log(text=""):
        print(text, flush=True)
        lines.append(text)
        if out:
            with open(os.path.join(out, "cold-llm.md"), "w") as f:
                f.write("\n".join(lines) + "\n")

    def sync():
        if cuda:
            torch.cuda.synchronize()

    config = llm.tiny_config() if args.tiny else llm.llama_8b_config(num_hidden_layers=args.layers)
    start = time.perf_counter()
    model = llm.build_model(config, dtype, device)
    sync()
    built = time.perf_counter() - start
    batch, prompt_len = 2, 32 if not args.tiny else 8
    prompt = torch.randint(0, config.vocab_size, (batch, prompt_len), device=device,
                           generator=torch.Generator(device=device).manual_seed(0))
    name = "tiny Llama" if args.tiny else f"Llama-8B architecture, {args.layers} layers"
    gpu = torch.cuda.get_device_name() if cuda else "CPU (Triton interpreter)"
    log(f"# Cold first token: {name}, random {str(dtype).removeprefix('torch.')} weights, batch {batch}, "
        f"{prompt_len}-token prompt\n")
    log(f"{gpu}; torch {torch.__version__}, triton {_version('triton')}, ntsym {ntsym.__version__}; "
        f"NTSYM_TUNE={os.environ.get('NTSYM_TUNE', '(default: shortlist)')}; caches "
        f"{'as set' if args.keep_caches else 'empty (fresh temporary folders)'}\n")
    log(f"process start to model built: {time.perf_counter() - process_start:.1f} s "
        f"(building the model: {built:.1f} s, not counted below)\n")

    rows = []

    def timed(what, fn):
        before = ntsym.stats()
        sync()
        begin = time.perf_counter()
        result = fn()
        sync()
        seconds = time.perf_counter() - begin
        spent = ntsym.stats() - before
        rows.append((what, seconds, spent))
        return result

    llm.patch(model, llm.NtsymBackend())
    graph = cuda
    generator = llm.Generator(model, batch, prompt_len, args.new_tokens, graph=graph)
    cache = generator.cache
    positions = torch.arange(prompt_len, device=device).expand(batch, -1)
    kwargs = generator._kwargs()

    def prefill():
        with torch.no_grad():
            cache.reset()
            logits = model(input_ids=prompt, position_ids=positions, cache=cache, use_cache=True,
                           logits_to_keep=1, **kwargs).logits[:, -1]
        generator.ids.copy_(logits.argmax(-1, keepdim=True))
        generator.positions.fill_(prompt_len)
        return generator.ids.clone()

    def decode_step():
        with torch.no_grad():
            generator._step()
        return generator.ids.clone()

    first = timed("first token (prefill), cold", prefill)
    timed("second token (first decode step), cold", decode_step)
    tokens = timed(f"a whole generation of {args.new_tokens} tokens"
                   f"{' (decode in a CUDA graph)' if graph else ''}, right after", lambda: generator(prompt))
    again = timed("the same generation, warm", lambda: generator(prompt))
    total_first = rows[0][1]

    log("| step | wall s | Triton compiles | tuning searches | candidates timed |")
    log("|---|---:|---:|---:|---:|")
    for what, seconds, spent in rows:
        log(f"| {what} | {seconds:.2f} | {spent.compiles} | {spent.tunes} | {spent.candidates_timed} |")
    log()
    whole = ntsym.stats()
    log(f"first token after {total_first:.1f} s; first two tokens after {rows[0][1] + rows[1][1]:.1f} s; "
        f"in all {whole.compiles} compiles, {whole.tunes} tuning searches, {whole.candidates_timed} candidates timed")
    same = torch.equal(tokens, again) and torch.equal(tokens[:, :1], first)
    log(f"the cold and warm generations give the same tokens: {'yes' if same else 'NO'}")
    if tmp is not None:
        tmp.cleanup()
    return 0 if same else 1


def _version(package):
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return "?"


if __name__ == "__main__":
    sys.exit(main())
