"""The command line end to end: fit -> evaluate (a gate) -> predict -> report, on files the tests write.

The CSV pipeline, a LIBSVM fit, a Parquet prediction and one bad input run in
real subprocesses (``python -m rateopt``); the other cases call :func:`rateopt.cli.main`, the same entry
point the console script runs, in process (starting Python and importing
rateopt costs seconds per call). Expected values come from the saved model
applied to features encoded here with NumPy, and from rates computed here by
brute force.
"""

import csv
import html
import json
import os
import subprocess
import sys
import zipfile

import numpy as np
import pytest
from _csv_files import write_csv as _write_csv

import rateopt
from rateopt.cli import main
from rateopt.cli._decisions import predict_keyed

N = 600



def _data(n=N, seed=0):
    X, y, g = rateopt.make_groups_dataset(n, random_state=seed)
    rng = np.random.default_rng(seed + 1000)  # independent of the generator's own draws
    return {"x1": X[:, 0].astype(float), "x2": X[:, 1].astype(float),
            "color": rng.choice(["red", "green", "blue"], size=n), "group": g,
            "label": np.where(y == 1, "yes", "no")}


GOALS = """objective = "error"

[train]
n_iter = 150
learning_rate = 0.05
eta_lambda = 0.5

[[goals]]
recipe = "equal_opportunity"
group = "group"
slack = 0.05
sides = "lower"
"""


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    cols = _data()
    _write_csv(d / "train.csv", cols)
    (d / "goals.toml").write_text(GOALS)
    status = main(["--quiet", "fit", str(d / "train.csv"), "--label", "label", "--groups", "group", "--goals",
                   str(d / "goals.toml"), "--out", str(d / "model.npz")])
    assert status == 0
    return d, cols


def _encode(cols, enc_json):
    """Reference encoding with NumPy: standardized numerics, one-hot categories (unknown -> zeros)."""
    blocks = []
    for c in enc_json["columns"]:
        v = cols[c["name"]]
        if c["type"] == "numeric":
            x = np.asarray(v, float)
            blocks.append(((x - x.mean()) / x.std())[:, None])  # the training file's own statistics
        else:
            blocks.append(np.stack([(np.asarray(v) == cat).astype(float) for cat in c["categories"]], axis=1))
    return np.hstack(blocks)


def _drawn(clf, X, seed=0):
    """The decisions the command line draws for a file's rows: seeded, each row keyed on its row number."""
    return predict_keyed(clf.predict, X, np.arange(X.shape[0]), random_state=seed)


def _run(*args):
    return subprocess.run([sys.executable, "-m", "rateopt", "--quiet", *map(str, args)], capture_output=True,
                          text=True, timeout=300)


# --------------------------------------------------------------------------- the pipeline, in subprocesses


def test_pipeline_in_subprocesses_fit_gate_predict(tmp_path):
    cols = _data()
    _write_csv(tmp_path / "train.csv", cols)
    (tmp_path / "goals.toml").write_text(GOALS)
    fit = _run("fit", tmp_path / "train.csv", "--label", "label", "--groups", "group", "--goals",
               tmp_path / "goals.toml", "--out", tmp_path / "model.npz")
    assert fit.returncode == 0, fit.stderr
    assert fit.stdout.splitlines()[0].split() == ["objective", "train"]  # no HiGHS banner before the table
    for f in ("model.npz", "model.rateopt.json", "model.result.npz"):
        assert (tmp_path / f).is_file()
    # The gate: goals the model cannot meet exactly (two-sided, no slack) fail with exit status 1 ...
    (tmp_path / "strict.toml").write_text('[[goals]]\nrecipe = "equal_opportunity"\ngroup = "group"\nslack = 0.0\n')
    gate = _run("evaluate", tmp_path / "model.npz", tmp_path / "train.csv", "--goals", tmp_path / "strict.toml")
    assert gate.returncode == 1, gate.stdout + gate.stderr
    assert "FAIL" in gate.stdout and "Traceback" not in gate.stderr
    # ... and pass with a tolerance above the largest violation.
    worst = max(float(line.split()[-2]) for line in gate.stdout.splitlines() if line.endswith("VIOLATED"))
    assert main(["evaluate", str(tmp_path / "model.npz"), str(tmp_path / "train.csv"), "--goals",
                 str(tmp_path / "strict.toml"), "--tolerance", str(worst + 1e-6)]) == 0
    pred = _run("predict", tmp_path / "model.npz", tmp_path / "train.csv", "--out", tmp_path / "pred.csv", "--proba")
    assert pred.returncode == 0, pred.stderr
    with open(tmp_path / "pred.csv") as f:
        rows = list(csv.DictReader(f))
    clf = rateopt.load(tmp_path / "model.npz")
    enc = json.loads((tmp_path / "model.rateopt.json").read_text())["encoding"]
    X = _encode(cols, enc)
    np.testing.assert_allclose([float(r["proba"]) for r in rows], clf.predict_proba(X)[:, 1], atol=1e-12)
    expected = np.where(_drawn(clf, X) == 1, "yes", "no")
    assert [r["prediction"] for r in rows] == expected.tolist()


