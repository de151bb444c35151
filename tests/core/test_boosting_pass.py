"""The boosting pass (``rateopt.core.boosting_pass``) against independent references.

* The atom rates against a brute-force count: for each atom, the weighted share
  of its members whose score is >= 0, recounted from the membership matrix and
  the sample weights (not from the atom table).
* The per-row gradient and Hessian against a NumPy reference written from the
  proxies' formulas (``numpy.logaddexp`` for the softplus, whole-array
  ``maximum`` for the squared hinge), and against central finite differences
  of the proxy values.
Every proxy, with and without sample weights, float32 and float64 scores and
outputs, one thread and several.
"""

from __future__ import annotations

import numpy as np
import pytest

from rateopt.core import BOOSTING_PROXIES, AtomTable, boosting_pass
from rateopt.exceptions import NumericalError

PROXIES = sorted(BOOSTING_PROXIES)


def _case(n, n_atoms, weighted, seed):
    """A random overlapping membership (every row in 1-3 atoms, no atom empty), weights, coefficients and scores."""
    rng = np.random.default_rng(seed)
    M = rng.random((n, n_atoms)) < 0.4
    M[np.arange(n), rng.integers(0, n_atoms, n)] = True
    w = rng.uniform(0.1, 3.0, n) if weighted else None
    coef = rng.normal(size=n_atoms)
    scores = rng.normal(scale=2.0, size=n)
    scores[:7] = [0.0, -0.0, 1.0, -1.0, 40.0, -40.0, 800.0]  # the decision boundary, hinge kinks, saturation
    return M, w, coef, scores


def _psi(proxy, u, s):
    """Each row's proxy term ``u psi(s)`` (without the constants, which no derivative sees)."""
    if proxy == "logistic":
        return np.where(u > 0, u * np.logaddexp(0, s), -u * np.logaddexp(0, -s))
    return np.where(u > 0, u * 0.5 * np.maximum(0, 1 + s) ** 2, -u * 0.5 * np.maximum(0, 1 - s) ** 2)


def _reference(proxy, M, w, coef, scores, scale):
    """NumPy reference: brute-force rates and the proxies' derivatives from their formulas."""
    n = M.shape[0]
    w = np.ones(n) if w is None else w
    s = scores.astype(np.float64)
    V = M * w[:, None] / (M * w[:, None]).sum(axis=0)  # the normalized weights, dense
    rates = np.array([w[M[:, a] & (s >= 0)].sum() / w[M[:, a]].sum() for a in range(M.shape[1])])
    u = V @ coef
    if proxy == "logistic":
        sig = 0.5 * (1 + np.tanh(s / 2))  # sigmoid, written another way than the core
        g = np.where(u > 0, u * sig, u * (1 - sig))
        h = np.abs(u) * sig * (1 - sig)
    else:
        z = np.where(u > 0, 1 + s, 1 - s)
        g = u * np.maximum(z, 0)
        h = np.abs(u) * (z > 0)
    g[u == 0] = 0
    h[u == 0] = 0
    return rates, scale * g, scale * h, u


@pytest.mark.parametrize("proxy", PROXIES)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("score_dtype", [np.float64, np.float32])
@pytest.mark.parametrize("out_dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n_threads", [1, 3])
def test_pass_against_numpy_reference(proxy, weighted, score_dtype, out_dtype, n_threads):
    n = 30000  # above the kernel's per-thread minimum, so three threads split the rows
    M, w, coef, scores = _case(n, 6, weighted, seed=1)
    scores = scores.astype(score_dtype)
    atoms = AtomTable.from_membership(M, sample_weight=w)
    grad, hess = np.full(n, np.nan, dtype=out_dtype), np.full(n, np.nan, dtype=out_dtype)
    rates, g, h = boosting_pass(scores, atoms, coef, proxy=proxy, scale=float(n), grad=grad, hess=hess,
                                n_threads=n_threads)
    assert g is grad and h is hess  # written in place
    want_rates, want_g, want_h, _ = _reference(proxy, M, w, coef, scores, float(n))
    np.testing.assert_allclose(rates, want_rates, rtol=1e-12, atol=1e-14)
    # u_j sums terms of both signs: its round-off (the reference normalizes the weights its own way) is relative
    # to the terms' size, so the absolute tolerance is set by the largest derivative
    tol = 1e-10 if out_dtype == np.float64 else 2e-7
    np.testing.assert_allclose(g, want_g, rtol=tol, atol=tol * np.abs(want_g).max())
    np.testing.assert_allclose(h, want_h, rtol=tol, atol=tol * np.abs(want_h).max())
    assert np.all(h >= 0)


