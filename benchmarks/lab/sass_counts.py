"""How many instructions do ntsym's generated kernels compile to on sm_90, with
loops addressing tiles from the loop index and with pointers advanced?  Compiles
mm, bmm and sdpa (non-causal and causal) at one configuration each for an H100
target and counts the SASS instructions by opcode (Triton's bundled
``cuobjdump``).  No GPU is needed: Triton compiles for a named target.

    python -m benchmarks.lab.sass_counts [--source FILE.py ...]

``--source``: generated modules to compile instead of the examples' current
ones (the golden files of an older commit, say), as NAME=PATH with NAME one of
the cases.  Each count runs in a child process that does not import ntsym (which
selects Triton's interpreter where no GPU is present)."""

import argparse
import collections
import importlib
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile

GEMM = dict(BLOCK_SIZE_K=64, BLOCK_SIZE_M=128, BLOCK_SIZE_N=128, NTSYM_WHOLE_0=True, NTSYM_INT64=False)
# name -> (example module, kernel attribute, compile-time values, unit-stride parameters, warps, stages, dtype)
CASES = {
    "mm": ("examples.mm", "kernel", GEMM, ("input_stride_1", "other_stride_1", "output_stride_1"), 8, 3, "fp16"),
    "bmm": ("examples.bmm", "kernel", GEMM, ("input_stride_2", "other_stride_2", "output_stride_2"), 8, 3, "fp16"),
}
for _causal in (False, True):
    CASES[f"sdpa{' causal' if _causal else ''}"] = (
        "examples.sdpa", "kernel_pow2_head",
        dict(is_causal=_causal, q_size_3=128, k_size_3=128, v_size_3=128, o_size_3=128, BLOCK_SIZE_M=64,
             BLOCK_SIZE_N=64, NTSYM_WHOLE_0=True, NTSYM_INT64=False),
        ("q_stride_3", "k_stride_3", "v_stride_3", "o_stride_3"), 4, 3, "bf16")


def _load(path):
    spec = importlib.util.spec_from_file_location("sass_counts_kernel", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.application_kernel


def counts(path, constants, unit, warps, stages, dtype):
    """SASS opcode counts of the module's ``application_kernel``: pointers 16-byte
    aligned, integer arguments divisible by 16, the ``unit`` strides 1 (as
    Triton specializes a contiguous call).  In this process: ntsym not imported."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    fn = _load(path)
    signature, attrs, constexprs = {}, {}, dict(constants)
    for i, name in enumerate(fn.arg_names):
        if name in constexprs:
            signature[name] = "constexpr"
        elif name in unit:
            signature[name], constexprs[name] = "constexpr", 1
        elif name.endswith("_ptr"):
            signature[name], attrs[(i,)] = f"*{dtype}", [["tt.divisibility", 16]]
        elif name == "scale":
            signature[name] = "fp32"
        else:
            signature[name], attrs[(i,)] = "i32", [["tt.divisibility", 16]]
    source = ASTSource(fn=fn, signature=signature, constexprs=constexprs, attrs=attrs)
    compiled = triton.compile(source, target=GPUTarget("cuda", 90, 128),
                              options=dict(num_warps=warps, num_stages=stages))
    tool = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
    with tempfile.NamedTemporaryFile(suffix=".cubin") as cubin:
        cubin.write(compiled.asm["cubin"])
        cubin.flush()
        sass = subprocess.run([tool, "-sass", cubin.name], capture_output=True, text=True, check=True).stdout
    ops = re.findall(r"/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_]+)", sass)
    return collections.Counter(op.split(".")[0] for op in ops)


def _counted(path, name, advance):
    """``counts`` of case ``name`` in a child process."""
    env = dict(os.environ, TRITON_INTERPRET="0")
    out = subprocess.run([sys.executable, "-m", "benchmarks.lab.sass_counts", "--count", path, name,
                          str(int(advance))], capture_output=True, text=True, env=env, check=True).stdout
    return collections.Counter(json.loads(out.splitlines()[-1]))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--source", nargs="*", default=(), help="NAME=PATH: a generated module for case NAME")
    parser.add_argument("--count", nargs=3, help=argparse.SUPPRESS)  # PATH NAME ADVANCE, in the child process
    options = parser.parse_args()
    if options.count:
        path, name, advance = options.count
        _, _, constants, unit, warps, stages, dtype = CASES[name]
        print(json.dumps(counts(path, dict(constants, NTSYM_ADVANCE=bool(int(advance))), unit, warps, stages, dtype)))
        return
    import ntsym  # noqa: F401  (before triton; it generates the kernels, the child processes compile them)
    import triton

    sources = dict(item.split("=", 1) for item in options.source)
    print(f"triton {triton.__version__}, target sm_90\n")
    print("| kernel | loads address by | instructions | most frequent |")
    print("|---|---|---:|---|")
    with tempfile.TemporaryDirectory() as folder:
        for name, (module, attribute, *_) in CASES.items():
            path = sources.get(name)
            if path is None:
                kernel = getattr(importlib.import_module(module), attribute)
                path = os.path.join(folder, f"{name.replace(' ', '_')}.py")
                with open(path, "w") as f:
                    f.write(kernel.source)
            for advance in (False, True):
                found = _counted(path, name, advance)
                top = " ".join(f"{op} {n}" for op, n in found.most_common(8))
                print(f"| {name} | {'advanced pointers' if advance else 'loop index'} | {sum(found.values())} | {top} |",
                      flush=True)


if __name__ == "__main__":
    sys.exit(main())
