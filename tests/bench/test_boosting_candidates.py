"""bench/boosting_candidates.py: its candidate rules and its summary against hand counts."""

import pathlib

import numpy as np
import pytest
from _bench_scripts import load_bench_script

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "boosting_candidates.py"

pytestmark = pytest.mark.skipif(not SCRIPT.exists(), reason="not run from a source checkout (no bench/)")


class _Result:  # the fields the rules read: one trivial rule, then the prefixes 0..T
    def __init__(self, T):
        self.models, self.n_trivial = list(range(T + 2)), 1


def test_the_even_rule_is_the_library_rule_of_a_run_recording_every_prefix():
    mod = load_bench_script(SCRIPT, "bench_boosting_candidates")
    from rateopt._predictors._boosted_mixture import candidate_rounds

    for T in (5, 60, 100, 200):
        # index 1 + t is the prefix of t trees
        assert mod.even(_Result(T), 16) == [0] + [1 + int(t) for t in candidate_rounds(T, 16)]
    assert mod.even(_Result(100), 4) == [0, 1, 26, 51, 76, 101]


def test_summary_differences_are_to_main32_on_the_same_run():
    mod = load_bench_script(SCRIPT, "bench_boosting_candidates")
    rows = []
    for seed, (ref_tr, ref_te, new_tr, new_te) in enumerate([(0.10, 0.12, 0.11, 0.12), (0.20, 0.25, 0.20, 0.22)]):
        key = {"dataset": "d", "goal": "g", "tol": 0.0, "seed": seed, "viol": 0.0, "solution_cpu": 0.1}
        rows.append({**key, "rule": "main32", "n_candidates": 32, "train_err": ref_tr, "err": ref_te})
        rows.append({**key, "rule": "even16/b256", "n_candidates": 18, "train_err": new_tr, "err": new_te})
    got = {t["rule"]: t for t in mod.summarize(rows)}["even16/b256"]
    # by hand: training differences +0.01 and 0; test differences 0 and -0.03
    assert got["mean_d_train"] == pytest.approx(0.005) and got["worst_d_train"] == pytest.approx(0.01)
    assert got["mean_d_test"] == pytest.approx(-0.015) and got["worst_d_test"] == pytest.approx(0.0)
    assert got["test_worse_than_2pp"] == 0 and got["mean_candidates"] == 18
    assert np.isclose(got["mean_err"], 0.17)
