"""The scikit-learn post-processor: the exact best randomized per-group rule on any model's scores.

:class:`ThresholdClassifier` scores the data with a classifier (fitted here or
prefit), or takes the scores directly, and solves one LP for the best
randomized per-group rule under the goals (:mod:`rateopt._postprocess`):
threshold rules on one score for two classes, plug-in rules on class
probabilities for K classes. The classifier branches once, in ``fit``, on the
number of classes: its arity (:mod:`rateopt._training._arity`) holds everything
that differs (the inputs read from the model, the dataset, the LP, the rule), and
the rules share one interface (``distribution``, ``decisions``,
``to_arrays`` / ``from_arrays``), so prediction, :meth:`ThresholdClassifier.certify`,
``save`` and ``rateopt.load`` are one code path for both.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, clone, is_classifier
from sklearn.utils.validation import check_is_fitted

from ._compiler._problem import Problem
from ._language._data import Dataset
from ._language._validation import check_weights, class_labels, text_columns
from ._postprocess._certify import certify_expressions
from ._postprocess._plugin import PlugInRule
from ._postprocess._rule import ThresholdRule, cell_codes, check_n_bins, checked_cells, is_group_columns
from ._predictors._archive import class_labels_meta, class_labels_problem
from ._predictors._draws import row_uniforms
from ._training._arity import arity_of_labels, check_objective_and_goals
from ._utils._archive import write_archive
from ._utils._group_columns import split_group_columns
from ._utils._highs import import_highspy
from ._utils._validation import UINT64_MAX, check_choice, check_seed
from .exceptions import InfeasibleWarning, RateoptError

__all__ = ["ThresholdClassifier"]

# every fit solves an LP with HiGHS: load it with the class (as its scikit-learn base), not in the first fit
import_highspy()

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
    ``"macro_f1"``. ``rule_`` holds the rules; ``predict_proba`` is (n, K).
    Both arities share the cells, the groups, ``epsilon``, :meth:`certify`,
    :meth:`save` and ``rateopt.load``; the classifier branches once, in
    :meth:`fit`, on the number of classes.

    **Groups** come from ``groups=`` or from columns of ``X``
    (``group_columns``), never both. ``group_columns`` is what makes the
    classifier work in a :class:`~sklearn.pipeline.Pipeline` and in
    :func:`~sklearn.model_selection.cross_val_score` (which pass only ``X``):
    the columns are taken out of ``X`` in :meth:`fit` and in every prediction
    method, as :class:`~rateopt.RateConstrainedClassifier`'s ``group_columns``
    are, and the scoring model never sees them. ``cell_columns`` is a
    different choice: *which* of the group columns (from either source) make
    the rule's cells; the two compose.

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
    group_columns : sequence of str or int, default=None
        Columns of ``X`` that hold the groups rather than features: names of a
        DataFrame's columns, or positions of an array's (the group is then
        named by its position as a string, e.g. ``group_columns=[0]`` with
        ``demographic_parity("0")``). They are taken out of ``X`` in
        :meth:`fit`, :meth:`predict`, :meth:`predict_proba` and
        :meth:`certify` (give ``groups=`` or ``group_columns``, not both).
        Without an estimator, the columns left are the scores (one column;
        K class-probability columns for K classes).
    cell_columns : sequence of str or None, default=None
        The group columns whose value combinations are the cells (None: every
        group column, from ``groups=`` or ``group_columns``). Each must be one
        of the group columns; with ``group_columns`` of positions, name them
        as strings (``"0"``).
    n_bins : int or None, default=None
        Score bins per cell. None: every distinct training score is a bin,
        and the rule is the exact optimum over all randomized per-cell
        threshold rules on the training data. An integer ``K``: cells with more
        than ``K`` distinct scores are cut at ``K`` quantiles of their scores,
        and the rule is exact among rules whose thresholds lie on those cuts
        (faster on large data).
    epsilon : float, default=0.0
        Allowed violation of each goal on the training data (two and K
        classes: every goal's LP row is ``g <= epsilon``).
    response_method : {"auto", "predict_proba", "decision_function"}, default="auto"
        Which method of ``estimator`` gives the scores (``"auto"``:
        ``predict_proba`` when it exists).
    random_state : int or None, default=None
        Seed of the per-row draws of :meth:`predict` (None means 0): an integer
        in [0, 2**64 - 1] (a NumPy integer too; saved and loaded as given). A row's
        draw is a hash of the seed and the row's id (``row_key``), or of its
        content (features, or its score or probabilities when given directly)
        and its occurrence among identical rows of the batch: the same input
        gives the same decisions, and rows with equal scores draw independently.
    classes : array-like or None, default=None
        Every class (None: the distinct labels of ``y``). Give it where a
        sample may miss a class, as a cross-validation fold may, so that the
        rule keeps the full class list (and its arity).

    Attributes
    ----------
    estimator_ : classifier or None
        The fitted scoring model.
    classes_ : ndarray of shape (n_classes,)
        The labels; for two classes ``classes_[1]`` is the positive class.
    rule_ : ThresholdRule or PlugInRule
        Two classes: the cells, score bins and per-bin probabilities of a
        positive decision. K classes: the mixture of plug-in rules, with
        costs per cell of ``cells_``.
    plugin_ : PlugInRule or None
        K classes: ``rule_`` (kept for one release; use ``rule_``). Two classes: None.
    cell_columns_ : tuple of str
        The columns that define the cells (empty: one cell).
    cells_ : list of tuple
        The cells, in the order of the rule's tables.
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
                 group_columns=None, cell_columns=None, n_bins=None, epsilon=0.0, response_method="auto",
                 random_state=None, classes=None):
        self.estimator = estimator
        self.goals = goals
        self.objective = objective
        self.prefit = prefit
        self.group_blind = group_blind
        self.group_columns = group_columns
        self.cell_columns = cell_columns
        self.n_bins = n_bins
        self.epsilon = epsilon
        self.response_method = response_method
        self.random_state = random_state
        self.classes = classes

    # -- validation ------------------------------------------------------------------

    def _check_params(self):
        if self.estimator is not None and not is_classifier(self.estimator) and not (
                hasattr(self.estimator, "predict_proba") or hasattr(self.estimator, "decision_function")):
            raise ValueError(f"estimator must be a classifier with predict_proba or decision_function, "
                             f"got {type(self.estimator).__name__}")
        check_choice("response_method", self.response_method, ("auto", "predict_proba", "decision_function"))
        check_n_bins(self.n_bins)
        check_seed("random_state", self.random_state)
        eps = self.epsilon
        if isinstance(eps, bool) or not isinstance(eps, (int, float, np.floating)) or not (0 <= eps < np.inf):
            raise ValueError(f"epsilon must be a finite number >= 0, got {eps!r}")
        check_objective_and_goals(self.objective, self.goals)
        if self.cell_columns is not None and (isinstance(self.cell_columns, str) or not all(
                isinstance(c, str) for c in self.cell_columns)):
            raise ValueError(f"cell_columns must be a sequence of column names or None, got {self.cell_columns!r}")
        if isinstance(self.group_columns, (str, bytes)):
            raise ValueError(f"group_columns must be a sequence of column names or positions, not the string "
                             f"{self.group_columns!r} (write [{self.group_columns!r}])")

    def _scores(self, X, where="X"):
        """The scores of ``X`` (the fitted estimator's, or ``X`` itself), a finite float vector."""
        if self.estimator_ is None:
            try:
                s = np.asarray(X)
            except (TypeError, ValueError) as exc:  # ragged rows
                raise RateoptError(f"{where} could not be read as an array of scores: "
                                   f"{' '.join(str(exc).split())}") from None
            if s.ndim == 2 and s.shape[1] == 1:
                s = s[:, 0]
            if s.ndim != 1:
                raise RateoptError(f"{where} must hold scores of shape (n_samples,) or (n_samples, 1) when "
                                   f"estimator is None, got shape {s.shape}")
            try:
                if s.dtype.kind not in "biufO":  # complex, text, dates: not scores
                    raise TypeError(s.dtype)
                s = s.astype(np.float64)
            except (TypeError, ValueError):
                raise RateoptError(f"{where} must hold numeric scores when estimator is None (real numbers, got "
                                   f"dtype {s.dtype})") from None
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
                raise RateoptError(f"estimator's {method} returned shape {out.shape}; expected one score per row")
        if not np.all(np.isfinite(s)):
            raise RateoptError(f"the scores of {where} must be finite")
        return s

    def _uniform_features(self, X, inputs):
        """What a row's draw is a hash of: its features (or its scores / probabilities when they are given)."""
        given = inputs.reshape(inputs.shape[0], -1)
        if self.estimator_ is None:
            return given
        if sp.issparse(X):
            return X.tocsr()
        # row_uniforms reads a numeric array chunk by chunk: no float64 copy of the whole X here
        arr = X.to_numpy() if hasattr(X, "to_numpy") else np.asarray(X)
        return arr if arr.ndim == 2 and arr.dtype.kind in "biuf" else given

    def _split_groups(self, X, groups, predicting):
        """``(X, groups)``: the ``group_columns`` taken out of ``X`` (as the estimator takes them)."""
        return split_group_columns(X, self.group_columns, groups, predicting=predicting,
                                   n_features=getattr(self, "n_feature_columns_", None))

    # -- fitting ----------------------------------------------------------------------

    def fit(self, X, y, groups=None, sample_weight=None, baseline=None, extra_datasets=None):
        """Fit the scoring model (unless prefit) and solve for the best rule.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or scores
            Features for ``estimator`` (and the ``group_columns``); without an
            estimator the scores themselves: shape (n_samples,) for two
            classes, class probabilities (n_samples, K) for K classes.
        y : array-like of shape (n_samples,)
            Two labels (the larger in sorted order is the positive class), or
            K > 2 labels.
        groups : DataFrame or dict of arrays, default=None
            Group columns the goals refer to and the cells are made of (not
            with ``group_columns``).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative finite weights.
        baseline : array-like of shape (n_samples,), default=None
            A deployed model's decisions (churn goals; two classes).
        extra_datasets : dict of str to Dataset, default=None
            Further datasets by role; their ``X`` is scored like ``X`` (two classes).

        Returns
        -------
        self
            The fitted post-processor.

        Warns
        -----
        rateopt.exceptions.InfeasibleWarning
            When no rule meets the goals (up to ``epsilon``) on the training
            data: the rule then has the smallest possible largest violation
            (``violation_``).
        """
        self._check_params()
        X, groups = self._split_groups(X, groups, predicting=False)
        self.n_feature_columns_ = X.shape[1] if hasattr(X, "shape") and len(X.shape) == 2 else None
        y, self.classes_ = class_labels(y, self.classes)
        n = y.shape[0]
        if sample_weight is not None:
            sample_weight = check_weights(np.asarray(sample_weight), n, "sample_weight")
        # the one branch on the number of classes: two-class scores and threshold rules, or K-class plug-in rules
        self._arity = arity_of_labels(self.classes_)
        self._arity.check_extra(baseline, extra_datasets, "post-processing")
        self._arity.check_rule_fit(self)
        self._fit_estimator(X, y, sample_weight)
        inputs = self._arity.rule_inputs(self, X)
        if inputs.shape[0] != n:
            raise RateoptError(f"X has {inputs.shape[0]} rows but y has {n}")
        violation = self._arity.fit_rule(self, inputs, y, groups, sample_weight, baseline, extra_datasets)
        self.violation_ = violation
        if violation > self._arity.rule_tolerance:
            warnings.warn(
                f"no rule meets the goals on the training data: the rule found violates them by at most "
                f"{violation:.6g} beyond epsilon (the smallest possible largest violation); relax the goals or "
                "add groups", InfeasibleWarning, stacklevel=2)
        return self

    def _fit_estimator(self, X, y, sample_weight):
        """``estimator_``: None (scores given), the prefit model, or a clone fitted on ``X, y``."""
        if self.estimator is None:
            self.estimator_ = None
        elif self.prefit:
            check_is_fitted(self.estimator)
            fitted = getattr(self.estimator, "classes_", None)
            if fitted is not None and (len(fitted) != len(self.classes_)
                                       or any(a != b for a, b in zip(sorted(fitted), self.classes_))):
                raise RateoptError(
                    f"the prefit estimator was fitted on classes {np.asarray(fitted).tolist()!r} but y holds "
                    f"{self.classes_.tolist()!r}: give y the estimator's labels, refit the estimator on y, or "
                    "pass classes= listing the estimator's classes")
            self.estimator_ = self.estimator
        else:
            kwargs = {} if sample_weight is None else {"sample_weight": sample_weight}
            try:
                self.estimator_ = clone(self.estimator).fit(X, y, **kwargs)
            except ValueError as exc:
                text = text_columns(X)
                if not text:
                    raise
                reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                raise RateoptError(f"the estimator could not fit X ({reason}): X column {text[0]!r} holds text; if "
                                   f"it holds groups, name it in group_columns=[{text[0]!r}] (it is then taken out "
                                   "of X), else encode it") from exc

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
            raise RateoptError(f"{where} must give class probabilities of shape (n_samples, {K}) because y holds "
                               f"{K} classes {self.classes_.tolist()!r}, got shape {P.shape}: for two-class "
                               "rules on one score per row, y must hold two labels (drop stray labels)")
        if not np.all(np.isfinite(P)) or np.any(P < 0) or np.any(np.abs(P.sum(axis=1) - 1) > 1e-6):
            raise RateoptError(f"the class probabilities of {where} must be finite, non-negative rows summing to 1")
        return P

    def _cell_columns(self, group_names):
        """The columns whose value combinations are the cells: ``cell_columns``, else every group column."""
        if self.group_blind:
            return []
        if self.cell_columns is None:
            return list(group_names)
        unknown = [c for c in self.cell_columns if c not in group_names]
        if unknown:
            raise ValueError(f"cell_columns {unknown!r} are not among the group columns {list(group_names)!r}")
        return list(self.cell_columns)

    # -- prediction ---------------------------------------------------------------------

    def _codes(self, groups, n):
        """Every row's cell code (all 0 for a rule with one cell)."""
        if not self.cell_columns_:
            return np.zeros(n, dtype=np.int64)
        if groups is None:
            where = "groups (or X's group_columns)" if self.group_columns is not None else "groups"
            raise RateoptError(f"{where} is required: the rule is per value of {list(self.cell_columns_)!r}"
                             + self._arity.rule_without_groups)
        table = Dataset(np.zeros((n, 1)), groups=groups, name="predict").groups
        codes, _ = cell_codes(table, self.cell_columns_, self.cells_, where="groups")
        return codes

    def _decide(self, X, groups, expected, row_key=None):
        """The rule's decision distribution (n, n_classes), or its drawn class positions (n,)."""
        inputs = self._arity.rule_inputs(self, X)
        codes = self._codes(groups, inputs.shape[0])
        if expected:
            return self.rule_.distribution(inputs, codes)
        seed = check_seed("random_state", self.random_state)
        return self.rule_.decisions(inputs, codes, row_uniforms(self._uniform_features(X, inputs), seed,
                                                                     row_key))

    def predict_proba(self, X, groups=None):
        """Probability of each class: the rule's decision distribution per row.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or scores
        groups : DataFrame or dict of arrays, default=None
            The rule's group columns (not needed for a group-blind rule; not
            with ``group_columns``, which reads them from ``X``).

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        check_is_fitted(self, "rule_")
        X, groups = self._split_groups(X, groups, predicting=True)
        return self._decide(X, groups, expected=True)

    def predict(self, X, groups=None, row_key=None):
        """Predicted labels: a row is positive iff its hashed uniform draw is below its probability.

        The draw follows rateopt's one convention (:mod:`rateopt._predictors._draws`):
        the same input gives the same labels; with ``row_key`` a row's label is
        the same in any batch and order.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or scores
        groups : DataFrame or dict of arrays, default=None
        row_key : array-like of shape (n_samples,), default=None
            Row ids (integers or strings) keying the draws. None: keyed on each
            row's content and its occurrence among identical rows of the batch.

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        check_is_fitted(self, "rule_")
        X, groups = self._split_groups(X, groups, predicting=True)
        return self.classes_[self._decide(X, groups, expected=False, row_key=row_key)]

    # -- certificates --------------------------------------------------------------------

    def certify(self, X, y, groups=None, sample_weight=None, baseline=None, *, confidence=0.95, goals=None):
        """High-confidence bounds on every goal's population value, from held-out data.

        The held-out rows must not have been used to fit the rule or the model.
        Every rate the goals use gets an exact Clopper-Pearson interval from
        the rule's decisions (:meth:`predict`); a goal's bound combines its
        rates' intervals through its affine form, with a union bound over all
        rates, so that all bounds hold together with probability at least
        ``confidence``. Two and K classes share this code
        (:mod:`rateopt._postprocess._certify`): a K-class rate (a class's
        prediction rate, recall, ...) is a mean over a subset of rows too.

        Parameters
        ----------
        X : array-like, or scores
            Held-out features (or scores).
        y : array-like of shape (n_samples,)
            Held-out labels.
        groups : DataFrame or dict of arrays, default=None
            Held-out group columns (not with ``group_columns``).
        sample_weight : array-like of shape (n_samples,), default=None
            Weights (unequal weights use Hoeffding's bound instead).
        baseline : array-like of shape (n_samples,), default=None
            The deployed model's decisions (churn goals; two classes).
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
        check_is_fitted(self, "rule_")
        X, groups = self._split_groups(X, groups, predicting=True)
        y = np.asarray(y)
        unknown = set(np.unique(y)) - set(self.classes_)
        if unknown:
            raise RateoptError(f"y holds labels the classifier was not fitted on: {sorted(unknown)!r}")
        inputs = self._arity.rule_inputs(self, X)
        if inputs.shape[0] != y.shape[0]:
            raise RateoptError(f"X has {inputs.shape[0]} rows but y has {y.shape[0]}")
        if sample_weight is not None:
            sample_weight = check_weights(np.asarray(sample_weight), y.shape[0], "sample_weight")
        goals = self.goals if goals is None else goals
        if isinstance(goals, (str, bytes)) or not hasattr(goals, "__iter__"):
            raise ValueError(f"goals must be a sequence of goals, got {goals!r}")
        held = self._arity.labelled_dataset(inputs, y, labels=self.classes_, weights=sample_weight, groups=groups,
                                            baseline=baseline)
        problem = Problem(objective=self._arity.objective_of(self.objective, held), constraints=list(goals),
                          datasets={"train": held})
        decided = self._decide(X, groups, expected=False)  # class positions (int): 0/1 decisions for two classes
        return certify_expressions(problem.constraints, problem.objective, {"train": decided},
                                   confidence=confidence)

    # -- files ----------------------------------------------------------------------------

    def save(self, path):
        """Write the rule to a pickle-free ``.npz`` file (``rateopt.load`` reads it back).

        Two-class threshold rules and K-class plug-in rules share one file
        format (``"rateopt.ThresholdClassifier"``; its ``rule`` field names
        the kind). Only a classifier that takes scores directly
        (``estimator=None``) is saved whole; with a scoring model, save that
        model on its own (e.g. with skops) and this rule with ``rule_``'s arrays.

        Parameters
        ----------
        path : str or os.PathLike
        """
        check_is_fitted(self, "rule_")
        if self.estimator_ is not None:
            raise RateoptError(
                "a ThresholdClassifier with a scoring model cannot be saved without pickling that model: save the "
                "model with its own format (e.g. skops) and post-process its scores with estimator=None")
        meta, arrays = self.rule_.to_arrays()
        meta.update(rule=self._arity.rule_kind, columns=list(self.cell_columns_),
                    cells=[list(c) for c in self.cells_], classes=class_labels_meta(self.classes_, ordered=True),
                    random_state=check_seed("random_state", self.random_state), group_blind=bool(self.group_blind),
                    n_bins=check_n_bins(self.n_bins),
                    epsilon=float(self.epsilon))
        if self.group_columns is not None:
            meta["group_columns"] = list(self.group_columns if isinstance(self.group_columns[0], str)
                                         else [int(c) for c in self.group_columns])
            meta["n_feature_columns"] = self.n_feature_columns_
        write_archive(path, meta, arrays, THRESHOLD_FORMAT)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags


#: The rule class of each kind (its ``from_arrays`` reads a file).
_RULES = {"threshold": ThresholdRule, "plugin": PlugInRule}


def threshold_classifier_from_file(meta, arrays, path):
    """The :class:`ThresholdClassifier` of a saved file (a reader of ``rateopt._io.READERS``).

    One reader for both arities: the file's ``rule`` field names the rule
    (``"threshold"``: two classes, the default of files written before K-class
    rules could be saved; ``"plugin"``: K classes).
    """
    def bad(what):
        return RateoptError(f"{path!r} is not a valid threshold classifier file: {what}")

    kind = meta.get("rule", "threshold")
    if kind not in _RULES:
        raise bad(f"'rule' must be one of {sorted(_RULES)}, got {kind!r}")
    columns, cells = checked_cells(meta, bad)
    rule = _RULES[kind].from_arrays(meta, arrays, path)
    n_classes = rule.n_classes_of(cells, bad)
    classes = meta.get("classes")
    problem = class_labels_problem(classes, n_classes, ordered=True)  # fit writes np.unique(y): ascending
    if problem is not None:
        raise bad(f"'classes' is {classes!r}, {problem} (the {kind} rule has {n_classes} classes)")
    arity = arity_of_labels(classes)
    seed = meta.get("random_state")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed <= UINT64_MAX):
        raise bad("'random_state' must be null or an integer in [0, 2**64 - 1]")
    group_columns = meta.get("group_columns")
    if not is_group_columns(group_columns):
        raise bad("'group_columns' must be a non-empty list of column names or of positions")
    n_feature_columns = meta.get("n_feature_columns")
    if n_feature_columns is not None and (not isinstance(n_feature_columns, int) or n_feature_columns < 1):
        raise bad("'n_feature_columns' must be a positive integer")
    clf = ThresholdClassifier(group_blind=bool(meta.get("group_blind")), group_columns=group_columns,
                              random_state=seed)
    clf.estimator_ = None
    clf._arity = arity
    clf.rule_ = rule
    clf.plugin_ = arity.rule_plugin(rule)
    clf.cell_columns_, clf.cells_ = tuple(columns), cells
    clf.n_feature_columns_ = n_feature_columns
    clf.classes_ = np.asarray(classes)
    clf.violation_ = 0.0
    return clf
