"""Training: the proxy-Lagrangian and Lagrangian games (seed 001, Algorithms 3-5).

Each iteration is **one** pass of the fused kernel over every dataset: it
returns, at the same model, the 0-1 atom rates (from which the multiplier
player's constraint values follow) and the subgradient of the proxy Lagrangian
(which the model player steps on). Every ``record_every`` iterations the
iterate is stored with its training objective and constraint values; the
solutions (m-stochastic, T-stochastic, best, last) are built from these.

References
----------
.. [1] A. Cotter, H. Jiang, S. Wang, T. Narayan, M. Gupta, S. You, K. Sridharan.
   "Optimization with Non-Differentiable Constraints with Applications to
   Fairness, Recall, Churn, and Other Goals". JMLR 20(172), 2019.
"""

from __future__ import annotations

import math
import operator
import warnings
from dataclasses import dataclass

import numpy as np

from . import _shrink
from ._classifiers import LinearClassifier, StochasticClassifier
from ._game import Block, GameSpec, kernel_pass, revalidated, spec_from_problem
from ._models import KernelModel, LinearModel
from ._players import OPTIMIZERS, LagrangePlayer, ModelPlayer, SwapRegretPlayer
from ._threads import resolve_n_threads
from .core import FeatureMatrix
from .exceptions import InfeasibleWarning

__all__ = ["train", "TrainResult", "FeasibilityReport", "METHODS", "SOLUTIONS", "FEASIBILITY_RTOL"]

METHODS = ("proxy-swap", "proxy-external", "lagrangian-hinge", "unconstrained")
SOLUTIONS = ("m-stochastic", "T-stochastic", "best", "last")


#: Round-off tolerance of the feasibility reports: constraint ``i`` counts as
#: violated when its value exceeds ``FEASIBILITY_RTOL * max(1, max_t |g_i(t)|)``,
#: the largest magnitude it takes over the recorded iterates (``1e-9`` for rates).
FEASIBILITY_RTOL = 1e-9


@dataclass(frozen=True, eq=False)
class FeasibilityReport:
    """Whether a training solution meets the training constraints.

    Returned by :meth:`TrainResult.feasibility` and kept by the estimator as
    ``RateConstrainedClassifier.feasibility_``. Every value is measured on the
    training data with the 0-1 (not proxy) constraints; for a mixture the
    values are expected values.

    Parameters
    ----------
    solution : str
        The solution kind the report is about (``"m-stochastic"``,
        ``"T-stochastic"``, ``"best"`` or ``"last"``).
    feasible : bool
        Whether every constraint value is at most its round-off tolerance
        (see ``tolerances``).
    max_violation : float
        The solution's largest violation, ``max(0, max_i g_i)``.
    achievable_violation : float
        The smallest largest violation that any mixture of the recorded
        iterates reaches, ``max(0, min_p max_i sum_t p_t g_i(t))`` (the
        min-max LP of the m-stochastic shrink); 0 when some mixture meets
        every constraint. A positive value means that the constraints cannot
        all be met by anything this training run produced.
    constraint_values : dict of str to float
        Every constraint's value ``g_i`` for the solution (``<= 0`` holds), by name.
    violated : dict of str to float
        The constraints whose value exceeds their tolerance, with their
        values, in constraint order (empty when ``feasible``).
    tolerances : dict of str to float
        Round-off tolerance of each constraint:
        ``FEASIBILITY_RTOL * max(1, max_t |g_i(t)|)`` with ``FEASIBILITY_RTOL =
        1e-9`` (``1e-9`` for constraints on rates).

    See Also
    --------
    TrainResult.feasibility : Build the report of a solution.
    rateopt.exceptions.InfeasibleWarning : Issued when training ends infeasible.
    """

    solution: str
    feasible: bool
    max_violation: float
    achievable_violation: float
    constraint_values: dict
    violated: dict
    tolerances: dict

    def describe(self, allowed=0.0):
        """One sentence naming the constraints violated beyond ``allowed``.

        Parameters
        ----------
        allowed : float, default=0.0
            Violation not reported (on top of each constraint's tolerance).

        Returns
        -------
        str
            The sentence (empty when no constraint is violated beyond ``allowed``).
        """
        bad = {n: v for n, v in self.violated.items() if v > allowed + self.tolerances[n]}
        if not bad:
            return ""
        listed = ", ".join(f"{n!r} (value {v:+.6g})" for n, v in bad.items())
        text = (f"the {self.solution} solution violates {len(bad)} training constraint(s): {listed}; "
                f"largest violation {self.max_violation:.6g}. ")
        if self.achievable_violation > 0:
            text += (f"No mixture of the recorded iterates meets every constraint: the smallest achievable "
                     f"largest violation is {self.achievable_violation:.6g}.")
        else:
            text += "A mixture of the recorded iterates meets every constraint (the m-stochastic solution)."
        return text


