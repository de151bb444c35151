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
* the result file's arity fields (``metadata.classes``, the weights' rank);
* where labelled rows enter (the estimator, :class:`~rateopt.ThresholdClassifier`,
  the command line): the training dataset and objective of the rows, the
  refusals, and ``ThresholdClassifier``'s rule (threshold rules on one score,
  or plug-in rules on class probabilities: its inputs, its LP, its file field);
* the expected and drawn decisions' shape (a positive column, or one column per
  class) and the command line's goal checks, refusals and per-class columns.

:func:`arity_of` (of a problem), :func:`arity_of_classes` (of a result's
class labels) and :func:`arity_of_labels` (of an estimator's or a table's
labels) are the only places that test the arity.
"""

from __future__ import annotations

import numpy as np

from .._compiler import is_class_problem
from .._compiler._problem import Problem
from .._language._classes import ClassDataset
from .._language._data import Dataset
from .._postprocess._cell_map import problem_cell_map
from .._postprocess._class_mixture import thresholded_from_iterates
from .._postprocess._mixture import AUTO_BINS, fit_thresholded_mixture
from .._postprocess._plugin import PlugInRule, fit_plugin_rule
from .._postprocess._rule import cell_codes, fit_threshold_rule
from .._predictors._archive import class_labels_from_meta, class_labels_meta
from .._predictors._boosted_mixture import booster_of, models_mixture
from .._predictors._linear import LinearClassifier, StochasticClassifier
from .._predictors._multiclass import MulticlassClassifier
from .._utils._archive import damaged
from ..exceptions import RateoptError
from ..goals import MULTICLASS_OBJECTIVES, OBJECTIVES
from ..goals import objective as objective_on
from ..goals._multiclass import ClassGoal

__all__ = ["Arity", "CLASS_PROXIES", "KClasses", "TWO_CLASSES", "TwoClasses", "arity_of", "arity_of_classes",
           "arity_of_labels", "arity_from_file", "check_objective_and_goals"]

#: The training parameter ``proxy`` for K classes: its core proxy (:data:`rateopt.core.MULTICLASS_PROXIES`).
CLASS_PROXIES = {"logistic": "softmax", "hinge": "hinge"}


class Arity:
    """What a training run needs to know about its number of classes (see the module docstring).

    A method without a two-class override holds what two classes do; K classes
    override it.

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
    #: Whether the decisions are classes among K (the estimator's ``multiclass_``).
    multiclass = False
    #: ``ThresholdClassifier``'s rule (its saved file's ``rule`` field): threshold rules on one score per row.
    rule_kind = "threshold"
    #: A fitted rule's violation above this warns (the threshold LP reports an exact 0 when the goals can be met).
    rule_tolerance = 0.0
    #: What a rule that needs the groups suggests when they are missing.
    rule_without_groups = " (fit with group_blind=True for a rule that needs no groups)"
    #: Options of ``rateopt fit`` and ``rateopt evaluate`` this arity does not support (their flags).
    unsupported_fit = ()
    unsupported_evaluate = ()
    #: The heading of ``rateopt evaluate``'s per-group table.
    table_heading = "per-group rates"
    #: The builder of this arity's game spec from a compiled problem (registered by its spec module).
    spec_builder = None

    def game_spec(self, problem):
        """The validated game spec of a compiled ``problem`` of this arity.

        The spec modules register their builders (``TwoClasses.spec_builder`` in
        ``_spec``, ``KClasses.spec_builder`` in ``_class_spec``; they import this
        module, so it cannot import them).
        """
        return self.spec_builder(problem)

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

    def model_kind_refusal(self, kind):
        """Why a model kind (:mod:`rateopt._training._model_kind`) cannot train this arity (None: it can)."""
        return None

    def constant_biases(self):
        """The biases of the constant rules (zero weights): always negative (-1), then always positive (+1)."""
        return [-1.0, 1.0]

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

    def default_kind(self, result, problem):
        """``result.default_kind(problem)`` for two classes: the thresholded solution for the prefixes of one
        booster on a problem with goals (each prefix's threshold rule re-fitted), else m-stochastic."""
        if (problem is None or not problem.compiled.n_constraints or result.models is None
                or booster_of(result.models) is None):
            return "m-stochastic"
        return "thresholded"

    def file_meta(self):
        """The result file's metadata fields of this arity."""
        return {}

    def check_file_weights(self, W, path):
        """A result file's stacked weights (n_recorded, ...), checked against the score columns."""
        return W

    def check_file_class_objective(self, path, field):
        """Refuse a saved K-class objective (macro-F1) in a result of this arity."""
        raise damaged(path, field, "is a K-class objective in a two-class result (no metadata.classes)")

    def labelled_dataset(self, X, y, *, labels=None, weights=None, groups=None, baseline=None, name="train"):
        """The dataset of rows ``X`` (or one score per row) with labels ``y``.

        ``labels``: the two classes, ``labels[1]`` positive (None: ``y`` is 0/1
        already); K classes take their own ``classes``.
        """
        X = X[:, None] if getattr(X, "ndim", 2) == 1 else X
        y01 = y if labels is None else self.encoded_labels(y, labels)
        return Dataset(X, y=y01, weights=weights, groups=groups, baseline=baseline, name=name)

    def encoded_labels(self, y, labels):
        """Labels ``y`` as this arity's datasets read them: 0/1 for two classes (``labels[1]`` positive)."""
        return (np.asarray(y) == labels[1]).astype(np.int64)

    def objective_of(self, objective, dataset):
        """The problem's objective on ``dataset``: a two-class objective name becomes its expression."""
        return objective_on(objective, dataset)

    def check_extra(self, baseline, extra_datasets, what):
        """Refuse a baseline or extra datasets where ``what`` (e.g. "training") takes none."""

    def rule_inputs(self, clf, X, where="X"):
        """``ThresholdClassifier``'s inputs of rows ``X``: the scores (n,)."""
        return clf._scores(X, where)

    def check_rule_fit(self, clf):
        """Refuse the ``ThresholdClassifier`` parameters this arity's rule does not take."""

    def fit_rule(self, clf, inputs, y, groups, sample_weight, baseline, extra_datasets):
        """Solve ``ThresholdClassifier``'s LP; set ``problem_``, ``rule_``, the cells and ``training_``.

        Returns the rule's largest violation of the goals beyond ``epsilon``.
        """
        n = inputs.shape[0]
        train = self.labelled_dataset(inputs, y, labels=clf.classes_, weights=sample_weight, groups=groups,
                                      baseline=baseline)
        datasets = {"train": train}
        scored = {"train": inputs}
        for role, ds in (extra_datasets or {}).items():
            if role == "train":
                raise ValueError("extra_datasets must not use the role 'train'")
            datasets[role] = ds
            scored[ds.name] = clf._scores(ds.X, where=f"extra_datasets[{role!r}].X")
        clf.problem_ = Problem(objective=objective_on(clf.objective, train), constraints=list(clf.goals),
                               datasets=datasets)
        columns = clf._cell_columns(train.group_names)
        by_name = {ds.name: ds for ds in clf.problem_.datasets.values()}
        codes, cells = cell_codes(train.groups, columns, where="groups", factorized=train.group_factorization)
        all_codes = {"train": codes if codes is not None else np.zeros(n, dtype=np.int64)}
        for name in clf.problem_.compiled.datasets:
            if name != "train":
                c, _ = cell_codes(by_name[name].groups, columns, cells, where=f"dataset {name!r}'s groups",
                                  factorized=getattr(by_name[name], "group_factorization", None))
                all_codes[name] = c if c is not None else np.zeros(by_name[name].n_samples, dtype=np.int64)
        clf.rule_, solution = fit_threshold_rule(
            clf.problem_.compiled, {k: scored[k] for k in clf.problem_.compiled.datasets},
            {k: all_codes[k] for k in clf.problem_.compiled.datasets}, cells, columns,
            n_bins=clf.n_bins, epsilon=float(clf.epsilon))
        clf.plugin_ = None
        clf.cell_columns_, clf.cells_ = clf.rule_.columns, clf.rule_.cells
        clf.training_ = clf.problem_.evaluate_atom_rates(solution.atom_rates)
        return float(solution.slack)

    def rule_plugin(self, rule):
        """``ThresholdClassifier.plugin_`` of a fitted rule: None (a K-class rule itself, kept for one release)."""
        return None

    def decisions(self, P):
        """Decisions in this arity's shape from their class distribution ``P`` (n, n_classes).

        Expected decisions (``predict_proba``) or drawn ones (one-hot): the
        positive column (n,) for two classes, ``P`` itself for K.
        """
        return np.asarray(P)[:, 1]

    def evaluate_decisions(self, problem, decisions):
        """The problem's values of expected decisions ``{dataset name: decisions}`` (of :meth:`decisions`)."""
        return problem.evaluate(decisions, kind="probabilities")

    def goals_refusal(self, goals, objective, labels):
        """Why ``goals`` or ``objective`` do not apply to this arity: None when they do.

        Returns ``(i, reason)``: the first goal ``i`` that does not apply (None:
        the objective) and the rest of the message after the goal's name.
        """
        for i, g in enumerate(goals):
            if isinstance(g, ClassGoal):
                return i, (" is a K-class goal, but the label column has two values: use a two-class recipe (e.g. "
                           "demographic_parity), or a label of more than two classes")
        if isinstance(objective, str) and objective not in OBJECTIVES and objective in MULTICLASS_OBJECTIVES:
            return None, (f": objective {objective!r} is a K-class objective, but the label column has two values; "
                          f"two-class objectives: {sorted(OBJECTIVES)}")
        return None

    def probability_header(self, classes, proba):
        """``rateopt predict``'s probability columns (``proba``: asked for): ``proba``, the positive class's."""
        return ["proba"] if proba else []

    def probability_columns(self, P, classes):
        """The probability columns of :meth:`probability_header` of the decision distribution ``P`` (n, n_classes)."""
        return {"proba": P[:, 1]}

    def classes_note(self, classes):
        """What ``rateopt evaluate``'s first line says about the classes (nothing for two)."""
        return ""

    def model_classes_differ(self, model_classes, classes):
        """Whether a saved model's ``classes_`` name other classes than the labels ``classes`` (two-class
        models name theirs by position, 0 and 1: never)."""
        return False

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
        scorer = result.threshold_candidates(epsilon)
        kept = None
        if result.models is not None:  # prefixes of one booster
            # the run kept its candidates' training score bins while it grew the trees: no second pass
            kept = getattr(scorer, "kept_training_scores", None) if problem is result.training_problem else None
            n_bins = AUTO_BINS if n_bins == "auto" else n_bins  # then the support re-fitted exactly
        mixture, sol = fit_thresholded_mixture(problem.compiled, scorer, features, n_bins=n_bins, epsilon=epsilon,
                                               scores=None if kept is None else kept())
        if result.models is not None and problem is result.training_problem:
            return _m_stochastic_floor(result, mixture, sol, epsilon)
        return mixture

    def expected_evaluation(self, problem, classifier):
        # the positive decision's probability, per dataset
        return problem.evaluate({name: classifier.predict_proba(problem.datasets[name].X)[:, 1]
                                 for name in problem.compiled.datasets}, kind="probabilities")

    def __repr__(self):
        return "TwoClasses()"


