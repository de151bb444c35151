"""The command line on a three-class label: fit -> evaluate -> predict -> reports, and the mismatched-goal errors.

Constraint values are recomputed here by counting from the saved model's ``predict_proba`` on the training rows.
"""

import csv
import json

import numpy as np
import pytest
import rateopt
from rateopt.cli import main

N = 600
CLASSES = ["high", "low", "mid"]  # sorted
SLACK = 0.05

GOALS = f"""objective = "error"

[train]
n_iter = 200
learning_rate = 0.1

[[goals]]
recipe = "multiclass_demographic_parity"
group = "group"
slack = {SLACK}
"""


def _write_csv(path, cols):
    names = list(cols)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(names)
        for row in zip(*(cols[n] for n in names)):
            w.writerow([repr(float(v)) if isinstance(v, float) else v for v in row])


def _data(n=N, seed=0):
    rng = np.random.default_rng(seed)
    g = np.where(rng.random(n) < 0.4, "A", "B")
    Z = rng.normal(size=(n, 3)) + (g == "A")[:, None] * 0.6
    y = np.digitize(Z[:, 0] + rng.normal(scale=0.7, size=n), [-0.3, 1.0])
    return {"x1": Z[:, 0], "x2": Z[:, 1], "x3": Z[:, 2], "group": g, "label": np.array(["low", "mid", "high"])[y]}


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    d = tmp_path_factory.mktemp("kcli")
    cols = _data()
    _write_csv(d / "train.csv", cols)
    (d / "goals.toml").write_text(GOALS)
    rc = main(["fit", str(d / "train.csv"), "--label", "label", "--groups", "group", "--goals",
               str(d / "goals.toml"), "--out", str(d / "m.npz"), "--report", str(d / "r.json"), "--quiet"])
    assert rc == 0
    return d, cols


def _X(cols, d):
    """The features as the encoding file describes them, encoded here: numbers standardized, categories one-hot."""
    enc = json.loads((d / "m.rateopt.json").read_text())["encoding"]
    blocks = []
    for c in enc["columns"]:
        v = np.asarray(cols[c["name"]])
        if c["type"] == "numeric":
            v = v.astype(float)
            blocks.append(((v - v.mean()) / v.std())[:, None])
        else:
            blocks.append(np.stack([(v == cat).astype(float) for cat in c["categories"]], 1))
    return np.hstack(blocks)


def test_fit_writes_a_model_that_meets_the_goal(work):
    d, cols = work
    assert (d / "m.npz").is_file() and (d / "m.rateopt.json").is_file() and (d / "r.json").is_file()
    meta = json.loads((d / "m.rateopt.json").read_text())
    assert meta["classes"] == CLASSES and meta["n_classes"] == 3
    clf = rateopt.load(str(d / "m.npz"))
    assert isinstance(clf, rateopt.MulticlassClassifier)
    assert list(clf.classes_) == CLASSES
    P = clf.predict_proba(_X(cols, d))
    g, y = cols["group"], cols["label"]
    worst = -np.inf
    for k, c in enumerate(CLASSES):
        overall = P[:, k].mean()
        for v in ("A", "B"):
            rate = P[g == v, k].mean()
            worst = max(worst, abs(rate - overall) - SLACK)
    assert worst <= 1e-9
    # the report's training values are the ones counted here
    rep = json.loads((d / "r.json").read_text())
    err = 1.0 - np.mean([P[i, CLASSES.index(y[i])] for i in range(N)])
    assert rep["objective"]["train"] == pytest.approx(err, abs=1e-12)
    assert rep["kind"] == "multiclass" and rep["classes"] == CLASSES and rep["all_met"]


def test_predict_writes_classes_and_probabilities(work):
    d, cols = work
    assert main(["predict", str(d / "m.npz"), str(d / "train.csv"), "--out", str(d / "p.csv"), "--quiet",
                 "--chunk-rows", "97"]) == 0
    with open(d / "p.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == N
    assert list(rows[0]) == ["prediction"] + [f"proba_{c}" for c in CLASSES]
    P = np.array([[float(r[f"proba_{c}"]) for c in CLASSES] for r in rows])
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-12)
    assert {r["prediction"] for r in rows} <= set(CLASSES)
    clf = rateopt.load(str(d / "m.npz"))
    np.testing.assert_allclose(P, clf.predict_proba(_X(cols, d)), atol=1e-12)
    for r, p in zip(rows, P):  # a drawn class has positive probability
        assert p[CLASSES.index(r["prediction"])] > 0


