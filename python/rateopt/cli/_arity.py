"""The one place where the command line tells two classes from K classes.

The commands run one path; what differs with the number of classes (which goals and options apply, how a
model's expected and drawn decisions are read, how a problem evaluates them, the per-group table, the predicted
columns) is a method of :data:`TWO_CLASSES` or :data:`K_CLASSES`. :func:`arity_of` chooses one, once, from the
dataset type (a :class:`~rateopt.ClassDataset` is K classes); :func:`arity_for` from a saved model's classes.
"""

from __future__ import annotations

import inspect

import numpy as np

from .._compiler import is_class_problem
from .._group_rates import group_rates
from .._language._classes import ClassDataset
from .._solutions._result import warn_if_infeasible
from .._threshold_classifier import ThresholdClassifier
from .._train import run_game
from ..goals import MULTICLASS_OBJECTIVES, OBJECTIVES
from ..goals._multiclass import ClassGoal
from ._bundle import ChainedRule
from ._io import InputError

__all__ = ["Arity", "TWO_CLASSES", "K_CLASSES", "arity_of", "arity_for", "predict_keyed",
           "scores_of"]


def predict_keyed(predict, X, row_key, **kwargs):
    """``predict(X, **kwargs)``, with ``row_key=`` (each row's draw keyed on its id) when ``predict`` takes it."""
    # TODO(merge): every classifier's predict takes row_key (helper K); the lead drops this check.
    params = inspect.signature(predict).parameters
    if row_key is not None and ("row_key" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())):
        kwargs["row_key"] = row_key
    return predict(X, **kwargs)


def scores_of(X):
    """A post-processed model's one feature: its (standardized) score column."""
    return np.asarray(X[:, 0].todense()).ravel() if hasattr(X, "todense") else np.asarray(X)[:, 0]


def _rule_groups(clf, groups):
    missing = [c for c in clf.rule_.columns if c not in (groups or {})]
    if missing:
        raise InputError(f"the threshold rule needs the group column(s) {missing!r}: give them with --groups "
                         "at fit time and in the data")
    for c in clf.rule_.columns:
        values = np.asarray(groups[c], dtype=object)
        empty = np.flatnonzero([v is None or v == "" for v in values.tolist()])
        if empty.size:
            raise InputError(f"group column {c!r} has no value at data row {int(empty[0]) + 1}: the threshold rule "
                             "decides per group, so every row needs its group")
    return {c: groups[c] for c in clf.rule_.columns} or None


def _goal_label(spec, i, goal):
    return f"{spec.path or 'the goals'}: goals[{i}] ({type(goal).__name__})"


class Arity:
    """What two-class runs do (:data:`TWO_CLASSES`); :class:`_KClasses` overrides what K classes do otherwise."""

    #: Options of ``rateopt fit`` and ``evaluate`` this arity does not support (their flags).
    unsupported_fit = ()
    unsupported_evaluate = ()
    #: The heading of ``rateopt evaluate``'s per-group table.
    table_heading = "per-group rates"

    def check_goals(self, spec, table):
        """Refuse K-class goals and K-class-only objectives."""
        for i, g in enumerate(spec.goals):
            if isinstance(g, ClassGoal):
                raise InputError(f"{_goal_label(spec, i, g)} is a K-class goal, but the label column has two "
                                 "values: use a two-class recipe (e.g. demographic_parity), or a label of more than "
                                 "two classes")
        obj = spec.objective
        if isinstance(obj, str) and obj not in OBJECTIVES and obj in MULTICLASS_OBJECTIVES:
            raise InputError(f"{spec.path or 'the goals'}: objective {obj!r} is a K-class objective, but the label "
                             f"column has two values; two-class objectives: {sorted(OBJECTIVES)}")

    def refuse(self, flags, classes, hint="leave it out"):
        """Raise on the first given option of ``flags`` (``[(flag, value)]``) this arity does not support.

        Two classes support every option; :data:`K_CLASSES` refuses the given ones.
        """

    def train(self, problem, model, method, **kwargs):
        """The training run (:func:`rateopt.train`'s driver without its own feasibility warning)."""
        return run_game(problem, model, method, **kwargs)

    def solution(self, result, kind, epsilon, problem):
        """The classifier of solution ``kind``."""
        return result.solution(kind, epsilon=epsilon, problem=problem)

    def warn_infeasible(self, result, kind, epsilon, problem, clf):
        """Warn (:class:`~rateopt.exceptions.InfeasibleWarning`) when the solution misses a goal."""
        feas = result.feasibility(kind, epsilon=epsilon, problem=problem, classifier=clf)
        warn_if_infeasible(feas, allowed=epsilon if kind == "m-stochastic" else 0.0)

    def proba(self, clf, X, groups):
        """The expected decisions: the probability of a positive decision per row (n,)."""
        if isinstance(clf, ChainedRule):
            return clf.rule.predict_proba(clf.scores(X), groups=_rule_groups(clf.rule, groups))[:, 1]
        if isinstance(clf, ThresholdClassifier):
            return clf.predict_proba(scores_of(X), groups=_rule_groups(clf, groups))[:, 1]
        return np.asarray(clf.predict_proba(X))[:, 1]

    def draw_index(self, clf, X, groups, seed, row_key):
        """Each row's drawn decision as a class position (0 or 1), keyed on ``seed`` and the row's ``row_key``."""
        if isinstance(clf, ChainedRule):
            rule, scores = clf.rule, clf.scores(X)
        elif isinstance(clf, ThresholdClassifier):
            rule, scores = clf, scores_of(X)
        else:
            return np.asarray(predict_keyed(clf.predict, X, row_key, random_state=seed), dtype=np.int64)
        rule.random_state = seed
        labels = predict_keyed(rule.predict, scores, row_key, groups=_rule_groups(rule, groups))
        return (labels == rule.classes_[1]).astype(np.int64)

    def drawn(self, clf, X, groups, seed, row_key):
        """The drawn decisions in the shape :meth:`proba` gives: 0/1 per row (n,)."""
        return self.draw_index(clf, X, groups, seed, row_key).astype(np.float64)

    def evaluate(self, problem, predictions):
        """The problem's values of expected decisions, ``{dataset name: predictions}``."""
        return problem.evaluate(predictions, kind="probabilities")

    def group_table(self, table, proba):
        """The :func:`rateopt.group_rates` table (a dict) of a table's expected decisions."""
        return group_rates(table.y, proba, table.groups, sample_weight=table.weight, as_frame=False)

    def predicted_columns(self, clf, X, groups, classes, seed, row_key, proba):
        """``rateopt predict``'s columns: the drawn class, and (``proba``) the probability of the positive one."""
        cols = {"prediction": classes[self.draw_index(clf, X, groups, seed, row_key)]}
        if proba:
            cols["proba"] = self.proba(clf, X, groups)
        return cols

    def header(self, classes, proba):
        """The columns :meth:`predicted_columns` writes."""
        return ["prediction"] + (["proba"] if proba else [])

    def classes_note(self, classes):
        """What ``rateopt evaluate``'s first line says about the classes (nothing for two)."""
        return ""


