"""The kernels of a Llama decoder, as ntsym programs (arrangement + application).

Each kernel has a wrapper taking torch tensors in the layouts ``transformers``'
Llama code uses:

- ``rms_norm(x, weight, eps)``: ``weight * x / sqrt(mean(x**2) + eps)`` over the
  last dimension, one row per program (the row is one tile, as in
  ``examples/rms_norm.py``; the weight's row is expanded over the rows).
- ``rope(x, cos, sin)``: the half-rotation rotary embedding of ``x`` ``(B, S, H, D)``
  with ``transformers``' ``(B, S, D)`` tables (their two halves are equal; the
  kernel reads the first), one table row per position and sequence, as in
  ``examples/rope.py`` with a batch dimension in the tables.
- ``rope_and_store(q, k, v, cos, sin, keys, values, position)``: a decode step's
  rotary embedding of ``q`` and ``k`` (one token per sequence) with ``k`` and ``v``
  stored into the static cache at ``position``, one program per key/value head
  (the store through ``keys.source[b, h, position, ...]``, a data index).
- ``prefill_attention(q, k, v)``: causal attention with grouped key/value heads;
  ``q`` ``(B, H, S, D)``, ``k`` and ``v`` ``(B, Hkv, S, D)``.  The arrangement
  sees ``q`` as ``(B, Hkv, G, S, D)`` and ``k``, ``v`` as ``(B, Hkv, 1, S, D)``,
  expanded over the ``G`` query heads of their group: no copy of the shared heads.
  The application is ``examples/sdpa.py``'s causal one (stops at the diagonal).
- ``decode_attention(q, k_cache, v_cache, length)``: one query token per
  sequence against a static cache ``(B, Hkv, L, D)`` of which the first
  ``length`` positions are valid (``length``: a one-element integer tensor on
  the device, so a CUDA graph replays with the length of the step).
  Split-KV ("flash-decoding"): the cache's key blocks are grouped into splits, one
  program per (sequence, key/value head, split) attends the ``G`` query heads of
  the group (one ``dot`` per key block) to its split's valid blocks and writes an
  unnormalised partial result and its log-sum-exp; a second kernel combines
  the splits.  Programs whose split starts past ``length`` do no loop at all.
  A cache of at most ``UNSPLIT_CACHE_LEN`` positions is not split: one program
  per (sequence, key/value head) walks all its valid blocks and writes the
  normalised result, with no combine kernel.
- ``linear(x, weight)``: ``x @ weight.T`` (``nn.Linear`` without bias).  With at
  most 16 rows (decode: batch 2, one token each) a GEMV-like tiling: one block of
  16 rows (the rows past ``M`` are masked), narrow output columns (16 to 64) so
  that the weight, which dominates the traffic, is spread over many programs,
  and long blocks along the reduction.  More rows use ``examples/mm.py``.
- ``linear_add(x, weight, addend)``: ``x @ weight.T + addend``, the residual
  connections after the attention's output projection and the MLP's down
  projection; with at most 16 rows the addition is the product's epilogue.
- ``linear_swiglu(x, gate_up, size)``: ``silu(x @ gate.T) * (x @ up.T)`` for the MLP's
  fused gate/up weight; with at most 16 rows the SiLU-and-multiply is the product's
  epilogue (each program computes the same columns of both products).
- ``linear_add_squares``, ``linear_normed``, ``linear_swiglu_normed``, ``row_squares``: a
  decode step's RMSNorms folded into the products around them (the products writing
  the residual stream also write ``w * h`` and the squares of ``h``; the products
  reading the norm scale their accumulators by each row's factor).
- ``rope_tables(position_ids, inv_freq, scaling, dtype)``: transformers' rotary
  tables (cosines and sines of the positions times the inverse frequencies).
- ``argmax(logits, out)``: each row's greedy token, ``logits.argmax(-1, keepdim=True)``,
  in two passes (blocks of a row, then the row's blocks).
- ``silu_and_mul(gate, up)``: ``silu(gate) * up``, element-wise, fused; row by row, so
  that ``gate`` and ``up`` may be column views of one product.

All compute in float32 and store in the output's dtype.
"""

import math

import torch

import ntsym
import ntsym.language as ntl
from ntsym import Tensor

from examples import mm as _mm

LOG2E = 1.4426950408889634

# -- RMSNorm --------------------------------------------------------------------------


def rms_norm_arrangement(input, weight, eps, output):
    input_arranged = input.tile((1, -1))
    weight_arranged = weight.tile((1, -1)).expand((input_arranged.shape[0], -1))
    return input_arranged, weight_arranged, eps, output.tile((1, -1))


def rms_norm_application(input, weight, eps, output):
    x = ntl.cast(input, ntl.float32)
    normed = x * ntl.rsqrt(ntl.sum(x * x) / input.source.shape[1] + eps)
    # transformers rounds the normalised row to the input's dtype before the weight.
    output = weight * ntl.cast(normed, input.dtype)  # noqa: F841


_row = (None, {"constexpr": True, "upper_bound": 2**15})  # a row is one tile
rms_norm_kernel = ntsym.make(
    rms_norm_arrangement,
    rms_norm_application,
    (Tensor(2, shape_options=_row), Tensor(shape=(1, None), shape_options=_row), Tensor(0),
     Tensor(2, shape_options=_row)),
)


def rms_norm(x, weight, eps):
    output = torch.empty_like(x, memory_format=torch.contiguous_format)
    n = x.shape[-1]
    rms_norm_kernel(x.reshape(-1, n), weight.view(1, n), float(eps), output.view(-1, n))
    return output


# -- RoPE -----------------------------------------------------------------------------


def _arrange_halves(x, heads):
    """``x`` ``(B, S, H, 2, D/2)`` in blocks of ``heads`` heads (-1: all): programs
    ``(B, S, H / heads)``, each with ``x[0]`` and ``x[1]``, the halves, ``(heads, D/2)``."""
    arranged = x.tile((1, 1, heads, 1, -1))
    arranged.dtype = arranged.dtype.squeeze((0, 1, 3))
    arranged = arranged.tile((1, 1, 1, -1, 1)).squeeze((3, 4))
    arranged.dtype = arranged.dtype.squeeze((0, 1, 2, 4))
    return arranged


