"""The game inside boosting: derivatives, scores, recorded rates and feasibility against independent recounts."""

import math

import numpy as np
import pytest

import rateopt
from rateopt._params import train_settings
from rateopt._training._boosting import BoostingPlayer
from rateopt._training._spec import spec_from_problem
from rateopt.games import get_game

BACKENDS = [pytest.param(b, marks=pytest.mark.skipif(
    __import__("importlib").util.find_spec(b) is None, reason=f"{b} not installed")) for b in ("lightgbm", "xgboost")]


def _problem(goal, n=1500, seed=0):
    """Two groups with different base rates and a group-dependent noise (so parity and TPR goals bind)."""
    rng = np.random.default_rng(seed)
    g = (rng.random(n) < 0.35).astype(np.int64)
    X = np.column_stack([rng.normal(size=n), rng.normal(size=n), g])
    y = (X[:, 0] + 0.5 * X[:, 1] + 0.9 * g + rng.normal(scale=0.3 + 0.7 * g, size=n) > 0.6).astype(np.int64)
    ds = rateopt.Dataset(X, y, groups={"group": np.where(g == 1, "b", "a")})
    return rateopt.Problem(constraints=[goal] if goal is not None else [], datasets=ds), X, y, np.where(g == 1, "b", "a")


@pytest.mark.parametrize("proxy", ["logistic", "hinge"])
def test_player_pass_over_two_blocks_against_a_numpy_recount(proxy):
    """Two datasets (two blocks): the error on "train", demographic parity on "unlabeled"."""
    pytest.importorskip("lightgbm")
    rng = np.random.default_rng(4)
    n1, n2 = 700, 500
    X1, X2 = rng.normal(size=(n1, 3)), rng.normal(size=(n2, 3))
    y1 = (X1[:, 0] > 0).astype(np.int64)
    g2 = np.where(rng.random(n2) < 0.4, "b", "a")
    problem = rateopt.Problem(
        constraints=[rateopt.goals.demographic_parity("group", slack=0.05, dataset="unlabeled")],
        datasets={"train": rateopt.Dataset(X1, y1, name="train"),
                  "unlabeled": rateopt.Dataset(X2, groups={"group": g2}, name="unlabeled")})
    spec = spec_from_problem(problem)
    assert len(spec.blocks) == 2
    model = rateopt.BoostingModel("lightgbm")
    player = BoostingPlayer(spec, model, train_settings(get_game("proxy-swap"), model, proxy=proxy))
    order = {blk.name: k for k, blk in enumerate(spec.blocks)}
    first = order["train"]  # the rows are stacked in the spec's block order
    s = rng.normal(scale=2.0, size=n1 + n2)
    player.scores = s
    s1, s2 = (s[:n1], s[n1:]) if first == 0 else (s[n2:], s[:n2])
    result = player.run_pass(spec.c0)  # the objective alone: the error rate on "train"
    d1, d2 = (s1 >= 0).astype(float), (s2 >= 0).astype(float)
    # the rates, recounted: the objective (error on train) and the constraints (each group vs overall, unlabeled)
    assert spec.c0 @ result.rates + spec.const0 == pytest.approx(np.mean(d1 != y1), abs=1e-12)
    gaps = [d2[g2 == v].mean() - d2.mean() for v in ("a", "b")]
    want = sorted([x - 0.05 for v in gaps for x in (v, -v)])
    assert np.allclose(sorted(spec.C @ result.rates - spec.kappa), want, atol=1e-12)
    # the derivatives of the error rate's proxy: u = +-1/n1 on train rows, 0 on the unlabeled rows; scale n1 + n2
    n = n1 + n2
    g, h = result.grad.grad.astype(float), result.grad.hess.astype(float)
    g1, h1 = (g[:n1], h[:n1]) if first == 0 else (g[n2:], h[n2:])
    g2_, h2_ = (g[n1:], h[n1:]) if first == 0 else (g[:n2], h[:n2])
    assert not g2_.any() and not h2_.any()
    u = np.where(y1 == 1, -1.0, 1.0) / n1
    if proxy == "logistic":
        sig = 1 / (1 + np.exp(-s1))
        want_g, want_h = n * u * np.where(u > 0, sig, 1 - sig), n * np.abs(u) * sig * (1 - sig)
    else:
        z = np.where(u > 0, 1 + s1, 1 - s1)
        want_g, want_h = n * u * np.maximum(z, 0), n * np.abs(u) * (z > 0)
    assert np.allclose(g1, want_g, rtol=1e-6, atol=1e-7) and np.allclose(h1, want_h, rtol=1e-6, atol=1e-7)


