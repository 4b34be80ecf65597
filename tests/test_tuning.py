"""Auto-tuning: candidates, persistent choices, re-tuning, concurrency, and
the interpreter's no-benchmark default."""

import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch

import ntsym
from ntsym_codegen import tuning
from ntsym import Tensor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SCRIPT = textwrap.dedent(
    """
    import sys, torch
    sys.path.insert(0, {root!r})
    import ntsym
    from ntsym import Tensor
    from ntsym_codegen import tuning

    B = ntsym.block_size(lower_bound=16, upper_bound=64)

    def arrangement(x, y, B=B):
        return x.tile((B,)), y.tile((B,))

    def application(x, y):
        y = x * 2

    kernel = ntsym.make(arrangement, application, (Tensor(1), Tensor(1)), num_warps=4, num_stages=2)
    n = int(sys.argv[1])
    x = torch.arange(n, dtype=torch.float32)
    y = torch.empty_like(x)
    kernel(x, y)
    assert torch.equal(y, x * 2)
    print(tuning.timing.BENCHMARKS_RUN)
    """
)


def choices_file(tmp_path):
    """The tuning file of choices per call shape (beside it, the shortlists per size class)."""
    return [p for p in (tmp_path / "cache" / "tuning").glob("*.json") if not p.name.endswith(".classes.json")]


def run(tmp_path, n, _script=SCRIPT, **env):
    script = tmp_path / "tune.py"
    script.write_text(_script.format(root=ROOT))
    environment = dict(os.environ, NTSYM_CACHE_DIR=str(tmp_path / "cache"), NTSYM_TUNE_IN_INTERPRETER="1",
                       TRITON_INTERPRET="1", **env)
    out = subprocess.run([sys.executable, str(script), str(n)], capture_output=True, text=True, env=environment)
    assert out.returncode == 0, out.stderr
    return int(out.stdout.strip().splitlines()[-1]), out.stderr


def test_tuning_result_is_reused_by_a_second_process(tmp_path):
    first, _ = run(tmp_path, 100)
    assert first == 3  # B in {16, 32, 64}, one warps/stages setting
    files = choices_file(tmp_path)
    assert len(files) == 1
    (entry,) = json.loads(files[0].read_text()).values()
    assert dict(entry["meta"])["B"] in (16, 32, 64)
    second, _ = run(tmp_path, 100)
    assert second == 0  # read from disk, nothing benchmarked
    third, _ = run(tmp_path, 200)
    assert third == 3  # another shape tunes again
    assert len(json.loads(files[0].read_text())) == 2


@pytest.mark.slow
def test_a_new_shape_of_a_tuned_size_class_times_only_its_shortlist(tmp_path):
    # B in {16, ..., 1024}: seven candidates; a shortlist of five.
    shortlist = 5
    script = SCRIPT.replace("upper_bound=64", "upper_bound=1024").replace(
        "kernel = ntsym.make(", f"tuning.shortlist.SHORTLIST = {shortlist}\nkernel = ntsym.make(")
    assert script.count("upper_bound=1024") == 1 and script.count("SHORTLIST") == 1

    def tune(n, **env):
        return run(tmp_path, n, _script=script, **dict({"NTSYM_TUNE": "shortlist"}, **env))[0]

    assert tune(100) == 7  # the first shape of its class (97..128): every candidate
    (shortlists,) = (tmp_path / "cache" / "tuning").glob("*.classes.json")
    (entry,) = json.loads(shortlists.read_text()).values()
    assert len(entry["configs"]) == shortlist
    assert tune(120) == shortlist  # same class: the configurations that led the first search
    assert tune(200) == 7  # another class (193..256)
    assert tune(110, NTSYM_TUNE="full") == 7  # full: every candidate
    assert tune(100, NTSYM_RETUNE="1") == 7  # re-tuning searches in full
    assert tune(120) == 0  # stored: nothing timed
    (path,) = choices_file(tmp_path)
    stored = json.loads(path.read_text())
    assert len(stored) == 4  # 100, 120, 200, 110
    assert sum(1 for entry in stored.values() if entry.get("shortlist")) == 1  # 120's
    assert tune(120, NTSYM_TUNE="full") == 7  # full: a choice among a shortlist is searched again
    assert not any(entry.get("shortlist") for entry in json.loads(path.read_text()).values())


