"""bench/stop_rule_anchors.py's decision rule (no fits: hand-made results).

"Same solution" and the default the measurements allow are re-derived here by
hand from the rule's definition in the script's docstring (train error within
0.0005, test error within half a test SE, violation no larger + 1e-4, on every
problem; less CPU in total; the cheapest such setting).
"""

import pathlib
import sys

import pytest
from _bench_scripts import load_bench_script

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "stop_rule_anchors.py"

pytestmark = pytest.mark.skipif(not SCRIPT.exists(), reason="not run from a source checkout (no bench/)")


@pytest.fixture(scope="module")
def bench():
    mod = load_bench_script(SCRIPT, "bench_stop_rule_anchors")
    yield mod
    sys.modules.pop("bench_stop_rule_anchors", None)


def _run(tol, pat, train, test, viol, cpu):
    return {"settings": {"stop_tol": tol, "stop_patience": pat}, "train_err": train, "test_err": test,
            "train_viol": viol, "cpu_s": cpu}


FULL = {"settings": {"stop_tol": 0}, "train_err": 0.2, "test_err": 0.3, "train_viol": -0.01, "cpu_s": 1.0}


@pytest.mark.parametrize("train, test, viol, same", [
    (0.2004, 0.3, -0.01, True),     # train +0.0004
    (0.2006, 0.3, -0.01, False),    # train +0.0006 > 0.0005
    (0.1994, 0.3, -0.01, False),    # lower by more than 0.0005 is not "the same" either
    (0.2, 0.3049, -0.01, True),     # test +0.49 SE (SE 0.01)
    (0.2, 0.2949, -0.01, False),    # test -0.51 SE
    (0.2, 0.3, -0.00991, True),     # violation +0.00009
    (0.2, 0.3, -0.0098, False),     # violation +0.0002
])
def test_same_solution_by_the_rule(bench, train, test, viol, same):
    assert bench.same_solution(_run(1e-4, 50, train, test, viol, 0.5), FULL, 0.01) is same


def test_decide_takes_the_cheapest_setting_that_is_the_same_everywhere_and_cheaper(bench):
    def problem(*runs):
        return {"runs": [dict(FULL)] + [dict(r, same_solution=s) for r, s in runs]}

    results = {
        "a": problem((_run(1e-4, 20, 0, 0, 0, 0.2), False), (_run(1e-4, 50, 0, 0, 0, 0.7), True),
                     (_run(1e-3, 50, 0, 0, 0, 0.5), True)),
        "b": problem((_run(1e-4, 20, 0, 0, 0, 0.2), True), (_run(1e-4, 50, 0, 0, 0, 0.9), True),
                     (_run(1e-3, 50, 0, 0, 0, 0.6), True)),
    }
    d = bench.decide(results)
    by = {(v["stop_tol"], v["stop_patience"]): v for v in d["settings"]}
    # by hand: (1e-4, 20) fails on "a"; (1e-4, 50) same everywhere, CPU 1.6 < 2.0; (1e-3, 50) 1.1 < 2.0
    assert not by[(1e-4, 20)]["qualifies"] and by[(1e-4, 50)]["qualifies"] and by[(1e-3, 50)]["qualifies"]
    assert by[(1e-4, 50)]["cpu_s"] == pytest.approx(1.6) and by[(1e-4, 50)]["cpu_full_s"] == pytest.approx(2.0)
    assert d["default"] == {"stop_tol": 1e-3, "stop_patience": 50}
    # the same everywhere but no cheaper in total: no default
    results["b"]["runs"][2]["cpu_s"] = results["b"]["runs"][3]["cpu_s"] = 1.6
    assert bench.decide(results)["default"] is None
