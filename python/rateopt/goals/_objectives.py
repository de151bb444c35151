"""Objectives by name: what the estimator's ``objective=`` minimizes on the training data.

One table per kind of labels: :data:`OBJECTIVES` for two-class data
(:class:`~rateopt.Dataset`), :data:`MULTICLASS_OBJECTIVES` for K-class data
(:class:`~rateopt.ClassDataset`); :func:`objective` reads the table of its
dataset's kind.
"""

from __future__ import annotations

from rateopt._language import _rates as R
from rateopt._language._classes import ClassDataset, class_recall, multiclass_error_rate
from rateopt._language._data import Dataset
from rateopt.metrics import MacroF1, Metric, f_measure, g_mean, h_mean, q_mean

__all__ = ["OBJECTIVES", "MULTICLASS_OBJECTIVES", "objective"]

#: Objectives the estimator takes by name: what each minimizes on the training data.
OBJECTIVES = {
    "error": "the error rate (the default)",
    "f_measure": "minus the F1 score (maximizes F1; Narasimhan et al., 2019, Algorithm 3)",
    "g_mean": "1 - G-mean of TPR and TNR (Narasimhan et al., 2019, Algorithm 2)",
    "h_mean": "1 - H-mean of TPR and TNR",
    "q_mean": "the Q-mean of FPR and FNR",
    "balanced_error": "the mean of FPR and FNR (linear)",
}

#: Objectives of K-class problems by name (``Problem(objective=...)``, goals files, the estimator).
MULTICLASS_OBJECTIVES = {
    "error": "the error rate (the default)",
    "balanced_error": "1 - macro-recall: the mean over classes of 1 - recall (linear)",
    "macro_f1": "1 - macro-F1 (non-linear: linearized at the running average in training)",
}

#: The objectives other than the error rate, built on the training data's context.
_BUILDERS = {
    "f_measure": lambda ctx: -f_measure(ctx),
    "g_mean": g_mean,
    "h_mean": h_mean,
    "q_mean": q_mean,
    "balanced_error": lambda ctx: 0.5 * (R.false_positive_rate(ctx) + R.false_negative_rate(ctx)),
}


def _balanced_class_error(ctx):
    K = ctx.dataset.n_classes
    return 1.0 - R.sum([class_recall(ctx, c) for c in ctx.dataset.classes.tolist()]) / K


#: The K-class objectives other than the error rate.
_CLASS_BUILDERS = {
    "balanced_error": _balanced_class_error,
    "macro_f1": MacroF1,
}


def objective(spec, dataset):
    """The objective named (or built) by ``spec``, on ``dataset``.

    Parameters
    ----------
    spec : str, callable or None
        A name of :data:`OBJECTIVES` (of :data:`MULTICLASS_OBJECTIVES` for a
        :class:`~rateopt.ClassDataset`); a callable taking the training
        dataset and returning a rate expression, a
        :class:`~rateopt.metrics.Metric` or a :class:`~rateopt.metrics.MacroF1`;
        or None (the error rate).
    dataset : Dataset or ClassDataset
        The training data.

    Returns
    -------
    Expression, Metric or MacroF1
        What the problem minimizes.

    Raises
    ------
    ValueError
        If the name is unknown or the callable returns something else.
    """
    ctx = dataset.context()
    builders = dataset._named_objectives  # the table of the dataset's kind (registered below)
    if spec is None:
        spec = "error"
    if callable(spec):
        out = spec(dataset)
        if isinstance(out, (R.Expression, Metric, MacroF1)):
            return out
        raise ValueError(f"objective callable must return a rate expression or a metric, got {type(out).__name__}")
    if isinstance(spec, str) and spec in builders:
        return builders[spec](ctx)
    raise ValueError(dataset._objective_refusal.format(spec=spec, names=list(builders)))


Dataset._named_objectives.update({name: ({"error": R.error_rate} | _BUILDERS)[name] for name in sorted(OBJECTIVES)})
ClassDataset._named_objectives.update({"error": multiclass_error_rate} | _CLASS_BUILDERS)
