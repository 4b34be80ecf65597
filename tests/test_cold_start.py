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
