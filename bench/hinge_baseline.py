"""Why rateopt's "Hinge" baseline (``lagrangian-hinge``) is far from the paper's on Adult.

Issue 14 item 3. ``bench/reproduce_cotter.py`` reports Hinge m-stochastic test
error 0.2258 on Adult where Cotter et al. (JMLR 2019, Table 7) report 0.1442.
This script measures, on the same data, split and problem (the four
multiplicative equal-opportunity constraints ``tpr(g) >= 0.95 tpr(all)``,
``reproduce_cotter.experiment("adult")``):

1. **The relaxation** -- rateopt's hinge constraint values ``g~_i`` at a few
   models against a NumPy reference of the net per-example rule and against
   TFCO's own ``proxy_constraints()`` of a ``RateMinimizationProblem`` whose
   rates use ``HingeLoss`` for both ``penalty_loss`` and ``constraint_loss``.
2. **Feasibility of the relaxed problem** -- the smallest largest hinge
   constraint value any linear model reaches (an LP solved with HiGHS), and a
   closed-form lower bound for the sex pair that holds for *any* scores.
3. **Training** -- rateopt ``lagrangian-hinge`` (additive multiplier steps
   ``eta_lambda``) and TFCO's ``LagrangianOptimizerV1`` with hinge constraints
   (the paper's Algorithm 5; Adam on the model and on the multipliers, as the
   paper), full batch, the same iterations and recorded iterates, over a grid of
   multiplier step sizes; every recorded iterate is scored by the same 0-1
   evaluation (``Problem.evaluate``) and the m-stochastic / T-stochastic / last
   / best / last solutions are formed the same way for both (the shrink LP,
   uniform, ``rateopt.best_iterate`` on training values, last). The rank rule (Eq. 18) on validation picks one step size per system.

TFCO runs in a subprocess of the anchors' environment (``--tfco-python``,
default ``bench/.anchors-venv/bin/python`` of this checkout; ``--no-tfco`` skips it),
which gets the data as an ``.npz`` file and never imports rateopt.

Usage::

    python bench/hinge_baseline.py [--quick] [--json] [--seed 0] [--n-iter 2000]

``--quick``: 400 iterations, two multiplier step sizes per system, one radius, no LP.
Results: ``bench/results/hinge_baseline.{json,md}`` (``_quick`` with --quick).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

PAPER_ADULT = {  # Cotter et al. (2019), Table 7: train err, valid err, test err, train viol, valid viol, test viol
    "Unconstrained": (0.1421, 0.1348, 0.1428, 0.0803, 0.0604, 0.0555),
    "Hinge m-stochastic": (0.1431, 0.1348, 0.1442, 0.0, -0.0088, 0.0025),
    "Hinge T-stochastic": (0.1462, 0.1394, 0.1481, -0.0409, -0.0372, -0.0436),
    "Hinge best": (0.1424, 0.1333, 0.1447, -0.0280, -0.0154, -0.0317),
    "Hinge last": (0.1532, 0.1490, 0.1551, -0.0174, -0.0217, -0.0254),
}
MULTIPLICATIVE_SLACK = 0.95  # tpr(g) >= 0.95 tpr(all)
DEFAULT_TFCO_PYTHON = str(Path(__file__).resolve().parent / ".anchors-venv" / "bin" / "python")
SOLUTIONS = ("m-stochastic", "T-stochastic", "best", "last")


# --------------------------------------------------------------------------- TFCO worker (anchors venv)


def tfco_worker(in_path: str, out_path: str) -> None:
    """Train TFCO's hinge Lagrangian for each multiplier learning rate; probe its proxy constraints."""
    import tensorflow as tf
    import tensorflow_constrained_optimization as tfco

    tf.compat.v1.disable_eager_execution()
    v1 = tf.compat.v1
    z = np.load(in_path)
    X, y, G = z["X"].astype(np.float32), z["y"].astype(np.float32), z["groups"]
    probes = z["probes"]
    lr_theta, n_iter, every = float(z["lr_theta"]), int(z["n_iter"]), int(z["record_every"])
    n, d = X.shape
    out = {}

    def build():
        w = v1.get_variable("w", shape=(d, 1), initializer=v1.zeros_initializer())
        b = v1.get_variable("b", shape=(1,), initializer=v1.zeros_initializer())
        pred = tf.matmul(tf.constant(X), w) + b
        ctx = tfco.rate_context(pred, tf.constant(y.reshape(-1, 1)))
        hinge = tfco.HingeLoss()
        overall = tfco.true_positive_rate(ctx, penalty_loss=hinge, constraint_loss=hinge)
        cons = [tfco.true_positive_rate(ctx.subset(tf.constant(G[:, j:j + 1] > 0)), penalty_loss=hinge,
                                        constraint_loss=hinge) >= MULTIPLICATIVE_SLACK * overall
                for j in range(G.shape[1])]
        mp = tfco.RateMinimizationProblem(tfco.error_rate(ctx, penalty_loss=hinge), cons)
        return w, b, mp

    # 1. TFCO's hinge constraint values at the probe models.
    graph = tf.Graph()
    with graph.as_default():
        w, b, mp = build()
        w_in, b_in = v1.placeholder(tf.float32, (d, 1)), v1.placeholder(tf.float32, (1,))
        assign = (v1.assign(w, w_in), v1.assign(b, b_in))
        proxy = mp.proxy_constraints()
        upd = mp.update_ops()
        init = (v1.global_variables_initializer(), v1.local_variables_initializer())
    with v1.Session(graph=graph) as sess:
        sess.run(init)
        vals = []
        for p in probes:
            sess.run(assign, {w_in: p[:d].reshape(-1, 1).astype(np.float32), b_in: p[d:].astype(np.float32)})
            sess.run(upd)
            vals.append(sess.run(proxy))
        out["probe_proxy_constraints"] = np.array(vals, dtype=np.float64)

    # 2. Algorithm 5 with TFCO: LagrangianOptimizerV1, Adam for theta and for lambda.
    for lr_lam in z["lr_lambdas"]:
        graph = tf.Graph()
        with graph.as_default():
            v1.set_random_seed(123)
            w, b, mp = build()
            opt = tfco.LagrangianOptimizerV1(v1.train.AdamOptimizer(lr_theta),
                                             constraint_optimizer=v1.train.AdamOptimizer(float(lr_lam)))
            train_op = opt.minimize(mp)
            lam = [v for v in v1.global_variables() if "tfco_lagrange_multipliers" in v.name][0]
            proxy = mp.proxy_constraints()
            upd = mp.update_ops()
            init = (v1.global_variables_initializer(), v1.local_variables_initializer())
        t0 = time.perf_counter()
        W, B, L, P = [], [], [], []
        with v1.Session(graph=graph) as sess:
            sess.run(init)
            sess.run(upd)
            for t in range(n_iter + 1):
                if t % every == 0 or t == n_iter:
                    wv, bv, lv, pv = sess.run([w, b, lam, proxy])
                    W.append(wv.ravel())
                    B.append(float(bv[0]))
                    L.append(lv)
                    P.append(pv)
                if t < n_iter:
                    sess.run(train_op)
        key = f"{float(lr_lam):g}"
        out[f"W_{key}"], out[f"B_{key}"] = np.array(W, np.float64), np.array(B, np.float64)
        out[f"lam_{key}"], out[f"proxy_{key}"] = np.array(L, np.float64), np.array(P, np.float64)
        out[f"seconds_{key}"] = np.float64(time.perf_counter() - t0)
        print(f"tfco lr_lambda={key}: {out[f'seconds_{key}']:.1f} s", file=sys.stderr, flush=True)
    np.savez(out_path, **out)


