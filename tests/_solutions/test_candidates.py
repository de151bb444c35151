"""Window averages of the iterates among the m-stochastic solution's candidates (issue 36).

References are independent of the library's averaging and scoring: each
window's average is the NumPy mean of the recorded iterates' weights and
biases over iterations ``[50 j, 50 j + 50)``; its training error and its
constraint values are recounted by hand from its scores on the rows (a
positive decision where ``x . w + b >= 0``, or the arg-max class), the labels
and the groups.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import rateopt as ro
from rateopt._solutions._candidates import AVERAGE_ITERATION, AVERAGE_WINDOW, window_averages


def _data(K, seed=0, n=400):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    g = np.where(rng.random(n) < 0.3, "b", "a")
    if K == 2:
        y = (X @ np.array([1.0, -0.5, 0.3]) + 0.8 * (g == "b") + rng.normal(size=n) > 0.5).astype(int)
    else:
        y = np.argmax(X @ rng.normal(size=(3, K)) + rng.gumbel(size=(n, K)), axis=1)
    return X, y, g


def _train(X, y, g, K, **kwargs):
    if K == 2:
        ds, goal = ro.Dataset(X, y, groups={"g": g}), ro.goals.demographic_parity("g", slack=0.02)
    else:
        ds, goal = ro.ClassDataset(X, y, groups={"g": g}), ro.goals.multiclass_demographic_parity("g", slack=0.05)
    problem = ro.Problem(constraints=[goal], datasets=ds)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ro.train(problem, random_state=0, **kwargs)


def _decisions(w, b, X, K):
    """Hand decisions: positive iff the score is >= 0 (two classes), the arg-max class (K)."""
    if K == 2:
        return (X @ w + b >= 0).astype(int)
    return np.argmax(X @ np.asarray(w).T + b, axis=1)


@pytest.mark.parametrize("K", [2, 3])
def test_window_averages_are_the_recounted_means_of_their_windows(K):
    X, y, g = _data(K)
    res = _train(X, y, g, K, n_iter=130)
    avg = np.flatnonzero(res.iterations == AVERAGE_ITERATION)
    its = np.flatnonzero(res.iterations >= 0)
    assert avg.size == 130 // AVERAGE_WINDOW == 2  # windows [0, 50) and [50, 100); [100, 130) is incomplete
    # trivial rules, then averages, then (two classes) the averages' threshold rules
    n_rules = int(np.sum(res.iterations == -3))
    assert (n_rules > 0) == (K == 2)
    assert res.n_trivial == K + 2 + n_rules and np.all(res.iterations[:K] == -1)
    assert np.all(res.iterations[K:K + 2] == AVERAGE_ITERATION) and np.all(res.iterations[K + 2:res.n_trivial] == -3)
    assert np.array_equal(res.iterations[its], np.arange(130))
    for j, row in enumerate(avg):
        window = its[j * AVERAGE_WINDOW:(j + 1) * AVERAGE_WINDOW]
        w, b = res.weights[window].mean(axis=0), res.biases[window].mean(axis=0)
        np.testing.assert_allclose(res.weights[row], w, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(res.biases[row], b, rtol=1e-12, atol=1e-15)
        pred = _decisions(w, b, X, K)
        assert res.objectives[row] == pytest.approx(np.mean(pred != y), abs=1e-12)
        # demographic parity recounted: positive rate (two classes) or each class's rate (K) per group
        if K == 2:
            rate = lambda m: np.mean(pred[m])  # noqa: E731
            gaps = [rate(g == c) - rate(np.ones_like(y, bool)) for c in ("a", "b")]
        else:
            gaps = [np.mean(pred[g == c] == k) - np.mean(pred == k) for k in range(K) for c in ("a", "b")]
        worst = max(max(gaps) - (0.02 if K == 2 else 0.05), max(-x for x in gaps) - (0.02 if K == 2 else 0.05))
        assert res.constraints[row].max() == pytest.approx(worst, abs=1e-12)


def test_the_averages_are_candidates_of_the_lp_only():
    X, y, g = _data(2)
    res = _train(X, y, g, 2, n_iter=120)
    k = res.n_trivial
    assert len(res.history["iteration"]) == 120 and np.all(res.history["iteration"] >= 0)
    for kind in ("T-stochastic", "best", "last"):
        assert np.all(res.mixture(kind)[:k] == 0)
    # The LP over every candidate is no worse than the LP over the trivial rules and the iterates alone.
    from rateopt._solutions._shrink import shrink

    keep = np.flatnonzero(res.iterations != AVERAGE_ITERATION)
    assert res.shrink().objective <= shrink(res.objectives[keep], res.constraints[keep]).objective + 1e-12


def test_no_window_is_averaged_without_every_iterate_of_it():
    X, y, g = _data(2)
    assert not np.any(_train(X, y, g, 2, n_iter=49).iterations == AVERAGE_ITERATION)
    # every 2nd iterate recorded: no window is complete
    assert not np.any(_train(X, y, g, 2, n_iter=200, record_every=2).iterations == AVERAGE_ITERATION)


def test_window_averages_survive_save_and_load(tmp_path):
    X, y, g = _data(2)
    res = _train(X, y, g, 2, n_iter=100)
    res.save(tmp_path / "r.npz")
    back = ro.load(tmp_path / "r.npz")
    assert back.n_trivial == res.n_trivial == 4 + np.sum(res.iterations == -3)
    np.testing.assert_array_equal(back.iterations, res.iterations)
    np.testing.assert_array_equal(back.mixture("m-stochastic"), res.mixture("m-stochastic"))


def test_window_averages_of_plain_sequences():
    its = [0, 1, 2, 3, 4, 6, 7, 8, 9]  # iteration 5 missing: the window [4, 8) is incomplete
    w = [np.array([float(t), 1.0]) for t in its]
    b = [float(-t) for t in its]
    lam = [np.array([1.0, 0.0]) for _ in its]
    out = window_averages(its, w, b, lam, window=4)
    assert [o[3] for o in out] == [0]
    np.testing.assert_array_equal(out[0][0], [1.5, 1.0])
    assert out[0][1] == -1.5
    with pytest.raises(ValueError, match="window"):
        window_averages(its, w, b, lam, window=0)


def test_no_window_averages_for_a_metric_objective():
    # A non-linear metric's LP only bounds a mixture's value: the averages are left out there.
    from rateopt import metrics as M

    X, y, g = _data(2)
    ds = ro.Dataset(X, y, groups={"g": g})
    problem = ro.Problem(objective=-M.f_measure(ds.context()), datasets=ds)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = ro.train(problem, method="three-player", n_iter=60, record_every=1, random_state=0)
    assert np.array_equal(res.iterations, np.r_[-1, -1, np.arange(60)])
