"""Generated kernels whose forms the interpreter accepts but Triton's compiler
might not, compiled for an sm_90 target (an H100) on any machine: Triton
compiles for a named target without a GPU.  Each compile runs in a child
process with the interpreter off (ntsym selects it where no GPU is present).

The forms: the compile-time choice between the union and the intersection of
two tensors' masks (blocks of one extent or not), the ``NTSYM_DEBUG`` check of
a gather from a padded tile, and the integer-key ``sort``/``topk`` of floats.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

import ntsym
import ntsym.language as ntl
from ntsym import Tensor
from tests.sources import application_from

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = textwrap.dedent('''
    import importlib.util, json, sys
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    path, pointers, constants = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
    spec = importlib.util.spec_from_file_location("ntsym_sm90_kernel", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fn = module.application_kernel
    signature, constexprs = {}, dict(constants)
    for name in fn.arg_names:
        if name in constexprs:
            signature[name] = "constexpr"
        elif name.endswith("_ptr"):
            signature[name] = "*" + pointers.get(name, "fp32")
        else:
            signature[name] = "i32"
    compiled = triton.compile(ASTSource(fn=fn, signature=signature, constexprs=constexprs),
                              target=GPUTarget("cuda", 90, 32), options=dict(num_warps=4))
    print("compiled", len(compiled.asm["cubin"]))
''')


def compile_for_sm90(kernel, tmp_path, pointers=None, **constants):
    """Compile ``kernel``'s Triton kernel for sm_90 in a child process; fail
    with the compiler's message where it refuses."""
    path = tmp_path / "kernel.py"
    path.write_text(kernel.source)
    env = dict(os.environ, TRITON_INTERPRET="0", PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-c", CHILD, str(path), json.dumps(pointers or {}),
                           json.dumps(dict({"NTSYM_INT64": False}, **constants))],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0 and "compiled" in done.stdout, done.stderr[-3000:]


def _two_vectors():
    def arrangement(x, z, out):
        return x.tile((-1,)), z.tile((-1,)), out.tile((1,))

    def application(x, z, out):
        out = ntl.sum(x + z, 0)  # noqa: F841

    return ntsym.make(arrangement, application, (Tensor(1), Tensor(1), Tensor(1)))


@pytest.mark.parametrize("blocks", [(8, 8), (8, 1)])
def test_the_choice_between_two_tensors_masks_compiles(tmp_path, blocks):
    kernel = _two_vectors()
    assert "NTSYM_BLOCK_0 == NTSYM_BLOCK_1" in kernel.source
    compile_for_sm90(kernel, tmp_path, NTSYM_BLOCK_0=blocks[0], NTSYM_BLOCK_1=blocks[1])


def test_the_debug_check_of_a_gather_from_a_padded_tile_compiles(tmp_path, monkeypatch):
    def arrangement(x, i, out):
        return x.tile((8,)), i.tile((8,)), out.tile((8,))

    def application(x, i, out):
        out = ntl.gather(x, i, 0)  # noqa: F841

    monkeypatch.setenv("NTSYM_DEBUG", "1")
    kernel = ntsym.make(arrangement, application, (Tensor(1), Tensor(1), Tensor(1)))
    assert "ntsym_check_index(" in kernel.source
    compile_for_sm90(kernel, tmp_path, pointers={"i_ptr": "i32"})


@pytest.mark.parametrize("call", ["ntl.sort(x, 1)", "ntl.sort(x, 1, descending=True)", "ntl.topk(x, 2, dim=1)",
                                  "ntl.topk(x, 2, dim=1, descending=False)"])
def test_sort_and_topk_of_a_padded_float_row_compile(tmp_path, call):
    width = 8 if "sort" in call else 2

    def arrangement(x, out):
        return x.tile((1, 8)), out.tile((1, width))

    application = application_from(f"def application(x, out):\n    out = {call}  # noqa: F841\n")
    kernel = ntsym.make(arrangement, application, (Tensor(2), Tensor(2)))
    compile_for_sm90(kernel, tmp_path)


def test_a_mask_beside_a_block_filled_at_compile_time_compiles(tmp_path):
    """x in blocks chosen at launch beside w of compile-time shape (4, 8):
    x's masks widen by the test that the blocks match (``| (NTSYM_BLOCK_0 == 4)``)."""
    def arrangement(x, w, out):
        return x.tile((-1, -1)), w.tile((-1, -1)), out.tile((1, 1))

    def application(x, w, out):
        out = ntl.sum(ntl.sum(x + w, 1, keep_dims=True), 0, keep_dims=True)  # noqa: F841

    kernel = ntsym.make(arrangement, application, (Tensor(2), Tensor(shape=(4, 8)), Tensor(2)))
    assert "NTSYM_BLOCK_0 == 4" in kernel.source
    compile_for_sm90(kernel, tmp_path, NTSYM_BLOCK_0=4, NTSYM_BLOCK_1=8)


def test_a_sort_of_a_flattened_tile_with_its_mask_sorted_alike_compiles(tmp_path):
    def arrangement(x, out):
        return x.tile((4, 8)), out.tile((1,))

    def application(x, out):
        out = ntl.max(ntl.sort(ntl.reshape(x, (32,)), 0), 0)  # noqa: F841

    kernel = ntsym.make(arrangement, application, (Tensor(2), Tensor(1)))
    assert "tl.sort(" in kernel.source
    compile_for_sm90(kernel, tmp_path)
