"""The install puts ntsym's own names only into an environment: ``ntsym`` and
``ntsym_codegen`` (the ``codegen/`` folder), never a generic ``codegen``; and
setup.cfg lists every package of both folders."""

import configparser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _options():
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    return config["options"]


def _listed(value):
    return [line.strip() for line in value.splitlines() if line.strip()]


def test_codegen_installs_under_ntsyms_name():
    mapping = dict(line.split("=") for line in _listed(_options()["package_dir"]))
    assert {k.strip(): v.strip() for k, v in mapping.items()} == {"ntsym_codegen": "codegen"}
    assert not any(p == "codegen" or p.startswith("codegen.") for p in _listed(_options()["packages"]))


def test_every_package_folder_is_listed():
    found = set()
    for folder, name in (("ntsym", "ntsym"), ("codegen", "ntsym_codegen")):
        for init in (ROOT / folder).rglob("__init__.py"):
            parts = init.parent.relative_to(ROOT / folder).parts
            found.add(".".join((name,) + parts))
    assert set(_listed(_options()["packages"])) == found


def test_the_source_tree_imports_the_same_modules():
    import ntsym_codegen.cache
    import ntsym_codegen.runtime

    assert Path(ntsym_codegen.cache.__file__).parent.name in ("codegen", "ntsym_codegen")  # source tree or wheel
    assert ntsym_codegen.runtime.cdiv(7, 2) == 4