# --------------------------------------------------------------------------- rateopt side


def load_adult(seed: int):
    """Train/valid/test Problems and matrices of reproduce_cotter's Adult experiment (split ``seed``)."""
    import rateopt
    import reproduce_cotter as RC

    data, X, goals, _model, desc, group_cols = RC.experiment("adult")
    parts = data.split(random_state=seed, sizes=data.default_sizes())
    probs, mats = [], []
    for p in parts:
        ds = rateopt.Dataset(X[p], data.y[p], groups={c: data.groups[c].to_numpy(dtype=object)[p]
                                                      for c in group_cols})
        probs.append(rateopt.Problem(constraints=goals, datasets=ds))
        mats.append((X[p], data.y[p], {c: data.groups[c].to_numpy(dtype=object)[p] for c in group_cols}))
    groups = [("race", "Black"), ("race", "White"), ("sex", "Female"), ("sex", "Male")]
    return probs, mats, groups, desc


def group_matrix(groups_dict, groups):
    """(n, m) 0/1 membership of the constrained groups, in the constraints' order."""
    return np.column_stack([(groups_dict[c] == v).astype(np.float64) for c, v in groups])


def hinge_reference(scores, y, G, k=MULTIPLICATIVE_SLACK, margin=1.0):
    """NumPy reference of the net per-example hinge of ``k tpr(all) - tpr(g) <= 0`` for each group.

    Example ``i`` with ``y_i = 1`` has coefficient ``c_i = k/n+ - [i in g]/n_g+``
    on ``1[s_i >= 0]``; the bound is ``c_i (margin + s_i)_+`` when ``c_i > 0`` and
    ``c_i (1 - (margin - s_i)_+)`` (a lower bound of the indicator times a
    negative weight) when ``c_i < 0``.
    """
    pos = y > 0
    s = scores[pos]
    up = np.maximum(0.0, margin + s)
    lo = 1.0 - np.maximum(0.0, margin - s)
    out = []
    for j in range(G.shape[1]):
        g = G[pos, j] > 0
        c = k / pos.sum() - g / g.sum()
        out.append(float(np.sum(np.where(c > 0, c * up, c * lo))))
    return np.array(out)


