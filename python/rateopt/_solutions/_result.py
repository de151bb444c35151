"""What a training run leaves: recorded iterates with their atom rates, and the solutions.

A :class:`TrainResult` keeps, for every recorded iterate, its model, its
multipliers and its full vector of **atom rates** (training, and validation
when given). Objective and constraint values are derived from the atom rates
through the problem's affine maps (:class:`RateMap`), so a game whose
objective is a non-linear function of rates can compute the exact value of a
mixture (the function of the mixture's rates). One function,
:meth:`TrainResult.mixture`, turns a solution kind into mixture weights over
the iterates; classifiers, values, feasibility reports and summaries all use
it, and the shrinking LP is solved once per ``epsilon`` and cached.

Results save to one ``.npz`` file (arrays plus JSON metadata, no pickle) and
load back with :func:`rateopt.load`, so solutions can be re-selected without
retraining.
"""

from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass

import numpy as np

from .._postprocess._certify import certify_expressions
from .._postprocess._mixture import fit_thresholded_mixture
from .._predictors._ensembles import EstimatorMixture
from .._predictors._linear import LinearClassifier, StochasticClassifier, map_arrays, map_meta
from .._utils._archive import write_archive
from ..exceptions import InfeasibleWarning, RateoptError
from . import _shrink
from ._exact import exact_mixture

__all__ = [
    "FEASIBILITY_RTOL",
    "RESULT_FORMAT",
    "SOLUTIONS",
    "SOLUTION_KINDS",
    "FeasibilityReport",
    "RateMap",
    "TrainResult",
    "warn_if_infeasible",
]

SOLUTIONS = ("m-stochastic", "T-stochastic", "best", "last", "exact")
#: Solution kinds of the estimator and of goals files: the mixtures, and the thresholds re-fitted on the
#: training problem (``"thresholded"``).
SOLUTION_KINDS = SOLUTIONS + ("thresholded",)
RESULT_FORMAT = "rateopt-train-result"

#: Round-off tolerance of the feasibility reports: constraint ``i`` counts as
#: violated when its value exceeds ``FEASIBILITY_RTOL * max(1, max_t |g_i(t)|)``,
#: the largest magnitude it takes over the recorded iterates (``1e-9`` for rates).
FEASIBILITY_RTOL = 1e-9


@dataclass(frozen=True, eq=False)
class RateMap:
    """The affine maps from atom rates to the objective and the constraints.

    ``objective = c0 . rates + const0`` and ``constraints = C rates - kappa``
    (``<= 0`` holds).
    """

    c0: np.ndarray
    const0: float
    C: np.ndarray
    kappa: np.ndarray
    constraint_names: tuple
    metric: object = None
    metric_constraints: tuple = ()

    @classmethod
    def of(cls, spec):
        """The maps of a :class:`~rateopt._training._spec.GameSpec`."""
        return cls(spec.c0, float(spec.const0), spec.C, spec.kappa, tuple(spec.constraint_names), spec.metric,
                   tuple(spec.metric_constraints))

    def objective(self, atom_rates):
        """The objective at one vector of atom rates: exact for a mixture's expected atom rates."""
        if self.metric is not None:
            return self.metric.objective(atom_rates)
        return float(self.c0 @ atom_rates + self.const0)

    def objectives(self, atom_rates):
        """Objective of each row of ``atom_rates`` (n_recorded, n_atoms)."""
        return np.array([self.objective(r) for r in atom_rates])

    def constraints(self, atom_rates):
        """Constraint values of each row of ``atom_rates``: shape (n_recorded, n_constraints)
        (the rows of ``C``, then the metric constraints)."""
        m = self.C.shape[0]
        G = np.array([self.C @ r - self.kappa for r in atom_rates]).reshape(len(atom_rates), m)
        if self.metric_constraints:
            extra = np.array([[c.value(r) for c in self.metric_constraints] for r in atom_rates])
            G = np.hstack([G, extra.reshape(len(atom_rates), len(self.metric_constraints))])
        return G


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
        all be met by anything this training run produced. With constraints
        on non-linear metrics the mixture's own values are not those of the
        LP, so this is the largest violation of the ``"exact"`` mixture
        (a local solve: an upper bound on the smallest achievable).
    constraint_values : dict of str to float
        Every constraint's value ``g_i`` for the solution (``<= 0`` holds), by name.
    violated : dict of str to float
        The constraints whose value exceeds their tolerance, with their
        values, in constraint order (empty when ``feasible``).
    tolerances : dict of str to float
        Round-off tolerance of each constraint:
        ``FEASIBILITY_RTOL * max(1, max_t |g_i(t)|)`` with ``FEASIBILITY_RTOL =
        1e-9`` (``1e-9`` for constraints on rates).
    achieved_by : str, default="m-stochastic"
        The solution kind that attains ``achievable_violation``
        (``"exact"`` with metric constraints).

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
    achieved_by: str = "m-stochastic"

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
            text += f"A mixture of the recorded iterates meets every constraint (the {self.achieved_by} solution)."
        return text


