"""Group objectives through a linear optimizer: GroupOpt (Alabi et al., 2018) and minimax by Hedge.

Minimize ``f(l_1(c), ..., l_K(c))`` over (mixtures of) classifiers ``c``, where
the ``l_k`` are K group losses (rate expressions, possibly overlapping groups,
values in [0, 1]) and ``f`` is any Lipschitz function -- maximin group error,
``sum_k sqrt(l_k + delta)``, pairwise gaps, non-convex trade-offs -- using only
a *linear optimizer*: an oracle (:mod:`rateopt.oracles`) that minimizes
``w . l(c)`` for a weight vector ``w`` (the atom coefficients ``Lmat^T w``).

* :func:`group_opt` -- Alabi, Immorlica and Kalai's Algorithm 1 (COLT 2018,
  Alabi et al. (2018)). For every point ``r`` of a grid over ``[0, 1]^K`` in increasing
  ``f(r)``, Frank-Wolfe with step ``1/t`` drives the running average of the
  oracle's loss vectors toward ``r`` (toward its upward closure when ``f`` is
  monotone); the first ``r`` it gets within ``3 beta`` of wins, and its
  uniform mixture satisfies ``f(l) <= min f + eps`` (Theorem 4.3) when the
  oracle is exact over the comparator class. ``mode="paper"`` runs the
  algorithm as stated; ``mode="fast"`` adds sound speed-ups (accept as soon as
  the distance is reached; reject ``r`` when a duality certificate shows it is
  farther than ``beta / 2`` from the achievable set; cache the oracle's
  answers and certificates across grid points and project each new ``r`` onto
  the hull of the cached loss vectors before calling the oracle -- fully
  corrective Frank-Wolfe; fall back to the best cached mixture by ``f`` when
  an inexact oracle lets no grid point be accepted).
* :func:`fold_constraints` -- the paper's eq. (3): a constraint ``g <= 0`` on
  the losses folded into the objective as ``f + Gamma max(0, g)``.
* :func:`minimax_group_loss` -- for ``f = max_k l_k`` (Rawlsian maximin, and
  Cotter et al. (2019) §2.3's robust optimization ``min max_i g_i``): Hedge over the groups
  against the oracle's best responses, then the min-max LP over the iterates
  (at most K + 1 models). With an exact oracle,
  ``max_k l_k(uniform mixture) <= min max + sqrt(ln K / (2T))``.

Both return a mixture reduced to at most K + 1 models with its loss vector kept
exactly (Caratheodory), as a classifier.

References
----------
.. [1] J. Alabi, N. Immorlica, A. Kalai. "Unleashing Linear Optimizers for
   Group-Fair Learning and Optimization". COLT 2018, Algorithm 1,
   Theorem 4.3, Lemma 8.1.
.. [2] ``../shared/papers/notes/methods_spec.md`` part B.
"""

from __future__ import annotations

import itertools
import math
import warnings
from dataclasses import dataclass, field

import numpy as np

from .._compiler._problem import Problem
from .._language import _rates as R
from .._language._expressions import lift
from .._params import train_settings
from .._predictors._ensembles import EstimatorMixture
from .._predictors._linear import StochasticClassifier
from .._predictors._specs import LinearModel
from .._solutions import _shrink
from .._training._spec import decision_rates, kernel_pass, spec_from_problem
from .._utils._validation import check_choice, check_int
from ..games import Game

__all__ = ["GroupOptConstants", "group_opt_constants", "GroupOptResult", "group_opt", "minimax_group_loss",
           "FoldedObjective", "fold_constraints"]




class _GroupOptRun:
    """What :func:`rateopt._params.train_settings` reads of a game, for GroupOpt's oracle calls:
    the base game's defaults, and the oracle (and what it reads) as the only game-specific parameter."""

    name = "group-opt"
    defaults = Game.defaults
    reads = frozenset({"oracle"})


