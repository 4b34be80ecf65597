"""``ntsym.language`` (``ntl``): everything in ``triton.language``, plus
``libdevice`` (with portable fallbacks under Triton's interpreter)."""

from triton.language import *  # noqa: F401,F403
from triton.language import constexpr, dtype  # noqa: F401

from ntsym.libdevice import libdevice  # noqa: F401
