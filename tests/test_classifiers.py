"""Trained classifiers: mixtures, content-keyed sampling, save/load (``rateopt._classifiers``).

Expected values are independent NumPy computations (decisions ``X @ w + b >= 0``
and their probability-weighted mean); the sampled decisions are checked for
batch-independence by predicting shuffled chunks and mapping them back, and
for their distribution with a binomial tolerance.
"""

from __future__ import annotations

import json
import math
import zipfile

import numpy as np
import pytest
import scipy.sparse as sp

import rateopt
from rateopt import (
    Dataset,
    LinearClassifier,
    Problem,
    StochasticClassifier,
    load,
    positive_prediction_rate,
    train,
)
from rateopt.exceptions import RateoptError

N_FEATURES = 5


def random_mixture(rng, k=4, d=N_FEATURES):
    W = rng.normal(size=(k, d))
    b = rng.normal(scale=0.5, size=k)
    p = rng.dirichlet(np.ones(k))
    return StochasticClassifier(W, b, p)


def float32_exact(rng, n, d=N_FEATURES, density=0.6):
    """Dense float64 features exactly representable in float32, with many exact zeros."""
    X = rng.normal(size=(n, d)).astype(np.float32).astype(np.float64)
    X[rng.random((n, d)) > density] = 0.0
    return X


def as_format(X, fmt):
    if fmt == "dense64":
        return np.ascontiguousarray(X, dtype=np.float64)
    if fmt == "dense32":
        return np.ascontiguousarray(X, dtype=np.float32)
    if fmt == "csr64":
        return sp.csr_matrix(X.astype(np.float64))
    if fmt == "csr32":
        return sp.csr_matrix(X.astype(np.float32))
    raise AssertionError(fmt)


def support_decisions(X, clf):
    """(n_models, n) 0/1 decisions of the support models (NumPy)."""
    return (X @ clf.weights_.T + clf.biases_ >= 0).T.astype(np.float64)


