"""Can a decode product take in the kernel before it?  The 8B Llama's decode
products (two rows, fp16) with the RMSNorm or SiLU-and-multiply before them
done inside the product, against the two kernels apart, each as the tuner
leaves it (CUDA-graph replays, `do_bench_cudagraph` medians, one process).

    python -m benchmarks.lab.decode_prologues

Three forms:
- ``prologue``: each reduction block of the activations is transformed before
  the ``dot`` (times the norm's weight, or ``silu(gate) * up``), the squares
  summed on the way for the norm (the kernels below);
- ``folded`` (norm only): the norm's weight folded into a copy of the weight,
  the block ``x`` itself fed to the ``dot`` and its squares summed beside it;
- ``apart``: ``rms_norm`` then ``linear``, or ``silu_and_mul`` then ``linear_add``.
"""

import torch

import ntsym  # noqa: I001  (without a GPU, selects the interpreter before triton loads)
import ntsym.language as ntl
import triton
from ntsym import Tensor
from examples import mm as _mm
from examples.llm import kernels


def _prologue_rms_arrangement(input, norm, other, eps, output, BLOCK_SIZE_M=kernels._GEMV_M,
                              BLOCK_SIZE_N=kernels._GEMV_N, BLOCK_SIZE_K=kernels._GEMV_K):
    input_arranged, other_arranged, output_arranged = _mm.arrangement(
        input, other, output, BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K)
    norm_arranged = norm.tile((1, BLOCK_SIZE_K)).tile((1, -1))
    norm_arranged = norm_arranged.expand((output_arranged.shape[0], output_arranged.shape[1]))
    norm_arranged.dtype = norm_arranged.dtype.squeeze(0)
    return input_arranged, norm_arranged, other_arranged, eps, output_arranged


def _prologue_rms_application(input, norm, other, eps, output):
    accumulator = ntl.zeros(output.shape, dtype=ntl.float32)
    squares = ntl.zeros((output.shape[0],), dtype=ntl.float32)
    for k in range(input.shape[0]):
        x = ntl.cast(input[k], ntl.float32)
        squares += ntl.sum(x * x, 1)
        accumulator += ntl.dot(ntl.cast(x * ntl.cast(norm[k], ntl.float32), input.source.dtype), other[k])
    output = accumulator * ntl.rsqrt(squares / input.source.shape[1] + eps)[:, None]  # noqa: F841


prologue_rms = ntsym.make(_prologue_rms_arrangement, _prologue_rms_application,
                          (Tensor(2), Tensor(shape=(1, None)), Tensor(2), Tensor(0), Tensor(2)), max_num_configs=12)


def _folded_rms_arrangement(input, other, eps, output, BLOCK_SIZE_M=kernels._GEMV_M,
                            BLOCK_SIZE_N=kernels._GEMV_N, BLOCK_SIZE_K=kernels._GEMV_K):
    input_arranged, other_arranged, output_arranged = _mm.arrangement(
        input, other, output, BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K)
    return input_arranged, other_arranged, eps, output_arranged


def _folded_rms_application(input, other, eps, output):
    accumulator = ntl.zeros(output.shape, dtype=ntl.float32)
    squares = ntl.zeros((output.shape[0],), dtype=ntl.float32)
    for k in range(input.shape[0]):
        x = input[k]
        accumulator += ntl.dot(x, other[k])
        x32 = ntl.cast(x, ntl.float32)
        squares += ntl.sum(x32 * x32, 1)
    output = accumulator * ntl.rsqrt(squares / input.source.shape[1] + eps)[:, None]  # noqa: F841


folded_rms = ntsym.make(_folded_rms_arrangement, _folded_rms_application,
                        (Tensor(2), Tensor(2), Tensor(0), Tensor(2)), max_num_configs=12)


def fold_norm(weight, norm_weight):
    """``weight`` with its columns scaled by the norm's weight, rounded once."""
    return (weight.float() * norm_weight.float()).to(weight.dtype)


def _prologue_silu_arrangement(gate, up, other, addend, output, BLOCK_SIZE_M=kernels._GEMV_M,
                               BLOCK_SIZE_N=kernels._GEMV_N, BLOCK_SIZE_K=kernels._GEMV_K):
    gate_arranged, other_arranged, output_arranged = _mm.arrangement(
        gate, other, output, BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K)
    up_arranged = _mm.arrangement(up, other, output, BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K)[0]
    return gate_arranged, up_arranged, other_arranged, addend.tile((BLOCK_SIZE_M, BLOCK_SIZE_N)), output_arranged