@dataclass(frozen=True)
class GroupOptConstants:
    """The constants of Alabi et al. (2018) Algorithm 1 for K groups and accuracy eps (f 1-Lipschitz).

    Attributes
    ----------
    beta : float
        ``eps / 5``.
    q : float
        Grid spacing ``beta / sqrt(K)``.
    points_per_dim : int
        ``floor(1/q) + 1``.
    grid_size : int
        ``points_per_dim ** K`` (the paper writes ``q^-K``, slightly low).
    tau : float
        Allowed oracle and assessor error ``beta^2 / sqrt(K)``.
    T : int
        Frank-Wolfe steps per grid point, ``ceil((K / beta^2) ln(K / beta^2))``.
    worst_case_calls : int
        ``grid_size * T`` calls to each oracle at most.
    """

    beta: float
    q: float
    points_per_dim: int
    grid_size: int
    tau: float
    T: int
    worst_case_calls: int


def group_opt_constants(K, eps):
    """Alabi et al. (2018) Algorithm 1's constants (methods_spec §B.3's table).

    Parameters
    ----------
    K : int
        Number of group losses (>= 1).
    eps : float
        Accuracy in (0, 1].

    Returns
    -------
    GroupOptConstants
    """
    check_int("K", K, 1)
    if not (isinstance(eps, (int, float)) and 0.0 < eps <= 1.0):
        raise ValueError(f"eps must lie in (0, 1], got {eps!r}")
    K = int(K)
    beta = eps / 5.0
    q = beta / math.sqrt(K)
    pts = int(math.floor(1.0 / q + 1e-9)) + 1
    ratio = K / beta**2
    T = int(math.ceil(ratio * math.log(ratio))) if ratio > 1 else 1
    return GroupOptConstants(beta=beta, q=q, points_per_dim=pts, grid_size=pts**K, tau=beta**2 / math.sqrt(K),
                             T=T, worst_case_calls=pts**K * T)


@dataclass
class GroupOptResult:
    """The output of :func:`group_opt` or :func:`minimax_group_loss`.

    Attributes
    ----------
    classifier : StochasticClassifier or EstimatorMixture
        The mixture (at most K + 1 models).
    losses : ndarray of shape (K,)
        Its exact (expected) group losses on the training data.
    value : float
        ``f(losses)`` (the largest loss for the minimax game).
    models : list
        The support models (``(theta, bias)`` pairs, or fitted estimators).
    probabilities : ndarray
        Their mixture weights.
    diagnostics : dict
        Algorithm details: the accepted grid point ``r``, ``distance``
        ``||lhat_T - r||``, oracle ``calls``, grid points tried and rejected,
        the constants, or the Hedge game's bound.
    """

    classifier: object
    losses: np.ndarray
    value: float
    models: list
    probabilities: np.ndarray
    diagnostics: dict = field(default_factory=dict)


class _Losses:
    """The K group losses compiled to atom rows, the oracle, and the exact loss assessor (memoized)."""

    def __init__(self, losses, oracle, n_threads=None):
        losses = list(losses)
        if not losses:
            raise ValueError("losses must hold at least one rate expression")
        exprs = []
        for k, loss in enumerate(losses):
            e = lift(loss)
            if e is NotImplemented or isinstance(loss, R.Constraint) or e.is_constant:
                raise ValueError(f"losses[{k}] must be a rate expression of the model's decisions, got {loss!r}")
            exprs.append(e)
        problem = Problem(objective=0.0, constraints=[R.Constraint(e, "<=", 0.0, name=f"l{k}")
                                                      for k, e in enumerate(exprs)])
        self.spec = spec = spec_from_problem(problem)
        self.L, self.l0 = np.asarray(spec.C), -spec.kappa  # l(c) = L p(c) + l0
        lo = self.l0 + np.minimum(self.L, 0).sum(axis=1)
        hi = self.l0 + np.maximum(self.L, 0).sum(axis=1)
        for k in range(len(exprs)):
            if lo[k] < -1e-12 or hi[k] > 1 + 1e-12:
                raise ValueError(f"losses[{k}] ({exprs[k]}) ranges over [{lo[k]:.6g}, {hi[k]:.6g}] on some models; "
                                 "group losses must lie in [0, 1] (rescale it)")
        self.K = len(exprs)
        settings = train_settings(_GroupOptRun, _linear(), n_threads=n_threads, oracle=oracle)
        self.settings = settings
        self.best = oracle.bind(spec, settings)
        self.estimators = bool(getattr(oracle, "returns_estimators", False))
        self.models, self.vectors, self._keys = [], [], {}
        self.calls = 0

    def respond(self, w):
        """Index of the oracle's model for weights ``w`` over the losses (new models are assessed once)."""
        self.calls += 1
        model = self.best(np.asarray(w, dtype=np.float64) @ self.L)
        key = id(model) if self.estimators else (model[0].tobytes(), float(model[1]))
        if key in self._keys:
            return self._keys[key]
        self._keys[key] = len(self.models)
        self.models.append(model if self.estimators else (np.array(model[0], dtype=np.float64), float(model[1])))
        self.vectors.append(self._assess(self.models[-1]))
        return len(self.models) - 1

    def _assess(self, model):
        if self.estimators:
            rates = decision_rates(self.spec, model)
        else:
            rates = kernel_pass(self.spec, model[0], model[1], np.zeros(self.spec.n_atoms),
                                n_threads=self.settings.n_threads).rates
        return self.L @ rates + self.l0

    def mixture(self, counts):
        """Support indices and probabilities of a mixture given as model counts, reduced to K + 1 models."""
        idx = np.flatnonzero(counts)
        p = counts[idx] / counts[idx].sum()
        V = np.array([self.vectors[i] for i in idx])
        p = _shrink._reduce_support(p, np.zeros(idx.size), V)
        keep = p > 0
        return idx[keep], p[keep] / p[keep].sum()

    def classifier(self, idx, p):
        if self.estimators:
            return EstimatorMixture([self.models[i] for i in idx], p, self.models[idx[0]].n_features_in_)
        return StochasticClassifier(np.array([self.models[i][0] for i in idx]),
                                    np.array([self.models[i][1] for i in idx]), p)


