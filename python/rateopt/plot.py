"""Plots of training and results (matplotlib): ``pip install "rateopt[plot]"``.

* :func:`plot_trajectory`: a training run's recorded objective, constraint
  values and multipliers against the iteration;
* :func:`plot_group_rates`: per-group rates of a model, before and after;
* :func:`plot_tradeoff`: error against disparity over a slack sweep
  (:func:`rateopt.sweep`), the style of fairlearn's and TFCO's trade-off plots.

Each returns a matplotlib ``Figure`` created by ``matplotlib.pyplot`` on the
user's backend, so ``plt.show()``, notebooks and sphinx-gallery see it (close it
with ``plt.close(fig)`` when done); :func:`to_png` gives its PNG bytes. The
reports draw the same figures off pyplot (on the Agg canvas, no display, nothing
left open). The plotted values are exactly the inputs' (the tests read them back
from the figure's artists).
"""

from __future__ import annotations

import contextlib
import contextvars
import io
import warnings

import numpy as np

from .exceptions import RateoptError

__all__ = ["plot_trajectory", "plot_group_rates", "plot_tradeoff", "to_png"]


#: False inside ``_unmanaged()``: figures are then plain ``Figure`` objects on the Agg canvas, unknown to pyplot.
_MANAGED = contextvars.ContextVar("rateopt_plot_managed", default=True)


def _require_matplotlib():
    try:
        import matplotlib
    except ImportError:
        raise RateoptError("plots need matplotlib: python -m pip install \"rateopt[plot]\"") from None
    return matplotlib


@contextlib.contextmanager
def _unmanaged():
    """Within it, the plot functions make figures pyplot does not manage (headless: the reports use it)."""
    token = _MANAGED.set(False)
    try:
        yield
    finally:
        _MANAGED.reset(token)


def _figure(nrows=1, ncols=1, size=(7.0, 4.0)):
    _require_matplotlib()
    if _MANAGED.get():
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(nrows, ncols, squeeze=False, figsize=size, layout="constrained")
        return fig, axes
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=size, layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.subplots(nrows, ncols, squeeze=False)


def _legend_outside(ax, **kwargs):
    """The legend to the right of the axes, where it covers no data (constrained layout makes room)."""
    return ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, **kwargs)


def _value_axis(ax, values, label):
    """The bars' value axis: from 0, or zoomed onto the values when their differences are small beside them.

    Returns the number of decimals (3 to 6) that tells the values apart (for the labels on the bars).
    """
    finite = values[np.isfinite(values)]
    if not finite.size:
        ax.set_ylabel(label)
        return 3
    lo, hi = float(finite.min()), float(finite.max())
    span = hi - lo
    gaps = np.diff(np.unique(finite))
    digits = 3 if not gaps.size else int(np.clip(np.ceil(-np.log10(gaps.min())) + 1, 3, 6))
    if lo > 0 and span < 0.25 * hi:  # from 0 the bars would look equal: zoom, and say so on the axis
        pad = span * 0.5 if span > 0 else max(abs(hi) * 0.01, 1e-12)
        bottom, top = lo - pad, hi + pad
        ax.set_ylabel(f"{label} (axis zoomed, not from 0)")
    else:
        bottom, top = min(0.0, lo), max(0.0, hi)
        ax.set_ylabel(label)
    room = 0.3 * (top - bottom) if top > bottom else 1.0
    ax.set_ylim(bottom, top + room)  # room above the bars for their value labels
    return digits


def _trajectory_data(result):
    if isinstance(result, dict):
        return (np.asarray(result["iteration"], dtype=float), np.asarray(result["objective"], dtype=float),
                np.asarray(result["constraints"], dtype=float).reshape(len(result["iteration"]), -1),
                np.asarray(result["multipliers"], dtype=float).reshape(len(result["iteration"]), -1),
                list(result["constraint_names"]))
    k = getattr(result, "n_trivial", 0)  # trivial rules and window averages (iterations < 0): candidates, not iterates
    return (np.asarray(result.iterations, dtype=float)[k:], np.asarray(result.objectives)[k:],
            np.asarray(result.constraints)[k:], np.asarray(result.multipliers)[k:], list(result.constraint_names))


