"""The express launch of a warm call: one function per quick match, written
out for its call shape, that does in straight-line code what the quick
match (``runtime.quick.find``), ``fast_launch`` and ``launch_direct`` do
for that shape, and declines wherever they would do anything but launch the
compiled binary.

A kernel handle keeps its express functions in a ``Table``, by the shapes
of the call's tensors: a call computes that key and tries
the functions made for it (the one function directly, where there is one
only), before its launcher (``Kernel.__call__``).  Each returns

- True: the call matched its shape and was launched;
- False: not its shape (the next one is tried, then the general path);
- None: its shape, but something the general path handles: a null data
  pointer, a storage smaller than the tensor spans, possible overlap between
  a written tensor and another, a written tensor that requires grad under
  grad mode, a launch hook set, another current device or Triton driver, an
  integer scalar Triton would specialise otherwise.  The general path then
  matches the call again and does what it does (a check, a refusal, a launch
  through Triton's JIT).

Nothing is done before every test has passed: a call declined has bumped no
version counter, counted no launch and launched nothing.  The function is
made at the first launch that the quick match found and that went to the
binary directly, from the same facts those paths read (the entry, its match,
its direct launch), so the two cannot disagree on a shape; a shape whose
launch needs more than they test (float64 scalars, placeholder tensors,
scalars that are not Python numbers) gets none.

``NTSYM_EXPRESS=0`` turns this off (every warm call takes the general path),
to compare the two; ``DISABLED`` is read when a shape's function would be
made (functions made before stay)."""

import os

from ntsym_codegen import triton_compat
from ntsym_codegen.counters import hashable
from ntsym_codegen.runtime.direct import _guard_token
from ntsym_codegen.runtime.persistent import ensure_allocator

DISABLED = os.environ.get("NTSYM_EXPRESS", "") == "0"

# Python numbers: the types a scalar argument may have to be passed on as it is
# (``checks.scalar`` passes them through).
_NUMBERS = (bool, int, float)

_MISSING = object()  # a keyword not given (its value matches none)


class Table:
    """A kernel handle's express functions, by the shapes of the call's
    tensors.  ``groups``: (positions, key, by_shapes) for each set of
    argument positions its matched calls gave tensors at (nearly always
    one), where ``key(args)`` reads the shapes of the tensors at those
    positions; ``only``: the one function where there is one, to be tried
    without a key."""

    __slots__ = ("groups", "only", "count")

    def __init__(self):
        self.groups = []
        self.only = None
        self.count = 0

    def add(self, positions, args, function):
        for group in self.groups:
            if group[0] == positions:
                break
        else:
            key = eval(f"lambda args: ({''.join(f'args[{i}].shape, ' for i in positions)})")
            group = (positions, key, {})
            self.groups.append(group)
        group[2].setdefault(group[1](args), []).append(function)
        self.count += 1
        self.only = function if self.count == 1 else None

    def remove(self, function):
        """Forget ``function`` (its shape's quick match was forgotten)."""
        for group in self.groups:
            for key, functions in list(group[2].items()):
                if function in functions:
                    functions.remove(function)
                    if not functions:
                        del group[2][key]
                    self.count -= 1
        left = [f for group in self.groups for functions in group[2].values() for f in functions]
        self.only = left[0] if len(left) == 1 else None

    def launch(self, args, kwargs):
        """Whether an express launch launched the call: True; False where
        none is made for its shapes, or one declined it (its shape, which
        the general path takes)."""
        if self.only is not None:
            return self.only(args, kwargs) is True
        for _, key, by_shapes in self.groups:
            try:
                functions = by_shapes.get(key(args), ())
            except Exception:  # fewer arguments, no tensor where they are, a shape that cannot be read (nested)
                continue
            for function in functions:
                done = function(args, kwargs)
                if done is not False:
                    return done is True
        return False


def register(cache, entry, args, function):
    """Put ``function``, made for ``entry`` (whose call ``args`` are), in
    ``cache``'s table."""
    if cache.express is None:
        cache.express = Table()
    cache.express.add(tuple(entry.tensor_positions), args, function)


