"""A tensor-parallel MLP on ntsym kernels: does it compute what one GPU does, and
how much faster is it?

    torchrun --nproc-per-node 2 -m examples.tensor_parallel
        [--hidden 4096] [--intermediate 14336] [--rows 2048,2] [--dtype float16]
        [--iters 50] [--warmup 5]
    python -m examples.tensor_parallel --dry-run      # one process, CPU or one GPU

The MLP is Llama's (``down(silu(gate(x)) * up(x))``, no biases), split over the
ranks Megatron's way: ``gate`` and ``up`` column-parallel (each rank holds
``intermediate / world`` of their output features), the fused SiLU-and-multiply on
the rank's shard, ``down`` row-parallel (the same shard of its input features),
and one all-reduce (sum) of the partial outputs over NCCL.  The matrix products
are ``examples.llm.kernels.linear`` (``examples/mm.py`` for more than 16 rows, the
GEMV-like tiling for fewer), the activation ``examples.llm.kernels.silu_and_mul``.
Every rank builds the full weights from one seed and keeps its shard.  The same
split of a whole Llama decode step is ``examples/llm/parallel.py``.

Printed (rank 0), as markdown: the ranks' devices (name, capability), torch,
Triton, ntsym, CUDA and NCCL versions; then per row count, milliseconds per
forward of the MLP on one GPU (full weights, no communication) and
tensor-parallel over the ranks (the slowest rank, all-reduce included), for ntsym
and for torch (``F.linear``, ``F.silu``), and the largest difference of each
output from a float32 torch reference on one GPU (full weights).  The forward is
checked: the tensor-parallel ntsym output must match the reference within the
dtype's tolerance.

Timing: ``--warmup`` forwards (the first one tunes every kernel shape), a barrier,
then ``--iters`` forwards between two CUDA events on each rank; the slowest rank's
time is reported.  A fixed count on every rank, not ``do_bench``, whose repetition
count is estimated per process and would leave a rank waiting in an all-reduce.

``--dry-run``: tiny sizes, float32, on the GPU of the rank (or the CPU, through
Triton's interpreter and the gloo backend), no timing.  Without ``torchrun`` the
script runs as a group of one process.  Exits 1 when a check fails.  Launches on
a device other than the current one are tested in ``tests/test_multi_gpu.py``.
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
        if created and dist.get_world_size() > 1:
            # Every rank past its last collective before any rank closes its
            # connections: a peer torn down mid-exchange aborts the process (gloo).
            barrier(device)
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
    gate = torch.randn(intermediate, hidden, generator=generator, device="cpu") / hidden**0.5
    up = torch.randn(intermediate, hidden, generator=generator, device="cpu") / hidden**0.5
    down = torch.randn(hidden, intermediate, generator=generator, device="cpu") / intermediate**0.5
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
        x = torch.randn(count, args.hidden, generator=generator, device="cpu").to(device, dtype)
        expected = reference(weights, x)
        results = {name: model(x) for name, model in models.items()}
        errors = {name: (out.float() - expected).abs().max().item() for name, out in results.items()}
        passed = within(results[("ntsym", world)], expected, dtype) and within(results[("ntsym", 1)], expected, dtype)
        ok &= passed
        times = {name: time_forward(model, x, args, device) for name, model in models.items()}
        rows.append((count, times, errors, passed))
    return rows, ok


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


def report(args, world, devices, rows, log):
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


def main(argv=None):
    args = parse(argv)
    with process_group() as (rank, world, device):
        log = print if rank == 0 else (lambda *a, **k: None)
        rows, ok = run_mlp(args, rank, world, device)
        devices = [None] * world
        dist.all_gather_object(devices, describe(device))
        barrier(device)
        report(args, world, devices, rows, log)
        flags = torch.tensor([int(ok)], device=device)
        dist.all_reduce(flags, op=dist.ReduceOp.MIN)
        ok = bool(flags.item())
        log(f"\n{'all checks passed' if ok else 'SOME CHECK FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
