"""Triton's interpreter as Triton 3.3 to 3.6 ship it, made to work with NumPy 2.4.

Those interpreters turn a scalar tensor into a Python ``int`` (``__index__``,
as ``range(n_tiles)`` in a kernel's loop needs) with ``int(data)``, where
``data`` is a NumPy array of shape ``(1,)``.  NumPy 2.4 refuses that
conversion ("only 0-dimensional arrays can be converted to Python scalars");
Triton 3.7 converts ``data.squeeze()`` instead.  ``install`` makes the older
interpreters do the same: after Triton patches ``tl.tensor`` for an
interpreted launch, ``__index__`` is set to the squeezed conversion (in the
same scope, restored after the launch, where Triton has one).  A tensor of more than one element still fails, as it
does on a GPU."""


def _index(self):
    return int(self.handle.data.squeeze())


def install():
    """Wrap the interpreter's tensor patching once (a no-op where Triton has no
    such function, or where it already converts through ``squeeze``)."""
    try:
        from triton.runtime import interpreter
    except ImportError:  # pragma: no cover - triton is a dependency
        return
    original = getattr(interpreter, "_patch_lang_tensor", None)
    if original is None or getattr(original, "ntsym_squeezes_index", False):
        return

    def patch_lang_tensor(tensor, *args, **kwargs):
        result = original(tensor, *args, **kwargs)
        scope = args[0] if args else kwargs.get("scope")
        if scope is None:  # Triton 3.3: the patches stay, as its own do
            tensor.__index__ = _index
        else:
            scope.set_attr(tensor, "__index__", _index)
        return result

    patch_lang_tensor.ntsym_squeezes_index = True
    patch_lang_tensor.__wrapped_original__ = original
    interpreter._patch_lang_tensor = patch_lang_tensor
