"""The cost of a new call shape: the counters (``Kernel.stats``,
``ntsym.stats()``), one kernel variant per set of compile-time values, and
tuning bounded to one search per size class (a mocked timer stands in for a
GPU's: the interpreter's timings say nothing)."""

import pytest
import torch

import ntsym
import ntsym.language as ntl
from ntsym import Tensor
from ntsym_codegen import tuning


def softmax_arrangement(input, output):
    return input.tile((1, -1)), output.tile((1, -1))


def softmax_application(input, output):
    numerator = ntl.exp(input - ntl.max(input))
    output = numerator / ntl.sum(numerator)  # noqa: F841


def softmax_kernel(constexpr_rows, **make_options):
    rows = (None, {"constexpr": True, "upper_bound": 128}) if constexpr_rows else None
    options = {"shape_options": rows} if rows else {}
    return ntsym.make(softmax_arrangement, softmax_application,
                      (Tensor(2, other=float("-inf"), **options), Tensor(2, **options)), **make_options)


def run_softmax(kernel, n):
    # num_warps fixed: on a GPU a kernel with nothing but its warps to tune
    # times them once per size class, which would add variants of its own.
    x = torch.randn(2, n)
    y = torch.empty_like(x)
    kernel(x, y, num_warps=4)
    torch.testing.assert_close(y, torch.softmax(x, -1))


def test_a_row_length_sweep_builds_one_variant_per_divisibility_by_16():
    # The row is one tile, padded to 64 for every length of 33..63: the
    # length stays a runtime argument, so the variants differ only in what
    # Triton specializes integers on (48 is a multiple of 16, the rest not).
    kernel = softmax_kernel(constexpr_rows=False)
    for n in (n for n in range(33, 64) if n != 48):
        run_softmax(kernel, n)
    assert kernel.stats.compiles == 1
    assert kernel.stats.launches == 30
    run_softmax(kernel, 48)
    assert kernel.stats.compiles == 2
    run_softmax(kernel, 40)  # a length seen before: its call shape is remembered
    assert kernel.stats.compiles == 2 and kernel.stats.launches == 32
    run_softmax(kernel, 65)  # a tile of 128: another padded block
    assert kernel.stats.compiles == 3


def test_a_constexpr_row_builds_one_variant_per_length():
    kernel = softmax_kernel(constexpr_rows=True)
    for n in (33, 34, 35, 34):
        run_softmax(kernel, n)
    assert kernel.stats.compiles == 3 and kernel.stats.launches == 4


def test_scalar_arguments_count_the_variants_they_make():
    def arrangement(x, s, y, B=ntsym.block_size()):
        return x.tile((B,)), s, y.tile((B,))

    def application(x, s, y):
        y = x * s  # noqa: F841

    # Warps and block fixed: on a GPU a search would build its candidates too.
    kernel = ntsym.make(arrangement, application, (Tensor(1), Tensor(0), Tensor(1)), num_warps=4)
    x = torch.randn(20)
    y = torch.empty_like(x)
    for s, variants in ((3, 1), (5, 1), (16, 2), (1, 3), (7, 3)):
        kernel(x, s, y, B=32)
        torch.testing.assert_close(y, x * s)
        assert kernel.stats.compiles == variants, s


def test_process_totals_and_reset():
    kernel = softmax_kernel(constexpr_rows=False)
    before = ntsym.stats()
    run_softmax(kernel, 33)
    run_softmax(kernel, 33)
    assert ntsym.stats() - before == ntsym.Stats(compiles=1, launches=2)
    assert kernel.stats.as_dict() == {"compiles": 1, "tunes": 0, "candidates_timed": 0, "launches": 2,
                                       "shortlists": 0}
    kernel.reset_stats()
    assert kernel.stats == ntsym.Stats()
    ntsym.reset_stats()
    assert ntsym.stats() == ntsym.Stats()
    run_softmax(kernel, 34)  # after a reset, a variant counts as it would in a new process
    assert ntsym.stats() == kernel.stats == ntsym.Stats(compiles=1, launches=1)


