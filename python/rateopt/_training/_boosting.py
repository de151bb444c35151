"""The model player of boosted trees: one tree per iteration on the proxy Lagrangian's per-row derivatives.

A game asks its model player to move on the combinations of atom rates it
poses (``lam0 c0 + lam C``, :func:`rateopt.games._base.model_combinations`).
A linear player steps on the kernel's feature-space gradient; the boosting
player instead needs the derivatives of the proxy Lagrangian with respect to
each training row's score ``s_j``:

* The combinations are summed (with their gradient weights) into one vector of
  atom coefficients ``c``; each row's net coefficient is ``u_j = sum_a c_a v_ja``,
  so the combination of 0-1 rates is ``sum_j u_j 1[s_j >= 0]``.
* Each row's indicator is replaced by the run's proxy (the ``proxy`` training
  parameter, as for linear models; every combination uses it, on the net
  coefficient), an upper bound up to a factor the same for every rate, so the
  game's balance does not change:

  - ``"logistic"``: ``ln 2 * 1[s >= 0] <= ln(1 + e^s)``, with
    ``g_j = u_j sigma(+-s_j)`` and ``h_j = |u_j| sigma(s_j) sigma(-s_j)``. For
    the error rate with unit weights (``u_j = +-1/n``, scaled by ``n``) these
    are the backend's own log-loss derivatives ``sigma - y`` and
    ``sigma (1 - sigma)``, so its leaf parameters (``min_child_weight``,
    ``lambda_l2``) mean what they usually mean. The Hessian's ``|u_j|`` is
    the row's curvature coefficient ``w_j >= |u_j|`` instead
    (:func:`curvature_coefficients`: the objective's and the constraints'
    coefficients in absolute value, not their net), so a row whose terms
    nearly cancel gets a small step, not a full Newton step.
  - ``"hinge"``: the *squared* hinge, ``1[s >= 0] / 2 <= max(0, 1 + s)^2 / 2``,
    with ``g_j = u_j max(0, 1 +- s_j)`` and ``h_j = |u_j|`` where the margin
    term is positive (else 0). The hinge itself has no Hessian, and a
    Huberized hinge has none on its linear part: a leaf of such rows would
    get the Newton value ``-G / H`` with ``H = 0``. Squaring smooths the hinge
    to a continuous derivative and gives every row that has a gradient the
    Hessian ``|u_j|`` (with unit weights, one per row: least squares towards
    the margin, as in an L2-SVM).

  Both derivatives are multiplied by the number of rows.
* The core computes all of it in one pass over the current scores
  (:func:`rateopt.core.boosting_pass`): the atom rates of the 0-1 decisions
  ``s >= 0`` (what the multipliers see) and each row's gradient and Hessian,
  written into float32 arrays the backend's custom objective consumes without
  a copy.

The true 0-1 rates the multipliers see are those of the current ensemble's
training scores, which the backend updates by each new tree's output (one
pass over the rows per iteration): bit for bit the scores a fresh prediction
of the ensemble gives, so the recorded rates are those of the saved solution.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from .. import core
from ..core._threads import resolve_n_threads
from .._predictors._boosting import BoosterPrefix, return_free_memory

__all__ = ["BoostingPlayer", "BoostingPass", "ClassBoostingPlayer", "RowDerivatives", "BOOSTING_PROXY",
           "BOOSTED_LAMBDA_FLOOR", "curvature_coefficients",
           "boosted_eta_lambda", "boosted_lambda_floor"]

#: The core's boosting proxy of each ``proxy`` training parameter (a Hessian is needed: the hinge is squared).
BOOSTING_PROXY = {"logistic": "logistic", "hinge": "squared_hinge"}


def boosted_eta_lambda(game_cls, eta_lambda, settings):
    """The multipliers' default step of a boosted run of ``settings.n_iter`` rounds.

    The proxy-Lagrangian game's default step ``DEFAULT_ETA / B`` was chosen
    by measurement at its default number of iterations (``n_iter=250``,
    docs/defaults.md). A boosted run takes one step per tree, and the rounds
    are the user's choice (often 100 to 200): a run of ``T`` rounds gets the
    step ``DEFAULT_ETA / B * sqrt(250 / T)``, the ``1 / sqrt(T)`` scaling of
    the regret bound's step (Lemma 8 of Cotter et al., 2019), so that at
    ``T = 250`` it is the game's default. Measured on Adult, Bank and
    ACSEmployment (bench/boosting.py, docs/guide/boosting.md): at 100 trees
    the default step left the multipliers near their start on equalized
    odds and tight tolerances. Lemma 8's own step (``lambda_init="uniform"``)
    already scales with ``T`` and other games keep their steps.

    Parameters
    ----------
    game_cls : type
        The training method's game.
    eta_lambda : float
        The game's default step for this run.
    settings : TrainSettings
        Its ``n_iter`` (the rounds) and ``lambda_init`` are read.

    Returns
    -------
    float
    """
    if getattr(game_cls, "DEFAULT_ETA", None) is None or settings.lambda_init == "uniform":
        return eta_lambda
    return eta_lambda * math.sqrt(game_cls.defaults["n_iter"] / max(int(settings.n_iter), 1))


#: The multipliers' floor (and objective-focused start) of a boosted run (see :func:`boosted_lambda_floor`).
BOOSTED_LAMBDA_FLOOR = 1e-2


def boosted_lambda_floor(game_cls, params):
    """``params`` with a boosted run's default ``lambda_floor`` when the user gave none.

    With the objective-focused start (``lambda_init="objective"``) each
    constraint's entry of the swap-regret matrix starts at ``r0 / k`` (``r0``
    the floor, ``k = m + 1``), and a constraint violated by ``g`` at every
    round needs about ``ln(k / r0) / (eta g)`` rounds before its weight
    matches the objective's. A boosted run takes one step per tree, so it is
    short (100 to 200 rounds) and a small persistent violation may never come
    to weigh: on ACSEmployment (race, 16 equalized-odds constraints at
    tolerance 0, 100 trees, seed 1) two FPR constraints were violated by
    about 0.013 in 99-100% of the prefixes while their multipliers stayed
    below 0.02, and the thresholded solution, left to equalize them with
    group-blind thresholds, lost 2.8 pp of test accuracy beyond group-aware
    post-processing (issue 33's collapse). The floor ``1e-2`` instead of the
    game's ``1e-3`` shortens that wait by ``ln 10 / eta``. Measured
    (bench/boosting_collapse_study.py): 0 collapses in 20 seeds of that cell
    (default 1e-3: 1) and in 90 runs of the frontier (1e-3: 1), more points
    counting by the issue's rule (30 of 45 cells instead of 25), mean test
    error +0.0003 (Bank +0.002 at a test disparity 0.018 lower).

    Parameters
    ----------
    game_cls : type
        The training method's game; only a game that reads a floor and has
        one by default (``"proxy-swap"``) gets the boosted default.
    params : dict
        The training parameters as given (``lambda_floor`` None or absent:
        not given).

    Returns
    -------
    dict
    """
    if (params.get("lambda_floor") is not None or "lambda_floor" not in getattr(game_cls, "reads", ())
            or not game_cls.defaults.get("lambda_floor")):
        return params
    return {**params, "lambda_floor": BOOSTED_LAMBDA_FLOOR}


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


def curvature_coefficients(combinations):
    """Each atom's curvature coefficient of the game's combinations, or None (one nonzero combination: ``|u|``).

    The sum over the combinations of the absolute value of each one's atom
    coefficients (with their gradient weights): with the logistic proxy the
    combinations are the objective's (``lam0 c0``) and the constraints'
    (``lam C``), so a row's coefficient ``w_j >= |u_j|`` does not cancel
    where the two pull its score apart. The Hessian ``w_j sigma sigma'`` is
    the curvature of the sum of the two terms' own proxies, which bounds the
    net proxy's (``|u_j| sigma sigma'``) from above: the leaf values
    ``-G / H`` are damped Newton steps. Without it, a row whose net
    coefficient nearly cancels gets the full Newton step ``1 / sigma(-+s)``
    whatever ``|u_j|``: when a constraint's multiplier comes to balance the
    objective on a group of rows (an overall rate's constraint on every
    negative row, say), one tree flips them all, and the prefixes swing
    between the accurate classifier and the trivial one (issue 33's
    collapses, bench/results/boosting_collapse_xgboost_xc_dissect.md).
    """
    if not hasattr(combinations, "coefs"):
        return None
    weights = np.abs(np.asarray(combinations.grad_weights, dtype=np.float64))
    coefs = np.abs(np.asarray(combinations.coefs, dtype=np.float64))
    if np.count_nonzero((weights > 0) & np.any(coefs > 0, axis=1)) < 2:  # one term (e.g. no constraint): |u|
        return None
    return weights @ coefs


def net_coefficients(combinations):
    """One coefficient vector of the game's combinations: summed with their gradient weights (a
    :class:`~rateopt._training._spec.Combinations`), or one given vector (over atoms or statistics)."""
    if hasattr(combinations, "coefs"):
        return np.asarray(combinations.grad_weights, dtype=np.float64) @ np.asarray(combinations.coefs)
    return np.asarray(combinations, dtype=np.float64)


class BoostingPlayer:
    """The model player of a :class:`~rateopt.BoostingModel`: one tree per step.

    Parameters
    ----------
    spec : GameSpec
        The two-class game (its blocks' rows are the training rows, stacked).
    model : BoostingModel
    settings : TrainSettings
        Its ``proxy`` (``"logistic"`` or ``"hinge"``, see :data:`BOOSTING_PROXY`)
        and ``n_threads`` are read.
    """

    def __init__(self, spec, model, settings):
        if settings.proxy not in BOOSTING_PROXY:
            raise ValueError(f"BoostingModel trains on proxy='logistic' or 'hinge', got proxy={settings.proxy!r}")
        self.proxy = BOOSTING_PROXY[settings.proxy]
        self.n_threads = settings.n_threads
        self._proxy_code = core.BOOSTING_PROXIES[self.proxy]
        self._threads = resolve_n_threads(settings.n_threads)
        self.blocks = []
        start = 0
        for blk in spec.blocks:
            rows = slice(start, start + blk.n_samples)
            self.blocks.append((rows, blk.atoms, np.asarray(blk.atom_ids, dtype=np.int64)))
            start += blk.n_samples
        self.n_atoms = spec.n_atoms
        self.n_features = spec.n_features
        if len(self.blocks) == 1 and np.array_equal(self.blocks[0][2], np.arange(spec.n_atoms)):
            # one dataset whose atoms are the game's, in order (the usual case): the pass reads the game's
            # coefficients as a view, not a gathered copy
            self.blocks[0] = (self.blocks[0][0], self.blocks[0][1], slice(None))
        data = [blk.X.data for blk in spec.blocks]
        if len(data) == 1:
            X = data[0]
        elif any(sp.issparse(x) for x in data):
            X = sp.vstack([sp.csr_matrix(x) for x in data], format="csr")
        else:
            X = np.vstack(data)
        self.booster = model.start(X, n_threads=settings.n_threads, random_state=settings.random_state,
                                   inert=_inert_rows(spec.blocks) if model.backend == "xgboost" else None)
        # the backend's binning temporaries go back to the system: the trees' loop does not grow on them
        # (before the start, the set-up's free blocks are better left for the backend's binning to reuse:
        # measured on Adult, a lower peak than handing them back)
        if getattr(self.booster, "trims_heap", False):
            return_free_memory()
        # the backend's own buffer, no copy of ours (LightGBM's float64, XGBoost's float32: the core pass
        # reads either at the same speed, widening each block of float32 scores as it goes)
        self.scores = self.booster.scores()
        # the backends' custom objectives take float32 gradients: written in place, never copied
        self.derivatives = RowDerivatives(np.zeros(start, dtype=np.float32), np.zeros(start, dtype=np.float32))

    def run_pass(self, combinations):
        """The current ensemble's atom rates and the derivatives of the game's combinations, in one core pass.

        ``combinations``: a :class:`~rateopt._training._spec.Combinations` (summed
        with its gradient weights; the Hessian's coefficients from
        :func:`curvature_coefficients`) or one vector of atom coefficients. The
        derivatives are written into :attr:`derivatives` (the arrays the next
        :meth:`step` hands the backend).
        """
        net, curv = net_coefficients(combinations), curvature_coefficients(combinations)
        rates = np.zeros(self.n_atoms)
        scale = float(self.scores.shape[0])
        d = self.derivatives
        scores = self.scores
        if not (isinstance(scores, np.ndarray) and scores.dtype in (np.float32, np.float64)
                and scores.flags.c_contiguous):  # what the trusted pass reads (the backends' buffers are)
            scores = np.ascontiguousarray(scores, dtype=np.float64)
        for rows, atoms, atom_ids in self.blocks:  # arguments checked once (__init__): the trusted pass
            rates[atom_ids] = core.boosting_pass_trusted(scores[rows], atoms, np.ascontiguousarray(net[atom_ids]),
                                                         self._proxy_code, scale, d.grad[rows], d.hess[rows],
                                                         self._threads,
                                                         None if curv is None
                                                         else np.ascontiguousarray(curv[atom_ids]))
        return BoostingPass(rates, d)

    def release_derivatives(self):
        """Drop the derivative arrays (8 bytes a row, two float32): the last pass's are not needed, since no
        tree follows it, and the training run's peak memory is at its end, when the last prefix's scores
        are kept. No :meth:`run_pass` may follow."""
        self.derivatives = None

    def finish(self):
        """End the run: drop the training scores and derivatives (views of the backend's buffers, which the
        booster's ``release_training`` frees once the result is asked for a classifier). No :meth:`run_pass`
        or :meth:`step` may follow."""
        self.scores = self.derivatives = None

    def prefix(self):
        """The current ensemble, as a classifier iterate."""
        return BoosterPrefix(self.booster, self.booster.n_trees, self.n_features)

    def step(self, grad, grad_bias=0.0, grad_offsets=None):
        """Grow one tree on ``grad`` (a :class:`RowDerivatives`); the scores become the new ensemble's."""
        self.scores = self.booster.add_tree(grad.grad, grad.hess)


class ClassBoostingPlayer(BoostingPlayer):
    """The model player of a :class:`~rateopt.BoostingModel` on K classes: K trees (one round) per step.

    The K-class twin of :class:`BoostingPlayer`, on the same driver loop. The game's combinations are summed (with their
    gradient weights) into one vector over the confusion statistics, read as a
    cost table (one row per (cell, label) pair, one column per predicted
    class); each row's K raw scores get the gradient and diagonal Hessian of
    the table's softmax proxy (the K-class pass's ``"softmax"``, the
    multinomial logistic loss weighted by the row's cost gaps), times the
    number of rows, from one core pass (:func:`rateopt.core.boosting_multiclass_pass`)
    that also counts the 0-1 confusion statistics of the ensemble's argmax
    predictions, which the multipliers see. The backend grows one tree per
    class on its column (its multiclass custom objective: LightGBM reads
    (K, n) class-major arrays, XGBoost (n, K); the pass reads and writes
    either layout in place).

    Parameters
    ----------
    spec : ClassGameSpec
        The K-class game.
    model : BoostingModel
    settings : TrainSettings
        Its ``proxy`` (``"logistic"`` only: the softmax; the Crammer-Singer
        hinge has no Hessian) and ``n_threads`` are read.
    """

    def __init__(self, spec, model, settings):
        if settings.proxy != "logistic":
            raise ValueError(f"BoostingModel trains K classes on proxy='logistic' (the softmax), got "
                             f"proxy={settings.proxy!r}: the Crammer-Singer hinge has no Hessian to grow trees on")
        self.spec = spec
        self.n_threads = settings.n_threads
        self.n_atoms = spec.n_atoms
        self.n_features = spec.n_features
        blk = spec.blocks[0]
        self.cells = blk.cells
        inert = np.asarray(blk.cells.weights) == 0 if model.backend == "xgboost" else None  # as two classes
        self.booster = model.start(blk.X.data, n_threads=settings.n_threads, random_state=settings.random_state,
                                   inert=inert, n_classes=spec.n_classes)
        # LightGBM: its own buffer, (K, n) class-major; XGBoost: its float32 (n, K) margins, read as they are
        self.scores = self.booster.scores()
        self.derivatives = RowDerivatives(np.zeros(self.scores.shape, dtype=np.float32),
                                          np.zeros(self.scores.shape, dtype=np.float32))

    def run_pass(self, combinations):
        """The current ensemble's confusion statistics and the derivatives of the game's combinations, in one
        core pass (written into :attr:`derivatives`, the arrays the next :meth:`step` hands the backend)."""
        net = net_coefficients(combinations)
        spec, d = self.spec, self.derivatives
        cost = (net / spec.scale).reshape(spec.n_cells * spec.n_classes, spec.n_classes)
        counts, _, _ = core.boosting_multiclass_pass(self.scores, self.cells, cost, scale=float(self.cells.n_samples),
                                                     class_major=self.booster.class_major, grad=d.grad,
                                                     hess=d.hess, n_threads=self.n_threads)
        return BoostingPass(counts.reshape(-1) / spec.scale, d)

    def step(self, grad, grad_bias=0.0, grad_offsets=None):
        """Grow one round of K trees on ``grad`` (a :class:`RowDerivatives`); the scores become the new
        ensemble's (read as the backend holds them: the pass reads float32 scores too)."""
        self.scores = self.booster.add_tree(grad.grad, grad.hess)


def _inert_rows(blocks):
    """A boolean per training row (the blocks' rows stacked): True where the row has no positive weight in
    any atom (a zero sample weight, or in no rate's subset), so it changes no rate and gets zero derivatives."""
    parts = []
    for blk in blocks:
        atoms = blk.atoms
        nnz = atoms.weights.shape[0]
        positive = np.zeros(nnz + 1, dtype=np.int32 if nnz < 2**31 else np.int64)
        np.cumsum(atoms.weights > 0, out=positive[1:])  # positive entries before each entry position
        parts.append(positive[atoms.indptr[1:]] == positive[atoms.indptr[:-1]])
    return parts[0] if len(parts) == 1 else np.concatenate(parts)
