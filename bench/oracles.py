"""The oracle methods of issue 12 against their baselines, each part in one run.

(a) **SDCA vs liblinear.** ``rateopt.core.sdca_two_sided_hinge`` against
    scikit-learn's ``LinearSVC(loss="hinge")`` on the same
    weighted two-sided hinge (:func:`solve_pair`: bench/sdca.py's method and
    objective, SDCA stopped at a gap certifying a 1e-6 *relative* objective,
    LinearSVC at the largest ``tol`` whose objective is within 1e-6 of the
    optimum's lower bound, found in an untimed calibration sweep). The weights
    are the per-row net coefficients of a point of Algorithm 2's simplex:
    0.5 x the error rate + 0.5 x seeded Dirichlet multipliers on the constraint
    rows (bench/sdca.py uses 0.5 x every row of a two-sided constraint, whose
    two sides cancel, so its problem is the unweighted SVM). Adult (equal
    opportunity on sex) and census
    KDD (CSR, demographic parity over race x sex; a seeded 50,000-row
    subsample of its training split, :data:`CENSUS_A_ROWS`). JSON ``sdca_speedup_vs_liblinear``:
    the worst LinearSVC/SDCA time ratio.
(b) **Algorithm 2 with the hinge oracle vs the gradient game.**
    ``rateopt.train(method="oracle-proxy", oracle=rateopt.oracles.HingeOracle())``
    vs ``method="proxy-swap"`` at the library's defaults, on the anchor problems
    of ``bench/compare_anchors.py`` (``adult_tpr4``, ``census_dp``: their data,
    problem builders and shared NumPy scoring come from ``bench/_anchors.py``), m-stochastic
    solutions of both. The oracle game's ``n_iter`` is fixed in advance
    (:data:`ORACLE_PROXY_ITER`; each round is an exact SDCA solve, warm-started).
(c) **Boosted trees under equalized odds vs fairlearn.** ``RateConstrainedClassifier(
    estimator=HistGradientBoostingClassifier(...))`` (Algorithm 2 with the estimator
    oracle) vs fairlearn ``ExponentiatedGradient(HistGradientBoostingClassifier(...),
    EqualizedOdds(difference_bound=0.05))`` (its defaults otherwise) on the
    ``adult_eo_sex`` problem, the same HGB hyperparameters for both
    (:data:`HGB_PARAMS`), dense X for both (HGB takes no sparse input), scored by
    the shared NumPy evaluation. Estimator fits are counted (a subclass of HGB
    with a class-level counter). rateopt's ``n_iter`` (:data:`HGB_N_ITER`) is
    fixed in advance, not tuned. Without fairlearn the baseline is skipped with
    a note.
(d) **Minimax group error.** ``rateopt.minimax_group_loss`` (Hedge over the
    groups against a ``ThresholdOracle``: a logistic regression's score with one
    threshold per group, through group indicator columns appended to X) on
    Adult (sex x {White, non-White}, K = 4) and COMPAS (sex, K = 2), and
    ``rateopt.group_opt`` with ``f = max`` on COMPAS; against the unconstrained
    logistic regression: the largest group error on train and test (NumPy).

Timings are wall-clock medians of ``--repeats`` fits (default 3, --quick 1) for
part (b) on Adult; part (b) on census and both systems of part (c) are fitted
once (each fit takes minutes; the whole run has to stay near 20 minutes on a
shared 2-core machine), part (a) uses 5 interleaved repeats (3 with --quick). Usage::

    bench/.anchors-venv/bin/python bench/oracles.py [--quick] [--json] [--out PATH] [--only a,b,c,d]
        [--max-rows N] [--predictions PATH]

``--quick``: Adult and COMPAS subsampled to 4,000 training rows, census to
10,000 (test splits alike), fewer repeats and lambdas; results go to
``oracles_quick.json/.md``. ``--max-rows`` caps every split further (the smoke
test uses it). ``--predictions`` saves part (b)-(d)'s training and test
probabilities with labels and groups (``.npz``) so a number can be recomputed.
Heavy: run it alone on the machine.
"""

from __future__ import annotations

import argparse
import gc
import math
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _anchors as anchors
import _common

NAME = "oracles"
SEED = 0

#: Part (a): census training rows used (seeded subsample of the 209,500): on all
#: of them the untimed 1e-11-gap reference solve alone ran for minutes.
CENSUS_A_ROWS = 50_000
#: Part (b): rounds of Algorithm 2 with the hinge oracle (each an exact SDCA
#: solve). Fixed before any run: a tenth of proxy-swap's default 1000 gradient
#: steps, since every round is a best response rather than one step.
ORACLE_PROXY_ITER = 100
#: Part (c): the HGB hyperparameters of both systems ...
HGB_PARAMS = {"max_iter": 100, "random_state": SEED}
#: ... and rateopt's rounds (fits), fixed before any run: half of fairlearn's
#: default max_iter=50 (the README's example uses 25).
HGB_N_ITER = 25
#: Part (d): Hedge rounds and GroupOpt's accuracy.
HEDGE_ITER = 500
GROUP_OPT_EPS = 0.1
#: --quick row caps (train, validation, test) for Adult and COMPAS.
QUICK_ROWS = (4000, 1000, 4000)


