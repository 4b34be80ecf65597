"""The compile stage: ``ntsym.compile`` gives one frozen ``Compiled`` that every
target reads (the torch kernel, the standalone module), no module of
ntsym or codegen imports itself back through another, none reads another
package's private names, and no file or function of theirs grows too long."""

import ast
import dataclasses
import os
import pathlib
import subprocess
import sys

import pytest
import torch

import ntsym
from ntsym import Tensor

ROOT = pathlib.Path(__file__).resolve().parent.parent


def arrangement(x, y, z, BLOCK=ntsym.block_size()):
    return x.tile((BLOCK,)), y.tile((BLOCK,)), z.tile((BLOCK,))


def application(x, y, z):
    z = x * y + 1  # noqa: F841 - stored


def test_compile_gives_a_frozen_result_the_kernel_reads():
    compiled = ntsym.compile(arrangement, application, (Tensor(1), Tensor(1), Tensor(1)))
    assert isinstance(compiled, ntsym.Compiled)
    assert compiled.written == ("z",)
    assert "@triton.jit" in compiled.kernel_source and "def make_launch(" not in compiled.kernel_source
    assert compiled.launcher_source.startswith("def make_launch(")
    with pytest.raises(dataclasses.FrozenInstanceError):
        compiled.spec = None
    with pytest.raises(dataclasses.FrozenInstanceError):
        compiled.generated.checks = ()
    kernel = ntsym.make(arrangement, application, (Tensor(1), Tensor(1), Tensor(1)))
    assert kernel.compiled.source == compiled.source
    assert kernel.kernel_source == compiled.kernel_source
    x, y, z = torch.randn(7), torch.randn(7), torch.empty(7)
    kernel(x, y, z, BLOCK=32)
    torch.testing.assert_close(z, x * y + 1)
    assert len(kernel.calls.calls) == 1  # what calls learn is the kernel's, not the compiled result's


def test_a_compiled_kernel_exports_without_a_torch_kernel(tmp_path):
    compiled = ntsym.compile(arrangement, application, (Tensor(1), Tensor(1), Tensor(1)))
    path = ntsym.aot.export(compiled, tmp_path / "mul_add.py")
    script = ("import torch, mul_add\n"
              "x, y, z = torch.randn(9), torch.randn(9), torch.empty(9)\n"
              "mul_add.launch(x, y, z)\n"
              "torch.testing.assert_close(z, x * y + 1)\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["TRITON_INTERPRET"] = "1"
    done = subprocess.run([sys.executable, "-c", script], cwd=path.parent, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]


def _modules(root):
    """Module name -> file, for every module of ntsym and codegen."""
    files = {}
    for folder, package in (("ntsym", "ntsym"), ("codegen", "ntsym_codegen")):  # codegen/ installs as ntsym_codegen
        for f in (root / folder).rglob("*.py"):
            name = ".".join((package,) + f.relative_to(root / folder).with_suffix("").parts)
            files[name.removesuffix(".__init__")] = f
    return files


def _imports(root):
    """Module -> the modules of ntsym and codegen it imports (at the top or
    inside functions); ``from package import module`` names the module."""
    files = _modules(root)
    graph = {}
    for name, f in files.items():
        package = name if f.name == "__init__.py" else name.rpartition(".")[0]
        edges = set()
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Import):
                edges |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parts + ([base] if base else []))
                modules = {f"{base}.{a.name}" for a in node.names} & files.keys()
                edges |= modules if len(modules) == len(node.names) else modules | {base}
        graph[name] = (edges & files.keys()) - {name}
    return graph


def _cycles(graph):
    """The strongly connected components of more than one module."""
    order, low, stack, found = {}, {}, [], []

    def visit(v):
        order[v] = low[v] = len(order)
        stack.append(v)
        for w in graph[v]:
            if w not in order:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], order[w])
        if low[v] == order[v]:
            component = set()
            while not component or v not in component:
                component.add(stack.pop())
            if len(component) > 1:
                found.append(component)

    for v in sorted(graph):
        if v not in order:
            visit(v)
    return found


def test_the_import_graph_has_no_circle():
    assert [sorted(c) for c in _cycles(_imports(ROOT))] == []


def test_the_circle_finder_finds_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]


def test_every_kernel_parameter_has_the_source_every_launcher_prints():
    """One classification of the kernel's parameters (codegen/arguments.py):
    pointers, values fixed at make, sizes, flags and block sizes."""
    def scaled(x, y, z, scale, BLOCK=ntsym.block_size()):
        return x.tile((BLOCK,)), y.tile((BLOCK,)), z.tile((BLOCK,)), scale

    def apply(x, y, z, scale):
        z = x * scale + y  # noqa: F841

    tensors = (Tensor(1), Tensor(1), Tensor(1), Tensor(0, constexpr=True, value=3))
    compiled = ntsym.compile(scaled, apply, tensors)
    arguments = compiled.generated.arguments
    assert [(a.name, a.constexpr) for a in arguments] == list(compiled.generated.kernel_args)
    sources = {a.name: a.source for a in arguments}
    assert {sources[f"{t}_ptr"] for t in "xyz"} == {"tensor"}
    assert sources["scale"] == "fixed" and next(a.detail for a in arguments if a.name == "scale") == 3
    assert sources["NTSYM_INT64"] == "int64" and sources["BLOCK"] == "meta"
    assert "unknown" not in sources.values()
    kernel = ntsym.make(scaled, apply, tensors)
    x, y, z = torch.randn(5), torch.randn(5), torch.empty(5)
    kernel(x, y, z, BLOCK=32)
    torch.testing.assert_close(z, x * 3 + y)


