"""BoostedMixture: exact probabilities, draws, and files that round-trip and refuse damage."""

import importlib.util

import numpy as np
import pytest

import rateopt
from rateopt._predictors._boosted_mixture import BoostedMixture
from rateopt.exceptions import RateoptError

BACKENDS = [pytest.param(b, marks=pytest.mark.skipif(importlib.util.find_spec(b) is None,
                                                     reason=f"{b} not installed")) for b in ("lightgbm", "xgboost")]


def _result(backend, n=600, seed=0, rounds=12):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] + rng.normal(scale=0.5, size=n) > 0).astype(int)
    g = np.where(X[:, 1] > 0, "a", "b")
    problem = rateopt.Problem(constraints=[rateopt.goals.demographic_parity("g", slack=0.02)],
                              datasets=rateopt.Dataset(X, y, groups={"g": g}))
    return rateopt.train(problem, rateopt.BoostingModel(backend, n_rounds=rounds)), X


@pytest.mark.parametrize("backend", BACKENDS)
def test_probabilities_are_the_mixture_of_prefix_decisions(backend):
    result, X = _result(backend)
    clf = BoostedMixture(result.models[-1].booster, [0, 4, 12], [0.2, 0.3, 0.5], 3)
    prefix = {m.n_trees: m for m in result.models}  # -1 (the always-negative rule), then 0, 1, ...
    votes = np.column_stack([(prefix[t].decision_function(X) >= 0) for t in (0, 4, 12)]).astype(float)
    expected = votes @ np.array([0.2, 0.3, 0.5])  # NumPy recount from each prefix's own decisions
    assert np.allclose(clf.predict_proba(X)[:, 1], expected, atol=1e-15)
    assert np.all(votes[:, 0] == 1)  # the empty ensemble scores 0: positive
    draws = clf.predict(X, random_state=3)
    assert np.all((draws == 1) <= (expected > 0)) and np.all((draws == 0) <= (expected < 1))


@pytest.mark.parametrize("backend", BACKENDS)
def test_save_load_round_trip(backend, tmp_path):
    result, X = _result(backend)
    clf = result.solution("T-stochastic")
    assert isinstance(clf, BoostedMixture)
    path = tmp_path / "m.npz"
    clf.save(path)
    back = rateopt.load(path)
    assert isinstance(back, BoostedMixture) and back.backend == backend
    assert np.array_equal(back.prefix_lengths_, clf.prefix_lengths_)
    assert np.array_equal(back.predict_proba(X), clf.predict_proba(X))
    assert np.array_equal(back.predict(X, random_state=7), clf.predict(X, random_state=7))


