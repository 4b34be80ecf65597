"""One line of progress on stderr for long work (tuning, AOT builds).

The line is rewritten in place (``\\r``) and shown where stderr is a terminal
(not under pytest), or wherever NTSYM_TUNING_PROGRESS=1 asks for it (never with
NTSYM_TUNING_PROGRESS=0).  While it is shown, the same news is logged at DEBUG
rather than INFO, and any record of the ``ntsym`` logger first ends the line,
so that log output never runs on from a half-written progress line."""

import logging
import os
import sys

logger = logging.getLogger("ntsym")

_shown = [False]


def wanted():
    """Whether progress lines go to stderr."""
    value = os.environ.get("NTSYM_TUNING_PROGRESS", "")
    if value in ("0", "1"):
        return value == "1"
    return sys.stderr.isatty() and "PYTEST_CURRENT_TEST" not in os.environ


def show(text):
    """Show ``text`` as the progress line (or log it at INFO where no line is shown)."""
    if wanted():
        logger.debug(text)
        print(f"\r{text}\033[K", end="", file=sys.stderr, flush=True)
        _shown[0] = True
    else:
        logger.info(text)


def end():
    """End the progress line, if one is shown."""
    if _shown[0]:
        _shown[0] = False
        print(file=sys.stderr, flush=True)


class _EndLineFirst(logging.Filter):
    """Ends the progress line before a record of the ``ntsym`` logger is emitted."""

    def filter(self, record):
        end()
        return True


if not any(isinstance(f, _EndLineFirst) for f in logger.filters):
    logger.addFilter(_EndLineFirst())
