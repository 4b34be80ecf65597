"""Building: variants compiled to cubins in worker processes (``triton`` is
imported there only), the C compiler that makes the shared library, and what
keys the build cache."""

import concurrent.futures
import hashlib
import json
import multiprocessing
import os
import pathlib
import shutil
import subprocess

from codegen import triton_compat
from codegen.aot.common import AotError


def _compile_one(module_path, kernel_name, signature, constexprs, attrs, target, num_warps, num_stages):
    """Compile one variant to a cubin (in a worker process, Triton's JIT, not
    its interpreter)."""
    os.environ["TRITON_INTERPRET"] = "0"
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
        raise AotError(f"kernel `{kernel_name}` needs global scratch memory, which the C launcher does not allocate")
    scratch = 1 + (1 if hasattr(md, "profile_scratch_size") else 0)
    return compiled.asm["cubin"], md.name, md.shared, md.num_warps, scratch


def _worker_init():
    os.environ["TRITON_INTERPRET"] = "0"


def compile_variants(plans, module_paths, target, *, workers=None):
    """Compile every variant of every plan, in parallel worker processes."""
    jobs = []
    for plan_, path in zip(plans, module_paths):
        for v in plan_.variants:
            jobs.append((v, (str(path), plan_.kernel_name, v.signature, v.constexprs,
                             [(list(k), a) for k, a in v.attrs.items()], tuple(target),
                             plan_.num_warps, plan_.num_stages)))
    workers = workers or min(len(jobs), os.cpu_count() or 1) or 1
    if workers <= 1:
        results = [_in_subprocess(args) for _, args in jobs] if os.environ.get("TRITON_INTERPRET") == "1" else \
            [_compile_one(*args) for _, args in jobs]
    else:
        context = multiprocessing.get_context("spawn")
        with concurrent.futures.ProcessPoolExecutor(workers, mp_context=context, initializer=_worker_init) as pool:
            results = list(pool.map(_compile_one, *zip(*(args for _, args in jobs))))
    for (v, _), (cubin, function, shared, warps, scratch) in zip(jobs, results):
        v.cubin, v.function, v.shared, v.num_warps, v.scratch_args = cubin, function, shared, warps, scratch


def _in_subprocess(args):
    """One compile in a fresh process (this one runs Triton's interpreter)."""
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=context, initializer=_worker_init) as pool:
        return pool.submit(_compile_one, *args).result()


def cuda_include():
    """Triton's bundled CUDA headers."""
    import importlib.util

    spec = importlib.util.find_spec("triton")
    root = pathlib.Path(spec.origin).parent
    include = root / "backends" / "nvidia" / "include"
    if not (include / "cuda.h").exists():
        raise AotError(f"no cuda.h under {include}: Triton's NVIDIA backend is needed to build the C library")
    return include


def c_compiler():
    for name in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return shutil.which(name)
    raise AotError("no C compiler (cc, gcc or clang) on PATH: building the shared library needs one")


def compile_library(c_path, so_path):
    """``cc -shared``: no CUDA library is linked (libcuda is opened at the first launch)."""
    command = [c_compiler(), "-shared", "-fPIC", "-O2", "-std=gnu11", f"-I{cuda_include()}",
               f"-I{pathlib.Path(c_path).parent}", "-o", str(so_path), str(c_path), "-ldl", "-lpthread"]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode:
        raise AotError(f"compiling {c_path} failed:\n{' '.join(command)}\n{done.stderr[-4000:]}")
    return command


def cache_key(parts):
    digest = hashlib.sha256()
    for source in sorted(pathlib.Path(__file__).parent.glob("*.py")):  # the generators of the library
        digest.update(source.read_bytes())
    for p in parts:
        digest.update(json.dumps(p, sort_keys=True, default=str).encode())
        digest.update(b"\0")
    return digest.hexdigest()


def plan_fingerprint(plan_):
    """What of a plan changes the library's output."""
    return [plan_.name, plan_.kernel_name, plan_.module, [p.__dict__ for p in plan_.params], plan_.prologue,
            [a.__dict__ for a in plan_.axes], plan_.grid, plan_.meta, plan_.num_warps, plan_.num_stages,
            [(v.assignment, v.signature, v.constexprs, sorted((str(k), a) for k, a in v.attrs.items()))
             for v in plan_.variants]]


def triton_version():
    """The installed Triton's version, for the build key."""
    return triton_compat.distribution_version()
