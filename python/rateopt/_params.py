"""The training parameters: one table, one set of validators.

:func:`rateopt.train`, the estimator (which exposes every entry as a
constructor parameter of the same name) and, later, the command line read the
same table, so a parameter has one name, one default and one check in every
layer. Each check returns the validated value or raises a ``ValueError`` that
names the parameter.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, make_dataclass, replace

from ._predictors._boosting import BACKENDS, BoostingModel
from ._predictors._nystroem import KERNELS
from ._predictors._specs import KernelModel, LinearModel, check_l2
from ._solutions._result import SOLUTION_ALIASES, SOLUTION_KINDS
from ._training._arity import TWO_CLASSES
from ._utils._validation import (
    check_bool,
    check_choice,
    check_int,
    check_nonnegative,
    check_positive,
    check_real,
    check_seed,
)
from .core import OBJECTIVE_PROXIES, OPTIMIZERS, UPDATES
from .core._threads import resolve_n_threads
from .oracles import Oracle

__all__ = ["Param", "TRAIN_PARAMS", "MODEL_PARAMS", "SOLUTION_PARAMS", "TrainSettings", "train_settings",
           "build_model", "defaults", "validate"]

LAMBDA_INITS = ("objective", "uniform")
#: The model player's optimizers: the core's gradient steps, and L-BFGS (``rateopt._training._lbfgs``).
MODEL_OPTIMIZERS = (*OPTIMIZERS, "lbfgs")
LOOPS = ("auto", "core", "python")
#: ``stop_patience`` when neither the caller nor the method's defaults set it.
DEFAULT_STOP_PATIENCE = 20


# --------------------------------------------------------------------------- #
# The table
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class Param:
    """One training parameter: its name, default, check and one-line meaning."""

    name: str
    default: object
    check: object
    doc: str

    def validate(self, value):
        return self.check(self.name, value)


TRAIN_PARAMS = (
    Param("n_iter", None, lambda n, v: check_int(n, v, 1, allow_none=True),
          "Iterations T; each is one kernel pass per dataset (None: the method's default, its game's "
          "Game.defaults: 250 for 'proxy-swap', 500 for 'unconstrained', 1000 otherwise)."),
    Param("optimizer", None, lambda n, v: None if v is None else check_choice(n, v, MODEL_OPTIMIZERS),
          "The model player's steps: 'adam', 'adagrad' or 'sgd'; or 'lbfgs' (method='unconstrained' only: "
          "the logistic proxy's minimizer by scipy's L-BFGS-B, one kernel pass per evaluation) (None: the "
          "method's default, Game.default_optimizer: 'lbfgs' for 'unconstrained' with the logistic proxy, full "
          "batch and no learning_rate given, two classes; 'adam' otherwise)."),
    Param("learning_rate", None, lambda n, v: check_positive(n, v, allow_none=True),
          "The model player's step size (None: the method's default, Game.defaults: 0.1 for 'proxy-swap' and "
          "'unconstrained', 0.01 otherwise)."),
    Param("eta_lambda", None, lambda n, v: check_positive(n, v, allow_none=True),
          "The multipliers' step size (None: the method's default: 3 / B for 'proxy-swap' with "
          "lambda_init='objective', B the largest possible |g_i|; the papers' lemmas otherwise)."),
    Param("update", "multiplicative", lambda n, v: check_choice(n, v, UPDATES),
          "The swap-regret update of 'proxy-swap': 'multiplicative' or 'additive'."),
    Param("lambda_init", None, lambda n, v: None if v is None else check_choice(n, v, LAMBDA_INITS),
          "Where proxy-swap's multipliers start: 'objective' (TFCO's: every column of the stochastic matrix "
          "puts 1 - lambda_floor m/(m+1) on the objective) or 'uniform' (the paper's M = 11^T/(m+1)) "
          "(None: the method's default, 'objective' for 'proxy-swap')."),
    Param("lambda_floor", None, lambda n, v: None if v is None else _check_floor(n, v),
          "proxy-swap, multiplicative update: every entry of the stochastic matrix stays >= lambda_floor/(m+1) "
          "(TFCO's minimum_multiplier_radius), so a constraint's weight never falls so low that it takes long "
          "to come back; 0: no floor (None: the method's default, 1e-3 for 'proxy-swap', 1e-2 for 'proxy-swap' with a "
          "BoostingModel, whose runs are short)."),
    Param("objective_warmup", None, lambda n, v: None if v is None else _check_floor(n, v),
          "The share of n_iter, at the start, during which the multipliers stay where they start (with "
          "lambda_init='objective': the objective alone, up to lambda_floor), so the first iterates train the "
          "objective and are recorded as candidates; then the game goes on (None: the method's default, 0.2 "
          "for K-class problems with 'proxy-swap' or 'proxy-external', 0 otherwise; 0: off)."),
    Param("lambda_radius", None, lambda n, v: check_positive(n, v, allow_none=True),
          "L1 radius of the Lagrange multipliers (Lagrangian methods; None: no cap, except for "
          "'oracle-lagrangian': B0 / gamma, the objective's range over the better constant classifier's "
          "margin on the constraints, which bounds the optimal multipliers' L1 norm (Theorem 2 needs R above it); "
          "no cap when no constant classifier meets the constraints with a margin)."),
    Param("batch_size", None, lambda n, v: check_int(n, v, 1, allow_none=True),
          "Minibatch size per dataset, rows drawn with replacement (None: full batch)."),
    Param("margin", 1.0, check_positive, "Hinge margin of the proxies."),
    Param("proxy", None, lambda n, v: None if v is None else check_choice(n, v, OBJECTIVE_PROXIES),
          "The objective's proxy: 'logistic' (logistic regression's loss) or 'hinge' (the papers'); "
          "constraints always use the hinge (None: the method's default, Game.defaults: 'logistic' for "
          "'proxy-swap' and 'unconstrained', 'hinge' otherwise)."),
    Param("record_every", None, lambda n, v: check_int(n, v, 1, allow_none=True),
          "Record the iterate every this many iterations (None: every iteration for a full-batch run "
          "without stop_tol of a game without metrics, so that a longer run's candidates include a shorter run's and its solution is "
          "never worse on the training data; max(1, T // 100) otherwise); the last is always recorded."),
    Param("stop_tol", None, lambda n, v: None if v is None else check_nonnegative(n, v),
          "Stop early once the m-stochastic LP over the candidates so far (the records, the trivial rules, "
          "the completed window averages and their threshold rules) has improved by at most this much "
          "(its objective, or its smallest achievable violation while infeasible) over the last "
          "stop_patience records; never during the objective warm-up (None: the method's default, off "
          "except for K-class problems with 'proxy-swap': 1e-4; 0: off, run all n_iter iterations)."),
    Param("stop_patience", None, lambda n, v: None if v is None else check_int(n, v, 2),
          "Records without an improvement above stop_tol before stopping (with stop_tol; None: the "
          "method's default, 20, or 50 for K-class problems with 'proxy-swap')."),
    Param("random_state", None, check_seed, "Seed of the minibatch sampling (None: fresh entropy)."),
    Param("n_threads", None, lambda n, v: resolve_n_threads(v),
          "Threads of the core (None: the OpenMP setting; -1: all cores)."),
    Param("verbose", False, check_bool, "Show a progress bar (needs tqdm)."),
    Param("oracle", None, lambda n, v: _check_oracle(n, v),
          "The oracle of the oracle games ('oracle-lagrangian', 'oracle-proxy'): a rateopt.oracles.Oracle."),
    Param("loop", "auto", lambda n, v: check_choice(n, v, LOOPS),
          "Where the iterations run: 'core' (one C++ call, the GIL released; the built-in games "
          "'proxy-swap', 'proxy-external', 'lagrangian-hinge' and 'unconstrained' without offset atoms), "
          "'python' (the reference driver, any game) or 'auto' (the core when it supports the run)."),
)
"""Every training parameter, in the order :func:`rateopt.train` takes them."""

_BY_NAME = {p.name: p for p in TRAIN_PARAMS}


def _check_l2(name, value):
    if value is None:  # the method's default (``build_model``'s ``default_l2``)
        return None
    try:
        return check_l2(value)
    except ValueError:
        raise ValueError(f"{name} must be 'auto' or a finite number >= 0, got {value!r}") from None


def _check_floor(name, value):
    value = check_nonnegative(name, value)
    if not value < 1.0:
        raise ValueError(f"{name} must be in [0, 1), got {value!r}")
    return value


def _check_oracle(name, value):
    if value is not None and not isinstance(value, Oracle):
        raise ValueError(f"{name} must be a rateopt.oracles.Oracle or None, got {type(value).__name__}")
    return value


MODEL_PARAMS = (
    Param("model", "linear", lambda n, v: check_choice(n, v, ("linear", "kernel", "boosting")),
          "A linear model, a kernel model (Nystroem features), or boosted trees (one tree per iteration; "
          "learning_rate is then the trees' shrinkage, default 0.1), with the parameters below."),
    Param("kernel", "rbf", lambda n, v: check_choice(n, v, KERNELS), "Kernel of model='kernel'."),
    Param("gamma", None, lambda n, v: check_positive(n, v, allow_none=True),
          "Kernel width (None: 1 / n_features)."),
    Param("degree", 3, check_nonnegative, "Degree of the polynomial kernel."),
    Param("coef0", 1.0, check_real, "Constant of the polynomial kernel."),
    Param("n_components", 1000, lambda n, v: check_int(n, v, 1),
          "Landmarks of the Nystroem approximation (all rows when >= n_samples: the exact kernel model)."),
    Param("landmarks", "uniform", lambda n, v: check_choice(n, v, ("uniform", "kmeans++")),
          "How landmarks are chosen."),
    Param("backend", "lightgbm", lambda n, v: check_choice(n, v, tuple(BACKENDS)),
          "Boosting library of model='boosting' (the rateopt[boosting] extra)."),
    Param("max_depth", 6, lambda n, v: check_int(n, v, -1), "Largest tree depth of model='boosting'."),
    Param("num_leaves", 31, lambda n, v: check_int(n, v, 2), "Largest number of leaves per tree of model='boosting'."),
    Param("min_child_weight", 1e-3, check_nonnegative, "Smallest Hessian sum in a leaf of model='boosting'."),
    Param("l2", None, lambda n, v: _check_l2(n, v),
          "L2 regularization of the weights (the RKHS norm for kernel models); 'auto': 1 / (n ln 2), n the "
          "training rows (scikit-learn's LogisticRegression(C=1) strength for rateopt's logistic loss in bits); "
          "None: the method's default, as train builds it ('auto' for method='unconstrained' on two classes, "
          "0 otherwise)."),
    Param("fit_intercept", True, check_bool, "Whether the model has a trained intercept."),
    Param("radius", None, lambda n, v: check_positive(n, v, allow_none=True),
          "Project the weights onto the L2 ball of this radius after each step (None: no projection)."),
)
"""The model's parameters (the estimator's and the command line's way to build a model)."""

