"""Training K-class linear and kernel models under K-class rate goals.

The games are the binary ones at the multiplier level (seed 001): the
multipliers see the true 0-1 constraint values ``g_i = <A_i, N> - b_i`` of
the current iterate (its confusion counts ``N``) and are the same players
(:class:`~rateopt._training._players.SwapRegretPlayer` for ``"proxy-swap"``,
:class:`~rateopt._training._players.LagrangePlayer` for
``"proxy-external"``). The model player takes Adam (or SGD / Adagrad) steps on
the proxy Lagrangian, whose every term is a per-row cost vector over the
predicted class: ``lambda_0 A_0 + sum_i lambda_i A_i`` read at the row's cell
and label. One fused core pass per iteration
(:func:`rateopt.core.multiclass_pass`) gives the counts, the proxy value and
the gradient of all K columns: the objective's costs through the
cost-weighted softmax cross-entropy, the constraints' through the
slack-rescaled Crammer-Singer hinge. A non-linear objective (macro-F1) is
linearized at the running average of the iterates' counts (seed 003's
Frank-Wolfe objective player).
"""

from __future__ import annotations

import math
import time

import numpy as np

from .. import core
from .._compiler import MulticlassProblem
from .._predictors._nystroem import NystroemMap
from .._predictors._specs import KernelModel, LinearModel, resolve_l2
from .._training._players import LagrangePlayer, SwapRegretPlayer
from .._utils._validation import check_choice, check_int, check_positive, check_seed
from ..core._threads import resolve_n_threads
from ..exceptions import RateoptError
from ._result import MulticlassResult

__all__ = ["train_multiclass", "MULTICLASS_METHODS", "MULTICLASS_DEFAULTS"]

#: The games that train K-class models.
MULTICLASS_METHODS = ("proxy-swap", "proxy-external", "unconstrained")

#: The defaults of :func:`train_multiclass`: the binary ``proxy-swap`` game's where they carry over, but
#: Adam's step, 0.02 (0.1 left the shrunk mixture 0.01-0.02 worse in error on three of four synthetic
#: three- and five-class demographic-parity problems; 0.01-0.02 were best, and 1000 iterations no better).
MULTICLASS_DEFAULTS = {"n_iter": 500, "learning_rate": 0.02, "optimizer": "adam", "update": "multiplicative",
                       "lambda_init": "objective", "lambda_floor": 1e-3, "proxy": "softmax",
                       "constraint_proxy": "hinge"}


class _Adam:
    """Adam (or SGD, Adagrad) steps on the (n_features, K) weights and the (K,) intercepts."""

    def __init__(self, d, K, *, optimizer, learning_rate, l2, fit_intercept):
        self.W, self.b = np.zeros((d, K)), np.zeros(K)
        self.optimizer, self.lr, self.l2, self.fit_intercept = optimizer, learning_rate, l2, fit_intercept
        self.m = [np.zeros((d, K)), np.zeros(K)]
        self.v = [np.zeros((d, K)), np.zeros(K)]
        self.t = 0

    def step(self, gW, gb):
        self.t += 1
        gW = gW + self.l2 * self.W
        grads = [gW, gb if self.fit_intercept else np.zeros_like(gb)]
        params = [self.W, self.b]
        for i, (p, g) in enumerate(zip(params, grads)):
            if self.optimizer == "sgd":
                p -= self.lr * g
            elif self.optimizer == "adagrad":
                self.v[i] += g * g
                p -= self.lr * g / (np.sqrt(self.v[i]) + 1e-8)
            else:
                b1, b2 = 0.9, 0.999
                self.m[i] = b1 * self.m[i] + (1 - b1) * g
                self.v[i] = b2 * self.v[i] + (1 - b2) * g * g
                mh = self.m[i] / (1 - b1 ** self.t)
                vh = self.v[i] / (1 - b2 ** self.t)
                p -= self.lr * mh / (np.sqrt(vh) + 1e-8)


