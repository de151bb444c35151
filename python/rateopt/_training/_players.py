"""The two players of the rate-constrained games.

* :class:`ModelPlayer` holds the linear model ``(theta, bias)`` (two classes,
  or K score columns) and takes (sub)gradient steps on the proxy Lagrangian: plain, Adagrad or Adam steps,
  L2 regularization ``l2/2 ||theta||^2`` (the bias is not regularized), and an
  optional projection onto the L2 ball ``||theta|| <= radius``.
* :class:`SwapRegretPlayer` is the proxy-Lagrangian multiplier player of
  Cotter et al. (2019), Algorithm 3: a left-stochastic ``(m+1, m+1)`` matrix ``M``, the
  multipliers ``lambda = M lambda`` on the (m+1)-simplex, updated with the 0-1
  constraint values (multiplicative in log space, or additive).
* :class:`LagrangePlayer` is the Lagrangian multiplier vector of Algorithms 4
  and 5: ``lambda >= 0, ||lambda||_1 <= R``, projected gradient ascent.

The players never see data: the game hands them gradients and constraint
values computed by the fused kernel.
"""

from __future__ import annotations

import os

import numpy as np

from .. import core
from ._arity import TWO_CLASSES

__all__ = ["ModelPlayer", "SwapRegretPlayer", "LagrangePlayer", "SWAP_MATRIX_COPIES", "check_swap_matrix_memory"]

#: Copies of the swap player's (m+1, m+1) float64 matrix alive at once: the matrix, its update's result, and the
#: core loop's state (a measured peak of the Python player alone is two).
SWAP_MATRIX_COPIES = 3


