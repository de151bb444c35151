"""The scikit-learn estimator: rate-constrained linear and kernel classification.

Its constructor parameters are the parameter tables of :mod:`rateopt._params`
(the model's, the solution's and every training parameter of
:func:`rateopt.train`), under the same names and defaults, validated by the
same checks when :meth:`RateConstrainedClassifier.fit` runs.
"""

from __future__ import annotations

import re

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted, validate_data

from ._language._validation import check_weights, class_labels, nullable_columns
from ._utils._group_columns import split_group_columns
from ._params import MODEL_PARAMS, SOLUTION_PARAMS, TRAIN_PARAMS, build_model, defaults, train_params_for, validate
from ._compiler._problem import Problem
from ._language._classes import class_positions
from ._solutions._result import canonical_kind, warn_if_infeasible
from ._train import default_l2_of, run_game
from ._training._arity import arity_of_labels, check_objective_and_goals
from .exceptions import RateoptError
from .oracles import EstimatorOracle
from .games import get_game

__all__ = ["RateConstrainedClassifier"]

_D = defaults(MODEL_PARAMS, SOLUTION_PARAMS, TRAIN_PARAMS)


def _deterministic_solution(est):
    return est.solution in ("best", "last") and est.estimator is None



def _validate_data(estimator, *args, **kwargs):
    """scikit-learn's ``validate_data``, its data errors as one-line :class:`~rateopt.exceptions.RateoptError`.

    scikit-learn's messages span lines (advice, lists of column names, a dump
    of the array): the dump is left out and the rest joined on one line.
    """
    try:
        return validate_data(estimator, *args, **kwargs)
    except RateoptError:
        raise
    except ValueError as exc:
        text = re.sub(r"array=(\[.*?\]|\S+)", "", str(exc), flags=re.S)
        raise RateoptError(" ".join(text.split())) from None

