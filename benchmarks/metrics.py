"""Code metrics of the ntsym example kernels next to plain Triton (the NineToothed
paper's Table 2), computed with radon.

Columns: LOC, LLOC, SLOC (radon ``raw``), G (cyclomatic complexity: the sum over
the top-level functions, as radon's ``cc`` reports them; nested functions are
not added to their parent), the Halstead vocabulary η, length N, volume V and
difficulty D of the whole snippet (radon ``hal``, its module total), and the
maintainability index MI (radon ``mi``, multi-line strings counted as comments).

What is measured, for each op:

- ntsym: ``examples/<op>.py`` without its module docstring, its torch-facing
  wrapper (the top-level function named ``<op>``), its
  ``if __name__ == "__main__":`` block and the imports that only those used.
  What is left is the kernel: imports, block-size symbols, arrangement,
  application, source tensors and the ``ntsym.make`` call.  Where the module
  makes several kernels, only ``kernel`` counts, with the definitions it uses
  (conv2d: the paper's Listing 8, not its channels-last and split variants;
  sdpa: not ``kernel_pow2_head``).  Code that addmm, bmm and conv2d reuse from
  ``examples/mm.py`` is not counted again.
- Triton: in ``benchmarks/triton_baselines.py``, the ``@triton.jit`` functions that
  the op's wrapper (the top-level function named ``<op>``) launches, directly or
  through other jit functions, with their decorators (auto-tuning included),
  after ``import triton`` / ``import triton.language as tl``.  The hand-written
  Python launcher (grid, strides, checks) is left out, as ntsym's generated
  launcher and torch wrapper are.  ``n/a`` where no such function exists.

Docstrings are removed on both sides; comments are kept (LOC counts them, SLOC
does not).  "paper V" is the Halstead volume the paper reports for NineToothed
and for Triton (Table 2, NVIDIA A100, Triton 3.0).

``python -m benchmarks.metrics`` prints the tables as markdown;
``--write`` also writes them, with an explanation, to ``docs/metrics.md``.
"""

import argparse
import ast
import pathlib
import re

from radon.complexity import cc_visit
from radon.metrics import h_visit, mi_visit
from radon.raw import analyze

ROOT = pathlib.Path(__file__).resolve().parent.parent
OPS = ("add", "addmm", "bmm", "conv2d", "mm", "rms_norm", "rope", "sdpa", "silu", "softmax")
TRITON_HEADER = "import triton\nimport triton.language as tl\n\n\n"

# The paper's Table 2: Halstead volume V of (NineToothed, Triton).
PAPER_VOLUME = {
    "add": (4.75, 79.95),
    "addmm": (27.00, 990.79),
    "bmm": (25.36, 1024.43),
    "conv2d": (4.00, 1625.34),
    "mm": (25.54, 822.20),
    "rms_norm": (48.43, 142.62),
    "rope": (116.00, 649.85),
    "sdpa": (284.60, 505.24),
    "silu": (4.75, 66.61),
    "softmax": (15.51, 116.69),
}

EXPLANATION = """\
Each row measures the code that defines one kernel: for ntsym the arrangement,
the application, the symbols, the source tensors and the `ntsym.make` call of
`examples/<op>.py` (without the torch wrapper and the self-check; of a module
that makes several kernels, `kernel` and what it uses: conv2d's is the paper's
Listing 8); for Triton
the `@triton.jit` functions of `benchmarks/triton_baselines.py` that the op
launches, with their auto-tuning decorators (without the Python launcher).
Docstrings are removed on both sides.  LOC, LLOC and SLOC count lines (all,
logical, source); G is the cyclomatic complexity summed over the top-level
functions; η, N, V and D are Halstead's vocabulary, length, volume and
difficulty, which count operators (arithmetic, comparisons, boolean operators,
augmented assignments) and their operands, so pointer and mask arithmetic
weighs in while meta-operation calls do not; MI is radon's maintainability
index.  The second table sets the ntsym volume against the Triton volume next
to the same ratio from the paper's Table 2 (NineToothed against Triton).
`python -m benchmarks.metrics --write` regenerates this file."""


def _strip_docstring_lines(node, drop):
    """Mark the line range of the docstring of ``node`` (module or function)."""
    body = getattr(node, "body", None)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
        drop.update(range(body[0].lineno, body[0].end_lineno + 1))


def _first_line(node):
    return min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])


def _is_main_block(node):
    return isinstance(node, ast.If) and "__main__" in ast.unparse(node.test)


def _names_used(nodes):
    used = set()
    for node in nodes:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name):
                used.add(sub.id)
    return used


def _render(source, keep_lines):
    lines = [line for i, line in enumerate(source.splitlines(), start=1) if i in keep_lines]
    text = "\n".join(lines)
    text = re.sub(r"\n{4,}", "\n\n\n", text)
    return text.strip("\n") + "\n"


def ntsym_kernel_source(op):
    """The kernel part of ``examples/<op>.py`` (see the module docstring)."""
    path = ROOT / "examples" / f"{op}.py"
    if not path.exists():
        return None
    source = path.read_text()
    tree = ast.parse(source)
    drop = set()
    _strip_docstring_lines(tree, drop)
    kept = []
    for node in tree.body:
        if (isinstance(node, ast.FunctionDef) and node.name == op) or _is_main_block(node):
            drop.update(range(_first_line(node), node.end_lineno + 1))
        elif not (isinstance(node, ast.Expr) and node.lineno in drop):
            kept.append(node)
    kept = _reaching(kept, "kernel", drop, source.splitlines())
    used = _names_used(n for n in kept if not isinstance(n, (ast.Import, ast.ImportFrom)))
    for node in kept:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            bound = [(a.asname or a.name).split(".")[0] for a in node.names]
            if not any(name in used for name in bound):
                drop.update(range(node.lineno, node.end_lineno + 1))
        if isinstance(node, ast.FunctionDef):
            _strip_docstring_lines(node, drop)
    keep = set(range(1, len(source.splitlines()) + 1)) - drop
    return _render(source, keep)


