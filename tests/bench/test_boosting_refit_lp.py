"""bench/boosting_refit_lp.py's cell on Adult (10 trees): the re-fit LP solved both ways, and the recount.

References: HiGHS on the whole increment-form LP (the objective to 1e-9), and the default solution's
``predict_proba`` on the training rows counted with NumPy (its error is the LP objective; every group's
true positive rate within the slack of the overall one).
"""

import importlib.util
from pathlib import Path

import pytest

from _bench_scripts import load_bench_script

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "boosting_refit_lp.py"
pytestmark = pytest.mark.skipif(importlib.util.find_spec("lightgbm") is None, reason="needs lightgbm")


def test_a_cells_re_fit_reaches_the_whole_lps_optimum_and_its_rows_meet_the_goal():
    mod = load_bench_script(SCRIPT, "boosting_refit_lp_under_test")
    got = mod.cell("adult-sex", "equal_opportunity", "lightgbm", 10)
    assert len(got["lps"]) == 1  # one exact re-fit
    lp = got["lps"][0]
    assert lp["bins"] > 1000
    assert lp["objective_generated"] == pytest.approx(lp["objective_full"], abs=1e-9)
    assert lp["slack_full"] == lp["slack_generated"] == 0.0
    assert got["training_error"] == pytest.approx(lp["objective_generated"], abs=1e-9)
    assert got["largest_gap"] <= got["slack"] + 1e-9
