"""The K-class thresholded mixture: rates recounted by brute force, feasibility, and its floors.

Every expected value here is recomputed from the rows by plain NumPy (class
counts per group, one-hot decisions, an independent softmax), never read back
from the compiled problem the fit used.
"""

import numpy as np
import pytest

import rateopt as ro
from rateopt._postprocess._class_mixture import (
    ClassThresholdedMixture,
    fit_class_thresholded_mixture,
    iterate_candidates,
    thresholded_from_iterates,
)
from rateopt._postprocess._plugin import fit_plugin_rule
from rateopt._solutions._shrink import shrink
from rateopt.exceptions import RateoptError

SLACK = 0.02


def _data(seed=0, n=400, K=3):
    rng = np.random.default_rng(seed)
    group = np.where(rng.random(n) < 0.4, "a", "b")
    Z = rng.normal(size=(n, 4)) + (group == "a")[:, None] * 0.7
    y = np.digitize(Z[:, 0] + 0.5 * Z[:, 1] + rng.normal(scale=0.8, size=n), [-0.2, 1.0][: K - 1])
    X = np.column_stack([Z, group == "a"]).astype(np.float64)
    return X, y, group


def _models(X, y, K, T=6, seed=1):
    """T linear models: a least-squares fit to the one-hot labels, then seeded perturbations of it."""
    rng = np.random.default_rng(seed)
    A = np.column_stack([X, np.ones(len(y))])
    coef = np.linalg.lstsq(A, np.eye(K)[y], rcond=None)[0].T  # (K, d + 1)
    W = coef[None, :, :-1] + rng.normal(scale=0.3, size=(T, K, X.shape[1])) * (np.arange(T) > 0)[:, None, None]
    b = coef[None, :, -1] + rng.normal(scale=0.1, size=(T, K)) * (np.arange(T) > 0)[:, None]
    return W, b


def _problem(X, y, group, slack=SLACK, objective=None):
    data = ro.ClassDataset(X, y, groups={"group": group})
    goals = [ro.goals.multiclass_demographic_parity("group", slack=slack)]
    kw = {} if objective is None else {"objective": objective}
    return ro.Problem(constraints=goals, datasets=data, **kw)


def _softmax(S):
    E = np.exp(S - S.max(axis=1, keepdims=True))
    return E / E.sum(axis=1, keepdims=True)


def _cells(group):
    """Cell ids by group value (the problem's numbering read off the training rows)."""
    return np.where(group == "a", 0, 1)


def _brute_votes(rule, scores, cells):
    """Each rule's class per row, from the rule's parameters alone."""
    out = []
    for t, kind, p in zip(rule.iterate, rule.kinds, rule.params):
        S = scores[t]
        if kind == "offsets":
            o = np.broadcast_to(p[0], S.shape) if p.shape[0] == 1 else p[cells]
            out.append(np.argmax(S + o, axis=1))
        else:
            eta = _softmax(S)
            out.append(np.array([np.argmin(eta[i] @ p[cells[i]]) for i in range(S.shape[0])]))
    return np.stack(out, axis=1)


def _rates(P, y, group, K):
    """Expected error and the largest parity violation of decision distributions P (n, K), by counting."""
    err = 1.0 - P[np.arange(len(y)), y].mean()
    overall = P.mean(axis=0)
    worst = max(np.abs(P[group == g].mean(axis=0) - overall).max() for g in np.unique(group))
    return err, worst - SLACK


@pytest.fixture(scope="module")
def fitted():
    X, y, group = _data()
    K = 3
    problem = _problem(X, y, group)
    # the problem's cell numbering is the one _cells assumes
    assert np.array_equal(problem.compiled.cells, _cells(group)) or np.array_equal(problem.compiled.cells,
                                                                                    1 - _cells(group))
    cells = np.asarray(problem.compiled.cells)
    W, b = _models(X, y, K)
    scores = [X @ W[t].T + b[t] for t in range(W.shape[0])]
    fit = fit_class_thresholded_mixture(problem, scores)
    return X, y, group, cells, problem, W, b, scores, fit


