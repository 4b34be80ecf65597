"""Scaled dot-product attention, FlashAttention-2 style.

``q``, ``k``, ``v`` and the output are ``(B, H, S, D)``.  Each program takes a
block of queries of one head (auto-tuned ``BLOCK_SIZE_M``) and loops over the
key/value blocks of that head (auto-tuned ``BLOCK_SIZE_N``), keeping a running
max ``m``, a running sum ``l`` and an unnormalized float32 accumulator: the
online softmax, in base 2.  Keys past the sequence end, and with ``is_causal``
keys after the query (top-left aligned, as in torch), get ``-inf`` scores.
The causal kernel stops at the diagonal: key blocks wholly before a query
block's first query are visited without the causal mask, those crossing the
diagonal with it, and those after its last query not at all (half the work).  ``k`` and ``v`` share
their length, which may differ from ``q``'s; all share ``D``, a compile-time size
(``constexpr``, at most 256, checked at launch) padded to a power of two (at
least 16 on a GPU: ``dot``'s minimum); power-of-two head dimensions take an
unpadded, unmasked kernel.  ``scale`` defaults to ``1/sqrt(D)``; ``is_causal`` is a compile-time flag.
At head dimension 128, from 1024 queries (4096 causal), each program takes two
blocks of queries (``kernel_pairs``), their steps interleaved.
"""

import math

import torch

import ntsym
import ntsym.language as ntl
from ntsym import Tensor


def arrangement(
    q,
    k,
    v,
    scale,
    is_causal,
    o,
    BLOCK_SIZE_M=ntsym.block_size(lower_bound=16, upper_bound=128),
    BLOCK_SIZE_N=ntsym.block_size(lower_bound=16, upper_bound=128),
):
    def arrange_q_or_o(x):
        arranged = x.tile((1, 1, BLOCK_SIZE_M, -1))
        arranged.dtype = arranged.dtype.squeeze((0, 1))
        return arranged

    q_arranged = arrange_q_or_o(q)
    k_arranged, v_arranged = (arrange_k_or_v(x, BLOCK_SIZE_N, q_arranged.shape[2]) for x in (k, v))

    return q_arranged, k_arranged, v_arranged, scale, is_causal, arrange_q_or_o(o)


def arrange_k_or_v(x, BLOCK_SIZE_N, programs):
    """``x``'s blocks of ``BLOCK_SIZE_N`` keys (or values) of each head, all of
    them, for each of the ``programs`` along the queries."""
    arranged = x.tile((1, 1, BLOCK_SIZE_N, -1))
    arranged.dtype = arranged.dtype.squeeze((0, 1))
    arranged = arranged.tile((1, 1, -1, -1))
    arranged = arranged.expand((-1, -1, programs, -1))
    arranged.dtype = arranged.dtype.squeeze((0, 1, 3))
    return arranged


