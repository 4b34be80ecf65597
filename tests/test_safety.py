"""Launch and make-time safety: shape calls in applications, version counters,
overlapping writes, tuning entries, the cache directory, interrupted tuning,
jagged offsets rewritten between calls, concurrent launches."""

import os

import pytest
import torch

import ntsym
import ntsym.language as ntl
from ntsym import Symbol, Tensor
from tests.conftest import FP32_DOT_TOL
from tests.sources import application_from

B = Symbol("B", constexpr=True)


# -- reshape, view, broadcast_to -------------------------------------------------------------

def test_reshape_view_and_broadcast_to_in_an_application():
    def arrangement(x, y):
        return x.tile((B, B)), y.tile((B, B))

    def application(x, y):
        t = ntl.reshape(x, (x.shape[0] * x.shape[1],))
        u = t.reshape((x.shape[0], x.shape[1]))
        v = ntl.view(u, (x.shape[0], x.shape[1]))
        s = ntl.sum(x, 1)
        y = v + ntl.broadcast_to(ntl.reshape(s, (x.shape[0], 1)), (x.shape[0], x.shape[1]))  # noqa: F841

    k = ntsym.make(arrangement, application, (Tensor(2), Tensor(2)))
    x = torch.randn(8, 8)
    y = torch.empty_like(x)
    k(x, y, B=4)
    rows = x.reshape(2, 4, 2, 4).sum(3, keepdim=True).expand(2, 4, 2, 4).reshape(8, 8)
    torch.testing.assert_close(y, x + rows)


def _bincount(exact, cleared=False, reorder=False):
    """exact: an input of 8 values, a tile without padded lanes; else any
    length, padded to a power of two.  cleared: the padded lanes set to -1
    through the tile's offsets first; reorder: a reshape that may reorder
    elements, or a view (of lanes outside: emitted in order, followed)."""
    def arrangement(input, output):
        out = output.tile((B,))
        return input.tile((-1,)).expand(out.shape), out

    def counted(values, bins, output):
        column = ntl.reshape(values, (values.shape[0], 1))
        row = ntl.broadcast_to(ntl.reshape(bins, (1, output.shape[0])), (values.shape[0], output.shape[0]))
        return ntl.sum((column == row).to(ntl.int64), 0)

    def raw(input, output):
        output = counted(input, output.offsets(0), output)  # noqa: F841

    def where_first(input, output):
        values = ntl.where(input.offsets(0) < input.source.shape[0], input, -1)
        output = counted(values, output.offsets(0), output)  # noqa: F841

    def reordered(input, output):
        column = ntl.reshape(input, (input.shape[0], 1), can_reorder=True)
        output = ntl.sum((column == output.offsets(0)[None, :]).to(ntl.int64), 0)  # noqa: F841

    def viewed(input, output):
        column = input.view(input.shape[0], 1)
        output = ntl.sum((column == output.offsets(0)[None, :]).to(ntl.int64), 0)  # noqa: F841

    application = {True: reordered, "view": viewed}.get(reorder) or (where_first if cleared else raw)
    input = Tensor(shape=(8,), dtype=ntsym.int64) if exact else Tensor(1, dtype=ntsym.int64)
    return ntsym.make(arrangement, application, (input, Tensor(1, dtype=ntsym.int64)))


def test_bincount_with_reshape_and_broadcast_to():
    k = _bincount(exact=True)
    x = torch.tensor([0, 3, 1, 1, 4, 3, 1, 0])
    y = torch.empty(5, dtype=torch.int64)
    k(x, y, B=4)
    assert torch.equal(y, torch.bincount(x, minlength=5))


@pytest.mark.parametrize("cleared", [False, True])
@pytest.mark.parametrize("length", [1, 5, 8])
def test_bincount_counts_the_elements_not_the_padding(cleared, length):
    # The input tile is padded to the next power of two (zeros past the
    # end): bin 0 counts the elements that are 0 and nothing else, whatever
    # the length, through the reshape (its mask reshaped with it).
    k = _bincount(exact=False, cleared=cleared)
    x = torch.tensor([0, 3, 1, 1, 4, 3, 1, 2])[:length]
    y = torch.empty(5, dtype=torch.int64)
    k(x, y, B=4)
    assert torch.equal(y, torch.bincount(x, minlength=5))


