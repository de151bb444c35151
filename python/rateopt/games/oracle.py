"""Oracle games (Cotter et al., 2019, Algorithms 1 and 2; Narasimhan et al., 2019, Algorithm 1): the model player is a best response.

Each round the multipliers fix a combination of the rates and an oracle
(:mod:`rateopt.oracles`, ``train(..., oracle=...)``) returns a model minimizing
it; the driver's kernel pass then measures that model's 0-1 rates, on which
the multipliers move. So iteration ``t`` evaluates ``theta(t) = O(L(., lam(t)))``
and its step computes ``lam(t+1)`` and ``theta(t+1)``.

* ``"oracle-lagrangian"`` (Algorithm 1, OracleLagrangian): Lagrange multipliers
  ``lam >= 0`` (``||lam||_1 <= R`` with ``lambda_radius``), projected gradient
  ascent on the 0-1 constraint values; the oracle minimizes
  ``c0 . p + lam . (C p)``. Lemma 3's step ``R / (B_2 sqrt(2T))`` uses the
  2-norm bound ``B_2 = sqrt(m) B`` of the multipliers' gradient (R = 1 without
  ``lambda_radius``). The guarantee is for the uniform mixture (Theorem 2).
* ``"oracle-proxy"`` (Algorithm 2, OracleProxyLagrangian): the swap-regret
  multipliers of ``"proxy-swap"`` on the simplex; the oracle minimizes
  ``lam_0 c0 . p + lam_{1:} . (C p)``. Theorem 6's mixture weighs iterate t by
  ``lam_0(t)``: ``result.solution("T-stochastic", weighting="lambda")``.

With an exact oracle over a model class (:class:`~rateopt.oracles.PoolOracle`,
:class:`~rateopt.oracles.ThresholdOracle`) the theorems hold with rho = 0 on
the training sample.
"""

from __future__ import annotations

import math

import numpy as np

from .._training._players import LagrangePlayer, SwapRegretPlayer
from ._base import Game, register
from .three_player import ThreePlayerGame

__all__ = ["OracleLagrangianGame", "OracleProxyGame", "ThreePlayerOracleGame"]


class _OracleGame(Game):
    reads = frozenset({"oracle"})  # and what the oracle reads (its ``reads``)

    def __init__(self, spec, settings):
        super().__init__(spec, settings)
        if settings.oracle is None:
            raise ValueError(f"method={self.name!r} needs an oracle: train(..., oracle=rateopt.oracles."
                             "PoolOracle(...)) or another rateopt.oracles.Oracle")
        if getattr(spec, "n_offsets", 0):
            raise ValueError(f"method={self.name!r} cannot train the thresholds of ROC-AUC goals (offset atoms): "
                             "the oracles minimize rates of the model's own decisions; use a gradient game")
        self.best_response = settings.oracle.bind(spec, settings)
        #: Whether the iterates are fitted classifiers (an estimator oracle) rather than linear models.
        self.estimator_iterates = bool(getattr(settings.oracle, "returns_estimators", False))
        self.player = self._player()
        self._respond(None)

    def _coef(self):
        lam0, lam = self.player.weights()
        coef = lam0 * self.spec.c0
        if self.spec.n_constraints:
            coef = coef + lam @ self.spec.C
        return coef

    def _respond(self, warm_start):
        if self.estimator_iterates:
            self.current = self.best_response(self._coef(), warm_start)
            return
        theta, bias = self.best_response(self._coef(), warm_start)
        theta = np.asarray(theta, dtype=np.float64).reshape(-1)
        if theta.shape != (self.spec.n_features,) or not (np.all(np.isfinite(theta)) and np.isfinite(bias)):
            raise ValueError(f"the oracle returned a model of {theta.shape[0]} weights (expected "
                             f"{self.spec.n_features}) or a non-finite value")
        self.theta, self.bias = theta, float(bias)

    def model(self):
        return self.current if self.estimator_iterates else (self.theta, self.bias)

    def combinations(self):
        # The oracle needs no gradient: the kernel pass only measures the rates.
        return np.zeros(self.spec.n_atoms)

    def step(self, result):
        if self.spec.n_constraints:
            self.player.update(self.spec.constraints(result.rates))
        self._respond(self.current if self.estimator_iterates else (self.theta, self.bias))

    def multipliers(self):
        return self.player.state()