def plot_trajectory(result, *, max_constraints=10):
    """Training trajectory: objective, each constraint and each multiplier per recorded iterate.

    Parameters
    ----------
    result : TrainResult or dict
        A training result, or a report's ``"trajectory"`` entry (keys
        ``iteration``, ``objective``, ``constraints``, ``multipliers``,
        ``constraint_names``).
    max_constraints : int, default=10
        Plot at most this many constraints and multipliers (the first ones).

    Returns
    -------
    matplotlib.figure.Figure
        Three axes: the objective; the constraint values ``g_i`` (<= 0 holds,
        with the line 0); the multipliers (the objective's weight first).
    """
    it, obj, cons, lam, names = _trajectory_data(result)
    fig, axes = _figure(3, 1, size=(7.0, 7.5))
    ax_o, ax_c, ax_l = axes[:, 0]
    ax_o.plot(it, obj, label="objective", color="black")
    ax_o.set_ylabel("training objective")
    k = min(cons.shape[1], max_constraints)
    for i in range(k):
        ax_c.plot(it, cons[:, i], label=names[i])
    ax_c.axhline(0.0, color="gray", linestyle=":", linewidth=1)
    ax_c.set_ylabel("constraint g_i (<= 0 holds)")
    if k:
        _legend_outside(ax_c, fontsize="x-small")
    for i in range(min(lam.shape[1], max_constraints + 1)):
        ax_l.plot(it, lam[:, i], label="objective" if i == 0 else names[i - 1])
    ax_l.set_ylabel("multiplier")
    _legend_outside(ax_l, fontsize="x-small")
    ax_l.set_xlabel("iteration")
    ax_o.set_title("training trajectory")
    return fig


def _table(t):
    if hasattr(t, "reset_index"):
        t = t.reset_index()
        return {c: (t[c].tolist() if c in ("group", "value") else t[c].to_numpy(dtype=float)) for c in t.columns}
    return {k: (list(v) if k in ("group", "value") else np.asarray(v, dtype=float)) for k, v in t.items()}


def _row_names(t):
    return [f"{g}={v}" if g != "all" else "all" for g, v in zip(t["group"], t["value"])]


def plot_group_rates(after, *args, before=None, rate="tpr", labels=("before", "after"), split=None):
    """Per-group rates, side by side before and after (bars), each labelled with its value.

    The comparison is the keyword ``before=``; ``labels`` name ``before``'s
    bars then ``after``'s, in the order they are drawn (left, right). E.g.
    ``plot_group_rates(fair, before=unconstrained, labels=("unconstrained",
    "fair"))``.

    The value axis starts at 0 unless the values differ by little beside their
    size (less than a quarter of the largest): then it is zoomed onto them, so
    that a gap of 0.001 is visible, and its label says so. The legend is beside
    the axes, over no bar.

    Parameters
    ----------
    after : DataFrame or dict
        A :func:`rateopt.group_rates` table (the model shown).
    *args : DataFrame or dict
        Deprecated: ``before`` given as the second positional argument (the
        order of rateopt 0.x, opposite to ``labels``); it still works this
        release, with a ``DeprecationWarning``. Pass ``before=`` instead.
    before : DataFrame or dict, default=None
        Another table with the same rows (e.g. the unconstrained model's),
        drawn first (left bar of each group). Keyword only.
    rate : str, default="tpr"
        The column plotted (``"positive_rate"``, ``"tpr"``, ``"fpr"``, ``"error"``, ...).
    labels : tuple of str, default=("before", "after")
        Legend labels of ``before`` and ``after``, in that order.
    split : str, default=None
        The data the rates were measured on (``"train"``, ``"test"``, ...),
        shown in the title.

    Returns
    -------
    matplotlib.figure.Figure
        One bar per row of the table (``group=value``) and per table.
    """
    if args:
        if len(args) > 1 or before is not None:
            raise TypeError("plot_group_rates takes one positional table (after) and the comparison as before=")
        warnings.warn("plot_group_rates(after, before) is deprecated: pass the comparison as before= "
                      "(plot_group_rates(after, before=before)); the positional form goes in the next release",
                      DeprecationWarning, stacklevel=2)
        before = args[0]
    a = _table(after)
    if rate not in a:
        raise RateoptError(f"plot_group_rates: no rate column {rate!r}; columns: {[c for c in a if c not in ('group', 'value')]}")
    rows = _row_names(a)
    fig, axes = _figure(size=(max(6.0, 0.7 * len(rows) + 3.5), 4.0))
    ax = axes[0, 0]
    x = np.arange(len(rows))
    tables = [(labels[1], a)]
    if before is not None:
        b = _table(before)
        if _row_names(b) != rows:
            raise RateoptError("plot_group_rates: before and after must have the same rows")
        tables.insert(0, (labels[0], b))
    width = 0.8 / len(tables)
    digits = _value_axis(ax, np.concatenate([np.asarray(t[rate], dtype=float) for _, t in tables]), rate)
    for j, (label, t) in enumerate(tables):
        bars = ax.bar(x + (j - (len(tables) - 1) / 2) * width, np.nan_to_num(t[rate]), width, label=label)
        ax.bar_label(bars, labels=[f"{v:.{digits}f}" if np.isfinite(v) else "n/a" for v in t[rate]],
                     rotation=90, padding=2, fontsize="x-small")
    ax.set_xticks(x, rows, rotation=45, ha="right", fontsize="small")
    ax.set_title(f"{rate} per group" + (f" ({split} data)" if split else ""))
    _legend_outside(ax, fontsize="small")
    return fig


