"""Plots: the data behind each figure is the data it claims to show (read back from the artists)."""

import warnings

import numpy as np
import pytest

import rateopt

pytest.importorskip("matplotlib")
import matplotlib.pyplot as plt  # noqa: E402

from rateopt import plot  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def setup():
    X, y, g = rateopt.make_groups_dataset(1500, random_state=4)
    ds = rateopt.Dataset(X, y, groups={"group": g})
    eo = rateopt.goals.equal_opportunity("group", slack=0.05, sides="lower")
    problem = rateopt.Problem(constraints=[eo], datasets=ds)
    result = rateopt.train(problem, n_iter=150, learning_rate=0.05, eta_lambda=0.5, random_state=0)
    return problem, eo, result, (X, y, g)


def test_trajectory_plots_the_records(setup):
    _, _, result, _ = setup
    fig = plot.plot_trajectory(result)
    ax_o, ax_c, ax_l = fig.axes
    k = result.n_trivial  # the trivial rules are candidates, not iterates: not plotted
    np.testing.assert_array_equal(ax_o.lines[0].get_ydata(), result.objectives[k:])
    np.testing.assert_array_equal(ax_o.lines[0].get_xdata(), result.iterations[k:])
    for i in range(result.constraints.shape[1]):
        np.testing.assert_array_equal(ax_c.lines[i].get_ydata(), result.constraints[k:, i])
        assert ax_c.lines[i].get_label() == result.constraint_names[i]
    for i in range(result.multipliers.shape[1]):
        np.testing.assert_array_equal(ax_l.lines[i].get_ydata(), result.multipliers[k:, i])
    assert plot.to_png(fig)[:8] == b"\x89PNG\r\n\x1a\n"


def test_group_rates_bars_are_the_table(setup):
    _, _, result, (X, y, g) = setup
    after = rateopt.group_rates(y, result.solution().predict_proba(X)[:, 1], {"group": g}, as_frame=False)
    before = rateopt.group_rates(y, result.solution("last").predict_proba(X)[:, 1], {"group": g}, as_frame=False)
    fig = plot.plot_group_rates(after, before=before, rate="tpr")
    ax = fig.axes[0]
    n = len(after["value"])
    heights = [p.get_height() for p in ax.patches]
    assert heights[:n] == pytest.approx(before["tpr"].tolist()) and heights[n:] == pytest.approx(after["tpr"].tolist())
    assert [t.get_text() for t in ax.get_xticklabels()] == ["all", "group=A", "group=B"]
    with pytest.raises(rateopt.exceptions.RateoptError, match="no rate column"):
        plot.plot_group_rates(after, rate="recall")


def test_sweep_warm_starts_and_the_tradeoff_plot_shows_its_points(setup):
    problem, eo, _, _ = setup
    s = rateopt.sweep(problem, eo, [0.3, 0.1, 0.02], n_iter=120, learning_rate=0.05, eta_lambda=0.5,
                      random_state=0)
    assert s.values.tolist() == [0.3, 0.1, 0.02] and len(s.results) == 3
    for k in range(1, 3):  # each run starts at the previous run's chosen (last support) model
        prev = s.results[k - 1]
        last = np.flatnonzero(prev.mixture("m-stochastic") > 0)[-1]
        first = s.results[k].n_trivial  # the first recorded iterate, after the trivial rules
        np.testing.assert_array_equal(s.results[k].weights[first], prev.weights[last])
    for k, res in enumerate(s.results):  # the points are the runs' own solution values
        obj, g = res.solution_values("m-stochastic")
        assert s.objective[k] == pytest.approx(obj)
        assert s.disparity[k] == pytest.approx(np.max(g + s.values[k]))
    fig = plot.plot_tradeoff(s)
    line = fig.axes[0].lines[0]
    np.testing.assert_array_equal(line.get_xdata(), s.disparity)
    np.testing.assert_array_equal(line.get_ydata(), s.objective)
    with pytest.raises(rateopt.exceptions.RateoptError, match="not one of the problem's goals"):
        rateopt.sweep(problem, rateopt.goals.coverage_budget(0.3), [0.1])


def test_warm_start_of_the_wrong_shape_is_refused(setup):
    from rateopt._train import run_game

    problem, _, result, _ = setup
    with pytest.raises(ValueError, match="init must be"):
        run_game(problem, n_iter=2, init=(np.zeros(result.weights.shape[1] + 1), 0.0))
    warm = run_game(problem, n_iter=1, init=(result.weights[-1], result.biases[-1]))
    k = warm.n_trivial  # the first recorded iterate, after the trivial rules
    np.testing.assert_array_equal(warm.weights[k], result.weights[-1])
    assert warm.biases[k] == result.biases[-1]


def _table(values, groups=("all", "group", "group"), names=("all", "A", "B")):
    return {"group": list(groups), "value": list(names), "tpr": np.asarray(values, dtype=float)}


def _boxes(fig, *artists):
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    return [a.get_window_extent(renderer) for a in artists]


