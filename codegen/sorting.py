"""``sort`` and ``topk`` of floats as torch orders them.

Triton's ``sort``/``topk`` are bitonic networks whose compare-and-swap
copies one operand into both lanes where neither compares greater: a NaN
(which compares false with everything) is lost and a neighbour duplicated,
and ``-0.0`` beside ``0.0`` becomes two copies of one.  torch sorts NaN as
the largest value and returns a permutation of the row.  ntsym sorts floats
on an integer key instead: the float's bits with every bit but the sign
flipped for negative values (the standard total order: ``-inf < ... < -0.0
< 0.0 < ... < inf``), NaN mapped to the largest key, and maps the sorted
keys back.  Integers sort as written.  Half-precision floats and float32
share the float32 key (the widening is exact); float64 has its own.

The lanes a sort must keep out of the stored result (a row of 5 in a block
of 8) are filled by ``ntsym_sort_fill`` where the sort is ascending: NaN for
floats, so that they sort after every element of the row, a NaN included
(a fill of ``inf`` would come before the row's NaN), and the type's highest
value for integers.
"""

_KEY = """
@triton.jit
def ntsym_sort_key(x):
    \"\"\"An integer key whose order is torch's order of the floats ``x``
    (NaN the largest); float64 in int64, narrower floats in int32.\"\"\"
    if tl.constexpr(x.dtype == tl.float64):
        b = x.to(tl.int64, bitcast=True)
        k = b ^ ((b >> 63) & 0x7FFFFFFFFFFFFFFF)
        k = tl.where(x != x, 0x7FFFFFFFFFFFFFFF, k)
    else:
        y = x.to(tl.float32)
        b = y.to(tl.int32, bitcast=True)
        k = b ^ ((b >> 31) & 0x7FFFFFFF)
        k = tl.where(y != y, 0x7FFFFFFF, k)
    return k


@triton.jit
def ntsym_sort_unkey(k, like):
    \"\"\"The floats of the type of ``like`` whose keys are ``k`` (the largest key: NaN).\"\"\"
    if tl.constexpr(like.dtype == tl.float64):
        x = (k ^ ((k >> 63) & 0x7FFFFFFFFFFFFFFF)).to(tl.float64, bitcast=True)
    else:
        x = (k ^ ((k >> 31) & 0x7FFFFFFF)).to(tl.float32, bitcast=True).to(like.dtype)
    return x
"""

HELPERS = {
    "ntsym_sort_key": _KEY,
    "ntsym_sort": """
@triton.jit
def ntsym_sort(x, dim: tl.constexpr = None, descending: tl.constexpr = 0):
    \"\"\"tl.sort that orders floats as torch.sort does: NaN the largest, a
    permutation of the row (signed zeros kept).\"\"\"
    if tl.constexpr(x.dtype.is_floating()):
        y = ntsym_sort_unkey(tl.sort(ntsym_sort_key(x), dim, descending), x)
    else:
        y = tl.sort(x, dim, descending)
    return y
""",
    "ntsym_topk": """
@triton.jit
def ntsym_topk(x, k: tl.constexpr, dim: tl.constexpr = None, descending: tl.constexpr = True):
    \"\"\"tl.topk that orders floats as torch.topk does: NaN the largest.
    The k smallest are the k largest of the keys' bitwise complement (Triton
    3.6's tl.topk takes no ``descending``).\"\"\"
    if tl.constexpr(x.dtype.is_floating()):
        key = ntsym_sort_key(x)
        if descending:
            y = ntsym_sort_unkey(tl.topk(key, k, dim), x)
        else:
            y = ntsym_sort_unkey(~tl.topk(~key, k, dim), x)
    else:
        if descending:
            y = tl.topk(x, k, dim)
        else:
            y = ~tl.topk(~x, k, dim)
    return y
""",
    "ntsym_sort_fill": """
@triton.jit
def ntsym_sort_fill(mask, x):
    \"\"\"``x`` with the lanes outside ``mask`` set to what an ascending sort
    puts last: NaN for floats, the type's highest value otherwise.\"\"\"
    if tl.constexpr(x.dtype.is_floating()):
        y = tl.where(mask, x, float("nan")).to(x.dtype)
    else:
        y = ntsym_highest(mask, x)
    return y
""",
}

# The application's functions emitted through the helpers above.
SORTS = {"sort": "ntsym_sort", "topk": "ntsym_topk"}
