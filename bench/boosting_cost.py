"""The cost of rate-constrained boosting: CPU time and peak memory of rateopt boosting against plain LightGBM/XGBoost.

Issue 33's "Cost" target: CPU time <= 1.5x the backend's with the same trees and rounds, and peak memory <=
the backend's + 64 bytes per training row.

Systems, each fit in a fresh subprocess (so that its peak memory is its own), per backend of ``--backends``
(``lightgbm``, ``xgboost``):

* ``lightgbm`` / ``xgboost``: the plain backend, binary log-loss (``lgb.train``; ``xgb.train`` with
  bench/boosting.py's ``fit_xgboost`` parameters) on the training split;
* ``rateopt-lightgbm`` / ``rateopt-xgboost``: ``rateopt.train(problem, BoostingModel(backend, ...))`` with the
  default game (``proxy-swap``), the same tree parameters and rounds, including building the ``Dataset``, the
  problem's compilation and the feasibility check of its m-stochastic solution (what a user pays for
  ``rateopt.train``);
* ``rateopt-<backend>-baseline`` (with ``--baseline PATH``): the same, with the rateopt found under ``PATH``
  (the ``python/`` folder of another checkout, its compiled core in place): the before of a before/after.

Every worker imports numpy, scipy, lightgbm, xgboost and rateopt, loads the data, and fits once on 2,000 rows
(untimed, so lazy imports and first-call costs are not counted), then times one fit with
``time.process_time`` (one thread everywhere: ``num_threads=1``, ``nthread=1``, ``n_threads=1``). Peak memory
is the memory the fit adds at its peak: the process's high-water mark is reset just before the fit
(``/proc/self/clear_refs``) and read after it (``VmHWM`` minus the ``VmRSS`` before the fit). Its difference
to the plain backend's, per training row, is the memory target's number. A user pays for the fit and the
default classifier: the rateopt workers then call ``result.solution()`` and read the high-water mark again
(not reset: the fit + solution peak, the larger of the two), against the plain backend's fit peak (its
booster is its classifier); the solution's ``predict_proba`` on the training rows is hashed after that (not
part of any peak), so that a before/after shows bit-identical decisions. Repeats are interleaved (system
order rotated each repeat); medians are reported, with the load average before and after the run.

Data: Adult (sex; ``rateopt.datasets``, sparse one-hot) with equal opportunity and demographic parity at
slack 0.02, and (full run, when the ``nannyml`` wheel's files are installed) ACSEmployment-MA (race in 4
groups, 194k training rows). A random 70/30 split (seed 0); training rows only are fit.

Run: ``python bench/boosting_cost.py [--quick] [--json] [--baseline PATH] [--backends lightgbm,xgboost]``
(results in ``bench/results/boosting_cost.{md,json}``, ``boosting_cost_quick.*`` with ``--quick``).

``--eg PYTHON`` instead measures issue 33's third cost target, ExponentiatedGradient(LightGBM)'s CPU over
rateopt's (>= 50), on bench/boosting.py's EG cells (its ``_data``, ``_split``, ``EG_*`` settings and
bench/_eg_runner.py run by ``PYTHON``): results in ``bench/results/boosting_cost_eg.{md,json}``; with
``--eg-times JSON`` the EG CPU seconds of an earlier such file are reused and only the others are fitted.
``--eg PYTHON --eg-scale issue`` runs the same cells at issue 33's own task (200 trees, every ACSEmployment-MA
row; equal opportunity and demographic parity): ``bench/results/boosting_cost_eg_scale.{md,json}``. Each cell
also records the test accuracy and disparity of EG, rateopt and LightGBM; the results file is rewritten after
each cell, and ``--resume`` keeps its cells and runs only the others.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PARAMS = dict(learning_rate=0.1, max_depth=6, num_leaves=31, min_child_weight=1e-3)
SLACK = 0.02


def _data(name):
    """The training split (a random 70%, seed 0) of a dataset: X, y, the group column and its name."""
    import numpy as np

    if name == "acs-race":
        sys.path.insert(0, str(HERE))
        from boosting import _acs  # the same ACSEmployment-MA rows as bench/boosting.py

        X, y, g, col = _acs(False)
    else:
        from rateopt.datasets import load_adult

        d = load_adult()
        X, y, g, col = d.X.tocsr(), np.asarray(d.y), np.asarray(d.groups["sex"]).astype(str), "sex"
    order = np.random.default_rng(0).permutation(X.shape[0])
    tr = np.sort(order[: int(0.7 * len(order))])
    return X[tr], y[tr], g[tr], col


def _save(name, path):
    """The training split as plain arrays, so that a worker's memory before the fit is its imports and these."""
    import numpy as np
    import scipy.sparse as sp

    X, y, g, col = _data(name)
    parts = {"data": X.data, "indices": X.indices, "indptr": X.indptr, "shape": X.shape} if sp.issparse(X) else {"X": X}
    np.savez(path, y=y, g=g, col=col, **parts)


