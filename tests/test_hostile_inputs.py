"""Hostile inputs at every public entry point (issue 32, targets): 0 wrong results, 0 crashes, 0 hangs.

Each entry point gets tiny hostile inputs (NaN/inf in X, scores or weights; negative or NaN weights; zero
rows; mismatched lengths; one-class y; 3-D or ragged X; object, text and complex arrays; empty groups;
truncated or garbage files; wrong parameter types). A data error must be a one-line
:class:`~rateopt.exceptions.RateoptError` naming the argument or the file's field; a parameter error a one-line
``ValueError``/``TypeError`` naming the parameter; a command exits 2 with one ``rateopt: error:`` line. An
input that is accepted must give the answer an independent computation gives (the same decisions as the
plain float array, a brute-force count).

Cases already pinned elsewhere are not repeated here: post-processing's data errors
(``tests/test_data_errors.py``), impossible parameters (``tests/test_parameter_refusals.py``, and the training
parameters' tables in ``tests/test_train.py`` and ``tests/test_estimator.py``), damaged rule files (``tests/_postprocess/test_rule_files.py``) and the command line's tied files
(``tests/cli/test_cli_files.py``, ``tests/cli/test_evaluate.py``). The module checks that their case lists are
still there, so that together they cover each entry point.
"""

import json
import pathlib
import shutil
import warnings

import numpy as np
import pytest
from _cli_support import cli_data, one_line_error
from _csv_files import write_csv

import rateopt as ro
from rateopt.cli import main
from rateopt.exceptions import RateoptError

ROOT = pathlib.Path(__file__).resolve().parents[1]
rng = np.random.default_rng(11)
N = 40
X = rng.normal(size=(N, 2))
Y = (X[:, 0] + rng.normal(scale=0.5, size=N) > 0).astype(int)
G = np.where(rng.random(N) < 0.5, "a", "b")
S = 1.0 / (1.0 + np.exp(-X[:, 0]))
W = np.ones(N)
GOALS = [ro.goals.demographic_parity("g", slack=0.1)]


def _with(a, i, v):
    a = np.array(a, dtype=object if isinstance(v, str) or v is None else None, copy=True)
    a.flat[i] = v
    return a


def _one_line(exc_info, *words):
    msg = str(exc_info.value)
    assert "\n" not in msg and msg, msg
    for w in words:
        assert w in msg, (w, msg)


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # copies, infeasibility: not what is checked here
        yield


# --------------------------------------------------------------------------- data errors: one-line RateoptError

def _train(X=X, y=Y, w=W, g=G):
    ds = ro.Dataset(X, y, weights=w, groups={"g": g})
    return ro.train(ro.Problem(constraints=GOALS, datasets=ds), n_iter=3)


def _fit(X=X, y=Y, w=W, g=G):
    return ro.RateConstrainedClassifier(GOALS, n_iter=3).fit(X, y, groups={"g": g}, sample_weight=w)


def _tc_fit(s=S, y=Y, w=W, g=G):
    return ro.ThresholdClassifier(goals=GOALS).fit(s, y, groups={"g": g}, sample_weight=w)