@pytest.mark.slow
def test_a_shortlist_that_does_not_run_falls_back_to_a_full_search(tmp_path):
    script = SCRIPT.replace("upper_bound=64", "upper_bound=1024")
    env = {"NTSYM_TUNE": "shortlist"}
    assert run(tmp_path, 100, _script=script, **env)[0] == 7
    (shortlists,) = (tmp_path / "cache" / "tuning").glob("*.classes.json")
    (key,) = json.loads(shortlists.read_text())
    # A block of 3 elements: not a candidate, so it is dropped (with a warning)
    # and the search runs every candidate.
    shortlists.write_text(json.dumps({key: {"configs": [
        {"meta": [["B", 3]], "num_warps": 4, "num_stages": 2, "persistent": False, "advance": False}]}}))
    count, err = run(tmp_path, 120, _script=script, **env)
    assert count == 7 and "not usable" in err
    (path,) = choices_file(tmp_path)
    assert not any(entry.get("shortlist") for entry in json.loads(path.read_text()).values())
    (entry,) = json.loads(shortlists.read_text()).values()
    assert len(entry["configs"]) == min(7, tuning.shortlist.SHORTLIST)  # the full search's leaders replace it


def test_size_classes():
    from ntsym_codegen.tuning.store import size_class

    assert [size_class(n) for n in (1, 2, 3, 5, 7, 9, 100, 1024, 1025, 2304, 3073)] == \
        [1, 2, 3, 6, 8, 12, 128, 1024, 1536, 3072, 4096]
    for n in range(1, 5000):
        assert n <= size_class(n) < 1.5 * n + 1


def test_compiled_sizes_stay_exact_in_a_size_class():
    from examples import sdpa

    spec = sdpa.kernel.spec
    assert tuning.shortlist.compiled_sizes(spec) == {(0, 3), (1, 3), (2, 3), (3, 3)}  # the head dimension of q, k, v, o
    q = torch.empty(1, 2, 100, 48)
    keys = {tuning.store.class_key((), False, (q,), (), tuning.shortlist.compiled_sizes(spec)),
            tuning.store.class_key((), False, (torch.empty(1, 2, 120, 48),), (), tuning.shortlist.compiled_sizes(spec))}
    assert len(keys) == 1 and "(1, 2, 128, 48)" in keys.pop()
    other = tuning.store.class_key((), False, (torch.empty(1, 2, 100, 40),), (), tuning.shortlist.compiled_sizes(spec))
    assert "(1, 2, 128, 40)" in other


def test_retune_and_print(tmp_path):
    run(tmp_path, 100)
    again, err = run(tmp_path, 100, NTSYM_RETUNE="1", NTSYM_PRINT_TUNING="1")
    assert again == 3
    assert "B=" in err and "ntsym_options={'num_warps': 4, 'num_stages': 2}" in err


@pytest.mark.slow
def test_corrupted_tuning_file_is_ignored_and_rewritten(tmp_path):
    run(tmp_path, 100)
    (path,) = choices_file(tmp_path)
    path.write_text('{"truncated": ')
    count, _ = run(tmp_path, 100, NTSYM_TUNE="full")  # not the size class's choice: a search, stored
    assert count == 3
    assert json.loads(path.read_text())


