"""The exceptions ntsym raises.  Each is also the matching builtin, so existing
``except ValueError`` code keeps working.  Defined in :mod:`ntsym_codegen.errors`,
where the back end raises them too."""

from ntsym_codegen.errors import (
    ApplicationError,
    ArrangementError,
    CodegenError,
    LaunchError,
    MetaOperationError,
    NtsymError,
)

__all__ = ["ApplicationError", "ArrangementError", "CodegenError", "LaunchError", "MetaOperationError", "NtsymError"]
