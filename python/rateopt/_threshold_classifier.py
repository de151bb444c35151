"""The scikit-learn post-processor: the exact best randomized per-group threshold rule on any model's scores.

:class:`ThresholdClassifier` scores the data with a classifier (fitted here or
prefit), or takes the scores directly, and solves one LP for the best
randomized per-group threshold rule under the goals
(:mod:`rateopt._postprocess`). :meth:`ThresholdClassifier.certify` bounds
every goal's population value from held-out data.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, clone, is_classifier
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from ._compiler._multiclass import MulticlassProblem
from ._compiler._problem import Problem
from ._language._classes import ClassDataset
from ._language._data import Dataset
from ._language._validation import check_weights
from ._postprocess._certify import certify_expressions
from ._postprocess._plugin import PlugInRule, fit_plugin_rule
from ._postprocess._rule import ThresholdRule, cell_codes, fit_threshold_rule
from ._predictors._draws import row_uniforms
from ._utils._archive import write_archive
from .exceptions import InfeasibleWarning, RateoptError
from .goals import MULTICLASS_OBJECTIVES, OBJECTIVES
from .goals import objective as objective_on

__all__ = ["ThresholdClassifier"]

#: The format name of a saved threshold rule (``rateopt.load`` reads it back as a ThresholdClassifier).
THRESHOLD_FORMAT = "rateopt.ThresholdClassifier"


class ThresholdClassifier(MetaEstimatorMixin, ClassifierMixin, BaseEstimator):
    """The exact best randomized per-group threshold rule on a model's scores, under rate goals.

    Any classifier's scores (``predict_proba``'s positive column, else
    ``decision_function``), or scores given directly, are post-processed
    into a rule that is positive iff ``score >= t_c`` with a threshold ``t_c``
    drawn per group cell ``c`` (a combination of the group columns' values).
    Over such rules every rate is linear in the probability mass placed on each
    (cell, score bin) pair, so the best rule under linear rate goals (parity
    of any rate, recall and precision floors, coverage, churn, several group
    attributes and their intersections) is one LP, solved exactly by HiGHS;
    its size grows linearly with cells x bins, with no grid over the groups.
    The objective may be the error (default), any linear rate expression, or
    one ratio of rates (``"f_measure"``: the F1 score is maximized exactly,
    by the Charnes-Cooper substitution).

    **K classes** (``y`` with more than two values): the rule is the exact
    best mixture of *plug-in* rules (Narasimhan et al.): a row of group cell
    ``c`` is predicted ``argmax_k sum_y eta_y(x) B[c, y, k]``, an argmax of
    per-group, per-class weighted class probabilities ``eta`` from the model's
    ``predict_proba`` (or ``X`` itself, of shape (n_samples, K), when
    ``estimator`` is None). Rates are read in expectation under ``eta``; the LP
    over every deterministic rule is solved exactly by column generation
    (:mod:`rateopt._postprocess._plugin`), the goals are the K-class ones of
    :mod:`rateopt.goals` (e.g. ``multiclass_demographic_parity``) and the
    objective a name of :data:`rateopt.goals.MULTICLASS_OBJECTIVES` but
    ``"macro_f1"``. ``plugin_`` holds the rules; ``predict_proba`` is (n, K).

    Parameters
    ----------
    estimator : classifier or None, default=None
        The scoring model. None: ``X`` holds the scores themselves (an array
        of shape ``(n_samples,)`` or ``(n_samples, 1)``).
    goals : sequence of Goal, default=()
        Data-independent goals (see :mod:`rateopt.goals`), bound to the
        training data in :meth:`fit`.
    objective : str, callable or None, default=None
        What the rule minimizes on the training data: a name of
        ``rateopt.goals.OBJECTIVES`` that is affine or a single ratio
        (``"error"``, ``"balanced_error"``, ``"f_measure"``), a callable taking
        the training :class:`~rateopt.Dataset` and returning a rate expression or
        a ratio metric, or None (the error rate).
    prefit : bool, default=False
        Whether ``estimator`` is already fitted (else a clone is fitted in
        :meth:`fit` on ``X``, ``y`` and ``sample_weight``).
    group_blind : bool, default=False
        One threshold rule for every row: groups are needed in :meth:`fit`
        (for the goals) but not at prediction time.
    cell_columns : sequence of str or None, default=None
        The group columns whose value combinations are the cells (None: every
        column given to :meth:`fit`).
    n_bins : int or None, default=None
        Score bins per cell. None: every distinct training score is a bin,
        and the rule is the exact optimum over all randomized per-cell
        threshold rules on the training data. An integer ``K``: cells with more
        than ``K`` distinct scores are cut at ``K`` quantiles of their scores,
        and the rule is exact among rules whose thresholds lie on those cuts
        (faster on large data).
    epsilon : float, default=0.0
        Allowed violation of each goal on the training data.
    response_method : {"auto", "predict_proba", "decision_function"}, default="auto"
        Which method of ``estimator`` gives the scores (``"auto"``:
        ``predict_proba`` when it exists).
    random_state : int or None, default=None
        Seed of the per-row draws of :meth:`predict` (None means 0). A row's
        draw is a hash of the seed and the row's id (``row_key``), or of its
        content (features, or its score or probabilities when given directly)
        and its occurrence among identical rows of the batch: the same input
        gives the same decisions, and rows with equal scores draw independently.

    Attributes
    ----------
    estimator_ : classifier or None
        The fitted scoring model.
    classes_ : ndarray of shape (2,)
        The two labels; ``classes_[1]`` is the positive class.
    rule_ : ThresholdRule
        The cells, score bins and per-bin probabilities of a positive decision.
    problem_ : Problem
        The problem compiled on the training scores.
    training_ : Evaluation
        The rule's expected objective, goal values and rates on the training data.
    violation_ : float
        The largest training violation the LP had to allow beyond ``epsilon``
        (0 when the goals can be met; else a warning is raised in :meth:`fit`).

    Examples
    --------
    >>> import numpy as np
    >>> import rateopt as ro
    >>> rng = np.random.default_rng(0)
    >>> g = rng.choice(["a", "b"], 400); y = rng.integers(0, 2, 400)
    >>> scores = y + rng.normal(size=400) + (g == "a")
    >>> clf = ro.ThresholdClassifier(goals=[ro.goals.demographic_parity("g", slack=0.01)])
    >>> clf = clf.fit(scores, y, groups={"g": g})
    >>> p = clf.predict_proba(scores, groups={"g": g})[:, 1]
    >>> bool(abs(p[g == "a"].mean() - p[g == "b"].mean()) <= 0.02 + 1e-9)
    True
    """

    def __init__(self, estimator=None, goals=(), *, objective=None, prefit=False, group_blind=False,
                 cell_columns=None, n_bins=None, epsilon=0.0, response_method="auto", random_state=None):
        self.estimator = estimator
        self.goals = goals
        self.objective = objective
        self.prefit = prefit
        self.group_blind = group_blind
        self.cell_columns = cell_columns
        self.n_bins = n_bins
        self.epsilon = epsilon
        self.response_method = response_method
        self.random_state = random_state

    # -- validation ------------------------------------------------------------------

    def _check_params(self):
        if self.estimator is not None and not is_classifier(self.estimator) and not (
                hasattr(self.estimator, "predict_proba") or hasattr(self.estimator, "decision_function")):
            raise ValueError(f"estimator must be a classifier with predict_proba or decision_function, "
                             f"got {type(self.estimator).__name__}")
        if self.response_method not in ("auto", "predict_proba", "decision_function"):
            raise ValueError("response_method must be 'auto', 'predict_proba' or 'decision_function', "
                             f"got {self.response_method!r}")
        if self.n_bins is not None and (isinstance(self.n_bins, bool) or not isinstance(self.n_bins, (int, np.integer))
                                        or self.n_bins < 1):
            raise ValueError(f"n_bins must be a positive integer or None, got {self.n_bins!r}")
        eps = self.epsilon
        if isinstance(eps, bool) or not isinstance(eps, (int, float, np.floating)) or not (0 <= eps < np.inf):
            raise ValueError(f"epsilon must be a finite number >= 0, got {eps!r}")
        if not (self.objective is None or callable(self.objective) or self.objective in OBJECTIVES
                or self.objective in MULTICLASS_OBJECTIVES):
            raise ValueError(f"objective must be one of {sorted(set(OBJECTIVES) | set(MULTICLASS_OBJECTIVES))}, "
                             f"a callable or None, got {self.objective!r}")
        if isinstance(self.goals, (str, bytes)) or not hasattr(self.goals, "__iter__"):
            raise ValueError(f"goals must be a sequence of goals, got {self.goals!r}")
        if self.cell_columns is not None and (isinstance(self.cell_columns, str) or not all(
                isinstance(c, str) for c in self.cell_columns)):
            raise ValueError(f"cell_columns must be a sequence of column names or None, got {self.cell_columns!r}")

    def _scores(self, X, where="X"):
        """The scores of ``X`` (the fitted estimator's, or ``X`` itself), a finite float vector."""
        if self.estimator_ is None:
            s = np.asarray(X)
            if s.ndim == 2 and s.shape[1] == 1:
                s = s[:, 0]
            if s.ndim != 1:
                raise ValueError(f"{where} must hold scores of shape (n_samples,) or (n_samples, 1) when "
                                 f"estimator is None, got shape {s.shape}")
            try:
                s = s.astype(np.float64)
            except (TypeError, ValueError):
                raise ValueError(f"{where} must hold numeric scores when estimator is None") from None
        else:
            method = self.response_method
            if method == "auto":
                method = "predict_proba" if hasattr(self.estimator_, "predict_proba") else "decision_function"
            if not hasattr(self.estimator_, method):
                raise ValueError(f"estimator has no {method}")
            out = np.asarray(getattr(self.estimator_, method)(X), dtype=np.float64)
            if method == "predict_proba":
                classes = list(getattr(self.estimator_, "classes_", self.classes_))
                out = out[:, classes.index(self.classes_[1])] if out.ndim == 2 else out
            s = out.ravel() if out.ndim == 2 and out.shape[1] == 1 else out
            if s.ndim != 1:
                raise ValueError(f"estimator's {method} returned shape {out.shape}; expected one score per row")
        if not np.all(np.isfinite(s)):
            raise ValueError(f"the scores of {where} must be finite")
        return s

    def _uniform_features(self, X, scores):
        """What a row's draw is a hash of: its features (or its score when the scores are given)."""
        if self.estimator_ is None:
            return scores[:, None]
        if sp.issparse(X):
            return X.tocsr()
        # row_uniforms reads a numeric array chunk by chunk: no float64 copy of the whole X here
        arr = X.to_numpy() if hasattr(X, "to_numpy") else np.asarray(X)
        return arr if arr.ndim == 2 and arr.dtype.kind in "biuf" else scores[:, None]

    # -- fitting ----------------------------------------------------------------------

    def fit(self, X, y, groups=None, sample_weight=None, baseline=None, extra_datasets=None):
        """Fit the scoring model (unless prefit) and solve for the best threshold rule.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or scores of shape (n_samples,)
            Features for ``estimator``; the scores themselves when it is None.
        y : array-like of shape (n_samples,)
            Two distinct labels; the larger (in sorted order) is the positive class.
        groups : DataFrame or dict of arrays, default=None
            Group columns the goals refer to and the cells are made of.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative finite weights.
        baseline : array-like of shape (n_samples,), default=None
            A deployed model's decisions (churn goals).
        extra_datasets : dict of str to Dataset, default=None
            Further datasets by role; their ``X`` is scored like ``X``.

        Returns
        -------
        self
            The fitted post-processor.

        Warns
        -----
        rateopt.exceptions.InfeasibleWarning
            When no threshold rule meets the goals on the training data: the
            rule then has the smallest possible largest violation
            (``violation_``).
        """
        self._check_params()
        y = np.asarray(y)
        check_classification_targets(y)
        self.classes_ = np.unique(y)
        if self.classes_.shape[0] < 2:
            raise ValueError(f"y must hold at least two classes, got {self.classes_.shape[0]}")
        self.plugin_ = None
        if self.classes_.shape[0] > 2:
            return self._fit_plugin(X, y, groups, sample_weight, baseline, extra_datasets)
        n = y.shape[0]
        if sample_weight is not None:
            sample_weight = check_weights(np.asarray(sample_weight), n, "sample_weight")
        self._fit_estimator(X, y, sample_weight)
        scores = self._scores(X)
        if scores.shape[0] != n:
            raise ValueError(f"X has {scores.shape[0]} rows but y has {n}")
        y01 = (y == self.classes_[1]).astype(np.int64)
        train = Dataset(scores[:, None], y=y01, weights=sample_weight, groups=groups, baseline=baseline,
                        name="train")
        datasets = {"train": train}
        scored = {"train": scores}
        for role, ds in (extra_datasets or {}).items():
            if role == "train":
                raise ValueError("extra_datasets must not use the role 'train'")
            datasets[role] = ds
            scored[ds.name] = self._scores(ds.X, where=f"extra_datasets[{role!r}].X")
        self.problem_ = Problem(objective=objective_on(self.objective, train), constraints=list(self.goals),
                                datasets=datasets)
        columns = [] if self.group_blind else list(train.group_names if self.cell_columns is None
                                                   else self.cell_columns)
        by_name = {ds.name: ds for ds in self.problem_.datasets.values()}
        codes, cells = cell_codes(train.groups, columns, where="groups")
        all_codes = {"train": codes if codes is not None else np.zeros(n, dtype=np.int64)}
        for name in self.problem_.compiled.datasets:
            if name != "train":
                c, _ = cell_codes(by_name[name].groups, columns, cells, where=f"dataset {name!r}'s groups")
                all_codes[name] = c if c is not None else np.zeros(by_name[name].n_samples, dtype=np.int64)
        self.rule_, solution = fit_threshold_rule(
            self.problem_.compiled, {k: scored[k] for k in self.problem_.compiled.datasets},
            {k: all_codes[k] for k in self.problem_.compiled.datasets}, cells, columns,
            n_bins=self.n_bins, epsilon=float(self.epsilon))
        self.violation_ = solution.slack
        self.training_ = self.problem_.evaluate_atom_rates(solution.atom_rates)
        if solution.slack > 0:
            warnings.warn(
                f"no threshold rule meets the goals on the training data: the rule found violates them by at most "
                f"{solution.slack:.6g} (the smallest possible largest violation); relax the goals or add groups",
                InfeasibleWarning, stacklevel=2)
        return self

    def _fit_estimator(self, X, y, sample_weight):
        """``estimator_``: None (scores given), the prefit model, or a clone fitted on ``X, y``."""
        if self.estimator is None:
            self.estimator_ = None
        elif self.prefit:
            check_is_fitted(self.estimator)
            self.estimator_ = self.estimator
        else:
            kwargs = {} if sample_weight is None else {"sample_weight": sample_weight}
            self.estimator_ = clone(self.estimator).fit(X, y, **kwargs)

    def _class_probabilities(self, X, where="X"):
        """A K-class model's class probabilities (n, K) in ``classes_`` order, or ``X`` itself without a model."""
        K = self.classes_.shape[0]
        if self.estimator_ is None:
            P = np.asarray(X, dtype=np.float64)
        else:
            if not hasattr(self.estimator_, "predict_proba"):
                raise ValueError("K-class post-processing needs class probabilities: the estimator has no "
                                 "predict_proba")
            out = np.asarray(self.estimator_.predict_proba(X), dtype=np.float64)
            order = [list(self.estimator_.classes_).index(c) for c in self.classes_]
            P = out[:, order]
        if P.ndim != 2 or P.shape[1] != K:
            raise ValueError(f"{where} must give class probabilities of shape (n_samples, {K})")
        if not np.all(np.isfinite(P)) or np.any(P < 0) or np.any(np.abs(P.sum(axis=1) - 1) > 1e-6):
            raise ValueError(f"the class probabilities of {where} must be finite, non-negative rows summing to 1")
        return P

    def _fit_plugin(self, X, y, groups, sample_weight, baseline, extra_datasets):
        """K classes: the exact best mixture of per-group plug-in rules (argmax of weighted probabilities)."""
        if baseline is not None or extra_datasets:
            raise ValueError("K-class post-processing takes no baseline or extra_datasets")
        if self.group_blind:
            raise ValueError("K-class post-processing needs the groups (its rules are per group): "
                             "group_blind=True is for two classes")
        if self.objective is not None and not isinstance(self.objective, str):
            raise ValueError("K-class post-processing takes a named objective "
                             f"{sorted(MULTICLASS_OBJECTIVES)}")
        n = y.shape[0]
        if sample_weight is not None:
            sample_weight = check_weights(np.asarray(sample_weight), n, "sample_weight")
        self._fit_estimator(X, y, sample_weight)
        P = self._class_probabilities(X)
        if P.shape[0] != n:
            raise ValueError(f"X has {P.shape[0]} rows but y has {n}")
        train = ClassDataset(P, y, weights=sample_weight, groups=groups, classes=self.classes_)
        self.problem_ = MulticlassProblem(objective=self.objective, constraints=list(self.goals), datasets=train,
                                          label_probabilities=P)
        columns = list(train.group_names if self.cell_columns is None else self.cell_columns)
        codes, cells = cell_codes(train.groups, columns, where="groups")
        codes = np.zeros(n, dtype=np.int64) if codes is None else codes
        pattern = self.problem_.compiled.cells
        # a rule's cells must decide every subset of the goals: one membership pattern per cell
        first = np.full(len(cells), -1, dtype=np.int64)
        first[codes[::-1]] = pattern[::-1]
        if np.any(pattern != first[codes]):
            raise ValueError(f"cell_columns {columns!r} do not determine the goals' groups: include every group "
                             "column the goals use")
        fit = fit_plugin_rule(self.problem_, P)
        self.plugin_ = PlugInRule(costs=fit.rule.costs[:, first], probabilities=fit.rule.probabilities)
        self.rule_ = None
        self.cells_, self.cell_columns_ = cells, tuple(columns)
        self.violation_ = fit.max_violation
        self.training_ = self.problem_.evaluate(self.plugin_.distribution(P, codes))
        if fit.max_violation > 1e-9:
            warnings.warn(
                f"no plug-in rule meets the goals on the training data: the rule found violates them by at most "
                f"{fit.max_violation:.6g} (the smallest possible largest violation)", InfeasibleWarning,
                stacklevel=3)
        return self

    def _plugin_codes(self, groups, n):
        if not self.cell_columns_:
            return np.zeros(n, dtype=np.int64)
        if groups is None:
            raise ValueError(f"groups is required: the rule is per value of {list(self.cell_columns_)!r}")
        table = Dataset(np.zeros((n, 1)), groups=groups, name="predict").groups
        codes, _ = cell_codes(table, self.cell_columns_, self.cells_, where="groups")
        return codes

    # -- prediction ---------------------------------------------------------------------

    def _codes(self, groups, n):
        rule = self.rule_
        if not rule.columns:
            return np.zeros(n, dtype=np.int64)
        if groups is None:
            raise ValueError(f"groups is required: the rule has thresholds per value of {list(rule.columns)!r} "
                             "(fit with group_blind=True for a rule that needs no groups)")
        table = Dataset(np.zeros((n, 1)), groups=groups, name="predict").groups
        codes, _ = cell_codes(table, rule.columns, rule.cells, where="groups")
        return codes

    def predict_proba(self, X, groups=None):
        """Probability of each class: the rule's probability of a positive decision per row.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or scores of shape (n_samples,)
        groups : DataFrame or dict of arrays, default=None
            The rule's group columns (not needed for a group-blind rule).

        Returns
        -------
        ndarray of shape (n_samples, 2), or (n_samples, K) for K classes
        """
        check_is_fitted(self, "rule_")
        if getattr(self, "plugin_", None) is not None:
            P = self._class_probabilities(X)
            return self.plugin_.distribution(P, self._plugin_codes(groups, P.shape[0]))
        s = self._scores(X)
        p = self.rule_.probabilities(s, self._codes(groups, s.shape[0]))
        return np.column_stack([1.0 - p, p])

    def predict(self, X, groups=None, row_key=None):
        """Predicted labels: a row is positive iff its hashed uniform draw is below its probability.

        The draw follows rateopt's one convention (:mod:`rateopt._predictors._draws`):
        the same input gives the same labels; with ``row_key`` a row's label is
        the same in any batch and order.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or scores of shape (n_samples,)
        groups : DataFrame or dict of arrays, default=None
        row_key : array-like of shape (n_samples,), default=None
            Row ids (integers or strings) keying the draws. None: keyed on each
            row's content and its occurrence among identical rows of the batch.

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        check_is_fitted(self, "rule_")
        seed = self.random_state
        if getattr(self, "plugin_", None) is not None:
            P = self._class_probabilities(X)
            u = row_uniforms(self._uniform_features(X, P[:, 0]) if self.estimator_ is not None else P, seed, row_key)
            return self.classes_[self.plugin_.decisions(P, self._plugin_codes(groups, P.shape[0]), u)]
        s = self._scores(X)
        p = self.rule_.probabilities(s, self._codes(groups, s.shape[0]))
        u = row_uniforms(self._uniform_features(X, s), seed, row_key)
        return self.classes_[(u < p).astype(np.int64)]

    # -- certificates --------------------------------------------------------------------

    def certify(self, X, y, groups=None, sample_weight=None, baseline=None, *, confidence=0.95, goals=None):
        """High-confidence bounds on every goal's population value, from held-out data.

        The held-out rows must not have been used to fit the rule or the model.
        Every rate the goals use gets an exact Clopper-Pearson interval from
        the rule's decisions (:meth:`predict`); a goal's bound combines its
        rates' intervals through its affine form, with a union bound over all
        rates, so that all bounds hold together with probability at least
        ``confidence``.

        Parameters
        ----------
        X : array-like, or scores
            Held-out features (or scores).
        y : array-like of shape (n_samples,)
            Held-out labels.
        groups : DataFrame or dict of arrays, default=None
            Held-out group columns.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights (unequal weights use Hoeffding's bound instead).
        baseline : array-like of shape (n_samples,), default=None
            The deployed model's decisions (churn goals).
        confidence : float, default=0.95
            Probability that every bound holds.
        goals : sequence of Goal, default=None
            The goals to certify (None: those the rule was fitted under). Fit
            under tighter goals than the requirement, and certify the
            requirement: a goal met with no margin on the fitting rows is
            rarely certified.

        Returns
        -------
        rateopt.Certificate
            Per goal: held-out value and upper bound (the goal holds on the
            population, with that confidence, when the bound is ``<= 0``).
        """
        if getattr(self, "plugin_", None) is not None:
            raise RateoptError("certify() bounds two-class rules; K-class certificates are not available")
        check_is_fitted(self, "rule_")
        y = np.asarray(y)
        unknown = set(np.unique(y)) - set(self.classes_)
        if unknown:
            raise ValueError(f"y holds labels the classifier was not fitted on: {sorted(unknown)!r}")
        s = self._scores(X)
        if s.shape[0] != y.shape[0]:
            raise ValueError(f"X has {s.shape[0]} rows but y has {y.shape[0]}")
        y01 = (y == self.classes_[1]).astype(np.int64)
        if sample_weight is not None:
            sample_weight = check_weights(np.asarray(sample_weight), y.shape[0], "sample_weight")
        held = Dataset(s[:, None], y=y01, weights=sample_weight, groups=groups, baseline=baseline, name="train")
        goals = self.goals if goals is None else goals
        if isinstance(goals, (str, bytes)) or not hasattr(goals, "__iter__"):
            raise ValueError(f"goals must be a sequence of goals, got {goals!r}")
        problem = Problem(objective=objective_on(self.objective, held), constraints=list(goals),
                          datasets={"train": held})
        decisions = (self.predict(X, groups) == self.classes_[1]).astype(np.float64)
        return certify_expressions(problem.constraints, problem.objective, {"train": decisions},
                                   confidence=confidence)

    # -- files ----------------------------------------------------------------------------

    def save(self, path):
        """Write the rule to a pickle-free ``.npz`` file (``rateopt.load`` reads it back).

        Only a classifier that takes scores directly (``estimator=None``) is
        saved whole; with a scoring model, save that model on its own (e.g.
        with skops) and this rule with ``rule_``'s arrays.

        Parameters
        ----------
        path : str or os.PathLike
        """
        check_is_fitted(self, "rule_")
        if getattr(self, "plugin_", None) is not None:
            raise RateoptError("save() writes two-class threshold rules; a K-class plug-in rule is kept in plugin_ "
                               "(its costs and probabilities arrays)")
        if self.estimator_ is not None:
            raise RateoptError(
                "a ThresholdClassifier with a scoring model cannot be saved without pickling that model: save the "
                "model with its own format (e.g. skops) and post-process its scores with estimator=None")
        meta, arrays = self.rule_.to_arrays()
        meta.update(classes=[_plain_label(c) for c in self.classes_], random_state=self.random_state,
                    group_blind=bool(self.group_blind), n_bins=self.n_bins, epsilon=float(self.epsilon))
        write_archive(path, meta, arrays, THRESHOLD_FORMAT)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags


def _plain_label(c):
    c = c.item() if isinstance(c, np.generic) else c
    if not isinstance(c, (bool, int, float, str)):
        raise RateoptError(f"the label {c!r} cannot be saved: labels must be numbers or strings")
    return c


def threshold_classifier_from_file(meta, arrays, path):
    """The :class:`ThresholdClassifier` of a saved file (the reader ``rateopt.load`` calls).

    Parameters
    ----------
    meta : dict
    arrays : dict of str to ndarray
    path : str

    Returns
    -------
    ThresholdClassifier
    """
    rule = ThresholdRule.from_arrays(meta, arrays, path)
    classes = meta.get("classes")
    if not isinstance(classes, list) or len(classes) != 2 or classes[0] == classes[1]:
        raise RateoptError(f"{path!r} is not a valid threshold classifier file: 'classes' must be two labels")
    seed = meta.get("random_state")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool) or seed < 0):
        raise RateoptError(f"{path!r} is not a valid threshold classifier file: bad 'random_state'")
    clf = ThresholdClassifier(group_blind=bool(meta.get("group_blind")), random_state=seed)
    clf.estimator_ = None
    clf.rule_ = rule
    clf.classes_ = np.asarray(classes)
    clf.violation_ = 0.0
    return clf
