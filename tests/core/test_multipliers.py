"""The lambda-player primitives of ``rateopt.core`` against NumPy references.

Contract: docs/core_api.md ("The lambda-player primitives"). References live in
tests/reference.py: log-sum-exp column normalization, a least-squares linear
solve for the stationary distribution (not power iteration), sort-and-threshold
projections, and an exhaustive search over supports for small projections.
"""

from __future__ import annotations

import numpy as np
import pytest

from rateopt.core import (
    external_update_additive,
    external_update_multiplicative,
    project_l1_ball_nonneg,
    project_simplex,
    stationary_distribution,
    swap_regret_update,
    swap_regret_update_additive,
)

import reference as ref

SIZES = [2, 5, 30, 101]


def random_stochastic(rng, k, *, low=0.0):
    """A strictly positive left-stochastic (column-stochastic) k x k matrix."""
    A = rng.random((k, k)) + low + 1e-3
    return A / A.sum(axis=0, keepdims=True)


def random_simplex(rng, k):
    x = rng.random(k) + 1e-3
    return x / x.sum()


def assert_column_stochastic(M, tol=1e-12):
    assert np.all(np.isfinite(M))
    assert np.all(M >= 0)
    np.testing.assert_allclose(M.sum(axis=0), 1.0, rtol=0, atol=tol)


def assert_stationary(M, lam, tol=1e-10):
    assert lam.shape == (M.shape[0],)
    assert np.all(np.isfinite(lam)) and np.all(lam >= 0)
    assert abs(lam.sum() - 1.0) <= 1e-12
    assert np.abs(M @ lam - lam).sum() <= tol


def delta_vector(rng, k, scale=1.0):
    d = rng.standard_normal(k) * scale
    d[0] = 0.0  # Delta = (0, g_1, ..., g_m) as in the game
    return d


# --------------------------------------------------------------------------- #
# Swap-regret updates
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("eta", [0.05, 1.0, 40.0])
@pytest.mark.parametrize("k", SIZES)
def test_swap_regret_update_multiplicative(k, eta):
    rng = np.random.default_rng(k)
    log_M = np.log(random_stochastic(rng, k))
    for _ in range(10):  # a short game: each step compared from the same input
        lam = stationary_distribution(np.exp(log_M))
        delta = delta_vector(rng, k)
        before = (log_M.copy(), delta.copy(), lam.copy())
        new = swap_regret_update(log_M, delta, lam, eta)
        for x, y in zip((log_M, delta, lam), before):
            np.testing.assert_array_equal(x, y)  # inputs untouched: a new array comes back
        want = ref.swap_regret_update(log_M, delta, lam, eta)
        assert new.shape == (k, k)
        np.testing.assert_allclose(new, want, rtol=1e-12,
                                   atol=1e-12 * max(1.0, np.abs(want).max()))
        assert_column_stochastic(np.exp(new))
        np.testing.assert_allclose(np.logaddexp.reduce(new, axis=0), 0.0, atol=1e-12)
        log_M = new


@pytest.mark.parametrize("floor_radius", [1e-3, 0.2])
@pytest.mark.parametrize("k", [2, 5, 30])
def test_swap_regret_update_with_a_floor(k, floor_radius):
    """TFCO's minimum multiplier radius: entries >= r/k after the step (up to the renormalization)."""
    rng = np.random.default_rng(7 + k)
    floor = floor_radius / k
    log_M = np.log(random_stochastic(rng, k))
    raised = 0
    for _ in range(20):
        lam = stationary_distribution(np.exp(log_M))
        delta = 30.0 * delta_vector(rng, k)  # large steps, so entries fall below the floor
        new = swap_regret_update(log_M, delta, lam, 1.0, floor=floor)
        want = ref.swap_regret_update_floored(log_M, delta, lam, 1.0, floor)
        np.testing.assert_allclose(new, want, rtol=1e-12, atol=1e-12 * max(1.0, np.abs(want).max()))
        assert_column_stochastic(np.exp(new))
        # after the renormalization an entry raised to the floor stays within (1 - k floor) of it
        assert np.exp(new).min() >= floor * (1.0 - k * floor) * (1 - 1e-12)
        raised += int(np.any(ref.swap_regret_update(log_M, delta, lam, 1.0) < np.log(floor)))
        log_M = new
    assert raised > 0  # the floor was exercised
    # floor 0 is the plain update, bit for bit
    np.testing.assert_array_equal(swap_regret_update(log_M, delta, lam, 1.0, floor=0.0),
                                  swap_regret_update(log_M, delta, lam, 1.0))
    with pytest.raises(ValueError, match="floor must be in"):
        swap_regret_update(log_M, delta, lam, 1.0, floor=1.0 / k)