@pytest.mark.parametrize("reorder", [True, "view"])
@pytest.mark.parametrize("length", [5, 8])
def test_bincount_through_a_reshape_that_may_reorder_counts_the_elements(reorder, length):
    # A reshape that may reorder (or a view) of lanes outside is emitted as one
    # that keeps the order, its mask reshaped alike: padded zeros are not counted.
    k = _bincount(exact=False, reorder=reorder)
    assert "can_reorder" not in k.source and ".view(" not in k.source
    x = torch.tensor([0, 3, 1, 1, 4, 3, 1, 2])[:length]
    y = torch.empty(5, dtype=torch.int64)
    k(x, y, B=4)
    assert torch.equal(y, torch.bincount(x, minlength=5))


def test_a_view_of_a_tile_without_lanes_outside_is_emitted_as_written():
    def arrangement(x, y):
        return x.tile((4, 4)), y.tile((4, 4))

    def application(x, y):
        y = ntl.view(x, (4, 4)) * 2  # noqa: F841

    k = ntsym.make(arrangement, application, (Tensor(shape=(8, 8)), Tensor(shape=(8, 8))))
    assert "tl.view(" in k.source
    x = torch.randn(8, 8)
    y = torch.empty(8, 8)
    k(x, y)
    torch.testing.assert_close(y, x * 2)


# -- version counters and autograd -----------------------------------------------------------

def _double():
    def application(x, y):
        y = x * 2  # noqa: F841

    return ntsym.make(lambda x, y: (x.tile((4,)), y.tile((4,))), application, (Tensor(1), Tensor(1)))


def test_a_kernel_write_bumps_the_version_so_backward_sees_the_overwrite():
    k = _double()
    a = torch.randn(6, requires_grad=True)
    saved = (a * 1.0).exp()  # exp saves its output for backward
    version = saved._version
    with torch.no_grad():
        k(torch.randn(6), saved)
    assert saved._version > version
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        saved.sum().backward()
    y = torch.empty(6)
    k(torch.randn(6), y)  # the warm launch bumps it too
    version = y._version
    k(torch.randn(6), y)
    assert y._version == version + 1


def _pointer_local_store(x, y):
    p = y.source.data_ptr() + x.offsets(0)
    ntl.store(p, x * 2, mask=x.offsets(0) < x.source.shape[0])


def _pointer_atomic(x, y):
    ntl.atomic_add(y.source.data_ptr() + x.offsets(0), x * 2, mask=x.offsets(0) < x.source.shape[0])


def _pointer_helper(p, v, m):
    ntl.store(p, v, mask=m)


def _pointer_inlined_store(x, y):
    _pointer_helper(y.source.data_ptr() + x.offsets(0), x * 2, x.offsets(0) < x.source.shape[0])


@pytest.mark.parametrize("application", [_pointer_local_store, _pointer_atomic, _pointer_inlined_store])
def test_writes_through_a_pointer_count_as_writes(application):
    """A store through a pointer held by a local or an inlined function's
    parameter, or an atomic, writes the addressed tensor: its version is
    bumped, its overlap with a read view refused, its staged values kept."""
    k = ntsym.make(lambda x, y: (x.tile((B,)), y.tile((B,))), application, (Tensor(1), Tensor(1)))
    x, y = torch.arange(8.0), torch.zeros(8)
    k(x, y, B=4)
    version = y._version
    k(x, y, B=4)  # a warm launch
    assert version >= 1 and y._version == version + 1
    buf = torch.arange(9.0)
    with pytest.raises(ntsym.LaunchError, match="share memory and the kernel writes `y`"):
        k(buf[:8], buf[1:], B=4)
    if application is not _pointer_atomic:
        h = torch.zeros(8, dtype=torch.bfloat16)
        k(x.bfloat16(), h, B=4)  # staged as float32 by the interpreter, copied back
        assert torch.equal(h, (x * 2).bfloat16())


def _descriptor_store(x, y):
    d = ntl.make_tensor_descriptor(y.source.data_ptr(), shape=[y.source.shape[0]], strides=[1], block_shape=[4])
    d.store([ntl.program_id(0) * 4], x * 2)