def _linear():
    return LinearModel(l2=0.0)  # the oracles bring their own regularization


def _monotone(f, grid, K, pts):
    """N of Algorithm 1: 1 when ``f(r) <= f(r + q e_k)`` on every grid edge."""
    values = np.asarray(f(grid), dtype=np.float64).reshape((pts,) * K)
    for k in range(K):
        if np.any(np.diff(values, axis=k) < 0):
            return 0
    return 1


def group_opt(losses, f, oracle, *, eps=0.5, lipschitz=1.0, monotone="auto", mode="fast", n_threads=None):
    """Minimize ``f(l_1, ..., l_K)`` over mixtures with a linear optimizer (Alabi et al., 2018, Algorithm 1).

    Parameters
    ----------
    losses : sequence of Expression
        The K group losses (rate expressions with values in [0, 1]), e.g.
        ``[rateopt.error_rate(ctx.subset(group="sex", value=v)) for v in ...]``.
    f : callable
        ``f(L)`` for an array ``L`` of shape (n, K) of loss vectors, returning n
        values; Lipschitz in the Euclidean norm.
    oracle : rateopt.oracles.Oracle
        The linear optimizer ``w -> argmin_c w . l(c)``. The guarantee holds
        against the class it is exact over (e.g. ``ThresholdOracle``: thresholds
        of a score; ``PoolOracle``).
    eps : float, default=0.5
        Accuracy, a positive finite number in the units of ``f`` (the grid and
        the step count follow from ``min(1, eps / lipschitz)``; see
        :func:`group_opt_constants`).
    lipschitz : float, default=1.0
        A Lipschitz constant ``L`` of ``f``: the algorithm runs on ``f / L`` with
        ``eps / L``.
    monotone : {"auto", True, False}, default="auto"
        Whether ``f`` is non-decreasing in every loss (``"auto"``: checked on
        the grid, as the paper's N).
    mode : {"fast", "paper"}, default="fast"
        ``"paper"``: Algorithm 1 as stated (raises when no grid point is
        accepted). ``"fast"``: the sound speed-ups of methods_spec §B.3 --
        accept a grid point as soon as a mixture is within ``3 beta`` of it;
        reject one as soon as a duality certificate puts it farther than
        ``beta / 2`` from every achievable loss vector; keep every oracle answer
        and certificate across grid points (a grid point is first checked
        against the cached certificates, then projected onto the hull of the
        cached loss vectors -- fully corrective Frank-Wolfe -- before any new
        oracle call); and when no grid point is accepted (an oracle worse than
        tau-approximate), return the best cached mixture by ``f`` with a
        ``UserWarning`` (``diagnostics["fallback"]``).
    n_threads : int, default=None
        Threads of the loss assessor (the rate kernel).

    Returns
    -------
    GroupOptResult
        The mixture (Caratheodory-reduced to at most K + 1 models, losses kept
        exactly), its losses and ``f`` value, and diagnostics.

    Raises
    ------
    ValueError
        If ``eps`` is not a positive finite number, a loss can leave [0, 1], or
        the grid is too large (over 2 million points).
    """
    prob = _Losses(losses, oracle, n_threads)
    counts, diagnostics = _run_group_opt(prob, f, eps=eps, lipschitz=lipschitz, monotone=monotone, mode=mode)
    idx, p = prob.mixture(counts)
    lv = p @ np.array([prob.vectors[i] for i in idx])
    return GroupOptResult(classifier=prob.classifier(idx, p), losses=lv,
                          value=float(np.asarray(f(lv[None, :]), dtype=np.float64).reshape(-1)[0]),
                          models=[prob.models[i] for i in idx], probabilities=p, diagnostics=diagnostics)


