"""Checks the ``NTSYM_DEBUG=1`` switch adds to generated kernels.

Indices of a gather or scatter through ``x.source[...]`` come from data, so
no proof bounds them.  Without the switch an index outside ``[0, size)``
reads the tensor's ``other`` (0 unless declared) and a store through it is
dropped (the access is masked), where torch's indexing would raise.  With
the switch, make() emits ``ntsym_check_index`` before each such access: a
``tl.device_assert`` on a GPU (the kernel is compiled with ``debug=True`` so
that it fires), and under Triton's interpreter, whose ``device_assert`` is
off, a check that raises ``IndexError`` here.  The switch is read when a
kernel is made; the generated source, and so its cache key, differ.
"""

import os

import numpy as np


def enabled():
    """Whether ``NTSYM_DEBUG`` asks for the checks ("1", "true", "yes", "on")."""
    return os.environ.get("NTSYM_DEBUG", "0").strip().lower() in ("1", "true", "yes", "on")


# Two definitions, one taken when the module is imported: Triton's compiler
# refuses a kernel whose source names a Python function (interpreted_check),
# even in a branch it would not take.
HELPER = """
if NTSYM_INTERPRETING.value:
    @triton.jit
    def ntsym_check_index(inside, message: tl.constexpr):
        \"\"\"Every lane of ``inside`` holds (NTSYM_DEBUG): an IndexError under the
        interpreter, whose device_assert is off.\"\"\"
        debug_checks.interpreted_check(inside, message)
else:
    @triton.jit
    def ntsym_check_index(inside, message: tl.constexpr):
        \"\"\"Every lane of ``inside`` holds (NTSYM_DEBUG): a device assert.\"\"\"
        tl.device_assert(inside, message)
"""


def interpreted_check(inside, message):
    """Under Triton's interpreter: raise ``IndexError`` where a lane of the
    block ``inside`` is false."""
    data = np.asarray(getattr(getattr(inside, "handle", inside), "data", inside))
    if not data.all():
        message = getattr(message, "value", message)
        raise IndexError(f"{message} ({int((~data.astype(bool)).sum())} lanes)")


__all__ = ["HELPER", "enabled", "interpreted_check"]
