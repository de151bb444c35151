"""Candidates of the shrinking LP besides the recorded iterates: window averages of the iterates (issue 36).

A run's candidates are the trivial rules (constant classifiers), then the
**window averages**, then the recorded iterates. A window average is the model
whose weights and bias are the means of those of the iterates of one window of
:data:`AVERAGE_WINDOW` consecutive iterations ``[j W, (j + 1) W)``. The
proxy Lagrangian is convex in the model's parameters, so a window's average
does at least as well on it as the window's iterates do on average (Jensen):
it stands in for a best response to the window's multipliers, where the
single iterates oscillate around it. Its statistics take one more pass over
the data per window (``n_iter / W`` passes, 2 % of a run's).

**Threshold rules of the window averages** (two classes, issue 36). The
scores of the averages of windows ``j = 0, 1, 3, 7, ...`` (:func:`rule_window`)
are followed by the best per-group threshold rule of the training problem
(the two-class threshold LP, exact), and the deterministic rules that rule
mixes are candidates too, each folded into a linear model: per-group offsets
of the intercept when the goals' groups are features of X, one shifted bias
(group-blind) otherwise (:mod:`rateopt._postprocess._folded_rules`). Their
``iterations`` entry is :data:`THRESHOLD_RULE_ITERATION`, and they come
after the window averages. The LP over the candidates can mix them, so its
training optimum is at most each such threshold rule's: the "best feasible
deterministic rule of the model with a tuned threshold" of issue 36, where
the model is a window's average rather than a second, unconstrained fit.

Only complete windows of consecutive recorded iterations count. A run of T
iterations therefore has the window averages of the first T iterations of any
longer run with the same seed: the candidates of a shorter run stay a subset
of a longer run's, so the shrinking LP's optimum still cannot increase with
``n_iter`` (docs/defaults.md, issue 36).

Both arities share this code: the records' weights are (n_features,) or
(K, n_features), their biases scalars or (K,) vectors, and a mean is taken
entry by entry. The driver (``rateopt._train``) adds no averages for fitted
estimator iterates, trainable offsets, or non-linear metrics (whose LP only
bounds a mixture's value).
"""

from __future__ import annotations

import numpy as np

__all__ = ["AVERAGE_ITERATION", "AVERAGE_WINDOW", "THRESHOLD_RULE_ITERATION", "rule_window", "window_averages"]

#: The ``iterations`` entry of a window average among a result's candidates (the trivial rules' is -1).
AVERAGE_ITERATION = -2

#: The ``iterations`` entry of a window average's folded threshold rule (two classes; see the module docstring).
THRESHOLD_RULE_ITERATION = -3

#: Iterations per averaged window. Chosen by measurement (docs/defaults.md, issue 36) among 5, 10, 25, 50,
#: 100 and doubling windows: 50 is the one that lowered the m-stochastic training error on FICO and tiny-cell.
AVERAGE_WINDOW = 50


def window_averages(iterations, weights, biases, multipliers, window=AVERAGE_WINDOW):
    """The window averages of recorded iterates.

    Parameters
    ----------
    iterations : sequence of int
        The iteration of each recorded iterate, increasing.
    weights : sequence of ndarray
        Each iterate's weights, in the records' layout ((n_features,) or (K, n_features)).
    biases : sequence of float or ndarray
        Each iterate's bias (a float, or a (K,) vector).
    multipliers : sequence of ndarray
        Each iterate's multipliers (averaged alike, for the record).
    window : int, default=AVERAGE_WINDOW
        Iterations per window.

    Returns
    -------
    list of tuple
        ``(weights, bias, multipliers, first_iteration)`` per complete window
        ``[j * window, (j + 1) * window)`` whose every iteration was recorded,
        in increasing order of ``j``.
    """
    if window < 1:
        raise ValueError(f"window must be a positive whole number, got {window!r}")
    its = np.asarray(iterations, dtype=np.int64)
    out = []
    # records are increasing, so a complete window is `window` consecutive records from a multiple of `window`
    starts = np.flatnonzero((its >= 0) & (its % window == 0))
    for s in starts:
        e = s + window
        if e > its.shape[0] or its[e - 1] - its[s] != window - 1:
            continue
        w = np.mean(np.asarray(weights[s:e], dtype=np.float64), axis=0)
        b = np.mean(np.asarray(biases[s:e], dtype=np.float64), axis=0)
        lam = np.mean(np.asarray(multipliers[s:e], dtype=np.float64), axis=0)
        out.append((w, float(b) if np.ndim(b) == 0 else b, lam, int(its[s])))
    return out



def rule_window(start, window=AVERAGE_WINDOW):
    """Whether a window average has threshold-rule candidates: the windows ``j = 2^i - 1`` (0, 1, 3, 7, ...).

    Fixed by the window's index alone, so a shorter run's rule windows are a
    prefix of a longer run's (longer is never worse), and a run of T
    iterations fits about ``log2(T / window)`` threshold LPs. Every window was
    measured too (docs/defaults.md, issue 36): the same training error within
    0.001 on the six problems of the bench, at up to five times the LPs.

    Parameters
    ----------
    start : int
        The window's first iteration (a multiple of ``window``).
    window : int, default=AVERAGE_WINDOW

    Returns
    -------
    bool
    """
    j = int(start) // window
    return (j + 1) & j == 0
