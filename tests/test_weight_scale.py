"""Rates do not depend on the scale of the example weights, up to the float64 maximum.

``Dataset`` / ``train`` / the estimator must give the same results for weights
``w`` and ``c * w`` with ``c`` as large as the weights stay finite (sums of such
weights overflow float64; rates are ratios of sums). The reference is the run
with unscaled weights and an independent NumPy count of weighted rates. A
scale that is a power of two rescales exactly, so those results are
bit-identical; other scales round each weight once, so those agree to ~1e-14.
"""

from __future__ import annotations

import numpy as np
import pytest

import rateopt
from rateopt import Dataset, Problem, RateConstrainedClassifier, positive_prediction_rate, train
from rateopt.exceptions import RateoptError

# 2**996 ~ 6.7e299 (exact); 1e300; 1e306 and 8.5e307 make the sum of 400 weights overflow.
SCALES = [2.0**996, 1e300, 1e306, 1.7e308 / 2]


def make(n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] + 0.5 * rng.normal(size=n) > 0).astype(np.int64)
    group = rng.integers(0, 2, n)
    w = rng.uniform(0.5, 2.0, n)
    return X, y, group, w


def goals():
    return [rateopt.goals.equal_opportunity("g", slack=0.02), rateopt.goals.coverage_budget(0.4)]


def numpy_rates(d, y, group, w):
    """Weighted error, coverage and per-group TPR of decisions ``d`` (NumPy, unscaled weights)."""
    def rate(mask):
        return np.sum(w[mask] * d[mask]) / np.sum(w[mask])
    err = np.sum(w * np.abs(d - y)) / np.sum(w)
    return err, rate(np.ones_like(y, dtype=bool)), [rate((y == 1) & (group == k)) for k in (0, 1)]


@pytest.mark.parametrize("scale", SCALES)
def test_evaluate_does_not_depend_on_the_weight_scale(scale):
    X, y, group, w = make()
    d = (X[:, 1] > 0.2).astype(np.float64)
    ref = Problem(constraints=goals(), datasets=Dataset(X, y, weights=w, groups={"g": group})).evaluate(d)
    big_ds = Dataset(X, y, weights=w * scale, groups={"g": group})
    assert np.all(np.isfinite(big_ds.weights)) and big_ds.weights.max() > 1e299
    big = Problem(constraints=goals(), datasets=big_ds).evaluate(d)
    err, cov, tprs = numpy_rates(d, y, group, w)
    assert big.objective == pytest.approx(err, abs=1e-12)
    assert big.rates["ppr[all]"] == pytest.approx(cov, abs=1e-12)
    assert big.rates["tpr[g=0]"] == pytest.approx(tprs[0], abs=1e-12)
    assert big.rates["tpr[g=1]"] == pytest.approx(tprs[1], abs=1e-12)
    assert list(big.constraints) == list(ref.constraints)
    np.testing.assert_allclose(list(big.constraints.values()), list(ref.constraints.values()), rtol=0, atol=1e-12)
    if scale == 2.0**996:
        assert big.constraints == ref.constraints and big.objective == ref.objective


@pytest.mark.parametrize("scale", SCALES)
def test_train_does_not_depend_on_the_weight_scale(scale):
    X, y, group, w = make()

    def fit(weights):
        ds = Dataset(X, y, weights=weights, groups={"g": group})
        problem = Problem(constraints=goals(), datasets=ds)
        return problem, train(problem, n_iter=300, eta_lambda=0.5)

    problem, ref = fit(w)
    big_problem, big = fit(w * scale)
    np.testing.assert_allclose(big.weights, ref.weights, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(big.constraints, ref.constraints, rtol=0, atol=1e-12)
    clf, big_clf = ref.solution(), big.solution()
    np.testing.assert_array_equal(big_clf.predict(X, random_state=1), clf.predict(X, random_state=1))
    proba = big_clf.predict_proba(X)[:, 1]
    ev = big_problem.evaluate(proba, kind="probabilities")
    err, cov, _ = numpy_rates(proba, y, group, w)
    assert ev.objective == pytest.approx(err, abs=1e-12)
    assert ev.rates["ppr[all]"] == pytest.approx(cov, abs=1e-12)
    if scale == 2.0**996:
        np.testing.assert_array_equal(big.weights, ref.weights)


@pytest.mark.parametrize("scale", [1e300, 1.7e308 / 2])
def test_estimator_does_not_depend_on_the_sample_weight_scale(scale):
    X, y, group, w = make(seed=1)
    fits = [RateConstrainedClassifier(goals=goals(), n_iter=200, eta_lambda=0.5).fit(X, y, groups={"g": group},
                                                                                      sample_weight=sw)
            for sw in (w, w * scale)]
    np.testing.assert_allclose(fits[1].predict_proba(X), fits[0].predict_proba(X), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(fits[1].predict(X), fits[0].predict(X))


def test_a_weighted_count_beyond_the_float64_range_is_a_clear_error():
    X, y, group, w = make()
    ds = Dataset(X, y, weights=w * 1e306)
    # Rates are fine, but the count itself (sum of weights ~ 5e308) is not representable.
    Problem(constraints=[positive_prediction_rate(ds.context()) <= 0.4])
    total = np.sum(w) * (1e306 / 1e308)  # NumPy, in units of 1e308
    with pytest.raises(RateoptError, match=rf"constraint 'pos_count\[all\] <= 10'.*weights of subset 'all' "
                                           rf"of dataset 'train' sum to about {total:.3f}e\+308, more than the "
                                           r"float64 maximum; rescale the weights"):
        Problem(constraints=[rateopt.positive_prediction_count(ds.context()) <= 10])
    assert ds.total_weight == np.inf
    assert Dataset(X, y, weights=w * 1e300).total_weight == pytest.approx(np.sum(w) * 1e300, rel=1e-12)


@pytest.mark.parametrize("bad,what", [(np.nan, "nan"), (np.inf, "inf"), (-np.inf, "-inf"), (-1.0, "-1.0")])
def test_bad_weights_name_the_argument_and_the_entry(bad, what):
    X, y, group, w = make(n=50)
    w = w.copy()
    w[7] = bad
    kind = "finite" if not np.isfinite(bad) else "non-negative"
    with pytest.raises(RateoptError, match=rf"^weights must be {kind}: weights\[7\] is {what}"):
        Dataset(X, y, weights=w)
    with pytest.raises(RateoptError, match=rf"^sample_weight must be {kind}: sample_weight\[7\] is {what}"):
        RateConstrainedClassifier(n_iter=5).fit(X, y, sample_weight=w)