def build(facts, entry, direct):
    """The express function for ``entry``'s quick match, launching through
    ``direct`` (the entry's _Direct, whose first launch went through); None
    where the shape needs what the general path alone does."""
    quick, spec = entry.quick, facts.spec
    if (DISABLED or quick is None or spec.interpreting or entry.grid is None or entry.float64 or spec.untouched_slots
            or direct.device_getter is None or direct.launch is None):
        return None
    import torch

    tensor_type = torch.Tensor
    positions = entry.tensor_positions  # the quick match's (every other argument is among its ``others``)
    where = {p: k for k, p in enumerate(positions)}  # argument position -> tensor index
    if any(i not in where for i in spec.written_positions):
        return None
    others = {i: (kind, value, by_value) for i, kind, value, by_value in quick.others}
    n_args = len(spec.call_params)
    names = {}  # names bound in the function's namespace

    def bind(value, stem):
        name = f"{stem}{len(names)}"
        names[name] = value
        return name

    lines = [f"if len(args) != {n_args}:", "    return False"] + _keyword_lines(spec, quick, bind)
    lines += [f"t{k} = args[{p}]" for k, p in enumerate(positions)]
    for i, (kind, value, by_value) in sorted(others.items()):
        lines += [f"a{i} = args[{i}]", f"if type(a{i}) is not {bind(kind, 'T')}:", "    return False"]
        if by_value:
            lines += [f"if HASHABLE(a{i}) != {bind(value, 'V')}:", "    return False"]
    distinct = range(len(positions)) if quick.distinct is None else quick.distinct
    # Nested tensors never reach the guards (they cannot read their strides);
    # the negative bit, which the guards may not see, is read once they pass
    # (a call of another shape is told apart sooner).
    for k in distinct:
        lines += [f"if type(t{k}) is not TENSOR or t{k}.is_nested:", "    return False"]
    for k, first in quick.repeats:
        lines += [f"if t{k} is not t{first}:", "    return False"]
    lines += [f"if not GUARDS.check({', '.join(f't{k}' for k in distinct)}):", "    return False",
              f"if {' or '.join(f't{k}.is_neg()' for k in distinct)}:", "    return False"]
    for k, residue in enumerate(quick.aligns):
        lines += [f"p{k} = t{k}.data_ptr()", f"if p{k} & 15 != {bind(residue, 'R')}:", "    return False"]
    # Matched: from here on, anything but the plain launch is the general path's.
    lines += [f"if not ({' and '.join(f'p{k}' for k in range(len(positions)))}):", "    return None"]
    for i, size, span in entry.extents:
        t = f"t{where[i]}"
        lines += [f"if {t}.storage_offset() * {bind(size, 'E')} + {bind(span, 'S')} > {t}.untyped_storage().nbytes():",
                  "    return None"]
    for a, b, alike in entry.pairs:
        test = f"p{a} < p{b} + {bind(entry.spans[b], 'S')} and p{b} < p{a} + {bind(entry.spans[a], 'S')}"
        if alike:
            test += f" and t{a} is not t{b}"
        lines += [f"if {test}:", "    return None"]
    written = [where[i] for i in spec.written_positions]
    if written:
        grad = " or ".join(f"t{k}.requires_grad" for k in written)
        lines += [f"if GRAD_ENABLED() and ({grad}):", "    return None",
                  # guards made in inference mode pass inference tensors outside it
                  f"if ({' or '.join(f't{k}.is_inference()' for k in written)}) and not INFERENCE_MODE():",
                  "    return None"]
    values = _values(spec, entry, direct, where, others, lines, bind)
    if values is None:
        return None
    lines += _launch_lines(facts, entry, direct, bind)
    if written:
        lines.append(f"INCREMENT_VERSION([{', '.join(f't{k}' for k in written)}])")
    lines += ["COUNTS.launches += 1",
              f"LAUNCH({', '.join(bind(g, 'G') for g in direct.grid)}, stream, FUNCTION, *PREFIX, PACKED, None, None, None, "
              f"{', '.join(values)})",
              "return True"]
    source = "def express(args, kwargs):\n" + "".join(f"    {line}\n" for line in lines)
    namespace = dict(names, TENSOR=tensor_type, HASHABLE=hashable, TOKEN=_guard_token, MISSING=_MISSING, GUARDS=quick.guards,
                     GRAD_ENABLED=torch._C.is_grad_enabled, INFERENCE_MODE=torch.is_inference_mode_enabled,
                     INCREMENT_VERSION=torch._C._increment_version,
                     COUNTS=facts.cache.counts, LAUNCH=direct.launch, PREFIX=direct.prefix,
                     FUNCTION=direct.compiled.function, PACKED=direct.compiled.packed_metadata)
    exec(_compiled(source, spec.name), namespace)
    function = namespace["express"]
    function.source = source  # what it does, for reading (``inspect`` cannot find it)
    return function


