"""Why rateopt boosting's default collapses on ACSEmployment equalized odds at tolerance 0, and what changes it.

Issue 33's "never collapses" target: no run at defaults may lose more than 2 pp of test accuracy beyond
group-aware post-processing of LightGBM at the same tolerance and split. At 100 trees, ACS race (a fixed
random 60,000 rows, bench/boosting.py's splits), equalized odds at tolerance 0, seed 1 lost 2.8 pp.

Modes (each writes ``bench/results/boosting_collapse_study_<mode>.{md,json}``):

* ``--dissect SEED``: one run at defaults taken apart: every constraint's signed value (group rate minus
  overall rate) over the 100 prefixes, the multipliers over the run, the thresholded solution with its 32
  candidate prefixes and with all of them, and variants of the multipliers' dynamics on the same split
  (the step x3 and x10, ``lambda_floor`` 0.01 and 0.1, ``method="proxy-external"``, 200 rounds).
* ``--trace SEED``: each variant of ``--variants`` on one seed, prefix by prefix (training error and
  largest violation at the 0-1 decisions, the share of rows one tree flips, the trees' score changes) and
  its default solution against group-aware post-processing.
* ``--compare BEFORE AFTER``: two sets of bench/boosting.py ``--collapse`` result files, paired run by run.
* ``--seeds N``: seeds 0..N-1 of that cell, each variant of ``--variants`` against group-aware
  post-processing: the collapse count and the excess test error per seed.
* ``--frontier``: each variant of ``--variants`` over bench/boosting.py's frontier grid (ACS race, Adult,
  Bank x 3 goals x tolerances 0, 0.01, 0.02, 0.05, 0.1 x seeds 0, 1; 100 trees; the default solution), the
  default in the same process, compared run by run (test error, disparity, excess over the recorded
  group-aware post-processing: the comparators' rows of bench/results/boosting_frontier.json, same splits).

* ``--heldout``: the cells of the recorded frontier whose rateopt point does not count by the issue's rule
  although an exact fit would count with probability >= 0.5 (bench/results/boosting_noise_floor.md), seeds 0
  and 1: the default, and the thresholded solution's rules fitted on held-out rows (the trees and the game on
  a random 70% of the training split, the thresholds on the other 30%: the constraints met on rows the trees
  did not fit).

Variants: ``+``-joined tokens (``_variant``): ``xgb`` (the XGBoost backend), ``default``; ``floor<x>``
(``lambda_floor=x``); ``external`` (``method="proxy-external"``); ``eta*<x>``; ``net`` (the Hessian of the net
coefficient, as before the curvature coefficients); ``lossguide``, ``lambda<x>``, ``mds<x>`` (XGBoost tree
parameters).

Run: ``python bench/boosting_collapse_study.py [--quick] [--json] (--dissect S | --trace S | --seeds N | --frontier
| --heldout) [--variants default,floor0.01,external]``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS_DIR, add_common_args, emit_json_line, markdown_table, results_paths, utc_now, \
    write_results  # noqa: E402

import boosting as B  # noqa: E402  (the datasets, splits and measures of bench/boosting.py)
import rateopt  # noqa: E402

DATASET, GOAL, TOL = "acs-race", "equalized_odds", 0.0
ROUNDS = 100


def _variant(v):
    """(method, training keyword arguments, backend, backend parameters, net Hessian) of a variant name.

    A name is ``+``-joined tokens: ``xgb`` / ``lgb`` (the backend; default LightGBM), ``default``,
    ``external`` (``method="proxy-external"``), ``floor<x>`` (``lambda_floor=x``), ``eta*<x>`` (the default
    multiplier step times x), ``net`` (the Hessian of the net coefficient ``|u_j|``, as before the curvature
    coefficients: ``_training._boosting.curvature_coefficients`` returns None), and XGBoost tree parameters
    ``lossguide`` (``grow_policy``), ``lambda<x>`` (leaf L2), ``mds<x>`` (``max_delta_step``).
    """
    method, kw, backend, params, net = "auto", {}, "lightgbm", {}, False
    for tok in v.split("+"):
        if tok in ("default", "lgb"):
            continue
        if tok == "xgb":
            backend = "xgboost"
        elif tok == "external":
            method = "proxy-external"
        elif tok == "net":
            net = True
        elif tok == "lossguide":
            params["grow_policy"] = "lossguide"
        elif tok.startswith("floor"):
            kw["lambda_floor"] = float(tok[5:])
        elif tok.startswith("eta*"):
            kw["eta_scale"] = float(tok[4:])
        elif tok.startswith("lambda"):
            params["lambda"] = float(tok[6:])
        elif tok.startswith("mds"):
            params["max_delta_step"] = float(tok[3:])
        else:
            raise SystemExit(f"unknown variant token {tok!r} in {v!r}: xgb, lgb, default, external, net, floor<x>, "
                             "eta*<x>, lossguide, lambda<x>, mds<x>")
    return method, kw, backend, params, net


def _split(name, seed):
    X, y, g, col = B._data(name)
    tr, te = B._split(X.shape[0], seed, B.ACS_ROWS if name.startswith("acs") else None)
    return X[tr], X[te], y[tr], y[te], g[tr], g[te], col


def _train(problem, variant, seed, rounds=ROUNDS):
    from rateopt._training import _boosting as TB

    method, kw, backend, params, net = _variant(variant)
    kw = dict(kw)
    if "eta_scale" in kw:  # the default step times a factor
        base = rateopt.train(problem, rateopt.BoostingModel("lightgbm", n_rounds=1, **B.PARAMS), n_threads=1,
                             random_state=seed).settings["eta_lambda"] * np.sqrt(1 / rounds)
        kw = {"eta_lambda": base * kw.pop("eta_scale")}
    model = rateopt.BoostingModel(backend, n_rounds=rounds, **B.PARAMS, params=params or None)
    curvature = TB.curvature_coefficients
    if net:  # the Hessian of the net coefficient: no curvature coefficients
        TB.curvature_coefficients = lambda combinations: None
    try:
        return rateopt.train(problem, model, method, n_threads=1, random_state=seed, **kw)
    finally:
        TB.curvature_coefficients = curvature


def _measure(clf, X_tr, X_te, y_tr, y_te, g_tr, g_te, goal, tol):
    p_tr, p_te = clf.predict_proba(X_tr)[:, 1], clf.predict_proba(X_te)[:, 1]
    err = float(np.mean(np.abs(p_te - y_te)))
    disp, dse = B.disparity(p_te, y_te, g_te, goal)
    return {"train_error": float(np.mean(np.abs(p_tr - y_tr))), "test_error": err,
            "test_error_se": float(np.sqrt(err * (1 - err) / len(y_te))), "test_disparity": disp,
            "test_disparity_se": dse, "test_gap": B.gap(p_te, y_te, g_te, goal),
            "train_violation": B.violation(p_tr, y_tr, g_tr, goal, tol)}


def _post_aware(X_tr, X_te, y_tr, y_te, g_tr, g_te, col, goal, tol, seed, rounds=ROUNDS):
    plain = B.fit_lightgbm(X_tr, y_tr, rounds, seed)
    s_tr, s_te = plain.predict(X_tr, raw_score=True), plain.predict(X_te, raw_score=True)
    tc = rateopt.ThresholdClassifier(goals=B._goal_constraints(goal, col, tol), prefit=True)
    tc.fit(s_tr, y_tr, groups={col: g_tr})

    class _Post:  # the group-aware rule as a classifier of the split's own rows
        def predict_proba(self, X):
            if X is X_tr:
                return tc.predict_proba(s_tr, groups={col: g_tr})
            return tc.predict_proba(s_te, groups={col: g_te})
    return _measure(_Post(), X_tr, X_te, y_tr, y_te, g_tr, g_te, goal, tol)


def dissect(seed, quick):
    X_tr, X_te, y_tr, y_te, g_tr, g_te, col = _split(DATASET, seed)
    problem = rateopt.Problem(constraints=B._goal_constraints(GOAL, col, TOL),
                              datasets=rateopt.Dataset(X_tr, y_tr, groups={col: g_tr}))
    res = _train(problem, "default", seed)
    C, names, lam = res.constraints, res.constraint_names, res.multipliers
    first = res.n_trivial + 1  # the prefixes with at least one tree
    per_constraint = []
    for j, nm in enumerate(names):
        c = C[first:, j]
        per_constraint.append({"constraint": nm, "min": float(c.min()), "median": float(np.median(c)),
                               "max": float(c.max()), "share_violated": float(np.mean(c > 0)),
                               "final_multiplier": float(lam[-1, j + 1]), "mean_multiplier": float(lam[first:, j + 1].mean())})
    out = {"seed": seed, "eta_lambda": float(res.settings["eta_lambda"]),
           "lambda_floor": float(res.settings["lambda_floor"]), "n_constraints": len(names),
           "objective_multiplier": {"min": float(lam[first:, 0].min()), "mean": float(lam[first:, 0].mean())},
           "prefix_max_violation": {"min": float(res.max_violations[first:].min()),
                                    "median": float(np.median(res.max_violations[first:]))},
           "constraints": per_constraint, "solutions": {}}
    post = _post_aware(X_tr, X_te, y_tr, y_te, g_tr, g_te, col, GOAL, TOL, seed)
    out["solutions"]["post-aware"] = post
    for kind in ("thresholded", "m-stochastic", "best", "last"):
        out["solutions"][f"default {kind}"] = _measure(res.solution(kind) if kind != "thresholded" else
                                                       res.solution(), X_tr, X_te, y_tr, y_te, g_tr, g_te, GOAL, TOL)
    from rateopt._postprocess._mixture import fit_thresholded_mixture  # every prefix a candidate

    mix, _ = fit_thresholded_mixture(problem.compiled, res.iterates_scorer(), {"train": X_tr}, n_bins="auto")
    out["solutions"]["default thresholded, all 102 candidates"] = _measure(mix, X_tr, X_te, y_tr, y_te, g_tr, g_te,
                                                                           GOAL, TOL)
    variants = [] if quick else [("step x3", "eta*3", ROUNDS), ("step x10", "eta*10", ROUNDS),
                                 ("lambda_floor 0.01", "floor0.01", ROUNDS), ("lambda_floor 0.1", "floor0.1", ROUNDS),
                                 ("proxy-external", "external", ROUNDS), ("200 rounds", "default", 200)]
    for label, v, rounds in variants:
        r = _train(problem, v, seed, rounds)
        m = _measure(r.solution(), X_tr, X_te, y_tr, y_te, g_tr, g_te, GOAL, TOL)
        m["mean_constraint_multiplier_mass"] = float(r.multipliers[first:, 1:].sum(axis=1).mean())
        out["solutions"][label] = m
        print(f"dissect {label}: {m['test_error']:.4f}", flush=True)
    for m in out["solutions"].values():
        m["excess"] = m["test_error"] - post["test_error"]
    md = (f"# ACS race, equalized odds at tolerance 0, seed {seed}, taken apart "
          "(bench/boosting_collapse_study.py --dissect)\n\n"
          f"{ROUNDS} trees; multipliers' step {out['eta_lambda']:.3f}, floor {out['lambda_floor']:g}, "
          f"{len(names)} constraints. The objective's multiplier over the prefixes: min "
          f"{out['objective_multiplier']['min']:.3f}, mean {out['objective_multiplier']['mean']:.3f}; each prefix's "
          f"largest violation: min {out['prefix_max_violation']['min']:+.4f}, median "
          f"{out['prefix_max_violation']['median']:+.4f}.\n\n"
          "Each constraint's value (<= 0: met) over the prefixes with at least one tree, and its multiplier:\n\n"
          + markdown_table(["constraint", "min", "median", "max", "share violated", "mean multiplier",
                            "final multiplier"],
                           [[c["constraint"], f"{c['min']:+.4f}", f"{c['median']:+.4f}", f"{c['max']:+.4f}",
                             f"{c['share_violated']:.2f}", f"{c['mean_multiplier']:.4f}",
                             f"{c['final_multiplier']:.4f}"] for c in per_constraint])
          + "\n\nSolutions and variants on the same split (excess: test error minus group-aware "
            "post-processing's):\n\n"
          + markdown_table(["solution", "train error", "test error", "excess", "test disparity", "train violation",
                            "mean constraint multiplier mass"],
                           [[k, f"{m['train_error']:.4f}", f"{m['test_error']:.4f}", f"{m['excess']:+.4f}",
                             f"{m['test_disparity']:.4f}", f"{m['train_violation']:+.1e}",
                             f"{m['mean_constraint_multiplier_mass']:.3f}" if "mean_constraint_multiplier_mass" in m
                             else ""] for k, m in out["solutions"].items()]) + "\n")
    return out, md


def trace(seed, variants):
    """Each variant's run on one seed of the cell, prefix by prefix: the training error and largest violation
    at the 0-1 decisions the multipliers see, the share of training rows whose decision one tree flips, the
    median and largest score change of a tree, and the default solution against group-aware
    post-processing."""
    X_tr, X_te, y_tr, y_te, g_tr, g_te, col = _split(DATASET, seed)
    problem = rateopt.Problem(constraints=B._goal_constraints(GOAL, col, TOL),
                              datasets=rateopt.Dataset(X_tr, y_tr, groups={col: g_tr}))
    post = _post_aware(X_tr, X_te, y_tr, y_te, g_tr, g_te, col, GOAL, TOL, seed)
    out = {"seed": seed, "post-aware": post, "variants": {}}
    for v in variants:
        res = _train(problem, v, seed)
        first = res.n_trivial + 1  # iterate of the first tree
        booster = res.models[-1].booster
        S = np.column_stack([booster.raw_scores(X_tr, t) for t in range(0, ROUNDS + 1)])
        D = np.diff(S, axis=1)
        flips = np.mean((S[:, 1:] >= 0) != (S[:, :-1] >= 0), axis=0)
        obj, viol = res.objectives[first:], res.constraints[first:].max(axis=1)
        m = _measure(res.solution(), X_tr, X_te, y_tr, y_te, g_tr, g_te, GOAL, TOL)
        m["excess"] = m["test_error"] - post["test_error"]
        out["variants"][v] = {
            "solution": m, "objective": obj.tolist(), "max_violation": viol.tolist(), "flipped": flips.tolist(),
            "median_step": np.median(np.abs(D), axis=0).tolist(), "max_step": np.abs(D).max(axis=0).tolist(),
            "objective_multiplier": res.multipliers[first:, 0].tolist()}
        print(f"trace {v}: excess {m['excess']:+.4f}", flush=True)
    rows = []
    for v, r in out["variants"].items():
        obj, fl, med, mx = (np.array(r[k]) for k in ("objective", "flipped", "median_step", "max_step"))
        rows.append([v, f"{r['solution']['train_error']:.4f}", f"{r['solution']['test_error']:.4f}",
                     f"{r['solution']['excess']:+.4f}", f"{r['solution']['train_violation']:+.1e}",
                     f"{obj.min():.3f} / {np.median(obj):.3f} / {obj.max():.3f}", int(np.sum(obj > 0.3)),
                     f"{np.median(fl):.3f} / {fl.max():.3f}", f"{np.median(med):.3f}", f"{mx.max():.3g}"])
    every = list(range(0, ROUNDS, 5))
    md = (f"# ACS race, equalized odds at tolerance 0, seed {seed}: the prefixes of each variant "
          "(bench/boosting_collapse_study.py --trace)\n\n"
          f"{ROUNDS} trees. Group-aware post-processing of plain LightGBM: training error "
          f"{post['train_error']:.4f}, test error {post['test_error']:.4f}. Objective: the prefix's training "
          "error at its 0-1 decisions (what the multipliers see); flipped: the share of training rows whose "
          "decision the prefix's last tree flips; step: a tree's score change on a training row. Variants: "
          "see the module docstring (`net`: the Hessian of the net coefficient, main before the curvature "
          f"coefficients). Load average at the end: {os.getloadavg()[0]:.1f}.\n\n"
          + markdown_table(["variant", "solution train error", "test error", "excess", "train violation",
                            "prefix objective min / median / max", "prefixes with objective > 0.3",
                            "flipped median / max", "median step", "largest step"], rows)
          + "\n\nEvery fifth prefix (objective, largest violation, flipped):\n\n"
          + markdown_table(["trees"] + list(out["variants"]),
                           [[t + 1] + [f"{r['objective'][t]:.3f}, {r['max_violation'][t]:+.3f}, "
                                       f"{r['flipped'][t]:.3f}" for r in out["variants"].values()]
                            for t in every]) + "\n")
    return out, md


def compare_runs(before_paths, after_paths):
    """Collapse-count runs (bench/boosting.py --collapse result files) before and after a change, paired by
    (system, dataset, goal, tolerance, seed): per system and cell, the collapses and worst excess of each, and
    the paired change of the excess (median, and the runs better / worse by more than 0.005)."""
    def runs(paths):
        out = {}
        for p in paths.split(","):
            for r in json.loads(Path(p).read_text())["runs"]:
                out[(r["system"], r["dataset"], r["goal"], r["tolerance"], r["seed"])] = r
        return out

    before, after = runs(before_paths), runs(after_paths)
    keys = sorted(set(before) & set(after))
    cells = sorted({k[:4] for k in keys})
    table, summary = [], {}
    for cell in cells:
        ks = [k for k in keys if k[:4] == cell]
        b = np.array([before[k]["excess_loss"] for k in ks])
        a = np.array([after[k]["excess_loss"] for k in ks])
        d = a - b
        table.append([*cell, len(ks), f"{int(np.sum(b > 0.02))} / {int(np.sum(a > 0.02))}",
                      f"{b.max():+.4f} / {a.max():+.4f}", f"{np.median(d):+.4f}",
                      f"{int(np.sum(d < -0.005))} / {int(np.sum(d > 0.005))}",
                      f"{max(after[k]['train_violation'] for k in ks):+.1e}"])
    for system in sorted({k[0] for k in keys}):
        ks = [k for k in keys if k[0] == system]
        b = np.array([before[k]["excess_loss"] for k in ks])
        a = np.array([after[k]["excess_loss"] for k in ks])
        summary[system] = {"runs": len(ks), "collapses_before": int(np.sum(b > 0.02)),
                           "collapses_after": int(np.sum(a > 0.02)), "worst_before": float(b.max()),
                           "worst_after": float(a.max()), "median_before": float(np.median(b)),
                           "median_after": float(np.median(a)), "mean_change": float(np.mean(a - b)),
                           "better_0.005": int(np.sum(a - b < -0.005)), "worse_0.005": int(np.sum(a - b > 0.005)),
                           "max_train_violation_after": float(max(after[k]["train_violation"] for k in ks))}
    md = ("# Collapse counts before and after, paired run by run (bench/boosting_collapse_study.py --compare)\n\n"
          f"Before: {before_paths}.\n\nAfter: {after_paths}.\n\nExcess: test error minus group-aware "
          "post-processing's of plain LightGBM on the same split; a collapse: excess > 0.02. Only runs in both.\n\n"
          + markdown_table(["system", "runs", "collapses before / after", "worst before / after",
                            "median before / after", "mean change", "runs better / worse by > 0.005",
                            "max train violation after"],
                           [[k, v["runs"], f"{v['collapses_before']} / {v['collapses_after']}",
                             f"{v['worst_before']:+.4f} / {v['worst_after']:+.4f}",
                             f"{v['median_before']:+.4f} / {v['median_after']:+.4f}", f"{v['mean_change']:+.4f}",
                             f"{v['better_0.005']} / {v['worse_0.005']}", f"{v['max_train_violation_after']:+.1e}"]
                            for k, v in summary.items()])
          + "\n\nPer cell:\n\n"
          + markdown_table(["system", "dataset", "goal", "tolerance", "runs", "collapses before / after",
                            "worst before / after", "median change", "better / worse by > 0.005",
                            "max train violation after"], table) + "\n")
    return {"summary": summary}, md


def seeds_rows(n_seeds, variants):
    """Each variant on seeds 0..n_seeds-1 of the cell, with group-aware post-processing's test error."""
    rows = []
    for seed in range(n_seeds):
        X_tr, X_te, y_tr, y_te, g_tr, g_te, col = _split(DATASET, seed)
        post = _post_aware(X_tr, X_te, y_tr, y_te, g_tr, g_te, col, GOAL, TOL, seed)
        problem = rateopt.Problem(constraints=B._goal_constraints(GOAL, col, TOL),
                                  datasets=rateopt.Dataset(X_tr, y_tr, groups={col: g_tr}))
        for v in variants:
            t0 = time.process_time()
            res = _train(problem, v, seed)
            m = _measure(res.solution(), X_tr, X_te, y_tr, y_te, g_tr, g_te, GOAL, TOL)
            rows.append({"seed": seed, "variant": v, "cpu_s": time.process_time() - t0,
                         "post_test_error": post["test_error"], "excess": m["test_error"] - post["test_error"], **m})
        print(f"seeds: seed {seed} done, load {os.getloadavg()[0]:.1f}", flush=True)
    return rows