@pytest.fixture(scope="module")
def trained():
    """A real training run with a binding coverage constraint (m-stochastic has 2 models)."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(300, 3))
    y = (X[:, 0] + 0.3 * rng.normal(size=300) > 0).astype(np.int64)
    ds = Dataset(X, y)
    problem = Problem(constraints=[positive_prediction_rate(ds.context()) <= 0.3])
    res = train(problem, n_iter=300, eta_lambda=0.5)
    return X, res


# --------------------------------------------------------------------------- #
# predict_proba and the sampled predictions
# --------------------------------------------------------------------------- #


def test_predict_proba_is_the_weighted_mean_of_support_decisions():
    rng = np.random.default_rng(0)
    clf = random_mixture(rng, k=5)
    X = rng.normal(size=(2000, N_FEATURES))
    expected = clf.probabilities_ @ support_decisions(X, clf)
    np.testing.assert_allclose(clf.predict_proba(X), expected, rtol=0, atol=1e-15)
    assert clf.predict_proba(X).shape == (2000,)
    np.testing.assert_allclose(clf.scores(X), X @ clf.weights_.T + clf.biases_, rtol=1e-12, atol=1e-12)


def test_trained_mixture_predict_proba(trained):
    X, res = trained
    clf = res.solution("m-stochastic")
    assert clf.n_models == 2
    expected = clf.probabilities_ @ support_decisions(X, clf)
    np.testing.assert_allclose(clf.predict_proba(X), expected, rtol=0, atol=1e-15)
    assert expected.mean() <= 0.3 + 1e-9


def test_predict_proba_of_a_uniform_mixture_of_1000_models_lies_in_0_1():
    # Regression: summing 1000 probabilities of 1/1000 gave 1.0000000000000007, which
    # Problem.evaluate(kind="probabilities") rejected.
    rng = np.random.default_rng(10)
    k = 1000
    W = np.abs(rng.normal(size=(k, N_FEATURES)))
    b = rng.normal(scale=0.5, size=k)
    clf = StochasticClassifier(W, b, np.full(k, 1.0 / k))
    X = np.vstack([np.abs(rng.normal(size=(200, N_FEATURES))) + 5.0,  # every model says positive
                   -np.abs(rng.normal(size=(200, N_FEATURES))) - 5.0,  # every model says negative
                   rng.normal(size=(200, N_FEATURES))])  # mixed
    positives = (X @ W.T + b >= 0).sum(axis=1)  # NumPy count of positive support models per row
    assert (positives == k).sum() >= 200 and (positives == 0).sum() >= 200
    assert ((positives > 0) & (positives < k)).sum() > 50  # the mixed rows are informative
    proba = clf.predict_proba(X)
    assert proba.min() >= 0.0 and proba.max() <= 1.0
    np.testing.assert_array_equal(proba[positives == k], 1.0)
    np.testing.assert_array_equal(proba[positives == 0], 0.0)
    np.testing.assert_allclose(proba, positives / k, rtol=0, atol=1e-12)
    ds = Dataset(X)
    problem = Problem(objective=positive_prediction_rate(ds.context()),
                      constraints=[positive_prediction_rate(ds.context()) <= 0.5])
    ev = problem.evaluate(proba, kind="probabilities")
    assert ev.rates["ppr[all]"] == pytest.approx(positives.mean() / k, abs=1e-12)


@pytest.mark.parametrize("model", ["linear", "kernel"])
@pytest.mark.parametrize("kind", ["m-stochastic", "T-stochastic", "best", "last"])
def test_predict_proba_of_every_trained_solution_lies_in_0_1(model, kind):
    # 1000 recorded iterates: the uniform T-stochastic mixture used to exceed 1 on
    # rows where every iterate says positive.
    rng = np.random.default_rng(7)
    X = rng.normal(size=(300, 3))
    y = (X[:, 0] + 0.3 * rng.normal(size=300) > 0).astype(np.int64)
    ds = Dataset(X, y)
    problem = Problem(constraints=[positive_prediction_rate(ds.context()) <= 0.3])
    spec = None if model == "linear" else rateopt.KernelModel(gamma=0.5, n_components=50, random_state=0)
    res = train(problem, spec, n_iter=1000, record_every=1, eta_lambda=0.5)
    assert res.weights.shape[0] == 1000
    clf = res.solution(kind)
    proba = clf.predict_proba(X)
    assert proba.min() >= 0.0 and proba.max() <= 1.0
    if isinstance(clf, StochasticClassifier):  # independent reference: decisions of the support models
        S = clf.scores(X)
        expected = (S >= 0).astype(np.float64) @ clf.probabilities_
        np.testing.assert_allclose(proba, expected, rtol=0, atol=1e-12)
        np.testing.assert_array_equal(proba[(S >= 0).all(axis=1)], 1.0)
        np.testing.assert_array_equal(proba[(S < 0).all(axis=1)], 0.0)
    ev = problem.evaluate(proba, kind="probabilities")
    assert ev.rates["ppr[all]"] == pytest.approx(proba.mean(), abs=1e-12)


@pytest.mark.parametrize("random_state", [0, 1, 2**40 + 3])
def test_sampled_decisions_match_predict_proba_in_distribution(random_state):
    rng = np.random.default_rng(1)
    clf = random_mixture(rng, k=3)
    X = rng.normal(size=(20000, N_FEATURES))
    proba = clf.predict_proba(X)
    pred = clf.predict(X, random_state=random_state)
    assert pred.dtype.kind == "i"
    assert set(np.unique(pred)) <= {0, 1}
    # Each row is positive with probability proba[i], independently: binomial tolerance.
    sd = math.sqrt(np.sum(proba * (1 - proba)))
    assert sd > 10  # the test is informative: many rows are genuinely random
    assert abs(pred.sum() - proba.sum()) <= 5 * sd
    # A row whose support models agree gets their decision whatever the draw.
    sure = (proba == 0) | (proba == 1)
    assert sure.any()
    np.testing.assert_array_equal(pred[sure], proba[sure])
    # Which model is drawn is spread according to the mixture, too: among rows where only
    # model 0 says positive, the positive fraction estimates p_0.
    D = support_decisions(X, clf)
    only0 = (D[0] == 1) & (D[1:] == 0).all(axis=0)
    p0 = clf.probabilities_[0]
    n0 = int(only0.sum())
    assert n0 > 500
    assert abs(pred[only0].mean() - p0) <= 5 * math.sqrt(p0 * (1 - p0) / n0)


def test_different_keys_give_different_draws():
    rng = np.random.default_rng(2)
    clf = random_mixture(rng, k=3)
    X = rng.normal(size=(5000, N_FEATURES))
    a, b = clf.predict(X, random_state=0), clf.predict(X, random_state=1)
    assert not np.array_equal(a, b)
    np.testing.assert_array_equal(clf.predict(X), a)  # default key is 0
    np.testing.assert_array_equal(clf.predict(X, random_state=None), a)


@pytest.mark.parametrize("fmt", ["dense64", "dense32", "csr64", "csr32"])
def test_predict_is_consistent_per_row_across_batches(fmt):
    rng = np.random.default_rng(3)
    clf = random_mixture(rng, k=4)
    X64 = float32_exact(rng, 3000)
    X = as_format(X64, fmt)
    whole = clf.predict(X, random_state=11)
    # Shuffled chunks of unequal sizes, mapped back to the original rows.
    perm = rng.permutation(X64.shape[0])
    cuts = np.sort(rng.choice(np.arange(1, X64.shape[0]), size=6, replace=False))
    out = np.empty_like(whole)
    for chunk in np.split(perm, cuts):
        out[chunk] = clf.predict(X[chunk], random_state=11)
    np.testing.assert_array_equal(out, whole)
    # Single rows too.
    for i in rng.choice(X64.shape[0], size=20, replace=False):
        assert clf.predict(X[i:i + 1], random_state=11)[0] == whole[i]
    # The same values in any layout or precision give the same decisions.
    np.testing.assert_array_equal(whole, clf.predict(X64, random_state=11))
    np.testing.assert_array_equal(clf.predict_proba(X), clf.predict_proba(X64))


def test_duplicate_rows_get_the_same_decision():
    rng = np.random.default_rng(4)
    clf = random_mixture(rng, k=3)
    row = rng.normal(size=(1, N_FEATURES))
    X = np.repeat(row, 50, axis=0)
    assert len(set(clf.predict(X, random_state=5).tolist())) == 1


def test_csr_with_unsorted_and_explicit_zero_entries():
    rng = np.random.default_rng(5)
    clf = random_mixture(rng, k=3)
    X = float32_exact(rng, 200)
    csr = sp.csr_matrix(X)
    # Reverse the column order inside every row and add an explicit zero entry per row.
    rows, cols, vals = [], [], []
    for i in range(X.shape[0]):
        js = np.flatnonzero(X[i])[::-1]
        rows += [i] * (js.size + 1)
        cols += list(js) + [0 if X[i, 0] == 0 else -1]
        vals += list(X[i, js]) + [0.0]
    keep = np.array(cols) >= 0
    messy = sp.csr_matrix((np.array(vals)[keep], np.array(cols)[keep],
                           np.r_[0, np.cumsum(np.bincount(np.array(rows)[keep], minlength=200))]),
                          shape=X.shape)
    assert not messy.has_sorted_indices or messy.nnz != csr.nnz
    np.testing.assert_array_equal(clf.predict(messy, random_state=3), clf.predict(csr, random_state=3))
    np.testing.assert_array_equal(clf.predict(messy, random_state=3), clf.predict(X, random_state=3))


# --------------------------------------------------------------------------- #
# LinearClassifier
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("fmt", ["dense64", "dense32", "csr64", "csr32"])
def test_linear_classifier(fmt):
    rng = np.random.default_rng(6)
    w, b = rng.normal(size=N_FEATURES), 0.3
    clf = LinearClassifier(w, b)
    X64 = float32_exact(rng, 500)
    X = as_format(X64, fmt)
    scores = X64 @ w + b
    np.testing.assert_allclose(clf.decision_function(X), scores, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(clf.predict(X), (scores >= 0).astype(int))
    np.testing.assert_array_equal(clf.predict(X, random_state=9), clf.predict(X))
    np.testing.assert_array_equal(clf.predict_proba(X), (scores >= 0).astype(float))
    # A score of exactly 0 is positive.
    assert LinearClassifier(np.zeros(N_FEATURES), 0.0).predict(X64).min() == 1


def test_decision_function_only_for_deterministic_models():
    clf = random_mixture(np.random.default_rng(0))
    assert not hasattr(clf, "decision_function")


# --------------------------------------------------------------------------- #
# Save / load
# --------------------------------------------------------------------------- #


def _same_classifier(a, b, X):
    assert type(a) is type(b)
    if isinstance(a, LinearClassifier):
        assert np.array_equal(a.coef_, b.coef_)
        assert a.intercept_ == b.intercept_
        assert np.array_equal(a.decision_function(X), b.decision_function(X))
    else:
        assert np.array_equal(a.weights_, b.weights_)
        assert np.array_equal(a.biases_, b.biases_)
        assert np.array_equal(a.probabilities_, b.probabilities_)
    assert a.n_features_in_ == b.n_features_in_
    assert np.array_equal(a.predict_proba(X), b.predict_proba(X))
    for key in (0, 17):
        assert np.array_equal(a.predict(X, random_state=key), b.predict(X, random_state=key))


@pytest.mark.parametrize("kind", ["m-stochastic", "T-stochastic", "best", "last"])
def test_save_load_round_trip_of_trained_solutions(trained, tmp_path, kind):
    X, res = trained
    clf = res.solution(kind)
    path = tmp_path / f"{kind}.npz"
    clf.save(path)
    _same_classifier(clf, load(path), X)
    _same_classifier(clf, rateopt.load(str(path)), X)


def test_save_load_round_trip_exact_values(tmp_path):
    rng = np.random.default_rng(8)
    X = rng.normal(size=(100, N_FEATURES))
    # Values whose decimal printing would not round-trip, probabilities that are not "nice".
    mix = StochasticClassifier(rng.normal(size=(3, N_FEATURES)) * 1e-300 + rng.normal(size=(3, N_FEATURES)),
                               [1 / 3, -math.pi, 1e-17], [0.1, 0.2, 0.7])
    lin = LinearClassifier(rng.normal(size=N_FEATURES), math.e)
    for clf, name in ((mix, "mix.npz"), (lin, "lin.npz")):
        clf.save(tmp_path / name)
        _same_classifier(clf, load(tmp_path / name), X)
    # Saving twice gives the same file content.
    mix.save(tmp_path / "again.npz")
    with zipfile.ZipFile(tmp_path / "mix.npz") as a, zipfile.ZipFile(tmp_path / "again.npz") as b:
        for n in a.namelist():
            assert a.read(n) == b.read(n)


def _write_npz(path, meta, arrays):
    payload = dict(arrays)
    if meta is not None:
        payload["__rateopt_metadata__"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    with open(path, "wb") as f:
        np.savez(f, **payload)


def _good_arrays():
    return {"weights": np.ones((2, 3)), "biases": np.zeros(2), "probabilities": np.array([0.5, 0.5])}


def _good_meta(**kw):
    return dict({"kind": "stochastic", "n_features": 3, "format": "rateopt-model", "version": 1}, **kw)


def test_hand_written_file_in_the_documented_format_loads(tmp_path):
    # Guards the damaged-file cases below: with the right metadata this layout is accepted.
    _write_npz(tmp_path / "ok.npz", _good_meta(), _good_arrays())
    clf = load(tmp_path / "ok.npz")
    assert isinstance(clf, StochasticClassifier)
    np.testing.assert_array_equal(clf.weights_, np.ones((2, 3)))


@pytest.mark.parametrize("case", [
    "truncated", "random_bytes", "empty", "plain_npz", "wrong_version", "version_missing", "wrong_format",
    "metadata_not_json", "metadata_not_object", "missing_array", "n_features_mismatch", "unknown_kind",
    "bad_probabilities", "pickled_object_array", "nonfinite_weights", "deterministic_two_models",
])
def test_loading_a_damaged_file_raises_rateopt_error(tmp_path, case):
    path = tmp_path / "model.npz"
    if case in ("truncated", "random_bytes", "empty"):
        random_mixture(np.random.default_rng(0)).save(path)
        data = path.read_bytes()
        if case == "truncated":
            data = data[: len(data) // 2]
        elif case == "random_bytes":
            data = np.random.default_rng(1).integers(0, 256, size=len(data), dtype=np.uint8).tobytes()
        else:
            data = b""
        path.write_bytes(data)
    elif case == "plain_npz":
        _write_npz(path, None, _good_arrays())
    elif case == "wrong_version":
        _write_npz(path, _good_meta(version=2), _good_arrays())
    elif case == "version_missing":
        meta = _good_meta()
        del meta["version"]
        _write_npz(path, meta, _good_arrays())
    elif case == "wrong_format":
        _write_npz(path, _good_meta(format="other-model"), _good_arrays())
    elif case == "metadata_not_json":
        arrays = dict(_good_arrays(), __rateopt_metadata__=np.frombuffer(b"\xff{not json", dtype=np.uint8))
        with open(path, "wb") as f:
            np.savez(f, **arrays)
    elif case == "metadata_not_object":
        arrays = dict(_good_arrays(), __rateopt_metadata__=np.frombuffer(b"[1, 2]", dtype=np.uint8))
        with open(path, "wb") as f:
            np.savez(f, **arrays)
    elif case == "missing_array":
        arrays = _good_arrays()
        del arrays["biases"]
        _write_npz(path, _good_meta(), arrays)
    elif case == "n_features_mismatch":
        _write_npz(path, _good_meta(n_features=4), _good_arrays())
    elif case == "unknown_kind":
        _write_npz(path, _good_meta(kind="ensemble"), _good_arrays())
    elif case == "bad_probabilities":
        _write_npz(path, _good_meta(), dict(_good_arrays(), probabilities=np.array([0.5, 0.7])))
    elif case == "pickled_object_array":
        _write_npz(path, _good_meta(), dict(_good_arrays(), biases=np.array([None, 1.0], dtype=object)))
    elif case == "nonfinite_weights":
        _write_npz(path, _good_meta(), dict(_good_arrays(), weights=np.full((2, 3), np.nan)))
    elif case == "deterministic_two_models":
        _write_npz(path, _good_meta(kind="deterministic"), _good_arrays())
    with pytest.raises(RateoptError):
        load(path)


# --------------------------------------------------------------------------- #
# Invalid input
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("which,method", [
    ("linear", "predict"), ("linear", "predict_proba"), ("linear", "decision_function"),
    ("stochastic", "predict"), ("stochastic", "predict_proba"), ("stochastic", "scores"),
])
def test_wrong_feature_count_at_predict_time(which, method):
    rng = np.random.default_rng(0)
    clf = LinearClassifier(np.ones(N_FEATURES)) if which == "linear" else random_mixture(rng)
    for X in (np.ones((4, N_FEATURES + 1)), sp.csr_matrix(np.ones((4, N_FEATURES - 1)))):
        with pytest.raises(ValueError, match=f"X has {X.shape[1]} features, but the model was trained with 5"):
            getattr(clf, method)(X)


@pytest.mark.parametrize("bad", [-1, 1.5, "zero", True, np.random.default_rng(0)])
def test_invalid_random_state_at_predict_time(bad):
    clf = random_mixture(np.random.default_rng(0))
    with pytest.raises(ValueError, match="random_state must be a non-negative integer"):
        clf.predict(np.ones((3, N_FEATURES)), random_state=bad)


@pytest.mark.parametrize("args,match", [
    ((np.ones((2, 3)), [0.0, 0.0], [0.5, 0.6]), "probabilities must be non-negative and sum to 1"),
    ((np.ones((2, 3)), [0.0, 0.0], [1.5, -0.5]), "probabilities must be non-negative and sum to 1"),
    ((np.ones((2, 3)), [0.0], [0.5, 0.5]), "same number of models"),
    ((np.ones((2, 3)), [0.0, 0.0], [1.0]), "same number of models"),
    ((np.ones(3), [0.0], [1.0]), "non-empty 2-D array"),
    ((np.ones((0, 3)), [], []), "non-empty 2-D array"),
    ((np.full((1, 3), np.inf), [0.0], [1.0]), "must be finite"),
])
def test_invalid_stochastic_classifier(args, match):
    with pytest.raises(ValueError, match=match):
        StochasticClassifier(*args)


def test_invalid_linear_classifier():
    with pytest.raises(ValueError, match="must be finite"):
        LinearClassifier([1.0, np.nan])
    with pytest.raises(ValueError, match="must be finite"):
        LinearClassifier([1.0, 2.0], np.inf)
