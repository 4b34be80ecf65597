"""Where generated code is kept, under the names NineToothed's
``generation`` module gives users: ``CACHE_DIR`` and ``cache_source``.

ntsym writes each generated module (kernel and launcher) once, keyed by a
hash of its source, under ``$NTSYM_CACHE_DIR`` (default ``$XDG_CACHE_HOME/ntsym``,
else ``~/.cache/ntsym``; ``python -m ntsym cache info`` says where);
tuned configurations are under ``CACHE_DIR / "tuning"``.  NineToothed's
``CodeGenerator`` is not offered: ntsym's generator (``codegen``) compiles an
IR the front end lowers from the arrangement, not an annotated function; use
``ntsym.make``, and ``kernel.source`` for the generated text.
"""

import pathlib

from ntsym_codegen import cache

CACHE_DIR = pathlib.Path(cache.cache_dir())


def cache_source(source):
    """Write the module text ``source`` to the cache (once: the file is named
    after a hash of it) and return its path."""
    return pathlib.Path(cache.write(source, "module"))