def seeds_table(rows, variants):
    n_seeds = len({r["seed"] for r in rows})
    summary = []
    base = {r["seed"]: r for r in rows if r["variant"] == variants[0]}
    for v in variants:
        rs = [r for r in rows if r["variant"] == v]
        ex = np.array([r["excess"] for r in rs])
        d = np.array([r["test_error"] - base[r["seed"]]["test_error"] for r in rs])
        se = np.array([r["test_error_se"] for r in rs])
        summary.append({"variant": v, "runs": len(rs), "collapses": int(np.sum(ex > 0.02)), "worst_excess": float(ex.max()),
                        "median_excess": float(np.median(ex)), "mean_test_error": float(np.mean([r["test_error"] for r in rs])),
                        "mean_test_disparity": float(np.mean([r["test_disparity"] for r in rs])),
                        "vs_first_worse_1se": int(np.sum(d > se)), "vs_first_better_1se": int(np.sum(d < -se)),
                        "max_train_violation": float(max(r["train_violation"] for r in rs))})
    md = (f"# ACS race, equalized odds at tolerance 0: {n_seeds} seeds per variant "
          "(bench/boosting_collapse_study.py --seeds)\n\n"
          f"{ROUNDS} trees, a random {B.ACS_ROWS} rows per seed (bench/boosting.py's splits), the default solution. "
          "Collapse: test error more than 0.02 above group-aware post-processing of plain LightGBM on the same split. "
          f"Worse / better: runs whose test error differs from {variants[0]}'s on the same seed by more than its "
          f"binomial test SE. Load average at the end: {os.getloadavg()[0]:.1f}.\n\n"
          + markdown_table(["variant", "collapses", "runs", "worst excess", "median excess", "mean test error",
                            "mean test disparity", f"worse / better than {variants[0]} by 1 SE",
                            "max train violation"],
                           [[s["variant"], s["collapses"], s["runs"], f"{s['worst_excess']:+.4f}",
                             f"{s['median_excess']:+.4f}", f"{s['mean_test_error']:.4f}",
                             f"{s['mean_test_disparity']:.4f}",
                             f"{s['vs_first_worse_1se']} / {s['vs_first_better_1se']}",
                             f"{s['max_train_violation']:+.1e}"] for s in summary])
          + "\n\nPer seed (excess over group-aware post-processing):\n\n"
          + markdown_table(["seed", "post-aware test error"] + list(variants),
                           [[s, f"{base[s]['post_test_error']:.4f}"] + [
                               next(f"{r['test_error']:.4f} ({r['excess']:+.4f})" for r in rows
                                    if r["seed"] == s and r["variant"] == v) for v in variants]
                            for s in range(n_seeds)]) + "\n")
    return {"summary": summary, "rows": rows}, md