def test_a_store_through_a_tensor_descriptor_counts_as_a_write():
    """The descriptor's method names offsets, not the pointer: the tensor
    whose pointer made it is written (version bumped, overlap refused)."""
    k = ntsym.make(lambda x, y: (x.tile((4,)), y.tile((4,))), _descriptor_store, (Tensor(1), Tensor(1)))
    x, y = torch.arange(8.0), torch.zeros(8)
    k(x, y)
    assert y._version == 1 and torch.equal(y, x * 2)
    buf = torch.arange(12.0)
    with pytest.raises(ntsym.LaunchError, match="share memory and the kernel writes `y`"):
        k(buf[:8], buf[4:])
    assert torch.equal(buf, torch.arange(12.0))


def test_writing_a_tensor_that_requires_grad_is_refused_under_grad_mode():
    k = _double()
    x = torch.randn(6)
    k(x, torch.empty(6))  # warm: the refusal holds on the validated call shape too
    leaf = torch.zeros(6, requires_grad=True)
    with pytest.raises(ntsym.LaunchError, match="(?s)`y` .* leaf tensor that requires grad"):
        k(x, leaf)
    with pytest.raises(ntsym.LaunchError, match="view of a leaf"):
        k(x, torch.zeros(12, requires_grad=True)[:6])
    with pytest.raises(ntsym.LaunchError, match="requires grad"):
        k(x, leaf * 1.0)
    assert torch.equal(leaf, torch.zeros(6))
    with torch.no_grad():
        k(x, leaf)
    torch.testing.assert_close(leaf.detach(), x * 2)


# -- overlapping writes ----------------------------------------------------------------------

def test_an_output_whose_elements_overlap_in_memory_is_refused():
    def application(x, y):
        y = x + 1  # noqa: F841

    k = ntsym.make(lambda x, y: (x.tile((2, 2)), y.tile((2, 2))), application, (Tensor(2), Tensor(2)))
    x = torch.randn(4, 4)
    with pytest.raises(ntsym.LaunchError, match="(?s)`y` .* overlap in memory"):
        k(x, torch.zeros(16).as_strided((4, 4), (1, 1)))
    y = torch.zeros(40).as_strided((4, 4), (1, 10))  # strided, without overlap: fine
    k(x, y)
    torch.testing.assert_close(y, x + 1)
    y = torch.zeros(8, 8)[::2, 1::2]
    k(x, y)
    torch.testing.assert_close(y, x + 1)


def test_written_tiles_overlapping_across_programs_are_refused():
    def application(x, y):
        y = x * 2  # noqa: F841

    windows = (lambda x, y: (x.tile((4,), strides=(2,)), y.tile((4,), strides=(2,))))
    k = ntsym.make(windows, application, (Tensor(1), Tensor(1)))
    with pytest.raises(ntsym.LaunchError, match="(?s)`y` is written .* overlap"):
        k(torch.arange(8.0), torch.zeros(8))
    y = torch.zeros(4)
    k(torch.arange(4.0), y)  # one window: nothing overlaps
    torch.testing.assert_close(y, torch.arange(4.0) * 2)
    with pytest.raises(ntsym.ArrangementError, match="overlap"):
        ntsym.make(windows, application, (Tensor(shape=(8,)), Tensor(shape=(8,))))
    sized = (lambda x, y: (x.tile((B,), strides=(2,)), y.tile((B,), strides=(2,))))
    k = ntsym.make(sized, application, (Tensor(1), Tensor(1)))
    with pytest.raises(ntsym.LaunchError, match="overlap"):
        k(torch.arange(8.0), torch.zeros(8), B=4)
    y = torch.zeros(8)
    k(torch.arange(8.0), y, B=2)  # windows as wide as their step: disjoint
    torch.testing.assert_close(y, torch.arange(8.0) * 2)

    expanded = (lambda x, y: (x.tile((4,)), y.tile((-1,)).expand(x.tile((4,)).shape)))
    k = ntsym.make(expanded, application, (Tensor(1), Tensor(1)))
    with pytest.raises(ntsym.LaunchError, match="every program along it writes the same elements"):
        k(torch.arange(8.0), torch.zeros(8))

    # Every program reads the same tiles too: they all write the same values.
    same = (lambda x, y: (x.tile((-1,)).unsqueeze(0).expand((3, -1)), y.tile((-1,)).unsqueeze(0).expand((3, -1))))
    k = ntsym.make(same, application, (Tensor(1), Tensor(1)))
    y = torch.zeros(8)
    k(torch.arange(8.0), y)
    torch.testing.assert_close(y, torch.arange(8.0) * 2)


