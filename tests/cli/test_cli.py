"""The command line end to end: fit -> evaluate (a gate) -> predict -> report, on files the tests write.

The CSV pipeline, a LIBSVM fit, a Parquet prediction and one bad input run in
real subprocesses (``python -m rateopt``); the other cases call :func:`rateopt.cli.main`, the same entry
point the console script runs, in process (starting Python and importing
rateopt costs seconds per call). Expected values come from the saved model
applied to features encoded here with NumPy, and from rates computed here by
brute force.
"""

import csv
import json
import os
import subprocess
import sys
import zipfile

import numpy as np
import pytest

import rateopt
from rateopt.cli import main

N = 600


def _write_csv(path, cols):
    names = list(cols)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(names)
        for row in zip(*(cols[n] for n in names)):
            w.writerow([repr(float(v)) if isinstance(v, float) else v for v in row])


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
    np.testing.assert_allclose([float(r["proba"]) for r in rows], clf.predict_proba(X), atol=1e-12)
    expected = np.where(clf.predict(X, random_state=0) == 1, "yes", "no")
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
    p = clf.predict_proba(_encode(cols, enc))
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
    np.testing.assert_allclose(got, clf.predict_proba(X), atol=1e-12)
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
    from rateopt.cli._io import write_libsvm

    X, y, g = rateopt.make_groups_dataset(N, random_state=1)
    write_libsvm(tmp_path / "train.svm", X, np.where(y == 1, 1, -1))
    (tmp_path / "goals.toml").write_text(GOALS.replace('group = "group"', 'group = "3"'))
    fit = _run("fit", tmp_path / "train.svm", "--groups", "3", "--goals", tmp_path / "goals.toml", "--out",
               tmp_path / "m.npz")  # in a subprocess
    assert fit.returncode == 0, fit.stderr
    assert main(["--quiet", "predict", str(tmp_path / "m.npz"), str(tmp_path / "train.svm"), "--out",
                 str(tmp_path / "p.csv"), "--proba"]) == 0
    clf = rateopt.load(tmp_path / "m.npz")
    with open(tmp_path / "p.csv") as f:
        rows = list(csv.DictReader(f))
    np.testing.assert_allclose([float(r["proba"]) for r in rows], clf.predict_proba(X), atol=1e-12)
    assert [r["prediction"] for r in rows] == np.where(clf.predict(X, random_state=0) == 1, "1", "-1").tolist()


def test_parquet_pipeline_matches_csv(work, tmp_path):
    pytest.importorskip("pyarrow")
    from rateopt.cli._io import write_parquet

    d, cols = work
    write_parquet(tmp_path / "train.parquet", cols)
    assert main(["--quiet", "fit", str(tmp_path / "train.parquet"), "--label", "label", "--groups", "group",
                 "--goals", str(d / "goals.toml"), "--out", str(tmp_path / "m.npz")]) == 0
    pred = _run("predict", tmp_path / "m.npz", tmp_path / "train.parquet", "--out", tmp_path / "p.parquet",
                "--proba")  # in a subprocess
    assert pred.returncode == 0, pred.stderr
    import pyarrow.parquet as pq

    got = pq.read_table(tmp_path / "p.parquet").to_pydict()
    ref = rateopt.load(d / "model.npz")  # trained on the same values from CSV
    enc = json.loads((d / "model.rateopt.json").read_text())["encoding"]
    np.testing.assert_allclose(got["proba"], ref.predict_proba(_encode(cols, enc)), atol=1e-12)


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
    np.testing.assert_array_equal(best.coef_, result.weights[t])
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
                           "--out", "x.npz"], "3 distinct value(s)"),
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
    monkeypatch.setattr(_commands, "demo", lambda args: calls.append(args.command) or 0)
    assert main([]) == 0 and calls == [None]


def test_reproduce_names_the_available_scripts(capsys):
    assert main(["reproduce", "nonexistent"]) == 2
    err = capsys.readouterr().err
    from rateopt.cli._commands import _bench_dir

    if os.path.isdir(_bench_dir()):  # an editable install: bench/ of the checkout beside the package
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
    p = clf.predict_proba(np.hstack(X_steer))
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