def _run_group_opt(prob, f, *, eps, lipschitz=1.0, monotone="auto", mode="fast", trace=None, decisions=None):
    """Algorithm 1 on an abstract linear optimizer.

    ``prob`` has ``K``, ``respond(w) -> index`` (the oracle's choice, assessed
    once into ``prob.vectors[index]``, the loss vector the algorithm sees) and
    ``calls``. Returns the weights of the accepted mixture over the choices
    (counts of the uniform mixture in paper mode) and the diagnostics; ``trace``
    (a list) receives ``(r, t, lhat_t)``, ``decisions`` (a list, fast mode)
    ``(kind, r, value)`` for every grid point decided.
    """
    check_choice("mode", mode, ("fast", "paper"))
    if not (isinstance(lipschitz, (int, float)) and lipschitz > 0 and math.isfinite(lipschitz)):
        raise ValueError(f"lipschitz must be a positive number, got {lipschitz!r}")
    if isinstance(eps, bool) or not (isinstance(eps, (int, float)) and eps > 0 and math.isfinite(eps)):
        raise ValueError(f"eps must be a positive finite number, got {eps!r}")
    K = prob.K
    c = group_opt_constants(K, min(1.0, eps / lipschitz))
    if c.grid_size > 2_000_000:
        raise ValueError(f"the grid has {c.grid_size} points for K={K}, eps={eps}: use minimax_group_loss for "
                         "max-type objectives, or a larger eps")

    def fs(Lv):
        return np.asarray(f(np.atleast_2d(Lv)), dtype=np.float64).reshape(-1) / lipschitz

    axis = np.arange(c.points_per_dim) * c.q
    grid = np.array(list(itertools.product(axis, repeat=K)))
    N = _monotone(fs, grid, K, c.points_per_dim) if monotone == "auto" else int(bool(monotone))
    order = np.argsort(fs(grid), kind="stable")
    run = _paper if mode == "paper" else _fast
    return run(prob, fs, grid[order], N, c, trace, decisions)


def _paper(prob, fs, points, N, c, trace, decisions):
    """Algorithm 1 as stated: Frank-Wolfe with step 1/t for T steps at every grid point, in f order."""
    K = prob.K
    tried = 0
    for r in points:
        tried += 1
        counts = np.zeros(0)
        total = np.zeros(K)
        i = prob.respond(np.zeros(K))  # c_1 = M(0)
        for t in range(1, c.T + 1):
            if counts.size < len(prob.vectors):
                counts = np.concatenate((counts, np.zeros(len(prob.vectors) - counts.size)))
            counts[i] += 1
            total += prob.vectors[i]
            lhat = np.maximum(total / t, N * r)
            if trace is not None:
                trace.append((r, t, lhat))
            i = prob.respond(lhat - r)  # c_{t+1} = M(lhat_t - r) (computed but unused after t = T, as in the paper)
        dist = float(np.linalg.norm(lhat - r))
        if dist <= 3 * c.beta:
            counts = np.concatenate((counts, np.zeros(len(prob.vectors) - counts.size)))
            return counts, {"r": r, "distance": dist, "calls": prob.calls, "grid_points_tried": tried,
                            "grid_points_rejected": 0, "monotone": bool(N), "constants": c, "mode": "paper",
                            "fallback": False}
    raise RuntimeError("GroupOpt accepted no grid point: the oracle is not a tau-approximate linear optimizer "
                       f"(tau = {c.tau:.3g}) for this problem")