def frontier_rows(variants, datasets, seeds):
    """Each variant on every run of the frontier grid, with the excess over the recorded post-aware rows."""
    rec = json.loads((RESULTS_DIR / "boosting_frontier.json").read_text())
    post = {(r["dataset"], r["goal"], r["tolerance"], r["seed"]): r["test_error"] for r in rec["rows"]
            if r["system"] == "post-aware"}
    rows = []
    for seed in seeds:
        for name in datasets:
            X_tr, X_te, y_tr, y_te, g_tr, g_te, col = _split(name, seed)
            for goal in B.GOALS:
                for tol in B.TOLERANCES:
                    problem = rateopt.Problem(constraints=B._goal_constraints(goal, col, tol),
                                              datasets=rateopt.Dataset(X_tr, y_tr, groups={col: g_tr}))
                    for v in variants:
                        res = _train(problem, v, seed)
                        m = _measure(res.solution(), X_tr, X_te, y_tr, y_te, g_tr, g_te, goal, tol)
                        rows.append({"variant": v, "dataset": name, "goal": goal, "tolerance": tol, "seed": seed,
                                     "excess": m["test_error"] - post[(name, goal, tol, seed)], **m})
            print(f"frontier: {name} seed {seed} done, load {os.getloadavg()[0]:.1f}", flush=True)
    return rows


