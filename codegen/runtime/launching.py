"""The launch paths: a call shape's first launch (validated, configuration
chosen by ``tuning``, remembered), the fast path of a remembered one, and
a launch traced by torch.compile.  The runtime calls tuning, never the
other way round."""

from ntsym_codegen import counters, serial, tuning
from ntsym_codegen.errors import ApplicationError, LaunchError, fail
from ntsym_codegen.placeholders import substitute, substitute_call
from ntsym_codegen.runtime.checks import (_check_aliasing, byte_extent, check_arguments, check_float64_scalars,
                                         float64_scalars, index_width, scalar)
from ntsym_codegen.runtime import express
from ntsym_codegen.runtime.direct import _DIRECT_OFF, direct_for, launch_direct
from ntsym_codegen.runtime.environment import capturing, on_device, refuse_capture
from ntsym_codegen.runtime.interpreter import interpret
from ntsym_codegen.runtime.persistent import ensure_allocator
from ntsym_codegen.tracing import traced
from ntsym_codegen.writes import note_writes


def explain_failure(spec, error):
    """Re-raise a Triton compilation or interpreter error as an error that
    points at the application line it came from."""
    import linecache
    import traceback

    text = None
    node = getattr(error, "node", None)
    src = getattr(error, "src", None)
    if src and node is not None and getattr(node, "lineno", None):
        src_lines = src.split("\n")
        if 0 < node.lineno <= len(src_lines):
            text = src_lines[node.lineno - 1].strip()
    if text is None:
        chain, e = [], error
        while e is not None and e not in chain:
            chain.append(e)
            e = e.__cause__ or e.__context__
        for e in chain:
            for frame in traceback.extract_tb(e.__traceback__):
                line = (frame.line or linecache.getline(frame.filename, frame.lineno)).strip()
                if line in spec.locations:
                    text = line
    where = spec.locations.get(text) if text else None
    first = str(error).strip().splitlines()
    reason = first[-1] if first else type(error).__name__
    if where is None:
        return None
    filename, lineno, line = where
    message = f"kernel `{spec.name}`: {reason}\n  File \"{filename}\", line {lineno}"
    if line:
        message += f"\n    {line}"
    return ApplicationError(message)


class _Entry:
    """A validated call shape: everything the launch needs but the tensors."""

    __slots__ = ("grid", "tail", "kwargs", "spans", "tensor_positions", "device", "direct", "kernel", "scalars",
                 "options", "pairs", "learned", "float64", "quick", "extents", "pointer_slots")

    def __init__(self, grid, tail, kwargs, spans, tensor_positions, device, direct=None, kernel=None, scalars=False,
                 options=(), pairs=(), float64=False):
        self.kernel = kernel  # the persistent variant, or None: the plain kernel
        self.grid = grid
        self.tail = tail
        self.kwargs = kwargs
        self.spans = spans
        self.tensor_positions = tensor_positions
        self.device = device
        self.direct = direct  # _Direct, or None: launch through Triton's JIT
        self.scalars = scalars  # whether the call has arguments besides tensors (their values may change)
        self.options = options  # the configuration's warps and stages (``counters.note_variant``)
        # (a, b, alike) indices into ``tensor_positions`` of the pairs whose overlap a launch
        # checks: those with a written tensor (two tensors only read may share memory); alike:
        # one tensor object may be given for both (in-place use proved safe)
        self.pairs = pairs
        self.learned = False  # whether quick matching was offered this entry (``quick.learn``)
        self.quick = None  # its quick match once made (kept when the table forgets it: offered again, reused)
        # (argument position, element size, bytes spanned) of each tensor spanning any: its
        # storage must hold them at every launch (a storage may be resized after the first)
        self.extents = ()
        self.float64 = float64  # float scalars meet float64 tensors on a GPU (``check_float64_scalars``)
        self.pointer_slots = None  # (call index, index into tensor_positions), made at the first direct launch