def rope_arrangement(input, cos, sin, output, BLOCK_SIZE=ntsym.block_size(lower_bound=1, upper_bound=32)):
    def arrange_halves(x):  # (B, S, H, 2, D/2): a block of heads, both halves
        return _arrange_halves(x, BLOCK_SIZE)

    def arrange_table(table):  # (B, S, D/2): one row, for every head block
        arranged = table.tile((1, 1, -1)).squeeze(2).unsqueeze(2)
        arranged.dtype = arranged.dtype.squeeze(0)
        return arranged.expand((-1, -1, input_arranged.shape[2]))

    input_arranged = arrange_halves(input)
    return input_arranged, arrange_table(cos), arrange_table(sin), arrange_halves(output)


def rope_application(input, cos, sin, output):
    x1 = ntl.cast(input[0], ntl.float32)
    x2 = ntl.cast(input[1], ntl.float32)
    c = ntl.cast(cos, ntl.float32)
    s = ntl.cast(sin, ntl.float32)
    output[0] = x1 * c - x2 * s
    output[1] = x1 * s + x2 * c


_half = {"constexpr": True, "upper_bound": 2**12}
rope_kernel = ntsym.make(
    rope_arrangement,
    rope_application,
    (Tensor(shape=(None, None, None, 2, None), shape_options=(None, None, None, None, _half)),
     Tensor(3, shape_options=(None, None, _half)),
     Tensor(3, shape_options=(None, None, _half)),
     Tensor(shape=(None, None, None, 2, None), shape_options=(None, None, None, None, _half))),
)


def rope(x, cos, sin, out=None):
    """Rotates ``x`` ``(B, S, H, D)`` with tables ``(B, S, D)``; into ``out`` if given."""
    half = x.shape[-1] // 2
    output = torch.empty_like(x, memory_format=torch.contiguous_format) if out is None else out
    # Tables of one sequence serve the whole batch.
    cos, sin = (t[..., :half].expand(x.shape[0], -1, -1) for t in (cos, sin))
    rope_kernel(x.unflatten(-1, (2, half)), cos, sin, output.unflatten(-1, (2, half)))
    return output


def rope_store_arrangement(q, k, v, cos, sin, position, q_out, keys, values):
    # q, q_out (B, Hkv, G, 2, D/2); k (B, Hkv, 2, D/2); v (B, Hkv, 1, D); cos, sin
    # (B, 1, D/2); position (B, 1, 1); keys, values (B, Hkv, L, D), only stored into.
    # Programs: (B, Hkv, 1), one key/value head and the G query heads of its group.
    q_arranged = _arrange_halves(q, -1)  # q[0], q[1]: the halves, (G, D/2)
    heads = q_arranged.shape[1]
    k_arranged = k.tile((1, 1, 1, -1))  # k[0], k[1]: the halves, (D/2,)
    k_arranged.dtype = k_arranged.dtype.squeeze((0, 1, 2))
    k_arranged = k_arranged.tile((1, 1, -1, 1)).squeeze(3)
    k_arranged.dtype = k_arranged.dtype.squeeze((0, 1, 3))
    v_arranged = v.tile((1, 1, 1, -1)).squeeze(3)
    v_arranged.dtype = v_arranged.dtype.squeeze((0, 1, 2))

    def arrange_table(table):  # (D/2,), the sequence's row, for each head
        arranged = table.tile((1, 1, -1)).expand((-1, heads, -1))
        arranged.dtype = arranged.dtype.squeeze((0, 1))
        return arranged

    position_arranged = position.tile((1, 1, 1)).expand((-1, heads, -1))
    position_arranged.dtype = position_arranged.dtype.squeeze((0, 1, 2))
    keys_arranged, values_arranged = (c.tile((1, 1, -1, -1)).squeeze(3) for c in (keys, values))
    return (q_arranged, k_arranged, v_arranged, arrange_table(cos), arrange_table(sin), position_arranged,
            _arrange_halves(q_out, -1), keys_arranged, values_arranged)


def rope_store_application(q, k, v, cos, sin, position, q_out, keys, values):
    c = ntl.cast(cos, ntl.float32)
    s = ntl.cast(sin, ntl.float32)
    q1 = ntl.cast(q[0], ntl.float32)
    q2 = ntl.cast(q[1], ntl.float32)
    q_out[0] = q1 * c - q2 * s
    q_out[1] = q1 * s + q2 * c
    k1 = ntl.cast(k[0], ntl.float32)
    k2 = ntl.cast(k[1], ntl.float32)
    b = k[0].offsets(0)
    h = k[0].offsets(1)
    half = k[0].offsets(3)
    keys.source[b, h, position, half] = k1 * c - k2 * s
    keys.source[b, h, position, half + k.source.shape[3]] = k1 * s + k2 * c
    values.source[v.offsets(0), v.offsets(1), position, v.offsets(3)] = v


rope_store_kernel = ntsym.make(
    rope_store_arrangement,
    rope_store_application,
    (Tensor(5, shape_options=(None, None, None, None, _half)),
     Tensor(4, shape_options=(None, None, None, _half)),
     Tensor(4),
     Tensor(3, shape_options=(None, None, _half)),
     Tensor(3, shape_options=(None, None, _half)),
     Tensor(3, dtype=ntsym.int64),
     Tensor(5, shape_options=(None, None, None, None, _half)),
     Tensor(4),
     Tensor(4)),
)


