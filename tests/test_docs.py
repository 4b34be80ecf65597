"""Every ```python block of README.md and docs/*.md runs as written, from a
directory outside the checkout (the checkout on PYTHONPATH, as README says
for ``examples``).  A file's blocks run in order in one interpreter, so later
blocks may use earlier names.  Blocks fenced ```python gpu need a GPU and are
left out where there is none.  The README's table of variables names every
NTSYM_* variable the code reads."""

import os
import pathlib
import re
import subprocess
import sys

import pytest
import torch

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```python([^\n]*)\n(.*?)^```", re.S | re.M)
# Build C libraries; tune and register operators; draw (test_visualization.py
# draws the same pictures in process).
SLOW = {"aot.md", "README.md", "torch.md", "visualization.md", "jagged.md"}


def blocks(path):
    """(info words, code) of each python block of ``path``."""
    return [(info.split(), code) for info, code in FENCE.findall(path.read_text())]


def runnable(path):
    gpu = torch.cuda.is_available()
    return [code for words, code in blocks(path) if gpu or "gpu" not in words]


@pytest.mark.parametrize("path", [pytest.param(p, id=p.name, marks=[pytest.mark.slow] if p.name in SLOW else [])
                                  for p in DOCS if blocks(p)])
def test_code_blocks_run(path, tmp_path):
    script = tmp_path / f"{path.stem}_blocks.py"
    script.write_text("\n\n".join(runnable(path)))
    env = dict(os.environ, PYTHONPATH=str(ROOT), MPLBACKEND="Agg")
    env.pop("PYTEST_CURRENT_TEST", None)
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, f"{path.name}:\n{done.stderr[-3000:]}"
    assert not list(tmp_path.glob("docs")), "a block wrote under docs/ relative to the caller"


def test_blocks_are_found():
    assert len(blocks(ROOT / "README.md")) >= 2 and blocks(ROOT / "docs" / "torch.md")


def _variables_read():
    pattern = re.compile(r"""environ(?:\.get)?[\(\[]\s*["'](NTSYM_[A-Z0-9_]+)["']|getenv\(\s*["'](NTSYM_[A-Z0-9_]+)""")
    found = set()
    for folder in ("ntsym", "codegen", "examples", "benchmarks", "tests"):
        for source in (ROOT / folder).rglob("*.py"):
            for match in pattern.finditer(source.read_text()):
                found.add(match.group(1) or match.group(2))
    return found


def test_every_variable_is_in_the_readme_table():
    readme = (ROOT / "README.md").read_text()
    table = readme[readme.index("## Environment"):]
    table = table[:table.index("\n## ", 1)]
    variables = _variables_read()
    assert {"NTSYM_CACHE_DIR", "NTSYM_TRITON_OP", "NTSYM_TUNE_IN_INTERPRETER"} <= variables
    missing = sorted(v for v in variables if f"`{v}" not in table)
    assert not missing, f"README's Environment table lacks {missing}"


def test_readme_and_ci_install_and_test_alike():
    """README's install and test commands are the ones CI runs."""
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    extras = re.compile(r'pip install[^\n]*?-e "\.\[([a-z,]+)\]"')
    assert extras.search(readme).group(1) == extras.search(ci).group(1)
    assert "python -m pytest -q tests" in readme and "python3 -m pytest -q tests\n" in ci
    assert '-m "not slow"' in readme and '-m "not slow" tests' in ci