#: Constraint rows (and the objective) with a coefficient or offset above this
#: magnitude are rescaled for the game (see :func:`_game_spec`).
_GAME_MAX_MAGNITUDE = 2.0**64


def _pow2_exponents(top):
    """``e`` with ``top * 2**-e`` in [0.5, 1) where ``top`` exceeds the game's limit, else 0."""
    top = np.asarray(top, dtype=np.float64)
    return np.where(top > _GAME_MAX_MAGNITUDE, np.frexp(top)[1], 0).astype(np.int64)


def _game_spec(spec):
    """The game the players see: rows of extreme magnitude rescaled by a power of two.

    A constraint ``C_i p - kappa_i <= 0`` whose coefficients or offset exceed
    ``2**64`` (e.g. a rate multiplied by 1e200) would overflow the players'
    arithmetic (Adam squares gradients of that size). Dividing the row by a
    power of two that brings it to unit magnitude is exact and keeps its
    feasible set; the objective is treated alike (its minimizers do not
    change). Rows within the limit, i.e. every ordinary problem, are untouched,
    and the recorded values always use the problem as stated.
    """
    m = spec.n_constraints
    row_top = (np.maximum(np.abs(spec.C).max(axis=1, initial=0.0), np.abs(spec.kappa)) if m
               else np.zeros(0))
    e_row = _pow2_exponents(row_top)
    e_obj = int(_pow2_exponents(max(float(np.abs(spec.c0).max(initial=0.0)), abs(float(spec.const0)))))
    if not e_row.any() and e_obj == 0:
        return spec
    return GameSpec(blocks=spec.blocks, n_atoms=spec.n_atoms, C=np.ldexp(spec.C, -e_row[:, None]),
                    kappa=np.ldexp(spec.kappa, -e_row), c0=np.ldexp(spec.c0, -e_obj),
                    const0=math.ldexp(float(spec.const0), -e_obj), constraint_names=spec.constraint_names,
                    n_features=spec.n_features)


def _constraint_bound(C, kappa):
    """B_Delta: the largest |g_i| any model can produce (rates lie in [0, 1])."""
    if C.shape[0] == 0:
        return 1.0
    hi = np.maximum(C, 0).sum(axis=1) - kappa
    lo = np.minimum(C, 0).sum(axis=1) - kappa
    return float(max(np.max(np.abs(hi)), np.max(np.abs(lo)), 1e-12))


def default_eta_lambda(method, n_constraints, n_iter, bound, lambda_radius=None):
    """The multiplier step sizes of the papers' rate lemmas.

    * ``proxy-swap``: Lemma 8, ``sqrt((m+1) ln(m+1) / (T B^2))``.
    * Lagrangian methods: Lemma 23, ``R / (B sqrt(2T))`` with ``R = lambda_radius``
      (or ``R = 1`` when there is no radius).
    """
    m, T = n_constraints, max(n_iter, 1)
    if method == "proxy-swap":
        k = m + 1
        return math.sqrt(k * math.log(k) / (T * bound * bound)) if k > 1 else 0.0
    R = 1.0 if lambda_radius is None else lambda_radius
    return R / (bound * math.sqrt(2 * T))