def frontier_table(rows, variants):
    datasets = sorted({r["dataset"] for r in rows})
    seeds = sorted({r["seed"] for r in rows})
    key = lambda r: (r["dataset"], r["goal"], r["tolerance"], r["seed"])  # noqa: E731
    base = {key(r): r for r in rows if r["variant"] == variants[0]}
    summary = []
    for v in variants:
        for ds in [None] + sorted(set(datasets)):
            rs = [r for r in rows if r["variant"] == v and (ds is None or r["dataset"] == ds)]
            d = np.array([r["test_error"] - base[key(r)]["test_error"] for r in rs])
            se = np.array([base[key(r)]["test_error_se"] for r in rs])
            ex = np.array([r["excess"] for r in rs])
            summary.append({"variant": v, "dataset": ds or "all", "runs": len(rs), "collapses": int(np.sum(ex > 0.02)),
                            "worst_excess": float(ex.max()), "mean_test_error_change": float(d.mean()),
                            "worse_1se": int(np.sum(d > se)), "better_1se": int(np.sum(d < -se)),
                            "mean_test_disparity_change": float(np.mean(
                                [r["test_disparity"] - base[key(r)]["test_disparity"] for r in rs])),
                            "max_train_violation": float(max(r["train_violation"] for r in rs))})
    md = ("# Multiplier variants over the frontier grid (bench/boosting_collapse_study.py --frontier)\n\n"
          f"{ROUNDS} trees, datasets {list(datasets)}, seeds {list(seeds)}, goals {list(B.GOALS)}, tolerances "
          f"{list(B.TOLERANCES)}; the default solution, group-blind. Each variant against {variants[0]} run by run "
          "(same split, this engine); excess over group-aware post-processing: the recorded post-aware rows of "
          f"bench/results/boosting_frontier.json (same splits). Load average at the end: {os.getloadavg()[0]:.1f}.\n\n"
          + markdown_table(["variant", "dataset", "runs", "collapses", "worst excess",
                            f"mean test error change vs {variants[0]}", "worse / better by 1 SE",
                            "mean test disparity change", "max train violation"],
                           [[s["variant"], s["dataset"], s["runs"], s["collapses"], f"{s['worst_excess']:+.4f}",
                             f"{s['mean_test_error_change']:+.5f}", f"{s['worse_1se']} / {s['better_1se']}",
                             f"{s['mean_test_disparity_change']:+.4f}", f"{s['max_train_violation']:+.1e}"]
                            for s in summary]) + "\n")
    verdict = _verdicts_per_variant(rows, variants)
    md += ("\nThe issue's two rules with each variant's rows in place of the recorded rateopt-lightgbm rows of "
           "bench/results/boosting_frontier.json (the comparators' recorded rows, same splits; bench/boosting.py's "
           "`verdicts` and `interpolated_verdicts`): OK / WIN of the cells judged.\n\n"
           + markdown_table(["variant", "points counting (of 45)", "cell rule vs fairgbm", "vs post-blind",
                             "vs post-aware", "envelope vs fairgbm", "vs post-blind", "vs post-aware"],
                            [[v, x["cell"]["rateopt_counts"]]
                             + [f"{x['cell'][c]['le_within_se']} / {x['cell'][c]['better_by_se']} of {x['cell'][c]['cells']}"
                                for c in _COMPARATORS]
                             + [f"{x['envelope'][c]['le_within_se']} / {x['envelope'][c]['better_by_se']} of "
                                f"{x['envelope'][c]['comparable']}" for c in _COMPARATORS]
                             for v, x in verdict.items()]) + "\n")
    return {"summary": summary, "verdicts": verdict, "rows": rows}, md