def sex_pair_bound(G, y, groups, k=MULTIPLICATIVE_SLACK):
    """Closed-form lower bound on ``max(g~_Female, g~_Male)`` over all score vectors.

    For a partition {g, h} of the positives with shares ``pi`` and ``1 - pi``,
    write ``a_g = mean_g min(1, s)`` (<= 1) and ``b_g = mean_g (1 + s)_+``
    (>= ``a_g + 1``, pointwise ``(1+s)_+ >= min(1, s) + 1``). Then
    ``g~_g = k (1-pi) b_h - (1 - k pi) a_g`` and
    ``g~_h = k pi b_g - (1 - k (1-pi)) a_h``. Minimizing ``max(g~_g, g~_h)``
    subject only to ``a <= 1``, ``b >= a + 1`` is a 2-variable LP
    (``b = a + 1`` at the optimum); its value bounds every model from below.
    """
    from scipy.optimize import linprog

    pos = y > 0
    jf = [i for i, (c, _v) in enumerate(groups) if c == "sex"]
    gF = G[pos, jf[0]] > 0
    pi = gF.mean()  # share of Female among positives
    # variables a_F, a_M, t; minimize t
    # g~_F = k(1-pi)(a_M + 1) - (1 - k pi) a_F <= t ; g~_M = k pi (a_F + 1) - (1 - k(1-pi)) a_M <= t
    A = [[-(1 - k * pi), k * (1 - pi), -1.0], [k * pi, -(1 - k * (1 - pi)), -1.0]]
    bnd = [-k * (1 - pi), -k * pi]
    r = linprog([0, 0, 1], A_ub=A, b_ub=bnd, bounds=[(None, 1), (None, 1), (None, None)], method="highs")
    return {"female_share_of_positives": float(pi), "lower_bound": float(r.fun), "a": r.x[:2].tolist()}


