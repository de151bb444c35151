"""Issue 32, items 10, 11 and 15: every data error is a one-line RateoptError that names the argument and the fix.

Each case failed on main before its fix: a plain ``ValueError`` (or scikit-learn's
"Unknown label type", or a ``RecursionError``), a message without the argument, or
no error at all (a prefit model fitted on other labels was silently accepted).
"""

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression

import rateopt as ro
from rateopt._compiler._toml import GoalsFileError, read_goals
from rateopt.cli._train_table import check_train_entry
from rateopt.exceptions import RateoptError

rng = np.random.default_rng(0)
N = 60
S = rng.random(N)
Y = (rng.random(N) < S).astype(int)
X2 = np.c_[S, rng.normal(size=N)]
G = np.where(rng.random(N) < 0.5, "a", "b")


def _one_line_data_error(fn, *words):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RateoptError) as info:
            fn()
    msg = str(info.value)
    assert "\n" not in msg, msg
    for w in words:
        assert w in msg, (w, msg)
    return msg


# -- item 10: post-processing data errors are RateoptError ------------------------------------------

_FITTED = ro.ThresholdClassifier().fit(S, Y)

POSTPROCESS_DATA_ERRORS = {
    "NaN score": (lambda: ro.ThresholdClassifier().fit(np.r_[S[:-1], np.nan], Y), ("scores of X", "finite")),
    "inf score": (lambda: ro.ThresholdClassifier().fit(np.r_[np.inf, S[1:]], Y), ("scores of X", "finite")),
    "NaN label": (lambda: ro.ThresholdClassifier().fit(S, np.r_[Y[:-1].astype(float), np.nan]),
                  ("y holds 1 missing label", "row 59")),
    "one class": (lambda: ro.ThresholdClassifier().fit(S, np.zeros(N, int)), ("y holds only 1 class", "classes=")),
    "length mismatch": (lambda: ro.ThresholdClassifier().fit(S[:-1], Y), ("X has 59 rows but y has 60",)),
    "zero rows": (lambda: ro.ThresholdClassifier().fit(np.zeros(0), np.zeros(0, int)), ("y has no rows",)),
    "scores of two columns": (lambda: ro.ThresholdClassifier().fit(np.c_[S, S], Y), ("X must hold scores", "(60, 2)")),
    "text scores": (lambda: ro.ThresholdClassifier().fit(np.array(["s"] * N), Y), ("X must hold numeric scores",)),
    "continuous labels": (lambda: ro.ThresholdClassifier().fit(S, S + 0.5), ("y holds continuous values",)),
    "K-class probabilities not summing to 1": (
        lambda: ro.ThresholdClassifier().fit(np.full((N, 3), 0.5), np.arange(N) % 3), ("class probabilities of X",)),
    "K-class NaN probabilities": (
        lambda: ro.ThresholdClassifier().fit(np.full((N, 3), np.nan), np.arange(N) % 3), ("class probabilities of X",)),
    "predict on a NaN score": (lambda: _FITTED.predict(np.r_[np.nan, S[1:]]), ("scores of X", "finite")),
    "certify with an unknown label": (lambda: _FITTED.certify(S, np.r_[Y[:-1], 5]), ("y holds labels", "5")),
    "certify length mismatch": (lambda: _FITTED.certify(S[:-1], Y), ("X has 59 rows but y has 60",)),
}


@pytest.mark.parametrize("case", list(POSTPROCESS_DATA_ERRORS))
def test_postprocessing_data_errors_are_rateopt_errors(case):
    fn, words = POSTPROCESS_DATA_ERRORS[case]
    _one_line_data_error(fn, *words)


def test_class_mixture_data_errors_are_rateopt_errors():
    from rateopt._postprocess._class_mixture import fit_class_thresholded_mixture

    y = np.arange(N) % 3
    ds = ro.ClassDataset(X2, y, groups={"g": G})
    problem = ro.Problem(objective="error", constraints=[], datasets={"train": ds})
    bad = np.full((N, 3), np.nan)
    _one_line_data_error(lambda: fit_class_thresholded_mixture(problem, [bad]), "scores[0] holds NaN")
    _one_line_data_error(lambda: fit_class_thresholded_mixture(problem, [np.zeros((N - 1, 3))]), "scores[0]")


def test_a_deeply_nested_goals_file_is_a_one_line_error():
    text = 'objective = "error"\nx = ' + "[" * 500 + "]" * 500 + "\n"
    msg = _one_line_data_error(lambda: read_goals(text), "nested too deeply")
    table = 'objective = "error"\nx = ' + "{a = " * 500 + "1" + "}" * 500 + "\n"
    with pytest.raises(GoalsFileError, match="nested too deeply"):
        read_goals(table)
    assert msg.startswith("<goals>:")


# -- item 11: messages that name the fix -------------------------------------------------------------

def test_a_prefit_model_on_other_labels_is_refused_naming_both_label_sets():
    on_12 = LogisticRegression().fit(X2, Y + 1)  # labels {1, 2}; y is {0, 1}: was silently accepted
    _one_line_data_error(lambda: ro.ThresholdClassifier(on_12, prefit=True).fit(X2, Y),
                         "prefit estimator was fitted on classes [1, 2]", "y holds [0, 1]")
    on_3 = LogisticRegression().fit(X2, np.arange(N) % 3)
    _one_line_data_error(lambda: ro.ThresholdClassifier(on_3, prefit=True).fit(X2, Y), "[0, 1, 2]", "classes=")
    # the same labels are accepted, and the scores are the model's positive-class column
    ok = ro.ThresholdClassifier(LogisticRegression().fit(X2, Y), prefit=True).fit(X2, Y)
    np.testing.assert_array_equal(ok.classes_, [0, 1])


