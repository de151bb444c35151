"""bench/boosting_cost.py's summary: each system against the plain fit of its own backend, per repeat."""

from pathlib import Path

import pytest

from _bench_scripts import load_bench_script

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "boosting_cost.py"


@pytest.fixture(scope="module")
def bc():
    return load_bench_script(SCRIPT, "boosting_cost_under_test")


def test_each_system_is_compared_with_its_own_backend_repeat_by_repeat(bc):
    runs = []
    cpu = {"lightgbm": (1.0, 2.0), "rateopt-lightgbm": (1.3, 2.8), "xgboost": (4.0, 2.0),
           "rateopt-xgboost": (6.0, 2.4), "rateopt-xgboost-baseline": (8.0, 3.0)}
    peak = {"lightgbm": 1000, "rateopt-lightgbm": 1010, "xgboost": 2000, "rateopt-xgboost": 2002,
            "rateopt-xgboost-baseline": 2004}
    for system, (c0, c1) in cpu.items():
        for r, c in enumerate((c0, c1)):
            runs.append({"dataset": "d", "goal": "equal_opportunity", "repeat": r, "system": system, "cpu_s": c,
                         "fit_peak_kib": peak[system], "n_rows": 1024})
    got = {s["system"]: s for s in bc.summarize(runs, ["d"], list(cpu))}
    # per-repeat ratios to the same backend's plain fit, then their median (of two: the mean)
    assert got["rateopt-lightgbm"]["cpu_ratio_median"] == pytest.approx((1.3 / 1.0 + 2.8 / 2.0) / 2)
    assert got["rateopt-xgboost"]["cpu_ratio_median"] == pytest.approx((6.0 / 4.0 + 2.4 / 2.0) / 2)
    assert got["rateopt-xgboost-baseline"]["cpu_ratio_median"] == pytest.approx((8.0 / 4.0 + 3.0 / 2.0) / 2)
    assert got["xgboost"]["cpu_ratio_median"] == 1.0
    # extra bytes per row against the same backend: (peak - plain's peak) KiB * 1024 / rows
    assert got["rateopt-lightgbm"]["extra_bytes_per_row"] == pytest.approx(10.0)
    assert got["rateopt-xgboost"]["extra_bytes_per_row"] == pytest.approx(2.0)
    assert got["rateopt-xgboost-baseline"]["extra_bytes_per_row"] == pytest.approx(4.0)
    assert bc._backend("rateopt-xgboost-baseline") == "xgboost" and bc._backend("rateopt-lightgbm") == "lightgbm"



def test_fit_plus_solution_peak_is_compared_with_the_plain_fit_peak(bc):
    # the plain backend's booster is its classifier: its fit + solution peak is its fit peak; rateopt's
    # solution peak (read without resetting the high-water mark) is compared with the plain fit's peak
    runs = []
    both = {"lightgbm": [(1000, 1000), (1040, 1040), (990, 990)],
            "rateopt-lightgbm": [(1010, 1300), (1020, 1100), (1030, 1200)]}
    for system, peaks in both.items():
        for r, (fit, total) in enumerate(peaks):
            runs.append({"dataset": "d", "goal": "demographic_parity", "repeat": r, "system": system, "cpu_s": 1.0,
                         "fit_peak_kib": fit, "fit_solution_peak_kib": total, "n_rows": 2048,
                         "solution_cpu_s": 0.5 if system.startswith("rateopt") else 0.0,
                         **({"solution_hash": "abc"} if system.startswith("rateopt") else {})})
    got = {s["system"]: s for s in bc.summarize(runs, ["d"], list(both))}
    # medians: plain fit 1000 KiB; rateopt fit 1020, fit + solution 1200 -> (1200 - 1000) * 1024 / 2048 = 100
    assert got["rateopt-lightgbm"]["extra_bytes_per_row"] == pytest.approx(10.0)
    assert got["rateopt-lightgbm"]["fit_solution_extra_bytes_per_row"] == pytest.approx(100.0)
    assert got["lightgbm"]["fit_solution_extra_bytes_per_row"] == 0.0
    assert got["rateopt-lightgbm"]["solution_hashes"] == ["abc"] and got["lightgbm"]["solution_hashes"] == []
    md = bc.markdown({"summary": list(got.values()), "rounds": 200, "repeats": 3,
                      "load_average_before": [1.0], "load_average_after": [1.0]})
    assert "| d | demographic_parity | rateopt-lightgbm | 1 | 1.00 | 1.0 | +10 | 1.2 | +100 | abc |" in md


def test_eg_cells_metrics_count_by_hand(bc):
    import numpy as np

    # 9 test rows, two groups; equal opportunity reads the positives (rows 0-6) only
    y = np.array([1, 1, 1, 1, 1, 1, 1, 0, 0])
    g = np.array(["a", "a", "a", "b", "b", "b", "b", "a", "b"])
    p = np.array([1.0, 1.0, 0.5, 0.0, 1.0, 0.5, 0.0, 1.0, 0.0])
    m = bc._eg_metrics(p, p, y, y, g, g, "equal_opportunity", 0.02)
    # accuracy: 1 - mean |p - y| = 1 - (0 + 0 + .5 + 1 + 0 + .5 + 1 + 1 + 0) / 9
    assert m["test_accuracy"] == pytest.approx(1 - 4 / 9)
    # TPRs: a = 2.5/3, b = 1.5/4, overall 4/7; the farthest group is a, its binomial SE over its 3 positives
    assert m["test_disparity"] == pytest.approx(2.5 / 3 - 4 / 7)
    assert m["test_disparity_se"] == pytest.approx(np.sqrt((2.5 / 3) * (0.5 / 3) / 3))
    assert m["test_gap"] == pytest.approx(2.5 / 3 - 1.5 / 4)
    assert m["train_violation"] == pytest.approx(2.5 / 3 - 4 / 7 - 0.02)
    # 0.262 > 0.02 + 0.215: the point does not count
    assert m["meets_goal"] is False
    loose = bc._eg_metrics(p, p, y, y, g, g, "equal_opportunity", 0.05)  # 0.262 <= 0.05 + 0.215
    assert loose["meets_goal"] is True


def test_eg_table_reports_the_median_ratio_over_cells(bc):
    systems = ["lightgbm", "rateopt-lightgbm"]
    runs = []
    for seed, (eg, plain, ro) in enumerate(((400.0, 4.0, 8.0), (300.0, 3.0, 10.0), (100.0, 1.0, 1.0))):
        runs.append({"dataset": "acs-race", "goal": "equal_opportunity", "seed": seed, "n_rows": 10, "eg_cpu_s": eg,
                     "eg": {"n_oracle_calls": 7}, "lightgbm_median": plain, "rateopt-lightgbm_median": ro,
                     "eg_over_lightgbm": eg / plain, "eg_over_rateopt-lightgbm": eg / ro})
    result = {"runs": runs, "systems": systems, "rounds": 200, "tolerance": 0.02, "scale": "issue", "repeats": 3,
              "eg_python": "py", "invocations": [{"command": "c", "start": "t", "load_average_before": [1.0]}]}
    md = bc.eg_markdown(result)
    # EG / rateopt per cell: 50, 30, 100 -> median 50, range 30-100
    assert "Median EG / rateopt over these 3 cells: 50.0 (range 30.0-100.0)" in md
    assert "| acs-race | equal_opportunity | 1 | 10 | 300.00 | 7 | 3.000 | 10.000 | 100.0 | 30.0 | 3.33 |" in md