def _defined(node):
    """The top-level names ``node`` binds (functions, classes, assignments)."""
    if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return set()


def _reaching(nodes, name, drop, source_lines):
    """The imports of ``nodes`` and the definitions the last definition of
    ``name`` uses, directly or through others, each the one in force where it
    is used (the kernel the paper's listing makes; other kernels of the module,
    such as conv2d's faster variants, are not counted); the other definitions'
    lines, with the comment lines just above them, go to ``drop``.  All of
    ``nodes`` where nothing defines ``name``."""
    ends = [i for i, n in enumerate(nodes) if name in _defined(n)]
    if not ends:
        return nodes
    wanted, reached = {name}, set()
    for i in range(ends[-1], -1, -1):  # backwards: a later definition hides an earlier one
        defined = _defined(nodes[i])
        if defined & wanted:
            reached.add(i)
            wanted = (wanted - defined) | _names_used([nodes[i]])
    out = []
    for i, n in enumerate(nodes):
        if _defined(n) and i not in reached:
            first = _first_line(n)
            while first > 1 and source_lines[first - 2].strip().startswith("#"):
                first -= 1
            drop.update(range(first, n.end_lineno + 1))
        else:
            out.append(n)
    return out


def _is_jit(node):
    return isinstance(node, ast.FunctionDef) and any(
        "jit" in ast.unparse(d) for d in node.decorator_list
    )


def triton_kernel_source(op, path=ROOT / "benchmarks" / "triton_baselines.py"):
    """The jit functions that the Triton baseline of ``op`` launches, or None."""
    if not path.exists():
        return None
    source = path.read_text()
    tree = ast.parse(source)
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    entry = functions.get(op)
    if entry is None:
        return None
    jit = {name: node for name, node in functions.items() if _is_jit(node)}
    found, todo = set(), [entry]
    while todo:
        for name in _names_used([todo.pop()]):
            if name in jit and name not in found:
                found.add(name)
                todo.append(jit[name])
    if not found:
        return None
    lines = source.splitlines()
    parts = []
    for node in sorted((jit[n] for n in found), key=lambda n: n.lineno):
        drop = set()
        _strip_docstring_lines(node, drop)
        parts.append(
            "\n".join(lines[i - 1] for i in range(_first_line(node), node.end_lineno + 1) if i not in drop)
        )
    return TRITON_HEADER + "\n\n\n".join(parts) + "\n"


def measure(source):
    raw = analyze(source)
    halstead = h_visit(source).total
    return {
        "LOC": raw.loc,
        "LLOC": raw.lloc,
        "SLOC": raw.sloc,
        "G": sum(block.complexity for block in cc_visit(source)),
        "η": halstead.vocabulary,
        "N": halstead.length,
        "V": halstead.volume,
        "D": halstead.difficulty,
        "MI": mi_visit(source, True),
    }


COLUMNS = ("LOC", "LLOC", "SLOC", "G", "η", "N", "V", "D", "MI")


def _cell(column, value):
    if value is None:
        return "n/a"
    return f"{value:.2f}" if column in ("V", "D", "MI") else str(value)


def tables():
    """The metrics table and the volume-ratio table, as markdown."""
    rows = ["| op | code | " + " | ".join(COLUMNS) + " | paper V |", "|---|---|" + "---:|" * (len(COLUMNS) + 1)]
    ratios = ["| op | ntsym V / Triton V | paper: NineToothed V / Triton V |", "|---|---:|---:|"]
    for op in OPS:
        volumes = {}
        for code, source, paper in (
            ("ntsym", ntsym_kernel_source(op), PAPER_VOLUME[op][0]),
            ("Triton", triton_kernel_source(op), PAPER_VOLUME[op][1]),
        ):
            metrics = measure(source) if source else dict.fromkeys(COLUMNS)
            volumes[code] = metrics["V"]
            cells = " | ".join(_cell(c, metrics[c]) for c in COLUMNS)
            rows.append(f"| {op} | {code} | {cells} | {paper:.2f} |")
        ntsym_v, triton_v = volumes["ntsym"], volumes["Triton"]
        ratio = f"{100 * ntsym_v / triton_v:.1f}%" if ntsym_v is not None and triton_v else "n/a"
        paper_ratio = f"{100 * PAPER_VOLUME[op][0] / PAPER_VOLUME[op][1]:.1f}%"
        ratios.append(f"| {op} | {ratio} | {paper_ratio} |")
    return "\n".join(rows) + "\n", "\n".join(ratios) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="also write docs/metrics.md")
    args = parser.parse_args()
    metrics, ratios = tables()
    print(metrics)
    print(ratios)
    if args.write:
        doc = ROOT / "docs" / "metrics.md"
        doc.parent.mkdir(exist_ok=True)
        doc.write_text(
            "# Code metrics: ntsym examples and plain Triton\n\n"
            + EXPLANATION + "\n\n" + metrics + "\n" + ratios
        )
        print(f"wrote {doc.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
