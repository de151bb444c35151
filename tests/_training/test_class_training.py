"""K-class training through the one driver: the recorded statistics are the iterates' true confusion counts,
the m-stochastic solution is feasible and competitive, the K-class games run and reproduce references.

The contracts shared with two classes (callback, records, parameters, solutions, files, checkpoints) are
stated once for both arities in tests/test_train_contracts.py.
"""

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

import rateopt as ro


def _data(n=3000, K=3, seed=0, shift=1.5):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    g = rng.integers(0, 2, n)
    W = rng.normal(size=(6, K))
    logits = X @ W + np.outer(g, np.linspace(shift, -shift, K))
    P = np.exp(logits - logits.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    y = (P.cumsum(axis=1) > rng.random(n)[:, None]).argmax(axis=1)
    return np.column_stack([X, g]).astype(np.float64), y, np.where(g == 1, "b", "a")


def _counts_by_numpy(problem, coef, intercept, X):
    ds, c = problem.dataset, problem.compiled
    K = ds.n_classes
    pred = np.argmax(X @ coef.T + intercept, axis=1)
    N = np.zeros((c.n_cells, K, K))
    np.add.at(N, (c.cells, ds.label_index, pred), ds.weights)
    return N


def _counts(problem, statistics):
    """A K-class run's recorded statistics as confusion counts: the flattened counts over the total weight."""
    c, K = problem.compiled, problem.n_classes
    return statistics.reshape(c.n_cells, K, K) * problem.dataset.weights.sum()


def _expected(res, problem, kind="m-stochastic"):
    """The training Evaluation of a solution, from the mixture of the recorded statistics."""
    return problem.evaluate_counts(_counts(problem, res.solution_atom_rates(kind)))


def test_recorded_counts_are_each_iterates_true_counts():
    X, y, g = _data()
    w = np.random.default_rng(1).uniform(0.5, 2, len(y))
    ds = ro.ClassDataset(X, y, weights=w, groups={"g": g})
    p = ro.Problem(constraints=[ro.goals.multiclass_demographic_parity("g", slack=0.05)], datasets=ds)
    res = ro.train(p, n_iter=60, random_state=0, record_every=1)
    k = res.n_trivial  # the 3 constant classes, the window average of [0, 50), then the 60 iterates:
    assert k == 4 and np.sum(res.iterations == -1) == 3  # each recount is the model's own
    assert res.weights.shape == (k + 60, 3, X.shape[1]) and res.biases.shape == (k + 60, 3)
    for t in (0, 1, 2, 3, 4, 20, 62):
        np.testing.assert_allclose(_counts(p, res.atom_rates[t]), _counts_by_numpy(p, res.weights[t], res.biases[t], X),
                                   rtol=1e-12, atol=1e-12)


def test_shrunk_solution_meets_demographic_parity_where_logistic_regression_does_not():
    X, y, g = _data()
    ds = ro.ClassDataset(X, y, groups={"g": g})
    p = ro.Problem(constraints=[ro.goals.multiclass_demographic_parity("g", slack=0.05)], datasets=ds)
    lr = LogisticRegression(max_iter=2000).fit(X, y)
    assert p.evaluate(lr.predict(X)).max_violation > 0.02  # the goal binds
    res = ro.train(p, n_iter=500, random_state=0)
    clf = res.solution("m-stochastic")
    assert clf.n_models <= p.n_constraints + 1
    ev = p.evaluate(clf.predict_proba(X))  # the mixture's expected rates, recomputed from its models
    assert ev.max_violation <= 1e-9
    assert ev.objective == pytest.approx(_expected(res, p).objective, abs=1e-12)
    assert ev.objective == pytest.approx(res.solution_objective(), abs=1e-12)
    # the default solution (K classes: thresholded; the group is a feature here, so it is a mixture of linear
    # models) is as good as the exact plug-in post-processing of logistic regression (an independent method)
    default = res.solution()
    assert isinstance(default, ro.MulticlassClassifier) and default.n_models <= p.n_constraints + 1
    ev_default = p.evaluate(default.predict_proba(X))
    assert ev_default.max_violation <= 1e-9 and ev_default.objective <= ev.objective + 1e-12
    post = ro.ThresholdClassifier(lr, prefit=True, goals=[ro.goals.multiclass_demographic_parity("g", slack=0.05)])
    post.fit(X, y, groups={"g": g})
    reference = p.evaluate(post.predict_proba(X, groups={"g": g}))
    assert reference.max_violation <= 1e-9
    assert ev_default.objective <= reference.objective + 0.005


def test_unconstrained_training_matches_multinomial_logistic_regression():
    X, y, g = _data(shift=0.0)
    ds = ro.ClassDataset(X, y, groups={"g": g})
    res = ro.train(ro.Problem(datasets=ds), ro.LinearModel(l2=1e-4), n_iter=800, random_state=0)
    acc = 1 - res.objectives[-1]
    lr = LogisticRegression(C=1e4, max_iter=5000).fit(X, y)
    assert abs(acc - lr.score(X, y)) <= 0.01


def test_kernel_model_learns_a_nonlinear_three_class_problem():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1500, 2))
    r = np.hypot(X[:, 0], X[:, 1])
    y = np.digitize(r, [0.8, 1.5])  # rings: no linear model separates them
    ds = ro.ClassDataset(X, y)
    lin = ro.train(ro.Problem(datasets=ds), n_iter=300, random_state=0).objectives[-1]
    res = ro.train(ro.Problem(datasets=ds), ro.KernelModel(gamma=1.0, n_components=200, random_state=0),
                   n_iter=300, random_state=0)
    clf = res.solution("last")
    assert clf.feature_map is not None
    err = np.mean(clf.predict(X) != y)
    assert err == pytest.approx(res.objectives[-1], abs=1e-12)
    assert err < 0.15 < lin


