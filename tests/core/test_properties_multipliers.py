"""Property-based tests of the lambda player's primitives in ``rateopt.core``.

Projections: for any finite ``v`` (entries up to +-1e17 and beyond) and radius
(1e-300 .. 1e300) the output is non-negative, sums to the radius (simplex) or at
most the radius (capped orthant) within 1e-12 relative, and satisfies the KKT
conditions of the Euclidean projection: there is a threshold ``tau`` with
``x = max(v - tau, 0)`` (``tau >= 0`` for the capped orthant). Multiplier
updates return finite (log: finite or -inf) distributions/left-stochastic
matrices (columns sum to 1 within 1e-9), agree with tests/reference.py where
the arithmetic is benign, and where products overflow they raise a clear
``ValueError`` (``NumericalError``), never returning inf/NaN.
"""

from __future__ import annotations

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rateopt.core import (
    external_update_additive,
    external_update_multiplicative,
    project_l1_ball_nonneg,
    project_simplex,
    stationary_distribution,
    swap_regret_update,
    swap_regret_update_additive,
)

import _properties_support as S
import reference as ref

EPS = S.EPS

V_VALUES = st.one_of(
    st.integers(-3, 3).map(float),
    st.floats(-10.0, 10.0),
    S.signed(S.log_uniform(-20, 17)),
    st.sampled_from([1e17, -1e17, 0.0]),
)
HUGE_V_VALUES = st.one_of(V_VALUES, S.signed(S.log_uniform(17, 300)))
RADII = st.one_of(st.just(1.0), S.log_uniform(-300, 299), st.sampled_from([1e-300, 1e300, 0.5, 3.0]))
STEP = st.one_of(st.just(0.0), S.log_uniform(-3, 3), S.log_uniform(3, 300))
GAINS = st.one_of(st.integers(-3, 3).map(float), st.floats(-10.0, 10.0), S.signed(S.log_uniform(-5, 300)))


def vectors(elements, min_size=1, max_size=8):
    return st.lists(elements, min_size=min_size, max_size=max_size).map(lambda v: np.array(v, np.float64))


def outcome(fn, *args, **kwargs):
    res, exc, rec = S.call_recording(fn, *args, **kwargs)
    assert not rec, [str(w.message) for w in rec]
    if exc is not None:
        assert isinstance(exc, (ValueError, TypeError)), f"{fn.__name__} crashed with {exc!r}"
    return res, exc


def assert_projection(x, v, radius, *, simplex, what):
    """x is the Euclidean projection of v onto {x >= 0, sum x = radius} (simplex) or
    {x >= 0, sum x <= radius}, up to rounding: feasibility and the KKT conditions
    (x = max(v - tau, 0) for one threshold tau; tau >= 0 for the capped orthant)."""
    v = np.asarray(v, np.float64)
    assert x.shape == v.shape, what
    assert np.all(np.isfinite(x)), f"{what}: non-finite output {x!r} (v={v.tolist()})"
    assert np.all(x >= 0), f"{what}: negative entries {x!r}"
    vmax = float(np.max(np.abs(v)))
    tol = 1e-12 * (vmax + (radius if np.isfinite(radius) else 0.0)) + 1e-300
    with np.errstate(over="ignore"):
        total = float(np.sum(x))
        pos_sum = float(np.sum(np.maximum(v, 0.0)))
    active = simplex or pos_sum > radius
    if not simplex:
        assert total <= radius * (1 + 1e-12), (
            f"{what}: sum {total!r} > radius {radius!r} (v={v.tolist()}, x={x.tolist()})")
    if simplex or pos_sum > radius * (1 + 1e-12):
        assert abs(total - radius) <= 1e-12 * radius, (
            f"{what}: sum {total!r} != radius {radius!r} (v={v.tolist()}, x={x.tolist()})")
    if not active:  # the cap is not binding: x = max(v, 0)
        np.testing.assert_allclose(x, np.maximum(v, 0.0), rtol=1e-12, atol=1e-300, err_msg=what)
        return
    support = x > 0
    assert np.any(support), f"{what}: x = 0 although the radius {radius!r} is positive (v={v.tolist()})"
    taus = v[support] - x[support]
    tau = float(np.median(taus))
    if not simplex:
        assert tau >= -tol, f"{what}: the cap is active with a negative threshold {tau!r}"
    assert np.all(np.abs(taus - tau) <= tol), (
        f"{what}: no single threshold: v - x on the support = {taus.tolist()} (v={v.tolist()}, x={x.tolist()})")
    assert np.all(v[~support] <= tau + tol), (
        f"{what}: entries {v[~support].tolist()} above the threshold {tau!r} were zeroed (x={x.tolist()})")