def _load(path):
    import numpy as np
    import scipy.sparse as sp

    z = np.load(path)
    X = (sp.csr_matrix((z["data"], z["indices"], z["indptr"]), shape=tuple(z["shape"])) if "data" in z
         else z["X"])
    return X, z["y"], z["g"], str(z["col"])


def _backend(system):
    """The backend a system grows its trees with (its plain baseline's name)."""
    return "xgboost" if "xgboost" in system else "lightgbm"


def _fit(system, X, y, g, col, goal, rounds):
    if system == "lightgbm":
        import lightgbm as lgb

        params = {"objective": "binary", "learning_rate": PARAMS["learning_rate"], "max_depth": PARAMS["max_depth"],
                  "num_leaves": PARAMS["num_leaves"], "min_sum_hessian_in_leaf": PARAMS["min_child_weight"],
                  "num_threads": 1, "verbosity": -1, "seed": 0, "deterministic": True}
        return lgb.train(params, lgb.Dataset(X, y), num_boost_round=rounds)
    if system == "xgboost":  # as bench/boosting.py's fit_xgboost: the booster BoostingModel("xgboost") grows
        import xgboost as xgb

        params = {"eta": PARAMS["learning_rate"], "max_depth": PARAMS["max_depth"], "max_leaves": PARAMS["num_leaves"],
                  "min_child_weight": PARAMS["min_child_weight"], "nthread": 1, "seed": 0, "base_score": 0.5,
                  "tree_method": "hist", "verbosity": 0, "objective": "binary:logistic"}
        return xgb.train(params, xgb.DMatrix(X, label=y), num_boost_round=rounds)
    import rateopt

    problem = rateopt.Problem(constraints=[getattr(rateopt.goals, goal)(col, slack=SLACK)],
                              datasets=rateopt.Dataset(X, y, groups={col: g}))
    result = rateopt.train(problem, rateopt.BoostingModel(_backend(system), n_rounds=rounds, **PARAMS), n_threads=1,
                           random_state=0)
    if os.environ.get("BOOSTING_COST_SOLUTION"):  # --eg: the classifier too, as bench/boosting.py's fit_rateopt
        return result.solution()
    return result


def _solution_hash(solution, X):
    """sha256 (16 hex digits) of the solution's ``predict_proba`` on the training rows: the same decisions
    before and after a change of the solution's path (bit-identical probabilities)."""
    import hashlib

    import numpy as np

    return hashlib.sha256(np.ascontiguousarray(solution.predict_proba(X), dtype=np.float64).tobytes()).hexdigest()[:16]


# --------------------------------------------------------------------------- --eg: the ratio to fairlearn's EG


#: --eg-scale: "frontier" is bench/boosting.py's EG table (EG_ROUNDS trees, ACS subsampled to EG_ACS_ROWS rows,
#: EG_GOALS); "issue" is issue 33's own task (200 trees, all ACSEmployment-MA rows; equal opportunity and
#: demographic parity).
EG_SCALES = {"frontier": {"name": "boosting_cost_eg", "goals": None, "all_rows": False},
             "issue": {"name": "boosting_cost_eg_scale", "goals": ("equal_opportunity", "demographic_parity"),
                       "all_rows": True}}