SOLUTION_PARAMS = (
    Param("solution", None,
          lambda n, v: None if v is None else check_choice(n, v, SOLUTION_KINDS + tuple(SOLUTION_ALIASES)),
          "How the final classifier is built from the recorded iterates (None: TrainResult.default_kind, "
          "'m-stochastic' for two classes and 'thresholded' for K classes with goals, a linear objective and "
          "linear or kernel iterates; the command line's default is 'm-stochastic'; 'shrunk' and 'average': "
          "deprecated names of 'm-stochastic' and 'T-stochastic')."),
    Param("epsilon", 0.0, check_nonnegative, "Allowed constraint violation of the m-stochastic LP."),
)
"""How the final classifier is chosen from a training result."""


def defaults(*tables):
    """``{name: default}`` of the given parameter tables."""
    return {p.name: p.default for table in tables for p in table}


def validate(table, values):
    """``values`` (a dict) checked entry by entry against ``table``; missing entries take their default."""
    return {p.name: p.validate(values.get(p.name, p.default)) for p in table}


def build_model(values, random_state=None, default_l2=0.0):
    """A :class:`LinearModel`, :class:`KernelModel` or :class:`BoostingModel` from :data:`MODEL_PARAMS` values.

    ``values`` are validated here. ``l2=None`` takes ``default_l2``, the
    method's default (``rateopt._train.default_l2_of``), so that the estimator,
    the command line and ``train`` given no model build the same model. For ``model="boosting"`` the training parameter ``learning_rate``
    (in ``values``, None: 0.1) is the trees' shrinkage: :func:`train_params_for` leaves it out of the
    training parameters.
    """
    v = validate(MODEL_PARAMS, values)
    if v["model"] == "boosting":
        if v["l2"] not in (None, 0.0) or v["radius"] is not None or not v["fit_intercept"]:
            raise ValueError("l2, radius and fit_intercept are for linear and kernel models: model='boosting' "
                             "regularizes with its trees' parameters")
        rate = values.get("learning_rate")
        return BoostingModel(v["backend"], learning_rate=0.1 if rate is None else rate, max_depth=v["max_depth"],
                             num_leaves=v["num_leaves"], min_child_weight=v["min_child_weight"])
    l2 = default_l2 if v["l2"] is None else v["l2"]
    if v["model"] == "kernel":
        return KernelModel(kernel=v["kernel"], gamma=v["gamma"], degree=v["degree"], coef0=v["coef0"],
                           n_components=v["n_components"], landmarks=v["landmarks"], l2=l2,
                           fit_intercept=v["fit_intercept"], radius=v["radius"], random_state=random_state)
    return LinearModel(l2=l2, fit_intercept=v["fit_intercept"], radius=v["radius"])


