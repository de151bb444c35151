"""Kernel blocks and kernel models, against scikit-learn's pairwise kernels."""

import re

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_circles
from sklearn.metrics.pairwise import pairwise_kernels

import rateopt
from rateopt._predictors._nystroem import NystroemMap
from rateopt.core._kernel_block import kernel_block
from rateopt.exceptions import RateoptError

KERNEL_PARAMS = {
    "rbf": {"gamma": 0.3},
    "laplacian": {"gamma": 0.2},
    "poly": {"gamma": 0.4, "degree": 3, "coef0": 1.0},
    "linear": {},
}


def _data(dtype, seed=0, n=120, d=9, r=17):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[rng.random((n, d)) < 0.4] = 0.0  # sparse-ish, with empty entries
    X[5] = 0.0  # an all-zero row
    B = rng.normal(size=(r, d))
    B[3] = X[7]  # a landmark equal to a row: distance exactly 0
    return X.astype(dtype), B


def _reference(X, B, kernel):
    return pairwise_kernels(np.asarray(X, dtype=np.float64), B, metric=kernel, **KERNEL_PARAMS[kernel])


@pytest.mark.parametrize("kernel", sorted(KERNEL_PARAMS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["dense", "csr32", "csr64"])
@pytest.mark.parametrize("method", ["core", "auto"])
def test_kernel_block_matches_sklearn(kernel, dtype, layout, method):
    X, B = _data(dtype)
    ref = _reference(X, B, kernel)
    Xin = X
    if layout != "dense":
        Xin = sp.csr_matrix(X)
        if layout == "csr64":
            Xin.indices = Xin.indices.astype(np.int64)
            Xin.indptr = Xin.indptr.astype(np.int64)
    K = kernel_block(Xin, B, kernel, method=method, **KERNEL_PARAMS[kernel])
    assert K.shape == ref.shape and K.dtype == np.float64
    # The data are the float32 values, upcast exactly: both sides compute in float64.
    scale = np.abs(ref).max()
    np.testing.assert_allclose(K, ref, rtol=1e-12, atol=1e-12 * scale)


@pytest.mark.parametrize("kernel", ["rbf", "poly", "linear"])
def test_blas_path_equals_core_path(kernel):
    X, B = _data(np.float64, seed=1)
    a = kernel_block(X, B, kernel, method="blas", **KERNEL_PARAMS[kernel])
    b = kernel_block(X, B, kernel, method="core", **KERNEL_PARAMS[kernel])
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12 * np.abs(b).max())


def test_float32_output_and_threads():
    X, B = _data(np.float64, seed=2)
    K64 = kernel_block(X, B, "rbf", gamma=0.3, n_threads=1)
    K32 = kernel_block(X, B, "rbf", gamma=0.3, dtype=np.float32, n_threads=2)
    assert K32.dtype == np.float32
    np.testing.assert_allclose(K32, K64, rtol=1e-6, atol=1e-7)
    assert np.array_equal(kernel_block(X, B, "laplacian", n_threads=1), kernel_block(X, B, "laplacian", n_threads=2))


def test_gamma_default_is_one_over_n_features():
    X, B = _data(np.float64)
    np.testing.assert_allclose(kernel_block(X, B, "rbf"), pairwise_kernels(X, B, metric="rbf", gamma=1 / X.shape[1]),
                               rtol=1e-12, atol=1e-14)


def test_kernel_block_errors():
    X, B = _data(np.float64)
    with pytest.raises(ValueError, match="kernel"):
        kernel_block(X, B, "sigmoid")
    with pytest.raises(ValueError, match="landmarks"):
        kernel_block(X, B[:, :3], "rbf")
    with pytest.raises(ValueError, match="gamma"):
        kernel_block(X, B, "rbf", gamma=-1.0)
    with pytest.raises(ValueError, match="method"):
        kernel_block(sp.csr_matrix(X), B, "rbf", method="blas")
    bad = B.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="landmarks"):
        kernel_block(X, bad, "rbf")


@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
def test_exact_features_reproduce_the_gram_matrix(kernel):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 4))
    fmap = NystroemMap.fit(X, kernel=kernel, gamma=0.5, exact=True, dtype=np.float64)
    Phi = fmap.transform(X)
    K = pairwise_kernels(X, X, metric=kernel, gamma=0.5)
    np.testing.assert_allclose(Phi @ Phi.T, K, atol=1e-8)


def test_nystroem_landmark_choices_and_memory_guard():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(300, 3))
    for how in ("uniform", "kmeans++"):
        fmap = NystroemMap.fit(X, n_components=40, landmarks=how, random_state=0)
        assert fmap.landmarks.shape == (40, 3) and fmap.transform(X).shape[0] == 300
    with pytest.raises(RateoptError, match="GiB"):
        from rateopt.core._kernel_block import check_block_memory

        check_block_memory(10**9, 10**6, np.float32)


