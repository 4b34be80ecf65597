"""Ahead-of-time kernels on a machine without a GPU: libraries for add, mm and
softmax built for sm_90 (cubins compiled without a device), the header in a C
program, the C launcher's refusals through ctypes (all before any CUDA call),
and exported standalone modules run through the interpreter without ntsym."""

import ast
import functools
import os
import pathlib
import subprocess
import sys

import pytest
import torch

import ntsym
from ntsym_codegen import aot
from examples import add, mm, softmax
from ntsym import Tensor

SM90 = ("cuda", 90, 32)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("aot")
    f16 = ntsym.float16
    add_lib = ntsym.make(functools.partial(add.arrangement, BLOCK_SIZE=1024), add.application,
                         tuple(Tensor(1, dtype=f16) for _ in range(3)), caller="cuda", kernel_name="add_f16",
                         output_dir=out, aot_options={"target": SM90})
    mm_lib = ntsym.make(mm.arrangement, mm.application, tuple(Tensor(2, dtype=f16) for _ in range(3)),
                        caller="cuda", kernel_name="mm_f16", output_dir=out,
                        aot_options={"target": SM90, "meta": {"BM": 64, "BN": 64, "BK": 32}})
    rows = (None, {"constexpr": True, "upper_bound": 2**15})
    tensors = (Tensor(2, other=float("-inf"), shape_options=rows, dtype=ntsym.float32),
               Tensor(2, shape_options=rows, dtype=ntsym.float32))
    softmax_lib = ntsym.make(softmax.arrangement, softmax.application, tensors, caller="cuda",
                             kernel_name="softmax_f32", output_dir=out,
                             aot_options={"target": SM90,
                                          "specialize": {"input.shape[1]": (100,), "output.shape[1]": (100,)}})
    return out, add_lib, mm_lib, softmax_lib


def test_libraries_are_written(built):
    out, *libs = built
    for lib in libs:
        name = lib.kernel_name
        for suffix in (".h", ".c", ".so", ".build.json"):
            assert (out / f"{name}{suffix}").exists(), name + suffix
        cubins = sorted(out.glob(f"{name}_c0.*.cubin"))
        assert cubins and all(c.read_bytes()[:4] == b"\x7fELF" for c in cubins)
    # mm: 32-bit general, aligned, aligned but for the sizes, either input transposed and
    # 64-bit general, each with the peeled loop's flag both ways.
    assert len(list(out.glob("mm_f16_c0.*.cubin"))) == 12


def test_a_transposed_operand_has_its_own_aligned_variant(built):
    """``other`` passed as ``weight.T`` (unit stride first) takes a variant with
    that stride a constant 1 and the others hinted, not the general one; the
    launcher tries it after the row-major ones, and never for the output."""
    out, _, mm_lib, _ = built
    source = (out / "mm_f16.c").read_text()
    chain = next(line for line in source.splitlines() if "aligned_value =" in line)
    tests = chain.split(" ? ")
    assert [t.split(" : ")[0] for t in tests[2:]] == ["1", "2", "3", "4"]
    # value 4: `other`'s first stride is 1 and its second a multiple of 16, `input`'s as row-major
    fourth = tests[4].split(" : ", 1)[1]
    assert "(other_stride_0 == 1)" in fourth and "(other_stride_1 % 16 == 0)" in fourth
    assert "(input_stride_1 == 1)" in fourth and "output_stride_0 == 1" not in chain
    launch = next(line for line in source.splitlines() if "aligned_value == 4 &&" in line)
    assert "&other_stride_1_i32" in launch and "&other_stride_0_i32" not in launch


def test_library_links_no_cuda_library(built):
    out, add_lib, *_ = built
    needed = subprocess.run(["readelf", "-d", str(add_lib.path)], capture_output=True, text=True).stdout
    assert "libcuda" not in needed


