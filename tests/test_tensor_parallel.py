"""Tensor parallelism on ntsym kernels, on the CPU: the MLP of
examples/tensor_parallel.py (its dry run) and the Llama of examples/llm/parallel.py
(the tiny model), built, run and checked against torch, as a group of one process
and (through gloo) of two.  The GPU runs are the examples themselves."""

import os
import subprocess
import sys

import pytest
import torch

from examples import tensor_parallel as tp
from examples.llm import parallel

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_shards_sum_to_the_whole_mlp():
    weights = tp.full_weights(32, 64, seed=1)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    x = torch.randn(5, 32, device=device)
    partials = []
    for rank in range(2):
        model = tp.MLP(weights, rank, 2, device, torch.float32)
        model.world = 1  # this rank's partial sum, without the all-reduce
        partials.append(model(x.to(device)))
    expected = tp.reference(weights, x)
    tol = 2e-2 if device.type == "cuda" else 1e-4  # float32 products on a GPU go through TF32
    torch.testing.assert_close(partials[0] + partials[1], expected, atol=tol, rtol=tol)
    assert not torch.allclose(partials[0], expected, atol=1e-2)


def test_dry_run_in_one_process(capsys):
    assert tp.main(["--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "1 rank(s)" in out and "all checks passed" in out
    assert "| 24 |" in out and "| 3 |" in out  # mm and the GEMV-like tiling


@pytest.mark.slow
def test_dry_run_over_two_processes():
    """The command the two-GPU machine runs, with --dry-run, on the CPU (gloo)."""
    if torch.cuda.is_available():
        pytest.skip("two CPU processes: the GPU run is the experiment itself")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), TRITON_INTERPRET="1")
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
               "-m", "examples.tensor_parallel", "--dry-run"]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "2 rank(s)" in done.stdout and "all checks passed" in done.stdout
    assert "(32 per rank)" in done.stdout


def _two_cpu_processes(*module_args):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), TRITON_INTERPRET="1")
    env.pop("OUT", None)
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
               "-m", *module_args]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def test_llama_shards_hold_a_share_of_every_split_weight():
    from examples.llm import model as llm

    full = llm.build_model(llm.tiny_config(), torch.float32, "cpu")
    shards = [parallel.shard_model(full, rank, 2) for rank in range(2)]
    layer = full.model.layers[0]
    for name, dim in (("self_attn.q_proj", 0), ("self_attn.k_proj", 0), ("self_attn.o_proj", 1),
                      ("mlp.gate_proj", 0), ("mlp.down_proj", 1)):
        whole = layer.get_submodule(name).weight
        parts = [shard.model.layers[0].get_submodule(name).weight for shard in shards]
        assert torch.equal(torch.cat(parts, dim), whole)
    assert torch.equal(torch.cat([s.lm_head.weight for s in shards]), full.lm_head.weight)
    assert shards[1].config.num_key_value_heads == 1 and shards[1].config.head_dim == 16
    with pytest.raises(SystemExit, match="num_key_value_heads = 2 is not divisible by the world size 4"):
        parallel.shard_config(full.config, 4)


@pytest.mark.slow
def test_tiny_llama_over_two_processes_generates_torchs_tokens():
    if torch.cuda.is_available():
        pytest.skip("two CPU processes: the GPU run is the example itself")
    done = _two_cpu_processes("examples.llm.parallel", "--tiny")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "2 rank(s)" in done.stdout and "all checks passed" in done.stdout
    assert "| torch, one device | 12 |" in done.stdout