def _m_stochastic_floor(result, mixture, sol, epsilon):
    """A boosted run's thresholded solution, or its m-stochastic solution where that one is better.

    The thresholded solution's candidates are a few prefixes fixed before
    training (``TrainResult.threshold_candidates``), which need not hold the
    m-stochastic support. Both solutions' expected training atom rates are
    known without scoring a row (the LP's, and the mixture of the recorded
    iterates'): where the m-stochastic solution violates the goals by no more
    (beyond ``epsilon``) and has a smaller objective, it is returned as a
    thresholded mixture of its prefixes, each with its own threshold 0, so
    that on the training data the default solution is never worse than the
    m-stochastic one.
    """
    rmap = result.rate_map
    r_thr, r_ms = sol.atom_rates, result.solution_atom_rates("m-stochastic", epsilon=epsilon)
    worst = [max(0.0, float(rmap.constraints([r])[0].max(initial=-np.inf)) - epsilon) for r in (r_thr, r_ms)]
    if not (worst[1] <= worst[0] + 1e-12 and rmap.objective(r_ms) < rmap.objective(r_thr) - 1e-12):
        return mixture
    support = np.asarray(result.shrink(epsilon).support, dtype=np.int64)
    p = result.mixture("m-stochastic", epsilon=epsilon)[support]
    scorer = models_mixture([result.models[t] for t in support], p / p.sum(), result.feature_names)
    k = support.shape[0]
    # each prefix positive iff its score >= 0: bins [-1, 0) (and below, clipped) and [0, inf)
    return type(mixture)(scorer, scorer.probabilities_, np.arange(0, 2 * k + 1, 2), np.tile([-1.0, 0.0], k),
                         np.tile([0.0, 1.0], k), support)


