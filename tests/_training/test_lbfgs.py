"""``method="unconstrained"`` solved by L-BFGS (``rateopt._training._lbfgs``, issue 35 item 5).

The reference is independent of rateopt: scikit-learn's ``LogisticRegression``
at the equivalent penalty, fitted to a far tighter tolerance (its own gradient,
recomputed here in NumPy, is checked to be negligible), and a NumPy
implementation of the objective rateopt minimizes,

    F(theta, b) = sum_j w_j log2(1 + exp(-y_j s_j)) / W + (l2 / 2) ||theta||^2,   l2 = 1 / (n ln 2),

whose minimizer is ``LogisticRegression(C=n / W)``'s (W the weights' sum;
``C = 1`` for unit weights). The tolerances are derived from the solver's
stopping rule, not tuned: L-BFGS stops when every gradient entry is at most
``GTOL``, and for a strongly convex F with Hessian eigenvalues at least ``mu``
near the minimizer, ``||x - x*|| <= ||grad F(x)|| / mu`` and
``F(x) - F(x*) <= ||grad F(x)||^2 / (2 mu)``; ``mu`` is computed here from the
NumPy Hessian (halved, for its change between ``x`` and ``x*``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import rateopt
import scipy.sparse as sp
from rateopt._training._lbfgs import GTOL
from sklearn.linear_model import LogisticRegression


def _data(n=400, d=5, seed=0, dtype=np.float64, sparse=False, weights=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * np.array([1.0, 3.0, 0.5, 2.0, 1.0])[:d]
    X[:, 3] = np.where(rng.random(n) < 0.7, 0.0, X[:, 3])  # zeros for the CSR layout to skip
    y = (X[:, 0] - 0.4 * X[:, 1] + rng.normal(size=n) > 0.3).astype(np.int64)
    w = rng.uniform(0.5, 2.0, n) if weights else None
    X = X.astype(dtype)
    return (sp.csr_matrix(X) if sparse else X), y, w


def _problem(X, y, w):
    ds = rateopt.Dataset(X, y, weights=w)
    return rateopt.Problem(objective=rateopt.error_rate(ds.context()), datasets=ds)


def _objective(X, y, w, l2, fit_intercept=True):
    """F, its gradient and Hessian in NumPy (float64), over x = (theta, b) (or theta alone)."""
    X = np.asarray(X.toarray() if sp.issparse(X) else X, dtype=np.float64)
    n = X.shape[0]
    w = np.ones(n) if w is None else np.asarray(w, dtype=np.float64)
    A = np.hstack([X, np.ones((n, 1))]) if fit_intercept else X
    ys = np.where(y == 1, 1.0, -1.0)
    reg = np.full(A.shape[1], l2)
    if fit_intercept:
        reg[-1] = 0.0

    def f(x):
        m = ys * (A @ x)
        return float(w @ np.logaddexp(0.0, -m) / (w.sum() * math.log(2)) + 0.5 * x @ (reg * x))

    def grad(x):
        m = ys * (A @ x)
        return A.T @ (w * -ys * (1.0 / (1.0 + np.exp(m)))) / (w.sum() * math.log(2)) + reg * x

    def hess(x):
        p = 1.0 / (1.0 + np.exp(-(A @ x)))
        return (A.T * (w * p * (1 - p))) @ A / (w.sum() * math.log(2)) + np.diag(reg)

    return f, grad, hess


LAYOUTS = [dict(), dict(sparse=True), dict(dtype=np.float32), dict(sparse=True, dtype=np.float32)]


@pytest.mark.parametrize("weights", [False, True], ids=["unit", "weighted"])
@pytest.mark.parametrize("layout", LAYOUTS, ids=["dense64", "csr64", "dense32", "csr32"])
def test_default_unconstrained_fit_is_logistic_regression_at_c1(layout, weights):
    X, y, w = _data(weights=weights, **layout)
    n = X.shape[0]
    res = rateopt.train(_problem(X, y, w), method="unconstrained")
    assert res.settings["optimizer"] == "lbfgs"
    l2 = res.settings["l2"]
    assert l2 == pytest.approx(1.0 / (n * math.log(2)), rel=1e-15)  # LinearModel(l2="auto"), the default here
    W = n if w is None else float(np.sum(w))
    C = n / W  # sum_j w_j loss_j + ||theta||^2 / (2 C), in nats, has F's minimizer
    ref = LogisticRegression(C=C, tol=1e-13, max_iter=100000).fit(np.asarray(X.toarray() if sp.issparse(X) else X,
                                                                              dtype=np.float64), y, sample_weight=w)
    f, grad, hess = _objective(X, y, w, l2)
    x_ref = np.append(ref.coef_[0], ref.intercept_[0])
    g_ref = float(np.linalg.norm(grad(x_ref)))
    assert g_ref < 1e-2 * GTOL  # the reference is the minimizer, far within rateopt's tolerance
    x = np.append(res.weights[-1], res.biases[-1])
    g = grad(x)
    assert np.max(np.abs(g)) <= GTOL + 1e-12  # the stopping rule, recounted in NumPy
    mu = 0.5 * min(np.linalg.eigvalsh(hess(x))[0], np.linalg.eigvalsh(hess(x_ref))[0])
    gnorm = float(np.linalg.norm(g))
    # both within ||grad|| / mu of the true minimizer x*, and F within ||grad||^2 / (2 mu) of F(x*)
    assert np.linalg.norm(x - x_ref) <= (gnorm + g_ref) / mu
    assert -g_ref**2 / (2 * mu) - 1e-12 <= f(x) - f(x_ref) <= gnorm**2 / (2 * mu) + 1e-12
    # the last record is the returned model, and its recorded 0-1 error is the NumPy count
    Xd = np.asarray(X.toarray() if sp.issparse(X) else X, dtype=np.float64)
    wn = np.ones(n) if w is None else w
    err = float(wn @ ((Xd @ res.weights[-1] + res.biases[-1] >= 0).astype(int) != y) / wn.sum())
    assert res.objectives[-1] == pytest.approx(err, abs=1e-12)


def test_without_intercept_matches_logistic_regression_without_intercept():
    X, y, _ = _data(seed=3)
    n = X.shape[0]
    res = rateopt.train(_problem(X, y, None), rateopt.LinearModel(l2="auto", fit_intercept=False),
                        method="unconstrained")
    assert res.settings["optimizer"] == "lbfgs" and np.all(res.biases == 0.0)
    ref = LogisticRegression(C=1.0, tol=1e-13, max_iter=100000, fit_intercept=False).fit(X, y)
    f, grad, hess = _objective(X, y, None, 1.0 / (n * math.log(2)), fit_intercept=False)
    g = grad(res.weights[-1])
    assert np.max(np.abs(g)) <= GTOL + 1e-12
    g_ref = float(np.linalg.norm(grad(ref.coef_[0])))
    assert g_ref < 1e-2 * GTOL
    mu = 0.5 * min(np.linalg.eigvalsh(hess(res.weights[-1]))[0], np.linalg.eigvalsh(hess(ref.coef_[0]))[0])
    assert np.linalg.norm(res.weights[-1] - ref.coef_[0]) <= (np.linalg.norm(g) + g_ref) / mu


def test_records_are_the_accepted_iterates_from_the_start():
    X, y, _ = _data(seed=1)
    res = rateopt.train(_problem(X, y, None), method="unconstrained")
    k = res.n_trivial
    its = res.iterations[k:]
    assert its.tolist() == list(range(its.size)) and res.n_iter == its.size
    assert np.all(res.weights[k] == 0.0) and res.biases[k] == 0.0  # iteration 0: the start
    f, _, _ = _objective(X, y, None, res.settings["l2"])
    values = [f(np.append(wt, b)) for wt, b in zip(res.weights[k:], res.biases[k:])]
    assert np.all(np.diff(values) <= 1e-15)  # each accepted L-BFGS step decreases F (its line search's condition)


def test_callback_stops_and_n_iter_caps_the_iterations():
    X, y, _ = _data(seed=2)
    problem = _problem(X, y, None)
    seen = []
    res = rateopt.train(problem, method="unconstrained", callback=lambda t, info: seen.append(t) or t == 3)
    assert seen == [0, 1, 2, 3] and res.n_iter == 4
    capped = rateopt.train(problem, method="unconstrained", n_iter=5)
    assert capped.n_iter == 5 and capped.iterations[-1] == 4


def test_a_warm_start_at_the_solution_stops_at_once():
    X, y, _ = _data(seed=4)
    problem = _problem(X, y, None)
    res = rateopt.train(problem, method="unconstrained")
    again = rateopt.train(problem, method="unconstrained", resume=res)
    assert again.n_iter - res.n_iter <= 2  # the resumed start already meets the stopping rule (or nearly)
    np.testing.assert_allclose(again.weights[-1], res.weights[-1], atol=1e-6)


@pytest.mark.parametrize("given, optimizer", [
    (dict(), "lbfgs"),
    (dict(learning_rate=0.1), "adam"),         # a step size asks for gradient steps
    (dict(proxy="hinge"), "adam"),             # not smooth
    (dict(batch_size=50), "adam"),             # minibatches
    (dict(optimizer="sgd", learning_rate=0.05), "sgd"),
])
def test_the_default_optimizer(given, optimizer):
    X, y, _ = _data(n=200)
    res = rateopt.train(_problem(X, y, None), method="unconstrained", n_iter=20, random_state=0, **given)
    assert res.settings["optimizer"] == optimizer


def test_l2_auto_is_the_default_only_without_a_model():
    X, y, _ = _data(n=200)
    problem = _problem(X, y, None)
    assert rateopt.train(problem, method="unconstrained").settings["l2"] == pytest.approx(1 / (200 * math.log(2)))
    assert rateopt.train(problem, rateopt.LinearModel(), method="unconstrained", n_iter=50).settings["l2"] == 0.0
    assert rateopt.train(problem, method="proxy-swap", n_iter=5).settings["l2"] == 0.0  # other methods: as before


def test_lbfgs_is_refused_where_it_cannot_run():
    X, y, _ = _data(n=200)
    problem = _problem(X, y, None)
    with pytest.raises(ValueError, match="optimizer='lbfgs'.*'unconstrained' only"):
        rateopt.train(problem, method="proxy-swap", optimizer="lbfgs")
    with pytest.raises(ValueError, match="optimizer='lbfgs' needs a smooth objective"):
        rateopt.train(problem, method="unconstrained", optimizer="lbfgs", proxy="hinge")
    with pytest.raises(ValueError, match="optimizer='lbfgs' runs in Python"):
        rateopt.train(problem, method="unconstrained", loop="core")
    with pytest.raises(ValueError, match="optimizer='lbfgs' runs full batch"):
        rateopt.train(problem, method="unconstrained", optimizer="lbfgs", batch_size=10)
    with pytest.raises(ValueError, match="optimizer='lbfgs' chooses its own steps"):
        rateopt.train(problem, method="unconstrained", optimizer="lbfgs", learning_rate=0.1)
    assert rateopt.train(problem, method="unconstrained", learning_rate=0.1, n_iter=5).settings["optimizer"] == "adam"
    with pytest.raises(ValueError, match="optimizer must be one of"):
        rateopt.train(problem, method="unconstrained", optimizer="newton")


def test_k_classes_keep_adam_and_no_penalty():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(150, 3))
    y = np.argmax(X @ rng.normal(size=(3, 3)), axis=1)
    problem = rateopt.Problem(datasets=rateopt.ClassDataset(X, y))
    res = rateopt.train(problem, method="unconstrained", n_iter=10, random_state=0)
    assert res.settings["optimizer"] == "adam" and res.settings["l2"] == 0.0
    with pytest.raises(ValueError, match="optimizer='lbfgs' trains two-class models"):
        rateopt.train(problem, method="unconstrained", optimizer="lbfgs", n_iter=10)


def test_estimator_and_command_line_build_trains_default_model(tmp_path):
    """``l2=None`` (the estimator's and the goals file's default) is the method's default, as ``train`` builds it.

    ``RateConstrainedClassifier(method="unconstrained")`` used to keep ``l2=0``
    (it always passed a model) while ``train`` given no model fits
    ``LogisticRegression(C=1)``'s problem. Reference: scikit-learn's fit, as in
    the test above; an explicit ``l2`` still wins.
    """
    from rateopt.cli import main

    X, y, _ = _data(seed=5)
    n = X.shape[0]
    auto = 1.0 / (n * math.log(2))
    res = rateopt.RateConstrainedClassifier(method="unconstrained").fit(X, y).result_
    assert res.settings["l2"] == pytest.approx(auto, rel=1e-15)
    ref = LogisticRegression(C=1.0, tol=1e-13, max_iter=100000).fit(X, y)
    f, grad, hess = _objective(X, y, None, auto)
    x_ref, x = np.append(ref.coef_[0], ref.intercept_[0]), np.append(res.weights[-1], res.biases[-1])
    g_ref, gnorm = float(np.linalg.norm(grad(x_ref))), float(np.linalg.norm(grad(x)))
    mu = 0.5 * min(np.linalg.eigvalsh(hess(x))[0], np.linalg.eigvalsh(hess(x_ref))[0])
    assert np.linalg.norm(x - x_ref) <= (gnorm + g_ref) / mu
    explicit = rateopt.RateConstrainedClassifier(method="unconstrained", l2=0.0).fit(X, y).result_
    assert explicit.settings["l2"] == 0.0
    # the other methods keep 0, as train's default model does
    assert rateopt.RateConstrainedClassifier(n_iter=5).fit(X, y).result_.settings["l2"] == 0.0

    cols = {f"x{j}": X[:, j] for j in range(X.shape[1])}
    with open(tmp_path / "train.csv", "w", encoding="utf-8") as fh:
        fh.write(",".join([*cols, "label"]) + "\n")
        for i in range(n):
            fh.write(",".join([*(repr(float(cols[c][i])) for c in cols), str(int(y[i]))]) + "\n")
    (tmp_path / "goals.toml").write_text('objective = "error"\n\n[train]\nmethod = "unconstrained"\n')
    assert main(["--quiet", "fit", str(tmp_path / "train.csv"), "--label", "label", "--goals",
                 str(tmp_path / "goals.toml"), "--out", str(tmp_path / "model.npz")]) == 0
    saved = rateopt.load(tmp_path / "model.result.npz")
    assert saved.settings["l2"] == pytest.approx(auto, rel=1e-15)
