"""Trained classifiers: mixtures, row-keyed sampling, save/load (``rateopt._predictors._linear``).

Expected values are independent NumPy computations (decisions ``X @ w + b >= 0``
and their probability-weighted mean); ``predict_proba`` is ``[1 - p, p]``. The
sampled decisions are checked for batch-independence (with ``row_key``, and
for rows unique in their batch without it) by predicting shuffled chunks and
mapping them back, and for their distribution with a binomial tolerance.
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
    np.testing.assert_allclose(clf.predict_proba(X)[:, 1], expected, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(clf.predict_proba(X)[:, 0], 1.0 - clf.predict_proba(X)[:, 1])
    assert clf.predict_proba(X).shape == (2000, 2)
    np.testing.assert_allclose(clf.scores(X), X @ clf.weights_.T + clf.biases_, rtol=1e-12, atol=1e-12)


def test_trained_mixture_predict_proba(trained):
    X, res = trained
    clf = res.solution("m-stochastic")
    assert clf.n_models == 2
    expected = clf.probabilities_ @ support_decisions(X, clf)
    np.testing.assert_allclose(clf.predict_proba(X)[:, 1], expected, rtol=0, atol=1e-15)
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
    proba = clf.predict_proba(X)[:, 1]
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
    assert res.weights.shape[0] == res.n_trivial + 1000  # the trivial rules, then the recorded iterates
    clf = res.solution(kind)
    proba = clf.predict_proba(X)[:, 1]
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
    proba = clf.predict_proba(X)[:, 1]
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
    ids = np.arange(X64.shape[0])
    whole = clf.predict(X, random_state=11)
    keyed = clf.predict(X, random_state=11, row_key=ids)
    unique = np.unique(X64, axis=0, return_index=True, return_counts=True)
    once = np.zeros(X64.shape[0], dtype=bool)
    once[unique[1][unique[2] == 1]] = True  # rows whose content is unique in the batch
    assert 0 < once.sum() < X64.shape[0]  # X has repeated rows (all-zero ones) too
    # Shuffled chunks of unequal sizes, mapped back to the original rows.
    perm = rng.permutation(X64.shape[0])
    cuts = np.sort(rng.choice(np.arange(1, X64.shape[0]), size=6, replace=False))
    out, out_keyed = np.empty_like(whole), np.empty_like(whole)
    for chunk in np.split(perm, cuts):
        out[chunk] = clf.predict(X[chunk], random_state=11)
        out_keyed[chunk] = clf.predict(X[chunk], random_state=11, row_key=ids[chunk])
    np.testing.assert_array_equal(out_keyed, keyed)  # with row_key: every row, in any batch and order
    np.testing.assert_array_equal(out[once], whole[once])  # without: every row unique in the batch
    # Single rows too.
    for i in rng.choice(X64.shape[0], size=20, replace=False):
        assert clf.predict(X[i:i + 1], random_state=11, row_key=ids[i:i + 1])[0] == keyed[i]
        if once[i]:
            assert clf.predict(X[i:i + 1], random_state=11)[0] == whole[i]
    # The same values in any layout or precision give the same decisions.
    np.testing.assert_array_equal(whole, clf.predict(X64, random_state=11))
    np.testing.assert_array_equal(clf.predict_proba(X), clf.predict_proba(X64))


def test_duplicate_rows_draw_independently():
    rng = np.random.default_rng(4)
    clf = StochasticClassifier([[1.0] * N_FEATURES, [-1.0] * N_FEATURES], [0.0, 0.0], [0.5, 0.5])
    X = np.repeat(np.ones((1, N_FEATURES)), 400, axis=0)  # model 0 says positive, model 1 negative
    pred = clf.predict(X, random_state=5)
    np.testing.assert_array_equal(clf.predict_proba(X)[:, 1], 0.5)
    assert abs(pred.sum() - 200) <= 4 * math.sqrt(400 * 0.25)  # binomial(400, 1/2), not all-or-nothing
    np.testing.assert_array_equal(clf.predict(X, random_state=5), pred)  # the same input, the same decisions


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
    np.testing.assert_array_equal(clf.predict_proba(X)[:, 1], (scores >= 0).astype(float))
    np.testing.assert_array_equal(clf.predict_proba(X)[:, 0], (scores < 0).astype(float))
    assert clf.coef_.shape == (1, N_FEATURES) and clf.intercept_.shape == (1,)
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
        assert np.array_equal(a.intercept_, b.intercept_)
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


@pytest.mark.parametrize("bad", [-1, 1.5, "zero", True, np.random.default_rng(0), 2**64])
def test_invalid_random_state_at_predict_time(bad):
    clf = random_mixture(np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"^random_state must be None or an integer in \[0, 2\*\*64 - 1\], got "):
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


# --------------------------------------------------------------------------- #
# Bad files: every one gives a RateoptError that says what is wrong
# --------------------------------------------------------------------------- #


def _central_directory(data):
    """Offsets of the central-directory entries of a zip file (parsed by hand)."""
    import struct

    eocd = data.rindex(b"PK\x05\x06")
    n = struct.unpack("<H", data[eocd + 10:eocd + 12])[0]
    pos = struct.unpack("<I", data[eocd + 16:eocd + 20])[0]
    out = []
    for _ in range(n):
        assert data[pos:pos + 4] == b"PK\x01\x02"
        name_len, extra_len, comment_len = struct.unpack("<HHH", data[pos + 28:pos + 34])
        out.append(pos)
        pos += 46 + name_len + extra_len + comment_len
    return out


def _patched_directory(data, offset, value):
    import struct

    b = bytearray(data)
    for pos in _central_directory(data):
        b[pos + offset:pos + offset + 2] = struct.pack("<H", value)
    return bytes(b)


@pytest.mark.parametrize("case,match", [
    ("npy", r"is a \.npy file \(a single NumPy array\), not a rateopt model file"),
    ("text", r"is not a rateopt model file: not a \.npz \(zip\) archive"),
    ("empty", r"is empty, not a rateopt model file"),
    ("truncated", r"is a damaged rateopt model file: its zip directory is unreadable .*may be truncated"),
    ("directory_compression", r"is a damaged rateopt model file: NotImplementedError: That compression method"),
    ("directory_name_lengths", r"is a damaged rateopt model file: its zip directory is unreadable"),
    ("encrypted", r"its member '__rateopt_metadata__\.npy' is encrypted"),
    ("bad_crc", r"is a damaged rateopt model file: BadZipFile: Bad CRC-32"),
    ("only_metadata", r"is damaged: field 'weights' is missing"),
    ("empty_zip", r"no metadata entry; the archive lists 0 member\(s\)\)"),
    ("missing_biases", r"is damaged: field 'biases' is missing"),
    ("directory", r"cannot be read as a rateopt model file"),
])
def test_every_bad_file_gives_a_clear_rateopt_error(tmp_path, case, match):
    # Regression: a .npy file gave a TypeError about context managers, damaged zip
    # directories NotImplementedError / RuntimeError("File is encrypted").
    good_path = tmp_path / "good.npz"
    random_mixture(np.random.default_rng(0)).save(good_path)
    good = good_path.read_bytes()
    path = tmp_path / "model.npz"
    if case == "npy":
        path = tmp_path / "model.npy"
        np.save(path, np.ones(3))
    elif case == "text":
        path.write_text("weights,biases\n1,2\n")
    elif case == "empty":
        path.write_bytes(b"")
    elif case == "truncated":
        path.write_bytes(good[: len(good) - 30])
    elif case == "directory_compression":
        path.write_bytes(_patched_directory(good, 10, 77))  # compression method 77
    elif case == "directory_name_lengths":
        path.write_bytes(_patched_directory(good, 28, 3))  # file-name lengths cut to 3
    elif case == "encrypted":
        path.write_bytes(_patched_directory(good, 8, 1))  # general-purpose flag bit 0: encrypted
    elif case == "bad_crc":
        b = bytearray(good)
        for pos in _central_directory(good):
            b[pos + 16] ^= 0xFF  # CRC-32 of every member
        path.write_bytes(bytes(b))
    elif case == "only_metadata":
        with zipfile.ZipFile(good_path) as src, zipfile.ZipFile(path, "w") as dst:
            dst.writestr("__rateopt_metadata__.npy", src.read("__rateopt_metadata__.npy"))
    elif case == "empty_zip":
        zipfile.ZipFile(path, "w").close()
    elif case == "missing_biases":
        with zipfile.ZipFile(good_path) as src, zipfile.ZipFile(path, "w") as dst:
            for n in src.namelist():
                if n != "biases.npy":
                    dst.writestr(n, src.read(n))
    elif case == "directory":
        path = tmp_path / "a_directory.npz"
        path.mkdir()
    with pytest.raises(RateoptError, match=match):
        load(path)


def _kernel_model_file(tmp_path):
    from sklearn.datasets import make_circles

    X, y = make_circles(200, noise=0.05, factor=0.5, random_state=0)
    ds = Dataset(X, y)
    res = train(Problem(constraints=[positive_prediction_rate(ds.context()) <= 0.5]),
                rateopt.KernelModel(kernel="rbf", gamma=1.0, n_components=20, random_state=0), n_iter=50,
                eta_lambda=0.5)
    path = tmp_path / "kernel.npz"
    res.solution("m-stochastic").save(path)
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(bytes(arrays.pop("__rateopt_metadata__")).decode())
    return X, meta, arrays


@pytest.mark.parametrize("field,change,match", [
    ("gamma", np.nan, r"field 'metadata\.feature_map\.gamma' is nan, expected a finite number"),
    ("gamma", np.inf, r"field 'metadata\.feature_map\.gamma' is inf, expected a finite number"),
    ("gamma", 0.0, r"field 'metadata\.feature_map\.gamma' is 0\.0, expected a number > 0"),
    ("gamma", -1.0, r"field 'metadata\.feature_map\.gamma' is -1\.0, expected a number > 0"),
    ("gamma", "0.5", r"field 'metadata\.feature_map\.gamma' is '0\.5', expected a number"),
    ("gamma", None, r"field 'metadata\.feature_map\.gamma' is None, expected a number"),
    ("degree", np.nan, r"field 'metadata\.feature_map\.degree' is nan"),
    ("degree", -2.0, r"field 'metadata\.feature_map\.degree' is -2\.0, expected a number >= 0"),
    ("coef0", -np.inf, r"field 'metadata\.feature_map\.coef0' is -inf"),
    ("kernel", "sigmoid", r"field 'metadata\.feature_map\.kernel' is 'sigmoid'"),
    ("dtype", "int8", r"field 'metadata\.feature_map\.dtype' is 'int8'"),
    ("landmarks", "wide", r"field 'landmarks' has 3 columns but metadata\.n_features is 2"),
    ("landmarks", "1d", r"field 'landmarks' has shape \(20,\), expected a 2-D array"),
    ("landmarks", "nan", r"field 'landmarks' holds a non-finite value"),
    ("landmarks", "complex", r"field 'landmarks' has dtype complex128, expected real numbers"),
    ("whitening", "rows", r"field 'whitening' has shape \(19, \d+\), expected \(20, n_components\)"),
    ("whitening", "cols", r"field 'weights' has \d+ columns but the kernel model has \d+ features"),
    ("whitening", "inf", r"field 'whitening' holds a non-finite value"),
    ("whitening", "missing", r"field 'whitening' is missing"),
    ("weights", "nan", r"field 'weights' holds a non-finite value"),
    ("biases", "inf", r"field 'biases' holds a non-finite value"),
    ("biases", "short", r"field 'biases' has \d+ entries for \d+ models"),
    ("probabilities", "nan", r"field 'probabilities' holds a non-finite value"),
    ("n_features", True, r"field 'metadata\.n_features' is True, expected an integer >= 1"),
])
def test_a_kernel_model_file_is_validated_at_load(tmp_path, field, change, match):
    # Regression: gamma=NaN, landmarks of the wrong width, whitening of the wrong shape
    # or non-finite arrays loaded and failed only at predict time.
    X, meta, arrays = _kernel_model_file(tmp_path)
    assert load(tmp_path / "kernel.npz").predict_proba(X).shape == (200, 2)  # the unmodified file loads
    fm = meta["feature_map"]
    if field in ("gamma", "degree", "coef0", "kernel", "dtype"):
        fm[field] = change
    elif field == "n_features":
        meta["n_features"] = change
    elif field == "landmarks":
        B = arrays["landmarks"]
        arrays["landmarks"] = {"wide": np.hstack([B, B[:, :1]]), "1d": B[:, 0].copy(),
                               "nan": np.where(np.arange(B.size).reshape(B.shape) == 3, np.nan, B),
                               "complex": B.astype(np.complex128)}[change]
    elif field == "whitening":
        W = arrays["whitening"]
        if change == "missing":
            del arrays["whitening"]
        else:
            arrays["whitening"] = {"rows": W[1:], "cols": W[:, 1:], "inf": np.where(W == W.max(), np.inf, W)}[change]
    elif field in ("weights", "biases", "probabilities"):
        a = np.array(arrays[field], dtype=np.float64)
        if change == "short":
            a = a[1:]
        else:
            a.flat[0] = np.nan if change == "nan" else np.inf
        arrays[field] = a
    path = tmp_path / "bad.npz"
    with open(path, "wb") as f:
        # json.dumps writes NaN / Infinity for non-finite floats, as a damaged file could hold
        np.savez(f, __rateopt_metadata__=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8), **arrays)
    with pytest.raises(RateoptError, match=match):
        load(path)


def _float32_features(kind, n=4000, d=30, seed=0):
    rng = np.random.default_rng(seed)
    if kind == "dense":
        return rng.standard_normal((n, d)).astype(np.float32)
    X = sp.random(n, d, density=0.3, format="csr", random_state=seed, dtype=np.float64).astype(np.float32)
    X.indices = X.indices.astype(np.int32)
    X.indptr = X.indptr.astype(np.int32)
    return X


@pytest.mark.parametrize("kind", ["dense", "csr"])
def test_float32_features_are_scored_without_a_float64_copy(kind, monkeypatch):
    """float32 X times float64 weights upcasts X wholesale in NumPy and scipy
    (a float64 copy, twice the data); the classifiers score a block of rows at a
    time instead, with the same float64 sums as the float64 reference."""
    import tracemalloc

    import rateopt._predictors._scoring as C

    monkeypatch.setattr(C, "_SCORE_BLOCK_VALUES", 2000)  # many blocks, each far smaller than X
    X = _float32_features(kind)
    X64 = X.astype(np.float64)
    rng = np.random.default_rng(1)
    W, b = rng.standard_normal((3, X.shape[1])), rng.standard_normal(3)
    lin = LinearClassifier(W[0], b[0])
    mix = StochasticClassifier(W, b, np.array([0.2, 0.3, 0.5]))
    want = np.asarray(X64 @ W.T) + b
    np.testing.assert_allclose(lin.decision_function(X), want[:, 0], rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(mix.scores(X), want, rtol=1e-13, atol=1e-13)
    data_bytes = (X.data if kind == "csr" else X).nbytes
    tracemalloc.start()
    try:
        lin.decision_function(X)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    out_bytes = 8 * X.shape[0] * 2  # the scores and their sum with the bias
    assert peak < out_bytes + data_bytes // 2  # a float64 copy of X alone would be 2 * data_bytes
