"""Differential fuzzer of lanes outside the arranged tensor, against torch.

Composes tiles with lanes outside the tensor -- rows padded to their block
(``padded``), ``pad()`` positions reading ``other`` (``pad``), windows past
the end (``window``) and row chunks a loop accumulates (``loop``) -- with an
elementwise prologue (casts, ``exp``, ``sigmoid``, comparisons through
``where``, a second tensor, ...), every ``ntl`` reduction, scan, ``sort`` and
``flip``, and float32, float16 and int32 data; runs each kernel (on CPU
through Triton's interpreter) and compares the lanes inside the tensor with
torch computing the same thing on the arranged rows.  Prints a summary table
by arrangement and operation.

    python -m benchmarks.fuzz_padding --cases 10000 --seed 0 [--out FILE]

A case is a combination (arrangement, prologue, operation, ``other``,
dtype) and a size; kernels are made once per combination and reused.
"""

import argparse
import collections
import datetime
import importlib.util
import os
import random
import sys
import tempfile
import time
import traceback

import torch
import torch.nn.functional as F

KINDS = ("padded", "pad", "window", "loop")
# Prologues: (source in `x` and `y`, torch function, dtypes it takes).
PROLOGUES = {
    "x": ("{x}", lambda x, y: x, "fi"),
    "cast": ("ntl.cast({x}, ntl.float32)", lambda x, y: x.float(), "fi"),
    "exp": ("ntl.exp(ntl.cast({x}, ntl.float32))", lambda x, y: x.float().exp(), "f"),
    "affine": ("{x} * 2 + 1", lambda x, y: x * 2 + 1, "fi"),
    "neg": ("-{x}", lambda x, y: -x, "fi"),
    "abs": ("ntl.abs({x})", lambda x, y: x.abs(), "fi"),
    "where": ("ntl.where({x} > 0, {x}, 0)", lambda x, y: torch.where(x > 0, x, torch.zeros_like(x)), "fi"),
    "count": ("ntl.where({x} > -100, 1.0, 0.0)", lambda x, y: (x > -100).float(), "fi"),
    "maximum": ("ntl.maximum({x}, -3)", lambda x, y: torch.clamp(x, min=-3), "fi"),
    "sigmoid": ("ntl.sigmoid(ntl.cast({x}, ntl.float32))", lambda x, y: torch.sigmoid(x.float()), "f"),
    "sum2": ("{x} + {y}", lambda x, y: x + y, "fi"),
    "prod2": ("{x} * {y}", lambda x, y: x * y, "fi"),
}
# Operations: (source with `v`, torch function of a row, result kind, dtypes).
REDUCE = "reduce"
ROW = "row"
OPERATIONS = {
    "sum": ("ntl.sum(v, axis=1, keep_dims=True)", lambda r: r.sum(), REDUCE, "fi"),
    "max": ("ntl.max(v, axis=1, keep_dims=True)", lambda r: r.max(), REDUCE, "fi"),
    "min": ("ntl.min(v, axis=1, keep_dims=True)", lambda r: r.min(), REDUCE, "fi"),
    "argmax": ("ntl.argmax(v, axis=1, keep_dims=True)", lambda r: r.argmax(), REDUCE, "fi"),
    "argmin": ("ntl.argmin(v, axis=1, keep_dims=True)", lambda r: r.argmin(), REDUCE, "fi"),
    "xor_sum": ("ntl.xor_sum(v, axis=1, keep_dims=True)", lambda r: _xor(r), REDUCE, "i"),
    "sum_all": ("ntl.sum(v)", lambda r: r.sum(), REDUCE, "fi"),
    "max_all": ("ntl.max(v)", lambda r: r.max(), REDUCE, "fi"),
    "cumsum": ("ntl.cumsum(v, 1)", lambda r: r.cumsum(0), ROW, "fi"),
    "cumsum_rev": ("ntl.cumsum(v, 1, reverse=True)", lambda r: r.flip(0).cumsum(0).flip(0), ROW, "fi"),
    "cumprod": ("ntl.cumprod(v, 1)", lambda r: r.cumprod(0), ROW, "f"),
    "cumprod_rev": ("ntl.cumprod(v, 1, reverse=True)", lambda r: r.flip(0).cumprod(0).flip(0), ROW, "f"),
    "sort": ("ntl.sort(v, 1)", lambda r: r.sort().values, ROW, "fi"),
    "sort_desc": ("ntl.sort(v, 1, True)", lambda r: r.sort(descending=True).values, ROW, "fi"),
    "flip": ("ntl.flip(v, 1)", lambda r: r.flip(0), ROW, "fi"),
}
# Loops accumulate row chunks elementwise, then reduce: (init, combine, final, torch).
LOOPS = {
    "sum": ("0.0", "acc + v", "ntl.sum(acc)", lambda r: r.sum()),
    "max": ('float("-inf")', "ntl.maximum(acc, v)", "ntl.max(acc)", lambda r: r.max()),
    "min": ('float("inf")', "ntl.minimum(acc, v)", "ntl.min(acc)", lambda r: r.min()),
    "sum_aug": ("0.0", None, "ntl.sum(acc)", lambda r: r.sum()),
}
DTYPES = {"float32": torch.float32, "float16": torch.float16, "int32": torch.int32}