def min_max_hinge_lp(X, y, G, k=MULTIPLICATIVE_SLACK, time_limit=900.0):
    """``min over linear models (w, b) of max_i g~_i(w, b)``: an LP (HiGHS) over the positives.

    Variables ``w, b, t`` and per positive example ``u_i >= (1 + s_i)_+`` and
    ``v_i <= min(1, s_i)``; ``g~_j = sum_i c_ij (u_i if c_ij > 0 else v_i) <= t``.
    """
    import scipy.sparse as sp
    from scipy.optimize import linprog

    pos = y > 0
    Xp = sp.csr_matrix(X[pos])
    n, d = Xp.shape
    m = G.shape[1]
    nv = d + 1 + 1 + 2 * n  # w, b, t, u, v
    iu, iv = d + 2, d + 2 + n
    one = sp.csr_matrix(np.ones((n, 1)))
    I = sp.identity(n, format="csr")
    Z = sp.csr_matrix((n, 1))
    # u_i >= 1 + x_i w + b  ->  x_i w + b - u_i <= -1
    r1 = sp.hstack([Xp, one, Z, -I, sp.csr_matrix((n, n))])
    # v_i <= x_i w + b  ->  -x_i w - b + v_i <= 0
    r2 = sp.hstack([-Xp, -one, Z, sp.csr_matrix((n, n)), I])
    rows = []
    for j in range(m):
        g = G[pos, j] > 0
        c = k / n - g / g.sum()
        coef = np.zeros(nv)
        coef[iu:iu + n] = np.where(c > 0, c, 0.0)
        coef[iv:iv + n] = np.where(c < 0, c, 0.0)
        coef[d + 1] = -1.0
        rows.append(coef)
    A = sp.vstack([r1, r2, sp.csr_matrix(np.array(rows))], format="csr")
    b_ub = np.concatenate([-np.ones(n), np.zeros(n), np.zeros(m)])
    cost = np.zeros(nv)
    cost[d + 1] = 1.0
    bounds = [(None, None)] * (d + 2) + [(0, None)] * n + [(None, 1.0)] * n
    t0 = time.perf_counter()
    r = linprog(cost, A_ub=A, b_ub=b_ub, bounds=bounds, method="highs", options={"time_limit": time_limit})
    out = {"status": int(r.status), "message": r.message, "seconds": time.perf_counter() - t0}
    if r.status == 0:
        wb = r.x[:d + 1]
        out.update(value=float(r.fun), w=wb[:d], b=float(wb[d]))
    return out


def iterate_values(problem, X, W, B):
    """0-1 objective and constraint values of every iterate ``(W[t], B[t])`` (``Problem.evaluate``)."""
    S = X @ W.T + B
    obj = np.empty(W.shape[0])
    cons = np.empty((W.shape[0], problem.n_constraints))
    for t in range(W.shape[0]):
        ev = problem.evaluate(np.asarray(S[:, t]).ravel(), kind="scores")
        obj[t] = ev.objective
        cons[t] = [ev.constraints[n] for n in problem.constraint_names]
    return obj, cons


def solutions(train_obj, train_cons):
    """Mixture weights of the m-stochastic (shrink LP), T-stochastic (uniform) and last solutions."""
    from rateopt._solutions._shrink import best_iterate, shrink

    T = train_obj.size
    last, best = np.zeros(T), np.zeros(T)
    last[-1] = 1.0
    best[best_iterate(train_obj, train_cons)] = 1.0
    return {"m-stochastic": np.asarray(shrink(train_obj, train_cons).weights),
            "T-stochastic": np.full(T, 1.0 / T), "best": best, "last": last}


def score_run(probs, mats, W, B, extra):
    """Train/valid/test 0-1 error and largest constraint value of each solution of one run."""
    vals = [iterate_values(p, m[0], W, B) for p, m in zip(probs, mats)]
    out = {}
    for sol, p in solutions(*vals[0]).items():
        row = {}
        for split, (obj, cons) in zip(("train", "valid", "test"), vals):
            row[f"{split}_err"] = float(p @ obj)
            row[f"{split}_viol"] = float((cons.T @ p).max())
        row["support"] = int(np.count_nonzero(p > 0))
        out[sol] = row
    out.update(extra)
    return out