def test_the_hessian_weighs_the_objective_and_the_constraints_apart():
    """With the logistic proxy the game's combinations are the objective's (``lam0 c0``) and the constraints'
    (``lam C``): the gradient is that of their net coefficient ``u_j``, the Hessian's coefficient is
    ``w_j = sum_a (|lam0 c0_a| + |(lam C)_a|) v_ja`` instead of ``|u_j|`` (a NumPy reference from the dense
    membership weights). Multipliers that balance the objective on the negative rows make ``u_j`` cancel
    there while ``w_j`` does not: their Newton steps ``|g| / h`` shrink by ``|u_j| / w_j``."""
    pytest.importorskip("lightgbm")
    from rateopt._training._spec import Combinations

    problem, X, y, g = _problem(rateopt.goals.equalized_odds("group", slack=0.0), n=2000, seed=3)
    spec = spec_from_problem(problem)
    model = rateopt.BoostingModel("lightgbm")
    player = BoostingPlayer(spec, model, train_settings(get_game("proxy-swap"), model))
    rng = np.random.default_rng(0)
    n = X.shape[0]
    s = rng.normal(scale=2.0, size=n)
    player.scores = s
    lam0, lam = 0.5, rng.uniform(0.0, 0.5, spec.n_constraints)
    combos = Combinations(np.vstack([lam0 * spec.c0, lam @ spec.C]), ("logistic", "hinge"), np.ones(2))
    result = player.run_pass(combos)
    atoms = spec.blocks[0].atoms
    V = np.zeros((n, spec.n_atoms))  # dense normalized membership weights, row by row
    for j in range(n):
        for p in range(atoms.indptr[j], atoms.indptr[j + 1]):
            V[j, spec.blocks[0].atom_ids[atoms.indices[p]]] += atoms.weights[p]
    u = V @ (lam0 * spec.c0 + lam @ spec.C)
    w = V @ (np.abs(lam0 * spec.c0) + np.abs(lam @ spec.C))
    sig = 1 / (1 + np.exp(-s))
    want_g = n * u * np.where(u > 0, sig, 1 - sig)
    want_h = n * w * sig * (1 - sig)
    got_g, got_h = result.grad.grad.astype(float), result.grad.hess.astype(float)
    assert np.allclose(got_g, want_g, rtol=1e-6, atol=1e-6 * np.abs(want_g).max())
    assert np.allclose(got_h, want_h, rtol=1e-6, atol=1e-6 * np.abs(want_h).max())
    assert np.all(w >= np.abs(u) - 1e-15) and np.any(w > 2 * np.abs(u))  # the terms do cancel on some rows
    # no constraint term (an unconstrained run's zero row): |u|, bit for bit as a single vector
    alone = player.run_pass(Combinations(np.vstack([lam0 * spec.c0, np.zeros(spec.n_atoms)]),
                                         ("logistic", "hinge"), np.ones(2))).grad.hess.copy()
    assert np.array_equal(alone, player.run_pass(lam0 * spec.c0).grad.hess)
    # one combination (a single coefficient vector, or the hinge's one combination): |u| as before
    single = player.run_pass(lam0 * spec.c0 + lam @ spec.C)
    assert np.allclose(single.grad.hess.astype(float), n * np.abs(u) * sig * (1 - sig), rtol=1e-6,
                       atol=1e-6 * np.abs(want_h).max())


@pytest.mark.parametrize("backend", BACKENDS)
def test_player_scores_are_the_backends_fresh_predictions(backend):
    problem, X, _, _ = _problem(rateopt.goals.demographic_parity("group", slack=0.05))
    spec = spec_from_problem(problem)
    model = rateopt.BoostingModel(backend)
    player = BoostingPlayer(spec, model, train_settings(get_game("proxy-swap"), model))
    rng = np.random.default_rng(1)
    for t in range(1, 13):
        player.step(player.run_pass(rng.normal(size=spec.n_atoms)).grad)
        fresh = player.prefix().decision_function(X)
        assert np.array_equal(fresh, player.scores), t  # bit for bit: the recorded rates are the solution's


