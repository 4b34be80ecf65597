"""Pictures of arrangements, as NineToothed's ``visualize`` and
``visualize_arrangement`` draw them, written to PNG files.

Both are built from the index maps (:func:`ntsym.eval` and
:func:`ntsym.debugging.simulate_arrangement`): no kernel runs, so they need
neither a GPU nor a window.  matplotlib is an optional dependency
(``pip install "ntsym[viz]"``), imported only when a picture is drawn.

A tensor of any rank is laid out on a grid: its last dimension along a row,
the one before it down a column, and earlier dimensions alternately repeat the
block so far to the right and downwards, one empty cell apart.
"""

import collections
import inspect
import itertools

import numpy as np

_CELL = 0.32  # inches per grid cell
_MAX_WIDTH = 16.0  # inches; larger pictures get smaller cells
_MAX_LABELS = 400  # cells per panel up to which each cell is labelled
_MAX_LEGEND = 32  # programs up to which a legend names their colours
_GAP = 3  # cells between panels
_EMPTY = "white"

_colors = itertools.count()


def visualize(tensor, color=None, save_path=None, *, subs=None):
    """Draw every level of the arranged ``tensor``, outermost on the left.

    Each level is a grid of its shape in ``color`` (by default the next of
    matplotlib's ``C0``, ``C1``, ... at each call, as in NineToothed).  Dashed
    lines lead from the first element of a level to the level inside it;
    every picture after the first shows that first element's contents, with
    cells that hold no element of the source left white.  The innermost level
    is labelled with the flat source offset of each element.

    ``subs`` gives sizes that are not concrete, as for :func:`ntsym.eval`
    (NineToothed's ``visualize`` has no such argument: its tensors must be
    concrete).  The picture is saved to ``save_path`` when one is given;
    returns the matplotlib figure, one axes per level.
    """
    mpl = _matplotlib()
    if color is None:
        color = f"C{next(_colors)}"
    offsets = tensor.eval(subs)
    panels = []
    for k, level in enumerate(tensor.hierarchy.levels):
        ndim = len(level.shape)
        exists = (offsets >= 0).reshape(offsets.shape[:ndim] + (-1,)).any(axis=-1)
        innermost = k == len(tensor.hierarchy.levels) - 1
        panels.append((offsets.shape[:ndim], [[color if e else _EMPTY] for e in exists.ravel()],
                       offsets if innermost else None))
        offsets = offsets[(0,) * ndim]

    grids = [_layout(shape) for shape, _, _ in panels]
    canvas = _Canvas(mpl, sum(g.width for g in grids) + _GAP * (len(grids) - 1),
                     max(g.height for g in grids))
    axes, x = [], 0
    for (shape, cell_colors, labels), grid in zip(panels, grids):
        axes.append(canvas.panel(x, 0, grid, _shape(shape)))
        canvas.draw(axes[-1], grid, cell_colors, labels)
        x += grid.width + _GAP
    for outer, inner, grid in zip(axes, axes[1:], grids[1:]):
        canvas.connect(outer, inner, grid.height)
    return _save(canvas.fig, save_path)


def visualize_arrangement(arrangement, tensors, save_path=None, *, subs=None):
    """Draw how ``arrangement`` splits ``tensors`` (torch tensors, as for
    NineToothed's) among programs: one colour per program.

    One row per tensor, named after the arrangement's parameters.  On the
    left, the source tensor, each element in the colour of every program that
    reads or writes it (side by side when several do, white when none) and
    labelled with its flat index.  On the right, what each program gets: the
    arranged tensor with its outermost level flattened, one program's levels
    per band, each element labelled with the source element it comes from and
    white where there is none.

    Block sizes must be concrete: bind them (``functools.partial(arrangement,
    BLOCK_SIZE=4)``) or give them in ``subs`` (symbol or name -> int).
    NineToothed's version opens an interactive window instead of taking
    ``save_path`` and ``subs``; this one returns the matplotlib figure (two
    axes per tensor) and saves it to ``save_path`` when one is given.
    """
    from ntsym.debugging import simulate_arrangement

    mpl = _matplotlib()
    bound = arrangement
    if subs:
        def bound(*args):
            arranged = arrangement(*args)
            arranged = arranged if isinstance(arranged, tuple) else (arranged,)
            return tuple(t.subs(subs) for t in arranged)

    sources, targets = simulate_arrangement(bound, tensors, device="cpu")
    names = list(inspect.signature(arrangement).parameters)[: len(sources)]
    # Scalars are not arranged: nothing to draw.
    rows = [(name, s.numpy(), t.numpy()) for name, s, t in zip(names, sources, targets) if s.ndim]
    programs = max((target.shape[0] for _, _, target in rows), default=1)
    colors = program_colors(programs)

    legend = 1 if programs <= _MAX_LEGEND else 0
    grids = [(_layout(source.shape), _layout(target.shape)) for _, source, target in rows]
    heights = [max(s.height, t.height) for s, t in grids]
    canvas = _Canvas(mpl, max(s.width + t.width for s, t in grids) + _GAP,
                     sum(heights) + 2 * (len(rows) - 1) + legend)
    y = legend
    for (name, source, target), (source_grid, target_grid), height in zip(rows, grids, heights):
        touched = [[] for _ in range(source.size)]
        for p in range(target.shape[0]):
            for index in np.unique(target[p][target[p] >= 0]):
                touched[index].append(colors[p])
        ax = canvas.panel(0, y, source_grid, f"{name}: source {_shape(source.shape)}")
        canvas.draw(ax, source_grid, [c or [_EMPTY] for c in touched], source)

        per_program = target.reshape(target.shape[0], -1)
        target_colors = [[colors[p] if i >= 0 else _EMPTY] for p in range(programs)
                         for i in per_program[p]]
        title = f"{name}: {target.shape[0]} programs x {_shape(target.shape[1:])}"
        ax = canvas.panel(source_grid.width + _GAP, y, target_grid, title)
        canvas.draw(ax, target_grid, target_colors, target)
        y += height + 2
    if legend:
        handles = [mpl.Rectangle((0, 0), 1, 1, facecolor=c, edgecolor="k") for c in colors]
        canvas.fig.legend(handles, [f"program {p}" for p in range(programs)], loc="upper left",
                          ncol=min(programs, 8), fontsize=8, frameon=False)
    return _save(canvas.fig, save_path)


