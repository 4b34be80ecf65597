"""benchmarks/experiments/tensor_parallel.py's dry run: the tensor-parallel MLP on
ntsym kernels, built, run and checked against torch, as a group of one process
and (on the CPU, through gloo) of two."""

import os
import subprocess
import sys

import pytest
import torch

from benchmarks.experiments import tensor_parallel as tp

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_shards_sum_to_the_whole_mlp():
    weights = tp.full_weights(32, 64, seed=1)
    x = torch.randn(5, 32)
    device = torch.device("cpu")
    partials = []
    for rank in range(2):
        model = tp.MLP(weights, rank, 2, device, torch.float32)
        model.world = 1  # this rank's partial sum, without the all-reduce
        partials.append(model(x.to(device)))
    expected = tp.reference(weights, x)
    torch.testing.assert_close(partials[0] + partials[1], expected, atol=1e-4, rtol=1e-4)
    assert not torch.allclose(partials[0], expected, atol=1e-2)


def test_dry_run_in_one_process(capsys):
    assert tp.main(["--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "1 rank(s)" in out and "all checks passed" in out
    assert "| 24 |" in out and "| 3 |" in out  # mm and the GEMV-like tiling


def test_dry_run_over_two_processes():
    """The command the two-GPU machine runs, with --dry-run, on the CPU (gloo)."""
    if torch.cuda.is_available():
        pytest.skip("two CPU processes: the GPU run is the experiment itself")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), TRITON_INTERPRET="1")
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
               "-m", "benchmarks.experiments.tensor_parallel", "--dry-run"]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "2 rank(s)" in done.stdout and "all checks passed" in done.stdout
    assert "(32 per rank)" in done.stdout
