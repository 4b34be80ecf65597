"""The package as users see it: error types by the names they import."""

import pickle
import traceback

import pytest

import ntsym
from ntsym_codegen import errors


@pytest.mark.parametrize("name", ["NtsymError", "MetaOperationError", "ArrangementError", "ApplicationError",
                                  "LaunchError", "CodegenError"])
def test_errors_are_shown_as_ntsym_names(name):
    cls = getattr(ntsym, name)
    assert cls is getattr(errors, name)  # one class: except clauses of either name catch it
    error = cls("what went wrong")
    shown = "".join(traceback.format_exception_only(type(error), error))
    assert shown.startswith(f"ntsym.{name}: what went wrong")
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is cls and str(again) == "what went wrong"


def test_a_launch_error_from_a_kernel_is_an_ntsym_launch_error():
    from examples import add
    import torch

    with pytest.raises(ntsym.LaunchError) as caught:
        add.kernel(torch.zeros(4), torch.zeros(3), torch.zeros(4))
    assert isinstance(caught.value, ValueError)
    assert "".join(traceback.format_exception_only(caught.type, caught.value)).startswith("ntsym.LaunchError: ")


@pytest.mark.slow
def test_the_wheel(tmp_path):
    """The wheel holds the license, the typing marker and the build worker,
    and declares the dependency ranges ntsym runs with."""
    import pathlib
    import shutil
    import subprocess
    import sys
    import zipfile

    root = pathlib.Path(__file__).resolve().parent.parent
    source = tmp_path / "source"  # a copy: building writes build/ and *.egg-info beside the sources
    ignore = shutil.ignore_patterns("__pycache__")
    for name in ("ntsym", "codegen"):
        shutil.copytree(root / name, source / name, ignore=ignore)
    for name in ("setup.cfg", "pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(root / name, source / name)
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation",
                           "-q", "-w", str(tmp_path)], capture_output=True, text=True, cwd=tmp_path)
    if done.returncode:
        pytest.skip(f"pip cannot build a wheel here: {done.stderr[-500:]}")
    wheel = zipfile.ZipFile(next(tmp_path.glob("ntsym-*.whl")))
    names = wheel.namelist()
    assert any(n.endswith("licenses/LICENSE") for n in names)
    assert "ntsym/py.typed" in names and "ntsym_codegen/aot/worker.py" in names and "ntsym/__main__.py" in names
    assert not any(n.startswith("codegen/") for n in names)  # installed as ntsym_codegen only
    metadata = wheel.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    for requirement in ("triton>=3.6", "torch>=2.4", "filelock"):
        assert f"Requires-Dist: {requirement}\n" in metadata
