"""The optional stopping rule of :func:`rateopt.train` (``stop_tol``, ``stop_patience``).

The solution a training run returns is the m-stochastic mixture of its recorded
iterates: the shrinking LP's optimum over the records (Cotter et al., 2019, Lemma 5). Over
a growing set of candidates that optimum can only improve -- once some mixture is
feasible the objective never rises, and before that the smallest achievable
largest violation never rises -- so "has it stopped improving?" is a
well-defined question. :class:`PlateauRule` asks it every few records and
stops training once the LP's value has moved by at most ``stop_tol`` over the
last ``stop_patience`` records. Its LPs hold the candidates the solution will
mix, for both arities: the records so far and the driver's other candidates
(``extra``: the trivial rules, the completed window averages and, for two
classes, their threshold rules).

It runs as the training callback (wrapping the user's), so the Python driver
and the core loop stop at the same record.
"""

from __future__ import annotations

import math

import numpy as np

from ._shrink import shrink

__all__ = ["PlateauRule", "lp_score"]


def lp_score(objectives, constraints):
    """``(z, f)`` of the shrinking LP over these records: ``z`` the smallest achievable
    largest constraint value when no mixture is feasible (else 0), ``f`` the
    feasible mixture's objective (``inf`` while infeasible). Smaller is better,
    compared lexicographically."""
    res = shrink(np.asarray(objectives, dtype=np.float64), np.asarray(constraints, dtype=np.float64))
    return (0.0, float(res.objective)) if res.feasible else (float(res.infeasibility), math.inf)


def improved_by(old, new, tol):
    """Whether LP score ``new`` beats ``old`` by more than ``tol`` (becoming feasible always does)."""
    if old[0] > 0.0 and new[0] == 0.0:
        return True
    if new[0] > 0.0:
        return old[0] - new[0] > tol
    return old[1] - new[1] > tol


class PlateauRule:
    """Training callback that stops when the shrinking LP over the candidates stops improving.

    Parameters
    ----------
    tol : float
        Smallest improvement that counts: of the LP's objective once a feasible
        mixture exists, of its smallest achievable largest violation before.
    patience : int
        Stop when no improvement larger than ``tol`` happened over this many
        records (at least 2).
    callback : callable or None
        The user's callback, called first on every record; its ``True`` stops
        training too.
    start : int, default=0
        The first iteration that may stop training: earlier records (e.g. the
        objective warm-up's) enter the LP, but the rule neither checks nor
        counts its patience before it.
    extra : callable or None, default=None
        Returns the other candidates of the solution so far (the driver's
        ``_Recorder.candidate_scores``: the trivial rules, the window averages,
        their threshold rules), as ``(objectives (n,), constraints (n, m))``:
        each check's LP holds them beside the records, so the rule sees what
        the solution will mix.

    Attributes
    ----------
    stopped_at : int or None
        The iteration at which the rule stopped training (None: it did not).
    n_checks : int
        LPs solved (one every ``max(1, patience // 4)`` records).
    """

    def __init__(self, tol, patience, callback=None, start=0, extra=None):
        self.tol, self.patience, self.callback = float(tol), int(patience), callback
        self.start, self.extra = int(start), extra
        self.n_before = 0  # records before ``start``
        self.every = max(1, self.patience // 4)
        self.objectives, self.constraints = [], []
        self.best = None
        self.best_at = 0
        self.stopped_at = None
        self.n_checks = 0

    def __call__(self, t, info):
        stop = bool(self.callback(t, info)) if self.callback is not None else False
        self.objectives.append(float(info["objective"]))
        self.constraints.append(np.asarray(info["constraints"], dtype=np.float64))
        n = len(self.objectives)
        if t < self.start:
            self.n_before = n
            return stop
        if stop or (n - self.n_before) % self.every:
            return stop
        self.n_checks += 1
        objectives, constraints = self.objectives, np.array(self.constraints).reshape(n, -1)
        if self.extra is not None:
            more_f, more_g = self.extra()
            if len(more_f):
                objectives = np.concatenate([np.asarray(more_f, dtype=np.float64), objectives])
                constraints = np.vstack([np.asarray(more_g, dtype=np.float64).reshape(len(more_f), -1), constraints])
        score = lp_score(objectives, constraints)
        if self.best is None or improved_by(self.best, score, self.tol):
            self.best, self.best_at = score, n
        elif n - self.best_at >= self.patience:
            self.stopped_at = t
            return True
        return False