def test_swap_regret_update_multiplicative_extreme_steps():
    """Huge eta*delta must not overflow: the update is done in log space."""
    rng = np.random.default_rng(0)
    k = 6
    log_M = np.log(random_stochastic(rng, k))
    lam = random_simplex(rng, k)
    delta = np.array([0.0, 800.0, -900.0, 3.0, 1e-3, 700.0])
    new = swap_regret_update(log_M, delta, lam, 5.0)
    want = ref.swap_regret_update(log_M, delta, lam, 5.0)
    assert np.all(np.isfinite(new))
    np.testing.assert_allclose(new, want, rtol=1e-12, atol=1e-12 * np.abs(want).max())
    assert_column_stochastic(np.exp(new))


@pytest.mark.parametrize("eta", [0.05, 1.0, 40.0])
@pytest.mark.parametrize("k", SIZES)
def test_swap_regret_update_additive(k, eta):
    rng = np.random.default_rng(100 + k)
    M = random_stochastic(rng, k)
    for _ in range(10):
        lam = stationary_distribution(M)
        delta = delta_vector(rng, k)
        before = (M.copy(), delta.copy(), lam.copy())
        new = swap_regret_update_additive(M, delta, lam, eta)
        for x, y in zip((M, delta, lam), before):
            np.testing.assert_array_equal(x, y)
        want = ref.swap_regret_update_additive(M, delta, lam, eta)
        assert new.shape == (k, k)
        np.testing.assert_allclose(new, want, rtol=1e-12, atol=1e-12)
        assert_column_stochastic(new)
        M = new
    # large steps make many columns sparse; the stationary distribution must still work
    lam = stationary_distribution(M)
    assert_stationary(M, lam)


# --------------------------------------------------------------------------- #
# Stationary distribution
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("k", SIZES)
def test_stationary_distribution_positive(k):
    rng = np.random.default_rng(200 + k)
    M = random_stochastic(rng, k)
    want = ref.stationary_distribution(M)
    M_before = M.copy()
    for lam0 in (None, random_simplex(rng, k)):
        lam, info = stationary_distribution(M, lam0, return_info=True)
        np.testing.assert_array_equal(M, M_before)
        assert_stationary(M, lam)
        np.testing.assert_allclose(lam, want, rtol=1e-9, atol=1e-10)
        assert set(info) >= {"n_iter", "fallback", "residual"}
        assert isinstance(info["n_iter"], int) and 0 <= info["n_iter"] <= 100
        assert isinstance(info["fallback"], bool)
        assert info["residual"] <= 1e-10
        lam_only = stationary_distribution(M, lam0)
        np.testing.assert_array_equal(lam_only, lam)


@pytest.mark.parametrize("k", SIZES)
def test_stationary_distribution_warm_start(k):
    rng = np.random.default_rng(300 + k)
    M = random_stochastic(rng, k)
    lam_star = ref.stationary_distribution(M)
    lam0 = lam_star.copy()
    lam, info = stationary_distribution(M, lam0, return_info=True)
    np.testing.assert_array_equal(lam0, lam_star)  # lam0 untouched
    assert info["n_iter"] <= 1 and info["fallback"] is False
    np.testing.assert_allclose(lam, lam_star, rtol=0, atol=1e-12)


@pytest.mark.parametrize("k", [5, 30])
def test_stationary_distribution_slow_mixing(k):
    """Near-identity M: power iteration from uniform cannot reach 1e-12 in
    max_iter steps, the exact fallback must take over."""
    rng = np.random.default_rng(400 + k)
    eps = 1e-3
    M = (1 - eps) * np.eye(k) + eps * random_stochastic(rng, k)
    want = ref.stationary_distribution(M)
    lam, info = stationary_distribution(M, return_info=True)
    assert info["fallback"] is True
    assert_stationary(M, lam, tol=1e-12)
    np.testing.assert_allclose(lam, want, rtol=1e-8, atol=1e-9)
    # warm start from the answer needs no fallback
    lam2, info2 = stationary_distribution(M, want, return_info=True)
    assert info2["n_iter"] <= 1 and info2["fallback"] is False
    np.testing.assert_allclose(lam2, want, atol=1e-12)


