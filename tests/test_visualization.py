"""``ntsym.visualization``: pictures of arrangements (the optional extra
``viz``).  Skipped where matplotlib is not installed, except for the checks
that ntsym works, and says what to install, without it."""

import functools
import subprocess
import sys

import numpy as np
import pytest
import torch

import ntsym
from examples import add, conv2d, mm
from ntsym import Tensor

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _assert_png(path, smallest=1_000, largest=200_000):
    data = path.read_bytes()
    assert data.startswith(PNG_SIGNATURE)
    assert smallest < len(data) < largest


def _face_colors(ax):
    """The distinct fill colours of the cells drawn in ``ax``, white left out."""
    (cells,) = ax.collections
    colors = {tuple(np.round(c, 3)) for c in cells.get_facecolors()}
    return colors - {(1.0, 1.0, 1.0, 1.0)}


def _add_arrangement():
    return functools.partial(add.arrangement, BLOCK_SIZE=4), [torch.empty(10)] * 3


def _mm_arrangement():
    blocks = dict(BLOCK_SIZE_M=2, BLOCK_SIZE_N=2, BLOCK_SIZE_K=2)
    tensors = (torch.empty(4, 6), torch.empty(6, 4), torch.empty(4, 4))
    return functools.partial(mm.arrangement, **blocks), tensors


def test_importing_ntsym_does_not_import_matplotlib():
    code = "import sys, ntsym, ntsym.visualization; print('matplotlib' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


def test_missing_matplotlib_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError, match=r'pip install "ntsym\[viz\]"'):
        ntsym.visualization.visualize(Tensor(shape=(4,)).tile((2,)))


def test_visualize_draws_one_panel_per_level(tmp_path):
    pytest.importorskip("matplotlib")
    arranged = Tensor(shape=(6, 8)).tile((2, 4)).tile((1, -1))
    arranged.dtype = arranged.dtype.squeeze(0)
    path = tmp_path / "levels.png"
    fig = ntsym.visualization.visualize(arranged, color="C2", save_path=path)
    _assert_png(path)
    assert [ax.get_title(loc="left") for ax in fig.axes] == ["(3, 1)", "(2,)", "(2, 4)"]
    cells = [len(ax.collections[0].get_paths()) for ax in fig.axes]
    assert cells == [3, 2, 8]
    # The innermost panel is labelled with the source offsets of the first tile.
    labels = [text.get_text() for text in fig.axes[-1].texts]
    assert labels == ["0", "1", "2", "3", "8", "9", "10", "11"]


def test_visualize_leaves_missing_elements_white_and_takes_subs():
    pytest.importorskip("matplotlib")
    block = ntsym.Symbol("BLOCK", constexpr=True)
    x = Tensor(1)
    fig = ntsym.visualization.visualize(x.tile((block,)), color="red",
                                        subs={x: {"shape": (5,)}, "BLOCK": 4})
    outer, tile = fig.axes
    assert outer.get_title(loc="left") == "(2,)" and tile.get_title(loc="left") == "(4,)"
    assert len(_face_colors(tile)) == 1
    assert [text.get_text() for text in tile.texts] == ["0", "1", "2", "3"]
    # The first tile is full; a tile past the end would show white cells.
    tail = ntsym.visualization.visualize(Tensor(shape=(2,)).tile((4,)), color="red")
    faces = tail.axes[-1].collections[0].get_facecolors()
    assert [tuple(f) == (1.0, 1.0, 1.0, 1.0) for f in faces] == [False, False, True, True]


def test_visualize_picks_a_new_color_at_each_call():
    pytest.importorskip("matplotlib")
    first = ntsym.visualization.visualize(Tensor(shape=(4,)).tile((2,)))
    second = ntsym.visualization.visualize(Tensor(shape=(4,)).tile((2,)))
    assert _face_colors(first.axes[0]) != _face_colors(second.axes[0])


def test_visualize_arrangement_add(tmp_path):
    pytest.importorskip("matplotlib")
    arrangement, tensors = _add_arrangement()
    path = tmp_path / "add.png"
    fig = ntsym.visualization.visualize_arrangement(arrangement, tensors, save_path=path)
    _assert_png(path)
    assert len(fig.axes) == 6  # a source and an arranged panel per tensor
    titles = [ax.get_title(loc="left") for ax in fig.axes]
    assert titles[:2] == ["input: source (10,)", "input: 3 programs x (4,)"]
    assert titles[4].startswith("output:")
    for ax in fig.axes:
        assert len(_face_colors(ax)) == 3  # one distinct colour per program


def test_visualize_arrangement_mm_colors_shared_tiles_by_every_program(tmp_path):
    pytest.importorskip("matplotlib")
    arrangement, tensors = _mm_arrangement()
    path = tmp_path / "mm.png"
    fig = ntsym.visualization.visualize_arrangement(arrangement, tensors, save_path=path)
    _assert_png(path)
    assert len(fig.axes) == 6
    input_source, input_arranged = fig.axes[:2]
    assert input_arranged.get_title(loc="left") == "input: 4 programs x (3, 2, 2)"
    # Each input element is read by the two programs of its row of output
    # tiles: 24 elements in two stripes each.
    assert len(input_source.collections[0].get_paths()) == 48
    assert len(_face_colors(input_source)) == 4
    output_source = fig.axes[4]
    assert len(output_source.collections[0].get_paths()) == 16
    assert len(_face_colors(output_source)) == 4


def test_visualize_arrangement_conv2d_implicit_gemm(tmp_path):
    pytest.importorskip("matplotlib")
    tensors = (torch.empty(1, 2, 4, 4), torch.empty(2, 2, 2, 2), torch.empty(1, 2, 3, 3))
    blocks = dict.fromkeys(mm.arrangement.__defaults__, 4)  # mm's block sizes
    path = tmp_path / "conv2d.png"
    fig = ntsym.visualization.visualize_arrangement(conv2d.arrangement, tensors,
                                                    save_path=path, subs=blocks)
    _assert_png(path)
    titles = [ax.get_title(loc="left") for ax in fig.axes]
    assert titles == [
        "input: source (1, 2, 4, 4)", "input: 3 programs x (2, 4, 4)",
        "filter: source (2, 2, 2, 2)", "filter: 3 programs x (2, 4, 4)",
        "output: source (1, 2, 3, 3)", "output: 3 programs x (4, 4)",
    ]
    # 9 output pixels in blocks of 4: the last program has one row, the rest
    # of its tile is white.
    _, _, _, _, output_source, output_arranged = fig.axes
    assert len(_face_colors(output_source)) == 3
    faces = output_arranged.collections[0].get_facecolors()
    white = [tuple(f) == (1.0, 1.0, 1.0, 1.0) for f in faces]
    assert white[32:] == [False] * 2 + [True] * 14


def test_program_colors_are_distinct():
    pytest.importorskip("matplotlib")
    for count in (1, 3, 10, 16, 40):
        colors = ntsym.visualization.program_colors(count)
        assert len(set(colors)) == count