@register
class OracleLagrangianGame(_OracleGame):
    """``method="oracle-lagrangian"``: Cotter et al. (2019) Algorithm 1 (Lagrangian with an oracle)."""

    name = "oracle-lagrangian"
    reads = _OracleGame.reads | {"eta_lambda", "lambda_radius"}

    def _player(self):
        return LagrangePlayer(self.spec.n_constraints, eta_lambda=self.settings.eta_lambda,
                              radius=self.settings.lambda_radius)

    @classmethod
    def default_lambda_radius(cls, spec, settings):
        """``R = B_0 / gamma``: Theorem 2 needs ``R > ||lam*||_1``, which this bounds.

        A classifier ``h~`` meeting every constraint with margin ``gamma > 0`` bounds
        the optimal multipliers: ``||lam*||_1 <= (g0(h~) - g0*) / gamma <= B_0 / gamma``
        with ``B_0 = sum_a |c0_a|`` the objective's range over atom rates in
        [0, 1]. ``h~`` is the better of the two constant classifiers (every atom
        rate 1, or every one 0), whose margins are computed exactly (a parity
        goal's is its slack, a budget's its room). None (no cap; the step size
        of ``R = 1``) when neither constant meets every constraint with a
        margin, or there is no constraint.
        """
        if spec.n_constraints == 0 or spec.n_offsets:
            return None
        b0 = float(np.abs(spec.c0).sum())
        gamma = max(float(np.min(-spec.constraints(np.full(spec.n_atoms, r)))) for r in (0.0, 1.0))
        if not (gamma > 0 and b0 > 0 and math.isfinite(b0 / gamma)):
            return None
        return b0 / gamma

    @classmethod
    def default_eta_lambda(cls, spec, settings):
        """Lemma 3: ``R / (B_2 sqrt(2T))`` with ``B_2 = sqrt(m) B`` bounding ``||grad lam||_2``."""
        R = 1.0 if settings.lambda_radius is None else settings.lambda_radius
        B2 = math.sqrt(max(spec.n_constraints, 1)) * spec.constraint_bound()
        return R / (B2 * math.sqrt(2 * max(settings.n_iter, 1)))


@register
class OracleProxyGame(_OracleGame):
    """``method="oracle-proxy"``: Cotter et al. (2019) Algorithm 2 (proxy-Lagrangian with an oracle, swap regret)."""

    name = "oracle-proxy"
    reads = _OracleGame.reads | {"eta_lambda", "update"}

    def _player(self):
        # The paper's Algorithm 2 as stated (uniform M, no floor: the base
        # defaults, which this game does not read): Theorem 6's bound is stated for it.
        return SwapRegretPlayer(self.spec.n_constraints, eta_lambda=self.settings.eta_lambda,
                                update=self.settings.update, init=self.settings.lambda_init,
                                floor=self.settings.lambda_floor)

    @classmethod
    def default_eta_lambda(cls, spec, settings):
        """Lemma 7: ``sqrt((m+1) ln(m+1) / (T B^2))``, B the largest possible ``|g_i|``."""
        k, T, B = spec.n_constraints + 1, max(settings.n_iter, 1), spec.constraint_bound()
        return math.sqrt(k * math.log(k) / (T * B * B)) if k > 1 else 0.0


@register
class ThreePlayerOracleGame(ThreePlayerGame):
    """``method="three-player-oracle"``: Narasimhan et al. (2019) Algorithm 1 (three players, the model a best response).

    The slack and multiplier players are those of ``"three-player"``
    (closed-form slack best responses for convex metrics, projected ascent on
    the 0-1 rates); the model player is the oracle's best response to the
    combination of rates they pose (``sum_k s_k lam_k z_k + nu . C p + ...``).
    With the plug-in oracle (:class:`~rateopt.oracles.PlugInOracle`, whose
    iterates are fitted rules, as an estimator oracle's) this is the COCO
    baseline of Narasimhan et al. (2019)'s Table 3;
    with an exact oracle, Theorem 1's ``O(1/sqrt(T)) + rho`` bound holds for
    the uniform mixture.
    """

    name = "three-player-oracle"
    reads = frozenset({"oracle", "eta_lambda", "lambda_radius"})

    def __init__(self, spec, settings):
        super().__init__(spec, settings)
        if settings.oracle is None:
            raise ValueError(f"method={self.name!r} needs an oracle: train(..., oracle=rateopt.oracles....)")
        if getattr(spec, "n_offsets", 0):
            raise ValueError(f"method={self.name!r} cannot train the thresholds of ROC-AUC goals")
        #: Whether the iterates are fitted classifiers (estimator and plug-in oracles) rather than linear models.
        self.estimator_iterates = bool(getattr(settings.oracle, "returns_estimators", False))
        self.best_response = settings.oracle.bind(spec, settings)
        self._respond(None)

    def _respond(self, warm_start):
        combos = self.combinations()
        coef = combos.coefs.sum(axis=0) if hasattr(combos, "coefs") else np.asarray(combos)
        if self.estimator_iterates:
            self.current = self.best_response(coef, warm_start)
            return
        theta, bias = self.best_response(coef, warm_start)
        self.theta, self.bias = np.asarray(theta, dtype=np.float64).reshape(-1), float(bias)

    def model(self):
        return self.current if self.estimator_iterates else (self.theta, self.bias)

    def step(self, result):
        self._step_multipliers(result)
        self._respond(self.current if self.estimator_iterates else (self.theta, self.bias))
