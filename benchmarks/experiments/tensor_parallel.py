"""Does a tensor-parallel MLP on ntsym kernels compute what one GPU does, and how
much faster is it?  And does a kernel launched on another GPU than the current one
run there, tuned there?

    torchrun --nproc-per-node 2 -m benchmarks.experiments.tensor_parallel
        [--hidden 4096] [--intermediate 14336] [--rows 2048,2] [--dtype float16]
        [--iters 50] [--warmup 5]
    python -m benchmarks.experiments.tensor_parallel --dry-run      # one process, CPU or one GPU

The MLP is Llama's (``down(silu(gate(x)) * up(x))``, no biases), split over the
ranks Megatron's way: ``gate`` and ``up`` column-parallel (each rank holds
``intermediate / world`` of their output features), the fused SiLU-and-multiply on
the rank's shard, ``down`` row-parallel (the same shard of its input features),
and one all-reduce (sum) of the partial outputs over NCCL.  The matrix products
are ``examples.llm.kernels.linear`` (``examples/mm.py`` for more than 16 rows, the
GEMV-like tiling for fewer), the activation ``examples.llm.kernels.silu_and_mul``.
Every rank builds the full weights from one seed and keeps its shard.

Printed (rank 0), as markdown:

1. The ranks' devices (name, capability), torch, Triton, ntsym, CUDA and NCCL versions.
2. Per row count: milliseconds per forward of the MLP on one GPU (full weights, no
   communication) and tensor-parallel over the ranks (the slowest rank, all-reduce
   included), for ntsym and for torch (``F.linear``, ``F.silu``), and the largest
   difference of each output from a float32 torch reference on one GPU (full weights).
   The forward is checked: the tensor-parallel ntsym output must match the
   reference within the dtype's tolerance.
3. Checks of launches on another device than the current one (on rank 0, with at
   least two GPUs visible): a fresh ``add`` and ``mm`` kernel handle called on
   ``cuda:0``, then on ``cuda:1`` tensors while ``cuda:0`` stays current: results
   equal torch's, the current device unchanged, validated call shapes and tuned
   choices kept per device (``mm`` tuned again on ``cuda:1`` with
   ``NTSYM_RETUNE=1``: its timed runs must run on ``cuda:1``), the launch on the
   current stream of ``cuda:1`` (ordered after a sleep queued on that stream), and
   tensors on both devices refused with a ``LaunchError`` and nothing written.

Timing: ``--warmup`` forwards (the first one tunes every kernel shape), a barrier,
then ``--iters`` forwards between two CUDA events on each rank; the slowest rank's
time is reported.  A fixed count on every rank, not ``do_bench``, whose repetition
count is estimated per process and would leave a rank waiting in an all-reduce.

``--dry-run``: tiny sizes, float32, on the GPU of the rank (or the CPU, through
Triton's interpreter and the gloo backend), no timing; the forward check and, with
two GPUs, the device checks still run.  Without ``torchrun`` the script runs as a
group of one process.  It needs torch, Triton and ntsym only.  Exits 1 when a check
fails.
"""

import argparse
import contextlib
import datetime
import os
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.nn.functional as F


