"""``transformers``' Llama with its kernels replaced, and one greedy decode loop for every variant.

``patch(model, backend)`` replaces, on the instances, the forward of every
``LlamaRMSNorm``, ``LlamaAttention`` (projections, RoPE, the cache update,
attention), ``LlamaMLP`` (fused SiLU-and-multiply) and bias-free ``nn.Linear``
(the projections and ``lm_head``) by calls of ``backend``: ``NTSYM`` (the ntsym
kernels of ``examples/llm/kernels.py``) or ``TRITON`` (the hand-written Triton
kernels of ``benchmarks/triton_baselines.py`` where they apply).  ``unpatch``
restores the model.  The embedding and the RoPE tables stay ``transformers``'
torch code in every variant; the residual additions (in the output projections'
products) and the greedy loop's argmax are the ntsym backend's, torch's for the
Triton one.

What the patched attention assumes (the loop below keeps to it): a
``StaticCache``; a prompt (more than one token) fills the empty cache and
attends causally to itself; a single token attends to the cache's valid
positions, counted on the device by the cache itself; all sequences of the
batch are at the same positions, with no padding (the 4-D ``attention_mask``
the loop passes only tells ``transformers`` not to build a mask).

``Generator`` is the greedy loop: prefill, then one decode step per token with
a static KV cache, optionally captured once as a CUDA graph and replayed (the
step writes its argmax into the next step's input and advances the positions on
the device, so replays need nothing from the host).
"""

import types

import torch
from torch import nn


def llama_8b_config(num_hidden_layers=32):
    """DeepSeek-R1-Distill-Llama-8B's architecture (Llama 3.1 8B)."""
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=128256,
        hidden_size=4096,
        intermediate_size=14336,
        num_hidden_layers=num_hidden_layers,
        num_attention_heads=32,
        num_key_value_heads=8,
        head_dim=128,
        hidden_act="silu",
        max_position_embeddings=131072,
        rms_norm_eps=1e-5,
        rope_parameters={
            "rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
            "high_freq_factor": 4.0, "original_max_position_embeddings": 8192,
        },
        tie_word_embeddings=False,
        attention_bias=False,
        mlp_bias=False,
    )


def tiny_config():
    """2 layers, hidden 64, 4 heads, 2 key/value heads: the CPU check's model."""
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=256, rms_norm_eps=1e-5,
        rope_parameters={"rope_type": "default", "rope_theta": 500000.0}, tie_word_embeddings=False,
    )


def build_model(config, dtype, device, seed=0):
    """``LlamaForCausalLM`` with random weights, created directly on ``device`` in ``dtype``."""
    from transformers import LlamaForCausalLM

    device = torch.device(device)
    default = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    # The seed is the model's own: the caller's random state is left as it was.
    with torch.random.fork_rng(devices=[device.index or 0] if device.type == "cuda" else []):
        torch.manual_seed(seed)
        try:
            with torch.device(device):
                model = LlamaForCausalLM(config)
        finally:
            torch.set_default_dtype(default)
    return model.eval().requires_grad_(False)


# -- Backends -------------------------------------------------------------------------------