def _eg_metrics(p_tr, p_te, y_tr, y_te, g_tr, g_te, goal, tol):
    """Test accuracy, the goal's test disparity (bench/boosting.py's ``disparity``: a group's rate against the
    overall rate) with its SE, the largest pairwise group gap, and the training violation beyond ``tol``."""
    import numpy as np

    sys.path.insert(0, str(HERE))
    import boosting as B

    p_tr, p_te = np.asarray(p_tr, dtype=float), np.asarray(p_te, dtype=float)
    disp, se = B.disparity(p_te, y_te, g_te, goal)
    return {"test_accuracy": float(1.0 - np.mean(np.abs(p_te - y_te))), "test_disparity": disp,
            "test_disparity_se": se, "test_gap": B.gap(p_te, y_te, g_te, goal),
            "train_violation": B.violation(p_tr, y_tr, g_tr, goal, tol),
            "meets_goal": bool(disp <= tol + se)}


def eg_ratio(eg_python, baseline, repeats, datasets, out, quick, json_line, eg_times=None, scale="frontier",
             goals=None, resume=False):
    """EG(LightGBM)'s CPU seconds over rateopt boosting's, on bench/boosting.py's EG cells and splits.

    For each dataset, goal and seed (bench/boosting.py's ``EG_SEEDS``; ``goals``, by default ``EG_GOALS`` or the
    scale's) at ``EG_TOLERANCES[0]``: one ExponentiatedGradient(LGBMClassifier) fit (bench/_eg_runner.py, its
    process CPU), and ``repeats`` interleaved fits of plain LightGBM, rateopt (and the ``--baseline`` rateopt),
    each in a fresh worker process, rateopt's including its default solution (``result.solution()``, as
    fit_rateopt). ``scale`` (``EG_SCALES``): ``"frontier"``, the EG table's ``EG_ROUNDS`` trees and ACS
    subsampled to ``EG_ACS_ROWS`` rows; ``"issue"``, issue 33's task: ``ROUNDS`` (200) trees, all ACS rows.
    Each cell also gets the test accuracy and disparity of EG, rateopt and plain LightGBM (rateopt's and
    LightGBM's from one more fit in this process with the workers' settings), so the ratio compares methods
    that meet the goal. ``eg_times``: a results file of an earlier ``--eg`` run whose EG CPU seconds are reused
    (same cells, splits and EG versions) instead of fitting EG again (EG's accuracy is then not measured).
    ``resume``: keep the cells already in this scale's results file and run only the others. The results file
    is rewritten after every cell.
    """
    import shlex
    import tempfile

    import numpy as np

    sys.path.insert(0, str(HERE))
    import boosting as B
    from _common import emit_json_line, machine_info, results_paths, utc_now, write_results

    cfg = EG_SCALES[scale]
    recorded = None
    if eg_times is not None:
        recorded = {(r["dataset"], r["seed"], r["goal"]): r["eg_cpu_s"]
                    for r in json.loads(Path(eg_times).read_text(encoding="utf-8"))["runs"]}
    rounds = B.ROUNDS if scale == "issue" else B.EG_ROUNDS
    tol = B.EG_TOLERANCES[0]
    if tol != SLACK:
        raise SystemExit(f"EG tolerance {tol} is not this script's slack {SLACK}")
    goals = list(goals or cfg["goals"] or B.EG_GOALS)
    systems = ["lightgbm", "rateopt-lightgbm"] + (["rateopt-lightgbm-baseline"] if baseline else [])
    os.environ["BOOSTING_COST_SOLUTION"] = "1"
    json_path, md_path = results_paths(cfg["name"], quick=quick, out=out)
    previous = json.loads(json_path.read_text(encoding="utf-8")) if resume and json_path.exists() else None
    if previous is not None and (previous["rounds"], previous["systems"]) != (rounds, systems):
        raise SystemExit(f"--resume: {json_path} has rounds {previous['rounds']} and systems "
                         f"{previous['systems']}, not {rounds} and {systems}")
    runs = [] if previous is None else previous["runs"]
    invocations = [] if previous is None else previous["invocations"]
    done = {(r["dataset"], r["goal"], r["seed"]) for r in runs}
    invocation = {"command": "python " + shlex.join(["bench/boosting_cost.py"] + sys.argv[1:]), "start": utc_now(),
                  "load_average_before": os.getloadavg()}
    invocations.append(invocation)
    tmp = tempfile.TemporaryDirectory()
    seeds = B.EG_SEEDS[:1] if quick else B.EG_SEEDS
    result = None
    for name in datasets:
        X, y, g, col = B._data(name)
        max_rows = None if cfg["all_rows"] or not name.startswith("acs") else B.EG_ACS_ROWS
        for goal in (goals[:1] if quick else goals):
            for seed in seeds:
                if (name, goal, seed) in done:
                    continue
                tr, te = B._split(X.shape[0], seed, max_rows)
                path = Path(tmp.name) / f"{name}-{seed}.npz"
                if not path.exists():
                    parts = ({"data": X[tr].data, "indices": X[tr].indices, "indptr": X[tr].indptr,
                              "shape": X[tr].shape} if hasattr(X, "tocsr") else {"X": X[tr]})
                    np.savez(path, y=y[tr], g=g[tr], col=col, **parts)
                load_cell = os.getloadavg()
                if recorded is not None:
                    eg = (None, None, recorded[(name, seed, goal)], {})
                else:
                    eg = B.fit_eg(eg_python, X[tr], y[tr], g[tr], X[te], goal, tol, rounds, seed, details=True)
                if eg is None:
                    raise SystemExit(f"--eg: no interpreter at {eg_python}")
                row = {"dataset": name, "goal": goal, "seed": seed, "n_rows": int(len(tr)), "n_test": int(len(te)),
                       "rounds": rounds, "tolerance": tol, "eg_cpu_s": eg[2], "eg": eg[3], "metrics": {},
                       "load_average_start": load_cell}
                args = (y[tr], y[te], g[tr], g[te], goal, tol)
                if eg[0] is not None:
                    row["metrics"]["eg-lightgbm"] = _eg_metrics(eg[0], eg[1], *args)
                booster = _fit("lightgbm", X[tr], y[tr], g[tr], col, goal, rounds)  # the workers' fits, here
                row["metrics"]["lightgbm"] = _eg_metrics((booster.predict(X[tr]) >= 0.5).astype(float),
                                                         (booster.predict(X[te]) >= 0.5).astype(float), *args)
                clf = _fit("rateopt-lightgbm", X[tr], y[tr], g[tr], col, goal, rounds)
                row["metrics"]["rateopt-lightgbm"] = _eg_metrics(clf.predict_proba(X[tr])[:, 1],
                                                                 clf.predict_proba(X[te])[:, 1], *args)
                for r in range(repeats):
                    for system in systems[r % len(systems):] + systems[: r % len(systems)]:
                        row.setdefault(system, []).append(_run_worker(system, path, goal, rounds, baseline)["cpu_s"])
                for system in systems:
                    row[f"{system}_median"] = float(np.median(row[system]))
                    row[f"eg_over_{system}"] = row["eg_cpu_s"] / row[f"{system}_median"]
                row["load_average_end"] = os.getloadavg()
                runs.append(row)
                print(f"eg {name} {goal} seed {seed}: EG {eg[2]:.2f} CPU s, "
                      + ", ".join(f"{sy} {row[f'{sy}_median']:.3f}" for sy in systems), flush=True)
                invocation["end"], invocation["load_average_after"] = utc_now(), os.getloadavg()
                result = {"name": cfg["name"], "scale": scale, "when": utc_now(), "rounds": rounds,
                          "tolerance": tol, "repeats": repeats, "systems": systems, "baseline": baseline,
                          "eg_python": eg_python, "eg_times": None if eg_times is None else str(eg_times),
                          "invocations": invocations, "runs": runs,
                          "machine": machine_info(("numpy", "scipy", "lightgbm"))}
                write_results(result, eg_markdown(result), json_path, md_path)
    tmp.cleanup()
    if result is None:
        print(f"--eg: every cell is already in {json_path}")
        return
    print(eg_markdown(result))
    if json_line:
        emit_json_line({k: v for k, v in result.items() if k not in ("machine", "runs")})


