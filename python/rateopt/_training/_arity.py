"""The number of classes of a training run, as one object: :data:`TWO_CLASSES` or a :class:`KClasses`.

What differs between a two-class and a K-class run, past the statistics the
compiler chooses (atoms or confusion cells), is asked of this object instead
of tested where it is needed: the game spec carries it (``spec.arity``) and
:class:`~rateopt.TrainResult` keeps it (``result.arity``). It gives

* the model player's parameter shapes (``theta`` (d,) or (d, K), a float or
  (K,) bias) and the records' weight shape ((d,) or (K, d));
* the training parameters' method defaults (``Game.defaults`` or
  ``Game.class_defaults``), the refusals, the multipliers' default step, the
  core loop's refusal and the objective the games linearize (macro-F1);
* the classifier factories of recorded iterates and their mixtures, and the
  expected evaluation of a classifier by a problem;
* the result file's arity fields (``metadata.classes``, the weights' rank).

:func:`arity_of` (of a problem) and :func:`arity_of_classes` (of a result's
class labels) are the only places that test the arity.
"""

from __future__ import annotations

import numpy as np

from .._compiler import is_class_problem
from .._postprocess._cell_map import problem_cell_map
from .._postprocess._class_mixture import thresholded_from_iterates
from .._postprocess._mixture import fit_thresholded_mixture
from .._predictors._archive import class_labels_from_meta, class_labels_meta
from .._predictors._linear import LinearClassifier, StochasticClassifier
from .._predictors._multiclass import MulticlassClassifier
from .._utils._archive import damaged
from ..exceptions import RateoptError

__all__ = ["Arity", "CLASS_PROXIES", "KClasses", "TWO_CLASSES", "TwoClasses", "arity_of", "arity_of_classes",
           "arity_from_file"]

#: The training parameter ``proxy`` for K classes: its core proxy (:data:`rateopt.core.MULTICLASS_PROXIES`).
CLASS_PROXIES = {"logistic": "softmax", "hinge": "hinge"}


class Arity:
    """What a training run needs to know about its number of classes (see the module docstring).

    Attributes
    ----------
    classes : ndarray of shape (K,) or None
        The class labels of a K-class run (None for two classes, whose
        decisions are 0/1).
    n_outputs : int
        Score columns of the linear model: 1, or K.
    """

    classes = None
    n_outputs = 1

    def player_zeros(self, n_features):
        """The model player's starting ``(theta, bias)``: zeros of its parameter shapes."""
        raise NotImplementedError

    def weight_shape(self, n_features):
        """The shape of one recorded iterate's weights."""
        raise NotImplementedError

    def game_defaults(self, game):
        """The method defaults of ``game`` for this arity (a mapping of parameter names to values)."""
        raise NotImplementedError

    def check_proxy(self, proxy):
        """Refuse a ``proxy`` this arity's pass does not have (None: the game's default)."""

    def eta_lambda(self, game, spec, settings):
        """The multipliers' default step of ``game`` on ``spec``."""
        raise NotImplementedError

    def core_loop_refusal(self):
        """Why the compiled core loop cannot run this arity (None: it can)."""
        return None

    def linearized_objective(self, spec):
        """The non-linear objective the games linearize (a K-class macro-F1), or None."""
        return None

    def mixture(self, weights, biases, probabilities, *, feature_map=None, feature_names=None):
        """The randomized classifier of recorded iterates ``weights`` (n, ...) with these probabilities."""
        raise NotImplementedError

    def iterate(self, weights, biases, *, feature_map=None, feature_names=None):
        """The deterministic classifier of one recorded iterate (``weights`` of :meth:`weight_shape`)."""
        raise NotImplementedError

    def expected_evaluation(self, problem, classifier):
        """The problem's values of a classifier's expected decisions (its ``predict_proba``) on its datasets."""
        raise NotImplementedError

    def iterates_scorer(self, weights, biases, *, feature_map=None, feature_names=None):
        """Every recorded iterate as one scorer (two classes; K-class iterates are scored per class)."""
        raise RateoptError("the iterates of a K-class run are scored per class: use thresholded() or "
                           "solution_of_iterate(t)")

    def thresholded(self, result, problem, *, n_bins, epsilon, group_blind):
        """The thresholded solution of ``result`` on its training ``problem`` (``TrainResult.thresholded``)."""
        raise NotImplementedError

    def file_meta(self):
        """The result file's metadata fields of this arity."""
        return {}

    def check_file_weights(self, W, path):
        """A result file's stacked weights (n_recorded, ...), checked against the score columns."""
        return W

    @property
    def weights_ndim(self):
        """The rank of a result's stacked weights (n_recorded, ...)."""
        return 1 + len(self.weight_shape(1))


