"""Training: the driver that runs any registered game (``rateopt.games``).

Each iteration is **one** pass of the fused kernel over every dataset, for the
rate combinations the game asks for at its current model; the game then moves
all of its players from the kernel's result (atom rates, proxy values, the
weighted gradient). Every ``record_every`` iterations the driver records the
model, the multipliers and the full vector of atom rates (training, and
validation when given); :class:`~rateopt.TrainResult` derives objective and
constraint values and every solution from these records. The driver has no
method-specific code: a method is a game class in the registry. The built-in
games can also run whole in the core (``loop="core"``, the default where
supported: :func:`rateopt.core.run_train_loop`), with the same arithmetic;
this driver stays the reference and serves every other game.

References
----------
.. [1] A. Cotter, H. Jiang, S. Wang, T. Narayan, M. Gupta, S. You, K. Sridharan.
   "Optimization with Non-Differentiable Constraints with Applications to
   Fairness, Recall, Churn, and Other Goals". JMLR 20(172), 2019.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from . import core
from ._params import TRAIN_PARAMS, defaults, train_settings
from ._predictors._specs import KernelModel, LinearModel, resolve_l2
from ._predictors._scoring import feature_names_of
from ._predictors._boosted_mixture import candidate_rounds
from ._solutions._result import (
    FeasibilityReport,
    RateMap,
    TrainResult,
    warn_if_infeasible,
)
from ._postprocess._folded_rules import folded_threshold_rules, rule_cells
from ._solutions._candidates import AVERAGE_ITERATION, THRESHOLD_RULE_ITERATION, rule_window, window_averages
from ._solutions._resume import Checkpoint, check_resumable, joined, resume_state
from ._solutions._stopping import PlateauRule
from ._training._class_spec import ClassBlock  # (importing it registers the K-class game spec: Arity.game_spec)
from ._training._arity import arity_of
from ._training._model_kind import model_kind_of
from ._training._boosting import boosted_eta_lambda, boosted_lambda_floor
from ._training._lbfgs import lbfgs_refusal, run_lbfgs
from ._training._players import LagrangePlayer, SwapRegretPlayer
from ._training._spec import (
    Block,
    DecisionPass,
    GameSpec,
    decision_rates,
    revalidated,
)
from .games import GAMES, get_game

__all__ = ["train", "TrainResult", "FeasibilityReport", "METHODS", "run_game", "resolve_model", "prepare_specs"]

METHODS = tuple(GAMES)
"""The registered training methods (the game registry's names)."""


def train(problem, model=None, method="auto", *, validation=None, callback=None, checkpoint=None, resume=None,
          **params):
    """Train a linear or kernel model under rate constraints.

    Parameters
    ----------
    problem : Problem or GameSpec
        The objective and constraints (compiled once; the data are validated
        again by every call, since they are read in place).
    model : LinearModel or KernelModel, default=None
        The model and its regularization (default ``LinearModel()``;
        ``LinearModel(l2="auto")``, scikit-learn's ``LogisticRegression(C=1)``
        strength, for ``method="unconstrained"``: docs/defaults.md). A
        :class:`KernelModel` chooses its landmarks on the training dataset,
        builds the feature block of every dataset once, and trains a linear
        model on it; its classifiers carry the feature map.
    method : str, default="auto"
        A registered game (``rateopt.games.GAMES``); ``"auto"`` means
        ``"three-player"`` when the objective is a non-linear metric
        (:mod:`rateopt.metrics`) and ``"proxy-swap"`` otherwise.
        ``"three-player"``: Narasimhan et al. (2019)'s Algorithm 2 (a slack player's closed-form
        best responses, multipliers on the 0-1 rates, the model on hinge
        proxies); it also takes affine objectives.
        ``"proxy-swap"``: the proxy-Lagrangian game of Cotter et al. (2019), Algorithm 3 (the
        model steps on proxies, the multipliers on the (m+1)-simplex see
        the true 0-1 constraint values and minimize swap regret).
        ``"proxy-external"``: Algorithm 4 (model on proxies, Lagrange multipliers
        ``lambda >= 0`` on the 0-1 values, external regret).
        ``"lagrangian-hinge"``: Algorithm 5 with hinge proxies for both players
        (the "Hinge" baseline). ``"unconstrained"``: the objective's proxy only.
        ``"oracle-lagrangian"`` and ``"oracle-proxy"``: Cotter et al. (2019)'s Algorithms 1
        and 2, whose model player is the best response of ``oracle=``
        (:mod:`rateopt.oracles`) to the multipliers' combination of rates;
        ``"three-player-oracle"``: Narasimhan et al. (2019)'s Algorithm 1 (the three-player
        game with that best response as its model player).
    validation : Problem or GameSpec, default=None
        Also record the atom rates of every recorded iterate on this problem
        (same constraints on validation data).
    callback : callable, default=None
        Called as ``callback(iteration, info)`` after every recorded iterate with
        ``info = {"objective", "constraints", "multipliers"}``; return ``True``
        to stop training. In the core loop it runs between iterations with
        the GIL taken for the call; its exceptions propagate.
    checkpoint : str or os.PathLike, default=None
        Write the records so far to this file after every recorded iterate, as
        a complete :class:`TrainResult` (``rateopt.load`` reads it; written to a
        temporary file and renamed, so an interrupted fit leaves the last
        complete checkpoint). Not with an estimator oracle (its iterates need
        pickle).
    resume : TrainResult, default=None
        Go on from this result's last recorded iterate (e.g. ``rateopt.load(
        checkpoint)``): same problem and method (``"proxy-swap"``,
        ``"proxy-external"``, ``"lagrangian-hinge"`` or ``"unconstrained"``),
        linear model; the model and the multipliers start where it ended, the
        optimizer's moments and the minibatch generator start afresh
        (:mod:`rateopt._solutions._resume`). ``n_iter`` more iterations run, and the
        result holds the old records followed by the new ones.
    **params
        The training parameters of :data:`rateopt._params.TRAIN_PARAMS`
        (defaults of ``"proxy-swap"`` and ``"unconstrained"`` chosen by
        measurement: docs/defaults.md; ``n_iter``, ``learning_rate``,
        ``proxy``, ``eta_lambda``, ``lambda_init`` and ``lambda_floor`` default
        to None, the method's value in its game's ``Game.defaults``; a game
        refuses a game-specific parameter it does not read, ``Game.reads``):
        ``n_iter`` (iterations, each one kernel pass per dataset; 250 for
        ``proxy-swap``, 500 for ``unconstrained``, 1000 for the other games),
        ``optimizer=None`` (``"adam"``, ``"adagrad"`` or ``"sgd"``; or
        ``"lbfgs"``, ``"unconstrained"`` only: the objective's logistic
        proxy plus ``l2`` minimized by scipy's L-BFGS-B, one kernel pass per
        evaluation, until every gradient entry is at most 1e-5 or ``n_iter``
        iterations (:mod:`rateopt._training._lbfgs`); None: ``"lbfgs"`` for
        ``"unconstrained"`` on two classes with the logistic proxy, full
        batch, no ``learning_rate`` and no ``radius``, ``"adam"`` otherwise),
        ``learning_rate`` (the model's step; 0.1, or 0.01 for the other games),
        ``eta_lambda=None`` (the
        multipliers' step; default for ``proxy-swap``: ``3 / B``, B the largest
        possible ``|g_i|``, or Lemma 8's ``sqrt((m+1) ln(m+1) / (T B^2))``
        with ``lambda_init="uniform"``; Lemma 23's ``R / (B sqrt(2T))`` for the
        Lagrangian methods), ``update="multiplicative"`` (or ``"additive"``,
        the swap-regret update), ``lambda_init="objective"`` (``proxy-swap``'s
        starting matrix: TFCO's, almost all weight on the objective; or
        ``"uniform"``, the paper's), ``lambda_floor=1e-3`` (``proxy-swap``,
        multiplicative update: every entry of the matrix stays at least
        ``lambda_floor / (m+1)``, TFCO's minimum multiplier radius; 0: none;
        ``1e-2`` for a :class:`BoostingModel`, whose runs are short),
        ``lambda_radius=None`` (L1 radius of Lagrange multipliers; None: no
        cap, except for ``"oracle-lagrangian"``, whose default ``B0 / gamma``
        bounds the optimal multipliers: the objective's range over the better
        constant classifier's margin on the constraints),
        ``batch_size=None`` (minibatch rows per dataset, drawn with
        replacement and visited in increasing order; recorded iterates are
        always evaluated on the full data), ``margin=1.0`` (hinge margin),
        ``proxy`` (the objective's proxy: ``"logistic"``, logistic
        regression's loss, for ``proxy-swap`` and ``unconstrained``;
        ``"hinge"``, the papers', for the other games; constraints keep the hinge),
        ``record_every=None`` (default: every iteration for a full-batch run
        without ``stop_tol`` of a game without metrics (not ``three-player``), so that a longer run's candidates include a
        shorter run's; ``max(1, T // 100)`` otherwise; the last iterate is
        always recorded), ``stop_tol=None`` and ``stop_patience=None`` (stop
        early once the m-stochastic LP over the candidates so far (the records,
        the trivial rules, the completed window averages and their threshold
        rules) has improved by at most ``stop_tol`` over the last ``stop_patience`` records, never
        during the objective warm-up: :mod:`rateopt._solutions._stopping`;
        None: the method's default, off with patience 20, except K-class
        ``proxy-swap`` with ``batch_size=None``: 1e-4 and 50, so that its fits
        end once the game has settled; ``stop_tol=0``: off), ``random_state=None`` (minibatch seed),
        ``n_threads=None`` (None: the OpenMP setting; -1: all cores),
        ``verbose=False`` (a tqdm progress bar), ``loop="auto"`` (where the
        iterations run: ``"core"``, one C++ call with the GIL released, for the
        built-in games ``"proxy-swap"``, ``"proxy-external"``,
        ``"lagrangian-hinge"`` and ``"unconstrained"`` without offset atoms;
        ``"python"``, this driver, for every game; ``"auto"``, the core when it
        supports the run. Both give the same iterates to round-off, and the
        same minibatch rows for a seed).

    Returns
    -------
    TrainResult
        The recorded iterates, their atom rates and the solutions built from them.

    Raises
    ------
    ValueError
        On an unknown method, optimizer or update, or invalid numbers (the
        message names the parameter).
    TypeError
        On an unknown parameter name, or a problem or model of the wrong type.

    Warns
    -----
    rateopt.exceptions.InfeasibleWarning
        When no mixture of the recorded iterates meets every training
        constraint (so no solution built from this run does): the message
        names the constraints the m-stochastic solution violates, with their
        values, and the smallest achievable largest violation. A constraint
        counts as violated when its value exceeds a round-off tolerance of
        ``1e-9 * max(1, max_t |g_i(t)|)`` (``1e-9`` for rates). The same
        facts are in ``result.feasibility()`` (:class:`FeasibilityReport`).

    Notes
    -----
    Constraints are used as stated, whatever their magnitude. A constraint
    (or objective) with a coefficient or offset above ``2**64`` (say a rate
    times 1e200) is divided, for the players only, by the power of two that
    brings it to unit magnitude: exact, with the same feasible set, and it
    keeps the game's arithmetic finite. Recorded values, solutions and
    reports use the problem as stated; the shrinking LP rescales its rows the
    same way.

    A K-class problem (a problem on a :class:`~rateopt.ClassDataset`) trains
    through this same driver, with the same parameters, callback, records,
    validation, checkpoints and result: the games with K-class defaults
    (``Game.class_defaults``: ``"proxy-swap"``, ``"proxy-external"``,
    ``"unconstrained"``; 500 iterations, Adam at 0.02, the multipliers' step
    ``3 / B`` or ``1 / B``; ``"proxy-swap"`` in full batch stops once its
    records' LP settles, ``stop_tol=1e-4``) run one fused K-column pass per iteration
    (:mod:`rateopt._training._class_spec`; ``proxy="logistic"`` is the
    softmax cross-entropy, ``"hinge"`` the Crammer-Singer hinge) in the
    Python loop, and the :class:`TrainResult` holds K-class weights
    (n_recorded, K, n_features) whose solutions are
    :class:`~rateopt.MulticlassClassifier` objects. ``batch_size`` draws the
    minibatch rows as for two classes, and ``margin`` is the Crammer-Singer
    hinge's margin.
    """
    result = run_game(problem, model, method, validation=validation, callback=callback, checkpoint=checkpoint,
                      resume=resume, **params)
    warn_if_infeasible(result.feasibility("m-stochastic"), stacklevel=2)
    return result


def run_game(problem, model=None, method="auto", *, validation=None, callback=None, init=None, checkpoint=None,
             resume=None, **params):
    """:func:`train` without the feasibility warning (the estimator checks its own solution).

    ``init=(theta, bias)`` starts the model player there instead of at zero (a
    warm start, e.g. from the previous point of :func:`rateopt.sweep`).
    ``checkpoint`` and ``resume``: see :func:`train` and :mod:`rateopt._solutions._resume`.
    """
    method, game_cls = _resolve_method(problem, method)
    arity = arity_of(problem)
    model = resolve_model(problem, model, game_cls.default_l2(arity))
    kind = model_kind_of(model)
    refusal = arity.model_kind_refusal(kind)
    if refusal is not None:
        raise ValueError(refusal)
    if kind.grows_iterates:
        params = _boosting_params(model, game_cls, params)
    settings = train_settings(game_cls, model, arity=arity, **params)
    spec, val_spec, feature_map = prepare_specs(problem, validation, model, settings.n_threads)
    if settings.l2 == "auto":
        settings = dataclasses.replace(settings, l2=resolve_l2("auto", sum(b.n_samples for b in spec.blocks)))
    players_spec = spec.for_players()  # what the players see; records use spec
    if settings.lambda_radius is None and "lambda_radius" in game_cls.reads:
        radius = game_cls.default_lambda_radius(players_spec, settings)
        if radius is not None:
            settings = dataclasses.replace(settings, lambda_radius=radius)
    if settings.eta_lambda is None:
        eta_lambda = game_cls.eta_lambda_for(players_spec, settings)
        if kind.grows_iterates:  # one step per tree: scaled with the rounds
            eta_lambda = boosted_eta_lambda(game_cls, eta_lambda, settings)
        settings = dataclasses.replace(settings, eta_lambda=eta_lambda)
    if resume is not None:
        if init is not None:
            raise ValueError("give init or resume, not both")
        if feature_map is not None or getattr(resume, "feature_map", None) is not None:
            raise ValueError("resume: kernel models choose their landmarks again on every fit; resume trains "
                             "linear models")
        check_resumable(resume, game_cls, spec)
    game = game_cls(players_spec, settings)
    if kind.grows_iterates:
        _refuse_for_boosting(spec, val_spec, init=init, resume=resume, checkpoint=checkpoint)
        game.model_player = kind.player(players_spec, model, settings)
    if init is not None:
        _warm_start(game, init)
    if resume is not None:
        resume_state(game, resume)
        game.n_steps = int(resume.n_iter)  # the objective warm-up is counted from the first run's start
    rng = np.random.default_rng(settings.random_state)
    sizes = [blk.n_samples for blk in spec.blocks]
    minibatch = settings.batch_size is not None and any(settings.batch_size < n for n in sizes)
    passes = dict(margin=settings.margin, n_threads=settings.n_threads)
    if spec.arity.multiclass and not type(game).reads_proxy_values:
        passes["value"] = False  # the K-class pass then takes no softmax logarithm (same rates and gradients)
    estimators = getattr(game, "estimator_iterates", False)
    recorder = _Recorder(spec, val_spec, passes, model_kind_of(model, estimators))
    if _rules_apply(problem, spec, feature_map, kind.grows_iterates or estimators, settings):
        recorder.rule_problem = problem
    if estimators and (feature_map is not None or minibatch):
        raise ValueError("an estimator oracle trains on the raw features and all rows: use the default linear "
                         "model and batch_size=None")
    exact = settings.optimizer == "lbfgs" and not kind.grows_iterates  # boosted trees: no model player steps
    if exact:
        refusal = lbfgs_refusal(spec, settings)
        if refusal is None and params.get("learning_rate") is not None:
            refusal = ("optimizer='lbfgs' chooses its own steps (a line search): leave learning_rate=None "
                       "(or use optimizer='adam')")
        if refusal is not None:
            raise ValueError(refusal)
    refusal = _core_loop_refusal(game_cls, spec) or _warmup_refusal(game)
    if settings.loop == "core" and refusal is not None:
        raise ValueError(f"loop='core' cannot run this training: {refusal}; use loop='auto' or loop='python'")
    if settings.stop_tol is not None:
        # the rule's LPs hold every candidate the solution will mix, for either arity: the records so far
        # (both loops hand them to the recorder before the callback) and the recorder's other candidates
        # (the trivial rules, the completed windows' averages and their threshold rules: each scored once,
        # cached for the result)
        fit_intercept = getattr(settings, "fit_intercept", True)
        callback = PlateauRule(settings.stop_tol, settings.stop_patience, callback, start=game.warmup_steps(),
                               extra=lambda: recorder.candidate_scores(fit_intercept))
    if checkpoint is not None:
        if estimators:
            raise ValueError("checkpoint: an estimator oracle's iterates are scikit-learn estimators, which "
                             "rateopt's pickle-free files cannot store")
        callback = Checkpoint(checkpoint, lambda: recorder.result(method, feature_map, settings), resume, callback)
    bar = _progress(settings.verbose, settings.n_iter)
    if kind.grows_iterates:
        _run_boosting_loop(game, settings, recorder, callback, bar)
    elif exact:  # the objective's smooth proxy minimized by L-BFGS (method="unconstrained")
        run_lbfgs(game, players_spec, settings, recorder, callback, bar)
    elif settings.loop != "python" and refusal is None:
        _run_core_loop(game, players_spec, val_spec, settings, rng, sizes, minibatch, recorder, callback, bar)
    else:
        _run_python_loop(game, players_spec, spec, settings, rng, sizes, minibatch, recorder, callback, bar,
                         estimators, passes)
    if bar is not None:
        bar.close()
    result = recorder.result(method, feature_map, settings)
    result = result if resume is None else joined(resume, result)
    result.feature_names = _training_feature_names(problem)
    result.training_problem = problem  # the K-class default solution re-fits its rules on it
    return result


#: The most constraints of a problem whose window averages get threshold-rule candidates (``_rules_apply``).
MAX_RULE_CONSTRAINTS = 1000


def _rules_apply(problem, spec, feature_map, fitted_iterates, settings):
    """Whether the window averages' threshold rules are candidates (``_solutions._candidates``).

    Two-class problems (a :class:`~rateopt.Problem` whose rows are in this
    process: not a game spec, nor a Dask dataset's partitions) with
    constraints (at most :data:`MAX_RULE_CONSTRAINTS`: the threshold LP has a
    row per constraint, the game's pass does not), trained as linear models
    with an intercept; not for fitted iterates (boosting, estimator oracles),
    trainable offsets, nor non-linear metrics (as the window averages).
    """
    return (not isinstance(problem, GameSpec) and not spec.arity.multiclass and feature_map is None
            and all(isinstance(b, Block) for b in spec.blocks)  # rows in this process (not Dask partitions)
            and not fitted_iterates and 0 < spec.n_constraints <= MAX_RULE_CONSTRAINTS and not spec.n_offsets
            and spec.metric is None
            and not spec.metric_constraints and getattr(settings, "fit_intercept", True))


def _training_feature_names(problem):
    """The string column names of the problem's feature DataFrames (None for arrays, or columns that disagree)."""
    datasets = getattr(problem, "datasets", None)
    if not hasattr(datasets, "values"):
        return None
    names = {feature_names_of(ds.X) for ds in datasets.values() if getattr(ds, "X", None) is not None}
    return names.pop() if len(names) == 1 else None


def draw_rows(rng, n, batch, sort=True):
    """One minibatch: ``batch`` rows of ``n`` drawn uniformly with replacement, in increasing order.

    Sorted, the kernel visits them in memory order (hardware prefetch instead of
    a cache miss per row); the sum over the batch is the same up to round-off.
    Both training loops draw through this function, so they see the same rows.
    ``sort=False`` leaves the sort to the caller: the core loop sorts each
    iteration's rows itself (``run_train_loop(sort_rows=True)``), in a fraction
    of ``numpy.sort``'s time.
    """
    rows = rng.integers(0, n, batch)
    if sort:
        rows.sort()
    return rows


def draw_segment(rng, n, batch, n_draws):
    """``n_draws`` unsorted minibatches of one dataset, ``(n_draws, batch)``: the rows of ``n_draws``
    successive ``draw_rows(rng, n, batch, sort=False)`` calls, in one call of the generator.

    NumPy's bounded integers take their words from the bit generator one after another, with
    no state of their own between calls, so one draw of ``n_draws * batch`` integers is the
    same sequence (and leaves the generator in the same state) as ``n_draws`` draws of
    ``batch``; one call saves the per-call overhead (500 draws of Adult's eighth, 4,273 rows:
    5.9 ms of CPU instead of 11.7).
    """
    return rng.integers(0, n, (n_draws, batch))


def _run_python_loop(game, players_spec, spec, settings, rng, sizes, minibatch, recorder, callback, bar, estimators,
                     passes):
    """The reference driver: any game, one pass of its spec (``run_pass``) and one ``game.step`` per iteration."""
    for t in range(settings.n_iter):
        if estimators:  # the iterate is a fitted classifier: its rates come from its decisions
            current, theta, bias, offsets = game.model(), np.zeros(0), 0.0, None
            result = DecisionPass(decision_rates(spec, current))
            full_rates = result.rates
        else:
            current = None
            theta, bias = game.model()
            rows = [None if settings.batch_size >= n else draw_rows(rng, n, settings.batch_size)
                    for n in sizes] if minibatch else None
            offsets = game.offsets()
            result = players_spec.run_pass(theta, bias, game.combinations(), rows=rows, offsets=offsets, **passes)
            full_rates = None if minibatch else result.rates
        stop = False
        if t % settings.record_every == 0 or t == settings.n_iter - 1:
            # the callback's info (objective and constraint values) only when there is a callback to read it
            info = recorder.record(t, theta, bias, game.multipliers(), full_rates, offsets=offsets, model=current,
                                   with_info=callback is not None)
            stop = callback is not None and bool(callback(t, info))
        if bar is not None:
            bar.update(1)
        if stop:
            break
        game.step(result)


def _run_boosting_loop(game, settings, recorder, callback, bar):
    """The driver for a :class:`~rateopt.BoostingModel`: iterate ``t`` is the ensemble of the first ``t`` trees.

    Each iteration measures the current ensemble's 0-1 rates from the scores its
    player keeps, records the prefix (recording costs no copy of the trees),
    and lets the game step: the multipliers on the rates, the model player by
    one tree on the proxy Lagrangian's per-row derivatives. ``n_iter`` trees
    give ``n_iter + 1`` iterates, from the empty ensemble (every score 0) to
    the whole booster. Each iteration costs one core pass over the training
    scores (:func:`rateopt.core.boosting_pass`) besides the backend's tree.
    The training scores of the thresholded solution's candidate prefixes
    (``_predictors._boosted_mixture.candidate_rounds``) are kept as they pass
    (their quantile bins, and the last prefix's exact scores), so that the
    solution scores at most its support's other prefixes again.
    """
    player, T = game.model_player, settings.n_iter
    multiclass = game.spec.arity.multiclass  # K classes: no thresholded solution, so no kept scores
    keep = set(candidate_rounds(T).tolist()) - {0} if game.spec.n_constraints and not multiclass else set()
    no_weights, no_bias = game.spec.arity.player_zeros(0)  # the records' empty weights of this arity
    for t in range(T + 1):
        # one core pass: the rates the multipliers see and the derivatives the next tree grows on
        result = player.run_pass(game.combinations())
        if t == T:  # no tree follows: the derivatives go before the last prefix's scores are kept (its peak)
            result.grad = None
            player.release_derivatives()
        if t in keep:
            player.booster.keep_training_scores(player.scores, exact=t == T)
        stop = False
        if t % settings.record_every == 0 or t == T:
            info = recorder.record(t, no_weights, no_bias, game.multipliers(), result.rates, model=player.prefix(),
                                   with_info=callback is not None)
            stop = callback is not None and bool(callback(t, info))
        if bar is not None and t:
            bar.update(1)
        if stop or t == T:
            break
        game.step(result)
    player.finish()  # the scores and derivatives (the backend's buffers) are no longer read



#: The training parameters of a linear model player that a boosted model sets on itself, or does without.
_BOOSTING_REFUSED = {
    "learning_rate": "set BoostingModel(learning_rate=...): the trees' shrinkage",
    "optimizer": "trees are grown by the backend, not by a gradient optimizer",
    "margin": "the trees' proxies have a fixed margin (logistic, or the squared hinge at margin 1)",
    "batch_size": "every tree is grown on all training rows",
}


def _boosting_params(model, game_cls, params):
    """``params`` for a boosted model: ``n_iter`` from ``n_rounds``, every iterate recorded, refusals."""
    if "oracle" in game_cls.reads:
        raise ValueError(f"method={game_cls.name!r} does not train a model player on the proxy Lagrangian: "
                         "BoostingModel trains with 'proxy-swap' (the default), 'proxy-external', 'lagrangian', "
                         "'three-player' or 'unconstrained'")
    table = defaults(TRAIN_PARAMS)
    given = sorted(name for name in _BOOSTING_REFUSED if params.get(name, table[name]) != table[name])
    if given:
        raise ValueError(f"BoostingModel does not use {given}: "
                         + "; ".join(f"{name}: {_BOOSTING_REFUSED[name]}" for name in given))
    params = dict(params)
    if model.n_rounds is not None:
        if params.get("n_iter") is not None and params["n_iter"] != model.n_rounds:
            raise ValueError(f"n_iter={params['n_iter']!r} and BoostingModel(n_rounds={model.n_rounds}) disagree: "
                             "one tree is grown per iteration; give the number once")
        params["n_iter"] = model.n_rounds
    if params.get("record_every") is None:
        params["record_every"] = 1  # a prefix is free to record, and its rates are measured anyway
    return boosted_lambda_floor(game_cls, params)


def _refuse_for_boosting(spec, val_spec, *, init, resume, checkpoint):
    """What the boosted model player cannot do, refused before any tree is grown."""
    if init is not None or resume is not None or checkpoint is not None:
        raise ValueError("BoostingModel: init, resume and checkpoint are for linear models (a booster is not "
                         "stored in rateopt's result files)")
    if spec.n_offsets:
        raise ValueError("BoostingModel cannot train the thresholds of ROC-AUC goals (offset atoms)")
    if spec.arity.multiclass and val_spec is not None:
        raise ValueError("BoostingModel on K classes takes no validation dataset yet (the prefixes' validation "
                         "statistics are not counted): evaluate the solution on held-out rows instead")
    remote = [blk.name for blk in spec.blocks if type(blk) not in (Block, ClassBlock)]
    if remote:
        raise ValueError(f"BoostingModel trains on rows in this process; the datasets {remote} are not")


#: Minibatch rows drawn per core call (the rows of later iterations are drawn before the next call).
_ROWS_PER_SEGMENT = 1 << 20


def _warmup_refusal(game):
    """Why the core loop cannot run this game's objective warm-up (None without one)."""
    if game.warmup_steps():
        return "objective_warmup is set (the warm-up runs in the Python driver)"
    return None


#: The core loop reads the constraint map dense: beyond this many entries (128 MiB) the Python loop runs.
_CORE_LOOP_MAP_ENTRIES = 1 << 24
#: A sparse map (at most 1/_CORE_LOOP_SPARSE_RATIO of its dense entries stored) runs in the Python loop from this
#: many dense entries on: the core loop's dense products cost more per iteration than the Python loop's overhead
#: (one-row groups under parity, 100 iterations: 400 groups, 3.2e5 dense entries, 0.20 s core, 0.06 s Python;
#: 2,800 groups 26.6 s against 0.145 s; equalized odds over 1,000 groups of 4 rows 10.5 s against 0.18 s,
#: bench/results/many_groups_train_loop.md; the same numbers either way).
_CORE_LOOP_SPARSE_ENTRIES = 1 << 18
_CORE_LOOP_SPARSE_RATIO = 64


def _core_loop_refusal(game_cls, spec):
    """Why the core loop cannot run this training (None when it can)."""
    if spec.arity.core_loop_refusal() is not None:
        return spec.arity.core_loop_refusal()
    if game_cls.core_loop() is None:
        return (f"method {game_cls.name!r} has no core loop (its game class sets no core_program, or overrides "
                "a method the core program reimplements)")
    if spec.n_offsets:
        return "the problem has trainable offsets (offset atoms, e.g. ROC-AUC goals)"
    m, n = spec.C.shape
    if m * n > _CORE_LOOP_MAP_ENTRIES or (m * n > _CORE_LOOP_SPARSE_ENTRIES
                                         and spec.C.nnz * _CORE_LOOP_SPARSE_RATIO <= m * n):
        return (f"its constraint map is large ({m} constraints x {n} atoms, {spec.C.nnz} stored entries): the core "
                "loop reads it as a dense matrix, the Python loop through its sparse factors")
    remote = [blk.name for blk in spec.blocks if type(blk) not in (Block, ClassBlock)]
    if remote:
        return (f"the datasets {remote} are not in this process (e.g. rateopt.dask partitions: each "
                "iteration's kernel pass runs on their workers)")
    return None


def _loop_state(game, n_features, update):
    """The core loop's copy of the players' initial state (so both loops start from the same numbers)."""
    mp, player = game.model_player, getattr(game, "player", None)
    matrix, lam = np.zeros((1, 1)), np.zeros(0)
    if isinstance(player, SwapRegretPlayer):
        matrix = player.log_M if update == "multiplicative" else player.M
        lam = player.lam
    elif isinstance(player, LagrangePlayer):
        lam = player.lam
    return core.LoopState(theta=np.array(mp.theta[:n_features], dtype=np.float64), bias=np.array([mp.bias]),
                          opt_m=np.array(mp._m, dtype=np.float64), opt_v=np.array(mp._v, dtype=np.float64),
                          opt_t=np.array([mp._t], dtype=np.int64), matrix=np.array(matrix, dtype=np.float64),
                          lam=np.array(lam, dtype=np.float64))


def _n_records(n_iter, record_every):
    """Iterations ``t < n_iter`` with ``t % record_every == 0``, plus the last one."""
    return -(-n_iter // record_every) + (1 if (n_iter - 1) % record_every else 0)


def _run_core_loop(game, players_spec, val_spec, settings, rng, sizes, minibatch, recorder, callback, bar):
    """The same game as :func:`_run_python_loop`, its iterations in one core call (``rateopt.core.run_train_loop``).

    Minibatch rows are drawn here, with the driver's generator in the driver's
    order, for a segment of iterations before each core call: the two loops
    see the same rows. ``callback`` and the progress bar are served between
    iterations, with the GIL taken for them only.
    """
    T, d = settings.n_iter, players_spec.n_features
    program = type(game).core_loop()
    state = _loop_state(game, d, settings.update)
    records = core.LoopRecords.allocate(_n_records(T, settings.record_every), d, players_spec.n_constraints,
                                        players_spec.n_atoms, None if val_spec is None else val_spec.n_atoms)
    blocks = [(b.X, b.atoms, b.atom_ids) for b in players_spec.blocks]
    val_blocks = [] if val_spec is None else [(b.X, b.atoms, b.atom_ids) for b in val_spec.blocks]
    handed = [0]  # records already handed to the callback

    def on_progress(t, n_records):
        if bar is not None:
            bar.update(t + 1 - bar.n)
        if n_records == handed[0]:
            return False
        handed[0] = n_records
        if callback is None:
            return False
        i = n_records - 1
        recorder.take(records, n_records)  # the callback may read the records so far (e.g. a Checkpoint)
        return bool(callback(t, recorder.info(records.rates[i], records.multipliers[i].copy())))

    args = dict(n_iter=T, record_every=settings.record_every, optimizer=settings.optimizer,
                learning_rate=settings.learning_rate, l2=settings.l2, radius=settings.radius,
                fit_intercept=settings.fit_intercept, eta_lambda=settings.eta_lambda or 0.0, update=settings.update,
                lambda_radius=settings.lambda_radius, lambda_floor=settings.lambda_floor, proxy=settings.proxy,
                margin=settings.margin,
                val_blocks=val_blocks, callback=on_progress, progress_every=_progress_every(settings),
                n_threads=settings.n_threads)
    C, kappa, c0 = np.ascontiguousarray(players_spec.C), players_spec.kappa, players_spec.c0
    if not minibatch:
        core.run_train_loop(blocks, program, C, kappa, c0, state, records, **args)
    else:
        batch = settings.batch_size
        sampled = [batch < n for n in sizes]
        segment = max(1, _ROWS_PER_SEGMENT // (batch * sum(sampled)))
        t = 0
        while t < T:
            t_end = min(T, t + segment)
            if sum(sampled) == 1:  # one sampled dataset: the segment's draws in one call
                rows = draw_segment(rng, sizes[sampled.index(True)], batch, t_end - t)[:, None, :]
            else:
                rows = np.empty((t_end - t, sum(sampled), batch), dtype=np.int64)
                for i in range(t_end - t):  # the driver's draws, in its order
                    rows[i] = [draw_rows(rng, n, batch, sort=False) for n, s in zip(sizes, sampled) if s]
            out = core.run_train_loop(blocks, program, C, kappa, c0, state, records, t_begin=t, t_end=t_end,
                                      rows=rows, sampled=sampled, sort_rows=True, **args)
            if out.status == "stopped":
                break
            t = t_end
    recorder.take(records)


def _progress_every(settings):
    """How often the core loop comes back for the progress bar and Ctrl-C (besides every record)."""
    return 64 if settings.verbose or settings.record_every > 64 else 0


class _Recorder:
    """The recorded iterates: model, multipliers and full-data atom rates (train and validation)."""

    def __init__(self, spec, val_spec, passes, kind):
        self.spec, self.val_spec, self.passes, self.kind = spec, val_spec, passes, kind
        self.rate_map = RateMap.of(spec)
        self.rows = {k: [] for k in ("w", "b", "it", "lam", "rates", "val_rates", "offsets", "models")}
        self.n_iter = 0
        self._averages = {}  # first iteration of a window -> its average's (rates, validation rates)
        #: The two-class problem whose threshold rules of the window averages are candidates (None: none are)
        self.rule_problem = None
        self._rule_cells = None
        self._rules = {}  # first iteration of a window -> its folded rules' records
        self._trivial = None  # (fit_intercept, the trivial rules' records) once built
        self._taken = None  # the core loop's record buffers the rows were adopted from (:meth:`take`)

    def rates_of(self, spec, theta, bias, offsets=None):
        """The full-data atom rates of one linear iterate on ``spec``."""
        return spec.run_pass(theta, bias, np.zeros(spec.n_atoms), offsets=offsets, **self.passes).rates

    def record(self, t, theta, bias, multipliers, rates=None, offsets=None, model=None, with_info=True):
        """Record iterate ``t`` (``rates``: its full-data atom rates when already known; ``offsets``:
        the trainable thresholds of offset atoms, a training variable recorded beside the model;
        ``model``: a fitted classifier iterate, whose rates come from its decisions). Returns the
        callback's :meth:`info` (None without ``with_info``: nothing reads it)."""
        if model is not None:
            self.rows["models"].append(model)
        rates = self.rates_of(self.spec, theta, bias, offsets) if rates is None else rates
        r = self.rows
        r["w"].append(theta.T.copy())  # the records' layout: (n_features,), or (K, n_features)
        r["b"].append(bias)
        r["it"].append(t)
        r["lam"].append(multipliers)
        r["rates"].append(rates)
        r["offsets"].append(np.zeros(0) if offsets is None else np.array(offsets, dtype=np.float64))
        if self.val_spec is not None:
            r["val_rates"].append(decision_rates(self.val_spec, model) if model is not None
                                  else self.rates_of(self.val_spec, theta, bias, offsets))
        self.n_iter = t + 1
        return self.info(rates, multipliers) if with_info else None

    def info(self, rates, multipliers):
        """The callback's ``info`` of an iterate with these atom rates and multipliers."""
        return {"objective": self.rate_map.objective(rates), "constraints": self.rate_map.constraints([rates])[0],
                "multipliers": multipliers}

    def take(self, records, n=None):
        """Adopt the first ``n`` (default ``records.count``) records of the core loop (a
        :class:`rateopt.core.LoopRecords`). The loop writes each record once, so a later call on the same
        buffers adopts only the records added since (a callback at every record costs O(1) each)."""
        n, r = records.count if n is None else n, self.rows
        k = len(r["it"]) if self._taken is records and len(r["it"]) <= n else 0
        if k == 0:
            for key in ("w", "b", "it", "lam", "rates", "offsets", "val_rates"):
                r[key] = []
        self._taken = records
        r["w"].extend(records.weights[k:n])
        r["b"].extend(float(b) for b in records.biases[k:n])
        r["it"].extend(int(t) for t in records.iterations[k:n])
        r["lam"].extend(records.multipliers[k:n])
        r["rates"].extend(records.rates[k:n])
        r["offsets"].extend(np.zeros(0) for _ in range(k, n))
        if records.val_rates is not None:
            r["val_rates"].extend(records.val_rates[k:n])
        self.n_iter = int(records.iterations[n - 1]) + 1 if n else 0

    def trivial_rules(self, fit_intercept=True):
        """The trivial rules of the model kind, as records to put before the iterates (None when they do not
        apply: see ``ModelKind.trivial_rules``). They depend on the first record only (its shapes, or a
        booster's first prefix), so they are built once, at the first call after a record, and cached."""
        if self._trivial is None or self._trivial[0] != fit_intercept:
            if not self.rows["w"]:
                return None
            self._trivial = (fit_intercept, self.kind.trivial_rules(self, fit_intercept))
        return self._trivial[1]

    def candidates(self, fit_intercept=True):
        """The candidates besides the recorded iterates, in the order the result puts them before the
        records (last first): the window averages' threshold rules, the window averages, the trivial rules.
        Both the result (:meth:`result`) and the stopping rule (:meth:`candidate_scores`) read them here."""
        return [c for c in (self.threshold_rules(), self.window_averages(), self.trivial_rules(fit_intercept))
                if c is not None]

    def window_averages(self):
        """The window averages of the recorded iterates, as records (``_solutions._candidates``; None if none).

        Each complete window's average is scored once (one pass; cached, so a
        checkpoint after every record does not score it again). Not for
        fitted-estimator iterates, problems with trainable offsets, nor
        non-linear metrics (the LP then only bounds a mixture's value: on the
        Law KLD reproduction, the averages' mixture had test KLD 2.3 for 0.04).
        """
        r = self.rows
        if r["models"] or self.spec.n_offsets or self.rate_map.metric is not None or self.rate_map.metric_constraints:
            return None
        out = []
        for w, b, lam, start in window_averages(r["it"], r["w"], r["b"], r["lam"]):
            if start not in self._averages:
                self._averages[start] = (self.rates_of(self.spec, w.T, b),
                                         None if self.val_spec is None else self.rates_of(self.val_spec, w.T, b))
            out.append((w, b, AVERAGE_ITERATION, lam, *self._averages[start]))
        return self._as_records(out)

    def _as_records(self, rows):
        """``(w, b, it, lam, rates, val_rates)`` rows as records (``val_rates`` empty without a validation set;
        None if there are no rows)."""
        if not rows:
            return None
        out = {k: [row[i] for row in rows] for i, k in enumerate(("w", "b", "it", "lam", "rates"))}
        out["val_rates"] = [row[5] for row in rows] if self.val_spec is not None else []
        return out

    def candidate_scores(self, fit_intercept=True):
        """The objectives (n,) and constraint values (n, m) of the candidates so far besides the records
        (:meth:`candidates`: the stopping rule's LPs hold them beside the records, as the solution's does)."""
        rates = [r for c in self.candidates(fit_intercept) for r in c["rates"]]
        if not rates:
            return np.zeros(0), np.zeros((0, len(self.rate_map.constraint_names)))
        return (np.array([self.rate_map.objective(r) for r in rates]),
                np.asarray(self.rate_map.constraints(rates), dtype=np.float64).reshape(len(rates), -1))

    def threshold_rules(self):
        """The folded threshold rules of the window averages, as records (``_solutions._candidates``; None if none).

        Only when :attr:`rule_problem` is set (two-class linear runs with
        constraints; :func:`run_game`). Each window's rules are fitted and
        scored once (cached, like the averages).
        """
        if self.rule_problem is None:
            return None
        r = self.rows
        out = []
        for w, b, lam, start in window_averages(r["it"], r["w"], r["b"], r["lam"]):
            if not rule_window(start):
                continue
            if start not in self._rules:
                if self._rule_cells is None:
                    self._rule_cells = rule_cells(self.rule_problem)
                rules = folded_threshold_rules(self.rule_problem.compiled, self._rule_cells, w, b)
                self._rules[start] = [(wr, br, self.rates_of(self.spec, wr, br),
                                       None if self.val_spec is None else self.rates_of(self.val_spec, wr, br))
                                      for wr, br, _ in rules]
            out += [(wr, br, THRESHOLD_RULE_ITERATION, lam, rates, val_rates)
                    for wr, br, rates, val_rates in self._rules[start]]
        return self._as_records(out)

    def result(self, method, feature_map, settings):
        r, A = dict(self.rows), self.spec.n_atoms
        val = self.val_spec is not None
        # the candidates: the trivial rules, the window averages, their threshold rules, then the recorded iterates
        for extra in self.candidates(getattr(settings, "fit_intercept", True)):
            r = {k: extra.get(k, []) + list(v) for k, v in r.items()}
            if not extra.get("models"):
                r["models"] = []
        return TrainResult(
            method=method, weights=np.array(r["w"]), biases=np.array(r["b"]), iterations=np.array(r["it"]),
            multipliers=np.array(r["lam"]), atom_rates=np.array(r["rates"]).reshape(len(r["rates"]), A),
            rate_map=self.rate_map, n_iter=self.n_iter,
            val_atom_rates=np.array(r["val_rates"]) if val else None,
            val_rate_map=RateMap.of(self.val_spec) if val else None,
            feature_map=feature_map, settings=settings.as_dict(), classes=self.spec.classes,
            offsets=np.array(r["offsets"]).reshape(len(r["offsets"]), self.spec.n_offsets) if self.spec.n_offsets
            else None, models=r["models"] or None)


def _warm_start(game, init):
    """Start the game's model player at ``init = (theta, bias)``."""
    theta, bias = init
    theta = np.asarray(theta, dtype=np.float64)
    player = getattr(game, "model_player", None)
    if player is None or theta.shape != player.theta.shape or not np.all(np.isfinite(theta)) \
            or np.shape(bias) != np.shape(player.bias) or not np.all(np.isfinite(bias)):
        raise ValueError(f"init must be (theta, bias) with finite theta of shape "
                         f"{None if player is None else player.theta.shape}, got shape {theta.shape}")
    player.set_model(theta.T, bias)


def _resolve_method(problem, method):
    """``(name, game class)``: ``"auto"`` resolved, and a game that cannot train the problem's metrics refused."""
    source = problem.compiled if hasattr(problem, "compiled") else problem
    rows = getattr(source, "metric", None)  # a K-class MacroF1 is linearized by the games themselves
    metrics = ([rows.metric] if getattr(rows, "metric", None) is not None else []) + [
        r.metric for r in getattr(source, "metric_constraints", ())]
    if method == "auto":
        method = "three-player" if metrics else "proxy-swap"
    game_cls = get_game(method)
    if metrics and not game_cls.accepts_metric:
        raise ValueError(f"the problem has non-linear metrics ({', '.join(map(repr, metrics))}): method={method!r} "
                         "trains affine objectives and constraints only; use method='three-player' (the default "
                         "for metrics)")
    return method, game_cls


def default_l2_of(problem, method="auto"):
    """The L2 strength of the linear model :func:`run_game` builds for ``problem`` and ``method`` given no model.

    The method's ``Game.default_l2`` on the problem's number of classes
    (``"auto"`` for ``"unconstrained"`` on two classes, 0 otherwise); the
    estimator and the command line build their models with it when ``l2`` is
    None (``rateopt._params.build_model``).
    """
    return _resolve_method(problem, method)[1].default_l2(arity_of(problem))


def resolve_model(problem, model, default_l2=0.0):
    """The model to train: ``model``, or a linear model with the problem's ``regularization``.

    ``default_l2``: the strength of the linear model built when neither a model
    nor the problem's ``regularization`` is given (the method's
    ``Game.default_l2``: ``"auto"`` for ``"unconstrained"`` on two classes, 0 otherwise).
    """
    reg = getattr(problem, "regularization", None)
    if model is None:
        return LinearModel(l2=default_l2 if reg is None else reg)
    kind = model_kind_of(model)  # refuses what is not a model spec
    if reg is not None and not kind.takes_l2:
        raise ValueError(f"problem.regularization={reg!r} is an L2 strength for linear models: regularize a "
                         "BoostingModel with its backend's params (e.g. lambda_l2)")
    if reg is not None and model.l2 != reg:
        raise ValueError(f"problem.regularization={reg!r} and model.l2={model.l2!r} disagree: "
                         "state the L2 strength once (on the model, or on the problem with model=None)")
    return model


def prepare_specs(problem, validation, model, threads):
    """Validated game specs of the problem and the validation problem, on kernel features if asked."""
    spec = _as_spec(problem)
    val_spec = None if validation is None else _as_spec(validation)
    if val_spec is not None and val_spec.n_constraints != spec.n_constraints:
        raise ValueError("validation must have the same constraints as problem")
    if val_spec is not None and val_spec.n_offsets != spec.n_offsets:
        raise ValueError(f"validation has {val_spec.n_offsets} trainable thresholds, problem {spec.n_offsets}: "
                         "state the same goals on both")
    feature_map = None
    if isinstance(model, KernelModel):
        feature_map = _fit_feature_map(spec, model, threads)
        spec = spec.mapped(feature_map, threads)
        if val_spec is not None:
            val_spec = val_spec.mapped(feature_map, threads)
    return spec, val_spec, feature_map


def _progress(verbose, total):
    if not verbose:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc="rateopt", leave=False)


def _fit_feature_map(spec, model, threads):
    """Landmarks come from the training dataset (the block named "train", else the first)."""
    base = next((b for b in spec.blocks if b.name == "train"), spec.blocks[0])
    return model.fit_map(base.X, n_threads=threads)


def _as_spec(problem):
    if isinstance(problem, GameSpec):
        return revalidated(problem)
    if not hasattr(problem, "compiled") or not hasattr(problem, "datasets"):
        raise TypeError(f"problem must be a rateopt Problem, got {type(problem).__name__}")
    return arity_of(problem).game_spec(problem)
