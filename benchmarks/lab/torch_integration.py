"""ntsym kernels inside PyTorch programs, on a GPU, in one process:

1. host µs per launch of a small add: plain ``@triton.jit``, the ntsym kernel
   (tuned, outputs given), the registered functional op (allocating), and
   ``torch.add(out=)``;
2. 100 small launches eagerly against one replay of a CUDA graph that captured
   them (after warm-up), with the replayed result checked against new inputs;
3. a module of three ops (mm, add, softmax) eager against
   ``torch.compile(fullgraph=True)`` of the ``triton_op`` form (Inductor
   launches the kernels) and of the ``custom_op`` form (opaque calls), and
   ``mode="reduce-overhead"``, each checked equal.

    python -m benchmarks.lab.torch_integration
"""

import statistics
import time

import torch

import ntsym  # before triton: it picks the interpreter where there is no GPU
import triton  # noqa: I001
from benchmarks.overhead import add_parts, host_us_per_call, plain_add_kernel
from examples import add, mm, softmax


def launch_costs():
    import os

    kernel = ntsym.make(*add_parts())
    op = ntsym.library.op("bench::add", kernel)  # torch.library.triton_op on a GPU
    os.environ["NTSYM_TRITON_OP"] = "0"
    try:
        opaque = ntsym.library.op("bench::add_opaque", kernel)  # torch.library.custom_op
    finally:
        del os.environ["NTSYM_TRITON_OP"]

    @torch.library.custom_op("bench::nothing", mutates_args=("x",))
    def nothing(x: torch.Tensor) -> None:
        pass  # PyTorch's dispatch of a Python-defined operator, and nothing else
    x, y = torch.randn(1024, device="cuda"), torch.randn(1024, device="cuda")
    z = torch.empty_like(x)
    kernel(x, y, z)  # tunes
    fns = {
        "plain @triton.jit": lambda: plain_add_kernel[(1,)](x, y, z, 1024, BLOCK=1024),
        "ntsym kernel (tuned)": lambda: kernel(x, y, z),
        "ntsym op (allocates), triton_op": lambda: op(x, y),
        "ntsym op (allocates), custom_op": lambda: opaque(x, y),
        "a custom_op that does nothing": lambda: nothing(x),
        "torch.add(out=)": lambda: torch.add(x, y, out=z),
    }
    samples = host_us_per_call(fns, calls=500, rounds=11)
    print("\n| launch of a 1024-element add | host µs (median of 11 rounds of 500) |")
    print("|---|---:|")
    for name, values in samples.items():
        print(f"| {name} | {statistics.median(values):.2f} |")


def graphs():
    kernel = add.kernel
    xs = [torch.randn(4096, device="cuda") for _ in range(100)]
    ys = [torch.randn(4096, device="cuda") for _ in range(100)]
    zs = [torch.empty(4096, device="cuda") for _ in range(100)]

    def run():
        for x, y, z in zip(xs, ys, zs):
            kernel(x, y, z)

    run()  # warm up: tune and validate every call shape outside the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        run()
    for x in xs:
        x.normal_()
    graph.replay()
    torch.cuda.synchronize()
    assert all(torch.allclose(z, x + y) for x, y, z in zip(xs, ys, zs)), "replay gave a stale result"
    eager = triton.testing.do_bench(run, warmup=10, rep=200, return_mode="median")
    replay = triton.testing.do_bench(graph.replay, warmup=10, rep=200, return_mode="median")
    print("\n| 100 launches of a 4096-element add | ms (do_bench median) |")
    print("|---|---:|")
    print(f"| eager | {eager:.4f} |")
    print(f"| CUDA graph replay | {replay:.4f} |")


class Block(torch.nn.Module):
    def __init__(self, mm_op, add_op, softmax_op):
        super().__init__()
        self.mm_op, self.add_op, self.softmax_op = mm_op, add_op, softmax_op

    def forward(self, x, w, b):
        return self.softmax_op(self.add_op(self.mm_op(x, w).flatten(), b).view(x.shape[0], w.shape[1]))


def _block(suffix):
    return Block(
        ntsym.library.op(f"bench::mm{suffix}", mm.kernel),
        ntsym.library.op(f"bench::add_flat{suffix}", add.kernel),
        ntsym.library.op(f"bench::softmax{suffix}", softmax.kernel, shapes={"output": "input"}),
    )


def compiled():
    import os

    model = _block("")  # torch.library.triton_op on a GPU
    os.environ["NTSYM_TRITON_OP"] = "0"
    try:
        opaque = _block("_opaque")  # torch.library.custom_op
    finally:
        del os.environ["NTSYM_TRITON_OP"]
    x = torch.randn(256, 512, device="cuda", dtype=torch.float16)
    w = torch.randn(512, 256, device="cuda", dtype=torch.float16)
    b = torch.randn(256 * 256, device="cuda", dtype=torch.float16)
    eager = model(x, w, b)  # tunes
    opaque(x, w, b)
    rows = [("eager (ntsym launcher)", model)]
    for name, m, mode in (
        ("torch.compile(fullgraph=True), triton_op", model, None),
        ("torch.compile(fullgraph=True), custom_op", opaque, None),
        ("torch.compile(mode='reduce-overhead'), triton_op", model, "reduce-overhead"),
    ):
        torch._dynamo.reset()
        fast = torch.compile(m, fullgraph=True, mode=mode)
        torch.testing.assert_close(fast(x, w, b), eager, rtol=1e-3, atol=1e-3)
        rows.append((name, fast))
    print("\n| mm + add + softmax module (256x512 @ 512x256, fp16) | ms (do_bench median) |")
    print("|---|---:|")
    for name, fn in rows:
        t = triton.testing.do_bench(lambda: fn(x, w, b), warmup=25, rep=200, return_mode="median")
        print(f"| {name} | {t:.4f} |")


def main():
    print(f"device {torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}")
    start = time.perf_counter()
    launch_costs()
    graphs()
    compiled()
    print(f"\n({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