def fast_launch(facts, entry, args, pointers=None, matched=False):
    """Launch a call whose shapes were validated before: only aliasing, which
    depends on the data pointers, is checked again.  ``pointers``: the
    tensors' data pointers where the caller read them; ``matched``: the call
    was matched by torch's tensor guards (``quick.find``)."""
    spec = facts.spec
    if pointers is None and (entry.pairs or entry.direct is not None):  # the overlap check; the binary's arguments
        pointers = [args[i].data_ptr() for i in entry.tensor_positions]
    if pointers is not None and 0 in pointers:
        check_arguments(spec, args)  # a null data pointer: an empty tensor, or a storage freed since
    for i, size, span in entry.extents:
        a = args[i]
        if a.storage_offset() * size + span > a.untyped_storage().nbytes():
            check_arguments(spec, args)  # a storage resized since: refused there (``_check_storage``)
    if entry.pairs:
        spans, positions = entry.spans, entry.tensor_positions
        for a, b, alike in entry.pairs:
            if pointers[a] < pointers[b] + spans[b] and pointers[b] < pointers[a] + spans[a]:
                if alike and args[positions[a]] is args[positions[b]]:
                    continue  # one tensor for both, where in-place use is proved safe
                # Possible overlap: the full check decides, over every pair, once.
                _check_aliasing(spec, [(spec.call_params[i][0], args[i]) for i in positions])
                break
    if entry.float64:
        check_float64_scalars(spec, args)
    if spec.written_positions:
        note_writes(spec, args, spec.written_positions)
    if entry.grid is None:
        return None
    counts = facts.cache.counts
    counts.launches += 1
    if spec.gather is not None:
        call = [args[i] for i in spec.gather]
    else:
        call = []
        for kind, value in spec.arg_template:
            if kind == "arg":
                call.append(args[value])
            elif kind == "scalar":
                call.append(scalar(args[value]))
            else:
                call.append(value)
    call.extend(entry.tail)
    if spec.untouched_slots:
        substitute_call(spec, call)
    if entry.kernel is not None:
        kernel = entry.kernel
        if not spec.interpreting:
            ensure_allocator()
    else:
        kernel = facts.kernel
        if facts.cache.descriptors and not spec.interpreting:
            ensure_allocator()
    if entry.direct is not None:
        # The binary is given the tensors' data pointers as integers: Triton's
        # launcher then reads no ``data_ptr()`` and asks the driver nothing
        # about them (the device and the pointers were checked above).
        slots = entry.pointer_slots
        if slots is None:
            slots = entry.pointer_slots = _pointer_slots(spec, entry)
        if launch_direct(entry.direct, entry.grid, call, entry.device, pointers, slots):
            if matched and not entry.quick.tried:  # the shape's later calls: its express launch
                entry.quick.tried = True
                entry.quick.express = express.build(facts, entry, entry.direct)
                if entry.quick.express is not None:
                    express.register(facts.cache, entry, args, entry.quick.express)
            return None
        facts.cache.jit_launches += 1
    if entry.scalars:  # integers the call key does not fix may make another variant
        counters.note_variant(counts, kernel, call, entry.kwargs, entry.options)
    _run(kernel, entry.grid, call, entry.kwargs, spec, entry.device)
    return None


def _run(kernel, grid, args, kwargs, spec, device):
    """Launch through the interpreter, or on ``device`` (Triton launches on the
    current CUDA device: switch to the tensors' one when it differs).  Returns
    Triton's compiled kernel where it gives one."""
    if spec.interpreting:
        with serial.INTERPRETER:
            interpret(kernel, grid, args, kwargs, spec)
        return None
    with on_device(device, spec):
        return kernel[grid](*args, **kwargs)


def _pointer_slots(spec, entry):
    """(index in the launch's argument list, index into ``entry.tensor_positions``)
    of each tensor the binary is given; a tensor the kernel never touches stays
    (it may be a placeholder on the kernel's device)."""
    where = {position: k for k, position in enumerate(entry.tensor_positions)}
    if spec.gather is not None:
        sources = list(spec.gather)
    else:
        sources = [value if kind == "arg" else None for kind, value in spec.arg_template]
    untouched = set(spec.untouched_slots or ())
    return tuple((j, where[source]) for j, source in enumerate(sources)
                 if source in where and j not in untouched)