@pytest.mark.parametrize("read", ["y = y + x", "y += x", "y = x + y.source[y.offsets(0)]"])
def test_programs_writing_the_same_elements_and_reading_them_are_refused(read):
    """Every program reads the same tiles, but also the tensor they all
    write: each reads what others stored before it, in no fixed order."""
    source = f"def application(x, y):\n    {read}  # noqa: F841\n"
    application = application_from(source)
    same = (lambda x, y: (x.tile((-1,)).unsqueeze(0).expand((3, -1)), y.tile((-1,)).unsqueeze(0).expand((3, -1))))
    with pytest.raises(ntsym.ArrangementError, match="the kernel reads `y`, which they write"):
        ntsym.make(same, application, (Tensor(1), Tensor(1)))
    expanded = (lambda x, y: (x.tile((4,)), y.tile((4,)).expand(x.tile((4,)).shape)))
    k = ntsym.make(expanded, application, (Tensor(1), Tensor(1)))
    y = torch.ones(4)
    k(torch.arange(4.0), y)  # one program: its statements in order
    torch.testing.assert_close(y, torch.arange(4.0) + 1)
    with pytest.raises(ntsym.LaunchError, match="the kernel reads `y`, which they write"):
        k(torch.arange(8.0), y)


def test_programs_writing_the_same_elements_from_their_program_id_are_refused():
    """Every program reads the same tiles, but ``program_id`` gives each its
    own value: the element ends with whichever program stored last."""
    def application(x, y):
        y = x + ntl.program_id(0)  # noqa: F841

    same = (lambda x, y: (x.tile((-1,)).unsqueeze(0).expand((3, -1)), y.tile((-1,)).unsqueeze(0).expand((3, -1))))
    with pytest.raises(ntsym.ArrangementError, match="the kernel calls `program_id`, whose value differs"):
        ntsym.make(same, application, (Tensor(1), Tensor(1)))
    expanded = (lambda x, y: (x.tile((4,)), y.tile((4,)).expand(x.tile((4,)).shape)))
    k = ntsym.make(expanded, application, (Tensor(1), Tensor(1)))
    y = torch.ones(4)
    k(torch.arange(4.0), y)  # one program
    torch.testing.assert_close(y, torch.arange(4.0))
    with pytest.raises(ntsym.LaunchError, match="the kernel calls `program_id`"):
        k(torch.arange(8.0), y)


def test_programs_writing_the_same_elements_through_an_index_of_the_tile_run():
    """``y[0] = x[0]`` writes part of each program's tile of ``y`` and reads
    no element of it: the programs store the same values, in any order."""
    def application(x, y):
        y[0] = x[0]

    def same(x, y):
        return tuple(t.tile((2,)).tile((-1,)).unsqueeze(0).expand((3, -1)) for t in (x, y))

    y = torch.ones(4)
    ntsym.make(same, application, (Tensor(1), Tensor(1)))(torch.arange(4.0), y)
    torch.testing.assert_close(y, torch.tensor([0.0, 1.0, 1.0, 1.0]))


@pytest.mark.parametrize("read", ["y = x * y.source.shape[0]", "y = x * y.source.stride(0) * 4"])
def test_programs_writing_the_same_elements_and_reading_only_their_sizes_run(read):
    """``y.source.shape[0]`` and ``y.source.stride(0)`` read no element of
    ``y``: the programs store the same values, in any order."""
    source = f"def application(x, y):\n    {read}  # noqa: F841\n"
    application = application_from(source)
    same = (lambda x, y: (x.tile((-1,)).unsqueeze(0).expand((3, -1)), y.tile((-1,)).unsqueeze(0).expand((3, -1))))
    y = torch.ones(4)
    ntsym.make(same, application, (Tensor(1), Tensor(1)))(torch.arange(4.0), y)
    torch.testing.assert_close(y, torch.arange(4.0) * 4)