def benign(v, radius):
    """Arithmetic where a float64 implementation has no excuse: moderate sizes and ratios."""
    vmax = float(np.max(np.abs(v)))
    return 1e-100 <= radius <= 1e100 and vmax <= 1e6 * radius and vmax <= 1e100


# --------------------------------------------------------------------------- #
# Projections
# --------------------------------------------------------------------------- #


@settings(max_examples=S.examples(300))
@given(vectors(HUGE_V_VALUES), RADII)
def test_project_simplex_is_the_projection(v, radius):
    """project_simplex(v, radius): x >= 0, sum x = radius (1e-12 relative), KKT
    (x = max(v - tau, 0)); equals the sort-and-threshold reference when benign;
    an error only as a ValueError and only for extreme magnitudes."""
    x, exc = outcome(project_simplex, v, radius)
    if exc is not None:
        assert not benign(v, radius), f"error on a benign projection: {exc!r}"
        return
    assert_projection(x, v, radius, simplex=True, what="project_simplex")
    if benign(v, radius):
        want = ref.project_simplex(v, radius)
        np.testing.assert_allclose(x, want, rtol=0, atol=1e-12 * (np.max(np.abs(v)) + radius))


@settings(max_examples=S.examples(250))
@given(vectors(HUGE_V_VALUES), st.one_of(st.none(), RADII))
def test_project_l1_ball_nonneg_is_the_projection(v, radius):
    """project_l1_ball_nonneg(v, radius): x >= 0, sum x <= radius; x = max(v, 0) when
    that fits, else sum x = radius with a threshold tau >= 0 (KKT)."""
    x, exc = outcome(project_l1_ball_nonneg, v, radius)
    r = np.inf if radius is None else radius
    if exc is not None:
        assert radius is not None and not benign(v, r), f"error on a benign projection: {exc!r}"
        return
    assert_projection(x, v, r, simplex=False, what="project_l1_ball_nonneg")
    if benign(v, r if np.isfinite(r) else 1.0):
        want = ref.project_l1_ball_nonneg(v, r)
        np.testing.assert_allclose(x, want, rtol=0, atol=1e-12 * (np.max(np.abs(v)) + (r if np.isfinite(r) else 0)))


@settings(max_examples=S.examples(200))
@given(st.integers(1, 6).flatmap(lambda k: st.tuples(vectors(V_VALUES, k, k), vectors(GAINS, k, k))), STEP,
       st.one_of(st.none(), RADII), st.booleans())
def test_external_update_additive(lam_delta, eta, radius, simplex):
    """Projected gradient step: a point of the simplex (simplex=True) or the capped
    orthant, the projection of lam + eta*delta; never inf/NaN when the step overflows."""
    lam, delta = lam_delta
    x, exc = outcome(external_update_additive, lam, delta, eta, radius=radius, simplex=simplex)
    with np.errstate(all="ignore"):
        v = lam + eta * delta
    r = 1.0 if simplex else (np.inf if radius is None else radius)
    ok_arith = bool(np.all(np.isfinite(v))) and benign(v, r if np.isfinite(r) else 1.0)
    if exc is not None:
        assert not ok_arith, f"error on a benign step: {exc!r}"
        return
    assert np.all(np.isfinite(x)), f"returned non-finite multipliers {x!r} (v = lam + eta*delta = {v!r})"
    if np.all(np.isfinite(v)):
        assert_projection(x, v, r, simplex=simplex, what="external_update_additive")
    else:
        assert np.all(x >= 0)
        if simplex:
            assert abs(x.sum() - 1.0) <= 1e-9
    if ok_arith:
        with np.errstate(all="ignore"):
            want = ref.external_update_additive(lam, delta, eta, radius=radius, simplex=simplex)
        np.testing.assert_allclose(x, want, rtol=0, atol=1e-10 * max(1.0, float(np.max(np.abs(v)))))


def _log_vector(draw, k):
    vals = draw(st.lists(st.one_of(st.floats(-50.0, 50.0), st.just(-np.inf), S.signed(S.log_uniform(0, 300))),
                         min_size=k, max_size=k))
    if all(np.isneginf(vals)):
        vals[draw(st.integers(0, k - 1))] = 0.0
    return np.array(vals, np.float64)