def rank_rule(runs, key="m-stochastic"):
    """Index chosen by Eq. 18 on validation error and largest validation constraint value."""
    import rateopt

    obj = np.array([r[key]["valid_err"] for r in runs])
    viol = np.array([[r[key]["valid_viol"]] for r in runs])
    return int(rateopt.best_iterate(obj, viol))


def run_rateopt(probs, mats, spec, lr, eta, n_iter, every, method="lagrangian-hinge", radius=None):
    import rateopt

    t0 = time.perf_counter()
    kw = {} if method == "unconstrained" else {"lambda_radius": radius}
    res = rateopt.train(probs[0], model=rateopt.LinearModel(), method=method, n_iter=n_iter, learning_rate=lr,
                        eta_lambda=eta, record_every=every, n_threads=1, **_common.paper_settings(method), **kw)
    secs = time.perf_counter() - t0
    W, B = np.asarray(res.weights), np.asarray(res.biases)
    extra = {"seconds": secs, "eta_lambda": eta, "lambda_radius": radius}
    if method != "unconstrained":
        lam = np.asarray(res.multipliers)[:, 1:]
        hinge_last = spec.proxy_constraints(W[-1], float(B[-1]))
        hinge_min = min(float(spec.proxy_constraints(W[t], float(B[t])).max()) for t in range(W.shape[0]))
        extra.update(lambda_sum_last=float(lam[-1].sum()), lambda_last=lam[-1].tolist(),
                     hinge_constraints_last=hinge_last.tolist(), hinge_max_min_over_iterates=hinge_min)
    return score_run(probs, mats, W, B, extra), (W, B)