def test_header_compiles_in_a_c_program(built, tmp_path):
    out, *_ = built
    program = tmp_path / "main.c"
    program.write_text(
        '#include "add_f16.h"\n#include "mm_f16.h"\n#include <stdio.h>\n'
        "int main(void) {\n"
        "    int64_t shape[1] = {10}, strides[1] = {1};\n"
        "    ntsym_tensor t = {NULL, shape, strides, 1, NTSYM_FLOAT16};\n"
        "    int status = add_f16_launch(NULL, t, t, t);\n"
        '    printf("%d %s\\n", status, add_f16_message());\n'
        "    return status == NTSYM_ERROR_ARGUMENT ? 0 : 1;\n}\n")
    exe = tmp_path / "main"
    subprocess.run([aot.c_compiler(), "-std=c99", "-Wall", "-Werror", f"-I{out}", str(program),
                    str(out / "add_f16.so"), "-o", str(exe)], check=True)
    done = subprocess.run([str(exe)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout
    assert "`input` is a null pointer" in done.stdout


def test_bad_input_gets_a_status_and_a_message(built):
    _, add_lib, mm_lib, softmax_lib = built
    h = functools.partial(torch.zeros, dtype=torch.float16)
    a, b, c = h(50, 40), h(41, 30), h(50, 30)
    code, message = mm_lib.status(a, b, c)
    assert code == aot.STATUS["NTSYM_ERROR_SHAPE"]
    assert "other.shape[0] (=41) must equal input.shape[1] (=40)" in message
    code, message = mm_lib.status(a, h(40, 30), h(50, 30, 1))
    assert (code, message) == (1, "`output` must have 2 dimensions, got 3")
    code, message = add_lib.status(h(10), h(10), torch.zeros(10))
    assert (code, message) == (1, "`output` has dtype float32; this kernel was compiled for float16")
    with pytest.raises(ntsym.LaunchError, match="`output` must be a torch tensor, got list"):
        add_lib(h(10), h(10), [0.0] * 10)
    x = h(10)
    struct = ntsym.aot.c_tensor(x)
    struct.dtype = 99
    code = add_lib.entry(None, struct, ntsym.aot.c_tensor(x), ntsym.aot.c_tensor(h(10)))
    assert code == 1 and "unknown dtype code 99" in add_lib.message()
    struct = ntsym.aot.c_tensor(x)
    struct.data = None
    code = add_lib.entry(None, ntsym.aot.c_tensor(x), struct, ntsym.aot.c_tensor(h(10)))
    assert code == 1 and add_lib.message() == "`other` is a null pointer"
    code, message = add_lib.status(x, x, x[:5])
    assert code == 2 and "input.shape[0] (=10) must equal output.shape[0] (=5)" in message
    code, message = softmax_lib.status(torch.zeros(3, 99), torch.zeros(3, 99))
    assert code == aot.STATUS["NTSYM_ERROR_NO_VARIANT"] and "built for 100" in message
    with pytest.raises(ntsym.LaunchError, match="must equal input.shape"):
        mm_lib(a, b, c)


def test_shared_size_symbols_are_read_once_and_checked(tmp_path):
    """Parameters declared by one ``Tensor`` object, or shapes naming one
    ``ntsym.Symbol``, share sizes (and, for one object, strides): the C
    launcher reads them from the first parameter and refuses arguments that
    differ, as the torch launcher does; a symbol named as one of the
    launcher's own names is refused when building."""
    f16 = ntsym.float16
    blocks = functools.partial(add.arrangement, BLOCK_SIZE=64)
    t = Tensor(1, dtype=f16)
    together = ntsym.make(blocks, add.application, (t, t, Tensor(1, dtype=f16)), caller="cuda",
                          kernel_name="add_together", output_dir=tmp_path, aot_options={"target": SM90})
    n = ntsym.Symbol("n")
    named = ntsym.make(blocks, add.application, (Tensor(shape=(n,), dtype=f16), Tensor(shape=(n,), dtype=f16),
                                                 Tensor(1, dtype=f16)),
                       caller="cuda", kernel_name="add_named", output_dir=tmp_path, aot_options={"target": SM90})
    h = functools.partial(torch.zeros, dtype=torch.float16)
    code, message = together.status(h(10), h(12), h(10))
    assert code == aot.STATUS["NTSYM_ERROR_SHAPE"]
    assert "other.shape[0] (=12) must equal input.shape[0] (=10)" in message
    code, message = together.status(h(10), h(20)[::2], h(10))
    assert code == aot.STATUS["NTSYM_ERROR_SHAPE"]
    assert "other.strides[0] (=2) must equal input.strides[0] (=1)" in message
    code, message = named.status(h(10), h(9), h(10))
    assert code == aot.STATUS["NTSYM_ERROR_SHAPE"] and "other.shape[0] (=9) must equal input.shape[0] (=10)" in message
    code, message = named.status(h(10), h(20)[::2], h(10))  # one size, each its own stride: no refusal here
    assert code != aot.STATUS["NTSYM_ERROR_SHAPE"], message
    # Names of the launcher's own (and Python's) are renamed away before the C source is written;
    # a C keyword Python does not reserve is refused when building.
    for name in ("int", "stream", "ntsym_grid", "n_i32"):
        lib = ntsym.make(blocks, add.application, (Tensor(shape=(ntsym.Symbol(name),), dtype=f16),
                                                   Tensor(1, dtype=f16), Tensor(1, dtype=f16)),
                         caller="cuda", kernel_name=f"add_{name}", output_dir=tmp_path, aot_options={"target": SM90})
        code, message = lib.status(h(10), h(12), h(10))
        assert code == aot.STATUS["NTSYM_ERROR_SHAPE"], message  # built, and its checks run
    for reserved in ("double", "unsigned"):
        with pytest.raises(aot.AotError, match=f"the size symbol `{reserved}`"):
            ntsym.make(blocks, add.application, (Tensor(shape=(ntsym.Symbol(reserved),), dtype=f16),
                                                 Tensor(1, dtype=f16), Tensor(1, dtype=f16)),
                       caller="cuda", kernel_name="add_reserved", output_dir=tmp_path, aot_options={"target": SM90})


def test_lazy_negative_views_are_refused_as_the_torch_launcher_refuses_them(built):
    """The C struct carries the stored values only: a view torch negates on
    reading would reach the library without its sign."""
    _, add_lib, *_ = built
    x = torch.zeros(8, dtype=torch.float16)
    negated = torch._neg_view(x)
    with pytest.raises(ntsym.LaunchError, match="`input` is a view with the negative bit set"):
        add.kernel(negated, x, torch.empty_like(x))
    with pytest.raises(ntsym.LaunchError, match="`input` is a view with the negative bit set"):
        add_lib(negated, x, torch.empty_like(x))
    with pytest.raises(ntsym.LaunchError, match="`output` is a view with the negative bit set"):
        add_lib(x, x, torch._neg_view(torch.empty_like(x)))


def test_views_that_share_no_element_pass_as_in_the_torch_launcher(built):
    """The C launcher decides overlap as the torch launcher does: views of one
    buffer whose bytes interleave but that share no element (every other
    element read, the ones between written; a cache read beside the slot
    written) reach the driver; views sharing an element are refused, naming
    both."""
    _, add_lib, mm_lib, _ = built
    buf = torch.zeros(20, dtype=torch.float16)
    other = torch.zeros(10, dtype=torch.float16)
    refused = aot.STATUS["NTSYM_ERROR_ARGUMENT"]
    for x, z in [(buf[0::2], buf[1::2]), (buf[1::2], buf[0::2]), (buf[:10], buf[10:])]:
        add.kernel(x, other, z)  # the torch launcher runs them
        assert add_lib.status(x, other, z)[0] != refused  # no driver here (or a launch on a GPU)
    code, message = add_lib.status(buf[0:18:2], other[:9], buf[2:20:2])
    assert code == refused and "`input` and `output` share memory and the kernel writes `output`" in message
    with pytest.raises(ntsym.LaunchError, match="share"):
        add.kernel(buf[0:18:2], other[:9], buf[2:20:2])
    cache = torch.zeros(4, 6, dtype=torch.float16)  # rows 0-3: columns 0-3 read, 4-5 written
    a, c = cache[:, :4], cache[:, 4:]
    assert mm_lib.status(a, torch.zeros(4, 2, dtype=torch.float16), c)[0] != refused
    code, message = mm_lib.status(cache[:, :4], torch.zeros(4, 3, dtype=torch.float16), cache[:, 3:])
    assert code == refused and "`input` and `output` share memory" in message
    assert add_lib.status(buf[:10], other, buf[:10])[0] != refused  # in place: proved safe, identical


def test_a_good_call_reaches_the_driver(built):
    _, add_lib, *_ = built
    x = torch.zeros(64, dtype=torch.float16)
    code, message = add_lib.status(x, x, torch.zeros(64, dtype=torch.float16))
    if torch.cuda.is_available():
        pytest.skip("a GPU machine: benchmarks/lab/aot.py checks results")
    assert code == aot.STATUS["NTSYM_ERROR_CUDA"] and "libcuda" in message


def test_a_library_treats_written_tensors_as_the_torch_launcher_does(built):
    """Only the written tensor's version counter moves (a backward that saved
    it then raises instead of reading the new values); a written tensor that
    requires grad under grad mode is refused before the launch, with the
    torch launcher's message."""
    _, add_lib, _, _ = built
    x, y, z = (torch.zeros(10, dtype=torch.float16) for _ in range(3))
    versions = [t._version for t in (x, y, z)]
    add_lib.status(x, y, z)  # no driver here (or a launch on a GPU)
    assert [t._version for t in (x, y, z)] == [versions[0], versions[1], versions[2] + 1]
    leaf = torch.zeros(10, dtype=torch.float16, requires_grad=True)
    with pytest.raises(ntsym.LaunchError, match="`output` is written by the kernel and is a leaf tensor that "
                                                "requires grad"):
        add_lib(x, y, leaf)
    with torch.no_grad():
        add_lib.status(x, y, leaf)
    assert leaf._version == 1


def test_a_second_build_does_nothing(built):
    out, *_ = built
    so = out / "add_f16.so"
    before = so.stat().st_mtime_ns
    ntsym.make(functools.partial(add.arrangement, BLOCK_SIZE=1024), add.application,
               tuple(Tensor(1, dtype=ntsym.float16) for _ in range(3)), caller="cuda", kernel_name="add_f16",
               output_dir=out, aot_options={"target": SM90})
    assert so.stat().st_mtime_ns == before


def test_tensors_need_dtypes(tmp_path):
    with pytest.raises(ntsym.CodegenError, match="tensor `input` has no dtype"):
        ntsym.make(add.arrangement, add.application, tuple(Tensor(1) for _ in range(3)), caller="cuda",
                   kernel_name="add_any", output_dir=tmp_path, aot_options={"target": SM90})


def _old_interpreter_on_new_numpy():
    """Triton before 3.7 under its interpreter with NumPy 2.4 or newer: a
    module run without ntsym lacks codegen/interpreter_compat.py, and a loop
    over a launch-time size fails there (a TypeError, never a wrong result)."""
    import numpy
    import triton

    from ntsym_codegen import runtime

    version = lambda text: tuple(int(p) for p in text.split("+")[0].split(".")[:2])  # noqa: E731
    return runtime.interpreting() and version(triton.__version__) < (3, 7) and version(numpy.__version__) >= (2, 4)


@pytest.mark.skipif(_old_interpreter_on_new_numpy(), reason="Triton < 3.7's interpreter with NumPy >= 2.4 runs "
                    "loops over launch-time sizes only with ntsym's interpreter_compat, which standalone modules lack")
def test_exported_modules_run_without_ntsym(tmp_path):
    for name, kernel in (("add", add.kernel), ("mm", mm.kernel), ("softmax", softmax.kernel)):
        kernel.export(tmp_path / f"{name}_standalone.py")
    script = (
        "import sys\n"
        "import torch\n"
        "import add_standalone, mm_standalone, softmax_standalone\n"
        "assert 'ntsym' not in sys.modules and 'ntsym_codegen' not in sys.modules\n"
        "x, y, o = torch.randn(1000), torch.randn(1000), torch.empty(1000)\n"
        "add_standalone.launch(x, y, o)\n"
        "torch.testing.assert_close(o, x + y)\n"
        "a, b, c = torch.randn(50, 40), torch.randn(40, 30), torch.empty(50, 30)\n"
        "mm_standalone.launch(a, b, c)\n"
        "torch.testing.assert_close(c, a @ b, rtol=1e-4, atol=1e-4)\n"
        "s, t = torch.randn(5, 100), torch.empty(5, 100)\n"
        "softmax_standalone.launch(s, t)\n"
        "torch.testing.assert_close(t, s.softmax(-1))\n"
        "try:\n"
        "    mm_standalone.launch(a, torch.randn(41, 30), c)\n"
        "except ValueError as e:\n"
        "    print('refused:', repr(str(e)))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["TRITON_INTERPRET"] = "1"
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    refused = ast.literal_eval(done.stdout.split("refused: ", 1)[1].strip())
    # Worded as the torch launcher words it: sizes by name, with their values.
    with pytest.raises(ntsym.LaunchError) as caught:
        mm.kernel(torch.randn(50, 40), torch.randn(41, 30), torch.empty(50, 30))
    assert refused == str(caught.value)
    assert refused.splitlines()[0] == "other.shape[0] (=41) must equal input.shape[1] (=40)"


def _add_premake(BLOCK_SIZE):
    return (functools.partial(add.arrangement, BLOCK_SIZE=BLOCK_SIZE), add.application,
            tuple(Tensor(1, dtype=ntsym.float16) for _ in range(3)))


@pytest.mark.slow
def test_build_over_configurations(tmp_path):
    configs = [((), {"BLOCK_SIZE": 512}, {"num_warps": 4}), ((), {"BLOCK_SIZE": 1024}, {"num_warps": 4})]
    lib = ntsym.build(_add_premake, configs, meta_parameters=("BLOCK_SIZE",), kernel_name="add_tuned",
                      output_dir=tmp_path, target=SM90)
    tuned = (tmp_path / "add_tuned.tuned.json").read_text()
    assert '"BLOCK_SIZE": 512' in tuned and '"timed": false' in tuned  # no GPU: the first choice, untimed
    assert lib.config_names == ()  # the tuned block size is baked in
    x = torch.zeros(10, dtype=torch.float16)
    code, message = lib.status(x, x[:3], torch.zeros(10, dtype=torch.float16))
    assert code == 2 and "(=3)" in message
    assert "BLOCK_SIZE" not in (tmp_path / "add_tuned.h").read_text()


@pytest.mark.slow
def test_a_script_file_builds_at_its_top_level(tmp_path):
    """``ntsym.make(..., caller="cuda")`` at the top level of a script, with
    no ``__main__`` guard: the build workers import neither the script nor
    Triton's interpreter switch (which ``import ntsym`` sets on a CPU)."""
    checkout = pathlib.Path(__file__).resolve().parent.parent
    script = tmp_path / "build_add.py"
    script.write_text(
        "import functools\n"
        "import ntsym\n"
        "from examples import add\n"
        "print('script ran', flush=True)\n"
        "lib = ntsym.make(functools.partial(add.arrangement, BLOCK_SIZE=1024), add.application,\n"
        "                 tuple(ntsym.Tensor(1, dtype=ntsym.float16) for _ in range(3)), caller='cuda',\n"
        "                 kernel_name='add_script', output_dir='lib', aot_options={'target': ('cuda', 90, 32)})\n"
        "print('built', lib.path.name)\n")
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "PYTEST_CURRENT_TEST")}
    env.update(PYTHONPATH=str(checkout), NTSYM_TUNING_PROGRESS="1")
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["script", "ran", "built", "add_script.so"]  # the script ran once
    assert "ntsym: building add_script_c0: 4/4 variants compiled" in done.stderr
    assert (tmp_path / "lib" / "add_script.so").exists()
    assert len(list((tmp_path / "lib").glob("add_script_c0.*.cubin"))) == 4


@pytest.mark.skipif(not torch.cuda.is_available(), reason="runs a library's cubins")
def test_every_aligned_variant_computes_the_product_on_a_gpu(tmp_path):
    """mm through a library built for this GPU, in each layout that picks a
    different variant: row-major operands with sizes that are multiples of 16
    and not, either operand transposed (its own variant), both transposed and
    a misaligned view (the general one), against torch."""
    f16 = ntsym.float16
    blocks = functools.partial(mm.arrangement, BLOCK_SIZE_M=16, BLOCK_SIZE_N=32, BLOCK_SIZE_K=32)
    lib = ntsym.make(blocks, mm.application, tuple(Tensor(2, dtype=f16) for _ in range(3)), caller="cuda",
                     kernel_name="mm_layouts", output_dir=tmp_path)
    gen = torch.Generator("cuda").manual_seed(0)

    def rand(*shape):
        return torch.randn(*shape, device="cuda", dtype=torch.float16, generator=gen)

    cases = {
        "aligned sizes": (rand(64, 96), rand(96, 48)),
        "odd sizes": (rand(3, 96), rand(96, 40)),
        "other transposed": (rand(2, 96), rand(40, 96).T),
        "input transposed": (rand(96, 5).T, rand(96, 48)),
        "both transposed": (rand(96, 3).T, rand(48, 96).T),
        "a misaligned view": (rand(3, 97)[:, 1:], rand(96, 48)),
    }
    for name, (a, b) in cases.items():
        out = torch.full((a.shape[0], b.shape[1]), float("nan"), device="cuda", dtype=torch.float16)
        lib(a, b, out)
        torch.testing.assert_close(out, (a.float() @ b.float()).half(), atol=2e-2, rtol=2e-2, msg=name)
    # The NineToothed paper's Linear: a bmm of x (2, 1, K) by weight.T expanded over the batch.
    from examples import bmm

    blocks = functools.partial(bmm.arrangement, BLOCK_SIZE_M=16, BLOCK_SIZE_N=32, BLOCK_SIZE_K=32)
    lib = ntsym.make(blocks, mm.application, tuple(Tensor(3, dtype=f16) for _ in range(3)), caller="cuda",
                     kernel_name="bmm_linear", output_dir=tmp_path)
    x, weight = rand(2, 1, 96), rand(40, 96)
    out = torch.full((2, 1, 40), float("nan"), device="cuda", dtype=torch.float16)
    lib(x, weight.T.unsqueeze(0).expand(2, -1, -1), out)
    torch.testing.assert_close(out, (x.float() @ weight.float().T).half(), atol=2e-2, rtol=2e-2)


@pytest.mark.slow
def test_build_dispatches_calls_of_small_sizes_to_their_own_choice(tmp_path, monkeypatch):
    """Built with meta-parameters, a configuration is tuned at every free size
    256 and again in the small class (a GPU times it, the device's time
    alone); where the small class's choice differs, the library calls it for
    calls whose free sizes are all at most 16 (a decode step's products).
    Here the GPU's choices are stood in for."""
    import ntsym.aot as built

    guards = []

    def tune(kernel_name, output_dir, plans, configs, kernels, meta_parameters, config_names):
        guards.append(built.small_class_guard(kernels[0], plans[0]))
        tuned = {"[]": {"meta": {"BLOCK_SIZE": 512}, "small": {"meta": {"BLOCK_SIZE": 1024}}}}
        return [(1, guards[0]), (0, None)], tuned

    monkeypatch.setattr(built, "tune_library", tune)
    configs = [((), {"BLOCK_SIZE": 512}, {"num_warps": 4}), ((), {"BLOCK_SIZE": 1024}, {"num_warps": 4})]
    lib = ntsym.build(_add_premake, configs, meta_parameters=("BLOCK_SIZE",), kernel_name="add_small",
                      output_dir=tmp_path, target=SM90)
    assert guards == ["input.ndim > 0 && input.shape[0] <= 16 && other.ndim > 0 && other.shape[0] <= 16 && "
                      "output.ndim > 0 && output.shape[0] <= 16"]
    source = (tmp_path / "add_small.c").read_text()
    small = source.index(f"if (({guards[0]})) return add_small_c1_launch(")
    assert small < source.index("if (1) return add_small_c0_launch(")
    assert lib.config_names == ()
    x = torch.zeros(10, dtype=torch.float16)
    code, message = lib.status(x, x[:3], torch.zeros(10, dtype=torch.float16))  # checked by either plan
    assert code == 2 and "(=3)" in message


@pytest.mark.skipif(not torch.cuda.is_available(), reason="tunes on a GPU")
def test_a_built_bmm_tunes_its_small_class_and_computes_both(tmp_path):
    """The paper's Linear shapes on a GPU: a bmm built over two row blocks is
    tuned at 256 rows and in the small class; whichever plans the dispatcher
    calls, decode calls (a row a sequence, the weight transposed and
    expanded) and prefill calls compute the product."""
    import json

    from examples import bmm

    def premake(BLOCK_SIZE_M):
        blocks = functools.partial(bmm.arrangement, BLOCK_SIZE_M=BLOCK_SIZE_M, BLOCK_SIZE_N=64, BLOCK_SIZE_K=64)
        batch = ({"upper_bound": 4}, None, None)
        return blocks, mm.application, tuple(Tensor(shape=s, dtype=ntsym.float16, shape_options=batch)
                                             for s in ((None, None, 512), (None, 512, 256), (None, None, 256)))

    configs = [((), {"BLOCK_SIZE_M": m}, {"num_warps": 4, "num_stages": 3}) for m in (16, 64)]
    lib = ntsym.build(premake, configs, meta_parameters=("BLOCK_SIZE_M",), kernel_name="bmm_classes",
                      output_dir=tmp_path)
    (entry,) = json.loads((tmp_path / "bmm_classes.tuned.json").read_text()).values()
    assert entry["timed"] and entry["meta"]["BLOCK_SIZE_M"] in (16, 64)
    gen = torch.Generator("cuda").manual_seed(0)
    weight = torch.randn(256, 512, device="cuda", dtype=torch.float16, generator=gen)
    for rows in (1, 3, 40):
        x = torch.randn(2, rows, 512, device="cuda", dtype=torch.float16, generator=gen)
        out = torch.empty(2, rows, 256, device="cuda", dtype=torch.float16)
        lib(x, weight.T.unsqueeze(0).expand(2, -1, -1), out)
        torch.testing.assert_close(out, (x.float() @ weight.float().T).half(), atol=2e-2, rtol=2e-2)


def test_a_library_refuses_a_written_tensor_whose_elements_overlap(built):
    """As the torch launcher and the standalone module do (the layout test of
    ``writes.check_no_overlap``): an output whose rows share elements is
    refused before the launch; transposed and sliced outputs pass the checks
    (here the call then stops at the missing driver, or launches on a GPU)."""
    _, _, mm_lib, _ = built
    h = functools.partial(torch.zeros, dtype=torch.float16)
    a, b = h(8, 16), h(16, 8)
    code, message = mm_lib.status(a, b, h(64).as_strided((8, 8), (1, 1)))
    assert code == aot.STATUS["NTSYM_ERROR_ARGUMENT"] and "its elements may overlap" in message
    for c in (h(8, 8).t(), h(8, 16)[:, ::2], h(8, 8)):
        code, message = mm_lib.status(a, b, c)
        assert "overlap" not in message, message


def _counted_arrangement(x, y):
    return x.tile((4,)), y.tile((4,))


def _counted(x, y):
    count = 0
    for i in range(3):
        count += i
    y = x + count  # noqa: F841


def test_a_variant_that_does_not_compile_is_left_out_with_a_warning(tmp_path):
    """Under 64-bit index math a loop counts in 64 bits, and a count the loop
    adds its index to, started at 0 (int32), changes type in the loop, which
    Triton refuses to compile: that variant is left out of the library, with
    a warning naming it, and the others are built (the build stopped)."""
    with pytest.warns(UserWarning, match="'NTSYM_INT64': 1.*did not compile and is left out"):
        lib = ntsym.make(_counted_arrangement, _counted,
                         (Tensor(1, dtype=ntsym.float32), Tensor(1, dtype=ntsym.float32)),
                         caller="cuda", kernel_name="counted", output_dir=tmp_path, aot_options={"target": SM90})
    code, message = lib.status(torch.zeros(6), torch.zeros(6))
    assert code != aot.STATUS["NTSYM_ERROR_NO_VARIANT"], message  # the 32-bit variant is there


def _scaled_arrangement(x, s, y):
    return x.tile((8,)), s, y.tile((8,))


def _scaled(x, s, y):
    y = x * s  # noqa: F841


def test_a_float32_scalar_beside_float64_tensors_refuses_a_value_it_rounds(tmp_path):
    """As the torch launcher refuses it (``runtime.check_float64_scalars``): a
    float scalar not declared float64 is compiled as float32, so 0.1 would
    be 0.100000001490116 in the float64 products.  Values float32 holds
    pass the check (the call then stops at the missing driver, or launches on
    a GPU); a scalar declared float64 takes any value."""
    f64 = ntsym.float64
    libs = {declared: ntsym.make(_scaled_arrangement, _scaled,
                                 (Tensor(1, dtype=f64), Tensor(0, dtype=declared), Tensor(1, dtype=f64)),
                                 caller="cuda", kernel_name=f"scaled_{'f64' if declared else 'plain'}",
                                 output_dir=tmp_path, aot_options={"target": SM90})
            for declared in (None, f64)}
    x, y = torch.zeros(16, dtype=torch.float64), torch.zeros(16, dtype=torch.float64)
    for s in (0.1, 1e300, -1e-50):
        code, message = libs[None].status(x, s, y)
        assert code == aot.STATUS["NTSYM_ERROR_ARGUMENT"], (s, message)
        assert "float32 does not hold exactly" in message and f"`s` is {s:.17g}" in message
    for s in (0.5, -3.0, 2.0**-20, float("inf"), float("nan"), 3.4028234663852886e38):
        assert "float32" not in libs[None].status(x, s, y)[1], s
    for s in (0.1, 1e300):
        assert "float32" not in libs[f64].status(x, s, y)[1], s