def _constraint_bound(problem):
    """``B``: a bound on every ``|g_i|`` over all classifiers (the multipliers' step is ``3 / B``)."""
    c = problem.compiled
    if c.n_constraints == 0:
        return 1.0
    W = c.cell_label_weights  # (G, K)
    hi = np.einsum("gy,igy->i", W, np.abs(c.constraints).max(axis=3))
    return float(np.max(hi + np.abs(c.offsets)))


def _features(problem, model, n_threads, random_state):
    X = problem.dataset.X
    if isinstance(model, KernelModel):  # the landmarks' seed: the model's own, else the run's
        seed = model.random_state if model.random_state is not None else random_state
        fmap = NystroemMap.fit(X, kernel=model.kernel, gamma=model.gamma, degree=model.degree, coef0=model.coef0,
                               n_components=model.n_components, landmarks=model.landmarks, exact=model.exact,
                               dtype=np.dtype(model.dtype), random_state=seed, n_threads=n_threads)
        return core.FeatureMatrix(fmap.transform(X, n_threads=n_threads)), fmap
    return core.FeatureMatrix(X), None


def train_multiclass(problem, model=None, method="auto", *, n_iter=None, learning_rate=None, optimizer=None,
                     eta_lambda=None, update=None, lambda_init=None, lambda_floor=None, lambda_radius=None,
                     proxy=None, constraint_proxy=None, random_state=None, n_threads=None, callback=None):
    """Train a K-class linear or kernel model under the goals of a :class:`~rateopt.MulticlassProblem`.

    :func:`rateopt.train` calls this for a K-class problem.

    Parameters
    ----------
    problem : MulticlassProblem
    model : LinearModel or KernelModel, default=None
        The model (default ``LinearModel(l2=problem.regularization or 0)``).
    method : {"auto", "proxy-swap", "proxy-external", "unconstrained"}, default="auto"
        ``"auto"``: ``"proxy-swap"`` with constraints, else ``"unconstrained"``.
    n_iter : int, default=500
    learning_rate : float, default=0.02
    optimizer : {"adam", "sgd", "adagrad"}, default="adam"
    eta_lambda : float, default=None
        The multipliers' step: ``3 / B`` (``B`` bounds every ``|g_i|``) for
        ``"proxy-swap"``, ``1 / B`` for ``"proxy-external"``.
    update : {"multiplicative", "additive"}, default="multiplicative"
    lambda_init : {"objective", "uniform"}, default="objective"
    lambda_floor : float, default=1e-3
    lambda_radius : float, default=None
        ``"proxy-external"``: the L1 radius of the multipliers (None: no cap).
    proxy : {"softmax", "hinge"}, default="softmax"
        The objective's proxy.
    constraint_proxy : {"hinge", "softmax"}, default="hinge"
        The constraints' proxy.
    random_state : int or None, default=None
        Seed of a kernel model's landmarks when the model has none.
    n_threads : int or None, default=None
    callback : callable, default=None
        ``callback(t, objective, constraint_values)`` after every iteration;
        returning True stops training.

    Returns
    -------
    MulticlassResult

    Raises
    ------
    RateoptError
        On an unknown method or invalid parameter.
    """
    if not isinstance(problem, MulticlassProblem):
        raise TypeError(f"problem must be a MulticlassProblem, got {type(problem).__name__}")
    d = MULTICLASS_DEFAULTS
    if method == "auto":
        method = "proxy-swap" if problem.n_constraints else "unconstrained"
    check_choice("method", method, MULTICLASS_METHODS)
    n_iter = check_int("n_iter", d["n_iter"] if n_iter is None else n_iter, 1)
    learning_rate = check_positive("learning_rate", d["learning_rate"] if learning_rate is None else learning_rate)
    optimizer = check_choice("optimizer", optimizer or d["optimizer"], ("adam", "sgd", "adagrad"))
    update = check_choice("update", update or d["update"], ("multiplicative", "additive"))
    lambda_init = check_choice("lambda_init", lambda_init or d["lambda_init"], ("objective", "uniform"))
    lambda_floor = d["lambda_floor"] if lambda_floor is None else float(lambda_floor)
    if not 0.0 <= lambda_floor < 1.0:
        raise RateoptError(f"lambda_floor must be in [0, 1), got {lambda_floor!r}")
    proxy = check_choice("proxy", proxy or d["proxy"], tuple(core.MULTICLASS_PROXIES))
    constraint_proxy = check_choice("constraint_proxy", constraint_proxy or d["constraint_proxy"],
                                    tuple(core.MULTICLASS_PROXIES))
    check_seed("random_state", random_state)
    threads = resolve_n_threads(n_threads)
    if model is None:
        model = LinearModel(l2=problem.regularization or 0.0)
    if not isinstance(model, (LinearModel, KernelModel)):
        raise TypeError(f"model must be a LinearModel or KernelModel, got {type(model).__name__}")

    start = time.perf_counter()
    ds, c = problem.dataset, problem.compiled
    K, G, m = ds.n_classes, c.n_cells, c.n_constraints
    Zm, fmap = _features(problem, model, threads, random_state)
    cells = core.ClassCells(c.cells * K + ds.label_index, ds.weights, G * K)
    l2 = resolve_l2(model.l2, ds.n_samples)
    opt = _Adam(Zm.n_features, K, optimizer=optimizer, learning_rate=learning_rate, l2=l2,
                fit_intercept=model.fit_intercept)
    B = _constraint_bound(problem)
    if method == "proxy-swap":
        eta = 3.0 / B if eta_lambda is None else check_positive("eta_lambda", eta_lambda)
        player = SwapRegretPlayer(m, eta_lambda=eta, update=update, init=lambda_init, floor=lambda_floor) if m else None
    elif method == "proxy-external":
        eta = 1.0 / B if eta_lambda is None else check_positive("eta_lambda", eta_lambda)
        player = LagrangePlayer(m, eta_lambda=eta, radius=lambda_radius) if m else None
    else:
        player = None
    A = c.constraints.reshape(m, G * K, K)
    A0 = None if c.objective is None else c.objective.reshape(G * K, K)
    W_cells = c.cell_label_weights
    N_avg = np.repeat(W_cells[:, :, None] / K, K, axis=2)  # a non-linear objective's first linearization point

    coefs, intercepts, counts, lams = [], [], [], []
    for t in range(n_iter):
        lam0, lam = player.weights() if player is not None else (1.0, np.zeros(m))
        obj_tensor = A0 if A0 is not None else problem.objective.gradient(c, N_avg).reshape(G * K, K)
        cost_obj = lam0 * obj_tensor
        cost_con = np.tensordot(lam, A, axes=1) if m and player is not None else np.zeros((G * K, K))
        res = core.multiclass_pass(Zm, opt.W, opt.b, cells, cost_obj, cost_con, objective_proxy=proxy,
                                   constraint_proxy=constraint_proxy, gradient=True, n_threads=threads)
        N = res.counts.reshape(G, K, K)
        coefs.append(opt.W.T.copy())
        intercepts.append(opt.b.copy())
        counts.append(N)
        lams.append(player.state() if player is not None else np.concatenate(([1.0], np.zeros(m))))
        N_avg = N_avg + (N - N_avg) / (t + 1) if t else N.copy()
        opt.step(res.grad, res.grad_intercept)
        g = problem.constraint_values(N) if m else np.zeros(0)
        if player is not None:
            player.update(g)
        if callback is not None and callback(t, problem.objective_value(N), g):
            break
        if not math.isfinite(res.proxy_value):
            raise RateoptError(f"training diverged at iteration {t} (the proxy is not finite); lower learning_rate")
    return MulticlassResult(problem, np.stack(coefs), np.stack(intercepts), np.stack(counts), np.stack(lams),
                            fmap, method, time.perf_counter() - start)
