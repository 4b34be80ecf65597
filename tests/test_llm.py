"""A Llama model on ntsym kernels (``examples/llm``) generates what ``transformers`` does.

The tiny configuration of ``examples.llm.model.tiny_config`` (2 layers, hidden 64,
4 heads, 2 key/value heads, vocabulary 256) in float32 on the CPU, random weights
(transformers' initialisation, seed 0), batch 2, 8-token prompts: the patched
model must generate exactly the unmodified model's 16 greedy tokens, and every
step's logits must agree within 1e-5 (absolute and relative).  The logits are
below 1 in magnitude, the two best of a step at least 1e-3 apart, and the
differences seen about 2e-7 (float32 summation order).  Needs ``transformers`` (``pip install -e ".[llm]"``); skipped
without it.
"""

import pytest
import torch

import ntsym  # noqa: F401  (without a GPU, selects the interpreter before triton loads)

pytest.importorskip("transformers")

from examples.llm import model as llm  # noqa: E402

STEPS = 16


@pytest.fixture(scope="module")
def tiny():
    config = llm.tiny_config()
    model = llm.build_model(config, torch.float32, "cpu")
    prompt = torch.randint(0, config.vocab_size, (2, 8), generator=torch.Generator().manual_seed(1))
    tokens, logits = llm.Generator(model, 2, 8, STEPS)(prompt, keep_logits=True)
    return model, prompt, tokens, logits


def test_reference_path_is_varied(tiny):
    _, _, tokens, _ = tiny
    # A check that means something: the greedy path does not repeat one token.
    assert all(len(set(row.tolist())) > 4 for row in tokens)


@pytest.mark.parametrize("backend", ["ntsym", "ntsym-norms", "ntsym-store", "ntsym-split", "triton"])
@pytest.mark.slow
def test_patched_model_generates_the_same_tokens(tiny, backend):
    model, prompt, tokens, logits = tiny
    llm.patch(model, llm.BACKENDS[backend]())
    try:
        got_tokens, got_logits = llm.Generator(model, 2, 8, STEPS)(prompt, keep_logits=True)
    finally:
        llm.unpatch(model)
    assert torch.equal(got_tokens, tokens)
    torch.testing.assert_close(got_logits, logits, atol=1e-5, rtol=1e-5)


def test_patch_replaces_every_kernel(tiny):
    from transformers.models.llama import modeling_llama as llama

    model = tiny[0]
    llm.patch(model, llm.BACKENDS["ntsym"]())
    try:
        kinds = (llama.LlamaRMSNorm, llama.LlamaAttention, llama.LlamaMLP, torch.nn.Linear)
        patched = [m for m in model.modules() if isinstance(m, kinds)]
        assert len(patched) == 2 * (2 + 1 + 1 + 7) + 1 + 1  # per layer: norms, attention, MLP, linears
        assert all("forward" in m.__dict__ for m in patched)
    finally:
        llm.unpatch(model)
    assert not any("forward" in m.__dict__ for m in model.modules())
    # Unpatched, the model is transformers' own again.
    assert torch.equal(llm.Generator(model, 2, 8, STEPS)(tiny[1]), tiny[2])


def test_patched_attention_refuses_another_cache(tiny):
    model, prompt = tiny[0], tiny[1]
    llm.patch(model, llm.BACKENDS["ntsym"]())
    try:
        with pytest.raises(ValueError, match="StaticCache"):
            model(input_ids=prompt, use_cache=True)
    finally:
        llm.unpatch(model)


@pytest.mark.parametrize("rows", [2, 16, 20])
def test_linear_add_adds_the_residual_to_the_product(rows):
    from examples.llm import kernels

    gen = torch.Generator().manual_seed(rows)
    x = torch.randn(rows, 1, 96, generator=gen)
    weight = torch.randn(40, 96, generator=gen)  # 40 columns: a partial block of the widest (64)
    residual = torch.randn(rows, 1, 40, generator=gen)
    got = kernels.linear_add(x, weight, residual)
    torch.testing.assert_close(got, x @ weight.t() + residual, atol=1e-4, rtol=1e-5)
    assert got.shape == (rows, 1, 40)


