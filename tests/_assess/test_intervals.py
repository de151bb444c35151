"""Intervals of rateopt.assess: Clopper–Pearson against scipy.stats.beta, the effective-count rule, Bonferroni,
the bootstrap's reproducibility and Hesterberg's expanded level against scipy.stats.t/norm, the
insufficient-evidence flag, and a small coverage simulation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import beta, norm, t as student_t

import rateopt as ro

pd = pytest.importorskip("pandas")


def _cp(x, n, alpha):
    """Clopper–Pearson by hand: beta quantiles (Clopper and Pearson, 1934)."""
    lo = 0.0 if x == 0 else beta.ppf(alpha / 2, x, n - x + 1)
    hi = 1.0 if x == n else beta.ppf(1 - alpha / 2, x + 1, n - x)
    return lo, hi


def test_clopper_pearson_matches_beta_quantiles():
    rng = np.random.default_rng(0)
    n = 400
    y = rng.integers(0, 2, n)
    p = (rng.random(n) < 0.3).astype(int)
    g = rng.choice(["a", "b", "c"], n)
    p[g == "c"] = 0  # x = 0 in every rate of group c: lower bound 0
    a = ro.assess(y, p, {"g": g}, metrics=["selection_rate", "tpr", "fpr"], ci=0.9)
    for v in "abc":
        m = g == v
        for name, den in [("selection_rate", m), ("tpr", m & (y == 1)), ("fpr", m & (y == 0))]:
            x, nn = int(p[den].sum()), int(den.sum())
            lo, hi = _cp(x, nn, 0.1)
            assert a.lower.loc[v, name] == pytest.approx(lo, rel=1e-9, abs=1e-14)
            assert a.upper.loc[v, name] == pytest.approx(hi, rel=1e-9)
            assert a.effective_count.loc[v, name] == nn
    assert a.lower.loc["c", "selection_rate"] == 0.0
    x, nn = int(p.sum()), n
    assert tuple(a.overall_interval.loc["selection_rate"]) == pytest.approx(_cp(x, nn, 0.1), rel=1e-9)
    assert a.methods["tpr"] == "clopper-pearson"


def test_all_successes_give_upper_one():
    a = ro.assess([1] * 40, [1] * 40, metrics="tpr")
    assert a.upper.iloc[0, 0] == 1.0 and a.lower.iloc[0, 0] == pytest.approx(_cp(40, 40, 0.05)[0], rel=1e-9)


def test_weighted_rates_use_the_kish_effective_count():
    rng = np.random.default_rng(1)
    n = 300
    y = rng.integers(0, 2, n)
    p = rng.random(n)  # expected decisions
    w = rng.gamma(2.0, 1.0, n)
    a = ro.assess(y, p, metrics="tpr", sample_weight=w)
    aw = w * y
    n_eff = aw.sum() ** 2 / (aw ** 2).sum()
    rate = (aw @ p) / aw.sum()
    x = rate * n_eff
    lo = beta.ppf(0.025, x, n_eff - x + 1)
    hi = beta.ppf(0.975, x + 1, n_eff - x)
    assert a.effective_count.iloc[0, 0] == pytest.approx(n_eff, rel=1e-12)
    assert (a.lower.iloc[0, 0], a.upper.iloc[0, 0]) == pytest.approx((lo, hi), rel=1e-9)


def test_simultaneous_intervals_are_bonferroni_over_cells():
    rng = np.random.default_rng(2)
    n = 500
    y, p = rng.integers(0, 2, n), rng.integers(0, 2, n)
    g = rng.choice(list("abcd"), n)
    a = ro.assess(y, p, g, metrics="selection_rate", simultaneous=True)
    for v in "abcd":
        m = g == v
        lo, hi = _cp(int(p[m].sum()), int(m.sum()), 0.05 / 4)
        assert (a.lower.loc[v, "selection_rate"], a.upper.loc[v, "selection_rate"]) == pytest.approx((lo, hi),
                                                                                                       rel=1e-9)
    # the overall interval stays at the nominal level
    assert tuple(a.overall_interval.loc["selection_rate"]) == pytest.approx(_cp(int(p.sum()), n, 0.05), rel=1e-9)


def _accuracy(y_true, y_pred):
    return float(np.mean(np.asarray(y_true) == np.asarray(y_pred)))


def test_bootstrap_is_seeded_and_per_cell():
    rng = np.random.default_rng(3)
    n = 300
    y, p = rng.integers(0, 2, n), rng.integers(0, 2, n)
    g = rng.choice(["a", "b"], n)
    first = ro.assess(y, p, g, metrics={"acc": _accuracy}, n_boot=200, random_state=7)
    again = ro.assess(y, p, g, metrics={"acc": _accuracy, "sr": "selection_rate"}, n_boot=200, random_state=7)
    other = ro.assess(y, p, g, metrics={"acc": _accuracy}, n_boot=200, random_state=8)
    pd.testing.assert_series_equal(first.lower["acc"], again.lower["acc"])
    assert not np.allclose(first.lower["acc"], other.lower["acc"])
    assert first.methods["acc"] == "bootstrap"
    assert ((first.lower["acc"] <= first.by_group["acc"]) & (first.by_group["acc"] <= first.upper["acc"])).all()


def _expanded_alpha(alpha, n):
    """Hesterberg (2015), by hand: alpha'/2 = Phi(-sqrt(n/(n-1)) t_{1-alpha/2, n-1})."""
    return 2 * norm.cdf(-np.sqrt(n / (n - 1)) * student_t.ppf(1 - alpha / 2, n - 1))


