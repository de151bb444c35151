"""Training over the sparse constraint map: a map too large for the core loop's dense copy runs in the Python
loop, which reads the map's sparse factors, and gives the core loop's numbers on a problem both can run."""

import numpy as np
import pytest

import rateopt as ro
from rateopt import _train


def _problem(n=240, groups=30):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] + rng.normal(size=n) > 0).astype(int)
    ds = ro.Dataset(X, y, groups={"g": np.arange(n) % groups})
    return ro.Problem(constraints=[ro.goals.demographic_parity("g", slack=0.02)], datasets=ds)


@pytest.mark.parametrize("method", ["proxy-external", "proxy-swap"])
def test_a_map_too_large_for_the_core_loop_runs_in_the_python_loop_with_the_same_numbers(monkeypatch, method):
    problem = _problem()
    kw = dict(method=method, n_iter=60, record_every=5, random_state=0)
    core = ro.train(problem, loop="core", **kw)
    monkeypatch.setattr(_train, "_CORE_LOOP_MAP_ENTRIES", 0)  # every map is "too large" now
    with pytest.raises(ValueError, match="constraint map is large"):
        ro.train(problem, loop="core", **kw)
    python = ro.train(problem, **kw)  # loop="auto": the Python loop, over the sparse map
    np.testing.assert_allclose(python.atom_rates, core.atom_rates, rtol=0, atol=1e-12)
    np.testing.assert_allclose(python.constraints, core.constraints, rtol=0, atol=1e-12)
    np.testing.assert_allclose(python.weights, core.weights, rtol=1e-9, atol=1e-12)
