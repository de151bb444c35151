"""Training games and their solutions (``rateopt.train``, ``TrainResult``).

Every expected value here is computed independently of the code under test:
decisions of recorded iterates are recomputed with NumPy (``X @ w + b >= 0``)
and counted, the shrinking LP is checked against ``scipy.optimize.linprog``
(brute force over supports of size <= m + 1, and the LP over every threshold
classifier of a 1-D problem whose optimum is also worked out by hand).

References: Cotter et al., "Optimization with Non-Differentiable Constraints
with Applications to Fairness, Recall, Churn, and Other Goals", JMLR 2019
(seed 001); ``/work/shared/papers/notes/001.md`` sections 7, 8.0 and 12.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import warnings

import numpy as np
import pytest
from _games_support import params_for
from rateopt import (
    Dataset,
    LinearClassifier,
    LinearModel,
    Problem,
    StochasticClassifier,
    TrainResult,
    positive_prediction_rate,
    train,
)
from rateopt._training._spec import GameSpec, spec_from_problem
from rateopt.exceptions import InfeasibleWarning
from scipy.optimize import linprog

METHODS = ("proxy-swap", "proxy-external", "lagrangian-hinge", "unconstrained")
FIG2_SEED = 20190001  # any fixed seed; the assertions below hold with a wide margin for it


# --------------------------------------------------------------------------- #
# Data and independent references
# --------------------------------------------------------------------------- #


#: The papers' settings (hinge objective proxy, the paper's uniform swap-regret
#: start, no floor): the tests below were calibrated on them (explicit eta_lambda
#: and short runs) and test properties that do not depend on the defaults
#: (docs/defaults.md), which other tests train with.
PAPER = dict(proxy="hinge", lambda_init="uniform", lambda_floor=0.0, learning_rate=0.01)


def fig2_data(seed=FIG2_SEED):
    """Seed 001 Figure 2: 4 Gaussians of 100 points, covariance 0.05 I.

    Centers (0, 1), (-1, 0) are red (0); (0, -1), (1, 0) are blue (1).
    Returns X, y and the cluster index of every point.
    """
    rng = np.random.default_rng(seed)
    centers = np.array([[0.0, 1.0], [-1.0, 0.0], [0.0, -1.0], [1.0, 0.0]])
    cluster = np.repeat(np.arange(4), 100)
    X = centers[cluster] + rng.normal(scale=math.sqrt(0.05), size=(400, 2))
    y = (cluster >= 2).astype(np.int64)
    return np.ascontiguousarray(X), y, cluster


def fig2_problem(X, y, cluster, m=1, name="train"):
    """The Figure 2 coverage constraint, plus (m = 2) a cap on cluster 3's coverage."""
    ds = Dataset(X, y, groups={"cluster": cluster}, name=name)
    ctx = ds.context()
    cons = [positive_prediction_rate(ctx) >= 0.55]
    if m >= 2:
        cons.append(positive_prediction_rate(ctx.subset(group="cluster", value=3)) <= 0.9)
    return Problem(constraints=cons)


def fig2_values_numpy(decisions, y, cluster, m=1):
    """Objective (error rate) and constraint values of ``fig2_problem`` from a NumPy count.

    ``decisions`` may be expected decisions (probabilities) of shape (n,) or a
    stack (k, n).
    """
    d = np.asarray(decisions, dtype=np.float64)
    err = np.mean(np.abs(d - y), axis=-1)
    g = [0.55 - d.mean(axis=-1)]
    if m >= 2:
        g.append(d[..., cluster == 3].mean(axis=-1) - 0.9)
    return err, np.stack(g, axis=-1)