def _circles(n=1500, seed=0):
    X, y = make_circles(n, noise=0.08, factor=0.5, random_state=seed)
    rng = np.random.default_rng(seed)
    group = np.where(rng.random(n) < 0.4, "a", "b")
    return X, y, group


def test_kernel_model_beats_linear_under_a_coverage_constraint():
    X, y, group = _circles()
    ds = rateopt.Dataset(X, y, groups={"g": group})
    problem = rateopt.Problem(constraints=[rateopt.goals.coverage_budget(0.4)], datasets=ds)
    errors = {}
    for name, model in (("linear", rateopt.LinearModel()),
                        ("kernel", rateopt.KernelModel(gamma=2.0, n_components=150, random_state=0))):
        res = rateopt.train(problem, model, n_iter=800, learning_rate=0.05, eta_lambda=0.5)
        clf = res.solution("m-stochastic")
        p = clf.predict_proba(X)[:, 1]
        coverage = p.mean()  # independent count: expected share of positive decisions
        assert coverage <= 0.4 + 0.01
        errors[name] = np.mean(np.where(y == 1, 1 - p, p))
    assert errors["kernel"] <= errors["linear"] - 0.10


def test_kernel_classifiers_round_trip_and_stream(tmp_path):
    X, y, group = _circles(600, seed=1)
    ds = rateopt.Dataset(X, y, groups={"g": group})
    problem = rateopt.Problem(constraints=[rateopt.goals.coverage_budget(0.45)], datasets=ds)
    res = rateopt.train(problem, rateopt.KernelModel(kernel="laplacian", gamma=1.0, n_components=80, random_state=2),
                        n_iter=200, learning_rate=0.05, eta_lambda=0.5, lambda_init="uniform")
    for kind in ("m-stochastic", "last"):
        clf = res.solution(kind)
        path = tmp_path / f"{kind}.npz"
        clf.save(path)
        back = rateopt.load(path)
        np.testing.assert_array_equal(back.predict_proba(X), clf.predict_proba(X))
        np.testing.assert_array_equal(back.predict(X, random_state=3), clf.predict(X, random_state=3))
        # Streaming in chunks gives the same decisions as row by row subsets.
        order = np.random.default_rng(0).permutation(X.shape[0])
        parts = np.concatenate([clf.predict(X[order][i:i + 97], random_state=3) for i in range(0, X.shape[0], 97)])
        np.testing.assert_array_equal(parts, clf.predict(X, random_state=3)[order])
    # Scores of the mixture's support models equal K(X, B) W alpha from the saved arrays.
    mix = res.solution("m-stochastic")
    K = pairwise_kernels(X, mix.feature_map.landmarks, metric="laplacian", gamma=1.0)
    S = K @ mix.feature_map.whitening @ mix.weights_.T + mix.biases_
    np.testing.assert_allclose(mix.scores(X), S, rtol=1e-10, atol=1e-10)
    with pytest.raises(ValueError, match="features"):
        mix.predict(np.zeros((2, 5)))


def test_estimator_with_kernel_model():
    X, y, group = _circles(800, seed=2)
    est = rateopt.RateConstrainedClassifier(goals=[rateopt.goals.coverage_budget(0.4)], model="kernel", gamma=2.0,
                                            n_components=100, n_iter=500, learning_rate=0.05, eta_lambda=0.5,
                                            random_state=0).fit(X, y)
    p = est.predict_proba(X)[:, 1]
    assert p.mean() <= 0.4 + 0.01
    assert np.mean(np.where(y == 1, 1 - p, p)) < 0.25
    assert set(np.unique(est.predict(X))) <= {0, 1}


def _with_duplicates(X, seed):
    """The same matrix as CSR with every stored entry split into two duplicates
    (unequal parts) and the columns of each row shuffled: scipy's meaning is the sum."""
    rng = np.random.default_rng(seed)
    C = sp.csr_matrix(X)
    data, indices, indptr = [], [], [0]
    for i in range(C.shape[0]):
        lo, hi = C.indptr[i], C.indptr[i + 1]
        cols, vals = C.indices[lo:hi], C.data[lo:hi]
        part = rng.uniform(-1.0, 2.0, size=vals.shape).astype(vals.dtype)
        cols2 = np.concatenate([cols, cols])
        vals2 = np.concatenate([vals * part, vals - vals * part])
        order = rng.permutation(cols2.size)
        data.append(vals2[order])
        indices.append(cols2[order])
        indptr.append(indptr[-1] + cols2.size)
    D = sp.csr_matrix((np.concatenate(data), np.concatenate(indices), np.array(indptr)), shape=C.shape)
    assert not D.has_canonical_format
    return D