def run_tfco(python, probs, mats, groups, lr, lr_lambdas, n_iter, every, probes, log):
    X, y, gd = mats[0]
    G = group_matrix(gd, groups)
    with tempfile.TemporaryDirectory() as tmp:
        inp, outp = Path(tmp) / "in.npz", Path(tmp) / "out.npz"
        np.savez(inp, X=X.toarray() if hasattr(X, "toarray") else X, y=y, groups=G, probes=probes,
                 lr_theta=lr, lr_lambdas=np.array(lr_lambdas, dtype=np.float64), n_iter=n_iter,
                 record_every=every)
        cmd = [python, str(Path(__file__).resolve()), "--tfco-worker", str(inp), str(outp)]
        env = dict(__import__("os").environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
        r = subprocess.run(cmd, capture_output=True, text=True, env=env)
        for line in r.stderr.splitlines():
            if line.startswith("tfco "):
                log(line)
        if r.returncode != 0:
            raise RuntimeError(f"TFCO worker failed ({r.returncode}):\n{r.stderr[-3000:]}")
        z = dict(np.load(outp))
    runs = []
    for lr_lam in lr_lambdas:
        key = f"{float(lr_lam):g}"
        lam, prox = z[f"lam_{key}"], z[f"proxy_{key}"]
        extra = {"seconds": float(z[f"seconds_{key}"]), "lr_lambda": float(lr_lam),
                 "lambda_sum_last": float(lam[-1].sum()), "lambda_last": lam[-1].tolist(),
                 "hinge_constraints_last": prox[-1].tolist(),
                 "hinge_max_min_over_iterates": float(prox.max(axis=1).min())}
        runs.append(score_run(probs, mats, z[f"W_{key}"], z[f"B_{key}"], extra))
    return runs, z["probe_proxy_constraints"]


# --------------------------------------------------------------------------- report


def _f(v, fmt="{:.4f}"):
    return "–" if v is None else fmt.format(v)


def render_markdown(res: dict) -> str:
    L = ["# Hinge baseline on Adult: rateopt `lagrangian-hinge` vs TFCO's hinge Lagrangian vs the paper", ""]
    L.append(f"*Problem*: {res['problem']}. Split seed {res['seed']}, train/valid/test "
             f"{'/'.join(map(str, res['sizes']))}; full batch, {res['n_iter']} iterations, iterates recorded "
             f"every {res['record_every']}; model Adam learning rate {res['learning_rate']}, zero initialization.  ")
    L.append(f"*Run*: {res['seconds']:.0f} s, {res['machine'].get('cpu_model', '?')}, git "
             f"{res['git'].get('sha', '?')}{' (dirty)' if res['git'].get('dirty') else ''}; "
             f"command `{res['command']}`.")
    L += ["", "## 1. The relaxation is the same", ""]
    rel = res["relaxation"]
    L.append(f"Largest |difference| of the four hinge constraint values over {rel['n_probes']} models "
             f"(zero, unconstrained, a hinge iterate, the LP's minimizer when run): rateopt vs NumPy reference "
             f"{rel['max_abs_rateopt_vs_reference']:.2e}; rateopt vs TFCO "
             f"{_f(rel.get('max_abs_rateopt_vs_tfco'), '{:.2e}')}.")
    L += ["", "## 2. The relaxed problem is infeasible", ""]
    fe = res["feasibility"]
    sb = fe["sex_pair_bound"]
    L.append(f"Closed-form lower bound on max(g~_Female, g~_Male) over *all* score vectors "
             f"(Female share of positives {sb['female_share_of_positives']:.3f}): **{sb['lower_bound']:+.4f}**.  ")
    lp = fe.get("min_max_lp")
    if lp and "value" in lp:
        L.append(f"min over linear models of max_i g~_i (HiGHS LP, {lp['seconds']:.0f} s): **{lp['value']:+.4f}**; "
                 f"its hinge values (rateopt) {np.round(lp['hinge_at_minimizer'], 4).tolist()}.")
    else:
        L.append("LP not run (--quick or --no-lp).")
    L += ["", "## 3. Training (0-1 values of the recorded iterates, same scoring for both systems)", ""]
    hdr = ["system", "multiplier step", "solution", "train err", "train viol", "valid err", "valid viol",
           "test err", "test viol", "sum lambda (last)", "min_t max_i g~_i", "s"]
    rows = []
    u = res["unconstrained"]["last"]
    rows.append(["rateopt unconstrained", "–", "last", *(_f(u[k]) for k in
                 ("train_err", "train_viol", "valid_err", "valid_viol", "test_err", "test_viol")), "–", "–",
                 f"{res['unconstrained']['seconds']:.1f}"])
    for sysname, runs, stepkey in (("rateopt lagrangian-hinge", res["rateopt"], "eta_lambda"),
                                   ("rateopt lagrangian-hinge, lambda_radius", res.get("rateopt_radius") or [],
                                    "eta_lambda"),
                                   ("TFCO LagrangianOptimizerV1 (hinge)", res.get("tfco") or [], "lr_lambda")):
        for i, r in enumerate(runs):
            step = f"{r[stepkey]:g}" + (f", R={r['lambda_radius']:g}" if r.get("lambda_radius") else "")
            for sol in SOLUTIONS:
                mark = " **(rank rule)**" if sol == "m-stochastic" and i == res["chosen"].get(sysname) else ""
                rows.append([sysname, step, sol + mark,
                             *(_f(r[sol][k]) for k in ("train_err", "train_viol", "valid_err", "valid_viol",
                                                       "test_err", "test_viol")),
                             f"{r['lambda_sum_last']:.3g}", f"{r['hinge_max_min_over_iterates']:+.3f}",
                             f"{r['seconds']:.1f}"])
    for name, v in PAPER_ADULT.items():
        rows.append([f"paper (Table 7) {name}", "–", "–", _f(v[0]), _f(v[3]), _f(v[1]), _f(v[4]), _f(v[2]),
                     _f(v[5]), "–", "–", "–"])
    L.append(_common.markdown_table(hdr, rows))
    L += ["", "*rateopt*: additive projected ascent `lambda += eta_lambda g~` (no radius unless R is shown: "
          "then projected onto the L1 ball of radius R, Algorithm 5's Lambda). *TFCO*: Adam on the "
          "multipliers with learning rate `lr_lambda` (the paper validated Adam rates in powers of 10 around "
          "1e-3). `min_t max_i g~_i`: the smallest largest hinge constraint value over the recorded iterates "
          "(> 0: no iterate satisfies the relaxed constraints)."]
    return "\n".join(L)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    _common.add_common_args(ap)
    ap.add_argument("--seed", type=int, default=0, help="split seed (reproduce_cotter's seed 0)")
    ap.add_argument("--n-iter", type=int, default=None, help="iterations (default 2000; --quick: 400)")
    ap.add_argument("--learning-rate", type=float, default=0.01, help="the model's Adam learning rate")
    ap.add_argument("--eta-grid", default=None, help="rateopt eta_lambda values (default 1e-4,1e-3,1e-2,1e-1)")
    ap.add_argument("--radius-grid", default=None,
                    help="lambda_radius values of extra rateopt runs at eta_lambda=0.1 (default 0.1,1; --quick: 0.1)")
    ap.add_argument("--tfco-grid", default=None, help="TFCO Adam lr_lambda values (default 1e-4,1e-3,1e-2,1e-1)")
    ap.add_argument("--tfco-python", default=DEFAULT_TFCO_PYTHON, help="python of an env with TFCO")
    ap.add_argument("--no-tfco", action="store_true", help="skip the TFCO runs")
    ap.add_argument("--no-lp", action="store_true", help="skip the min-max LP")
    ap.add_argument("--tfco-worker", nargs=2, metavar=("IN", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.tfco_worker:
        tfco_worker(*args.tfco_worker)
        return 0
    log = (lambda msg: print(msg, file=sys.stderr, flush=True)) if args.json else print
    n_iter = args.n_iter or (400 if args.quick else 2000)
    every = max(1, n_iter // 100)
    default_grid = "1e-3,1e-1" if args.quick else "1e-4,1e-3,1e-2,1e-1"
    etas = [float(v) for v in (args.eta_grid or default_grid).split(",")]
    tlrs = [float(v) for v in (args.tfco_grid or default_grid).split(",")]
    radii = [float(v) for v in (args.radius_grid or ("0.1" if args.quick else "0.1,1")).split(",") if v]
    run_lp = not (args.quick or args.no_lp)
    t_start = time.perf_counter()

    from rateopt._training._spec import spec_from_problem

    probs, mats, groups, desc = load_adult(args.seed)
    spec = spec_from_problem(probs[0])
    X, y, gd = mats[0]
    G = group_matrix(gd, groups)

    unc, (Wu, Bu) = run_rateopt(probs, mats, spec, args.learning_rate, None, n_iter, every, method="unconstrained")
    log(f"unconstrained: test err {unc['last']['test_err']:.4f}")
    runs, first_iter = [], None
    for eta in etas:
        r, (W, B) = run_rateopt(probs, mats, spec, args.learning_rate, eta, n_iter, every)
        first_iter = first_iter or (W, B)
        runs.append(r)
        log(f"rateopt eta={eta:g}: m-stoch test err {r['m-stochastic']['test_err']:.4f}, "
            f"sum lambda {r['lambda_sum_last']:.3g}, {r['seconds']:.1f} s")

    rruns = []
    for R in radii:
        r, _ = run_rateopt(probs, mats, spec, args.learning_rate, 0.1, n_iter, every, radius=R)
        rruns.append(r)
        log(f"rateopt eta=0.1 lambda_radius={R:g}: m-stoch test err {r['m-stochastic']['test_err']:.4f}")

    feas = {"sex_pair_bound": sex_pair_bound(G, y, groups)}
    probes = [np.zeros(X.shape[1] + 1), np.append(Wu[-1], Bu[-1]),
              np.append(first_iter[0][-1], first_iter[1][-1])]
    if run_lp:
        lp = min_max_hinge_lp(X, y, G)
        if "w" in lp:
            lp["hinge_at_minimizer"] = spec.proxy_constraints(lp["w"], lp["b"]).tolist()
            probes.append(np.append(lp.pop("w"), lp.pop("b")))
        feas["min_max_lp"] = lp
        log(f"LP min max hinge: {lp.get('value')} ({lp['seconds']:.0f} s)")
    probes = np.array(probes)
    ours = np.array([spec.proxy_constraints(p[:-1], float(p[-1])) for p in probes])
    ref = np.array([hinge_reference(np.asarray(X @ p[:-1]).ravel() + p[-1], y, G) for p in probes])
    relax = {"n_probes": len(probes), "max_abs_rateopt_vs_reference": float(np.abs(ours - ref).max()),
             "rateopt_values": ours.tolist()}

    res = {"benchmark": "hinge_baseline", "quick": args.quick, "seed": args.seed, "n_iter": n_iter,
           "record_every": every, "learning_rate": args.learning_rate, "problem": desc,
           "sizes": [int(m[0].shape[0]) for m in mats],
           "command": "python bench/hinge_baseline.py " + " ".join(argv if argv is not None else sys.argv[1:]),
           "unconstrained": unc, "rateopt": runs, "rateopt_radius": rruns, "feasibility": feas, "relaxation": relax,
           "paper_adult_table7": PAPER_ADULT, "chosen": {"rateopt lagrangian-hinge": rank_rule(runs)}}
    if rruns:
        res["chosen"]["rateopt lagrangian-hinge, lambda_radius"] = rank_rule(rruns)
    if not args.no_tfco:
        truns, tprobe = run_tfco(args.tfco_python, probs, mats, groups, args.learning_rate, tlrs, n_iter, every,
                                 probes, log)
        relax["max_abs_rateopt_vs_tfco"] = float(np.abs(ours - tprobe).max())
        relax["tfco_values"] = tprobe.tolist()
        res["tfco"] = truns
        res["chosen"]["TFCO LagrangianOptimizerV1 (hinge)"] = rank_rule(truns)
        for r in truns:
            log(f"tfco lr_lambda={r['lr_lambda']:g}: m-stoch test err {r['m-stochastic']['test_err']:.4f}, "
                f"sum lambda {r['lambda_sum_last']:.3g}")
    res["seconds"] = time.perf_counter() - t_start
    res["machine"] = _common.machine_info()
    res["git"] = _common.git_sha()
    sel = res["chosen"]["rateopt lagrangian-hinge"]
    res["summary"] = {
        "rateopt_hinge_m_stoch_test_err_rank_rule": runs[sel]["m-stochastic"]["test_err"],
        "rateopt_hinge_radius_m_stoch_test_err_rank_rule": (
            rruns[res["chosen"]["rateopt lagrangian-hinge, lambda_radius"]]["m-stochastic"]["test_err"]
            if rruns else None),
        "tfco_hinge_m_stoch_test_err_rank_rule": (res["tfco"][res["chosen"]["TFCO LagrangianOptimizerV1 (hinge)"]]
                                                  ["m-stochastic"]["test_err"] if "tfco" in res else None),
        "paper_hinge_m_stoch_test_err": PAPER_ADULT["Hinge m-stochastic"][2],
        "relaxation_max_abs_diff_vs_tfco": relax.get("max_abs_rateopt_vs_tfco"),
        "sex_pair_hinge_lower_bound": feas["sex_pair_bound"]["lower_bound"],
        "min_max_hinge_lp": feas.get("min_max_lp", {}).get("value"),
    }
    json_path, md_path = _common.results_paths("hinge_baseline", quick=args.quick, out=args.out)
    _common.write_results(res, render_markdown(res), json_path, md_path)
    log(f"wrote {json_path} and {md_path}")
    if args.json:
        _common.emit_json_line(res["summary"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