class TrainResult:
    """The outcome of :func:`train`: the recorded iterates and how to turn them into a classifier.

    Attributes
    ----------
    method : str
    weights : ndarray of shape (n_recorded, n_features)
        Recorded iterates ``theta(t)``.
    biases : ndarray of shape (n_recorded,)
    iterations : ndarray of int of shape (n_recorded,)
        The iteration at which each iterate was recorded.
    objectives : ndarray of shape (n_recorded,)
        Training 0-1 objective of each iterate.
    constraints : ndarray of shape (n_recorded, n_constraints)
        Training 0-1 constraint values ``g_i`` (<= 0 is satisfied).
    multipliers : ndarray of shape (n_recorded, n_constraints + 1)
        The multipliers when each iterate was played; the first entry is the
        objective's weight (``lambda_1`` of the proxy-Lagrangian, 1 for the
        Lagrangian methods).
    val_objectives, val_constraints : ndarray or None
        The same on the validation problem, when one was given.
    constraint_names : tuple of str
    n_iter : int
        Iterations run (fewer than asked if a callback stopped training).
    """

    def __init__(self, *, method, weights, biases, iterations, objectives, constraints, multipliers,
                 val_objectives, val_constraints, constraint_names, n_iter, feature_map=None):
        self.feature_map = feature_map
        self.method = method
        self.weights = weights
        self.biases = biases
        self.iterations = iterations
        self.objectives = objectives
        self.constraints = constraints
        self.multipliers = multipliers
        self.val_objectives = val_objectives
        self.val_constraints = val_constraints
        self.constraint_names = constraint_names
        self.n_iter = n_iter

    @property
    def max_violations(self):
        """``max(0, max_i g_i)`` of every recorded iterate."""
        if self.constraints.shape[1] == 0:
            return np.zeros(self.constraints.shape[0])
        return np.maximum(self.constraints.max(axis=1), 0.0)

    @property
    def history(self):
        """Per recorded iterate: iteration, objective, max violation and multipliers."""
        return {
            "iteration": self.iterations,
            "objective": self.objectives,
            "max_violation": self.max_violations,
            "multipliers": self.multipliers,
        }

    def solution(self, kind="m-stochastic", *, epsilon=0.0, weighting="uniform"):
        """Build a classifier from the recorded iterates.

        Parameters
        ----------
        kind : {"m-stochastic", "T-stochastic", "best", "last"}, default="m-stochastic"
            ``"m-stochastic"``: the mixture of at most m+1 iterates solving the
            shrinking LP (seed 001, Lemma 5) with HiGHS; if no mixture meets the
            constraints within ``epsilon``, the one with the smallest largest
            violation, then the best objective at that violation.
            ``"T-stochastic"``: every iterate, uniformly or weighted by the
            objective's multiplier (``weighting="lambda"``, Theorem 6).
            ``"best"``: the iterate chosen by the rank heuristic (Eq. 18) on the
            training values. ``"last"``: the last iterate.
        epsilon : float, default=0.0
            Allowed constraint violation of the m-stochastic LP.
        weighting : {"uniform", "lambda"}, default="uniform"
            Weights of the T-stochastic mixture.

        Returns
        -------
        LinearClassifier or StochasticClassifier
        """
        if kind == "last":
            return LinearClassifier(self.weights[-1], self.biases[-1], feature_map=self.feature_map)
        if kind == "best":
            t = _shrink.best_iterate(self.objectives, self.constraints)
            return LinearClassifier(self.weights[t], self.biases[t], feature_map=self.feature_map)
        if kind == "T-stochastic":
            if weighting == "uniform":
                p = _shrink.uniform_mixture(self.weights.shape[0])
            elif weighting == "lambda":
                p = _shrink.lambda_weighted_mixture(self.multipliers[:, 0])
            else:
                raise ValueError(f"weighting must be 'uniform' or 'lambda', got {weighting!r}")
            return StochasticClassifier(self.weights, self.biases, p, feature_map=self.feature_map)
        if kind == "m-stochastic":
            res = _shrink.shrink(self.objectives, self.constraints, epsilon=epsilon)
            s = res.support
            return StochasticClassifier(self.weights[s], self.biases[s], res.weights[s], feature_map=self.feature_map)
        raise ValueError(f"kind must be one of {SOLUTIONS}, got {kind!r}")

    def solution_values(self, kind="m-stochastic", *, epsilon=0.0, weighting="uniform"):
        """Training objective and constraint values of a solution (expected values for mixtures).

        Returns
        -------
        objective : float
        constraints : ndarray of shape (n_constraints,)
        """
        T = self.weights.shape[0]
        if kind == "last":
            p = np.eye(T)[-1]
        elif kind == "best":
            p = np.eye(T)[_shrink.best_iterate(self.objectives, self.constraints)]
        elif kind == "T-stochastic":
            if weighting == "uniform":
                p = _shrink.uniform_mixture(T)
            elif weighting == "lambda":
                p = _shrink.lambda_weighted_mixture(self.multipliers[:, 0])
            else:
                raise ValueError(f"weighting must be 'uniform' or 'lambda', got {weighting!r}")
        elif kind == "m-stochastic":
            p = _shrink.shrink(self.objectives, self.constraints, epsilon=epsilon).weights
        else:
            raise ValueError(f"kind must be one of {SOLUTIONS}, got {kind!r}")
        return float(p @ self.objectives), self.constraints.T @ p

    def feasibility(self, kind="m-stochastic", *, epsilon=0.0, weighting="uniform"):
        """Report whether a solution meets the training constraints.

        Parameters
        ----------
        kind : {"m-stochastic", "T-stochastic", "best", "last"}, default="m-stochastic"
            The solution (as in :meth:`solution`).
        epsilon : float, default=0.0
            Allowed violation of the m-stochastic LP (the report still measures
            violations against 0).
        weighting : {"uniform", "lambda"}, default="uniform"
            Weights of the T-stochastic mixture.

        Returns
        -------
        FeasibilityReport
            The solution's constraint values, which of them are violated, its
            largest violation and the smallest largest violation any mixture of
            the recorded iterates achieves.
        """
        G = self.constraints
        m = G.shape[1]
        if m == 0:
            tol = np.zeros(0)
            achievable = 0.0
        else:
            tol = FEASIBILITY_RTOL * np.maximum(1.0, np.abs(G).max(axis=0))
            res = _shrink.shrink(self.objectives, G, epsilon=0.0)
            achievable = 0.0 if res.feasible else max(0.0, float(res.infeasibility))
        if kind == "m-stochastic" and m and type(epsilon) in (int, float) and epsilon == 0:
            g = res.constraint_values  # the same LP as solution_values would solve
        else:
            _, g = self.solution_values(kind, epsilon=epsilon, weighting=weighting)
        names = self.constraint_names
        values = {n: float(v) for n, v in zip(names, g)}
        violated = {n: float(v) for n, v, t in zip(names, g, tol) if v > t}
        return FeasibilityReport(
            solution=kind,
            feasible=not violated,
            max_violation=max(0.0, float(g.max())) if m else 0.0,
            achievable_violation=achievable,
            constraint_values=values,
            violated=violated,
            tolerances={n: float(t) for n, t in zip(names, tol)},
        )

    def summary(self, kind="m-stochastic", *, epsilon=0.0, file=None):
        """Print the chosen solution's training values, per constraint.

        Shows each constraint's value (<= 0 is satisfied), whether it binds
        (within 1e-6 of 0), and, when the solution violates a constraint, its
        largest violation and the smallest largest violation any mixture of
        the iterates achieves (see :meth:`feasibility`).

        Parameters
        ----------
        kind : str, default="m-stochastic"
            The solution (as in :meth:`solution`).
        epsilon : float, default=0.0
            Allowed violation of the m-stochastic LP.
        file : file-like, default=None
            Where to print (standard output by default).

        Returns
        -------
        str
            The printed text.
        """
        import sys

        obj, g = self.solution_values(kind, epsilon=epsilon)
        lines = [f"rateopt {self.method}: {self.n_iter} iterations, {self.weights.shape[0]} recorded iterates",
                 f"solution {kind}: training objective {obj:.6f}"]
        if kind == "m-stochastic":
            res = _shrink.shrink(self.objectives, self.constraints, epsilon=epsilon)
            lines[-1] += f", {res.support.shape[0]} support model(s)"
        report = self.feasibility(kind, epsilon=epsilon)
        if not report.feasible:
            lines.append(f"  INFEASIBLE on the training data: largest violation {report.max_violation:.6f}")
            if report.achievable_violation > 0:
                lines[-1] += ("; no mixture of the iterates meets every constraint; smallest achievable "
                              f"largest violation = {report.achievable_violation:.6f}")
        width = max([len(n) for n in self.constraint_names] + [10])
        for name, v in zip(self.constraint_names, g):
            status = "violated" if v > 1e-6 else ("binds" if v > -1e-6 else "slack")
            lines.append(f"  {name:<{width}}  {v:+.6f}  {status}")
        text = "\n".join(lines)
        print(text, file=file or sys.stdout)
        return text