def test_rates_recounted_by_brute_force(fitted):
    X, y, group, cells, problem, W, b, scores, fit = fitted
    votes = _brute_votes(fit.rule, scores, cells)
    P = np.zeros((len(y), 3))
    for r, p in enumerate(fit.rule.probabilities):
        P[np.arange(len(y)), votes[:, r]] += p
    assert np.allclose(fit.rule.distribution(scores, cells), P, atol=1e-12)
    err, viol = _rates(P, y, group, 3)
    assert err == pytest.approx(fit.objective, abs=1e-12)
    assert viol <= 1e-9  # feasible when recounted from the rows
    assert fit.max_violation <= 1e-9
    assert fit.rule.probabilities.sum() == pytest.approx(1.0, abs=1e-12)


def test_draws_follow_the_drawn_rule(fitted):
    X, y, group, cells, problem, W, b, scores, fit = fitted
    u = np.random.default_rng(5).random(len(y))
    d = fit.rule.decisions(scores, cells, u)
    votes = _brute_votes(fit.rule, scores, cells)
    cdf = np.cumsum(fit.rule.probabilities)
    pick = np.array([min(int(np.sum(ui >= cdf[:-1])), len(cdf) - 1) for ui in u])
    assert np.array_equal(d, votes[np.arange(len(y)), pick])


def test_never_worse_than_the_plugin_of_the_reference_and_the_shrink(fitted):
    X, y, group, cells, problem, W, b, scores, fit = fitted
    # the reference iterate's plug-in mixture, fitted by rateopt's plug-in post-processor on its softmax
    eta = _softmax(scores[fit.reference])
    soft = ro.Problem(constraints=[ro.goals.multiclass_demographic_parity("group", slack=SLACK)],
                                datasets=ro.ClassDataset(X, y, groups={"group": group}), label_probabilities=eta)
    plug = fit_plugin_rule(soft, eta)
    P_plug = plug.rule.distribution(eta, np.asarray(soft.compiled.cells))
    err_plug, viol_plug = _rates(P_plug, y, group, 3)
    assert viol_plug <= 1e-9  # parity does not read the labels: the plug-in is feasible on them too
    assert fit.reference_plugin_objective == pytest.approx(err_plug, abs=1e-12)
    assert fit.objective <= err_plug + 1e-12
    # and no worse than the m+1 shrink over the candidates as trained (true-label counts by argmax)
    f = [_rates(np.eye(3)[np.argmax(S, axis=1)], y, group, 3)[0] for S in scores]
    G_full = np.stack([problem.constraint_values(_counts(problem, np.argmax(S, axis=1))) for S in scores])
    p = np.asarray(shrink(np.array(f), G_full).weights)
    assert np.max(p @ G_full) <= 1e-9  # the shrink meets the goals here, so the comparison is like for like
    assert fit.objective <= float(p @ np.array(f)) + 1e-12


def _counts(problem, d):
    c, ds = problem.compiled, problem.dataset
    N = np.zeros((c.n_cells, ds.n_classes, ds.n_classes))
    np.add.at(N, (np.asarray(c.cells), ds.label_index, d), ds.weights)
    return N


def test_epsilon_allows_that_violation(fitted):
    X, y, group, cells, problem, W, b, scores, fit = fitted
    loose = fit_class_thresholded_mixture(problem, scores, epsilon=0.03)
    _, viol = _rates(loose.rule.distribution(scores, cells), y, group, 3)
    assert viol <= 0.03 + 1e-9
    assert loose.objective <= fit.objective + 1e-12


