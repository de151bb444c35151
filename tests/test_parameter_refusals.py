"""Impossible parameters are refused by name, and legal ones round-trip (issue 32 items 12 and 13)."""

import warnings

import numpy as np
import pytest
import rateopt as ro
from rateopt.exceptions import InfeasibleWarning, RateoptError

BAD_BINS = [0, -3, 2.5, True, np.int64(0), "many"]


@pytest.fixture(scope="module")
def two_class_run():
    X, y, g = ro.make_groups_dataset(300, random_state=1)
    ds = ro.Dataset(X, y, groups={"group": g})
    problem = ro.Problem(constraints=[ro.goals.demographic_parity("group", slack=0.1)], datasets=ds)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InfeasibleWarning)
        return problem, ro.train(problem, n_iter=20, random_state=0)


@pytest.fixture(scope="module")
def three_class_run():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(300, 3))
    y = np.argmax(X @ rng.normal(size=(3, 3)) + rng.normal(size=(300, 3)), axis=1)
    g = rng.choice(["a", "b"], 300)
    ds = ro.ClassDataset(X, y, groups={"g": g})
    problem = ro.Problem(constraints=[ro.goals.multiclass_demographic_parity("g", slack=0.1)], datasets=ds)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InfeasibleWarning)
        return problem, ro.train(problem, n_iter=20, random_state=0), X


# --------------------------------------------------------------------------- n_bins
@pytest.mark.parametrize("n_bins", BAD_BINS)
def test_thresholded_solution_refuses_impossible_n_bins(two_class_run, n_bins):
    problem, result = two_class_run
    with pytest.raises(ValueError, match=r"^n_bins must be a positive integer, None or 'auto', got "):
        result.solution("thresholded", problem=problem, n_bins=n_bins)


@pytest.mark.parametrize("n_bins", BAD_BINS)
def test_k_class_thresholded_solution_refuses_impossible_n_bins(three_class_run, n_bins):
    problem, result, _ = three_class_run
    with pytest.raises(ValueError, match=r"^n_bins must be a positive integer, None or 'auto', got "):
        result.solution("thresholded", problem=problem, n_bins=n_bins)


def test_thresholded_solution_takes_a_numpy_integer_n_bins_as_the_int(two_class_run):
    problem, result = two_class_run
    X = problem.datasets["train"].X
    a = result.solution("thresholded", problem=problem, n_bins=np.int64(8)).predict_proba(X)
    b = result.solution("thresholded", problem=problem, n_bins=8).predict_proba(X)
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("n_bins", BAD_BINS)
def test_threshold_classifier_refuses_impossible_n_bins(n_bins):
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match=r"^n_bins must be a positive integer or None, got "):
        ro.ThresholdClassifier(n_bins=n_bins).fit(rng.random(40), np.tile([0, 1], 20))


@pytest.mark.parametrize("method", ["proba", "", None, 1, ["predict_proba"]])
def test_threshold_classifier_refuses_an_unknown_response_method(method):
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match=r"^response_method must be one of \('auto', 'predict_proba', "
                                         r"'decision_function'\), got "):
        ro.ThresholdClassifier(response_method=method).fit(rng.random(40), np.tile([0, 1], 20))


# --------------------------------------------------------------------------- random_state
def _scores(seed=0):
    rng = np.random.default_rng(seed)
    y = np.tile([0, 1], 100)
    s = rng.normal(size=200) + y
    g = np.repeat(["a", "b"], 100)
    return s, y, g


@pytest.mark.parametrize("seed", [-1, 2 ** 64, 1.5, True, "3", np.int64(-2)])
def test_threshold_classifier_refuses_an_impossible_random_state(seed):
    s, y, g = _scores()
    with pytest.raises(ValueError, match=r"^random_state must be None or an integer in \[0, 2\*\*64 - 1\]"):
        ro.ThresholdClassifier(goals=[ro.goals.demographic_parity("g", slack=0.05)], random_state=seed).fit(
            s, y, groups={"g": g})


@pytest.mark.parametrize("seed", [np.int64(7), np.uint64(2 ** 64 - 1), np.int32(0), 2 ** 64 - 1, 12345678901234])
def test_threshold_classifier_seed_round_trips_through_save_and_load(tmp_path, seed):
    s, y, g = _scores()
    clf = ro.ThresholdClassifier(goals=[ro.goals.demographic_parity("g", slack=0.05)], random_state=seed).fit(
        s, y, groups={"g": g})
    clf.save(tmp_path / "r.npz")
    back = ro.load(tmp_path / "r.npz")
    assert back.random_state == int(seed) and type(back.random_state) is int
    # the draws are those of the seed: the same as a classifier built with the plain int
    plain = ro.ThresholdClassifier(goals=[ro.goals.demographic_parity("g", slack=0.05)], random_state=int(seed)).fit(
        s, y, groups={"g": g})
    np.testing.assert_array_equal(back.predict(s, groups={"g": g}), plain.predict(s, groups={"g": g}))
    np.testing.assert_array_equal(clf.predict(s, groups={"g": g}), plain.predict(s, groups={"g": g}))