def warn_if_infeasible(report, allowed=0.0, stacklevel=2):
    """Issue an :class:`~rateopt.exceptions.InfeasibleWarning` if ``report`` shows
    a violation beyond ``allowed`` (plus the round-off tolerance).

    ``stacklevel=2`` attributes the warning to the caller of the function that
    calls this one.
    """
    text = report.describe(allowed)
    if text:
        warnings.warn(f"infeasible fit: {text}", InfeasibleWarning, stacklevel=stacklevel + 1)


class TrainResult:
    """The outcome of :func:`rateopt.train`: the recorded iterates and how to turn them into a classifier.

    Parameters
    ----------
    method : str
    weights : ndarray of shape (n_recorded, n_features)
    biases : ndarray of shape (n_recorded,)
    iterations : ndarray of int of shape (n_recorded,)
    multipliers : ndarray of shape (n_recorded, n_constraints + 1)
    atom_rates : ndarray of shape (n_recorded, n_atoms)
    rate_map : RateMap
    n_iter : int
    val_atom_rates : ndarray of shape (n_recorded, n_val_atoms), default=None
    val_rate_map : RateMap, default=None
    feature_map : NystroemMap, default=None
    settings : dict, default=None
        The training parameters the run used (saved with the result).
    offsets : ndarray of shape (n_recorded, n_offsets), default=None
        The trainable thresholds of offset atoms (``rateopt.metrics.roc_auc``)
        at each recorded iterate; None when the problem has none. Training
        variables only: the classifiers are the plain models.

    Attributes
    ----------
    method : str
    weights : ndarray of shape (n_recorded, n_features)
        Recorded iterates ``theta(t)``.
    biases : ndarray of shape (n_recorded,)
    iterations : ndarray of int of shape (n_recorded,)
        The iteration at which each iterate was recorded.
    multipliers : ndarray of shape (n_recorded, n_constraints + 1)
        The multipliers when each iterate was played; the first entry is the
        objective's weight (``lambda_1`` of the proxy-Lagrangian, 1 for the
        Lagrangian methods).
    atom_rates : ndarray of shape (n_recorded, n_atoms)
        Every atom's training 0-1 positive rate at each iterate (full data).
    objectives : ndarray of shape (n_recorded,)
        Training 0-1 objective of each iterate (from ``atom_rates``).
    constraints : ndarray of shape (n_recorded, n_constraints)
        Training 0-1 constraint values ``g_i`` (<= 0 is satisfied).
    val_atom_rates, val_objectives, val_constraints : ndarray or None
        The same on the validation problem, when one was given.
    constraint_names : tuple of str
    n_iter : int
        Iterations run (fewer than asked if a callback stopped training).
    """

    def __init__(self, *, method, weights, biases, iterations, multipliers, atom_rates, rate_map, n_iter,
                 val_atom_rates=None, val_rate_map=None, feature_map=None, settings=None, offsets=None,
                 models=None):
        self.method = method
        self.weights = weights
        self.biases = biases
        self.iterations = iterations
        self.multipliers = multipliers
        self.atom_rates = atom_rates
        self.rate_map = rate_map
        self.val_atom_rates = val_atom_rates
        self.val_rate_map = val_rate_map
        self.n_iter = n_iter
        self.feature_map = feature_map
        self.settings = dict(settings or {})
        self.offsets = offsets  # (n_recorded, n_offsets): trainable thresholds (ROC-AUC slices), or None
        self.models = models  # the fitted classifiers of an estimator oracle (weights are then empty), or None
        self.objectives = rate_map.objectives(atom_rates)
        self.constraints = rate_map.constraints(atom_rates)
        if val_atom_rates is not None:
            self.val_objectives = val_rate_map.objectives(val_atom_rates)
            self.val_constraints = val_rate_map.constraints(val_atom_rates)
        else:
            self.val_objectives = self.val_constraints = None
        self._shrinks = {}

    @property
    def constraint_names(self):
        return self.rate_map.constraint_names

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

    # ------------------------------------------------------------------ solutions

    def shrink(self, epsilon=0.0):
        """The shrinking LP over the recorded iterates (solved once per ``epsilon``, then cached).

        Parameters
        ----------
        epsilon : float, default=0.0
            Allowed constraint violation.

        Returns
        -------
        ShrinkResult
            Mixture weights with at most m+1 nonzeros, and the LP's own
            infeasibility report (``feasible``, ``infeasibility``).
        """
        key = _shrink._check_epsilon(epsilon)
        if key not in self._shrinks:
            self._shrinks[key] = _shrink.shrink(self.objectives, self.constraints, epsilon=key)
        return self._shrinks[key]

    def mixture(self, kind="m-stochastic", *, epsilon=0.0, weighting="uniform"):
        """The mixture weights over the recorded iterates that a solution kind stands for.

        Parameters
        ----------
        kind : {"m-stochastic", "T-stochastic", "best", "last"}, default="m-stochastic"
            ``"m-stochastic"``: the shrinking LP (seed 001, Lemma 5) with HiGHS:
            at most m+1 nonzeros; if no mixture meets the constraints within
            ``epsilon``, the one with the smallest largest violation, then the
            best objective at that violation. ``"T-stochastic"``: every
            iterate, uniformly or weighted by the objective's multiplier
            (``weighting="lambda"``, Theorem 6). ``"best"``: the iterate the
            rank heuristic (Eq. 18) picks on the training values. ``"last"``:
            the last iterate.
        epsilon : float, default=0.0
            Allowed constraint violation of the m-stochastic LP.
        weighting : {"uniform", "lambda"}, default="uniform"
            Weights of the T-stochastic mixture.

        Returns
        -------
        ndarray of shape (n_recorded,)
            Non-negative weights summing to 1 (one-hot for the deterministic kinds).
        """
        T = self.weights.shape[0]
        if kind == "last":
            return np.eye(T)[-1]
        if kind == "best":
            return np.eye(T)[_shrink.best_iterate(self.objectives, self.constraints)]
        if kind == "T-stochastic":
            if weighting == "uniform":
                return _shrink.uniform_mixture(T)
            if weighting == "lambda":
                return _shrink.lambda_weighted_mixture(self.multipliers[:, 0])
            raise ValueError(f"weighting must be 'uniform' or 'lambda', got {weighting!r}")
        if kind == "m-stochastic":
            return self.shrink(epsilon).weights
        if kind == "exact":
            return self.exact_mixture(epsilon)
        raise ValueError(f"kind must be one of {SOLUTIONS}, got {kind!r}")

    def exact_mixture(self, epsilon=0.0):
        """The mixture minimizing the objective of the mixture itself (cached per ``epsilon``).

        For an affine objective this is the shrinking LP's mixture (the LP is
        exact there). For a metric ``psi`` the LP minimizes the mixture of the
        iterates' values, which for a convex ``psi`` only bounds the mixture's
        value ``psi(sum_t q_t z_t)``. This solves the convex problem
        ``min_q psi(sum_t q_t z_t)`` subject to ``sum_t q_t g_t <= epsilon`` on the
        simplex (SLSQP from the LP's solution, the uniform mixture and the best
        iterate; the least violating, then best, point found is kept, and the
        LP's mixture unless something beats it), then reduces the support to at most ``K + m + 1``
        iterates keeping every ``sum_t q_t z_t`` and ``sum_t q_t g_t`` (so
        ``psi`` and the constraints) exactly (Caratheodory, as the LP's).
        Constraints on metrics (``psi_j <= b_j``) are imposed on the mixture's
        own rates, not on the mixture of the iterates' values.

        Parameters
        ----------
        epsilon : float, default=0.0
            Allowed constraint violation.

        Returns
        -------
        ndarray of shape (n_recorded,)
            Mixture weights.
        """
        key = ("exact", _shrink._check_epsilon(epsilon))
        if key not in self._shrinks:
            self._shrinks[key] = exact_mixture(self, key[1])
        return self._shrinks[key]

    def solution(self, kind="m-stochastic", *, epsilon=0.0, weighting="uniform", problem=None, confidence=0.95,
                 n_bins="auto"):
        """Build a classifier from the recorded iterates.

        Parameters
        ----------
        kind : {"m-stochastic", "T-stochastic", "best", "last", "exact", "thresholded", "certified"}
            As in :meth:`mixture`, or ``"thresholded"`` (:meth:`thresholded`:
            the iterates' thresholds re-fitted exactly on ``problem``, the
            training problem) or ``"certified"`` (:meth:`select_certified`:
            the best recorded solution whose goals a held-out ``problem``
            certifies).
        epsilon, weighting
            As in :meth:`mixture`.
        problem : Problem, default=None
            The training problem (``"thresholded"``) or a held-out one
            (``"certified"``).
        confidence : float, default=0.95
            Of ``"certified"``.
        n_bins : int, None or "auto", default="auto"
            Of ``"thresholded"``.

        Returns
        -------
        LinearClassifier, StochasticClassifier or EstimatorMixture
            A linear classifier for ``"best"`` and ``"last"``; a mixture of the
            support models otherwise (every iterate for ``"T-stochastic"``).
            When the iterates are fitted estimators (an estimator oracle), an
            :class:`~rateopt.EstimatorMixture` (of one model for ``"best"`` and ``"last"``).
        """
        if kind in ("thresholded", "certified"):
            if problem is None:
                raise ValueError(f"solution kind {kind!r} needs problem=: the "
                                 + ("training problem" if kind == "thresholded" else "held-out problem"))
            if kind == "thresholded":
                return self.thresholded(problem, n_bins=n_bins, epsilon=epsilon)
            return self.select_certified(problem, confidence=confidence, epsilon=epsilon)[0]
        p = self.mixture(kind, epsilon=epsilon, weighting=weighting)
        if kind in ("best", "last"):
            t = int(np.flatnonzero(p)[0])
            if self.models is not None:
                return EstimatorMixture([self.models[t]], [1.0], self.models[t].n_features_in_)
            return LinearClassifier(self.weights[t], self.biases[t], feature_map=self.feature_map)
        s = {"m-stochastic": self.shrink(epsilon).support, "exact": np.flatnonzero(p)}.get(kind, np.arange(p.shape[0]))
        if self.models is not None:
            n_features = self.models[0].n_features_in_
            return EstimatorMixture([self.models[t] for t in s], p[s], n_features)
        return StochasticClassifier(self.weights[s], self.biases[s], p[s], feature_map=self.feature_map)

    def _all_iterates(self):
        if self.models is not None:
            raise RateoptError("the iterates are fitted estimators (an estimator oracle): thresholds and "
                               "certificates of recorded solutions need linear or kernel iterates")
        T = self.weights.shape[0]
        return StochasticClassifier(self.weights, self.biases, np.full(T, 1.0 / T), feature_map=self.feature_map)

    def thresholded(self, problem, *, n_bins="auto", epsilon=0.0):
        """The best mixture of the recorded iterates, each with its own exactly re-fitted threshold rule.

        Every recorded iterate's scores on the training data are cut into
        bins, and one LP (:mod:`rateopt._postprocess._mixture`) finds the
        mixture of (iterate, randomized threshold) pairs of least training
        objective under the training goals: exact for an affine objective and
        for one ratio of rates (an F-measure), by the Charnes-Cooper
        substitution. The iterates with their own thresholds (0) are
        candidates, so on the training data it is never worse than any of the
        iterates, or any mixture of them, nor than any iterate with a tuned
        threshold (exactly with ``n_bins=None``, and with ``"auto"`` on
        small problems; up to the bins otherwise).

        Parameters
        ----------
        problem : Problem
            The training problem (the rows the iterates were trained on, or
            any other problem on which to fit the thresholds).
        n_bins : int, None or "auto", default="auto"
            Score bins per iterate in the LP over all iterates (None: every
            distinct score, exact; ``"auto"``: exact while iterates x rows is
            at most 1,000,000, else 256 quantile bins per iterate, so that the
            guarantee above holds up to those bins). The iterates it keeps
            (at most m + 2) are then re-fitted exactly, every distinct score a bin.
        epsilon : float, default=0.0
            Allowed violation of each goal.

        Returns
        -------
        ThresholdedMixture
            ``predict_proba`` gives the probability of each decision, shape (n_samples, 2).
        """
        scorer = self._all_iterates()
        features = {name: ds.X for name, ds in problem.datasets.items()}
        mixture, _ = fit_thresholded_mixture(problem.compiled, scorer, features, n_bins=n_bins, epsilon=epsilon)
        return mixture

    def certify(self, problem, *, kind="m-stochastic", confidence=0.95, epsilon=0.0, random_state=0,
                classifier=None):
        """High-confidence bounds on the goals' population values, from a held-out problem.

        Parameters
        ----------
        problem : Problem
            The goals bound to held-out data (rows not used in training).
        kind : str, default="m-stochastic"
            The solution to certify (a kind of :meth:`mixture`).
        confidence : float, default=0.95
            All bounds hold together with at least this probability.
        epsilon : float, default=0.0
            Of the solution.
        random_state : int, default=0
            Seed of the solution's per-row draws.
        classifier : object, default=None
            A classifier to certify instead of ``kind``'s (e.g. the
            :meth:`thresholded` solution): ``predict(X, random_state=...)`` gives its 0/1 decisions.

        Returns
        -------
        rateopt.Certificate
        """
        if classifier is None:
            if kind in ("thresholded", "certified"):
                raise ValueError(f"pass the {kind} solution as classifier= (it needs its own problem)")
            classifier = self.solution(kind, epsilon=epsilon)
        return certify_classifier(problem, classifier, confidence=confidence, random_state=random_state)

    def select_certified(self, problem, *, confidence=0.95, epsilon=0.0, random_state=0):
        """The best recorded solution whose goals a held-out problem certifies.

        The candidates are every recorded iterate and the m-stochastic
        mixture. Each is certified at confidence
        ``1 - (1 - confidence) / n_candidates`` (a union bound over the
        candidates, so the chosen one's bounds hold with probability at least
        ``confidence`` despite the selection); among those whose every goal is
        certified, the one of least training objective is chosen. When none
        is, an :class:`~rateopt.exceptions.InfeasibleWarning` says so and the
        candidate with the smallest largest upper bound is returned.

        Parameters
        ----------
        problem : Problem
            The goals bound to held-out data.
        confidence : float, default=0.95
        epsilon : float, default=0.0
            Of the m-stochastic candidate.
        random_state : int, default=0
            Seed of the mixture's per-row draws.

        Returns
        -------
        classifier : LinearClassifier or StochasticClassifier
        certificate : rateopt.Certificate
            The chosen candidate's certificate (at the per-candidate confidence).
        name : str
            ``"iterate <t>"`` or ``"m-stochastic"``.
        """
        if not (isinstance(confidence, (int, float)) and 0.0 < float(confidence) < 1.0):
            raise ValueError(f"confidence must be a number in (0, 1), got {confidence!r}")
        scorer = self._all_iterates()
        T = self.weights.shape[0]
        each = 1.0 - (1.0 - float(confidence)) / (T + 1)
        scores = {name: scorer.scores(problem.datasets[name].X) for name in problem.compiled.datasets}
        candidates = []
        for t in range(T):
            decisions = {name: (S[:, t] >= 0).astype(np.float64) for name, S in scores.items()}
            cert = certify_expressions(problem.constraints, problem.objective, decisions, confidence=each)
            candidates.append((float(self.objectives[t]), f"iterate {t}", t, cert))
        mix = self.solution("m-stochastic", epsilon=epsilon)
        cert = certify_classifier(problem, mix, confidence=each, random_state=random_state)
        candidates.append((float(self.solution_objective("m-stochastic", epsilon=epsilon)), "m-stochastic", None,
                           cert))
        ok = [c for c in candidates if c[3].certified]
        if ok:
            _, name, t, cert = min(ok, key=lambda c: c[0])
        else:
            _, name, t, cert = min(candidates, key=lambda c: max([b.upper for b in c[3].goals] + [-np.inf]))
            warnings.warn(
                f"no recorded solution is certified at confidence {confidence:g} on the held-out data "
                f"({problem.compiled.n_atoms} atoms): returning {name}, whose largest upper bound is the "
                "smallest; collect more held-out data, relax the goals or tighten training (epsilon < 0 "
                "margins)", InfeasibleWarning, stacklevel=2)
        clf = mix if t is None else LinearClassifier(self.weights[t], self.biases[t], feature_map=self.feature_map)
        return clf, cert, name

    def solution_values(self, kind="m-stochastic", *, epsilon=0.0, weighting="uniform"):
        """Training objective and constraint values of a solution (expected values for mixtures).

        Affine objectives and constraints are the mixture of the iterates'
        values; a metric (objective or constraint) is the metric of the
        mixture's expected rates (which the mixture of its values only bounds).

        Returns
        -------
        objective : float
        constraints : ndarray of shape (n_constraints,)
        """
        p = self.mixture(kind, epsilon=epsilon, weighting=weighting)
        rmap = self.rate_map
        g = self.constraints.T @ p
        if rmap.metric is None and not rmap.metric_constraints:
            return float(p @ self.objectives), g
        r = self.atom_rates.T @ p
        m = rmap.C.shape[0]
        g[m:] = [c.value(r) for c in rmap.metric_constraints]
        obj = rmap.objective(r) if rmap.metric is not None else float(p @ self.objectives)
        return obj, g

    def solution_objective(self, kind="m-stochastic", *, epsilon=0.0, weighting="uniform", validation=False):
        """The exact training (or validation) objective of a solution.

        For an affine objective it equals the mixture of the iterates'
        objectives (``solution_values``); for a non-linear metric it is the
        metric of the mixture's expected rates (seed 003), which the mixture of
        the iterates' values only bounds (from above, for a convex metric).

        Returns
        -------
        float
        """
        rmap = self.val_rate_map if validation else self.rate_map
        return rmap.objective(self.solution_atom_rates(kind, epsilon=epsilon, weighting=weighting,
                                                       validation=validation))

    def solution_atom_rates(self, kind="m-stochastic", *, epsilon=0.0, weighting="uniform", validation=False):
        """The expected atom rates of a solution: the mixture of the iterates' atom rates.

        A function of rates evaluated on these is the solution's exact value
        (for a mixture, not the mixture of the function's values).

        Returns
        -------
        ndarray of shape (n_atoms,)
        """
        p = self.mixture(kind, epsilon=epsilon, weighting=weighting)
        R = self.val_atom_rates if validation else self.atom_rates
        if R is None:
            raise ValueError("no validation problem was given to train()")
        return R.T @ p

    def feasibility(self, kind="m-stochastic", *, epsilon=0.0, weighting="uniform", problem=None, classifier=None):
        """Report whether a solution meets the training constraints.

        Parameters
        ----------
        kind : {"m-stochastic", "T-stochastic", "best", "last", "exact", "thresholded"}, default="m-stochastic"
            The solution (as in :meth:`solution`).
        epsilon : float, default=0.0
            Allowed violation of the m-stochastic LP (the report still measures
            violations against 0).
        weighting : {"uniform", "lambda"}, default="uniform"
            Weights of the T-stochastic mixture.
        problem : Problem, default=None
            The training problem (``"thresholded"``: its values are measured there).
        classifier : object, default=None
            The thresholded solution when already built (else it is built from ``problem``).

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
            res = self.shrink(0.0)
            achievable = 0.0 if res.feasible else max(0.0, float(res.infeasibility))
        exact_lp = not self.rate_map.metric_constraints  # the LP's values are exact for affine constraints
        if m and not exact_lp:  # the LP scores mixtures by per-iterate values: use the exact mixture's own
            _, g_exact = self.solution_values("exact")
            achievable = max(0.0, float(np.max(g_exact))) if np.any(g_exact > tol) else 0.0
        if kind == "thresholded":
            if problem is None:
                raise ValueError("the feasibility of the thresholded solution needs problem=: the training problem")
            clf = classifier if classifier is not None else self.thresholded(problem, epsilon=epsilon)
            ev = problem.evaluate({name: clf.predict_proba(problem.datasets[name].X)[:, 1]
                                   for name in problem.compiled.datasets}, kind="probabilities")
            g = np.array([ev.constraints[n] for n in problem.constraint_names])
        elif kind == "m-stochastic" and m and exact_lp and type(epsilon) in (int, float) and epsilon == 0:
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
            achieved_by="m-stochastic" if exact_lp else "exact",
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
        obj, g = self.solution_values(kind, epsilon=epsilon)
        lines = [f"rateopt {self.method}: {self.n_iter} iterations, {self.weights.shape[0]} recorded iterates",
                 f"solution {kind}: training objective {obj:.6f}"]
        if kind == "m-stochastic":
            lines[-1] += f", {self.shrink(epsilon).support.shape[0]} support model(s)"
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

    # ------------------------------------------------------------------ persistence

    def save(self, path):
        """Save to ``path`` (``.npz`` arrays plus JSON metadata; no pickle). See :func:`rateopt.load`.

        Metric objectives and metric constraints are saved as their ``psi``
        (:meth:`rateopt.metrics.Metric.params`) and compiled atom rows, so a
        loaded result evaluates, selects and reports solutions exactly as the
        original; the rate expressions themselves are not saved.
        """
        meta, arrays = self._payload()
        write_archive(path, meta, arrays, RESULT_FORMAT)

    def _payload(self):
        """The JSON metadata and the arrays :meth:`save` writes (subclasses add theirs)."""
        if self.models is not None:
            raise RateoptError("this result's iterates are scikit-learn estimators (an estimator oracle), which "
                               "rateopt's pickle-free files cannot store; save the estimators with their own format")
        meta = {"kind": "train-result", "method": self.method, "n_iter": int(self.n_iter),
                "constraint_names": list(self.constraint_names), "settings": self.settings,
                "const0": self.rate_map.const0, "feature_map": map_meta(self.feature_map),
                "validation": None if self.val_rate_map is None else
                {"const0": self.val_rate_map.const0, "constraint_names": list(self.val_rate_map.constraint_names),
                 **_metric_meta(self.val_rate_map)},
                **_metric_meta(self.rate_map)}
        arrays = {"weights": self.weights, "biases": self.biases, "iterations": self.iterations,
                  "multipliers": self.multipliers, "atom_rates": self.atom_rates, "c0": self.rate_map.c0,
                  "C": self.rate_map.C, "kappa": self.rate_map.kappa, **map_arrays(self.feature_map),
                  **_metric_arrays(self.rate_map, "")}
        if self.offsets is not None:
            arrays["offsets"] = self.offsets
        if self.val_rate_map is not None:
            arrays.update(val_atom_rates=self.val_atom_rates, val_c0=self.val_rate_map.c0,
                          val_C=self.val_rate_map.C, val_kappa=self.val_rate_map.kappa,
                          **_metric_arrays(self.val_rate_map, "val_"))
        return meta, arrays

    def __repr__(self):
        return (f"TrainResult(method={self.method!r}, n_iter={self.n_iter}, n_recorded={self.weights.shape[0]}, "
                f"n_constraints={self.constraints.shape[1]})")


def certify_classifier(problem, classifier, *, confidence=0.95, random_state=0):
    """A classifier's certificate on a held-out problem (its decisions on every dataset).

    Parameters
    ----------
    problem : Problem
        The goals bound to held-out data.
    classifier : object
        With ``predict(X, random_state=...)`` giving 0/1 decisions.
    confidence : float, default=0.95
    random_state : int, default=0

    Returns
    -------
    rateopt.Certificate
    """
    decisions = {name: np.asarray(classifier.predict(problem.datasets[name].X, random_state=random_state),
                                  dtype=np.float64) for name in problem.compiled.datasets}
    return certify_expressions(problem.constraints, problem.objective, decisions, confidence=confidence)


def _metric_meta(rmap):
    """The JSON part of a rate map's metrics (objective and constraints)."""
    return {"metric": None if rmap.metric is None else rmap.metric.metric.params(),
            "metric_constraints": [{"metric": c.metric.params(), "bound": c.bound}
                                   for c in rmap.metric_constraints]}


def _metric_arrays(rmap, prefix):
    """The compiled rows of a rate map's metrics, under ``prefix``."""
    out = {}
    if rmap.metric is not None:
        out.update({prefix + "Z": rmap.metric.Z, prefix + "z0": rmap.metric.z0})
    for j, c in enumerate(rmap.metric_constraints):
        out.update({f"{prefix}mc{j}_Z": c.Z, f"{prefix}mc{j}_z0": c.z0})
    return out