@pytest.mark.parametrize("edit, field", [
    ({"booster": lambda b: b[: len(b) // 2]}, "booster"),
    ({"booster": lambda b: np.concatenate([b[:-1], np.array([b[-1] ^ 1], dtype=np.uint8)])}, "booster"),
    ({"prefix_lengths": lambda p: p + 10_000}, "prefix_lengths"),
    ({"probabilities": lambda p: p * 2}, "probabilities"),
])
def test_damaged_files_are_refused(tmp_path, edit, field):
    pytest.importorskip("lightgbm")
    result, _ = _result("lightgbm")
    path = tmp_path / "m.npz"
    result.solution("T-stochastic").save(path)
    with np.load(path) as z:  # every member, the metadata included, rewritten with one array changed
        members = {k: z[k] for k in z.files}
    (name, change), = edit.items()
    members[name] = change(members[name])
    np.savez(tmp_path / "bad.npz", **members)
    with pytest.raises(RateoptError, match=f"field '{field}'"):
        rateopt.load(tmp_path / "bad.npz")


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_boosted_training_result_saves_and_loads(backend, tmp_path):
    result, X = _result(backend)
    result.save(tmp_path / "r.result.npz")
    back = rateopt.load(tmp_path / "r.result.npz")
    assert [m.n_trees for m in back.models] == [m.n_trees for m in result.models]
    for kind in ("m-stochastic", "T-stochastic", "best", "last"):
        a, b = result.solution(kind), back.solution(kind)
        assert np.array_equal(a.prefix_lengths_, b.prefix_lengths_)
        assert np.array_equal(a.predict_proba(X), b.predict_proba(X))


@pytest.mark.filterwarnings("ignore::rateopt.exceptions.DataCopyWarning")  # a DataFrame is copied to a NumPy array
def test_dataframe_columns_are_checked_and_saved(tmp_path):
    pytest.importorskip("lightgbm")
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(1)
    X = pd.DataFrame(rng.normal(size=(400, 3)), columns=["a", "b", "c"])
    y = (X["a"] + rng.normal(scale=0.5, size=400) > 0).astype(int).to_numpy()
    g = np.where(X["b"] > 0, "u", "v")
    problem = rateopt.Problem(constraints=[rateopt.goals.demographic_parity("g", slack=0.05)],
                              datasets=rateopt.Dataset(X, y, groups={"g": g}))
    clf = rateopt.train(problem, rateopt.BoostingModel("lightgbm", n_rounds=8)).solution()
    assert list(clf.feature_names_in_) == ["a", "b", "c"]
    with pytest.raises(ValueError, match="differ from the training columns"):
        clf.predict_proba(X[["c", "a", "b"]])
    clf.save(tmp_path / "m.npz")
    back = rateopt.load(tmp_path / "m.npz")
    assert list(back.feature_names_in_) == ["a", "b", "c"]
    assert np.array_equal(back.predict_proba(X), clf.predict_proba(X.to_numpy()))


@pytest.mark.parametrize("loaded", [False, True])
def test_lightgbm_prefix_scores_are_its_own_predictions_bit_for_bit(loaded, tmp_path):
    """The one-pass running sum of the leaves equals LightGBM's predict(num_iteration=t) for every prefix."""
    pytest.importorskip("lightgbm")
    result, X = _result("lightgbm", rounds=15)
    booster = result.models[-1].booster
    if loaded:  # a booster read back from the text format sums the same leaves
        clf = BoostedMixture(booster, [15], [1.0], 3)
        clf.save(tmp_path / "m.npz")
        booster = rateopt.load(tmp_path / "m.npz").booster
    lengths = np.array([3, -1, 15, 0, 1, 7, 15])
    got = booster.prefix_scores(X, lengths)
    for j, t in enumerate(lengths):
        want = (np.full(X.shape[0], -1.0 if t < 0 else 0.0) if t <= 0
                else booster.booster.predict(X, num_iteration=int(t), raw_score=True))
        assert np.array_equal(got[:, j], want), t


@pytest.mark.parametrize("loaded", [False, True])
def test_xgboost_prefix_scores_are_its_own_predictions_bit_for_bit(loaded, tmp_path):
    """The one-pass float32 running sum of the leaves (pred_leaf=True) equals XGBoost's
    predict(iteration_range=(0, t), output_margin=True) for every prefix, bit for bit."""
    pytest.importorskip("xgboost")
    import xgboost as xgb

    result, X = _result("xgboost", rounds=15)
    booster = result.models[-1].booster
    if loaded:  # a booster read back from the JSON format sums the same leaves
        clf = BoostedMixture(booster, [15], [1.0], 3)
        clf.save(tmp_path / "m.npz")
        booster = rateopt.load(tmp_path / "m.npz").booster
    assert booster._leaf_values(15) is not None  # the one-pass path, not the per-prefix fallback
    lengths = np.array([3, -1, 15, 0, 1, 7, 15])
    got = booster.prefix_scores(X, lengths)
    for j, t in enumerate(lengths):
        want = (np.full(X.shape[0], -1.0 if t < 0 else 0.0) if t <= 0
                else booster.booster.predict(xgb.DMatrix(X), iteration_range=(0, int(t)),
                                             output_margin=True).astype(np.float64))
        assert np.array_equal(got[:, j], want), t


def test_xgboost_prefix_scores_of_a_booster_with_a_base_score_fall_back_to_its_predictions():
    """A nonzero base score (the margin's start) is not a sum of leaves alone: prefix by prefix, still exact."""
    xgb = pytest.importorskip("xgboost")
    from rateopt._predictors._boosting import _XGBoostBooster

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    data = xgb.DMatrix(X, label=X[:, 0] + 1.0)
    booster = _XGBoostBooster(xgb.train({"base_score": 0.75, "nthread": 1, "max_depth": 3}, data, 6))
    assert booster._leaf_values(6) is None
    got = booster.prefix_scores(X, np.array([2, 6]))
    for j, t in enumerate((2, 6)):
        want = booster.booster.predict(data, iteration_range=(0, t), output_margin=True).astype(np.float64)
        assert np.array_equal(got[:, j], want)


@pytest.mark.parametrize("backend", BACKENDS)
def test_thresholded_solution_is_the_one_of_per_prefix_scoring_and_a_rescored_refit(backend, monkeypatch):
    """The default solution with one-pass prefix scores and the re-fit reusing the first LP's scores and sort
    equals, on the same candidates, the one of the previous path: every prefix scored by the backend's own
    predict, and the support re-scored and re-sorted for the exact re-fit."""
    from rateopt._postprocess import _mixture

    problem, X, y, groups = _equalized_odds_problem(n=1500)
    result = rateopt.train(problem, rateopt.BoostingModel(backend, n_rounds=40))
    candidates = result.threshold_candidates()
    features = {name: ds.X for name, ds in problem.datasets.items()}
    new, new_sol = _mixture.fit_thresholded_mixture(problem.compiled, candidates, features, n_bins=16)

    def per_prefix(self, X, lengths):  # the backend's own prediction of each prefix
        return np.column_stack([_prefix_scores(self, int(t), X) for t in lengths])

    monkeypatch.setattr(type(candidates.booster), "prefix_scores", per_prefix)
    compiled = problem.compiled
    first, first_sol = _mixture._fit(compiled, candidates, _mixture._sorted_scores(compiled, candidates, features),
                                     16, 0.0)
    exact, exact_sol = _mixture._fit(compiled, first.scorer,
                                     _mixture._sorted_scores(compiled, first.scorer, features), None, 0.0)
    assert exact_sol.slack <= first_sol.slack and exact_sol.objective <= first_sol.objective  # the re-fit is kept
    assert np.array_equal(new.support, first.support[exact.support])
    assert np.array_equal(new.scorer.prefix_lengths_, exact.scorer.prefix_lengths_)
    assert np.array_equal(new.mu, exact.mu)
    assert np.array_equal(new.start, exact.start) and np.array_equal(new.edges, exact.edges)
    assert np.array_equal(new.table, exact.table)
    assert new_sol.objective == exact_sol.objective
    assert np.array_equal(new.predict(X, random_state=5), exact.predict(X, random_state=5))


def _equalized_odds_problem(n=2500, seed=1):
    rng = np.random.default_rng(seed)
    g = (rng.random(n) < 0.35).astype(np.int64)
    X = np.column_stack([rng.normal(size=n), rng.normal(size=n), g])
    y = (X[:, 0] + 0.5 * X[:, 1] + 0.9 * g + rng.normal(scale=0.3 + 0.7 * g, size=n) > 0.6).astype(np.int64)
    groups = np.where(g == 1, "b", "a")
    problem = rateopt.Problem(constraints=[rateopt.goals.equalized_odds("group", slack=0.0)],
                              datasets=rateopt.Dataset(X, y, groups={"group": groups}))
    return problem, X, y, groups


def _prefix_scores(booster, t, X):
    """A prefix's raw scores from the backend's own prediction (-1: the always-negative rule, 0: empty)."""
    if t <= 0:
        return np.full(X.shape[0], -1.0 if t < 0 else 0.0)
    if booster.backend == "lightgbm":
        return booster.booster.predict(X, num_iteration=int(t), raw_score=True)
    import xgboost as xgb

    return booster.booster.predict(xgb.DMatrix(X), iteration_range=(0, int(t)), output_margin=True).astype(float)


@pytest.mark.parametrize("backend", BACKENDS)
def test_thresholded_boosted_solution_recounted_by_brute_force(backend, tmp_path):
    """solution("thresholded") of a boosted run: each support prefix's backend scores, followed by its rule
    table, recounted in NumPy; exact equalized odds met on training (<= 1e-3), never worse than the
    m-stochastic solution there, group-blind, and the same after save/load."""
    problem, X, y, groups = _equalized_odds_problem()
    result = rateopt.train(problem, rateopt.BoostingModel(backend, n_rounds=25))
    clf = result.solution("thresholded", problem=problem)
    booster = clf.scorer.booster
    expected = np.zeros(X.shape[0])
    for r, t in enumerate(clf.scorer.prefix_lengths_):
        s = _prefix_scores(booster, t, X)
        edges = clf.edges[clf.start[r]:clf.start[r + 1]]
        table = clf.table[clf.start[r]:clf.start[r + 1]]
        assert np.all(np.diff(table) >= -1e-12)  # a randomized threshold: non-decreasing in the score
        # brute force: each row's bin is the last edge at or below its score
        bins = np.array([max(np.flatnonzero(edges <= v), default=0) for v in s])
        expected += clf.mu[r] * table[bins]
    p = clf.predict_proba(X)[:, 1]
    assert np.allclose(p, expected, atol=1e-12)
    for label in (0, 1):  # TPR and FPR of each group against the overall rate: slack 0
        overall = p[y == label].mean()
        for v in ("a", "b"):
            assert abs(p[(groups == v) & (y == label)].mean() - overall) <= 1e-3
    err = np.mean(np.abs(p - y))
    mixed = result.solution("m-stochastic").predict_proba(X)[:, 1]
    assert err <= np.mean(np.abs(mixed - y)) + 1e-9
    draws = clf.predict(X, random_state=5)
    assert np.all((draws == 1) <= (p > 0)) and np.all((draws == 0) <= (p < 1))
    clf.save(tmp_path / "t.npz")
    back = rateopt.load(tmp_path / "t.npz")
    assert np.array_equal(back.predict_proba(X), clf.predict_proba(X))
    assert np.array_equal(back.predict(X, random_state=5), draws)
    assert np.array_equal(back.scorer.prefix_lengths_, clf.scorer.prefix_lengths_)


def test_a_damaged_thresholded_boosted_file_is_refused(tmp_path):
    pytest.importorskip("lightgbm")
    problem, X, y, groups = _equalized_odds_problem(n=800)
    clf = rateopt.train(problem, rateopt.BoostingModel("lightgbm", n_rounds=8)).solution("thresholded",
                                                                                          problem=problem)
    clf.save(tmp_path / "t.npz")
    with np.load(tmp_path / "t.npz") as z:
        arrays = {k: z[k] for k in z.files}
    arrays["rule_start"] = arrays["rule_start"][:-1]  # one table fewer than the support prefixes
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(RateoptError):
        rateopt.load(tmp_path / "bad.npz")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_kept_bin_codes_are_searchsorteds(dtype):
    """The kept prefixes' branch-free bin search equals ``np.searchsorted(lows, scores, side="right") - 1``
    for 1 to 256 bins, ties at the bounds, and many rows."""
    from rateopt._predictors._boosting import _bin_codes

    rng = np.random.default_rng(2)
    for t in range(60):
        n = int(rng.integers(1, 3 * 8192))
        scores = rng.choice(rng.normal(size=int(rng.integers(1, 600))), size=n).astype(dtype)
        distinct = np.unique(scores)
        L = int(rng.integers(1, min(256, distinct.size) + 1))
        lows = np.unique(np.concatenate((distinct[:1], rng.choice(distinct, L - 1))))
        got = _bin_codes(scores, lows)
        assert got.dtype == np.uint8
        assert np.array_equal(got, np.searchsorted(lows.astype(np.float64), scores, side="right") - 1)


def test_kept_bin_codes_refuses_bad_bounds():
    """The core's bin search refuses bounds it cannot search: none, more than 256, not strictly ascending,
    not finite, or another dtype than the scores'."""
    from rateopt.core._boosting import kept_bin_codes

    scores = np.linspace(0.0, 1.0, 10)
    for lows in (np.zeros(0), np.arange(257.0), np.array([0.0, 0.5, 0.5]), np.array([0.0, np.nan])):
        with pytest.raises(ValueError, match="lows"):
            kept_bin_codes(scores, lows)
    with pytest.raises(TypeError, match="lows"):
        kept_bin_codes(scores, np.array([0.0, 0.5], dtype=np.float32))
    assert np.array_equal(kept_bin_codes(scores, np.array([0.0])), np.zeros(10, dtype=np.uint8))


@pytest.mark.parametrize("backend", BACKENDS)
def test_training_state_released_after_the_run(backend, monkeypatch, tmp_path):
    """Once the result is asked for a classifier, it holds no training data: the backend's training set
    (LightGBM's ``Dataset``, XGBoost's ``DMatrix``) is collected while the result and the solution live. The
    released booster predicts the training scores the run kept (its running sums while the trees grew) bit for
    bit, and every solution kind equals that of a run that kept its training state (the reference:
    ``release_training`` made a no-op)."""
    import gc
    import weakref

    from rateopt._predictors import _boosting as adapters

    cls = adapters._LightGBMBooster if backend == "lightgbm" else adapters._XGBoostBooster
    start, release = cls.start.__func__, cls.release_training
    training_sets = []

    def spy_start(klass, *args, **kwargs):
        booster = start(klass, *args, **kwargs)
        training_sets.append(weakref.ref(booster.booster.train_set if backend == "lightgbm" else booster.dtrain))
        return booster

    monkeypatch.setattr(cls, "start", classmethod(spy_start))
    problem, X, y, groups = _equalized_odds_problem(n=1500)
    T = 40
    result = rateopt.train(problem, rateopt.BoostingModel(backend, n_rounds=T))
    gc.collect()
    assert len(training_sets) == 1 and training_sets[0]() is not None  # kept until a classifier is asked for
    solution = result.solution()
    gc.collect()
    assert training_sets[0]() is None and solution.scorer.booster is result.models[0].booster  # collected
    booster = result.models[0].booster
    assert getattr(booster.booster, "train_set", None) is None and getattr(booster, "dtrain", None) is None
    kept = {t: booster.kept_prefix(t) for t in range(1, T + 1) if booster.kept_prefix(t) is not None}
    assert T in kept and kept[T].exact is not None
    assert np.array_equal(np.asarray(kept[T].exact, dtype=np.float64), _prefix_scores(booster, T, X))
    for t, prefix in kept.items():  # every kept prefix's bins, recut from the released booster's predictions
        scores = _prefix_scores(booster, t, X)
        assert np.array_equal(prefix.codes, np.searchsorted(prefix.lows, scores, side="right") - 1)

    monkeypatch.setattr(cls, "release_training", lambda self: None)
    kept_state = rateopt.train(problem, rateopt.BoostingModel(backend, n_rounds=T))
    assert kept_state.models[0].booster.kept_prefix(T) is not None
    monkeypatch.setattr(cls, "release_training", release)
    for kind in (None, "thresholded", "best", "last", "m-stochastic", "T-stochastic"):
        extra = {"problem": problem} if kind == "thresholded" else {}
        got, want = result.solution(kind, **extra), kept_state.solution(kind, **extra)
        assert np.array_equal(got.predict_proba(X), want.predict_proba(X)), kind
    path = tmp_path / "solution.npz"
    result.solution().save(path)
    assert np.array_equal(rateopt.load(path).predict_proba(X), kept_state.solution().predict_proba(X))


def test_lightgbm_kept_bins_from_its_buffer_sorted_in_place_are_the_copys(monkeypatch):
    """LightGBM's kept prefixes: its training-score buffer is sorted in place for the bins' bounds and read
    again from LightGBM for the codes (no sorted copy). Every kept prefix (codes, bounds, exact scores), every
    recorded rate and the default solution equal those of the sorted copy's path bit for bit, and each kept
    prefix's codes are its predicted scores' bins (``np.searchsorted`` of the bounds, the reference)."""
    pytest.importorskip("lightgbm")
    from rateopt._predictors import _boosting as adapters

    cls = adapters._LightGBMBooster
    sorted_in_place = []
    sort_of = cls._sorted_training_scores

    def spy(self, scores):
        out = sort_of(self, scores)
        sorted_in_place.append(out is scores)
        return out

    monkeypatch.setattr(cls, "_sorted_training_scores", spy)
    problem, X, _, _ = _equalized_odds_problem(n=1500)
    T = 32
    got = rateopt.train(problem, rateopt.BoostingModel("lightgbm", n_rounds=T))
    assert sorted_in_place and all(sorted_in_place)
    monkeypatch.setattr(cls, "_sorted_training_scores", adapters._KeptScores._sorted_training_scores)
    monkeypatch.setattr(cls, "_training_scores_in_row_order", adapters._KeptScores._training_scores_in_row_order)
    want = rateopt.train(problem, rateopt.BoostingModel("lightgbm", n_rounds=T))
    a, b = got.models[0].booster, want.models[0].booster
    assert sorted(a.kept) == sorted(b.kept) and len(a.kept) == 16
    for t in a.kept:
        for name in ("codes", "lows", "below"):
            assert np.array_equal(getattr(a.kept[t], name), getattr(b.kept[t], name), equal_nan=True), (t, name)
        assert (a.kept[t].exact is None) == (b.kept[t].exact is None)
        scores = _prefix_scores(a, t, X)
        assert np.array_equal(a.kept[t].codes, np.searchsorted(a.kept[t].lows, scores, side="right") - 1)
    assert np.array_equal(a.kept[T].exact, b.kept[T].exact)
    assert np.array_equal(got.atom_rates, want.atom_rates) and np.array_equal(got.multipliers, want.multipliers)
    assert np.array_equal(got.solution().predict_proba(X), want.solution().predict_proba(X))


@pytest.mark.parametrize("direct", ["one call", "two calls", False])
def test_lightgbm_release_keeps_the_model_text(direct, monkeypatch):
    """LightGBM's release rebuilds the booster from its model text: through LightGBM's C calls (one buffer of
    the text's size, the training booster freed before the load) or, where those are not available, through
    ``model_to_string``/``model_from_string``; the direct route's first buffer holds the text (one call), or
    is too short (a second call into a buffer of the text's size). Every way the released booster's text is the training
    booster's, character for character (the reference: ``model_to_string`` before the release), and it predicts
    every prefix's raw scores bit for bit as the training booster did. The direct route frees the training
    Dataset before LightGBM builds the text (whose transient then reuses the binned rows' memory)."""
    import gc
    import weakref

    pytest.importorskip("lightgbm")
    from rateopt._predictors import _boosting as adapters

    if not direct:
        monkeypatch.setattr(adapters, "_lightgbm_lib", lambda booster: None)
    calls = []
    if direct:
        if direct == "two calls":
            monkeypatch.setattr(adapters, "_MODEL_TEXT_MIN_BYTES", 16)
            monkeypatch.setattr(adapters, "_MODEL_TEXT_BYTES_PER_TREE", 1)
        text_of = adapters._lightgbm_model_text
        dataset_alive = []  # at each text call: whether the training Dataset still lived (it is freed first)

        def spy_text(*a):
            gc.collect()
            dataset_alive.append(train_set() is not None)
            calls.append(text_of(*a))
            return calls[-1]

        monkeypatch.setattr(adapters, "_lightgbm_model_text", spy_text)
    problem, X, _, _ = _equalized_odds_problem(n=1200)
    T = 12
    result = rateopt.train(problem, rateopt.BoostingModel("lightgbm", n_rounds=T))
    booster = result.models[0].booster
    train_set = weakref.ref(booster.booster.train_set)
    text = booster.booster.model_to_string(num_iteration=-1)
    want = {t: booster.booster.predict(X, num_iteration=t, raw_score=True) for t in (1, T // 2, T)}
    booster.release_training()
    assert getattr(booster.booster, "train_set", None) is None
    assert booster.booster.current_iteration() == T and booster.booster.model_to_string(num_iteration=-1) == text
    for t, scores in want.items():
        assert np.array_equal(booster.booster.predict(X, num_iteration=t, raw_score=True), scores), t
    assert booster.booster._handle.value is not None
    if direct:  # the buffer held LightGBM's text (the Python text less its pandas line) and its NUL
        assert len(calls) == 1 and dataset_alive == [False]  # the binned rows went before the text was built
        end = int(np.flatnonzero(calls[0] == 0)[0])
        assert end > 0 and text.startswith(bytes(calls[0][:end]).decode())
        assert calls[0].shape[0] == (end + 1 if direct == "two calls" else 1 << 20)
    booster.release_training()  # released already: nothing happens
    assert booster.booster.model_to_string(num_iteration=-1) == text


def test_return_free_memory_is_glibcs_malloc_trim_or_nothing(monkeypatch):
    """``return_free_memory`` calls glibc's ``malloc_trim(0)`` where the C library has it (Linux with glibc), and
    does nothing where it has none (the lookup fails: no error)."""
    import ctypes
    import platform

    from rateopt._predictors import _boosting as adapters

    if platform.system() == "Linux" and platform.libc_ver()[0] == "glibc":
        assert adapters._malloc_trim() is not None
    calls = []
    monkeypatch.setattr(adapters, "_MALLOC_TRIM", [lambda pad: calls.append(pad) or 1])
    adapters.return_free_memory()
    assert calls == [0]

    def no_libc(name):
        raise OSError("no C library")

    monkeypatch.setattr(ctypes, "CDLL", no_libc)
    assert adapters._malloc_trim() is None
    monkeypatch.setattr(adapters, "_MALLOC_TRIM", [])
    adapters.return_free_memory()  # looked up, none: nothing happens
    assert adapters._MALLOC_TRIM == [None]


@pytest.mark.parametrize("backend", BACKENDS)
def test_free_memory_handed_back_changes_no_result(backend, monkeypatch):
    """A boosted run with LightGBM and its default solution hand the heap's free pages back between phases
    (XGBoost's do not): the kept prefixes, the recorded rates and every solution kind are those of a run where
    that is a no-op, bit for bit."""
    from rateopt._predictors import _boosting as adapters

    problem, X, _, _ = _equalized_odds_problem(n=1500)
    T = 24
    calls = []
    trim = adapters.return_free_memory

    def counted():
        calls.append(1)
        trim()

    for module in ("rateopt._predictors._boosting", "rateopt._training._boosting", "rateopt._postprocess._mixture"):
        monkeypatch.setattr(f"{module}.return_free_memory", counted)
    got = rateopt.train(problem, rateopt.BoostingModel(backend, n_rounds=T))
    got_solutions = {kind: got.solution(kind, **({"problem": problem} if kind == "thresholded" else {}))
                     for kind in (None, "thresholded", "m-stochastic")}
    if backend == "lightgbm":  # after the start, 16 kept prefixes, the release (twice), the first LP
        assert len(calls) >= 18
    else:  # XGBoost's next tree would re-fault the pages: it hands none back
        assert not calls
    for module in ("rateopt._predictors._boosting", "rateopt._training._boosting", "rateopt._postprocess._mixture"):
        monkeypatch.setattr(f"{module}.return_free_memory", lambda: None)
    want = rateopt.train(problem, rateopt.BoostingModel(backend, n_rounds=T))
    assert np.array_equal(got.atom_rates, want.atom_rates)
    a, b = got.models[0].booster, want.models[0].booster
    for t in b.kept:
        assert np.array_equal(a.kept[t].codes, b.kept[t].codes) and np.array_equal(a.kept[t].lows, b.kept[t].lows)
    for kind, solution in got_solutions.items():
        other = want.solution(kind, **({"problem": problem} if kind == "thresholded" else {}))
        assert np.array_equal(solution.predict_proba(X), other.predict_proba(X)), kind