def test_expanded_alpha_matches_scipy_stats():
    from rateopt._assess._intervals import expanded_alpha

    for alpha in (0.05, 0.1, 0.05 / 4):
        for n in (2, 5, 10, 30, 100, 400, 57.3, 1e5):
            assert expanded_alpha(alpha, n) == pytest.approx(_expanded_alpha(alpha, n), rel=1e-10)
            assert expanded_alpha(alpha, n) < alpha
    # it narrows to the nominal level as n grows: 0.0461 at 100 rows, 0.0490 at 400 (95%)
    assert expanded_alpha(0.05, 100) == pytest.approx(0.04613, abs=5e-5)
    assert expanded_alpha(0.05, 400) == pytest.approx(0.04902, abs=5e-5)
    assert expanded_alpha(0.05, 1e6) == pytest.approx(0.05, rel=1e-4)
    # n <= 1: the formula's limit (alpha' -> 0 as n -> 1+), the range of the draws
    assert expanded_alpha(0.05, 1.0) == 0.0 and expanded_alpha(0.05, 0.5) == 0.0
    assert expanded_alpha(0.05, 1.0001) < 1e-12


def test_bootstrap_matches_the_documented_resampling():
    """Cell i resamples its rows with numpy.random.default_rng([random_state, i]); quantiles at Hesterberg's
    expanded level alpha' for the cell's row count (was the plain percentile level alpha = 0.05 before the
    small-sample correction; the resampling itself is unchanged)."""
    rng = np.random.default_rng(4)
    n = 120
    y, p = rng.integers(0, 2, n), rng.integers(0, 2, n)
    g = rng.choice(["a", "b"], n)
    a = ro.assess(y, p, g, metrics={"acc": _accuracy}, n_boot=300, random_state=11)
    for i, v in enumerate(["a", "b"], start=1):  # cell 0 is the whole data
        rows = np.flatnonzero(g == v)
        r = np.random.default_rng([11, i])
        draws = []
        for _ in range(300):
            idx = rows[np.sort(r.integers(0, len(rows), len(rows)))]
            draws.append(_accuracy(y[idx], p[idx]))
        level = _expanded_alpha(0.05, len(rows))
        lo, hi = np.quantile(draws, [level / 2, 1 - level / 2])
        assert (a.lower.loc[v, "acc"], a.upper.loc[v, "acc"]) == pytest.approx((lo, hi), rel=1e-12)
        plain = np.quantile(draws, [0.025, 0.975])
        assert lo <= plain[0] and plain[1] <= hi  # expanded: never narrower than the plain percentile interval


def _wacc(y_true, y_pred, sample_weight=None):
    return float(np.average(np.asarray(y_true) == np.asarray(y_pred), weights=sample_weight))