# --------------------------------------------------------------------------- classes
@pytest.mark.parametrize("classes", [["a", "a", "b"], [1, 1.0, 2], ["1", 1, 2], [1, True, 2]])
def test_multiclass_classifier_refuses_repeated_classes(classes):
    W = np.zeros((1, 3, 2))
    with pytest.raises(ValueError, match=r"^classes must be distinct labels, got repeated "):
        ro.MulticlassClassifier(W, np.zeros((1, 3)), classes=classes)


def test_class_dataset_refuses_a_continuous_y():
    rng = np.random.default_rng(0)
    y = rng.normal(size=200)  # 200 distinct values: would have been 200 silent classes
    with pytest.raises(RateoptError, match=r"^y holds non-integral float labels"):
        ro.ClassDataset(np.zeros((200, 1)), y)


def test_class_dataset_keeps_whole_float_labels_and_explicit_classes():
    ds = ro.ClassDataset(np.zeros((4, 1)), [0.0, 1.0, 2.0, 1.0])
    assert ds.classes.tolist() == [0.0, 1.0, 2.0] and ds.label_index.tolist() == [0, 1, 2, 1]
    ds = ro.ClassDataset(np.zeros((4, 1)), [0.5, 1.5, 2.5, 0.5], classes=[0.5, 1.5, 2.5])  # declared: kept
    assert ds.label_index.tolist() == [0, 1, 2, 0]


# --------------------------------------------------------------------------- K-class DataFrame columns by name
@pytest.fixture(scope="module")
def frame_run():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(4)
    X = pd.DataFrame(rng.normal(size=(300, 3)), columns=["a", "b", "c"])
    y = np.argmax(X.to_numpy() @ rng.normal(size=(3, 3)) + rng.normal(size=(300, 3)), axis=1)
    ds = ro.ClassDataset(X, y, groups={"g": rng.choice(["u", "v"], 300)})
    problem = ro.Problem(constraints=[ro.goals.multiclass_demographic_parity("g", slack=0.1)], datasets=ds)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return problem, ro.train(problem, n_iter=30, random_state=0), X


def _frame_solutions(problem, result):
    return {"best": result.solution("best"), "m-stochastic": result.solution("m-stochastic"),
            "iterate": result.solution_of_iterate(0), "thresholded": result.solution("thresholded", problem=problem)}


@pytest.mark.filterwarnings("ignore::rateopt.exceptions.DataCopyWarning")
def test_k_class_solutions_refuse_permuted_dataframe_columns(frame_run):
    problem, result, X = frame_run
    assert result.feature_names == ("a", "b", "c")
    for kind, clf in _frame_solutions(problem, result).items():
        assert list(clf.feature_names_in_) == ["a", "b", "c"], kind
        with pytest.raises(RateoptError, match=r"^X's columns differ from the training columns \['a', 'b', 'c'\] "
                                               r"\(the same columns in another order: got \['c', 'a', 'b'\]\)"):
            clf.predict_proba(X[["c", "a", "b"]])
        with pytest.raises(RateoptError, match=r"missing \['b'\]; unexpected \['B'\]"):
            clf.predict(X.rename(columns={"b": "B"}))


@pytest.mark.filterwarnings("ignore::rateopt.exceptions.DataCopyWarning")
def test_k_class_solution_reads_the_training_columns_as_the_numpy_reference(frame_run, tmp_path):
    problem, result, X = frame_run
    clf = result.solution("best")
    # the NumPy reference: argmax of X @ W^T + b on the columns in the training order
    t = int(np.flatnonzero(result.mixture("best"))[0])
    want = np.argmax(X.to_numpy() @ result.weights[t].T + result.biases[t], axis=1)
    np.testing.assert_array_equal(clf.predict_index(X), want)
    np.testing.assert_array_equal(clf.predict_index(X.to_numpy()), want)  # an array is read by position
    clf.save(tmp_path / "m.npz")
    back = ro.load(tmp_path / "m.npz")
    assert list(back.feature_names_in_) == ["a", "b", "c"]
    np.testing.assert_array_equal(back.predict_index(X), want)
    with pytest.raises(RateoptError, match="the same columns in another order"):
        back.predict_index(X[["b", "a", "c"]])


