"""K-class training: the proxy-Lagrangian games on K-class models, and the result they return.

It sits between the parameter tables and the driver (:mod:`rateopt._train`
dispatches a :class:`~rateopt.MulticlassProblem` here): ``_train``
(:func:`train_multiclass`, the loop over one fused K-column core pass per
iteration) and ``_result`` (:class:`MulticlassResult`: the iterates, the m+1
shrink, the best iterate).
"""

from ._result import MULTICLASS_SOLUTIONS, MulticlassResult
from ._train import MULTICLASS_DEFAULTS, MULTICLASS_METHODS, train_multiclass

__all__ = ["MULTICLASS_DEFAULTS", "MULTICLASS_METHODS", "MULTICLASS_SOLUTIONS", "MulticlassResult",
           "train_multiclass"]