def _project(V, r, N):
    """The mixture ``q`` of the rows of ``V`` nearest to ``r`` -- ``min ||V^T q - r||`` (N = 0), or to its
    upward closure, ``min ||(V^T q - r)_+||`` (N = 1) -- by NNLS, and its exact ``lhat = max(V^T q, N r)``
    and distance ``||lhat - r||`` (the solve may be approximate; the distance is that of the returned q)."""
    from scipy.optimize import nnls  # lazy: `import rateopt` loads no scipy.optimize
    n, K = V.shape
    heavy = 1e3  # the row that keeps sum(q) = 1 (q is renormalized after)
    A = np.vstack([V.T, np.full((1, n), heavy)])
    if N:  # ||(x)_+||^2 = min_{s >= 0} ||x + s||^2
        A = np.hstack([A, np.vstack([np.eye(K), np.zeros((1, K))])])
    x = nnls(A, np.r_[r, heavy], maxiter=50 * (A.shape[1] + 1))[0]
    q = np.where(x[:n] > 1e-12, x[:n], 0.0)
    q = q / q.sum() if q.sum() > 0 else np.full(n, 1.0 / n)
    lhat = np.maximum(q @ V, N * r)
    return q, lhat, float(np.linalg.norm(lhat - r))


def _fast(prob, fs, points, N, c, trace, decisions):
    """Algorithm 1 with the sound speed-ups of methods_spec §B.3.

    1. Accept a grid point as soon as a mixture is within ``3 beta`` (the
       paper's own acceptance test, applied to the current mixture).
    2. Reject it as soon as a duality certificate puts it farther than
       ``beta / 2`` from every achievable loss vector: it is then not the grid
       point nearest the optimum, which the paper's proof needs.
    3. Cache every choice and every certificate across grid points. Each grid
       point first gets the cached certificates (rejected with no oracle call
       when one suffices), then fully corrective Frank-Wolfe: ``r`` is
       projected onto the hull of the cached loss vectors (NNLS), accepted if
       that is within ``3 beta``, else the oracle is called at
       ``d = lhat - r`` and its answer joins the cache. An answer already in
       the hull certifies ``dist >= ||d|| - 2 tau > beta / 2``, so the loop
       never stalls (capped at T steps anyway).
    4. When no grid point is accepted (an oracle worse than tau-approximate),
       return the best mixture seen by f, with a warning.
    """
    K = prob.K
    if not prob.vectors:
        prob.respond(np.zeros(K))  # c_1 = M(0)
    cert_d, cert_b = [], []  # every achievable l (and its upward closure when N = 1) has d . l >= b, ||d|| = 1
    tried = rejected = rejected_from_cache = accepted_from_cache = 0
    best = (math.inf, None)
    for r in points:
        tried += 1
        if cert_d:
            lower = float(np.max(np.array(cert_b) - np.array(cert_d) @ r))
            if lower > c.beta / 2:
                rejected += 1
                rejected_from_cache += 1
                if decisions is not None:
                    decisions.append(("reject", r, lower))
                continue
        for t in range(1, c.T + 1):
            V = np.array(prob.vectors)
            q, lhat, dist = _project(V, r, N)
            if trace is not None:
                trace.append((r, t, lhat))
            value = float(fs(q @ V)[0])
            if value < best[0]:
                best = (value, q)
            if dist <= 3 * c.beta:
                accepted_from_cache += t == 1
                if decisions is not None:
                    decisions.append(("accept", r, dist))
                return q, {"r": r, "distance": dist, "calls": prob.calls, "grid_points_tried": tried,
                           "grid_points_rejected": rejected, "rejected_without_calls": rejected_from_cache,
                           "accepted_without_calls": accepted_from_cache, "models_cached": len(prob.vectors),
                           "monotone": bool(N), "constants": c, "mode": "fast", "fallback": False}
            d = lhat - r  # >= 0 when N = 1: the nonnegative optimizer suffices
            nd = float(np.linalg.norm(d))
            s_vec = prob.vectors[prob.respond(d)]
            # The oracle: d . l >= d . s_true - tau ||d|| for every achievable l; the assessor: |s - s_true| <= tau.
            b = (d @ s_vec - 2 * c.tau * nd) / nd
            cert_d.append(d / nd)
            cert_b.append(b)
            if b - d @ r / nd > c.beta / 2:
                rejected += 1
                if decisions is not None:
                    decisions.append(("reject", r, b - d @ r / nd))
                break
    V = np.array(prob.vectors)
    for i in range(V.shape[0]):  # single cached models count as mixtures too
        value = float(fs(V[i])[0])
        if value < best[0]:
            best = (value, np.eye(V.shape[0])[i])
    q = np.concatenate((best[1], np.zeros(V.shape[0] - best[1].size)))
    warnings.warn("GroupOpt accepted no grid point: the oracle is not a tau-approximate linear optimizer "
                  f"(tau = {c.tau:.3g}) for this problem; returning the best cached mixture by f (no guarantee)",
                  UserWarning, stacklevel=3)
    return q, {"r": None, "distance": None, "calls": prob.calls, "grid_points_tried": tried,
               "grid_points_rejected": rejected, "rejected_without_calls": rejected_from_cache,
               "accepted_without_calls": accepted_from_cache, "models_cached": len(prob.vectors),
               "monotone": bool(N), "constants": c, "mode": "fast", "fallback": True}