def _remember(facts, key, grid, args, kwargs, tensors, user_args, direct=None, kernel=None, options=()):
    if key is None:
        return
    positions = tuple(i for i, a in enumerate(user_args) if any(a is t for t in tensors))
    spans, pairs = [], ()
    for i in positions:  # the bytes each tensor spans: its storage must hold them at every launch
        start, end = byte_extent(user_args[i])
        spans.append(end - start)
    if len(positions) > 1:
        spec = facts.spec
        names = [spec.call_params[i][0] for i in positions]
        written = [name in spec.written for name in names]
        # Whether one view may stand for both (``_check_aliasing`` accepts the
        # same tensor object there without looking further).
        alike = [[spec.aliasing.get((m, n), spec.aliasing.get((n, m))) is True for n in names] for m in names]
        pairs = tuple((a, b, alike[a][b]) for a in range(len(positions)) for b in range(a + 1, len(positions))
                      if written[a] or written[b])
    params = len(facts.spec.arg_template)
    device = tensors[0].get_device() if tensors else -1
    scalars = len(positions) < len(user_args)
    entry = _Entry(grid, tuple(args[params:]), kwargs, spans, positions, device, direct, kernel, scalars, options,
                   pairs, float64_scalars(facts.spec, tensors))
    entry.extents = tuple((i, user_args[i].element_size(), span) for i, span in zip(positions, spans) if span)
    facts.cache.calls[key] = entry


def _traced_launch(facts, args, metas, tensors, grid, derived, options, late_checks):
    """The launch as torch.compile records it: the Triton kernel wrapped with
    ``torch.library.wrap_triton``, with a configuration chosen without running
    anything (fake tensors have no data to time): the one an earlier real call
    of this shape tuned, else the default.  The plain kernel only: the
    persistent variant's tensor descriptors need alignment a trace cannot see."""
    kernel, spec = facts.kernel, facts.spec
    if spec.interpreting:
        fail(f"kernel `{spec.name}` is traced with fake tensors (torch.compile, torch.export)",
             "kernels run through Triton's interpreter here, which a compiled graph cannot call",
             "register the kernel as an operator (ntsym.library.op), which runs it eagerly inside the graph")
    from torch.library import wrap_triton

    int64 = index_width(spec, tensors, metas)
    config = tuning.choose(kernel, spec, grid, args, metas, derived, tensors, int64, options, None,
                           tuned=facts.cache.tuned, timed=False, classes=facts.cache.classes,
                           settled=facts.cache.settled)
    if config is None:
        return None
    if config.persistent:  # tuned on a real call: the same blocks, plain
        config = tuning.Config(config.meta, config.num_warps, config.num_stages, False, config.advance)
    if late_checks is not None:
        late_checks(dict(config.meta))
    if config.grid(grid)[0] == 0:
        return None
    kernel, grid_size, args, kwargs = tuning.launch_parts(kernel, None, config, grid, args, derived, int64, spec, -1,
                                                          facts.cache.counts)
    facts.cache.counts.launches += 1
    wrap_triton(kernel)[grid_size](*args, **kwargs)
    return None


def _compile(facts, args, metas, tensors, grid, derived, options, late_checks, persistent):
    """A compile-only launch (``facts.compile_only``): the variant this call
    would launch with the configuration chosen without timing, compiled
    (Triton's ``warmup``: no launch) on a GPU, counted everywhere; nothing is
    remembered, nothing written."""
    kernel, spec, cache = facts.kernel, facts.spec, facts.cache
    int64 = index_width(spec, tensors, metas)
    config = tuning.choose(kernel, spec, grid, args, metas, derived, tensors, int64, options, persistent,
                           tuned=cache.tuned, timed=False, counter=cache.counts, classes=cache.classes,
                           settled=cache.settled)
    if config is None:
        return None
    if late_checks is not None:
        late_checks(dict(config.meta))
    if config.grid(grid)[0] == 0:
        return None
    device = tensors[0].get_device() if tensors else -1
    kernel, grid_size, args, kwargs = tuning.launch_parts(kernel, persistent, config, grid, args, derived, int64, spec,
                                                          device, cache.counts)
    if not spec.interpreting:  # the interpreter compiles nothing
        with on_device(device, spec):
            kernel.warmup(*args, grid=grid_size, **kwargs)
    return None


