"""The NineToothed paper's end-to-end protocol (section 5.3.2) with ntsym's kernels.

The paper replaces four parts of a Llama model (DeepSeek-R1-Distill-Llama-8B)
with modules that call hand-written kernels, then times transformers'
``generate``: batch 2, 32-token prompts, 128, 512 and 2048 new tokens, one
warm-up and three measured generations, tokens per second.  Its modules:

- **Linear**: ``bmm(x, weight.T.unsqueeze(0).expand(batch, -1, -1))`` (every
  ``nn.Linear``, the LM head included);
- **RMSNorm**: a fused kernel of ``x``, the norm's weight and ``eps``;
- **SiLU**: the MLP's activation;
- **Attention**: the projections (Linear above), RoPE of q and k by a kernel,
  transformers' cache update, ``repeat_kv``, then the SDPA kernel (torch's
  where transformers passes an attention mask).

Here the same modules (written for this benchmark, on ``examples/``'s kernels)
run with three sets of kernels, each in the same process and model:

- ``torch``: ``torch.bmm``, ``F.rms_norm``, ``F.silu``, RoPE in torch
  operations, ``F.scaled_dot_product_attention`` (the paper's torch backend);
- ``ntsym``: ``examples.bmm``, ``examples.llm.kernels.rms_norm``,
  ``examples.silu``, ``examples.rope``, ``examples.sdpa``, each made by
  ``ntsym.make`` (tuned at their first call of each shape);
- ``ntsym-build``: the same, but the Linear's ``bmm`` from a library built
  ahead of time by ``ntsym.build`` over the model's five weight shapes and a
  list of block sizes, one winner per shape tuned at build time, as the
  paper's current kernels build theirs (the build is timed and reported).

Everything is eager: each module call launches its kernels from Python, as
in the paper.  tokens/s = batch x new tokens / wall time of a generation
(prefill included); the table also gives tokens/s per sequence.

    python -m benchmarks.paper_inference                  # GPU: the 8B architecture, random fp16 weights
    python -m benchmarks.paper_inference --tiny           # CPU or GPU: a 2-layer model, tokens against torch
    python -m benchmarks.paper_inference --lengths 128 --backends torch ntsym

With ``$OUT`` set the table also goes to ``$OUT/paper-inference.md``.
"""

import argparse
import datetime
import functools
import math
import os
import pathlib
import platform
import tempfile
import time
import types

import torch
import torch.nn.functional as F

import ntsym  # noqa: I001  (without a GPU, selects the interpreter before triton loads)
from examples import bmm as bmm_example
from examples import mm, rope as rope_example, sdpa as sdpa_example, silu as silu_example
from examples.llm import kernels as llm_kernels, model as llm

BATCH, PROMPT = 2, 32
BACKENDS = ("torch", "ntsym", "ntsym-build")


# -- The kernels of each backend --------------------------------------------------------------


def torch_rope(x, sin, cos):
    """Non-interleaved RoPE of ``x`` ``(B, S, H, D)`` with tables ``(S, D/2)``, in torch operations."""
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    sin, cos = sin[None, :, None, :], cos[None, :, None, :]
    return torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)


def torch_ops():
    return types.SimpleNamespace(
        bmm=torch.bmm, rms_norm=lambda x, w, eps: F.rms_norm(x, x.shape[-1:], w, eps), silu=F.silu,
        rope=torch_rope, sdpa=lambda q, k, v, is_causal, scale: F.scaled_dot_product_attention(
            q, k, v, is_causal=is_causal, scale=scale))


def ntsym_ops(bmm=None):
    return types.SimpleNamespace(
        bmm=bmm or bmm_example.bmm, rms_norm=llm_kernels.rms_norm, silu=silu_example.silu, rope=rope_example.rope,
        sdpa=lambda q, k, v, is_causal, scale: sdpa_example.sdpa(q, k, v, is_causal=is_causal, scale=scale))


# The library's configurations: the block sizes the paper's current bmm builds over, 4 warps, 3 stages.
BUILD_BLOCKS = [(m, n, k) for m in (16, 64) for n in (64, 128) for k in (32, 64)]