_COMPARATORS = ("fairgbm", "post-blind", "post-aware")


def _verdicts_per_variant(rows, variants):
    """Per variant: bench/boosting.py's verdict summaries with the variant's rows as rateopt-lightgbm's."""
    rec = json.loads((RESULTS_DIR / "boosting_frontier.json").read_text())
    out = {}
    for v in variants:
        mine = [{**r, "system": "rateopt-lightgbm", "n_train": 0, "rounds": ROUNDS, "cpu_s": 0.0, "cpu_ratio": 0.0}
                for r in rows if r["variant"] == v]
        merged = [r for r in rec["rows"] if r["system"] != "rateopt-lightgbm"] + mine
        merged = [{**r, "test_gap": float("nan") if r.get("test_gap") is None else r["test_gap"]} for r in merged]
        summ = [s for s in B.summarize(merged) if s["goal"] != "coverage_budget"]
        ivs, _ = B.interpolated_verdicts(summ, _COMPARATORS)
        out[v] = {"cell": B.verdict_summary(B.verdicts(summ, _COMPARATORS), _COMPARATORS),
                  "envelope": B.interpolated_summary(ivs, _COMPARATORS)}
    return out


HELDOUT_CELLS = (("adult-sex", "equal_opportunity", 0.0), ("adult-sex", "equal_opportunity", 0.05),
                 ("adult-sex", "equalized_odds", 0.0), ("adult-sex", "equalized_odds", 0.05),
                 ("bank-age", "equal_opportunity", 0.02), ("bank-age", "equal_opportunity", 0.05),
                 ("bank-age", "equalized_odds", 0.05), ("bank-age", "equalized_odds", 0.1),
                 ("bank-age", "demographic_parity", 0.02), ("bank-age", "demographic_parity", 0.1))


