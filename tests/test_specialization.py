"""Layout specialization: contiguous tensors take simpler addresses.

A flattened dimension is indexed by division and remainder; for a contiguous
tensor the weights of those digits are products of sizes and they fold back
into the flat index (``recombine``).  The kernel keeps both forms behind a
compile-time flag set at launch, so any layout stays correct."""

import itertools
import random

import sympy
import torch

import ntsym
from ntsym_codegen import runtime
from ntsym_codegen.intfuncs import FloorDiv, Mod, recombine
from ntsym import Symbol, Tensor

B = Symbol("B", constexpr=True)


def _value(expr, env):
    if isinstance(expr, FloorDiv):
        a, b = (_value(e, env) for e in expr.args)
        return a // b
    if isinstance(expr, Mod):
        a, b = (_value(e, env) for e in expr.args)
        return a % b
    if expr.is_Symbol:
        return env[expr]
    if expr.is_Number:
        return int(expr)
    args = [_value(e, env) for e in expr.args]
    if isinstance(expr, sympy.Add):
        return sum(args)
    if isinstance(expr, sympy.Mul):
        out = 1
        for a in args:
            out *= a
        return out
    if isinstance(expr, sympy.Pow):
        return args[0] ** args[1]
    raise TypeError(expr)


def test_recombine_folds_digits_back():
    x, r, s, c, k, p, q, n, m = sympy.symbols("x r s c k p q n m", integer=True, positive=True)
    weight = r * s * FloorDiv(x, r * s) + s * Mod(FloorDiv(x, s), r) + Mod(x, s) + c * r * s * n
    assert recombine(weight) == c * r * s * n + x
    # A larger weight on the quotient keeps its excess.
    out = k * p * q * FloorDiv(m, p * q) + p * q * n + q * Mod(FloorDiv(m, q), p) + Mod(m, q)
    folded = recombine(out)
    assert not folded.has(Mod)
    assert sympy.expand(folded - (m + p * q * n + (k - 1) * p * q * FloorDiv(m, p * q))) == 0
    # Weights that do not match stay as they are.
    mismatched = s * FloorDiv(x, r * s) + Mod(x, s)
    assert recombine(mismatched) == mismatched
    rng = random.Random(3)
    for expr in (weight, out, mismatched):
        for _ in range(200):
            env = {v: rng.randint(1, 7) for v in (r, s, c, k, p, q, n)}
            env[x], env[m] = rng.randint(-100, 100), rng.randint(-100, 100)
            assert _value(recombine(expr), env) == _value(expr, env)


def _flatten_kernel():
    def arrangement(x, y):
        return x.flatten().tile((B,)), y.flatten().tile((B,))

    def application(x, y):
        y = x * 2  # noqa: F841

    return ntsym.make(arrangement, application, (Tensor(3), Tensor(3)))


def test_contiguous_flag_gives_flat_addresses_and_any_layout_works():
    kernel = _flatten_kernel()
    src = kernel.kernel_source
    assert "x_contiguous: tl.constexpr" in src and "y_contiguous: tl.constexpr" in src
    flat = [line for line in src.splitlines() if "if x_contiguous else" in line]
    assert flat and "//" not in flat[0].split("if x_contiguous else")[0]
    base = torch.randn(5, 6, 7)
    layouts = {
        "contiguous": base,
        "transposed": base.permute(2, 0, 1),
        "sliced": torch.randn(5, 12, 7)[:, ::2],
        "expanded": torch.randn(5, 1, 7).expand(5, 6, 7),
    }
    for (xname, x), (yname, y_layout) in itertools.product(layouts.items(), [("contiguous", None), ("transposed", (1, 0, 2))]):
        y = torch.zeros(x.shape)
        if y_layout:
            y = torch.zeros(tuple(x.shape[i] for i in y_layout)).permute(*[y_layout.index(i) for i in range(3)])
        kernel(x, y, B=16)
        torch.testing.assert_close(y, x * 2, msg=f"input {xname}, output {yname}")


def test_contiguous_addresses_only_with_32_bit_index_math():
    small = torch.empty((4, 5), device="meta")
    huge = torch.empty((2**16, 2**16), device="meta")
    assert runtime.contiguous(small, (small,))
    assert not runtime.contiguous(small.t(), (small,))
    # Contiguous addresses multiply sizes, which only strides are widened for.
    assert not runtime.contiguous(huge, (huge,))
    assert not runtime.contiguous(small, (small, huge))


