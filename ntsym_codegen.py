"""ntsym's back end, the ``codegen/`` folder, under the name it is installed as.

An install maps ``codegen/`` to ``ntsym_codegen`` (setup.cfg's ``package_dir``),
so that ntsym puts no generic top-level name into an environment.  This module
lets a source tree that is not installed (or another checkout than the
installed one, run from its root) import the same package: its modules are
found in ``codegen/`` beside this file.  It is not installed itself.
"""

import os as _os

__path__ = [_os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "codegen")]