# -- stored tuning entries and the cache directory -------------------------------------------

def _tuned_double(monkeypatch, cache):
    monkeypatch.setenv("NTSYM_CACHE_DIR", str(cache))
    monkeypatch.setenv("NTSYM_TUNE_IN_INTERPRETER", "1")
    block = ntsym.block_size(lower_bound=16, upper_bound=32)

    def arrangement(x, y, B=block):
        return x.tile((B,)), y.tile((B,))

    def application(x, y):
        y = x * 2  # noqa: F841

    return ntsym.make(arrangement, application, (Tensor(1), Tensor(1)), num_warps=4, num_stages=2)


@pytest.mark.parametrize("damage", [
    {"meta": [["B", -64]]}, {"meta": [["B", 3]]}, {"meta": [["B", 0]]}, {"meta": [["B", 2**40]]},
    {"meta": []}, {"num_warps": 3}, {"num_stages": 0},
], ids=["negative", "three", "zero", "huge", "missing", "warps", "stages"])
def test_a_damaged_tuning_entry_is_tuned_again_with_a_warning(tmp_path, monkeypatch, damage):
    import json

    x = torch.arange(40.0)
    _tuned_double(monkeypatch, tmp_path)(x, torch.empty(40))
    (path,) = [p for p in (tmp_path / "tuning").glob("*.json") if not p.name.endswith(".classes.json")]
    entries = json.loads(path.read_text())
    (key,) = entries
    entries[key].update(damage)
    path.write_text(json.dumps(entries))
    y = torch.zeros(40)
    with pytest.warns(UserWarning, match="not usable .* tuning again"):
        _tuned_double(monkeypatch, tmp_path)(x, y)
    assert torch.equal(y, x * 2)
    assert json.loads(path.read_text())[key]["meta"][0][1] in (16, 32)  # stored again, valid


@pytest.mark.parametrize("where", ["a file", "under a file"])
def test_an_unusable_cache_directory_falls_back_with_a_warning(tmp_path, monkeypatch, where):
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    monkeypatch.setenv("NTSYM_CACHE_DIR", str(blocker if where == "a file" else blocker / "cache"))

    def application(x, y):
        y = x + 3  # noqa: F841

    with pytest.warns(UserWarning, match="NTSYM_CACHE_DIR"):
        k = ntsym.make(lambda x, y: (x.tile((8,)), y.tile((8,))), application, (Tensor(1), Tensor(1)))
    x = torch.randn(10)
    y = torch.empty(10)
    k(x, y)
    torch.testing.assert_close(y, x + 3)


# -- interrupted tuning ----------------------------------------------------------------------