@settings(max_examples=S.examples(200))
@given(st.data(), st.integers(1, 6), STEP)
def test_external_update_multiplicative(data, k, eta):
    """Hedge step: a log-distribution (entries finite or -inf, exp sums to 1 within
    1e-9), equal to log_softmax(log_lam + eta*delta) when that is finite."""
    log_lam = _log_vector(data.draw, k)
    delta = data.draw(vectors(GAINS, k, k))
    out, exc = outcome(external_update_multiplicative, log_lam, delta, eta)
    with np.errstate(all="ignore"):
        z = log_lam + eta * delta
    finite = bool(np.all(np.isfinite(z) | np.isneginf(z)) and np.any(np.isfinite(z)))
    if exc is not None:
        assert not finite, f"error on a finite step: {exc!r}"
        return
    assert not np.any(np.isnan(out) | np.isposinf(out)), f"returned {out!r}"
    with np.errstate(over="ignore"):
        p = np.exp(out)
    assert abs(p.sum() - 1.0) <= 1e-9, f"exp(out) sums to {p.sum()!r}: {out!r}"
    if finite:
        with np.errstate(all="ignore"):
            want = ref.external_update_multiplicative(log_lam, delta, eta)
        np.testing.assert_allclose(p, np.exp(want), rtol=0, atol=1e-12)


# --------------------------------------------------------------------------- #
# Swap-regret updates and the stationary distribution
# --------------------------------------------------------------------------- #

STOCH_VALUES = st.one_of(st.just(0.0), st.floats(0.0, 1.0), S.log_uniform(-300, 0))


@st.composite
def stochastic_matrices(draw, k):
    """Left-stochastic k x k matrices: zeros (sparse, periodic, reducible chains), tiny entries."""
    kind = draw(st.sampled_from(["random", "random", "permutation", "leaky permutation", "identity"]))
    if kind in ("permutation", "leaky permutation"):
        P = np.eye(k)[:, draw(st.permutations(range(k)))].copy()
        if kind == "leaky permutation":  # a (nearly) periodic chain with tiny leaks
            for i in draw(st.lists(st.integers(0, k - 1), min_size=1, max_size=k, unique=True)):
                leak = draw(S.log_uniform(-300, -1))
                P[:, i] *= 1.0 - leak
                P[draw(st.integers(0, k - 1)), i] += leak
        return P
    if kind == "identity":
        return np.eye(k)
    A = np.array(draw(st.lists(st.lists(STOCH_VALUES, min_size=k, max_size=k), min_size=k, max_size=k)))
    for i in range(k):
        if A[:, i].sum() == 0:
            A[draw(st.integers(0, k - 1)), i] = 1.0
    return A / A.sum(axis=0, keepdims=True)


def assert_left_stochastic(M, what, tol=1e-9):
    assert np.all(np.isfinite(M)), f"{what}: non-finite entries {M!r}"
    assert np.all(M >= 0), f"{what}: negative entries {M!r}"
    with np.errstate(over="ignore"):
        sums = M.sum(axis=0)
    assert np.all(np.abs(sums - 1.0) <= tol), f"{what}: column sums {sums!r}"


def products_finite(eta, delta, lam):
    """eta*delta_j*lam_i is finite in every evaluation order (no intermediate overflow,
    so no inf * 0 = NaN either)."""
    with np.errstate(all="ignore"):
        parts = [eta * delta, np.outer(delta, lam), eta * lam, eta * np.outer(delta, lam)]
    return all(bool(np.all(np.isfinite(p))) for p in parts)


@st.composite
def swap_inputs(draw):
    k = draw(st.integers(1, 5))
    M = draw(stochastic_matrices(k))
    delta = draw(vectors(GAINS, k, k))
    if draw(st.booleans()):
        lam = draw(vectors(st.floats(0.0, 1.0), k, k))
        lam = lam / lam.sum() if lam.sum() > 0 else np.full(k, 1.0 / k)
    else:
        lam = draw(vectors(GAINS, k, k))
    return M, delta, lam, draw(STEP)