class FoldedObjective:
    """``h(L) = f(L) + Gamma max(0, g_1(L), ..., g_m(L))``: constraints folded into a GroupOpt objective (eq. (3)).

    Built by :func:`fold_constraints`; callable on an (n, K) array of loss
    vectors like any GroupOpt objective.

    Attributes
    ----------
    f, g : callable
        The objective and the constraint function (``g`` returns (n,) or (n, m)).
    gamma : float
        The penalty weight Gamma.
    lipschitz : float
        ``L_f + Gamma L_g``: pass it to :func:`group_opt` as ``lipschitz``.
    f_range : float
        ``R``, the range of ``f`` (its largest minus smallest value on the losses).
    """

    def __init__(self, f, g, gamma, lipschitz, f_range):
        self.f, self.g, self.gamma, self.lipschitz, self.f_range = f, g, gamma, lipschitz, f_range

    def violation(self, L):
        """``max(0, max_j g_j(L))`` per loss vector (shape (n,))."""
        G = np.asarray(self.g(np.atleast_2d(L)), dtype=np.float64)
        G = G.reshape(G.shape[0], -1)
        return np.maximum(G.max(axis=1), 0.0)

    def __call__(self, L):
        L = np.atleast_2d(L)
        return np.asarray(self.f(L), dtype=np.float64).reshape(-1) + self.gamma * self.violation(L)

    def violation_bound(self, eps):
        """``(eps + R) / Gamma``: the largest ``g`` of any mixture whose folded value is within ``eps`` of the
        constrained optimum (Alabi et al., 2018, after eq. (3))."""
        return (float(eps) + self.f_range) / self.gamma


def fold_constraints(f, g, gamma, *, f_lipschitz=1.0, g_lipschitz=1.0, f_range=None, K=None):
    """Fold constraints ``g(l) <= 0`` on the group losses into the objective: Alabi et al. (2018)'s eq. (3).

    ``h = f + Gamma max(0, g)`` is Lipschitz with ``L_f + Gamma L_g``, and a
    mixture with ``h <= opt + eps``, where opt is the optimum of ``f`` subject
    to ``g <= 0`` (at which ``h = f``), has ``f <= opt + eps`` and
    ``g <= (eps + R) / Gamma``, ``R`` the range of ``f``.

    Parameters
    ----------
    f : callable
        The objective, ``f(L)`` for an (n, K) array of loss vectors, n values.
    g : callable
        The constraints, ``g(L)`` of shape (n,) or (n, m); ``<= 0`` holds.
    gamma : float
        The penalty weight Gamma > 0.
    f_lipschitz, g_lipschitz : float, default=1.0
        Euclidean Lipschitz constants of ``f`` and of ``max_j g_j``.
    f_range : float, default=None
        ``R``: an upper bound on ``max f - min f`` over the losses. Default
        ``L_f sqrt(K)`` (the diameter of ``[0, 1]^K`` times ``L_f``; needs ``K``).
    K : int, default=None
        Number of losses (only for the default ``f_range``).

    Returns
    -------
    FoldedObjective
        Callable ``h``; run ``group_opt(losses, h, oracle, eps=eps, lipschitz=h.lipschitz)``.

    Raises
    ------
    ValueError
        If ``gamma`` or a Lipschitz constant is not positive, or neither
        ``f_range`` nor ``K`` is given.
    """
    for name, v in (("gamma", gamma), ("f_lipschitz", f_lipschitz), ("g_lipschitz", g_lipschitz)):
        if isinstance(v, bool) or not (isinstance(v, (int, float)) and v > 0 and math.isfinite(v)):
            raise ValueError(f"{name} must be a positive number, got {v!r}")
    if not (callable(f) and callable(g)):
        raise TypeError("f and g must be callables of an (n, K) array of loss vectors")
    if f_range is None:
        if K is None:
            raise ValueError("pass f_range (the range of f) or K (to bound it on [0, 1]^K)")
        check_int("K", K, 1)
        f_range = f_lipschitz * math.sqrt(K)
    elif not (isinstance(f_range, (int, float)) and f_range >= 0 and math.isfinite(f_range)):
        raise ValueError(f"f_range must be a non-negative number, got {f_range!r}")
    return FoldedObjective(f, g, float(gamma), float(f_lipschitz + gamma * g_lipschitz), float(f_range))