def test_evaluate_prints_the_report_values(work, capsys):
    d, _ = work
    capsys.readouterr()
    assert main(["evaluate", str(d / "m.npz"), str(d / "train.csv"), "--json", str(d / "e.json")]) == 0
    out = capsys.readouterr().out
    rep = json.loads((d / "r.json").read_text())
    assert f"objective (error): {rep['objective']['train']:.6f}" in out
    for goal in rep["goals"]:
        assert f"{goal['values']['train']:>+10.6f}" in out.split(goal["name"], 1)[1].splitlines()[0]
    ev = json.loads((d / "e.json").read_text())
    assert ev["objective"] == pytest.approx(rep["objective"]["train"], abs=1e-12)
    for goal in rep["goals"]:
        assert ev["constraints"][goal["name"]] == pytest.approx(goal["values"]["train"], abs=1e-12)
    assert ev["class_rates"] == rep["class_rates"]["train"]
    assert "per-group predicted class proportions" in out and "recall[mid]" in out


def test_reports_in_each_format(work, tmp_path):
    d, _ = work
    for suffix in (".md", ".html", ".json"):
        path = tmp_path / f"r{suffix}"
        assert main(["fit", str(d / "train.csv"), "--label", "label", "--groups", "group", "--goals",
                     str(d / "goals.toml"), "--out", str(tmp_path / "m.npz"), "--report", str(path), "--quiet"]) == 0
        text = path.read_text()
        if suffix == ".json":
            assert json.loads(text)["class_rates"]["train"]["group"] == ["all", "group", "group"]
        else:
            assert "predicted class proportions" in text and "recall[high]" in text and "proportion[low]" in text


def test_two_class_goal_in_a_k_class_run(work, tmp_path, capsys):
    d, _ = work
    (tmp_path / "g.toml").write_text('[[goals]]\nrecipe = "demographic_parity"\ngroup = "group"\nslack = 0.05\n')
    rc = main(["fit", str(d / "train.csv"), "--label", "label", "--groups", "group", "--goals",
               str(tmp_path / "g.toml"), "--out", str(tmp_path / "m.npz"), "--quiet"])
    assert rc == 2
    err = capsys.readouterr().err
    assert "two-class goal" in err and "3 classes" in err
    assert not (tmp_path / "m.npz").exists()


def test_k_class_goal_in_a_two_class_run(work, tmp_path, capsys):
    d, cols = work
    two = dict(cols, label=np.where(cols["label"] == "high", "yes", "no"))
    _write_csv(tmp_path / "two.csv", two)
    rc = main(["fit", str(tmp_path / "two.csv"), "--label", "label", "--groups", "group", "--goals",
               str(d / "goals.toml"), "--out", str(tmp_path / "m.npz"), "--quiet"])
    assert rc == 2
    assert "K-class goal" in capsys.readouterr().err
    (tmp_path / "o.toml").write_text('objective = "macro_f1"\n')
    rc = main(["fit", str(tmp_path / "two.csv"), "--label", "label", "--goals", str(tmp_path / "o.toml"),
               "--out", str(tmp_path / "m.npz"), "--quiet"])
    assert rc == 2
    assert "K-class objective" in capsys.readouterr().err


@pytest.mark.parametrize("flags, text", [(["--sweep", "0.1,0.2"], "--sweep"), (["--certify", "0.9"], "--certify"),
                                         (["--compare-unconstrained"], "--compare-unconstrained"),
                                         (["--postprocess", "x1"], "--postprocess"),
                                         (["--momentum", "0.5"], None)])
def test_unsupported_options_are_refused(work, tmp_path, capsys, flags, text):
    d, _ = work
    argv = ["fit", str(d / "train.csv"), "--label", "label", "--groups", "group", "--goals", str(d / "goals.toml"),
            "--out", str(tmp_path / "m.npz"), "--quiet"] + flags
    if text is None:  # a [train] parameter K-class training does not take
        (tmp_path / "g.toml").write_text(GOALS.replace("learning_rate = 0.1", "learning_rate = 0.1\nbatch_size = 50"))
        argv[argv.index(str(d / "goals.toml"))] = str(tmp_path / "g.toml")
        argv = argv[:-2]
        text = "batch_size"
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert text in err
    assert not (tmp_path / "m.npz").exists()