def parse(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hidden", type=int, default=4096)
    parser.add_argument("--intermediate", type=int, default=14336)
    parser.add_argument("--rows", default="2048,2", help="token counts, comma-separated")
    parser.add_argument("--dtype", default="float16", choices=("float16", "bfloat16", "float32"))
    parser.add_argument("--iters", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dry-run", action="store_true",
                        help="tiny sizes, float32, no timing: the forward and device checks only")
    args = parser.parse_args(argv)
    args.rows = [int(r) for r in args.rows.split(",") if r.strip()]
    if args.dry_run:
        args.hidden, args.intermediate, args.rows, args.dtype = 32, 64, [24, 3], "float32"
        args.iters = args.warmup = 0
    return args


# -- the process group ------------------------------------------------------------------


@contextlib.contextmanager
def process_group():
    """(rank, world size, device) inside a process group: torchrun's (NCCL on
    GPUs, gloo on the CPU), else a group of this one process."""
    cuda = torch.cuda.is_available()
    if cuda:
        local = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(local)
        device = torch.device("cuda", local)
    else:
        device = torch.device("cpu")
    backend = "nccl" if cuda else "gloo"
    timeout = datetime.timedelta(minutes=30)  # first forwards tune; a rank may wait long for another
    created = not dist.is_initialized()
    store_dir = None
    if created:
        if "WORLD_SIZE" in os.environ:
            dist.init_process_group(backend, timeout=timeout, device_id=device if cuda else None)
        else:
            store_dir = tempfile.mkdtemp(prefix="ntsym_tp_")
            dist.init_process_group(backend, init_method=f"file://{store_dir}/store", rank=0, world_size=1,
                                    timeout=timeout)
    try:
        yield dist.get_rank(), dist.get_world_size(), device
    finally:
        if created:
            dist.destroy_process_group()
            if store_dir:
                import shutil

                shutil.rmtree(store_dir, ignore_errors=True)


def barrier(device):
    if device.type == "cuda":
        dist.barrier(device_ids=[device.index])
    else:
        dist.barrier()


# -- the model --------------------------------------------------------------------------


def full_weights(hidden, intermediate, seed):
    """gate (I, H), up (I, H), down (H, I) in float32 on the CPU, the same on every
    rank; scaled by 1/sqrt(fan-in) so that activations stay near 1."""
    generator = torch.Generator().manual_seed(seed)
    gate = torch.randn(intermediate, hidden, generator=generator) / hidden**0.5
    up = torch.randn(intermediate, hidden, generator=generator) / hidden**0.5
    down = torch.randn(hidden, intermediate, generator=generator) / intermediate**0.5
    return gate, up, down


class MLP:
    """Llama's MLP over ``world`` ranks (``world=1``: the whole MLP on one device,
    no communication).  ``backend``: "ntsym" or "torch"."""

    def __init__(self, weights, rank, world, device, dtype, backend="ntsym"):
        gate, up, down = weights
        intermediate = gate.shape[0]
        if intermediate % world:
            raise SystemExit(f"--intermediate {intermediate} is not divisible by the world size {world}")
        shard = slice(rank * intermediate // world, (rank + 1) * intermediate // world)
        self.gate = gate[shard].to(device, dtype).contiguous()  # column-parallel: output features
        self.up = up[shard].to(device, dtype).contiguous()
        self.down = down[:, shard].to(device, dtype).contiguous()  # row-parallel: input features
        self.world = world
        self.backend = backend
        if backend == "ntsym":
            from examples.llm.kernels import linear, silu_and_mul

            self.linear, self.silu_mul = linear, silu_and_mul
        else:
            self.linear, self.silu_mul = F.linear, lambda g, u: F.silu(g) * u

    def __call__(self, x):
        act = self.silu_mul(self.linear(x, self.gate), self.linear(x, self.up))
        out = self.linear(act, self.down)  # this rank's partial sum
        if self.world > 1:
            dist.all_reduce(out)
        return out


def reference(weights, x):
    """The MLP on one device in float32 with torch."""
    gate, up, down = (w.to(x.device) for w in weights)
    x = x.float()
    return F.linear(F.silu(F.linear(x, gate)) * F.linear(x, up), down)


TOLERANCE = {torch.float16: 2e-2, torch.bfloat16: 8e-2, torch.float32: 1e-4}


def within(result, expected, dtype):
    tol = TOLERANCE[dtype]
    if dtype == torch.float32 and result.is_cuda:
        tol = 2e-2  # float32 products on a GPU go through TF32 tensor cores (10-bit mantissa)
    return torch.allclose(result.float(), expected, atol=tol, rtol=tol)


def time_forward(fn, x, args, device):
    """Milliseconds per call on the slowest rank (None without a GPU or iterations)."""
    for _ in range(args.warmup):
        fn(x)
    if device.type != "cuda" or args.iters <= 0:
        return None
    torch.cuda.synchronize()
    barrier(device)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(args.iters):
        fn(x)
    end.record()
    torch.cuda.synchronize()
    ms = torch.tensor([start.elapsed_time(end) / args.iters], device=device)
    dist.all_reduce(ms, op=dist.ReduceOp.MAX)
    return ms.item()


def run_mlp(args, rank, world, device):
    """Rows of the results table, and whether every check passed."""
    dtype = getattr(torch, args.dtype)
    weights = full_weights(args.hidden, args.intermediate, args.seed)
    models = {
        ("ntsym", 1): MLP(weights, 0, 1, device, dtype, "ntsym"),
        ("ntsym", world): MLP(weights, rank, world, device, dtype, "ntsym"),
        ("torch", 1): MLP(weights, 0, 1, device, dtype, "torch"),
        ("torch", world): MLP(weights, rank, world, device, dtype, "torch"),
    }
    rows, ok = [], True
    for count in args.rows:
        generator = torch.Generator().manual_seed(args.seed + count)
        x = torch.randn(count, args.hidden, generator=generator).to(device, dtype)
        expected = reference(weights, x)
        results = {name: model(x) for name, model in models.items()}
        errors = {name: (out.float() - expected).abs().max().item() for name, out in results.items()}
        passed = within(results[("ntsym", world)], expected, dtype) and within(results[("ntsym", 1)], expected, dtype)
        ok &= passed
        times = {name: time_forward(model, x, args, device) for name, model in models.items()}
        rows.append((count, times, errors, passed))
    return rows, ok


# -- launches on another device -----------------------------------------------------------


def check_other_device(log):
    """The checks of part 3 on cuda:0 (current) and cuda:1; (name, passed, detail) each."""
    import ntsym
    from codegen import tuning
    from examples import add as add_example
    from examples import mm as mm_example
    from ntsym import Tensor

    results = []
    cuda0, cuda1 = torch.device("cuda", 0), torch.device("cuda", 1)

    def check(name, passed, detail=""):
        results.append((name, bool(passed), detail))
        log(f"  {'ok  ' if passed else 'FAIL'} {name}{': ' + detail if detail else ''}")

    def per_device(cache):
        calls = sorted({str(arg[3]) for key in cache.calls for arg in key[:1]})
        tuned = sorted({str(key[3][-1]) for key in cache.tuned})
        return calls, tuned

    previous = torch.cuda.current_device()
    torch.cuda.set_device(0)
    try:
        # add: validated on cuda:0, then cuda:1 tensors of the same shapes.
        add = ntsym.make(add_example.arrangement, add_example.application, tuple(Tensor(1) for _ in range(3)))
        n = 1 << 20
        for device in (cuda0, cuda1):
            x, y = torch.randn(n, device=device), torch.randn(n, device=device)
            z = torch.empty_like(x)
            add(x, y, z)
            torch.cuda.synchronize(device)
            check(f"add on {device} (cuda:0 current): result", torch.equal(z, x + y))
        check("current device unchanged", torch.cuda.current_device() == 0, f"cuda:{torch.cuda.current_device()}")
        calls, tuned = per_device(add._cache)
        check("add: validated call shapes per device", calls == ["cuda:0", "cuda:1"], f"{calls}")
        check("add: tuned choices per device", tuned == ["cuda:0", "cuda:1"], f"{tuned}")
        check("add: call shapes validated (not device 0's fast path on cuda:1)", add._cache.checked_launches == 2,
              f"checked_launches={add._cache.checked_launches}")

        # mm: tuned on cuda:0, then tuned again (NTSYM_RETUNE=1) on cuda:1 from cuda:0.
        mm = ntsym.make(mm_example.arrangement, mm_example.application, mm_example.tensors)
        for device, retune in ((cuda0, False), (cuda1, True)):
            a = torch.randn(1024, 512, device=device, dtype=torch.float16)
            b = torch.randn(512, 768, device=device, dtype=torch.float16)
            c = torch.empty(1024, 768, device=device, dtype=torch.float16)
            before = tuning.BENCHMARKS_RUN
            saved = os.environ.get("NTSYM_RETUNE")
            if retune:
                os.environ["NTSYM_RETUNE"] = "1"
            try:
                mm(a, b, c)
            finally:
                if retune:
                    if saved is None:
                        os.environ.pop("NTSYM_RETUNE", None)
                    else:
                        os.environ["NTSYM_RETUNE"] = saved
            torch.cuda.synchronize(device)
            good = torch.allclose(c.float(), (a.float() @ b.float()), atol=5e-2, rtol=1e-2)
            timed = tuning.BENCHMARKS_RUN - before
            check(f"mm on {device}: result" + (", tuned again there" if retune else ""), good and (timed or not retune),
                  f"configurations timed: {timed}")
        calls, tuned = per_device(mm._cache)
        check("mm: tuned choices per device", tuned == ["cuda:0", "cuda:1"], f"{tuned}")
        check("current device unchanged", torch.cuda.current_device() == 0)

        # Streams: the launch on cuda:1 goes to cuda:1's current stream.
        stream = torch.cuda.Stream(device=cuda1)
        x = torch.ones(n, device=cuda1)
        y = torch.empty_like(x)
        torch.cuda.synchronize(cuda1)
        with torch.cuda.device(1):
            saved_stream = torch.cuda.current_stream()
            torch.cuda.set_stream(stream)
        try:
            with torch.cuda.stream(stream):
                torch.cuda._sleep(200_000_000)  # ~0.1 s: what runs beside the stream sees x == 1
                x.fill_(2.0)
            torch.cuda.set_device(0)
            add(x, x, y)  # validated shape: the fast path, from cuda:0
        finally:
            with torch.cuda.device(1):
                torch.cuda.set_stream(saved_stream)
        torch.cuda.synchronize(cuda1)
        check("add on cuda:1 runs on cuda:1's current stream (after its queued work)", bool((y == 4).all()),
              f"y[0]={y[0].item()}")

        # Tensors on two devices: refused, nothing written.
        x0, y1 = torch.randn(n, device=cuda0), torch.randn(n, device=cuda1)
        z1 = torch.zeros(n, device=cuda1)
        try:
            add(x0, y1, z1)
            check("tensors on two devices refused", False, "no error")
        except ntsym.LaunchError as error:
            torch.cuda.synchronize(cuda1)
            check("tensors on two devices refused", not z1.any().item(), str(error).splitlines()[0])
    finally:
        torch.cuda.set_device(previous)
    return results


# -- the report ---------------------------------------------------------------------------


def versions():
    import triton

    import ntsym

    parts = [f"torch {torch.__version__}", f"triton {triton.__version__}", f"ntsym {ntsym.__version__}"]
    if torch.cuda.is_available():
        parts.append(f"CUDA {torch.version.cuda}")
        try:
            parts.append("NCCL " + ".".join(map(str, torch.cuda.nccl.version())))
        except Exception:
            pass
    return ", ".join(parts)


def describe(device):
    if device.type != "cuda":
        return f"{device} (Triton's interpreter)"
    major, minor = torch.cuda.get_device_capability(device)
    return f"{device}: {torch.cuda.get_device_name(device)} (sm_{major}{minor})"


def _ms(value):
    return "—" if value is None else f"{value:.3f}"


def report(args, world, devices, rows, device_checks, log):
    log(f"\n## Tensor-parallel MLP, {world} rank(s)\n")
    for rank, text in enumerate(devices):
        log(f"- rank {rank}: {text}")
    log(f"- {versions()}")
    log(f"- hidden {args.hidden}, intermediate {args.intermediate} ({args.intermediate // world} per rank), "
        f"{args.dtype}; {args.iters} timed forwards after {args.warmup}\n")
    log(f"| rows | ntsym 1 GPU ms | ntsym TP×{world} ms | speedup | torch 1 GPU ms | torch TP×{world} ms | "
        f"max err ntsym TP | max err ntsym 1 GPU | max err torch 1 GPU | check |")
    log("|---|---|---|---|---|---|---|---|---|---|")
    for count, times, errors, passed in rows:
        one, tp = times[("ntsym", 1)], times[("ntsym", world)]
        speedup = "—" if one is None or tp is None else f"{one / tp:.2f}×"
        log(f"| {count} | {_ms(one)} | {_ms(tp)} | {speedup} | {_ms(times[('torch', 1)])} | "
            f"{_ms(times[('torch', world)])} | {errors[('ntsym', world)]:.2e} | {errors[('ntsym', 1)]:.2e} | "
            f"{errors[('torch', 1)]:.2e} | {'ok' if passed else 'FAIL'} |")
    if device_checks is None:
        log("\nLaunches on another device: not checked (fewer than two GPUs visible to rank 0).")
    else:
        passed = sum(ok for _, ok, _ in device_checks)
        log(f"\nLaunches on another device: {passed}/{len(device_checks)} checks passed.")


def main(argv=None):
    args = parse(argv)
    with process_group() as (rank, world, device):
        log = print if rank == 0 else (lambda *a, **k: None)
        rows, ok = run_mlp(args, rank, world, device)
        devices = [None] * world
        dist.all_gather_object(devices, describe(device))
        device_checks = None
        barrier(device)
        if rank == 0 and torch.cuda.is_available() and torch.cuda.device_count() >= 2:
            log("\nLaunches on another device than the current one:")
            device_checks = check_other_device(log)
            ok &= all(passed for _, passed, _ in device_checks)
        barrier(device)
        report(args, world, devices, rows, device_checks, log)
        flags = torch.tensor([int(ok)], device=device)
        dist.all_reduce(flags, op=dist.ReduceOp.MIN)
        ok = bool(flags.item())
        log(f"\n{'all checks passed' if ok else 'SOME CHECK FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
