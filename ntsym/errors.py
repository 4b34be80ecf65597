"""The exceptions ntsym raises.  Each is also the matching builtin, so existing
``except ValueError`` code keeps working.  Defined in :mod:`codegen.errors`,
where the back end raises them too."""

from codegen.errors import (
    ApplicationError,
    ArrangementError,
    CodegenError,
    LaunchError,
    MetaOperationError,
    NtsymError,
)

__all__ = ["ApplicationError", "ArrangementError", "CodegenError", "LaunchError", "MetaOperationError", "NtsymError"]