def heldout_rows(cells, seeds):
    """The default and the held-out thresholds on each cell and seed (test error, disparity and its SE)."""
    rows = []
    for seed in seeds:
        for name, goal, tol in cells:
            X_tr, X_te, y_tr, y_te, g_tr, g_te, col = _split(name, seed)
            order = np.random.default_rng(1000 + seed).permutation(len(y_tr))
            fit, held = np.sort(order[:int(0.7 * len(y_tr))]), np.sort(order[int(0.7 * len(y_tr)):])

            def problem(idx):
                return rateopt.Problem(constraints=B._goal_constraints(goal, col, tol),
                                       datasets=rateopt.Dataset(X_tr[idx], y_tr[idx], groups={col: g_tr[idx]}))
            for label, idx_fit, idx_thr in (("default", np.arange(len(y_tr)), None),
                                            ("heldout-thresholds", fit, held)):
                res = rateopt.train(problem(idx_fit), rateopt.BoostingModel("lightgbm", n_rounds=ROUNDS, **B.PARAMS),
                                    n_threads=1, random_state=seed)
                clf = res.solution() if idx_thr is None else res.solution("thresholded", problem=problem(idx_thr))
                p_te = clf.predict_proba(X_te)[:, 1]
                d, dse = B.disparity(p_te, y_te, g_te, goal)
                rows.append({"variant": label, "dataset": name, "goal": goal, "tolerance": tol, "seed": seed,
                             "test_error": float(np.mean(np.abs(p_te - y_te))), "test_disparity": d,
                             "test_disparity_se": dse})
            print(f"heldout: {name} {goal} {tol} seed {seed} done", flush=True)
    return rows