@pytest.mark.slow
def test_concurrent_writers_never_corrupt(tmp_path):
    script = tmp_path / "tune.py"
    script.write_text(SCRIPT.format(root=ROOT))
    env = dict(os.environ, NTSYM_CACHE_DIR=str(tmp_path / "cache"), NTSYM_TUNE_IN_INTERPRETER="1", TRITON_INTERPRET="1",
               NTSYM_TUNE="full")  # every process searches and stores, whatever the others stored
    procs = [subprocess.Popen([sys.executable, str(script), str(50 + 10 * i)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for i in range(4)]
    for p in procs:
        assert p.wait() == 0, p.stderr.read()
    (path,) = choices_file(tmp_path)
    assert len(json.loads(path.read_text())) == 4


def test_interpreter_takes_default_config_without_benchmarking():
    B = ntsym.block_size()

    def arrangement(x, y, B=B):
        return x.tile((B,)), y.tile((B,))

    def application(x, y):
        y = x  # noqa: F841

    kernel = ntsym.make(arrangement, application, (Tensor(1), Tensor(1)))
    import torch

    before = tuning.timing.BENCHMARKS_RUN
    x = torch.randn(100)
    y = torch.empty_like(x)
    kernel(x, y)
    if kernel.spec.interpreting:
        assert tuning.timing.BENCHMARKS_RUN == before
    assert torch.equal(x, y)


def test_candidates_respect_bounds_and_caps():
    B = ntsym.block_size(lower_bound=16, upper_bound=64)

    def arrangement(x, y, B=B):
        return x.tile((B, B)), y.tile((B, B))

    def application(x, y):
        y = x  # noqa: F841

    kernel = ntsym.make(arrangement, application, (Tensor(2), Tensor(2)), max_num_configs=4)
    configs = tuning.candidates(kernel.spec, {})
    assert 1 <= len(configs) <= 4
    assert all(16 <= dict(c.meta)["B"] <= 64 for c in configs)


def test_attention_candidates_include_square_blocks():
    """An even spread over sdpa's block shapes left out 64x64 and 128x128, the
    attention tiles; they come on top of the default budget, and an explicit
    max_num_configs still caps the list."""
    from examples import sdpa

    configs = tuning.candidates(sdpa.kernel_pow2_head.spec, {})
    shapes = {(dict(c.meta)["BLOCK_SIZE_M"], dict(c.meta)["BLOCK_SIZE_N"], c.num_warps) for c in configs}
    assert {(64, 64, 4), (128, 128, 8)} <= shapes
    assert len(configs) == tuning.DEFAULT_MAX_CONFIGS + 4
    from examples import mm

    assert tuning.space.square_candidates(mm.kernel.spec, {}) == []  # GEMM shapes hold them already
    fixed = {"BLOCK_SIZE_M": 64}
    assert tuning.space.square_candidates(sdpa.kernel_pow2_head.spec, fixed) == []  # one free size: no squares


def test_products_of_few_rows_time_skinny_tiles():
    """A product with at most 16 rows (a decode step's linear layer) reads its
    weight once and is bound by memory: its candidates are the skinny tiles
    (rows block 16, narrow columns, long reductions, deep pipelines), whether
    the caller fixed the rows block (the LLM example's GEMV) or the operand
    has few rows (the paper's mm, unchanged); more rows keep the GEMM shapes."""
    import torch

    from examples import mm
    from examples.llm import kernels

    gemv = tuning.candidates(kernels.gemv_kernel.spec, {"BLOCK_SIZE_M": 16})
    shapes = [(dict(c.meta)["BLOCK_SIZE_N"], dict(c.meta)["BLOCK_SIZE_K"], c.num_warps, c.num_stages) for c in gemv]
    assert shapes[0] == (32, 256, 4, 6) and all(n <= 64 and w == 4 for n, _, w, _ in shapes)
    assert all(dict(c.meta)["BLOCK_SIZE_M"] == 16 for c in gemv)
    two_rows = (torch.empty(2, 256, dtype=torch.float16), torch.empty(256, 512, dtype=torch.float16),
                torch.empty(2, 512, dtype=torch.float16))
    skinny = tuning.candidates(mm.kernel.spec, {}, two_rows)
    assert skinny and all(dict(c.meta)["BLOCK_SIZE_M"] == 16 for c in skinny)
    assert (32, 256) in {(dict(c.meta)["BLOCK_SIZE_N"], dict(c.meta)["BLOCK_SIZE_K"]) for c in skinny}
    # A batch of products of one row each (the paper's Linear: bmm of (B, 1, K) activations
    # with the weight expanded over the batch) is as skinny.
    from examples import bmm

    one_row_each = (torch.empty(2, 1, 256, dtype=torch.float16),
                    torch.empty(256, 512, dtype=torch.float16).expand(2, -1, -1),
                    torch.empty(2, 1, 512, dtype=torch.float16))
    assert tuning.candidates(bmm.kernel.spec, {}, one_row_each) == skinny
    many_batched = (torch.empty(2, 64, 256, dtype=torch.float16),) + one_row_each[1:]
    assert tuning.candidates(bmm.kernel.spec, {}, many_batched) == tuning.candidates(bmm.kernel.spec, {})
    many_rows = (torch.empty(64, 256, dtype=torch.float16),) + two_rows[1:]
    assert tuning.candidates(mm.kernel.spec, {}, many_rows) == tuning.candidates(mm.kernel.spec, {})
    assert tuning.space.skinny_candidates(mm.kernel.spec, {"BLOCK_SIZE_M": 64}, two_rows) == []
    # conv2d's (N, C, H, W) input has 14 rows but makes N x 12 x 12 windows: not a product of few rows.
    from examples import conv2d

    images = (torch.empty(16, 512, 14, 14, dtype=torch.float16), torch.empty(512, 512, 3, 3, dtype=torch.float16),
              torch.empty(16, 512, 12, 12, dtype=torch.float16))
    for kernel in (conv2d.kernel, conv2d.channels_last_kernel):
        assert tuning.space.skinny_candidates(kernel.spec, {}, images) == []
        assert tuning.candidates(kernel.spec, {}, images) == tuning.candidates(kernel.spec, {})
    # A product that streams a third tile (the SwiGLU product's second weight,
    # spanning the reduction and the columns) is still a product of few rows.
    assert tuning.candidates(kernels.gemv_swiglu_kernel.spec, {"BLOCK_SIZE_M": 16}) == gemv


def test_a_product_is_recognised_by_its_two_operands_tiles():
    """(rows, reduction) and (reduction, columns) tiles make a product whatever
    their order; a third tile of more levels must span the blocks of one
    operand or of the output (an output in pairs of tiles)."""
    from types import SimpleNamespace

    def spec(*tiles):
        return SimpleNamespace(streamed_tiles=tuple((i, None, (), dims) for i, dims in enumerate(tiles)))

    free = [SimpleNamespace(symbol=SimpleNamespace(name=n)) for n in ("M", "N", "K")]
    a, b = (("M",), ("K",)), (("K",), ("N",))
    roles = tuning.space.gemm_roles
    assert roles(spec(a, b), free) == ("M", "N", "K")
    assert roles(spec(b, a), free) == ("M", "N", "K")
    assert roles(spec(a, ((), ("K",)), b), free) == ("M", "N", "K")
    assert tuning.space.gemm_operands(spec(((), ("K",)), a, b), free) == (1, 2)
    assert roles(spec(a, b, (("M",), ("N",))), free) == ("M", "N", "K")  # the output's blocks
    assert roles(spec(a, b, (("M",), ("N", "K"))), free) is None  # all three: neither operand's nor the output's
    assert roles(spec(a, (("N",), ("K",))), free) is None


class _RecordingKernel:
    """Stands in for a JIT function: records each warmup, fails on one config."""

    def __init__(self, fail_on):
        import threading

        self.calls, self.threads, self.fail_on = [], set(), fail_on
        self._lock = threading.Lock()

    def warmup(self, *args, grid, **kwargs):
        import threading

        with self._lock:
            self.calls.append((args, grid, kwargs["B"], kwargs["num_warps"]))
            self.threads.add(threading.current_thread().name)
        if kwargs["B"] == self.fail_on:
            raise RuntimeError("out of resources")


def _compile_ahead_setup():
    from types import SimpleNamespace

    spec = SimpleNamespace(name="k", interpreting=False, int64_flag="NTSYM_INT64", advance_flag=None)
    configs = [tuning.Config((("B", b),), w, 2) for b in (16, 32, 64) for w in (4, 8)]
    return spec, configs, (lambda meta: (100 // meta["B"],))


def _parts(kernel, spec, grid, args):
    return lambda config: (kernel, config.grid(grid), args, config.kwargs({}, False, spec))


def test_compile_ahead_warms_every_candidate_in_threads(monkeypatch):
    spec, configs, grid = _compile_ahead_setup()
    kernel = _RecordingKernel(fail_on=32)
    monkeypatch.setenv("NTSYM_COMPILE_THREADS", "3")
    threads = tuning.compile_ahead(_parts(kernel, spec, grid, ("x", "y")), spec, configs, ())
    assert threads == 3
    # every config once, a failing one included (the timing loop skips it later)
    assert sorted((b, w) for _, _, b, w in kernel.calls) == sorted((dict(c.meta)["B"], c.num_warps) for c in configs)
    assert all(args == ("x", "y") and g == (100 // b,) for args, g, b, _ in kernel.calls)
    assert any(name.startswith("ntsym-compile") for name in kernel.threads)


def test_compile_ahead_off_with_one_thread_and_in_the_interpreter(monkeypatch):
    spec, configs, grid = _compile_ahead_setup()
    kernel = _RecordingKernel(fail_on=None)
    monkeypatch.setenv("NTSYM_COMPILE_THREADS", "1")
    assert tuning.compile_ahead(_parts(kernel, spec, grid, ()), spec, configs, ()) == 0
    monkeypatch.setenv("NTSYM_COMPILE_THREADS", "4")
    spec.interpreting = True
    assert tuning.compile_ahead(_parts(kernel, spec, grid, ()), spec, configs, ()) == 0
    assert kernel.calls == []


def test_loop_free_kernels_tune_warps_not_stages():
    B = ntsym.block_size(lower_bound=64, upper_bound=1024)

    def arrangement(x, y, B=B):
        return x.tile((B,)), y.tile((B,))

    def application(x, y):
        y = x  # noqa: F841

    kernel = ntsym.make(arrangement, application, (Tensor(1), Tensor(1)))
    assert kernel.spec.loops is False
    configs = tuning.candidates(kernel.spec, {})
    assert {c.num_stages for c in configs} == {3}
    for b in (64, 128, 256, 512, 1024):
        assert {c.num_warps for c in configs if dict(c.meta)["B"] == b} == {4, 8}


def test_kernels_with_a_loop_tune_stages():
    B = ntsym.block_size(lower_bound=16, upper_bound=64)

    def arrangement(x, y, B=B):
        return x.tile((1, B)).tile((1, -1)).squeeze(1), y.tile((1, B)).tile((1, -1)).squeeze(1)

    def application(x, y):
        for k in range(x.shape[1]):
            y[0, k] = x[0, k] * 2

    kernel = ntsym.make(arrangement, application, (Tensor(2), Tensor(2)))
    assert kernel.spec.loops is True
    configs = tuning.candidates(kernel.spec, {})
    assert {c.num_stages for c in configs} == {3, 4}


def test_near_ties_are_timed_again_and_the_lowest_median_wins(monkeypatch):
    from types import SimpleNamespace

    spec = SimpleNamespace(name="k", interpreting=False)
    a, b, c, d = (tuning.Config((("B", v),)) for v in (16, 32, 64, 128))
    # second timings: b is the fastest though a was first in the single short timing
    again = {a: [1.03, 1.04, 1.02], b: [0.99, 1.00, 0.98], c: [1.2, 1.2, 1.2]}
    calls = []

    def fake_time(spec, fn, rep=20, warmup=5):
        config = fn()
        calls.append((config, (warmup, rep)))
        return again[config].pop(0)

    monkeypatch.setattr(tuning.timing, "time_ms", fake_time)
    timed = [(1.00, a), (1.02, b), (1.04, c), (1.50, d)]  # d is not within 15 % of the best
    ranked, ms = tuning.timing.rank(spec, timed, lambda config: (lambda: config))
    # the leaders by their medians (b 0.99, a 1.03, c 1.2), then the rest by the short timing
    assert ranked == [b, a, c, d] and ms == 0.99
    assert [cfg for cfg, _ in calls] == [a, b, c] * 3  # interleaved rounds, leaders only
    # timed long, after a warm-up as long as a steady run's
    assert all(length == (tuning.timing.RETIME_WARMUP, tuning.timing.RETIME_REP) == (25, 100) for _, length in calls)
    # a clear winner is not timed again
    calls.clear()
    assert tuning.timing.rank(spec, [(2.0, b), (1.0, a)], lambda config: (lambda: config)) == ([a, b], 1.0)
    assert calls == []


def test_when_no_configuration_runs_the_first_failure_is_named(monkeypatch):
    from examples import mm

    def fail(spec, fn, rep=20):
        raise RuntimeError("out of shared memory, say")

    monkeypatch.setattr(tuning.timing, "time_ms", fail)
    a, b = torch.randn(20, 20), torch.randn(20, 20)
    with pytest.raises(ntsym.LaunchError, match=r"(?s)no configuration could be compiled and run; with BLOCK_SIZE_K=.*"
                                                r"RuntimeError: out of shared memory, say"):
        tuning.timing.benchmark(None, mm.kernel.spec, lambda meta: (1,), (), {}, (a, b, torch.empty(20, 20)), False, {})


def _doubling_tuned_in_interpreter(monkeypatch, tmp_path):
    """``y = x * 2`` with a tuned block size, tuned in the interpreter with a
    timer that runs each candidate once; and the list of the runs timed."""
    monkeypatch.setenv("NTSYM_TUNE_IN_INTERPRETER", "1")
    monkeypatch.setenv("NTSYM_CACHE_DIR", str(tmp_path))
    runs = []

    def fake_time(spec, fn, rep=20):
        fn()
        runs.append(fn)
        return 1.0

    monkeypatch.setattr(tuning.timing, "time_ms", fake_time)
    B = ntsym.block_size(lower_bound=16, upper_bound=64)

    def application(x, y):
        y = x * 2  # noqa: F841

    return ntsym.make(lambda x, y, B=B: (x.tile((B,)), y.tile((B,))), application, (Tensor(1), Tensor(1))), runs


def test_a_tuned_first_call_bumps_the_written_version_once(monkeypatch, tmp_path):
    """Timing overwrites the written tensors and puts them back; only the
    call's own write counts, as one in-place operation's does."""
    kernel, runs = _doubling_tuned_in_interpreter(monkeypatch, tmp_path)
    x = torch.arange(100, dtype=torch.float32)
    y = torch.zeros(120)[:100]  # a view: the counter is its base's
    kernel(x, y)
    assert len(runs) > 1  # tuned: the kernel wrote y several times
    assert torch.equal(y, x * 2) and y._version == 1
    kernel(x, y)
    assert y._version == 2


def test_launch_options_fix_warps_and_stages_while_block_sizes_are_tuned(monkeypatch, tmp_path):
    """``num_warps=``/``num_stages=`` (as Triton users type them) or the same
    in ``ntsym_options``: the tuner times only configurations with them."""
    kernel, _ = _doubling_tuned_in_interpreter(monkeypatch, tmp_path)
    timed = []
    original = tuning.timing.time_all

    def spy(spec, configs, *args, **kwargs):
        timed.extend(configs)
        return original(spec, configs, *args, **kwargs)

    monkeypatch.setattr(tuning.timing, "time_all", spy)
    x = torch.arange(100, dtype=torch.float32)
    y = torch.empty_like(x)
    kernel(x, y, num_warps=2, num_stages=1)
    assert torch.equal(y, x * 2)
    assert timed and {(c.num_warps, c.num_stages) for c in timed} == {(2, 1)}
    assert len({c.meta for c in timed}) > 1  # the block size is still tuned
    timed.clear()
    kernel(x, y, ntsym_options={"num_warps": 8})
    assert timed and {c.num_warps for c in timed} == {8}
    with pytest.raises(ntsym.LaunchError, match="num_warps must be 1, 2, 4, 8, 16 or 32, got 3"):
        kernel(x, y, num_warps=3)



def _triple(x, y):
    y = x * 3  # noqa: F841


def test_print_tuning_on_cpu_and_the_choice_in_explain(monkeypatch, capsys):
    monkeypatch.setenv("NTSYM_PRINT_TUNING", "1")
    B = ntsym.block_size(lower_bound=16, upper_bound=64)
    kernel = ntsym.make(lambda x, y, B=B: (x.tile((B,)), y.tile((B,))), _triple, (Tensor(1), Tensor(1)))
    assert "chosen" not in kernel.explain()
    x = torch.arange(50, dtype=torch.float32)
    kernel(x, torch.empty_like(x))
    err = capsys.readouterr().err
    assert "ntsym: _triple for (50,) float32, (50,) float32: B=" in err and "ntsym_options={'num_warps'" in err
    assert "chosen    B=" in kernel.explain()


def test_long_tuning_shows_progress_on_stderr(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("NTSYM_TUNE_IN_INTERPRETER", "1")
    monkeypatch.setenv("NTSYM_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("NTSYM_TUNING_PROGRESS", "1")
    monkeypatch.setattr(tuning.timing, "PROGRESS_AFTER", 0.0)
    monkeypatch.setattr(tuning.timing, "time_ms", lambda spec, fn, rep=20: (fn(), 1.0)[1])
    B = ntsym.block_size(lower_bound=16, upper_bound=64)
    kernel = ntsym.make(lambda x, y, B=B: (x.tile((B,)), y.tile((B,))), _triple, (Tensor(1), Tensor(1)))
    x = torch.arange(50, dtype=torch.float32)
    kernel(x, torch.empty_like(x))
    err = capsys.readouterr().err
    assert "ntsym: tuning _triple:" in err and "configs, best so far" in err and err.endswith("\n")
    monkeypatch.setenv("NTSYM_TUNING_PROGRESS", "0")
    x = torch.arange(60, dtype=torch.float32)
    kernel(x, torch.empty_like(x))  # another shape tunes again, silently
    assert "tuning" not in capsys.readouterr().err


def test_one_byte_operands_get_reduction_tiles_twice_as_long():
    """fp8 GEMMs: the same GEMM block shapes with K doubled (the bytes of a 2-byte tile)."""
    from examples import fp8_mm, mm

    def shapes(kernel, *tensors):
        return {(d["BLOCK_SIZE_M"], d["BLOCK_SIZE_N"], d["BLOCK_SIZE_K"])
                for d in (dict(c.meta) for c in tuning.candidates(kernel.spec, {}, tensors))}

    half = [torch.empty(64, 64, dtype=torch.float16) for _ in range(3)]
    fp8 = [torch.empty(64, 64, dtype=torch.float8_e4m3fn) for _ in range(2)]
    scale = torch.empty(1, 1)
    plain = shapes(mm.kernel, *half)
    assert (128, 128, 64) in plain and (128, 128, 128) not in plain
    assert shapes(fp8_mm.kernel, *fp8, scale, scale, half[0]) == {(m, n, 2 * k) for m, n, k in plain}
    # One 1-byte operand only: the 2-byte shapes.
    assert shapes(fp8_mm.kernel, fp8[0], half[1], scale, scale, half[0]) == plain


def test_each_constexpr_value_is_tuned_and_remembered_on_its_own(monkeypatch):
    """A flag given as a constexpr selects another compiled kernel (causal
    attention visits fewer key blocks): the call of the same shapes with the
    other value is neither served by the first call's remembered launch nor by
    its tuned configuration."""
    monkeypatch.setenv("NTSYM_TUNE_IN_INTERPRETER", "1")
    monkeypatch.setenv("NTSYM_RETUNE", "1")
    B = ntsym.block_size()

    def arrangement(x, flag, y, B=B):
        return x.tile((B,)), flag, y.tile((B,))

    def application(x, flag, y):
        if flag:
            y = x * 2  # noqa: F841
        else:
            y = x + 1  # noqa: F841

    kernel = ntsym.make(arrangement, application, (Tensor(1), Tensor(0, constexpr=True), Tensor(1)))
    x = torch.randn(100)
    y = torch.empty_like(x)
    for flag, expected in ((False, x + 1), (True, x * 2), (False, x + 1), (True, x * 2)):
        kernel(x, flag, y)
        torch.testing.assert_close(y, expected)
    assert len(kernel.calls.calls) == 2
    assert len(kernel.calls.tuned) == 2
    assert {key[3] for key in kernel.calls.tuned} == {(False,), (True,)}


def test_config_has_one_field_per_launch_option_and_entries_round_trip():
    import dataclasses

    from ntsym_codegen import options
    from ntsym_codegen.tuning import stored

    assert [f.name for f in dataclasses.fields(tuning.Config)] == ["meta", *options.NAMES]
    assert all(getattr(tuning.Config(()), o.name) == o.default for o in options.OPTIONS)
    config = tuning.Config((("B", 32),), 8, 2, True, True)
    assert stored.config_from_entry(stored.entry_from_config(config)) == config
    assert stored.config_from_entry({"meta": [["B", 32]], "num_warps": 8, "num_stages": 2}) == tuning.Config((("B", 32),), 8, 2)


def test_options_a_call_fixes_key_its_stored_choice_apart():
    from ntsym_codegen import options

    assert options.tuning_key({}) == options.tuning_key({"persistent": None}) == ""
    fixed = {"num_warps": 8, "num_stages": 2, "persistent": False, "advance": True}
    assert options.tuning_key(fixed) == "|plain|advance|num_stages=2|num_warps=8"
    with pytest.raises(ntsym.LaunchError, match=r"ntsym_options\['advance'\] must be True or False, got 1"):
        options.validate("k", {"advance": 1})
    with pytest.raises(ntsym.LaunchError, match="num_stages must be an int from 1 to 8, got True"):
        options.validate("k", {"num_stages": True})


def test_a_tile_of_a_block_size_expression_is_tuned():
    """A tile ``BLOCK // 4`` of a tuned block size: the arrangement is proved
    over the block's range (not at a block of 1, where the tile is empty) and
    the launcher pads that tile from the configuration it launches."""
    import ntsym.language as ntl

    def arrangement(x, sums, BLOCK_SIZE=ntsym.block_size(lower_bound=16, upper_bound=64)):
        return x.tile((BLOCK_SIZE,)), sums.tile((BLOCK_SIZE // 4,))

    def application(x, sums):
        sums = ntl.sum(ntl.reshape(x, (x.shape[0] // 4, 4)), 1)  # noqa: F841

    kernel = ntsym.make(arrangement, application, (Tensor(1), Tensor(1)))
    x = torch.randn(96)
    sums = torch.empty(24)
    kernel(x, sums)
    torch.testing.assert_close(sums, x.view(24, 4).sum(1))
    # Fewer tiles of ``sums`` than programs: the programs past them write none.
    fewer = torch.empty(12)
    kernel(x, fewer)
    torch.testing.assert_close(fewer, x[:48].view(12, 4).sum(1))
    # More: no program would write the extra tiles, refused.
    with pytest.raises(Exception, match="sums"):
        kernel(x, torch.empty(48))