class RateConstrainedClassifier(ClassifierMixin, BaseEstimator):
    """Classifier trained under rate constraints: fairness, coverage, churn, recall, metrics.

    The model is linear (``model="linear"``, the default), a kernel model
    (``model="kernel"``: RBF, Laplacian or polynomial on Nystroem features),
    or any scikit-learn classifier that takes ``sample_weight``
    (``estimator=``, trained through an oracle, :mod:`rateopt.oracles`).
    The goals (see :mod:`rateopt.goals`) are bound to the data passed to
    :meth:`fit`; the model is trained with the chosen game
    (:func:`rateopt.train`) and the final classifier is built from the recorded
    iterates (``solution``).

    Parameters
    ----------
    goals : sequence of Goal, default=()
        Data-independent goals, e.g. ``[rateopt.goals.equal_opportunity("sex", slack=0.05)]``
        or ``[rateopt.goals.f_measure_parity("sex", slack=0.02)]``.
        Goals whose role is ``"train"`` bind to the training data; other roles
        bind to ``extra_datasets`` given to :meth:`fit`.
    group_columns : sequence of str or int, default=None
        Columns of ``X`` that hold the groups the goals refer to rather than
        features: names of a DataFrame's columns, or positions of an array's
        (the group is then named by its position as a string, e.g.
        ``group_columns=[0]`` with ``equal_opportunity("0")``). They are taken
        out of ``X`` in :meth:`fit` (as its ``groups``) and in every
        prediction method (the model never sees them; at prediction a
        DataFrame may leave them out). This is how group-constrained training
        works inside :func:`~sklearn.model_selection.cross_val_score`,
        :class:`~sklearn.model_selection.GridSearchCV` or a pipeline: each
        fold's groups are the fold's rows of ``X``. (scikit-learn's own
        ``groups=`` argument of those tools goes to the CV splitter, never to
        ``fit``.) Alternatives: ``cross_val_score(est, X, y,
        params={"groups": G})``; or, with
        ``sklearn.set_config(enable_metadata_routing=True)``,
        ``est.set_fit_request(groups=True)`` and ``groups=G`` passed to the
        tool, which then gives the fold's rows of ``G`` both to the splitter
        and to ``fit``.
    objective : str, callable or None, default=None
        What training minimizes on the training data: a name of
        ``rateopt.goals.OBJECTIVES`` (``"error"``, ``"f_measure"`` (maximizes
        F1), ``"g_mean"``, ``"h_mean"``, ``"q_mean"``, ``"balanced_error"``), a
        callable taking the training :class:`~rateopt.Dataset` and returning a
        rate expression or a :class:`rateopt.metrics.Metric`, or None (the
        error rate).
    method : str, default="auto"
        The training game: ``"auto"`` (``"oracle-proxy"`` with ``estimator``;
        ``"three-player"`` when the objective or a goal is a non-linear metric;
        else ``"proxy-swap"``) or any name of
        ``rateopt.games.GAMES`` (``"proxy-swap"``, ``"proxy-external"``,
        ``"lagrangian-hinge"``, ``"unconstrained"``, ``"three-player"``,
        ``"oracle-lagrangian"``, ``"oracle-proxy"``, ``"three-player-oracle"``
        (with ``oracle=``); see
        :func:`rateopt.train`).
    estimator : scikit-learn classifier, default=None
        Train this model class instead of a linear model: any classifier whose
        ``fit`` takes ``sample_weight`` (e.g. ``HistGradientBoostingClassifier()``;
        regressors and other non-classifiers are refused),
        refitted each round on the cost-sensitive problem the multipliers pose
        (:class:`rateopt.oracles.EstimatorOracle`, Cotter et al. (2019) Algorithm 2 by
        default). The solution is a :class:`rateopt.EstimatorMixture` of at most
        m+1 fitted models (for ``"m-stochastic"``), which cannot be saved with
        rateopt's pickle-free files.
    solution : {"m-stochastic", "T-stochastic", "best", "last", "exact", "thresholded"}, default=None
        How the final classifier is built from the iterates (None:
        ``"m-stochastic"`` for two classes, ``"thresholded"`` for boosted
        trees with goals; ``"thresholded"`` for K classes with a linear
        objective and linear or kernel iterates, see
        :meth:`rateopt.TrainResult.default_kind`). The stochastic
        kinds give a mixture of linear models (``decision_function`` is then
        unavailable; ``predict_proba`` is the mixture's probability of a
        positive decision). ``"thresholded"``: the best mixture of the
        iterates, each with its own exactly re-fitted randomized threshold, on
        the training data (:meth:`rateopt.TrainResult.thresholded`): never
        worse there than the iterates or any of them with a tuned threshold
        (exactly on small problems, up to 256 score bins per iterate when
        iterates x rows exceeds a million).
    model : {"linear", "kernel", "boosting"}, default="linear"
        A linear model, a kernel model (:class:`rateopt.KernelModel`) with
        the parameters below, or boosted trees (:class:`rateopt.BoostingModel`:
        one tree per iteration, ``n_iter`` trees; ``learning_rate`` is then the
        trees' shrinkage, default 0.1).
    fit_intercept : bool, default=True
        Whether the model has a trained intercept.
    radius : float, default=None
        Project the weights onto the L2 ball of this radius after each step
        (None: no projection).
    kernel : {"rbf", "laplacian", "poly", "linear"}, default="rbf"
        Kernel of ``model="kernel"``.
    gamma : float, default=None
        Kernel width (``None``: ``1 / n_features``).
    degree : float, default=3
        Degree of the polynomial kernel.
    coef0 : float, default=1.0
        Constant of the polynomial kernel.
    n_components : int, default=1000
        Landmarks of the Nystroem approximation (all training rows when
        ``n_components >= n_samples``: the exact kernel model).
    landmarks : {"uniform", "kmeans++"}, default="uniform"
        How landmarks are chosen.
    backend : {"lightgbm", "xgboost"}, default="lightgbm"
        Boosting library of ``model="boosting"`` (``pip install "rateopt[boosting]"``).
    max_depth : int, default=6
        Largest tree depth of ``model="boosting"``.
    num_leaves : int, default=31
        Largest number of leaves per tree of ``model="boosting"``.
    min_child_weight : float, default=1e-3
        Smallest Hessian sum in a leaf of ``model="boosting"``.
    l2 : float, "auto" or None, default=None
        L2 regularization of the weights (the RKHS norm for kernel models);
        ``"auto"``: ``1 / (n ln 2)``, scikit-learn's ``LogisticRegression(C=1)``
        strength for unit weights. None: the method's default, the model
        :func:`rateopt.train` builds when given none (``"auto"`` for
        ``method="unconstrained"`` on two classes, 0 otherwise).
    optimizer : {"adam", "adagrad", "sgd", "lbfgs"}, default=None
        The model player's steps (None: ``"adam"``; ``method="unconstrained"``
        with the logistic proxy, full batch and no ``learning_rate``:
        ``"lbfgs"``, the proxy's minimizer by L-BFGS; see :func:`rateopt.train`).
    learning_rate : float, default=None
        Model player's step size (None: 0.1 for ``proxy-swap``, 0.01 for the
        other games; docs/defaults.md).
    eta_lambda : float, default=None
        Multiplier step size (default: ``3 / B`` for ``proxy-swap``, the papers'
        lemmas otherwise; see :func:`rateopt.train`).
    update : {"multiplicative", "additive"}, default="multiplicative"
        The swap-regret update of ``method="proxy-swap"``.
    lambda_init : {"objective", "uniform"}, default="objective"
        Where ``proxy-swap``'s multipliers start (TFCO's or the paper's matrix).
    lambda_floor : float, default=None
        ``proxy-swap``'s floor on the entries of its stochastic matrix, times m+1
        (None: 1e-3; 1e-2 with ``model="boosting"``, whose runs are short).
    objective_warmup : float, default=None
        The share of ``n_iter`` at the start during which the multipliers do
        not move, so the first iterates train the objective (None: 0.2 for
        K classes with ``proxy-swap`` or ``proxy-external``, 0 otherwise).
    lambda_radius : float, default=None
        L1 radius of the Lagrange multipliers (Lagrangian methods; None: no
        cap, except for ``"oracle-lagrangian"``, which derives it from the
        problem: see ``OracleLagrangianGame.default_lambda_radius``).
    n_iter : int, default=None
        Training iterations (None: 250 for ``proxy-swap``, 500 for
        ``unconstrained``, 1000 for the other games).
    batch_size : int, default=None
        Minibatch size (None: full batch).
    margin : float, default=1.0
        Hinge margin of the proxies.
    proxy : {"logistic", "hinge"}, default=None
        The objective's proxy (``"logistic"``: logistic regression's loss;
        ``"hinge"``: the papers'); constraints always use the hinge. None:
        ``"logistic"`` for ``proxy-swap``, ``"hinge"`` for the other games.
    record_every : int, default=None
        Record the iterate every this many iterations (None: every iteration
        for a full-batch run without ``stop_tol`` of a game without metrics,
        ``max(1, n_iter // 100)`` otherwise).
    stop_tol : float, default=None
        Stop early when the m-stochastic LP over the candidates so far (the
        records, the trivial rules, the completed window averages and their
        threshold rules: what the solution mixes) has improved by at
        most this much over the last ``stop_patience`` records, never during the
        objective warm-up (None: the method's default, off except for K-class
        problems with ``proxy-swap``, full batch: 1e-4; 0: off).
    stop_patience : int, default=None
        Records without such an improvement before stopping (None: 20, or 50
        for K-class problems with ``proxy-swap``).
    epsilon : float, default=0.0
        Allowed violation in the m-stochastic LP.
    random_state : int or None, default=None
        Seed of minibatch sampling and of the stochastic classifier's draws in
        :meth:`predict` (None means 0 for the draws).
    n_threads : int or None, default=None
        Threads of the core (None: the OpenMP setting; -1: all cores).
    verbose : bool, default=False
        Progress bar during training (needs tqdm).
    oracle : rateopt.oracles.Oracle, default=None
        The oracle of ``method="oracle-lagrangian"`` / ``"oracle-proxy"``.
    loop : {"auto", "core", "python"}, default="auto"
        Where the training iterations run (see :func:`rateopt.train`): the
        core's loop for the built-in games, or the Python driver.
    classes : array-like or None, default=None
        Every class (None: the distinct labels of ``y``). Give it where a
        sample may miss a class, as a cross-validation fold may, so that the
        fit keeps the full class list (K-class goals stay K-class).

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        The two labels; ``classes_[1]`` is the positive class.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` had string column names.
    classifier_ : LinearClassifier or StochasticClassifier
        The trained classifier.
    result_ : TrainResult
        Recorded iterates and training history.
    problem_ : Problem
        The compiled problem on the training data.
    n_iter_ : int
        Iterations run.
    feasibility_ : FeasibilityReport
        Whether the chosen solution meets the training constraints, which it
        violates and by how much, and the smallest largest violation any
        mixture of the recorded iterates achieves.
    coef_, intercept_ : ndarray of shape (n_outputs, n_features), (n_outputs,)
        Only for deterministic solutions: one output for two classes
        (scikit-learn's convention), one per class for K classes.

    Examples
    --------
    >>> import numpy as np
    >>> import rateopt
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 3)); y = (X[:, 0] > 0).astype(int)
    >>> est = rateopt.RateConstrainedClassifier(
    ...     goals=[rateopt.goals.coverage_budget(0.3)], n_iter=300).fit(X, y)
    >>> float(est.predict_proba(X)[:, 1].mean()) <= 0.3 + 1e-9
    True
    """

    def __init__(self, goals=(), *, group_columns=None, objective=None, method="auto", estimator=None,
                 solution=_D["solution"], model=_D["model"],
                 kernel=_D["kernel"], gamma=_D["gamma"], degree=_D["degree"], coef0=_D["coef0"],
                 n_components=_D["n_components"], landmarks=_D["landmarks"], backend=_D["backend"],
                 max_depth=_D["max_depth"], num_leaves=_D["num_leaves"], min_child_weight=_D["min_child_weight"],
                 l2=_D["l2"],
                 fit_intercept=_D["fit_intercept"], radius=_D["radius"], optimizer=_D["optimizer"],
                 learning_rate=_D["learning_rate"], eta_lambda=_D["eta_lambda"], update=_D["update"],
                 lambda_init=_D["lambda_init"], lambda_floor=_D["lambda_floor"],
                 objective_warmup=_D["objective_warmup"], lambda_radius=_D["lambda_radius"],
                 n_iter=_D["n_iter"], batch_size=_D["batch_size"], margin=_D["margin"], proxy=_D["proxy"],
                 record_every=_D["record_every"], stop_tol=_D["stop_tol"], stop_patience=_D["stop_patience"],
                 epsilon=_D["epsilon"], random_state=_D["random_state"], n_threads=_D["n_threads"],
                 verbose=_D["verbose"], oracle=_D["oracle"], loop=_D["loop"], classes=None):
        self.goals = goals
        self.group_columns = group_columns
        self.objective = objective
        self.method = method
        self.estimator = estimator
        self.solution = solution
        self.model = model
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.n_components = n_components
        self.landmarks = landmarks
        self.backend = backend
        self.max_depth = max_depth
        self.num_leaves = num_leaves
        self.min_child_weight = min_child_weight
        self.l2 = l2
        self.fit_intercept = fit_intercept
        self.radius = radius
        self.optimizer = optimizer
        self.learning_rate = learning_rate
        self.eta_lambda = eta_lambda
        self.update = update
        self.lambda_init = lambda_init
        self.lambda_floor = lambda_floor
        self.objective_warmup = objective_warmup
        self.lambda_radius = lambda_radius
        self.n_iter = n_iter
        self.batch_size = batch_size
        self.margin = margin
        self.proxy = proxy
        self.record_every = record_every
        self.stop_tol = stop_tol
        self.stop_patience = stop_patience
        self.epsilon = epsilon
        self.random_state = random_state
        self.classes = classes
        self.n_threads = n_threads
        self.verbose = verbose
        self.oracle = oracle
        self.loop = loop

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    def fit(self, X, y, groups=None, sample_weight=None, baseline=None, extra_datasets=None):
        """Train under the goals.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Training features (and the ``group_columns``). A DataFrame may
            have pandas' nullable numeric columns (``Float64``, ``Int64``,
            ``boolean``) without missing values; ``pd.NA`` is refused, naming
            the column.
        y : array-like of shape (n_samples,)
            Two distinct labels (the larger in sorted order is the positive
            class), or K > 2 classes: a multinomial linear or kernel model is
            then trained under K-class goals (e.g.
            ``rateopt.goals.multiclass_demographic_parity``) by the same
            :func:`rateopt.train` games, parameters and solutions (the game
            must have K-class defaults: ``"proxy-swap"``, ``"proxy-external"``
            or ``"unconstrained"``); ``predict_proba`` is then (n_samples, K).
        groups : DataFrame, dict of arrays, or 2-D array, default=None
            Group columns the goals refer to (e.g. ``df[["sex", "race"]]``);
            not with ``group_columns``. In scikit-learn's model selection
            tools use ``group_columns`` instead (see the class docstring).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative finite weights; only their ratios matter for rates
            (any scale up to the float64 maximum), weighted counts use them as given.
        baseline : array-like of shape (n_samples,), default=None
            A deployed model's decisions or scores (churn, win-loss goals).
        extra_datasets : dict of str to Dataset, default=None
            Further datasets by role (``"steering"``, ``"rule"``, ...).

        Returns
        -------
        self
            The fitted estimator.

        Warns
        -----
        rateopt.exceptions.InfeasibleWarning
            When the chosen solution violates a training constraint by more
            than the round-off tolerance (``1e-9 * max(1, max_t |g_i(t)|)``;
            see :class:`rateopt.FeasibilityReport`), plus ``epsilon`` for the
            m-stochastic solution. The message names the violated constraints
            with their values and the smallest largest violation any mixture
            of the recorded iterates achieves; ``feasibility_`` holds the report.
        """
        _refuse_dask(fit=True, X=X, y=y, groups=groups, sample_weight=sample_weight, baseline=baseline)
        params = self.get_params(deep=False)
        if self.method != "auto":
            get_game(self.method)
        check_objective_and_goals(self.objective, self.goals)
        validate(MODEL_PARAMS, params)  # the model's parameters refused before the data are read
        method = self.method
        X, groups = self._split_groups(X, groups)
        nullable_columns(X)  # pd.NA in a nullable column: refused naming the column, as Dataset does
        column = np.asarray(y).ndim == 2  # a column vector: validate_data warns (DataConversionWarning) as usual
        y, self.classes_ = class_labels(y, self.classes)
        X, y = _validate_data(self, X, y[:, None] if column else y, accept_sparse="csr",
                              dtype=[np.float64, np.float32], order="C", y_numeric=False)
        arity = arity_of_labels(self.classes_)  # the one branch on the number of classes: the labels
        self.multiclass_ = arity.multiclass
        solution = validate(SOLUTION_PARAMS, params)
        solution["solution"] = canonical_kind(solution["solution"])
        if self.estimator is not None:
            if self.oracle is not None:
                raise ValueError("give estimator= or oracle=, not both")
            if self.model != "linear":
                raise ValueError("estimator= trains its own model class: leave model='linear'")
            method = "oracle-proxy" if method == "auto" else method
        if sample_weight is not None:
            sample_weight = np.asarray(sample_weight)
            if sample_weight.shape != (X.shape[0],):
                raise RateoptError(f"sample_weight has shape {sample_weight.shape}, expected ({X.shape[0]},)")
            sample_weight = check_weights(sample_weight, X.shape[0], "sample_weight")
        arity.check_extra(baseline, extra_datasets, "training")
        train_ds = arity.labelled_dataset(X, y, labels=self.classes_, weights=sample_weight, groups=groups,
                                          baseline=baseline)
        objective = arity.objective_of(self.objective, train_ds)
        datasets = {"train": train_ds}
        for role, ds in (extra_datasets or {}).items():
            if role == "train":
                raise ValueError("extra_datasets must not use the role 'train'")
            datasets[role] = ds
        goals = list(self.goals) if self.goals is not None else []
        self.problem_ = Problem(objective=objective, constraints=goals, datasets=datasets)
        model = build_model(params, random_state=self.random_state,
                            default_l2=default_l2_of(self.problem_, method))  # train's default model, l2=None
        train_params = train_params_for(model, params)
        if self.estimator is not None:
            train_params["oracle"] = EstimatorOracle(self.estimator)
        self.result_ = run_game(self.problem_, model, method=method, **train_params)
        if solution["solution"] is None:
            solution["solution"] = self.result_.default_kind(self.problem_)
        if solution["solution"] == "thresholded" and self.estimator is not None:
            raise ValueError("solution='thresholded' re-fits the thresholds of linear or kernel iterates; with "
                             "estimator=, post-process with rateopt.ThresholdClassifier instead")
        self.classifier_ = self.result_.solution(solution["solution"], epsilon=solution["epsilon"],
                                                 problem=self.problem_)
        self.feasibility_ = self.result_.feasibility(solution["solution"], epsilon=solution["epsilon"],
                                                     problem=self.problem_, classifier=self.classifier_)
        self.n_iter_ = self.result_.n_iter
        # The m-stochastic LP may use up to epsilon of violation on purpose.
        allowed = solution["epsilon"] if solution["solution"] == "m-stochastic" else 0.0
        warn_if_infeasible(self.feasibility_, allowed=allowed)
        # one linear model, of either arity (a mixture has no coef_: a K-class one raises AttributeError)
        if hasattr(self.classifier_, "coef_") and self.classifier_.feature_map is None:
            self.coef_ = self.classifier_.coef_
            self.intercept_ = self.classifier_.intercept_
        return self

    def _split_groups(self, X, groups=None, predicting=False):
        """``(features, groups)``: the ``group_columns`` taken out of ``X``."""
        return split_group_columns(X, self.group_columns, groups, predicting=predicting,
                                   n_features=getattr(self, "n_features_in_", None))

    def _validated(self, X):
        check_is_fitted(self)
        _refuse_dask(fit=False, X=X)
        X, _ = self._split_groups(X, predicting=True)
        nullable_columns(X)
        return _validate_data(self, X, accept_sparse="csr", dtype=[np.float64, np.float32], order="C", reset=False)

    def predict(self, X, row_key=None):
        """Predicted labels (a stochastic solution draws one support model per row).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        row_key : array-like of shape (n_samples,), default=None
            Row ids (integers or strings) keying the draws, so that a row's
            label is the same in any batch and order. None: each row's draw
            is keyed on its content and its occurrence among identical rows of
            the batch (the same input gives the same labels).

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        X = self._validated(X)  # before touching fitted attributes
        seed = 0 if self.random_state is None else self.random_state
        labels = np.asarray(self.classifier_.predict(X, random_state=seed, row_key=row_key))
        return self.classes_[class_positions(np.asarray(self.classifier_.classes_), labels, "predictions")]

    def predict_proba(self, X):
        """Probability of each class (for a mixture, over the draw of the support model).

        scikit-learn's convention: one column per class of ``classes_`` (as
        every classifier of :mod:`rateopt`, ``classifier_`` among them).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Column ``k`` is the probability of ``classes_[k]``; rows sum to 1.
        """
        X = self._validated(X)
        return self.classifier_.predict_proba(X)

    @available_if(_deterministic_solution)
    def decision_function(self, X):
        """Scores of the deterministic solution (positive class iff >= 0).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,), or (n_samples, n_classes) for K classes
        """
        X = self._validated(X)
        return self.classifier_.decision_function(X)


def _refuse_dask(*, fit, **arguments):
    """Raise where an argument is a dask or distributed object: scikit-learn's validation would pull it into
    this process whole (detected by the type's module, so that dask is never imported here)."""
    for what, value in list(arguments.items()):
        if isinstance(value, dict):  # group columns by name
            arguments.update((f"{what}[{k!r}]", v) for k, v in value.items())
    for what, value in arguments.items():
        if type(value).__module__.partition(".")[0] in ("dask", "dask_expr", "distributed"):
            where = ("train on the cluster with rateopt.dask.Dataset(X, y, ...) and rateopt.train" if fit else
                     "predict on the cluster with rateopt.dask.predict(estimator, X, method=...)")
            raise TypeError(f"{what} is a dask {type(value).__name__}, which RateConstrainedClassifier would pull "
                            f"into this process whole: {where}, or pass {what}.compute() to work in memory")