def program_colors(count):
    """``count`` distinct colours (RGBA tuples), one per program."""
    mpl = _matplotlib()
    if count <= 10:
        return [mpl.colormaps["tab10"](p) for p in range(count)]
    if count <= 20:
        return [mpl.colormaps["tab20"](p) for p in range(count)]
    return [mpl.colormaps["turbo"](p / (count - 1)) for p in range(count)]


_Grid = collections.namedtuple("_Grid", "rows cols height width")


def _layout(shape):
    """The row and column of every element of ``shape`` (in row-major order)
    and the grid's height and width in cells (see the module docstring)."""
    shape = tuple(int(n) for n in shape)
    index = np.indices(shape).reshape(len(shape), -1) if shape else np.zeros((0, 1), int)
    place = np.zeros((2, index.shape[1]), dtype=int)
    extent = [1, 1]
    for k, dim in enumerate(reversed(range(len(shape)))):
        axis = 1 - k % 2  # columns for the last dimension, then rows, ...
        step = extent[axis] + (1 if k >= 2 else 0)
        place[axis] += index[dim] * step
        extent[axis] += (shape[dim] - 1) * step
    return _Grid(place[0], place[1], extent[0], extent[1])


class _Canvas:
    """A figure on a grid of square cells: panels are placed by cell, so a
    cell has one size in every panel."""

    _TITLE = 0.3  # inches above each panel
    _MARGIN = 0.1

    def __init__(self, mpl, cols, rows):
        self.mpl = mpl
        self.cell = min(_CELL, _MAX_WIDTH / max(cols, 1))
        self.width = cols * self.cell + 2 * self._MARGIN
        self.height = rows * self.cell + self._TITLE + 2 * self._MARGIN
        self.fig = mpl.Figure(figsize=(self.width, self.height), dpi=100)
        mpl.FigureCanvasAgg(self.fig)

    def panel(self, x, y, grid, title):
        """An axes for ``grid``, its top left corner at cell ``(x, y)``,
        titled above; data coordinates are cells, y downwards."""
        cols, rows = grid.width, grid.height
        left = self._MARGIN + x * self.cell
        top = self._MARGIN + self._TITLE + y * self.cell
        w, h = cols * self.cell, rows * self.cell
        ax = self.fig.add_axes((left / self.width, 1 - (top + h) / self.height,
                                w / self.width, h / self.height))
        ax.set_xlim(0, cols)
        ax.set_ylim(rows, 0)
        ax.axis("off")
        ax.set_title(title, fontsize=8, loc="left")
        return ax

    def draw(self, ax, grid, cell_colors, labels):
        """One unit square per element; a square several colours share is
        split into vertical stripes.  Labels (one per element) when few."""
        rows, cols = grid.rows, grid.cols
        patches, faces = [], []
        for r, c, colors in zip(rows, cols, cell_colors):
            width = 1 / len(colors)
            for k, color in enumerate(colors):
                patches.append(self.mpl.Rectangle((c + k * width, r), width, 1))
                faces.append(color)
        ax.add_collection(self.mpl.PatchCollection(patches, facecolors=faces, edgecolors="k",
                                                   linewidths=0.5, clip_on=False))
        if labels is not None and len(rows) <= _MAX_LABELS:
            size = min(7.0, self.cell * 72 * 0.4)
            for r, c, value in zip(rows, cols, np.ravel(labels)):
                if value >= 0:
                    ax.text(c + 0.5, r + 0.5, str(value), ha="center", va="center", fontsize=size)

    def connect(self, outer, inner, inner_rows):
        """Dashed lines from the first element of ``outer`` to the top and
        bottom of ``inner``'s left side."""
        for y_from, y_to in ((0, 0), (1, inner_rows)):
            self.fig.add_artist(self.mpl.ConnectionPatch(
                (1, y_from), (0, y_to), "data", "data", axesA=outer, axesB=inner,
                linestyle="--", color="k", linewidth=0.6))


def _save(fig, save_path):
    if save_path is not None:
        fig.savefig(save_path, dpi=100, bbox_inches="tight", pad_inches=0.05)
    return fig


def _shape(shape):
    shape = tuple(int(n) for n in shape)
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def _matplotlib():
    """The few matplotlib names used here, with the Agg canvas (no window
    toolkit is needed)."""
    try:
        import matplotlib
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.collections import PatchCollection
        from matplotlib.figure import Figure
        from matplotlib.patches import ConnectionPatch, Rectangle
    except ImportError as error:
        raise ImportError(
            'ntsym.visualization needs matplotlib: pip install "ntsym[viz]"'
        ) from error

    class Names:
        pass

    names = Names()
    names.colormaps = matplotlib.colormaps
    names.Figure, names.FigureCanvasAgg, names.PatchCollection = Figure, FigureCanvasAgg, PatchCollection
    names.ConnectionPatch, names.Rectangle = ConnectionPatch, Rectangle
    return names
