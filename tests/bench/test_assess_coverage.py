"""Checks of bench/assess_coverage.py: its true values and metric functions, and a tiny run of each study.

The script reports coverage (it asserts none); these tests check that the
"known" values it scores intervals against are right (against a large simulated
sample and scikit-learn's metrics), and that each study runs and returns
coverages in [0, 1] for every cell.
"""

import importlib.util
import pathlib

import numpy as np
import pytest
from _bench_scripts import load_bench_script

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "assess_coverage.py"

pytestmark = [
    pytest.mark.skipif(not SCRIPT.exists(), reason="not run from a source checkout (no bench/)"),
    pytest.mark.skipif(importlib.util.find_spec("pandas") is None, reason="pandas is not installed"),
]


@pytest.fixture(scope="module")
def script():
    return load_bench_script(SCRIPT, "bench_assess_coverage")


@pytest.mark.parametrize("setting", [(0.3, 0.8, 0.15), (0.1, 0.6, 0.05)])
def test_true_values_match_a_large_sample(script, setting):
    pytest.importorskip("sklearn")
    from sklearn.metrics import accuracy_score, balanced_accuracy_score, f1_score

    pi, tpr, fpr = setting
    rng = np.random.default_rng(0)
    n = 400_000
    y = (rng.random(n) < pi).astype(int)
    p = np.where(y == 1, rng.random(n) < tpr, rng.random(n) < fpr).astype(int)
    truth = script._truths(pi, tpr, fpr)
    for name, fn, ours in [("accuracy", accuracy_score, script.accuracy),
                           ("balanced_accuracy", balanced_accuracy_score, script.balanced_accuracy),
                           ("f1", f1_score, script.f1)]:
        assert ours(y, p) == pytest.approx(fn(y, p), rel=1e-12)
        assert abs(fn(y, p) - truth[name]) < 5e-3, name  # ~4 SE at this n


def test_expected_decisions_have_the_stated_mean(script):
    rng = np.random.default_rng(1)
    for r in script.RATES:
        draws = rng.beta(2 * r / (1 - r), 2.0, 200_000)
        assert draws.mean() == pytest.approx(r, abs=4e-3)


def test_each_study_runs(script):
    rng = np.random.default_rng(2)
    for kind in ("cp_exact", "cp_weighted", "cp_expected"):
        out = script._cp_run(kind, 3, rng)
        assert len(out) == len(script.SIZES) * len(script.RATES)
        assert all(0 <= v["coverage"] <= 1 for v in out.values())
    sim = script._cp_simultaneous(3, rng)["all four"]
    assert 0 <= sim["coverage"] <= sim["mean_marginal_coverage"] <= 1
    boot = script._boot_run(2, 20, 1)
    assert len(boot) == 12 and all(0 <= v["coverage"] <= 1 for v in boot.values())


def test_bootstrap_replicates_do_not_depend_on_the_split(script):
    """--jobs splits the replicates into ranges; replicate r draws from its own seed, so counts add up."""
    whole = script._boot_replicates(0, 3, 20)
    parts = [script._boot_replicates(0, 1, 20), script._boot_replicates(1, 3, 20)]
    for m in script.METRICS:
        np.testing.assert_array_equal(whole[m], parts[0][m] + parts[1][m])
