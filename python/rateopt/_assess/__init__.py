"""Assessment tables: metrics of predictions on every group, with intervals (:func:`rateopt.assess`).

Modules of one job each: ``_inputs`` (labels, predictions and weights in one
form for two and K classes), ``_cells`` (groups and their intersections),
``_metrics`` (names, rate-language functions and callables), ``_intervals``
(Clopper–Pearson, effective counts, the bootstrap), ``_table`` (the
:class:`Assessment` result) and ``_api`` (:func:`assess`).
"""

from ._api import assess
from ._metrics import CLASS_RATE_NAMES, RATE_NAMES
from ._table import Assessment

__all__ = ["assess", "Assessment", "RATE_NAMES", "CLASS_RATE_NAMES"]