def _bmm_premake(k, n, BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K):
    arrangement = functools.partial(bmm_example.arrangement, BLOCK_SIZE_M=BLOCK_SIZE_M, BLOCK_SIZE_N=BLOCK_SIZE_N,
                                    BLOCK_SIZE_K=BLOCK_SIZE_K)
    batch = ({"upper_bound": 4}, None, None)  # the batch is small, as the paper declares it
    tensors = tuple(ntsym.Tensor(shape=shape, dtype=ntsym.float16, shape_options=batch)
                    for shape in ((None, None, k), (None, k, n), (None, None, n)))
    return arrangement, mm.application, tensors


def build_bmm(shapes, output_dir):
    """``bmm`` through a library built for the (K, N) ``shapes`` (fp16); the
    jit kernel for any other shape, as the paper's kernels fall back."""
    configs = [((), {"k": k, "n": n, "BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk},
                {"num_warps": 4, "num_stages": 3}) for k, n in shapes for bm, bn, bk in BUILD_BLOCKS]
    start = time.perf_counter()
    library = ntsym.build(_bmm_premake, configs, meta_parameters=("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K"),
                          kernel_name="paper_bmm", output_dir=output_dir)
    seconds = time.perf_counter() - start
    built = set(shapes)

    def bmm(lhs, rhs):
        output = torch.empty((lhs.shape[0], lhs.shape[1], rhs.shape[2]), dtype=lhs.dtype, device=lhs.device)
        k, n = rhs.shape[1], rhs.shape[2]
        if (k, n) in built and lhs.dtype == torch.float16:
            library(lhs, rhs, output, k, n)
        else:
            bmm_example.kernel(lhs, rhs, output)
        return output

    return bmm, seconds, library.tuned


# -- The paper's modules, as forwards patched onto transformers' Llama -----------------------------


def _linear_forward(ops):
    def forward(self, x):
        x3 = x if x.ndim == 3 else x.reshape(1, -1, x.shape[-1])
        y = ops.bmm(x3, self.weight.T.unsqueeze(0).expand(x3.shape[0], -1, -1))
        return y if x.ndim == 3 else y.reshape(*x.shape[:-1], -1)

    return forward


def _rms_norm_forward(ops):
    def forward(self, x):
        return ops.rms_norm(x, self.weight, self.variance_epsilon)

    return forward


def _silu_forward(ops):
    def forward(self, x):
        return ops.silu(x)

    return forward


def _attention_forward(ops, counts):
    from transformers.models.llama.modeling_llama import repeat_kv

    def forward(self, hidden_states, position_embeddings=None, attention_mask=None, **kwargs):
        cache = next((kwargs[k] for k in ("cache", "past_key_values", "past_key_value") if kwargs.get(k) is not None),
                     None)
        batch, length, _ = hidden_states.shape
        shape = (batch, length, -1, self.head_dim)
        q = self.q_proj(hidden_states).view(shape)
        k = self.k_proj(hidden_states).view(shape)
        v = self.v_proj(hidden_states).view(shape)
        cos, sin = position_embeddings  # (batch, length, head_dim), the halves repeated; positions shared
        half = self.head_dim // 2
        cos, sin = cos[0, :, :half].contiguous(), sin[0, :, :half].contiguous()
        q = ops.rope(q, sin, cos).transpose(1, 2)
        k = ops.rope(k, sin, cos).transpose(1, 2)
        v = v.transpose(1, 2)
        if cache is not None:
            k, v = cache.update(k, v, self.layer_idx)
        k = repeat_kv(k, self.num_key_value_groups)
        v = repeat_kv(v, self.num_key_value_groups)
        if attention_mask is None:
            counts["kernel"] += 1
            output = ops.sdpa(q, k, v, length > 1, self.scaling)
        else:  # as the paper's module: a mask goes to torch's SDPA
            counts["masked"] += 1
            output = F.scaled_dot_product_attention(q, k, v, attn_mask=attention_mask, scale=self.scaling)
        output = output.transpose(1, 2).reshape(batch, length, -1)
        return self.o_proj(output), None

    return forward


def patch(model, ops):
    """The paper's four replacements on ``model`` (instance forwards, which
    ``examples.llm.model.unpatch`` removes); returns the attention's counts
    of kernel and masked calls."""
    from transformers.models.llama.modeling_llama import LlamaAttention, LlamaMLP, LlamaRMSNorm

    counts = {"kernel": 0, "masked": 0}
    for module in model.modules():
        if isinstance(module, torch.nn.Linear):
            module.forward = types.MethodType(_linear_forward(ops), module)
        elif isinstance(module, LlamaRMSNorm):
            module.forward = types.MethodType(_rms_norm_forward(ops), module)
        elif isinstance(module, LlamaAttention):
            module.forward = types.MethodType(_attention_forward(ops, counts), module)
        elif isinstance(module, LlamaMLP):
            module.act_fn.forward = types.MethodType(_silu_forward(ops), module.act_fn)
    return counts


# -- Generation and timing -----------------------------------------------------------------------


def _sync():
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def generate(model, prompt, new_tokens):
    out = model.generate(input_ids=prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=new_tokens,
                         min_new_tokens=new_tokens, do_sample=False, pad_token_id=0)
    return out[:, prompt.shape[1]:]


def timed(model, prompt, new_tokens, runs):
    start = time.perf_counter()
    tokens = generate(model, prompt, new_tokens)
    _sync()
    warm = time.perf_counter() - start
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        tokens = generate(model, prompt, new_tokens)
        _sync()
        times.append(time.perf_counter() - start)
    return warm, times, tokens


def profile_decode(model, prompt, new_tokens=16, top=12):
    """Where a generation's decode steps go: device time per step of each
    kernel (torch profiler, over ``new_tokens`` steps of one generation, the
    prefill's kernels included), the kernels' total per step and the wall
    time per step (timed apart from the profiler, the same generation)."""
    from torch.profiler import ProfilerActivity, profile

    generate(model, prompt, new_tokens)
    _sync()
    start = time.perf_counter()
    generate(model, prompt, new_tokens)
    _sync()
    wall = (time.perf_counter() - start) / new_tokens
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        generate(model, prompt, new_tokens)
        _sync()
    rows = {}
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            row = rows.setdefault(event.name, [0, 0.0])
            row[0] += 1
            row[1] += event.device_time
    total = sum(r[1] for r in rows.values()) / new_tokens / 1e3
    table = sorted(((n, c / new_tokens, t / new_tokens / 1e3) for n, (c, t) in rows.items()), key=lambda r: -r[2])
    return wall * 1e3, total, table[:top]


def _environment():
    import transformers
    import triton

    gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU (Triton's interpreter)"
    return (f"{datetime.date.today()}, {gpu}, Python {platform.python_version()}, torch {torch.__version__}, "
            f"triton {triton.__version__}, transformers {transformers.__version__}, ntsym {ntsym.__version__}")


def bench(args):
    device, dtype = "cuda", torch.float16
    config = llm.llama_8b_config(args.layers)
    model = llm.build_model(config, dtype, device)
    model.generation_config.pad_token_id = 0
    prompt = torch.randint(0, config.vocab_size, (BATCH, PROMPT), device=device,
                           generator=torch.Generator(device).manual_seed(0))
    lines = [f"# The NineToothed paper's end-to-end protocol on ntsym\n", _environment() + "\n",
             f"Llama 8B architecture ({args.layers} layers), random fp16 weights, batch {BATCH}, {PROMPT}-token "
             f"prompts, transformers `generate` (greedy, eager), one warm-up and {args.runs} measured generations "
             "per row, all rows in one process.\n"]
    ops = {"torch": torch_ops, "ntsym": ntsym_ops}
    if "ntsym-build" in args.backends:
        shapes = sorted({(m.in_features, m.out_features) for m in model.modules()
                         if isinstance(m, torch.nn.Linear)})
        out_dir = pathlib.Path(args.build_dir or tempfile.mkdtemp(prefix="paper_bmm_"))
        bmm, seconds, tuned = build_bmm(shapes, out_dir)
        ops["ntsym-build"] = functools.partial(ntsym_ops, bmm)
        lines.append(f"`ntsym-build`: {len(shapes) * len(BUILD_BLOCKS)} configurations ({len(shapes)} weight shapes x "
                     f"{len(BUILD_BLOCKS)} block sizes), built and tuned in {seconds:.1f} s; the winners: "
                     + "; ".join(f"{key}: {value['meta']}" + (f" (small class: {value['small']['meta']})"
                                                               if "small" in value else "")
                                 for key, value in sorted(tuned.items())) + "\n")
    rows, reference = [], {}
    for new_tokens in args.lengths:
        for name in args.backends:
            llm.unpatch(model)
            counts = patch(model, ops[name]())
            warm, times, tokens = timed(model, prompt, new_tokens, args.runs)
            mean = sum(times) / len(times)
            reference.setdefault(new_tokens, tokens)
            same = int((tokens == reference[new_tokens]).all(dim=0).long().cumprod(0).sum())
            rows.append((new_tokens, name, BATCH * new_tokens / mean, new_tokens / mean, warm, times, same,
                         counts["masked"]))
            print(f"{new_tokens} tokens, {name}: {BATCH * new_tokens / mean:.1f} tokens/s "
                  f"({', '.join(f'{t:.2f}' for t in times)} s)", flush=True)
    llm.unpatch(model)
    lines.append("| new tokens | backend | tokens/s | tokens/s per sequence | vs torch | warm-up s | measured s | "
                 f"steps equal to {args.backends[0]}'s | masked attention calls |")
    lines.append("|---:|---|---:|---:|---:|---:|---|---:|---:|")
    base = {r[0]: r[2] for r in rows if r[1] == args.backends[0]}
    for new_tokens, name, rate, per_seq, warm, times, same, masked in rows:
        lines.append(f"| {new_tokens} | {name} | {rate:.1f} | {per_seq:.1f} | {rate / base[new_tokens]:.3f} | "
                     f"{warm:.1f} | {' / '.join(f'{t:.3f}' for t in times)} | {same} of {new_tokens} | {masked} |")
    profiled = []
    for name in args.backends if args.profile else ():
        patch(model, ops[name]())
        wall, kernels, table = profile_decode(model, prompt, args.profile)
        llm.unpatch(model)
        profiled.append(f"\n`{name}`, a generation of {args.profile} tokens: {wall:.2f} ms a step (wall), of which "
                        f"{kernels:.2f} ms of kernels (device time, prefill included)\n")
        profiled.append("| kernel | launches a step | ms a step |\n|---|---:|---:|")
        profiled += [f"| `{n[:90]}` | {c:.1f} | {t:.3f} |" for n, c, t in table]
    text = "\n".join(lines + profiled) + "\n"
    print(text)
    if os.environ.get("OUT"):
        pathlib.Path(os.environ["OUT"], "paper-inference.md").write_text(text)


def tiny(steps=4):
    """A 2-layer model in float32: the ntsym backend's tokens equal the torch
    backend's, and its logits agree; returns the tokens of both."""
    device = "cuda" if torch.cuda.is_available() else "cpu"
    config = llm.tiny_config()
    model = llm.build_model(config, torch.float32, device)
    prompt = torch.randint(0, config.vocab_size, (BATCH, 8), device=device,
                           generator=torch.Generator(device).manual_seed(0))
    results = {}
    for name, ops in (("torch", torch_ops), ("ntsym", ntsym_ops)):
        llm.unpatch(model)
        counts = patch(model, ops())
        results[name] = (generate(model, prompt, steps), dict(counts))
    llm.unpatch(model)
    results["transformers"] = (generate(model, prompt, steps), None)
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tiny", action="store_true", help="a 2-layer model: tokens of both backends")
    parser.add_argument("--lengths", type=int, nargs="+", default=[128, 512, 2048])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--layers", type=int, default=32)
    parser.add_argument("--build-dir", help="where ntsym-build's library goes (kept: a second run loads it)")
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="then each backend's kernels in a generation of N tokens (torch profiler)")
    parser.add_argument("--backends", nargs="+", default=list(BACKENDS), choices=BACKENDS)
    args = parser.parse_args()
    if args.tiny:
        for name, (tokens, counts) in tiny().items():
            print(name, tokens.tolist(), counts or "")
        return
    if not torch.cuda.is_available():
        raise SystemExit("the protocol needs a GPU; --tiny runs a small model anywhere")
    bench(args)


if __name__ == "__main__":
    main()
