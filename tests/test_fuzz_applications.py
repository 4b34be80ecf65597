"""Random applications with loops, branches, locals and stores, checked against Python.

Each program is element-wise on tiles of 4: parameters ``x``, ``y``, ``z`` are
read and assigned (a store), locals hold tiles, ``for``/``while`` loops and
``if`` branches nest, and every expression builds a new value.  Run as plain
Python on NumPy arrays, the same function gives the expected final contents of
the three tensors: rebinding a parameter there and storing it in ntsym mean the
same for element-wise code, and reading it again must see the last value
assigned, also across loop iterations.  Values stay small integers and halves,
so float32 results compare exactly.

``NTSYM_FUZZ_APPLICATIONS`` sets the number of random programs (default 100, about
15 s through the interpreter).
"""

import importlib.util
import os
import random

import numpy as np
import pytest
import torch

import ntsym
from ntsym import Tensor

PARAMS = ("x", "y", "z")
LOCALS = ("a", "b", "c")
COUNT = int(os.environ.get("NTSYM_FUZZ_APPLICATIONS", "100"))


class _Program:
    def __init__(self, rng):
        self.rng = rng
        self.counter = 0

    def expr(self, tiles, loop_vars):
        """A binary operation (a new value) over tiles, loop variables and constants."""
        rng = self.rng
        left = rng.choice(tiles)
        kind = rng.randrange(5)
        if kind == 0:
            return f"{left} + {rng.choice(tiles)}"
        if kind == 1:
            return f"{left} - {rng.choice(tiles)} * 0.5"
        if kind == 2 and loop_vars:
            return f"{left} + {rng.choice(loop_vars)}"
        if kind == 3:
            return f"{left} * 0.5 + {float(rng.randrange(-3, 4))}"
        return f"{left} - 1.0"

    def block(self, depth, tiles, loop_vars, indent):
        rng = self.rng
        lines = []
        tiles = list(tiles)
        for _ in range(rng.randrange(2 if depth else 1, 4)):
            kind = rng.randrange(6 if depth < 2 else 3)
            pad = "    " * indent
            if kind in (0, 1):  # store to a parameter
                lines.append(f"{pad}{rng.choice(PARAMS)} = {self.expr(tiles, loop_vars)}")
            elif kind == 2:  # a local: visible after this point in this block only
                name = rng.choice(LOCALS)
                lines.append(f"{pad}{name} = {self.expr(tiles, loop_vars)}")
                if name not in tiles:
                    tiles.append(name)
            elif kind == 3:
                var = f"i{self.counter}"
                self.counter += 1
                lines.append(f"{pad}for {var} in range({rng.randrange(1, 4)}):")
                lines += self.block(depth + 1, tiles, loop_vars + [var], indent + 1)
            elif kind == 4:
                var = f"w{self.counter}"
                self.counter += 1
                lines.append(f"{pad}{var} = 0")
                lines.append(f"{pad}while {var} < {rng.randrange(1, 4)}:")
                lines += self.block(depth + 1, tiles, loop_vars, indent + 1)
                lines.append(f"{pad}    {var} += 1")
            else:
                cond = f"{rng.choice(loop_vars)} % 2 == 0" if loop_vars else rng.choice(["True", "False"])
                lines.append(f"{pad}if {cond}:")
                lines += self.block(depth + 1, tiles, loop_vars, indent + 1)
                if rng.randrange(2):
                    lines.append(f"{pad}else:")
                    lines += self.block(depth + 1, tiles, loop_vars, indent + 1)
        return lines

    def source(self):
        body = self.block(0, list(PARAMS), [], 1)
        return "def application(x, y, z):\n" + "\n".join(body) + "\n"


def arrangement(x, y, z):
    return x.tile((4,)), y.tile((4,)), z.tile((4,))


def _load(path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.application


@pytest.mark.parametrize("seed", range(COUNT))
def test_random_application_matches_python(seed, tmp_path):
    rng = random.Random(seed)
    source = _Program(rng).source()
    path = tmp_path / f"fuzz_app_{seed}.py"
    path.write_text(source)
    application = _load(path)

    data = np.random.default_rng(seed).integers(-8, 8, size=(3, 10)).astype(np.float32)
    final = _final_values(source, data)

    kernel = ntsym.make(arrangement, application, (Tensor(1), Tensor(1), Tensor(1)))
    tensors = [torch.from_numpy(row.copy()) for row in data]
    kernel(*tensors)
    for name, tensor in zip(PARAMS, tensors):
        assert np.array_equal(tensor.numpy(), final[name]), f"{name} differs for\n{source}\n{kernel.kernel_source}"


def _final_values(source, data):
    """Run the application as Python, returning the final value bound to each parameter."""
    tail = "\n".join(f"    __final[{p!r}] = {p}" for p in PARAMS)
    namespace = {}
    exec(source.replace("def application(x, y, z):", "def application(x, y, z, __final):") + tail + "\n",  # noqa: S102
         namespace)
    final = {}
    namespace["application"](*(row.copy() for row in data), final)
    return final
