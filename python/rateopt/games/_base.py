"""What every training game implements, and the registry of games.

One iteration of :func:`rateopt.train` is::

    theta, bias = game.model()
    result = kernel_pass(spec, theta, bias, game.combinations())   # one pass per dataset
    game.step(result)                                              # every player moves

and the driver records ``(theta, bias)``, the atom rates and
``game.multipliers()`` every ``record_every`` iterations. A game never touches
data: it sees the compiled rate maps of its :class:`~rateopt._training._spec.GameSpec`
(``c0``, ``C``, ``kappa``) and the kernel's results (atom rates, the proxy value
of each combination it asked for, the weighted gradient).

A game may call: the players (``rateopt._training._players``), ``rateopt.core``'s
multiplier primitives, NumPy on vectors of atom or constraint size. It must not
loop over examples or call the kernel itself (the driver does, once).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import ClassVar

import numpy as np

from .._training._players import ModelPlayer
from .._training._spec import Combinations

__all__ = ["GAMES", "Game", "MultiplierGame", "Combinations", "register", "MODEL_PLAYER_SETTINGS",
           "LOOP_METHODS"]

GAMES: dict = {}

#: The settings a game with a gradient model player reads (its steps, and the proxies of the kernel pass).
MODEL_PLAYER_SETTINGS = frozenset({"optimizer", "learning_rate", "margin", "proxy"})

#: The methods whose arithmetic a core-loop program reimplements: a subclass
#: that overrides one of them runs in the Python driver (:meth:`Game.core_loop`).
LOOP_METHODS = ("__init__", "model", "offsets", "combinations", "step", "multipliers")


def register(cls):
    """Class decorator: make ``cls`` available as ``train(method=cls.name)``."""
    if not cls.name or cls.name in GAMES:
        raise ValueError(f"a game needs a new, non-empty name; got {cls.name!r}")
    GAMES[cls.name] = cls
    return cls


def model_combinations(spec, lam0, lam, proxy, c0=None):
    """The model player's proxy Lagrangian ``lam0 g~0 + sum_i lam_i g~i`` as combinations.

    ``c0``: the objective's coefficients (default ``spec.c0``; a game's
    :meth:`Game.objective_coef` for a linearized non-linear objective).

    With the hinge on both the objective and the constraints it is ONE
    combination ``lam0 c0 + lam C``, whose per-example net coefficient gives the
    tightest hinge bound (DESIGN.md §1). With another objective proxy (e.g.
    logistic) the objective and the constraints are two combinations, the
    constraints keeping the hinge: their sum of gradients is the model's.
    """
    c0 = spec.c0 if c0 is None else c0
    cons = lam @ spec.C if spec.n_constraints else np.zeros(spec.n_atoms)
    if proxy == "hinge":
        return Combinations.single(lam0 * c0 + cons)
    return Combinations(np.vstack([lam0 * c0, cons]), (proxy, "hinge"), np.ones(2))


class Game:
    """Base class of the training games.

    Subclasses set ``name`` (the ``method`` string) and implement
    :meth:`combinations`, :meth:`step` and :meth:`multipliers` (or take
    ``MultiplierGame``'s); the model player
    (gradient steps on the linear model) is provided here. What the driver
    needs to know of a game is on its class: :attr:`defaults`, :attr:`reads`,
    :attr:`resumable` and :attr:`core_program`, so a subclass registered under
    a new name keeps its parent's defaults and core loop.

    Parameters
    ----------
    spec : GameSpec
        The compiled problem (rate maps and validated data).
    settings : TrainSettings
        The validated training parameters.
    """

    name: ClassVar[str] = ""
    #: Whether the game trains a non-linear metric objective (``spec.metric``);
    #: the driver refuses such problems for the others.
    accepts_metric: ClassVar[bool] = False
    #: The game's values of the method-dependent training parameters (those
    #: whose default in :data:`rateopt._params.TRAIN_PARAMS` is None). A
    #: subclass inherits them; ``eta_lambda=None`` means
    #: :meth:`default_eta_lambda`. The study behind the tuned values is
    #: docs/defaults.md; the others are the papers' settings.
    defaults: ClassVar = MappingProxyType({
        "n_iter": 1000, "learning_rate": 0.01, "proxy": "hinge", "eta_lambda": None,
        "lambda_init": "uniform", "lambda_floor": 0.0})
    #: The game's defaults for K-class problems (a :class:`~rateopt._training._class_spec.ClassGameSpec`),
    #: or None when the game trains two classes only. Measured on synthetic three- and five-class
    #: demographic-parity problems: Adam at 0.02 (0.1 left the m-stochastic mixture 0.01-0.02 worse in
    #: error on three of four), 500 iterations.
    class_defaults: ClassVar = None
    #: K classes: the multipliers' default step is ``class_eta / B`` (B bounds every ``|g_i|``).
    class_eta: ClassVar = 1.0
    #: The game-specific training parameters the game reads (besides the
    #: driver's: iterations, records, minibatches, seeds, threads, stopping).
    #: :func:`rateopt._params.train_settings` refuses any other one given.
    reads: ClassVar[frozenset] = MODEL_PLAYER_SETTINGS
    #: Whether ``train(resume=...)`` can continue the game: its whole
    #: multiplier state is in the records (:mod:`rateopt._solutions._resume`).
    resumable: ClassVar[bool] = False
    #: Whether :meth:`step` reads the pass's ``proxy_values`` (False: a K-class pass skips computing them).
    reads_proxy_values: ClassVar[bool] = True
    #: The program of :func:`rateopt.core.run_train_loop` that runs the game
    #: whole in the core (a key of ``rateopt.core.LOOP_GAMES``), or None.
    core_program: ClassVar = None
    #: Whether the model player can minimize the game's objective exactly with ``optimizer="lbfgs"``
    #: (a fixed smooth objective: ``"unconstrained"`` only).
    exact_model_player: ClassVar[bool] = False

    def __init__(self, spec, settings):
        self.spec = spec
        self.settings = settings
        #: Steps taken (:meth:`multipliers_move` counts them; a resumed run starts at its records' iterations).
        self.n_steps = 0
        self.model_player = ModelPlayer(
            spec.n_features, optimizer=settings.optimizer, learning_rate=settings.learning_rate,
            l2=settings.l2, radius=settings.radius, fit_intercept=settings.fit_intercept,
            n_offsets=spec.n_offsets, arity=spec.arity)
        # A non-linear K-class objective (macro-F1) is linearized at the running average of the
        # iterates' statistics (Narasimhan et al. (2019)'s Frank-Wolfe objective player); None: the objective is affine.
        lin = spec.arity.linearized_objective(spec)
        self._linearization = None if lin is None else [lin, lin.start(), 0]

    def objective_coef(self):
        """The objective's coefficients the model player steps on.

        ``spec.c0``, or the gradient of a non-linear K-class objective at the
        running average of the statistics seen so far.
        """
        if self._linearization is None:
            return self.spec.c0
        metric, point, _ = self._linearization
        return metric.gradient(point)

    def observe(self, result):
        """Fold an iterate's statistics into the running average a linearized objective uses (no-op otherwise)."""
        if self._linearization is not None:
            lin = self._linearization
            lin[2] += 1
            lin[1] = result.rates.copy() if lin[2] == 1 else lin[1] + (result.rates - lin[1]) / lin[2]

    def warmup_steps(self):
        """The steps of the objective warm-up: ``round(objective_warmup * n_iter)`` (0 when off or unset)."""
        share = getattr(self.settings, "objective_warmup", None) or 0.0
        return int(round(share * self.settings.n_iter))

    def multipliers_move(self):
        """Count one step; False during the objective warm-up, when the multipliers stay where they start."""
        self.n_steps += 1
        return self.n_steps > self.warmup_steps()

    @classmethod
    def core_loop(cls):
        """The core-loop program that runs this class, or None.

        A subclass inherits its parent's program as long as it overrides none
        of :data:`LOOP_METHODS` (whose arithmetic the program reimplements);
        one that does runs in the Python driver, which calls its methods.
        """
        if cls.core_program is None:
            return None
        for klass in cls.__mro__:
            if "core_program" in vars(klass):
                return cls.core_program
            if any(method in vars(klass) for method in LOOP_METHODS):
                return None
        return None  # pragma: no cover - the loop always finds the declaring class

    @classmethod
    def default_l2(cls, arity):
        """The L2 strength of the linear model ``train`` builds when given no model: 0.

        Used when the problem states no ``regularization`` either; ``arity``
        is the problem's number of classes.
        """
        return 0.0

    @classmethod
    def default_optimizer(cls, params, model, arity):
        """The model player's optimizer when ``optimizer`` is None: ``"adam"``.

        ``params``: the training parameters as given (validated, before the
        game's defaults fill the None entries); ``model``: the model spec;
        ``arity``: the problem's number of classes.
        """
        return "adam"

    @classmethod
    def default_lambda_radius(cls, spec, settings):
        """The multipliers' L1 radius when ``lambda_radius`` is None (None: no cap)."""
        return None

    @classmethod
    def default_eta_lambda(cls, spec, settings):
        """The multipliers' default step size (None: the game has no multipliers)."""
        return None

    @classmethod
    def eta_lambda_for(cls, spec, settings):
        """The default step for ``spec``: :meth:`default_eta_lambda`, or ``class_eta / B`` for K classes."""
        return spec.arity.eta_lambda(cls, spec, settings)

    def model(self):
        """The current ``(theta, bias)`` the kernel evaluates."""
        return self.model_player.theta, self.model_player.bias

    def offsets(self):
        """The current trainable offsets (thresholds of offset atoms; empty without them)."""
        return self.model_player.offsets

    def combinations(self):  # pragma: no cover - abstract
        """The :class:`Combinations` the kernel evaluates at :meth:`model`."""
        raise NotImplementedError

    def step(self, result):  # pragma: no cover - abstract
        """Move every player, given the kernel's result at :meth:`model`."""
        raise NotImplementedError

    def multipliers(self):  # pragma: no cover - abstract
        """The multipliers recorded with the current iterate (objective weight first)."""
        raise NotImplementedError


class MultiplierGame(Game):
    """A game whose multipliers are one player, ``self.player`` (set by the subclass's ``__init__``).

    The model steps on the multiplier-weighted ``model_combinations``
    (``player.weights()``); after the objective warm-up the player updates on
    the pass's 0-1 constraint values; the records keep ``player.state()``.
    """

    def combinations(self):
        lam0, lam = self.player.weights()
        return model_combinations(self.spec, lam0, lam, self.settings.proxy, self.objective_coef())

    def step(self, result):
        self.model_player.step(result.grad, result.grad_bias, result.grad_offsets)
        self.observe(result)
        if self.spec.n_constraints and self.multipliers_move():
            self.player.update(self.spec.constraints(result.rates))

    def multipliers(self):
        return self.player.state()