@pytest.mark.parametrize("proxy", PROXIES)
@pytest.mark.parametrize("weighted", [False, True])
def test_derivatives_against_finite_differences(proxy, weighted):
    n = 400
    M, w, coef, scores = _case(n, 4, weighted, seed=2)
    scores = scores[20:]  # away from the kinks and the saturated rows
    M = M[20:]
    w = None if w is None else w[20:]
    if proxy == "squared_hinge":
        scores = scores[(np.abs(np.abs(scores) - 1) > 1e-3)]  # off the kink at |s| = 1 (the Hessian jumps there)
    n = scores.shape[0]
    atoms = AtomTable.from_membership(M[:n], sample_weight=None if w is None else w[:n])
    _, g, h = boosting_pass(scores, atoms, coef, proxy=proxy, scale=3.0, grad=np.empty(n), hess=np.empty(n))
    _, _, _, u = _reference(proxy, M[:n], None if w is None else w[:n], coef, scores, 3.0)
    eps = 1e-5
    first = 3.0 * (_psi(proxy, u, scores + eps) - _psi(proxy, u, scores - eps)) / (2 * eps)
    eps2 = 1e-4
    second = 3.0 * (_psi(proxy, u, scores + eps2) - 2 * _psi(proxy, u, scores) + _psi(proxy, u, scores - eps2)) / eps2**2
    np.testing.assert_allclose(g, first, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(h, second, rtol=1e-4, atol=1e-6 * np.abs(h).max())


@pytest.mark.parametrize("proxy", PROXIES)
def test_the_proxies_bound_the_indicator(proxy):
    s = np.linspace(-6, 6, 1201)
    c = np.log(2.0) if proxy == "logistic" else 0.5  # the factor, the same for every rate
    one = np.ones_like(s)
    assert np.all(c * (s >= 0) <= _psi(proxy, one, s))  # u > 0 bounds 1[s >= 0]
    assert np.all(c * (s < 0) <= _psi(proxy, -one, s))  # u < 0: u 1[s >= 0] = |u| 1[s < 0] - |u|
    assert _psi(proxy, one, np.zeros(1))[0] == pytest.approx(c)  # tight at the boundary


def test_error_rate_logistic_derivatives_are_the_log_loss_ones():
    # unit weights, the error rate: u_j = +1/n for negatives, -1/n for positives; scaled by n: sigma - y, sigma(1-sigma)
    rng = np.random.default_rng(3)
    n = 500
    y = rng.integers(0, 2, n)
    M = np.column_stack([y == 0, y == 1])
    coef = np.array([(y == 0).mean(), -(y == 1).mean()])  # error = P(y=0) p+(neg) - P(y=1) p+(pos) + const
    s = rng.normal(size=n)
    _, g, h = boosting_pass(s, AtomTable.from_membership(M), coef, scale=float(n), grad=np.empty(n),
                            hess=np.empty(n))
    sig = 1 / (1 + np.exp(-s))
    np.testing.assert_allclose(g, sig - y, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(h, sig * (1 - sig), rtol=1e-12, atol=1e-14)


def test_deterministic_for_a_thread_count():
    M, w, coef, scores = _case(40000, 5, True, seed=4)
    atoms = AtomTable.from_membership(M, sample_weight=w)
    a = boosting_pass(scores, atoms, coef, n_threads=2)
    b = boosting_pass(scores, atoms, coef, n_threads=2)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))


def test_refusals():
    M, _, coef, scores = _case(50, 3, False, seed=5)
    atoms = AtomTable.from_membership(M)
    with pytest.raises(ValueError, match="proxy must be one of"):
        boosting_pass(scores, atoms, coef, proxy="hinge")
    with pytest.raises(ValueError, match="scores must have shape"):
        boosting_pass(scores[:-1], atoms, coef)
    with pytest.raises(ValueError, match="coef"):
        boosting_pass(scores, atoms, np.array([1.0, np.nan, 0.0]))
    with pytest.raises(ValueError, match="grad has length"):
        boosting_pass(scores, atoms, coef, grad=np.empty(49, np.float32))
    with pytest.raises(TypeError, match="same dtype"):
        boosting_pass(scores, atoms, coef, grad=np.empty(50, np.float32), hess=np.empty(50))
    ro = np.empty(50, np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="writable"):
        boosting_pass(scores, atoms, coef, grad=ro)
    bad = scores.copy()
    bad[3] = np.inf
    with pytest.raises(NumericalError, match="1 of the 50 scores are not finite"):
        boosting_pass(bad, atoms, coef)


