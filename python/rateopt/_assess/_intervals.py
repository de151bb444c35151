"""Confidence intervals of an assessment's cells: Clopper–Pearson for rates, the bootstrap for the rest.

Rates. A rate is ``sum_i a_i b_i / sum_i a_i`` over a cell's rows, with
``a_i >= 0`` the row's weight in the denominator (its sample weight times,
e.g., ``y_i`` for a TPR) and ``b_i`` in [0, 1] its success (the decision, or
the probability of a positive decision for expected decisions). With unit
weights and 0/1 decisions, ``n = sum a_i`` is a count and ``x = sum a_i b_i`` a
binomial count, and the interval is the exact Clopper–Pearson interval
(Clopper and Pearson, 1934). Otherwise the rule is Korn and Graubard's (1998)
effective count: ``n_eff = (sum a_i)^2 / sum a_i^2`` (Kish's effective sample
size of the weights), ``x_eff = rate * n_eff``, and the Clopper–Pearson interval
of ``x_eff`` successes in ``n_eff`` trials, with the beta quantiles at those
non-integer arguments (the certificates' one implementation,
``rateopt._postprocess._certify.clopper_pearson``). For unit weights this is exact; for expected
decisions (``b_i`` strictly between 0 and 1) it is conservative, since a
``[0, 1]``-valued variable has at most the variance of a Bernoulli one of the
same mean.

Other metrics. The expanded percentile bootstrap (Efron and Tibshirani, 1993;
Hesterberg, 2015): the cell's rows are resampled with replacement
``n_boot`` times (seeded), the metric is recomputed on each resample, and the
``alpha'/2`` and ``1 - alpha'/2`` quantiles of the finite values are the
interval, at the adjusted level

    alpha'/2 = Phi(-sqrt(n / (n - 1)) * t_{1 - alpha/2, n - 1})

with ``Phi`` the standard normal distribution function and ``t_{q, d}`` the
``q`` quantile of Student's t with ``d`` degrees of freedom. The plain
percentile interval is too narrow in small samples: it has the width of a
``z`` interval with the divide-by-``n`` standard deviation. The expansion
widens it to that of a ``t`` interval with the divide-by-``n - 1`` one
(``alpha' = 0.0461`` for ``n = 100`` at ``alpha = 0.05``, ``0.0490`` for
``n = 400``; it vanishes as ``n`` grows). ``n`` is the cell's Kish effective
count ``(sum w_i)^2 / sum w_i^2`` of its sample weights, the row count for unit
weights; for ``n <= 1``, where the formula's limit is ``alpha' = 0``, the
interval is the range of the draws.
"""

from __future__ import annotations

import numpy as np

__all__ = ["effective_count", "expanded_alpha", "percentile_interval"]


def effective_count(a):
    """Kish's effective count ``(sum a)^2 / sum a^2`` of weights ``a`` (0 when they sum to 0).

    Parameters
    ----------
    a : ndarray
        Non-negative weights.

    Returns
    -------
    float
    """
    total = float(a.sum())
    if total <= 0:
        return 0.0
    return total * total / float(a @ a)


def expanded_alpha(alpha, n):
    """Hesterberg's (2015) small-sample level ``alpha'`` of the expanded percentile interval.

    ``alpha'/2 = Phi(-sqrt(n / (n - 1)) * t_{1 - alpha/2, n - 1})``, with
    ``Phi`` the standard normal distribution function and ``t_{q, d}`` the
    ``q`` quantile of Student's t with ``d`` degrees of freedom (Hesterberg,
    2015, "What teachers should know about the bootstrap", The American
    Statistician 69(4), 371-386).

    Parameters
    ----------
    alpha : float
        One minus the confidence level (two-sided), in (0, 1).
    n : float
        The sample size (the cell's Kish effective count with weights); need
        not be an integer.

    Returns
    -------
    float
        ``alpha'``, at most ``alpha``; 0 when ``n <= 1`` (the formula's limit
        as ``n`` decreases to 1).
    """
    from scipy.special import ndtr, stdtrit  # lazy: scipy.special takes ~0.4 s to import

    if not n > 1:
        return 0.0
    t = float(stdtrit(n - 1.0, 1.0 - alpha / 2))
    return 2.0 * float(ndtr(-np.sqrt(n / (n - 1.0)) * t))


def percentile_interval(draws, alpha, n=None):
    """The (expanded) percentile bootstrap interval of the finite ``draws``.

    Parameters
    ----------
    draws : ndarray of shape (n_boot,)
        The metric on each resample (NaN where undefined).
    alpha : float
        One minus the confidence level (two-sided).
    n : float or None, default=None
        The sample size the draws resample. Given, the quantiles are taken at
        :func:`expanded_alpha` ``(alpha, n)`` (Hesterberg's expanded
        percentile interval); ``None`` gives the plain percentile interval at
        ``alpha``.

    Returns
    -------
    (float, float)
        ``(nan, nan)`` when fewer than half of the draws are finite.
    """
    finite = draws[np.isfinite(draws)]
    if finite.size == 0 or finite.size < draws.size / 2:
        return np.nan, np.nan
    level = alpha if n is None else expanded_alpha(alpha, n)
    lo, hi = np.quantile(finite, [level / 2, 1.0 - level / 2])
    return float(lo), float(hi)
