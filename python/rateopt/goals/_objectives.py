"""Objectives by name: what the estimator's ``objective=`` minimizes on the training data."""

from __future__ import annotations

from rateopt._language import _rates as R
from rateopt.metrics import Metric, f_measure, g_mean, h_mean, q_mean

__all__ = ["OBJECTIVES", "objective"]

#: Objectives the estimator takes by name: what each minimizes on the training data.
OBJECTIVES = {
    "error": "the error rate (the default)",
    "f_measure": "minus the F1 score (maximizes F1; seed 003 Algorithm 3)",
    "g_mean": "1 - G-mean of TPR and TNR (seed 003 Algorithm 2)",
    "h_mean": "1 - H-mean of TPR and TNR",
    "q_mean": "the Q-mean of FPR and FNR",
    "balanced_error": "the mean of FPR and FNR (linear)",
}

#: The objectives other than the error rate, built on the training data's context.
_BUILDERS = {
    "f_measure": lambda ctx: -f_measure(ctx),
    "g_mean": g_mean,
    "h_mean": h_mean,
    "q_mean": q_mean,
    "balanced_error": lambda ctx: 0.5 * (R.false_positive_rate(ctx) + R.false_negative_rate(ctx)),
}


def objective(spec, dataset):
    """The objective named (or built) by ``spec``, on ``dataset``.

    Parameters
    ----------
    spec : str, callable or None
        A name of :data:`OBJECTIVES`; a callable taking the training
        :class:`~rateopt.Dataset` and returning a rate expression or a
        :class:`~rateopt.metrics.Metric`; or None (the error rate).
    dataset : Dataset
        The training data.

    Returns
    -------
    Expression or Metric
        What the problem minimizes.

    Raises
    ------
    ValueError
        If the name is unknown or the callable returns something else.
    """
    ctx = dataset.context()
    if spec is None or spec == "error":
        return R.error_rate(ctx)
    if callable(spec):
        out = spec(dataset)
        if isinstance(out, (R.Expression, Metric)):
            return out
        raise ValueError(f"objective callable must return a rate expression or a metric, got {type(out).__name__}")
    if isinstance(spec, str) and spec in _BUILDERS:
        return _BUILDERS[spec](ctx)
    raise ValueError(f"objective must be one of {sorted(OBJECTIVES)}, a callable or None, got {spec!r}")