def _check_positive(name, value, allow_none=False):
    if value is None and allow_none:
        return None
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a positive number, got {value!r}") from None
    if not (math.isfinite(v) and v > 0):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return v


def _check_int(name, value, minimum, allow_none=False):
    if value is None and allow_none:
        return None
    try:
        if isinstance(value, bool):
            raise TypeError
        v = operator.index(value)
    except TypeError:
        raise ValueError(f"{name} must be an integer, got {value!r}") from None
    if v < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {v}")
    return v


def _progress(verbose, total):
    if not verbose:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc="rateopt", leave=False)


def train(problem, model=None, method="proxy-swap", *, n_iter=1000, optimizer="adam", learning_rate=0.01,
          eta_lambda=None, update="multiplicative", lambda_radius=None, batch_size=None, margin=1.0,
          record_every=None, validation=None, random_state=None, n_threads=None, verbose=False,
          callback=None):
    """Train a linear model under rate constraints.

    Parameters
    ----------
    problem : Problem or GameSpec
        The objective and constraints (compiled once).
    model : LinearModel or KernelModel, default=None
        The model and its regularization (default ``LinearModel()``). A
        :class:`KernelModel` chooses its landmarks on the training dataset,
        builds the feature block of every dataset once, and trains a linear
        model on it; its classifiers carry the feature map.
    method : {"proxy-swap", "proxy-external", "lagrangian-hinge", "unconstrained"}, default="proxy-swap"
        ``"proxy-swap"``: the proxy-Lagrangian game of seed 001, Algorithm 3 (the
        model steps on hinge proxies, the multipliers on the (m+1)-simplex see
        the true 0-1 constraint values and minimize swap regret).
        ``"proxy-external"``: Algorithm 4 (model on proxies, Lagrange multipliers
        ``lambda >= 0`` on the 0-1 values, external regret).
        ``"lagrangian-hinge"``: Algorithm 5 with hinge proxies for both players
        (the "Hinge" baseline). ``"unconstrained"``: the objective's proxy only.
    n_iter : int, default=1000
        Iterations T (each is one pass of the fused kernel).
    optimizer : {"adam", "adagrad", "sgd"}, default="adam"
        The model player's steps.
    learning_rate : float, default=0.01
        The model player's step size.
    eta_lambda : float, default=None
        The multipliers' step size. Default: Lemma 8's
        ``sqrt((m+1) ln(m+1) / (T B^2))`` for ``proxy-swap`` and Lemma 23's
        ``R / (B sqrt(2T))`` (R = ``lambda_radius`` or 1) for the Lagrangian
        methods, with B the largest possible ``|g_i|``. The lemmas' steps are
        conservative; larger steps (0.1-1) usually reach feasibility sooner.
    update : {"multiplicative", "additive"}, default="multiplicative"
        The swap-regret update of ``proxy-swap``.
    lambda_radius : float, default=None
        L1 radius R of the Lagrange multipliers (Lagrangian methods; None: no cap).
    batch_size : int, default=None
        Minibatch size per dataset (rows drawn with replacement; estimates are
        unbiased). None: full batch. Recorded iterates are always evaluated on
        the full training data.
    margin : float, default=1.0
        Hinge margin of the proxies.
    record_every : int, default=None
        Record the iterate every this many iterations (default: ``max(1, T // 100)``);
        the last iterate is always recorded.
    validation : Problem or GameSpec, default=None
        Also evaluate recorded iterates on this problem (same constraints on
        validation data).
    random_state : int or None, default=None
        Seed of the minibatch sampling (full-batch training is deterministic).
    n_threads : int or None, default=None
        Threads of the core (None: the OpenMP setting; -1: all cores).
    verbose : bool, default=False
        Show a progress bar (needs ``tqdm``; silently skipped without it).
    callback : callable, default=None
        Called as ``callback(iteration, info)`` after every recorded iterate with
        ``info = {"objective", "constraints", "multipliers"}``; return ``True``
        to stop training.

    Returns
    -------
    TrainResult
        The recorded iterates, their training values and the solutions built from them.

    Raises
    ------
    ValueError
        On an unknown method, optimizer or update, or invalid numbers.

    Warns
    -----
    rateopt.exceptions.InfeasibleWarning
        When no mixture of the recorded iterates meets every training
        constraint (so no solution built from this run does): the message
        names the constraints the m-stochastic solution violates, with their
        values, and the smallest achievable largest violation. A constraint
        counts as violated when its value exceeds a round-off tolerance of
        ``1e-9 * max(1, max_t |g_i(t)|)`` (``1e-9`` for rates). The same
        facts are in ``result.feasibility()`` (:class:`FeasibilityReport`).

    Notes
    -----
    Constraints are used as stated, whatever their magnitude. A constraint
    (or objective) with a coefficient or offset above ``2**64`` (say a rate
    times 1e200) is divided, for the players only, by the power of two that
    brings it to unit magnitude: exact, with the same feasible set, and it
    keeps the game's arithmetic finite. Recorded values, solutions and
    reports use the problem as stated; the shrinking LP rescales its rows the
    same way.
    """
    result = _run_game(problem, model, method, n_iter=n_iter, optimizer=optimizer, learning_rate=learning_rate,
                       eta_lambda=eta_lambda, update=update, lambda_radius=lambda_radius, batch_size=batch_size,
                       margin=margin, record_every=record_every, validation=validation,
                       random_state=random_state, n_threads=n_threads, verbose=verbose, callback=callback)
    warn_if_infeasible(result.feasibility("m-stochastic"), stacklevel=2)
    return result


