"""The compiler: the frozen compiled forms, :class:`~rateopt.Problem` and goals files.

A problem's dataset type chooses its statistics: two-class atoms
(:mod:`._compile`, :class:`CompiledProblem`) or K-class confusion counts of
cells (:mod:`._confusion`, :class:`MulticlassCompiled`); both compile the
objective and constraints to an affine map from the statistics.
:func:`is_class_problem` is the one arity predicate for code above this layer.

It imports the goals, metrics, the rate language and below (docs/architecture.md, "Layers").
"""

from rateopt._compiler._compiled import CompiledProblem, Evaluation
from rateopt._compiler._confusion import (
    MulticlassCompiled,
    compile_multiclass,
    confusion_counts,
    is_multiclass_data,
    label_weights,
    prediction_distribution,
)
from rateopt._compiler._problem import MulticlassProblem, Problem, is_class_problem

__all__ = ["Problem", "MulticlassProblem", "is_class_problem", "CompiledProblem", "Evaluation",
           "MulticlassCompiled", "compile_multiclass", "confusion_counts", "is_multiclass_data", "label_weights",
           "prediction_distribution"]
