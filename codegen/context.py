"""The emitter's shared state, grouped by job.

One emission (``KernelEmitter.emit_body``) walks the application once; the
jobs it does on the way (addressing, loops, shapes, inlining...) share what
they learn through these objects, which the emitter creates empty and holds
as attributes of the same name (``emitter.loops``, ``emitter.records``...).
Each docstring says which job writes the fields and which reads them, so a
change to one job shows what else it touches.  Nothing here emits code.
"""

from dataclasses import dataclass, field


@dataclass
class ModuleRecords:
    """What the module around the kernel needs to know: written during the
    walk, read afterwards by module assembly (``codegen/emit.py``: signature,
    prologue, launcher, persistent variant).

    - ``pow2``: size -> the symbol of its padded power-of-two block
      (``NTSYM_BLOCK_i``), a value the launcher computes.  Written by
      ``block_extent_expr`` wherever a tile's block extent is needed.
    - ``whole``: peeled loops' flags: name -> (size, block) for
      ``size % block == 0``; the loop over the last, partial block is
      compiled only where the flag is False.  Written by ``loops``.
    - ``contiguity_flags``: tensor name -> constexpr flag set at launch when
      the tensor is contiguous.  Written by ``addressing``.
    - ``prologue_defs``: key -> (name, AST) of the ``tl.arange`` blocks the
      prologue defines.  Written by ``addressing.arange_name``.
    - ``descriptors``: tensor descriptor name -> (tensor parameter, block
      shape per source dimension).  Written by ``access``.
    - ``transposed``: descriptor name -> constexpr flag, set at launch when
      the tensor's last two dimensions are read swapped (the next-to-last is
      the contiguous one).  Written by ``access``, for loads only.
    - ``checks``: launch checks the emitter found (a loop's range against
      the tiles it indexes).  Written by ``addressing``.
    - ``size_subs``: size -> the size a launch check proves it equal to;
      index math is printed in the second.  Written with ``checks``, read by
      addressing and by the persistent variant's descriptors.
    - ``same_lengths``: (a, b, block, why) of jagged tensors whose sequences
      must have as many blocks of ``block`` rows (1: the same lengths), where a loop over one's blocks indexes the
      other's (checked at launch from the offsets).  Written by ``addressing``.
    - ``advances``: some loop carries pointers (the launcher passes
      ``advance_flag``).  Written by ``loops``.
    - ``loaded``, ``stored``, ``sourced``: tensors this emission reads,
      writes, and reaches through ``x.source``; ``addressed``: those whose
      pointer it takes (``x.source.data_ptr()``).  Written by ``access`` and
      the visitor; ``loaded`` is also read by ``access`` (a tensor the kernel
      reads is not stored through a descriptor).
    - ``accesses``: tensor -> how the application reaches it (``gathered``,
      ``scattered``, ``read``, ``written``) -> the first node doing so.
      Written by ``access``, read by ``codegen/data_races.py``.
    - ``uses_libdevice``: the kernel names ``libdevice`` (an import).
    - ``helpers``: functions of the generated module the kernel calls
      (``ntsym_math_arg``).
    - ``functions``: module-level functions written for the application's
      functions passed as values: name -> source (``codegen/functions.py``).
    - ``int64_flag``, ``advance_flag``: the names of two compile-time flags.
    """

    pow2: dict = field(default_factory=dict)
    whole: dict = field(default_factory=dict)
    contiguity_flags: dict = field(default_factory=dict)
    prologue_defs: dict = field(default_factory=dict)
    descriptors: dict = field(default_factory=dict)
    transposed: dict = field(default_factory=dict)
    checks: list = field(default_factory=list)
    size_subs: dict = field(default_factory=dict)
    same_lengths: list = field(default_factory=list)
    advances: bool = False
    loaded: set = field(default_factory=set)
    stored: set = field(default_factory=set)
    sourced: set = field(default_factory=set)
    addressed: set = field(default_factory=set)
    pointer_writes: bool = False  # a store or atomic through a pointer held by a local (``kernel``)
    accesses: dict = field(default_factory=dict)  # tensor -> kind of access -> node (codegen/data_races.py)
    uses_libdevice: bool = False
    helpers: set = field(default_factory=set)
    functions: dict = field(default_factory=dict)
    int64_flag: str = "NTSYM_INT64"
    advance_flag: str = "NTSYM_ADVANCE"


@dataclass
class ApplicationFacts:
    """Facts about the whole application, fixed before the walk: written
    once by ``emit_body`` (from ``codegen/analysis.py``), except ``read``,
    given to the emitter.  Read by ``access`` (which strategy may read or
    write a tensor), the tile cache (which tiles may be loaded once) and the
    namers (names that must not clash with the application's).

    - ``read``: tensors some load of the plain emission reads (a tensor
      written through a descriptor must not be read in the kernel).
    - ``maybe_written``: tensor parameters the application may write.
    - ``stored_once``: tensors written in one statement, outside loops.
    - ``user_names``: every name the application (and what it inlines) uses.
    - ``defined_once``: names the application binds, with the expression
      they hold where assigned once, by a statement of the application's own
      body (no loop, branch or other binding), else None
      (``codegen/lane_writes.py``).
    """

    read: set = field(default_factory=set)
    maybe_written: set = field(default_factory=set)
    stored_once: set = field(default_factory=set)
    user_names: set = field(default_factory=set)
    defined_once: dict = field(default_factory=dict)