def test_patched_decoder_layers_add_their_residuals_in_the_products(tiny):
    from transformers.models.llama import modeling_llama as llama

    model = tiny[0]
    llm.patch(model, llm.BACKENDS["ntsym"]())
    try:
        layers = [m for m in model.modules() if type(m) is llama.LlamaDecoderLayer]
        assert layers and all("forward" in m.__dict__ for m in layers)
    finally:
        llm.unpatch(model)
    llm.patch(model, llm.BACKENDS["triton"]())  # a backend without linear_add: transformers' layers
    try:
        assert not any("forward" in m.__dict__ for m in model.modules() if type(m) is llama.LlamaDecoderLayer)
    finally:
        llm.unpatch(model)


def test_rope_and_store_rotates_q_and_stores_k_and_v_at_the_cache_length():
    from examples.llm import kernels

    gen = torch.Generator().manual_seed(0)
    b, heads, kv_heads, d, cache_len = 2, 6, 2, 16, 12
    q, k, v = (torch.randn(b, 1, n, d, generator=gen) for n in (heads, kv_heads, kv_heads))
    cos, sin = (torch.randn(1, 1, d // 2, generator=gen).repeat(1, 1, 2) for _ in range(2))
    keys, values = torch.randn(b, kv_heads, cache_len, d, generator=gen), torch.randn(b, kv_heads, cache_len, d, generator=gen)
    position = torch.tensor(7)
    expected_keys, expected_values = keys.clone(), values.clone()
    expected_keys[:, :, 7] = kernels.rope(k, cos, sin)[:, 0]
    expected_values[:, :, 7] = v[:, 0]
    launches = kernels.rope_store_kernel.stats.launches
    q_out = kernels.rope_and_store(q, k, v, cos, sin, keys, values, position)
    torch.testing.assert_close(q_out, kernels.rope(q, cos, sin))
    torch.testing.assert_close(keys, expected_keys)
    torch.testing.assert_close(values, expected_values)
    assert kernels.rope_store_kernel.stats.launches == launches + 1


def _generate_counting(model, prompt, new_tokens, counted, backend="ntsym"):
    """The tokens of a generation by the ntsym-patched model (the prompt, then
    ``new_tokens - 1`` decode steps) and how many times each kernel of
    ``counted`` was launched."""
    llm.patch(model, llm.BACKENDS[backend]())
    try:
        before = [k.stats.launches for k in counted]
        got = llm.Generator(model, 2, 8, new_tokens)(prompt)
        return got, [k.stats.launches - b for k, b in zip(counted, before)]
    finally:
        llm.unpatch(model)


def test_a_prompt_adds_residuals_and_multiplies_in_its_products(tiny):
    """A prompt of more than 16 rows (12 tokens, batch 2): the residual
    additions and SiLU-and-multiply are the products' epilogues, as in a
    decode step (no kernel of their own), and its logits are transformers'."""
    from examples.llm import kernels

    model = tiny[0]
    prompt = torch.randint(0, model.config.vocab_size, (2, 12), generator=torch.Generator().manual_seed(2))
    tokens, logits = llm.Generator(model, 2, 12, 1)(prompt, keep_logits=True)
    kinds = (kernels.mm_add_kernel, kernels.mm_swiglu_kernel, kernels.silu_mul_kernel)
    llm.patch(model, llm.BACKENDS["ntsym"]())
    try:
        before = [k.stats.launches for k in kinds]
        got_tokens, got_logits = llm.Generator(model, 2, 12, 1)(prompt, keep_logits=True)
        launches = [k.stats.launches - b for k, b in zip(kinds, before)]
    finally:
        llm.unpatch(model)
    assert torch.equal(got_tokens, tokens)
    torch.testing.assert_close(got_logits, logits, atol=1e-5, rtol=1e-5)
    layers = model.config.num_hidden_layers
    assert launches == [2 * layers, layers, 0]  # output and down projections; gate/up


def test_a_patched_decode_step_rotates_and_stores_in_one_kernel(tiny):
    from examples.llm import kernels

    model, prompt, tokens = tiny[0], tiny[1], tiny[2]
    got, (launches,) = _generate_counting(model, prompt, 3, [kernels.rope_store_kernel], backend="ntsym-store")
    assert torch.equal(got, tokens[:, :3])
    assert launches == 2 * model.config.num_hidden_layers  # two decode steps


def test_a_patched_decode_step_rotates_and_stores_in_its_qkv_product(tiny):
    from examples.llm import kernels, qkv_store

    model, prompt, tokens = tiny[0], tiny[1], tiny[2]
    kinds = [qkv_store.qkv_store_kernel, kernels.rope_store_kernel, kernels.gemv_normed_kernel]
    _, prompt_only = _generate_counting(model, prompt, 1, kinds)
    got, with_steps = _generate_counting(model, prompt, 3, kinds)
    assert torch.equal(got, tokens[:, :3])
    steps = [w - p for w, p in zip(with_steps, prompt_only)]
    assert steps == [2 * model.config.num_hidden_layers, 0, 0]  # two decode steps


@pytest.mark.parametrize("rows, heads, kv_heads, d", [(2, 6, 2, 16), (3, 4, 4, 64), (16, 2, 1, 40)])
def test_qkv_store_equals_the_product_then_rope_and_store(rows, heads, kv_heads, d):
    """The fused q/k/v product with the rotation and the cache store in its
    epilogue equals ``linear_normed`` then ``rope_and_store``: half-dimensions
    of 8 and 20 leave a partial block of 16 pair columns; the rows past the
    batch (up to 16) store nothing."""
    from examples.llm import kernels, qkv_store

    gen = torch.Generator().manual_seed(rows * d)
    k_dim, cache_len = 48, 12
    x = torch.randn(rows, 1, k_dim, generator=gen)
    normed, squares = kernels.row_squares(x, torch.rand(k_dim, generator=gen) + 0.5)
    weight = torch.randn((heads + 2 * kv_heads) * d, k_dim, generator=gen) / k_dim ** 0.5
    angles = torch.randn(rows, 1, d // 2, generator=gen)
    cos, sin = angles.cos().repeat(1, 1, 2), angles.sin().repeat(1, 1, 2)
    position = torch.tensor(5)
    qkv = kernels.linear_normed(normed, squares, 1e-6, weight)
    q, k, v = qkv.split([heads * d, kv_heads * d, kv_heads * d], -1)
    caches = [torch.randn(rows, kv_heads, cache_len, d, generator=gen) for _ in range(2)]
    expected_keys, expected_values = (c.clone() for c in caches)
    expected_q = kernels.rope_and_store(q.reshape(rows, 1, heads, d), k.reshape(rows, 1, kv_heads, d),
                                        v.reshape(rows, 1, kv_heads, d), cos, sin, expected_keys, expected_values,
                                        position)
    # Blocks of 16 pairs: a half of 20 ends in a partial block.
    got_q = qkv_store.qkv_store(normed, squares, 1e-6, weight, cos, sin, caches[0], caches[1], position, heads,
                                BLOCK_SIZE_N=16)
    torch.testing.assert_close(got_q, expected_q, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(caches[0], expected_keys, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(caches[1], expected_values, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("rows", [2, 16, 20])
def test_linear_swiglu_multiplies_in_the_products_epilogue(rows):
    from examples.llm import kernels

    gen = torch.Generator().manual_seed(rows)
    x = torch.randn(rows, 1, 96, generator=gen)
    gate_up = torch.randn(2 * 40, 96, generator=gen) / 96 ** 0.5  # 40 columns each: a partial block of 64
    got = kernels.linear_swiglu(x, gate_up, 40)
    expected = torch.nn.functional.silu(x @ gate_up[:40].t()) * (x @ gate_up[40:].t())
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)
    assert got.shape == (rows, 1, 40)


def test_a_patched_decode_step_has_no_silu_kernel_of_its_own(tiny):
    from examples.llm import kernels

    model, prompt, tokens = tiny[0], tiny[1], tiny[2]
    kinds = (kernels.silu_mul_kernel, kernels.gemv_swiglu_kernel, kernels.gemv_swiglu_normed_kernel)
    _, prompt_only = _generate_counting(model, prompt, 1, kinds)
    got, with_step = _generate_counting(model, prompt, 2, kinds)
    assert torch.equal(got, tokens[:, :2])
    # The step's gate/up products take the norm folded in (the norm-less form: none).
    assert [w - p for w, p in zip(with_step, prompt_only)] == [0, 0, model.config.num_hidden_layers]


@pytest.mark.parametrize("rows, columns", [(2, 64), (16, 80), (3, 48)])
def test_the_folded_norm_products_equal_the_norm_then_the_product(rows, columns):
    """``linear_add_squares`` writes ``h``, ``w * h`` and ``h``'s squares;
    ``linear_normed`` and ``linear_swiglu_normed`` of those equal the products
    of ``rms_norm(h, w)``.  80 columns: a partial block of the widest (64)."""
    from examples.llm import kernels

    gen = torch.Generator().manual_seed(rows * columns)
    x = torch.randn(rows, 1, 96, generator=gen)
    weight = torch.randn(columns, 96, generator=gen) / 10
    residual = torch.randn(rows, 1, columns, generator=gen)
    norm_weight = torch.rand(columns, generator=gen) + 0.5
    h, normed, squares = kernels.linear_add_squares(x, weight, residual, norm_weight)
    expected_h = x @ weight.t() + residual
    torch.testing.assert_close(h, expected_h, atol=1e-4, rtol=1e-5)
    torch.testing.assert_close(normed, norm_weight * h, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(squares, (h * h).view(rows, -1, kernels.SQUARES_GROUP).sum(-1), atol=1e-4,
                               rtol=1e-5)
    # The first layer's operands, from a row of its own: the same.
    again, again_squares = kernels.row_squares(h, norm_weight)
    torch.testing.assert_close(again, normed, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(again_squares, squares, atol=1e-4, rtol=1e-5)
    eps = 1e-5
    normalised = kernels.rms_norm(h, norm_weight, eps)
    other = torch.randn(40, columns, generator=gen)
    torch.testing.assert_close(kernels.linear_normed(normed, squares, eps, other), normalised @ other.t(),
                               atol=1e-4, rtol=1e-4)
    gate_up = torch.randn(2 * 24, columns, generator=gen)
    torch.testing.assert_close(kernels.linear_swiglu_normed(normed, squares, eps, gate_up, 24),
                               kernels.linear_swiglu(normalised, gate_up, 24), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("rows, columns", [(17, 64), (2, 72)])
def test_linear_add_squares_refuses_what_its_squares_cannot_hold(rows, columns):
    from examples.llm import kernels

    x, weight = torch.randn(rows, 32), torch.randn(columns, 32)
    with pytest.raises(ValueError, match="linear_add_squares"):
        kernels.linear_add_squares(x, weight, torch.randn(rows, columns), torch.ones(columns))
    assert not kernels.foldable(torch.randn(rows, columns), torch.ones(columns))


def test_a_patched_decode_step_normalises_in_its_products(tiny):
    """A decode step has one norm kernel of its own (the model's last norm) and
    one for the first layer's operands; the layers' norms are in the products."""
    from examples.llm import kernels

    model, prompt, tokens = tiny[0], tiny[1], tiny[2]
    kinds = (kernels.rms_norm_kernel, kernels.row_squares_kernel, kernels.gemv_add_squares_kernel)
    _, prompt_only = _generate_counting(model, prompt, 1, kinds)
    got, with_step = _generate_counting(model, prompt, 2, kinds)
    assert torch.equal(got, tokens[:, :2])
    layers = model.config.num_hidden_layers
    assert [w - p for w, p in zip(with_step, prompt_only)] == [1, 1, 2 * layers - 1]


def test_folded_operands_are_not_used_for_a_changed_input(tiny):
    """The operands a layer's last product wrote for the next layer's norm are
    used only for that product's output, unchanged."""
    from transformers.models.llama import modeling_llama as llama

    model, prompt, tokens = tiny[0], tiny[1], tiny[2]
    llm.patch(model, llm.BACKENDS["ntsym"]())
    try:
        layers = [m for m in model.modules() if type(m) is llama.LlamaDecoderLayer]
        h = torch.randn(2, 1, model.config.hidden_size)
        stale = (torch.zeros_like(h), torch.zeros(2, model.config.hidden_size // 16))
        layers[1].__dict__["folded_input"] = (h, h._version, stale)
        h.add_(1)
        assert llm._take_folded(layers[1], h) is None
        layers[1].__dict__["folded_input"] = (h, h._version, stale)
        assert llm._take_folded(layers[1], h.clone()) is None
        layers[1].__dict__["folded_input"] = (h, h._version, stale)
        assert llm._take_folded(layers[1], h) is stale
    finally:
        llm.unpatch(model)
    assert not any("next_layer" in m.__dict__ or "folded_input" in m.__dict__ for m in model.modules())


@pytest.mark.parametrize("columns", [5000, 4096, 2 * 2048 + 1])
def test_argmax_is_torchs_first_index_of_the_maximum(columns):
    from examples.llm import kernels

    gen = torch.Generator().manual_seed(columns)
    logits = -1 - torch.rand(3, columns, generator=gen)  # all negative: padded lanes must not win
    logits[0, columns - 1] = 0.5  # in the last, partial block
    logits[1, 7] = logits[1, columns - 3] = 0.25  # a tie across blocks: the first
    logits[2, 2048] = logits[2, 2049] = 0.0  # a tie inside a block
    out = torch.full((3, 1), -1, dtype=torch.int64)
    assert kernels.argmax(logits, out) is out
    assert torch.equal(out, logits.argmax(-1, keepdim=True))
    assert out[:, 0].tolist() == [columns - 1, 7, 2048]


@pytest.mark.parametrize("columns", [5000, 2 * 2048 + 1])
def test_argmax_takes_a_nan_for_the_maximum_as_torch(columns):
    from examples.llm import kernels

    gen = torch.Generator().manual_seed(columns)
    logits = torch.rand(5, columns, generator=gen)
    logits[0, 3000] = float("nan")  # a NaN in a later block than the row's maximum
    logits[0, 10] = 2.0
    logits[1, columns - 1] = logits[1, 2] = float("nan")  # the first NaN, in the first block
    logits[2, 2049] = float("nan")
    logits[2, 4000] = float("nan")  # two blocks with a NaN: the first
    logits[3] = float("-inf")  # all -inf: index 0
    logits[4, columns - 2] = float("inf")  # no NaN: +inf is the maximum
    out = kernels.argmax(logits)
    assert torch.equal(out, logits.argmax(-1, keepdim=True))
    assert out[:, 0].tolist() == [3000, 2, 2049, 0, columns - 2]


def test_a_patched_model_chooses_its_tokens_with_the_backends_argmax(tiny):
    from examples.llm import kernels

    model, prompt, tokens = tiny[0], tiny[1], tiny[2]
    got, (launches,) = _generate_counting(model, prompt, 3, [kernels.argmax_rows_kernel])
    assert launches == 3  # the prompt's token, two decode steps
    assert torch.equal(got, tokens[:, :3])
    assert model.greedy is None  # unpatched: torch's argmax again


def test_a_patched_decode_step_advances_every_layers_length_with_one_addition(tiny):
    model, prompt, tokens = tiny[0], tiny[1], tiny[2]
    llm.patch(model, llm.BACKENDS["ntsym"]())
    try:
        generator = llm.Generator(model, 2, 8, 4)
        got = generator(prompt)
    finally:
        llm.unpatch(model)
    assert torch.equal(got, tokens[:, :4])
    cache = generator.cache
    # The prompt's 8 positions and three decode steps' tokens, in every layer.
    assert cache.shared_lengths.tolist() == [11] * model.config.num_hidden_layers
    assert all(layer.cumulative_length.data_ptr() == cache.shared_lengths[i].data_ptr()
               for i, layer in enumerate(cache.layers))


@pytest.mark.parametrize("cache_len, length", [(64, 9), (192, 150), (320, 9), (320, 250)])
def test_decode_attention_counts_the_pending_token(cache_len, length):
    """Both forms: one program walking the whole cache (caches of at most
    UNSPLIT_CACHE_LEN positions), and the splits with their combine (longer
    caches, valid positions in one split or several)."""
    from examples.llm import kernels

    assert (cache_len <= kernels.UNSPLIT_CACHE_LEN) == (cache_len < 320)
    gen = torch.Generator().manual_seed(0)
    q = torch.randn(2, 4, 1, 16, generator=gen)
    keys, values = (torch.randn(2, 2, cache_len, 16, generator=gen), torch.randn(2, 2, cache_len, 16, generator=gen))
    counted = kernels.decode_attention(q, keys, values, torch.tensor([length]))
    pending = kernels.decode_attention(q, keys, values, torch.tensor([length - 1]), pending=1)
    torch.testing.assert_close(pending, counted)
    expected = torch.nn.functional.scaled_dot_product_attention(
        q, keys[:, :, :length].repeat_interleave(2, 1), values[:, :, :length].repeat_interleave(2, 1))
    torch.testing.assert_close(pending, expected, atol=1e-5, rtol=1e-5)


def test_the_paper_protocol_modules_generate_torch_s_tokens():
    """benchmarks/paper_inference.py's modules (the NineToothed paper's
    Linear as a bmm of ``weight.T`` expanded, RMSNorm, SiLU, attention with
    RoPE) on ntsym's kernels: a tiny float32 Llama generates the tokens of
    the same modules on torch and of transformers' own model, and every
    attention call went through the kernel."""
    from benchmarks import paper_inference

    results = paper_inference.tiny(steps=3)
    tokens = {name: t.tolist() for name, (t, _) in results.items()}
    assert tokens["ntsym"] == tokens["torch"] == tokens["transformers"]
    counts = results["ntsym"][1]
    assert counts == {"kernel": 2 * 3, "masked": 0}  # 2 layers, a prompt and 2 decode steps


def test_rope_tables_equal_transformers_rotary_embedding():
    """One kernel for the rotary embedding's tables: transformers' cosines and
    sines, at positions whose angles reach thousands of radians."""
    from transformers.models.llama import modeling_llama as llama

    from examples.llm import kernels

    rotary = llama.LlamaRotaryEmbedding(llm.tiny_config())
    positions = torch.tensor([[0, 1, 7, 300], [5000, 123456, 2, 9]])
    for dtype in (torch.float32, torch.float16):
        expected = rotary(torch.zeros(1, dtype=dtype), positions)
        got = kernels.rope_tables(positions, rotary.inv_freq, rotary.attention_scaling, dtype)
        for g, e in zip(got, expected):
            assert g.dtype == e.dtype and g.shape == e.shape
            torch.testing.assert_close(g, e, atol=2e-7, rtol=0)


def test_a_patched_model_computes_its_rotary_tables_in_one_kernel(tiny):
    from examples.llm import kernels

    model, prompt, tokens = tiny[0], tiny[1], tiny[2]
    got, (launches,) = _generate_counting(model, prompt, 3, [kernels.rope_tables_kernel])
    assert torch.equal(got, tokens[:, :3])
    assert launches == 3  # the prompt's and two decode steps'
