"""A model's decisions as the command line reads them, for two and K classes alike.

What differs with the number of classes (which goals and options apply, the
decisions' shape, how a problem evaluates them, the predicted columns) is asked
of the data's arity (:mod:`rateopt._training._arity`), found once where the
labels are read (``Table.arity``, or :func:`~rateopt._training._arity.arity_of_labels`
of a saved model's classes). This module reads a model's expected and drawn
decisions: a threshold rule (alone, or chained to a saved model) takes the
scores and the groups, any other model the features.
"""

from __future__ import annotations

import inspect

import numpy as np

from .._group_rates import group_rates
from .._language._classes import class_positions
from .._threshold_classifier import ThresholdClassifier
from ._bundle import ChainedRule
from ._io import InputError

__all__ = ["check_goals", "drawn", "group_table", "header", "predict_keyed", "predicted_columns", "proba", "refuse", "scores_of"]


def predict_keyed(predict, X, row_key, **kwargs):
    """``predict(X, **kwargs)``, with ``row_key=`` (each row's draw keyed on its id) when ``predict`` takes it."""
    # Deterministic models (a booster prefix, a constant rule) have no draw to key and take no row_key.
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


def check_goals(arity, spec, classes):
    """Refuse goals and an objective that do not apply to the arity of labels ``classes``."""
    refusal = arity.goals_refusal(spec.goals, spec.objective, list(classes))
    if refusal is not None:
        i, reason = refusal
        where = spec.path or "the goals"
        if i is not None:
            where = f"{where}: goals[{i}] ({type(spec.goals[i]).__name__})"
        raise InputError(where + reason)


def refuse(arity, flags, classes, hint="leave it out"):
    """Raise on the first given option of ``flags`` (``[(flag, value)]``) the arity does not support."""
    unsupported = set(arity.unsupported_fit) | set(arity.unsupported_evaluate)
    for flag, given in flags:
        if given and flag.split()[0] in unsupported:
            raise InputError(f"{flag} is not supported for K-class labels (the label column has "
                             f"{len(classes)} classes {list(classes)!r}); {hint}")


def group_table(table, decisions):
    """The :func:`rateopt.group_rates` table (a dict) of a data table's expected or drawn ``decisions``."""
    return group_rates(table.y, decisions, table.groups, sample_weight=table.weight, classes=table.arity.classes,
                       as_frame=False)


def _rule_and_scores(clf, X):
    """``(threshold rule, its scores)`` of a rule alone or chained to a saved model; ``(None, None)`` otherwise."""
    if isinstance(clf, ChainedRule):
        return clf.rule, clf.scores(X)
    if isinstance(clf, ThresholdClassifier):
        return clf, scores_of(X)
    return None, None


def _distribution(clf, X, groups):
    """The model's decision distribution over its classes (n, n_classes)."""
    rule, scores = _rule_and_scores(clf, X)
    return clf.predict_proba(X) if rule is None else rule.predict_proba(scores, groups=_rule_groups(rule, groups))


def proba(arity, clf, X, groups):
    """The expected decisions in the arity's shape: the positive class's probability (n,), or (n, K)."""
    return arity.decisions(_distribution(clf, X, groups))


def _draw_index(clf, X, groups, seed, row_key):
    """``(each row's drawn class position, the number of classes)``, keyed on ``seed`` and ``row_key``."""
    rule, scores = _rule_and_scores(clf, X)
    if rule is None:
        labels, classes = predict_keyed(clf.predict, X, row_key, random_state=seed), clf.classes_
    else:
        rule.random_state = seed
        labels = predict_keyed(rule.predict, scores, row_key, groups=_rule_groups(rule, groups))
        classes = rule.classes_
    return class_positions(np.asarray(classes), np.asarray(labels), "the model's predictions"), len(classes)


def drawn(arity, clf, X, groups, seed, row_key):
    """The drawn decisions in the shape :func:`proba` gives (0/1 per row, or one-hot (n, K))."""
    idx, K = _draw_index(clf, X, groups, seed, row_key)
    out = np.zeros((idx.shape[0], K))
    out[np.arange(idx.shape[0]), idx] = 1.0
    return arity.decisions(out)


def header(arity, classes, with_proba):
    """The columns :func:`predicted_columns` writes."""
    return ["prediction"] + arity.probability_header(classes, with_proba)


def predicted_columns(arity, clf, X, groups, classes, seed, row_key, with_proba):
    """``rateopt predict``'s columns: the drawn class, and the arity's probability columns."""
    cols = {"prediction": np.asarray(classes)[_draw_index(clf, X, groups, seed, row_key)[0]]}
    if arity.probability_header(classes, with_proba):
        cols.update(arity.probability_columns(_distribution(clf, X, groups), classes))
    return cols