def heldout_table(rows):
    variants = ("default", "heldout-thresholds")
    cells = sorted({(r["dataset"], r["goal"], r["tolerance"]) for r in rows})
    body, counts = [], {v: 0 for v in variants}
    for c in cells:
        line = list(c)
        for v in variants:
            rs = [r for r in rows if (r["dataset"], r["goal"], r["tolerance"], r["variant"]) == c + (v,)]
            e = float(np.mean([r["test_error"] for r in rs]))
            d = float(np.mean([r["test_disparity"] for r in rs]))
            se = float(np.sqrt(np.mean([r["test_disparity_se"] ** 2 for r in rs])))
            ok = d <= c[2] + se
            counts[v] += ok
            line.append(f"{e:.4f} / {d:.4f}{'' if ok else ' (x)'}")
        body.append(line)
    mean_err = {v: float(np.mean([r["test_error"] for r in rows if r["variant"] == v])) for v in variants}
    worst = float(max(r["test_error"] - next(q["test_error"] for q in rows if q["variant"] == "default" and
                                             (q["dataset"], q["goal"], q["tolerance"], q["seed"]) ==
                                             (r["dataset"], r["goal"], r["tolerance"], r["seed"]))
                      for r in rows if r["variant"] == "heldout-thresholds"))
    summary = {"counting_cells": counts, "cells": len(cells), "mean_test_error": mean_err,
               "worst_test_error_increase": worst}
    md = ("# Thresholds fitted on held-out rows (bench/boosting_collapse_study.py --heldout)\n\n"
          f"{ROUNDS} trees, seeds {sorted({r['seed'] for r in rows})}; the cells whose recorded rateopt point does "
          "not count although an exact fit would count with probability >= 0.5. heldout-thresholds: the trees and "
          "the game on a random 70% of the training split, the thresholded solution's rules on the other 30%. "
          "Test error / seed-mean test disparity; (x): does not count (disparity > tolerance + RMS SE).\n\n"
          + markdown_table(["dataset", "goal", "tol", "default", "heldout-thresholds"], body)
          + "\n\nSummary: " + json.dumps(summary) + "\n")
    return {"summary": summary, "rows": rows}, md


