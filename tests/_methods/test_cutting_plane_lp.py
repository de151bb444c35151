"""The cutting plane's LP, ``max_{0 <= v <= V} min_s (f_s + g_s . v)``, on the one HiGHS helper.

References: scipy's ``linprog`` (its own HiGHS build; the path this LP took before) on random cut sets, and
a closed form in one dimension.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linprog

from rateopt._methods._cutting_plane import _cut_model_max


def _linprog_max(F, G, V):
    m = V.shape[0]
    cost = np.append(np.zeros(m), -1.0)
    res = linprog(cost, A_ub=np.hstack([-G, np.ones((len(F), 1))]), b_ub=F,
                  bounds=[(0.0, float(v)) for v in V] + [(None, None)], method="highs")
    assert res.status == 0
    return -res.fun


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("m", [1, 2, 5])
def test_the_optimum_is_linprogs(seed, m):
    rng = np.random.default_rng(seed * 10 + m)
    n_cuts = int(rng.integers(1, 12))
    F, G, V = rng.normal(size=n_cuts), rng.normal(size=(n_cuts, m)), rng.uniform(0.5, 3.0, m)
    value, v = _cut_model_max([(f, g) for f, g in zip(F, G)], V)
    assert value == pytest.approx(_linprog_max(F, G, V), abs=1e-9)
    assert np.all((v >= 0) & (v <= V))
    assert float(np.min(F + G @ v)) == pytest.approx(value, abs=1e-9)  # the maximizer attains it


def test_one_dimension_closed_form():
    # min(1 - v, 0.2 + v) on [0, 2] peaks where the lines cross, v = 0.4, at 0.6
    value, v = _cut_model_max([(1.0, np.array([-1.0])), (0.2, np.array([1.0]))], np.array([2.0]))
    assert value == pytest.approx(0.6, abs=1e-12) and v[0] == pytest.approx(0.4, abs=1e-12)
