"""quiet_highs: no HiGHS banner on the process's standard output (file descriptor 1), checked in fresh processes."""

import subprocess
import sys

import numpy as np
import pytest
from rateopt._utils._highs import quiet_highs

_LP = """
import numpy as np, highspy
h = {make}
inf = highspy.kHighsInf
h.addVars(2, np.zeros(2), np.full(2, inf))
h.changeColsCost(2, np.arange(2, dtype=np.int32), np.array([1.0, 2.0]))
h.addRow(1.0, inf, 2, np.arange(2, dtype=np.int32), np.ones(2))
h.run()
print("objective", h.getInfo().objective_function_value)
"""


def _stdout(code):
    out = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_plain_highs_prints_its_banner_on_fd_1():
    # The control: without the helper, the first construction writes the banner (so the next test can fail).
    assert "Running HiGHS" in _stdout(_LP.format(make="highspy.Highs()"))


def test_quiet_highs_prints_nothing_in_a_fresh_process():
    code = "import sys\nprint('before', flush=True)\nfrom rateopt._utils._highs import quiet_highs\n" + \
           _LP.format(make="quiet_highs()") + "\nquiet_highs()\nprint('after')\n"
    assert _stdout(code) == "before\nobjective 1.0\nafter\n"


def test_fit_output_is_clean_in_a_fresh_process():
    # An m-stochastic fit solves the shrinking LP; its standard output is the caller's alone.
    code = ("import rateopt\n"
            "X, y, g = rateopt.make_groups_dataset(300, random_state=0)\n"
            "p = rateopt.Problem(objective='error', constraints=[rateopt.goals.equal_opportunity('g', slack=0.05)],"
            " datasets={'train': rateopt.Dataset(X, y, groups={'g': g})})\n"
            "r = rateopt.train(p, n_iter=50, random_state=0)\n"
            "r.solution('m-stochastic')\n"
            "print('done')\n")
    assert _stdout(code) == "done\n"


def _option(h, name):
    value = h.getOptionValue(name)
    return value[-1] if isinstance(value, tuple) else value  # (status, value) in some highspy versions


def test_quiet_highs_sets_the_options_given():
    h = quiet_highs({"presolve": "off", "primal_feasibility_tolerance": 1e-9})
    assert _option(h, "output_flag") is False
    assert _option(h, "presolve") == "off"
    assert np.isclose(_option(h, "primal_feasibility_tolerance"), 1e-9)


def test_quiet_highs_refuses_an_unknown_option():
    with pytest.raises(ValueError, match="HiGHS option 'no_such_option'"):
        quiet_highs({"no_such_option": 1})
