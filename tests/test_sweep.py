"""The size sweeps (benchmarks/sweep.py): a run through the interpreter, and the goals
and tables computed from timed records (no GPU needed)."""

import json

import pytest

from benchmarks import sweep


def test_cpu_smoke_sweep_checks_each_point_and_writes_the_report(tmp_path):
    assert sweep.main(["--cpu-smoke", "--tasks", "add", "--sizes", "300,1000", "--out", str(tmp_path)]) == 0
    raw = json.loads((tmp_path / "sweep_add_float32.json").read_text())
    records = raw["results"]["add"]
    assert [(r["x"], r["impl"], r["status"]) for r in records] == [
        (x, impl, "ok") for x in (300, 1000) for impl in sweep.DEFAULT_IMPLS
    ]
    text = (tmp_path / "sweep_add_float32.md").read_text()
    assert "| 300 | ok | ok | ok |" in text and "| 1000 | ok | ok | ok |" in text


def test_points_of_keeps_the_largest_point():
    args = sweep.parse_args(["--tasks", "mm", "--every", "4"])
    assert sweep.points_of(args, "mm") == [8, 128, 2048, 4096]
    args = sweep.parse_args(["--tasks", "addmm", "--cpu-smoke"])
    assert sweep.points_of(args, "addmm") == [256]


def _records(task, rows, unit="TFLOP/s"):
    """Timed records: rows of (x, {impl: ms})."""
    out = []
    for x, times in rows:
        for impl, ms in times.items():
            out.append(dict(task=task, x=x, shape=str(x), impl=impl, status="ok", note="", ms=ms, unit=unit,
                            throughput=1.0 / ms, dtype="float16"))
    return out


def test_goals_start_where_the_gpu_is_busy():
    records = _records("mm", [
        (8, dict(ntsym=0.010, triton=0.008, torch=0.009)),  # launch-bound, slower than torch: a miss
        (512, dict(ntsym=0.030, triton=0.031, torch=0.029)),  # busy from here
        (1024, dict(ntsym=0.100, triton=0.090, torch=0.100)),  # slower than triton: a miss
        (2048, dict(ntsym=0.700, triton=0.800, torch=0.600)),  # under 95 % of cuBLAS: a miss
    ])
    summary, misses = sweep.goals("mm", records)
    assert summary["threshold"] == 512 and summary["points_busy"] == 3
    assert summary["geomean_busy"] == pytest.approx((30 / 31 * 100 / 90 * 700 / 800) ** (1 / 3))
    assert misses == [
        "mm 8: launch-bound, ntsym/torch 1.111 (> 1.00)",
        "mm 1024: ntsym/triton 1.111 (> 1.00)",
        "mm 2048: 85.7 % of cuBLAS (< 95 %)",
        f"mm: geometric mean of ntsym/triton from 512 up {summary['geomean_busy']:.3f} (> 0.95)",
    ]


def test_a_point_that_fails_is_listed_and_the_tables_say_why():
    records = _records("add", [(100, dict(ntsym=0.05, triton=0.05, torch=0.04))], unit="GB/s")
    records[0].update(status="WRONG", ms=None, throughput=None, note="max abs error 1")
    summary, misses = sweep.goals("add", records)
    assert misses == ["add 100: ntsym WRONG"]
    env = dict(date="d", python="3", torch="t", triton="3", device="cuda", gpu="G", driver="x")
    text, listed = sweep.markdown(env, "float16", {"add": records}, True, {"add": {"ntsym": "1.0 s"}})
    assert listed == misses
    assert "| 100 | WRONG | 0.0500 | 0.0400 |" in text
    assert "- add 100 ntsym WRONG: max abs error 1" in text
    assert "| add | 100 | 0 |" in text  # busy from 100, no point of ntsym timed and "ntsym 1.0 s" in text


def test_a_spent_budget_stops_before_the_next_point_and_reports_what_ran(tmp_path):
    status = sweep.main(["--cpu-smoke", "--tasks", "add", "--sizes", "300,1000", "--budget", "1e-9",
                         "--out", str(tmp_path)])
    assert status == 3
    raw = json.loads((tmp_path / "sweep_add_float32.json").read_text())
    assert raw["results"]["add"] == []  # the budget was spent before the first point


def test_plots_drawn_from_a_written_sweep(tmp_path):
    pytest.importorskip("matplotlib")
    records = _records("softmax", [(32, dict(ntsym=0.01, triton=0.012, torch=0.02)),
                                   (64, dict(ntsym=0.03, triton=0.03, torch=0.05))], unit="GB/s")
    (tmp_path / "sweep_softmax_float16.json").write_text(json.dumps(dict(dtype="float16", results={"softmax": records})))
    assert sweep.main(["--plot-from", str(tmp_path / "sweep_softmax_float16.json")]) == 0
    assert (tmp_path / "sweep_softmax_float16.png").stat().st_size > 0


def test_host_bound_points_are_listed():
    """A point whose call costs the host at least its measured time is listed:
    calls made one by one wait for the host there, and do_bench's reading may
    be the host's (conv2d at batch 2 read 0.022 ms in one process and 0.058 ms
    in another with the same kernels, while its calls cost the host 0.053-0.121 ms)."""
    records = _records("conv2d", [(2, dict(ntsym=0.022, torch=0.036)), (64, dict(ntsym=0.11, torch=0.12))])
    for r in records:
        r["host_ms"] = {(2, "ntsym"): 0.057, (2, "torch"): 0.012}.get((r["x"], r["impl"]), 0.06)
    assert [(r["x"], r["impl"]) for r in sweep.bench.host_bound(records)] == [(2, "ntsym")]
    env = dict(date="d", python="3", torch="t", triton="3", device="cuda", gpu="G", driver="x")
    text, _ = sweep.markdown(env, "float16", {"conv2d": records}, True, {})
    assert "## Host-bound points" in text and "- conv2d 2 ntsym: host 0.0570 ms, measured 0.0220 ms" in text
    assert "conv2d 64" not in text.split("## Host-bound points")[1]
    del records[0]["host_ms"]  # not measured (the interpreter): not listed
    assert sweep.bench.host_bound(records) == []