@pytest.mark.parametrize("method", ["proxy-external", "unconstrained"])
def test_other_games_run_and_record(method):
    X, y, g = _data(n=800)
    ds = ro.ClassDataset(X, y, groups={"g": g})
    p = ro.Problem(constraints=[ro.goals.multiclass_equal_opportunity("g", slack=0.1)], datasets=ds)
    res = ro.train(p, method=method, n_iter=50, random_state=0, record_every=1)
    assert res.method == method and res.n_iter == 50
    assert res.history["multipliers"].shape == (50, p.n_constraints + 1)
    if method == "unconstrained":
        assert np.all(res.multipliers[:, 1:] == 0)


def test_k2_problem_matches_the_binary_path():
    """Two classes through the K-class path: the same rates as the binary problem, and a solution as good."""
    X, y, g = _data(K=2, n=3000)
    binary = ro.Problem(constraints=[ro.goals.demographic_parity("g", slack=0.05)],
                        datasets=ro.Dataset(X, y, groups={"g": g}))
    k2 = ro.Problem(constraints=[ro.goals.multiclass_demographic_parity("g", slack=0.05, classes=(1,))],
                    datasets=ro.ClassDataset(X, y, groups={"g": g}))
    rb = ro.train(binary, n_iter=500, random_state=0)
    rk = ro.train(k2, n_iter=500, random_state=0)
    pb = rb.solution().predict_proba(X)  # (n, 2) at every level, as pk
    pk = rk.solution().predict_proba(X)
    eb, ek = binary.evaluate(pb[:, 1], kind="probabilities"), k2.evaluate(pk)
    # each solution evaluated by the other path's problem gives the same values
    assert k2.evaluate(pb).objective == pytest.approx(eb.objective, abs=1e-12)
    assert list(binary.evaluate(pk[:, 1], kind="probabilities").constraints.values()) == pytest.approx(
        list(ek.constraints.values()), abs=1e-12)
    assert eb.max_violation <= 1e-9 and ek.max_violation <= 1e-9
    assert abs(eb.objective - ek.objective) <= 0.01


def test_macro_f1_objective_improves_macro_f1_on_imbalanced_classes():
    from sklearn.metrics import f1_score
    X, y, g = _data(n=3000, K=3, shift=0.0)
    y = np.where((y == 2) & (np.random.default_rng(3).random(len(y)) < 0.8), 0, y)  # class 2 is rare
    ds = ro.ClassDataset(X, y, groups={"g": g})
    err = ro.train(ro.Problem(datasets=ds), n_iter=400, random_state=0).solution("last")
    f1 = ro.train(ro.Problem(objective="macro_f1", datasets=ds), n_iter=400, random_state=0)
    p = ro.Problem(objective="macro_f1", datasets=ds)
    assert p.evaluate(f1.solution("T-stochastic").predict_proba(X)).objective < p.evaluate(err.predict(X)).objective
    # the recorded objective of every iterate is the macro-F1 objective of its predictions
    for t in (0, f1.weights.shape[0] - 1):
        assert f1.objectives[t] == pytest.approx(p.evaluate(f1.solution_of_iterate(t).predict(X)).objective,
                                                 abs=1e-12)
    assert 1 - p.evaluate(err.predict(X)).objective == pytest.approx(f1_score(y, err.predict(X), average="macro"))


def test_bad_arguments_are_named():
    X, y, g = _data(n=200)
    p = ro.Problem(datasets=ro.ClassDataset(X, y, groups={"g": g}))
    with pytest.raises(ValueError, match="method"):
        ro.train(p, method="lagrangian-hinge")
    with pytest.raises(ValueError, match="n_iter"):
        ro.train(p, n_iter=0)
    with pytest.raises(ValueError, match="proxy"):
        ro.train(p, proxy="ramp")
    with pytest.raises(TypeError, match="must be a rateopt Problem"):
        ro.train(p, validation=object())
    with pytest.raises(ValueError, match="needs problem="):
        ro.train(p, n_iter=5).solution("thresholded")


