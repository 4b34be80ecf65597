"""The benchmark's timing loop: interleaved rounds, medians, failures (no GPU needed)."""

from benchmarks import bench
from benchmarks.tasks import TASKS


def test_rounds_interleave_implementations_and_report_medians(monkeypatch):
    import triton.testing

    times = {"a": [3.0, 1.0, 2.0], "b": [5.0, 4.0, 6.0]}
    order = []

    def fake_do_bench(fn, **kwargs):
        assert kwargs == bench.DO_BENCH
        name = fn()
        order.append(name)
        return times[name].pop(0)

    monkeypatch.setattr(triton.testing, "do_bench", fake_do_bench)
    monkeypatch.setattr(bench, "ROUNDS", 3)
    recs = [dict(impl="a", status="ok", note=""), dict(impl="b", status="ok", note="")]
    to_time = [(recs[0], lambda: "a"), (recs[1], lambda: "b")]
    bench._time_in_rounds("mm", TASKS["mm"], to_time, (), {}, 2e12, "cpu")
    assert order == ["a", "b"] * 3
    assert recs[0]["ms"] == 2.0 and recs[0]["rounds"] == [3.0, 1.0, 2.0]
    assert recs[1]["ms"] == 5.0
    assert recs[0]["throughput"] == 2e12 / 2e-3 / 1e12
    assert "same_bytes_copy_GBps" not in recs[0]  # no copy off the GPU, none for compute-bound tasks


def test_a_failing_timing_marks_only_that_implementation(monkeypatch):
    import triton.testing

    def fake_do_bench(fn, **kwargs):
        return fn()

    def broken():
        raise RuntimeError("launch failed")

    monkeypatch.setattr(triton.testing, "do_bench", fake_do_bench)
    recs = [dict(impl="a", status="ok", note=""), dict(impl="b", status="ok", note="")]
    bench._time_in_rounds("add", TASKS["add"], [(recs[0], broken), (recs[1], lambda: 1.5)], (), {}, 1e6, "cpu")
    assert recs[0]["status"] == "ERROR" and "launch failed" in recs[0]["note"] and recs[0]["ms"] is None
    assert recs[1]["status"] == "ok" and recs[1]["ms"] == 1.5


def test_unstable_rounds_are_listed_in_the_report(monkeypatch):
    import triton.testing

    times = {"a": [1.0, 1.02, 1.01], "b": [1.0, 2.0, 1.1]}

    def fake_do_bench(fn, **kwargs):
        return times[fn()].pop(0)

    monkeypatch.setattr(triton.testing, "do_bench", fake_do_bench)
    monkeypatch.setattr(bench, "ROUNDS", 3)
    recs = [dict(task="mm", shape="(8, 8)", impl=i, status="ok", note="", ms=None, unit="TFLOP/s",
                 throughput=None, fraction_of_ceiling=None, dtype="float16") for i in ("a", "b")]
    bench._time_in_rounds("mm", TASKS["mm"], [(recs[0], lambda: "a"), (recs[1], lambda: "b")], (), {}, 1e9, "cpu")
    env = dict(date="d", python="3", torch="t", triton="3", ninetoothed="n", device="cuda", gpu="G", driver="x")
    report = bench.markdown_report(env, None, recs, None, True)
    section = report.split("## Unstable timings")[1]
    assert "mm (8, 8) b: 1.0000, 2.0000, 1.1000 ms (91 %)" in section
    assert " a:" not in section
