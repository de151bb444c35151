"""From training iterates to a final model: shrinking LP, rank heuristic, mixtures.

After training we hold ``T`` candidate iterates ``theta(1..T)``. For each one we
know its training objective ``f[t]`` (e.g. the 0-1 error rate) and its ``m``
original (0-1, not proxy) constraint values ``G[t, i]``; constraint ``i`` is
satisfied by candidate ``t`` iff ``G[t, i] <= 0``. This module turns those
numbers into a final (stochastic or deterministic) model:

* :func:`shrink` -- the **m-stochastic** solution: a basic optimal solution of
  the shrinking LP of Lemma 5 (Cotter et al. 2019, Sec. 4.1.4 and 4.6), a
  mixture of at most ``m + 1`` iterates, with a two-LP fallback when no mixture
  meets the constraints;
* :func:`best_iterate` -- the deterministic **best** iterate chosen by the rank
  heuristic of Eq. 18 (Sec. 5.2);
* :func:`uniform_mixture` -- the **T-stochastic** solution (uniform over the
  iterates, as in the experiments and Theorem 2);
* :func:`lambda_weighted_mixture` -- the mixture of Theorem 6 (weights
  proportional to the objective's multiplier ``lambda_1(t)``).

All functions are pure: they take arrays and return new arrays.

References
----------
.. [1] A. Cotter, H. Jiang, M. Gupta, S. Wang, T. Narayan, S. You,
   K. Sridharan. "Optimization with Non-Differentiable Constraints with
   Applications to Fairness, Recall, Churn, and Other Goals". Journal of
   Machine Learning Research 20(172):1-59, 2019.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from .._utils._highs import LpSolveError, solve_mixture_lp
from .._utils._validation import as_numeric_array

__all__ = [
    "ShrinkResult",
    "shrink",
    "best_iterate",
    "uniform_mixture",
    "lambda_weighted_mixture",
]

# Weights below this are treated as exact zeros (then the rest is renormalized).
_ZERO_WEIGHT = 1e-12
# Slack added to the relaxed bound of the second fallback LP, times each constraint's magnitude.
_RELAX_TOL = 1e-12

# HiGHS options for every solve. Dual simplex returns a basic (vertex) solution.
# Presolve is off so that the point returned is the simplex's own basic
# solution (these LPs are small: T columns, m + 1 rows). The feasibility
# tolerances are tightened from HiGHS' 1e-7 default because the constraint
# values are rates in [-1, 1] and callers compare them against 0.
_HIGHS_OPTIONS = {
    "output_flag": False,
    "solver": "simplex",
    "presolve": "off",
    "primal_feasibility_tolerance": 1e-10,
    "dual_feasibility_tolerance": 1e-10,
}


@dataclass(frozen=True, eq=False)
class ShrinkResult:
    """The m-stochastic solution returned by :func:`shrink`.

    All arrays are read-only.

    Attributes
    ----------
    weights : ndarray of shape (T,), float64
        Mixture weights ``p`` over the candidates: nonnegative, summing to 1,
        with at most ``m + 1`` nonzeros (values below ``1e-12`` are set to
        exactly 0 before renormalizing).
    support : ndarray of shape (k,), int64
        Sorted indices of the nonzero weights, ``1 <= k <= m + 1``.
    objective : float
        Expected objective of the mixture, ``<p, f>``.
    constraint_values : ndarray of shape (m,), float64
        Expected constraint values of the mixture, ``G^T p``.
    max_violation : float
        ``max(0, max_i (G^T p)_i)``: the largest expected violation measured
        against 0 (not against ``epsilon``); 0.0 when ``m == 0``.
    feasible : bool
        Whether some mixture satisfies ``G^T p <= epsilon`` (the LP of
        Lemma 5 is feasible). If False, the returned mixture comes from the
        infeasibility fallback (see :func:`shrink`).
    infeasibility : float
        ``z* = min_p max_i (G^T p)_i``, the smallest achievable largest
        expected constraint value, when ``feasible`` is False (then
        ``z* > epsilon`` up to solver tolerance); 0.0 when ``feasible`` is True.
    epsilon : float
        The ``epsilon`` the LP was solved with.

    References
    ----------
    .. [1] A. Cotter et al. "Optimization with Non-Differentiable Constraints
       with Applications to Fairness, Recall, Churn, and Other Goals". JMLR
       20(172), 2019. Lemma 5, Sec. 4.1.4 and 4.6.
    """

    weights: np.ndarray
    support: np.ndarray
    objective: float
    constraint_values: np.ndarray
    max_violation: float
    feasible: bool
    infeasibility: float
    epsilon: float


# --------------------------------------------------------------------------- #
# Validation
# --------------------------------------------------------------------------- #


def _check_objectives(objectives, name="objectives"):
    f = as_numeric_array(objectives, name)
    if f.ndim != 1:
        raise ValueError(f"{name} must be 1-D of shape (T,), got shape {f.shape}")
    if f.size == 0:
        raise ValueError(f"{name} must hold at least one candidate (T >= 1)")
    if not np.all(np.isfinite(f)):
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    return f


def _check_constraints(constraints, T):
    G = as_numeric_array(constraints, "constraints")
    if G.ndim != 2:
        raise ValueError(
            f"constraints must be 2-D of shape (T, m) = ({T}, m), got shape {G.shape}"
        )
    if G.shape[0] != T:
        raise ValueError(
            f"constraints must have one row per candidate: shape ({T}, m) expected, "
            f"got {G.shape}"
        )
    if not np.all(np.isfinite(G)):
        raise ValueError("constraints must be finite (no NaN or inf)")
    return G


def _check_epsilon(epsilon):
    if isinstance(epsilon, (bool, np.bool_)) or not isinstance(epsilon, numbers.Real):
        raise ValueError(f"epsilon must be a real number, got {epsilon!r}")
    eps = float(epsilon)
    if not np.isfinite(eps) or eps < 0:
        raise ValueError(f"epsilon must be finite and >= 0, got {epsilon!r}")
    return eps


# --------------------------------------------------------------------------- #
# LP machinery
# --------------------------------------------------------------------------- #


def _solve_lp(cost, G, row_upper, *, with_z):
    """Solve one shrinking-type LP (:func:`~rateopt._utils._highs.solve_mixture_lp`).

    Columns are ``p`` (``T`` of them, ``p >= 0``) and, if ``with_z``, a free
    column ``z``. Rows are ``G^T p - [z] <= row_upper`` (``m`` rows) and
    ``sum(p) = 1``.

    Returns
    -------
    status : str
        ``"optimal"`` or ``"infeasible"``.
    x : ndarray or None
        Column values when optimal.

    Raises
    ------
    RuntimeError
        If HiGHS rejects the model or ends with any other model status
        (:class:`~rateopt._utils._highs.LpSolveError`, a RuntimeError).
    """
    sol = solve_mixture_lp(cost, G, row_upper, with_z=with_z, options=_HIGHS_OPTIONS, what="the shrinking LP")
    # The feasible region is bounded (p lies in the simplex; z is bounded below
    # by G^T p), so "unbounded or infeasible" can only mean infeasible.
    if sol.status == "unbounded":  # pragma: no cover - defensive
        raise LpSolveError("HiGHS ended the shrinking LP with unexpected model status 'Unbounded'")
    return sol.status, sol.x


def _pow2_scale(a, axis=None):
    """Exponents ``e`` with ``max |a| * 2**-e`` in [0.5, 1) (0 where ``a`` is all zero).

    Dividing by a power of two is exact, so the scaled LP has exactly the
    feasible set of the original one.
    """
    top = np.abs(a).max(axis=axis) if a.size else np.zeros(() if axis is None else a.shape[1 - axis])
    return np.where(top > 0, np.frexp(top)[1], 0).astype(np.int64)


def _scaled_bounds(bound, e):
    """``bound * 2**-e`` per row; rows of tiny values may get an infinite bound (never binding)."""
    with np.errstate(over="ignore"):
        return np.ldexp(np.asarray(bound, dtype=np.float64), -e)


def _clean_weights(x):
    """Clip to >= 0, zero out weights below 1e-12, renormalize to sum 1."""
    p = np.clip(x, 0.0, None)
    p[p < _ZERO_WEIGHT] = 0.0
    total = p.sum()
    if not total > 0:  # pragma: no cover - the sum row makes this impossible
        raise RuntimeError("HiGHS returned a solution whose weights are all ~0")
    return p / total


def _reduce_support(p, f, G):
    """Reduce the support of a mixture to at most ``m + 1`` candidates.

    A simplex basis has ``m + 1`` basic variables, so a basic solution already
    has at most ``m + 1`` nonzero weights; this is a safeguard for solutions
    that are not exactly basic. While the support ``S`` has more than
    ``m + 1`` elements, take ``m + 2`` of them: the ``(m + 1) x (m + 2)``
    matrix ``[G_S^T; 1^T]`` has a null vector ``d``. Moving ``p`` along
    ``d`` keeps every expected constraint value and the total mass unchanged;
    the sign is chosen so that the objective does not increase, and the step
    is the largest one keeping ``p >= 0``, which zeroes at least one weight
    (the Caratheodory reduction behind Lemma 5).
    """
    m = G.shape[1]
    p = p.copy()
    while True:
        support = np.flatnonzero(p)
        if support.size <= m + 1:
            return p / p.sum()
        sub = support[: m + 2]
        M = np.vstack((G[sub].T, np.ones(sub.size)))
        d = np.linalg.svd(M)[2][-1]
        if f[sub] @ d > 0:
            d = -d
        neg = d < 0
        if not np.any(neg):  # pragma: no cover - sum(d) = 0 and ||d|| = 1
            d = -d
            neg = d < 0
        ratios = np.full(sub.size, np.inf)
        ratios[neg] = p[sub][neg] / -d[neg]
        k = int(np.argmin(ratios))
        p[sub] = np.clip(p[sub] + ratios[k] * d, 0.0, None)
        p[sub[k]] = 0.0


def _result(p, f, G, *, feasible, infeasibility, epsilon, G_scaled=None):
    # The reduction only needs the null space of [G_S^T; 1], which row scaling keeps.
    p = _reduce_support(p, f, G if G_scaled is None else G_scaled)
    support = np.flatnonzero(p).astype(np.int64)
    cons = G.T @ p
    max_violation = max(0.0, float(cons.max())) if cons.size else 0.0
    for arr in (p, support, cons):
        arr.setflags(write=False)
    return ShrinkResult(
        weights=p,
        support=support,
        objective=float(f @ p),
        constraint_values=cons,
        max_violation=max_violation,
        feasible=bool(feasible),
        infeasibility=float(infeasibility),
        epsilon=float(epsilon),
    )


# --------------------------------------------------------------------------- #
# Public API
# --------------------------------------------------------------------------- #


def shrink(objectives, constraints, *, epsilon=0.0):
    """Shrink T candidate iterates to an m-stochastic mixture (Lemma 5 LP).

    Solves, with HiGHS' simplex method,

    .. math::

        \\min_{p \\in \\Delta^T} \\langle p, f \\rangle
        \\quad \\text{s.t.} \\quad \\sum_t p_t G_{t,i} \\le \\epsilon
        \\quad (i = 1, \\dots, m),

    and returns a basic (vertex) optimal solution, which has at most
    ``m + 1`` nonzero weights (Lemma 5: ``m`` functional rows plus the
    sum-to-one row). If the solver's point has more nonzeros (degenerate
    cases), it is reduced to ``m + 1`` without changing any expected
    constraint value or increasing the objective.

    **Infeasible case.** If no mixture satisfies ``G^T p <= epsilon``, two
    LPs are solved (not a bisection, unlike the TFCO library):

    1. ``z* = min_{p in simplex, z} z  s.t.  G^T p <= z 1``: the smallest
       achievable largest expected constraint value (``z*`` is measured as
       ``max_i (G^T p)_i`` at that LP's solution, so some mixture attains it);
    2. ``min_{p in simplex} <p, f>  s.t.  (G^T p)_i <= max(z*, epsilon) + tol_i``,
       with ``tol_i = 1e-12 * max_t |G[t, i]|`` (relative to each constraint's
       magnitude).

    The result then has ``feasible=False`` and ``infeasibility=z*``; its
    ``max_violation`` equals ``z*`` up to ``tol_i`` and the solver tolerance
    (``1e-10`` relative to each constraint's magnitude, see Notes).

    With ``m == 0`` the result is the single best candidate by objective
    (the smallest index among ties).

    Parameters
    ----------
    objectives : array_like of shape (T,)
        Training objective ``f[t]`` of each candidate (e.g. the 0-1 error
        rate). Finite, ``T >= 1``.
    constraints : array_like of shape (T, m)
        Original (0-1, not proxy) constraint values ``G[t, i]`` on the
        training set; constraint ``i`` holds for candidate ``t`` iff
        ``G[t, i] <= 0``. Finite; ``m >= 0``.
    epsilon : float, default 0.0
        Allowed expected violation, ``>= 0``. The paper's experiments
        appear to use 0.

    Returns
    -------
    ShrinkResult
        The weights, support, expected objective and constraint values,
        ``max_violation`` (relative to 0), ``feasible`` and ``infeasibility``.

    Raises
    ------
    ValueError
        If ``objectives`` is not a finite non-empty 1-D real array, if
        ``constraints`` is not a finite real array of shape ``(T, m)``, or if
        ``epsilon`` is not a finite real number ``>= 0``.
    RuntimeError
        If HiGHS rejects the model or ends with a model status other than
        optimal or infeasible (the message names the status).

    See Also
    --------
    uniform_mixture : The T-stochastic solution.
    best_iterate : The deterministic rank-heuristic choice.

    Notes
    -----
    The LPs are solved on exactly rescaled data: each constraint (column of
    ``G``) and the objective are divided by a power of two that puts their
    largest magnitude in [0.5, 1), which keeps the feasible set and the
    argmin, so constraints of any finite magnitude (e.g. coefficients of
    1e200) are handled; the min-max LP of the infeasible case compares the
    constraints' absolute values, so it scales every constraint by the same
    power of two and resolves ``z*`` to about ``1e-10`` of the largest
    constraint magnitude.

    Per Sec. 4.6 of [1]_, ``f`` and ``G`` are evaluated on the training set
    and ``G`` uses the original constraints even when training used proxies.
    If ``epsilon`` is at least the max violation of the uniform (or
    ``lambda_1``-weighted) mixture, that mixture is feasible for the LP, so
    the m-stochastic objective is no larger than its objective.

    References
    ----------
    .. [1] A. Cotter, H. Jiang, M. Gupta, S. Wang, T. Narayan, S. You,
       K. Sridharan. "Optimization with Non-Differentiable Constraints with
       Applications to Fairness, Recall, Churn, and Other Goals". JMLR
       20(172):1-59, 2019. Lemma 5, Sec. 4.1.4 and 4.6.

    Examples
    --------
    >>> import numpy as np
    >>> from rateopt._solutions._shrink import shrink
    >>> res = shrink([0.1, 0.3], [[0.2], [-0.2]])
    >>> res.weights, round(res.objective, 12)
    (array([0.5, 0.5]), 0.2)
    """
    f = _check_objectives(objectives)
    T = f.size
    G = _check_constraints(constraints, T)
    eps = _check_epsilon(epsilon)
    m = G.shape[1]

    if m == 0:
        p = np.zeros(T)
        p[int(np.argmin(f))] = 1.0
        return _result(p, f, G, feasible=True, infeasibility=0.0, epsilon=eps)

    # HiGHS rejects matrix entries >= 1e15 and treats costs >= 1e20 as infinite,
    # so the LPs are solved on exactly rescaled data: each constraint row (a
    # column of G) and the objective by a power of two putting their largest
    # magnitude in [0.5, 1). A positive row scaling keeps the feasible set of
    # ``G^T p <= bound`` (with the bound scaled alike) and the objective's argmin.
    e_row = _pow2_scale(G, axis=0)
    Gs = np.ldexp(G, -e_row[None, :])
    fs = np.ldexp(f, -int(_pow2_scale(f)))

    status, x = _solve_lp(fs, Gs, _scaled_bounds(np.full(m, eps), e_row), with_z=False)
    if status == "optimal":
        p = _clean_weights(x)
        return _result(p, f, G, feasible=True, infeasibility=0.0, epsilon=eps, G_scaled=Gs)

    # Phase 1: the smallest achievable largest expected constraint value. Rows
    # are compared with each other here, so they share one scale.
    e_all = int(_pow2_scale(G))
    cost = np.zeros(T + 1)
    cost[T] = 1.0
    status, x = _solve_lp(cost, np.ldexp(G, -e_all), np.zeros(m), with_z=True)
    if status != "optimal":  # pragma: no cover - this LP is always feasible
        raise RuntimeError("HiGHS reported the min-max violation LP as infeasible")
    p1 = _clean_weights(x[:T])
    z_star = float((G.T @ p1).max())

    # Phase 2: the best objective among mixtures attaining z*, with a slack
    # relative to each constraint's own magnitude.
    bound = max(z_star, eps) + _RELAX_TOL * np.abs(G).max(axis=0)
    status, x = _solve_lp(fs, Gs, _scaled_bounds(bound, e_row), with_z=False)
    if status != "optimal":  # pragma: no cover - p1 is feasible for this LP
        raise RuntimeError(
            "HiGHS reported the relaxed shrinking LP as infeasible although the "
            f"min-max solution attains z* = {z_star!r}"
        )
    p = _clean_weights(x)
    return _result(p, f, G, feasible=False, infeasibility=z_star, epsilon=eps, G_scaled=Gs)


def best_iterate(objectives, constraints):
    """Pick the "best" single iterate with the rank heuristic (Eq. 18).

    For each candidate ``t`` let ``v[t] = max(0, max_i G[t, i])`` be its
    maximum constraint violation (0 for a feasible candidate; 0 for every
    candidate when ``m == 0``). Then

    * ``LossRank[t]`` is the rank of ``f[t]`` among all candidates (1 =
      smallest), and
    * ``WorstConstraintRank[t]`` is the rank of ``v[t]`` (1 = smallest),

    both with the "min" method for ties (tied values share the smallest rank,
    as ``scipy.stats.rankdata(method="min")``). Because ``v`` is clipped at
    0, **all feasible candidates tie at violation rank 1**, so among them only
    the objective matters (this clipping follows the TFCO library's
    ``find_best_candidate_index``; the paper only says "maximum constraint
    violation"). The chosen candidate minimizes
    ``max(LossRank[t], WorstConstraintRank[t])``; ties are broken by the
    smaller objective ``f[t]``, then by the smaller unclipped largest
    constraint value ``max_i G[t, i]``, then by the smaller index.

    The second tie-break (not in the paper, which breaks ties by loss only)
    makes the choice Pareto-undominated in (objective, max violation), both
    with the clipped and the unclipped violation, as the paper claims: a
    candidate that is no worse in both and better in one has no larger ranks,
    so it would tie or win on the rank criterion and then win a tie-break.
    The last tie-break prefers the *earliest* index, whereas the TFCO loop
    lets a later index win exact ties.

    Parameters
    ----------
    objectives : array_like of shape (T,)
        Objective (loss or error rate) of each candidate. Finite, ``T >= 1``.
    constraints : array_like of shape (T, m)
        Constraint values ``G[t, i]`` (satisfied iff ``<= 0``). Finite;
        ``m >= 0``.

    Returns
    -------
    int
        Index of the chosen candidate.

    Raises
    ------
    ValueError
        If ``objectives`` is not a finite non-empty 1-D real array or
        ``constraints`` is not a finite real array of shape ``(T, m)``.

    Notes
    -----
    The paper uses this heuristic both to choose the "best" iterate (on
    training-set loss and violation) and to select hyperparameters (on the
    validation set).

    References
    ----------
    .. [1] A. Cotter, H. Jiang, M. Gupta, S. Wang, T. Narayan, S. You,
       K. Sridharan. "Optimization with Non-Differentiable Constraints with
       Applications to Fairness, Recall, Churn, and Other Goals". JMLR
       20(172):1-59, 2019. Eq. 18 (Sec. 5.2) and Sec. 5.3.

    Examples
    --------
    >>> from rateopt._solutions._shrink import best_iterate
    >>> best_iterate([0.10, 0.20, 0.30], [[0.05], [0.0], [-0.1]])
    1
    """
    from scipy.stats import rankdata  # lazy: `import rateopt` loads no scipy.stats
    f = _check_objectives(objectives)
    T = f.size
    G = _check_constraints(constraints, T)
    raw = G.max(axis=1) if G.shape[1] else np.zeros(T)
    violation = np.maximum(raw, 0.0)
    score = np.maximum(rankdata(f, method="min"), rankdata(violation, method="min"))
    # np.lexsort sorts by the last key first.
    order = np.lexsort((np.arange(T), raw, f, score))
    return int(order[0])


def uniform_mixture(T):
    """Uniform weights over ``T`` iterates: the T-stochastic solution.

    Parameters
    ----------
    T : int
        Number of iterates, ``>= 1``.

    Returns
    -------
    ndarray of shape (T,), float64
        ``np.full(T, 1 / T)``.

    Raises
    ------
    ValueError
        If ``T`` is not an integer ``>= 1`` (bools are rejected).

    Notes
    -----
    This is the "T-stoch" solution reported for every method in the paper's
    experiments (Sec. 5.3), and the mixture of Theorem 2 for the Lagrangian.

    References
    ----------
    .. [1] A. Cotter, H. Jiang, M. Gupta, S. Wang, T. Narayan, S. You,
       K. Sridharan. "Optimization with Non-Differentiable Constraints with
       Applications to Fairness, Recall, Churn, and Other Goals". JMLR
       20(172):1-59, 2019. Theorem 2 and Sec. 5.3.
    """
    if isinstance(T, (bool, np.bool_)) or not isinstance(T, numbers.Integral):
        raise ValueError(f"T must be an integer >= 1, got {T!r}")
    if T < 1:
        raise ValueError(f"T must be an integer >= 1, got {T!r}")
    return np.full(int(T), 1.0 / int(T))


def lambda_weighted_mixture(lambda0):
    """Weights ``P(theta(t)) = lambda_1(t) / sum_s lambda_1(s)`` of Theorem 6.

    For the proxy-Lagrangian, Theorems 6 and 11 give their guarantees for the
    mixture that weights iterate ``t`` by the objective's multiplier
    ``lambda_1(t)`` (the first component of ``lambda(t)``; index 0 in
    0-based code), not for the uniform one.

    Parameters
    ----------
    lambda0 : array_like of shape (T,)
        The objective's multiplier ``lambda_1(t)`` recorded with each iterate.
        Finite, nonnegative, ``T >= 1``, not all zero.

    Returns
    -------
    ndarray of shape (T,), float64
        ``lambda0 / lambda0.sum()``.

    Raises
    ------
    ValueError
        If ``lambda0`` is not a non-empty 1-D real array, has a non-finite or
        negative entry, or sums to 0 (all zero).

    References
    ----------
    .. [1] A. Cotter, H. Jiang, M. Gupta, S. Wang, T. Narayan, S. You,
       K. Sridharan. "Optimization with Non-Differentiable Constraints with
       Applications to Fairness, Recall, Churn, and Other Goals". JMLR
       20(172):1-59, 2019. Theorem 6 and Theorem 11.
    """
    lam = _check_objectives(lambda0, name="lambda0")
    if np.any(lam < 0):
        raise ValueError("lambda0 must be nonnegative (it is a multiplier)")
    total = lam.sum()
    if not total > 0:
        raise ValueError(
            "lambda0 is all zero: the lambda_1-weighted mixture is undefined"
        )
    return lam / total