class _KClasses(Arity):
    unsupported_fit = ("--postprocess", "--sweep", "--certify", "--compare-unconstrained", "--baseline")
    unsupported_evaluate = ("--certify",)
    table_heading = "per-group predicted class proportions and per-class recall"

    def check_goals(self, spec, table):
        """Refuse two-class goals, goals on other dataset roles and objectives that are not K-class."""
        for i, g in enumerate(spec.goals):
            if not isinstance(g, ClassGoal):
                raise InputError(f"{_goal_label(spec, i, g)} is a two-class goal, but the label column has "
                                 f"{len(table.classes)} classes {table.classes!r}: use a K-class recipe "
                                 "(multiclass_demographic_parity, multiclass_equal_opportunity, "
                                 "multiclass_equalized_odds, class_prior_matching, class_recall_floor, "
                                 "class_precision_floor)")
            if g.dataset != "train":
                raise InputError(f"{_goal_label(spec, i, g)}: a K-class problem is measured on the training file "
                                 f"only; goals on dataset role {g.dataset!r} are not supported")
        obj = spec.objective
        if obj is not None and (not isinstance(obj, str) or obj not in MULTICLASS_OBJECTIVES):
            raise InputError(f"{spec.path or 'the goals'}: objective {obj!r} is not a K-class objective; choose one "
                             f"of {sorted(MULTICLASS_OBJECTIVES)}")

    def refuse(self, flags, classes, hint="leave it out"):
        for flag, given in flags:
            if given:
                raise InputError(f"{flag} is not supported for K-class labels (the label column has "
                                 f"{len(classes)} classes {list(classes)!r}); {hint}")

    def proba(self, clf, X, groups):
        """The decision distribution over the classes per row (n, K)."""
        return clf.predict_proba(X)

    def draw_index(self, clf, X, groups, seed, row_key):
        labels = predict_keyed(clf.predict, X, row_key, random_state=seed)
        position = {c: k for k, c in enumerate(np.asarray(clf.classes_).tolist())}
        return np.array([position[c] for c in np.asarray(labels).tolist()], dtype=np.int64)

    def drawn(self, clf, X, groups, seed, row_key):
        """The drawn decisions one-hot (n, K)."""
        idx = self.draw_index(clf, X, groups, seed, row_key)
        out = np.zeros((idx.shape[0], len(clf.classes_)))
        out[np.arange(idx.shape[0]), idx] = 1.0
        return out

    def evaluate(self, problem, predictions):
        # TODO(merge): one Problem (helper P) evaluates {name: predictions} for both arities.
        return problem.evaluate(predictions["train"])

    def group_table(self, table, proba):
        return group_rates(table.y, proba, table.groups, sample_weight=table.weight, classes=table.classes,
                           as_frame=False)

    def predicted_columns(self, clf, X, groups, classes, seed, row_key, proba):
        """The drawn class and one probability column per class (``proba_<class>``), always."""
        cols = {"prediction": classes[self.draw_index(clf, X, groups, seed, row_key)]}
        P = self.proba(clf, X, groups)
        for k, c in enumerate(classes.tolist()):
            cols[f"proba_{c}"] = P[:, k]
        return cols

    def header(self, classes, proba):
        return ["prediction"] + [f"proba_{c}" for c in classes]

    def classes_note(self, classes):
        return f", {len(classes)} classes"


TWO_CLASSES = Arity()
K_CLASSES = _KClasses()


def arity_of(data):
    """The arity of a problem or a dataset: K classes for a K-class problem or a :class:`~rateopt.ClassDataset`."""
    return K_CLASSES if isinstance(data, ClassDataset) or is_class_problem(data) else TWO_CLASSES


def arity_for(classes):
    """The arity of a saved model from its classes (the encoding file's ``"classes"``)."""
    return K_CLASSES if len(classes) > 2 else TWO_CLASSES