class TwoClasses(Arity):
    """Two classes: one score per row, 0/1 decisions, atom rates (the default of every game)."""

    def player_zeros(self, n_features):
        return np.zeros(n_features), 0.0

    def weight_shape(self, n_features):
        return (n_features,)

    def game_defaults(self, game):
        return game.defaults

    def eta_lambda(self, game, spec, settings):
        return game.default_eta_lambda(spec, settings)

    def mixture(self, weights, biases, probabilities, *, feature_map=None, feature_names=None):
        return StochasticClassifier(weights, biases, probabilities, feature_map=feature_map,
                                    feature_names=feature_names)

    def iterate(self, weights, biases, *, feature_map=None, feature_names=None):
        return LinearClassifier(weights, biases, feature_map=feature_map, feature_names=feature_names)

    def iterates_scorer(self, weights, biases, *, feature_map=None, feature_names=None):
        T = weights.shape[0]
        return StochasticClassifier(weights, biases, np.full(T, 1.0 / T), feature_map=feature_map,
                                    feature_names=feature_names)

    def thresholded(self, result, problem, *, n_bins, epsilon, group_blind):
        if group_blind not in (True, "auto"):
            raise ValueError("group_blind=False is for K classes: a two-class thresholded solution needs no groups "
                             "unless the groups are features")
        features = {name: ds.X for name, ds in problem.datasets.items()}
        mixture, _ = fit_thresholded_mixture(problem.compiled, result.threshold_candidates(epsilon), features,
                                             n_bins=n_bins, epsilon=epsilon)
        return mixture

    def expected_evaluation(self, problem, classifier):
        # the positive decision's probability, per dataset
        return problem.evaluate({name: classifier.predict_proba(problem.datasets[name].X)[:, 1]
                                 for name in problem.compiled.datasets}, kind="probabilities")

    def __repr__(self):
        return "TwoClasses()"