class NtsymBackend:
    name = "ntsym"
    fuse = True  # one product for q, k, v and one for gate, up (see ``fuse_projections``)
    residual = True  # the residual additions in the output projections' products (``linear_add``)

    def __init__(self):
        from examples.llm import kernels

        self.k = kernels

    def rms_norm(self, x, weight, eps):
        return self.k.rms_norm(x, weight, eps)

    def rope(self, x, cos, sin):
        return self.k.rope(x, cos, sin)

    def prefill_attention(self, q, k, v, scale):
        return self.k.prefill_attention(q, k, v, scale)

    def decode_attention(self, q, k_cache, v_cache, length, scale, pending=0):
        return self.k.decode_attention(q, k_cache, v_cache, length, scale, pending=pending)

    def linear(self, x, weight):
        return self.k.linear(x, weight)

    def linear_add(self, x, weight, addend):
        return self.k.linear_add(x, weight, addend)

    def rope_and_store(self, q, k, v, cos, sin, keys, values, position):
        return self.k.rope_and_store(q, k, v, cos, sin, keys, values, position)

    def silu_and_mul(self, gate, up):
        return self.k.silu_and_mul(gate, up)

    def linear_swiglu(self, x, gate_up, size):
        return self.k.linear_swiglu(x, gate_up, size)

    def argmax(self, logits, out):
        return self.k.argmax(logits, out)

    def rope_tables(self, position_ids, inv_freq, scaling, dtype):
        return self.k.rope_tables(position_ids, inv_freq, scaling, dtype)

    # The decoder layers' RMSNorms folded into the decode products around them
    # (examples/llm/kernels.py, "RMSNorm folded into the decode products").
    fold_norms = True

    def foldable(self, x, norm_weight):
        return self.k.foldable(x, norm_weight)

    def row_squares(self, x, norm_weight):
        return self.k.row_squares(x, norm_weight)

    def linear_add_squares(self, x, weight, addend, norm_weight):
        return self.k.linear_add_squares(x, weight, addend, norm_weight)

    def linear_normed(self, normed, squares, eps, weight):
        return self.k.linear_normed(normed, squares, eps, weight)

    def linear_swiglu_normed(self, normed, squares, eps, gate_up, size):
        return self.k.linear_swiglu_normed(normed, squares, eps, gate_up, size)

    # A decode step's q/k/v product with the rotation and the cache store in its
    # epilogue (examples/llm/qkv_store.py), where the norm is folded into it.
    def qkv_store(self, normed, squares, eps, qkv_weight, cos, sin, keys, values, position, heads):
        from examples.llm import qkv_store

        return qkv_store.qkv_store(normed, squares, eps, qkv_weight, cos, sin, keys, values, position, heads)


class NtsymNormsBackend(NtsymBackend):
    """``NtsymBackend`` with each RMSNorm a kernel of its own (for comparison)."""

    name = "ntsym-norms"
    fold_norms = False


class NtsymStoreBackend(NtsymBackend):
    """``NtsymBackend`` with the q/k/v product and the rotate-and-store kernel
    apart (for comparison)."""

    name = "ntsym-store"
    qkv_store = None


class NtsymSplitBackend(NtsymBackend):
    """``NtsymBackend`` with the decode attention split over the cache at every
    cache length, then combined (for comparison)."""

    name = "ntsym-split"

    def decode_attention(self, q, k_cache, v_cache, length, scale, pending=0):
        return self.k.decode_attention(q, k_cache, v_cache, length, scale, pending=pending, unsplit_up_to=0)


class TritonBackend:
    """The hand-written Triton kernels where one applies, torch where none does.

    RMSNorm (the weight multiplied by torch), RoPE (tables of one sequence: the
    loop keeps all sequences at the same positions), causal prefill attention
    (key/value heads repeated for the query heads), linear layers (the tuned
    GEMM), SiLU (the multiplication by torch).  Decode attention has no
    hand-written kernel: torch's ``scaled_dot_product_attention`` with a mask of
    the cache's valid positions.
    """

    name = "triton"

    def __init__(self):
        from benchmarks import triton_baselines

        self.t = triton_baselines

    def rms_norm(self, x, weight, eps):
        return weight * self.t.rms_norm(x, eps)

    def rope(self, x, cos, sin):
        half = x.shape[-1] // 2
        return self.t.rope(x, sin[0, :, :half], cos[0, :, :half])

    def prefill_attention(self, q, k, v, scale):
        groups = q.shape[1] // k.shape[1]
        k, v = k.repeat_interleave(groups, 1), v.repeat_interleave(groups, 1)
        return self.t.sdpa(q, k, v, is_causal=True, scale=scale)

    def decode_attention(self, q, k_cache, v_cache, length, scale):
        valid = torch.arange(k_cache.shape[2], device=q.device) < length.reshape(1)
        return nn.functional.scaled_dot_product_attention(
            q, k_cache, v_cache, attn_mask=valid.view(1, 1, 1, -1), scale=scale, enable_gqa=True)

    def linear(self, x, weight):
        return self.t.mm(x.reshape(-1, x.shape[-1]), weight.t()).view(*x.shape[:-1], weight.shape[0])

    def silu_and_mul(self, gate, up):
        return self.t.silu(gate) * up


BACKENDS = {"ntsym": NtsymBackend, "ntsym-norms": NtsymNormsBackend, "ntsym-store": NtsymStoreBackend,
            "ntsym-split": NtsymSplitBackend, "triton": TritonBackend}


# -- Patching ---------------------------------------------------------------------------------


