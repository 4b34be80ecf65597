"""The exceptions ntsym raises.  Each is also the matching builtin, so existing
``except ValueError`` code keeps working.

Defined in the back end, which raises some of them itself (``LaunchError``
from the launcher, ``ApplicationError`` for errors mapped back to the
application) and never imports ``ntsym``; ``ntsym.errors`` re-exports them."""


class NtsymError(Exception):
    """Base class of every error ntsym raises on purpose."""


class MetaOperationError(NtsymError, ValueError):
    """A meta-operation got arguments that cannot describe a valid arrangement."""


class ArrangementError(NtsymError, ValueError):
    """The arranged tensors cannot be launched together (shapes, levels, names)."""


class ApplicationError(NtsymError, TypeError):
    """The application uses syntax or names ntsym cannot compile."""


class LaunchError(NtsymError, ValueError):
    """The arguments given to a kernel do not fit its arrangement."""


class CodegenError(NtsymError, TypeError):
    """An expression has no exact translation to Triton."""


# Shown (tracebacks, repr, pickling) under the name users import them by:
# ``ntsym.LaunchError``, not this module's.
for _error in (NtsymError, MetaOperationError, ArrangementError, ApplicationError, LaunchError, CodegenError):
    _error.__module__ = "ntsym"
del _error


def launch_message(headline, *explanation):
    """A refusal's text: one short line that says what is wrong (the tensor,
    dimension, expected and given values), then the why and the fix, each on
    a line of its own, so that a traceback's last line stays readable."""
    return "\n".join((headline,) + tuple(line for line in explanation if line))


def fail(headline, *explanation):
    """Refuse a launch: raise :class:`LaunchError` with ``headline`` on the
    first line and ``explanation`` on the following ones."""
    raise LaunchError(launch_message(headline, *explanation))
