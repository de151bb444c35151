"""Baselines and anchors of ``bench/multiclass.py``: multinomial LogisticRegression, per-group re-weighting, TFCO.

Imported by the bench (the first two run in rateopt's environment, with
scikit-learn), and run as a script inside ``bench/.anchors-venv`` for TFCO::

    bench/.anchors-venv/bin/python bench/_multiclass_anchors.py --tfco --in IN.npz --out OUT.npz

It imports only the standard library and NumPy at the top, so any venv can run it.

``logreg``
    scikit-learn ``LogisticRegression(max_iter=2000)`` (lbfgs, multinomial, C=1)
    on the CSR training features: the unconstrained model, its argmax decisions.
``reweight``
    The simple post-processing baseline, tuned on train: decisions
    ``argmax_k a[g, k] p_k(x)`` on LogisticRegression's class probabilities,
    with per-group class weights ``a[g, :]`` found by iterative scaling
    (:func:`reweight_fit`): each group's predicted class proportions are pushed
    into a box of half-width ``tol_share * slack`` around the overall
    proportions of the unconstrained decisions (a group within ``slack / 2``
    of a common target keeps every pair, and each group and the mixture,
    within ``slack``). Deterministic; each group keeps the first weights with
    the smallest distance to its box.
``tfco``
    TensorFlow Constrained Optimization 0.2 in graph mode. TFCO 0.2 (the PyPI
    release) has **no multiclass rates**: ``tfco.multiclass_rate_context`` does
    not exist there (``AttributeError``, recorded by the run). The same problem
    is posed with its binary rates instead, exactly: with K score columns
    ``s_k = x . W_k + b_k``, the decision is ``argmax_k s_k``, and ``yhat = k``
    iff the margin ``s_k - max_{j != k} s_j`` is positive, so ``P(yhat = k |
    S)`` is TFCO's ``positive_prediction_rate`` of a rate context over that
    margin (the hinge on it is a multiclass hinge). Constraints: for each
    group v and class k, ``ppr(ctx_k.subset(v)) <= ppr(ctx_k) + slack`` and
    ``>= ppr(ctx_k) - slack`` (2 K G constraints). Objective: TFCO's
    ``error_rate`` of the true class's margin (labels all 1), i.e. the
    multiclass 0-1 error with the Crammer-Singer hinge as its proxy.
    ``ProxyLagrangianOptimizerV1(tf.compat.v1.train.AdamOptimizer(lr))``,
    minibatches of 100 taken in order from a seeded permutation, one iterate
    recorded per epoch (the structure of TFCO's Adult notebook and of
    ``bench/compare_anchors.py``), then ``find_best_candidate_distribution``
    (``linprog_method="highs"``) over the iterates' training error and
    violations of their argmax decisions (computed in NumPy). The fit time is
    graph construction, session, the minibatch loop, scoring the iterates and
    the shrink; the imports and process start are not timed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _multiclass_data as md

#: TFCO settings: the Adult notebook's (as in bench/compare_anchors.py, at its untuned learning rate).
TFCO_CFG = {"learning_rate": 0.01, "minibatch_size": 100, "epochs": 40}
TFCO_QUICK_EPOCHS = 3
LOGREG_CFG = {"max_iter": 2000}

# --------------------------------------------------------------------------- LogisticRegression


def logreg(data: md.MulticlassData) -> dict[str, Any]:
    """Unconstrained multinomial LogisticRegression: fit time, class probabilities on train and test."""
    from sklearn.linear_model import LogisticRegression

    t0 = time.perf_counter()
    m = LogisticRegression(**LOGREG_CFG).fit(data.train.X, data.train.y)
    fit_s = time.perf_counter() - t0
    if not np.array_equal(m.classes_, np.arange(len(data.classes))):
        raise ValueError(f"LogisticRegression saw classes {m.classes_}")
    return {"model": m, "fit_s": fit_s, "n_iter": int(np.max(m.n_iter_)),
            "P_train": m.predict_proba(data.train.X), "P_test": m.predict_proba(data.test.X),
            "settings": {"estimator": "sklearn LogisticRegression", **LOGREG_CFG, "solver": "lbfgs (default)",
                         "C": 1.0}}


# --------------------------------------------------------------------------- per-group re-weighting


def reweight_predict(P: np.ndarray, g: np.ndarray, weights: dict[str, np.ndarray]) -> np.ndarray:
    """``argmax_k a[g, k] p_k(x)`` per row (class indices); groups without weights keep ``a = 1``."""
    P = np.asarray(P, dtype=np.float64)
    A = np.ones_like(P)
    g = np.asarray(g)
    for v, a in weights.items():
        A[g == v] = a
    return np.argmax(A * P, axis=1)


def reweight_fit(P: np.ndarray, g: np.ndarray, slack: float, *, tol_share: float = 0.45, n_iter: int = 300,
                 step: float = 4.0) -> dict[str, Any]:
    """Per-group class weights by iterative scaling, tuned on the training rows (see the module docstring).

    For each group separately, ``log a[k]`` moves by ``step * (clip(q_k, t_k - h, t_k + h) - q_k)``
    (``q`` the group's predicted proportions, ``t`` the unconstrained decisions' overall proportions,
    ``h = tol_share * slack``) with a step that decays as ``1 / sqrt(iteration)``; each group keeps its
    weights with the smallest distance to the box (the first such, i.e. the least moved).

    Returns ``{"weights": {group: a}, "target": t, "iterations": n_iter, "fit_s", "half_width": h}``.
    """
    t0 = time.perf_counter()
    P = np.asarray(P, dtype=np.float64)
    g = np.asarray(g)
    n, K = P.shape
    yhat0 = np.argmax(P, axis=1)
    t = np.bincount(yhat0, minlength=K) / n
    h = tol_share * slack
    logP = np.log(np.maximum(P, 1e-300))
    weights = {}
    for v in np.unique(g):
        Lg = logP[g == v]
        la = np.zeros(K)
        best = None
        for it in range(n_iter):
            pred = np.argmax(Lg + la, axis=1)
            q = np.bincount(pred, minlength=K) / len(pred)
            gap = np.clip(q, t - h, t + h) - q
            viol = float(np.max(np.abs(gap)))
            if best is None or viol < best[0]:
                best = (viol, la.copy())
            if viol == 0.0:
                break
            la += step / np.sqrt(it + 1.0) * gap
            la -= la.mean()
        weights[str(v)] = np.exp(best[1])
    return {"weights": weights, "target": t, "half_width": h, "iterations": n_iter,
            "fit_s": time.perf_counter() - t0,
            "settings": {"method": "iterative scaling of per-group class weights on LogisticRegression's "
                                   "probabilities", "tol_share": tol_share, "n_iter": n_iter, "step": step}}


# --------------------------------------------------------------------------- TFCO (runs in the anchors venv)


def _margins(tf, logits, K):
    """``s_k - max_{j != k} s_j`` for every k, as a list of (n, 1) tensors."""
    out = []
    for k in range(K):
        others = [j for j in range(K) if j != k]
        rest = tf.reduce_max(tf.gather(logits, others, axis=1), axis=1, keepdims=True)
        out.append(logits[:, k:k + 1] - rest)
    return out


def tfco_fit(Xd: np.ndarray, y: np.ndarray, g: np.ndarray, K: int, slack: float, cfg: dict) -> dict[str, Any]:
    """TFCO's proxy-Lagrangian on the multiclass DP problem (see the module docstring). Timed inside."""
    import tensorflow as tf
    import tensorflow_constrained_optimization as tfco

    tf.compat.v1.disable_eager_execution()
    v1 = tf.compat.v1
    t0, c0 = time.perf_counter(), time.process_time()
    n, d = Xd.shape
    groups = [str(v) for v in np.unique(g)]
    G = np.stack([(g == v).astype(np.float32) for v in groups], axis=1)
    Yoh = np.eye(K, dtype=np.float32)[y]
    graph = tf.Graph()
    with graph.as_default():
        v1.set_random_seed(123)
        x_ph = v1.placeholder(tf.float32, shape=(None, d))
        y_ph = v1.placeholder(tf.float32, shape=(None, K))  # one-hot labels
        g_ph = v1.placeholder(tf.float32, shape=(None, len(groups)))
        W = v1.get_variable("W", shape=(d, K), initializer=v1.glorot_uniform_initializer(seed=1))
        b = v1.get_variable("b", shape=(K,), initializer=v1.zeros_initializer())
        logits = tf.matmul(x_ph, W) + b
        margins = _margins(tf, logits, K)
        # the true class's margin: s_y - max_{j != y} s_j
        true_margin = tf.reduce_sum(tf.concat(margins, axis=1) * y_ph, axis=1, keepdims=True)
        objective = tfco.error_rate(tfco.rate_context(true_margin, tf.ones_like(true_margin)))
        constraints = []
        for k in range(K):
            ctx = tfco.rate_context(margins[k])
            overall = tfco.positive_prediction_rate(ctx)
            for i in range(len(groups)):
                r = tfco.positive_prediction_rate(ctx.subset(g_ph[:, i:i + 1] > 0))
                constraints += [r <= overall + slack, r >= overall - slack]
        problem = tfco.RateMinimizationProblem(objective, constraints)
        opt = tfco.ProxyLagrangianOptimizerV1(v1.train.AdamOptimizer(cfg["learning_rate"]))
        train_op = opt.minimize(problem)
        init = (v1.global_variables_initializer(), v1.local_variables_initializer())
    sess = v1.Session(graph=graph)
    sess.run(init)
    rng = np.random.RandomState(31337)
    perm = rng.permutation(n)
    bs = min(cfg["minibatch_size"], n)
    per_epoch = int(np.ceil(n / bs))
    start = 0
    Ws, Bs = [], []
    t_loop = time.perf_counter()
    for _epoch in range(cfg["epochs"]):
        for _ in range(per_epoch):
            stop = start + bs
            idx = perm[start:stop] if stop <= n else np.concatenate([perm[start:], perm[: stop - n]])
            start = stop % n
            sess.run(train_op, feed_dict={x_ph: Xd[idx], y_ph: Yoh[idx], g_ph: G[idx]})
        wv, bv = sess.run([W, b])
        Ws.append(wv.astype(np.float64))
        Bs.append(bv.astype(np.float64))
    loop_s = time.perf_counter() - t_loop
    sess.close()
    # Score the iterates (argmax decisions) on train and shrink.
    Xd64 = Xd.astype(np.float64)
    objs, cons = [], []
    for Wt, bt in zip(Ws, Bs):
        pred = np.argmax(Xd64 @ Wt + bt, axis=1)
        objs.append(float(np.mean(pred != y)))
        cons.append(md.dp_constraints(pred, g, K, slack)[1])
    dist = tfco.find_best_candidate_distribution(np.array(objs), np.array(cons), linprog_method="highs")
    dist = np.asarray(dist, dtype=np.float64)
    dist[dist < 1e-12] = 0.0
    dist /= dist.sum()
    fit_s = time.perf_counter() - t0
    fit_cpu_s = time.process_time() - c0  # every thread of this process (TensorFlow's pools)
    keep = np.flatnonzero(dist > 0)
    return {"fit_s": fit_s, "fit_cpu_s": fit_cpu_s, "loop_s": loop_s, "steps": cfg["epochs"] * per_epoch,
            "n_constraints": len(constraints),
            "W": np.stack([Ws[i] for i in keep]), "B": np.stack([Bs[i] for i in keep]), "dist": dist[keep],
            "iterate_error": objs, "iterate_max_violation": [float(np.max(c)) for c in cons],
            "version": getattr(tfco, "__version__", None) or "0.2", "tf_version": tf.__version__}


