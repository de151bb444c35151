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
non-integer arguments. For unit weights this is exact; for expected
decisions (``b_i`` strictly between 0 and 1) it is conservative, since a
``[0, 1]``-valued variable has at most the variance of a Bernoulli one of the
same mean.

Other metrics. The percentile bootstrap (Efron and Tibshirani, 1993): the
cell's rows are resampled with replacement ``n_boot`` times (seeded), the
metric is recomputed on each resample, and the ``alpha/2`` and ``1 - alpha/2``
quantiles of the finite values are the interval.
"""

from __future__ import annotations

import numpy as np

__all__ = ["clopper_pearson", "effective_count", "percentile_interval"]


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


def clopper_pearson(rate, n_eff, alpha):
    """The Clopper–Pearson interval of ``rate * n_eff`` successes in ``n_eff`` trials.

    Parameters
    ----------
    rate : float
        The observed rate in [0, 1].
    n_eff : float
        The (effective) number of trials, > 0.
    alpha : float
        One minus the confidence level (two-sided).

    Returns
    -------
    (float, float)
        The lower and upper bounds; ``(nan, nan)`` when ``n_eff`` is 0 or the
        rate is NaN.
    """
    from scipy.special import betaincinv  # lazy: scipy.special takes ~0.4 s to import, see tests/test_layers.py

    if not n_eff > 0 or not np.isfinite(rate):
        return np.nan, np.nan
    x = min(max(rate * n_eff, 0.0), n_eff)
    tiny = 1e-12 * max(n_eff, 1.0)
    lower = 0.0 if x <= tiny else float(betaincinv(x, n_eff - x + 1.0, alpha / 2))
    upper = 1.0 if x >= n_eff - tiny else float(betaincinv(x + 1.0, n_eff - x, 1.0 - alpha / 2))
    return lower, upper


def percentile_interval(draws, alpha):
    """The percentile bootstrap interval of the finite ``draws``.

    Parameters
    ----------
    draws : ndarray of shape (n_boot,)
        The metric on each resample (NaN where undefined).
    alpha : float
        One minus the confidence level (two-sided).

    Returns
    -------
    (float, float)
        ``(nan, nan)`` when fewer than half of the draws are finite.
    """
    finite = draws[np.isfinite(draws)]
    if finite.size == 0 or finite.size < draws.size / 2:
        return np.nan, np.nan
    lo, hi = np.quantile(finite, [alpha / 2, 1.0 - alpha / 2])
    return float(lo), float(hi)