@dataclass
class Names:
    """The application's names as the walk meets them.

    - ``locals``: names assigned so far (a local shadows a parameter, a
      module alias or a constant).  Written by the visitor's assignments and
      loops; read everywhere a name is resolved.
    - ``counter``: numbers inlined calls' temporaries.  Written by
      ``inline``; ``loops`` rewinds it so a peeled loop's two bodies use the
      same temporaries.
    - ``conditional``: how many operands Python may not evaluate the walk is
      in (``b`` of ``a and b``, the branches of ``x if c else y``); ``inline``.
    """

    locals: set = field(default_factory=set)
    counter: int = 0
    conditional: int = 0


@dataclass
class LocalValues:
    """What locals hold, where the emitter can know it.  Written by the
    visitor's assignments, forgotten by ``loops`` and branches (``_forget``);
    read by ``shapes`` (``to_sympy``, ``index_value``, ``proved``).

    - ``sizes``: local name -> its value in sizes and block sizes
      (``n = x.shape[0]``), for locals assigned at the top level.
    - ``index``: local name -> its value as index math (offsets of tiles).
    - ``tile_vars``: tile index variable -> its extent, for the variables
      ``index`` values use.
    - ``placement``: local name -> the axis along which each tile variable of
      its ``index`` value runs (``index_placement``).
    """

    sizes: dict = field(default_factory=dict)
    index: dict = field(default_factory=dict)
    tile_vars: dict = field(default_factory=dict)
    # local name -> where its ``index`` value's tile variables run: variable ->
    # axis of the local's value, counted from the last (-1), as broadcasting aligns them.
    placement: dict = field(default_factory=dict)


@dataclass
class ShapeState:
    """Where a shape is built (the shape argument of ``zeros``, ``full``,
    ``arange``, ``reshape``...), tile shapes are their padded power-of-two
    blocks; elsewhere the true extents.  Written and read by ``shapes``;
    the visitor's assignments record the padded forms of locals.

    - ``building``: inside such an argument now.
    - ``padded_locals``: local name -> its value there (AST), where it
      differs from the local itself.
    - ``padded_sizes``: the same for locals holding one size, as SymPy.
    """

    building: bool = False
    padded_locals: dict = field(default_factory=dict)
    padded_sizes: dict = field(default_factory=dict)


@dataclass
class BlockState:
    """The statement blocks being emitted, and the tiles loaded into names.

    - ``caches``: one dict per open block, outermost first: tensor name ->
      the local its whole tile was loaded into.  Pushed and popped by
      ``block``; written by ``tile_value``; emptied for a tensor by stores
      and loops (``invalidate``).
    - ``pre``: statements to emit before the statement being emitted (an
      inlined call's body, a tile load).
    - ``top_pre``: the same before the current top-level statement: where
      loop-invariant work goes (hoisted index math, tiles never written).
    """

    caches: list = field(default_factory=lambda: [{}])
    pre: list = field(default_factory=list)
    top_pre: list = None

    def __post_init__(self):
        if self.top_pre is None:
            self.top_pre = self.pre


@dataclass
class LoopState:
    """The loops around the statement being emitted.  Written by ``loops``
    (entering and leaving a ``for``); read by addressing (ranges for proofs,
    which loop carries a pointer) and ``shapes``.

    - ``ranges``: loop variable -> its exclusive upper bound, where known
      (in a peeled loop's first body, the number of whole blocks).
    - ``trips``: loop variable -> its trip count.
    - ``frames``: the ``for`` loops being emitted, outermost first
      (``loops._LoopFrame``), each collecting the pointers it carries.
    - ``pointer_names``: carried pointer blocks: access key -> name, shared
      by a peeled loop's two bodies.
    - ``lanes_before``/``lanes_after``: per loop being emitted, the lanes of
      locals before it and at the end of each of its bodies (``padding``).
    - ``inline_writes``: per loop being emitted, the names the inlined calls
      of its body assigned (their locals, renamed apart, and the caller's
      names their parameters became; ``inline``).
    """

    ranges: dict = field(default_factory=dict)
    trips: dict = field(default_factory=dict)
    frames: list = field(default_factory=list)
    pointer_names: dict = field(default_factory=dict)
    lanes_before: list = field(default_factory=list)
    lanes_after: list = field(default_factory=list)
    inline_writes: list = field(default_factory=list)


@dataclass
class HoistState:
    """Loop-invariant index math and masks computed once, before the
    outermost statement: key -> the name holding them.  Written by
    addressing; read by ``loops`` (a carried pointer starts from a hoisted
    offset where there is one)."""

    computed: dict = field(default_factory=dict)
