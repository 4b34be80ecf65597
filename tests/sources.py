"""Applications written from source text, for tests that vary one line of
an application: make() reads an application's source, so the text is
written to a file of its own first and compiled from there."""

import hashlib
import linecache
import os
import tempfile

import ntsym.language as ntl


def application_from(source, name="application", **names):
    """The function ``name`` that ``source`` defines (``ntl`` and ``names``
    in its globals), compiled from a file holding ``source``."""
    digest = hashlib.sha1(source.encode()).hexdigest()[:16]
    path = os.path.join(tempfile.gettempdir(), f"ntsym_test_application_{digest}.py")
    with open(path, "w") as f:
        f.write(source)
    linecache.checkcache(path)
    namespace = {"ntl": ntl, **names}
    exec(compile(source, path, "exec"), namespace)
    return namespace[name]
