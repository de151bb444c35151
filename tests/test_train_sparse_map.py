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



def test_a_large_sparse_map_runs_in_the_python_loop_with_the_core_loops_numbers(monkeypatch):
    # 400 one-row groups under parity: 800 constraints x 403 atoms (3.2e5 dense entries), 1,600 stored; the
    # core loop's dense products made it 3x slower than the Python loop (2,800 groups: 250x)
    rng = np.random.default_rng(1)
    n = 400
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] + rng.normal(size=n) > 0).astype(int)
    problem = ro.Problem(constraints=[ro.goals.demographic_parity("g", slack=0.02)],
                         datasets=ro.Dataset(X, y, groups={"g": np.arange(n)}))
    m, k = problem.compiled.C.shape
    assert m * k > _train._CORE_LOOP_SPARSE_ENTRIES
    assert m * k <= _train._CORE_LOOP_MAP_ENTRIES  # below the dense limit: only its sparsity sends it away
    kw = dict(method="proxy-external", n_iter=40, record_every=5, random_state=0)
    with pytest.raises(ValueError, match="constraint map is large"):
        ro.train(problem, loop="core", **kw)
    python = ro.train(problem, **kw)  # loop="auto": the Python loop
    monkeypatch.setattr(_train, "_CORE_LOOP_SPARSE_ENTRIES", 1 << 40)  # the rule off: the core loop runs it
    core = ro.train(problem, loop="core", **kw)
    np.testing.assert_allclose(python.atom_rates, core.atom_rates, rtol=0, atol=1e-12)
    np.testing.assert_allclose(python.constraints, core.constraints, rtol=0, atol=1e-12)
    np.testing.assert_allclose(python.weights, core.weights, rtol=1e-9, atol=1e-12)


def test_the_sparse_rule_leaves_small_maps_to_the_core_loop():
    problem = _problem()  # 60 constraints x 32 atoms
    m, k = problem.compiled.C.shape
    assert m * k <= _train._CORE_LOOP_SPARSE_ENTRIES
    ro.train(problem, loop="core", method="proxy-external", n_iter=5)  # not refused