@pytest.mark.parametrize("id_dtype", [np.uint8, np.uint16, np.int32])
@pytest.mark.parametrize("wide_pointers", [False, True])
def test_every_atom_table_layout_gives_the_same_pass(id_dtype, wide_pointers):
    """The pass reads the table's row pointers (int32 or int64) and atom ids (uint8, uint16 or int32) in
    typed loops chosen once per block: every layout gives the bits of the NumPy-checked uint8/int32 table.
    The same memberships are spread over more atom ids (the unused ones stay empty) so that the narrowest
    id type is the one under test; int64 row pointers (tables of 2**31 entries and more) go straight to the
    core's binding, the only way to reach them on a small table."""
    from rateopt.core._runtime import extension as _core

    n, k = 5000, 6
    M, w, coef, scores = _case(n, k, True, seed=7)
    base = AtomTable.from_membership(M, sample_weight=w)
    assert base.indices.dtype == np.uint8 and base.indptr.dtype == np.int32
    want = boosting_pass(scores, base, coef, scale=float(n))
    ref_rates, ref_g, ref_h, _ = _reference("logistic", M, w, coef, scores, float(n))
    np.testing.assert_allclose(want[0], ref_rates, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(want[1], ref_g, rtol=2e-7, atol=2e-7 * np.abs(ref_g).max())
    np.testing.assert_allclose(want[2], ref_h, rtol=2e-7, atol=2e-7 * np.abs(ref_h).max())
    n_atoms = {np.uint8: k, np.uint16: 300, np.int32: 70000}[id_dtype]
    spread = np.linspace(0, n_atoms - 1, k).astype(np.int64)  # atom a of the base table is atom spread[a]
    table = AtomTable(base.indptr, spread[base.indices.astype(np.int64)], base.weights, n_atoms)
    assert table.indices.dtype == id_dtype
    wide_coef = np.zeros(n_atoms)
    wide_coef[spread] = coef
    grad, hess = np.empty(n, np.float32), np.empty(n, np.float32)
    indptr = table.indptr.astype(np.int64) if wide_pointers else table.indptr
    rates, nonfinite = _core.boosting_pass(scores, indptr, table.indices, table.weights, n_atoms, wide_coef, 0,
                                           float(n), grad, hess, 1)
    assert nonfinite == 0
    assert np.array_equal(rates[spread], want[0]) and not rates[np.setdiff1d(np.arange(n_atoms), spread)].any()
    assert np.array_equal(grad, want[1]) and np.array_equal(hess, want[2])


@pytest.mark.parametrize("proxy", PROXIES)
@pytest.mark.parametrize("score_dtype", [np.float64, np.float32])
def test_trusted_pass_against_numpy_reference_and_the_checked_pass(proxy, score_dtype):
    """boosting_pass_trusted (a boosted run's per-tree call) gives the reference's rates and derivatives, and
    the checked pass's bits; a non-finite score still raises."""
    from rateopt.core import boosting_pass_trusted

    n = 2000
    M, w, coef, scores = _case(n, 5, True, seed=3)
    scores = scores.astype(score_dtype)
    atoms = AtomTable.from_membership(M, sample_weight=w)
    grad, hess = np.full(n, np.nan, dtype=np.float32), np.full(n, np.nan, dtype=np.float32)
    rates = boosting_pass_trusted(scores, atoms, coef, BOOSTING_PROXIES[proxy], float(n), grad, hess, 1)
    want_rates, want_g, want_h, _ = _reference(proxy, M, w, coef, scores, float(n))
    np.testing.assert_allclose(rates, want_rates, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(grad, want_g, rtol=2e-7, atol=2e-7 * np.abs(want_g).max())
    np.testing.assert_allclose(hess, want_h, rtol=2e-7, atol=2e-7 * np.abs(want_h).max())
    checked_rates, g, h = boosting_pass(scores, atoms, coef, proxy=proxy, scale=float(n), n_threads=1)
    assert np.array_equal(rates, checked_rates) and np.array_equal(grad, g) and np.array_equal(hess, h)
    scores[5] = np.inf
    with pytest.raises(NumericalError, match="not finite"):
        boosting_pass_trusted(scores, atoms, coef, BOOSTING_PROXIES[proxy], float(n), grad, hess, 1)


@pytest.mark.parametrize("proxy", PROXIES)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("out_dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n_threads", [1, 3])
@pytest.mark.parametrize("wide", [False, True])
def test_a_curvature_coefficient_replaces_abs_u_in_the_hessian_only(proxy, weighted, out_dtype, n_threads, wide):
    """``hess_coef``: the Hessian's ``|u_j|`` becomes ``w_j = sum_a hess_coef_a v_ja`` (recomputed here from the
    dense membership, not the atom table); the rates and the gradient are those of the pass without it, bit for
    bit. Every atom-table layout (``wide``: int32 ids over 70,000 atoms, int64 row pointers)."""
    from rateopt.core._runtime import extension as _core

    n, k = 30000, 6
    M, w, coef, scores = _case(n, k, weighted, seed=3)
    rng = np.random.default_rng(5)
    hess_coef = np.abs(coef) + rng.uniform(0.0, 2.0, k)  # >= |coef|: the absolute terms of a net coefficient
    hess_coef[0] = 0.0  # an atom with no curvature
    atoms = AtomTable.from_membership(M, sample_weight=w)
    base = boosting_pass(scores, atoms, coef, proxy=proxy, scale=float(n), grad=np.empty(n, out_dtype),
                         hess=np.empty(n, out_dtype), n_threads=n_threads)
    grad, hess = np.full(n, np.nan, out_dtype), np.full(n, np.nan, out_dtype)
    if wide:
        n_atoms = 70000
        spread = np.linspace(0, n_atoms - 1, k).astype(np.int64)
        table = AtomTable(atoms.indptr, spread[atoms.indices.astype(np.int64)], atoms.weights, n_atoms)
        wide_coef, wide_hc = np.zeros(n_atoms), np.zeros(n_atoms)
        wide_coef[spread], wide_hc[spread] = coef, hess_coef
        rates, nonfinite = _core.boosting_pass(scores, table.indptr.astype(np.int64), table.indices, table.weights,
                                               n_atoms, wide_coef, BOOSTING_PROXIES[proxy], float(n), grad, hess,
                                               n_threads, wide_hc)
        assert nonfinite == 0
        rates = rates[spread]
    else:
        rates, _, _ = boosting_pass(scores, atoms, coef, proxy=proxy, scale=float(n), grad=grad, hess=hess,
                                    n_threads=n_threads, hess_coef=hess_coef)
    assert np.array_equal(rates, base[0]) and np.array_equal(grad, base[1])
    _, _, ref_h, u = _reference(proxy, M, w, coef, scores, float(n))
    ww = np.ones(n) if w is None else w
    V = M * ww[:, None] / (M * ww[:, None]).sum(axis=0)
    wj = V @ hess_coef
    with np.errstate(divide="ignore", invalid="ignore"):  # the reference's Hessian with |u| replaced by w
        want_h = np.where(u != 0, ref_h / np.abs(u) * wj, 0.0)
    tol = 1e-12 if out_dtype == np.float64 else 2e-7
    np.testing.assert_allclose(hess, want_h, rtol=tol, atol=tol * np.abs(want_h).max())
    assert np.any(hess.astype(float) > np.asarray(base[2], dtype=float) * (1 + 1e-3))  # it does change the Hessian


def test_hess_coef_refusals():
    M, w, coef, scores = _case(50, 3, False, seed=2)
    atoms = AtomTable.from_membership(M)
    for bad, msg in [(np.array([1.0, -1.0, 1.0]), ">= 0"), (np.array([1.0, np.nan, 1.0]), "non-finite"),
                     (np.ones(2), "hess_coef has length 2")]:
        with pytest.raises(ValueError, match=msg):
            boosting_pass(scores, atoms, coef, hess_coef=bad)


@pytest.mark.parametrize("proxy", PROXIES)
def test_trusted_pass_takes_the_curvature_coefficients_as_the_checked_pass(proxy):
    """boosting_pass_trusted with ``hess_coef`` gives the checked pass's bits (the boosted player's call)."""
    from rateopt.core import boosting_pass_trusted

    n = 1500
    M, w, coef, scores = _case(n, 4, True, seed=5)
    atoms = AtomTable.from_membership(M, w)
    curv = np.abs(coef) + np.random.default_rng(5).uniform(0.0, 1.0, coef.shape)
    rates, g, h = boosting_pass(scores, atoms, coef, proxy=proxy, scale=float(n), n_threads=1, hess_coef=curv)
    grad, hess = np.empty(n, np.float32), np.empty(n, np.float32)
    got = boosting_pass_trusted(scores, atoms, np.ascontiguousarray(coef), BOOSTING_PROXIES[proxy], float(n),
                                grad, hess, 1, np.ascontiguousarray(curv))
    assert np.array_equal(got, rates) and np.array_equal(grad, g) and np.array_equal(hess, h)
    # the curvature changes the Hessian where the net coefficient is smaller than the absolute sum
    plain = boosting_pass(scores, atoms, coef, proxy=proxy, scale=float(n), n_threads=1)[2]
    assert not np.array_equal(plain, h)


@pytest.mark.parametrize("length", [1, 2, 3, 4])
@pytest.mark.parametrize("score_dtype", [np.float64, np.float32])
@pytest.mark.parametrize("curvature", [False, True])
def test_rows_of_one_length_give_the_reference_and_zero_terms_change_no_bit(length, score_dtype, curvature):
    """A table whose rows all hold ``length`` entries (demographic parity's tables: a label's objective atom, a
    group's atom, the overall one), with scores of both signs in every block, gives the NumPy reference's rates
    and derivatives, and exactly the bits of the same table whose odd rows carry one more entry of weight 0
    (a zero term changes no sum and no decision's count)."""
    rng = np.random.default_rng(11 + length)
    n, k = 1500, 7  # three blocks of 512 rows, the last one partial
    M = np.zeros((n, k), dtype=bool)
    for j in range(n):
        M[j, rng.choice(k, size=length, replace=False)] = True
    for a in np.flatnonzero(~M.any(axis=0)):  # an empty atom (unlikely): swapped into a row for another
        j = int(rng.integers(n))
        M[j, np.flatnonzero(M[j])[0]] = False
        M[j, a] = True
    w = rng.uniform(0.1, 3.0, n)
    coef = rng.normal(size=k)
    curv = np.abs(rng.normal(size=k)) + np.abs(coef) if curvature else None
    scores = rng.normal(scale=2.0, size=n).astype(score_dtype)
    scores[:4] = [0.0, -0.0, 1.0, -1.0]
    atoms = AtomTable.from_membership(M, sample_weight=w)
    assert np.all(np.diff(atoms.indptr) == length)
    rates, g, h = boosting_pass(scores, atoms, coef, scale=float(n), n_threads=1, hess_coef=curv)
    want_rates, want_g, want_h, _ = _reference("logistic", M, w, coef, scores, float(n))
    if curvature:  # the Hessian's |u| becomes the row's curvature coefficient (where u != 0)
        V = M * w[:, None] / (M * w[:, None]).sum(axis=0)
        s = scores.astype(np.float64)
        sig = 0.5 * (1 + np.tanh(s / 2))
        want_h = float(n) * (V @ curv) * sig * (1 - sig) * (V @ coef != 0)
    np.testing.assert_allclose(rates, want_rates, rtol=1e-12, atol=1e-14)
    tol = 2e-7  # the core's exponential (fast_exp.hpp), as the other tests' bound
    np.testing.assert_allclose(g, want_g, rtol=tol, atol=tol * np.abs(want_g).max())
    np.testing.assert_allclose(h, want_h, rtol=tol, atol=tol * np.abs(want_h).max())
    # the same table, odd rows padded with a zero-weight entry of their first atom
    counts = np.diff(atoms.indptr) + (np.arange(n) % 2)
    indptr = np.concatenate(([0], np.cumsum(counts))).astype(atoms.indptr.dtype)
    indices = np.empty(indptr[-1], dtype=np.int64)
    weights = np.zeros(indptr[-1])
    for j in range(n):
        a, b = atoms.indptr[j], atoms.indptr[j + 1]
        indices[indptr[j]:indptr[j] + length] = atoms.indices[a:b]
        weights[indptr[j]:indptr[j] + length] = atoms.weights[a:b]
        if j % 2:
            indices[indptr[j] + length] = atoms.indices[a]
    padded = AtomTable(indptr, indices, weights, k)
    assert padded.indices.dtype == atoms.indices.dtype
    rates2, g2, h2 = boosting_pass(scores, padded, coef, scale=float(n), n_threads=1, hess_coef=curv)
    assert np.array_equal(rates, rates2) and np.array_equal(g, g2) and np.array_equal(h, h2)