def _keyword_lines(spec, quick, bind):
    """The lines that match the call's keyword arguments: exactly the
    compile-time values its shape was learned with (none: no keyword)."""
    if quick.metas is None:
        return ["if kwargs:", "    return False"]
    names = [m.symbol.name for m in spec.metas]
    given = [(name, value) for name, value in zip(names, quick.metas) if value != hashable(None)]
    lines = [f"if len(kwargs) != {len(given)}:", "    return False"]
    for name, value in given:
        lines += [f"if HASHABLE(kwargs.get({name!r}, MISSING)) != {bind(value, 'M')}:", "    return False"]
    return lines


# Compiled sources: a function's numbers are names in its namespace, so the
# shapes of one kernel (a decode loop's every cache length) share one source.
_CODE = {}


def _compiled(source, name):
    code = _CODE.get((source, name))
    if code is None:
        if len(_CODE) >= 1024:
            _CODE.clear()
        code = _CODE[source, name] = compile(source, f"<ntsym express launch of {name}>", "exec")
    return code


def _values(spec, entry, direct, where, others, lines, bind):
    """The names of the binary's arguments in order (a data pointer, a scalar
    read from the call, or a constant), with the lines that test the scalars
    Triton specialises on; None where one cannot be passed on as it is."""
    if spec.gather is not None:
        sources = [("arg", i) for i in spec.gather]
    else:
        sources = list(spec.arg_template)
    tokens = dict(direct.guard)
    values = []
    for j, (kind, value) in enumerate(sources):
        if kind == "value":
            values.append(bind(value, "C"))
        elif value in where:
            if kind != "arg":
                return None  # a tensor read as a scalar
            values.append(f"p{where[value]}")
        else:
            if value not in others or others[value][0] not in _NUMBERS:
                return None
            values.append(f"a{value}")
        if j in tokens:
            token = tokens[j]
            lines += [f"if TOKEN({values[-1]}, {token[0] == 'value'}) != {bind(token, 'K')}:", "    return None"]
    values += [bind(v, "C") for v in (*entry.tail, *direct.constexprs)]
    return values


def _launch_lines(facts, entry, direct, bind):
    """The lines that test the launch hooks, driver and device, as
    ``launch_direct`` does, then read the stream (and set Triton's
    allocator where the kernel needs one)."""
    knobs, chain = bind(direct.knobs, "KNOBS"), direct.chain
    lines = [f"enter, leave = {knobs}.launch_enter_hook, {knobs}.launch_exit_hook"]
    if chain is not None:
        c = bind(chain, "CHAIN")
        lines += [f"if type(enter) is not {c} or type(leave) is not {c} or enter.calls or leave.calls:",
                  "    return None"]
    else:
        lines += [f"if not {bind(triton_compat.hooks_are_empty, 'EMPTY')}(enter, leave):", "    return None"]
    active = direct.driver.active
    lines += [f"active = {bind(direct.driver, 'DRIVER')}.active",
              f"if active is not {bind(active, 'ACTIVE')}:", "    return None",
              f"current = {bind(direct.device_getter, 'GETTER')}()"]
    if entry.device >= 0:
        lines += [f"if current != {bind(entry.device, 'D')}:", "    return None"]
    lines.append("stream = active.get_current_stream(current)")
    if entry.kernel is not None or facts.cache.descriptors:
        lines.append(f"{bind(ensure_allocator, 'ALLOCATOR')}()")
    return lines