def launch(facts, args, metas, tensors, *, grid, derived, options=None, key=None, user_args=None,
           late_checks=None, persistent=None):
    """Choose the configuration, then launch ``facts.kernel`` (or its
    ``persistent`` variant, where the configuration says so) over ``grid``.

    ``args``: the kernel's arguments but the configuration's; ``metas``: the
    compile-time values the call gave (None: to choose); ``grid(meta)`` and
    ``derived`` (name -> ``f(meta)``): the grid and the compile-time flags
    that follow from the chosen ones; ``key``: the call's ``call_key``, under
    which the launch is remembered for ``fast_launch``; ``user_args``: the
    call's arguments; ``late_checks(meta)``: the launch checks that read the
    chosen block sizes."""
    spec = facts.spec
    if spec.untouched_slots and not traced(tensors):  # placeholders are real tensors (cached)
        args, tensors = substitute(spec, args, tensors)
    if traced(tensors):
        return _traced_launch(facts, args, metas, tensors, grid, derived, options, late_checks)
    if facts.compile_only:
        return _compile(facts, args, metas, tensors, grid, derived, options, late_checks, persistent)
    facts.cache.checked_launches += 1
    if spec.written_positions and user_args is not None:
        note_writes(spec, user_args, spec.written_positions)
    device = tensors[0].get_device() if tensors else -1
    # Tuning times launches with events and synchronisation of the current
    # device, and Triton launches on it: make it the tensors' one meanwhile.
    with on_device(device, spec):
        return _first_launch(facts, args, metas, tensors, grid, derived, options, key, user_args or args,
                             late_checks, persistent, device)


def _first_launch(facts, args, metas, tensors, grid, derived, options, key, user_args, late_checks, persistent,
                  device):
    """``launch`` of a call shape not validated before, on the tensors' device."""
    kernel, spec = facts.kernel, facts.spec
    if capturing():
        refuse_capture(spec)
    # An application that makes tensor descriptors itself needs Triton's
    # allocator for their scratch memory, as the persistent variant does.
    facts.cache.descriptors = "make_tensor_descriptor" in (getattr(kernel, "src", "") or "")
    if facts.cache.descriptors and not spec.interpreting:
        ensure_allocator()
    if float64_scalars(spec, tensors):
        check_float64_scalars(spec, user_args)
    if late_checks is not None and metas and None not in metas.values():
        # Every block size given: refused before tuning compiles a configuration
        # (where programs run, as after the choice).
        given = dict(tuning.default_config(spec, dict(metas)).meta)
        if grid(given)[0] != 0:
            late_checks(given)
    int64 = index_width(spec, tensors, metas)
    cache = facts.cache
    config = tuning.choose(kernel, spec, grid, args, metas, derived, tensors, int64, options, persistent,
                           tuned=cache.tuned, counter=cache.counts, classes=cache.classes, settled=cache.settled)
    if config is None:  # an empty problem: no programs to run
        _remember(facts, key, None, args, None, tensors, user_args)
        return None
    if late_checks is not None:
        late_checks(dict(config.meta))
    if config.grid(grid)[0] == 0:
        _remember(facts, key, None, args, None, tensors, user_args)
        return None
    kernel, grid_size, args, kwargs = tuning.launch_parts(kernel, persistent, config, grid, args, derived, int64, spec,
                                                          device, cache.counts)
    variant = kernel if config.persistent else None
    cache.counts.launches += 1
    try:
        compiled = _run(kernel, grid_size, args, kwargs, spec, device)
        direct = None if _DIRECT_OFF else direct_for(kernel, compiled, args, kwargs, spec, grid_size)
        _remember(facts, key, grid_size, args, kwargs, tensors, user_args, direct, variant,
                  tuning.timing.variant_options(config))
    except Exception as error:
        if isinstance(error, LaunchError):
            raise
        mapped = explain_failure(spec, error)
        if mapped is None:
            raise
        raise mapped from error
    return None