def eg_markdown(result):
    """The tables of an ``--eg`` results file: CPU and ratios per cell, then each method's test accuracy and
    disparity."""
    import numpy as np

    sys.path.insert(0, str(HERE))
    from _common import markdown_table

    runs, systems, rounds, tol = result["runs"], result["systems"], result["rounds"], result["tolerance"]
    issue = result.get("scale") == "issue"
    table = [[r["dataset"], r["goal"], r["seed"], r["n_rows"], f"{r['eg_cpu_s']:.2f}",
              r.get("eg", {}).get("n_oracle_calls", "–")]
             + [f"{r[f'{sy}_median']:.3f}" for sy in systems] + [f"{r[f'eg_over_{sy}']:.1f}" for sy in systems]
             + [f"{r['rateopt-lightgbm_median'] / r['lightgbm_median']:.2f}"] for r in runs]
    ratios = [r["eg_over_rateopt-lightgbm"] for r in runs]
    fit_rows = [[r["dataset"], r["goal"], r["seed"], system, f"{m['test_accuracy']:.4f}",
                 f"{m['test_disparity']:.4f} ± {m['test_disparity_se']:.4f}", f"{m['test_gap']:.4f}",
                 f"{m['train_violation']:+.4f}", "yes" if m["meets_goal"] else "**no**"]
                for r in runs for system, m in r.get("metrics", {}).items()]
    loads = "; ".join(f"`{inv['command']}` ({inv['start']}), load average before {inv['load_average_before'][0]:.2f}"
                      + (f", after {inv['load_average_after'][0]:.2f}" if "load_average_after" in inv else "")
                      for inv in result["invocations"])
    scale = (f"issue 33's own task: {rounds} trees, every ACSEmployment-MA row (a random 70% trained), Adult all "
             f"rows" if issue else f"bench/boosting.py's EG cells and splits: {rounds} trees, ACS subsampled to "
             f"30000 rows (70% trained), Adult all rows")
    return (f"# ExponentiatedGradient(LightGBM) over rateopt boosting, CPU (bench/boosting_cost.py --eg"
            + (" --eg-scale issue" if issue else "") + ")\n\n"
            f"{scale}; tolerance {tol}; one thread everywhere. EG: fairlearn's ExponentiatedGradient at its "
            f"defaults (eps 0.01, max_iter 50) over LGBMClassifier with the same tree settings, one fit "
            + (f"(the CPU seconds recorded in {result['eg_times']}, not rerun)" if result.get("eg_times")
               else f"(bench/_eg_runner.py in {result['eg_python']}, its process CPU)")
            + f"; 'EG fits': its LightGBM fits. The others: median of {result['repeats']} interleaved fits, each "
            f"in a fresh process, rateopt's with its default solution"
            + (f"; '-baseline': the rateopt of {result['baseline']}" if result.get("baseline") else "")
            + f". Target: EG / rateopt >= 50. Median EG / rateopt over these {len(ratios)} cells: "
            f"{np.median(ratios):.1f} (range {min(ratios):.1f}-{max(ratios):.1f}).\n\nRuns: {loads}.\n\n"
            + markdown_table(["dataset", "goal", "seed", "training rows", "EG CPU s", "EG fits"]
                             + [f"{sy} CPU s" for sy in systems] + [f"EG / {sy}" for sy in systems]
                             + ["rateopt / LightGBM"], table) + "\n"
            + ("" if not fit_rows else
               "\nTest accuracy and disparity on the split's 30% test rows (EG and rateopt: expected decisions of "
               "the randomized classifier; LightGBM: its 0.5 threshold). Disparity: the largest distance of a "
               "group's rate from the overall rate (± the binomial SE of that group's rate), the goal's statement; "
               "gap: the largest difference between two groups' rates (issue 33's table's 'TPR gap'); training "
               f"violation: disparity on the training rows beyond {tol}. Meets the goal: test disparity <= "
               f"{tol} + 1 SE.\n\n"
               + markdown_table(["dataset", "goal", "seed", "system", "test accuracy", "test disparity", "test gap",
                                 "training violation", "meets goal"], fit_rows) + "\n"))


