"""Where does the host time of the NineToothed paper's eager protocol go?
The 8B Llama architecture with ``LAYERS`` layers (random fp16 weights, batch
2, 32-token prompts), the paper's modules on the ``torch`` and the ``ntsym``
kernels (``benchmarks.paper_inference``), one backend after the other: a
warm-up generation of 32 tokens, two timed ones (ms a token), then a
cProfile of a third (functions by own time); last, how many call shapes the
example ``bmm`` kernel remembers and how many have an express launch.

    python -m benchmarks.lab.protocol_profile [LAYERS]     # default 32
"""

import cProfile
import io
import pstats
import sys
import time

import torch
import ntsym  # noqa: F401  (before triton)
from benchmarks import paper_inference as P
from examples import bmm as B
from examples.llm import model as llm

layers = int(sys.argv[1]) if len(sys.argv) > 1 else 32
tokens = 32
config = llm.llama_8b_config(layers)
model = llm.build_model(config, torch.float16, "cuda")
model.generation_config.pad_token_id = 0
prompt = torch.randint(0, config.vocab_size, (P.BATCH, P.PROMPT), device="cuda",
                       generator=torch.Generator("cuda").manual_seed(0))
for name, ops in (("torch", P.torch_ops), ("ntsym", P.ntsym_ops)):
    llm.unpatch(model)
    P.patch(model, ops())
    start = time.perf_counter()
    P.generate(model, prompt, tokens)
    torch.cuda.synchronize()
    print(name, "warm-up", round(time.perf_counter() - start, 1), "s", flush=True)
    for _ in range(2):
        start = time.perf_counter()
        P.generate(model, prompt, tokens)
        torch.cuda.synchronize()
        print(name, "generation", round((time.perf_counter() - start) / tokens * 1e3, 2), "ms a token", flush=True)
    profile = cProfile.Profile()
    profile.enable()
    P.generate(model, prompt, tokens)
    torch.cuda.synchronize()
    profile.disable()
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(28)
    print(text.getvalue())
quick = B.kernel.calls.quick
print("bmm call shapes remembered", len(quick), "with an express launch", sum(q.express is not None for q in quick),
      "validated", B.kernel.calls.checked_launches, "through the JIT", B.kernel.calls.jit_launches)
