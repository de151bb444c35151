"""The summary of bench/boosting_solution_cost.py: per-repeat ratios to the same repeat's plain fit, recounted."""

import pathlib
import statistics

import pytest
from _bench_scripts import load_bench_script

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "boosting_solution_cost.py"

pytestmark = pytest.mark.skipif(not SCRIPT.exists(), reason="not run from a source checkout (no bench/)")


def test_summary_ratios_are_per_repeat_ratios_to_the_plain_fit():
    mod = load_bench_script(SCRIPT, "bench_boosting_solution_cost")
    plain = [0.5, 0.4, 0.6]
    train = [0.6, 0.6, 0.9]
    solution = [0.5, 0.2, 0.3]
    runs = [{"backend": "xgboost", "repeat": r, "system": "xgboost", "train_s": plain[r], "solution_s": 0.0,
             "total_s": plain[r]} for r in range(3)]
    runs += [{"backend": "xgboost", "repeat": r, "system": "rateopt", "train_s": train[r], "solution_s": solution[r],
              "total_s": train[r] + solution[r], "proba_sha1": "ab"} for r in range(3)]
    summary = {s["system"]: s for s in mod.summarize(runs, ["xgboost"], ["rateopt"])}
    got = summary["rateopt"]
    # by hand: train ratios 1.2, 1.5, 1.5; total ratios 2.2, 2.0, 2.0
    assert got["train_ratio_median"] == pytest.approx(1.5)
    assert got["total_ratio_median"] == pytest.approx(2.0)
    assert got["solution_s_median"] == pytest.approx(statistics.median(solution))
    assert got["proba_sha1"] == ["ab"]
    assert summary["xgboost"]["total_ratio_median"] == pytest.approx(1.0)


def test_each_goal_is_summarized_against_its_own_plain_fits():
    mod = load_bench_script(SCRIPT, "bench_boosting_solution_cost")
    runs = []
    for goal, plain, train in (("equal_opportunity", [0.5, 0.4], [0.6, 0.6]),
                               ("demographic_parity", [1.0, 2.0], [1.5, 2.0])):
        runs += [{"goal": goal, "backend": "xgboost", "repeat": r, "system": "xgboost", "train_s": plain[r],
                  "solution_s": 0.0, "total_s": plain[r]} for r in range(2)]
        runs += [{"goal": goal, "backend": "xgboost", "repeat": r, "system": "rateopt", "train_s": train[r],
                  "solution_s": 0.1, "total_s": train[r] + 0.1} for r in range(2)]
    summary = {(s["goal"], s["system"]): s for s in mod.summarize(runs, ["xgboost"], ["rateopt"],
                                                                   ["equal_opportunity", "demographic_parity"])}
    # by hand: equal opportunity 1.2 and 1.5 (median 1.35); demographic parity 1.5 and 1.0 (median 1.25)
    assert summary[("equal_opportunity", "rateopt")]["train_ratio_median"] == pytest.approx(1.35)
    assert summary[("demographic_parity", "rateopt")]["train_ratio_median"] == pytest.approx(1.25)
    assert summary[("demographic_parity", "rateopt")]["total_ratio_median"] == pytest.approx((1.6 + 1.05) / 2)


def test_parts_are_the_timed_functions_and_their_differences():
    """``--parts``: the derived parts are the stated differences of the timed ones, counted by hand, and each
    system's summary holds the per-part medians over its repeats."""
    mod = load_bench_script(SCRIPT, "bench_boosting_solution_cost")
    timed = {"backend_start": 0.01, "trees": 0.40, "core_pass": 0.05, "kept_candidates": 0.02, "loop": 0.50,
             "solution_first_lp": 0.015, "solution_rescoring": 0.005}
    assert set(timed) == set(mod.PART_FUNCTIONS)
    got = mod.derived_parts(timed, train_s=0.55, solution_s=0.045)
    # by hand: setup 0.55 - 0.50 - 0.01; glue 0.50 - 0.40 - 0.05 - 0.02; re-fit 0.045 - 0.015 - 0.005
    assert got["setup"] == pytest.approx(0.04)
    assert got["loop_glue"] == pytest.approx(0.03)
    assert got["solution_refit"] == pytest.approx(0.025)
    assert {k: got[k] for k in timed} == timed
    runs = [{"backend": "xgboost", "repeat": r, "system": "xgboost", "train_s": t, "solution_s": 0.0, "total_s": t}
            for r, t in enumerate([0.4, 0.5, 0.6])]
    runs += [{"backend": "xgboost", "repeat": r, "system": "rateopt", "train_s": 0.6, "solution_s": 0.1,
              "total_s": 0.7, "parts": {"trees": t, "core_pass": 0.05}} for r, t in enumerate([0.3, 0.5, 0.4])]
    summary = {s["system"]: s for s in mod.summarize(runs, ["xgboost"], ["rateopt"])}
    assert summary["rateopt"]["parts_median"] == {"trees": pytest.approx(0.4), "core_pass": pytest.approx(0.05)}
    assert summary["rateopt"]["plain_s_median"] == pytest.approx(0.5)
    assert "parts_median" not in summary["xgboost"]
