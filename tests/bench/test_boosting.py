"""The measures and the verdict rule of bench/boosting.py (issue 33 item 4), against brute-force counts.

The bench's frontier verdicts rest on three measures of expected decisions (the test disparity a
tolerance bounds, the pairwise gap, the training violation) and on the issue's counting rule; each
is checked here against a per-row Python loop, not against the NumPy code it checks.
"""

import pathlib

import numpy as np
import pytest
from _bench_scripts import load_bench_script

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "boosting.py"

pytestmark = pytest.mark.skipif(not SCRIPT.exists(), reason="not run from a source checkout (no bench/)")


def _mod():
    return load_bench_script(SCRIPT, "bench_boosting")


def _loop_rates(p, y, g, rate):
    """{group or 'all': (rate, rows)} by a per-row loop."""
    sums, counts = {}, {}
    for pi, yi, gi in zip(p, y, g):
        if (rate == "tpr" and yi != 1) or (rate == "fpr" and yi != 0):
            continue
        for key in (gi, "all"):
            sums[key] = sums.get(key, 0.0) + pi
            counts[key] = counts.get(key, 0) + 1
    return {k: (sums[k] / counts[k], counts[k]) for k in sums}


def _data(seed, n=300, k=3):
    rng = np.random.default_rng(seed)
    return rng.random(n), (rng.random(n) < 0.4).astype(np.int64), rng.choice([f"g{i}" for i in range(k)], n)


@pytest.mark.parametrize("goal", ["equal_opportunity", "equalized_odds", "demographic_parity"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_disparity_gap_violation_equal_brute_force(goal, seed):
    mod = _mod()
    p, y, g = _data(seed)
    rates = {"equal_opportunity": ["tpr"], "equalized_odds": ["tpr", "fpr"], "demographic_parity": ["ppr"]}[goal]
    dev, gap, best = 0.0, 0.0, None
    for rate in rates:
        r = _loop_rates(p, y, g, rate)
        groups = [k for k in r if k != "all"]
        for k in groups:
            d = abs(r[k][0] - r["all"][0])
            if d > dev:
                dev, best = d, r[k]
        gap = max(gap, max(r[k][0] for k in groups) - min(r[k][0] for k in groups))
    got, se = mod.disparity(p, y, g, goal)
    assert got == pytest.approx(dev, abs=1e-12)
    assert se == pytest.approx(np.sqrt(best[0] * (1 - best[0]) / best[1]), rel=1e-12)
    assert mod.gap(p, y, g, goal) == pytest.approx(gap, abs=1e-12)
    for tol in (0.0, 0.05):
        assert mod.violation(p, y, g, goal, tol) == pytest.approx(dev - tol, abs=1e-12)


def test_coverage_violation_is_the_positive_rate_beyond_the_cap():
    mod = _mod()
    p, y, g = _data(3)
    assert mod.violation(p, y, g, "coverage_budget", 0.3) == pytest.approx(sum(p) / len(p) - 0.3, abs=1e-12)


def _pt(err, disp, tol=0.02, err_se=0.001, disp_se=0.002, system="x"):
    return {"test_error": err, "test_disparity": disp, "tolerance": tol, "test_error_se": err_se,
            "test_disparity_se": disp_se, "system": system}


def test_counting_rule_and_comparison():
    mod = _mod()
    # a point counts iff its disparity <= tolerance + 1 SE
    assert mod._counts(_pt(0.1, 0.022))
    assert not mod._counts(_pt(0.1, 0.0221))
    # within 1 SE (the larger of the two) counts as <=; better by >= 1 SE as a win
    assert mod._compare(_pt(0.1009, 0.0), _pt(0.1, 0.0))[1:] == (True, False)
    assert mod._compare(_pt(0.1011, 0.0), _pt(0.1, 0.0))[1:] == (False, False)
    assert mod._compare(_pt(0.1011, 0.0), _pt(0.1, 0.0, err_se=0.002))[1:] == (True, False)
    assert mod._compare(_pt(0.0989, 0.0), _pt(0.1, 0.0))[1:] == (True, True)
    # a comparator whose point does not count loses; rateopt's not counting fails the cell
    assert mod._compare(_pt(0.2, 0.0), _pt(0.1, 0.05))[1:] == (True, True)
    assert mod._compare(_pt(0.05, 0.05), _pt(0.1, 0.0))[1:] == (False, False)
    assert mod._compare(_pt(0.1, 0.0), None)[0] == "n/a"


def test_verdicts_pick_fairgbms_better_counting_setting():
    mod = _mod()
    base = {"dataset": "d", "goal": "equal_opportunity", "n_seeds": 1}
    summary = [dict(base, **_pt(0.100, 0.01, system="rateopt-lightgbm")),
               dict(base, **_pt(0.090, 0.10, system="fairgbm-mlr0.1")),   # better error, but does not count
               dict(base, **_pt(0.102, 0.01, system="fairgbm-mlr0.01")),
               dict(base, **_pt(0.150, 0.01, system="post-blind"))]
    (v,) = mod.verdicts(summary, ("fairgbm", "post-blind"))
    assert v["fairgbm"]["system"] == "fairgbm-mlr0.01" and v["fairgbm"]["le_within_se"] and v["fairgbm"]["better_by_se"]
    assert v["post-blind"]["better_by_se"]