def decisions(X, w, b):
    """0/1 decisions of one linear model or a stack of them: shape (n,) or (k, n)."""
    w = np.asarray(w, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if w.ndim == 1:
        return (X @ w + b >= 0).astype(np.float64)
    return (X @ w.T + b >= 0).T.astype(np.float64)


def mixture_proba(X, clf):
    """Probability-weighted mean of the support models' decisions."""
    if isinstance(clf, LinearClassifier):
        return decisions(X, clf.coef_[0], clf.intercept_[0])
    return clf.probabilities_ @ decisions(X, clf.weights_, clf.biases_)


def brute_force_lp(f, G, eps=0.0):
    """min <p, f> s.t. G^T p <= eps, p in the simplex, by enumerating supports of size <= m + 1.

    Every support is solved as its own tiny LP with ``linprog``; a basic
    optimal solution of the full LP has at most m + 1 nonzeros, so the best of
    these is the LP optimum. Candidates with identical (f, G) rows are merged
    first (duplicate columns cannot change the optimum).
    """
    T, m = G.shape
    rows = np.unique(np.column_stack([f, G]), axis=0)
    f, G = rows[:, 0], rows[:, 1:]
    best = np.inf
    for k in range(1, m + 2):
        for S in itertools.combinations(range(f.size), k):
            S = list(S)
            r = linprog(f[S], A_ub=G[S].T, b_ub=np.full(m, eps), A_eq=np.ones((1, k)), b_eq=[1.0],
                        bounds=(0, None), method="highs")
            if r.status == 0:
                best = min(best, r.fun)
    return best


@pytest.fixture(scope="module")
def fig2():
    return fig2_data()


# --------------------------------------------------------------------------- #
# Figure 2 (seed 001, Sec. 1.5)
# --------------------------------------------------------------------------- #


def test_figure2_hinge_overconstrains_proxy_swap_meets_coverage(fig2):
    X, y, cluster = fig2
    problem = fig2_problem(X, y, cluster)
    hinge = train(problem, method="lagrangian-hinge", n_iter=1000)
    swap = train(problem, method="proxy-swap", n_iter=1000)

    # Hinge relaxation: the last iterate over-constrains (paper: 80.5 % blue).
    last = hinge.solution("last")
    d_last = decisions(X, hinge.weights[-1], hinge.biases[-1])
    np.testing.assert_array_equal(last.predict_proba(X)[:, 1], d_last)
    hinge_blue = d_last.mean()
    assert hinge_blue >= 0.70
    hinge_err = np.mean(d_last != y)

    # Proxy-swap m-stochastic: meets 55 % within 1 % (without over-constraining), with lower error.
    clf = swap.solution("m-stochastic")
    proba = clf.predict_proba(X)[:, 1]
    np.testing.assert_allclose(proba, mixture_proba(X, clf), rtol=0, atol=1e-15)
    blue = proba.mean()
    err = np.mean(np.abs(proba - y))
    assert 0.55 - 0.01 <= blue <= 0.55 + 0.01
    assert blue >= 0.55 - 1e-9  # the LP holds the constraint exactly on the training data
    assert err < hinge_err

    # The library's own numbers agree with the count.
    ev = problem.evaluate(proba, kind="probabilities")
    assert ev.objective == pytest.approx(err, abs=1e-12)
    assert ev.max_violation <= 1e-9
    obj, g = swap.solution_values("m-stochastic")
    assert obj == pytest.approx(err, abs=1e-12)
    np.testing.assert_allclose(g, [0.55 - blue], rtol=0, atol=1e-12)


# --------------------------------------------------------------------------- #
# Solutions built from the iterates
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("m", [1, 2])
@pytest.mark.parametrize("method", METHODS)
def test_m_stochastic_support_and_no_worse_than_T_stochastic(fig2, method, m):
    X, y, cluster = fig2
    # Unconstrained training puts all of cluster 3 (blue) positive in every iterate, so the
    # m = 2 cap ppr[cluster=3] <= 0.9 is violated by 0.1 whatever the mixture of iterates; the
    # m-stochastic LP meets it by mixing in candidates that are not iterates (the always-negative rule,
    # or a window average's threshold rule), so nothing warns.
    with warnings.catch_warnings():
        warnings.simplefilter("error", InfeasibleWarning)
        res = train(fig2_problem(X, y, cluster, m=m), method=method, n_iter=300,
                    eta_lambda=None if method == "unconstrained" else 0.5)
    if method == "unconstrained" and m == 2:
        assert not res.feasibility("T-stochastic").feasible and res.feasibility("m-stochastic").feasible
        assert res.mixture("m-stochastic")[:res.n_trivial].sum() > 0  # trivial or threshold rules
    k = res.n_trivial
    T = res.weights.shape[0] - k
    for weighting in ("uniform", "lambda"):
        # T-stochastic: every iterate, with the stated weights.
        tclf = res.solution("T-stochastic", weighting=weighting)
        assert isinstance(tclf, StochasticClassifier)
        assert tclf.n_models == T
        lam0 = res.multipliers[k:, 0]
        p_T = np.full(T, 1.0 / T) if weighting == "uniform" else lam0 / lam0.sum()
        np.testing.assert_allclose(tclf.probabilities_, p_T, rtol=0, atol=1e-15)
        t_obj, t_g = fig2_values_numpy(mixture_proba(X, tclf), y, cluster, m)
        lib_obj, lib_g = res.solution_values("T-stochastic", weighting=weighting)
        assert lib_obj == pytest.approx(t_obj, abs=1e-12)
        np.testing.assert_allclose(lib_g, t_g, rtol=0, atol=1e-12)

        # m-stochastic with epsilon = the T-stochastic max violation: T-stochastic is
        # feasible for that LP, so the LP's objective is no worse.
        eps = max(0.0, float(t_g.max()))
        mclf = res.solution("m-stochastic", epsilon=eps)
        assert 1 <= mclf.n_models <= m + 1
        m_obj, m_g = fig2_values_numpy(mixture_proba(X, mclf), y, cluster, m)
        assert m_obj <= t_obj + 1e-12
        assert np.all(m_g <= eps + 1e-9)
        lib_obj, lib_g = res.solution_values("m-stochastic", epsilon=eps)
        assert lib_obj == pytest.approx(m_obj, abs=1e-12)
        np.testing.assert_allclose(lib_g, m_g, rtol=0, atol=1e-12)


@pytest.mark.parametrize("m", [1, 2])
def test_m_stochastic_equals_brute_force_over_supports(fig2, m):
    X, y, cluster = fig2
    res = train(fig2_problem(X, y, cluster, m=m), method="proxy-swap", n_iter=300, record_every=20,
                eta_lambda=0.5, **PAPER)
    f, G = res.objectives, res.constraints
    assert G.shape == (18, m)  # the 2 trivial rules and 16 recorded iterates
    # The recorded values are the iterates' training values (independent count).
    nf, nG = fig2_values_numpy(decisions(X, res.weights, res.biases), y, cluster, m)
    np.testing.assert_allclose(f, nf, rtol=0, atol=1e-12)
    np.testing.assert_allclose(G, nG, rtol=0, atol=1e-12)

    best = brute_force_lp(f, G)
    assert np.isfinite(best), "the LP must be feasible at epsilon = 0 for this comparison"
    obj, g = res.solution_values("m-stochastic")
    assert obj == pytest.approx(best, abs=1e-9)
    assert np.all(g <= 1e-9)
    clf = res.solution("m-stochastic")
    assert clf.n_models <= m + 1
    m_obj, m_g = fig2_values_numpy(mixture_proba(X, clf), y, cluster, m)
    assert m_obj == pytest.approx(best, abs=1e-9)
    assert np.all(m_g <= 1e-9)
    # And the full LP over all T candidates, once, with linprog.
    full = linprog(f, A_ub=G.T, b_ub=np.zeros(m), A_eq=np.ones((1, f.size)), b_eq=[1.0],
                   bounds=(0, None), method="highs")
    assert full.status == 0
    assert full.fun == pytest.approx(best, abs=1e-9)


def test_closed_form_optimum_of_a_1d_threshold_problem():
    """1-D points at 6 locations; the best stochastic classifier under ppr <= 0.4 mixes two thresholds.

    Location j (x = j - 2.5) holds 20 points, ``npos[j]`` of them positive.
    Upper thresholds "x >= location k" cover (6 - k) / 6 of the data; ppr <= 0.4
    falls between k = 3 (coverage 1/2, error 21/120) and k = 4 (coverage 1/3,
    error 33/120), so the optimum is the mixture 0.4 / 0.6 with error 0.235.
    The same optimum is recomputed by linprog over every classifier a 1-D
    linear model can express (all/none, x >= t, x <= t).
    """
    npos = np.array([2, 4, 8, 16, 18, 19])
    n_per = 20
    loc = np.arange(6, dtype=np.float64) - 2.5
    X = np.repeat(loc, n_per)[:, None].copy()
    y = np.concatenate([np.r_[np.ones(k), np.zeros(n_per - k)] for k in npos]).astype(np.int64)
    cap = 0.4

    cands = [np.ones(X.shape[0]), np.zeros(X.shape[0])]
    for t in loc:
        cands.append((X[:, 0] >= t).astype(float))
        cands.append((X[:, 0] <= t).astype(float))
    D = np.array(cands)
    err_c, cov_c = (D != y).mean(axis=1), D.mean(axis=1)
    opt = linprog(err_c, A_ub=cov_c[None, :], b_ub=[cap], A_eq=np.ones((1, D.shape[0])), b_eq=[1.0],
                  bounds=(0, None), method="highs")
    assert opt.status == 0
    assert opt.fun == pytest.approx(0.4 * 21 / 120 + 0.6 * 33 / 120, abs=1e-12)  # = 0.235

    ds = Dataset(X, y)
    problem = Problem(constraints=[positive_prediction_rate(ds.context()) <= cap])
    res = train(problem, method="proxy-swap", n_iter=300, learning_rate=0.05, eta_lambda=1.0, record_every=1)
    clf = res.solution("m-stochastic")
    assert clf.n_models <= 2
    D_support = decisions(X, clf.weights_, clf.biases_)
    expected = clf.probabilities_ @ D_support
    obj = float(np.mean(np.abs(expected - y)))
    coverage = float(expected.mean())
    assert obj <= opt.fun + 0.01
    assert obj >= opt.fun - 1e-9  # no mixture of linear 1-D classifiers beats the LP optimum
    assert coverage <= cap + 1e-6
    lib_obj, lib_g = res.solution_values("m-stochastic")
    assert lib_obj == pytest.approx(obj, abs=1e-12)
    np.testing.assert_allclose(lib_g, [coverage - cap], rtol=0, atol=1e-12)


@pytest.mark.parametrize("method", ["proxy-swap", "lagrangian-hinge"])
def test_solution_values_match_each_solution(fig2, method):
    X, y, cluster = fig2
    res = train(fig2_problem(X, y, cluster, m=2), method=method, n_iter=200, eta_lambda=0.5)
    for kind in ("m-stochastic", "T-stochastic", "best", "last"):
        clf = res.solution(kind)
        assert isinstance(clf, LinearClassifier if kind in ("best", "last") else StochasticClassifier)
        obj, g = fig2_values_numpy(mixture_proba(X, clf), y, cluster, m=2)
        lib_obj, lib_g = res.solution_values(kind)
        assert lib_obj == pytest.approx(obj, abs=1e-12), kind
        np.testing.assert_allclose(lib_g, g, rtol=0, atol=1e-12, err_msg=kind)
    np.testing.assert_array_equal(res.solution("last").coef_, res.weights[-1:])
    np.testing.assert_array_equal(res.solution("last").intercept_, res.biases[-1:])


def test_summary_and_history(fig2, capsys):
    X, y, cluster = fig2
    res = train(fig2_problem(X, y, cluster), n_iter=100, record_every=10)
    text = res.summary()
    assert capsys.readouterr().out.strip() == text.strip()
    assert "ppr[all] >= 0.55" in text
    assert "m-stochastic" in text
    h = res.history
    np.testing.assert_array_equal(h["iteration"], np.r_[np.arange(0, 100, 10), 99])
    k = res.n_trivial  # the history is the recorded iterates', after the trivial rules
    np.testing.assert_array_equal(h["objective"], res.objectives[k:])
    np.testing.assert_array_equal(h["max_violation"], np.maximum(res.constraints[k:].max(axis=1), 0.0))
    np.testing.assert_array_equal(h["multipliers"], res.multipliers[k:])


# --------------------------------------------------------------------------- #
# The games
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("method,update", [(m, "multiplicative") for m in METHODS]
                         + [("proxy-swap", "additive")])
def test_every_method_runs(fig2, method, update):
    X, y, cluster = fig2
    # 50 iterations are too few for the hinge baseline (it over-constrains, Figure 2), and
    # unconstrained training ignores the cluster-3 cap: no mixture of their iterates is feasible,
    # but the m-stochastic LP mixes in the always-negative rule, which is: nothing warns.
    infeasible = method in ("lagrangian-hinge", "unconstrained")
    with warnings.catch_warnings():
        warnings.simplefilter("error", InfeasibleWarning)
        res = train(fig2_problem(X, y, cluster, m=2), method=method,
                    **params_for(method, update=update, n_iter=50, record_every=5, **PAPER))
    assert isinstance(res, TrainResult)
    assert res.method == method
    assert res.n_iter == 50
    if infeasible:
        assert not res.feasibility("T-stochastic").feasible and res.feasibility("m-stochastic").feasible
    T = 13  # the 2 trivial rules (iteration -1), then iterations 0, 5, ..., 45 and the last one, 49
    np.testing.assert_array_equal(res.iterations, np.r_[-1, -1, np.arange(0, 50, 5), 49])
    assert res.weights.shape == (T, 2) and res.biases.shape == (T,)
    assert res.objectives.shape == (T,) and res.constraints.shape == (T, 2)
    assert res.multipliers.shape == (T, 3)
    assert res.val_objectives is None and res.val_constraints is None
    for arr in (res.weights, res.biases, res.objectives, res.constraints, res.multipliers):
        assert np.all(np.isfinite(arr))
    # The trivial rules are the zero model with bias -1 (all negative) and +1 (all positive); the first
    # iterate is the zero model: every score is 0, so everything is predicted positive.
    assert np.all(res.weights[:3] == 0) and res.biases[:3].tolist() == [-1.0, 1.0, 0.0]
    np.testing.assert_array_equal(res.multipliers[:2], 0.0)
    nf, nG = fig2_values_numpy(decisions(X, res.weights, res.biases), y, cluster, m=2)
    np.testing.assert_allclose(res.objectives, nf, rtol=0, atol=1e-12)
    np.testing.assert_allclose(res.constraints, nG, rtol=0, atol=1e-12)
    if method != "proxy-swap":
        # Lagrangian layout: objective weight 1, then lambda >= 0 (all zero when unconstrained).
        np.testing.assert_array_equal(res.multipliers[2:, 0], 1.0)
        assert np.all(res.multipliers[:, 1:] >= 0)
        if method == "unconstrained":
            np.testing.assert_array_equal(res.multipliers[:, 1:], 0.0)


@pytest.mark.parametrize("eta_lambda", [None, 2.0])
@pytest.mark.parametrize("update", ["multiplicative", "additive"])
def test_proxy_swap_multipliers_stay_on_the_simplex(fig2, update, eta_lambda):
    X, y, cluster = fig2
    res = train(fig2_problem(X, y, cluster, m=2), method="proxy-swap", update=update, n_iter=300,
                eta_lambda=eta_lambda, record_every=1)
    lam = res.history["multipliers"]  # the trivial rules' (zero) multipliers are not played
    assert lam.shape == (300, 3)
    assert np.all(lam >= 0)
    np.testing.assert_allclose(lam.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    # The multipliers do move (the constraint is violated by the early iterates).
    assert np.ptp(lam[:, 1]) > 0


def test_lagrange_multipliers_respect_the_radius(fig2):
    X, y, cluster = fig2
    res = train(fig2_problem(X, y, cluster, m=2), method="proxy-external", n_iter=200, eta_lambda=1.0,
                lambda_radius=0.3, record_every=1)
    lam = res.multipliers[:, 1:]
    assert np.all(lam >= 0)
    assert np.all(lam.sum(axis=1) <= 0.3 + 1e-12)
    assert lam.sum(axis=1).max() == pytest.approx(0.3, abs=1e-12)  # the cap binds at some point


def test_callback_stops_training_early(fig2):
    X, y, cluster = fig2
    seen = []

    def callback(iteration, info):
        seen.append((iteration, info["objective"], np.array(info["constraints"]),
                     np.array(info["multipliers"])))
        return iteration >= 30

    res = train(fig2_problem(X, y, cluster), n_iter=500, record_every=10, callback=callback)
    assert res.n_iter == 31
    np.testing.assert_array_equal(res.iterations, [-1, -1, 0, 10, 20, 30])  # the trivial rules first
    assert [s[0] for s in seen] == [0, 10, 20, 30]
    for k, (_, obj, g, lam) in enumerate(seen, start=res.n_trivial):
        assert obj == res.objectives[k]
        np.testing.assert_array_equal(g, res.constraints[k])
        np.testing.assert_array_equal(lam, res.multipliers[k])
    # A callback that never stops changes nothing.
    full = train(fig2_problem(X, y, cluster), n_iter=40, record_every=10, callback=lambda t, i: None)
    assert full.n_iter == 40


def test_validation_values_match_an_independent_evaluation(fig2):
    X, y, cluster = fig2
    Xv, yv, cv = fig2_data(seed=FIG2_SEED + 1)
    problem = fig2_problem(X, y, cluster, m=2)
    val = fig2_problem(Xv, yv, cv, m=2, name="valid")
    res = train(problem, n_iter=200, record_every=10, eta_lambda=0.5, validation=val, **PAPER)
    assert res.val_objectives.shape == (23,)  # the 2 trivial rules, then 21 records
    assert res.val_constraints.shape == (23, 2)
    vf, vG = fig2_values_numpy(decisions(Xv, res.weights, res.biases), yv, cv, m=2)
    np.testing.assert_allclose(res.val_objectives, vf, rtol=0, atol=1e-12)
    np.testing.assert_allclose(res.val_constraints, vG, rtol=0, atol=1e-12)
    # Validation does not change training.
    plain = train(problem, n_iter=200, record_every=10, eta_lambda=0.5, **PAPER)
    np.testing.assert_array_equal(plain.weights, res.weights)
    np.testing.assert_array_equal(plain.objectives, res.objectives)


def test_validation_must_have_the_same_constraints(fig2):
    X, y, cluster = fig2
    with pytest.raises(ValueError, match="same constraints"):
        train(fig2_problem(X, y, cluster, m=2), n_iter=5, validation=fig2_problem(X, y, cluster, m=1))


def test_minibatch_reaches_a_result_similar_to_full_batch(fig2):
    X, y, cluster = fig2
    problem = fig2_problem(X, y, cluster)
    full = train(problem, n_iter=400, eta_lambda=0.5)
    mini = train(problem, n_iter=400, eta_lambda=0.5, batch_size=64, random_state=0)
    f_obj, f_g = full.solution_values("m-stochastic")
    m_obj, m_g = mini.solution_values("m-stochastic")
    assert abs(m_obj - f_obj) <= 0.02
    assert np.all(m_g <= 1e-9) and np.all(f_g <= 1e-9)
    # Recorded values are always full-data values, even in minibatch mode.
    nf, nG = fig2_values_numpy(decisions(X, mini.weights, mini.biases), y, cluster)
    np.testing.assert_allclose(mini.objectives, nf, rtol=0, atol=1e-12)
    np.testing.assert_allclose(mini.constraints, nG, rtol=0, atol=1e-12)
    # A batch at least as large as the data is full batch (recorded alike: record_every given, since
    # its default records every iterate of a batch_size=None run only).
    same = train(problem, n_iter=400, eta_lambda=0.5, batch_size=400, random_state=0, record_every=4)
    full4 = train(problem, n_iter=400, eta_lambda=0.5, record_every=4)
    np.testing.assert_array_equal(same.weights, full4.weights)


def test_train_accepts_a_game_spec(fig2):
    X, y, cluster = fig2
    problem = fig2_problem(X, y, cluster, m=2)
    spec = spec_from_problem(problem)
    assert isinstance(spec, GameSpec)
    a = train(problem, n_iter=100, eta_lambda=0.5, **PAPER)
    b = train(spec, n_iter=100, eta_lambda=0.5, **PAPER)
    # the same candidates, except the window averages' threshold rules: they need the problem's threshold LP
    # and groups, which a game spec does not carry
    assert not np.any(b.iterations == -3)
    keep = a.iterations != -3
    np.testing.assert_array_equal(a.weights[keep], b.weights)
    np.testing.assert_array_equal(a.multipliers[keep], b.multipliers)
    assert a.constraint_names == b.constraint_names == problem.constraint_names


def test_model_options_are_used(fig2):
    X, y, cluster = fig2
    problem = fig2_problem(X, y, cluster)
    res = train(problem, LinearModel(fit_intercept=False, radius=0.5), n_iter=200)
    np.testing.assert_array_equal(res.biases, 0.0)
    assert np.all(np.linalg.norm(res.weights, axis=1) <= 0.5 + 1e-12)


# --------------------------------------------------------------------------- #
# Determinism
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("batch_size", [None, 50])
def test_same_seed_and_threads_give_identical_results(fig2, n_threads, batch_size):
    X, y, cluster = fig2
    problem = fig2_problem(X, y, cluster, m=2)
    Xv, yv, cv = fig2_data(seed=FIG2_SEED + 1)
    val = fig2_problem(Xv, yv, cv, m=2, name="valid")
    kw = dict(n_iter=150, record_every=5, eta_lambda=0.5, batch_size=batch_size, random_state=123,
              n_threads=n_threads, validation=val, **PAPER)
    a = train(problem, **kw)
    b = train(problem, **kw)
    for name in ("weights", "biases", "objectives", "constraints", "multipliers", "iterations",
                 "val_objectives", "val_constraints"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    for kind in ("m-stochastic", "T-stochastic", "best", "last"):
        ca, cb = a.solution(kind), b.solution(kind)
        assert np.array_equal(ca.predict(X, random_state=1), cb.predict(X, random_state=1))
    if batch_size is not None:
        # The seed is really used: another one draws other minibatches.
        c = train(problem, **dict(kw, random_state=124))
        assert not np.array_equal(a.weights, c.weights)


# --------------------------------------------------------------------------- #
# Invalid arguments
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("kwargs,match", [
    (dict(method="lagrangian"), "method must be one of"),
    (dict(method=None), "method must be one of"),
    (dict(optimizer="rmsprop"), "optimizer must be one of"),
    (dict(update="exponential"), "update must be 'multiplicative' or 'additive'"),
    (dict(n_iter=0), "n_iter must be >= 1"),
    (dict(n_iter=-5), "n_iter must be >= 1"),
    (dict(n_iter=10.0), "n_iter must be an integer"),
    (dict(n_iter=True), "n_iter must be an integer"),
    (dict(learning_rate=0.0), "learning_rate must be a positive finite number"),
    (dict(learning_rate=-0.1), "learning_rate must be a positive finite number"),
    (dict(learning_rate=float("nan")), "learning_rate must be a positive finite number"),
    (dict(learning_rate=float("inf")), "learning_rate must be a positive finite number"),
    (dict(learning_rate="fast"), "learning_rate must be a positive number"),
    (dict(batch_size=0), "batch_size must be >= 1"),
    (dict(batch_size=-3), "batch_size must be >= 1"),
    (dict(batch_size=16.5), "batch_size must be an integer"),
    (dict(eta_lambda=0.0), "eta_lambda must be a positive finite number"),
    (dict(eta_lambda=-1.0), "eta_lambda must be a positive finite number"),
    (dict(record_every=0), "record_every must be >= 1"),
    (dict(margin=0.0), "margin must be a positive finite number"),
    (dict(lambda_radius=-1.0), "lambda_radius must be a positive finite number"),
    # Integers beyond the core's 64-bit range: one line naming the parameter, not a pybind11 cast error.
    (dict(n_iter=2**63), r"^n_iter must be <= 9223372036854775807, got 9223372036854775808$"),
    (dict(batch_size=2**63), r"^batch_size must be <= 9223372036854775807, got 9223372036854775808$"),
    (dict(record_every=2**64), r"^record_every must be <= 9223372036854775807, got 18446744073709551616$"),
    (dict(stop_tol=0.1, stop_patience=2**63), r"^stop_patience must be <= 9223372036854775807, got "),
    (dict(random_state=2**64), r"^random_state must be None or an integer in \[0, 2\*\*64 - 1\], got "),
])
def test_invalid_training_arguments(fig2, kwargs, match):
    X, y, cluster = fig2
    with pytest.raises(ValueError, match=match):
        train(fig2_problem(X, y, cluster), **dict(dict(n_iter=5), **kwargs))


def test_invalid_problem_and_model(fig2):
    X, y, cluster = fig2
    with pytest.raises(TypeError, match="problem must be a rateopt Problem"):
        train(object(), n_iter=5)
    with pytest.raises(TypeError, match="model must be a LinearModel"):
        train(fig2_problem(X, y, cluster), model="linear", n_iter=5)


def test_invalid_solution_arguments(fig2):
    X, y, cluster = fig2
    res = train(fig2_problem(X, y, cluster), n_iter=20)
    for bad in ("m_stochastic", "mixture", "T-Stochastic", None):
        if bad is not None:  # solution(None) is the default kind: m-stochastic for two classes
            with pytest.raises(ValueError, match="kind must be one of"):
                res.solution(bad)
        with pytest.raises(ValueError, match="kind must be one of"):
            res.solution_values(bad)
    assert res.default_kind() == "m-stochastic"
    np.testing.assert_array_equal(res.solution(None).probabilities_, res.solution("m-stochastic").probabilities_)
    with pytest.raises(ValueError, match="weighting must be 'uniform' or 'lambda'"):
        res.solution("T-stochastic", weighting="exp")
    with pytest.raises(ValueError, match="epsilon must be finite and >= 0"):
        res.solution("m-stochastic", epsilon=-0.1)


# --------------------------------------------------------------------------- #
# Constraints of extreme magnitude
# --------------------------------------------------------------------------- #


def _without_threshold_rules(res):
    """The same result without its threshold-rule candidates (``iterations == -3``)."""
    from rateopt._solutions._result import TrainResult

    keep = res.iterations != -3
    return TrainResult(method=res.method, weights=res.weights[keep], biases=res.biases[keep],
                       iterations=res.iterations[keep], multipliers=res.multipliers[keep],
                       atom_rates=res.atom_rates[keep], rate_map=res.rate_map, n_iter=res.n_iter,
                       settings=res.settings)


def test_a_constraint_with_coefficient_2_to_the_700_trains_like_its_unit_scale_version(fig2):
    # Regression: a coefficient of ~1e200 overflowed the model player's arithmetic
    # (RuntimeWarning) and the shrinking LP (HiGHS rejected the model). Such rows are
    # rescaled by a power of two for the game; a row of 2**700 becomes exactly 0.5.
    X, y, cluster = fig2
    ds = Dataset(X, y)
    ppr = positive_prediction_rate(ds.context())
    unit = train(Problem(constraints=[0.5 * ppr >= 0.5 * 0.55]), n_iter=200, eta_lambda=0.5)
    huge = train(Problem(constraints=[2.0**700 * ppr >= 2.0**700 * 0.55]), n_iter=200, eta_lambda=0.5)
    # The threshold LP (HiGHS) rejects a row of 2**700, so the huge problem has no threshold-rule candidates
    # (rateopt._solutions._candidates); every other candidate is the unit problem's.
    assert not np.any(huge.iterations == -3) and np.any(unit.iterations == -3)
    unit = _without_threshold_rules(unit)
    np.testing.assert_array_equal(huge.weights, unit.weights)
    np.testing.assert_array_equal(huge.multipliers, unit.multipliers)
    np.testing.assert_array_equal(huge.constraints, unit.constraints * 2.0**701)  # recorded as stated
    _, nG = fig2_values_numpy(decisions(X, huge.weights, huge.biases), y, cluster)
    np.testing.assert_allclose(huge.constraints, nG * 2.0**700, rtol=1e-12, atol=0)
    for kind in ("m-stochastic", "T-stochastic", "best", "last"):
        np.testing.assert_array_equal(mixture_proba(X, huge.solution(kind)), mixture_proba(X, unit.solution(kind)))


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("optimizer", ["adam", "adagrad", "sgd"])
def test_a_constraint_with_coefficient_1e200_trains_and_solves(fig2, method, optimizer):
    X, y, cluster = fig2
    ds = Dataset(X, y)
    problem = Problem(constraints=[1e200 * positive_prediction_rate(ds.context()) >= 1e200 * 0.55])
    res = train(problem, method=method, **params_for(method, optimizer=optimizer, n_iter=300, eta_lambda=0.5,
                                                     learning_rate=0.05))
    _, nG = fig2_values_numpy(decisions(X, res.weights, res.biases), y, cluster)
    np.testing.assert_allclose(res.constraints[:, 0], 1e200 * nG[:, 0], rtol=1e-12, atol=1e188)
    clf = res.solution("m-stochastic")
    coverage = mixture_proba(X, clf).mean()  # independent count of the expected decisions
    assert coverage >= 0.55 - 1e-9  # (the first iterate, all positive, is feasible for every method)
    assert res.feasibility().feasible


def test_problem_regularization_is_the_default_models_l2(fig2):
    X, y, cluster = fig2
    ds = Dataset(X, y, groups={"cluster": cluster})
    cons = [positive_prediction_rate(ds.context()) >= 0.55]
    with_reg = train(Problem(constraints=cons, regularization=0.1), n_iter=100, eta_lambda=0.5)
    with_model = train(Problem(constraints=cons), LinearModel(l2=0.1), n_iter=100, eta_lambda=0.5)
    without = train(Problem(constraints=cons), n_iter=100, eta_lambda=0.5)
    np.testing.assert_array_equal(with_reg.weights, with_model.weights)
    assert not np.array_equal(with_reg.weights, without.weights)
    with pytest.raises(ValueError, match="regularization=0.1 and model.l2=0.2 disagree"):
        train(Problem(constraints=cons, regularization=0.1), LinearModel(l2=0.2), n_iter=5)


def test_recorder_take_adopts_the_records_added_since_and_restarts_on_other_buffers():
    """``_Recorder.take`` called at every record (the core loop's callback) must hold exactly the buffers'
    first ``n`` records, as slicing them does; a different buffer (a new run) starts over."""
    import rateopt
    from rateopt import core
    from rateopt._train import _as_spec, _Recorder
    from rateopt._training._model_kind import WEIGHTS

    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 3))
    g = rng.integers(0, 2, 50)
    ds = rateopt.Dataset(X, (X[:, 0] > 0).astype(int), groups={"g": g})
    spec = _as_spec(rateopt.Problem(constraints=[rateopt.goals.demographic_parity("g", slack=0.1)], datasets=ds))
    rec = _Recorder(spec, None, {}, WEIGHTS)

    def buffers(cap, seed):
        b = core.LoopRecords.allocate(cap, 3, spec.n_constraints, spec.n_atoms)
        r = np.random.default_rng(seed)
        for a in (b.weights, b.biases, b.multipliers, b.rates):
            a[...] = r.normal(size=a.shape)
        b.iterations[...] = np.arange(cap) * 2
        return b

    def check(b, n):
        r = rec.rows
        assert len(r["w"]) == len(r["b"]) == len(r["it"]) == len(r["lam"]) == len(r["rates"]) == n
        np.testing.assert_array_equal(np.array(r["w"]).reshape(n, 3), b.weights[:n])
        np.testing.assert_array_equal(np.array(r["b"]), b.biases[:n])
        np.testing.assert_array_equal(np.array(r["it"]), b.iterations[:n])
        np.testing.assert_array_equal(np.array(r["lam"]).reshape(n, -1), b.multipliers[:n])
        np.testing.assert_array_equal(np.array(r["rates"]).reshape(n, -1), b.rates[:n])
        assert len(r["offsets"]) == n and rec.n_iter == (int(b.iterations[n - 1]) + 1 if n else 0)

    one, two = buffers(8, 1), buffers(8, 2)
    for n in (1, 2, 5, 5, 8):
        rec.take(one, n)
        check(one, n)
    rec.take(two, 3)  # other buffers: start over
    check(two, 3)
    rec.take(one, 4)
    check(one, 4)
    rec.take(one, 2)  # fewer than held: start over
    check(one, 2)