def _xor(row):
    out = row[0].clone()
    for v in row[1:]:
        out = out ^ v
    return out


# -- kernels -------------------------------------------------------------------


def _source(kind, prologue, operation, other, block, width, stride):
    pro = PROLOGUES[prologue][0]
    other_src = "None" if other is None else repr(other) if other != float("-inf") else 'float("-inf")'
    if kind == "loop":
        init, comb, final, _ = LOOPS[operation]
        pro = pro.format(x="x[0, k]", y="y[0, k]")
        update = "acc += v" if comb is None else f"acc = {comb}"
        return f'''
import ntsym
import ntsym.language as ntl
from ntsym import Tensor


def arrangement(x, y, out):
    return x.tile((1, {block})).tile((1, -1)), y.tile((1, {block})).tile((1, -1)), out.tile((1,))


def application(x, y, out):
    acc = ntl.full((x.dtype.shape[1],), {init}, dtype=ntl.float32)
    for k in range(x.shape[1]):
        v = {pro}
        {update}
    out = {final}  # noqa: F841


kernel = ntsym.make(arrangement, application, (Tensor(2, other={other_src}), Tensor(2, other={other_src}), Tensor(1)))
'''
    pro = pro.format(x="x", y="y")
    op = OPERATIONS[operation][0]
    if kind == "window":
        tile = f"x.tile((1, {width}), strides=(1, {stride}))"
        ytile = f"y.tile((1, {width}), strides=(1, {stride}))"
    elif kind == "pad":
        tile = f"x.pad(((0, 0), (2, 1))).tile((1, {block}))"
        ytile = f"y.pad(((0, 0), (2, 1))).tile((1, {block}))"
    else:
        tile, ytile = f"x.tile((1, {block}))", f"y.tile((1, {block}))"
    reduce = OPERATIONS[operation][2] == REDUCE
    out_tile = "out.tile((1, 1))" if reduce else f"out.tile((1, {block}))"
    return f'''
import ntsym
import ntsym.language as ntl
from ntsym import Tensor


def arrangement(x, y, out):
    return {tile}, {ytile}, {out_tile}


def application(x, y, out):
    v = {pro}
    out = {op}  # noqa: F841


kernel = ntsym.make(arrangement, application, (Tensor(2, other={other_src}), Tensor(2, other={other_src}), Tensor(2)))
'''


_MODULES = {}


