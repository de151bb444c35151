"""The demo behind ``python -m rateopt``: fairness constraints on generated data.

:func:`make_groups_dataset` generates the embedded default problem: the
four-Gaussian mixture of Cotter et al. (2019)'s Figure 2, scaled up, with a group column.
Group ``"B"`` is a minority whose positive examples sit closer to the
negatives, so an unconstrained linear classifier recalls far fewer of them.
:func:`run_demo` trains an unconstrained and an equal-opportunity-constrained
classifier and prints per-group rates side by side.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from . import goals
from ._estimator import RateConstrainedClassifier

__all__ = ["make_groups_dataset", "run_demo"]


def make_groups_dataset(n_samples=20000, *, minority=0.3, random_state=0):
    """Generate a two-group binary problem (a scaled-up Cotter et al. (2019) Figure 2 mixture).

    Parameters
    ----------
    n_samples : int, default=20000
    minority : float, default=0.3
        Fraction of examples in group ``"B"``.
    random_state : int, default=0

    Returns
    -------
    X : ndarray of shape (n_samples, 3)
        Two mixture coordinates and a group indicator.
    y : ndarray of int of shape (n_samples,)
        1 for the "blue" (positive) class.
    group : ndarray of str of shape (n_samples,)
        ``"A"`` or ``"B"``.
    """
    rng = np.random.default_rng(random_state)
    centers = np.array([[0.0, 1.0], [-1.0, 0.0], [0.0, -1.0], [1.0, 0.0]])
    comp = rng.integers(0, 4, n_samples)
    y = (comp >= 2).astype(np.int64)
    in_b = rng.random(n_samples) < minority
    X2 = centers[comp] + rng.normal(scale=np.sqrt(0.15), size=(n_samples, 2))
    # Group B's positives are pulled toward the negatives' side.
    X2[in_b & (y == 1)] += np.array([-0.55, 0.55])
    X = np.column_stack([X2, in_b.astype(np.float64)])
    return X, y, np.where(in_b, "B", "A")


def _group_rates(p, y, group):
    rows = []
    for g in ("A", "B", "all"):
        m = np.ones_like(y, bool) if g == "all" else group == g
        pos = m & (y == 1)
        neg = m & (y == 0)
        rows.append((g, p[m].mean(), p[pos].mean(), p[neg].mean(), np.abs(p[m] - y[m]).mean()))
    return rows


def run_demo(n_samples=20000, *, slack=0.05, n_iter=1000, random_state=0, file=None):
    """Train unconstrained and equal-opportunity-constrained classifiers; print both.

    Parameters
    ----------
    n_samples : int, default=20000
    slack : float, default=0.05
        Equal opportunity: ``TPR(g) >= TPR(all) - slack`` for both groups.
    n_iter : int, default=1000
    random_state : int, default=0
    file : file-like, default=None

    Returns
    -------
    dict
        ``{"unconstrained": rows, "constrained": rows}``, rows of
        ``(group, positive rate, TPR, FPR, error)`` (expected values).
    """
    out = file or sys.stdout
    X, y, group = make_groups_dataset(n_samples, random_state=random_state)
    print(f"demo: {n_samples} examples, groups A/B = {np.mean(group == 'A'):.0%}/{np.mean(group == 'B'):.0%}, "
          f"goal: TPR(g) >= TPR(all) - {slack} (equal opportunity)", file=out)
    results = {}
    for label, goal_list in (("unconstrained", []), ("constrained", [goals.equal_opportunity("group", slack=slack, sides="lower")])):
        t0 = time.perf_counter()
        est = RateConstrainedClassifier(goals=goal_list, n_iter=n_iter, learning_rate=0.05, eta_lambda=0.5,
                                        random_state=random_state)
        est.fit(X, y, groups={"group": group})
        p = est.predict_proba(X)[:, 1]
        results[label] = _group_rates(p, y, group)
        print(f"  trained {label} model in {time.perf_counter() - t0:.2f} s "
              f"({est.classifier_.__class__.__name__})", file=out)
    print(f"\n  {'':<7}{'positive rate':^26}{'true positive rate':^26}{'error':^26}", file=out)
    print(f"  {'group':<7}" + f"{'unconstr.':>13}{'constrained':>13}" * 3, file=out)
    for (g, pr0, tpr0, _, e0), (_, pr1, tpr1, _, e1) in zip(results["unconstrained"], results["constrained"]):
        print(f"  {g:<7}" + "".join(f"{v:>13.3f}" for v in (pr0, pr1, tpr0, tpr1, e0, e1)), file=out)
    tpr_all = results["constrained"][2][2]
    gaps = [tpr_all - r[2] for r in results["constrained"][:2]]
    print(f"\n  constrained: largest TPR shortfall vs overall = {max(gaps):.4f} (allowed {slack})", file=out)
    return results