@pytest.mark.parametrize("kernel", sorted(KERNEL_PARAMS))
@pytest.mark.parametrize("n_threads", [1, 3])
def test_csr_with_duplicates_equals_its_canonical_form(kernel, n_threads):
    X, B = _data(np.float64, seed=4)
    D = _with_duplicates(X, seed=5)
    canon = D.copy()
    canon.sum_duplicates()
    ref = _reference(canon.toarray(), B, kernel)
    K_dup = kernel_block(D, B, kernel, n_threads=n_threads, **KERNEL_PARAMS[kernel])
    K_canon = kernel_block(canon, B, kernel, n_threads=n_threads, **KERNEL_PARAMS[kernel])
    scale = np.abs(ref).max()
    np.testing.assert_allclose(K_canon, ref, rtol=1e-12, atol=1e-12 * scale)
    # Splitting entries changes the sums only at round-off.
    np.testing.assert_allclose(K_dup, ref, rtol=1e-10, atol=1e-10 * scale)


def test_rbf_model_predicts_the_same_on_duplicated_csr():
    X, y = make_circles(300, factor=0.5, noise=0.05, random_state=0)
    X = np.hstack([X, np.zeros((300, 1))])
    D = _with_duplicates(X, seed=2)
    canon = D.copy()
    canon.sum_duplicates()
    est = rateopt.RateConstrainedClassifier(model="kernel", kernel="rbf", gamma=2.0, n_components=60,
                                            n_iter=300, solution="last", random_state=0)
    est.fit(canon, y)
    np.testing.assert_array_equal(est.predict(D), est.predict(canon))
    np.testing.assert_allclose(est.decision_function(D), est.decision_function(canon), rtol=1e-9, atol=1e-9)


# --------------------------------------------------------------------------- overflowing kernels


@pytest.mark.parametrize("gamma,degree", [(1e110, 3), (1e40, 9), (1e3, 200)])
def test_an_overflowing_poly_kernel_says_what_overflowed(gamma, degree):
    # Regression: the message was "the landmarks' kernel matrix is zero".
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = (X[:, 0] > 0).astype(int)
    B_ref = X[:30]
    with np.errstate(over="ignore"):  # independent: the same kernel in NumPy overflows too
        ref = (gamma * (B_ref @ B_ref.T) + 1.0) ** degree
    n_inf = int(np.count_nonzero(np.isinf(ref)))
    assert n_inf > 0
    match = (rf"kernel values are not finite: the landmarks' kernel matrix K\(B, B\) holds {n_inf} inf and 0 NaN "
             rf"value\(s\); the poly kernel \(gamma <x, b> \+ coef0\)\^degree with gamma={re.escape(f'{gamma:g}')}, coef0=1, "
             rf"degree={degree:g} overflowed float64\. Fix: reduce gamma or degree, or scale X$")
    with pytest.raises(RateoptError, match=match):
        NystroemMap.fit(B_ref, kernel="poly", gamma=gamma, degree=degree, coef0=1.0, exact=True)
    problem = rateopt.Problem(constraints=[rateopt.goals.coverage_budget(0.3)], datasets=rateopt.Dataset(X, y))
    with pytest.raises(RateoptError, match="kernel values are not finite"):
        rateopt.train(problem, rateopt.KernelModel(kernel="poly", gamma=gamma, degree=degree, n_components=200))
    with pytest.raises(RateoptError, match="kernel values are not finite"):
        rateopt.RateConstrainedClassifier(model="kernel", kernel="poly", gamma=gamma, degree=degree,
                                          n_components=200, n_iter=5).fit(X, y)


def test_a_poly_kernel_with_a_non_integer_degree_and_a_negative_base():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 3))
    n_nan = int(np.count_nonzero(np.isnan(np.where(X @ X.T + 1.0 < 0, np.nan, 0.0))))  # negative bases
    assert n_nan > 0
    with pytest.raises(RateoptError, match=rf"holds 0 inf and {n_nan} NaN value\(s\); .*raised a negative base to "
                                           r"the non-integer degree 2\.5\. Fix: use an integer degree or a coef0"):
        NystroemMap.fit(X, kernel="poly", gamma=1.0, degree=2.5, coef0=1.0, exact=True)


def test_kernel_overflow_at_prediction_is_a_numerical_error():
    from rateopt.exceptions import NumericalError

    rng = np.random.default_rng(2)
    X = rng.normal(size=(100, 3))
    y = (X[:, 0] > 0).astype(int)
    est = rateopt.RateConstrainedClassifier(model="kernel", kernel="poly", gamma=0.5, degree=3, n_components=100,
                                            n_iter=20, solution="last").fit(X, y)
    assert np.all(np.isfinite(est.decision_function(X)))
    with pytest.raises(NumericalError, match=r"K\(X\[0:100\], landmarks\) holds 10000 inf .*much larger scale"):
        est.predict_proba(X * 1e120)
