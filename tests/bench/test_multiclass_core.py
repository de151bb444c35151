"""Smoke test of bench/multiclass_core.py's worker: a tiny K = 60 fit split into the driver loop's parts."""

from pathlib import Path

import pytest
from _bench_scripts import load_bench_script

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def bench():
    return load_bench_script(BENCH / "multiclass_core.py", "bench_multiclass_core")


def test_the_worker_splits_a_k60_fit_into_parts_of_its_loop(bench):
    out = bench.worker({"n": 900, "d": 4, "method": "proxy-external", "n_iter": 4})
    assert out["n_iter"] == 4
    parts = [out[f"{p}_ms_per_iter"] for p in bench.PARTS]
    assert all(p > 0 for p in parts)
    # the parts are calls made by the loop: their cumulative times fit inside the loop's
    assert sum(parts) <= out["loop_ms_per_iter"] * (1 + 1e-9)
    assert out["pass_share"] == pytest.approx(out["pass_ms_per_iter"] / out["loop_ms_per_iter"])


def test_the_markdown_names_the_case_and_the_target(bench):
    r = {"loop_ms_per_iter": 10.0, "pass_ms_per_iter": 7.0, "step_ms_per_iter": 1.0,
         "combinations_ms_per_iter": 0.5, "record_ms_per_iter": 0.5, "pass_share": 0.7, "fit_s": 1.0}
    res = {"case": {**bench.CASE, "rows": 10, "features": 2, "n_iter": 3}, "repeats": 1, "load_before": [1, 1, 1],
           "load_after": [1, 1, 1], "trees": {"this": "x"}, "results": {"proxy-swap": {"this": r}},
           "targets": {"pass share": "70.0% (met)"}}
    md = bench.markdown(res)
    assert "K = 60" in md and "8 groups" in md and "70%" in md and ">= 60%" in md