@pytest.mark.parametrize("max_iter", [1, 5, 100])
@pytest.mark.parametrize(
    "M",
    [
        np.array([[0.0, 1.0], [1.0, 0.0]]),
        np.roll(np.eye(3), 1, axis=0),
        np.roll(np.eye(5), 2, axis=0),
    ],
    ids=["swap2", "cycle3", "cycle5"],
)
def test_stationary_distribution_periodic(M, max_iter):
    """Power iteration from a non-uniform start oscillates forever on a
    periodic chain; the fallback gives the (unique, uniform) answer."""
    k = M.shape[0]
    lam0 = np.arange(1, k + 1, dtype=np.float64)
    lam0 /= lam0.sum()
    lam, info = stationary_distribution(M, lam0, max_iter=max_iter, return_info=True)
    assert info["fallback"] is True
    assert_stationary(M, lam, tol=1e-12)
    np.testing.assert_allclose(lam, np.full(k, 1.0 / k), rtol=0, atol=1e-12)


def _block_diag(*blocks):
    k = sum(b.shape[0] for b in blocks)
    M = np.zeros((k, k))
    i = 0
    for b in blocks:
        M[i:i + b.shape[0], i:i + b.shape[0]] = b
        i += b.shape[0]
    return M


def _reducible_cases():
    rng = np.random.default_rng(500)
    swap = np.array([[0.0, 1.0], [1.0, 0.0]])
    cases = {
        "two_closed_classes": _block_diag(random_stochastic(rng, 3), random_stochastic(rng, 2)),
        "two_periodic_classes": _block_diag(swap, np.roll(np.eye(3), 1, axis=0)),
        "identity": np.eye(4),
    }
    # state 0 absorbing; every other column leaks into it: unique answer e_0
    A = random_stochastic(rng, 5)
    A[:, 0] = 0.0
    A[0, 0] = 1.0
    cases["absorbing"] = A
    # transient states 0, 1 feeding a periodic class {2, 3, 4}
    T = np.zeros((5, 5))
    T[:, 0] = (0.2, 0.3, 0.5, 0.0, 0.0)
    T[:, 1] = (0.1, 0.1, 0.0, 0.4, 0.4)
    T[2:, 2:] = np.roll(np.eye(3), 1, axis=0)
    cases["transient_into_cycle"] = T
    # a zero row: nothing ever enters state 2
    Z = random_stochastic(rng, 4)
    Z[2, :] = 0.0
    Z /= Z.sum(axis=0, keepdims=True)
    cases["never_entered"] = Z
    return cases


REDUCIBLE = _reducible_cases()
UNIQUE = {
    "absorbing": np.array([1.0, 0, 0, 0, 0]),
    "transient_into_cycle": np.array([0.0, 0.0, 1 / 3, 1 / 3, 1 / 3]),
}


@pytest.mark.parametrize("max_iter", [1, 100])
@pytest.mark.parametrize("name", list(REDUCIBLE))
def test_stationary_distribution_reducible(name, max_iter):
    M = REDUCIBLE[name]
    assert_column_stochastic(M, tol=1e-15)
    k = M.shape[0]
    lam0 = np.arange(1, k + 1, dtype=np.float64) ** 2
    lam0 /= lam0.sum()
    for start in (None, lam0):
        lam, info = stationary_distribution(M, start, max_iter=max_iter, return_info=True)
        assert_stationary(M, lam, tol=1e-10)
        assert info["residual"] <= 1e-10
        if name in UNIQUE:
            np.testing.assert_allclose(lam, UNIQUE[name], rtol=0, atol=1e-10)
        if name == "never_entered":
            assert lam[2] <= 1e-15
            np.testing.assert_allclose(lam, ref.stationary_distribution(M), atol=1e-10)


def test_stationary_distribution_tol_and_max_iter():
    rng = np.random.default_rng(600)
    M = random_stochastic(rng, 8)
    lam, info = stationary_distribution(M, tol=1e-3, return_info=True)
    assert info["fallback"] is False and info["residual"] <= 1e-3
    assert np.abs(M @ lam - lam).sum() <= 1e-3
    lam, info = stationary_distribution(M, random_simplex(rng, 8), max_iter=1, tol=1e-14,
                                        return_info=True)
    assert info["n_iter"] <= 1
    assert_stationary(M, lam, tol=1e-12)