def train_params_for(model, values):
    """The training parameters in ``values`` (a dict of :data:`TRAIN_PARAMS` names) for ``model``: all of
    them, but a boosted model's ``learning_rate``, which is its shrinkage (:func:`build_model`)."""
    train_names = {p.name for p in TRAIN_PARAMS}
    return {k: v for k, v in values.items() if k in train_names
            and not (k == "learning_rate" and isinstance(model, BoostingModel))}


#: The parameters every game's training reads (the driver's); the others are
#: read by the games that name them in ``Game.reads``.
DRIVER_PARAMS = frozenset({"n_iter", "batch_size", "record_every", "stop_tol", "stop_patience", "random_state",
                           "n_threads", "verbose", "loop"})

#: The model's regularization, copied into the settings for the model player.
_MODEL_FIELDS = (("l2", 0.0), ("radius", None), ("fit_intercept", True))


def _as_dict(self):
    """The settings as a JSON-compatible dict (saved with a training result; the oracle by its repr)."""
    out = asdict(replace(self, oracle=None))
    out["oracle"] = None if self.oracle is None else repr(self.oracle)
    return out


TrainSettings = make_dataclass(
    "TrainSettings",
    [("method", str), *((p.name, object, field(default=p.default)) for p in TRAIN_PARAMS),
     *((name, object, field(default=default)) for name, default in _MODEL_FIELDS)],
    frozen=True, namespace={"as_dict": _as_dict, "__module__": __name__})
