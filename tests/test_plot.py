"""Plots: the data behind each figure is the data it claims to show (read back from the artists)."""

import numpy as np
import pytest

import rateopt

pytest.importorskip("matplotlib")
from rateopt import plot  # noqa: E402


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
    np.testing.assert_array_equal(ax_o.lines[0].get_ydata(), result.objectives)
    np.testing.assert_array_equal(ax_o.lines[0].get_xdata(), result.iterations)
    for i in range(result.constraints.shape[1]):
        np.testing.assert_array_equal(ax_c.lines[i].get_ydata(), result.constraints[:, i])
        assert ax_c.lines[i].get_label() == result.constraint_names[i]
    for i in range(result.multipliers.shape[1]):
        np.testing.assert_array_equal(ax_l.lines[i].get_ydata(), result.multipliers[:, i])
    assert plot.to_png(fig)[:8] == b"\x89PNG\r\n\x1a\n"


def test_group_rates_bars_are_the_table(setup):
    _, _, result, (X, y, g) = setup
    after = rateopt.group_rates(y, result.solution().predict_proba(X), {"group": g}, as_frame=False)
    before = rateopt.group_rates(y, result.solution("last").predict_proba(X), {"group": g}, as_frame=False)
    fig = plot.plot_group_rates(after, before, rate="tpr")
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
        np.testing.assert_array_equal(s.results[k].weights[0], prev.weights[last])
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
    np.testing.assert_array_equal(warm.weights[0], result.weights[-1])
    assert warm.biases[0] == result.biases[-1]