def minimax_group_loss(losses, oracle, *, n_iter=500, eta=None, n_threads=None):
    """Minimize the largest group loss ``max_k l_k`` over mixtures: Hedge over groups vs the oracle.

    The groups' weights ``lam`` play Hedge (multiplicative weights on the loss
    vectors, step ``eta = sqrt(8 ln K / T)``); the model player is the oracle's
    best response to ``lam . l``. The output is the min-max LP's mixture over
    the iterates (``min_q max_k sum_t q_t l_k(c_t)``, at most K + 1 models; at
    least as good as the uniform mixture, whose guarantee with an exact oracle
    is ``min max + sqrt(ln K / (2T))``).

    Parameters
    ----------
    losses : sequence of Expression
        The K group losses (values in [0, 1]).
    oracle : rateopt.oracles.Oracle
        The linear optimizer.
    n_iter : int, default=500
        Rounds T.
    eta : float, default=None
        Hedge's step (default ``sqrt(8 ln K / T)``).
    n_threads : int, default=None
        Threads of the loss assessor.

    Returns
    -------
    GroupOptResult
        ``diagnostics`` holds the uniform mixture's largest loss and the bound
        ``sqrt(ln K / (2T))``.
    """
    check_int("n_iter", n_iter, 1)
    prob = _Losses(losses, oracle, n_threads)
    K, T = prob.K, int(n_iter)
    eta = math.sqrt(8 * math.log(K) / T) if eta is None and K > 1 else (eta or 0.0)
    if not (isinstance(eta, (int, float)) and eta >= 0 and math.isfinite(eta)):
        raise ValueError(f"eta must be a non-negative number, got {eta!r}")
    logw = np.zeros(K)
    picks = []
    for _ in range(T):
        lam = np.exp(logw - logw.max())
        lam /= lam.sum()
        i = prob.respond(lam)
        picks.append(i)
        logw += eta * prob.vectors[i]
    V = np.array(prob.vectors)
    counts = np.bincount(picks, minlength=len(prob.models)).astype(np.float64)
    uniform = float(np.max(counts @ V / T))
    status, x = _shrink._solve_lp(np.concatenate((np.zeros(len(prob.models)), [1.0])), V, np.zeros(K),
                                  with_z=True)
    q = np.clip(x[:-1], 0.0, None) if status == "optimal" else counts / T
    idx, p = prob.mixture(q / q.sum())
    lv = p @ V[idx]
    if lv.max() > uniform:  # the LP is never worse; guard against a degenerate solve
        idx, p = prob.mixture(counts / T)
        lv = p @ V[idx]
    return GroupOptResult(classifier=prob.classifier(idx, p), losses=lv, value=float(lv.max()),
                          models=[prob.models[i] for i in idx], probabilities=p,
                          diagnostics={"uniform_max_loss": uniform, "hedge_bound": math.sqrt(math.log(max(K, 1))
                                                                                              / (2 * T)),
                                       "calls": prob.calls, "eta": eta, "n_iter": T})
