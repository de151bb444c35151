"""Where the quantile bins of sorted scores begin: one rule for post-processing's bins and a boosted run's kept codes."""

from __future__ import annotations

import numpy as np

__all__ = ["quantile_positions"]


def quantile_positions(lengths, n_bins):
    """The positions of ``n_bins`` quantiles in sorted runs of the given lengths, shape (len(lengths), n_bins).

    NumPy's ``inverted_cdf`` quantiles at ``j / n_bins``, ``j = 0..n_bins-1``
    (scores of the data), found by their positions in each sorted run as
    :func:`numpy.quantile` finds them: index ``floor(m q - 1)``, plus one
    where that is not whole, and at least 0.

    Parameters
    ----------
    lengths : ndarray of int64 of shape (n_runs,)
        Each sorted run's length ``m``.
    n_bins : int

    Returns
    -------
    ndarray of intp of shape (n_runs, n_bins)
        Positions within each run (add the run's start for positions in a longer array).
    """
    probs = np.arange(n_bins) / n_bins
    index = np.asarray(lengths)[:, None] * probs[None, :] - 1
    below = np.floor(index)
    pos = np.where(index - below == 0, below, below + 1).astype(np.intp)
    pos[pos < 0] = 0
    return pos