# --------------------------------------------------------------------------- #
# External-regret updates
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("eta", [0.01, 1.0, 300.0])
@pytest.mark.parametrize("k", SIZES)
def test_external_update_multiplicative(k, eta):
    rng = np.random.default_rng(700 + k)
    log_lam = np.log(random_simplex(rng, k))
    for _ in range(5):
        delta = delta_vector(rng, k, scale=3.0)
        before = log_lam.copy()
        new = external_update_multiplicative(log_lam, delta, eta)
        np.testing.assert_array_equal(log_lam, before)
        want = ref.external_update_multiplicative(log_lam, delta, eta)
        assert new.shape == (k,)
        np.testing.assert_allclose(new, want, rtol=1e-12, atol=1e-12 * max(1.0, np.abs(want).max()))
        assert np.all(np.isfinite(new))
        assert abs(np.logaddexp.reduce(new)) <= 1e-12
        log_lam = new


@pytest.mark.parametrize("k", SIZES)
def test_external_update_additive(k):
    rng = np.random.default_rng(800 + k)
    lam = random_simplex(rng, k)
    for kwargs in ({"simplex": True}, {}, {"radius": None}, {"radius": 0.5}, {"radius": 1.0},
                   {"radius": 3.0}):
        for eta in (0.01, 1.0, 10.0):
            delta = delta_vector(rng, k, scale=2.0)
            before = lam.copy()
            new = external_update_additive(lam, delta, eta, **kwargs)
            np.testing.assert_array_equal(lam, before)
            want = ref.external_update_additive(lam, delta, eta, **kwargs)
            np.testing.assert_allclose(new, want, rtol=1e-12, atol=1e-12 * max(1.0, eta))
            assert np.all(new >= 0)
            if kwargs.get("simplex"):
                assert abs(new.sum() - 1.0) <= 1e-12
            elif kwargs.get("radius") is not None:
                assert new.sum() <= kwargs["radius"] * (1 + 1e-12)


# --------------------------------------------------------------------------- #
# Projections
# --------------------------------------------------------------------------- #


def _small_vectors():
    rng = np.random.default_rng(900)
    vs = [
        np.array([0.7]),
        np.array([-3.0]),
        np.array([0.2, 0.3, 0.5]),  # already on the simplex
        np.array([0.1, 0.2, 0.0, 0.0]),  # feasible for the ball, not on the simplex
        np.array([-1.0, -2.0, -0.5]),  # all negative
        np.array([-1.0, -1.0, -1.0, -1.0]),  # all negative and tied
        np.array([0.5, 0.5, 0.5]),  # ties
        np.array([2.0, 1.0, 1.0]),  # ties exactly at the threshold
        np.array([1.0, 1.0, 1.0, 1.0, 1.0, 1.0]),
        np.array([3.0, -1.0, 3.0, 0.0, -1.0, 3.0]),
        np.array([1e-17, 0.0, -1e-17, 1.0]),
        np.array([1e6, -1e6, 1.0]),
    ]
    for size in range(1, 7):
        for _ in range(6):
            vs.append(rng.standard_normal(size) * rng.choice([0.1, 1.0, 5.0]))
        vs.append(np.round(rng.standard_normal(size) * 2) / 2)  # many ties
    return vs


SMALL = _small_vectors()
RADII = [1.0, 0.5, 3.0]


@pytest.mark.parametrize("radius", RADII)
def test_project_simplex_bruteforce(radius):
    for v in SMALL:
        want = ref.bruteforce_projection(v, radius, simplex=True)
        # the sort-based reference agrees with the exhaustive one (self-check)
        np.testing.assert_allclose(ref.project_simplex(v, radius), want, rtol=0, atol=1e-12 * max(1, np.abs(v).max()))
        before = v.copy()
        got = project_simplex(v, radius)
        np.testing.assert_array_equal(v, before)
        assert got.shape == v.shape
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12 * max(1, np.abs(v).max()),
                                   err_msg=f"v={v!r}, radius={radius}")
        assert np.all(got >= 0)
        assert abs(got.sum() - radius) <= 1e-12 * max(1, np.abs(v).max())


def test_project_simplex_default_radius_and_fixed_points():
    p = np.array([0.2, 0.3, 0.5])
    np.testing.assert_allclose(project_simplex(p), p, atol=1e-15)
    np.testing.assert_allclose(project_simplex(np.array([1.0, 1.0, 1.0, 1.0])), 0.25, atol=1e-15)
    np.testing.assert_allclose(project_simplex(2 * p, radius=2.0), 2 * p, atol=1e-15)