def test_bad_model_version_in_subprocess_is_one_line_exit_2(work, tmp_path):
    d, _ = work
    bad = tmp_path / "model.npz"
    with zipfile.ZipFile(d / "model.npz") as src, zipfile.ZipFile(bad, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename.startswith("__rateopt_meta__") or b'"version": 1' in data:
                data = data.replace(b'"version": 1', b'"version": 9')
            dst.writestr(info, data)
    (tmp_path / "model.rateopt.json").write_text((d / "model.rateopt.json").read_text())
    out = _run("predict", bad, d / "train.csv", "--out", tmp_path / "p.csv")
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "version 9" in lines[0] and lines[0].startswith("rateopt: error:"), out.stderr


# --------------------------------------------------------------------------- in process: numbers


def test_evaluate_values_match_brute_force_rates(work, tmp_path, capsys):
    d, cols = work
    # The trained solution makes tpr[group=B] >= tpr[all] - 0.05 bind: evaluated again from the CSV its value
    # is 0 up to round-off (+-4e-17), so the gate gets a tolerance a little above round-off.
    status = main(["evaluate", str(d / "model.npz"), str(d / "train.csv"), "--json", str(tmp_path / "ev.json"),
                   "--tolerance", "1e-12"])
    assert status == 0
    ev = json.loads((tmp_path / "ev.json").read_text())
    clf = rateopt.load(d / "model.npz")
    enc = json.loads((d / "model.rateopt.json").read_text())["encoding"]
    p = clf.predict_proba(_encode(cols, enc))[:, 1]
    y = cols["label"] == "yes"
    tpr = {g: p[y & (cols["group"] == g)].mean() for g in ("A", "B")}
    tpr_all = p[y].mean()
    for g in ("A", "B"):
        assert ev["constraints"][f"tpr[group={g}] >= tpr[all] - 0.05"] == pytest.approx(tpr_all - 0.05 - tpr[g],
                                                                                         abs=1e-12)
    assert ev["objective"] == pytest.approx(np.mean(np.where(y, 1 - p, p)), abs=1e-12)
    rows = dict(zip(ev["group_rates"]["value"], ev["group_rates"]["tpr"]))
    assert rows["A"] == pytest.approx(tpr["A"]) and rows["all"] == pytest.approx(tpr_all)
    assert ev["passed"] is True


def test_predict_in_chunks_equals_one_chunk(work, tmp_path):
    d, _ = work
    for rows in (7, 100000):
        assert main(["--quiet", "predict", str(d / "model.npz"), str(d / "train.csv"), "--out",
                     str(tmp_path / f"p{rows}.csv"), "--proba", "--chunk-rows", str(rows), "--keep", "group"]) == 0
    assert (tmp_path / "p7.csv").read_text() == (tmp_path / "p100000.csv").read_text()


def test_unknown_category_ignored_or_refused(work, tmp_path, capsys):
    d, cols = work
    new = {k: v[:20].copy() for k, v in cols.items()}
    new["color"] = np.array(["purple"] * 20)
    _write_csv(tmp_path / "new.csv", new)
    assert main(["predict", str(d / "model.npz"), str(tmp_path / "new.csv"), "--out", str(tmp_path / "p.csv"),
                 "--proba"]) == 0
    clf = rateopt.load(d / "model.npz")
    enc = json.loads((d / "model.rateopt.json").read_text())["encoding"]
    X = _encode(cols, enc)[:20]
    color_cols = [i for i, n in enumerate(c for c in _names(enc)) if n.startswith("color=")]
    X[:, color_cols] = 0.0  # an unseen category: no one-hot feature
    with open(tmp_path / "p.csv") as f:
        got = [float(r["proba"]) for r in csv.DictReader(f)]
    np.testing.assert_allclose(got, clf.predict_proba(X)[:, 1], atol=1e-12)
    # Fitted with --unknown error, the same file is refused, naming the column and the value.
    assert main(["--quiet", "fit", str(d / "train.csv"), "--label", "label", "--groups", "group", "--goals",
                 str(d / "goals.toml"), "--out", str(tmp_path / "strict.npz"), "--unknown", "error",
                 "--n-iter", "20"]) == 0
    capsys.readouterr()
    assert main(["predict", str(tmp_path / "strict.npz"), str(tmp_path / "new.csv"), "--out",
                 str(tmp_path / "q.csv")]) == 2
    err = capsys.readouterr().err
    assert "'color'" in err and "'purple'" in err and len(err.strip().splitlines()) == 1


def _names(enc):
    for c in enc["columns"]:
        if c["type"] == "numeric":
            yield c["name"]
        else:
            yield from (f"{c['name']}={v}" for v in c["categories"])


def test_libsvm_pipeline(tmp_path):
    from sklearn.datasets import dump_svmlight_file

    X, y, g = rateopt.make_groups_dataset(N, random_state=1)
    dump_svmlight_file(X, np.where(y == 1, 1, -1), str(tmp_path / "train.svm"), zero_based=False)
    (tmp_path / "goals.toml").write_text(GOALS.replace('group = "group"', 'group = "3"'))
    fit = _run("fit", tmp_path / "train.svm", "--groups", "3", "--goals", tmp_path / "goals.toml", "--out",
               tmp_path / "m.npz")  # in a subprocess
    assert fit.returncode == 0, fit.stderr
    assert main(["--quiet", "predict", str(tmp_path / "m.npz"), str(tmp_path / "train.svm"), "--out",
                 str(tmp_path / "p.csv"), "--proba"]) == 0
    clf = rateopt.load(tmp_path / "m.npz")
    with open(tmp_path / "p.csv") as f:
        rows = list(csv.DictReader(f))
    np.testing.assert_allclose([float(r["proba"]) for r in rows], clf.predict_proba(X)[:, 1], atol=1e-12)
    assert [r["prediction"] for r in rows] == np.where(_drawn(clf, X) == 1, "1", "-1").tolist()


def test_parquet_pipeline_matches_csv(work, tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    d, cols = work
    pq.write_table(pa.table({k: np.asarray(v) for k, v in cols.items()}), tmp_path / "train.parquet")
    assert main(["--quiet", "fit", str(tmp_path / "train.parquet"), "--label", "label", "--groups", "group",
                 "--goals", str(d / "goals.toml"), "--out", str(tmp_path / "m.npz")]) == 0
    pred = _run("predict", tmp_path / "m.npz", tmp_path / "train.parquet", "--out", tmp_path / "p.parquet",
                "--proba")  # in a subprocess
    assert pred.returncode == 0, pred.stderr
    got = pq.read_table(tmp_path / "p.parquet").to_pydict()
    ref = rateopt.load(d / "model.npz")  # trained on the same values from CSV
    enc = json.loads((d / "model.rateopt.json").read_text())["encoding"]
    np.testing.assert_allclose(got["proba"], ref.predict_proba(_encode(cols, enc))[:, 1], atol=1e-12)


def test_report_reselects_a_solution_without_retraining(work, tmp_path, capsys):
    d, _ = work
    assert main(["report", str(d / "model.result.npz"), "--out", str(tmp_path / "r.json"), "--solution", "best",
                 "--model-out", str(tmp_path / "best.npz")]) == 0
    rep = json.loads((tmp_path / "r.json").read_text())
    result = rateopt.load(d / "model.result.npz")
    t = int(np.flatnonzero(result.mixture("best"))[0])
    assert rep["solution"]["support"] == [{"iterate": t, "iteration": int(result.iterations[t]), "probability": 1.0}]
    obj, g = result.solution_values("best")
    assert rep["objective"]["train"] == pytest.approx(obj)
    assert [x["values"]["train"] for x in rep["goals"]] == pytest.approx(list(g))
    best = rateopt.load(tmp_path / "best.npz")
    np.testing.assert_array_equal(best.coef_, result.weights[t:t + 1])
    assert (tmp_path / "best.rateopt.json").is_file()


# --------------------------------------------------------------------------- bad input: one line, exit status 2


def _bad_cases(d):
    (d / "malformed.toml").write_text('[[goals]\nrecipe = "equal_opportunity"\n')
    (d / "unknown.toml").write_text('objective = "error"\n\n[[goals]]\nrecipe = "equal_oportunity"\ngroup = "group"\n')
    return {
        "missing column": (["fit", "train.csv", "--label", "outcome", "--goals", "goals.toml", "--out", "x.npz"],
                           "no column 'outcome'"),
        "malformed TOML": (["fit", "train.csv", "--label", "label", "--groups", "group", "--goals", "malformed.toml",
                            "--out", "x.npz"], "line 1"),
        "unknown goal": (["fit", "train.csv", "--label", "label", "--groups", "group", "--goals", "unknown.toml",
                          "--out", "x.npz"], "line 4: goals[0].recipe: unknown goal 'equal_oportunity'"),
        "three classes": (["fit", "train.csv", "--label", "color", "--groups", "group", "--goals", "goals.toml",
                           "--out", "x.npz"], "is a two-class goal, but the label column has 3 classes"),
        "missing model": (["predict", "nope.npz", "train.csv", "--out", "p.csv"], "no such model file"),
        "group not given": (["fit", "train.csv", "--label", "label", "--goals", "goals.toml", "--out", "x.npz"],
                            "add it to --groups"),
        "bad parameter": (["fit", "train.csv", "--label", "label", "--groups", "group", "--goals", "goals.toml",
                           "--out", "x.npz", "--n-iter", "0"], "n_iter must be >= 1"),
        "unknown option": (["fit", "--nope"], "the following arguments are required"),
    }


@pytest.mark.parametrize("case", ["missing column", "malformed TOML", "unknown goal", "three classes",
                                  "missing model", "group not given", "bad parameter", "unknown option"])
def test_bad_input_is_one_clear_line_and_exit_2(work, case, capsys, monkeypatch):
    d, _ = work
    monkeypatch.chdir(d)
    argv, needle = _bad_cases(d)[case]
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rateopt: error:"), err
    assert needle in lines[0]
    assert "Traceback" not in err


def test_damaged_encoding_file_and_other_version(work, tmp_path, capsys):
    d, _ = work
    for name in ("model.npz", "model.result.npz"):
        (tmp_path / name).write_bytes((d / name).read_bytes())
    meta = json.loads((d / "model.rateopt.json").read_text())
    meta["version"] = 7
    (tmp_path / "model.rateopt.json").write_text(json.dumps(meta))
    capsys.readouterr()
    assert main(["predict", str(tmp_path / "model.npz"), str(d / "train.csv"), "--out", str(tmp_path / "p.csv")]) == 2
    assert "encoding file version 7" in capsys.readouterr().err


# --------------------------------------------------------------------------- the other subcommands


def test_no_arguments_runs_the_demo(monkeypatch):
    from rateopt.cli import _commands

    calls = []
    monkeypatch.setitem(_commands.COMMANDS, "demo", lambda args: calls.append(args.command) or 0)
    assert main([]) == 0 and calls == [None]


def test_reproduce_names_the_available_scripts(capsys):
    assert main(["reproduce", "nonexistent"]) == 2
    err = capsys.readouterr().err
    from rateopt.cli._info import bench_dir

    if os.path.isdir(bench_dir()):  # an editable install: bench/ of the checkout beside the package
        assert "available: " in err and "'cotter'" in err
    else:  # an installed copy: no bench/ beside it
        assert "source checkout" in err


def test_datasets_lists_every_loader(capsys):
    assert main(["datasets"]) == 0
    out = capsys.readouterr().out
    for name in rateopt.datasets.__all__:
        if name.startswith("load_"):
            assert f"rateopt.datasets.{name}()" in out


# --------------------------------------------------------------------------- roles, weights, splits, progress


def test_weights_steering_role_and_report_splits(tmp_path, capsys):
    cols = _data(500, seed=5)
    rng = np.random.default_rng(9)
    cols["w"] = rng.integers(1, 4, 500).astype(float)
    _write_csv(tmp_path / "train.csv", cols)
    _write_csv(tmp_path / "valid.csv", {k: v[:200] for k, v in _data(500, seed=6).items()} | {"w": np.ones(200)})
    steer = {k: v[:60] for k, v in _data(500, seed=7).items()}
    steer.pop("group")
    _write_csv(tmp_path / "steer.csv", steer | {"w": np.ones(60), "group": np.array(["A"] * 60)})
    (tmp_path / "goals.toml").write_text(GOALS + '\n[[goals]]\nrecipe = "steering_accuracy"\nmin_accuracy = 0.5\n'
                                         '\n[datasets]\nsteering = "steer.csv"\nvalidation = "valid.csv"\n')
    assert main(["--quiet", "fit", str(tmp_path / "train.csv"), "--label", "label", "--groups", "group", "--weight",
                 "w", "--goals", str(tmp_path / "goals.toml"), "--out", str(tmp_path / "m.npz"), "--report",
                 str(tmp_path / "r.json")]) == 0
    rep = json.loads((tmp_path / "r.json").read_text())
    assert list(rep["objective"]) == ["train", "validation"]
    names = [g["name"] for g in rep["goals"]]
    assert any(n.startswith("accuracy[steering:") for n in names), names
    # The weight column weighs the rates: the report's table has the file's total weight.
    assert rep["group_rates"]["train"]["weight"][0] == pytest.approx(cols["w"].sum())
    # The steering goal's value is the model's accuracy on steer.csv, recomputed here.
    clf = rateopt.load(tmp_path / "m.npz")
    enc = json.loads((tmp_path / "m.rateopt.json").read_text())["encoding"]
    X_steer = []
    for c in enc["columns"]:
        v = steer[c["name"]] if c["name"] != "group" else np.array(["A"] * 60)
        if c["type"] == "numeric":
            X_steer.append(((np.asarray(v, float) - c["mean"]) / c["scale"])[:, None])
        else:
            X_steer.append(np.stack([(np.asarray(v) == k).astype(float) for k in c["categories"]], axis=1))
    p = clf.predict_proba(np.hstack(X_steer))[:, 1]
    acc = np.mean(np.where(steer["label"] == "yes", p, 1 - p))
    steer_goal = next(g for g in rep["goals"] if g["name"].startswith("accuracy[steering:"))
    assert steer_goal["values"]["train"] == pytest.approx(0.5 - acc, abs=1e-12)


def test_missing_numeric_value_and_missing_pyarrow_are_named(work, tmp_path, capsys, monkeypatch):
    d, cols = work
    text = (d / "train.csv").read_text().splitlines()
    parts = text[3].split(",")
    parts[0] = ""
    text[3] = ",".join(parts)
    (tmp_path / "gap.csv").write_text("\n".join(text) + "\n")
    capsys.readouterr()
    assert main(["fit", str(tmp_path / "gap.csv"), "--label", "label", "--groups", "group", "--goals",
                 str(d / "goals.toml"), "--out", str(tmp_path / "m.npz")]) == 2
    assert "numeric column 'x1' has a missing" in capsys.readouterr().err
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    assert main(["predict", str(d / "model.npz"), str(d / "train.csv"), "--out", str(tmp_path / "p.parquet")]) == 2
    assert 'pip install "rateopt[parquet]"' in capsys.readouterr().err


def test_progress_only_on_a_terminal(monkeypatch):
    import io

    from rateopt.cli._progress import _Silent, progress

    class Tty(io.StringIO):
        def isatty(self):
            return True

    assert isinstance(progress(10, "x", stream=io.StringIO()), _Silent)
    assert isinstance(progress(10, "x", quiet=True, stream=Tty()), _Silent)
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)  # tqdm is optional
    assert isinstance(progress(10, "x", stream=Tty()), _Silent)
    monkeypatch.delitem(sys.modules, "tqdm.auto")
    try:
        import tqdm.auto  # noqa: F401
    except ImportError:
        return
    bar = progress(10, "x", stream=Tty())
    assert not isinstance(bar, _Silent)
    bar.close()


def test_fit_sweep_adds_the_tradeoff_to_the_report(work, tmp_path):
    d, _ = work
    assert main(["--quiet", "fit", str(d / "train.csv"), "--label", "label", "--groups", "group", "--goals",
                 str(d / "goals.toml"), "--out", str(tmp_path / "m.npz"), "--sweep", "0.2,0.02", "--n-iter", "60",
                 "--report", str(tmp_path / "r.md")]) == 0
    rep = json.loads((tmp_path / "m.rateopt.json").read_text())["report"]
    sw = rep["context"]["sweep"]
    assert sw["values"] == [0.2, 0.02] and len(sw["objective"]) == 2
    # The sweep's points are those of rateopt.sweep on the same data and settings.
    from rateopt._compiler._toml import read_goals
    from rateopt.cli._data import load_table
    from rateopt.cli._encoding import ColumnRoles

    table = load_table(str(d / "train.csv"), "csv", ColumnRoles(label="label", groups=("group",)))
    spec = read_goals(d / "goals.toml")
    problem = rateopt.Problem(constraints=spec.goals, datasets={"train": table.dataset()})
    ref = rateopt.sweep(problem, spec.goals[0], [0.2, 0.02], n_iter=60, learning_rate=0.05, eta_lambda=0.5,
                        random_state=0)
    assert sw["objective"] == pytest.approx(ref.objective.tolist())
    assert sw["disparity"] == pytest.approx(ref.disparity.tolist())
    assert "Trade-off" in (tmp_path / "r.md").read_text()


@pytest.mark.parametrize("reader", ["pandas", "stdlib"])
def test_both_csv_readers_give_the_same_encoding_labels_and_groups(tmp_path, monkeypatch, reader):
    if reader == "pandas":
        pytest.importorskip("pandas")
    else:
        monkeypatch.setenv("RATEOPT_CSV_READER", "stdlib")
    from rateopt.cli._data import load_table
    from rateopt.cli._encoding import ColumnRoles

    (tmp_path / "d.csv").write_text("x,flag,code,grp,label\n1.5,true,a,1,1.0\n-2,False,b,2,0.0\n"
                                    "\n0.25,TRUE,a,1,1\n")
    t = load_table(str(tmp_path / "d.csv"), "csv", ColumnRoles(label="label", groups=("grp",)))
    assert t.classes == ["0", "1"] and t.y.tolist() == [1, 0, 1]
    assert t.groups["grp"].tolist() == ["1", "2", "1"]
    assert t.encoding.to_json()["columns"] == [
        {"name": "x", "type": "numeric", "mean": pytest.approx(-0.25 / 3), "scale": pytest.approx(np.std([1.5, -2, 0.25]))},
        {"name": "flag", "type": "categorical", "categories": ["False", "True"]},
        {"name": "code", "type": "categorical", "categories": ["a", "b"]},
        {"name": "grp", "type": "numeric", "mean": pytest.approx(4 / 3), "scale": pytest.approx(np.std([1, 2, 1]))},
    ]
    x = (np.array([1.5, -2, 0.25]) + 0.25 / 3) / np.std([1.5, -2, 0.25])
    g = (np.array([1, 2, 1]) - 4 / 3) / np.std([1, 2, 1])
    ref = np.column_stack([x, [0, 1, 0], [1, 0, 1], [1, 0, 1], [0, 1, 0], g])
    np.testing.assert_allclose(t.X.toarray(), ref)


# --------------------------------------------------------------------------- nothing half-written, nothing lost


def _listing(d):
    return sorted(os.listdir(d))


def test_predict_failure_leaves_no_partial_output_and_keeps_an_existing_file(work, tmp_path, capsys):
    d, _ = work
    # A missing --keep column: no p.csv at all (it used to hold the header).
    assert main(["predict", str(d / "model.npz"), str(d / "train.csv"), "--out", str(tmp_path / "p.csv"),
                 "--keep", "id"]) == 2
    assert "no column 'id'" in capsys.readouterr().err
    assert _listing(tmp_path) == []
    # An error in the second chunk (data row 151, chunks of 100 rows): no Parquet file with the first 100 rows.
    lines = (d / "train.csv").read_text().splitlines()[:201]
    fields = lines[151].split(",")
    fields[0] = "oops"
    lines[151] = ",".join(fields)
    (tmp_path / "bad.csv").write_text("\n".join(lines) + "\n")
    assert main(["predict", str(d / "model.npz"), str(tmp_path / "bad.csv"), "--out", str(tmp_path / "p.parquet"),
                 "--chunk-rows", "100"]) == 2
    assert "data row 151" in capsys.readouterr().err
    assert _listing(tmp_path) == ["bad.csv"]
    # An existing output survives a failed run byte for byte (it used to be cut down to its header) ...
    (tmp_path / "scores.csv").write_text("prediction\nyes\nno\n")
    assert main(["predict", str(d / "model.npz"), str(tmp_path / "bad.csv"), "--out", str(tmp_path / "scores.csv"),
                 "--chunk-rows", "100"]) == 2
    assert (tmp_path / "scores.csv").read_text() == "prediction\nyes\nno\n"
    assert _listing(tmp_path) == ["bad.csv", "scores.csv"]
    # ... and is replaced by a successful one.
    assert main(["predict", str(d / "model.npz"), str(d / "train.csv"), "--out", str(tmp_path / "scores.csv")]) == 0
    assert len((tmp_path / "scores.csv").read_text().splitlines()) == N + 1


def test_predict_of_an_empty_file_writes_a_valid_empty_parquet(work, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    d, _ = work
    (tmp_path / "empty.csv").write_text((d / "train.csv").read_text().splitlines()[0] + "\n")
    assert main(["predict", str(d / "model.npz"), str(tmp_path / "empty.csv"), "--out", str(tmp_path / "p.parquet"),
                 "--proba"]) == 0
    table = pq.read_table(tmp_path / "p.parquet")
    assert table.num_rows == 0 and table.column_names == ["prediction", "proba"]


def test_unwritable_outputs_are_refused_before_training(work, tmp_path, capsys, monkeypatch):
    from rateopt.cli import _fit

    d, _ = work

    def no_training(*a, **k):
        raise AssertionError("trained before checking the output paths")

    monkeypatch.setattr(_fit, "run_game", no_training)
    base = ["fit", str(d / "train.csv"), "--label", "label", "--groups", "group", "--goals", str(d / "goals.toml")]
    missing = tmp_path / "nowhere"
    for extra, needle in ((["--out", str(missing / "m.npz")],
                           f"--out {missing / 'm.npz'}: the directory {missing} does not exist"),
                          (["--out", str(tmp_path / "m.npz"), "--report", str(missing / "r.html")],
                           f"--report {missing / 'r.html'}: the directory {missing} does not exist"),
                          (["--out", str(tmp_path / "m.npz"), "--report", str(tmp_path / "r.txt")],
                           f"--report {tmp_path / 'r.txt'}: a report file ends with one of")):
        capsys.readouterr()
        assert main(base + extra) == 2
        err = capsys.readouterr().err
        assert err.startswith("rateopt: error: ") and err.count("\n") == 1 and needle in err, err
    assert main(["evaluate", str(d / "model.npz"), str(d / "train.csv"), "--json", str(missing / "e.json")]) == 2
    assert main(["report", str(d / "model.npz"), "--out", str(tmp_path / "r.md"), "--model-out",
                 str(missing / "m2.npz")]) == 2
    assert "--model-out" in capsys.readouterr().err
    assert _listing(tmp_path) == []


def test_a_failed_report_leaves_no_model_files(work, tmp_path, capsys, monkeypatch):
    from rateopt.cli import _fit, _report

    d, _ = work
    (tmp_path / "m.npz").write_bytes(b"an older model")

    def broken(rep, path):
        with open(path, "w") as f:
            f.write("<html>half")
        raise OSError("No space left on device")

    monkeypatch.setattr(_fit, "write_report", broken)
    monkeypatch.setattr(_report, "write_report", broken)
    assert main(["--quiet", "fit", str(d / "train.csv"), "--label", "label", "--groups", "group", "--goals",
                 str(d / "goals.toml"), "--out", str(tmp_path / "m.npz"), "--report", str(tmp_path / "r.html"),
                 "--n-iter", "20"]) == 2
    assert "No space left on device" in capsys.readouterr().err
    assert _listing(tmp_path) == ["m.npz"] and (tmp_path / "m.npz").read_bytes() == b"an older model"
    # report: the re-rendered report and the re-selected model appear together or not at all.
    assert main(["report", str(d / "model.npz"), "--out", str(tmp_path / "r.html"), "--model-out",
                 str(tmp_path / "m2.npz"), "--solution", "last"]) == 2
    assert _listing(tmp_path) == ["m.npz"]


# --------------------------------------------------------------------------- missing-value markers, byte-order mark


@pytest.mark.parametrize("reader", ["pandas", "stdlib"])
@pytest.mark.parametrize("marker", ["NaN", "NA", "null", "N/A", "?", " nan ", "#N/A", "None", "inf", "-inf", ""])
def test_missing_markers_in_a_numeric_column_are_refused_naming_column_and_row(work, tmp_path, capsys, monkeypatch,
                                                                              reader, marker):
    if reader == "stdlib":
        monkeypatch.setenv("RATEOPT_CSV_READER", "stdlib")
    d, cols = work
    x1 = [repr(float(v)) for v in cols["x1"]]
    x1[41] = marker
    _write_csv(tmp_path / "gap.csv", {**cols, "x1": x1})
    capsys.readouterr()
    assert main(["fit", str(tmp_path / "gap.csv"), "--label", "label", "--groups", "group", "--goals",
                 str(d / "goals.toml"), "--out", str(tmp_path / "m.npz")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "numeric column 'x1' has a missing or non-finite value" in err and "at data row 42;" in err, err
    assert "--drop x1" in err
    assert _listing(tmp_path) == ["gap.csv"]


@pytest.mark.parametrize("reader", ["pandas", "stdlib"])
def test_a_text_column_keeps_markers_as_categories_and_a_bom_is_dropped(work, tmp_path, monkeypatch, reader):
    if reader == "stdlib":
        monkeypatch.setenv("RATEOPT_CSV_READER", "stdlib")
    d, cols = work
    color = np.array(cols["color"], dtype=object)
    color[[3, 7]] = "NA"  # a text column: "NA" is one more category, as any other text
    cols = {**cols, "color": color}
    _write_csv(tmp_path / "plain.csv", cols)
    (tmp_path / "excel.csv").write_bytes(b"\xef\xbb\xbf" + (tmp_path / "plain.csv").read_bytes())  # "CSV UTF-8"
    assert main(["--quiet", "fit", str(tmp_path / "excel.csv"), "--label", "label", "--groups", "group", "--goals",
                 str(d / "goals.toml"), "--n-iter", "5", "--out", str(tmp_path / "m.npz")]) == 0
    enc = json.loads((tmp_path / "m.rateopt.json").read_text())["encoding"]
    assert [c["name"] for c in enc["columns"]] == ["x1", "x2", "color", "group"]  # "x1", not "\ufeffx1"
    assert next(c for c in enc["columns"] if c["name"] == "color")["categories"] == ["NA", "blue", "green", "red"]
    assert main(["predict", str(tmp_path / "m.npz"), str(tmp_path / "excel.csv"), "--out", str(tmp_path / "p.csv"),
                 "--keep", "x1"]) == 0
    with open(tmp_path / "p.csv") as f:
        assert next(csv.reader(f)) == ["x1", "prediction"]


def test_first_gap_against_a_loop():
    from rateopt.cli._encoding import MISSING_MARKERS, first_gap

    def reference(values):
        def kind(v):
            s = str(v).strip()
            if s.lower() in MISSING_MARKERS:
                return "gap"
            try:
                return "number" if np.isfinite(float(s)) else "gap"
            except ValueError:
                return "text"
        kinds = [kind(v) for v in values]
        if "text" in kinds or "number" not in kinds or "gap" not in kinds:
            return None
        return kinds.index("gap")

    rng = np.random.default_rng(3)
    pool = ["1", "2.5", "-3e2", "NaN", "NA", "?", "", "inf", "red", "null", " 4 "]
    for _ in range(300):
        values = np.array(rng.choice(pool, size=rng.integers(1, 6)), dtype=object)
        assert first_gap(values) == reference(values), values
    assert first_gap(np.array([1.0, np.inf, np.nan])) == 1 and first_gap(np.array([1, 2])) is None


# --------------------------------------------------------------------------- the command line's own behaviour


def test_evaluate_on_a_batch_missing_a_group_reports_the_goal_not_evaluable(work, tmp_path, capsys):
    d, cols = work
    keep = np.asarray(cols["group"]) == "A"
    part = {k: np.asarray(v)[keep] for k, v in cols.items()}
    _write_csv(tmp_path / "only_a.csv", part)
    (tmp_path / "two.toml").write_text(GOALS + '\n[[goals]]\nrecipe = "coverage_budget"\nmax_rate = 0.3\n')
    capsys.readouterr()
    assert main(["evaluate", str(d / "model.npz"), str(tmp_path / "only_a.csv"), "--goals", str(tmp_path / "two.toml"),
                 "--json", str(tmp_path / "e.json"), "--tolerance", "1"]) == 0
    out, err = capsys.readouterr()
    line = next(s for s in out.splitlines() if s.startswith("goals[0]"))
    assert line.split()[:3] == ["goals[0]", "(equal_opportunity)", "-"]
    assert line.endswith("NOT EVALUABLE: no rows of group group = 'B' (present in the training data)")
    assert err.splitlines() == ["rateopt: warning: goals[0] (equal_opportunity) is not evaluable on "
                                f"{tmp_path / 'only_a.csv'}: no rows of group group = 'B' (present in the "
                                "training data)"]
    assert "1 goal(s) not evaluable" in out
    payload = json.loads((tmp_path / "e.json").read_text())
    assert payload["not_evaluable"] == [{"goal": 0, "recipe": "equal_opportunity", "reason": "no rows of group "
                                         "group = 'B' (present in the training data)"}]
    # The other goal is evaluated as usual: the expected positive rate on the batch, less 0.3.
    clf = rateopt.load(d / "model.npz")
    enc = json.loads((d / "model.rateopt.json").read_text())["encoding"]
    X = _encode(cols, enc)[keep]
    (name, value), = payload["constraints"].items()
    assert value == pytest.approx(clf.predict_proba(X)[:, 1].mean() - 0.3, abs=1e-12)


@pytest.mark.parametrize("kind", ["text", "integer"])
def test_a_row_id_column_is_warned_about(work, tmp_path, capsys, kind):
    d, cols = work
    ids = np.random.default_rng(5).permutation(N) + 1000
    cols = {"id": [f"r{v}" for v in ids] if kind == "text" else ids, **cols}
    _write_csv(tmp_path / "ids.csv", cols)
    args = ["--quiet", "fit", str(tmp_path / "ids.csv"), "--label", "label", "--groups", "group", "--goals",
            str(d / "goals.toml"), "--n-iter", "5", "--out", str(tmp_path / "m.npz")]
    capsys.readouterr()
    assert main(args) == 0
    warned = [s for s in capsys.readouterr().err.splitlines() if "row id" in s]
    assert warned == [f"rateopt: warning: column 'id' has a different value in each of the {N} rows: it looks like "
                      "a row id, which a model can only memorize; leave it out with --drop id"]
    assert main(args + ["--drop", "id"]) == 0
    assert "row id" not in capsys.readouterr().err
    # Not a row id: one value repeated (and x1, x2, real numbers all distinct, were never warned about).
    repeated = list(cols["id"])
    repeated[1] = repeated[0]
    cols["id"] = repeated
    _write_csv(tmp_path / "ids.csv", cols)
    assert main(args) == 0
    assert "row id" not in capsys.readouterr().err


def test_version_and_global_flags_after_the_command(work, tmp_path, capsys):
    d, _ = work
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"rateopt {rateopt.__version__}\n"
    from rateopt.cli import build_parser

    p = build_parser()
    fit = ["fit", "d.csv", "--goals", "g.toml", "--out", "m.npz"]
    assert p.parse_args(fit + ["--quiet"]).quiet is True
    assert p.parse_args(["--quiet"] + fit).quiet is True
    assert p.parse_args(fit).quiet is False
    for command in (["evaluate", "m.npz", "d.csv"], ["predict", "m.npz", "d.csv", "--out", "p.csv"],
                    ["report", "r.npz", "--out", "r.md"], ["datasets"], ["selfcheck"], ["demo"]):
        assert p.parse_args(command + ["--quiet"]).quiet is True
    assert main(["predict", str(d / "model.npz"), str(d / "train.csv"), "--out", str(tmp_path / "p.csv"),
                 "--quiet"]) == 0


def test_docs_list_every_goal_with_its_parameters():
    """docs/cli.md's goal table against the recipes' fields: names, which are required, and the defaults."""
    import dataclasses
    import pathlib
    import re

    from rateopt._compiler._toml import RECIPES

    text = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text()
    rows = {}
    for line in text.splitlines():
        m = re.fullmatch(r"\| (`[a-z_]+`(?:, `[a-z_]+`)*) \| (.*) \|", line)
        if m:
            for name in re.findall(r"`([a-z_]+)`", m.group(1)):
                rows[name] = m.group(2).split("; ")
    assert sorted(rows) == sorted(RECIPES)

    def toml(v):
        return ("true" if v else "false") if isinstance(v, bool) else f'"{v}"' if isinstance(v, str) else repr(v)

    for name, cls in RECIPES.items():
        expected = []
        for f in dataclasses.fields(cls):
            if f.name in ("dataset", "name"):
                continue
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                expected.append(f"**`{f.name}`**")
            elif f.default is None:
                expected.append(f"`{f.name}`")
            else:
                expected.append(f"`{f.name} = {toml(f.default)}`")
        assert rows[name] == expected, name


def _encode_held_out(cols, train, enc_json):
    """Reference encoding of held-out rows with the training file's statistics (as the model's encoding does)."""
    blocks = []
    for c in enc_json["columns"]:
        if c["type"] == "numeric":
            t = np.asarray(train[c["name"]], float)
            blocks.append(((np.asarray(cols[c["name"]], float) - t.mean()) / t.std())[:, None])
        else:
            blocks.append(np.stack([(np.asarray(cols[c["name"]]) == cat).astype(float) for cat in c["categories"]], 1))
    return np.hstack(blocks)


def test_evaluate_certify_bounds_match_clopper_pearson_by_hand(work, tmp_path, capsys):
    from scipy.stats import beta

    d, _ = work
    held = _data(3000, seed=7)
    _write_csv(tmp_path / "held.csv", held)
    status = main(["evaluate", str(d / "model.npz"), str(tmp_path / "held.csv"), "--certify", "0.9",
                   "--json", str(tmp_path / "ev.json")])
    out = capsys.readouterr().out
    ev = json.loads((tmp_path / "ev.json").read_text())
    cert = ev["certificate"]
    assert cert["confidence"] == 0.9 and "certified upper bounds at confidence 0.9" in out
    # by hand: the model's drawn decisions, one exact interval per rate, alpha shared by the K distinct rates
    clf = rateopt.load(d / "model.npz")
    enc = json.loads((d / "model.rateopt.json").read_text())["encoding"]
    dec = _drawn(clf, _encode_held_out(held, _data(), enc)).astype(float)
    y = held["label"] == "yes"
    K = 4  # tpr[group=A], tpr[group=B], tpr[all], and the objective's error[all]
    a = 0.1 / K

    def interval(m):
        k, n = int(dec[m].sum()), int(m.sum())
        return (beta.ppf(a / 2, k, n - k + 1) if k > 0 else 0.0, beta.ppf(1 - a / 2, k + 1, n - k) if k < n else 1.0)

    lo_all, hi_all = interval(y)
    for g in ("A", "B"):
        lo_g, _ = interval(y & (held["group"] == g))
        name = f"tpr[group={g}] >= tpr[all] - 0.05"
        upper = {b["name"]: b["upper"] for b in cert["goals"]}[name]
        assert upper == pytest.approx(hi_all - 0.05 - lo_g, abs=1e-9)
        certified = {b["name"]: b["certified"] for b in cert["goals"]}[name]
        assert certified == (upper <= 0)
    assert status == (0 if cert["certified"] and ev["passed"] else 1)


def test_fit_postprocess_fits_the_threshold_rule_on_a_score_column(tmp_path, capsys):
    cols = _data(800, seed=11)
    rng = np.random.default_rng(5)
    cols["score"] = cols["x1"] * 0.9 + rng.normal(size=800) * 0.3
    _write_csv(tmp_path / "s.csv", cols)
    (tmp_path / "g.toml").write_text('objective = "error"\n\n[[goals]]\nrecipe = "demographic_parity"\n'
                                     'group = "group"\nslack = 0.02\n')
    assert main(["--quiet", "fit", str(tmp_path / "s.csv"), "--label", "label", "--groups", "group", "--goals",
                 str(tmp_path / "g.toml"), "--out", str(tmp_path / "rule.npz"), "--postprocess", "score"]) == 0
    capsys.readouterr()
    # the same rule, fitted with the library on the raw scores (a threshold rule is invariant to the
    # encoding's standardization): its probabilities are the predictions written by the command line
    y = (cols["label"] == "yes").astype(int)
    ref = rateopt.ThresholdClassifier(goals=[rateopt.goals.demographic_parity("group", slack=0.02)])
    ref.fit(cols["score"], y, groups={"group": cols["group"]})
    assert main(["--quiet", "predict", str(tmp_path / "rule.npz"), str(tmp_path / "s.csv"), "--out",
                 str(tmp_path / "p.csv"), "--proba"]) == 0
    with open(tmp_path / "p.csv") as f:
        got = np.array([float(r["proba"]) for r in csv.DictReader(f)])
    np.testing.assert_allclose(got, ref.predict_proba(cols["score"], groups={"group": cols["group"]})[:, 1],
                               atol=1e-9)
    # parity holds for the expected decisions, counted here
    for g in ("A", "B"):
        assert abs(got[cols["group"] == g].mean() - got.mean()) <= 0.02 + 1e-9
    # evaluate reads the score column and the groups of the batch
    assert main(["evaluate", str(tmp_path / "rule.npz"), str(tmp_path / "s.csv"), "--json",
                 str(tmp_path / "ev.json"), "--tolerance", "1e-9"]) == 0  # the goal is tight: round-off only
    ev = json.loads((tmp_path / "ev.json").read_text())
    assert ev["objective"] == pytest.approx(float(np.mean(np.where(y == 1, 1 - got, got))), abs=1e-9)
    # a score column that is not numeric, and a report, are refused in one line
    capsys.readouterr()
    assert main(["fit", str(tmp_path / "s.csv"), "--label", "label", "--groups", "group", "--goals",
                 str(tmp_path / "g.toml"), "--out", str(tmp_path / "r2.npz"), "--postprocess", "color"]) == 2
    err = capsys.readouterr().err
    assert "--postprocess color" in err and len(err.strip().splitlines()) == 1
    assert main(["fit", str(tmp_path / "s.csv"), "--label", "label", "--groups", "group", "--goals",
                 str(tmp_path / "g.toml"), "--out", str(tmp_path / "r3.npz"), "--postprocess", "score",
                 "--report", str(tmp_path / "r.html")]) == 2
    assert not (tmp_path / "r2.npz").exists() and not (tmp_path / "r3.npz").exists()


def test_fit_certify_reports_bounds_on_the_held_out_splits(tmp_path, capsys):
    from scipy.stats import beta

    _write_csv(tmp_path / "train.csv", _data(600, seed=21))
    held = _data(2500, seed=22)
    _write_csv(tmp_path / "test.csv", held)
    (tmp_path / "g.toml").write_text('objective = "error"\n\n[train]\nn_iter = 60\n\n[[goals]]\n'
                                     'recipe = "coverage_budget"\nmax_rate = 0.6\n\n[datasets]\ntest = "test.csv"\n')
    assert main(["--quiet", "fit", str(tmp_path / "train.csv"), "--label", "label", "--groups", "group", "--goals",
                 str(tmp_path / "g.toml"), "--out", str(tmp_path / "m.npz"), "--certify", "0.9", "--report",
                 str(tmp_path / "r.json")]) == 0
    out = capsys.readouterr().out
    assert "certified upper bounds (test held out, confidence 0.9)" in out
    rep = json.loads((tmp_path / "r.json").read_text())
    cert = rep["certificates"]["test"]
    # by hand: the saved model's drawn decisions on the test file; two rates share alpha (ppr[all], error[all])
    enc = json.loads((tmp_path / "m.rateopt.json").read_text())["encoding"]
    d = _drawn(rateopt.load(tmp_path / "m.npz"), _encode_held_out(held, _data(600, seed=21), enc))
    k, n, a = int(d.sum()), d.size, 0.1 / 2
    assert cert["goals"][0]["upper"] == pytest.approx(beta.ppf(1 - a / 2, k + 1, n - k) - 0.6, abs=1e-9)
    assert cert["goals"][0]["value"] == pytest.approx(d.mean() - 0.6, abs=1e-12)
    md = rateopt.report.render_markdown(rep)
    assert "Certified bounds on the population (test data held out, drawn decisions, confidence 0.9" in md


def test_fit_postprocess_a_saved_model_thresholds_its_scores(work, tmp_path, capsys):
    d, cols = work
    (tmp_path / "best.toml").write_text(GOALS.replace("[train]\n", '[train]\nsolution = "best"\n'))
    assert main(["--quiet", "fit", str(d / "train.csv"), "--label", "label", "--groups", "group", "--goals",
                 str(tmp_path / "best.toml"), "--out", str(tmp_path / "base.npz"), "--n-iter", "60"]) == 0
    (tmp_path / "dp.toml").write_text('objective = "error"\n\n[[goals]]\nrecipe = "demographic_parity"\n'
                                      'group = "group"\nslack = 0.01\n')
    assert main(["--quiet", "fit", str(d / "train.csv"), "--label", "label", "--groups", "group", "--goals",
                 str(tmp_path / "dp.toml"), "--out", str(tmp_path / "rule.npz"), "--postprocess",
                 str(tmp_path / "base.npz")]) == 0
    assert main(["--quiet", "predict", str(tmp_path / "rule.npz"), str(d / "train.csv"), "--out",
                 str(tmp_path / "p.csv"), "--proba"]) == 0
    with open(tmp_path / "p.csv") as f:
        got = np.array([float(r["proba"]) for r in csv.DictReader(f)])
    # by hand: the base model's scores of the encoded rows, and the library's rule on them
    base = rateopt.load(tmp_path / "base.npz")
    enc = json.loads((tmp_path / "base.rateopt.json").read_text())["encoding"]
    s = base.decision_function(_encode(cols, enc))
    y = (cols["label"] == "yes").astype(int)
    ref = rateopt.ThresholdClassifier(goals=[rateopt.goals.demographic_parity("group", slack=0.01)])
    ref.fit(s, y, groups={"group": cols["group"]})
    np.testing.assert_allclose(got, ref.predict_proba(s, groups={"group": cols["group"]})[:, 1], atol=1e-9)
    for g in ("A", "B"):
        assert abs(got[cols["group"] == g].mean() - got.mean()) <= 0.01 + 1e-9


def test_fit_with_the_thresholded_solution_writes_a_model_that_loads(work, tmp_path, capsys):
    d, cols = work
    (tmp_path / "t.toml").write_text(GOALS.replace("[train]\n", '[train]\nsolution = "thresholded"\n'))
    assert main(["--quiet", "fit", str(d / "train.csv"), "--label", "label", "--groups", "group", "--goals",
                 str(tmp_path / "t.toml"), "--out", str(tmp_path / "t.npz"), "--n-iter", "60", "--report",
                 str(tmp_path / "r.json")]) == 0
    clf = rateopt.load(tmp_path / "t.npz")
    assert type(clf).__name__ == "ThresholdedMixture"
    enc = json.loads((tmp_path / "t.rateopt.json").read_text())["encoding"]
    X = _encode(cols, enc)
    p = clf.predict_proba(X)[:, 1]
    # the training goal holds for the expected decisions, counted here (TPR(g) >= TPR(all) - 0.05)
    y = cols["label"] == "yes"
    for g in ("A", "B"):
        assert p[y & (cols["group"] == g)].mean() >= p[y].mean() - 0.05 - 1e-9
    rep = json.loads((tmp_path / "r.json").read_text())
    support = {s["iterate"]: s["probability"] for s in rep["solution"]["support"]}
    assert support == pytest.approx(dict(zip(clf.support.tolist(), clf.mu.tolist())))
    assert main(["--quiet", "predict", str(tmp_path / "t.npz"), str(d / "train.csv"), "--out",
                 str(tmp_path / "p.csv"), "--proba"]) == 0
    with open(tmp_path / "p.csv") as f:
        np.testing.assert_allclose([float(r["proba"]) for r in csv.DictReader(f)], p, atol=1e-12)
    capsys.readouterr()
    assert main(["report", str(tmp_path / "t.npz"), "--out", str(tmp_path / "r2.md"), "--epsilon", "0.01"]) == 2
    assert "re-fitted on the training data" in capsys.readouterr().err


# --------------------------------------------------------------------------- one path for two and three classes

K_GOALS = """objective = "error"

[train]
n_iter = 200
learning_rate = 0.1

[[goals]]
recipe = "multiclass_demographic_parity"
group = "group"
slack = 0.05
"""


def _data_k(n=N, seed=0):
    """Three classes (sorted: high, low, mid) with a group that shifts the features."""
    rng = np.random.default_rng(seed)
    g = np.where(rng.random(n) < 0.4, "A", "B")
    Z = rng.normal(size=(n, 3)) + (g == "A")[:, None] * 0.6
    y = np.digitize(Z[:, 0] + rng.normal(scale=0.7, size=n), [-0.3, 1.0])
    return {"x1": Z[:, 0], "x2": Z[:, 1], "x3": Z[:, 2], "group": g, "label": np.array(["low", "mid", "high"])[y]}


def _fit_run(K, tmp_path_factory):
    """A model fitted by ``rateopt fit`` on ``K`` (2 or 3) classes: ``(dir, columns, classes)``."""
    d = tmp_path_factory.mktemp(f"k{K}")
    cols = _data() if K == 2 else _data_k()
    _write_csv(d / "train.csv", cols)
    (d / "goals.toml").write_text(GOALS if K == 2 else K_GOALS)
    assert main(["--quiet", "fit", str(d / "train.csv"), "--label", "label", "--groups", "group", "--goals",
                 str(d / "goals.toml"), "--out", str(d / "m.npz"), "--report", str(d / "r.json")]) == 0
    return d, cols, sorted(set(cols["label"].tolist()))


@pytest.fixture(scope="module", params=[2, 3], ids=["two-classes", "three-classes"])
def arity(request, tmp_path_factory):
    """The same run on two and on three classes."""
    return _fit_run(request.param, tmp_path_factory)


@pytest.fixture(scope="module")
def three(tmp_path_factory):
    """A three-class run, for what only K classes have (their goals, their refusals)."""
    return _fit_run(3, tmp_path_factory)


def _class_proba(d, cols, classes):
    """The saved model's decision distribution (n, K) on the training rows, the features encoded here."""
    clf = rateopt.load(d / "m.npz")
    enc = json.loads((d / "m.rateopt.json").read_text())["encoding"]
    return clf.predict_proba(_encode(cols, enc))


def _brute_group_table(P, y, g, classes):
    """The per-group table counted with pandas: (group, value) -> {column: value}, columns as rateopt names them."""
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"g": g, "y": y, **{f"p{k}": P[:, k] for k in range(len(classes))}})
    out = {}
    for key, part in [(("all", "all"), frame)] + [(("group", v), part) for v, part in frame.groupby("g")]:
        row = {"count": len(part)}
        for k, c in enumerate(classes):
            row[f"proportion[{c}]"] = part[f"p{k}"].mean()
            of_c = part[part["y"] == c]
            row[f"recall[{c}]"] = of_c[f"p{k}"].mean() if len(of_c) else np.nan
        row["error"] = 1 - np.mean([P_row for P_row in
                                    part[[f"p{k}" for k in range(len(classes))]].to_numpy()[
                                        np.arange(len(part)), [classes.index(v) for v in part["y"]]]])
        if len(classes) == 2:  # the two-class names of the same counts
            row.update(positive_rate=row[f"proportion[{classes[1]}]"], tpr=row[f"recall[{classes[1]}]"],
                       fpr=1 - row[f"recall[{classes[0]}]"])
        out[key] = row
    return out


def _assert_table(table, ref, columns):
    keys = list(zip(table["group"], table["value"]))
    assert keys == list(ref)
    for i, key in enumerate(keys):
        for c in columns:
            want, got = ref[key][c], table[c][i]
            if want != want:
                assert got is None or got != got, (key, c)
            else:
                assert got == pytest.approx(want, abs=1e-12), (key, c)


def _shown(classes):
    if len(classes) == 2:
        return ["count", "positive_rate", "tpr", "fpr", "error"]
    return ["count"] + [f"proportion[{c}]" for c in classes] + [f"recall[{c}]" for c in classes] + ["error"]


def test_fit_report_counts_match_brute_force(arity):
    d, cols, classes = arity
    rep = json.loads((d / "r.json").read_text())
    meta = json.loads((d / "m.rateopt.json").read_text())
    assert meta["classes"] == classes and meta["n_classes"] == len(classes) and rep["classes"] == classes
    P = _class_proba(d, cols, classes)
    y = cols["label"]
    err = 1.0 - np.mean(P[np.arange(N), [classes.index(v) for v in y]])
    assert rep["objective"]["train"] == pytest.approx(err, abs=1e-12)
    _assert_table(rep["group_rates"]["train"], _brute_group_table(P, y, cols["group"], classes), _shown(classes))
    assert rep["solution"]["support"] and sum(s["probability"] for s in rep["solution"]["support"]) == \
        pytest.approx(1.0)
    if len(classes) == 3:  # the goal, counted here: every class's rate within 0.05 of the overall rate per group
        for k in range(3):
            for v in ("A", "B"):
                assert abs(P[cols["group"] == v, k].mean() - P[:, k].mean()) <= 0.05 + 1e-9


@pytest.mark.parametrize("decisions", ["expected", "drawn"])
def test_evaluate_values_and_group_table_match_brute_force(arity, tmp_path, capsys, decisions):
    d, cols, classes = arity
    capsys.readouterr()
    assert main(["evaluate", str(d / "m.npz"), str(d / "train.csv"), "--json", str(tmp_path / "e.json"),
                 "--decisions", decisions, "--tolerance", "1"]) == 0
    out = capsys.readouterr().out
    ev = json.loads((tmp_path / "e.json").read_text())
    if decisions == "expected":
        P = _class_proba(d, cols, classes)
    else:  # the decisions `rateopt predict` draws for the same rows (keyed on the row numbers)
        assert main(["--quiet", "predict", str(d / "m.npz"), str(d / "train.csv"), "--out",
                     str(tmp_path / "p.csv")]) == 0
        with open(tmp_path / "p.csv") as f:
            drawn = [r["prediction"] for r in csv.DictReader(f)]
        P = np.eye(len(classes))[[classes.index(v) for v in drawn]]
    y = cols["label"]
    assert ev["objective"] == pytest.approx(1.0 - np.mean(P[np.arange(N), [classes.index(v) for v in y]]), abs=1e-12)
    ref = _brute_group_table(P, y, cols["group"], classes)
    _assert_table(ev["group_rates"], ref, _shown(classes))
    assert ev["classes"] == classes
    if len(classes) == 3:  # parity values, counted: ppr(c)[g] - ppr(c)[all] - 0.05 and its mirror
        for k, c in enumerate(classes):
            for v in ("A", "B"):
                gap = P[cols["group"] == v, k].mean() - P[:, k].mean()
                assert ev["constraints"][f"ppr('{c}')[group={v}] <= ppr('{c}')[all] + 0.05"] == \
                    pytest.approx(gap - 0.05, abs=1e-12)
        assert "per-group predicted class proportions" in out and "recall[mid]" in out
    else:
        yes = y == "yes"
        for v in ("A", "B"):
            tpr = P[yes & (cols["group"] == v), 1].mean()
            assert ev["constraints"][f"tpr[group={v}] >= tpr[all] - 0.05"] == \
                pytest.approx(P[yes, 1].mean() - 0.05 - tpr, abs=1e-12)
        assert "per-group rates" in out


def test_predict_chunking_does_not_change_decisions(arity, tmp_path):
    d, cols, classes = arity
    for rows in (7, 100000):
        assert main(["--quiet", "predict", str(d / "m.npz"), str(d / "train.csv"), "--out",
                     str(tmp_path / f"p{rows}.csv"), "--proba", "--chunk-rows", str(rows), "--keep", "group"]) == 0
    assert (tmp_path / "p7.csv").read_text() == (tmp_path / "p100000.csv").read_text()
    with open(tmp_path / "p7.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == N and {r["prediction"] for r in rows} <= set(classes)
    P = _class_proba(d, cols, classes)
    if len(classes) == 2:
        assert list(rows[0]) == ["group", "prediction", "proba"]
        np.testing.assert_allclose([float(r["proba"]) for r in rows], P[:, 1], atol=1e-12)
    else:
        assert list(rows[0]) == ["group", "prediction"] + [f"proba_{c}" for c in classes]
        np.testing.assert_allclose([[float(r[f"proba_{c}"]) for c in classes] for r in rows], P, atol=1e-12)
    for r, p in zip(rows, P):  # a drawn class has positive probability
        assert p[classes.index(r["prediction"])] > 0


def test_predict_keys_draws_on_an_id_column(arity, tmp_path):
    """With --id-column, a row's decision follows its id: a shuffled copy of the file gives each id the same class."""
    d, cols, classes = arity
    ids = np.array([f"r{i}" for i in range(N)])
    order = np.random.default_rng(1).permutation(N)
    _write_csv(tmp_path / "a.csv", {"id": ids, **cols})
    _write_csv(tmp_path / "b.csv", {"id": ids[order], **{k: v[order] for k, v in cols.items()}})
    for name, chunk in (("a", "13"), ("b", "100000")):
        assert main(["--quiet", "predict", str(d / "m.npz"), str(tmp_path / f"{name}.csv"), "--out",
                     str(tmp_path / f"p{name}.csv"), "--id-column", "id", "--keep", "id", "--chunk-rows", chunk]) == 0
    got = {}
    for name in ("a", "b"):
        with open(tmp_path / f"p{name}.csv") as f:
            got[name] = {r["id"]: r["prediction"] for r in csv.DictReader(f)}
    assert got["a"] == got["b"] and len(got["a"]) == N


def test_reports_in_each_format(arity, tmp_path):
    d, _, classes = arity
    rep = json.loads((d / "r.json").read_text())
    for fmt in ("markdown", "html"):
        text = rateopt.report.render(rep, fmt)
        assert "Per-group rates (train)" in text
        for c in _shown(classes)[:-1]:
            assert c in text
        for g in rep["goals"]:
            assert (html.escape(g["name"]) if fmt == "html" else g["name"]) in text


def test_two_class_goal_in_a_k_class_run(three, tmp_path, capsys):
    d, _, _ = three
    (tmp_path / "g.toml").write_text('[[goals]]\nrecipe = "demographic_parity"\ngroup = "group"\nslack = 0.05\n')
    rc = main(["fit", str(d / "train.csv"), "--label", "label", "--groups", "group", "--goals",
               str(tmp_path / "g.toml"), "--out", str(tmp_path / "m.npz"), "--quiet"])
    assert rc == 2
    err = capsys.readouterr().err
    assert "two-class goal" in err and "3 classes" in err
    assert not (tmp_path / "m.npz").exists()


def test_k_class_goal_in_a_two_class_run(tmp_path, capsys):
    cols = _data_k()
    two = dict(cols, label=np.where(cols["label"] == "high", "yes", "no"))
    _write_csv(tmp_path / "two.csv", two)
    (tmp_path / "k.toml").write_text(K_GOALS)
    rc = main(["fit", str(tmp_path / "two.csv"), "--label", "label", "--groups", "group", "--goals",
               str(tmp_path / "k.toml"), "--out", str(tmp_path / "m.npz"), "--quiet"])
    assert rc == 2
    assert "K-class goal" in capsys.readouterr().err
    (tmp_path / "o.toml").write_text('objective = "macro_f1"\n')
    rc = main(["fit", str(tmp_path / "two.csv"), "--label", "label", "--goals", str(tmp_path / "o.toml"),
               "--out", str(tmp_path / "m.npz"), "--quiet"])
    assert rc == 2
    assert "K-class objective" in capsys.readouterr().err


@pytest.mark.parametrize("flags, text", [(["--sweep", "0.1,0.2"], "--sweep"), (["--certify", "0.9"], "--certify"),
                                         (["--compare-unconstrained"], "--compare-unconstrained"),
                                         (["--postprocess", "x1"], "--postprocess")])
def test_unsupported_k_class_options_are_refused(three, tmp_path, capsys, flags, text):
    d, _, _ = three
    argv = ["fit", str(d / "train.csv"), "--label", "label", "--groups", "group", "--goals", str(d / "goals.toml"),
            "--out", str(tmp_path / "m.npz"), "--quiet"] + flags
    assert main(argv) == 2
    assert text in capsys.readouterr().err


def test_k_class_minibatches_and_margin_train(three, tmp_path):
    """--batch-size and --margin reach K-class training as they reach two-class training."""
    d, _, _ = three
    results = []
    for flags in ([], ["--batch-size", "50"], ["--margin", "2"]):
        out = tmp_path / f"m{len(results)}.npz"
        argv = ["fit", str(d / "train.csv"), "--label", "label", "--groups", "group", "--goals",
                str(d / "goals.toml"), "--out", str(out), "--quiet", "--n-iter", "20", "--proxy", "hinge"] + flags
        assert main(argv) == 0
        results.append(rateopt.load(tmp_path / f"m{len(results)}.result.npz"))
    full, mini, wide = results
    assert full.classes is not None and mini.settings["batch_size"] == 50 and wide.settings["margin"] == 2.0
    assert not np.array_equal(full.weights, mini.weights) and not np.array_equal(full.weights, wide.weights)
    assert not (tmp_path / "m.npz").exists()


class _RecordingModel:
    """A saved model wrapped to record the row keys its draws receive (the row_key= of contract 4)."""

    def __init__(self, clf):
        self.clf, self.keys = clf, []
        self.classes_ = getattr(clf, "classes_", np.array([0, 1]))

    def predict_proba(self, X):
        return self.clf.predict_proba(X)

    def predict(self, X, random_state=0, row_key=None):
        self.keys.append(np.asarray(row_key))
        return predict_keyed(self.clf.predict, X, row_key, random_state=random_state)


@pytest.mark.parametrize("command", ["predict", "evaluate-drawn", "evaluate-certify"])
def test_draws_are_keyed_on_the_row_number_or_the_id_column(arity, tmp_path, monkeypatch, command):
    from rateopt.cli import _bundle, _evaluate, _predict

    d, cols, _ = arity
    ids = np.array([f"id{i}" for i in range(N)])
    _write_csv(tmp_path / "ids.csv", {"rid": ids, **cols})
    seen = []

    def bundle(path):
        clf, meta, enc, roles = _bundle.read_bundle(path)
        seen.append(_RecordingModel(clf))
        return seen[-1], meta, enc, roles

    monkeypatch.setattr(_predict, "read_bundle", bundle)
    monkeypatch.setattr(_evaluate, "read_bundle", bundle)
    for data, extra, want in ((d / "train.csv", [], np.arange(N)), (tmp_path / "ids.csv", ["--id-column", "rid"], ids)):
        if command == "predict":
            argv = ["predict", str(d / "m.npz"), str(data), "--out", str(tmp_path / "p.csv"), "--chunk-rows", "7"]
        else:
            argv = ["evaluate", str(d / "m.npz"), str(data), "--tolerance", "1"] + (
                ["--decisions", "drawn"] if command == "evaluate-drawn" else ["--certify", "0.9"])
        status = main(["--quiet"] + argv + extra)
        if command == "evaluate-certify" and len(arity[2]) == 3:
            assert status == 2  # K-class certificates are not supported yet
            return
        assert status in (0, 1)
        keys = seen[-1].keys
        assert keys, "the model was never asked to draw"
        if command == "predict":  # the chunks' keys are the rows' global keys, in file order
            assert len(keys) == -(-N // 7) and np.concatenate(keys).tolist() == want.tolist()
        else:  # every draw of the run sees every row's key, in file order
            assert all(k.tolist() == want.tolist() for k in keys)


def test_seed_makes_a_kernel_fit_reproducible(arity, tmp_path):
    """--seed is the run's seed and the kernel model's landmark seed: the same seed gives the same model."""
    d, cols, classes = arity
    P = {}
    for name, seed in (("a", "5"), ("b", "5"), ("c", "6")):
        assert main(["--quiet", "fit", str(d / "train.csv"), "--label", "label", "--groups", "group", "--goals",
                     str(d / "goals.toml"), "--out", str(tmp_path / f"{name}.npz"), "--model", "kernel",
                     "--n-components", "15", "--n-iter", "30", "--seed", seed]) == 0
        enc = json.loads((tmp_path / f"{name}.rateopt.json").read_text())["encoding"]
        P[name] = rateopt.load(tmp_path / f"{name}.npz").predict_proba(_encode(cols, enc))
    np.testing.assert_array_equal(P["a"], P["b"])
    assert not np.allclose(P["a"], P["c"])  # other landmarks: another model


def test_fit_boosting_from_the_goals_file_and_predict(work, tmp_path, capsys):
    pytest.importorskip("lightgbm")
    d, cols = work
    (tmp_path / "b.toml").write_text('objective = "error"\n\n[train]\nmodel = "boosting"\nn_iter = 40\n'
                                     'learning_rate = 0.2\nmax_depth = 3\n\n[[goals]]\n'
                                     'recipe = "demographic_parity"\ngroup = "group"\nslack = 0.02\n')
    assert main(["--quiet", "fit", str(d / "train.csv"), "--label", "label", "--groups", "group", "--goals",
                 str(tmp_path / "b.toml"), "--out", str(tmp_path / "m.npz")]) == 0
    clf = rateopt.load(tmp_path / "m.npz")
    assert isinstance(clf, rateopt.BoostedMixture) and max(clf.prefix_lengths_) <= 40
    assert clf.booster.booster.params["learning_rate"] == 0.2  # [train]'s learning_rate is the trees' shrinkage
    assert main(["--quiet", "predict", str(tmp_path / "m.npz"), str(d / "train.csv"), "--out",
                 str(tmp_path / "p.csv"), "--proba"]) == 0
    with open(tmp_path / "p.csv") as f:
        got = np.array([float(r["proba"]) for r in csv.DictReader(f)])
    enc = json.loads((tmp_path / "m.rateopt.json").read_text())["encoding"]
    np.testing.assert_allclose(got, clf.predict_proba(_encode(cols, enc))[:, 1], atol=1e-12)
    for g in ("A", "B"):  # the goal, recounted from the written probabilities
        assert abs(got[cols["group"] == g].mean() - got.mean()) <= 0.02 + 1e-9
