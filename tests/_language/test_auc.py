"""ROC-AUC goals (issue 11 item 7; methods_spec §D.5): exact L-slice evaluation and its guarantee."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

import rateopt
from rateopt.metrics import roc_auc, roc_auc_lj


def brute_force_auc_lj(scores, y, L, thresholds, w=None):
    """Eq. 10 by the definition: a loop over slices and thresholds, rates by masked sums."""
    scores, y = np.asarray(scores, float), np.asarray(y)
    w = np.ones(len(scores)) if w is None else np.asarray(w, float)
    per_slice = []
    for l in range(1, L + 1):
        best = 0.0
        for a in thresholds:
            wp = sum(w[i] for i in range(len(scores)) if y[i] == 1 and scores[i] >= a)
            wn = sum(w[i] for i in range(len(scores)) if y[i] == 0 and scores[i] >= a)
            Wp, Wn = w[y == 1].sum(), w[y == 0].sum()
            if L * wn <= l * Wn:
                best = max(best, wp / Wp)
        per_slice.append(best)
    return math.fsum(per_slice) / L  # the exact sum, rounded once


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("L", [1, 3, 10])
def test_matches_brute_force_exactly(seed, L):
    rng = np.random.default_rng(seed)
    n = 40
    y = rng.integers(0, 2, n)
    y[:2] = [0, 1]
    scores = np.round(rng.normal(size=n) + 0.8 * y, 1)  # rounding makes ties
    for thresholds, kw in ((np.unique(scores), {}), ((2 * np.arange(1, 8) - 1) / 14, {"J": 7}),
                           (np.array([0.3, -0.2, 1.1]), {"thresholds": [0.3, -0.2, 1.1]})):
        got = roc_auc_lj(scores, y, L, **kw)
        assert got == brute_force_auc_lj(scores, y, L, thresholds)


@pytest.mark.parametrize("seed", range(4))
def test_weighted_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    n = 50
    y = rng.integers(0, 2, n)
    y[:2] = [0, 1]
    scores = np.round(rng.normal(size=n) + y, 1)
    w = rng.uniform(0.1, 3.0, n)
    got = roc_auc_lj(scores, y, 7, sample_weight=w)
    assert got == pytest.approx(brute_force_auc_lj(scores, y, 7, np.unique(scores), w), abs=1e-12)


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("L", [2, 5, 20, 100])
def test_tie_free_bracket_around_mann_whitney(seed, L):
    rng = np.random.default_rng(100 + seed)
    n = 300
    y = (rng.random(n) < rng.uniform(0.1, 0.9)).astype(int)
    y[:2] = [0, 1]
    scores = rng.normal(size=n) + rng.uniform(0, 2) * y
    assert np.unique(scores).size == n
    exact = roc_auc_score(y, scores)
    got = roc_auc_lj(scores, y, L)
    assert exact - 1e-12 <= got <= exact + 1.0 / L + 1e-12
    if L == 100:
        assert got - exact < 0.011


def test_slice_sum_is_an_upper_riemann_sum_not_exact():
    """The bracket is sharp enough to fail: some score vectors sit strictly inside it."""
    rng = np.random.default_rng(7)
    y = np.r_[np.zeros(50, int), np.ones(50, int)]
    scores = rng.normal(size=100) + y
    gaps = [roc_auc_lj(scores, y, L) - roc_auc_score(y, scores) for L in (2, 4, 8)]
    assert all(g > 0 for g in gaps) and gaps[0] > gaps[-1]


def test_ties_count_zero_in_the_step_curve():
    # every score tied: the only threshold gives TPR = FPR = 1, so only slice l = L counts.
    assert roc_auc_lj(np.zeros(6), [0, 1, 0, 1, 0, 1], L=4) == 0.25
    assert roc_auc_score([0, 1, 0, 1, 0, 1], np.zeros(6)) == 0.5


def test_bad_input():
    with pytest.raises(ValueError, match="y must hold 0/1"):
        roc_auc_lj([0.1, 0.2], [0, 2], L=2)
    with pytest.raises(ValueError, match="both classes"):
        roc_auc_lj([0.1, 0.2], [1, 1], L=2)
    with pytest.raises(ValueError, match="pass J or thresholds"):
        roc_auc_lj([0.1, 0.2], [0, 1], L=2, J=3, thresholds=[0.5])
    with pytest.raises(ValueError, match="L must be an integer >= 1"):
        roc_auc_lj([0.1, 0.2], [0, 1], L=0)
    with pytest.raises(ValueError, match="scores holds a non-finite"):
        roc_auc_lj([np.nan, 0.2], [0, 1], L=2)
    with pytest.raises(ValueError, match=r"y must have shape \(2,\)"):
        roc_auc_lj([0.1, 0.2], [0, 1, 1], L=2)


# --------------------------------------------------------------------------- the slice constraints


def test_roc_auc_constraints_and_guard_rails():
    ds = rateopt.Dataset(np.zeros((4, 1)), y=[0, 1, 1, 0])
    auc = roc_auc(ds.context(), L=5)
    cons = auc >= 0.9
    assert [c.name for c in cons] == [f"roc_auc: fpr slice {l}/5" for l in range(1, 5)] + [
        "roc_auc: slice bound >= 0.9"]
    assert len(auc.thresholds) == 4 and len({id(b) for b in auc.thresholds}) == 4
    with pytest.raises(rateopt.exceptions.RateoptError, match="from below only"):
        auc <= 0.9  # noqa: B015
    with pytest.raises(rateopt.exceptions.RateoptError, match="no truth value"):
        bool(auc)
    with pytest.raises(rateopt.exceptions.RateoptError, match="L must be an integer >= 2"):
        roc_auc(ds, L=1)
    with pytest.raises(rateopt.exceptions.RateoptError, match=r"min_auc"):
        rateopt.goals.roc_auc_floor(1.5)
    goal = rateopt.goals.roc_auc_floor(0.8, L=4)
    assert repr(goal) == "RocAucFloor(min_auc=0.8, L=4)"
    a, b = goal.bind(ds), goal.bind(ds)
    assert len(a) == 4 and a[0].expression is not b[0].expression  # fresh thresholds per bind


def test_doctests_of_the_auc_api():
    import doctest

    import rateopt._language._auc as auc_module
    import rateopt.core as core_module

    for obj in (auc_module.Threshold, auc_module.roc_auc, auc_module.roc_auc_lj, core_module.rate_kernel_offsets):
        for test in doctest.DocTestFinder().find(obj):
            runner = doctest.DocTestRunner()
            runner.run(test)
            assert runner.failures == 0, test.name
