"""One interpreted launch at a time per process.

Triton's interpreter runs a kernel by patching ``triton.language`` for the
duration of the launch (its builtins are given the interpreter's semantics,
then restored); two threads launching at once see each other's patching undone
and fail inside Triton.  Compiled launches need no lock: each is a call into
the driver."""

import threading

INTERPRETER = threading.RLock()
