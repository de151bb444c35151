"""bench/compare_postprocessing.py's sweep bookkeeping and bench/_postproc_anchors.py's repeated fits.

References: the speed-ups are ratios of the medians written by hand; the runner's repeated fits of
rateopt-threshold on a tiny problem give the decisions of one plain ``ThresholdClassifier`` fit.
"""

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
from _bench_scripts import load_bench_script

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "compare_postprocessing.py"
RUNNER = ROOT / "bench" / "_postproc_anchors.py"

pytestmark = pytest.mark.skipif(not SCRIPT.exists(), reason="not run from a source checkout (no bench/)")


def _sweep(times):
    """A sweep record with the given (cold, warm, cpu cold, cpu warm) medians per system and k."""
    fields = ("fit_s", "warm_s", "cpu_s", "cpu_warm_s")
    return {"k": [2, 4], "fit_s": {s: {str(k): ({"status": "ok", **dict(zip(fields, v))} if isinstance(v, tuple)
                                                 else {"status": v, "fit_s": None})
                                       for k, v in per_k.items()}
                                   for s, per_k in times.items()}}


def test_speedups_are_ratios_of_medians_and_the_target_needs_2x_at_every_k():
    mod = load_bench_script(SCRIPT, "compare_postprocessing")
    sw = _sweep({"rateopt-threshold": {2: (0.1, 0.05, 0.02, 0.01), 4: (0.2, 0.1, 0.04, 0.02)},
                 "error-parity": {2: (0.3, 0.15, 0.05, 0.02), 4: (0.3, 0.4, 0.1, 0.1)}})
    sw["speedup"] = mod.sweep_speedups(sw, ["rateopt-threshold", "error-parity"])
    ep = sw["speedup"]["error-parity"]
    assert ep["2"] == pytest.approx({"cold": 3.0, "warm": 3.0, "cpu cold": 2.5, "cpu warm": 2.0})
    assert ep["4"] == pytest.approx({"cold": 1.5, "warm": 4.0, "cpu cold": 2.5, "cpu warm": 5.0})
    targets = mod.sweep_targets(sw, 60)
    met = {k.split("(")[-1].rstrip(")"): v.endswith("(met)") for k, v in targets.items() if "error-parity" in k}
    assert met == {"cold": False, "warm": True, "cpu cold": True, "cpu warm": True}


def test_an_anchor_that_fails_at_some_k_is_not_beaten_by_time_there():
    mod = load_bench_script(SCRIPT, "compare_postprocessing")
    sw = _sweep({"rateopt-threshold": {2: (0.1, 0.1, 0.1, 0.1), 4: (0.1, 0.1, 0.1, 0.1)},
                 "error-parity": {2: (0.3, 0.3, 0.3, 0.3), 4: "failed"}})
    sw["speedup"] = mod.sweep_speedups(sw, ["rateopt-threshold", "error-parity"])
    assert sw["speedup"]["error-parity"]["4"]["cold"] is None
    targets = mod.sweep_targets(sw, 60)
    cold = targets[">= 2x faster than error-parity at every k (cold)"]
    assert "k=4 error-parity failed" in cold and cold.endswith("(met)")


def test_runner_fits_repeatedly_and_reports_every_wall_and_cpu_time(tmp_path):
    rng = np.random.default_rng(0)
    n = 400
    g = rng.choice(["a", "b"], n)
    y = (rng.random(n) < 0.3 + 0.2 * (g == "a")).astype(np.int64)
    s = np.round(np.clip(0.5 * y + 0.5 * rng.random(n), 0, 1), 3)
    tasks = [{"id": 0, "constraint": "demographic_parity", "tolerance": 0.02, "objective": "error", "fits": 3}]
    inp, out = tmp_path / "in.npz", tmp_path / "out.npz"
    np.savez(inp, tasks=np.array(json.dumps(tasks)), s_train=s, s_test=s, y_train=y, y_test=y, g_train=g,
             g_test=g)
    import rateopt

    # the runner imports the rateopt this test imports (the installed one in CI, whose source tree has no core)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(pathlib.Path(rateopt.__file__).parents[1])] + sys.path))
    subprocess.run([sys.executable, str(RUNNER), "--system", "rateopt-threshold", "--in", str(inp), "--out",
                    str(out)], check=True, env=env, capture_output=True, timeout=300)
    z = np.load(out)
    rec = json.loads(str(z["report"]))["tasks"]["0"]
    assert rec["status"] == "ok" and len(rec["fit_s_all"]) == 3 and len(rec["cpu_s_all"]) == 3
    assert rec["fit_s"] == rec["fit_s_all"][0] and all(t > 0 for t in rec["fit_s_all"] + rec["cpu_s_all"])
    import rateopt as ro

    clf = ro.ThresholdClassifier(goals=[ro.goals.demographic_parity("g", slack=0.02, pairwise=True)])
    clf.fit(s, y, groups={"g": g.astype(object)})
    assert np.array_equal(z["p_train_0"], clf.predict_proba(s, groups={"g": g.astype(object)})[:, 1])
