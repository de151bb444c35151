"""Non-linear rate metrics: convex functions ``psi`` of a few rates (Narasimhan et al., 2019, Table 1).

A :class:`Metric` is a function ``psi(z)`` of K rate expressions ``z_k`` (each
an affine :class:`~rateopt.Expression` of atoms): the KL divergence of a
group's positive rate from a target prevalence, the G-mean, H-mean and
Q-mean of TPR and TNR (or FPR and FNR). It is a separate, explicit kind of
object: the affine rate algebra keeps refusing non-linear operations, and a
metric refuses ``==``, ``bool()`` and arithmetic.

What a metric provides is what the three-player game of Narasimhan, Cotter and
Gupta (NeurIPS 2019, Algorithm 2) [1]_ needs from it, and what evaluation needs:

* :meth:`Metric.value` -- ``psi(z)``; for a stochastic classifier it is
  ``psi`` of the *expected* rates (Narasimhan et al., 2019, §2), which is what evaluating the
  mixture's probabilities gives (:meth:`Metric.evaluate`);
* :meth:`Metric.best_response` -- the slack player's closed-form best response
  ``argmin_{xi in [0,1]^K} psi(xi) - <s * lam, xi>`` where ``s_k = +1`` if psi
  increases in ``z_k`` and ``-1`` if it decreases (the orientation of the
  slack constraints ``s_k (z_k - xi_k) <= 0``).

Modules: :mod:`._base` (the :class:`Metric` base class, the registry of metric
classes by kind and :func:`metric_from_params`), :mod:`._constraint`
(:class:`MetricConstraint`), :mod:`._convex` (the closed-form convex metrics
and their sums), :mod:`._ratio` (ratio metrics) and :mod:`._macro_f1` (the K-class
objective :class:`MacroF1`, a function of confusion counts); ROC-AUC through
thresholded rates lives in the rate language (:mod:`rateopt._language._auc`).

References
----------
.. [1] H. Narasimhan, A. Cotter, M. Gupta. "Optimizing Generalized Rate
   Metrics with Three Players". NeurIPS 2019, Table 1 and §3.
   Best responses: ``../shared/papers/notes/methods_spec.md`` §A.2 (verified
   there on a 1001 x 1001 grid; here against a grid in the tests).
"""

from __future__ import annotations

from .._language._auc import RocAuc, Threshold, ThresholdedRate, roc_auc, roc_auc_lj
from ._base import Metric, metric_from_params
from ._constraint import MetricConstraint
from ._convex import KLD_EPS as KLD_EPS  # the KL divergence's smoothing, which tests compare with
from ._convex import MetricSum, g_mean, h_mean, kl_divergence, q_mean
from ._macro_f1 import MacroF1
from ._ratio import RatioMetric, f_measure, f_measure_parity, precision, predictive_parity, ratio, win_loss_ratio

__all__ = ["Metric", "MetricConstraint", "MetricSum", "RatioMetric", "metric_from_params", "kl_divergence", "g_mean",
           "h_mean", "q_mean", "ratio", "precision", "predictive_parity", "f_measure", "f_measure_parity",
           "win_loss_ratio", "MacroF1", "RocAuc", "Threshold", "ThresholdedRate", "roc_auc", "roc_auc_lj"]