@pytest.fixture(scope="module", params=["linear", "kernel"])
def two_class_frame_run(request):
    """A two-class run on a DataFrame of named columns (a linear or a kernel model)."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(6)
    X = pd.DataFrame(rng.normal(size=(300, 3)), columns=["a", "b", "c"])
    y = (X["a"] - 0.8 * X["b"] + 0.3 * X["c"] + rng.normal(scale=0.5, size=300) > 0).astype(int).to_numpy()
    ds = ro.Dataset(X, y, groups={"g": rng.choice(["u", "v"], 300)})
    problem = ro.Problem(constraints=[ro.goals.demographic_parity("g", slack=0.1)], datasets=ds)
    model = None if request.param == "linear" else ro.KernelModel(n_components=20, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return problem, ro.train(problem, model, n_iter=20, random_state=0), X


@pytest.mark.filterwarnings("ignore::rateopt.exceptions.DataCopyWarning")
def test_two_class_solutions_refuse_permuted_dataframe_columns_and_read_named_ones_as_arrays(two_class_frame_run,
                                                                                             tmp_path):
    """Issue 32 item 13: every two-class classifier (linear, mixture, kernel, thresholded, and each loaded from
    its file) records the training columns and refuses a DataFrame whose columns are permuted or renamed;
    in the training order it predicts exactly what the array of the same values gives."""
    problem, result, X = two_class_frame_run
    assert result.feature_names == ("a", "b", "c")
    made = {"best": result.solution("best"), "m-stochastic": result.solution("m-stochastic"),
            "iterate": result.solution_of_iterate(0), "thresholded": result.solution("thresholded", problem=problem)}
    for kind, clf in list(made.items()):
        clf.save(tmp_path / f"{kind}.npz")
        made[kind + " (loaded)"] = ro.load(tmp_path / f"{kind}.npz")
    A = X.to_numpy()
    if result.feature_map is None:  # the NumPy reference of the best iterate: 1 iff x . w + b >= 0
        t = int(np.flatnonzero(result.mixture("best"))[0])
        np.testing.assert_array_equal(made["best"].predict(X), (A @ result.weights[t] + result.biases[t] >= 0))
    for kind, clf in made.items():
        assert list(clf.feature_names_in_) == ["a", "b", "c"], kind
        np.testing.assert_array_equal(clf.predict_proba(X), clf.predict_proba(A))
        np.testing.assert_array_equal(clf.predict(X, random_state=3), clf.predict(A, random_state=3))
        with pytest.raises(RateoptError, match=r"^X's columns differ from the training columns \['a', 'b', 'c'\] "
                                               r"\(the same columns in another order: got \['c', 'a', 'b'\]\)"):
            clf.predict_proba(X[["c", "a", "b"]])
        with pytest.raises(RateoptError, match=r"missing \['b'\]; unexpected \['B'\]"):
            clf.predict(X.rename(columns={"b": "B"}))
        with pytest.raises(RateoptError, match=r"missing \['c'\]"):
            clf.predict_proba(X[["a", "b"]])


def test_two_class_classifiers_take_feature_names_and_refuse_bad_ones():
    W = np.array([[1.0, -1.0]])
    for make in (lambda **kw: ro.LinearClassifier(W[0], 0.0, **kw), lambda **kw: ro.RampClassifier(W[0], 0.0, **kw),
                 lambda **kw: ro.StochasticClassifier(W, [0.0], [1.0], **kw)):
        assert make().feature_names_in_ is None
        assert list(make(feature_names=("p", "q")).feature_names_in_) == ["p", "q"]
        for names in (["a"], ["a", "a"], ["a", 1]):
            with pytest.raises(ValueError, match=r"^feature_names must be 2 distinct strings"):
                make(feature_names=names)


def test_multiclass_classifier_refuses_bad_feature_names():
    W = np.zeros((1, 2, 2))
    for names in (["a"], ["a", "a"], ["a", 1]):
        with pytest.raises(ValueError, match=r"^feature_names must be 2 distinct strings"):
            ro.MulticlassClassifier(W, np.zeros((1, 2)), classes=[0, 1], feature_names=names)


@pytest.mark.filterwarnings("ignore::rateopt.exceptions.DataCopyWarning")
def test_group_aware_k_class_thresholded_solution_refuses_permuted_columns(frame_run):
    problem, result, X = frame_run
    clf = result.thresholded(problem, group_blind=False)
    cells = problem.compiled.cells
    assert list(clf.feature_names_in_) == ["a", "b", "c"]
    np.testing.assert_array_equal(clf.predict_proba(X, cells), clf.predict_proba(X.to_numpy(), cells))
    with pytest.raises(RateoptError, match="the same columns in another order"):
        clf.predict_proba(X[["a", "c", "b"]], cells)