def plot_tradeoff(sweep_result, *, anchors=None, xlabel=None, ylabel=None, split="train"):
    """Objective (error) against disparity over a slack sweep, one point per slack.

    The title and the default axis labels say which data the points were
    measured on (``split``; :func:`rateopt.sweep` measures on the training data).

    Parameters
    ----------
    sweep_result : SweepResult or dict
        :func:`rateopt.sweep`'s result (or its ``as_dict()``).
    anchors : mapping of str to (disparity, error), default=None
        Further labelled points (e.g. the unconstrained model, another library).
    xlabel : str, default=None
        Default: ``"disparity on the <split> data (largest gap the goal bounds)"``.
    ylabel : str, default=None
        Label of the objective's axis. Default: ``"objective (error) on the <split> data"``.
    split : str, default="train"
        The data the points were measured on (``"train"``, ``"test"``, ...).

    Returns
    -------
    matplotlib.figure.Figure
        The curve (line and markers, each point annotated with its slack).
    """
    d = sweep_result.as_dict() if hasattr(sweep_result, "as_dict") else sweep_result
    x, y = np.asarray(d["disparity"], dtype=float), np.asarray(d["objective"], dtype=float)
    fig, axes = _figure(size=(7.5, 4.5))
    ax = axes[0, 0]
    ax.plot(x, y, marker="o", label=f"rateopt ({d.get('solution', '')})")
    for xi, yi, v in zip(x, y, d["values"]):
        ax.annotate(f"{d['parameter']}={v:g}", (xi, yi), textcoords="offset points", xytext=(4, 4), fontsize="x-small")
    for name, (ax_, ay) in (anchors or {}).items():
        ax.scatter([ax_], [ay], marker="s", label=name)
    data = "training data" if split == "train" else f"{split} data"
    ax.set_xlabel(xlabel or f"disparity on the {data} (largest gap the goal bounds)")
    ax.set_ylabel(ylabel or f"objective (error) on the {data}")
    ax.set_title(f"trade-off, measured on the {data}")
    _legend_outside(ax, fontsize="small")
    ax.grid(alpha=0.3)
    return fig


def to_png(fig, dpi=100):
    """Encode a figure as PNG.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure.
    dpi : int, default=100
        Resolution.

    Returns
    -------
    bytes
        The PNG file's bytes.
    """
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()
