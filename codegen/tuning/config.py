"""A configuration: the block sizes and launch options of one launch, and how
it reads in messages."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Config:
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
        parts = [f"{k}={v}" for k, v in self.meta]
        parts += [f"num_warps={self.num_warps}", f"num_stages={self.num_stages}"]
        return ", ".join(parts + (["persistent"] if self.persistent else []) + (["advance"] if self.advance else []))


def describe(config):
    """A configuration as the keyword arguments that ask for it."""
    chosen = "".join(f"{k}={v}, " for k, v in config.meta)
    variant = ", 'persistent': True" if config.persistent else ""
    variant += ", 'advance': True" if config.advance else ""
    return f"{chosen}ntsym_options={{'num_warps': {config.num_warps}, 'num_stages': {config.num_stages}{variant}}}"


def _no_persistent(spec, why):
    return f"kernel `{spec.name}`: ntsym_options asks for the persistent variant, but the kernel {why}"


def _refused(spec, persistent, config):
    """Why the call's tensors keep the persistent variant from running with ``config``."""
    return _no_persistent(spec, f"cannot use tensor descriptors here ({config}): {persistent.problem(dict(config.meta))}")