def rope_and_store(q, k, v, cos, sin, keys, values, position):
    """One token per sequence (decode): ``q`` ``(B, 1, H, D)`` rotated into a new
    ``(B, 1, H, D)`` tensor, returned; ``k`` ``(B, 1, Hkv, D)`` rotated and ``v``
    stored into the caches ``keys``, ``values`` ``(B, Hkv, L, D)`` at ``position``
    (a one-element integer tensor on the device, the cache's length so far), as
    ``rope`` of each and the cache's ``index_copy_`` would, in one kernel."""
    b, _, heads, d = q.shape
    kv_heads, half = k.shape[2], d // 2
    q_out = torch.empty_like(q, memory_format=torch.contiguous_format)
    cos, sin = (t[..., :half].expand(b, -1, -1) for t in (cos, sin))
    rope_store_kernel(q.reshape(b, kv_heads, heads // kv_heads, 2, half), k.reshape(b, kv_heads, 2, half),
                      v.reshape(b, kv_heads, 1, d), cos, sin, position.reshape(1, 1, 1).expand(b, 1, 1),
                      q_out.view(b, kv_heads, heads // kv_heads, 2, half), keys, values)
    return q_out


# -- Causal attention with grouped key/value heads (prefill) ---------------------------


def prefill_arrangement(
    q,
    k,
    v,
    scale,
    o,
    BLOCK_SIZE_M=ntsym.block_size(lower_bound=16, upper_bound=64),
    BLOCK_SIZE_N=ntsym.block_size(lower_bound=16, upper_bound=64),
):
    def arrange_q_or_o(x):  # (B, Hkv, G, S, D)
        arranged = x.tile((1, 1, 1, BLOCK_SIZE_M, -1))
        arranged.dtype = arranged.dtype.squeeze((0, 1, 2))
        return arranged

    def arrange_k_or_v(x):  # (B, Hkv, 1, S, D): the group's one head, for each of its G query heads
        arranged = x.tile((1, 1, 1, BLOCK_SIZE_N, -1))
        arranged.dtype = arranged.dtype.squeeze((0, 1, 2))
        arranged = arranged.tile((1, 1, 1, -1, -1))
        arranged = arranged.expand((-1, -1, q_arranged.shape[2], q_arranged.shape[3], -1))
        arranged.dtype = arranged.dtype.squeeze((0, 1, 2, 4))
        return arranged

    q_arranged = arrange_q_or_o(q)
    return q_arranged, arrange_k_or_v(k), arrange_k_or_v(v), scale, arrange_q_or_o(o)


def prefill_application(q, k, v, scale, o):
    q_loaded = q
    scale_log2 = scale * 1.4426950408889634
    acc = ntl.zeros(o.shape, dtype=ntl.float32)
    m = ntl.full((q.shape[0],), float("-inf"), dtype=ntl.float32)
    l = ntl.zeros((q.shape[0],), dtype=ntl.float32)
    # Key blocks wholly before the block's first query (and wholly inside
    # the keys) need no mask; those after its last query are not visited.
    first = ntl.minimum(ntl.min(q.offsets(3), 0), k.source.shape[3]) // k[0].shape[0]
    last = ntl.minimum(ntl.max(q.offsets(3), 0) // k[0].shape[0] + 1, k.shape[0])
    for i in range(first):
        s = ntl.dot(q_loaded, ntl.trans(k[i])) * scale_log2
        m_new = ntl.maximum(m, ntl.max(s, 1))
        p = ntl.exp2(s - m_new[:, None])
        alpha = ntl.exp2(m - m_new)
        acc = acc * alpha[:, None] + ntl.dot(p.to(v[i].dtype), v[i])
        l = l * alpha + ntl.sum(p, 1)
        m = m_new
    for j in range(first, last):
        key = k[j].offsets(3)[None, :]
        s = ntl.dot(q_loaded, ntl.trans(k[j])) * scale_log2
        s = ntl.where((key < k.source.shape[3]) & (q.offsets(3)[:, None] >= key), s, float("-inf"))
        m_new = ntl.maximum(m, ntl.max(s, 1))
        p = ntl.exp2(s - m_new[:, None])
        alpha = ntl.exp2(m - m_new)
        acc = acc * alpha[:, None] + ntl.dot(p.to(v[j].dtype), v[j])
        l = l * alpha + ntl.sum(p, 1)
        m = m_new
    o = acc / l[:, None]  # noqa: F841


_head = {"constexpr": True, "upper_bound": 256, "power_of_two": True}  # D is one tile
_q5 = Tensor(5, shape_options=(None, None, None, None, _head))
_kv5 = Tensor(shape=(None, None, 1, None, None), shape_options=(None, None, None, None, _head))
prefill_kernel = ntsym.make(
    prefill_arrangement,
    prefill_application,
    (_q5, _kv5, Tensor(shape=(None, None, 1, None, None), shape_options=(None, None, None, None, _head)),
     Tensor(0), Tensor(5, shape_options=(None, None, None, None, _head))),
)


def _grouped(x, kv_heads):
    """``(B, H, S, D)`` as ``(B, Hkv, G, S, D)``: query head ``h`` is head ``h % G`` of group ``h // G``."""
    b, h, s, d = x.shape
    return x.unflatten(1, (kv_heads, h // kv_heads))


def prefill_attention(q, k, v, scale=None):
    """Causal attention, ``q`` ``(B, H, S, D)``, ``k``/``v`` ``(B, Hkv, S, D)``; returns ``(B, H, S, D)``."""
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    kv_heads = k.shape[1]
    o = torch.empty_like(q, memory_format=torch.contiguous_format)
    prefill_kernel(_grouped(q, kv_heads), k.unsqueeze(2), v.unsqueeze(2), float(scale), _grouped(o, kv_heads))
    return o


# -- Attention of one token against a KV cache, split over the cache (decode) ----------


def decode_arrangement(
    q,
    k,
    v,
    length,
    pending,
    scale,
    o,
    lse,
    BLOCK_SIZE_G=ntsym.block_size(lower_bound=16, upper_bound=16),
    BLOCK_SIZE_N=ntsym.block_size(lower_bound=16, upper_bound=128),
):
    # q (B, Hkv, 1, G, D); k, v (B, Hkv, NSPLIT, L/NSPLIT, D): the cache, split;
    # o (B, Hkv, NSPLIT, G, D) and lse (B, Hkv, NSPLIT, G): per split; length (1,).
    # Programs: (B, Hkv, NSPLIT, G blocks).
    def arrange_k_or_v(x):
        arranged = x.tile((1, 1, 1, BLOCK_SIZE_N, -1))
        arranged.dtype = arranged.dtype.squeeze((0, 1, 2))
        arranged = arranged.tile((1, 1, 1, -1, -1)).squeeze(4)
        arranged.dtype = arranged.dtype.squeeze((0, 1, 2, 4))
        return arranged.expand((-1, -1, -1, q_arranged.shape[3]))

    q_arranged = q.tile((1, 1, 1, BLOCK_SIZE_G, -1)).squeeze(4)
    q_arranged.dtype = q_arranged.dtype.squeeze((0, 1, 2))
    k_arranged = arrange_k_or_v(k)
    q_arranged = q_arranged.expand((-1, -1, k_arranged.shape[2], -1))

    o_arranged = o.tile((1, 1, 1, BLOCK_SIZE_G, -1)).squeeze(4)
    o_arranged.dtype = o_arranged.dtype.squeeze((0, 1, 2))
    lse_arranged = lse.tile((1, 1, 1, BLOCK_SIZE_G))
    lse_arranged.dtype = lse_arranged.dtype.squeeze((0, 1, 2))

    length_arranged = length.tile((1,)).unsqueeze(1).unsqueeze(2).unsqueeze(3)
    length_arranged = length_arranged.expand(tuple(k_arranged.shape))

    return q_arranged, k_arranged, arrange_k_or_v(v), length_arranged, pending, scale, o_arranged, lse_arranged


def decode_application(q, k, v, length, pending, scale, o, lse):
    q_loaded = q
    scale_log2 = scale * 1.4426950408889634
    acc = ntl.zeros(o.shape, dtype=ntl.float32)
    m = ntl.full((q.shape[0],), float("-inf"), dtype=ntl.float32)
    l = ntl.zeros((q.shape[0],), dtype=ntl.float32)
    # The valid positions of this program's split, counted from its start.
    split = lse.offsets(2)  # one value: the tile lies in one split
    valid = ntl.sum(length, 0) + pending - split * k.source.shape[3]
    # Only the split's blocks that start before its last valid position are visited.
    count = ntl.minimum(ntl.maximum(valid + k[0].shape[0] - 1, 0) // k[0].shape[0], k.shape[0])
    for i in range(count):
        key = k[i].offsets(3)[None, :]
        s = ntl.dot(q_loaded, ntl.trans(k[i])) * scale_log2
        s = ntl.where((key < valid) & (key < k.source.shape[3]), s, float("-inf"))
        m_new = ntl.maximum(m, ntl.max(s, 1))
        p = ntl.exp2(s - m_new[:, None])
        alpha = ntl.exp2(m - m_new)
        acc = acc * alpha[:, None] + ntl.dot(p.to(v[i].dtype), v[i])
        l = l * alpha + ntl.sum(p, 1)
        m = m_new
    # A split with no valid key: l = 0, lse = -inf, its (zero) result weighs nothing.
    o = acc / ntl.where(l > 0, l, 1.0)[:, None]  # noqa: F841
    lse = m + ntl.log2(l)  # noqa: F841


_d = {"constexpr": True, "upper_bound": 256, "power_of_two": True}
decode_kernel = ntsym.make(
    decode_arrangement,
    decode_application,
    (Tensor(shape=(None, None, 1, None, None), shape_options=(None, None, None, None, _d)),
     Tensor(5, shape_options=(None, None, None, None, _d)),
     Tensor(5, shape_options=(None, None, None, None, _d)),
     Tensor(shape=(1,)),
     Tensor(0, dtype=ntsym.int64),
     Tensor(0),
     Tensor(5, shape_options=(None, None, None, None, _d)),
     Tensor(4)),
)


def combine_arrangement(o_part, lse, output):
    # o_part (B, Hkv, NSPLIT, G, D), lse (B, Hkv, NSPLIT, G), output (B, Hkv, G, D): one
    # program per query head, all splits in one tile.
    o_arranged = o_part.tile((1, 1, -1, 1, -1)).squeeze((2, 4))
    o_arranged.dtype = o_arranged.dtype.squeeze((0, 1, 3))
    lse_arranged = lse.tile((1, 1, -1, 1)).squeeze(2)
    lse_arranged.dtype = lse_arranged.dtype.squeeze((0, 1, 3))
    output_arranged = output.tile((1, 1, 1, -1)).squeeze(3)
    output_arranged.dtype = output_arranged.dtype.squeeze((0, 1, 2))
    return o_arranged, lse_arranged, output_arranged


def combine_application(o_part, lse, output):
    split = lse.offsets(2)
    weights_log2 = ntl.where(split < lse.source.shape[2], lse, float("-inf"))
    top = ntl.max(weights_log2, 0)
    w = ntl.exp2(weights_log2 - top)
    output = ntl.sum(o_part * w[:, None], 0) / ntl.sum(w, 0)  # noqa: F841


_splits = {"constexpr": True, "upper_bound": 256}
combine_kernel = ntsym.make(
    combine_arrangement,
    combine_application,
    (Tensor(5, shape_options=(None, None, _splits, None, _d)), Tensor(4, shape_options=(None, None, _splits, None)),
     Tensor(4, shape_options=(None, None, None, _d))),
)


def decode_splits(cache_len):
    """(BLOCK_SIZE_N, number of splits) for a cache of ``cache_len`` positions.

    Blocks of 64 keys (16 where ``cache_len`` is not a multiple of 64), grouped into
    at most 32 splits of equal length: the splits must divide the cache.
    """
    block_n = 64 if cache_len % 64 == 0 else 16
    if cache_len % block_n:
        raise ValueError(f"decode_attention: the cache length ({cache_len}) must be a multiple of 16")
    blocks = cache_len // block_n
    per_split = 1
    while blocks // per_split > 32 and blocks % (2 * per_split) == 0:
        per_split *= 2
    return block_n, blocks // per_split


# Caches of at most this many positions are walked by one program per batch and
# key/value head, without splits.  At two rows and 8 key/value heads (H100, fp16) that
# was 0.3-1.9 µs a layer faster than the splits and their combine up to about 250
# valid positions, and slower beyond (3.5 µs at 543, 6 µs at 1000): the walk of one
# program costs about 0.7 µs a block of 64 keys.
UNSPLIT_CACHE_LEN = 256


def padded_cache_len(n):
    """A cache length of at least ``n`` positions that ``decode_splits`` splits evenly."""
    step = 512 if n > 512 else 64
    return -(-n // step) * step


def decode_attention(q, k_cache, v_cache, length, scale=None, out=None, pending=0, unsplit_up_to=None):
    """``q`` ``(B, H, 1, D)`` against the first ``length + pending`` positions of
    ``(B, Hkv, L, D)`` caches.

    Returns ``(B, H, 1, D)`` (into ``out`` if given).  ``length`` is a one-element
    integer tensor; the splits are fixed by ``L``, so the call's shape, and a CUDA
    graph of it, does not depend on ``length``.  ``pending``: positions stored but
    not yet counted in ``length`` (a decode step's token, stored before the
    cache's length moves on).  Caches of at most ``unsplit_up_to`` positions
    (``UNSPLIT_CACHE_LEN`` by default) are walked without splits.
    """
    b, h, one, d = q.shape
    kv_heads, cache_len = k_cache.shape[1], k_cache.shape[2]
    scale = 1 / math.sqrt(d) if scale is None else scale
    block_n, n_split = decode_splits(cache_len)
    groups = h // kv_heads
    output = torch.empty_like(q, memory_format=torch.contiguous_format) if out is None else out
    # Unsplit, one program per batch and key/value head walks the whole valid cache
    # and writes the result itself: no combine kernel.
    unsplit = cache_len <= (UNSPLIT_CACHE_LEN if unsplit_up_to is None else unsplit_up_to)
    splits = 1 if unsplit else n_split
    lse = torch.empty((b, kv_heads, splits, groups), dtype=torch.float32, device=q.device)
    o = output.view(b, kv_heads, 1, groups, d) if unsplit else \
        torch.empty((b, kv_heads, splits, groups, d), dtype=torch.float32, device=q.device)
    decode_kernel(q.reshape(b, kv_heads, 1, groups, d), k_cache.unflatten(2, (splits, -1)),
                  v_cache.unflatten(2, (splits, -1)), length.reshape(1), int(pending), float(scale), o, lse,
                  BLOCK_SIZE_G=16, BLOCK_SIZE_N=block_n)
    if not unsplit:
        combine_kernel(o, lse, output.view(b, kv_heads, groups, d))
    return output


# -- Linear layers ----------------------------------------------------------------------


# The decode products' blocks: one block of 16 rows, narrow columns, long reductions.
_GEMV_M = ntsym.block_size(lower_bound=16, upper_bound=16)
_GEMV_N = ntsym.block_size(lower_bound=16, upper_bound=64)
_GEMV_K = ntsym.block_size(lower_bound=64, upper_bound=512)


def gemv_arrangement(input, other, output, BLOCK_SIZE_M=_GEMV_M, BLOCK_SIZE_N=_GEMV_N, BLOCK_SIZE_K=_GEMV_K):
    return _mm.arrangement(input, other, output, BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K)


gemv_kernel = ntsym.make(gemv_arrangement, _mm.application, (Tensor(2), Tensor(2), Tensor(2)),
                         max_num_configs=12)

GEMV_MAX_ROWS = 16


def linear(x, weight, out=None):
    """``x @ weight.T`` for ``x`` ``(..., K)`` and ``weight`` ``(N, K)``."""
    rows = x.reshape(-1, x.shape[-1])
    output = torch.empty((*x.shape[:-1], weight.shape[0]), dtype=x.dtype, device=x.device) if out is None else out
    if rows.shape[0] <= GEMV_MAX_ROWS:
        # One block of rows; the tuner picks the columns and reduction blocks.
        gemv_kernel(rows, weight.t(), output.view(-1, weight.shape[0]), BLOCK_SIZE_M=GEMV_MAX_ROWS)
    else:
        _mm.kernel(rows, weight.t(), output.view(-1, weight.shape[0]))
    return output


def gemv_add_arrangement(input, other, addend, output, BLOCK_SIZE_M=_GEMV_M, BLOCK_SIZE_N=_GEMV_N,
                         BLOCK_SIZE_K=_GEMV_K):
    input_arranged, other_arranged, output_arranged = _mm.arrangement(
        input, other, output, BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K)
    return input_arranged, other_arranged, addend.tile((BLOCK_SIZE_M, BLOCK_SIZE_N)), output_arranged


def gemv_add_application(input, other, addend, output):
    accumulator = ntl.zeros(output.shape, dtype=ntl.float32)
    for k in range(input.shape[0]):
        accumulator += ntl.dot(input[k], other[k])
    output = accumulator + ntl.cast(addend, ntl.float32)  # noqa: F841


gemv_add_kernel = ntsym.make(gemv_add_arrangement, gemv_add_application,
                             (Tensor(2), Tensor(2), Tensor(2), Tensor(2)), max_num_configs=12)


def mm_add_arrangement(input, other, addend, output, BLOCK_SIZE_M=ntsym.block_size(lower_bound=16),
                       BLOCK_SIZE_N=ntsym.block_size(lower_bound=16), BLOCK_SIZE_K=ntsym.block_size(lower_bound=16)):
    """``gemv_add_arrangement`` with every block size tuned: a prompt's rows."""
    return gemv_add_arrangement(input, other, addend, output, BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K)


mm_add_kernel = ntsym.make(mm_add_arrangement, gemv_add_application, (Tensor(2), Tensor(2), Tensor(2), Tensor(2)))


def linear_add(x, weight, addend):
    """``x @ weight.T + addend`` (a residual connection after a projection):
    the sum is the product's epilogue, in float32 with one rounding (no
    kernel of its own, no second pass over the output); at most 16 rows in
    one block of rows (a decode step), more (a prompt) in tuned tiles."""
    rows = x.reshape(-1, x.shape[-1])
    columns = weight.shape[0]
    output = torch.empty((*x.shape[:-1], columns), dtype=x.dtype, device=x.device)
    if rows.shape[0] > GEMV_MAX_ROWS:
        mm_add_kernel(rows, weight.t(), addend.reshape(-1, columns), output.view(-1, columns))
    else:
        gemv_add_kernel(rows, weight.t(), addend.reshape(-1, columns), output.view(-1, columns),
                        BLOCK_SIZE_M=GEMV_MAX_ROWS)
    return output


# -- The MLP's gate and up products with SiLU-and-multiply as their epilogue (decode) ----------


def gemv_swiglu_arrangement(input, gate, up, output, BLOCK_SIZE_M=_GEMV_M, BLOCK_SIZE_N=_GEMV_N,
                            BLOCK_SIZE_K=_GEMV_K):
    input_arranged, gate_arranged, output_arranged = _mm.arrangement(
        input, gate, output, BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K)
    up_arranged = _mm.arrangement(input, up, output, BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K)[1]
    return input_arranged, gate_arranged, up_arranged, output_arranged


def gemv_swiglu_application(input, gate, up, output):
    g = ntl.zeros(output.shape, dtype=ntl.float32)
    u = ntl.zeros(output.shape, dtype=ntl.float32)
    for k in range(input.shape[0]):
        x = input[k]
        g += ntl.dot(x, gate[k])
        u += ntl.dot(x, up[k])
    # transformers rounds each product to the activations' dtype before SiLU.
    g = ntl.cast(ntl.cast(g, input.source.dtype), ntl.float32)
    u = ntl.cast(ntl.cast(u, input.source.dtype), ntl.float32)
    output = g * ntl.sigmoid(g) * u  # noqa: F841


gemv_swiglu_kernel = ntsym.make(gemv_swiglu_arrangement, gemv_swiglu_application,
                                (Tensor(2), Tensor(2), Tensor(2), Tensor(2)), max_num_configs=12)


def mm_swiglu_arrangement(input, gate, up, output, BLOCK_SIZE_M=ntsym.block_size(lower_bound=16),
                          BLOCK_SIZE_N=ntsym.block_size(lower_bound=16), BLOCK_SIZE_K=ntsym.block_size(lower_bound=16)):
    """``gemv_swiglu_arrangement`` with every block size tuned: a prompt's rows."""
    return gemv_swiglu_arrangement(input, gate, up, output, BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K)


mm_swiglu_kernel = ntsym.make(mm_swiglu_arrangement, gemv_swiglu_application,
                              (Tensor(2), Tensor(2), Tensor(2), Tensor(2)))


def linear_swiglu(x, gate_up, size):
    """``silu(x @ gate.T) * (x @ up.T)``, the MLP's first half, for the fused
    weight ``gate_up`` ``(2 * size, K)`` (``gate`` its first ``size`` rows, ``up``
    the rest), in one kernel: each program computes the same columns of both
    products and stores ``silu(gate) * up`` (the products rounded to ``x``'s
    dtype first, as ``silu_and_mul`` of ``linear``'s output sees them); at most
    16 rows in one block of rows (a decode step), more (a prompt) in tuned tiles."""
    rows = x.reshape(-1, x.shape[-1])
    output = torch.empty((*x.shape[:-1], size), dtype=x.dtype, device=x.device)
    if rows.shape[0] > GEMV_MAX_ROWS:
        mm_swiglu_kernel(rows, gate_up[:size].t(), gate_up[size:].t(), output.view(-1, size))
    else:
        gemv_swiglu_kernel(rows, gate_up[:size].t(), gate_up[size:].t(), output.view(-1, size),
                           BLOCK_SIZE_M=GEMV_MAX_ROWS)
    return output


# -- RMSNorm folded into the decode products ---------------------------------------------------
#
# A decoder layer's RMSNorm, ``w * h / sqrt(mean(h**2) + eps)``, needs the sum of
# squares of all of ``h``'s row, which no single program of the product that
# writes ``h`` sees.  So that no kernel of its own normalises ``h`` in a decode
# step, the work is split between the two products around it:
#
# - the product that writes ``h`` (the residual stream: the output projection and
#   the down projection, with their residual additions) also writes ``w * h``
#   (the next norm's weight applied, column by column) and the sums of squares of
#   ``h``'s row in groups of ``SQUARES_GROUP`` columns (``squares``: each program
#   its columns' groups, so no atomics and a deterministic result);
# - the product that reads the norm's output (q/k/v, gate/up) reads ``w * h``
#   and multiplies its accumulator by ``1 / sqrt(sum(squares) / K + eps)`` (the
#   factor is the same for a whole row, so it commutes with the product).
#
# Rounding: transformers rounds ``h / rms`` to the activations' dtype before the
# weight; here ``w * h`` is rounded once and the factor applied in float32.

SQUARES_GROUP = 16  # columns summed into one element of ``squares`` (the smallest block)


def row_squares_arrangement(input, weight, normed, squares):
    # input, normed (R, N): a row per program; weight (1, N); squares (R, N / SQUARES_GROUP).
    input_arranged = input.tile((1, -1))
    weight_arranged = weight.tile((1, -1)).expand((input_arranged.shape[0], -1))
    return input_arranged, weight_arranged, normed.tile((1, -1)), squares.tile((1, -1))


def row_squares_application(input, weight, normed, squares):
    x = ntl.cast(input, ntl.float32)
    normed = weight * x  # noqa: F841
    squares = ntl.sum(ntl.reshape(x * x, (1, input.shape[1] // SQUARES_GROUP, SQUARES_GROUP)), 2)  # noqa: F841


_groups = {"constexpr": True, "upper_bound": 2**15 // SQUARES_GROUP}
row_squares_kernel = ntsym.make(
    row_squares_arrangement,
    row_squares_application,
    (Tensor(2, shape_options=_row), Tensor(shape=(1, None), shape_options=_row), Tensor(2, shape_options=_row),
     Tensor(2, shape_options=(None, _groups))),
)


def foldable(x, norm_weight):
    """Whether a decode product can take the norm of ``x`` (rows ``(..., K)``)
    with ``norm_weight`` folded in: at most GEMV_MAX_ROWS rows, K a multiple of
    SQUARES_GROUP."""
    rows = x.numel() // x.shape[-1]
    return rows <= GEMV_MAX_ROWS and x.shape[-1] % SQUARES_GROUP == 0 and norm_weight.shape == x.shape[-1:]


def row_squares(x, norm_weight):
    """``(norm_weight * x, squares)`` of ``x`` ``(..., K)``: the operands with
    which ``linear_normed``/``linear_swiglu_normed`` compute the product of
    ``rms_norm(x, norm_weight, eps)`` (one kernel, a row per program)."""
    k = x.shape[-1]
    rows = x.reshape(-1, k)
    normed = torch.empty_like(x, memory_format=torch.contiguous_format)
    squares = torch.empty((rows.shape[0], k // SQUARES_GROUP), dtype=torch.float32, device=x.device)
    row_squares_kernel(rows, norm_weight.view(1, k), normed.view(-1, k), squares)
    return normed, squares


def gemv_add_squares_arrangement(input, other, addend, weight, output, normed, squares, BLOCK_SIZE_M=_GEMV_M,
                                 BLOCK_SIZE_N=_GEMV_N, BLOCK_SIZE_K=_GEMV_K):
    input_arranged, other_arranged, output_arranged = _mm.arrangement(
        input, other, output, BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K)
    weight_arranged = weight.tile((1, BLOCK_SIZE_N)).expand((output_arranged.shape[0], -1))
    return (input_arranged, other_arranged, addend.tile((BLOCK_SIZE_M, BLOCK_SIZE_N)), weight_arranged,
            output_arranged, normed.tile((BLOCK_SIZE_M, BLOCK_SIZE_N)),
            squares.tile((BLOCK_SIZE_M, BLOCK_SIZE_N // SQUARES_GROUP)))


def gemv_add_squares_application(input, other, addend, weight, output, normed, squares):
    accumulator = ntl.zeros(output.shape, dtype=ntl.float32)
    for k in range(input.shape[0]):
        accumulator += ntl.dot(input[k], other[k])
    # The next norm sees the sum as stored (rounded to the output's dtype).
    h = ntl.cast(ntl.cast(accumulator + ntl.cast(addend, ntl.float32), output.source.dtype), ntl.float32)
    output = h  # noqa: F841
    normed = weight * h  # noqa: F841
    groups = ntl.reshape(h * h, (output.shape[0], output.shape[1] // SQUARES_GROUP, SQUARES_GROUP))
    squares = ntl.sum(groups, 2)  # noqa: F841


gemv_add_squares_kernel = ntsym.make(gemv_add_squares_arrangement, gemv_add_squares_application,
                                     tuple(Tensor(2) for _ in range(7)), max_num_configs=12)


def linear_add_squares(x, weight, addend, norm_weight):
    """``h = x @ weight.T + addend`` with the next RMSNorm's operands
    (``norm_weight * h`` and the squares of ``h``'s row): ``(h, normed, squares)``.
    Decode only (``foldable``); one kernel."""
    rows = x.reshape(-1, x.shape[-1])
    columns = weight.shape[0]
    if rows.shape[0] > GEMV_MAX_ROWS or columns % SQUARES_GROUP:
        raise ValueError(f"linear_add_squares: {rows.shape[0]} rows (at most {GEMV_MAX_ROWS}) and {columns} "
                         f"columns (a multiple of {SQUARES_GROUP}) expected")
    output = torch.empty((*x.shape[:-1], columns), dtype=x.dtype, device=x.device)
    normed = torch.empty_like(output)
    squares = torch.empty((rows.shape[0], columns // SQUARES_GROUP), dtype=torch.float32, device=x.device)
    gemv_add_squares_kernel(rows, weight.t(), addend.reshape(-1, columns), norm_weight.view(1, columns),
                            output.view(-1, columns), normed.view(-1, columns), squares,
                            BLOCK_SIZE_M=GEMV_MAX_ROWS)
    return output, normed, squares


def _arrange_squares(squares, output_arranged, BLOCK_SIZE_M):
    """A block of rows of ``squares`` whole, for each program of a row block."""
    return squares.tile((BLOCK_SIZE_M, -1)).expand((-1, output_arranged.shape[1]))


def _norm_factor(squares, input, eps):
    """Each row's ``1 / sqrt(mean(x**2) + eps)`` from its sums of squares, as a column."""
    return ntl.rsqrt(ntl.sum(squares, 1) / input.source.shape[1] + eps)[:, None]


def gemv_normed_arrangement(input, other, squares, eps, output, BLOCK_SIZE_M=_GEMV_M, BLOCK_SIZE_N=_GEMV_N,
                            BLOCK_SIZE_K=_GEMV_K):
    input_arranged, other_arranged, output_arranged = _mm.arrangement(
        input, other, output, BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K)
    return (input_arranged, other_arranged, _arrange_squares(squares, output_arranged, BLOCK_SIZE_M), eps,
            output_arranged)


def gemv_normed_application(input, other, squares, eps, output):
    factor = _norm_factor(squares, input, eps)  # before the loop: its loads overlap the weight's
    accumulator = ntl.zeros(output.shape, dtype=ntl.float32)
    for k in range(input.shape[0]):
        accumulator += ntl.dot(input[k], other[k])
    output = accumulator * factor  # noqa: F841


_squares = Tensor(2, shape_options=(None, _groups))
gemv_normed_kernel = ntsym.make(gemv_normed_arrangement, gemv_normed_application,
                                (Tensor(2), Tensor(2), _squares, Tensor(0), Tensor(2)), max_num_configs=12)


def linear_normed(normed, squares, eps, weight):
    """``rms_norm(x, w, eps) @ weight.T`` from ``normed = w * x`` and ``x``'s
    ``squares`` (``row_squares`` or ``linear_add_squares``); decode only."""
    k = normed.shape[-1]
    output = torch.empty((*normed.shape[:-1], weight.shape[0]), dtype=normed.dtype, device=normed.device)
    gemv_normed_kernel(normed.reshape(-1, k), weight.t(), squares, float(eps), output.view(-1, weight.shape[0]),
                       BLOCK_SIZE_M=GEMV_MAX_ROWS)
    return output


def gemv_swiglu_normed_arrangement(input, gate, up, squares, eps, output, BLOCK_SIZE_M=_GEMV_M,
                                   BLOCK_SIZE_N=_GEMV_N, BLOCK_SIZE_K=_GEMV_K):
    input_arranged, gate_arranged, up_arranged, output_arranged = gemv_swiglu_arrangement(
        input, gate, up, output, BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K)
    return (input_arranged, gate_arranged, up_arranged, _arrange_squares(squares, output_arranged, BLOCK_SIZE_M),
            eps, output_arranged)


def gemv_swiglu_normed_application(input, gate, up, squares, eps, output):
    factor = _norm_factor(squares, input, eps)  # before the loop: its loads overlap the weights'
    g = ntl.zeros(output.shape, dtype=ntl.float32)
    u = ntl.zeros(output.shape, dtype=ntl.float32)
    for k in range(input.shape[0]):
        x = input[k]
        g += ntl.dot(x, gate[k])
        u += ntl.dot(x, up[k])
    g = ntl.cast(ntl.cast(g * factor, input.source.dtype), ntl.float32)
    u = ntl.cast(ntl.cast(u * factor, input.source.dtype), ntl.float32)
    output = g * ntl.sigmoid(g) * u  # noqa: F841


gemv_swiglu_normed_kernel = ntsym.make(
    gemv_swiglu_normed_arrangement, gemv_swiglu_normed_application,
    (Tensor(2), Tensor(2), Tensor(2), _squares, Tensor(0), Tensor(2)), max_num_configs=12)


def linear_swiglu_normed(normed, squares, eps, gate_up, size):
    """``linear_swiglu(rms_norm(x, w, eps), gate_up, size)`` from ``normed = w * x``
    and ``x``'s ``squares``; decode only."""
    k = normed.shape[-1]
    output = torch.empty((*normed.shape[:-1], size), dtype=normed.dtype, device=normed.device)
    gemv_swiglu_normed_kernel(normed.reshape(-1, k), gate_up[:size].t(), gate_up[size:].t(), squares, float(eps),
                              output.view(-1, size), BLOCK_SIZE_M=GEMV_MAX_ROWS)
    return output


# -- The rotary embedding's tables ------------------------------------------------------------


def rope_tables_arrangement(positions, frequencies, scaling, cos, sin):
    # positions (R, 1): a row per program; frequencies (1, D): the inverse frequencies twice
    # (transformers' tables are the two equal halves); cos, sin (R, D).
    positions_arranged = positions.tile((1, 1))
    frequencies_arranged = frequencies.tile((1, -1)).expand((positions_arranged.shape[0], -1))
    return positions_arranged, frequencies_arranged, scaling, cos.tile((1, -1)), sin.tile((1, -1))


def rope_tables_application(positions, frequencies, scaling, cos, sin):
    # As transformers: float32 angles (the position times the inverse frequency), the
    # cosine and sine times the scaling, rounded to the tables' dtype.  libdevice's
    # accurate cos/sin: the angles reach thousands of radians.
    angles = ntl.cast(positions, ntl.float32) * frequencies
    cos = ntl.libdevice.cos(angles) * scaling  # noqa: F841
    sin = ntl.libdevice.sin(angles) * scaling  # noqa: F841


_head = {"constexpr": True, "upper_bound": 1024}
rope_tables_kernel = ntsym.make(
    rope_tables_arrangement,
    rope_tables_application,
    (Tensor(2), Tensor(shape=(1, None), shape_options=(None, _head)), Tensor(0),
     Tensor(2, shape_options=(None, _head)), Tensor(2, shape_options=(None, _head))),
)


def rope_tables(position_ids, inv_freq, scaling, dtype):
    """``(cos, sin)`` ``(..., D)`` in ``dtype`` for ``position_ids`` ``(...)``, as
    transformers' ``LlamaRotaryEmbedding`` computes them from ``inv_freq``
    ``(D/2,)`` (its cosines and sines of ``position * inv_freq``, twice, times
    ``scaling``); one kernel, a position per program."""
    frequencies = torch.cat((inv_freq, inv_freq)).to(torch.float32).view(1, -1)
    positions = position_ids.reshape(-1, 1)
    d = frequencies.shape[1]
    cos = torch.empty((*position_ids.shape, d), dtype=dtype, device=position_ids.device)
    sin = torch.empty_like(cos)
    rope_tables_kernel(positions, frequencies, float(scaling), cos.view(-1, d), sin.view(-1, d))
    return cos, sin


# -- Greedy choice: the argmax of each row of logits ----------------------------------------

ARGMAX_BLOCK = 2048  # columns a program of the first pass reads


def argmax_blocks_arrangement(input, values, indices):
    # input (R, V) in blocks of ARGMAX_BLOCK columns; values, indices (R, P): one per block.
    return input.tile((1, ARGMAX_BLOCK)), values.tile((1, 1)), indices.tile((1, 1))


def argmax_blocks_application(input, values, indices):
    # torch's argmax takes a NaN for the maximum: a block's first NaN (its value NaN),
    # else its first maximum.
    x = ntl.cast(input, ntl.float32)
    nan = ntl.cast(x != x, ntl.int32)
    has_nan = ntl.max(nan, 1) > 0
    clean = ntl.where(x != x, float("-inf"), x)
    values = ntl.where(has_nan, float("nan"), ntl.max(clean, 1))[:, None]  # noqa: F841
    first = ntl.where(has_nan, ntl.argmax(nan, 1), ntl.argmax(clean, 1))
    indices = (first + ntl.min(input.offsets(1)))[:, None]  # noqa: F841


argmax_blocks_kernel = ntsym.make(argmax_blocks_arrangement, argmax_blocks_application,
                                  (Tensor(2), Tensor(2), Tensor(2, dtype=ntsym.int64)))


def argmax_rows_arrangement(values, indices, output):
    # values, indices (R, P): a row's blocks in one tile; output (R, 1).
    return values.tile((1, -1)), indices.tile((1, -1)), output.tile((1, 1))


def argmax_rows_application(values, indices, output):
    # The first block holding a NaN, else the first holding the maximum: argmax's first
    # index, as torch's (blocks in column order).
    nan = values != values
    has_nan = ntl.max(ntl.cast(nan, ntl.int32), 1) > 0
    top = ntl.max(ntl.where(nan, float("-inf"), values), 1)
    hit = ntl.where(has_nan[:, None], nan, values == top[:, None])
    output = ntl.min(ntl.where(hit, indices, 2**62), 1)[:, None]  # noqa: F841


_blocks = {"constexpr": True, "upper_bound": 2**14}
argmax_rows_kernel = ntsym.make(argmax_rows_arrangement, argmax_rows_application,
                                (Tensor(2, shape_options=(None, _blocks)),
                                 Tensor(2, dtype=ntsym.int64, shape_options=(None, _blocks)),
                                 Tensor(2, dtype=ntsym.int64)))


def argmax(logits, out=None):
    """``logits.argmax(-1, keepdim=True)`` of ``(R, V)`` logits (the first index
    of each row's maximum) in two kernels: the maximum and its index in each
    block of ARGMAX_BLOCK columns, then each row's over its blocks; into
    ``out`` ``(R, 1)`` (int64) if given.  (torch reduces each of a decode
    step's two rows of 128,256 logits with one block of threads.)"""
    rows, columns = logits.shape
    blocks = -(-columns // ARGMAX_BLOCK)
    values = torch.empty((rows, blocks), dtype=torch.float32, device=logits.device)
    indices = torch.empty((rows, blocks), dtype=torch.int64, device=logits.device)
    argmax_blocks_kernel(logits, values, indices)
    output = torch.empty((rows, 1), dtype=torch.int64, device=logits.device) if out is None else out
    argmax_rows_kernel(values, indices, output)
    return output


# -- SiLU-and-multiply --------------------------------------------------------------------


def silu_mul_arrangement(gate, up, output, BLOCK_SIZE=ntsym.block_size(lower_bound=256, upper_bound=2048)):
    return gate.tile((1, BLOCK_SIZE)), up.tile((1, BLOCK_SIZE)), output.tile((1, BLOCK_SIZE))


def silu_mul_application(gate, up, output):
    g = ntl.cast(gate, ntl.float32)
    output = g * ntl.sigmoid(g) * ntl.cast(up, ntl.float32)  # noqa: F841


silu_mul_kernel = ntsym.make(silu_mul_arrangement, silu_mul_application, (Tensor(2), Tensor(2), Tensor(2)))


def silu_and_mul(gate, up):
    """``silu(gate) * up``, row by row: ``gate`` and ``up`` may be column
    views of one product (``gate_up[..., :n]``, ``gate_up[..., n:]``)."""
    output = torch.empty_like(gate, memory_format=torch.contiguous_format)
    columns = gate.shape[-1]
    silu_mul_kernel(gate.reshape(-1, columns), up.reshape(-1, columns), output.view(-1, columns))
    return output