# -- sizes and privacy ---------------------------------------------------------

MAX_FILE_LINES, MAX_FUNCTION_LINES = 600, 80


def _too_long(root):
    """Files of ntsym/ and codegen/ over MAX_FILE_LINES lines, and functions
    over MAX_FUNCTION_LINES (nested ones counted on their own too)."""
    found = []
    for folder in ("ntsym", "codegen"):
        for f in sorted((root / folder).rglob("*.py")):
            text = f.read_text()
            where = f.relative_to(root)
            if text.count("\n") > MAX_FILE_LINES:
                found.append(f"{where}: {text.count(chr(10))} lines")
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    length = node.end_lineno - node.lineno + 1
                    if length > MAX_FUNCTION_LINES:
                        found.append(f"{where}:{node.lineno}: {node.name} is {length} lines")
    return found


def test_no_product_file_or_function_is_too_long():
    assert _too_long(ROOT) == [], f"split these by idea (at most {MAX_FILE_LINES} lines a file, " \
                                  f"{MAX_FUNCTION_LINES} a function)"


def test_the_length_check_finds_a_long_function(tmp_path):
    (tmp_path / "ntsym").mkdir()
    (tmp_path / "codegen").mkdir()
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    (tmp_path / "ntsym" / "long.py").write_text("def f():\n" + body + "\n" * MAX_FILE_LINES)
    assert _too_long(tmp_path) == [f"ntsym{os.sep}long.py: {MAX_FUNCTION_LINES + 1 + MAX_FILE_LINES} lines",
                                   f"ntsym{os.sep}long.py:1: f is {MAX_FUNCTION_LINES + 1} lines"]


def _private(name):
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _package(module, files):
    return module if files[module].name == "__init__.py" else module.rpartition(".")[0]


def _private_reads(path, own, files):
    """Where ``path`` (a module of package ``own``, or None for a test) reads a
    private name of a module of another package of ntsym or codegen: ``from X
    import _y``, ``X._y`` and ``setattr(X, "_y", ...)`` (monkeypatching)."""
    tree = ast.parse(path.read_text())
    bound, found = {}, []

    def foreign(module):
        return module in files and (own is None or _package(module, files) != own)

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                bound[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            for a in node.names:
                if f"{node.module}.{a.name}" in files:
                    bound[a.asname or a.name] = f"{node.module}.{a.name}"
                elif _private(a.name) and foreign(node.module):
                    found.append(f"{node.lineno}: from {node.module} import {a.name}")

    def module_of(e):
        if isinstance(e, ast.Name):
            return bound.get(e.id)
        if isinstance(e, ast.Attribute):
            base = module_of(e.value)
            return f"{base}.{e.attr}" if base and f"{base}.{e.attr}" in files else None
        return None

    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr) and foreign(module_of(node.value)):
            found.append(f"{node.lineno}: {module_of(node.value)}.{node.attr}")
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) == "setattr" \
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) \
                and isinstance(node.args[1].value, str) and _private(node.args[1].value) \
                and foreign(module_of(node.args[0])):
            found.append(f"{node.lineno}: setattr({module_of(node.args[0])}, {node.args[1].value!r})")
    return found


def _all_private_reads(root):
    files = _modules(root)
    own = {f: _package(m, files) for m, f in files.items()}
    found = []
    for folder in ("ntsym", "codegen", "tests", "benchmarks"):
        for f in sorted((root / folder).rglob("*.py")):
            if "lab" not in f.relative_to(root).parts:  # benchmarks/lab: a record nothing imports
                found += [f"{f.relative_to(root)}:{w}" for w in _private_reads(f, own.get(f), files)]
    return found


def test_no_code_reads_a_private_name_of_another_package():
    """A package's private names are its own: code of another package, a test
    or a benchmark reads public ones (ntsym_codegen.tuning, .runtime and .aot
    are packages apart from ntsym_codegen's top level)."""
    assert _all_private_reads(ROOT) == []


def test_the_privacy_check_finds_private_reads(tmp_path):
    for folder in ("ntsym", "codegen/runtime", "tests"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "codegen" / "runtime" / "__init__.py").write_text("")
    (tmp_path / "codegen" / "runtime" / "checks.py").write_text("def _hidden():\n    pass\n")
    (tmp_path / "ntsym" / "user.py").write_text("from ntsym_codegen.runtime.checks import _hidden\n")
    (tmp_path / "tests" / "test_user.py").write_text(
        "from ntsym_codegen import runtime\n"
        "runtime.checks._hidden()\n"
        "def test(monkeypatch):\n"
        "    monkeypatch.setattr(runtime.checks, '_hidden', None)\n")
    assert _all_private_reads(tmp_path) == [
        f"ntsym{os.sep}user.py:1: from ntsym_codegen.runtime.checks import _hidden",
        f"tests{os.sep}test_user.py:2: ntsym_codegen.runtime.checks._hidden",
        f"tests{os.sep}test_user.py:4: setattr(ntsym_codegen.runtime.checks, '_hidden')",
    ]