def _physical_memory():
    """This machine's memory in bytes (None where the platform does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


def check_swap_matrix_memory(n_constraints, memory=None):
    """Refuse a swap-regret player whose (m+1)^2 matrix would not fit in memory.

    Parameters
    ----------
    n_constraints : int
        m.
    memory : int, default=None
        The bytes available (None: this machine's physical memory).

    Raises
    ------
    MemoryError
        If ``SWAP_MATRIX_COPIES * 8 * (m+1)**2`` bytes exceed ``memory``; the
        message names ``method='proxy-external'``, whose multipliers are linear in m.
    """
    memory = _physical_memory() if memory is None else memory
    k = int(n_constraints) + 1
    need = SWAP_MATRIX_COPIES * 8 * k * k
    if memory is not None and need > memory:
        raise MemoryError(
            f"method='proxy-swap' keeps an (m+1) x (m+1) multiplier matrix: m={k - 1} constraints need about "
            f"{need / 2**30:.1f} GiB, more than the {memory / 2**30:.1f} GiB of this machine; use "
            "method='proxy-external' (one multiplier per constraint, memory linear in m)")


class ModelPlayer:
    """Gradient steps on a linear model's weights and bias, for two classes or K.

    One optimizer for both arities: the weights ``theta`` are (n_features,)
    with a scalar bias (two classes), or (n_features, K) with K biases (K
    classes, one score column per class); every step treats them as one
    flat vector, so SGD, Adagrad and Adam are elementwise the same.

    Parameters
    ----------
    n_features : int
    optimizer : {"sgd", "adagrad", "adam"}
    learning_rate : float
    l2 : float
        L2 regularization strength on ``theta``.
    radius : float or None
        Project ``theta`` onto ``||theta||_2 <= radius`` after each step (the
        Frobenius norm for (n_features, K) weights).
    fit_intercept : bool
        Whether the bias is trained (it stays 0 otherwise).
    n_offsets : int
        Trainable score offsets (the thresholds of offset atoms, e.g. ROC-AUC
        slices): stepped with the same optimizer, not regularized, not
        projected. They are training variables, not part of the model.
    arity : Arity, default=TWO_CLASSES
        The parameter shapes (:mod:`rateopt._training._arity`): a two-class
        model (``theta`` of shape (n_features,), a float bias), or a K-class
        model (``theta`` of shape (n_features, K), a (K,) bias).
    """

    def __init__(self, n_features, *, optimizer, learning_rate, l2, radius, fit_intercept, n_offsets=0,
                 arity=TWO_CLASSES):
        self.theta, self.bias = arity.player_zeros(n_features)
        self.offsets = np.zeros(n_offsets)
        self.optimizer = optimizer
        self.learning_rate = learning_rate
        self.l2 = l2
        self.radius = radius
        self.fit_intercept = fit_intercept
        self._n_bias = arity.n_outputs
        self._t = 0
        size = self.theta.size + self._n_bias + n_offsets
        self._m = np.zeros(size)
        self._v = np.zeros(size)

    def set_model(self, weights, bias):
        """Start at a recorded model: ``weights`` in the records' layout ((n_features,), or (K, n_features))."""
        self.theta[:] = np.asarray(weights, dtype=np.float64).T
        self.bias = float(bias) if self._n_bias == 1 and np.ndim(bias) == 0 else np.array(bias, dtype=np.float64)

    def step(self, grad, grad_bias, grad_offsets=None):
        """One step given the proxy Lagrangian's (sub)gradient at the current point.

        ``grad`` has the shape of ``theta``, ``grad_bias`` that of the bias;
        ``grad_offsets`` is the gradient with respect to the offsets (required
        when there are offsets; ignored otherwise).
        """
        theta = self.theta.reshape(-1)  # a view: the steps below move self.theta
        d, nb, n_off = theta.shape[0], self._n_bias, self.offsets.shape[0]
        g = np.empty(d + nb + n_off)
        g[:d] = np.reshape(grad, -1) + self.l2 * theta
        g[d:d + nb] = grad_bias if self.fit_intercept else 0.0
        if n_off:
            g[d + nb:] = grad_offsets
        self._t += 1
        if self.optimizer == "sgd":
            delta = self.learning_rate * g
        elif self.optimizer == "adagrad":
            self._v += g * g
            delta = self.learning_rate * g / (np.sqrt(self._v) + 1e-10)
        else:  # adam, with the usual bias corrections
            b1, b2 = 0.9, 0.999
            self._m = b1 * self._m + (1 - b1) * g
            self._v = b2 * self._v + (1 - b2) * g * g
            m_hat = self._m / (1 - b1 ** self._t)
            v_hat = self._v / (1 - b2 ** self._t)
            delta = self.learning_rate * m_hat / (np.sqrt(v_hat) + 1e-8)
        theta -= delta[:d]
        if nb == 1 and np.ndim(self.bias) == 0:
            self.bias -= delta[d]
        else:  # a new array: a recorded bias is never moved afterwards
            self.bias = self.bias - delta[d:d + nb]
        if n_off:
            self.offsets -= delta[d + nb:]
        if self.radius is not None:
            norm = float(np.linalg.norm(self.theta))
            if norm > self.radius:
                self.theta *= self.radius / norm


class SwapRegretPlayer:
    """Swap-regret multiplier player on the (m+1)-simplex (Cotter et al., 2019, Algorithm 3).

    Parameters
    ----------
    n_constraints : int
        m; the player's matrix is (m+1, m+1).
    eta_lambda : float
        Step size of the update.
    update : {"multiplicative", "additive"}
        ``M <- colnormalize(M * exp(eta * delta lambda^T))`` (kept as ``log M``),
        or ``M + eta * delta lambda^T`` with each column projected onto the simplex.
    init : {"uniform", "objective"}
        The starting matrix: the paper's ``11^T / k``, or TFCO's, whose every
        column is ``(1 - r0 (k-1)/k, r0/k, ..., r0/k)`` (almost all weight on
        the objective; ``r0 = floor`` for the multiplicative update, 1e-3 when
        ``floor`` is 0, and 0 for the additive one).
    floor : float
        Multiplicative update only: every entry of ``M`` is kept at least
        ``floor / k`` (TFCO's ``minimum_multiplier_radius``), in ``[0, 1)``.
    """

    def __init__(self, n_constraints, *, eta_lambda, update, init, floor):
        check_swap_matrix_memory(n_constraints)
        k = n_constraints + 1
        self.update_kind = update
        self.eta_lambda = eta_lambda
        # The multiplicative update's floor on every entry of M (TFCO's r / k).
        self.floor = floor / k if update == "multiplicative" else 0.0
        if init == "uniform":
            col = np.full(k, 1.0 / k)
        else:  # "objective": TFCO's start; the constraints get r0 / k each (TFCO's r0: the
            # floor's radius, 1e-3 without a floor, for the multiplicative update, whose
            # zeros could never grow again; 0 for the additive one)
            r0 = (floor or 1e-3) if update == "multiplicative" else 0.0
            col = np.full(k, r0 / k)
            col[0] = 1.0 - r0 * (k - 1) / k
        if update == "multiplicative":
            self.log_M = np.repeat(np.log(col)[:, None], k, axis=1)
        else:
            self.M = np.repeat(col[:, None], k, axis=1)
        self.lam = col.copy()
        self._refresh()

    def _matrix(self):
        return np.exp(self.log_M) if self.update_kind == "multiplicative" else self.M

    def _refresh(self):
        # The state comes from the core's own updates, so it is valid by
        # construction: call the core's trusted entry points, without
        # re-validating the (k, k) matrix on every iteration.
        lam = core.stationary_distribution_trusted(self._matrix(), self.lam, tol=1e-12, max_iter=100)
        self.lam = lam

    def weights(self):
        """``(objective weight, constraint weights)`` for the model player."""
        return self.lam[0], self.lam[1:]

    def update(self, constraint_values):
        """Ascent step with ``delta = (0, g_1, ..., g_m)``, then the new stationary lambda."""
        delta = np.concatenate(([0.0], constraint_values))
        if self.update_kind == "multiplicative":
            self.log_M = core.swap_update_trusted(self.log_M, delta, self.lam, self.eta_lambda, update="multiplicative",
                                                  floor=self.floor)
        else:
            self.M = core.swap_update_trusted(self.M, delta, self.lam, self.eta_lambda, update="additive")
        self._refresh()

    def state(self):
        """The full multiplier vector (objective weight first)."""
        return self.lam.copy()


class LagrangePlayer:
    """Lagrange multipliers ``lambda >= 0, ||lambda||_1 <= R``, projected gradient ascent.

    Parameters
    ----------
    n_constraints : int
    eta_lambda : float
        Step size.
    radius : float or None
        The L1 radius R (None: no cap).
    """

    def __init__(self, n_constraints, *, eta_lambda, radius):
        self.lam = np.zeros(n_constraints)
        self.eta_lambda = eta_lambda
        self.radius = radius

    def weights(self):
        """``(1, lambda)``: the objective always has weight 1 in the Lagrangian."""
        return 1.0, self.lam

    def update(self, constraint_values):
        """``lambda <- Proj(lambda + eta * g)``."""
        self.lam = core.external_update_additive(self.lam, constraint_values, self.eta_lambda, radius=self.radius)

    def state(self):
        """``(1, lambda)`` as one vector, the layout of the swap player's state."""
        return np.concatenate(([1.0], self.lam))