def warn_if_infeasible(report, allowed=0.0, stacklevel=2):
    """Issue an :class:`~rateopt.exceptions.InfeasibleWarning` if ``report`` shows
    a violation beyond ``allowed`` (plus the round-off tolerance).

    ``stacklevel=2`` attributes the warning to the caller of the function that
    calls this one.
    """
    text = report.describe(allowed)
    if text:
        warnings.warn(f"infeasible fit: {text}", InfeasibleWarning, stacklevel=stacklevel + 1)


def _run_game(problem, model, method, *, n_iter, optimizer, learning_rate, eta_lambda, update, lambda_radius,
              batch_size, margin, record_every, validation, random_state, n_threads, verbose, callback):
    """:func:`train` without the feasibility check (the estimator checks its own solution)."""
    spec = _as_spec(problem)
    val_spec = None if validation is None else _as_spec(validation)
    if val_spec is not None and val_spec.n_constraints != spec.n_constraints:
        raise ValueError("validation must have the same constraints as problem")
    model = LinearModel() if model is None else model
    if not isinstance(model, (LinearModel, KernelModel)):
        raise TypeError(f"model must be a LinearModel or a KernelModel, got {type(model).__name__}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {optimizer!r}")
    if update not in ("multiplicative", "additive"):
        raise ValueError(f"update must be 'multiplicative' or 'additive', got {update!r}")
    n_iter = _check_int("n_iter", n_iter, 1)
    learning_rate = _check_positive("learning_rate", learning_rate)
    lambda_radius = _check_positive("lambda_radius", lambda_radius, allow_none=True)
    margin = _check_positive("margin", margin)
    batch_size = _check_int("batch_size", batch_size, 1, allow_none=True)
    record_every = _check_int("record_every", record_every, 1, allow_none=True) or max(1, n_iter // 100)
    threads = resolve_n_threads(n_threads)
    feature_map = None
    if isinstance(model, KernelModel):
        feature_map = _fit_feature_map(spec, model, threads)
        spec = _mapped_spec(spec, feature_map, threads)
        if val_spec is not None:
            val_spec = _mapped_spec(val_spec, feature_map, threads)
    m = spec.n_constraints
    game = _game_spec(spec)  # what the players see; recorded values use spec
    bound = _constraint_bound(game.C, game.kappa)
    if eta_lambda is None:
        eta_lambda = default_eta_lambda(method, m, n_iter, bound, lambda_radius)
    elif method != "unconstrained":
        eta_lambda = _check_positive("eta_lambda", eta_lambda)
    rng = np.random.default_rng(random_state)

    player = None
    if method == "proxy-swap":
        player = SwapRegretPlayer(m, eta=eta_lambda, update=update)
    elif method in ("proxy-external", "lagrangian-hinge"):
        player = LagrangePlayer(m, eta=eta_lambda, radius=lambda_radius)
    mp = ModelPlayer(spec.n_features, optimizer=optimizer, learning_rate=learning_rate, l2=model.l2,
                     radius=model.radius, fit_intercept=model.fit_intercept)
    sizes = [blk.X.n_samples for blk in spec.blocks]
    minibatch = batch_size is not None and any(batch_size < n for n in sizes)

    rec = {k: [] for k in ("w", "b", "it", "obj", "g", "lam", "vobj", "vg")}
    bar = _progress(verbose, n_iter)
    zero = np.zeros(spec.n_atoms)
    t_done = 0
    for t in range(n_iter):
        if player is None:
            lam_obj, lam_con = 1.0, np.zeros(m)
        else:
            lam_obj, lam_con = player.weights()
        coef = lam_obj * game.c0 + lam_con @ game.C
        rows = None
        if minibatch:
            rows = [None if batch_size >= n else rng.integers(0, n, batch_size) for n in sizes]
        kp = kernel_pass(game, mp.theta, mp.bias, coef, margin=margin, rows=rows, n_threads=threads)
        g01 = game.constraints(kp.rates)
        record = (t % record_every == 0) or (t == n_iter - 1)
        stop = False
        if record:
            full = kp if not minibatch else kernel_pass(spec, mp.theta, mp.bias, zero, margin=margin,
                                                        n_threads=threads)
            lam_state = player.state() if player is not None else np.concatenate(([1.0], np.zeros(m)))
            obj, g = spec.objective(full.rates), spec.constraints(full.rates)
            rec["w"].append(mp.theta.copy())
            rec["b"].append(mp.bias)
            rec["it"].append(t)
            rec["obj"].append(obj)
            rec["g"].append(g)
            rec["lam"].append(lam_state)
            if val_spec is not None:
                vp = kernel_pass(val_spec, mp.theta, mp.bias, np.zeros(val_spec.n_atoms), margin=margin,
                                 n_threads=threads)
                rec["vobj"].append(val_spec.objective(vp.rates))
                rec["vg"].append(val_spec.constraints(vp.rates))
            if callback is not None:
                stop = bool(callback(t, {"objective": obj, "constraints": g, "multipliers": lam_state}))
        t_done = t + 1
        if bar is not None:
            bar.update(1)
        if stop:
            break
        if player is not None and m > 0 and method == "lagrangian-hinge":
            # Both players on the hinge relaxation: the multipliers see g~ at the
            # same model the gradient was taken at.
            g_hinge = game.proxy_constraints(mp.theta, mp.bias, margin=margin, rows=rows, n_threads=threads)
        mp.step(kp.grad, kp.grad_bias)
        if player is not None and m > 0:
            player.update(g_hinge if method == "lagrangian-hinge" else g01)
    if bar is not None:
        bar.close()
    return TrainResult(
        method=method,
        weights=np.array(rec["w"]),
        biases=np.array(rec["b"]),
        iterations=np.array(rec["it"]),
        objectives=np.array(rec["obj"]),
        constraints=np.array(rec["g"]).reshape(len(rec["g"]), m),
        multipliers=np.array(rec["lam"]),
        val_objectives=np.array(rec["vobj"]) if val_spec is not None else None,
        val_constraints=np.array(rec["vg"]).reshape(len(rec["vg"]), m) if val_spec is not None else None,
        constraint_names=tuple(spec.constraint_names),
        n_iter=t_done,
        feature_map=feature_map,
    )


def _fit_feature_map(spec, model, threads):
    """Landmarks come from the training dataset (the block named "train", else the first)."""
    base = next((b for b in spec.blocks if b.name == "train"), spec.blocks[0])
    return model.fit_map(base.X, n_threads=threads)


def _mapped_spec(spec, feature_map, threads):
    """The same game on the kernel features of every dataset (built once, memory checked up front)."""
    from ._kernels import check_block_memory

    total = sum(b.X.n_samples for b in spec.blocks)
    check_block_memory(total, feature_map.n_components_, feature_map.dtype)
    blocks = tuple(
        Block(FeatureMatrix(feature_map.transform(b.X, n_threads=threads)), b.atoms, b.atom_ids, b.name)
        for b in spec.blocks
    )
    return GameSpec(blocks=blocks, n_atoms=spec.n_atoms, C=spec.C, kappa=spec.kappa, c0=spec.c0,
                    const0=spec.const0, constraint_names=spec.constraint_names,
                    n_features=feature_map.n_components_)


def _as_spec(problem):
    if isinstance(problem, GameSpec):
        return revalidated(problem)
    if not hasattr(problem, "compiled") or not hasattr(problem, "datasets"):
        raise TypeError(f"problem must be a rateopt Problem, got {type(problem).__name__}")
    return spec_from_problem(problem)
