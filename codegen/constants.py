"""Global names of the application: module paths (``ntl``, ``ntsym.language``,
``ntl.libdevice``) stand for ``tl`` or ``libdevice`` of the generated
module; global and closure constants (``SCALE``, ``math.pi``) become
literals.  A local of the same name hides either.
"""

import ast

from ntsym_codegen.analysis import dotted_path
from ntsym_codegen.astutil import literal


class GlobalNamesMixin:
    """Module aliases and constants, for ``KernelEmitter``.

    Reads ``names.locals`` and the IR's ``module_aliases``/``constants``;
    writes ``records.uses_libdevice``."""

    def _global_path(self, node):
        """``a.b.c`` for a path of names not hidden by a local, else None."""
        path = dotted_path(node)
        return None if path is None or path[0] in self.names.locals else ".".join(path)

    def alias(self, node):
        """What a module path of the application (``ntl``, ``ntsym.language``,
        ``ntl.libdevice``) stands for: "tl", "libdevice", a module, or None."""
        key = self._global_path(node)
        if key is None:
            return None
        alias = self.ir.module_aliases.get(key)
        if alias is None and isinstance(node, ast.Attribute) and node.attr == "libdevice" \
                and self.alias(node.value) == "tl":
            return "libdevice"
        return alias

    def _constant_key(self, node):
        key = self._global_path(node)
        return key if key in self.ir.constants else None

    def constant(self, node):
        """A global or closure constant (``SCALE``, ``math.pi``) as a literal
        of the generated code, else None."""
        key = self._constant_key(node)
        return None if key is None else literal(self.ir.constants[key])

    def global_name(self, node):
        """A module path or constant as the generated code writes it
        (``tl``, ``libdevice``, a literal), else None."""
        alias = self.alias(node)
        if alias in ("tl", "libdevice"):
            return self.module_name(alias)
        return self.constant(node)

    def number(self, node):
        """Whether ``node`` is a Python number at compile time (``2.0``,
        ``SCALE``, ``-math.pi / 2``): Triton's math functions take those as
        they are."""
        if isinstance(node, ast.Constant):
            return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
        if isinstance(node, ast.UnaryOp):
            return self.number(node.operand)
        if isinstance(node, ast.BinOp):
            return self.number(node.left) and self.number(node.right)
        key = self._constant_key(node)
        return key is not None and isinstance(self.ir.constants[key], (int, float))

    def module_name(self, alias):
        """The generated module's name for "tl" or "libdevice"."""
        if alias == "libdevice":
            self.records.uses_libdevice = True
        return ast.Name(id=alias, ctx=ast.Load())
