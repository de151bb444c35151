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