@settings(max_examples=S.examples(200))
@given(swap_inputs())
def test_swap_regret_update_multiplicative(inp):
    """log M + eta*delta lam^T, columns log-normalized: exp of the result is
    left-stochastic (1e-9), no NaN/+inf entries; equal to the reference when the
    products are finite; an overflowing step raises instead of returning NaN."""
    M, delta, lam, eta = inp
    with np.errstate(divide="ignore"):
        log_M = np.log(M)
    out, exc = outcome(swap_regret_update, log_M, delta, lam, eta)
    with np.errstate(all="ignore"):
        L = log_M + eta * np.outer(delta, lam)
    finite = products_finite(eta, delta, lam) and bool(np.all(np.isfinite(L) | np.isneginf(L)))
    if exc is not None:
        assert not finite, f"error on a finite update: {exc!r}"
        return
    assert not np.any(np.isnan(out) | np.isposinf(out)), f"returned {out!r}"
    with np.errstate(over="ignore"):
        assert_left_stochastic(np.exp(out), "exp(swap_regret_update)")
    if finite:
        with np.errstate(all="ignore"):
            want = ref.swap_regret_update(log_M, delta, lam, eta)
        np.testing.assert_allclose(np.exp(out), np.exp(want), rtol=0, atol=1e-9)


@settings(max_examples=S.examples(200))
@given(swap_inputs())
def test_swap_regret_update_additive(inp):
    """M + eta*delta lam^T, columns projected onto the simplex: left-stochastic (1e-9)
    and finite; equal to the reference when the step is moderate; an overflowing
    step raises instead of returning inf/NaN."""
    M, delta, lam, eta = inp
    out, exc = outcome(swap_regret_update_additive, M, delta, lam, eta)
    with np.errstate(all="ignore"):
        A = M + eta * np.outer(delta, lam)
    finite = products_finite(eta, delta, lam) and bool(np.all(np.isfinite(A)))
    if exc is not None:
        assert not (finite and np.max(np.abs(A)) <= 1e6), f"error on a moderate update: {exc!r}"
        return
    assert_left_stochastic(out, "swap_regret_update_additive")
    if finite:
        for i in range(A.shape[1]):
            assert_projection(out[:, i], A[:, i], 1.0, simplex=True, what=f"column {i}")
    if finite and np.max(np.abs(A)) <= 1e6:
        with np.errstate(all="ignore"):
            want = ref.swap_regret_update_additive(M, delta, lam, eta)
        np.testing.assert_allclose(out, want, rtol=0, atol=1e-9)


@st.composite
def chains(draw):
    """A left-stochastic matrix and a warm start (None, a vertex, or any positive vector)."""
    k = draw(st.integers(1, 6))
    M = draw(stochastic_matrices(k))
    lam0 = draw(st.one_of(
        st.none(),
        st.integers(0, k - 1).map(lambda i: np.eye(k)[i]),
        vectors(st.one_of(st.just(0.0), st.floats(0.0, 10.0)), k, k).filter(lambda x: x.sum() > 0),
    ))
    return M, lam0


def _leaky_two_cycle(a):
    """States 2 <-> 3 alternate; 3 -> 1 and 1 -> 0 leak with probability a; 0 -> 1.
    From the vertex (0, 0, 1, 0) power iteration oscillates, so the exact fallback runs."""
    M = np.array([[0, a, 0, 0], [1, 0, 0, a], [0, 1 - a, 0, 1 - a], [0, 0, 1, 0]], np.float64)
    return M, np.array([0.0, 0.0, 1.0, 0.0])


@settings(max_examples=S.examples(200))
@given(chains(), st.sampled_from([0, 1, 100]), st.sampled_from([1e-12, 0.0]))
@example(chain=_leaky_two_cycle(1e-100), max_iter=100, tol=1e-12)
@example(chain=_leaky_two_cycle(1e-170), max_iter=100, tol=1e-12)  # products of leaks underflow
def test_stationary_distribution(chain, max_iter, tol):
    """A distribution (finite, >= 0, sums to 1 within 1e-9) with ||M lam - lam||_1 <=
    1e-9, for any left-stochastic M (periodic, reducible, tiny entries) and warm start."""
    M, lam0 = chain
    k = M.shape[0]
    lam, exc = outcome(stationary_distribution, M, lam0, tol=tol, max_iter=max_iter)
    assert exc is None, f"refused a left-stochastic matrix: {exc!r}"
    assert lam.shape == (k,) and np.all(np.isfinite(lam)) and np.all(lam >= 0), lam
    assert abs(lam.sum() - 1.0) <= 1e-9, lam.sum()
    assert np.abs(M @ lam - lam).sum() <= 1e-9, f"residual {np.abs(M @ lam - lam).sum()!r}"
