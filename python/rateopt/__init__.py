"""rateopt: train classifiers whose prediction rates meet real-world goals.

State goals as rates (:class:`Dataset`, contexts and subsets, rate functions,
:mod:`rateopt.goals`), compile them into a :class:`Problem`, and train with
:func:`train` (or the scikit-learn estimator :class:`RateConstrainedClassifier`).
The compiled core lives in the private module :mod:`rateopt._core` and is
reached through :mod:`rateopt.core`.

``import rateopt`` loads neither scikit-learn, pandas, matplotlib, scipy.stats,
scipy.optimize nor highspy: the names of ``_LAZY`` (the scikit-learn estimators,
which subclass its classes, and the functions that build or read them) are
imported on first access (PEP 562), and the modules that solve with scipy or
HiGHS import them when they solve.
"""

import importlib as _importlib
import typing as _typing
import warnings as _warnings

from . import core, exceptions, games, goals, metrics, oracles
from ._predictors._linear import LinearClassifier, RampClassifier, StochasticClassifier
from .core._config import get_config, show_config
from ._predictors._boosted_mixture import BoostedMixture, ClassBoostedMixture
from ._predictors._ensembles import EstimatorMixture
from ._methods._group_opt import (
    FoldedObjective,
    GroupOptResult,
    fold_constraints,
    group_opt,
    group_opt_constants,
    minimax_group_loss,
)
from ._language._data import Context, Dataset
from ._language._classes import (
    ClassDataset,
    class_false_positive_rate,
    class_prediction_rate,
    class_recall,
    confusion_rate,
    multiclass_accuracy,
    multiclass_error_rate,
)
from ._predictors._multiclass import MulticlassClassifier
from ._postprocess._certify import Certificate, GoalBound
from ._postprocess._rule import ThresholdRule
from ._predictors._boosting import BoostingModel
from ._predictors._specs import KernelModel, LinearModel
from ._compiler import CompiledProblem, Evaluation, MulticlassProblem, Problem
from .metrics import MacroF1
from ._language._rates import (
    Constraint,
    Expression,
    accuracy,
    baseline_accuracy,
    baseline_positive_rate,
    churn_rate,
    equal,
    error_rate,
    false_negative_count,
    false_negative_proportion,
    false_negative_rate,
    false_positive_count,
    false_positive_proportion,
    false_positive_rate,
    loss_count,
    loss_only_churn_rate,
    loss_rate,
    negative_prediction_count,
    negative_prediction_rate,
    positive_prediction_count,
    positive_prediction_rate,
    prevalence,
    sum,
    true_negative_count,
    true_negative_proportion,
    true_negative_rate,
    true_positive_count,
    true_positive_proportion,
    true_positive_rate,
    win_count,
    win_rate,
)
from ._solutions._result import FeasibilityReport, TrainResult
from ._solutions._shrink import ShrinkResult, best_iterate
from ._methods._ramp import ramp_mm
from ._methods._ramp_result import RampMMResult
from ._methods._sweep import SweepResult, sweep
from ._assess import Assessment, assess
from ._group_rates import group_rates
from ._train import train
from ._version import __version__
from .core._kernel_block import kernel_block
from .core import AtomTable, FeatureMatrix, rate_kernel

#: Public names loaded on first access (module ``__getattr__``), each with the module that defines it: their
#: modules import scikit-learn at the top. A new lazily loaded public name goes here, in ``__all__`` and in the
#: ``TYPE_CHECKING`` block below (what type checkers and IDEs read).
_LAZY = {
    "RateConstrainedClassifier": "._estimator",
    "ThresholdClassifier": "._threshold_classifier",
    "load": "._io",
    "make_groups_dataset": "._demo",
}

if _typing.TYPE_CHECKING:
    from ._demo import make_groups_dataset
    from ._estimator import RateConstrainedClassifier
    from ._io import load
    from ._threshold_classifier import ThresholdClassifier

__all__ = [
    "__version__",
    "core",
    "exceptions",
    "goals",
    "games",
    "metrics",
    "oracles",
    "show_config",
    "get_config",
    "make_groups_dataset",
    # data and the rate language
    "Dataset",
    "ClassDataset",
    "class_prediction_rate",
    "class_recall",
    "class_false_positive_rate",
    "confusion_rate",
    "multiclass_accuracy",
    "multiclass_error_rate",
    "MacroF1",
    "MulticlassProblem",
    "MulticlassClassifier",
    "Context",
    "Expression",
    "Constraint",
    "Problem",
    "CompiledProblem",
    "Evaluation",
    "equal",
    "sum",
    "positive_prediction_rate",
    "negative_prediction_rate",
    "true_positive_rate",
    "false_negative_rate",
    "false_positive_rate",
    "true_negative_rate",
    "error_rate",
    "accuracy",
    "true_positive_proportion",
    "false_positive_proportion",
    "true_negative_proportion",
    "false_negative_proportion",
    "positive_prediction_count",
    "negative_prediction_count",
    "true_positive_count",
    "false_positive_count",
    "true_negative_count",
    "false_negative_count",
    "churn_rate",
    "loss_only_churn_rate",
    "win_rate",
    "loss_rate",
    "win_count",
    "loss_count",
    "prevalence",
    "baseline_positive_rate",
    "baseline_accuracy",
    # training
    "LinearModel",
    "KernelModel",
    "BoostingModel",
    "kernel_block",
    "train",
    "TrainResult",
    "FeasibilityReport",
    "ShrinkResult",
    "best_iterate",
    "LinearClassifier",
    "StochasticClassifier",
    "EstimatorMixture",
    "BoostedMixture",
    "ClassBoostedMixture",
    "ThresholdClassifier",
    "ThresholdRule",
    "Certificate",
    "GoalBound",
    "load",
    "group_opt",
    "fold_constraints",
    "FoldedObjective",
    "group_opt_constants",
    "GroupOptResult",
    "minimax_group_loss",
    "RateConstrainedClassifier",
    # the core
    "FeatureMatrix",
    "AtomTable",
    "rate_kernel",
    # Goh et al. (2016): ramp-loss dataset constraints by majorization-minimization
    "ramp_mm",
    "RampMMResult",
    "RampClassifier",
    # per-group rates and slack sweeps (reports and plots: rateopt.report, rateopt.plot, rateopt.cli)
    "group_rates",
    "assess",
    "Assessment",
    "sweep",
    "SweepResult",
]


def __getattr__(name):
    """The lazily loaded names of ``_LAZY`` (imported and cached on first access), and deprecated names."""
    if name in _LAZY:
        value = getattr(_importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value  # the next access is a plain attribute lookup
        return value
    if name == "MulticlassResult":
        _warnings.warn("rateopt.MulticlassResult is deprecated and will be removed in the next release: K-class "
                      "training returns a rateopt.TrainResult", DeprecationWarning, stacklevel=2)
        return TrainResult
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    """The module's attributes, the lazily loaded names included (before their first access too)."""
    return sorted(set(globals()) | set(_LAZY))
