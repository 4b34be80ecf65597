"""The error the emitter raises where the application uses something it cannot
compile, with the place in the application's source (``make`` raises it
again as ``ApplicationError``).
"""


class EmitError(TypeError):
    """The application uses something the emitter cannot compile.  Carries the
    source location: ``filename``, ``lineno``, ``col``, ``line``."""

    def __init__(self, message, node=None, filename=None, source_lines=None):
        self.lineno = getattr(node, "lineno", None)
        self.col = getattr(node, "col_offset", None)
        self.end_col = getattr(node, "end_col_offset", None)
        self.end_lineno = getattr(node, "end_lineno", None)
        self.filename = filename
        self.line = None
        if self.lineno is not None and source_lines:
            if 0 < self.lineno <= len(source_lines):
                self.line = source_lines[self.lineno - 1].rstrip("\n")
        self.plain = message
        super().__init__(self._format())

    def _format(self):
        if self.lineno is None:
            return self.plain
        text = f'{self.plain}\n  File "{self.filename}", line {self.lineno}'
        if self.line is not None:
            col = self.col or 0
            end = self.end_col if self.end_col and self.end_col > col else col + 1
            if self.end_lineno not in (None, self.lineno):
                end = len(self.line)
            shown = self.line.lstrip()
            skip = len(self.line) - len(shown)
            text += f"\n    {shown}\n    {' ' * (col - skip)}{'^' * max(1, end - col)}"
        return text


def source_lines(filename):
    """The lines of the application's file, for error messages (None when it
    cannot be read)."""
    try:
        with open(filename) as f:
            return f.readlines()
    except (OSError, TypeError):
        return None
