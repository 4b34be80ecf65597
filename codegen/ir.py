"""The IR between ntsym's front end and the emitter: plain frozen dataclasses
holding SymPy expressions and the application's AST.  ``codegen`` never imports
``ntsym``; the front end fills these in."""

from dataclasses import dataclass, field
from typing import Any

import sympy


@dataclass(frozen=True)
class SizeArg:
    """A size or stride symbol and where the launcher reads its value."""

    symbol: sympy.Symbol
    param: str  # the application parameter (tensor) it is read from
    kind: str  # "size" or "stride"
    dim: int
    constexpr: bool = False


@dataclass(frozen=True)
class TensorParam:
    """One application parameter.

    ``kind`` is ``"tensor"`` (a torch tensor, arranged), ``"scalar"`` (a
    runtime Python number) or ``"constexpr"`` (a compile-time value).
    """

    name: str
    kind: str
    ndim: int = 0
    dtype: Any = None  # the torch dtype the arrangement fixes, or None
    value: Any = None  # the value of a constexpr scalar
    other: Any = None  # value read outside the bounds
    # The arranged tensor, level by level (outermost first): shapes and the
    # index variable of each dimension.  Level 0 variables are program ids.
    levels: tuple = ()
    level_vars: tuple = ()
    index: tuple = ()  # source index per source dim (expressions in level vars)
    strides: tuple = ()  # stride symbol per source dim
    sizes: tuple = ()  # size expression per source dim (after unification)
    source_sizes: tuple = ()  # the source's own size per dim (symbol or int)
    conditions: tuple = ()  # validity conditions still needed (after proofs)
    dropped: tuple = ()  # conditions proved always true
    padding: tuple = ()  # the conditions of ``conditions`` that ``pad`` added (padding positions)
    written: bool = False


@dataclass(frozen=True)
class JaggedParam:
    """A jagged tensor parameter (``Tensor(n, jagged_dim=d)``).

    The launcher passes a dense view of its values, ``(B, longest, ...)`` with
    stride 0 along the batch, and its offsets (``offsets``, ``B + 1`` of them).
    Each program reads ``start = offsets[batch]`` and ``seq_len =
    offsets[batch + 1] - start`` and moves the tensor's pointer to ``start``;
    inside the kernel the size of dimension ``dim`` is ``seq_len`` (every
    mask and loop bound of the tensor's own levels), while the grid and the
    launcher use ``longest`` (the view's size)."""

    name: str  # the tensor parameter
    dim: int  # the ragged dimension
    offsets: str  # the kernel parameter holding the offsets' pointer
    start: sympy.Symbol  # this program's first row, in the prologue
    seq_len: sympy.Symbol  # this program's row length, in the prologue
    longest: sympy.Symbol  # the size symbol of the ragged dimension (the longest row at launch)
    stride: Any  # the stride of the ragged dimension
    batch: Any  # the batch index, an expression in program ids
    empty: tuple = ()  # relations that, when one holds, leave this program's tile of the tensor empty
    written: bool = False


@dataclass(frozen=True)
class Check:
    """A launch-time check: ``relation`` must hold, or ``message`` is raised."""

    relation: sympy.Basic
    message: str
    reason: str = ""
    why: str = ""  # what would go wrong without it, added to the launch error
    # An expression (the grid's program count) where 0 makes the check moot:
    # no program runs, so nothing the check guards is read or written.
    unless: Any = None

    @property
    def tested(self):
        """What every launcher (torch, standalone, C) tests: the relation, or,
        where the check is moot when no program runs, the relation or a
        program count of 0."""
        if self.unless is None:
            return self.relation
        # Unevaluated: sizes are positive symbols, so SymPy would take the
        # program count for nonzero; a size of 0 at launch is what this tests.
        return sympy.Or(self.relation, sympy.Eq(self.unless, 0, evaluate=False), evaluate=False)


@dataclass(frozen=True)
class MetaParam:
    """A compile-time symbol: auto-tuned (``meta``) or given at call time."""

    symbol: sympy.Symbol
    meta: bool
    candidates: tuple = ()
    default: Any = None
    lower_bound: Any = None
    upper_bound: Any = None
    power_of_two: bool = False


@dataclass(frozen=True)
class KernelIR:
    name: str
    params: tuple  # TensorParam, in the application's order
    size_args: tuple  # SizeArg
    meta_params: tuple  # MetaParam
    grid: tuple  # outermost shape (expressions)
    program_vars: tuple  # one symbol per grid dimension
    checks: tuple  # Check
    application: Any  # ast.FunctionDef of the application
    inline_functions: dict = field(default_factory=dict)  # name -> ast.FunctionDef
    module_aliases: dict = field(default_factory=dict)  # name in application -> "tl"/"libdevice"/...
    constants: dict = field(default_factory=dict)  # global or closure name (or dotted path) -> its value
    facts: tuple = ()  # human-readable proof log for explain()
    num_warps: Any = None
    num_stages: Any = None
    max_num_configs: Any = None
    symbols: dict = field(default_factory=dict)  # name -> symbol (size, stride, meta)
    # Positions of call arguments the kernel ignores when given: tensors the
    # arrangement does not return and whose sizes it does not need.
    ignored_args: tuple = ()
    jagged: tuple = ()  # JaggedParam, in parameter order
    # Sets of jagged parameters whose ragged sizes the proofs made one: their
    # offsets must be equal (checked at launch).
    same_rows: tuple = ()
    # (tensor, dimension) of tensors only read whose first outermost extent
    # this kernel equates with the grid's, where a variant of it lets them
    # have more tiles (the front end launches that variant where this
    # kernel's checks refuse a call).
    read_apart: tuple = ()
    # Locals of the application holding data at every read (``analysis.data_locals``):
    # a store to a tile they choose is a scatter.
    data_locals: frozenset = frozenset()

    # The name messages, caches and progress lines show (``name`` where
    # empty): where the application's name is a generic one, ntsym.kernel_names
    # makes one from the arrangement; the emitted function keeps ``name``.
    title: str = ""

    @property
    def shown_name(self):
        return self.title or self.name

    @property
    def call_params(self):
        """The parameters a call passes, in order: every one but the
        compile-time values fixed at make (every launcher takes these)."""
        return tuple(p for p in self.params if not (p.kind == "constexpr" and p.value is not None))


def padded_sizes(ir):
    """The call-time tile sizes ``ir``'s kernel takes as powers of two, where
    another value launches the variant made with them padded to a power of
    two and masked (``make``'s ``padded``)."""
    return tuple(m.symbol.name for m in ir.meta_params
                 if not m.meta and m.power_of_two and not m.symbol.power_of_two)