def test_an_interrupted_tuning_leaves_an_in_place_output_as_it_was(tmp_path, monkeypatch):
    from ntsym_codegen import tuning

    monkeypatch.setenv("NTSYM_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("NTSYM_TUNE_IN_INTERPRETER", "1")
    block = ntsym.block_size(lower_bound=16, upper_bound=32)

    def application(x):
        x = x + 1  # noqa: F841

    k = ntsym.make(lambda x, B=block: (x.tile((B,)),), application, (Tensor(1),))

    def interrupted(spec, fn, *args, **kwargs):
        fn()  # one timed run has written the tensor
        raise KeyboardInterrupt

    monkeypatch.setattr(tuning.timing, "time_ms", interrupted)
    x = torch.arange(40.0)
    with pytest.raises(KeyboardInterrupt):
        k(x)
    assert torch.equal(x, torch.arange(40.0))
    monkeypatch.undo()
    monkeypatch.setenv("NTSYM_CACHE_DIR", str(tmp_path))
    k(x)
    assert torch.equal(x, torch.arange(40.0) + 1)


# -- jagged offsets rewritten between calls --------------------------------------------------

@pytest.mark.skipif(torch.cuda.is_available(), reason="offsets on a GPU are read once per version counter "
                    "(docs/jagged.md); on the CPU at every call")
def test_offsets_rewritten_without_a_version_bump_are_validated_again():
    from examples import jagged as ex

    values = torch.randn(10, 4)
    offsets = torch.tensor([0, 3, 10])
    out = torch.zeros(10, 4)
    ex.add_kernel(ntsym.jagged(values, offsets), ntsym.jagged(values, offsets), ntsym.jagged(out, offsets))
    torch.testing.assert_close(out, 2 * values)
    offsets.data[2] = 14  # no version bump: a remembered validation would let the launch write 4 rows past out
    assert offsets._version == 0
    with pytest.raises(ntsym.LaunchError, match="last offset is 14"):
        ex.add_kernel(ntsym.jagged(values, offsets), ntsym.jagged(values, offsets), ntsym.jagged(out, offsets))
    offsets.data[1:] = torch.tensor([11, 10])
    with pytest.raises(ntsym.LaunchError, match="must not decrease"):
        ex.add_kernel(ntsym.jagged(values, offsets), ntsym.jagged(values, offsets), ntsym.jagged(out, offsets))


# -- threads and torch.func ------------------------------------------------------------------

def test_threads_launching_one_kernel_at_once():
    import threading

    k = _double()
    failures = []
    device = torch.empty(0).device  # a thread's default device is its own

    def work(n):
        try:
            for _ in range(8):
                x = torch.randn(n, device=device)
                y = torch.empty_like(x)
                k(x, y)
                assert torch.equal(y, x * 2)
        except BaseException as error:  # noqa: BLE001 - reported below
            failures.append(repr(error))

    threads = [threading.Thread(target=work, args=(n,)) for n in (6, 7, 6, 9)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures[0]


def test_a_kernel_inside_torch_func_transforms_is_refused_by_name():
    k = _double()

    def doubled(x):
        y = torch.empty_like(x)
        k(x, y)
        return y

    with pytest.raises(ntsym.LaunchError, match="torch.vmap"):
        torch.vmap(doubled)(torch.randn(3, 6))
    with pytest.raises(ntsym.LaunchError, match="torch.func transform"):
        torch.func.grad(lambda x: doubled(x).sum())(torch.randn(6))


# -- messages that name the line and the fix -------------------------------------------------

def test_a_loop_over_fewer_tiles_than_the_level_has_runs():
    def arrangement(x, y):
        return x.tile((B,)).tile((-1,)), y.tile((B,)).tile((-1,))

    def application(x, y):
        for k in range(x.shape[0] - 1):
            y[k] = x[k] + x[k + 1]

    k = ntsym.make(arrangement, application, (Tensor(1), Tensor(1)))
    x = torch.randn(32)
    y = torch.zeros(32)
    k(x, y, B=8)
    torch.testing.assert_close(y[:24], x[:24] + x[8:])
    assert torch.equal(y[24:], torch.zeros(8))

    def past_the_end(x, y):
        for k in range(x.shape[0] + 1):
            y[k] = x[k]

    with pytest.raises(ntsym.ApplicationError, match=r"(?s)runs over range\(.*\+ 1\).*past its end"):
        ntsym.make(arrangement, past_the_end, (Tensor(1), Tensor(1)))


def _jit_double():
    import triton

    @triton.jit
    def twice(v):
        return v * 2

    return twice


TWICE = _jit_double()


def test_a_triton_jit_helper_is_inlined():
    def application(x, y):
        y = TWICE(x) + 1  # noqa: F841

    k = ntsym.make(lambda x, y: (x.tile((B,)), y.tile((B,))), application, (Tensor(1), Tensor(1)))
    x = torch.randn(10)
    y = torch.empty(10)
    k(x, y, B=4)
    torch.testing.assert_close(y, x * 2 + 1)


def test_an_arrangement_returning_none_is_named():
    def arrangement(x, y):
        x.tile((B,)), y.tile((B,))

    def application(x, y):
        y = x  # noqa: F841

    with pytest.raises(ntsym.ArrangementError, match=r"`arrangement` .* returned None.*return x_arranged, y_arranged"):
        ntsym.make(arrangement, application, (Tensor(1), Tensor(1)))


def _recursive(x, y):
    _recursive(x, y)


def _halve_forever(v):
    return _halve_forever(v / 2)


def test_recursion_is_refused_at_make_with_the_line():
    arrangement = (lambda x, y: (x.tile((B,)), y.tile((B,))))
    with pytest.raises(ntsym.ApplicationError, match=r"(?s)`_recursive` calls itself.*_recursive\(x, y\)"):
        ntsym.make(arrangement, _recursive, (Tensor(1), Tensor(1)))

    def application(x, y):
        y = _halve_forever(x)  # noqa: F841

    with pytest.raises(ntsym.ApplicationError, match="`_halve_forever` calls itself"):
        ntsym.make(arrangement, application, (Tensor(1), Tensor(1)))


def test_nested_functions_torch_calls_and_offsets_of_locals_are_named():
    arrangement = (lambda x, y: (x.tile((B,)), y.tile((B,))))

    def nested(x, y):
        def inner(v):
            return v * 2

        y = inner(x)  # noqa: F841

    def with_lambda(x, y):
        f = lambda v: v * 2  # noqa: E731
        y = f(x)  # noqa: F841

    def with_torch(x, y):
        y = torch.exp(x)  # noqa: F841

    def torch_dtype(x, y):
        y = x.to(torch.float32)  # noqa: F841

    def local_offsets(x, y):
        t = x
        y = t + t.offsets(0)  # noqa: F841

    for application, message in ((nested, "nested function `inner`.*module level"),
                                 (with_lambda, "a lambda is defined"),
                                 (with_torch, r"`torch.exp` is a PyTorch function.*ntl.exp"),
                                 (torch_dtype, r"`torch.float32` is a PyTorch dtype.*ntl.float32"),
                                 (local_offsets, r"`t` is a local.*x\[k\].offsets")):
        with pytest.raises(ntsym.ApplicationError, match=message):
            ntsym.make(arrangement, application, (Tensor(1), Tensor(1)))


def test_a_dot_of_tiles_with_different_inner_block_sizes_is_checked(monkeypatch):
    """Checked at launch, and with every block size given, before the tuner
    compiles anything (on a GPU it times warps and stages, and Triton would
    fail on the mismatched shapes first, with its own error)."""
    from ntsym_codegen import tuning

    bm, bn, bk1, bk2 = (Symbol(n, constexpr=True) for n in ("BM", "BN", "BK1", "BK2"))

    def arrangement(a, b, c):
        ct = c.tile((bm, bn))
        at = a.tile((bm, bk1)).tile((1, -1)).expand((-1, ct.shape[1]))
        at.dtype = at.dtype.squeeze(0)
        bt = b.tile((bk2, bn)).tile((-1, 1)).expand((ct.shape[0], -1))
        bt.dtype = bt.dtype.squeeze(1)
        return at, bt, ct

    def application(a, b, c):
        acc = ntl.zeros(c.shape, dtype=ntl.float32)
        for k in range(a.shape[0]):
            acc += ntl.dot(a[k], b[k])
        c = acc  # noqa: F841

    k = ntsym.make(arrangement, application, (Tensor(2), Tensor(2), Tensor(2)))
    a, b, c = torch.randn(32, 32), torch.randn(32, 32), torch.empty(32, 32)
    k(a, b, c, BM=16, BN=16, BK1=16, BK2=16)
    torch.testing.assert_close(c, a @ b, atol=FP32_DOT_TOL, rtol=FP32_DOT_TOL)
    chosen = []
    choose = tuning.choose
    monkeypatch.setattr(tuning, "choose", lambda *args, **kwargs: chosen.append(1) or choose(*args, **kwargs))
    with pytest.raises(ntsym.LaunchError, match=r"(?s)BK1 \(=16\) must equal BK2 \(=32\).*ntl.dot\(a\[k\], b\[k\]\)"
                       r"|cdiv\(b.shape\[0\], BK2\) \(=1.*must equal cdiv\(a.shape\[1\], BK1\) \(=2"):
        k(a, b, c, BM=16, BN=16, BK1=16, BK2=32)
    assert chosen == []
    k(torch.randn(0, 32), b, torch.empty(0, 32), BM=16, BN=16, BK1=16, BK2=32)  # no program runs: moot




@pytest.mark.skipif(torch.cuda.is_available(), reason="offsets on a GPU are read once per version counter "
                    "(docs/jagged.md); on the CPU at every call")
def test_many_offsets_rewritten_without_a_version_bump_are_validated_again():
    from examples import jagged as ex

    values = torch.randn(40, 2)
    offsets = torch.arange(41)  # more offsets than are read as a list
    out = torch.zeros(40, 2)
    ex.add_kernel(ntsym.jagged(values, offsets), ntsym.jagged(values, offsets), ntsym.jagged(out, offsets))
    torch.testing.assert_close(out, 2 * values)
    offsets.data[40] = 44
    with pytest.raises(ntsym.LaunchError, match="last offset is 44"):
        ex.add_kernel(ntsym.jagged(values, offsets), ntsym.jagged(values, offsets), ntsym.jagged(out, offsets))


def test_a_flattened_grid_of_programs_writing_one_element_is_refused():
    """64 programs a row, flattened, all store to ``out[i, 0]`` with values
    of their own: refused at launch, as without ``flatten``."""
    def arrangement(x, out):
        return x.tile((1, 1)).flatten(), out.tile((1, 1)).expand((-1, 64)).flatten()

    def application(x, out):
        out = x  # noqa: F841

    kernel = ntsym.make(arrangement, application, (Tensor(2), Tensor(2)))
    out = torch.zeros(3, 1)
    with pytest.raises(ntsym.LaunchError, match="same `pid // 64` writes the same elements"):
        kernel(torch.arange(3 * 64.0).reshape(3, 64), out)


def _double_through(arrangement, x, out):
    def application(x, out):
        out = x * 2  # noqa: F841

    ntsym.make(arrangement, application, (Tensor(2), Tensor(2)))(x, out)
    torch.testing.assert_close(out, 2 * x)


def test_a_flattened_grid_of_programs_writing_their_own_elements_runs():
    _double_through(lambda x, out: (x.tile((1, 1)).flatten(), out.tile((1, 1)).flatten()),
                    torch.arange(12.0).reshape(3, 4), torch.zeros(3, 4))


def test_a_flattened_grid_of_programs_writing_one_element_with_one_value_runs():
    """Every program that stores to ``out[i, 0]`` reads the same tile of
    ``x``: they store the same value, as the unflattened grid may."""
    _double_through(lambda x, out: (x.tile((1, 1)).expand((-1, 4)).flatten(),
                                    out.tile((1, 1)).expand((-1, 4)).flatten()),
                    torch.arange(3.0).reshape(3, 1), torch.zeros(3, 1))


def test_a_flattened_grid_of_overlapping_windows_is_refused():
    """Windows of 4 rows 2 apart, flattened: neighbouring programs along
    ``pid // c`` store to shared rows, as in the unflattened grid."""
    def arrangement(x, out):
        return (x.tile((4, 4), strides=(2, 4)).flatten(), out.tile((4, 4), strides=(2, 4)).flatten())

    def application(x, out):
        out = x * 0.0 + ntl.sum(ntl.sum(x, 1), 0)  # noqa: F841

    kernel = ntsym.make(arrangement, application, (Tensor(2), Tensor(2)))
    with pytest.raises(ntsym.NtsymError, match="windows overlap.*a flattened grid"):
        kernel(torch.arange(80.0).reshape(20, 4), torch.zeros(20, 4))


def test_a_flattened_grid_of_disjoint_blocks_runs():
    def arrangement(x, out):
        return x.tile((2, 2)).flatten(), out.tile((2, 2)).flatten()

    def application(x, out):
        out = x + ntl.sum(ntl.sum(x, 1), 0)  # noqa: F841

    kernel = ntsym.make(arrangement, application, (Tensor(2), Tensor(2)))
    x = torch.arange(24.0).reshape(4, 6)
    out = torch.zeros(4, 6)
    kernel(x, out)
    blocks = x.reshape(2, 2, 3, 2).sum((1, 3))  # each 2x2 block's sum
    torch.testing.assert_close(out, x + blocks.repeat_interleave(2, 0).repeat_interleave(2, 1))