def test_range_prover_bounds_rounded_products_soundly():
    from ntsym_codegen import bounds
    from ntsym_codegen.intfuncs import CeilDiv

    x, n, b, i, t = sympy.symbols("x n b i t", integer=True, positive=True)
    # b * (n // b) may be below n - 1: the last x is out of it.
    assert not bounds.holds(sympy.Lt(x, b * FloorDiv(n, b)), {x: n})
    assert bounds.holds(sympy.Lt(x, b * CeilDiv(n, b) + 1), {x: n})
    # Whole blocks: i < n // b keeps i * b + t below n; i < cdiv(n, b) does not.
    assert bounds.holds(sympy.Lt(i * b + t, n), {i: FloorDiv(n, b), t: b})
    assert not bounds.holds(sympy.Lt(i * b + t, n), {i: CeilDiv(n, b), t: b})
    assert bounds.holds(sympy.Lt(i * b + t, b * CeilDiv(n, b)), {i: CeilDiv(n, b), t: b})
    rng = random.Random(5)
    for _ in range(300):
        env_n, env_b = rng.randint(1, 40), rng.randint(1, 9)
        # brute force agrees wherever the prover claims a bound
        assert all(xv < env_b * (env_n // env_b) for xv in range(env_n)) or not bounds.holds(
            sympy.Lt(x, b * FloorDiv(n, b)), {x: n})


# -- loops over blocks: whole blocks first, the partial one last --------------

import ntsym.language as ntl  # noqa: E402

BS = Symbol("BS", constexpr=True)


def _row_sums(application, scalar=False):
    def arrangement(x, y, *rest):
        x_arranged = x.tile((1, BS)).tile((1, -1)).squeeze(1)
        return (x_arranged, y.tile((1, 1)).squeeze(1), *rest)

    tensors = (Tensor(2, other=1e6), Tensor(2)) + ((Tensor(0, constexpr=True),) if scalar else ())
    return ntsym.make(arrangement, application, tensors)


def _masked_sum(x, y):
    acc = ntl.zeros(x[0, 0].shape, dtype=ntl.float32)
    for k in range(x.shape[1]):
        col = x[0, k].offsets(1)
        acc += ntl.where(col < x.source.shape[1], x[0, k], 0.0)
    y = ntl.sum(acc, 1)[:, None]  # noqa: F841


def test_loop_over_blocks_is_peeled_and_the_comparison_proved_in_whole_blocks():
    kernel = _row_sums(_masked_sum)
    src = kernel.kernel_source
    loops = [line.strip() for line in src.splitlines() if line.strip().startswith("for k in")]
    assert loops == ["for k in range(x_size_1 // BS + ntsym_zero):",
                     "for k in range(x_size_1 // BS, (BS + x_size_1 - 1) // BS + ntsym_zero):"]
    main = src[src.index(loops[0]):src.index(loops[1])]
    tail = src[src.index(loops[1]):]
    assert ") | True, " in main and "mask=" not in main  # proved: ``tl.where(c | True, ...)``, folded
    assert ") | True, " not in tail and "mask=" in tail
    for n in (16, 21, 3):  # whole blocks only, a partial last block, a partial only block
        x = torch.randn(5, n)
        y = torch.empty(5, 1)
        kernel(x, y, BS=8)
        torch.testing.assert_close(y[:, 0], x.sum(1), msg=f"n={n}")


def _reassigned_in_branch(x, y, far):
    acc = ntl.zeros(x[0, 0].shape, dtype=ntl.float32)
    for k in range(x.shape[1]):
        col = x[0, k].offsets(1)
        if far:
            col = col + 1000
        acc += ntl.where(col < x.source.shape[1], x[0, k], 0.0)
    y = ntl.sum(acc, 1)[:, None]  # noqa: F841


def _from_the_previous_iteration(x, y):
    acc = ntl.zeros(x[0, 0].shape, dtype=ntl.float32)
    col = x[0, 0].offsets(1) + 1000
    for k in range(x.shape[1]):
        acc += ntl.where(col < x.source.shape[1], x[0, k], 0.0)
        col = x[0, k].offsets(1)
    y = ntl.sum(acc, 1)[:, None]  # noqa: F841


def test_values_that_may_differ_are_not_proved():
    kernel = _row_sums(_reassigned_in_branch, scalar=True)
    assert ") | True, " not in kernel.kernel_source
    x = torch.randn(4, 20)
    y = torch.empty(4, 1)
    kernel(x, y, True, BS=8)
    torch.testing.assert_close(y[:, 0], torch.zeros(4))
    kernel = _row_sums(_from_the_previous_iteration)
    assert ") | True, " not in kernel.kernel_source
    y = torch.empty(4, 1)
    kernel(x, y, BS=8)
    # Block k is kept where block k - 1 was in bounds: all but the first block.
    # The padding of the last one (read as `other`, 1e6) is outside the tensor
    # and never enters the carried sum.
    expected = x[:, 8:].sum(1)
    torch.testing.assert_close(y[:, 0], expected)