def test_bootstrap_level_uses_the_kish_count_and_bonferroni():
    """With weights, n is the cell's Kish effective count; with simultaneous=True the expansion applies to the
    Bonferroni level alpha / m."""
    rng = np.random.default_rng(6)
    n = 90
    y, p = rng.integers(0, 2, n), rng.integers(0, 2, n)
    w = rng.gamma(0.5, 1.0, n)  # very uneven: n_eff well below the row count
    g = np.array(["a"] * 40 + ["b"] * 50)
    a = ro.assess(y, p, g, metrics={"acc": _wacc}, sample_weight=w, n_boot=400, random_state=3,
                  simultaneous=True)
    for i, v in enumerate(["a", "b"], start=1):
        rows = np.flatnonzero(g == v)
        n_eff = w[rows].sum() ** 2 / (w[rows] ** 2).sum()
        assert n_eff < 0.8 * len(rows)
        assert a.effective_count.loc[v, "acc"] == pytest.approx(n_eff, rel=1e-12)
        r = np.random.default_rng([3, i])
        draws = []
        for _ in range(400):
            idx = rows[np.sort(r.integers(0, len(rows), len(rows)))]
            draws.append(_wacc(y[idx], p[idx], sample_weight=w[idx]))
        level = _expanded_alpha(0.05 / 2, n_eff)
        lo, hi = np.quantile(draws, [level / 2, 1 - level / 2])
        assert (a.lower.loc[v, "acc"], a.upper.loc[v, "acc"]) == pytest.approx((lo, hi), rel=1e-12)


def test_insufficient_evidence_flag():
    rng = np.random.default_rng(5)
    n = 400
    y, p = rng.integers(0, 2, n), rng.integers(0, 2, n)
    g = np.array(["big"] * 380 + ["small"] * 20)
    y[g == "small"] = 0  # no positive row: TPR undefined
    a = ro.assess(y, p, g, metrics=["selection_rate", "tpr", "fpr"], min_count=30)
    flags = a.insufficient
    assert not flags.loc["big"].any()
    assert flags.loc["small"].all()  # 20 rows < 30, and TPR is NaN
    assert np.isnan(a.by_group.loc["small", "tpr"]) and np.isnan(a.lower.loc["small", "tpr"])
    assert not ro.assess(y, p, g, metrics="selection_rate", min_count=20).insufficient.loc["small"].all()


def test_no_intervals_when_ci_is_none():
    a = ro.assess([0, 1, 1, 0], [0, 1, 0, 0], metrics={"tpr": "tpr", "acc": _accuracy}, ci=None)
    assert a.lower.isna().all().all() and a.confidence is None


def test_clopper_pearson_coverage_small_simulation():
    """200 replicates of 3 groups of known rates: coverage >= 0.95 - 3 Monte-Carlo SE (= 0.904)."""
    rng = np.random.default_rng(20261127)
    rates, sizes = np.array([0.1, 0.5, 0.8]), np.array([40, 80, 150])
    g = np.repeat(["a", "b", "c"], sizes)
    reps, covered = 200, np.zeros(3)
    for _ in range(reps):
        p = (rng.random(sizes.sum()) < np.repeat(rates, sizes)).astype(int)
        a = ro.assess(None, p, g, metrics="selection_rate")
        covered += (a.lower["selection_rate"].to_numpy() <= rates) & (rates <= a.upper["selection_rate"].to_numpy())
    coverage = covered / reps
    assert np.all(coverage >= 0.95 - 3 * np.sqrt(0.95 * 0.05 / reps)), coverage


def test_bootstrap_coverage_small_simulation():
    """100 replicates, cells of 150 rows, accuracy (a callable, so bootstrapped) of known value 0.7:
    coverage >= 0.93 - 3 Monte-Carlo SE (= 0.853)."""
    rng = np.random.default_rng(7)
    reps, n, covered = 100, 150, 0
    for _ in range(reps):
        y = rng.integers(0, 2, n)
        p = np.where(rng.random(n) < 0.7, y, 1 - y)
        a = ro.assess(y, p, metrics={"acc": _accuracy}, n_boot=300, random_state=int(rng.integers(1 << 30)))
        covered += a.lower.iloc[0, 0] <= 0.7 <= a.upper.iloc[0, 0]
    assert covered / reps >= 0.93 - 3 * np.sqrt(0.93 * 0.07 / reps), covered / reps
