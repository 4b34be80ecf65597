"""Writes the application makes itself through a tensor's pointer
(``ntl.store``, ``ntl.atomic_*`` on ``x.source.data_ptr() + ...``): which
tensors they count as written."""

import ast


def writes_through_pointer(name):
    """Whether ``ntl.<name>(pointer, ...)`` writes memory through its pointer."""
    return name == "store" or (name.startswith("atomic_") and name != "atomic_load")


def note_pointer_write(emitter, node, args, kwargs):
    """A store or an atomic the application writes itself (``ntl.store``,
    ``ntl.atomic_add``) through pointers made from ``x.source.data_ptr()``,
    or a method of a tensor descriptor made from one (``d.store``,
    ``d.atomic_add``): the tensors it writes are written ones (their
    version counters bumped, their overlap with other arguments checked,
    staged values copied back).  A pointer reached through a local (``p =
    y.source.data_ptr() + ...``) or an inlined function's parameter may be
    any addressed tensor's: all of them count as written
    (``KernelEmitter.emit_body``)."""
    receiver = node.func.value if isinstance(node.func, ast.Attribute) else None
    if receiver is not None and emitter.alias(receiver) is None:
        # A method of a value (a tensor descriptor's ``d.store(offsets, v)``,
        # ``d.atomic_add``): the memory is the descriptor's, made from some
        # addressed tensor's pointer, which its offsets do not name.
        emitter.records.pointer_writes = True
        return
    emitted = args[0] if args else next((k.value for k in kwargs if k.arg == "pointer"), None)
    given = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "pointer"), None)
    if emitted is None:
        emitter.records.pointer_writes = True
        return
    emitter.records.stored.update(
        n.id[:-4] for n in ast.walk(emitted)
        if isinstance(n, ast.Name) and n.id.endswith("_ptr") and n.id[:-4] in emitter.tensors
    )
    if any(isinstance(n, ast.Name) and n.id not in emitter.tensors and emitter.alias(n) is None
           for n in ast.walk(given)):
        emitter.records.pointer_writes = True