@pytest.mark.parametrize("backend", BACKENDS)
def test_recorded_rates_are_recounted_from_each_prefix(backend):
    problem, X, y, g = _problem(rateopt.goals.equal_opportunity("group", slack=0.02))
    result = rateopt.train(problem, rateopt.BoostingModel(backend, n_rounds=25))
    # the always-negative trivial rule (prefix -1), then the 26 prefixes from the empty ensemble to all 25 trees
    assert [m.n_trees for m in result.models] == list(range(-1, 26)) and result.n_trivial == 1
    for t, prefix in enumerate(result.models):
        d = prefix.predict(X).astype(float)
        # independent recount of every constrained rate: NumPy TPR per group and overall
        tpr = {v: d[(g == v) & (y == 1)].mean() for v in np.unique(g)}
        overall = d[y == 1].mean()
        values = result.rate_map.constraints([result.atom_rates[t]])[0]
        expected = [v for k in sorted(tpr) for v in (tpr[k] - overall - 0.02, overall - tpr[k] - 0.02)]
        assert np.allclose(sorted(values), sorted(expected), atol=1e-12)
        assert result.rate_map.objective(result.atom_rates[t]) == pytest.approx(np.mean(d != y), abs=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("goal", ["demographic_parity", "equal_opportunity"])
def test_shrunk_solution_meets_the_training_constraints(backend, goal):
    make = getattr(rateopt.goals, goal)
    problem, X, y, g = _problem(make("group", slack=0.01), n=3000, seed=2)
    unconstrained = rateopt.train(problem, rateopt.BoostingModel(backend, n_rounds=60), method="unconstrained")
    result = rateopt.train(problem, rateopt.BoostingModel(backend, n_rounds=60))
    rows = (y == 1) if goal == "equal_opportunity" else np.ones_like(y, dtype=bool)

    def worst_gap(p):  # the goal's worst group-vs-overall excess, recounted with NumPy
        overall = p[rows].mean()
        return max(abs(p[rows & (g == v)].mean() - overall) for v in np.unique(g)) - 0.01

    last = unconstrained.solution("last").predict_proba(X)[:, 1]
    assert worst_gap(last) > 0  # the goal binds: the unconstrained booster violates it
    p = result.solution().predict_proba(X)[:, 1]
    assert worst_gap(p) <= 1e-3  # the "Feasible" target
    assert np.mean(np.where(y == 1, 1 - p, p)) <= np.mean(y != (last >= 0.5)) + 0.1  # no collapse


def test_unconstrained_boosting_is_lightgbms_own_logistic_boosting():
    lgb = pytest.importorskip("lightgbm")
    problem, X, y, _ = _problem(None, n=800, seed=3)
    result = rateopt.train(problem, rateopt.BoostingModel("lightgbm", n_rounds=15, min_child_weight=1e-3),
                           method="unconstrained")
    ours = result.models[-1].decision_function(X)
    # LightGBM's binary objective has g = sigma - y, h = sigma (1 - sigma): the error rate's derivatives here
    params = {"objective": "binary", "learning_rate": 0.1, "max_depth": 6, "num_leaves": 31,
              "min_sum_hessian_in_leaf": 1e-3, "boost_from_average": False,
              "deterministic": True, "num_threads": 1, "verbosity": -1}
    booster = lgb.train(params, lgb.Dataset(X, y), num_boost_round=15)
    # the same trees (split features and thresholds); leaf values to LightGBM's float32 gradient storage
    splits = ["tree_index", "split_feature", "threshold"]
    assert result.models[-1].booster.booster.trees_to_dataframe()[splits].equals(booster.trees_to_dataframe()[splits])
    assert np.allclose(ours, booster.predict(X, raw_score=True), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("params, message", [
    ({"learning_rate": 0.1}, "BoostingModel does not use \\['learning_rate'\\]"),
    ({"batch_size": 10}, "every tree is grown on all training rows"),
    ({"n_iter": 7}, "n_iter=7 and BoostingModel\\(n_rounds=5\\) disagree"),
    ({"method": "oracle-proxy"}, "does not train a model player"),
])
def test_refusals(params, message):
    problem, _, _, _ = _problem(rateopt.goals.demographic_parity("group", slack=0.05), n=200)
    with pytest.raises(ValueError, match=message):
        rateopt.train(problem, rateopt.BoostingModel("lightgbm", n_rounds=5), **params)


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_solution_is_never_worse_than_the_feasible_constant_negative_rule(backend, tmp_path):
    # Exact parity on a rare label: the empty ensemble (everyone positive, error 1 - base rate) was the only
    # constant candidate; the always-negative rule (error = base rate) is feasible too and must be a candidate.
    rng = np.random.default_rng(0)
    n = 4000
    g = np.where(rng.random(n) < 0.3, "b", "a")
    X = np.column_stack([rng.normal(size=n), g == "b"])
    y = (X[:, 0] + 0.8 * X[:, 1] + rng.normal(scale=0.5, size=n) > 2.2).astype(int)
    problem = rateopt.Problem(constraints=[rateopt.goals.demographic_parity("g", slack=0.0)],
                              datasets=rateopt.Dataset(X, y, groups={"g": g}))
    result = rateopt.train(problem, rateopt.BoostingModel(backend, n_rounds=20), n_threads=1, random_state=0)
    assert result.iterations[0] == -1 and np.all(result.atom_rates[0] == 0.0)
    clf = result.solution()
    p = clf.predict_proba(X)[:, 1]
    error = float(np.mean(np.where(y == 1, 1.0 - p, p)))  # the expected 0-1 error, recounted
    rates = {v: p[g == v].mean() for v in ("a", "b")}
    assert abs(rates["a"] - p.mean()) <= 1e-9 and abs(rates["b"] - p.mean()) <= 1e-9
    assert error <= y.mean() + 1e-12  # the all-negative rule's error, by hand
    clf.save(tmp_path / "m.npz")
    assert np.array_equal(rateopt.load(tmp_path / "m.npz").predict_proba(X), clf.predict_proba(X))


def test_the_default_multiplier_step_scales_with_the_rounds():
    """proxy-swap's default step 3 / B (B the constraints' bound) is scaled by sqrt(250 / n_rounds) for boosted
    runs only; a given step, Lemma 8's uniform start and linear models keep theirs."""
    pytest.importorskip("lightgbm")
    problem, X, y, g = _problem(rateopt.goals.equal_opportunity("group", slack=0.02), n=400)
    spec = spec_from_problem(problem)
    base = 3.0 / spec.for_players().constraint_bound()
    for rounds in (10, 100, 250, 1000):
        result = rateopt.train(problem, rateopt.BoostingModel("lightgbm", n_rounds=rounds))
        assert result.settings["eta_lambda"] == pytest.approx(base * math.sqrt(250 / rounds), rel=1e-12)
    given = rateopt.train(problem, rateopt.BoostingModel("lightgbm", n_rounds=10), eta_lambda=0.7)
    assert given.settings["eta_lambda"] == 0.7
    assert rateopt.train(problem, n_iter=10).settings["eta_lambda"] == pytest.approx(base, rel=1e-12)
    uniform = rateopt.train(problem, rateopt.BoostingModel("lightgbm", n_rounds=10), lambda_init="uniform")
    k = spec.n_constraints + 1  # Lemma 8's step, which already scales with the rounds
    assert uniform.settings["eta_lambda"] == pytest.approx(
        math.sqrt(k * math.log(k) / (10 * (base / 3.0) ** -2)), rel=1e-12)


def test_a_boosted_runs_default_multiplier_floor_is_1e_2():
    """proxy-swap's floor (and objective-focused start) is 1e-2 for boosted runs (bench/boosting_collapse_study.py)
    and 1e-3 for linear models; a given floor is kept. The floor holds: a constraint met with room to spare
    sinks to it (every entry of the swap matrix is kept near floor / k or above, the column then renormalized,
    so each stationary multiplier is too) and, with the game's 1e-3, sinks ten times lower."""
    pytest.importorskip("lightgbm")
    from rateopt._training._boosting import BOOSTED_LAMBDA_FLOOR

    problem, X, y, g = _problem(rateopt.goals.demographic_parity("group", slack=0.6), n=400)
    k = spec_from_problem(problem).n_constraints + 1
    boosted = rateopt.train(problem, rateopt.BoostingModel("lightgbm", n_rounds=60))
    assert boosted.settings["lambda_floor"] == BOOSTED_LAMBDA_FLOOR == 1e-2
    lam = boosted.multipliers[boosted.n_trivial + 1:, 1:]
    assert lam.min() >= 0.95 * BOOSTED_LAMBDA_FLOOR / k
    low = rateopt.train(problem, rateopt.BoostingModel("lightgbm", n_rounds=60), lambda_floor=1e-3)
    assert low.settings["lambda_floor"] == 1e-3
    assert low.multipliers[low.n_trivial + 1:, 1:].min() < 0.2 * BOOSTED_LAMBDA_FLOOR / k
    assert rateopt.train(problem, n_iter=10).settings["lambda_floor"] == 1e-3
    external = rateopt.train(problem, rateopt.BoostingModel("lightgbm", n_rounds=5), "proxy-external")
    assert external.settings["lambda_floor"] == 0.0  # a game without a floor keeps none


def test_the_default_solution_of_a_boosted_run_is_the_thresholded_one_over_17_evenly_spaced_prefixes():
    """solution() of a boosted run with goals: the thresholded solution, whose candidates are the trivial rules
    and the prefixes round(j T / 16), j = 0..16 (fixed before training); no goals: the m-stochastic solution
    (the best prefix)."""
    pytest.importorskip("lightgbm")
    from rateopt._postprocess._mixture import ThresholdedMixture

    problem, X, y, g = _problem(rateopt.goals.equalized_odds("group", slack=0.01), n=800)
    result = rateopt.train(problem, rateopt.BoostingModel("lightgbm", n_rounds=60))
    assert result.default_kind() == "thresholded"
    clf = result.solution()
    assert isinstance(clf, ThresholdedMixture)
    lengths = result.threshold_candidates().prefix_lengths_
    # Python's round() halves to even, as NumPy's: 3.75 -> 4, 11.25 -> 11, 18.75 -> 19, 22.5 -> 22, 37.5 -> 38
    assert lengths.tolist() == [-1] + [round(j * 60 / 16) for j in range(17)] == [
        -1, 0, 4, 8, 11, 15, 19, 22, 26, 30, 34, 38, 41, 45, 49, 52, 56, 60]
    assert set(clf.scorer.prefix_lengths_.tolist()) <= set(lengths.tolist())
    p = clf.predict_proba(X)[:, 1]  # the goal recounted: TPR and FPR of each group within 0.01 of the overall
    for label in (0, 1):
        overall = p[y == label].mean()
        assert max(abs(p[(g == v) & (y == label)].mean() - overall) for v in ("a", "b")) <= 0.01 + 1e-3
    plain, *_ = _problem(None, n=800)
    assert rateopt.train(plain, rateopt.BoostingModel("lightgbm", n_rounds=5)).default_kind() == "m-stochastic"


def test_candidates_of_a_run_recording_every_fifth_prefix_are_the_nearest_recorded_ones():
    pytest.importorskip("lightgbm")
    problem, *_ = _problem(rateopt.goals.demographic_parity("group", slack=0.02), n=600)
    result = rateopt.train(problem, rateopt.BoostingModel("lightgbm", n_rounds=60), record_every=14)
    recorded = [m.n_trees for m in result.models]
    assert recorded == [-1, 0, 14, 28, 42, 56, 60]
    # wanted round(j 60 / 16): 0, 4, 8, 11, 15, 19, 22, 26, 30, 34, 38, 41, 45, 49, 52, 56, 60; the nearest
    # recorded: 0 (4), 14 (8, 11, 15, 19), 28 (22, 26, 30, 34), 42 (38, 41, 45, 49), 56 (52, 56), 60
    assert result.threshold_candidates().prefix_lengths_.tolist() == [-1, 0, 14, 28, 42, 56, 60]


@pytest.mark.parametrize("goal", [rateopt.goals.equal_opportunity("group", slack=0.01),
                                  rateopt.goals.equalized_odds("group", slack=0.0)])
@pytest.mark.parametrize("backend", BACKENDS)
def test_the_kept_candidate_bins_are_the_backends_predictions_bins_and_give_the_rescored_solution(backend, goal,
                                                                                                  monkeypatch):
    """The training loop keeps each candidate's quantile bins of its training scores: the bins and edges
    that bin_chains cuts at 256 quantiles of the backend's own predictions of the prefix (the reference:
    every candidate scored through the backend), one byte a row, and the last prefix's exact scores. The
    thresholded solution fitted from them is the one fitted on the rows scored again, field by field;
    solution() scores at most the support prefixes other than the last, in one pass."""
    from rateopt._postprocess._bins import bin_chains, row_atoms, separating_edges
    from rateopt._postprocess._mixture import AUTO_BINS, fit_thresholded_mixture
    from rateopt._predictors._boosting import KEPT_BINS

    assert KEPT_BINS == AUTO_BINS  # the kept bins are the first LP's
    problem, X, y, g = _problem(goal, n=1200, seed=5)
    result = rateopt.train(problem, rateopt.BoostingModel(backend, n_rounds=40))
    scorer = result.threshold_candidates()
    booster = scorer.booster
    assert sorted(booster.kept) == [round(j * 40 / 16) for j in range(1, 17)]
    atoms, weights = row_atoms(problem.compiled.tables, problem.compiled.datasets)
    n_distinct = []
    for t, kept in booster.kept.items():
        scores = booster.raw_scores(X, t)
        n_distinct.append(np.unique(scores).size)
        ref = bin_chains(scores, np.zeros(len(scores), dtype=np.int64), 1, atoms, weights,
                         problem.compiled.n_atoms, n_bins=256, merge=False)
        bin_of_row = np.empty(len(scores), dtype=np.int64)
        bin_of_row[ref.order] = ref.bin_of_sorted
        assert kept.codes.dtype == np.uint8 and np.array_equal(kept.codes, bin_of_row)
        edges = np.concatenate((kept.lows[:1], separating_edges(kept.below[1:], kept.lows[1:])))
        assert np.array_equal(edges, ref.edges)
        for b in range(kept.lows.size):  # each bin's bounds: its smallest score, and the largest one below it
            assert kept.lows[b] == scores[bin_of_row == b].min()
            assert b == 0 or kept.below[b] == scores[bin_of_row == b - 1].max()
        if t == 40:
            assert kept.exact is not None and np.array_equal(np.asarray(kept.exact, dtype=np.float64), scores)
        else:
            assert kept.exact is None
    assert min(n_distinct) <= 256 < max(n_distinct)  # both kinds of bins: every distinct score, and quantiles
    rescored, _ = fit_thresholded_mixture(problem.compiled, scorer, {"train": X}, n_bins=256)
    calls = []
    original = type(booster).prefix_scores
    monkeypatch.setattr(type(booster), "prefix_scores",
                        lambda self, data, lengths: calls.append(list(lengths)) or original(self, data, lengths))
    monkeypatch.setattr(type(booster), "raw_scores", lambda *a: pytest.fail("the rows were scored prefix by prefix"))
    clf = result.solution()
    monkeypatch.undo()
    assert len(calls) <= 1 and all(0 < t < 40 for t in sum(calls, []))
    for field in ("mu", "start", "edges", "table", "support"):
        assert np.array_equal(getattr(clf, field), getattr(rescored, field)), field
    assert np.array_equal(clf.predict_proba(X), rescored.predict_proba(X))


def test_a_zero_weight_row_trains_the_xgboost_ensemble_of_the_row_removed():
    """A row of weight 0 changes no rate and gets zero derivatives; with XGBoost its feature values also
    stay out of the histogram cuts (DMatrix weight 0), so the trees' decisions everywhere, the removed
    rows' points included, are those of the ensemble trained without the rows (the cause of the
    sample-weight equivalence failures of scikit-learn's checks). The derivatives are scaled by the row
    count, which the zero-weight rows change: the leaf values are scale-free only without XGBoost's L2
    term and Hessian floor (``reg_lambda=0``, ``min_child_weight=0``), as here; with its default
    ``reg_lambda=1`` a leaf's value ``-G / (H + 1)`` depends on that scale. LightGBM is not claimed here:
    its ``min_data_in_leaf`` counts rows, zero-weight ones included."""
    pytest.importorskip("xgboost")
    rng = np.random.default_rng(42)
    n = 60
    X = rng.random((n, 6))
    y = (X[:, 0] + 0.3 * rng.normal(size=n) > 0.5).astype(np.int64)
    w = rng.integers(0, 4, n).astype(float)
    keep = w > 0
    assert (~keep).sum() >= 5

    def fit(X, y, w):
        problem = rateopt.Problem(datasets=rateopt.Dataset(X, y, weights=w))
        model = rateopt.BoostingModel("xgboost", n_rounds=20, min_child_weight=0.0, params={"reg_lambda": 0.0})
        return rateopt.train(problem, model, random_state=0)

    with_zeros, without = fit(X, y, w), fit(X[keep], y[keep], w[keep])
    a, b = with_zeros.solution("last"), without.solution("last")
    assert np.array_equal(a.predict_proba(X), b.predict_proba(X))
    assert not np.all(a.predict_proba(X)[:, 1] == a.predict_proba(X)[0, 1])  # trees were grown


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_backends_direct_calls_grow_the_trees_and_scores_of_their_public_api(backend, monkeypatch):
    """add_tree calls the backends' C functions directly: the same trees and training scores, bit for bit, as
    their public ``Booster.update(fobj=...)`` / ``Booster.boost`` and ``predict`` (the reference)."""
    from rateopt._predictors import _boosting as adapters

    problem, X, _, _ = _problem(rateopt.goals.demographic_parity("group", slack=0.05))
    spec = spec_from_problem(problem)
    model = rateopt.BoostingModel(backend)

    def grow(direct):
        if not direct:
            monkeypatch.setattr(adapters, "_lightgbm_lib", lambda booster: None)
            monkeypatch.setattr(adapters, "_xgboost_lib", lambda: None)
        player = BoostingPlayer(spec, model, train_settings(get_game("proxy-swap"), model))
        lib = (adapters._lightgbm_lib(player.booster.booster) if backend == "lightgbm"
               else adapters._xgboost_lib())
        assert (lib is not None) == direct
        rng = np.random.default_rng(4)
        scores = []
        for _ in range(8):
            player.step(player.run_pass(rng.normal(size=spec.n_atoms)).grad)
            scores.append(player.scores.copy())
        monkeypatch.undo()
        return player.booster.to_bytes(player.booster.n_trees), scores

    direct_trees, direct_scores = grow(True)
    public_trees, public_scores = grow(False)
    assert direct_trees == public_trees
    for a, b in zip(direct_scores, public_scores):
        assert np.array_equal(a, b)


def test_the_default_solution_falls_back_to_the_m_stochastic_one_where_that_is_better(monkeypatch):
    """The thresholded solution's candidates need not hold the m-stochastic support: where the m-stochastic
    solution is better on the training rows (forced here: candidates cut to the two constant rules), solution()
    is it, each prefix at its own threshold 0 (the reference: solution("m-stochastic")'s own probabilities)."""
    pytest.importorskip("lightgbm")
    from rateopt._postprocess._mixture import ThresholdedMixture
    from rateopt._solutions._result import TrainResult

    problem, X, y, g = _problem(rateopt.goals.equal_opportunity("group", slack=0.02), n=1000, seed=6)
    result = rateopt.train(problem, rateopt.BoostingModel("lightgbm", n_rounds=30))
    ms = result.solution("m-stochastic")
    assert result.solution_objective("m-stochastic") < min(y.mean(), 1 - y.mean())  # beats both constants
    full = TrainResult.threshold_candidates
    monkeypatch.setattr(TrainResult, "threshold_candidates",
                        lambda self, epsilon=0.0: full(self, epsilon).subset([0, 1], np.array([0.5, 0.5])))
    clf = result.solution()
    assert isinstance(clf, ThresholdedMixture)
    assert clf.scorer.prefix_lengths_.tolist() == ms.prefix_lengths_.tolist()
    assert np.array_equal(clf.predict_proba(X), ms.predict_proba(X))
    monkeypatch.undo()
    # with its own candidates, the thresholded solution is at least as good as the m-stochastic one on training
    p = result.solution().predict_proba(X)[:, 1]
    assert np.mean(np.where(y == 1, 1 - p, p)) <= result.solution_objective("m-stochastic") + 1e-12