def _prologue_silu_application(gate, up, other, addend, output):
    accumulator = ntl.zeros(output.shape, dtype=ntl.float32)
    for k in range(gate.shape[0]):
        g = ntl.cast(gate[k], ntl.float32)
        hidden = ntl.cast(g * ntl.sigmoid(g) * ntl.cast(up[k], ntl.float32), gate.source.dtype)
        accumulator += ntl.dot(hidden, other[k])
    output = accumulator + ntl.cast(addend, ntl.float32)  # noqa: F841


prologue_silu = ntsym.make(_prologue_silu_arrangement, _prologue_silu_application,
                           (Tensor(2), Tensor(2), Tensor(2), Tensor(2), Tensor(2)), max_num_configs=12)


def _tuned(kernel):
    return "; ".join(str(c) for c in list(kernel.calls.tuned.values())[-1:])


def main():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = torch.float16 if device == "cuda" else torch.float32
    k_model, inter, qkv, rows = (4096, 14336, 6144, 2) if device == "cuda" else (64, 96, 80, 2)
    gen = torch.Generator(device).manual_seed(0)
    print(f"device {torch.cuda.get_device_name() if device == 'cuda' else 'cpu'}, torch {torch.__version__}, "
          f"triton {triton.__version__}; {dtype}, {rows} rows")
    print("\n| product | form | µs | tuned configuration | max abs error vs apart |")
    print("|---|---|---:|---|---:|")
    bench = (lambda f: triton.testing.do_bench_cudagraph(f, rep=100) * 1e3) if device == "cuda" else (
        lambda f: float("nan"))
    for label, n in (("q/k/v, RMSNorm", qkv), ("gate/up, RMSNorm", 2 * inter)):
        x = torch.randn(rows, k_model, device=device, dtype=dtype, generator=gen)
        w = torch.randn(n, k_model, device=device, dtype=dtype, generator=gen) / k_model ** 0.5
        norm_weight = 1 + 0.1 * torch.randn(k_model, device=device, dtype=dtype, generator=gen)
        folded = fold_norm(w, norm_weight)
        out = torch.empty(rows, n, device=device, dtype=dtype)
        forms = {
            "apart": lambda: kernels.linear(kernels.rms_norm(x, norm_weight, 1e-5), w),
            "folded": lambda: folded_rms(x, folded.t(), 1e-5, out, BLOCK_SIZE_M=16) or out,
            "prologue": lambda: prologue_rms(x, norm_weight.view(1, -1), w.t(), 1e-5, out, BLOCK_SIZE_M=16) or out,
        }
        reference = forms["apart"]().float()
        for form, f in forms.items():
            error = (f().float() - reference).abs().max().item()
            owner = {"apart": kernels.gemv_kernel, "folded": folded_rms, "prologue": prologue_rms}[form]
            print(f"| {label} | {form} | {bench(f):.1f} | {_tuned(owner)} | {error:.3g} |", flush=True)
    gate_up = torch.randn(rows, 2 * inter, device=device, dtype=dtype, generator=gen)
    gate, up = gate_up[:, :inter], gate_up[:, inter:]
    w = torch.randn(k_model, inter, device=device, dtype=dtype, generator=gen) / inter ** 0.5
    residual = torch.randn(rows, k_model, device=device, dtype=dtype, generator=gen)
    out = torch.empty(rows, k_model, device=device, dtype=dtype)
    forms = {
        "apart": lambda: kernels.linear_add(kernels.silu_and_mul(gate, up), w, residual),
        "prologue": lambda: prologue_silu(gate, up, w.t(), residual, out, BLOCK_SIZE_M=16) or out,
    }
    reference = forms["apart"]().float()
    for form, f in forms.items():
        error = (f().float() - reference).abs().max().item()
        owner = {"apart": kernels.gemv_add_kernel, "prologue": prologue_silu}[form]
        print(f"| down, SiLU-and-multiply | {form} | {bench(f):.1f} | {_tuned(owner)} | {error:.3g} |", flush=True)


if __name__ == "__main__":
    main()
