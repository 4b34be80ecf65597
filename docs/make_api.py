"""Writes docs/api.md, the reference of ntsym's public API, from the
docstrings and signatures (``inspect``, as ``pydoc`` reads them):
``python docs/make_api.py``.  tests/test_api_reference.py checks that the
page is up to date and that every parameter is documented."""

import inspect
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# (heading, dotted name) of everything the reference covers, in its order.
PUBLIC = [
    ("Making kernels", ["ntsym.make", "ntsym.jit", "ntsym.Kernel", "ntsym.build", "ntsym.explain"]),
    ("Tensors and symbols", ["ntsym.Tensor", "ntsym.Symbol", "ntsym.block_size"]),
    ("Jagged tensors", ["ntsym.jagged", "ntsym.Jagged"]),
    ("Costs of calls", ["ntsym.stats", "ntsym.reset_stats", "ntsym.Stats"]),
    ("PyTorch operators", ["ntsym.library.op"]),
    ("Debugging arrangements", ["ntsym.eval", "ntsym.subs", "ntsym.eval_expr", "ntsym.index_table"]),
    ("Visualization", ["ntsym.visualization.visualize", "ntsym.visualization.visualize_arrangement"]),
    ("Errors", ["ntsym.NtsymError", "ntsym.MetaOperationError", "ntsym.ArrangementError", "ntsym.ApplicationError",
                "ntsym.LaunchError", "ntsym.CodegenError", "ntsym.library.RegistrationError"]),
]


def resolve(dotted):
    import importlib

    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)


# Classes users get from ntsym rather than construct: no constructor shown.
MADE_BY_NTSYM = {"Kernel"}


def signature(obj):
    """``obj``'s signature as ``inspect`` shows it ('' where it has none)."""
    if inspect.isclass(obj) and obj.__name__ in MADE_BY_NTSYM:
        return ""
    target = obj.__dict__.get("__new__", obj.__init__) if inspect.isclass(obj) else obj
    if inspect.isclass(obj) and issubclass(obj, BaseException):
        return ""
    try:
        text = str(inspect.signature(target))
    except (TypeError, ValueError):
        return ""
    return text.replace("(cls, ", "(").replace("(self, ", "(").replace("(self)", "()")


def methods(cls):
    """The public methods and properties ``cls`` defines itself."""
    for name, member in sorted(vars(cls).items()):
        if name.startswith("_"):
            continue
        if isinstance(member, property) or inspect.isfunction(member):
            yield name, member


def entry(dotted):
    obj = resolve(dotted)
    lines = [f"### `{dotted}{signature(obj)}`", "", inspect.getdoc(obj) or "(undocumented)", ""]
    if inspect.isclass(obj) and not issubclass(obj, BaseException):
        for name, member in methods(obj):
            shown = name if isinstance(member, property) else f"{name}{signature(member)}"
            doc = inspect.getdoc(member) or ""
            lines += [f"- `{shown}`" + (": " + doc.replace("\n", "\n  ") if doc else "")]
        lines.append("")
    return lines


def render():
    lines = ["# API reference", "", "Generated from the docstrings by `python docs/make_api.py`; do not edit.", ""]
    for heading, names in PUBLIC:
        lines += [f"## {heading}", ""]
        for dotted in names:
            lines += entry(dotted)
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":
    (ROOT / "docs" / "api.md").write_text(render())