class KClasses(Arity):
    """K classes: K scores per row, class decisions, confusion counts of cells.

    Parameters
    ----------
    classes : array-like of shape (K,)
        The class labels, in the order of the score columns.
    """

    multiclass = True
    rule_kind = "plugin"
    rule_tolerance = 1e-9  # the column generation's sums carry round-off
    rule_without_groups = ""  # K-class rules are per group: nothing to suggest
    unsupported_fit = ("--postprocess", "--sweep", "--certify", "--compare-unconstrained", "--baseline")
    unsupported_evaluate = ("--certify",)
    table_heading = "per-group predicted class proportions and per-class recall"

    def __init__(self, classes):
        self.classes = np.asarray(classes)
        self.n_outputs = len(self.classes)

    def labelled_dataset(self, X, y, *, labels=None, weights=None, groups=None, baseline=None, name="train"):
        if baseline is not None:
            raise ValueError("K-class rules take no baseline")
        return ClassDataset(X, y, weights=weights, groups=groups, classes=self.classes, name=name)

    def encoded_labels(self, y, labels):
        return y

    def objective_of(self, objective, dataset):
        return objective

    def check_extra(self, baseline, extra_datasets, what):
        if baseline is not None or extra_datasets:
            raise ValueError(f"K-class {what} takes no baseline or extra_datasets")

    def rule_inputs(self, clf, X, where="X"):
        """The class probabilities (n, K)."""
        return clf._class_probabilities(X, where)

    def check_rule_fit(self, clf):
        if clf.group_blind:
            raise ValueError("K-class post-processing needs the groups (its rules are per group): "
                             "group_blind=True is for two classes")
        if clf.objective is not None and not isinstance(clf.objective, str):
            raise ValueError(f"K-class post-processing takes a named objective {sorted(MULTICLASS_OBJECTIVES)}")

    def fit_rule(self, clf, inputs, y, groups, sample_weight, baseline, extra_datasets):
        n = y.shape[0]
        train = self.labelled_dataset(inputs, y, weights=sample_weight, groups=groups, baseline=baseline)
        clf.problem_ = Problem(objective=clf.objective, constraints=list(clf.goals), datasets=train,
                               label_probabilities=inputs)
        columns = clf._cell_columns(train.group_names)
        codes, cells = cell_codes(train.groups, columns, where="groups",
                                  factorized=getattr(train, "group_factorization", None))
        codes = np.zeros(n, dtype=np.int64) if codes is None else codes
        pattern = clf.problem_.compiled.cells
        # a rule's cells must decide every subset of the goals: one membership pattern per cell
        first = np.full(len(cells), -1, dtype=np.int64)
        first[codes[::-1]] = pattern[::-1]
        if np.any(pattern != first[codes]):
            raise ValueError(f"cell_columns {columns!r} do not determine the goals' groups: include every group "
                             "column the goals use")
        fit = fit_plugin_rule(clf.problem_, inputs, epsilon=float(clf.epsilon))
        clf.rule_ = clf.plugin_ = PlugInRule(costs=fit.rule.costs[:, first], probabilities=fit.rule.probabilities)
        clf.cells_, clf.cell_columns_ = cells, tuple(columns)
        clf.training_ = clf.problem_.evaluate(clf.rule_.distribution(inputs, codes))
        return float(fit.max_violation)

    def rule_plugin(self, rule):
        return rule

    def decisions(self, P):
        return np.asarray(P)

    def evaluate_decisions(self, problem, decisions):
        # A K-class problem is measured on its training dataset only (goals_refusal below refuses others).
        return problem.evaluate(decisions["train"])

    def goals_refusal(self, goals, objective, labels):
        for i, g in enumerate(goals):
            if not isinstance(g, ClassGoal):
                return i, (f" is a two-class goal, but the label column has {len(labels)} classes {labels!r}: use a "
                           "K-class recipe (multiclass_demographic_parity, multiclass_equal_opportunity, "
                           "multiclass_equalized_odds, class_prior_matching, class_recall_floor, "
                           "class_precision_floor)")
            if g.dataset != "train":
                return i, (f": a K-class problem is measured on the training file only; goals on dataset role "
                           f"{g.dataset!r} are not supported")
        if objective is not None and (not isinstance(objective, str) or objective not in MULTICLASS_OBJECTIVES):
            return None, (f": objective {objective!r} is not a K-class objective; choose one of "
                          f"{sorted(MULTICLASS_OBJECTIVES)}")
        return None

    def probability_header(self, classes, proba):
        """One probability column per class (``proba_<class>``), always."""
        return [f"proba_{c}" for c in list(classes)]

    def probability_columns(self, P, classes):
        return {f"proba_{c}": P[:, k] for k, c in enumerate(list(classes))}

    def classes_note(self, classes):
        return f", {len(classes)} classes"

    def model_classes_differ(self, model_classes, classes):
        return [str(c) for c in model_classes] != [str(c) for c in classes]

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

    def model_kind_refusal(self, kind):
        if not kind.trains_k_classes:
            return (f"Only binary classification is supported with {kind.name} (it trains two-class problems "
                    "only); K-class goals train a LinearModel or a KernelModel")
        return None

    def constant_biases(self):
        """Each constant class ``k``: the ``k``-th unit vector."""
        return list(np.eye(self.n_outputs))

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

    def default_kind(self, result, problem):
        """The thresholded solution on the training problem when it has goals and a linear objective, and the
        iterates are linear or kernel models; else m-stochastic."""
        if (result.models is not None or problem is None or getattr(problem.compiled, "objective", None) is None
                or not problem.compiled.n_constraints):
            return "m-stochastic"
        return "thresholded"

    def file_meta(self):
        return {"classes": class_labels_meta(self.classes)}

    def check_file_weights(self, W, path):
        if W.shape[1] != self.n_outputs:
            raise damaged(path, "weights", f"has shape {W.shape}, expected (n_recorded, {self.n_outputs}, "
                                           "n_features)")
        return W

    def check_file_class_objective(self, path, field):
        """A K-class result takes a saved K-class objective."""

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


def arity_of_labels(labels):
    """The arity of an estimator's or a data table's labels: K classes for more than two, else two classes
    (also without labels: None)."""
    return KClasses(labels) if labels is not None and len(labels) > 2 else TWO_CLASSES


def arity_from_file(meta, path):
    """The arity a result file records (``metadata.classes``; files without it are two-class results)."""
    classes = meta.get("classes")
    return arity_of_classes(None if classes is None else class_labels_from_meta(classes, path))


def check_objective_and_goals(objective, goals):
    """The estimators' ``objective`` (a name of either arity's objectives, a callable or None) and ``goals`` (a
    sequence) checked before the data are read; a ValueError names the argument."""
    if not (objective is None or callable(objective) or objective in OBJECTIVES or objective in MULTICLASS_OBJECTIVES):
        raise ValueError(f"objective must be one of {sorted(set(OBJECTIVES) | set(MULTICLASS_OBJECTIVES))}, "
                         f"a callable or None, got {objective!r}")
    if isinstance(goals, (str, bytes)) or not hasattr(goals, "__iter__"):
        raise ValueError(f"goals must be a sequence of goals, got {goals!r}")