def doubling_kernel():
    B = ntsym.block_size(lower_bound=16, upper_bound=64)

    def arrangement(x, y, B=B):
        return x.tile((B,)), y.tile((B,))

    def application(x, y):
        y = x * 2  # noqa: F841

    return ntsym.make(arrangement, application, (Tensor(1), Tensor(1)), num_warps=4, num_stages=2)


@pytest.fixture
def mocked_timer(monkeypatch, tmp_path):
    """Tuning in the interpreter, every configuration timed by a fake clock
    (nothing runs), tuning files in a fresh cache."""
    monkeypatch.setenv("NTSYM_TUNE_IN_INTERPRETER", "1")
    monkeypatch.setenv("NTSYM_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("NTSYM_TUNE", raising=False)
    monkeypatch.delenv("NTSYM_RETUNE", raising=False)
    timed = []

    def fake_time(spec, fn, rep=20, warmup=5):
        timed.append(fn)
        return 1.0 + 0.1 * len(timed) % 0.3

    monkeypatch.setattr(tuning.timing, "time_ms", fake_time)
    return timed


def run_doubling(kernel, n):
    x = torch.arange(n, dtype=torch.float32)
    y = torch.empty_like(x)
    kernel(x, y)
    assert torch.equal(y, x * 2)


@pytest.mark.skipif(torch.cuda.is_available(), reason="the interpreter's tuning, with a mocked timer")
def test_many_shapes_search_once_per_size_class(mocked_timer):
    # The default: a full search per size class; other shapes of a class time
    # the class's shortlist (here all 3 candidates, B in {16, 32, 64}) until
    # two timings agree (at most SETTLE_AFTER a class), then take it untimed.
    kernel = doubling_kernel()
    sizes = range(1, 201)
    for n in sizes:
        run_doubling(kernel, n)
    classes = {tuning.store.size_class(n) for n in sizes}
    assert len(classes) == 16
    stats = kernel.stats
    assert stats.tunes == len(classes)
    assert 0 < stats.shortlists <= tuning.choice.SETTLE_AFTER * len(classes) < len(sizes) - len(classes)
    assert stats.candidates_timed == 3 * (stats.tunes + stats.shortlists)
    assert stats.launches == len(sizes)


def scripted_shortlists(monkeypatch, picks):
    """Shortlist timings that choose ``shortlist[i]`` for each ``i`` of
    ``picks`` in turn (full searches as the mocked clock ranks them); returns
    the list of what each timing was offered."""
    real = tuning.choice.benchmark
    picks, offered = iter(picks), []

    def benchmark(*args, shortlist=None, **kwargs):
        if shortlist is None:
            return real(*args, **kwargs)
        offered.append(shortlist)
        choice = shortlist[next(picks)]
        return choice, [choice]

    monkeypatch.setattr(tuning.choice, "benchmark", benchmark)
    return offered


@pytest.mark.skipif(torch.cuda.is_available(), reason="the interpreter's tuning, with a mocked timer")
@pytest.mark.parametrize("picks, timings", [
    ((0,), 1),  # the class's search's choice again: settled at once
    ((1, 1), 2),  # another, chosen twice in a row: settled
    ((1, 2, 1), 3),  # no two in a row agree: the third timing's choice stands (SETTLE_AFTER)
])
def test_a_size_class_stops_timing_once_its_choice_repeats(mocked_timer, monkeypatch, picks, timings):
    # A decode loop's cache length: one longer each call, every length in
    # the class of 97..128 after a search at 97.
    offered = scripted_shortlists(monkeypatch, picks)
    kernel = doubling_kernel()
    for n in range(97, 129):
        run_doubling(kernel, n)
    assert len(offered) == timings and kernel.stats.tunes == 1
    chosen = offered[-1][picks[-1]]
    lengths = {key[-1][0][0]: config for key, config in kernel.calls.tuned.items()}
    assert all(lengths[n] == chosen for n in range(97 + timings + 1, 129))


@pytest.mark.skipif(torch.cuda.is_available(), reason="the interpreter's tuning, with a mocked timer")
def test_full_tuning_ignores_a_settled_class(mocked_timer, monkeypatch):
    offered = scripted_shortlists(monkeypatch, (0,))
    kernel = doubling_kernel()
    for n in (100, 101):
        run_doubling(kernel, n)
    assert len(offered) == 1
    monkeypatch.setenv("NTSYM_TUNE", "full")
    run_doubling(kernel, 102)
    assert kernel.stats.tunes == 2


@pytest.mark.skipif(torch.cuda.is_available(), reason="the interpreter's tuning, with a mocked timer")
def test_class_tuning_times_nothing_past_a_class_search(mocked_timer, monkeypatch):
    monkeypatch.setenv("NTSYM_TUNE", "class")
    kernel = doubling_kernel()
    sizes = range(1, 201)
    for n in sizes:
        run_doubling(kernel, n)
    stats = kernel.stats
    assert (stats.tunes, stats.shortlists, stats.candidates_timed) == (16, 0, 3 * 16)


@pytest.mark.skipif(torch.cuda.is_available(), reason="the interpreter's tuning, with a mocked timer")
def test_full_tuning_searches_every_shape(mocked_timer, monkeypatch):
    monkeypatch.setenv("NTSYM_TUNE", "full")
    kernel = doubling_kernel()
    for n in range(100, 106):
        run_doubling(kernel, n)
    assert kernel.stats.tunes == 6


@pytest.mark.skipif(torch.cuda.is_available(), reason="the interpreter's tuning, with a mocked timer")
def test_shortlist_tuning_times_the_class_leaders(mocked_timer, monkeypatch):
    monkeypatch.setenv("NTSYM_TUNE", "shortlist")
    monkeypatch.setattr(tuning.shortlist, "SHORTLIST", 2)
    kernel = doubling_kernel()
    run_doubling(kernel, 100)
    run_doubling(kernel, 101)  # the class of 97..128: its two leaders timed
    stats = kernel.stats
    assert (stats.tunes, stats.shortlists, stats.candidates_timed) == (1, 1, 3 + 2)


def test_an_unknown_tuning_mode_is_refused(mocked_timer, monkeypatch):
    monkeypatch.setenv("NTSYM_TUNE", "fast")
    with pytest.raises(ntsym.LaunchError, match="NTSYM_TUNE='fast' is not one of class, shortlist, full"):
        run_doubling(doubling_kernel(), 30)


def test_warmup_compiles_and_remembers_without_touching_the_examples():
    kernel = softmax_kernel(constexpr_rows=False, num_warps=4)  # nothing to tune, on a GPU too
    x = torch.randn(2, 40)
    y = torch.zeros(2, 40)
    cost = kernel.warmup((x, y), ((2, 50), (2, 50)), (((3, 36), torch.float64), ((3, 36), torch.float64)),
                         threads=2)
    assert cost == ntsym.Stats(compiles=2, launches=3)  # 40 and 50 alike; float64 another variant
    assert torch.equal(y, torch.zeros(2, 40))  # the examples were copied, never written
    checked = kernel.calls.checked_launches
    kernel(x, y)  # a warmed call shape: the fast path, no new variant
    torch.testing.assert_close(y, torch.softmax(x, -1))
    assert kernel.calls.checked_launches == checked
    assert kernel.stats == ntsym.Stats(compiles=2, launches=4)


def test_warmup_refuses_what_is_not_a_call():
    with pytest.raises(ntsym.LaunchError, match="warmup takes one tuple of arguments per call"):
        softmax_kernel(constexpr_rows=False).warmup(torch.randn(2, 3))


@pytest.mark.skipif(torch.cuda.is_available(), reason="the interpreter's tuning, with a mocked timer")
def test_warmup_tunes_once_per_size_class(mocked_timer):
    kernel = doubling_kernel()
    cost = kernel.warmup(*[((n,), (n,)) for n in (100, 110, 120, 200, 250)])
    assert (cost.tunes, cost.launches) == (2, 5)  # the classes of 97..128 and 193..256
    for n in (105, 255):
        run_doubling(kernel, n)
    assert kernel.stats.tunes == 2


@pytest.mark.skipif(torch.cuda.is_available(), reason="the interpreter's tuning, with a mocked timer")
def test_a_saved_tuning_table_spares_another_process_the_search(mocked_timer, monkeypatch, tmp_path):
    import json

    kernel = doubling_kernel()
    for n in (100, 200):
        run_doubling(kernel, n)
    path = tmp_path / "shipped" / "double.json"
    assert kernel.save_tuning(path) == 2
    table = json.loads(path.read_text())
    assert table["kernel"] == kernel.name and table["triton"] and len(table["classes"]) == 2
    assert all(":cpu" in key for key in table["classes"])
    assert str(tmp_path) not in path.read_text()  # nothing of this machine's paths
    # Another process: a fresh cache, a kernel made anew.
    monkeypatch.setenv("NTSYM_CACHE_DIR", str(tmp_path / "elsewhere"))
    fresh = doubling_kernel()
    assert fresh.load_tuning(path) == 2
    for n in (100, 120, 250):
        run_doubling(fresh, n)
    assert fresh.stats.tunes == 0
    run_doubling(fresh, 400)  # a class the table does not hold
    assert fresh.stats.tunes == 1


def test_a_tuning_table_of_another_triton_is_not_used(tmp_path):
    import json

    kernel = doubling_kernel()
    path = tmp_path / "table.json"
    kernel.save_tuning(path)
    table = json.loads(path.read_text())
    table["triton"] = "0.0.1"
    table["classes"] = {"k": [{"meta": [["B", 16]], "num_warps": 4, "num_stages": 2}]}
    path.write_text(json.dumps(table))
    with pytest.warns(UserWarning, match="another Triton version .*'0.0.1'.* not used"):
        assert kernel.load_tuning(path) == 0
    assert kernel.calls.classes == {}


@pytest.mark.skipif(torch.cuda.is_available(), reason="the interpreter's tuning, with a mocked timer")
def test_each_candidate_timed_is_a_variant_of_its_own(mocked_timer):
    # Without fixed warps, the candidates pair each block size with two
    # numbers of warps: the interpreter is not given them, a GPU compiles
    # each pair apart, and the counter counts as a GPU would.
    B = ntsym.block_size(lower_bound=16, upper_bound=64)

    def application(x, y):
        y = x * 2  # noqa: F841

    kernel = ntsym.make(lambda x, y, B=B: (x.tile((B,)), y.tile((B,))), application, (Tensor(1), Tensor(1)))
    run_doubling(kernel, 100)
    stats = kernel.stats
    assert stats.tunes == 1 and stats.candidates_timed == 6
    assert stats.compiles == 6  # the launch after the search runs one of them


@pytest.mark.parametrize("row, warps", [(1000, [1, 2, 4, 8, 16]), (8192, [2, 4, 8, 16]), (32000, [8, 16])])
def test_a_whole_row_kernel_times_only_warps_enough_for_its_row(row, warps):
    # Nothing but the warps to tune: numbers of warps that would hold more
    # than 128 of the row's padded elements per thread are not candidates.
    kernel = softmax_kernel(constexpr_rows=False)
    derived = {"NTSYM_BLOCK_0": lambda meta: 1 << (row - 1).bit_length(), "NTSYM_WHOLE_0": lambda meta: True}
    widest = lambda c: tuning.timing.widest_block(c, derived, False, kernel.spec)  # noqa: E731
    configs = tuning.space.candidates(kernel.spec, {}, None, None, widest)
    assert [c.num_warps for c in configs] == warps
    assert [c.num_warps for c in tuning.space.candidates(kernel.spec, {})] == [1, 2, 4, 8, 16]


def test_a_class_keeps_each_block_shape_s_best_before_any_second():
    from ntsym_codegen.tuning.config import Config

    a3, a4, b3, c3, b4 = (Config((("B", b),), 4, st) for b, st in ((64, 3), (64, 4), (128, 3), (32, 3), (128, 4)))
    assert tuning.shortlist.leaders([a3, a4, b3, c3, b4]) == (a3, b3, c3, a4, b4)
    d3, d4 = Config((("B", 16),), 4, 3), Config((("B", 16),), 4, 4)
    # Past the LEADING_SHAPES best shapes, a shape's other variants come last.
    assert tuning.shortlist.leaders([a3, b3, c3, d3, d4, a4]) == (a3, b3, c3, d3, a4, d4)
    many = [Config((("B", b),), 4, 3) for b in range(20)]
    assert tuning.shortlist.leaders(many) == tuple(many[: tuning.shortlist.SHORTLIST])
