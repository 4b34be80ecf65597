"""The compile stage: ``compile(arrangement, application, tensors)`` lowers the
arrangement to the IR (with every proof the lowering makes), emits the kernels
and their torch launcher, decides which tensors may alias, and returns one
frozen :class:`Compiled`.

Every target reads a ``Compiled`` and nothing else of the stages before it:
the torch ``Kernel`` (``ntsym.make``), the torch operator (``ntsym.library``)
and the C library and standalone module (``ntsym.aot``).  No target builds
another to read its insides.  Compiling launches nothing and reads no torch
tensor: the sizes it needs are those of the symbolic ``tensors``.
"""

import ast
import dataclasses
import itertools
import re

from ntsym_codegen import emit
from ntsym_codegen.analysis import assigned_names
from ntsym_codegen.emit_error import EmitError
from ntsym_codegen.lane_values import used_at_its_value
from ntsym_codegen.printer import PrintError
from ntsym.errors import ApplicationError, CodegenError
from ntsym.lower import lower
from ntsym.proofs import aliasing_table
from ntsym.renaming import LAUNCHER_NAMES
from ntsym.tensor import Tensor


@dataclasses.dataclass(frozen=True, eq=False)
class Compiled:
    """What compiling decided, fixed: read by every target.

    - ``ir``: the lowered kernel (codegen/ir.py), its launch checks and grid;
    - ``generated``: the emitted module in its parts and the emitter's facts
      (``ntsym_codegen.emit.Generated``);
    - ``spec``: the launch plan the runtime reads (``ntsym_codegen.runtime.Spec``):
      parameters, compile-time values, the aliasing table, tuning's inputs;
    - ``display``: size and stride symbols as users write them
      (``x.shape[1]``), for the messages of every launcher.
    """

    ir: object
    generated: object
    spec: object
    display: dict

    @property
    def name(self):
        """The kernel's name in messages, caches and files (ntsym.kernel_names)."""
        return self.ir.shown_name

    @property
    def source(self):
        """The generated module (helpers, kernels, torch launcher)."""
        return self.generated.source

    @property
    def kernel_source(self):
        """The ``@triton.jit`` kernel (and its persistent variant, where there is one)."""
        return self.generated.kernels.rstrip() + "\n"

    @property
    def launcher_source(self):
        """The torch launcher (``make_launch``)."""
        return self.generated.launcher.rstrip() + "\n"

    @property
    def checks(self):
        """The launch checks: the IR's, then those the emitter found."""
        return self.generated.checks

    @property
    def written(self):
        """The tensors the kernel stores to, sorted."""
        return tuple(self.generated.written)

    @property
    def read(self):
        """The tensors the kernel loads from."""
        return self.generated.read


def compile(arrangement, application, tensors, kernel_name=None, num_warps=None,  # noqa: A001 - the stage's name
            num_stages=None, max_num_configs=None, padded=frozenset(), apart=False):
    """Compile ``application`` over ``arrangement(*tensors)``.

    ``padded``: call-time tile sizes to pad to a power of two (the variant a
    kernel launches for another value).  ``apart``: the variant whose tensors
    only read may have more tiles than programs along a tiled first
    dimension (``ntsym.pairing``; a kernel launches it where its own check
    of equal sizes fails).  Raises the front end's errors
    (``ArrangementError``, ``ApplicationError``, ``CodegenError``)."""
    ir = lower(arrangement, application, tensors, kernel_name, num_warps, num_stages, max_num_configs, padded,
               apart)
    try:
        generated = emit.emit(ir)
    except EmitError as e:
        raise ApplicationError(str(e)) from None
    except PrintError as e:
        raise CodegenError(str(e)) from None
    _check_parameter_names(ir)
    _check_kernel_names(generated.source, _assigned(ir), {generated.kernel_name, generated.persistent_name})
    together = tuple((i, j) for i, j in itertools.combinations(range(len(tensors)), 2)
                     if tensors[i] is tensors[j] and isinstance(tensors[i], Tensor))
    aliasing = aliasing_table(ir, generated.sourced, frozenset(generated.written))
    spec = dataclasses.replace(emit.spec(ir, generated), aliasing=aliasing, declared_together=together,
                               others=_others(ir))
    return Compiled(ir=ir, generated=generated, spec=spec, display=display_names(ir))


# Names the generated kernel binds itself, for the program's index along each grid dimension.
PROGRAM_NAMES = re.compile(r"(pid|rest|first_pid)_\d+$|per_group$|group_rows$")


