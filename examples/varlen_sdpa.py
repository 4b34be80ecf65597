"""Variable-length attention over packed sequences: examples/sdpa.py with
jagged ``q``, ``k``, ``v`` and output.

Each is ``(B, j, H, D)`` with the sequence dimension ragged,
``Tensor(4, jagged_dim=1)``: packed rows ``(total, H, D)`` with offsets
(``cu_seqlens``, as FlashAttention's varlen functions take them), given as
``ntsym.jagged(values, offsets)``, or nested tensors of the jagged layout.
Sequence ``b``'s queries attend to its own keys only; positions are counted
from the start of each sequence, so ``is_causal`` masks keys after the query
within the sequence (top-left aligned, as torch).  ``k`` and ``v`` have the
same lengths (they may differ from ``q``'s); the queries of a sequence without
keys get zeros, as torch's attention over no keys.

One program per (sequence, block of ``BLOCK_SIZE_M`` queries, head); the grid
runs over the longest sequence and the programs past their own sequence's end
return at once.  Each program loops over its own sequence's key blocks only
(the loop bound is read from ``k``'s offsets); the causal kernel stops at the
diagonal as examples/sdpa.py does.  ``D`` is a compile-time size (at most 256).
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
        arranged = x.tile((1, BLOCK_SIZE_M, 1, -1))  # (B, rows / BM, H, 1) of (1, BM, 1, D)
        arranged.dtype = arranged.dtype.squeeze((0, 2))
        return arranged

    def arrange_k_or_v(x):
        arranged = x.tile((1, BLOCK_SIZE_N, 1, -1))
        arranged.dtype = arranged.dtype.squeeze((0, 2))
        arranged = arranged.tile((1, -1, 1, 1))  # all key blocks of a (sequence, head)
        arranged = arranged.expand((-1, q_arranged.shape[1], -1, -1))
        arranged.dtype = arranged.dtype.squeeze((0, 2, 3))
        return arranged

    q_arranged = arrange_q_or_o(q)

    return q_arranged, arrange_k_or_v(k), arrange_k_or_v(v), scale, is_causal, arrange_q_or_o(o)


def application(q, k, v, scale, is_causal, o):
    q_loaded = q
    scale_log2 = scale * 1.4426950408889634
    acc = ntl.zeros(o.shape, dtype=ntl.float32)
    m = ntl.full((q.shape[0],), float("-inf"), dtype=ntl.float32)
    l = ntl.zeros((q.shape[0],), dtype=ntl.float32)

    # As in examples/sdpa.py; positions (offsets(1)) count from the start of
    # each sequence, and k.source.shape[1] is this sequence's key count.
    if is_causal:
        first = ntl.minimum(ntl.min(q.offsets(1), 0), k.source.shape[1]) // k[0].shape[0]
        last = ntl.minimum(ntl.max(q.offsets(1), 0) // k[0].shape[0] + 1, k.shape[0])
        for i in range(first):
            s = ntl.dot(q_loaded, ntl.trans(k[i])) * scale_log2
            m_new = ntl.maximum(m, ntl.max(s, 1))
            p = ntl.exp2(s - m_new[:, None])
            alpha = ntl.exp2(m - m_new)
            acc = acc * alpha[:, None] + ntl.dot(p.to(v[i].dtype), v[i])
            l = l * alpha + ntl.sum(p, 1)
            m = m_new
        for j in range(first, last):
            key = k[j].offsets(1)[None, :]
            s = ntl.dot(q_loaded, ntl.trans(k[j])) * scale_log2
            s = ntl.where((key < k.source.shape[1]) & (q.offsets(1)[:, None] >= key), s, float("-inf"))
            m_new = ntl.maximum(m, ntl.max(s, 1))
            p = ntl.exp2(s - m_new[:, None])
            alpha = ntl.exp2(m - m_new)
            acc = acc * alpha[:, None] + ntl.dot(p.to(v[j].dtype), v[j])
            l = l * alpha + ntl.sum(p, 1)
            m = m_new
    else:
        for i in range(k.shape[0]):
            key = k[i].offsets(1)[None, :]
            s = ntl.dot(q_loaded, ntl.trans(k[i])) * scale_log2
            s = ntl.where(key < k.source.shape[1], s, float("-inf"))
            m_new = ntl.maximum(m, ntl.max(s, 1))
            p = ntl.exp2(s - m_new[:, None])
            alpha = ntl.exp2(m - m_new)
            acc = acc * alpha[:, None] + ntl.dot(p.to(v[i].dtype), v[i])
            l = l * alpha + ntl.sum(p, 1)
            m = m_new

    # A sequence without keys visits no block: `l` is 0 and `acc` is 0, and
    # the output is 0, as torch's attention over no keys (not 0 / 0).  Any
    # visited block adds at least exp2(0) == 1 to `l`.
    o = acc / ntl.where(l == 0, 1.0, l)[:, None]  # noqa: F841


head = (None, None, None, {"constexpr": True, "upper_bound": 256})  # D is one tile
tensors = (
    Tensor(4, jagged_dim=1, shape_options=head), Tensor(4, jagged_dim=1, shape_options=head),
    Tensor(4, jagged_dim=1, shape_options=head), Tensor(0), Tensor(0, constexpr=True),
    Tensor(4, jagged_dim=1, shape_options=head),
)

kernel = ntsym.make(arrangement, application, tensors)


def varlen_sdpa(q, k, v, cu_seqlens_q, cu_seqlens_k=None, is_causal=False, scale=None, **options):
    """Attention of packed sequences: ``q`` ``(total_q, H, D)``, ``k`` and
    ``v`` ``(total_k, H, D)``, sequence ``b`` at rows ``cu_seqlens[b]`` to
    ``cu_seqlens[b + 1]``.  Returns the packed output, like ``q``."""
    cu_seqlens_k = cu_seqlens_q if cu_seqlens_k is None else cu_seqlens_k
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    o = torch.empty_like(q)
    jq, jo = ntsym.jagged(q, cu_seqlens_q), ntsym.jagged(o, cu_seqlens_q)
    jk, jv = ntsym.jagged(k, cu_seqlens_k), ntsym.jagged(v, cu_seqlens_k)
    kernel(jq, jk, jv, scale, bool(is_causal), jo, **options)
    return o


def reference(q, k, v, cu_seqlens_q, cu_seqlens_k=None, is_causal=False, scale=None):
    """Per-sequence torch SDPA over the same packed layout."""
    cu_seqlens_k = cu_seqlens_q if cu_seqlens_k is None else cu_seqlens_k
    out = torch.empty_like(q)
    bq, bk = cu_seqlens_q.tolist(), cu_seqlens_k.tolist()
    for b in range(len(bq) - 1):
        qs, ks = slice(bq[b], bq[b + 1]), slice(bk[b], bk[b + 1])
        if bq[b + 1] == bq[b]:
            continue
        out[qs] = torch.nn.functional.scaled_dot_product_attention(
            q[qs].transpose(0, 1), k[ks].transpose(0, 1), v[ks].transpose(0, 1),
            is_causal=is_causal, scale=scale,
        ).transpose(0, 1)
    return out


def packed(lengths, heads, d, dtype, device):
    """Random packed q, k, v and their offsets for sequences of ``lengths``."""
    offsets = torch.tensor([0] + list(lengths), device=device).cumsum(0)
    total = int(offsets[-1])
    q, k, v = (torch.randn(total, heads, d, dtype=dtype, device=device) for _ in range(3))
    return q, k, v, offsets


if __name__ == "__main__":
    from examples._common import device, report

    lengths = [64, 1000, 4096, 300, 2048, 17] if device() == "cuda" else [5, 40, 17, 1]
    heads, d = (16, 64) if device() == "cuda" else (2, 16)
    dtype = torch.float16 if device() == "cuda" else torch.float32
    q, k, v, offsets = packed(lengths, heads, d, dtype, device())
    for causal in (False, True):
        report(
            f"varlen sdpa (is_causal={causal})",
            varlen_sdpa(q, k, v, offsets, is_causal=causal), reference(q, k, v, offsets, is_causal=causal),
            1e-2, 1e-2, lambda: varlen_sdpa(q, k, v, offsets, is_causal=causal),
            lambda: reference(q, k, v, offsets, is_causal=causal),
        )
