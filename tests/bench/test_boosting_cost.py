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
