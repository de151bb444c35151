"""The K-class boosting pass (``rateopt.core.boosting_multiclass_pass``) against independent references.

* The confusion counts against a brute-force count: per cell and predicted
  class, the summed weights of the cell's rows whose largest score (first on
  ties, ``numpy.argmax``) is that class.
* Each row's K gradients and diagonal Hessian against a NumPy reference written
  from the softmax proxy's formula (``scipy.special.softmax``), and against
  central finite differences of the proxy's value ``max(D) (logsumexp(s) - s_t)``
  (``scipy.special.logsumexp``) and of the reference gradient.
Weighted and unweighted rows, float32 and float64 scores and outputs, both
layouts ((n, K) and LightGBM's class-major (K, n)), one thread and several.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp, softmax

from rateopt.core import ClassCells, boosting_multiclass_pass
from rateopt.exceptions import NumericalError


def _case(n, K, n_cells, weighted, seed):
    """Random cells, weights, cost tables (one indifferent cell, one with a tie for the cheapest class) and
    scores (ties between classes, saturation)."""
    rng = np.random.default_rng(seed)
    cells = rng.integers(0, n_cells, n)
    w = rng.uniform(0.1, 3.0, n) if weighted else np.ones(n)
    if weighted:
        w[:5] = 0.0  # zero-weight rows: counted as nothing, derivatives 0
    cost = rng.normal(size=(n_cells, K))
    cost[0] = 0.7  # indifferent: every prediction costs the same
    cost[1, :2] = cost[1].min() - 1.0  # two cheapest classes tie: t is the first
    scores = rng.normal(scale=2.0, size=(n, K))
    scores[5] = 0.0  # every class ties: argmax is class 0
    scores[6, :2] = 1.5  # a tie between the first two
    scores[7] = [40.0] + [-40.0] * (K - 1)
    scores[8] = [-700.0] * (K - 1) + [700.0]
    return cells, w, cost, scores


def _reference(cells, w, cost, scores, scale):
    """Brute-force counts, and the softmax proxy's derivatives from its formula."""
    n, K = scores.shape
    s = scores.astype(np.float64)
    yhat = np.argmax(s, axis=1)
    counts = np.zeros(cost.shape)
    for c in range(cost.shape[0]):
        for k in range(K):
            counts[c, k] = w[(cells == c) & (yhat == k)].sum()
    a = cost[cells]
    t = np.argmin(a, axis=1)
    top = (a - a[np.arange(n), t][:, None]).max(axis=1)
    p = softmax(s, axis=1)
    onehot = np.eye(K)[t]
    f = (scale * w * top)[:, None]
    return counts, f * (p - onehot), f * p * (1 - p), t, top


def _proxy(s, t, top):
    """One row's proxy value at scores s."""
    return top * (logsumexp(s) - s[t])


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("score_dtype", [np.float64, np.float32])
@pytest.mark.parametrize("out_dtype", [np.float64, np.float32])
@pytest.mark.parametrize("class_major", [False, True])
@pytest.mark.parametrize("n_threads", [1, 3])
def test_pass_against_numpy_reference(weighted, score_dtype, out_dtype, class_major, n_threads):
    n, K = 15000, 4  # above the pass's per-thread minimum, so three threads split the rows
    cells, w, cost, scores = _case(n, K, 6, weighted, seed=1)
    scores = scores.astype(score_dtype)
    layout = scores.T.copy() if class_major else scores
    grad, hess = np.full(layout.shape, np.nan, dtype=out_dtype), np.full(layout.shape, np.nan, dtype=out_dtype)
    counts, g, h = boosting_multiclass_pass(layout, ClassCells(cells, w, 6), cost, scale=float(n),
                                            class_major=class_major, grad=grad, hess=hess, n_threads=n_threads)
    assert g is grad and h is hess  # written in place
    want_counts, want_g, want_h, _, _ = _reference(cells, w, cost, scores, float(n))
    if class_major:
        g, h = g.T, h.T
    np.testing.assert_allclose(counts, want_counts, rtol=1e-12, atol=1e-12)
    tol = dict(rtol=1e-5, atol=1e-5) if out_dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(g, want_g, **tol)
    np.testing.assert_allclose(h, want_h, **tol)
    assert np.all(g[(w == 0) | (cells == 0)] == 0) and np.all(h[(w == 0) | (cells == 0)] == 0)
    assert np.all(h >= 0)
    # one thread: the same per-row derivatives bit for bit, the counts up to the chunks' summation order
    c1, g1, h1 = boosting_multiclass_pass(layout, ClassCells(cells, w, 6), cost, scale=float(n),
                                          class_major=class_major, grad=np.empty_like(grad),
                                          hess=np.empty_like(hess), n_threads=1)
    np.testing.assert_allclose(c1, counts, rtol=1e-12)
    assert np.array_equal(g1, grad) and np.array_equal(h1, hess)


