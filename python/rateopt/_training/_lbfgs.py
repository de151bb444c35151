"""The objective's smooth proxy minimized exactly: L-BFGS on the fused pass (``optimizer="lbfgs"``).

``method="unconstrained"`` with the logistic proxy minimizes a smooth convex
function of the linear model,

    f(theta, b) = c0 . logistic proxy rates(theta, b) + (l2 / 2) ||theta||^2,

which on the error rate with ``l2="auto"`` is scikit-learn's
``LogisticRegression(C=1)`` objective (divided by the rows and measured in
bits: :func:`rateopt._predictors._specs.resolve_l2`). Gradient steps at a
fixed learning rate settle it only slowly; L-BFGS (scipy's L-BFGS-B, the
solver ``LogisticRegression`` itself uses) reaches the minimizer to
:data:`GTOL` in a few hundred passes or fewer. Each evaluation of ``f`` and its gradient is **one**
pass of the fused kernel over every dataset (the same pass as a game's
iteration, reading the features in place), and the pass also measures the
iterate's 0-1 atom rates, so every accepted L-BFGS iterate is recorded as
the gradient games' iterates are, without another pass.

Iteration ``t`` of the records is the ``t``-th accepted L-BFGS iterate
(iteration 0 the start: zero, ``init`` or the resumed model). The run stops at
``n_iter - 1`` iterations, when the largest entry of the projected gradient is
at most :data:`GTOL`, when the callback asks to, or when the line search can
make no progress (at the float64 limit of ``f``).
"""

from __future__ import annotations

import numpy as np

from ._spec import Combinations

__all__ = ["GTOL", "FTOL", "lbfgs_refusal", "run_lbfgs"]

#: Stop when every entry of the gradient of ``f`` (per row, in bits; the bias's too) is at most this in
#: absolute value: 0.69e-5 in nats, 14 times tighter than ``LogisticRegression``'s default ``tol=1e-4``,
#: which on Adult and Credit default stops with coefficients 0.5 away from the minimizer. On the six
#: datasets of bench/unconstrained_quality.py 1e-5 gives 0-1 errors within 0.0001 of 1e-6's in 13-41 %
#: fewer iterations (Adult: 236 against 365), and a default fit costs less than the former Adam default.
GTOL = 1e-5
#: The relative decrease of ``f`` below which L-BFGS-B stops: 64 machine epsilons, scikit-learn's value,
#: so that :data:`GTOL` decides.
FTOL = 64 * np.finfo(np.float64).eps


class _Stop(Exception):
    """The callback asked to stop."""


def lbfgs_refusal(spec, settings):
    """Why ``optimizer="lbfgs"`` cannot train this run of a linear or kernel model (None when it can)."""
    if spec.arity.multiclass:
        return "optimizer='lbfgs' trains two-class models (K classes: 'adam', 'adagrad' or 'sgd')"
    if settings.proxy != "logistic":
        return (f"optimizer='lbfgs' needs a smooth objective: proxy='logistic', not {settings.proxy!r} "
                "(use optimizer='adam' for the hinge)")
    if settings.batch_size is not None:
        return "optimizer='lbfgs' runs full batch: leave batch_size=None (or use optimizer='adam')"
    if settings.radius is not None:
        return "optimizer='lbfgs' does not project onto a ball: leave radius=None (or use optimizer='adam')"
    if spec.n_offsets:
        return "optimizer='lbfgs' does not train offsets (ROC-AUC goals' thresholds)"
    if settings.loop == "core":
        return "optimizer='lbfgs' runs in Python (scipy's L-BFGS-B on the core's pass): use loop='auto'"
    return None


def run_lbfgs(game, spec, settings, recorder, callback, bar):
    """Minimize the game's objective proxy (+ l2) with L-BFGS-B, recording every accepted iterate.

    Parameters
    ----------
    game : Game
        Its model player gives the start (zero, ``init`` or the resumed
        model) and receives the solution; its multipliers are recorded.
    spec : GameSpec
        What the players see (``spec.for_players()``): one pass per evaluation.
    settings : TrainSettings
        ``n_iter`` (at most ``n_iter - 1`` L-BFGS iterations after the start),
        ``l2``, ``fit_intercept``, ``record_every``, ``n_threads``.
    recorder : _Recorder
        The driver's records.
    callback : callable or None
        ``callback(t, info)`` after every recorded iterate; True stops.
    bar : tqdm or None
        Advanced by one per L-BFGS iteration.
    """
    from scipy.optimize import minimize  # lazy: `import rateopt` loads no scipy.optimize

    player = game.model_player
    d, l2, fit_b = spec.n_features, float(settings.l2), bool(settings.fit_intercept)
    combos = Combinations.single(game.objective_coef(), "logistic")
    passes = dict(margin=settings.margin, n_threads=settings.n_threads)
    multipliers = game.multipliers()
    last = {}  # the latest evaluation: its point and pass (the accepted iterate is the latest evaluated one)

    def split(x):
        return x[:d], (float(x[d]) if fit_b else 0.0)

    def evaluate(x):
        theta, bias = split(x)
        result = pass_at(x)
        grad = np.asarray(result.grad, dtype=np.float64) + l2 * theta
        value = result.proxy_value + 0.5 * l2 * float(theta @ theta)
        if fit_b:
            grad = np.append(grad, result.grad_bias)
        return value, grad

    def pass_at(x):
        if "x" not in last or not np.array_equal(last["x"], x):
            theta, bias = split(x)
            last["x"], last["result"] = x.copy(), spec.run_pass(theta, bias, combos, **passes)
        return last["result"]

    state = {"t": 0, "recorded": -1}

    def record(x):
        t = state["t"]
        theta, bias = split(x)
        info = recorder.record(t, theta.copy(), bias, multipliers, pass_at(x).rates)
        state["recorded"] = t
        if callback is not None and bool(callback(t, info)):
            raise _Stop

    def on_iteration(xk):  # scipy's legacy callback signature (every version >= 1.9): the accepted iterate
        state["t"] += 1
        state["x"] = np.array(xk, dtype=np.float64)
        if bar is not None:
            bar.update(1)
        if state["t"] % settings.record_every == 0:
            record(state["x"])

    x0 = np.asarray(player.theta, dtype=np.float64).reshape(-1).copy()
    if fit_b:
        x0 = np.append(x0, float(player.bias))
    state["x"] = x0
    try:
        record(x0)
        if settings.n_iter > 1:
            minimize(evaluate, x0, jac=True, method="L-BFGS-B", callback=on_iteration,
                     options={"maxiter": settings.n_iter - 1, "maxfun": 2 * settings.n_iter + 20,
                              "gtol": GTOL, "ftol": FTOL, "maxls": 50})
    except _Stop:
        pass
    if state["recorded"] != state["t"]:
        record_last = state["x"]
        theta, bias = split(record_last)
        info = recorder.record(state["t"], theta.copy(), bias, multipliers, pass_at(record_last).rates)
        if callback is not None:
            callback(state["t"], info)
    theta, bias = split(state["x"])
    player.theta[:] = theta
    player.bias = bias
