"""A configuration: the block sizes and launch options of one launch, and how
it reads in messages."""

from dataclasses import dataclass

from ntsym_codegen.options import OPTIONS


@dataclass(frozen=True)
class Config:
    """Block sizes (``meta``) and one field per launch option of
    codegen/options.py, with the schema's defaults."""

    meta: tuple  # ((name, value), ...)
    num_warps: int = 4
    num_stages: int = 3
    persistent: bool = False  # the persistent, tensor-descriptor variant
    advance: bool = False  # loops advance pointer blocks (spec.advance_flag)

    def kwargs(self, derived, int64, spec):
        """The keyword arguments of the kernel launch; cached per config and
        int64 mode unless there are derived values, which may depend on sizes."""
        key = int64
        cache = self.__dict__.setdefault("_kwargs", {})
        if derived or key not in cache:
            meta = dict(self.meta)
            kwargs = dict(meta)
            for name, fn in derived.items():
                kwargs[name] = fn(meta)
            kwargs[spec.int64_flag] = int64
            if spec.advance_flag:
                kwargs[spec.advance_flag] = self.advance
            if not spec.interpreting:
                kwargs["num_warps"] = self.num_warps
                kwargs["num_stages"] = self.num_stages
            if derived:
                return kwargs  # derived values may depend on sizes: not cached
            cache[key] = kwargs
        return cache[key]

    def grid(self, grid):
        return grid(dict(self.meta))

    def __str__(self):
        """Block sizes, then the int options, then the bool options that are set."""
        parts = [f"{k}={v}" for k, v in self.meta]
        parts += [f"{o.name}={getattr(self, o.name)}" for o in OPTIONS if o.type is not bool]
        return ", ".join(parts + [o.name for o in OPTIONS if o.type is bool and getattr(self, o.name)])


def describe(config):
    """A configuration as the keyword arguments that ask for it."""
    chosen = "".join(f"{k}={v}, " for k, v in config.meta)
    given = [f"'{o.name}': {getattr(config, o.name)!r}" for o in OPTIONS
             if o.type is not bool or getattr(config, o.name)]
    return f"{chosen}ntsym_options={{{', '.join(given)}}}"


def _no_persistent(spec, why):
    return f"kernel `{spec.name}`: ntsym_options asks for the persistent variant, but the kernel {why}"


def _refused(spec, persistent, config):
    """Why the call's tensors keep the persistent variant from running with ``config``."""
    return _no_persistent(spec, f"cannot use tensor descriptors here ({config}): {persistent.problem(dict(config.meta))}")