@pytest.mark.parametrize("weighted", [False, True])
def test_derivatives_against_finite_differences(weighted):
    n, K = 40, 3
    cells, w, cost, scores = _case(n, K, 4, weighted, seed=2)
    rows = np.arange(9, n)  # away from the saturated rows, where the differences underflow
    _, g, h = boosting_multiclass_pass(scores, ClassCells(cells, w, 4), cost, scale=3.0,
                                       grad=np.empty((n, K)), hess=np.empty((n, K)))
    _, ref_g, _, t, top = _reference(cells, w, cost, scores, 3.0)
    eps = 1e-5
    for i in rows:
        for k in range(K):
            e = np.zeros(K)
            e[k] = eps
            fd = (_proxy(scores[i] + e, t[i], top[i]) - _proxy(scores[i] - e, t[i], top[i])) / (2 * eps)
            assert g[i, k] == pytest.approx(3.0 * w[i] * fd, rel=1e-6, abs=1e-8)
            # the diagonal Hessian: the central difference of the reference gradient's own column
            def grad_k(x):
                return _reference(cells[i:i + 1], w[i:i + 1], cost, x[None], 3.0)[1][0, k]

            fd_h = (grad_k(scores[i] + e) - grad_k(scores[i] - e)) / (2 * eps)
            assert h[i, k] == pytest.approx(fd_h, rel=1e-5, abs=1e-8)
    assert np.allclose(g, ref_g, rtol=1e-12, atol=1e-12)


def test_error_rate_with_unit_weights_is_the_softmax_log_loss():
    """Cost 1[k != y] / n (the error rate's table) with scale n: LightGBM's multiclass log-loss derivatives
    p - e_y and p (1 - p) (without its factor K / (K - 1) on the Hessian)."""
    rng = np.random.default_rng(3)
    n, K = 500, 5
    y = rng.integers(0, K, n)
    scores = rng.normal(size=(n, K))
    cost = (1.0 - np.eye(K)) / n
    counts, g, h = boosting_multiclass_pass(scores, ClassCells(y, np.ones(n), K), cost, scale=float(n),
                                            grad=np.empty((n, K)), hess=np.empty((n, K)))
    p = softmax(scores, axis=1)
    np.testing.assert_allclose(g, p - np.eye(K)[y], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(h, p * (1 - p), rtol=1e-12, atol=1e-14)
    assert counts.sum() == n and np.array_equal(counts.diagonal(), np.bincount(
        y[np.argmax(scores, axis=1) == y], minlength=K).astype(float))


def test_non_finite_scores_and_bad_inputs_are_refused():
    cells = ClassCells([0, 1, 0], [1.0, 1.0, 1.0], n_cells=2)
    cost = np.array([[0.0, 1.0, 2.0], [1.0, 0.0, 1.0]])
    s = np.zeros((3, 3))
    s[1, 2] = np.inf
    with pytest.raises(NumericalError, match="1 of the 3 rows"):
        boosting_multiclass_pass(s, cells, cost)
    with pytest.raises(ValueError, match="scores must have shape"):
        boosting_multiclass_pass(np.zeros((4, 3)), cells, cost)
    with pytest.raises(ValueError, match="scores must have shape"):
        boosting_multiclass_pass(np.zeros((3, 4)), cells, cost, class_major=True)
    with pytest.raises(ValueError, match="cost must have shape"):
        boosting_multiclass_pass(np.zeros((3, 3)), cells, cost[:, :2])
    with pytest.raises(ValueError, match="cost must be finite"):
        boosting_multiclass_pass(np.zeros((3, 3)), cells, np.where(cost == 2.0, np.nan, cost))
    with pytest.raises(TypeError, match="cells must be a ClassCells"):
        boosting_multiclass_pass(np.zeros((3, 3)), [0, 1, 0], cost)
    with pytest.raises(ValueError, match="grad has shape"):
        boosting_multiclass_pass(np.zeros((3, 3)), cells, cost, grad=np.empty((3, 2), dtype=np.float32))
    with pytest.raises(TypeError, match="same dtype"):
        boosting_multiclass_pass(np.zeros((3, 3)), cells, cost, grad=np.empty((3, 3), dtype=np.float32),
                                 hess=np.empty((3, 3)))