class KClasses(Arity):
    """K classes: K scores per row, class decisions, confusion counts of cells.

    Parameters
    ----------
    classes : array-like of shape (K,)
        The class labels, in the order of the score columns.
    """

    def __init__(self, classes):
        self.classes = np.asarray(classes)
        self.n_outputs = len(self.classes)

    def player_zeros(self, n_features):
        return np.zeros((n_features, self.n_outputs)), np.zeros(self.n_outputs)

    def weight_shape(self, n_features):
        return (self.n_outputs, n_features)

    def game_defaults(self, game):
        if game.class_defaults is None:
            raise ValueError(f"method={game.name!r} trains two-class problems only; K-class problems train with "
                             "a game that has K-class defaults ('proxy-swap', 'proxy-external', 'unconstrained')")
        return game.class_defaults

    def check_proxy(self, proxy):
        if proxy is not None and proxy not in CLASS_PROXIES:
            raise ValueError(f"proxy={proxy!r} is not available for K-class problems: the K-class proxies are "
                             f"{sorted(CLASS_PROXIES)}")

    def eta_lambda(self, game, spec, settings):
        return game.class_eta / spec.constraint_bound() if spec.n_constraints else 0.0

    def core_loop_refusal(self):
        return ("the problem is K-class (the core loop runs the two-class kernel; K-class iterations run the "
                "K-column pass in the Python driver)")

    def linearized_objective(self, spec):
        return spec.metric

    def mixture(self, weights, biases, probabilities, *, feature_map=None, feature_names=None):
        return MulticlassClassifier(weights, biases, probabilities, classes=self.classes, feature_map=feature_map,
                                    feature_names=feature_names)

    def iterate(self, weights, biases, *, feature_map=None, feature_names=None):
        return self.mixture(np.asarray(weights)[None], np.asarray(biases)[None], np.ones(1),
                            feature_map=feature_map, feature_names=feature_names)

    def expected_evaluation(self, problem, classifier):
        return problem.evaluate(classifier.predict_proba(problem.dataset.X))

    def thresholded(self, result, problem, *, n_bins, epsilon, group_blind):
        if group_blind not in (True, False, "auto"):
            raise ValueError(f"group_blind must be True, False or 'auto', got {group_blind!r}")
        cell_map = None
        if group_blind == "auto":
            cell_map = None if result.feature_map is not None else problem_cell_map(problem)
            group_blind = cell_map is None
        best = int(np.flatnonzero(result.mixture("best"))[0])
        include = list(result.shrink(epsilon).support)
        settings = result.settings
        warmup = int(round((settings.get("objective_warmup") or 0.0) * int(settings.get("n_iter") or 0)))
        if warmup > 0:  # the objective warm-up's last iterate (docs/defaults.md, K classes)
            include += [int(t) for t in np.flatnonzero(result.iterations == warmup - 1)[:1]]

        def fit(rules=("offsets", "plugin")):
            return thresholded_from_iterates(problem, result.weights, result.biases, best=best, include=include,
                                             classes=self.classes, feature_map=result.feature_map,
                                             feature_names=result.feature_names, epsilon=epsilon,
                                             group_blind=bool(group_blind), cell_map=cell_map, rules=rules)[:2]

        clf, info = fit()
        if cell_map is not None and any(k != "offsets" for k in clf.rule.kinds):
            # a plug-in rule does not fold into a linear model: the offsets rules alone, when they do as well
            # as the plug-in of the best iterate (the floor the solution keeps)
            offsets_clf, offsets_info = fit(("offsets",))
            if offsets_info.max_violation <= info.max_violation and (
                    info.reference_plugin_objective is None
                    or offsets_info.objective <= info.reference_plugin_objective):
                clf = offsets_clf
        if not group_blind and (cell_map is None or any(k != "offsets" for k in clf.rule.kinds)):
            return clf  # per-cell rules: the cells from the features (cell_map), else from the groups
        W, b = clf.rule.linear_models(clf.scorer.coefs_, clf.scorer.intercepts_, cell_map)
        return self.mixture(W, b, clf.rule.probabilities, feature_map=result.feature_map,
                            feature_names=result.feature_names)

    def file_meta(self):
        return {"classes": class_labels_meta(self.classes)}

    def check_file_weights(self, W, path):
        if W.shape[1] != self.n_outputs:
            raise damaged(path, "weights", f"has shape {W.shape}, expected (n_recorded, {self.n_outputs}, "
                                           "n_features)")
        return W

    def __repr__(self):
        return f"KClasses({self.classes.tolist()!r})"


#: The two-class arity (it holds nothing: one instance serves every run).
TWO_CLASSES = TwoClasses()


def arity_of(problem):
    """The arity of a compiled problem: :class:`KClasses` for a problem on a ClassDataset, else two classes."""
    return KClasses(problem.dataset.classes) if is_class_problem(problem) else TWO_CLASSES


def arity_of_classes(classes):
    """The arity of a result's class labels (None: two classes)."""
    return TWO_CLASSES if classes is None else KClasses(classes)


def arity_from_file(meta, path):
    """The arity a result file records (``metadata.classes``; files without it are two-class results)."""
    classes = meta.get("classes")
    return arity_of_classes(None if classes is None else class_labels_from_meta(classes, path))

