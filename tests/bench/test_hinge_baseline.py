"""The analytic parts of bench/hinge_baseline.py (issue 14 item 3), on small synthetic data.

The script's argument that the Hinge baseline cannot reach the paper's numbers on
Adult rests on three computations; each is checked here against an independent
reference:

* ``hinge_reference`` (NumPy, per example) equals rateopt's
  ``GameSpec.proxy_constraints`` for ``tpr(g) >= 0.95 tpr(all)``;
* ``sex_pair_bound`` is a true lower bound: no score vector (random, or pushed
  down by subgradient descent on the largest hinge value) gets below it;
* ``min_max_hinge_lp`` finds the minimum of the largest hinge value over linear
  models: a brute-force grid over a one-feature model reaches it and never goes below.
"""

import pathlib

import numpy as np
import pytest
from _bench_scripts import load_bench_script

import rateopt
from rateopt import goals as G
from rateopt._training._spec import spec_from_problem

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "hinge_baseline.py"

pytestmark = pytest.mark.skipif(not SCRIPT.exists(), reason="not run from a source checkout (no bench/)")


def _load_script():
    return load_bench_script(SCRIPT, "bench_hinge_baseline")


def _sex_problem(n=400, d=3, seed=0, female_share=0.3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (rng.random(n) < 0.4).astype(np.int64)
    sex = np.where(rng.random(n) < female_share, "Female", "Male").astype(object)
    goals = [G.equal_opportunity("sex", slack=0.05, multiplicative=True, sides="lower")]
    prob = rateopt.Problem(constraints=goals, datasets=rateopt.Dataset(X, y, groups={"sex": sex}))
    groups = [("sex", "Female"), ("sex", "Male")]
    order = [next(i for i, name in enumerate(prob.constraint_names) if f"sex={v}" in name) for _, v in groups]
    return prob, X, y, {"sex": sex}, groups, order


def test_numpy_net_hinge_equals_rateopt_proxy_constraints():
    mod = _load_script()
    prob, X, y, gd, groups, order = _sex_problem()
    spec = spec_from_problem(prob)
    Gm = mod.group_matrix(gd, groups)
    rng = np.random.default_rng(1)
    for scale in (0.0, 0.3, 3.0):
        w, b = scale * rng.normal(size=X.shape[1]), scale * rng.normal()
        ours = spec.proxy_constraints(w, b)[order]
        ref = mod.hinge_reference(X @ w + b, y, Gm)
        np.testing.assert_allclose(ours, ref, rtol=1e-12, atol=1e-12)
        # and the hinge values bound the 0-1 constraint values from above
        ev = prob.evaluate(X @ w + b, kind="scores")
        zero_one = np.array([ev.constraints[prob.constraint_names[i]] for i in order])
        assert np.all(ref >= zero_one - 1e-12)


def _largest_hinge(scores, y, Gm, mod):
    return mod.hinge_reference(scores, y, Gm).max()


def test_sex_pair_bound_is_not_beaten_by_any_scores():
    mod = _load_script()
    _, X, y, gd, groups, _ = _sex_problem(female_share=0.2)
    Gm = mod.group_matrix(gd, groups)
    bound = mod.sex_pair_bound(Gm, y, groups)["lower_bound"]
    assert bound > 0  # the relaxed pair is infeasible at this share
    rng = np.random.default_rng(2)
    n = y.size
    best = np.inf
    for _ in range(300):  # random score vectors of several scales
        s = rng.normal(scale=rng.choice([0.1, 1.0, 5.0]), size=n) + rng.normal(scale=2.0)
        best = min(best, _largest_hinge(s, y, Gm, mod))
    # subgradient descent on max_i g~_i directly over the free scores of the positives
    s = np.zeros(n)
    pos = y > 0
    for _ in range(2000):
        vals = mod.hinge_reference(s, y, Gm)
        j = int(np.argmax(vals))
        g = Gm[pos, j] > 0
        c = 0.95 / pos.sum() - g / g.sum()
        sp_ = s[pos]
        grad = np.where(c > 0, c * (sp_ > -1.0), c * (sp_ < 1.0))
        s[pos] = sp_ - 20.0 * grad / max(np.linalg.norm(grad), 1e-12) * 0.01
        best = min(best, _largest_hinge(s, y, Gm, mod))
    assert best >= bound - 1e-9
    assert best <= bound + 0.05  # descent gets near it: the bound is not vacuous


def test_min_max_lp_matches_a_brute_force_grid():
    mod = _load_script()
    prob, X, y, gd, groups, _ = _sex_problem(n=300, d=1, female_share=0.02, seed=3)
    Gm = mod.group_matrix(gd, groups)
    lp = mod.min_max_hinge_lp(X, y, Gm, time_limit=30)
    assert lp["status"] == 0
    # the same net hinge, vectorized over a (w, b) grid: coefficients of the positives per constraint
    pos = y > 0
    coef = np.array([0.95 / pos.sum() - (Gm[pos, j] > 0) / (Gm[pos, j] > 0).sum() for j in range(2)])
    w, b = np.meshgrid(np.linspace(-6, 6, 241), np.linspace(-6, 6, 241), indexing="ij")
    S = w[..., None] * X[pos, 0] + b[..., None]  # (241, 241, n_pos)
    up, lo = np.maximum(0.0, 1.0 + S), 1.0 - np.maximum(0.0, 1.0 - S)
    grid = np.max([np.sum(np.where(c > 0, c * up, c * lo), axis=-1) for c in coef], axis=0)
    assert grid.min() >= lp["value"] - 1e-9
    assert grid.min() <= lp["value"] + 0.02
    assert _largest_hinge(X @ lp["w"] + lp["b"], y, Gm, mod) == pytest.approx(lp["value"], abs=1e-7)
