"""The name a kernel is shown by when no ``kernel_name`` is given.

NineToothed names a kernel after its application, and most applications are
called ``application``: every kernel of a program would then read
``application`` in progress lines, tuning-cache files and errors.  Where the
application's name is that generic one, the kernel is shown by what tells it
apart: the arrangement's name (less ``arrangement``) and the file that
defines it (``add``, ``conv2d_channels_last``).  The function emitted into
the generated module keeps the application's name, as NineToothed's does."""

import os
import re
import sys

# Names that say nothing of the kernel (NineToothed's examples use them all).
_GENERIC = frozenset({"application", "arrangement", "kernel", "main", "<lambda>"})


def shown_name(arrangement, application, kernel_name):
    """The kernel's name in messages, caches and progress lines: ``kernel_name``
    where given, else the application's name unless it is generic, else one
    made of the arrangement's file and name (the application's name where
    neither tells more)."""
    own = getattr(application, "__name__", "kernel")
    if kernel_name and kernel_name != own:  # @ntsym.jit passes the function's own
        return kernel_name
    if own not in _GENERIC:
        return own
    # @ntsym.jit's arrangement is ntsym's own: the application's file names it.
    ours = (getattr(arrangement, "__module__", None) or "").split(".")[0] == "ntsym"
    words = [_file_stem(application if ours else arrangement), "" if ours else _bare(getattr(arrangement, "__name__", ""))]
    name = "_".join(w for w in words if w)
    name = re.sub(r"\W", "_", name)
    return name if name.isidentifier() else own


def _bare(name):
    """``channels_last_arrangement`` -> ``channels_last``; generic names -> ''."""
    if name in _GENERIC:
        return ""
    return re.sub(r"_?arrangement$", "", name)


def _file_stem(function):
    """The stem of the file that defines ``function`` (its module's last part,
    or the script's file name for ``__main__``); '' where there is none."""
    module = getattr(function, "__module__", None) or ""
    if module and module != "__main__":
        stem = module.rsplit(".", 1)[-1]
        return "" if stem.startswith("<") else stem
    code = getattr(function, "__code__", None)
    path = code.co_filename if code is not None else getattr(sys.modules.get("__main__"), "__file__", "")
    if not path or path.startswith("<"):
        return ""
    return os.path.splitext(os.path.basename(path))[0]
