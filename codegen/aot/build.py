"""Building: variants compiled to cubins in worker subprocesses
(``ntsym_codegen.aot.worker``: Triton's compiler runs there only), the C compiler that makes the shared library, and what
keys the build cache."""

import concurrent.futures
import hashlib
import json
import os
import pathlib
import pickle
import shutil
import subprocess
import sys
import tempfile
import threading
import time

from ntsym_codegen import triton_compat
from ntsym_codegen import progress
from ntsym_codegen.aot.common import AotError


def compile_variants(plans, module_paths, target, *, workers=None):
    """Compile every variant of every plan to a cubin, in worker subprocesses
    (``ntsym_codegen.aot.worker``), showing progress on stderr for long builds."""
    jobs, owners = [], []
    for plan_, path in zip(plans, module_paths):
        for v in plan_.variants:
            owners.append(plan_)
            jobs.append((v, (str(pathlib.Path(path).resolve()), plan_.kernel_name, v.signature, v.constexprs,
                             [(list(k), a) for k, a in v.attrs.items()], tuple(target),
                             plan_.num_warps, plan_.num_stages)))
    if not jobs:
        return
    workers = max(1, min(workers or os.cpu_count() or 1, len(jobs)))
    chunks = [list(range(len(jobs)))[k::workers] for k in range(workers)]
    progress = BuildProgress(", ".join(sorted({p.name for p in plans})), len(jobs))
    with tempfile.TemporaryDirectory(prefix="ntsym-aot-") as tmp:
        with concurrent.futures.ThreadPoolExecutor(workers) as pool:
            done = list(pool.map(lambda k: _run_worker([jobs[i][1] for i in chunks[k]], tmp, k, progress.step),
                                 range(workers)))
    progress.end()
    results = [None] * len(jobs)
    for chunk, outcome in zip(chunks, done):
        for i, result in zip(chunk, outcome):
            results[i] = result
    failed = {}
    for (v, args), result, owner in zip(jobs, results, owners):
        if result[0] == "error":
            detail = result[2] if result[1] == "aot" else f"compiling `{args[1]}` for {target} failed:\n{result[2]}"
            if result[1] == "aot":
                raise AotError(detail)
            failed.setdefault(id(owner), []).append((v, detail))
        else:
            v.cubin, v.function, v.shared, v.num_warps, v.scratch_args = result[1:]
    _leave_out(plans, failed)


def _leave_out(plans, failed):
    """Variants Triton could not compile are left out of their library, whose
    launcher then refuses the calls that need them (no compiled variant),
    with a warning at build naming each; a plan none of whose variants
    compiled is refused.  A variant that cannot occur for any call that the
    kernel computes (two row sizes of one product that differ; 64-bit index
    math where a count the loop adds its index to is int32) should not
    stop the others."""
    import warnings

    for plan_ in plans:
        gone = failed.get(id(plan_), [])
        if gone and len(gone) == len(plan_.variants):
            raise AotError(gone[0][1])
        for v, detail in gone:
            lines = [line for line in detail.splitlines() if line.strip()]
            warnings.warn(f"ntsym: {plan_.name}: the variant {dict(v.assignment)} did not compile and is left out "
                          f"(calls that need it are refused): {lines[-1][:300] if lines else detail}", stacklevel=3)
        plan_.variants = [v for v in plan_.variants if all(v is not g for g, _ in gone)]


def _worker_command(jobs_path, results_path):
    """The worker's command line and environment: this interpreter, Triton's
    compiler (never its interpreter), and this package importable."""
    package = __package__ or "ntsym_codegen.aot"
    root = pathlib.Path(__file__).resolve().parents[len(package.split("."))]
    path = os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH", "")) if p)
    env = dict(os.environ, TRITON_INTERPRET="0", PYTHONPATH=path)
    return [sys.executable, "-m", f"{package}.worker", str(jobs_path), str(results_path)], env


def _run_worker(job_args, tmp, k, on_done):
    """Run one worker over ``job_args`` (in the build's temporary folder, so
    that nothing of the caller's working directory is imported) and return its
    results; ``on_done`` is called once per finished variant."""
    jobs_path, results_path = pathlib.Path(tmp, f"jobs{k}.pickle"), pathlib.Path(tmp, f"results{k}.pickle")
    jobs_path.write_bytes(pickle.dumps(job_args))
    command, env = _worker_command(jobs_path, results_path)
    with open(pathlib.Path(tmp, f"stderr{k}.txt"), "w+") as errors:
        process = subprocess.Popen(command, cwd=tmp, env=env, stdout=subprocess.PIPE, stderr=errors, text=True)
        for line in process.stdout:
            if line.startswith("done "):
                on_done()
        process.wait()
        errors.seek(0)
        stderr = errors.read()
    if process.returncode or not results_path.exists():
        raise AotError(f"the build worker stopped (exit status {process.returncode}):\n{' '.join(command)}\n"
                       f"{stderr[-4000:]}")
    return pickle.loads(results_path.read_bytes())


class BuildProgress:
    """The progress line of a build (``ntsym: building NAME: k/n variants
    compiled, t s``), once it has run for a second (see ``ntsym_codegen.progress``)."""

    def __init__(self, name, total):
        self.name, self.total, self.done = name, total, 0
        self.start, self.lock = time.perf_counter(), threading.Lock()
        progress.show(f"ntsym: building {name}: 0/{total} variants compiled")

    def step(self):
        with self.lock:
            self.done += 1
            elapsed = time.perf_counter() - self.start
            if elapsed >= 1.0:
                progress.show(f"ntsym: building {self.name}: {self.done}/{self.total} variants compiled, "
                              f"{elapsed:.1f} s")

    def end(self):
        progress.end()


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