def _kernel(directory, key, source):
    if key not in _MODULES:
        path = os.path.join(directory, f"fuzz_{len(_MODULES)}.py")
        with open(path, "w") as f:
            f.write(source)
        spec = importlib.util.spec_from_file_location(f"fuzz_padding_{len(_MODULES)}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _MODULES[key] = module.kernel
    return _MODULES[key]


# -- references ----------------------------------------------------------------


def _rows_of(kind, x, other, block, width, stride):
    """Per row of ``x``, the arranged tiles' lanes inside the tensor: a list
    of 1-D tensors per row."""
    n = x.shape[1]
    if kind == "pad":
        padded = F.pad(x.double(), (2, 1), value=0.0 if other is None else float(other)).to(x.dtype)
        m = padded.shape[1]
        return [[padded[i, j:min(j + block, m)] for j in range(0, m, block)] for i in range(x.shape[0])]
    if kind == "window":
        count = -(-n // stride) if stride >= width else -(-(n - width) // stride) + 1
        return [[x[i, j * stride:min(j * stride + width, n)] for j in range(count)] for i in range(x.shape[0])]
    return [[x[i, j:min(j + block, n)] for j in range(0, n, block)] for i in range(x.shape[0])]


def _data(dtype, shape, sign, generator):
    if dtype == torch.int32:
        return torch.randint(-20, 21, shape, generator=generator, dtype=torch.int32)
    x = torch.rand(shape, generator=generator) + 0.5
    x = -x if sign == "negative" else x if sign == "positive" else torch.randn(shape, generator=generator)
    return x.to(dtype)


def _close(a, b, dtype):
    if a.dtype in (torch.int32, torch.int64) and b.dtype in (torch.int32, torch.int64):
        return torch.equal(a.long(), b.long())
    tol = 2e-2 if dtype == torch.float16 else 1e-4
    return torch.allclose(a.double(), b.double(), rtol=tol, atol=tol, equal_nan=True)


# -- one case --------------------------------------------------------------------


def run_case(directory, case):
    kind, prologue, operation, other, dtype_name, rows, n, block, width, stride, sign, seed = case
    dtype = DTYPES[dtype_name]
    generator = torch.Generator().manual_seed(seed)
    x, y = _data(dtype, (rows, n), sign, generator), _data(dtype, (rows, n), "mixed", generator)
    source = _source(kind, prologue, operation, other, block, width, stride)
    kernel = _kernel(directory, source, source)
    pro = PROLOGUES[prologue][1]
    if kind == "loop":
        reference = torch.stack([LOOPS[operation][3](pro(x[i].float(), y[i].float()).float()) for i in range(rows)])
        out = torch.empty(rows, dtype=torch.float32)
        kernel(x, y, out)
        return _close(out, reference, dtype), out, reference
    tiles_x = _rows_of(kind, x, other, block, width, stride)
    tiles_y = _rows_of(kind, y, other, block, width, stride)
    fn, result = OPERATIONS[operation][1], OPERATIONS[operation][2]
    computed = [[pro(a, b) for a, b in zip(rx, ry)] for rx, ry in zip(tiles_x, tiles_y)]
    integer = dtype == torch.int32 and prologue not in ("cast", "count") or operation in ("argmax", "argmin")
    out_dtype = torch.int32 if integer else torch.float32
    if result == REDUCE:
        reference = torch.tensor([[float(fn(t.double() if t.is_floating_point() else t.long())) for t in r]
                                  for r in computed], dtype=torch.float64)
        out = torch.zeros(rows, len(computed[0]), dtype=out_dtype)
        kernel(x, y, out)
        return _close(out, reference, dtype), out, reference
    out = torch.zeros(rows, sum(t.numel() for t in computed[0]), dtype=out_dtype)  # the arranged extent
    kernel(x, y, out)
    ok = True
    for i, r in enumerate(computed):
        for j, t in enumerate(r):
            expected = fn(t.double() if t.is_floating_point() else t.long())
            got = out[i, j * block:j * block + t.numel()]
            ok = ok and _close(got, expected, dtype)
    return ok, out, None


def cases(count, seed):
    """``count`` random cases: each combination with a random size."""
    rng = random.Random(seed)
    produced = 0
    while produced < count:
        kind = rng.choice(KINDS)
        dtype = rng.choice(list(DTYPES))
        letter = "i" if dtype == "int32" else "f"
        prologue = rng.choice([p for p, (_, _, kinds) in PROLOGUES.items() if letter in kinds])
        if kind == "loop":
            operation = rng.choice(list(LOOPS))
        else:
            operation = rng.choice([o for o, (_, _, result, kinds) in OPERATIONS.items()
                                    if letter in kinds and (result == REDUCE or kind != "window")])
        if operation.startswith("cumprod") or prologue == "exp" and operation in ("cumsum", "cumsum_rev"):
            prologue = rng.choice(["x", "sigmoid", "abs"]) if letter == "f" else "x"
        others = [None, 0, 7] if letter == "i" else [None, 0.0, 5.0, float("-inf"), -2.5]
        other = rng.choice(others)
        if operation == "xor_sum" and prologue in ("cast", "count"):
            prologue = "x"
        if operation in ("xor_sum",) or prologue in ("sum2", "prod2") and other == float("-inf"):
            other = rng.choice([None, 0, 7]) if letter == "i" else None
        block = rng.choice([4, 8])
        width, stride = rng.choice([(3, 1), (3, 2), (5, 2), (2, 3)])
        n = rng.randint(max(width - stride + 1, 1), 13)
        rows = rng.randint(1, 3)
        sign = rng.choice(["negative", "positive", "mixed"])
        yield (kind, prologue, operation, other, dtype, rows, n, block, width, stride, sign, rng.randrange(1 << 30))
        produced += 1


def run(count, seed, verbose=False, progress=None):
    """Run ``count`` cases; returns (table rows, failures).  ``progress``:
    called with (cases run, table, failures) after each case."""
    table = collections.defaultdict(lambda: [0, 0, 0])  # (kind, op) -> passed, mismatched, refused
    failures = []
    with tempfile.TemporaryDirectory() as directory:
        for done, case in enumerate(cases(count, seed)):
            if progress is not None:
                progress(done, table, failures)
            key = (case[0], case[2])
            try:
                ok, got, expected = run_case(directory, case)
            except Exception as e:  # refusals and crashes, counted and listed
                table[key][2] += 1
                failures.append((case, f"{type(e).__name__}: {str(e).splitlines()[0]}"))
                if verbose:
                    traceback.print_exc()
                continue
            table[key][0 if ok else 1] += 1
            if not ok:
                failures.append((case, f"mismatch: got {got.flatten()[:12].tolist()} expected "
                                       f"{None if expected is None else expected.flatten()[:12].tolist()}"))
    return table, failures


def report(table, failures, count, seed, seconds, out=sys.stdout):
    """The summary: a table of cases by arrangement and operation, then the
    failures (at most 50)."""
    import triton

    print(f"fuzz_padding: {count} cases, seed {seed}, {seconds:.0f} s, "
          f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, torch {torch.__version__}, "
          f"triton {triton.__version__} (interpreter, CPU)", file=out)
    print("| arrangement | operation | passed | mismatched | refused or failed |", file=out)
    print("|---|---|---|---|---|", file=out)
    for (kind, op), (p, m, r) in sorted(table.items()):
        print(f"| {kind} | {op} | {p} | {m} | {r} |", file=out)
    totals = [sum(v[i] for v in table.values()) for i in range(3)]
    print(f"| all | all | {totals[0]} | {totals[1]} | {totals[2]} |", file=out)
    for case, why in failures[:50]:
        print(f"- {case}: {why}", file=out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="also write the summary to this file")
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--report-every", type=int, default=500, help="rewrite --out every this many cases")
    args = parser.parse_args()
    os.environ["TRITON_INTERPRET"] = "1"
    start = time.time()

    def progress(done, table, failures):
        if args.out and done and done % args.report_every == 0:
            with open(args.out, "w") as f:
                report(table, failures, done, args.seed, time.time() - start, out=f)

    table, failures = run(args.cases, args.seed, args.verbose, progress)
    report(table, failures, args.cases, args.seed, time.time() - start)
    if args.out:
        with open(args.out, "w") as f:
            report(table, failures, args.cases, args.seed, time.time() - start, out=f)


if __name__ == "__main__":
    main()
