"""A decode step's q/k/v product with the rotary embedding and the cache store
in its epilogue: one kernel where ``linear_normed`` then ``rope_and_store``
were two.

The fused q/k/v weight ``(H * D, K)`` (the query heads' rows, then the keys',
then the values'; ``fuse_projections``) is seen as ``(H, 2, D/2, K)``: a head's
two halves.  A program computes, for one head, ``BLOCK_SIZE_N`` columns of
each half (``d`` and ``d + D/2``, the pairs the rotation mixes) of the
product of ``rms_norm(x)`` (from ``w * x`` and its squares, as
``linear_normed``), rounds them to the activations' dtype (as the product
would store them), and then, by the head it holds:

- a query head: rotates the pair and stores it into ``q_out`` ``(B, Hq, D)``;
- a key head: rotates it and stores it into ``keys`` ``(B, Hkv, L, D)`` at
  ``position``;
- a value head: stores it into ``values`` at ``position``.

The stores go through ``x.source[...]`` (the head and the position are data
of the program); the rows past the batch are not stored (their indices lie
past the tensors).  Numerically the same as the two kernels: the same
products, the same rounding, the rotation in float32.
"""

import torch

import ntsym
import ntsym.language as ntl
from ntsym import Tensor

from examples.llm.kernels import _GEMV_K, _GEMV_M, GEMV_MAX_ROWS, _norm_factor, _squares


def qkv_store_arrangement(input, weight, squares, eps, cos, sin, position, q_out, keys, values,
                          BLOCK_SIZE_M=_GEMV_M, BLOCK_SIZE_N=ntsym.block_size(lower_bound=16, upper_bound=32),
                          BLOCK_SIZE_K=_GEMV_K):
    # weight (H, 2, D/2, K): programs (H, D/2 / BLOCK_SIZE_N); each has weight[half][k],
    # a (BLOCK_SIZE_N, BLOCK_SIZE_K) block of the head's half.
    weight_arranged = weight.tile((1, 1, BLOCK_SIZE_N, BLOCK_SIZE_K))
    weight_arranged.dtype = weight_arranged.dtype.squeeze((0, 1))
    weight_arranged = weight_arranged.tile((1, -1, 1, -1)).squeeze((1, 3))
    weight_arranged.dtype = weight_arranged.dtype.squeeze((0, 2))
    grid = tuple(weight_arranged.shape)

    input_arranged = input.tile((BLOCK_SIZE_M, BLOCK_SIZE_K)).tile((1, -1))  # input[k]: (BLOCK_SIZE_M, BLOCK_SIZE_K)
    input_arranged.dtype = input_arranged.dtype.squeeze(0)
    input_arranged = input_arranged.expand(grid)
    squares_arranged = squares.tile((BLOCK_SIZE_M, -1)).expand(grid)

    def arrange_table(table):  # (R, D/2): the rows' columns of this program's pairs
        return table.tile((BLOCK_SIZE_M, BLOCK_SIZE_N)).expand((grid[0], -1))

    position_arranged = position.tile((1,)).unsqueeze(1).expand(grid)

    def arrange_whole(x):  # reached only through ``x.source[...]``
        arranged = x.tile(tuple(-1 for _ in x.shape))
        return arranged.squeeze(tuple(range(2, len(x.shape)))).expand(grid)

    return (input_arranged, weight_arranged, squares_arranged, eps, arrange_table(cos), arrange_table(sin),
            position_arranged, arrange_whole(q_out), arrange_whole(keys), arrange_whole(values))


def qkv_store_application(input, weight, squares, eps, cos, sin, position, q_out, keys, values):
    factor = _norm_factor(squares, input, eps)  # before the loop: its loads overlap the weight's
    first = ntl.zeros(cos.shape, dtype=ntl.float32)  # columns d of the head
    second = ntl.zeros(cos.shape, dtype=ntl.float32)  # columns d + D/2
    for k in range(input.shape[0]):
        x = input[k]
        first += ntl.dot(x, ntl.trans(weight[0][k]))
        second += ntl.dot(x, ntl.trans(weight[1][k]))
    # Rounded as the product's output would be stored, then rotated in float32.
    x1 = ntl.cast(ntl.cast(first * factor, input.source.dtype), ntl.float32)
    x2 = ntl.cast(ntl.cast(second * factor, input.source.dtype), ntl.float32)
    c = ntl.cast(cos, ntl.float32)
    s = ntl.cast(sin, ntl.float32)
    head = weight[0][0].offsets(0)
    rows = cos.offsets(0)[:, None]
    half = cos.source.shape[1]
    # Pair columns past the half (a partial last block) go past the head's end,
    # where the stores' bounds leave them out; d + D/2 of them would not.
    low = ntl.where(cos.offsets(1) < half, cos.offsets(1), 2 * half)[None, :]
    high = low + half
    query_heads = q_out.source.shape[1]
    kv_heads = keys.source.shape[1]
    at = ntl.sum(position, 0)  # the cache's length: where the step's key and value go
    if head < query_heads:
        q_out.source[rows, head, low] = x1 * c - x2 * s
        q_out.source[rows, head, high] = x1 * s + x2 * c
    elif head < query_heads + kv_heads:
        keys.source[rows, head - query_heads, at, low] = x1 * c - x2 * s
        keys.source[rows, head - query_heads, at, high] = x1 * s + x2 * c
    else:
        values.source[rows, head - query_heads - kv_heads, at, low] = x1
        values.source[rows, head - query_heads - kv_heads, at, high] = x2


_table = {"constexpr": True, "upper_bound": 2**12}
qkv_store_kernel = ntsym.make(
    qkv_store_arrangement,
    qkv_store_application,
    (Tensor(2), Tensor(4), _squares, Tensor(0), Tensor(2, shape_options=(None, _table)),
     Tensor(2, shape_options=(None, _table)), Tensor(shape=(1,)), Tensor(3), Tensor(4), Tensor(4)),
    max_num_configs=12,
)


def qkv_store(normed, squares, eps, qkv_weight, cos, sin, keys, values, position, heads, **options):
    """A decode step's ``q`` ``(B, 1, H, D)``, returned, from ``normed = w * x`` and
    ``x``'s ``squares`` (as ``linear_normed``) and the fused q/k/v weight; the
    step's rotated key and its value are stored into ``keys`` and ``values``
    ``(B, Hkv, L, D)`` at ``position`` (a one-element integer tensor), as
    ``rope_and_store`` of ``linear_normed``'s columns would.  ``cos``, ``sin``:
    transformers' tables of the step, ``(B, 1, D)``.  ``options``: block sizes and
    ``ntsym_options`` for the kernel (the tuner's otherwise)."""
    rows = normed.reshape(-1, normed.shape[-1])
    b, k = rows.shape
    d = keys.shape[-1]
    half = d // 2
    if b > GEMV_MAX_ROWS or qkv_weight.shape[0] % d or d % 2:
        raise ValueError(f"qkv_store: at most {GEMV_MAX_ROWS} rows, an even head dimension and whole heads of "
                         f"weight rows expected, got {b} rows, {d} and {qkv_weight.shape[0]}")
    q_out = torch.empty((b, 1, heads, d), dtype=normed.dtype, device=normed.device)
    cos, sin = (t.reshape(b, -1)[:, :half] for t in (cos, sin))
    qkv_store_kernel(rows, qkv_weight.view(-1, 2, half, k), squares, float(eps), cos, sin, position.reshape(1),
                     q_out.view(b, heads, d), keys, values, BLOCK_SIZE_M=GEMV_MAX_ROWS, **options)
    return q_out