def tfco_predict(W: np.ndarray, B: np.ndarray, dist: np.ndarray, X) -> np.ndarray:
    """Expected decisions (n, K) of TFCO's stochastic mixture of argmax classifiers."""
    K = W.shape[2]
    P = np.zeros((X.shape[0], K))
    for Wt, bt, p in zip(W, B, dist):
        pred = np.argmax(np.asarray(X @ Wt) + bt, axis=1)
        P[np.arange(X.shape[0]), pred] += p
    return P


def multiclass_context_probe() -> dict[str, Any]:
    """Whether TFCO has its multiclass rates (``multiclass_rate_context``); the exact error if not."""
    import tensorflow_constrained_optimization as tfco

    try:
        tfco.multiclass_rate_context  # noqa: B018
        return {"multiclass_rate_context": True, "error": None}
    except AttributeError as exc:
        return {"multiclass_rate_context": False, "error": f"AttributeError: {exc}"}


def _tfco_main(inp: Path, out: Path) -> int:
    z = np.load(inp, allow_pickle=False)
    cfg = json.loads(str(z["cfg"]))
    report: dict[str, Any] = {"status": "failed"}
    arrays: dict[str, np.ndarray] = {}
    try:
        report["probe"] = multiclass_context_probe()
        res = tfco_fit(z["X"], z["y"], z["g"].astype(str), int(z["K"]), float(z["slack"]), cfg)
        arrays = {k: res.pop(k) for k in ("W", "B", "dist")}
        report.update(res)
        report["status"] = "ok"
    except Exception as exc:  # noqa: BLE001 (recorded for the bench)
        report["error"] = f"{type(exc).__name__}: {exc}"
        report["traceback"] = traceback.format_exc()[-3000:]
    np.savez(out, report=np.array(json.dumps(report)), **arrays)
    return 0 if report["status"] == "ok" else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tfco", action="store_true", required=True)
    ap.add_argument("--in", dest="inp", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    return _tfco_main(a.inp, a.out)


if __name__ == "__main__":
    sys.exit(main())
