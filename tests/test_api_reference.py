"""The API reference: docs/api.md is what docs/make_api.py makes of the
docstrings now, and every parameter of the public API is documented."""

import inspect
import pathlib
import pydoc
import runpy

import pytest

import ntsym

ROOT = pathlib.Path(__file__).resolve().parent.parent
MAKER = runpy.run_path(str(ROOT / "docs" / "make_api.py"))


def test_the_reference_is_up_to_date():
    assert (ROOT / "docs" / "api.md").read_text() == MAKER["render"](), \
        "docs/api.md is out of date: run python docs/make_api.py"


def _documented():
    for _, names in MAKER["PUBLIC"]:
        for dotted in names:
            obj = MAKER["resolve"](dotted)
            if inspect.isclass(obj) and (issubclass(obj, BaseException) or obj.__name__ in MAKER["MADE_BY_NTSYM"]):
                continue
            yield dotted, obj


@pytest.mark.parametrize("dotted,obj", list(_documented()), ids=lambda v: v if isinstance(v, str) else "")
def test_every_parameter_is_documented(dotted, obj):
    target = obj.__dict__.get("__new__", obj.__init__) if inspect.isclass(obj) else obj
    doc = inspect.getdoc(obj) or ""
    names = [p for p in inspect.signature(target).parameters if p not in ("self", "cls")]
    missing = [p for p in names if f"``{p}``" not in doc and f"`{p}`" not in doc]
    assert not missing, f"{dotted}: parameters {missing} are not in its docstring"


def test_help_shows_no_private_parameter():
    text = pydoc.render_doc(ntsym.make, renderer=pydoc.plaintext)
    assert "_padded" not in text and "arrangement" in text and "max_num_configs" in text
    assert all(p in inspect.signature(ntsym.make).parameters for p in ("num_warps", "kernel_name"))