def _load(paths):
    rows = []
    for p in paths.split(","):
        rows += json.loads(Path(p).read_text())
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_args(parser)
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--dissect", type=int, metavar="SEED", help="take one seed's run apart")
    mode.add_argument("--trace", type=int, metavar="SEED", help="each variant's prefixes on one seed")
    mode.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"),
                      help="comma-separated bench/boosting.py --collapse result files, before and after a change")
    mode.add_argument("--seeds", type=int, metavar="N", help="seeds 0..N-1 of the cell, per variant")
    mode.add_argument("--frontier", action="store_true", help="the variants over the frontier grid, 2 seeds")
    mode.add_argument("--heldout", action="store_true", help="thresholds fitted on held-out rows, HELDOUT_CELLS")
    parser.add_argument("--variants", default="default,floor0.01,external",
                        help="comma-separated; the first is the reference (default: default,floor0.01,external)")
    parser.add_argument("--datasets", default="acs-race,adult-sex,bank-age", help="--frontier's datasets")
    parser.add_argument("--rows", default=None,
                        help="--seeds / --frontier: summarize these JSON files' rows (lists of row dicts with a "
                             "'variant', as the mode's own) instead of training")
    args = parser.parse_args(argv)
    variants = args.variants.split(",")
    for v in variants:
        _variant(v)
    if args.dissect is not None:
        data, md = dissect(args.dissect, args.quick)
        tag = "dissect"
    elif args.trace is not None:
        data, md = trace(args.trace, variants)
        tag = "trace"
    elif args.compare is not None:
        data, md = compare_runs(*args.compare)
        tag = "compare"
    elif args.seeds is not None:
        rows = _load(args.rows) if args.rows else seeds_rows(2 if args.quick else args.seeds, variants)
        data, md = seeds_table(rows, variants)
        tag = "seeds"
    elif args.heldout:
        rows = _load(args.rows) if args.rows else heldout_rows(HELDOUT_CELLS[:1] if args.quick else HELDOUT_CELLS,
                                                               [0] if args.quick else [0, 1])
        data, md = heldout_table(rows)
        tag = "heldout"
    else:
        rows = _load(args.rows) if args.rows else frontier_rows(
            variants, ["adult-sex"] if args.quick else args.datasets.split(","), [0] if args.quick else [0, 1])
        data, md = frontier_table(rows, variants)
        tag = "frontier"
    if args.rows:
        md += f"\nRows read from {args.rows} (no training in this run).\n"
    json_path, md_path = results_paths(f"boosting_collapse_study_{tag}", quick=args.quick, out=args.out)
    write_results({"bench": f"boosting-collapse-study-{tag}", "date": utc_now(), "rounds": ROUNDS,
                   "variants": variants, "loadavg": os.getloadavg(), "machine": B._machine(), **data},
                  md, json_path, md_path)
    print(md)
    if args.json:
        emit_json_line({"bench": f"boosting-collapse-study-{tag}", "summary": data.get("summary")})


if __name__ == "__main__":
    main()
