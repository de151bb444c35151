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

The same result holds K-class runs: their statistics are the normalized
confusion counts (:mod:`rateopt._training._class_spec`), mapped to the
objective and the constraints by the same :class:`RateMap`, and their
solutions are :class:`~rateopt.MulticlassClassifier` objects.

Results save to one ``.npz`` file (arrays plus JSON metadata, no pickle) and
load back with :func:`rateopt.load`, so solutions can be re-selected without
retraining. The concerns around the result live beside it: the rate maps
(``_rate_map``), the feasibility report (``_feasibility``), certification
(``_certification``) and the file's writer and reader (``_result_file``).
"""

from __future__ import annotations

import sys
import warnings

import numpy as np

from .._postprocess._rule import check_n_bins
from .._predictors._boosted_mixture import booster_of, candidate_rounds, models_mixture, prefixes_scorer
from .._training._arity import arity_of_classes
from .._training._model_kind import TRIVIAL_ITERATION  # the ``iterations`` entry of a trivial rule
from ..exceptions import RateoptError
from . import _shrink
from ._certification import certify_classifier, select_certified
from ._exact import exact_mixture
from ._feasibility import FEASIBILITY_RTOL, FeasibilityReport, feasibility_report, warn_if_infeasible
from ._rate_map import RateMap
from ._result_file import RESULT_FORMAT, result_fields_from_file, result_payload, write_result

__all__ = [
    "FEASIBILITY_RTOL",
    "TRIVIAL_ITERATION",
    "RESULT_FORMAT",
    "SOLUTIONS",
    "SOLUTION_ALIASES",
    "SOLUTION_KINDS",
    "FeasibilityReport",
    "RateMap",
    "TrainResult",
    "canonical_kind",
    "certify_classifier",
    "result_from_file",
    "warn_if_infeasible",
]


SOLUTIONS = ("m-stochastic", "T-stochastic", "best", "last", "exact")
#: Solution kinds of the estimator and of goals files: the mixtures, and the thresholds re-fitted on the
#: training problem (``"thresholded"``).
SOLUTION_KINDS = SOLUTIONS + ("thresholded",)
#: Deprecated names of solution kinds (the K-class results' names before 0.2), kept for one release.
SOLUTION_ALIASES = {"shrunk": "m-stochastic", "average": "T-stochastic"}


def canonical_kind(kind):
    """``kind``, or the kind a deprecated alias names (with a :class:`DeprecationWarning`)."""
    if isinstance(kind, str) and kind in SOLUTION_ALIASES:
        new = SOLUTION_ALIASES[kind]
        warnings.warn(f"solution kind {kind!r} is deprecated and will be removed in the next release: use {new!r}",
                      DeprecationWarning, stacklevel=3)
        return new
    return kind


def _check_problem(problem):
    """Refuse a ``problem=`` argument that is not a :class:`~rateopt.Problem` (by name, before any use)."""
    if not (hasattr(problem, "compiled") and hasattr(problem, "datasets")):
        raise TypeError(f"problem must be a rateopt.Problem, got {type(problem).__name__}")


def result_from_file(meta, arrays, path):
    """Rebuild a :class:`TrainResult` from a loaded archive (fields validated; see ``rateopt.load``)."""
    return TrainResult(**result_fields_from_file(meta, arrays, path))


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
    models : list, default=None
        The fitted classifiers of an estimator oracle (the weights are then empty).
    classes : ndarray of shape (K,), default=None
        The class labels of a K-class run (None: two classes). A K-class run
        records weights (n_recorded, K, n_features), biases (n_recorded, K),
        and as its statistics (``atom_rates``) the confusion counts
        ``N[cell, true class, predicted class]``, flattened and divided by the
        total row weight; its solutions are
        :class:`~rateopt.MulticlassClassifier` objects.
    feature_names : sequence of str, default=None
        The training DataFrame's columns (:func:`rateopt.train` records them
        when the training X has string column names); the K-class solutions
        then check a DataFrame's columns by name. Not saved with the result.

    Attributes
    ----------
    method : str
    weights : ndarray of shape (n_recorded, n_features) or (n_recorded, K, n_features)
        The candidates: the trivial rules' (zero) weights, then the recorded iterates ``theta(t)``.
    biases : ndarray of shape (n_recorded,) or (n_recorded, K)
    iterations : ndarray of int of shape (n_recorded,)
        The iteration at which each iterate was recorded.
    multipliers : ndarray of shape (n_recorded, n_constraints + 1)
        The multipliers when each iterate was played; the first entry is the
        objective's weight (``lambda_1`` of the proxy-Lagrangian, 1 for the
        Lagrangian methods).
    atom_rates : ndarray of shape (n_recorded, n_atoms)
        The statistics of each iterate on the full training data: every
        atom's 0-1 positive rate (two classes), or the normalized confusion
        counts (K classes; see ``classes``).
    objectives : ndarray of shape (n_recorded,)
        Training 0-1 objective of each iterate (from ``atom_rates``).
    constraints : ndarray of shape (n_recorded, n_constraints)
        Training 0-1 constraint values ``g_i`` (<= 0 is satisfied).
    val_atom_rates, val_objectives, val_constraints : ndarray or None
        The same on the validation problem, when one was given.
    constraint_names : tuple of str
    n_iter : int
        Iterations run (fewer than asked if a callback stopped training).
    n_trivial : int
        How many of the leading candidates are not recorded iterates: the
        trivial rules (``iterations == -1``), then the window averages
        (``iterations == -2``), then (two classes) the window averages'
        threshold rules (``iterations == -3``).

    Notes
    -----
    The candidates of every solution are the **trivial rules** (the constant
    classifiers: always negative and always positive, or each constant class
    for K classes), the **window averages**, then the recorded iterates. The
    trivial rules come first, with ``iterations`` equal to -1, zero weights
    and zero multipliers. A window average is the model whose parameters are
    the means of those of the iterates of iterations ``[50 j, 50 j + 50)``,
    for every such window the run recorded whole (with ``iterations`` equal
    to -2 and the window's mean multipliers; ``rateopt._solutions._candidates``).
    For a two-class :class:`~rateopt.Problem` with constraints, the averages
    of windows ``j = 0, 1, 3, 7, ...`` are each followed by the best
    per-group threshold rule of the training problem, and the deterministic
    rules it mixes are candidates too (``iterations`` equal to -3, the
    window's mean multipliers): linear models whose intercept is shifted per
    group when the goals' group columns are features of X, group-blind
    otherwise. The shrinking LP (the m-stochastic and exact
    solutions) may mix them in, so on the training data the m-stochastic
    solution is never worse than a feasible constant classifier, nor than
    those threshold rules. The other
    kinds (``"T-stochastic"``, ``"best"``, ``"last"``) and ``history`` use
    the recorded iterates only. A result has no trivial rules nor window
    averages (``n_trivial == 0``) when its
    iterates are fitted estimators, when the problem has trainable offsets,
    or when it was saved by an earlier version; no trivial rules when the model
    has no intercept (``fit_intercept=False``); no window averages for
    non-linear metric objectives or constraints, nor when no window of 50
    consecutive iterations was recorded (fewer iterations, or every
    ``record_every``-th); no threshold rules for kernel models, problems
    without constraints or with more than 1,000, a game spec given instead
    of a problem, a Dask dataset, or a problem the threshold LP cannot state.
    """

    def __init__(self, *, method, weights, biases, iterations, multipliers, atom_rates, rate_map, n_iter,
                 val_atom_rates=None, val_rate_map=None, feature_map=None, settings=None, offsets=None,
                 models=None, classes=None, feature_names=None):
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
        self.arity = arity_of_classes(classes)  # what depends on the number of classes (_training._arity)
        self.classes = self.arity.classes
        self.feature_names = None if feature_names is None else tuple(feature_names)
        #: The problem the run trained on (set by :func:`rateopt.train`; not saved): the K-class default solution
        #: re-fits its rules on it.
        self.training_problem = None
        its = np.asarray(iterations)
        # the candidates before the recorded iterates: trivial rules (-1), window averages (-2), threshold rules (-3)
        self.n_trivial = int(np.argmax(its >= 0)) if np.any(its >= 0) else 0
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
        k = self.n_trivial
        return {
            "iteration": self.iterations[k:],
            "objective": self.objectives[k:],
            "max_violation": self.max_violations[k:],
            "multipliers": self.multipliers[k:],
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
            ``"m-stochastic"``: the shrinking LP (Cotter et al. 2019, Lemma 5)
            with HiGHS over every candidate (the trivial rules and the
            recorded iterates): at most m+1 nonzeros; if no mixture meets the
            constraints within ``epsilon``, the one with the smallest largest
            violation, then the best objective at that violation.
            ``"T-stochastic"``: every recorded iterate, uniformly or weighted by
            the objective's multiplier (``weighting="lambda"``, Theorem 6).
            ``"best"``: the recorded iterate the rank heuristic (Eq. 18) picks
            on the training values. ``"last"``: the last iterate.
        epsilon : float, default=0.0
            Allowed constraint violation of the m-stochastic LP.
        weighting : {"uniform", "lambda"}, default="uniform"
            Weights of the T-stochastic mixture.

        Returns
        -------
        ndarray of shape (n_recorded,)
            Non-negative weights over the candidates (``weights``' rows),
            summing to 1 (one-hot for the deterministic kinds).
        """
        kind = canonical_kind(kind)
        if weighting not in ("uniform", "lambda"):
            raise ValueError(f"weighting must be 'uniform' or 'lambda', got {weighting!r}")
        T, k = self.weights.shape[0], self.n_trivial
        if kind == "last":
            return np.eye(T)[-1]
        if kind == "best":
            return np.eye(T)[k + _shrink.best_iterate(self.objectives[k:], self.constraints[k:])]
        if kind == "T-stochastic":
            if weighting == "uniform":
                return np.r_[np.zeros(k), _shrink.uniform_mixture(T - k)]
            return np.r_[np.zeros(k), _shrink.lambda_weighted_mixture(self.multipliers[k:, 0])]
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

    def default_kind(self, problem=None):
        """The solution kind :meth:`solution` builds when none is named.

        ``"m-stochastic"`` for two classes, except for the prefixes of a
        boosted run (a :class:`~rateopt.BoostingModel`): ``"thresholded"``, each
        prefix with its exactly re-fitted threshold, group-blind (see
        docs/guide/boosting.md). For K classes ``"thresholded"``
        (the best mixture of the iterates, each with its exactly re-fitted
        rule; see docs/defaults.md, K classes) when its objective is linear
        and the iterates are linear or kernel models. Either needs the
        training problem (``problem``, or ``training_problem``, which
        :func:`rateopt.train` sets) with goals: ``"m-stochastic"`` otherwise
        (e.g. a result loaded from a file, or a problem without goals, where
        the m-stochastic solution is the best iterate).

        Parameters
        ----------
        problem : Problem, default=None
            The training problem (default ``training_problem``).

        Returns
        -------
        str
        """
        return self.arity.default_kind(self, self.training_problem if problem is None else problem)

    def solution(self, kind=None, *, epsilon=0.0, weighting="uniform", problem=None, confidence=0.95,
                 n_bins="auto"):
        """Build a classifier from the recorded iterates.

        Parameters
        ----------
        kind : {"m-stochastic", "T-stochastic", "best", "last", "exact", "thresholded", "certified"}, default=None
            None: :meth:`default_kind` (``"m-stochastic"`` for two classes,
            ``"thresholded"`` for the prefixes of a boosted run with goals,
            ``"thresholded"`` on the training problem for K classes). As in
            :meth:`mixture`, or ``"thresholded"`` (:meth:`thresholded`:
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
        LinearClassifier, StochasticClassifier, MulticlassClassifier, EstimatorMixture or BoostedMixture
            A linear classifier for ``"best"`` and ``"last"``; a mixture of the
            support models otherwise (every iterate for ``"T-stochastic"``).
            K classes: a :class:`~rateopt.MulticlassClassifier` (of one model
            for ``"best"`` and ``"last"``). When the iterates are fitted
            estimators (an estimator oracle), an :class:`~rateopt.EstimatorMixture`
            (of one model for ``"best"`` and ``"last"``); when they are prefixes
            of one booster (a :class:`~rateopt.BoostingModel`), a
            :class:`~rateopt.BoostedMixture`.
        """
        self._release_training()
        if kind is None:
            kind = self.default_kind(problem)
            if kind == "thresholded" and problem is None:
                problem = self.training_problem
        kind = canonical_kind(kind)
        if kind in ("thresholded", "certified"):
            if problem is None:
                raise ValueError(f"solution kind {kind!r} needs problem=: the "
                                 + ("training problem" if kind == "thresholded" else "held-out problem"))
            if kind == "thresholded":
                return self.thresholded(problem, n_bins=n_bins, epsilon=epsilon)
            return self.select_certified(problem, confidence=confidence, epsilon=epsilon)[0]
        p = self.mixture(kind, epsilon=epsilon, weighting=weighting)
        if kind in ("best", "last"):
            return self.solution_of_iterate(int(np.flatnonzero(p)[0]))
        s = {"m-stochastic": self.shrink(epsilon).support, "exact": np.flatnonzero(p)}.get(
            kind, np.arange(self.n_trivial, p.shape[0]))
        if self.models is not None:
            return models_mixture([self.models[t] for t in s], p[s], self.feature_names, self.classes)
        return self.arity.mixture(self.weights[s], self.biases[s], p[s], feature_map=self.feature_map,
                                  feature_names=self.feature_names)

    def solution_of_iterate(self, t):
        """The deterministic classifier of recorded iterate ``t``.

        Returns
        -------
        LinearClassifier, MulticlassClassifier, EstimatorMixture or BoostedMixture
        """
        if self.models is not None:
            return models_mixture([self.models[t]], [1.0], self.feature_names, self.classes)
        return self.arity.iterate(self.weights[t], self.biases[t], feature_map=self.feature_map,
                                  feature_names=self.feature_names)

    def iterates_scorer(self):
        """Every recorded (two-class) iterate as one scorer: ``scores(X)`` is (n_samples, n_recorded).

        Prefixes of one booster (a :class:`~rateopt.BoostingModel`'s iterates) give a
        :class:`~rateopt.BoostedMixture` of every prefix; other fitted estimators are refused.
        """
        if self.models is not None and not self.arity.multiclass:  # K-class iterates: refused below
            scorer = prefixes_scorer(self.models, self.feature_names)
            if scorer is None:
                raise RateoptError("the iterates are fitted estimators (an estimator oracle): thresholds and "
                                   "certificates of recorded solutions need linear, kernel or boosted iterates")
            return scorer
        return self.arity.iterates_scorer(self.weights, self.biases, feature_map=self.feature_map,
                                          feature_names=self.feature_names)

    def threshold_candidates(self, epsilon=0.0):
        """The (two-class) iterates whose thresholds :meth:`thresholded` re-fits, as one scorer.

        Every recorded iterate for linear and kernel models (:meth:`iterates_scorer`). For the prefixes of
        a boosted run, the trivial rules and the prefixes of
        ``_predictors._boosted_mixture.candidate_rounds`` (``round(j T / 16)`` trees,
        ``j = 0..16``, of a run of ``T`` trees; the nearest recorded prefix where one was not recorded):
        rounds fixed before training, whose training scores the run keeps while it grows the trees, so
        that :meth:`thresholded` on the training problem scores no row again. Chosen by measurement
        (bench/boosting_candidates.py, 72 runs): against the 32 prefixes of the rule before (which added
        the m-stochastic support and the best prefix), training and test errors 0.0002 higher on average,
        at most 0.004 on one run. The m-stochastic solution stays a floor (see :meth:`thresholded`).

        Parameters
        ----------
        epsilon : float, default=0.0
            Unused for boosted runs (kept for the linear models' signature).

        Returns
        -------
        StochasticClassifier or BoostedMixture
        """
        scorer = self.iterates_scorer()
        if self.models is None:
            return scorer
        k = self.n_trivial
        lengths = np.array([m.n_trees for m in self.models[k:]], dtype=np.int64)  # increasing, from 0
        wanted = candidate_rounds(int(lengths[-1]))
        # the recorded prefix nearest to each wanted length (the prefix itself when recorded, as by default)
        right = np.clip(np.searchsorted(lengths, wanted), 0, lengths.shape[0] - 1)
        left = np.clip(right - 1, 0, lengths.shape[0] - 1)
        nearest = np.where(np.abs(lengths[left] - wanted) < np.abs(lengths[right] - wanted), left, right)
        keep = np.concatenate([np.arange(k, dtype=np.int64), k + np.unique(nearest)])
        return scorer.subset(keep, np.full(keep.shape[0], 1.0 / keep.shape[0]))

    def _release_training(self):
        """A boosted run's booster drops its backend's training state (training set, per-row buffers) once a
        classifier is asked for: its predictions are unchanged, and neither the result nor its solutions keep
        the training data alive. Not at the end of training, where rebuilding the booster would add to the
        run's peak memory."""
        booster = None if self.models is None else booster_of(self.models)
        if booster is not None and hasattr(booster, "release_training"):
            booster.release_training()

    def thresholded(self, problem, *, n_bins="auto", epsilon=0.0, group_blind="auto"):
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

        A boosted run (a :class:`~rateopt.BoostingModel`) re-fits the rules of
        the prefixes of :meth:`threshold_candidates` only, with ``"auto"``
        meaning 256 bins per prefix, then the exact re-fit of those the LP
        mixes. On its training problem it reads the training scores the run
        kept while growing the trees (no row is scored again), and where the
        m-stochastic solution has a smaller training objective and violates
        the goals no more (from the recorded rates) it returns that one, each
        prefix with its own threshold 0: never worse on the training data
        than the m-stochastic solution, nor than any candidate prefix.

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
        group_blind : bool or "auto", default="auto"
            K classes only (two-class rules need no groups unless the groups
            are features). True: each candidate's rule is a vector of class
            score offsets shared by every row, so the solution is a mixture of
            multinomial linear models (a :class:`~rateopt.MulticlassClassifier`:
            no groups at prediction, saved like any model). False: each
            candidate is followed by a per-cell rule (class score offsets per
            cell, or the exact plug-in rule on its softmax), the K-class
            equivalent of post-processing; its classifier needs each row's
            groups at prediction (``predict_proba(X, groups=...)``, or its
            ``group_columns`` of ``X``), or the rows' cells
            (``predict_proba(X, cells)``, ``problem.compiled.cells`` on the
            training rows); it saves and loads like any model.
            ``"auto"``: the per-cell rules when the groups are features of X
            (every cell's indicator is an affine function of X's columns on the
            training rows, and the model is linear), read from the features at
            prediction; per-cell offsets are then folded into the models, so a
            mixture of offsets rules is a :class:`~rateopt.MulticlassClassifier`
            that needs no groups. Otherwise the group-blind rules.

        Returns
        -------
        ThresholdedMixture, MulticlassClassifier or ClassThresholdedMixture
            Two classes: ``predict_proba`` gives the probability of each
            decision, shape (n_samples, 2). K classes: the group-blind
            mixture of linear models, or the group-aware mixture.

        Notes
        -----
        K classes (:mod:`rateopt._postprocess._class_mixture`): the
        candidates are evenly spaced recorded iterates, the run's best
        iterate, the m-stochastic support and the averages of the iterates'
        parameters (steadier scorers than single iterates of the oscillating
        game: docs/defaults.md); one LP over the true training counts mixes
        the candidates with their rules, by column generation. On the
        training data the solution is never worse than the m-stochastic
        solution, nor (group-aware) than the exact plug-in rule of the best
        iterate.
        """
        self._release_training()
        _check_problem(problem)
        check_n_bins(n_bins, auto=True)  # refused for K classes too, where the rules are fitted on every score
        if self.models is not None and self.arity.multiclass:
            raise RateoptError("a K-class boosted run has no thresholded solution (its rules re-fit linear or "
                               "kernel iterates): use solution('m-stochastic'), the default, or 'best'/'last'")
        if self.models is not None:
            self.iterates_scorer()  # refused, with the reason
        return self.arity.thresholded(self, problem, n_bins=n_bins, epsilon=epsilon, group_blind=group_blind)

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
        kind = canonical_kind(kind)
        _check_problem(problem)
        if classifier is not None and not hasattr(classifier, "predict_proba"):
            raise TypeError(f"classifier must be a classifier (with predict_proba), got {type(classifier).__name__}")
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
        _check_problem(problem)
        return select_certified(self, problem, confidence=confidence, epsilon=epsilon, random_state=random_state)

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
        p = self.mixture(canonical_kind(kind), epsilon=epsilon, weighting=weighting)
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
        metric of the mixture's expected rates (Narasimhan et al., 2019), which the mixture of
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
        return feasibility_report(self, canonical_kind(kind), epsilon=epsilon, weighting=weighting, problem=problem,
                                  classifier=classifier)

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
        kind = canonical_kind(kind)
        obj, g = self.solution_values(kind, epsilon=epsilon)
        lines = [f"rateopt {self.method}: {self.n_iter} iterations, {self.weights.shape[0] - self.n_trivial} recorded iterates",
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
        write_result(path, *self._payload())

    def _payload(self):
        """The JSON metadata and the arrays :meth:`save` writes (subclasses add theirs)."""
        return result_payload(self)

    def __repr__(self):
        return (f"TrainResult(method={self.method!r}, n_iter={self.n_iter}, n_recorded={self.weights.shape[0] - self.n_trivial}, "
                f"n_constraints={self.constraints.shape[1]})")