TrainSettings.__doc__ = """Validated training parameters, plus the model's regularization.

Built by :func:`train_settings`: one field per entry of :data:`TRAIN_PARAMS`
(same name; the method-dependent ones resolved by the game's
``Game.defaults``), the method's name, and the model's ``l2`` (a float once
:func:`rateopt._train.run_game` has resolved ``"auto"``), ``radius`` and
``fit_intercept``. ``n_threads`` is resolved to a positive count,
``record_every`` to a number, and ``eta_lambda`` by the game's default when
None (in the driver, which knows the problem).
"""


def train_settings(game, model, *, arity=TWO_CLASSES, **params):
    """Validate ``params`` (names of :data:`TRAIN_PARAMS`; defaults for the others).

    Parameters
    ----------
    game : type
        The game class (a ``rateopt.games.Game`` subclass): its ``name`` is the
        method, its ``defaults`` fill the method-dependent parameters given as
        None, and a game-specific parameter it does not read (``Game.reads``,
        and its oracle's ``reads``) is refused when given a value other than
        the table's default.
    model : LinearModel or KernelModel
        Gives ``l2``, ``radius`` and ``fit_intercept``.
    arity : Arity, default=TWO_CLASSES
        The problem's number of classes (:mod:`rateopt._training._arity`): it
        chooses the game's defaults that fill the method-dependent parameters
        (``Game.defaults`` or ``Game.class_defaults``) and refuses what its pass
        cannot do (for K classes: a two-class proxy, a game without K-class
        defaults).
    **params
        Training parameters by name.

    Returns
    -------
    TrainSettings

    Raises
    ------
    TypeError
        On a name that is not a training parameter.
    ValueError
        On an invalid value, or a parameter the game does not read (the message
        names the parameter).
    """
    unknown = set(params) - set(_BY_NAME)
    if unknown:
        raise TypeError(f"unknown training parameter(s) {sorted(unknown)}; known: {sorted(_BY_NAME)}")
    values = validate(TRAIN_PARAMS, params)
    reads = set(game.reads) | set(getattr(values["oracle"], "reads", ()) if "oracle" in game.reads else ())
    ignored = sorted(name for name in params if name not in DRIVER_PARAMS and name not in reads
                     and values[name] != _BY_NAME[name].default)
    if ignored:
        raise ValueError(f"method={game.name!r} does not use the training parameter(s) {ignored}; it reads "
                         f"{sorted(reads)} besides {sorted(DRIVER_PARAMS)}")
    table = arity.game_defaults(game)
    arity.check_proxy(values["proxy"])
    stop_given = values["stop_tol"]  # before the table's default: the records' spacing reads it
    if values["optimizer"] is None:  # the game's choice (a settings holder that is no Game: Adam)
        choose = getattr(game, "default_optimizer", None)
        values["optimizer"] = "adam" if choose is None else choose(values, model, arity)
    elif values["optimizer"] == "lbfgs" and not getattr(game, "exact_model_player", False):
        raise ValueError(f"optimizer='lbfgs' minimizes a fixed objective: method='unconstrained' only, not "
                         f"{game.name!r} (use 'adam', 'adagrad' or 'sgd')")
    for name, default in table.items():
        if values[name] is None:
            values[name] = default
    if values["stop_tol"] == 0.0 or values["batch_size"] is not None and stop_given is None:
        values["stop_tol"] = None  # 0: off; a default rule is for full-batch runs only
    if values["stop_patience"] is None:
        values["stop_patience"] = DEFAULT_STOP_PATIENCE
    if values["record_every"] is None:  # every iterate of a full-batch run: see record_every's help
        # (not for the metric games: their "exact" solution's SLSQP grows with the cube of the records;
        # a default stopping rule keeps every record: the run is a prefix of the run without it)
        full = (values["batch_size"] is None and (stop_given is None or stop_given == 0.0)
                and not getattr(game, "accepts_metric", False))
        values["record_every"] = 1 if full else max(1, values["n_iter"] // 100)
    return TrainSettings(method=game.name, l2=model.l2 if model.l2 == "auto" else float(model.l2),
                         radius=model.radius, fit_intercept=bool(model.fit_intercept), **values)