def _assigned(ir):
    """The names the application (and what it inlines) assigns."""
    functions = [ir.application, *(fn for fn, _ in ir.inline_functions.values())]
    return set().union(*(assigned_names(fn.body) for fn in functions))


def _check_parameter_names(ir):
    """Refuse a parameter named as a size, stride or block size of the
    kernel (a scalar ``y_size_0`` beside a tensor ``y``: the launcher's read
    of ``y``'s size would replace it), as a module-level name the launcher
    reads, or with the ``ntsym_`` prefix of the launcher's own names."""
    symbols = {a.symbol.name for a in ir.size_args} | {m.symbol.name for m in ir.meta_params}
    symbols |= {e.name for p in ir.params for e in (*getattr(p, "source_sizes", ()), *getattr(p, "strides", ()))
                if getattr(e, "is_Symbol", False)}
    for p in ir.params:
        if p.name in symbols or p.name in LAUNCHER_NAMES or p.name.startswith(("ntsym_", "NTSYM_")):
            what = "a size, stride or block size of the kernel" if p.name in symbols else "one of the launcher's names"
            raise CodegenError(f"the parameter `{p.name}` is named as {what}; the launcher would read one in "
                               "place of the other: rename the parameter")


def _check_kernel_names(source, assigned, kernels):
    """Refuse a generated kernel (``kernels``: the kernels' names; the
    module's helpers are not checked) that takes a name twice as a
    parameter, or assigns a parameter's name where the application does not
    (other than re-typing it in place, ``n = tl.cast(n, ...)``): a scalar or
    a compile-time size named ``pid`` would be replaced by the program
    index.  Also where a name the application assigns is one the module
    imports or the kernel's name for a program index.  Size symbols a
    caller named and the application's locals are renamed away from the
    kernel's names before this (``ntsym.renaming``); what is left is
    refused here, with the name."""
    module = ast.parse(source)
    imported = {a.asname or a.name.split(".")[0] for n in module.body if isinstance(n, (ast.Import, ast.ImportFrom))
                for a in n.names}
    for fn in (n for n in module.body if isinstance(n, ast.FunctionDef) and n.name in kernels):
        params = [a.arg for a in fn.args.args]
        twice = sorted({p for p in params if params.count(p) > 1})
        if twice:
            raise CodegenError(f"the kernel takes the name `{twice[0]}` for two of its parameters (a tensor's, a "
                               "size's, a block size's): rename one of them")
        stores = [n for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]
        for node in stores:
            if node.id in imported and node.id in assigned:
                what = "a module the kernel imports"
            elif node.id in params and node.id not in assigned and not _retyped(fn, node):
                what = "a parameter of the kernel"  # rebound by the generated code, not the application
            elif (node.id in assigned and PROGRAM_NAMES.match(node.id)
                  and sum(n.id == node.id for n in stores) > 1):
                what = "the kernel's name for a program index"
            else:
                continue
            raise CodegenError(f"the name `{node.id}` is both {what} and a name the kernel assigns (the "
                               "program index, a tile, or the application's own); the kernel would read one in "
                               "place of the other: rename the parameter, symbol or variable")


def _retyped(fn, target):
    """Whether ``target`` (a store) is in ``name = f(name, ...)``: a parameter
    given another type in place."""
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and target in node.targets:
            return any(isinstance(n, ast.Name) and n.id == target.id for n in ast.walk(node.value))
    return False


def _others(ir):
    """(name, "int" | "float", text) of each tensor's ``other`` that the
    padding proofs use at its value besides 0 (``lane_values.used_at_its_value``):
    a tensor's dtype must hold it at launch."""
    out = []
    for p in ir.params:
        other = getattr(p, "other", None)
        if p.kind == "tensor" and type(other) in (int, float) and used_at_its_value(other):
            out.append((p.name, "int" if type(other) is int else "float", repr(other)))
    return tuple(out)


def display_names(ir):
    """Size and stride symbols as the user writes them: ``input.shape[1]``."""
    names = {}
    for p in ir.params:
        for d, s in enumerate(p.source_sizes):
            if hasattr(s, "name"):
                names.setdefault(s.name, f"{p.name}.shape[{d}]")
        for d, s in enumerate(p.strides):
            if hasattr(s, "name"):
                names.setdefault(s.name, f"{p.name}.stride({d})")
    return names