def log(*a):
    print(*a, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- data


def _cap(split: anchors.Split, n: int | None, rng) -> anchors.Split:
    if n is None or split.X.shape[0] <= n:
        return split
    idx = np.sort(rng.choice(split.X.shape[0], n, replace=False))
    return anchors.Split(split.X[idx], split.y[idx], {k: v[idx] for k, v in split.groups.items()})


def load(name: str, quick: bool, max_rows: int | None) -> anchors.Data:
    """Adult / census through _anchors.load_data (the anchors' split), or COMPAS;
    then the --quick and --max-rows caps (seeded subsamples of each split)."""
    if name in ("adult", "census"):
        d = anchors.load_data(name, quick)
    else:
        import rateopt.datasets as rd

        bd = rd.load_compas()
        groups = {c: bd.groups[c].to_numpy(dtype=object) for c in ("sex", "race")}
        idx = bd.split(random_state=SEED)
        X, y = bd.X, np.asarray(bd.y)
        tr, va, te = (anchors.Split(X[i], y[i], {k: v[i] for k, v in groups.items()}) for i in idx)
        d = anchors.Data("compas", tr, va, te, bd.source, "rateopt.datasets",
                    [f"random split, seed {SEED}: {len(idx[0])} / {len(idx[1])} / {len(idx[2])}"])
    rng = np.random.default_rng(SEED)
    caps = [None, None, None]
    if quick and name != "census":
        caps = list(QUICK_ROWS)
    if max_rows is not None:
        caps = [max_rows if c is None else min(c, max_rows) for c in caps]
    if any(c is not None for c in caps):
        d.train, d.val, d.test = (_cap(s, c, rng) for s, c in zip((d.train, d.val, d.test), caps))
        d.notes.append(f"subsampled to at most {caps} rows (train, validation, test)")
    return d


def to_dataset(split: anchors.Split, dense: bool = False):
    import rateopt

    X = split.X.toarray() if dense else split.X
    return rateopt.Dataset(X, split.y, groups=dict(split.groups))


def timed(fn, repeats: int):
    """Run ``fn`` ``repeats`` times; (median seconds, samples, last return value, external loads)."""
    times, loads, out = [], [], None
    for _ in range(repeats):
        out = None
        gc.collect()
        with _common.CpuMonitor() as mon:
            t0 = time.perf_counter()
            out = fn()
            times.append(time.perf_counter() - t0)
        loads.append(mon.external_cores)
    return _common.median(times), times, out, loads


# --------------------------------------------------------------------------- (a) SDCA vs liblinear


LIBLINEAR_TOLS = (1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8)


def solve_pair(X, Xm, u, A, B, lam, repeats, max_calibration_s=120.0) -> dict:
    """SDCA and LinearSVC on one weighted two-sided hinge, both to a 1e-6 relative objective.

    Like bench/sdca.py's ``one_lambda`` (whose ``objective`` is reused) with one
    change: SDCA's ``tol`` is ``1e-6 * min(1, |D*|)``. The core stops on
    ``gap <= tol * max(1, |P|)``, an *absolute* 1e-6 when ``|P| < 1``, which is
    a weaker stop than the 1e-6 relative one LinearSVC must meet; with the
    scaled tol the gap certifies ``(P - P*) / |P*| <= 1e-6`` for SDCA too.
    LinearSVC: the largest tol of :data:`LIBLINEAR_TOLS` whose objective is
    within 1e-6 x |D*| of the optimum's lower bound D*, found in an untimed
    sweep (stopped at the first success, or once a fit takes over
    ``max_calibration_s``). Timed runs are interleaved (bench/_common.py).
    """
    import sdca
    from rateopt.core import sdca_two_sided_hinge
    from sklearn.svm import LinearSVC

    n = X.shape[0]
    keep = u != 0
    Xk, yk, swk = X[keep], np.where(u[keep] < 0, 1, -1), n * np.abs(u[keep])
    C = 1.0 / (lam * n)
    out = {"lam": lam, "C_liblinear": C}
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:  # may stop at max_epochs: D* stays a valid lower bound
        warnings.simplefilter("always")
        ref = sdca_two_sided_hinge(Xm, A, B, lam=lam, bias="regularized", tol=1e-11, max_epochs=1_000_000)
    lower = ref.dual
    out["reference"] = {"primal": ref.primal, "dual": ref.dual, "gap": ref.gap, "epochs": ref.n_epochs,
                        "seconds": time.perf_counter() - t0, "warnings": [str(w.message)[:200] for w in caught]}
    tol_sdca = sdca.TARGET * min(1.0, abs(lower))
    out["sdca_tol"] = tol_sdca

    def svc(tol):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ConvergenceWarning at loose tol is part of the sweep
            return LinearSVC(loss="hinge", dual=True, C=C, tol=tol, max_iter=10_000_000,
                             intercept_scaling=1.0).fit(Xk, yk, sample_weight=swk)

    def rel(P):
        return (P - lower) / abs(lower)

    sweep, chosen = [], None
    for tol in LIBLINEAR_TOLS:
        t0 = time.perf_counter()
        clf = svc(tol)
        el = time.perf_counter() - t0
        P = sdca.objective(X, A, B, lam, clf.coef_[0], clf.intercept_[0], clf.intercept_[0])
        sweep.append({"tol": tol, "seconds": el, "primal": P, "rel_to_optimum": rel(P), "n_iter": int(clf.n_iter_)})
        if rel(P) <= sdca.TARGET:
            chosen = tol
            break
        if el > max_calibration_s:
            break
    out["liblinear_sweep"] = sweep
    out["liblinear_tol"] = chosen
    bench = _common.Interleaved()
    bench.add("sdca", lambda: sdca_two_sided_hinge(Xm, A, B, lam=lam, bias="regularized", tol=tol_sdca,
                                                   max_epochs=1_000_000))
    if chosen is not None:
        bench.add("liblinear", lambda: svc(chosen))
    results = {}
    bench.run(repeats=repeats, warmup=1, on_warm=lambda name, res: results.__setitem__(name, res),
              quiet_cores=0.5, max_rounds=2 * repeats)
    r = results["sdca"]
    out["sdca"] = {"seconds": bench.median_s("sdca"), "primal": r.primal, "gap": r.gap, "epochs": r.n_epochs,
                   "rel_to_optimum": rel(r.primal), "samples_s": bench.samples_s("sdca")}
    if chosen is not None:
        c = results["liblinear"]
        P = sdca.objective(X, A, B, lam, c.coef_[0], c.intercept_[0], c.intercept_[0])
        out["liblinear"] = {"seconds": bench.median_s("liblinear"), "tol": chosen, "primal": P,
                            "rel_to_optimum": rel(P), "samples_s": bench.samples_s("liblinear")}
        out["speedup_vs_liblinear"] = out["liblinear"]["seconds"] / out["sdca"]["seconds"]
    else:
        out["liblinear"] = None
        out["speedup_vs_liblinear"] = None
        out["liblinear_note"] = "no LinearSVC tol in the sweep reached 1e-6 relative"
    out["round_loads"] = bench.round_loads
    out["quiet_rounds_only"] = bench.used_quiet_only
    return out


def part_a(datasets: dict, quick: bool, repeats: int) -> dict:
    import rateopt
    from rateopt import goals
    from rateopt._training._row_coefficients import problem_row_coefficients
    from rateopt.core import FeatureMatrix

    cases = [("adult", [goals.equal_opportunity("sex", slack=0.05)]),
             ("census", [goals.demographic_parity("race_sex", slack=anchors.CENSUS_SLACK)])]
    out = {"target_rel_objective": 1e-6, "datasets": {}}
    for name, constraints in cases:
        if name not in datasets:
            continue
        tr = datasets[name].train
        if name == "census":
            tr = _cap(tr, CENSUS_A_ROWS, np.random.default_rng(SEED))
        ds = rateopt.Dataset(tr.X, tr.y, groups=dict(tr.groups))
        problem = rateopt.Problem(constraints=constraints, datasets=ds)
        cp = problem.compiled
        # A point of the proxy-Lagrangian's simplex, as Algorithm 2's oracle gets one:
        # lambda_0 = 1/2 on the error rate, 1/2 spread over the constraint rows (seeded Dirichlet).
        lam_i = 0.5 * np.random.default_rng(SEED).dirichlet(np.ones(cp.n_constraints))
        coef = 0.5 * cp.objective_coef + lam_i @ cp.C
        u = problem_row_coefficients(problem, coef)["train"]
        n = u.shape[0]
        A, B = n * np.maximum(u, 0.0), n * np.maximum(-u, 0.0)
        X = tr.X
        Xm = FeatureMatrix(X)
        lams = (1e-4,) if (quick or name == "census") else (1.0 / n, 1e-4)
        runs = []
        for lam in lams:
            log(f"(a) {name}: lam={lam:.3g} ...")
            t0 = time.perf_counter()
            r = solve_pair(X, Xm, u, A, B, lam, repeats)
            r["wall_s"] = time.perf_counter() - t0
            lib = r["liblinear"]
            log(f"    SDCA {r['sdca']['seconds']:.3f} s (rel {r['sdca']['rel_to_optimum']:.1e}), LinearSVC "
                f"{lib['seconds'] if lib else float('nan'):.3f} s (tol {r['liblinear_tol']}), "
                f"speed-up {r['speedup_vs_liblinear']} ({r['wall_s']:.0f} s)")
            runs.append(r)
        out["datasets"][name] = {
            "n_samples": n, "n_features": X.shape[1], "nnz": int(X.nnz), "n_constraints": cp.n_constraints,
            "rows_with_A": int((A > 0).sum()), "rows_with_B": int((B > 0).sum()),
            "weights_distinct": int(np.unique(np.abs(u[u != 0])).size),
            "combination": ("0.5 x error rate + sum_i lam_i C_i, lam = 0.5 x Dirichlet(1) over the constraint rows "
                            "(seed 0); margin 1, regularized bias (bias_scale 1)"),
            "runs": runs,
        }
    speedups = [r["speedup_vs_liblinear"] for d in out["datasets"].values() for r in d["runs"]]
    out["sdca_speedup_vs_liblinear"] = None if not speedups or any(s is None for s in speedups) else min(speedups)
    out["target_met"] = out["sdca_speedup_vs_liblinear"] is not None and out["sdca_speedup_vs_liblinear"] >= 2.0
    return out


# --------------------------------------------------------------------------- (b) hinge oracle vs proxy-swap


def part_b(datasets: dict, specs: dict, repeats: int, preds: dict) -> dict:
    import rateopt

    systems = {
        # the library defaults this part was measured with (before issue 14's defaults study)
        "proxy-swap": {"method": "proxy-swap", "n_iter": 1000, "learning_rate": 0.01, **_common.PAPER_SETTINGS},
        "oracle-proxy": {"method": "oracle-proxy", "n_iter": ORACLE_PROXY_ITER},
    }
    out = {"settings": {"proxy-swap": "rateopt.train's former defaults (Adam lr 0.01, T=1000, full batch, l2=0, "
                                      "hinge objective, uniform swap-regret start)",
                        "oracle-proxy": f"HingeOracle() (l2 1e-4, tol 1e-6, warm-started), n_iter="
                                        f"{ORACLE_PROXY_ITER}, other settings the defaults",
                        "solution": "m-stochastic for both", "random_state": SEED},
           "problems": {}}
    for key in ("adult_tpr4", "census_dp"):
        spec = specs.get(key)
        if spec is None or spec.data not in datasets:
            continue
        data = datasets[spec.data]
        entry = {"problem": spec.text, "train_shape": list(data.train.X.shape)}
        for sysname, cfg in systems.items():
            def fit(cfg=cfg):
                ds = to_dataset(data.train)
                problem = rateopt.Problem(constraints=anchors.rateopt_goals(spec), datasets=ds)
                kw = dict(cfg)
                if kw["method"] == "oracle-proxy":
                    kw["oracle"] = rateopt.oracles.HingeOracle()
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    result = rateopt.train(problem, random_state=SEED, **kw)
                    clf = result.solution("m-stochastic")
                result.caught_warnings_ = [f"{w.category.__name__}: {str(w.message)[:160]}" for w in caught]
                return result, clf

            reps = repeats if spec.data == "adult" else 1
            log(f"(b) {key}: {sysname} ({reps} fit(s)) ...")
            med, samples, (result, clf), loads = timed(fit, reps)
            p_tr, p_te = clf.predict_proba(data.train.X)[:, 1], clf.predict_proba(data.test.X)[:, 1]
            ev_tr = anchors.shared_evaluate(p_tr, data.train.y, data.train.groups, spec)
            ev_te = anchors.shared_evaluate(p_te, data.test.y, data.test.groups, spec)
            entry[sysname] = {"fit_s": med, "fit_samples_s": samples, "external_cores": loads,
                              "train_err": ev_tr["error"], "test_err": ev_te["error"],
                              "train_viol": ev_tr["max_violation"], "test_viol": ev_te["max_violation"],
                              "n_iter": int(result.n_iter), "n_models": int(clf.n_models),
                              "warnings_last_fit": len(result.caught_warnings_),
                              "warnings_sample": result.caught_warnings_[:3]}
            preds[f"b_{key}_{sysname}_train"] = p_tr
            preds[f"b_{key}_{sysname}_test"] = p_te
            log(f"    fit {med:.2f} s, train err {ev_tr['error']:.4f} viol {ev_tr['max_violation']:+.4f}, "
                f"test err {ev_te['error']:.4f} viol {ev_te['max_violation']:+.4f}")
            del result, clf
        o, g = entry["oracle-proxy"], entry["proxy-swap"]
        both_feasible = o["train_viol"] <= 1e-4 and g["train_viol"] <= 1e-4
        entry["both_train_feasible"] = both_feasible
        entry["test_err_diff"] = o["test_err"] - g["test_err"]
        entry["time_ratio_oracle_over_swap"] = o["fit_s"] / g["fit_s"]
        entry["target_met"] = bool(both_feasible and o["test_err"] <= g["test_err"])
        out["problems"][key] = entry
    return out


# --------------------------------------------------------------------------- (c) HGB vs fairlearn


def _counting_hgb():
    """A HistGradientBoostingClassifier whose fits are counted (class attribute ``fits``);
    cloning keeps the class, so every fit either system makes is counted."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    class CountingHGB(HistGradientBoostingClassifier):
        fits = 0
        fit_seconds = 0.0

        def fit(self, X, y, sample_weight=None):
            t0 = time.perf_counter()
            out = super().fit(X, y, sample_weight=sample_weight)
            type(self).fits += 1
            type(self).fit_seconds += time.perf_counter() - t0
            return out

    return CountingHGB


def part_c(data: anchors.Data, spec: anchors.Spec, repeats: int, fairlearn_repeats: int, preds: dict,
           n_iter: int = HGB_N_ITER, hgb_params: dict | None = None) -> dict:
    import rateopt
    from rateopt import goals

    CountingHGB = _counting_hgb()
    hgb_params = dict(HGB_PARAMS) if hgb_params is None else hgb_params
    Xtr, Xte = data.train.X.toarray(), data.test.X.toarray()
    sex_tr = data.train.groups["sex"]
    out = {"problem": spec.text, "train_shape": list(Xtr.shape), "hgb_params": dict(hgb_params),
           "hgb_note": "HistGradientBoostingClassifier defaults otherwise (early_stopping='auto': on above "
                       "10,000 rows, 10% validation split drawn with random_state)",
           "input": "dense float64 X for both (HGB rejects sparse input); the dense copy is made outside the timing"}

    def fit_rateopt():
        est = rateopt.RateConstrainedClassifier(goals=[goals.equalized_odds("sex", slack=spec.slack)],
                                                estimator=CountingHGB(**hgb_params), n_iter=n_iter,
                                                random_state=SEED)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est.fit(Xtr, data.train.y, groups={"sex": sex_tr})
        est.warnings_ = sorted({f"{w.category.__name__}: {str(w.message)[:200]}" for w in caught})
        return est

    log("(c) rateopt oracle-proxy + HGB ...")
    CountingHGB.fits, CountingHGB.fit_seconds = 0, 0.0
    med, samples, est, loads = timed(fit_rateopt, repeats)
    fits_r = CountingHGB.fits / repeats
    p_tr, p_te = est.predict_proba(Xtr)[:, 1], est.predict_proba(Xte)[:, 1]
    ev_tr = anchors.shared_evaluate(p_tr, data.train.y, data.train.groups, spec)
    ev_te = anchors.shared_evaluate(p_te, data.test.y, data.test.groups, spec)
    out["rateopt"] = {"fit_s": med, "fit_samples_s": samples, "external_cores": loads,
                      "train_err": ev_tr["error"], "test_err": ev_te["error"],
                      "train_viol": ev_tr["max_violation"], "test_viol": ev_te["max_violation"],
                      "estimator_fits": fits_r, "estimator_fit_s": CountingHGB.fit_seconds / repeats,
                      "n_iter": n_iter, "n_models": int(est.classifier_.n_models),
                      "feasible_reported": bool(est.feasibility_.feasible),
                      "method": "oracle-proxy (RateConstrainedClassifier(estimator=...)), m-stochastic",
                      "warnings": est.warnings_}
    preds["c_y_train"], preds["c_sex_train"] = data.train.y, sex_tr.astype(str)
    preds["c_rateopt_train"], preds["c_rateopt_test"] = p_tr, p_te
    log(f"    fit {med:.2f} s ({fits_r:.0f} HGB fits), train err {ev_tr['error']:.4f} viol "
        f"{ev_tr['max_violation']:+.4f}, test err {ev_te['error']:.4f} viol {ev_te['max_violation']:+.4f}")
    del est
    try:
        from fairlearn.reductions import EqualizedOdds, ExponentiatedGradient
    except ImportError:
        out["fairlearn"] = None
        out["fairlearn_note"] = ("fairlearn is not installed: the baseline was skipped (run in the anchors' venv, "
                                 "bench/requirements-anchors.txt)")
        log("    fairlearn not installed: baseline skipped")
    else:
        import fairlearn

        def fit_fairlearn():
            eg = ExponentiatedGradient(CountingHGB(**hgb_params),
                                       constraints=EqualizedOdds(difference_bound=spec.slack))
            eg.fit(Xtr, data.train.y, sensitive_features=sex_tr)
            return eg

        log("(c) fairlearn ExponentiatedGradient + HGB ...")
        CountingHGB.fits, CountingHGB.fit_seconds = 0, 0.0
        med_f, samples_f, eg, loads_f = timed(fit_fairlearn, fairlearn_repeats)
        fits_f = CountingHGB.fits / fairlearn_repeats
        q_tr = np.asarray(eg._pmf_predict(Xtr))[:, 1]
        q_te = np.asarray(eg._pmf_predict(Xte))[:, 1]
        fv_tr = anchors.shared_evaluate(q_tr, data.train.y, data.train.groups, spec)
        fv_te = anchors.shared_evaluate(q_te, data.test.y, data.test.groups, spec)
        out["fairlearn"] = {"fit_s": med_f, "fit_samples_s": samples_f, "external_cores": loads_f,
                            "train_err": fv_tr["error"], "test_err": fv_te["error"],
                            "train_viol": fv_tr["max_violation"], "test_viol": fv_te["max_violation"],
                            "estimator_fits": fits_f, "estimator_fit_s": CountingHGB.fit_seconds / fairlearn_repeats,
                            "n_predictors": len(eg.predictors_),
                            "n_models": int((np.asarray(eg.weights_) > 0).sum()),
                            "version": fairlearn.__version__,
                            "settings": "ExponentiatedGradient defaults (eps=0.01, max_iter=50, eta0=2.0)"}
        preds["c_fairlearn_train"], preds["c_fairlearn_test"] = q_tr, q_te
        log(f"    fit {med_f:.2f} s ({fits_f:.0f} HGB fits), train err {fv_tr['error']:.4f} viol "
            f"{fv_tr['max_violation']:+.4f}, test err {fv_te['error']:.4f} viol {fv_te['max_violation']:+.4f}")
        del eg
    r, f = out["rateopt"], out["fairlearn"]
    out["hgb_test_error"] = r["test_err"]
    out["hgb_train_violation"] = r["train_viol"]
    out["fairlearn_hgb_test_error"] = f["test_err"] if f else None
    out["hgb_speedup_vs_fairlearn"] = f["fit_s"] / r["fit_s"] if f else None
    out["targets"] = {"train_violation<=0.001": r["train_viol"] <= 1e-3,
                      "test_error<=fairlearn": (r["test_err"] <= f["test_err"]) if f else None,
                      "speedup>=5": (out["hgb_speedup_vs_fairlearn"] >= 5.0) if f else None}
    return out


# --------------------------------------------------------------------------- (d) minimax group error


def group_errors(p, y, g, values) -> list[float]:
    """Error rate of expected decisions ``p`` on each group (plain NumPy)."""
    p = np.asarray(p, dtype=np.float64)
    yb = np.asarray(y).astype(bool)
    return [float(np.mean(np.where(yb[g == v], 1.0 - p[g == v], p[g == v]))) for v in values]


def _with_indicators(X, g, values):
    """X with one 0/1 indicator column per group but the first (the base group)."""
    import scipy.sparse as sp

    ind = np.column_stack([(g == v).astype(np.float64) for v in values[1:]])
    return sp.hstack([X, sp.csr_matrix(ind)], format="csr")


def part_d(datasets: dict, preds: dict, hedge_iter: int, group_opt_eps: float) -> dict:
    import rateopt
    from sklearn.linear_model import LogisticRegression

    out = {"settings": {"oracle": "ThresholdOracle(direction = LogisticRegression().coef_ (lbfgs, C=1), "
                                  "one threshold per group via appended indicator columns)",
                        "minimax_group_loss": f"n_iter={hedge_iter}, eta default sqrt(8 ln K / T)",
                        "group_opt": f"f = max_k l_k, eps={group_opt_eps}, mode='fast'",
                        "unconstrained": "the same LogisticRegression, predict (threshold 0.5)"},
           "problems": {}}
    cases = []
    if "adult" in datasets:
        cases.append(("adult_sex_race", "adult", lambda s: np.array(
            [f"{a}/{'White' if b == 'White' else 'non-White'}" for a, b in zip(s.groups["sex"], s.groups["race"])],
            dtype=object), ("minimax",)))
    if "compas" in datasets:
        cases.append(("compas_sex", "compas", lambda s: np.asarray(s.groups["sex"], dtype=object),
                      ("minimax", "group_opt")))
    for key, dname, grouping, forms in cases:
        data = datasets[dname]
        g_tr, g_te = grouping(data.train), grouping(data.test)
        values = sorted(set(g_tr.tolist()))
        K = len(values)
        lr = LogisticRegression(max_iter=1000).fit(data.train.X, data.train.y)
        entry = {"groups": values, "K": K, "train_rows": int(data.train.X.shape[0]),
                 "test_rows": int(data.test.X.shape[0]),
                 "train_group_sizes": [int((g_tr == v).sum()) for v in values]}
        u_tr, u_te = lr.predict(data.train.X).astype(float), lr.predict(data.test.X).astype(float)
        entry["unconstrained"] = _score_groups(u_tr, u_te, data, g_tr, g_te, values, 0.0)
        preds[f"d_{key}_unconstrained_train"] = u_tr
        Xa_tr, Xa_te = _with_indicators(data.train.X, g_tr, values), _with_indicators(data.test.X, g_te, values)
        d0 = data.train.X.shape[1]
        direction = np.concatenate([lr.coef_[0], np.zeros(K - 1)])
        oracle = rateopt.oracles.ThresholdOracle(direction, group_columns=list(range(d0, d0 + K - 1)))
        ds = rateopt.Dataset(Xa_tr, data.train.y, groups={"grp": g_tr})
        ctx = ds.context()
        losses = [rateopt.error_rate(ctx.subset(group="grp", value=v)) for v in values]
        for form in forms:
            log(f"(d) {key}: {form} ...")
            t0 = time.perf_counter()
            if form == "minimax":
                res = rateopt.minimax_group_loss(losses, oracle, n_iter=hedge_iter)
            else:
                res = rateopt.group_opt(losses, lambda L: np.max(L, axis=1), oracle, eps=group_opt_eps)
            el = time.perf_counter() - t0
            p_tr, p_te = res.classifier.predict_proba(Xa_tr)[:, 1], res.classifier.predict_proba(Xa_te)[:, 1]
            sc = _score_groups(p_tr, p_te, data, g_tr, g_te, values, el)
            diag = {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in res.diagnostics.items()
                    if k != "constants"}
            if "constants" in res.diagnostics:
                diag["constants"] = vars(res.diagnostics["constants"]) if hasattr(
                    res.diagnostics["constants"], "__dict__") else str(res.diagnostics["constants"])
            sc.update({"n_models": int(len(res.probabilities)), "reported_train_losses": res.losses.tolist(),
                       "diagnostics": diag})
            entry[form] = sc
            preds[f"d_{key}_{form}_train"] = p_tr
            log(f"    {el:.2f} s; max group error train {sc['train_max']:.4f} (unconstrained "
                f"{entry['unconstrained']['train_max']:.4f}), test {sc['test_max']:.4f} "
                f"(unconstrained {entry['unconstrained']['test_max']:.4f})")
        out["problems"][key] = entry
    return out


def _score_groups(p_tr, p_te, data, g_tr, g_te, values, seconds):
    e_tr = group_errors(p_tr, data.train.y, g_tr, values)
    e_te = group_errors(p_te, data.test.y, g_te, values)
    return {"seconds": seconds, "train_group_errors": e_tr, "test_group_errors": e_te,
            "train_max": max(e_tr), "test_max": max(e_te),
            "train_error": float(np.mean(np.abs(p_tr - data.train.y))),
            "test_error": float(np.mean(np.abs(p_te - data.test.y)))}


# --------------------------------------------------------------------------- main


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    _common.add_common_args(ap)
    ap.add_argument("--only", default="a,b,c,d", help="parts to run (comma-separated, default a,b,c,d)")
    ap.add_argument("--max-rows", type=int, default=None, help="cap every split at this many rows (seeded)")
    ap.add_argument("--repeats", type=int, default=None, help="timed fits per rateopt system (default 3, --quick 1)")
    ap.add_argument("--hgb-n-iter", type=int, default=HGB_N_ITER,
                    help=f"part (c): rateopt's rounds (default {HGB_N_ITER}; the smoke test uses fewer)")
    ap.add_argument("--hgb-max-iter", type=int, default=HGB_PARAMS["max_iter"],
                    help=f"part (c): HGB max_iter of both systems (default {HGB_PARAMS['max_iter']})")
    ap.add_argument("--predictions", type=Path, default=None, help="save probabilities, labels and groups (.npz)")
    args = ap.parse_args(argv)
    parts = [p for p in args.only.split(",") if p]
    if set(parts) - set("abcd"):
        ap.error(f"unknown parts {sorted(set(parts) - set('abcd'))}")
    quick = args.quick
    repeats = args.repeats or (1 if quick else 3)
    t_start = time.perf_counter()
    info = _common.machine_info(("numpy", "scipy", "sklearn", "pandas", "fairlearn"))

    need = set()
    if {"a", "b"} & set(parts):
        need |= {"adult", "census"}
    if "c" in parts:
        need.add("adult")
    if "d" in parts:
        need |= {"adult", "compas"}
    datasets = {}
    for name in ("adult", "census", "compas"):
        if name in need:
            t0 = time.perf_counter()
            datasets[name] = load(name, quick, args.max_rows)
            d = datasets[name]
            log(f"{name}: train {d.train.X.shape} nnz {d.train.X.nnz}, test {d.test.X.shape[0]} rows "
                f"({time.perf_counter() - t0:.1f} s)")
    census_groups = sorted(set(datasets["census"].train.groups["race_sex"].tolist())) if "census" in datasets else None
    specs = anchors.make_specs(census_groups)
    preds: dict[str, np.ndarray] = {}
    result: dict[str, Any] = {
        "name": NAME, "quick": quick, "date": _common.utc_now(), "git": _common.git_sha(), "machine": info,
        "repeats": repeats, "max_rows": args.max_rows, "parts": parts,
        "data": {k: {"train_shape": list(d.train.X.shape), "test_rows": int(d.test.X.shape[0]), "notes": d.notes,
                     "source": d.source} for k, d in datasets.items()},
        "evaluation": ("_anchors.shared_evaluate (plain NumPy on expected decisions; violation = largest "
                       "g_i in g_i <= 0 form) for (b) and (c); group_errors (NumPy) for (d)"),
    }
    json_path, md_path = _common.results_paths(NAME, quick=quick, out=args.out)

    def checkpoint(done: str) -> None:
        """Write what is finished so far (a long run killed later keeps it); 'complete' says which."""
        result["targets"] = targets(result)
        result["total_s"] = time.perf_counter() - t_start
        result["complete"] = done
        _common.write_results(result, render_markdown(result), json_path, md_path)

    if "a" in parts:
        result["a_sdca"] = part_a(datasets, quick, 3 if quick else 5)
        result["sdca_speedup_vs_liblinear"] = result["a_sdca"]["sdca_speedup_vs_liblinear"]
        checkpoint("partial: through part (a)")
    if "b" in parts:
        result["b_hinge_oracle"] = part_b(datasets, specs, repeats, preds)
        checkpoint("partial: through part (b)")
    if "c" in parts:
        c = part_c(datasets["adult"], specs["adult_eo_sex"], 1, 1, preds,
                   n_iter=args.hgb_n_iter, hgb_params=dict(HGB_PARAMS, max_iter=args.hgb_max_iter))
        result["c_hgb"] = c
        for k in ("hgb_speedup_vs_fairlearn", "hgb_test_error", "fairlearn_hgb_test_error", "hgb_train_violation"):
            result[k] = c[k]
        checkpoint("partial: through part (c)")
    if "d" in parts:
        result["d_minimax"] = part_d(datasets, preds, HEDGE_ITER if not quick else 200,
                                     GROUP_OPT_EPS if not quick else 0.2)
    checkpoint("all parts run")
    text = render_markdown(result)
    print(text)
    if args.predictions is not None:
        args.predictions.parent.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(args.predictions, **preds)
    log(f"wrote {json_path} and {md_path} ({result['total_s']:.0f} s in all)")
    if args.json:
        _common.emit_json_line(result)
    return 0


def targets(r: dict) -> dict:
    t = {}
    if "a_sdca" in r:
        t["sdca_speedup_vs_liblinear>=2"] = r["a_sdca"]["target_met"]
    if "b_hinge_oracle" in r:
        for k, e in r["b_hinge_oracle"]["problems"].items():
            t[f"{k}: oracle-proxy test err <= proxy-swap's, both train-feasible"] = e["target_met"]
    if "c_hgb" in r:
        for k, v in r["c_hgb"]["targets"].items():
            t[f"hgb {k}"] = v
    return t


def _f(v, fmt="{:.4f}"):
    return "–" if v is None or (isinstance(v, float) and not math.isfinite(v)) else fmt.format(v)


def render_markdown(r: dict) -> str:
    m = r["machine"]
    v = m.get("versions", {})
    L = [f"# Oracle methods vs baselines{' (--quick)' if r['quick'] else ''}", "",
         f"{r['date']}, git {(r['git'].get('sha') or '?')[:10]}{' (dirty)' if r['git'].get('dirty') else ''}; "
         f"{m.get('cpu_model')}, {m.get('cpu_count')} cores; Python {m.get('python')}, rateopt {v.get('rateopt')}, "
         f"numpy {v.get('numpy')}, scikit-learn {v.get('sklearn')}, fairlearn {v.get('fairlearn')}. "
         f"Total {r.get('total_s', 0):.0f} s.", ""]
    if r.get("max_rows"):
        L += [f"Every split capped at {r['max_rows']} rows (--max-rows).", ""]
    if "a_sdca" in r:
        a = r["a_sdca"]
        L += ["## (a) SDCA vs LinearSVC (liblinear) on the same weighted two-sided hinge", "",
              "Time to a 1e-6 relative objective (median s of interleaved repeats; `solve_pair`, bench/sdca.py's "
              "method with SDCA's tol scaled to a relative 1e-6); 'rel' = (P - D*) / |D*|, D* the dual value of a "
              "1e-11-gap SDCA run. Weights: 0.5 x error rate + 0.5 x seeded Dirichlet multipliers on the "
              "constraint rows (a point of Algorithm 2's simplex).", ""]
        rows = []
        for name, d in a["datasets"].items():
            for x in d["runs"]:
                lib = x["liblinear"]
                rows.append([f"{name} ({d['n_samples']}x{d['n_features']}, nnz {d['nnz']})", f"{x['lam']:.3g}",
                             x["sdca"]["seconds"], x["sdca"]["epochs"], f"{x['sdca']['rel_to_optimum']:.1e}",
                             lib["seconds"] if lib else None, f"tol {lib['tol']:g}" if lib else "none within 1e-6",
                             f"{lib['rel_to_optimum']:.1e}" if lib else None,
                             _f(x["speedup_vs_liblinear"], "{:.2f}")])
        L += [_common.markdown_table(["data", "lam", "SDCA s", "epochs", "SDCA rel", "LinearSVC s", "setting",
                                      "LinearSVC rel", "LinearSVC/SDCA time"], rows), "",
              f"`sdca_speedup_vs_liblinear` (worst) = {_f(a['sdca_speedup_vs_liblinear'], '{:.2f}')}: target >= 2 "
              f"**{'met' if a['target_met'] else 'MISSED'}**.", ""]
    if "b_hinge_oracle" in r:
        b = r["b_hinge_oracle"]
        L += ["## (b) Algorithm 2 with the hinge oracle vs proxy-swap (anchor problems)", "",
              f"proxy-swap: {b['settings']['proxy-swap']}; oracle-proxy: {b['settings']['oracle-proxy']}; "
              "m-stochastic solutions; shared NumPy scoring of expected decisions; fit = median wall s.", ""]
        rows = []
        for k, e in b["problems"].items():
            for s in ("proxy-swap", "oracle-proxy"):
                x = e[s]
                rows.append([k, s, _f(x["train_err"]), _f(x["test_err"]), _f(x["train_viol"], "{:+.4f}"),
                             _f(x["test_viol"], "{:+.4f}"), f"{x['fit_s']:.2f}", x["n_iter"], x["n_models"]])
        L += [_common.markdown_table(["problem", "system", "train err", "test err", "train viol", "test viol",
                                      "fit s", "T", "models"], rows), ""]
        for k, e in b["problems"].items():
            L.append(f"* {k}: test err difference (oracle - swap) {e['test_err_diff']:+.4f}, both train-feasible: "
                     f"{e['both_train_feasible']}, time ratio oracle/swap {e['time_ratio_oracle_over_swap']:.2f}; "
                     f"target **{'met' if e['target_met'] else 'MISSED'}**.")
        L.append("")
    if "c_hgb" in r:
        c = r["c_hgb"]
        L += ["## (c) HistGradientBoosting under equalized odds: rateopt (Algorithm 2, estimator oracle) vs "
              "fairlearn ExponentiatedGradient", "",
              f"{c['problem']}; train {c['train_shape']}; HGB {c['hgb_params']} for both ({c['hgb_note']}); "
              f"{c['input']}. rateopt n_iter={c['rateopt']['n_iter']} (fixed in advance).", ""]
        rows = []
        for s in ("rateopt", "fairlearn"):
            x = c.get(s)
            if not x:
                rows.append([s, "skipped: " + c.get("fairlearn_note", ""), "", "", "", "", "", ""])
                continue
            rows.append([s, _f(x["train_err"]), _f(x["test_err"]), _f(x["train_viol"], "{:+.4f}"),
                         _f(x["test_viol"], "{:+.4f}"), f"{x['fit_s']:.1f}", _f(x["estimator_fits"], "{:.0f}"),
                         x["n_models"]])
        L += [_common.markdown_table(["system", "train err", "test err", "train viol", "test viol", "fit s",
                                      "HGB fits", "models"], rows), ""]
        t = c["targets"]

        def yn(x):
            return "–" if x is None else ("met" if x else "MISSED")

        L += [f"Targets: train violation <= 0.001 **{yn(t['train_violation<=0.001'])}**; test error <= "
              f"fairlearn's **{yn(t['test_error<=fairlearn'])}**; >= 5x less time **{yn(t['speedup>=5'])}** "
              f"(speed-up {_f(c['hgb_speedup_vs_fairlearn'], '{:.2f}')}x).", ""]
        if c["rateopt"].get("warnings"):
            L += ["rateopt warnings during the fit: " + "; ".join(c["rateopt"]["warnings"]), ""]
    if "d_minimax" in r:
        d = r["d_minimax"]
        L += ["## (d) Minimax group error (Hedge over groups / GroupOpt) vs the unconstrained model", "",
              f"Oracle: {d['settings']['oracle']}; {d['settings']['minimax_group_loss']}; group_opt: "
              f"{d['settings']['group_opt']}; unconstrained: {d['settings']['unconstrained']}. "
              "Group errors of expected decisions, NumPy.", ""]
        rows = []
        for k, e in d["problems"].items():
            for form in ("unconstrained", "minimax", "group_opt"):
                if form not in e:
                    continue
                x = e[form]
                rows.append([f"{k} (K={e['K']})", form, _f(x["train_max"]), _f(x["test_max"]), _f(x["train_error"]),
                             _f(x["test_error"]), " / ".join(f"{v:.3f}" for v in x["test_group_errors"]),
                             f"{x['seconds']:.2f}", x.get("n_models", 1)])
        L += [_common.markdown_table(["problem", "method", "train max group err", "test max group err", "train err",
                                      "test err", "test group errors", "s", "models"], rows), ""]
        for k, e in d["problems"].items():
            L.append(f"* {k}: groups {e['groups']} (train sizes {e['train_group_sizes']}).")
        L.append("")
    L += ["## Targets", ""]
    for k, val in r["targets"].items():
        L.append(f"* {k}: **{'–' if val is None else ('met' if val else 'MISSED')}**")
    return "\n".join(L)


if __name__ == "__main__":
    raise SystemExit(main())
