"""bench/anchors_fit_cost.py's summary of its workers' samples (no fits: hand-made samples).

The medians are recomputed with :func:`statistics.median`, the shares by hand.
"""

import pathlib
import statistics
import sys

import pytest
from _bench_scripts import load_bench_script

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "anchors_fit_cost.py"

pytestmark = pytest.mark.skipif(not SCRIPT.exists(), reason="not run from a source checkout (no bench/)")


@pytest.fixture(scope="module")
def bench():
    mod = load_bench_script(SCRIPT, "bench_anchors_fit_cost")
    yield mod
    sys.modules.pop("bench_anchors_fit_cost", None)


def _sample(wall, cpu, loop, rules, other, digest):
    parts = {"loop": loop, "rules": rules, "averages": 0.0, "solution": 0.0, "other": other}
    return {"wall_s": wall, "cpu_s": cpu, "profile_total_s": loop + rules + other, "profile_s": parts,
            "digest": digest, "n_recorded": 7, "n_iter": 10}


def test_summary_medians_shares_and_digests(bench):
    samples = [_sample([1.0, 3.0], [0.5, 0.7], 0.6, 0.3, 0.1, "a"),
               _sample([2.0, 9.0], [0.4, 0.9], 0.8, 0.1, 0.1, "a")]
    s = bench._summary(samples)
    assert s["fit_s"] == statistics.median([1.0, 3.0, 2.0, 9.0])
    assert s["fit_cpu_s"] == statistics.median([0.5, 0.7, 0.4, 0.9])
    assert s["profile_s"]["loop"] == pytest.approx(0.7) and s["profile_total_s"] == pytest.approx(1.0)
    assert s["profile_share"]["loop"] == pytest.approx(0.7) and s["profile_share"]["rules"] == pytest.approx(0.2)
    assert s["digests"] == ["a"]
    s2 = bench._summary([samples[0], _sample([1.0], [1.0], 1.0, 0.0, 0.0, "b")])
    assert s2["digests"] == ["a", "b"]  # two different results are both reported