def application(q, k, v, scale, is_causal, o):
    q_loaded = q  # loaded once, outside the loop
    scale_log2 = scale * 1.4426950408889634  # exp(x) == exp2(x * log2(e))
    acc = ntl.zeros(o.shape, dtype=ntl.float32)
    m = ntl.full((q.shape[0],), float("-inf"), dtype=ntl.float32)
    l = ntl.zeros((q.shape[0],), dtype=ntl.float32)

    # The three loops repeat one body, each with the masks its blocks need:
    # written out, each keeps what ntsym proves of its own blocks.
    # Non-causal first: its loop over every key block has ntsym check at
    # launch that `v` has `k`'s length, which the causal loops then use.
    if not is_causal:
        for i in range(k.shape[0]):
            key = k[i].offsets(2)[None, :]  # offsets(2): the block's key positions, a vector
            s = ntl.dot(q_loaded, ntl.trans(k[i])) * scale_log2
            s = ntl.where(key < k.source.shape[2], s, float("-inf"))

            m_new = ntl.maximum(m, ntl.max(s, 1))
            p = ntl.exp2(s - m_new[:, None])
            alpha = ntl.exp2(m - m_new)
            acc = acc * alpha[:, None] + ntl.dot(p.to(v[i].dtype), v[i])
            l = l * alpha + ntl.sum(p, 1)
            m = m_new
    else:
        # Key blocks wholly before the block's first query (and wholly
        # inside the keys) need no mask; those past its last query are all
        # masked: not visited.  ntsym follows `first` and `last` as index
        # math: the first loop's loads are proved whole and carry no mask.
        first = ntl.minimum(ntl.min(q.offsets(2), 0), k.source.shape[2]) // k[0].shape[0]
        last = ntl.minimum(ntl.max(q.offsets(2), 0) // k[0].shape[0] + 1, k.shape[0])
        for i in range(first):
            s = ntl.dot(q_loaded, ntl.trans(k[i])) * scale_log2
            m_new = ntl.maximum(m, ntl.max(s, 1))
            p = ntl.exp2(s - m_new[:, None])
            alpha = ntl.exp2(m - m_new)
            acc = acc * alpha[:, None] + ntl.dot(p.to(v[i].dtype), v[i])
            l = l * alpha + ntl.sum(p, 1)
            m = m_new
        for j in range(first, last):
            key = k[j].offsets(2)[None, :]
            s = ntl.dot(q_loaded, ntl.trans(k[j])) * scale_log2
            # Two selects, not one of `&`: where the key block is whole, ntsym
            # proves the first and drops it.
            s = ntl.where(key < k.source.shape[2], s, float("-inf"))
            s = ntl.where(q.offsets(2)[:, None] >= key, s, float("-inf"))
            m_new = ntl.maximum(m, ntl.max(s, 1))
            p = ntl.exp2(s - m_new[:, None])
            alpha = ntl.exp2(m - m_new)
            acc = acc * alpha[:, None] + ntl.dot(p.to(v[j].dtype), v[j])
            l = l * alpha + ntl.sum(p, 1)
            m = m_new

    o = acc / l[:, None]  # noqa: F841


head = (None, None, None, {"constexpr": True, "upper_bound": 256})  # D is one tile
tensors = (
    Tensor(4, shape_options=head), Tensor(4, shape_options=head), Tensor(4, shape_options=head),
    Tensor(0), Tensor(0, constexpr=True), Tensor(4, shape_options=head),
)

kernel = ntsym.make(arrangement, application, tensors)

# The usual head dimensions are powers of two: declared so, their tiles need no
# padding and no masks (a compile-time size, checked at launch).
head = (None, None, None, {"constexpr": True, "upper_bound": 256, "power_of_two": True})
kernel_pow2_head = ntsym.make(
    arrangement,
    application,
    (Tensor(4, shape_options=head), Tensor(4, shape_options=head), Tensor(4, shape_options=head),
     Tensor(0), Tensor(0, constexpr=True), Tensor(4, shape_options=head)),
)



# Pairs of query tiles: each program takes two and walks the key/value blocks
# once for both.  In the loop the second tile's products are issued before the
# first tile's softmax, so the tensor cores have independent work beside each
# softmax (FlashAttention-3 overlaps the two by specializing warps; here the
# order of the instructions does it).  On an H200, bf16, head dim 128,
# non-causal: 7-11 % less time than one tile a program from 1k to 16k tokens;
# causal, 1-5 % less from 4k (bf16 and fp16), 1-5 % more at 2k and 10 % more
# at 1k, where the diagonals are a larger part of the work.  Not taken
# elsewhere: no gain at head dim 64, 2.3x the time at 256 (registers)
# (benchmarks/lab/sdpa_halves.py).  Nor for fewer than 1024 queries, not
# measured: a decode step's one query would take two blocks, the second
# wholly past it, with half the programs.
def arrangement_pairs(
    q,
    k,
    v,
    scale,
    is_causal,
    o,
    BLOCK_SIZE_M=ntsym.block_size(lower_bound=16, upper_bound=128),
    BLOCK_SIZE_N=ntsym.block_size(lower_bound=16, upper_bound=128),
):
    def arrange_q_or_o(x):  # pairs of (BLOCK_SIZE_M, D) tiles
        arranged = x.tile((1, 1, BLOCK_SIZE_M, -1)).tile((1, 1, 2, -1))
        arranged.dtype = arranged.dtype.squeeze((0, 1, 3))
        arranged.dtype.dtype = arranged.dtype.dtype.squeeze((0, 1))
        return arranged

    q_arranged = arrange_q_or_o(q)
    k_arranged, v_arranged = (arrange_k_or_v(x, BLOCK_SIZE_N, q_arranged.shape[2]) for x in (k, v))

    return q_arranged, k_arranged, v_arranged, scale, is_causal, arrange_q_or_o(o)


def online_step(s, m, l, acc, v):
    """One key block's online-softmax update of one query tile (scores in base 2)."""
    m_new = ntl.maximum(m, ntl.max(s, 1))
    p = ntl.exp2(s - m_new[:, None])
    alpha = ntl.exp2(m - m_new)
    acc = acc * alpha[:, None] + ntl.dot(p.to(v.dtype), v)
    l = l * alpha + ntl.sum(p, 1)
    return m_new, l, acc


def application_pairs(q, k, v, scale, is_causal, o):
    qa = q[0]  # the pair's first tile of queries, loaded once
    qb = q[1]
    scale_log2 = scale * 1.4426950408889634
    acc_a = ntl.zeros(qa.shape, dtype=ntl.float32)
    acc_b = ntl.zeros(qb.shape, dtype=ntl.float32)
    m_a = ntl.full((qa.shape[0],), float("-inf"), dtype=ntl.float32)
    m_b = ntl.full((qb.shape[0],), float("-inf"), dtype=ntl.float32)
    l_a = ntl.zeros((qa.shape[0],), dtype=ntl.float32)
    l_b = ntl.zeros((qb.shape[0],), dtype=ntl.float32)

    # `application`'s loops, each body once for both tiles.
    if not is_causal:
        for i in range(k.shape[0]):
            key = k[i].offsets(2)[None, :]
            key_t = ntl.trans(k[i])
            value = v[i]
            s_a = ntl.dot(qa, key_t) * scale_log2
            s_b = ntl.dot(qb, key_t) * scale_log2
            s_a = ntl.where(key < k.source.shape[2], s_a, float("-inf"))
            s_b = ntl.where(key < k.source.shape[2], s_b, float("-inf"))
            m_a, l_a, acc_a = online_step(s_a, m_a, l_a, acc_a, value)
            m_b, l_b, acc_b = online_step(s_b, m_b, l_b, acc_b, value)
    else:
        # Key blocks before the pair's first query: neither tile masked.  Then
        # the first tile's diagonal (the second tile wholly after it, so not
        # masked), the blocks both tiles cross (none where the key blocks are
        # no larger than the query tiles), and the second tile's diagonal,
        # where the first has no keys left: the pair visits each tile's keys
        # once, the masks where its own diagonal lies.  mid <= last_a <= last.
        nk = k.shape[0]
        first = ntl.minimum(ntl.min(q[0].offsets(2), 0), k.source.shape[2]) // k[0].shape[0]
        mid = ntl.minimum(ntl.min(q[1].offsets(2), 0), k.source.shape[2]) // k[0].shape[0]
        last_a = ntl.minimum(ntl.max(q[0].offsets(2), 0) // k[0].shape[0] + 1, nk)
        last = ntl.minimum(ntl.max(q[1].offsets(2), 0) // k[0].shape[0] + 1, nk)
        for i in range(first):
            key_t = ntl.trans(k[i])
            value = v[i]
            s_a = ntl.dot(qa, key_t) * scale_log2
            s_b = ntl.dot(qb, key_t) * scale_log2
            m_a, l_a, acc_a = online_step(s_a, m_a, l_a, acc_a, value)
            m_b, l_b, acc_b = online_step(s_b, m_b, l_b, acc_b, value)
        for j in range(first, mid):
            key = k[j].offsets(2)[None, :]
            key_t = ntl.trans(k[j])
            value = v[j]
            s_a = ntl.dot(qa, key_t) * scale_log2
            s_b = ntl.dot(qb, key_t) * scale_log2
            s_a = ntl.where(key < k.source.shape[2], s_a, float("-inf"))
            s_a = ntl.where(q[0].offsets(2)[:, None] >= key, s_a, float("-inf"))
            m_a, l_a, acc_a = online_step(s_a, m_a, l_a, acc_a, value)
            m_b, l_b, acc_b = online_step(s_b, m_b, l_b, acc_b, value)
        for j in range(mid, last_a):
            key = k[j].offsets(2)[None, :]
            key_t = ntl.trans(k[j])
            value = v[j]
            s_a = ntl.dot(qa, key_t) * scale_log2
            s_b = ntl.dot(qb, key_t) * scale_log2
            s_a = ntl.where(key < k.source.shape[2], s_a, float("-inf"))
            s_b = ntl.where(key < k.source.shape[2], s_b, float("-inf"))
            s_a = ntl.where(q[0].offsets(2)[:, None] >= key, s_a, float("-inf"))
            s_b = ntl.where(q[1].offsets(2)[:, None] >= key, s_b, float("-inf"))
            m_a, l_a, acc_a = online_step(s_a, m_a, l_a, acc_a, value)
            m_b, l_b, acc_b = online_step(s_b, m_b, l_b, acc_b, value)
        for j in range(last_a, last):
            key = k[j].offsets(2)[None, :]
            s_b = ntl.dot(qb, ntl.trans(k[j])) * scale_log2
            s_b = ntl.where(key < k.source.shape[2], s_b, float("-inf"))
            s_b = ntl.where(q[1].offsets(2)[:, None] >= key, s_b, float("-inf"))
            m_b, l_b, acc_b = online_step(s_b, m_b, l_b, acc_b, v[j])

    o[0] = acc_a / l_a[:, None]
    o[1] = acc_b / l_b[:, None]


kernel_pairs = ntsym.make(
    arrangement_pairs,
    application_pairs,
    (Tensor(4, shape_options=head), Tensor(4, shape_options=head), Tensor(4, shape_options=head),
     Tensor(0), Tensor(0, constexpr=True), Tensor(4, shape_options=head)),
    kernel_name="sdpa_pairs",
)

def sdpa(q, k, v, is_causal=False, scale=None):
    """``F.scaled_dot_product_attention(q, k, v, is_causal=..., scale=...)``
    for ``(B, H, S, D)`` tensors whose batch and head dimensions broadcast, as
    torch's do; ``v``'s head dimension is ``q``'s and ``k``'s here."""
    if q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        raise ValueError(f"sdpa: q, k and v must be (B, H, S, D), got {tuple(q.shape)}, {tuple(k.shape)}, "
                         f"{tuple(v.shape)}")
    if not q.shape[-1] == k.shape[-1] == v.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ValueError(f"sdpa: q, k and v must share their head dimension and k and v their length, got "
                         f"{tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}")
    if not q.shape[:2] == k.shape[:2] == v.shape[:2]:  # broadcast_shapes costs the host ~20 µs a call
        batch = torch.broadcast_shapes(q.shape[:2], k.shape[:2], v.shape[:2])  # refuses what torch refuses
        q, k, v = (x.expand(*batch, *x.shape[2:]) for x in (q, k, v))
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    o = torch.empty_like(q, memory_format=torch.contiguous_format)
    if k.shape[-2] == 0:  # no keys: torch's product over them is 0
        return o.zero_()
    d = q.shape[-1]
    if d == 128 and q.shape[-2] >= (4096 if is_causal else 1024):  # where the pairs were measured faster
        chosen = kernel_pairs
    else:
        chosen = kernel_pow2_head if d & (d - 1) == 0 else kernel
    chosen(q, k, v, scale, bool(is_causal), o)
    return o


if __name__ == "__main__":
    from examples._common import device, report

    shape = (4, 48, 1024, 64) if device() == "cuda" else (1, 2, 40, 16)
    dtype = torch.float16 if device() == "cuda" else torch.float32
    q, k, v = (torch.randn(shape, device=device(), dtype=dtype) for _ in range(3))
    reference = torch.nn.functional.scaled_dot_product_attention
    for causal in (False, True):
        report(
            f"sdpa (is_causal={causal})", sdpa(q, k, v, causal), reference(q, k, v, is_causal=causal),
            1e-2, 1e-2, lambda: sdpa(q, k, v, causal), lambda: reference(q, k, v, is_causal=causal),
        )
