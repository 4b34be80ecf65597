"""The compile stage: ``ntsym.compile`` gives one frozen ``Compiled`` that every
target reads (the torch kernel, the standalone module), and no module of
ntsym or codegen imports itself back through another."""

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


def _imports(root):
    """Module -> the modules of ntsym and codegen it imports (at the top or
    inside functions); ``from package import module`` names the module."""
    files = {}
    for folder, package in (("ntsym", "ntsym"), ("codegen", "ntsym_codegen")):  # codegen/ installs as ntsym_codegen
        for f in (root / folder).rglob("*.py"):
            name = ".".join((package,) + f.relative_to(root / folder).with_suffix("").parts)
            files[name.removesuffix(".__init__")] = f
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
    cycles = _cycles(_imports(ROOT))
    # The padding rule and the mixing checks still call each other.
    known = {frozenset({"ntsym_codegen.mixing", "ntsym_codegen.padding"})}
    assert [sorted(c) for c in cycles if frozenset(c) not in known] == []


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
