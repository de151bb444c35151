"""The "exact" solution: the best mixture of the recorded iterates by a smooth local search.

:meth:`rateopt.TrainResult.exact_mixture` (``solution("exact")``) starts
from the shrinking LP's m-stochastic weights and improves the mixture's
objective while keeping its largest violation no worse, on the exact rates of
the mixture (so a non-linear metric objective is the function of the
mixture's rates, not a mixture of values).
"""

from __future__ import annotations

import warnings

import numpy as np

from . import _shrink

__all__ = ["exact_mixture"]


def exact_mixture(result, epsilon):
    """See :meth:`TrainResult.exact_mixture`."""
    from scipy.optimize import minimize  # lazy: `import rateopt` loads no scipy.optimize
    start = result.shrink(epsilon).weights
    rows = result.rate_map.metric
    bounded = result.rate_map.metric_constraints
    if rows is None and not bounded:
        return start
    R = result.atom_rates
    T = R.shape[0]
    G = result.constraints[:, : result.rate_map.C.shape[0]]  # (T, m): the affine constraints
    m = G.shape[1]
    Zt = rows.coordinates(R) if rows is not None else np.zeros((T, 0))  # (T, K): z_t of every iterate
    Zc = [c.coordinates(R) for c in bounded]

    def objective(q):
        return rows.metric.value(Zt.T @ q) if rows is not None else float(result.objectives @ q)

    def gradient(q):
        return Zt @ rows.metric.gradient(Zt.T @ q) if rows is not None else result.objectives

    def violation(q):
        g = list(G.T @ q) + [c.metric.value(Z.T @ q) - c.bound for c, Z in zip(bounded, Zc)]
        return max(0.0, max(g) - epsilon) if g else 0.0

    cons = [{"type": "eq", "fun": lambda q: q.sum() - 1.0, "jac": lambda q: np.ones(T)}]
    if m:
        cons.append({"type": "ineq", "fun": lambda q: epsilon - G.T @ q, "jac": lambda q: -G.T})
    for c, Z in zip(bounded, Zc):
        cons.append({"type": "ineq", "fun": lambda q, c=c, Z=Z: epsilon + c.bound - c.metric.value(Z.T @ q),
                     "jac": lambda q, c=c, Z=Z: -(Z @ c.metric.gradient(Z.T @ q))})
    def rank(q):  # less violation first, then the objective
        v = violation(q)
        return (v if v > 1e-9 else 0.0, objective(q))

    # Ratio metrics make the problem non-convex in q: SLSQP is local, so it starts
    # from the LP's mixture, from the uniform mixture and from the best iterate,
    # and the best point found (or the LP's mixture itself) is kept.
    best_vertex = np.zeros(T)
    best_vertex[min(range(T), key=lambda t: rank(np.eye(1, T, t)[0]))] = 1.0
    q = start
    for x0 in (start, np.full(T, 1.0 / T), best_vertex):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SLSQP's bound-clipping notices; the result is checked below
            res = minimize(objective, x0, jac=gradient, bounds=[(0.0, 1.0)] * T, constraints=cons,
                           method="SLSQP", options={"ftol": 1e-12, "maxiter": 500})
        cand = np.clip(res.x, 0.0, None)
        if cand.sum() > 0 and np.all(np.isfinite(cand)):
            cand = cand / cand.sum()
            if rank(cand) < rank(q):
                q = cand
    keep = np.hstack([Zt, G, *Zc]) if (m or Zc or rows is not None) else np.zeros((T, 0))
    q = _shrink._reduce_support(q, result.objectives if rows is None else np.zeros(T), keep)
    q[q < 1e-15] = 0.0
    return q / q.sum()