FITTED = ro.RateConstrainedClassifier(GOALS, n_iter=3).fit(X, Y, groups={"g": G})
TC = ro.ThresholdClassifier(goals=GOALS).fit(S, Y, groups={"g": G})
RAGGED = [[1.0, 2.0], [3.0]] * (N // 2)

DATA_ERRORS = {
    # rateopt.train (through Dataset, where the data are read)
    "train: NaN in X": (lambda: _train(X=_with(X, 7, np.nan)), ("X", "non-finite", "row 3")),
    "train: inf in X": (lambda: _train(X=_with(X, 7, np.inf)), ("X", "non-finite")),
    "train: 3-D X": (lambda: _train(X=X[:, :, None]), ("X", "2-D")),
    "train: ragged X": (lambda: _train(X=RAGGED), ("X could not be read",)),
    "train: text X": (lambda: _train(X=np.full((N, 2), "a")), ("X must hold real numbers",)),
    "train: complex X": (lambda: _train(X=X + 0j), ("X must hold real numbers",)),
    "train: zero rows": (lambda: _train(X[:0], Y[:0], W[:0], G[:0]), ("group column 'g'", "no (non-missing) values")),
    "train: zero rows, no goals": (lambda: ro.train(ro.Problem(datasets=ro.Dataset(X[:0], Y[:0])), n_iter=3),
                                   ("error[all]", "empty")),
    "train: short y": (lambda: _train(y=Y[:-1]), ("y",)),
    "train: NaN in y": (lambda: _train(y=_with(Y.astype(float), 0, np.nan)), ("y",)),
    "train: negative weight": (lambda: _train(w=_with(W, 2, -1.0)), ("weights",)),
    "train: NaN weight": (lambda: _train(w=_with(W, 2, np.nan)), ("weights",)),
    "train: short weights": (lambda: _train(w=W[:-1]), ("weights",)),
    "train: short groups": (lambda: _train(g=G[:-1]), ("g",)),
    "train: all-missing groups": (lambda: _train(g=np.full(N, None, dtype=object)), ("g",)),
    # RateConstrainedClassifier.fit / predict / predict_proba
    "fit: NaN in X": (lambda: _fit(X=_with(X, 7, np.nan)), ("Input X contains NaN",)),
    "fit: inf in X": (lambda: _fit(X=_with(X, 7, np.inf)), ("Input X contains infinity",)),
    "fit: 3-D X": (lambda: _fit(X=X[:, :, None]), ("dim 3",)),
    "fit: 1-D X": (lambda: _fit(X=X[:, 0]), ("Expected 2D array, got 1D array", "Reshape your data")),
    "fit: ragged X": (lambda: _fit(X=RAGGED), ("inhomogeneous",)),
    "fit: text X": (lambda: _fit(X=np.full((N, 2), "a")), ("could not convert string to float",)),
    "fit: complex X": (lambda: _fit(X=X + 0j), ("Complex data not supported",)),
    "fit: short y": (lambda: _fit(y=Y[:-1]), ("inconsistent numbers of samples",)),
    "fit: one-class y": (lambda: _fit(y=np.zeros(N, int)), ("y",)),
    "fit: negative weight": (lambda: _fit(w=_with(W, 2, -1.0)), ("sample_weight",)),
    "fit: NaN weight": (lambda: _fit(w=_with(W, 2, np.nan)), ("sample_weight",)),
    "fit: short weights": (lambda: _fit(w=W[:-1]), ("sample_weight has shape (39,)",)),
    "fit: short groups": (lambda: _fit(g=G[:-1]), ("g",)),
    "predict: NaN in X": (lambda: FITTED.predict(_with(X, 7, np.nan)), ("Input X contains NaN",)),
    "predict: 3-D X": (lambda: FITTED.predict(X[:, :, None]), ("dim 3",)),
    "predict: wrong width": (lambda: FITTED.predict(X[:, :1]), ("X has 1 features",)),
    "predict_proba: inf in X": (lambda: FITTED.predict_proba(_with(X, 7, np.inf)), ("infinity",)),
    "predict_proba: text X": (lambda: FITTED.predict_proba(np.full((N, 2), "a")), ("could not convert",)),
    "predict_proba: zero rows": (lambda: FITTED.predict_proba(X[:0]), ("0 sample",)),
    # ThresholdClassifier (post-processing's own cases: tests/test_data_errors.py)
    "ThresholdClassifier.fit: complex scores": (lambda: _tc_fit(s=S + 1j), ("numeric scores", "complex")),
    "ThresholdClassifier.fit: ragged scores": (lambda: _tc_fit(s=RAGGED), ("X could not be read",)),
    "ThresholdClassifier.fit: 3-D scores": (lambda: _tc_fit(s=S[:, None, None]), ("X must hold scores",)),
    "ThresholdClassifier.fit: negative weight": (lambda: _tc_fit(w=_with(W, 2, -1.0)), ("sample_weight",)),
    "ThresholdClassifier.fit: NaN weight": (lambda: _tc_fit(w=_with(W, 2, np.nan)), ("sample_weight",)),
    "ThresholdClassifier.fit: empty group": (lambda: _tc_fit(g=_with(G, 0, None)), ("group",)),
    "ThresholdClassifier.predict: complex scores": (lambda: TC.predict(S + 1j, groups={"g": G}), ("complex",)),
    "ThresholdClassifier.predict: unseen group": (lambda: TC.predict(S, groups={"g": _with(G, 0, "zz")}),
                                                  ("group cell",)),
    # group_rates
    "group_rates: text predictions": (lambda: ro.group_rates(Y, np.full(N, "a"), {"g": G}), ("predictions",)),
    "group_rates: NaN prediction": (lambda: ro.group_rates(Y, _with(S, 0, np.nan), {"g": G}), ("predictions",)),
    "group_rates: probability above 1": (lambda: ro.group_rates(Y, _with(S, 0, 1.5), {"g": G}), ("predictions",)),
    "group_rates: 3-D predictions": (lambda: ro.group_rates(Y, S[:, None, None], {"g": G}), ("predictions",)),
    "group_rates: short y": (lambda: ro.group_rates(Y[:-1], S, {"g": G}), ("y has shape (39,)",)),
    "group_rates: NaN label": (lambda: ro.group_rates(_with(Y.astype(float), 0, np.nan), S, {"g": G}), ("y",)),
    "group_rates: short groups": (lambda: ro.group_rates(Y, S, {"g": G[:-1]}), ("groups column 'g'",)),
    "group_rates: groups of 3 dimensions": (lambda: ro.group_rates(Y, S, np.zeros((N, 1, 1))), ("groups",)),
    "group_rates: text weights": (lambda: ro.group_rates(Y, S, {"g": G}, sample_weight=np.full(N, "a")),
                                  ("sample_weight",)),
    "group_rates: negative weight": (lambda: ro.group_rates(Y, S, {"g": G}, sample_weight=_with(W, 1, -1.0)),
                                     ("sample_weight",)),
}


@pytest.mark.parametrize("case", list(DATA_ERRORS))
def test_a_data_error_is_a_one_line_rateopt_error_naming_the_input(case):
    fn, words = DATA_ERRORS[case]
    with pytest.raises(RateoptError) as info:
        fn()
    _one_line(info, *words)


# --------------------------------------------------------------------------- parameters: named, one line

@pytest.fixture(scope="module")
def result():
    ds = ro.Dataset(X, Y, groups={"g": G})
    problem = ro.Problem(constraints=GOALS, datasets=ds)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return problem, ro.train(problem, n_iter=5, random_state=0)


PARAMETER_ERRORS = {
    "solution(kind=3)": (lambda p, r: r.solution(3), ValueError, "kind must be one of"),
    "solution(epsilon='x')": (lambda p, r: r.solution(epsilon="x"), ValueError, "epsilon"),
    "solution(epsilon=nan)": (lambda p, r: r.solution(epsilon=np.nan), ValueError, "epsilon"),
    "solution(weighting='x')": (lambda p, r: r.solution(weighting="x"), ValueError, "weighting"),
    "solution(weighting=None)": (lambda p, r: r.solution("m-stochastic", weighting=None), ValueError, "weighting"),
    "solution('thresholded', problem=3)": (lambda p, r: r.solution("thresholded", problem=3), TypeError,
                                           "problem must be a rateopt.Problem, got int"),
    "thresholded(problem='x')": (lambda p, r: r.thresholded("x"), TypeError, "problem must be a rateopt.Problem"),
    "certify(problem=None)": (lambda p, r: r.certify(None), TypeError, "problem must be a rateopt.Problem"),
    "certify(confidence=1.5)": (lambda p, r: r.certify(p, confidence=1.5), ValueError, "confidence"),
    "certify(confidence='x')": (lambda p, r: r.certify(p, confidence="x"), ValueError, "confidence"),
    "certify(classifier=3)": (lambda p, r: r.certify(p, classifier=3), TypeError, "classifier must be"),
    "certify(random_state=-1)": (lambda p, r: r.certify(p, random_state=-1), ValueError, "random_state"),
    "certify(kind='x')": (lambda p, r: r.certify(p, kind="x"), ValueError, "kind"),
    "load(None)": (lambda p, r: ro.load(None), TypeError, "path must be a str or an os.PathLike, got NoneType"),
    "load(3)": (lambda p, r: ro.load(3), TypeError, "path must be"),
    "Problem.from_toml(3, ...)": (lambda p, r: ro.Problem.from_toml(3, {"train": p.datasets["train"]}), TypeError,
                                  "a goals file is a path or TOML text"),
    "Problem.from_toml(..., datasets=3)": (lambda p, r: ro.Problem.from_toml('objective = "error"', 3), TypeError,
                                           "datasets must be"),
    "train(n_iter='x')": (lambda p, r: ro.train(p, n_iter="x"), ValueError, "n_iter"),
    "RateConstrainedClassifier(goals='x')": (lambda p, r: ro.RateConstrainedClassifier("x").fit(X, Y), ValueError,
                                             "goals must be a sequence"),
    "ThresholdClassifier(epsilon=-1)": (lambda p, r: ro.ThresholdClassifier(epsilon=-1).fit(S, Y), ValueError,
                                        "epsilon"),
}


@pytest.mark.parametrize("case", list(PARAMETER_ERRORS))
def test_a_wrong_parameter_is_refused_by_name_in_one_line(result, case):
    fn, exc, words = PARAMETER_ERRORS[case]
    problem, r = result
    with pytest.raises(exc) as info:
        fn(problem, r)
    _one_line(info, words)


# --------------------------------------------------------------------------- files: truncated, garbage, empty

@pytest.fixture(scope="module")
def files(result, tmp_path_factory):
    d = tmp_path_factory.mktemp("files")
    problem, r = result
    r.save(d / "r.npz")
    r.solution("best").save(d / "m.npz")
    TC.save(d / "rule.npz")
    return d


@pytest.mark.parametrize("source", ["r.npz", "m.npz", "rule.npz"])
@pytest.mark.parametrize("damage", ["half", "last byte", "garbage", "empty", "text"])
def test_a_damaged_file_is_refused_by_load_in_one_line(files, tmp_path, source, damage):
    data = (files / source).read_bytes()
    bad = {"half": data[:len(data) // 2], "last byte": data[:-1], "garbage": np.random.default_rng(1).bytes(300),
           "empty": b"", "text": b"objective = 'error'\n"}[damage]
    (tmp_path / "bad.npz").write_bytes(bad)
    with pytest.raises(RateoptError) as info:
        ro.load(tmp_path / "bad.npz")
    _one_line(info, "bad.npz")


GOALS_TEXT_ERRORS = {
    "empty string": ("", "empty string"),
    "NUL character": ("objective\x00", "NUL character"),
    "not TOML": ("objective = [", "not valid TOML"),
    "unknown recipe": ("[[goals]]\nrecipe = 'nope'\n", "unknown goal 'nope'"),
    "NaN slack": ("[[goals]]\nrecipe = 'demographic_parity'\ngroup = 'g'\nslack = nan\n", "slack"),
    "text slack": ("[[goals]]\nrecipe = 'demographic_parity'\ngroup = 'g'\nslack = 'x'\n", "slack"),
    "unknown group": ("[[goals]]\nrecipe = 'demographic_parity'\ngroup = 'nope'\nslack = 0.1\n", "'nope'"),
}


@pytest.mark.parametrize("case", list(GOALS_TEXT_ERRORS))
def test_a_bad_goals_text_is_a_one_line_rateopt_error(result, case):
    text, words = GOALS_TEXT_ERRORS[case]
    problem, _ = result
    with pytest.raises(RateoptError) as info:
        ro.Problem.from_toml(text, {"train": problem.datasets["train"]})
    _one_line(info, words)


def test_binary_goals_file_is_a_one_line_rateopt_error(result, tmp_path):
    problem, _ = result
    (tmp_path / "g.toml").write_bytes(b"\xff\xfe\x00junk")
    with pytest.raises(RateoptError) as info:
        ro.Problem.from_toml(tmp_path / "g.toml", {"train": problem.datasets["train"]})
    _one_line(info, "g.toml", "not UTF-8")


# --------------------------------------------------------------------------- accepted inputs: right answers

def test_accepted_odd_inputs_give_the_plain_arrays_answer():
    """Boolean, integer and object arrays of numbers are read as the float array they equal: the same decisions
    (a reference computed on the plain float array)."""
    Xb = X > 0
    for odd, plain in ((Xb, Xb.astype(float)), (X.astype(object), X), ((X * 4).astype(int), (X * 4).astype(int) * 1.0)):
        np.testing.assert_array_equal(FITTED.predict_proba(odd), FITTED.predict_proba(plain))
    np.testing.assert_array_equal(TC.predict_proba(S.astype(object), groups={"g": G}),
                                  TC.predict_proba(S, groups={"g": G}))
    np.testing.assert_array_equal(TC.predict_proba(S[:, None], groups={"g": G}), TC.predict_proba(S, groups={"g": G}))


def test_group_rates_of_odd_inputs_against_a_brute_force_count():
    """Zero rows: count 0 and undefined (NaN) rates; a missing group value (None, NaN): the row is in no group but
    in ``all``; zero weights: the weighted rate ignores those rows. Reference: explicit loops over the rows."""
    t = ro.group_rates(Y[:0], S[:0], {"g": G[:0]}, as_frame=False)
    assert t["count"].tolist() == [0.0] and np.isnan(t["positive_rate"][0])
    g = G.astype(object)
    g[0], g[1] = None, np.nan
    w = rng.random(N)
    w[5] = 0.0
    t = ro.group_rates(Y, S, {"g": g}, sample_weight=w, as_frame=False)
    for i, (col, val) in enumerate(zip(t["group"], t["value"])):
        rows = [k for k in range(N) if col == "all" or g[k] == val]
        assert t["count"][i] == len(rows)
        num = sum(w[k] * S[k] for k in rows)
        den = sum(w[k] for k in rows)
        assert t["positive_rate"][i] == pytest.approx(num / den, abs=1e-12)
    assert sorted(t["value"]) == ["a", "all", "b"]


def test_every_public_entry_point_is_covered():
    """The public entry points the issue names, each with a case here or in the modules this one reuses."""
    from test_data_errors import POSTPROCESS_DATA_ERRORS  # noqa: F401 (imported to check it is still there)

    keys = " ".join(DATA_ERRORS) + " " + " ".join(PARAMETER_ERRORS)
    for entry in ("train", "fit", "predict", "predict_proba", "ThresholdClassifier.fit", "ThresholdClassifier.predict",
                  "load", "Problem.from_toml", "solution", "certify", "thresholded", "group_rates"):
        assert entry in keys, entry
    assert {c[0] for c in CLI_ERRORS} >= {"fit", "evaluate", "predict", "report", "datasets"}


# --------------------------------------------------------------------------- the command line

@pytest.fixture(scope="module")
def cli(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    cols = cli_data(200, seed=9)
    cols["w"] = np.ones(200)
    cols["score"] = cols["x1"]
    write_csv(d / "train.csv", cols)
    (d / "goals.toml").write_text('objective = "error"\n\n[train]\nn_iter = 5\n\n[[goals]]\n'
                                  'recipe = "demographic_parity"\ngroup = "group"\nslack = 0.1\n')
    assert main(["--quiet", "fit", str(d / "train.csv"), "--label", "label", "--groups", "group", "--weight", "w",
                 "--drop", "score", "--goals", str(d / "goals.toml"), "--out", str(d / "m.npz")]) == 0
    assert main(["--quiet", "fit", str(d / "train.csv"), "--label", "label", "--groups", "group", "--goals",
                 str(d / "goals.toml"), "--out", str(d / "r.npz"), "--postprocess", "score"]) == 0

    def csv_with(name, **edit):
        c = dict(cols)
        for k, (i, v) in edit.items():
            c[k] = _with(np.asarray(cols[k], dtype=object), i, v)
        write_csv(d / name, c)

    csv_with("nan_x.csv", x1=(5, "nan"))
    csv_with("inf_x.csv", x1=(5, "inf"))
    csv_with("neg_w.csv", w=(3, -1.0))
    csv_with("nan_w.csv", w=(3, "nan"))
    csv_with("nan_score.csv", score=(3, "nan"))
    csv_with("no_group.csv", group=(0, ""))
    write_csv(d / "zero_w.csv", dict(cols, w=np.zeros(200)))
    write_csv(d / "one_class.csv", dict(cols, label=np.array(["yes"] * 200)))
    (d / "header_only.csv").write_text("x1,x2,group,label,w,score\n")
    (d / "empty.csv").write_text("")
    (d / "garbage.csv").write_bytes(np.random.default_rng(2).bytes(300))
    (d / "ragged.csv").write_text("x1,x2,group,label,w,score\n1,2,A,yes,1,0.5\n3,B\n")
    (d / "bad_goals.toml").write_text("[[goals]]\nrecipe = 'nope'\n")
    (d / "deep_goals.toml").write_text("x = " + "[" * 500 + "]" * 500 + "\n")
    return d


def _fit_argv(d, data, *extra):
    return ["fit", str(d / data), "--label", "label", "--groups", "group", "--weight", "w", "--goals",
            str(d / "goals.toml"), "--out", str(d / "x.npz"), *extra]


CLI_ERRORS = [
    ("fit", "NaN in X", lambda d: _fit_argv(d, "nan_x.csv"), "column 'x1' has a missing or non-finite value"),
    ("fit", "inf in X", lambda d: _fit_argv(d, "inf_x.csv"), "column 'x1' has a missing or non-finite value"),
    ("fit", "negative weight", lambda d: _fit_argv(d, "neg_w.csv"), "weight column 'w' has negative values"),
    ("fit", "NaN weight", lambda d: _fit_argv(d, "nan_w.csv"), "weight column 'w'"),
    ("fit", "zero weights", lambda d: _fit_argv(d, "zero_w.csv"), "weights sum to zero"),
    ("fit", "one-class label", lambda d: _fit_argv(d, "one_class.csv"), "label column 'label' has 1 distinct"),
    ("fit", "no rows", lambda d: _fit_argv(d, "header_only.csv"), "header_only.csv: no data rows"),
    ("fit", "empty file", lambda d: _fit_argv(d, "empty.csv"), "empty.csv: empty file"),
    ("fit", "garbage file", lambda d: _fit_argv(d, "garbage.csv"), "garbage.csv: not a readable CSV file"),
    ("fit", "NaN score", lambda d: _fit_argv(d, "nan_score.csv", "--postprocess", "score"), "column 'score'"),
    ("fit", "unknown recipe", lambda d: _fit_argv(d, "train.csv")[:-4] + ["--goals", str(d / "bad_goals.toml"),
                                                                          "--out", str(d / "x.npz")],
     "unknown goal 'nope'"),
    ("fit", "500-deep goals", lambda d: _fit_argv(d, "train.csv")[:-4] + ["--goals", str(d / "deep_goals.toml"),
                                                                          "--out", str(d / "x.npz")],
     "nested too deeply"),
    ("fit", "--n-iter text", lambda d: _fit_argv(d, "train.csv", "--n-iter", "x"), "n_iter must be an integer"),
    ("fit", "--threads 0", lambda d: _fit_argv(d, "train.csv", "--threads", "0"), "n_threads"),
    ("evaluate", "NaN in X", lambda d: ["evaluate", str(d / "m.npz"), str(d / "nan_x.csv")], "column 'x1'"),
    ("evaluate", "NaN weight", lambda d: ["evaluate", str(d / "m.npz"), str(d / "nan_w.csv")], "column 'w'"),
    ("evaluate", "negative weight", lambda d: ["evaluate", str(d / "m.npz"), str(d / "neg_w.csv")],
     "weight column 'w' has negative values"),
    ("evaluate", "no rows", lambda d: ["evaluate", str(d / "m.npz"), str(d / "header_only.csv")],
     "header_only.csv: no data rows"),
    ("evaluate", "ragged file", lambda d: ["evaluate", str(d / "m.npz"), str(d / "ragged.csv")], "ragged.csv"),
    ("evaluate", "rule, empty group", lambda d: ["evaluate", str(d / "r.npz"), str(d / "no_group.csv")],
     "group column 'group' has no value at data row 1"),
    ("evaluate", "--certify 2", lambda d: ["evaluate", str(d / "m.npz"), str(d / "train.csv"), "--certify", "2"],
     "--certify 2"),
    ("evaluate", "--tolerance nan", lambda d: ["evaluate", str(d / "m.npz"), str(d / "train.csv"), "--tolerance",
                                               "nan"], "--tolerance nan"),
    ("predict", "inf in X", lambda d: ["predict", str(d / "m.npz"), str(d / "inf_x.csv"), "--out",
                                       str(d / "p.csv")], "column 'x1'"),
    ("predict", "garbage file", lambda d: ["predict", str(d / "m.npz"), str(d / "garbage.csv"), "--out",
                                           str(d / "p.csv")], "garbage.csv"),
    ("predict", "rule, empty group", lambda d: ["predict", str(d / "r.npz"), str(d / "no_group.csv"), "--out",
                                                str(d / "p.csv")], "group column 'group' has no value"),
    ("predict", "--chunk-rows 0", lambda d: ["predict", str(d / "m.npz"), str(d / "train.csv"), "--out",
                                             str(d / "p.csv"), "--chunk-rows", "0"], "--chunk-rows"),
    ("report", "garbage result", lambda d: ["report", str(d / "garbage.csv"), "--out", str(d / "r.md")],
     "garbage.csv"),
    ("report", "--epsilon nan", lambda d: ["report", str(d / "m.result.npz"), "--out", str(d / "r.md"),
                                           "--epsilon", "nan"], "epsilon"),
    ("report", "NaN in --data", lambda d: ["report", str(d / "m.result.npz"), "--out", str(d / "r.md"), "--data",
                                           str(d / "nan_x.csv")], "column 'x1'"),
    ("datasets", "unknown argument", lambda d: ["datasets", "bogus"], "invalid choice: 'bogus'"),
]


@pytest.mark.parametrize("command, case, argv, words", CLI_ERRORS, ids=[f"{c[0]}: {c[1]}" for c in CLI_ERRORS])
def test_a_command_on_hostile_input_exits_2_with_one_line(cli, capsys, command, case, argv, words):
    capsys.readouterr()
    assert main(["--quiet", *argv(cli)]) == 2
    line = one_line_error(capsys)
    assert words in line, line
    assert not (cli / "p.csv").exists() and not (cli / "x.npz").exists()


@pytest.mark.parametrize("damage", ["half", "garbage", "empty"])
@pytest.mark.parametrize("part", ["m.npz", "m.rateopt.json", "m.result.npz"])
def test_a_command_on_a_damaged_model_file_exits_2_naming_it(cli, tmp_path, capsys, part, damage):
    for name in ("m.npz", "m.rateopt.json", "m.result.npz"):
        shutil.copy(cli / name, tmp_path / name)
    data = (cli / part).read_bytes()
    (tmp_path / part).write_bytes({"half": data[:len(data) // 2], "garbage": np.random.default_rng(3).bytes(200),
                                   "empty": b""}[damage])
    commands = ([["report", str(tmp_path / "m.result.npz"), "--out", str(tmp_path / "r.md")]]
                if part == "m.result.npz" else
                [["predict", str(tmp_path / "m.npz"), str(cli / "train.csv"), "--out", str(tmp_path / "p.csv")],
                 ["evaluate", str(tmp_path / "m.npz"), str(cli / "train.csv")]])
    for argv in commands:
        capsys.readouterr()
        assert main(argv) == 2
        line = one_line_error(capsys)
        assert str(tmp_path / part) in line, line


@pytest.mark.parametrize("field, value, words", [
    ("encoding", None, "the encoding is damaged"),
    ("roles", {"label": 3}, "the field roles.label must be a column name"),
    ("roles", {"groups": "group"}, "the field roles.groups must be a list of column names"),
    ("goals_toml", 5, "the field goals_toml must be text"),
    ("goals_toml", "garbage [", "the field goals_toml is not a valid goals file"),
    ("goals_dir", 3, "the field goals_dir must be a path"),
    ("report", {"group_rates": {"train": {"group": 3}}}, "the field report.group_rates.train"),
])
def test_an_edited_encoding_file_field_is_refused_naming_it(cli, tmp_path, capsys, field, value, words):
    shutil.copy(cli / "m.npz", tmp_path / "m.npz")
    meta = json.loads((cli / "m.rateopt.json").read_text())
    meta[field] = value
    (tmp_path / "m.rateopt.json").write_text(json.dumps(meta))
    capsys.readouterr()
    assert main(["evaluate", str(tmp_path / "m.npz"), str(cli / "train.csv")]) == 2
    line = one_line_error(capsys)
    assert words in line and str(tmp_path / "m.rateopt.json") in line, line


def test_the_datasets_listing_runs_offline(capsys):
    assert main(["datasets"]) == 0
    out = capsys.readouterr().out
    assert "adult" in out


# --------------------------------------------------------------------------- rateopt.dask.Dataset

@pytest.fixture(scope="module")
def dask_client():
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0")
    client = distributed.Client(cluster, set_as_default=False)
    yield client
    client.close()
    cluster.close()


@pytest.mark.parametrize("case", ["NaN in X", "3-D X", "short y", "negative weight"])
def test_a_dask_dataset_of_hostile_partitions_is_a_one_line_rateopt_error(dask_client, case):
    da = pytest.importorskip("dask.array")
    import rateopt.dask as rd

    Xc, yc, wc = X.copy(), Y.copy(), W.copy()
    words = {"NaN in X": ("partition 0 of dataset 'train'", "X holds a non-finite value (NaN or inf) at row 3"),
             "3-D X": ("X must be 2-D",), "short y": ("partition 1 of y has 19 rows",),
             "negative weight": ("partition 0 of dataset 'train'", "weights must be non-negative")}[case]
    if case == "NaN in X":
        Xc[3, 1] = np.nan
    if case == "negative weight":
        wc[2] = -1.0
    Xd = da.from_array(Xc[:, :, None] if case == "3-D X" else Xc, chunks=20)
    yd = da.from_array(yc[:-1] if case == "short y" else yc, chunks=20)
    with pytest.raises(RateoptError) as info:
        rd.Dataset(Xd, yd, weights=da.from_array(wc, chunks=20), client=dask_client)
    _one_line(info, *words)