def test_group_rates_zoom_onto_small_gaps_and_label_every_bar():
    fig = plot.plot_group_rates(_table([0.9003, 0.9001, 0.9012]), split="test")
    ax = fig.axes[0]
    lo, hi = ax.get_ylim()
    assert 0.89 < lo < 0.9001 and hi > 0.9012  # not from 0: a gap of 0.001 is a third of the axis, not 0.1%
    assert (0.9012 - 0.9001) / (hi - lo) > 0.3
    assert "not from 0" in ax.get_ylabel() and ax.get_title() == "tpr per group (test data)"
    assert [t.get_text() for t in ax.texts] == ["0.90030", "0.90010", "0.90120"]  # the values, told apart
    # Gaps that are large beside the values: the axis starts at 0 and says nothing of zooming.
    ax = plot.plot_group_rates(_table([0.5, 0.2, 0.8]), before=_table([0.45, 0.3, 0.6])).axes[0]
    assert ax.get_ylim()[0] == 0.0 and ax.get_ylabel() == "tpr"
    assert [t.get_text() for t in ax.texts] == ["0.450", "0.300", "0.600", "0.500", "0.200", "0.800"]


def test_legends_cover_no_data():
    fig = plot.plot_group_rates(_table([0.5, 0.2, 0.8]), before=_table([0.45, 0.3, 0.6]))
    ax = fig.axes[0]
    legend, axes_box, fig_box = *_boxes(fig, ax.get_legend(), ax), fig.bbox
    assert legend.x0 >= axes_box.x1 and legend.x1 <= fig_box.x1  # beside the axes, inside the figure
    sweep = {"parameter": "slack", "values": [0.2, 0.1], "objective": [0.14, 0.15], "disparity": [0.2, 0.1],
             "solution": "m-stochastic"}
    fig = plot.plot_tradeoff(sweep, anchors={"unconstrained": (0.25, 0.13)})
    ax = fig.axes[0]
    legend, axes_box = _boxes(fig, ax.get_legend(), ax)
    assert legend.x0 >= axes_box.x1 and legend.x1 <= fig.bbox.x1


def test_tradeoff_says_which_data_it_shows():
    sweep = {"parameter": "slack", "values": [0.2, 0.1], "objective": [0.14, 0.15], "disparity": [0.2, 0.1],
             "solution": "m-stochastic"}
    ax = plot.plot_tradeoff(sweep).axes[0]
    assert ax.get_title() == "trade-off, measured on the training data"
    assert "training data" in ax.get_xlabel() and "training data" in ax.get_ylabel()
    ax = plot.plot_tradeoff(sweep, split="test", ylabel="error").axes[0]
    assert ax.get_title() == "trade-off, measured on the test data" and "test data" in ax.get_xlabel()


_SWEEP = {"parameter": "slack", "values": [0.2, 0.1], "objective": [0.14, 0.15], "disparity": [0.2, 0.1],
          "solution": "m-stochastic"}


def _every_plot(result):
    return {"trajectory": lambda: plot.plot_trajectory(result),
            "group_rates": lambda: plot.plot_group_rates(_table([0.5, 0.2, 0.8]), before=_table([0.4, 0.3, 0.6])),
            "tradeoff": lambda: plot.plot_tradeoff(_SWEEP)}


def test_every_figure_is_managed_by_pyplot(setup):
    """plt.show() and sphinx-gallery see the figures: pyplot knows them; plt.close() lets them go."""
    plt.close("all")
    for name, make in _every_plot(setup[2]).items():
        fig = make()
        assert fig.number in plt.get_fignums(), name
        assert plt.gcf() is fig, name  # the current figure, as after plt.subplots()
        plt.close(fig)
        assert fig.number not in plt.get_fignums(), name
    assert plt.get_fignums() == []


def test_unmanaged_figures_stay_off_pyplot(setup):
    """The reports' figures: drawn and encoded on the Agg canvas, none left open in pyplot."""
    plt.close("all")
    with plot._unmanaged():
        figs = [make() for make in _every_plot(setup[2]).values()]
    assert plt.get_fignums() == []
    for fig in figs:
        assert plot.to_png(fig)[:8] == b"\x89PNG\r\n\x1a\n"
    assert plt.get_fignums() == []
    assert plot.plot_tradeoff(_SWEEP).number in plt.get_fignums()  # the switch is undone on leaving


def test_group_rates_old_positional_order_is_deprecated_and_keeps_its_meaning():
    after, before = _table([0.5, 0.2, 0.8]), _table([0.4, 0.3, 0.6])
    with pytest.warns(DeprecationWarning, match="before="):
        old = plot.plot_group_rates(after, before, labels=("unconstrained", "fair"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        new = plot.plot_group_rates(before=before, after=after, labels=("unconstrained", "fair"))
    for fig in (old, new):  # before's bars first (left), then after's; the labels in the same order
        ax = fig.axes[0]
        heights = [p.get_height() for p in ax.patches]
        assert heights == pytest.approx([0.4, 0.3, 0.6, 0.5, 0.2, 0.8])
        assert [t.get_text() for t in ax.get_legend().get_texts()] == ["unconstrained", "fair"]
        assert ax.containers[0].get_label() == "unconstrained" and ax.containers[1].get_label() == "fair"
    with pytest.raises(TypeError, match="before="):
        plot.plot_group_rates(after, before, before=before)