@pytest.mark.parametrize("radius", RADII + [np.inf])
def test_project_l1_ball_nonneg_bruteforce(radius):
    for v in SMALL:
        want = ref.bruteforce_projection(v, radius, simplex=False)
        np.testing.assert_allclose(ref.project_l1_ball_nonneg(v, radius), want, rtol=0,
                                   atol=1e-12 * max(1, np.abs(v).max()))
        before = v.copy()
        got = project_l1_ball_nonneg(v, radius)
        np.testing.assert_array_equal(v, before)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12 * max(1, np.abs(v).max()),
                                   err_msg=f"v={v!r}, radius={radius}")
        assert np.all(got >= 0)
        assert got.sum() <= radius + 1e-12 * max(1, np.abs(v).max())


def test_project_l1_ball_nonneg_default_radius():
    v = np.array([3.0, -1.0, 0.25, -0.0, 7.0])
    np.testing.assert_array_equal(project_l1_ball_nonneg(v), np.maximum(v, 0.0))
    feasible = np.array([0.1, 0.0, 0.3])
    np.testing.assert_allclose(project_l1_ball_nonneg(feasible, 1.0), feasible, atol=0)


def _assert_simplex_kkt(v, x, radius):
    """x = max(v - tau, 0) for one tau, with sum x = radius."""
    assert np.all(x >= 0)
    assert abs(x.sum() - radius) <= 1e-11 * max(1.0, radius)
    S = x > 0
    tau = (v[S] - x[S]).mean()
    np.testing.assert_allclose(v[S] - x[S], tau, atol=1e-11 * max(1.0, np.abs(v).max()))
    assert np.all(v[~S] <= tau + 1e-11 * max(1.0, np.abs(v).max()))


@pytest.mark.parametrize("size", [7, 50, 1000])
def test_projections_large(size):
    rng = np.random.default_rng(1000 + size)
    for scale, radius in ((0.01, 1.0), (1.0, 1.0), (10.0, 4.0), (1.0, 0.25)):
        v = rng.standard_normal(size) * scale
        got = project_simplex(v, radius)
        _assert_simplex_kkt(v, got, radius)
        np.testing.assert_allclose(got, ref.project_simplex(v, radius), rtol=0,
                                   atol=1e-12 * max(1.0, np.abs(v).max()))
        got = project_l1_ball_nonneg(v, radius)
        np.testing.assert_allclose(got, ref.project_l1_ball_nonneg(v, radius), rtol=0,
                                   atol=1e-12 * max(1.0, np.abs(v).max()))
        if np.maximum(v, 0).sum() > radius:
            _assert_simplex_kkt(v, got, radius)


def _column_at_a_time(log_M, delta, lam, eta, floor):
    """The multiplicative swap step one column at a time in scalar double arithmetic (math.exp and math.log are
    the C library's, as the core's): each column's max, then its sum of exp in row order, then the shift; the
    floor's raised columns normalized again. The core sweeps rows with per-column accumulators in the same
    order, so the two agree bit for bit."""
    import math

    k = log_M.shape[0]
    X = [[float(log_M[j, i]) + (eta * float(delta[j])) * float(lam[i]) for i in range(k)] for j in range(k)]

    def normalize(i):
        mx = -math.inf
        for j in range(k):
            mx = X[j][i] if mx < X[j][i] else mx
        total = 0.0
        for j in range(k):
            total += math.exp(X[j][i] - mx)
        log_total = math.log(total)
        for j in range(k):
            X[j][i] = (X[j][i] - mx) - log_total

    log_floor = math.log(floor) if floor > 0 else -math.inf
    for i in range(k):
        normalize(i)
        raised = False
        for j in range(k):
            if X[j][i] < log_floor:
                X[j][i], raised = log_floor, True
        if raised:
            normalize(i)
    return np.array(X)


@pytest.mark.parametrize("floor_radius", [0.0, 1e-3, 0.5])
@pytest.mark.parametrize("k", [2, 7, 40])
def test_swap_regret_update_is_the_column_at_a_time_step_bit_for_bit(k, floor_radius):
    rng = np.random.default_rng(100 + k)
    log_M = np.log(random_stochastic(rng, k))
    floor = floor_radius / k
    for _ in range(4):
        lam = stationary_distribution(np.exp(log_M))
        delta = 30.0 * delta_vector(rng, k)
        new = swap_regret_update(log_M, delta, lam, 0.7, floor=floor)
        np.testing.assert_array_equal(new, _column_at_a_time(log_M, delta, lam, 0.7, floor))
        log_M = new
