"""What compilation decided about a kernel, as the runtime reads it (``Spec``,
fixed once ``make`` returns), what a kernel handle's calls learn
(``CallCache``), and the facts a generated launcher hands every launch
(``LaunchFacts``)."""

from dataclasses import dataclass, field
from typing import Any

from ntsym_codegen.counters import Counter
from ntsym_codegen.placeholders import untouched_positions


def cdiv(a, b):
    return -(-a // b)


def next_power_of_2(n):
    n = int(n)
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


@dataclass(frozen=True)
class TensorSpec:
    name: str
    kind: str
    ndim: int = 0
    dtype: Any = None
    written: bool = False
    value: Any = None


@dataclass(frozen=True, eq=False)
class Spec:
    """What compilation decided about a kernel, as the runtime reads it; fixed
    once ``make`` returns (what calls learn is kept in a ``CallCache``)."""

    name: str
    params: tuple
    metas: tuple
    int64_flag: str
    advance_flag: Any = None  # compile-time flag: loops advance pointers (None: no loop can)
    num_warps: Any = None
    num_stages: Any = None
    max_num_configs: Any = None
    streamed_tiles: tuple = ()  # (tensor position, elements(meta...), meta names)
    loops: bool = True  # whether the kernel has a loop (num_stages matters)
    aliasing: dict = field(default_factory=dict)  # (a, b) -> bool: in-place use is safe
    # (i, j): parameters declared by one Tensor object, whose sizes and strides are one set of symbols
    declared_together: tuple = ()
    # (name, "int" | "float", text): a tensor's ``other`` besides 0, which the proofs take at this value
    others: tuple = ()
    kernel_source: str = ""
    locations: dict = field(default_factory=dict)  # generated line -> user location
    arg_template: tuple = ()  # per parameter: ("arg"|"scalar", index) or ("value", v)
    meta_by_name: dict = field(default_factory=dict)
    interpreting: bool = False  # kernels run through Triton's interpreter (``interpreting()`` at make)
    arithmetic: frozenset = frozenset()  # tensors whose values reach arithmetic (ntsym_codegen.analysis.arithmetic_parameters)
    scalar_outputs: frozenset = frozenset()  # scalars assigned before read (ntsym_codegen.analysis.scalar_outputs)
    meetings: tuple = ()  # operations where tensors' values meet (ntsym_codegen.promotion.meetings)
    index_peak: Any = None  # (tensors, metas) -> whether logical indices pass int32 (ntsym_codegen.index_width)
    jagged: frozenset = frozenset()  # jagged tensors: given as views of their values with stride 0 along the batch
    ragged: tuple = ()  # per jagged tensor: (name, ragged dimension, the parameter of its offsets)
    same_rows: tuple = ()  # groups of jagged tensors whose offsets must be equal (one ragged size)
    # (a, b, block, why): jagged tensors whose sequences must have as many blocks of ``block`` rows (the
    # same lengths where it is 1), where a loop over one's blocks indexes the other's
    same_lengths: tuple = ()
    untouched: frozenset = frozenset()  # tensors the kernel neither reads nor writes (codegen/placeholders.py)
    addressed: frozenset = frozenset()  # tensors whose pointer the application takes (``x.source.data_ptr()``)
    # Derived from ``params``: the call's parameters (name, kind, ndim, written),
    # the compiled values left out, and the names of the tensors the kernel writes.
    call_params: tuple = field(init=False)
    written: frozenset = field(init=False)
    constexpr_slots: tuple = field(init=False)  # kernel argument positions of the constexprs a call gives
    # The call's argument positions the kernel takes first, where it takes them
    # as given (no scalar to convert, no fixed value): None otherwise.
    gather: Any = field(init=False)
    written_positions: tuple = field(init=False)  # the call's argument positions of the tensors it writes
    # Compile-time value name -> (tuned, power of two, lower bound, upper bound, positive, why positive):
    # what ``runtime.constexpr_value`` checks of a value the call gives, as plain data.
    constexpr_facts: dict = field(init=False)
    # The untouched tensors' kernel argument slots and positions among the
    # tensors, and the slot of the first tensor the kernel touches.
    untouched_slots: tuple = field(init=False)
    untouched_tensors: tuple = field(init=False)
    touched_slot: Any = field(init=False)

    def __post_init__(self):
        # A declared dtype is not required of the call: the kernel reads every
        # element type from its pointer, and Triton compiles it for each call's
        # dtypes, as NineToothed's launcher does.
        params = [p for p in self.params if not (p.kind == "constexpr" and p.value is not None)]
        object.__setattr__(self, "call_params", tuple((p.name, p.kind, p.ndim, p.written) for p in params))
        object.__setattr__(self, "written", frozenset(p.name for p in self.params if p.written))
        object.__setattr__(self, "written_positions", tuple(
            i for i, p in enumerate(params) if p.written and p.kind == "tensor"))
        object.__setattr__(self, "constexpr_slots", tuple(
            i for i, (kind, position) in enumerate(self.arg_template)
            if kind == "arg" and params[position].kind == "constexpr"))
        object.__setattr__(self, "gather", tuple(position for _, position in self.arg_template)
                           if all(kind == "arg" for kind, _ in self.arg_template) else None)
        object.__setattr__(self, "constexpr_facts", {name: _constexpr_facts(m) for name, m in self.meta_by_name.items()})
        slots, positions, touched = untouched_positions(self.params, self.untouched)
        object.__setattr__(self, "untouched_slots", slots)
        object.__setattr__(self, "untouched_tensors", positions)
        object.__setattr__(self, "touched_slot", touched)


def _constexpr_facts(meta):
    """A ``MetaParam``'s facts ``constexpr_value`` reads, as plain data."""
    bound = lambda b: None if b is None else int(b)  # noqa: E731
    return (bool(meta.meta), bool(meta.power_of_two), bound(meta.lower_bound), bound(meta.upper_bound),
            bool(meta.symbol.is_positive), getattr(meta.symbol, "positive_reason", ""))


@dataclass(eq=False)
class CallCache:
    """What a kernel handle's launches learn, for the calls after them."""

    calls: dict = field(default_factory=dict)  # call_key -> _Entry (validated calls)
    quick: list = field(default_factory=list)  # runtime.quick.Quick: entries matched without a key
    express: Any = None  # runtime.express.Table: the express launches of matched call shapes, made by calls
    tuned: dict = field(default_factory=dict)  # tuning.choose's key -> Config chosen in this process
    # Where a call's time went, for finding a warm call that was slow: launches
    # that validated their arguments (a call shape not seen before), and
    # launches of a seen call shape that went through Triton's JIT although
    # its compiled binary was known (a guard of ``launch_direct`` failed).
    checked_launches: int = 0
    jit_launches: int = 0
    # Whether the plain kernel makes tensor descriptors on the device (its
    # launches then need Triton's allocator; set at the first launch).
    descriptors: bool = False
    # Variants built, tuning searches, configurations timed, launches
    # (``ntsym_codegen.counters``: what ``Kernel.stats`` reads).
    counts: Counter = field(default_factory=Counter)
    # Size class key -> the configurations that led its tuning, best first,
    # as this process tuned them or a loaded table gave them.
    classes: dict = field(default_factory=dict)
    # Size class key -> what its last shortlist timings chose, in order: once
    # the class settles (``tuning.choice._settled``), later shapes of the
    # class take that choice untimed.
    settled: dict = field(default_factory=dict)


@dataclass(frozen=True)
class LaunchFacts:
    """What a kernel's launcher hands the runtime that no call changes, made
    once per kernel by ``make``: the generated launcher passes it, then only
    the call's own values (arguments, compile-time values, tensors, options,
    and the grid and derived-flag functions, which read the call's sizes)."""

    kernel: Any  # the @triton.jit function
    spec: Spec
    checks: tuple = ()  # the launch checks, by index (``fail_check``)
    display: dict = field(default_factory=dict)  # size and stride symbol -> how the user writes it
    persistent_kernel: Any = None  # the persistent variant's @triton.jit function, or None
    # The one part that changes: filled by calls (the binding to this kernel does not).
    cache: CallCache = field(default_factory=CallCache)
    # Calls compile the variant they would launch (untimed: a stored or size
    # class choice, else the default) and launch nothing (``Kernel.warmup``).
    compile_only: bool = False
