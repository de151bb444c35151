"""The model player of boosted trees: one tree per iteration on the proxy Lagrangian's per-row derivatives.

A game asks its model player to move on the combinations of atom rates it
poses (``lam0 c0 + lam C``, :func:`rateopt.games._base.model_combinations`).
A linear player steps on the kernel's feature-space gradient; the boosting
player instead needs the derivatives of the proxy Lagrangian with respect to
each training row's score ``s_j``:

* The combination is one vector of atom coefficients ``c``; each row's net
  coefficient is ``u_j = sum_a c_a v_ja`` (:mod:`rateopt._training._row_coefficients`),
  so the combination of 0-1 rates is ``sum_j u_j 1[s_j >= 0]``.
* Each indicator is replaced by a logistic upper bound (up to the factor
  ``ln 2``, the same for every rate, so the game's balance does not change):
  ``ln 2 * 1[s >= 0] <= ln(1 + e^s)`` when ``u_j > 0``, and
  ``ln 2 * 1[s >= 0] = ln 2 * (1 - 1[s < 0]) >= ln 2 - ln(1 + e^-s)`` when ``u_j < 0``
  (every combination uses the logistic proxy: the hinge has no Hessian).
* With ``sigma`` the logistic function, the derivatives are
  ``g_j = u_j sigma(s_j)`` (``u_j > 0``), ``u_j (1 - sigma(s_j))`` (``u_j < 0``),
  and ``h_j = |u_j| sigma(s_j) (1 - sigma(s_j))``; both are multiplied by the
  number of rows. For the error rate with unit weights (``u_j = +-1/n``) they
  are the backend's own log-loss derivatives ``sigma - y`` and
  ``sigma (1 - sigma)``, so its leaf parameters (``min_child_weight``,
  ``lambda_l2``) mean what they usually mean.

The true 0-1 rates the multipliers see are those of the current ensemble's
training scores, which the backend updates by each new tree's output (one
pass over the rows per iteration): bit for bit the scores a fresh prediction
of the ensemble gives, so the recorded rates are those of the saved solution.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from .._predictors._boosting import BoosterPrefix

__all__ = ["BoostingPlayer", "BoostingPass", "RowDerivatives", "logistic_row_derivatives"]


@dataclass(frozen=True)
class RowDerivatives:
    """Per-row gradient and Hessian of the proxy Lagrangian with respect to the scores."""

    grad: np.ndarray
    hess: np.ndarray


@dataclass
class BoostingPass:
    """What one boosting iteration hands the game (the fields a game's ``step`` reads)."""

    rates: np.ndarray
    grad: RowDerivatives
    grad_bias: float = 0.0
    grad_offsets: np.ndarray = field(default_factory=lambda: np.zeros(0))


def logistic_row_derivatives(u, scores, scale):
    """Gradient and Hessian of ``scale * sum_j u_j psi_j(s_j)``, ``psi_j`` the logistic bound of ``1[s_j >= 0]``.

    ``psi_j(s) = ln(1 + e^s)`` when ``u_j > 0`` and ``-ln(1 + e^-s)`` (plus a
    constant) otherwise: the bound in nats.

    Parameters
    ----------
    u : ndarray of shape (n,)
        Each row's net coefficient.
    scores : ndarray of shape (n,)
        The current scores.
    scale : float
        The factor on both derivatives (the number of rows).

    Returns
    -------
    RowDerivatives
    """
    from scipy.special import expit  # noqa: PLC0415 - scipy.special loads only when a boosted model trains

    sigma = expit(scores)
    grad = u * np.where(u > 0, sigma, 1.0 - sigma) * scale
    hess = np.abs(u) * sigma * (1.0 - sigma) * scale
    return RowDerivatives(grad, hess)


class BoostingPlayer:
    """The model player of a :class:`~rateopt.BoostingModel`: one tree per step.

    Parameters
    ----------
    spec : GameSpec
        The two-class game (its blocks' rows are the training rows, stacked).
    model : BoostingModel
    settings : TrainSettings
    """

    def __init__(self, spec, model, settings):
        self.blocks = []
        start = 0
        for blk in spec.blocks:
            t = blk.atoms
            V = sp.csr_matrix((t.weights, t.indices, t.indptr), shape=(t.n_samples, t.n_atoms))
            self.blocks.append((slice(start, start + t.n_samples), V, np.asarray(blk.atom_ids, dtype=np.int64)))
            start += t.n_samples
        self.n_atoms = spec.n_atoms
        self.n_features = spec.n_features
        data = [blk.X.data for blk in spec.blocks]
        if len(data) == 1:
            X = data[0]
        elif any(sp.issparse(x) for x in data):
            X = sp.vstack([sp.csr_matrix(x) for x in data], format="csr")
        else:
            X = np.vstack(data)
        self.booster = model.start(X, n_threads=settings.n_threads, random_state=settings.random_state)
        self.scores = np.zeros(start)

    def rates(self):
        """Every atom's positive rate under the current ensemble's 0-1 decisions."""
        decisions = (self.scores >= 0).astype(np.float64)
        rates = np.zeros(self.n_atoms)
        for rows, V, atom_ids in self.blocks:
            rates[atom_ids] = V.T @ decisions[rows]
        return rates

    def prefix(self):
        """The current ensemble, as a classifier iterate."""
        return BoosterPrefix(self.booster, self.booster.n_trees, self.n_features)

    def derivatives(self, combinations):
        """The per-row derivatives of the game's combinations (summed with their gradient weights)."""
        if hasattr(combinations, "coefs"):
            net = np.asarray(combinations.grad_weights, dtype=np.float64) @ np.asarray(combinations.coefs)
        else:
            net = np.asarray(combinations, dtype=np.float64)
        u = np.empty_like(self.scores)
        for rows, V, atom_ids in self.blocks:
            u[rows] = V @ net[atom_ids]
        return logistic_row_derivatives(u, self.scores, float(self.scores.shape[0]))

    def step(self, grad, grad_bias=0.0, grad_offsets=None):
        """Grow one tree on ``grad`` (a :class:`RowDerivatives`); the scores become the new ensemble's."""
        self.scores = self.booster.add_tree(grad.grad, grad.hess)