def test_group_blind_needs_no_groups_and_is_a_linear_mixture(fitted):
    X, y, group, cells, problem, W, b, scores, fit = fitted
    blind = fit_class_thresholded_mixture(problem, scores, group_blind=True)
    assert blind.rule.group_blind and set(blind.rule.kinds) == {"offsets"}
    P = blind.rule.distribution(scores)  # no cells
    err, viol = _rates(P, y, group, 3)
    assert err == pytest.approx(blind.objective, abs=1e-12) and viol <= 1e-9
    Wl, bl = blind.rule.linear_models(W, b)
    lin = ro.MulticlassClassifier(Wl, bl, blind.rule.probabilities, classes=np.arange(3))
    assert np.allclose(lin.predict_proba(X), P, atol=1e-12)
    with pytest.raises(ValueError, match="cells"):
        fit.rule.distribution(scores)  # the group-aware rule refuses to guess the cells


def test_classifier_from_iterates_predicts_and_draws(fitted):
    X, y, group, cells, problem, W, b, scores, fit = fitted
    T = W.shape[0]
    extra = (W[:1] * 1.5, b[:1])
    clf, fit2, names = thresholded_from_iterates(problem, W, b, best=2, include=[4], n_candidates=3,
                                                 extra_models=extra)
    assert "iterate 2" in names and "iterate 4" in names and names[fit2.reference] == "iterate 2"
    assert names[-1] == "extra 0"
    Wc, bc, names_c = iterate_candidates(W, b, n_candidates=3, include=(2, 4))
    assert names == names_c + ["extra 0"]
    Wc, bc = np.concatenate((Wc, extra[0])), np.concatenate((bc, extra[1]))
    assert np.allclose(Wc[names.index(f"average 0:{T}")], W.mean(axis=0))
    cand_scores = [X @ Wc[r].T + bc[r] for r in range(Wc.shape[0])]
    P = fit2.rule.distribution(cand_scores, cells)
    assert np.allclose(clf.predict_proba(X, cells), P, atol=1e-12)
    err, viol = _rates(P, y, group, 3)
    assert err == pytest.approx(fit2.objective, abs=1e-12) and viol <= 1e-9
    # drawn decisions realize predict_proba within binomial noise, per group and class
    d = clf.predict(X, cells, random_state=3)
    for g in np.unique(group):
        rows = group == g
        for k in range(3):
            p = P[rows, k].mean()
            se = np.sqrt(max(p * (1 - p), 1e-12) / rows.sum())
            assert abs(np.mean(d[rows] == k) - p) <= 4 * se + 1e-12


def test_bad_input_names_the_argument(fitted):
    X, y, group, cells, problem, W, b, scores, fit = fitted
    with pytest.raises(ValueError, match="scores"):
        fit_class_thresholded_mixture(problem, [scores[0][:, :2]])
    with pytest.raises(ValueError, match="scores"):
        fit_class_thresholded_mixture(problem, [])
    with pytest.raises(ValueError, match="epsilon"):
        fit_class_thresholded_mixture(problem, scores, epsilon=-0.1)
    with pytest.raises(ValueError, match="rules"):
        fit_class_thresholded_mixture(problem, scores, rules=("trees",))
    with pytest.raises(ValueError, match="reference"):
        fit_class_thresholded_mixture(problem, scores, reference=len(scores))
    with pytest.raises(ValueError, match="extra_models"):
        thresholded_from_iterates(problem, W, b, extra_models=(W[:1, :2], b[:1, :2]))
    with pytest.raises(ValueError, match="include"):
        iterate_candidates(W, b, include=(W.shape[0],))
    f1 = _problem(X, y, group, objective="macro_f1")
    with pytest.raises(RateoptError, match="macro-F1"):
        fit_class_thresholded_mixture(f1, scores)


def test_a_clean_mixture_object_round_trips_its_support(fitted):
    X, y, group, cells, problem, W, b, scores, fit = fitted
    clf = ClassThresholdedMixture(fit.rule, W, b, classes=np.array(["x", "y", "z"]))
    assert clf.scorer.n_models == np.unique(fit.rule.iterate).size
    assert np.allclose(clf.predict_proba(X, cells), fit.rule.distribution(scores, cells), atol=1e-12)
    assert set(clf.predict(X, cells)) <= {"x", "y", "z"}
