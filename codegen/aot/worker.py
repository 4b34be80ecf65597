"""A build worker: compiles AOT variants to cubins in a process of its own.

Run as ``python -m ntsym_codegen.aot.worker JOBS RESULTS``: ``JOBS`` is a pickled
list of variants, each the arguments of ``compile_one``; the results (a list of
``("ok", cubin, function, shared, num_warps, scratch)`` or ``("error", kind,
message)``) are pickled into ``RESULTS``.  One line per finished variant goes
to stdout, so that the parent can show progress.

The worker is a plain subprocess, not a ``multiprocessing`` child: it never
imports the user's ``__main__`` (a script that calls ``ntsym.make`` at its
top level would otherwise run again in every worker) and it starts with
``TRITON_INTERPRET=0`` before ``triton`` is imported (a script's ``import
ntsym`` switches Triton to its interpreter where there is no GPU, and Triton
reads the switch once, at import)."""

import hashlib
import os
import pickle
import sys
import traceback


class WorkerAotError(Exception):
    """A refusal raised while compiling (the parent raises it as ``AotError``)."""


def compile_one(module_path, kernel_name, signature, constexprs, attrs, target, num_warps, num_stages):
    """Compile one variant of ``kernel_name`` (in the module at ``module_path``)
    to a cubin with Triton's JIT compiler for ``target``."""
    import importlib.util

    import triton
    from triton.backends.compiler import GPUTarget

    name = "ntsym_aot_" + hashlib.sha1(str(module_path).encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(name, module_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fn = getattr(module, kernel_name)
    src = triton.compiler.ASTSource(fn=fn, signature=dict(signature), constexprs=dict(constexprs),
                                    attrs={tuple(k): v for k, v in attrs})
    target = GPUTarget(*target)
    backend = triton.compiler.make_backend(target)
    options = backend.parse_options({"num_warps": num_warps, "num_stages": num_stages})
    compiled = triton.compile(src, target=target, options=options.__dict__)
    md = compiled.metadata
    if getattr(md, "global_scratch_size", 0):
        raise WorkerAotError(f"kernel `{kernel_name}` needs global scratch memory, which the C launcher "
                             "does not allocate")
    scratch = 1 + (1 if hasattr(md, "profile_scratch_size") else 0)
    return compiled.asm["cubin"], md.name, md.shared, md.num_warps, scratch


def run(jobs_path, results_path):
    """Compile every job of ``jobs_path``; a failing job records its error and
    the others still run."""
    with open(jobs_path, "rb") as f:
        jobs = pickle.load(f)
    results = []
    for i, job in enumerate(jobs):
        try:
            results.append(("ok", *compile_one(*job)))
        except WorkerAotError as e:
            results.append(("error", "aot", str(e)))
        except Exception:
            results.append(("error", "crash", traceback.format_exc()[-4000:]))
        print(f"done {i}", flush=True)
    with open(results_path, "wb") as f:
        pickle.dump(results, f)


if __name__ == "__main__":
    os.environ["TRITON_INTERPRET"] = "0"
    run(sys.argv[1], sys.argv[2])
