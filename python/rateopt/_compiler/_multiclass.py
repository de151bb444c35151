"""Deprecated module path, kept for one release: the K-class compiler now lives in its homes.

* :class:`~rateopt.Problem` is the one problem class (a
  :class:`~rateopt.ClassDataset` chooses the K-class statistics);
  ``MulticlassProblem`` is its deprecated alias (:mod:`rateopt._compiler._problem`);
* the K-class statistics compiler (``MulticlassCompiled``, ``compile_multiclass``,
  ``confusion_counts``, ``prediction_distribution``, ``label_weights``) is
  :mod:`rateopt._compiler._confusion`, re-exported by :mod:`rateopt._compiler`;
* :class:`~rateopt.metrics.MacroF1` is in :mod:`rateopt.metrics`; the objective
  names in :mod:`rateopt.goals` (``MULTICLASS_OBJECTIVES``).
"""

from __future__ import annotations

from rateopt._compiler._confusion import (
    MulticlassCompiled,
    compile_multiclass,
    confusion_counts,
    is_multiclass_data,
    label_weights,
    prediction_distribution,
)
from rateopt._compiler._problem import MulticlassProblem
from rateopt.metrics import MacroF1

__all__ = ["MulticlassProblem", "MulticlassCompiled", "MacroF1", "is_multiclass_data", "compile_multiclass",
           "confusion_counts", "label_weights", "prediction_distribution"]