def _status_kib(field):
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def worker(system, path, goal, rounds):
    """One fit in this process: its CPU seconds and the memory it added at its peak, as one JSON line.

    The process's high-water mark is reset just before the fit (``/proc/self/clear_refs``, Linux), so the
    fit's peak is measured over the memory the process already held (imports, data): ``VmHWM`` after the
    fit minus ``VmRSS`` before it.
    """
    import gc
    import time
    import warnings

    import lightgbm  # noqa: F401 - every worker pays the same imports
    import numpy as np  # noqa: F401
    import scipy.sparse  # noqa: F401
    import xgboost  # noqa: F401

    import rateopt

    X, y, g, col = _load(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _fit(system, X[:2000], y[:2000], g[:2000], col, goal, 3)  # warm-up: lazy imports, first calls
        gc.collect()
        with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
            fh.write("5")  # resets VmHWM to the current RSS
        rss_before = _status_kib("VmRSS")
        t0 = time.process_time()
        fitted = _fit(system, X, y, g, col, goal, rounds)
        cpu = time.process_time() - t0
        peak = _status_kib("VmHWM")
        # (not ru_maxrss: Linux carries it over from the parent process across fork and exec)
        extra = {}
        if system.startswith("rateopt") and not os.environ.get("BOOSTING_COST_SOLUTION"):
            # the default solution, as a user calls it after the fit: the high-water mark is not reset, so
            # this peak is the larger of the fit's and the solution's (the plain backends' booster is their
            # classifier: their fit+solution peak is their fit peak)
            t0 = time.process_time()
            solution = fitted.solution()
            extra = {"solution_cpu_s": time.process_time() - t0,
                     "fit_solution_peak_kib": _status_kib("VmHWM") - rss_before}
            extra["solution_hash"] = _solution_hash(solution, X)  # not part of either peak
        else:
            extra = {"solution_cpu_s": 0.0, "fit_solution_peak_kib": peak - rss_before}
    print(json.dumps({"cpu_s": cpu, "fit_peak_kib": peak - rss_before, "rss_before_kib": rss_before,
                      "n_rows": int(X.shape[0]), "rateopt": str(Path(rateopt.__file__).parent), **extra}))


def _run_worker(system, path, goal, rounds, baseline):
    env = dict(os.environ)
    src = baseline if system.endswith("-baseline") else str(HERE.parent / "python")
    env["PYTHONPATH"] = os.pathsep.join([src, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["OMP_NUM_THREADS"] = "1"
    out = subprocess.run([sys.executable, __file__, "--worker", system, str(path), goal, str(rounds)], env=env,
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def summarize(runs, datasets, systems):
    """Per (dataset, goal, system): median CPU seconds, the median per-repeat ratio to the plain backend
    (LightGBM, or XGBoost for the systems that grow XGBoost trees), fit peaks."""
    import numpy as np

    summary = []
    for dataset in datasets:
        for goal in ("equal_opportunity", "demographic_parity"):
            cell = [r for r in runs if r["dataset"] == dataset and r["goal"] == goal]
            if not cell:
                continue
            n_rows = cell[0]["n_rows"]
            for system in systems:
                if not any(r["system"] == system for r in cell):  # not run in this cell (merged runs)
                    continue
                plain = _backend(system)
                base_cpu = float(np.median([r["cpu_s"] for r in cell if r["system"] == plain]))
                base_peak = float(np.median([r["fit_peak_kib"] for r in cell if r["system"] == plain]))
                rs = [r for r in cell if r["system"] == system]
                cpu = float(np.median([r["cpu_s"] for r in rs]))
                # per-repeat ratios to the same repeat's plain fit, then their median
                ratios = [r["cpu_s"] / next(b["cpu_s"] for b in cell if b["system"] == plain
                                             and b["repeat"] == r["repeat"]) for r in rs]
                peak = float(np.median([r["fit_peak_kib"] for r in rs]))
                row = {"dataset": dataset, "goal": goal, "system": system, "n_rows": n_rows,
                       "cpu_s_median": cpu, "cpu_ratio_median": float(np.median(ratios)),
                       "cpu_ratio_of_medians": cpu / base_cpu, "fit_peak_mib": peak / 1024,
                       "extra_bytes_per_row": (peak - base_peak) * 1024 / n_rows}
                if all("fit_solution_peak_kib" in r for r in cell):  # runs that measured fit + solution
                    # against the plain backend's fit peak (its booster is its classifier)
                    both = float(np.median([r["fit_solution_peak_kib"] for r in rs]))
                    hashes = sorted({r["solution_hash"] for r in rs if "solution_hash" in r})
                    row.update({"solution_cpu_s_median": float(np.median([r["solution_cpu_s"] for r in rs])),
                                "fit_solution_peak_mib": both / 1024,
                                "fit_solution_extra_bytes_per_row": (both - base_peak) * 1024 / n_rows,
                                "solution_hashes": hashes})
                summary.append(row)
    return summary


def markdown(result):
    """The results table of a run (``result`` as written to the JSON file)."""
    sys.path.insert(0, str(HERE))
    from _common import markdown_table

    summary, rounds, repeats = result["summary"], result["rounds"], result["repeats"]
    load_before, load_after = result["load_average_before"], result["load_average_after"]
    both = all("fit_solution_peak_mib" in s for s in summary)
    rows = [[s["dataset"], s["goal"], s["system"], s["cpu_s_median"], f"{s['cpu_ratio_median']:.2f}",
             f"{s['fit_peak_mib']:.1f}", f"{s['extra_bytes_per_row']:+.0f}"]
            + ([f"{s['fit_solution_peak_mib']:.1f}", f"{s['fit_solution_extra_bytes_per_row']:+.0f}",
                ", ".join(s["solution_hashes"]) or "-"] if both else []) for s in summary]
    return (f"# The cost of rate-constrained boosting (bench/boosting_cost.py)\n\n"
            f"{rounds} trees, {repeats} interleaved repeats, one thread, each fit in a fresh process; "
            f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f} (1-minute).\n"
            f"CPU / plain: median over repeats of the ratio to the same repeat's plain fit of the same backend "
            f"(LightGBM, or XGBoost for the xgboost rows). "
            f"Fit peak: the memory a fit adds at its peak (VmHWM reset before the fit, minus VmRSS before it); "
            f"extra bytes per row: (its fit peak - the plain backend's) / training rows. "
            f"'-baseline': the same fit with the rateopt of {result.get('baseline')} (the before of a before/after). "
            + (f"Fit + solution peak: the same high-water mark read again after the default ``solution()`` "
               f"(not reset in between: the larger of the two peaks; the plain backends' is their fit peak), its "
               f"extra bytes per row against the plain backend's fit peak; solution hash: sha256 of the "
               f"solution's ``predict_proba`` on the training rows (the same in every repeat and before/after: "
               f"bit-identical decisions). " if both else "")
            + f"Targets: CPU ratio <= 1.5, extra <= 64 bytes per row."
            + (f" Note: {result['note']}." if result.get("note") else "") + "\n\n"
            + markdown_table(["dataset", "goal", "system", "CPU s (median)", "CPU / plain", "fit peak MiB",
                              "extra B/row"]
                             + (["fit + solution peak MiB", "fit + solution extra B/row", "solution hash"]
                                if both else []), rows) + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", nargs=4, metavar=("SYSTEM", "DATA", "GOAL", "ROUNDS"), help=argparse.SUPPRESS)
    parser.add_argument("--baseline", default=None,
                        help="the python/ folder of another rateopt checkout (compiled core in place): adds "
                             "rateopt-<backend>-baseline, the before of a before/after")
    parser.add_argument("--repeats", type=int, default=None, help="interleaved repeats (default 3, --quick 2)")
    parser.add_argument("--datasets", default=None, help="comma-separated subset of adult-sex, acs-race")
    parser.add_argument("--backends", default="lightgbm",
                        help="comma-separated subset of lightgbm, xgboost (default lightgbm)")
    parser.add_argument("--goals", default=None,
                        help="comma-separated subset of equal_opportunity, demographic_parity (default both; with "
                             "--eg: also equalized_odds, default the scale's goals)")
    parser.add_argument("--eg", default=None, metavar="PYTHON",
                        help="instead: EG(LightGBM)'s CPU over rateopt's on bench/boosting.py's EG cells, EG run by "
                             "this interpreter (fairlearn, lightgbm 4.7.0: /work/venv-fl/bin/python here)")
    parser.add_argument("--eg-scale", choices=sorted(EG_SCALES), default="frontier",
                        help="with --eg: 'frontier' (bench/boosting.py's EG cells: 50 trees, ACS 30000 rows) or "
                             "'issue' (issue 33's task: 200 trees, all ACS rows; results boosting_cost_eg_scale.*)")
    parser.add_argument("--resume", action="store_true",
                        help="with --eg: keep the cells already in the results file, run only the others")
    parser.add_argument("--eg-times", type=Path, default=None, metavar="JSON",
                        help="with --eg: reuse the EG CPU seconds of this earlier --eg results file (EG not rerun)")
    parser.add_argument("--render", type=Path, default=None, metavar="JSON",
                        help="instead: summarize the runs of a results file again and rewrite it and its table")
    sys.path.insert(0, str(HERE))
    from _common import add_common_args, emit_json_line, machine_info, markdown_table, results_paths, utc_now, \
        write_results

    add_common_args(parser)
    args = parser.parse_args(argv)
    if args.worker:
        system, path, goal, rounds = args.worker
        worker(system, path, goal, int(rounds))
        return
    import importlib.util
    import tempfile

    if args.eg:
        eg_ratio(args.eg, args.baseline, args.repeats or (1 if args.quick else 3),
                 args.datasets.split(",") if args.datasets else ["adult-sex", "acs-race"], args.out, args.quick,
                 args.json, args.eg_times, args.eg_scale,
                 args.goals.split(",") if args.goals else None, args.resume)
        return
    if args.render:
        result = json.loads(args.render.read_text(encoding="utf-8"))
        systems = list(dict.fromkeys(r["system"] for r in result["runs"]))
        datasets = list(dict.fromkeys(r["dataset"] for r in result["runs"]))
        result["summary"] = summarize(result["runs"], datasets, systems)
        write_results(result, markdown(result), args.render, args.render.with_suffix(".md"))
        print(markdown(result))
        return

    import numpy as np

    rounds = 50 if args.quick else 200
    repeats = args.repeats or (2 if args.quick else 3)
    if args.datasets:
        datasets = args.datasets.split(",")
    else:
        datasets = ["adult-sex"] + ([] if args.quick or importlib.util.find_spec("nannyml") is None else ["acs-race"])
    systems = []
    for backend in args.backends.split(","):
        systems += [backend, f"rateopt-{backend}"] + ([f"rateopt-{backend}-baseline"] if args.baseline else [])
    tmp = tempfile.TemporaryDirectory()
    paths = {}
    for dataset in datasets:
        paths[dataset] = Path(tmp.name) / f"{dataset}.npz"
        _save(dataset, paths[dataset])
    load_before = os.getloadavg()
    runs = []
    for dataset in datasets:
        for goal in (args.goals or "equal_opportunity,demographic_parity").split(","):
            for r in range(repeats):
                order = systems[r % len(systems):] + systems[: r % len(systems)]
                for system in order:
                    out = _run_worker(system, paths[dataset], goal, rounds, args.baseline)
                    runs.append({"dataset": dataset, "goal": goal, "repeat": r, "system": system, **out})
                    print(f"{dataset} {goal} repeat {r} {system}: {out['cpu_s']:.3f} CPU s, "
                          f"fit peak +{out['fit_peak_kib'] / 1024:.1f} MiB, fit + solution peak "
                          f"+{out['fit_solution_peak_kib'] / 1024:.1f} MiB", flush=True)
    load_after = os.getloadavg()
    tmp.cleanup()
    summary = summarize(runs, datasets, systems)
    result = {"name": "boosting_cost", "when": utc_now(), "quick": args.quick, "rounds": rounds,
              "repeats": repeats, "params": PARAMS, "slack": SLACK, "baseline": args.baseline,
              "load_average_before": load_before, "load_average_after": load_after, "summary": summary,
              "runs": runs, "machine": machine_info(("numpy", "scipy", "lightgbm", "xgboost"))}
    md = markdown(result)
    json_path, md_path = results_paths("boosting_cost", quick=args.quick, out=args.out)
    write_results(result, md, json_path, md_path)
    print(md)
    if args.json:
        emit_json_line({k: v for k, v in result.items() if k not in ("runs", "machine")})


if __name__ == "__main__":
    main()
