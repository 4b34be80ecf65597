"""benchmarks/cold_start.py on the CPU: ``--quick`` pairs in a fresh process,
the table printed, every output matched against torch, cold and warm."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow  # two fresh processes: about half a minute on a CPU
def test_quick_cold_start_prints_the_table_and_matches(tmp_path):
    out = tmp_path / "cold.json"
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.cold_start", "--quick", "--limit", "2", "--impl", "ntsym,ninetoothed",
         "--warm-calls", "1", "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "| implementation | pairs | matched (cold, warm) |" in done.stdout
    assert "| add (1000) x (1000) | ok |" in done.stdout
    result = json.loads(out.read_text())
    ntsym = result["ntsym"]
    assert [p["task"] for p in ntsym["pairs"]] == ["add", "softmax"]
    assert all(p["cold_ok"] and p["warm_ok"] for p in ntsym["pairs"])
    assert all(p["load_s"] >= 0 and p["call_s"] > 0 for p in ntsym["pairs"])
    # NineToothed needs a GPU: without one it is reported as not run, which is no failure.
    nine = result["ninetoothed"]
    assert nine.get("skipped") or all(p["cold_ok"] for p in nine["pairs"])


@pytest.mark.slow  # a fresh process stopped by its budget
def test_a_budget_stops_the_run_and_keeps_the_pairs_done(tmp_path):
    out = tmp_path / "cold.json"
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.cold_start", "--quick", "--impl", "ntsym", "--budget", "1",
         "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    ntsym = json.loads(out.read_text())["ntsym"]
    assert ntsym["unfinished"] == "stopped by the 1 s budget"
    assert len(ntsym.get("pairs", ())) < 8  # the eight quick pairs take far longer than a second
    assert "stopped by the 1 s budget" in done.stdout or "before its first pair ended" in done.stdout


@pytest.mark.slow  # the tiny Llama in a fresh process: about 20 s on a CPU
def test_cold_llm_times_the_first_tokens_of_the_tiny_model():
    done = subprocess.run([sys.executable, "-m", "benchmarks.cold_llm", "--tiny", "--new-tokens", "3"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "| first token (prefill), cold |" in done.stdout
    assert "the cold and warm generations give the same tokens: yes" in done.stdout