@pytest.mark.parametrize("warmup", [0.0, 0.2])
def test_the_k_class_games_reproduce_the_reference_loop(warmup):
    """The one driver's K-class run equals a NumPy loop written from the papers: Adam on the cost-weighted
    softmax cross-entropy of the objective plus the Crammer-Singer hinge of lam C, swap-regret multipliers
    (which stay at their start for the first ``round(warmup * T)`` steps: the objective warm-up)."""
    X, y, g = _data(n=500)
    ds = ro.ClassDataset(X, y, groups={"g": g})
    p = ro.Problem(constraints=[ro.goals.multiclass_demographic_parity("g", slack=0.02)], datasets=ds)
    T = 30
    res = ro.train(p, method="proxy-external", n_iter=T, record_every=1, eta_lambda=0.5, random_state=0,
                   objective_warmup=warmup)
    c, K = p.compiled, p.n_classes
    W = ds.weights
    A0, A = c.objective, c.constraints
    theta, b, lam = np.zeros((X.shape[1], K)), np.zeros(K), np.zeros(p.n_constraints)
    m_, v_ = np.zeros(theta.size + K), np.zeros(theta.size + K)
    for t in range(T):
        S = X @ theta + b
        pred = S.argmax(axis=1)
        N = np.zeros((c.n_cells, K, K))
        np.add.at(N, (c.cells, ds.label_index, pred), W)
        np.testing.assert_allclose(res.weights[res.n_trivial + t], theta.T, rtol=1e-9, atol=1e-12)
        cost_obj = A0[c.cells, ds.label_index]  # (n, K)
        cost_con = np.tensordot(lam, A, axes=1)[c.cells, ds.label_index]
        # softmax cross-entropy weighted by the cost gap, towards the cheapest class
        tgt = cost_obj.argmin(axis=1)
        gap = cost_obj.max(axis=1) - cost_obj.min(axis=1)
        P = np.exp(S - S.max(axis=1, keepdims=True))
        P /= P.sum(axis=1, keepdims=True)
        G = (P - np.eye(K)[tgt]) * (gap * W)[:, None]
        # slack-rescaled Crammer-Singer hinge of the constraints' costs
        tc = cost_con.argmin(axis=1)
        D = cost_con - cost_con[np.arange(len(y)), tc][:, None]
        loss = D * np.maximum(0.0, 1.0 + S - S[np.arange(len(y)), tc][:, None])
        loss[np.arange(len(y)), tc] = 0.0
        k = loss.argmax(axis=1)
        on = loss.max(axis=1) > 0
        Gh = np.zeros_like(S)
        rows = np.flatnonzero(on)
        Gh[rows, k[rows]] += D[rows, k[rows]] * W[rows]
        Gh[rows, tc[rows]] -= D[rows, k[rows]] * W[rows]
        G += Gh
        grad = np.concatenate([(X.T @ G).ravel(), G.sum(axis=0)])
        m_ = 0.9 * m_ + 0.1 * grad
        v_ = 0.999 * v_ + 0.001 * grad * grad
        step = 0.02 * (m_ / (1 - 0.9 ** (t + 1))) / (np.sqrt(v_ / (1 - 0.999 ** (t + 1))) + 1e-8)
        theta = theta - step[:theta.size].reshape(theta.shape)
        b = b - step[theta.size:]
        gvals = np.tensordot(A, N, axes=([1, 2, 3], [0, 1, 2])) - c.offsets
        if t >= round(warmup * T):
            lam = np.maximum(lam + 0.5 * gvals, 0.0)


def test_skipping_the_proxy_value_changes_no_record(monkeypatch):
    """proxy-swap never reads the pass's proxy value, so its K-class passes skip it (no softmax logarithm).

    Reference: the same run with the value computed (the game marked as reading it): every record is equal,
    bit for bit, and so are the solution's probabilities.
    """
    from rateopt.games.proxy_lagrangian import ProxySwapGame

    X, y, g = _data(n=2500, K=4, seed=3)
    ds = ro.ClassDataset(X, y, groups={"g": g})
    p = ro.Problem(constraints=[ro.goals.multiclass_demographic_parity("g", slack=0.05)], datasets=ds)
    assert ProxySwapGame.reads_proxy_values is False
    seen = []
    real_pass = ro.core.multiclass_pass

    def spy(*args, **kwargs):
        seen.append(kwargs.get("value", True))
        return real_pass(*args, **kwargs)

    monkeypatch.setattr(ro.core, "multiclass_pass", spy)
    skipped = ro.train(p, method="proxy-swap", n_iter=80, random_state=0, record_every=1)
    n_skipped = len(seen)
    assert n_skipped >= 80 and not any(seen)  # every pass of the run skipped the value
    monkeypatch.setattr(ProxySwapGame, "reads_proxy_values", True)
    computed = ro.train(p, method="proxy-swap", n_iter=80, random_state=0, record_every=1)
    assert len(seen) == 2 * n_skipped and all(seen[n_skipped:])
    for name in ("weights", "biases", "multipliers", "atom_rates", "objectives", "constraints"):
        a, b = getattr(skipped, name), getattr(computed, name)
        assert a.shape == b.shape and np.array_equal(a, b), name
    np.testing.assert_array_equal(skipped.solution("m-stochastic").predict_proba(X),
                                  computed.solution("m-stochastic").predict_proba(X))
