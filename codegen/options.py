"""The launch options: what ``ntsym_options`` may say, in one table.

Each option has a name, a type, the values it allows, how a value the call
fixes keys a stored tuning choice (a choice restricted by the caller is
stored apart from a free one), and the targets that honour it:

- ``torch``: the kernel ``make``/``jit`` return (and the operator of
  ``ntsym.library``, which calls it);
- ``standalone``: the module ``ntsym.aot.export`` writes (the tuned
  configurations, as entries of its table);
- ``aot``: the C library ``ntsym.aot.build`` compiles (one configuration
  per build).

Everything that reads a launch option reads it here: ``tuning.choose``
validates a call's options with ``validate`` and keys its choice with
``tuning_key``; ``tuning.Config`` has one field per option, which the
stored entries, messages and ``describe`` list through ``OPTIONS``;
``ntsym.make`` takes the options marked ``keyword`` as keywords of a call
(``num_warps=4``, as Triton users write them).

To add an option: add a ``LaunchOption`` to ``OPTIONS``, a field of that
name to ``tuning.Config`` (with its default), and the code that acts on it
(the launch keyword arguments in ``Config.kwargs``, a candidate set in
``tuning.timing``); tests/test_tuning.py checks that ``Config`` and the
schema agree."""

from dataclasses import dataclass

from ntsym_codegen.errors import fail


@dataclass(frozen=True)
class LaunchOption:
    """One launch option (see the module's docstring)."""

    name: str
    type: type  # int or bool
    allowed: tuple  # the values a call may give (bool options: True, False)
    allowed_text: str  # the allowed values, as a message says them
    default: object  # the value where nothing fixes it and nothing is tuned
    key_words: tuple = ()  # bool options: the tuning key's words for True and for False
    targets: frozenset = frozenset({"torch"})
    keyword: bool = False  # may be given as a keyword of the call, not only in ntsym_options
    doc: str = ""

    def allows(self, value):
        """Whether ``value`` is one the option allows (of its exact type: True
        is not a number of warps)."""
        return type(value) is self.type and value in self.allowed

    def refusal(self, kernel, value):
        """Why ``value`` is refused, in the words a call reads."""
        if self.type is bool:
            return f"kernel `{kernel}`: ntsym_options['{self.name}'] must be {self.allowed_text}, got {value!r}"
        return f"kernel `{kernel}`: {self.name} must be {self.allowed_text}, got {value!r}"

    def key_part(self, value):
        """How a fixed ``value`` keys a stored tuning choice."""
        if self.type is bool:
            return "|" + self.key_words[0 if value else 1]
        return f"|{self.name}={value}"


NUM_WARPS = LaunchOption(
    "num_warps", int, (1, 2, 4, 8, 16, 32), "1, 2, 4, 8, 16 or 32", 4,
    targets=frozenset({"torch", "standalone", "aot"}), keyword=True,
    doc="warps per program (Triton's num_warps)")
NUM_STAGES = LaunchOption(
    "num_stages", int, tuple(range(1, 9)), "an int from 1 to 8", 3,
    targets=frozenset({"torch", "standalone", "aot"}), keyword=True,
    doc="software pipelining depth of loops (Triton's num_stages)")
PERSISTENT = LaunchOption(
    "persistent", bool, (True, False), "True or False", False, ("persistent", "plain"),
    doc="the tensor-descriptor variant: persistent (one program per multiprocessor) where a tile's work "
        "is one loop streaming tiles, else one program per tile")
ADVANCE = LaunchOption(
    "advance", bool, (True, False), "True or False", False, ("advance", "index"),
    targets=frozenset({"torch", "standalone", "aot"}),
    doc="loops advance pointer blocks instead of recomputing addresses from the index")

# In the order messages list them.
OPTIONS = (NUM_WARPS, NUM_STAGES, PERSISTENT, ADVANCE)
BY_NAME = {o.name: o for o in OPTIONS}
NAMES = tuple(BY_NAME)
KEYWORDS = tuple(o.name for o in OPTIONS if o.keyword)


def validate(kernel, options):
    """Refuse names the schema does not know and values an option does not
    allow; ``options`` is a call's ``ntsym_options`` (None: none)."""
    options = options or {}
    unknown = sorted(set(options) - set(BY_NAME), key=str)
    if unknown:
        fail(f"kernel `{kernel}`: unknown ntsym_options {', '.join(map(repr, unknown))}", f"known: {', '.join(NAMES)}")
    for option in OPTIONS:
        value = options.get(option.name)
        if value is not None and not option.allows(value):
            fail(option.refusal(kernel, value))


def tuning_key(options):
    """The part of a stored choice's key that the options a call fixes make:
    the bool options in the schema's order, then the others by name (empty
    where the call fixes none)."""
    fixed = {o.name: options[o.name] for o in OPTIONS if options.get(o.name) is not None}
    flags = "".join(BY_NAME[n].key_part(v) for n, v in fixed.items() if BY_NAME[n].type is bool)
    values = "".join(BY_NAME[n].key_part(v) for n, v in sorted(fixed.items()) if BY_NAME[n].type is not bool)
    return flags + values


def keywords(kwargs, taken):
    """A call's keyword arguments with the options it gives as keywords
    (``num_warps=4``) moved into ``ntsym_options``; a name in ``taken`` (a
    parameter of the kernel) stays the kernel's."""
    kwargs = dict(kwargs)
    options = dict(kwargs.get("ntsym_options") or {})
    for option in OPTIONS:
        if option.keyword and option.name in kwargs and option.name not in taken:
            options[option.name] = kwargs.pop(option.name)
    kwargs["ntsym_options"] = options
    return kwargs


def honoured_by(target):
    """The options ``target`` honours (see the module's docstring)."""
    return tuple(o for o in OPTIONS if target in o.targets)


def target_values(config, target):
    """The options of ``config`` (a ``tuning.Config``) that ``target``
    honours, by name: the int ones always, a bool one where it is set."""
    return {o.name: getattr(config, o.name) for o in honoured_by(target)
            if o.type is not bool or getattr(config, o.name)}
