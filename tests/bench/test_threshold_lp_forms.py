"""bench/threshold_lp_forms.py: every form of the one-row-group parity LP solves to the same optimum.

Reference: a NumPy search over the overall rate (for a fixed rate the best rule
is closed-form; every grid point is a feasible rule), so an optimal LP is never
above the grid's best, and the three forms (F0, F1, F2) agree with each other.
"""

import json
import pathlib

import pytest
from _bench_scripts import load_bench_script

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "threshold_lp_forms.py"

pytestmark = pytest.mark.skipif(not SCRIPT.exists(), reason="not run from a source checkout (no bench/)")


def test_forms_agree_and_never_lose_to_the_grid(tmp_path):
    mod = load_bench_script(SCRIPT, "threshold_lp_forms")
    out = tmp_path / "forms.json"
    assert mod.main(["--sizes", "300", "--forms", "F0,F1,F2", "--methods", "dual,ipm", "--block", "16",
                     "--out", str(out)]) == 0
    runs = json.loads(out.read_text())["runs"]
    assert len(runs) == 6 and all(r["status"] == "Optimal" for r in runs)
    objectives = [r["objective"] for r in runs]
    assert max(objectives) - min(objectives) <= 1e-9
    assert all(r["objective"] <= r["closed_form"] + 1e-9 for r in runs)
    assert all(r["closed_form"] - r["objective"] < 1e-3 for r in runs)  # the grid is close: the LP is this LP
