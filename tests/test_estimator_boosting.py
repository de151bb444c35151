"""scikit-learn's estimator checks for ``RateConstrainedClassifier(model="boosting")`` (with the boosting extra).

Both backends pass every check, the sample-weight equivalence checks included: with XGBoost they failed
while a row of weight 0 stayed in the DMatrix unweighted (its feature values moved the histogram cuts);
tests/_training/test_boosting.py tests that cause directly.
"""

import pytest

pytest.importorskip("lightgbm")

from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

from rateopt import RateConstrainedClassifier  # noqa: E402


@parametrize_with_checks([
    RateConstrainedClassifier(model="boosting", n_iter=30),
    RateConstrainedClassifier(model="boosting", backend="xgboost", n_iter=30),
])
def test_sklearn_compatible_boosting(estimator, check):
    if estimator.backend == "xgboost":
        pytest.importorskip("xgboost")
    check(estimator)


def test_k_class_estimator_predicts_the_boosted_mixtures_class_distribution():
    """Three classes: ``predict_proba`` is (n, 3), the m-stochastic boosted mixture's, recounted from each
    support prefix's argmax of LightGBM's own scores; labels are the training labels."""
    import numpy as np

    import rateopt

    rng = np.random.default_rng(0)
    n = 900
    g = rng.random(n) < 0.4
    X = np.column_stack([rng.normal(size=(n, 3)) + 0.7 * g[:, None], g])
    y = np.array(["lo", "mid", "hi"])[np.digitize(X[:, 0] + rng.normal(0, 0.6, n), [-0.2, 1.0])]
    est = RateConstrainedClassifier(model="boosting", n_iter=30,
                                    goals=[rateopt.goals.multiclass_demographic_parity("group", slack=0.05)],
                                    random_state=0)
    est.fit(X, y, groups={"group": g})
    assert est.multiclass_ and list(est.classes_) == ["hi", "lo", "mid"]
    P = est.predict_proba(X)
    clf = est.classifier_
    booster = clf.booster.booster
    want = np.zeros((n, 3))
    for t, p in zip(clf.prefix_lengths_, clf.probabilities_):
        S = booster.predict(X, num_iteration=int(t), raw_score=True) if t else np.zeros((n, 3))
        want[np.arange(n), np.argmax(S, axis=1)] += p
    np.testing.assert_allclose(P, want, rtol=0, atol=1e-12)
    assert set(est.predict(X)) <= {"hi", "lo", "mid"}
    assert est.feasibility_.feasible