def _rms_norm_forward(backend):
    def forward(self, hidden_states):
        return backend.rms_norm(hidden_states, self.weight, self.variance_epsilon)

    return forward


def _rotary_forward(backend):
    """transformers' ``LlamaRotaryEmbedding`` (a static ``inv_freq``: the rope
    types that do not update it) as one kernel, where torch takes about eight."""

    def forward(self, x, position_ids):
        return backend.rope_tables(position_ids, self.inv_freq, self.attention_scaling, x.dtype)

    return forward


def _linear_forward(backend):
    def forward(self, x):
        return backend.linear(x, self.weight)

    return forward


def _projected(backend, projection, x, residual, fold_next=None):
    """``projection(x)``, plus ``residual`` where given: added by the product
    itself (``backend.linear_add``).  With ``fold_next`` (the next RMSNorm's
    weight): ``(sum, (normed, squares))``, the next norm's operands written by
    the same product (``backend.linear_add_squares``)."""
    if fold_next is not None:
        output, normed, squares = backend.linear_add_squares(x, projection.weight, residual, fold_next)
        return output, (normed, squares)
    if residual is None:
        return projection(x)
    return backend.linear_add(x, projection.weight, residual)


def _normed_product(backend, x, weight, folded):
    """``x @ weight.T``; with ``folded`` ``(squares, eps)``, ``x`` is a norm's
    ``w * h`` and the product that of ``rms_norm(h, w, eps)``."""
    if folded is None:
        return backend.linear(x, weight)
    return backend.linear_normed(x, folded[0], folded[1], weight)


def _mlp_forward(backend):
    def forward(self, x, residual=None, folded=None, fold_next=None):
        fused = self.__dict__.get("gate_up_weight")
        size = self.gate_proj.weight.shape[0]
        if folded is not None:  # x is the norm's w * h; folded: (squares, eps)
            if fused is None:
                gate = _normed_product(backend, x, self.gate_proj.weight, folded)
                hidden = backend.silu_and_mul(gate, _normed_product(backend, x, self.up_proj.weight, folded))
            else:
                hidden = backend.linear_swiglu_normed(x, folded[0], folded[1], fused, size)
        elif fused is None:
            hidden = backend.silu_and_mul(self.gate_proj(x), self.up_proj(x))
        elif hasattr(backend, "linear_swiglu"):  # SiLU-and-multiply in the product's epilogue
            hidden = backend.linear_swiglu(x, fused, size)
        else:
            gate_up = backend.linear(x, fused)
            hidden = backend.silu_and_mul(gate_up[..., :size], gate_up[..., size:])
        return _projected(backend, self.down_proj, hidden, residual, fold_next)

    return forward


def _take_folded(layer, hidden_states):
    """The ``(normed, squares)`` the previous layer's last product wrote for
    this layer's input norm, if ``hidden_states`` is that product's output,
    unchanged since."""
    entry = layer.__dict__.pop("folded_input", None)
    if entry is None:
        return None
    output, version, operands = entry
    if output is not hidden_states or output._version != version:
        return None
    return operands


def _decoder_layer_forward(backend):
    """transformers' Llama decoder layer with its two residual additions made
    by the output projections' products (``residual=`` to the patched
    attention and MLP), so that no kernel of its own adds them.  With
    ``backend.fold_norms``, a decode step's two RMSNorms are folded into the
    products around them: the products writing the residual stream also write
    the next norm's operands (``w * h`` and the squares of ``h``), the products
    reading the norm scale their results (one small kernel makes the first
    layer's operands from the embeddings; the model's final norm stays)."""

    def forward(self, hidden_states, attention_mask=None, position_ids=None, cache=None, use_cache=False,
                position_embeddings=None, **kwargs):
        first, second = self.input_layernorm, self.post_attention_layernorm
        if not (getattr(backend, "fold_norms", False) and backend.foldable(hidden_states, first.weight)
                and backend.foldable(hidden_states, second.weight)):
            hidden_states, _ = self.self_attn(
                hidden_states=first(hidden_states), attention_mask=attention_mask,
                position_ids=position_ids, cache=cache, use_cache=use_cache,
                position_embeddings=position_embeddings, residual=hidden_states, **kwargs)
            return self.mlp(second(hidden_states), residual=hidden_states)
        operands = _take_folded(self, hidden_states)
        if operands is None:
            operands = backend.row_squares(hidden_states, first.weight)
        normed, squares = operands
        hidden_states, (normed, squares) = self.self_attn(
            hidden_states=normed, attention_mask=attention_mask, position_ids=position_ids, cache=cache,
            use_cache=use_cache, position_embeddings=position_embeddings, residual=hidden_states,
            folded=(squares, first.variance_epsilon), fold_next=second.weight, **kwargs)
        following = self.__dict__.get("next_layer")
        folded = (squares, second.variance_epsilon)
        if following is None or not backend.foldable(hidden_states, following.input_layernorm.weight):
            return self.mlp(normed, residual=hidden_states, folded=folded)
        output, operands = self.mlp(normed, residual=hidden_states, folded=folded,
                                    fold_next=following.input_layernorm.weight)
        following.__dict__["folded_input"] = (output, output._version, operands)
        return output

    return forward


