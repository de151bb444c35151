"""scikit-learn's estimator checks for ``RateConstrainedClassifier(model="boosting")`` (with the boosting extra)."""

import pytest

pytest.importorskip("lightgbm")

from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

from rateopt import RateConstrainedClassifier  # noqa: E402


def _expected_failures(estimator):
    if estimator.backend != "xgboost":
        return {}
    reason = ("not resolved: with XGBoost, a weight of 2 and a repeated row give ensembles whose 0-1 decisions "
              "differ at a point of the check's data (also with tree_method='exact'); LightGBM passes")
    return {"check_sample_weight_equivalence_on_dense_data": reason,
            "check_sample_weight_equivalence_on_sparse_data": reason}


@parametrize_with_checks([
    RateConstrainedClassifier(model="boosting", n_iter=30),
    RateConstrainedClassifier(model="boosting", backend="xgboost", n_iter=30),
], expected_failed_checks=_expected_failures)
def test_sklearn_compatible_boosting(estimator, check):
    if estimator.backend == "xgboost":
        pytest.importorskip("xgboost")
    check(estimator)