@pytest.mark.parametrize("make", [
    lambda: ro.ThresholdClassifier(),
    lambda: ro.RateConstrainedClassifier(n_iter=5),
], ids=["ThresholdClassifier", "RateConstrainedClassifier"])
def test_boolean_labels_with_pd_na_name_the_row(make):
    y = pd.Series(np.arange(N) % 2 == 1, dtype="boolean")
    y[3] = pd.NA
    X = S if isinstance(make(), ro.ThresholdClassifier) else X2
    _one_line_data_error(lambda: make().fit(X, y), "y holds 1 missing label", "pd.NA", "row 3")
    y[3] = True  # without the missing value the nullable column is read as its booleans
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted = make().fit(X, y)
    np.testing.assert_array_equal(fitted.classes_, [False, True])


def test_a_stray_third_label_with_one_score_per_row_names_y():
    y = Y.copy()
    y[0] = 7
    _one_line_data_error(lambda: ro.ThresholdClassifier().fit(S, y), "y holds 3 classes [0, 1, 7]", "stray")


def test_a_fold_missing_a_class_keeps_the_class_list_with_classes():
    y = np.arange(90) % 3
    X = np.random.default_rng(1).normal(size=(90, 2))
    g = np.where(X[:, 1] > 0, "a", "b")
    fold = y != 2
    goals = [ro.goals.multiclass_demographic_parity("g", slack=0.2)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = ro.RateConstrainedClassifier(goals, n_iter=20, classes=[0, 1, 2]).fit(X[fold], y[fold],
                                                                                  groups={"g": g[fold]})
    np.testing.assert_array_equal(est.classes_, [0, 1, 2])
    assert est.predict_proba(X).shape == (90, 3)
    P = np.random.default_rng(2).dirichlet(np.ones(3), 90)
    tc = ro.ThresholdClassifier(goals=goals, classes=[0, 1, 2]).fit(P[fold], y[fold], groups={"g": g[fold]})
    np.testing.assert_array_equal(tc.classes_, [0, 1, 2])
    proba = tc.predict_proba(P, groups={"g": g})
    assert proba.shape == (90, 3)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    # without classes= the fold is two-class: the K-class goal cannot bind to it
    with pytest.raises(RateoptError):
        ro.ThresholdClassifier(goals=goals).fit(P[fold][:, :2] / P[fold][:, :2].sum(1, keepdims=True), y[fold],
                                                groups={"g": g[fold]})
    # a label outside classes= is refused naming both
    _one_line_data_error(lambda: ro.ThresholdClassifier(classes=[0, 1]).fit(S, np.arange(N) % 3),
                         "y holds labels [2]", "classes=[0, 1]")


def test_a_string_column_left_in_X_points_to_group_columns():
    df = pd.DataFrame({"x0": X2[:, 0], "x1": X2[:, 1], "sex": G})
    goals = [ro.goals.demographic_parity("sex")]
    _one_line_data_error(lambda: ro.RateConstrainedClassifier(goals, n_iter=5).fit(df, Y),
                         "X column 'sex'", "group_columns=['sex']")
    obj = df.astype({"sex": object})
    _one_line_data_error(lambda: ro.RateConstrainedClassifier(goals, n_iter=5).fit(obj, Y),
                         "X column 'sex'", "group_columns=['sex']")
    _one_line_data_error(lambda: ro.ThresholdClassifier(LogisticRegression(), goals=goals).fit(df, Y),
                         "X column 'sex'", "group_columns=['sex']")
    # named there, the column is a group and the fit runs
    fitted = ro.ThresholdClassifier(LogisticRegression(), goals=goals, group_columns=["sex"]).fit(df, Y)
    assert fitted.cell_columns_ == ("sex",)


@pytest.mark.parametrize("fit", [
    lambda goals: ro.RateConstrainedClassifier(goals, n_iter=5).fit(X2, Y),
    lambda goals: ro.ThresholdClassifier(goals=goals).fit(S, Y),
], ids=["RateConstrainedClassifier", "ThresholdClassifier"])
def test_no_groups_passed_says_how_to_pass_them(fit):
    msg = _one_line_data_error(lambda: fit([ro.goals.demographic_parity("sex")]),
                               "no groups were given", "groups={'sex'", "group_columns=['sex']")
    assert "columns: []" not in msg


# -- item 15: Problem.from_toml and [train] ------------------------------------------------------------

def test_from_toml_parses_but_does_not_check_train_as_documented():
    text = '[[goals]]\nrecipe = "coverage_budget"\nmax_rate = 0.5\n\n[train]\nn_iter = "many"\n'
    ds = ro.Dataset(np.eye(4), y=[0, 1, 1, 0])
    problem = ro.Problem.from_toml(text, ds)  # the docstring: [train] is not checked here
    assert problem.constraint_names == ("ppr[all] <= 0.5",)
    assert "not checked here" in ro.Problem.from_toml.__doc__
    with pytest.raises(GoalsFileError, match="n_iter"):  # the command line's check refuses it
        read_goals(text, check_train=check_train_entry)