def _attention_forward(backend):
    def forward(self, hidden_states, position_embeddings=None, attention_mask=None, cache=None, residual=None,
                folded=None, fold_next=None, **kwargs):
        if cache is None or not hasattr(cache.layers[self.layer_idx], "cumulative_length"):
            raise ValueError("the patched Llama attention needs a StaticCache (see examples/llm/model.py)")
        batch, length, _ = hidden_states.shape
        fused = self.__dict__.get("qkv_weight")
        layer = cache.layers[self.layer_idx]
        if length == 1 and folded is not None and fused is not None and getattr(backend, "qkv_store", None) \
                and getattr(layer, "is_initialized", False) and layer.keys.dtype == hidden_states.dtype:
            # One kernel: the product, the rotation of q and k, k and v into the cache.
            cos, sin = position_embeddings
            q = backend.qkv_store(hidden_states, folded[0], folded[1], fused, cos, sin, layer.keys, layer.values,
                                  layer.cumulative_length, self.q_proj.weight.shape[0] // self.head_dim)
            output = backend.decode_attention(q.transpose(1, 2), layer.keys, layer.values, layer.cumulative_length,
                                              self.scaling, pending=1)
            _advance(cache, self.layer_idx)
            return _attended(backend, self, output, residual, fold_next)
        if fused is None:
            q, k, v = (_normed_product(backend, hidden_states, p.weight, folded)
                       for p in (self.q_proj, self.k_proj, self.v_proj))
        else:  # column views of one product
            qkv = _normed_product(backend, hidden_states, fused, folded)
            nq, nk = self.q_proj.weight.shape[0], self.k_proj.weight.shape[0]
            q, k, v = qkv[..., :nq], qkv[..., nq:nq + nk], qkv[..., nq + nk:]
        q = q.view(batch, length, -1, self.head_dim)
        k = k.view(batch, length, -1, self.head_dim)
        v = v.view(batch, length, -1, self.head_dim)
        cos, sin = position_embeddings
        if length == 1 and getattr(layer, "is_initialized", False) and hasattr(backend, "rope_and_store"):
            # One kernel rotates q and k and stores k and v at the cache's
            # length, then the length moves on, as the cache's own update does.
            q = backend.rope_and_store(q, k, v, cos, sin, layer.keys, layer.values,
                                       layer.cumulative_length).transpose(1, 2)
            output = backend.decode_attention(q, layer.keys, layer.values, layer.cumulative_length, self.scaling,
                                              pending=1)
            _advance(cache, self.layer_idx)
        else:
            q = backend.rope(q, cos, sin).transpose(1, 2)
            k = backend.rope(k, cos, sin).transpose(1, 2)
            v = v.transpose(1, 2)
            keys, values = cache.update(k, v, self.layer_idx)
            if length > 1:  # a prompt, into the empty cache
                output = backend.prefill_attention(q, k, v, self.scaling)
            else:
                output = backend.decode_attention(q, keys, values, layer.cumulative_length, self.scaling)
        return _attended(backend, self, output, residual, fold_next)

    return forward


def _attended(backend, attention, output, residual, fold_next):
    """The attention's result ``(B, H, S, D)`` through its output projection (and
    the residual, and the next norm's operands where ``fold_next``)."""
    batch, _, length, _ = output.shape
    output = output.transpose(1, 2).reshape(batch, length, -1)
    if fold_next is not None:
        return _projected(backend, attention.o_proj, output, residual, fold_next)
    return _projected(backend, attention.o_proj, output, residual), None


def share_lengths(cache):
    """Make every layer's length (``cumulative_length``, a 0-d tensor once the
    cache is initialised) an element of one tensor, ``cache.shared_lengths``,
    so that the patched attention advances all of them with one addition a
    decode step (``_advance``) instead of one per layer.  Their values and
    the cache's own updates are unchanged (in-place updates of the views)."""
    if getattr(cache, "shared_lengths", None) is not None:
        return
    layers = cache.layers
    if not all(getattr(layer, "is_initialized", False) for layer in layers):
        return
    shared = torch.stack([layer.cumulative_length for layer in layers])
    for i, layer in enumerate(layers):
        layer.cumulative_length = shared[i]
    cache.shared_lengths = shared


def _advance(cache, layer_idx):
    """A decode step's token is in layer ``layer_idx``'s cache: count it.  With
    shared lengths, the last layer (the last to read them) advances them all."""
    shared = getattr(cache, "shared_lengths", None)
    if shared is None:
        cache.layers[layer_idx].cumulative_length.add_(1)
    elif layer_idx == len(cache.layers) - 1:
        shared.add_(1)


def fuse_projections(module, names, attribute):
    """One weight for the projections ``names`` of ``module`` (rows
    concatenated, as ``module.<attribute>``), their own weights becoming views
    of it: a decode step then reads them in one product, whose grid is wide
    enough to keep the GPU's memory system busy (two rows of activations make
    these products weight-bound).  No second copy is kept."""
    if attribute in module.__dict__:
        return
    weights = [getattr(module, name).weight for name in names]
    fused = torch.cat([w.data for w in weights])
    start = 0
    for w in weights:
        w.data = fused[start:start + w.shape[0]]
        start += w.shape[0]
    module.__dict__[attribute] = fused


def patch(model, backend, layers=True):
    """Replace the Llama kernels of ``model`` by ``backend``'s (in place); returns ``model``.
    With ``backend.fuse``, q/k/v and gate/up are computed by one product each; with
    ``backend.residual``, the decoder layers' residual additions are made by the
    output projections' products.  ``layers=False`` keeps transformers' decoder
    layers (and so their residual additions)."""
    from transformers.models.llama import modeling_llama as llama

    if getattr(backend, "fuse", False):
        for module in model.modules():
            if type(module) is llama.LlamaAttention:
                fuse_projections(module, ("q_proj", "k_proj", "v_proj"), "qkv_weight")
            elif type(module) is llama.LlamaMLP:
                fuse_projections(module, ("gate_proj", "up_proj"), "gate_up_weight")

    forwards = {
        llama.LlamaRMSNorm: _rms_norm_forward(backend),
        llama.LlamaAttention: _attention_forward(backend),
        llama.LlamaMLP: _mlp_forward(backend),
    }
    if layers and getattr(backend, "residual", False):
        forwards[llama.LlamaDecoderLayer] = _decoder_layer_forward(backend)
        for module in model.modules():  # each layer's successor, for the folded norms' operands
            if type(module) is llama.LlamaModel:
                for layer, following in zip(module.layers, list(module.layers)[1:]):
                    layer.__dict__["next_layer"] = following  # not a submodule
    linear = _linear_forward(backend)
    rotary = _rotary_forward(backend) if hasattr(backend, "rope_tables") else None
    for module in model.modules():
        forward = forwards.get(type(module))
        if (rotary is not None and type(module) is llama.LlamaRotaryEmbedding
                and "dynamic" not in str(getattr(module, "rope_type", "dynamic"))):
            forward = rotary
        if forward is None and type(module) is nn.Linear and module.bias is None:
            forward = linear
        if forward is not None:
            module.forward = types.MethodType(forward, module)
    model.patched_with = backend.name
    # The greedy loop's choice of each next token (``Generator``), where the backend has one.
    model.greedy = getattr(backend, "argmax", None)
    return model


def unpatch(model):
    for module in model.modules():
        module.__dict__.pop("forward", None)
        module.__dict__.pop("qkv_weight", None)  # the projections' weights stay views of it
        module.__dict__.pop("gate_up_weight", None)
        module.__dict__.pop("next_layer", None)
        module.__dict__.pop("folded_input", None)
    model.patched_with = None
    model.greedy = None
    return model


# -- The greedy loop ---------------------------------------------------------------------------


def padded_cache_len(n):
    from examples.llm.kernels import padded_cache_len as padded

    return padded(n)


class Generator:
    """Greedy generation of ``new_tokens`` tokens for prompts of ``prompt_len`` tokens.

    One static KV cache, reused by every call (reset first).  With ``graph``
    (CUDA only), the first call runs two decode steps eagerly, captures the third
    in a CUDA graph and replays it for the rest; later calls replay from the
    first decode step.  ``step_fn`` replaces the model call of a decode step
    (``torch.compile`` of it, for instance).  Returns the tokens ``(B, new_tokens)``
    and, with ``keep_logits``, the logits of every token ``(B, new_tokens, V)``.
    """

    def __init__(self, model, batch, prompt_len, new_tokens, graph=False, step_fn=None):
        from transformers import StaticCache

        self.model, self.new_tokens, self.graph_wanted = model, new_tokens, graph
        device = model.lm_head.weight.device
        self.cache = StaticCache(config=model.config, max_cache_len=padded_cache_len(prompt_len + new_tokens))
        self.ids = torch.zeros((batch, 1), dtype=torch.long, device=device)
        self.positions = torch.zeros((batch, 1), dtype=torch.long, device=device)
        # A 4-D mask is taken as given: transformers builds none.  Only the patched
        # attention, which ignores it, gets it.
        self.mask = torch.zeros((batch, 1, 1, 1), dtype=model.lm_head.weight.dtype, device=device)
        self.graph = None
        self.step_fn = step_fn or self._forward

    def _kwargs(self):
        return {"attention_mask": self.mask} if getattr(self.model, "patched_with", None) else {}

    def _forward(self, ids, positions):
        return self.model(input_ids=ids, position_ids=positions, cache=self.cache, use_cache=True,
                          logits_to_keep=1, **self._kwargs()).logits[:, -1]

    def _choose(self, logits):
        """The next tokens into ``self.ids``: the patched backend's argmax where
        it has one, else torch's."""
        greedy = getattr(self.model, "greedy", None)
        if greedy is None:
            self.ids.copy_(logits.argmax(-1, keepdim=True))
        else:
            greedy(logits, self.ids)

    def _step(self):
        logits = self.step_fn(self.ids, self.positions)
        self._choose(logits)
        self.positions.add_(1)
        return logits

    @torch.no_grad()
    def __call__(self, prompt, keep_logits=False):
        batch, prompt_len = prompt.shape
        self.cache.reset()
        positions = torch.arange(prompt_len, device=prompt.device).expand(batch, -1)
        logits = self.model(input_ids=prompt, position_ids=positions, cache=self.cache, use_cache=True,
                            logits_to_keep=1, **self._kwargs()).logits[:, -1]
        tokens = torch.empty((batch, self.new_tokens), dtype=torch.long, device=prompt.device)
        kept = [logits] if keep_logits else None
        self._choose(logits)
        self.positions.fill_(prompt_len)
        if getattr(self.model, "patched_with", None):
            share_lengths(self.cache)  # one addition a decode step advances every layer's length
        tokens[:, 0] = self.ids[:, 0]
        for i in range(1, self.new_tokens):
            if self.graph is not None:
                self.graph.replay()
                logits = self.graph_logits
            elif self.graph_wanted and i == 3:
                self.graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(self.graph):
                    self.graph_logits = self._step()
                self.graph.replay()
                logits = self.graph_logits
            else:
                logits = self._step()
            tokens[:, i] = self.ids[:, 0]
            if keep_logits:
                kept.append(logits.clone())
        if keep_logits:
            return tokens, torch.stack(kept, 1)
        return tokens


def agreement(result, reference):
    """(greedy steps of ``result`` equal to ``reference``'s before the first that
    differs, the largest |logit difference| over those steps, the largest
    |logit| of the reference there); each a ``(tokens, logits)`` pair."""
    tokens, logits = result
    ref_tokens, ref_logits = reference
    same = (tokens == ref_tokens).all(0)
    agree = int(same.int().cumprod(0).sum())  # steps before the first difference
    upto = max(agree, 1)  # the first step's logits depend only on the prompt
    diff = (logits[:, :upto].float() - ref_logits[:, :upto].float()).abs().max().item()
    return agree, diff, ref_logits[:, :upto].float().abs().max().item()
