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
to the plain backend's, per training row, is the memory target's number. Repeats are interleaved (system
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


# --------------------------------------------------------------------------- --eg: the ratio to fairlearn's EG


def eg_ratio(eg_python, baseline, repeats, datasets, out, quick, json_line, eg_times=None):
    """EG(LightGBM)'s CPU seconds over rateopt boosting's, on bench/boosting.py's EG cells and splits.

    For each dataset, seed and goal of bench/boosting.py's ``--eg`` table (``EG_DATASETS``, ``EG_SEEDS``,
    ``EG_GOALS`` at ``EG_TOLERANCES[0]``, ``EG_ROUNDS`` trees, ACS subsampled to ``EG_ACS_ROWS`` rows; its
    ``_split``): one ExponentiatedGradient(LGBMClassifier) fit (bench/_eg_runner.py, its process CPU), and
    ``repeats`` interleaved fits of plain LightGBM, rateopt (and the ``--baseline`` rateopt), each in a fresh
    worker process, rateopt's including its default solution (``result.solution()``, as fit_rateopt).
    ``eg_times``: a results file of an earlier ``--eg`` run whose EG CPU seconds are reused (same cells,
    splits and EG versions) instead of fitting EG again.
    """
    import tempfile

    import numpy as np

    sys.path.insert(0, str(HERE))
    import boosting as B
    from _common import emit_json_line, machine_info, markdown_table, results_paths, utc_now, write_results

    recorded = None
    if eg_times is not None:
        recorded = {(r["dataset"], r["seed"], r["goal"]): r["eg_cpu_s"]
                    for r in json.loads(Path(eg_times).read_text(encoding="utf-8"))["runs"]}
    rounds, tol = B.EG_ROUNDS, B.EG_TOLERANCES[0]
    if tol != SLACK:
        raise SystemExit(f"EG tolerance {tol} is not this script's slack {SLACK}")
    systems = ["lightgbm", "rateopt-lightgbm"] + (["rateopt-lightgbm-baseline"] if baseline else [])
    os.environ["BOOSTING_COST_SOLUTION"] = "1"
    tmp = tempfile.TemporaryDirectory()
    load_before = os.getloadavg()
    runs = []
    for name in datasets:
        X, y, g, col = B._data(name)
        for seed in (B.EG_SEEDS[:1] if quick else B.EG_SEEDS):
            tr, te = B._split(X.shape[0], seed, B.EG_ACS_ROWS if name.startswith("acs") else None)
            path = Path(tmp.name) / f"{name}-{seed}.npz"
            parts = ({"data": X[tr].data, "indices": X[tr].indices, "indptr": X[tr].indptr, "shape": X[tr].shape}
                     if hasattr(X, "tocsr") else {"X": X[tr]})
            np.savez(path, y=y[tr], g=g[tr], col=col, **parts)
            for goal in (B.EG_GOALS[:1] if quick else B.EG_GOALS):
                eg = ((None, None, recorded[(name, seed, goal)]) if recorded is not None
                      else B.fit_eg(eg_python, X[tr], y[tr], g[tr], X[te], goal, tol, rounds, seed))
                if eg is None:
                    raise SystemExit(f"--eg: no interpreter at {eg_python}")
                row = {"dataset": name, "seed": seed, "goal": goal, "n_rows": int(len(tr)), "eg_cpu_s": eg[2]}
                for r in range(repeats):
                    for system in systems[r % len(systems):] + systems[: r % len(systems)]:
                        row.setdefault(system, []).append(_run_worker(system, path, goal, rounds, baseline)["cpu_s"])
                runs.append(row)
                print(f"eg {name} seed {seed} {goal}: EG {eg[2]:.2f} CPU s, "
                      + ", ".join(f"{sy} {np.median(row[sy]):.3f}" for sy in systems), flush=True)
    load_after = os.getloadavg()
    tmp.cleanup()
    for row in runs:
        for system in systems:
            row[f"{system}_median"] = float(np.median(row[system]))
            row[f"eg_over_{system}"] = row["eg_cpu_s"] / row[f"{system}_median"]
    table = [[r["dataset"], r["goal"], r["seed"], r["n_rows"], f"{r['eg_cpu_s']:.2f}"]
             + [f"{r[f'{sy}_median']:.3f}" for sy in systems] + [f"{r[f'eg_over_{sy}']:.1f}" for sy in systems]
             + [f"{r['rateopt-lightgbm_median'] / r['lightgbm_median']:.2f}"] for r in runs]
    result = {"name": "boosting_cost_eg", "when": utc_now(), "rounds": rounds, "tolerance": tol, "repeats": repeats,
              "baseline": baseline, "eg_python": eg_python, "eg_times": None if eg_times is None else str(eg_times),
              "load_average_before": load_before,
              "load_average_after": load_after, "runs": runs,
              "machine": machine_info(("numpy", "scipy", "lightgbm"))}
    md = (f"# ExponentiatedGradient(LightGBM) over rateopt boosting, CPU (bench/boosting_cost.py --eg)\n\n"
          f"bench/boosting.py's EG cells and splits: {rounds} trees, tolerance {tol}, ACS subsampled to "
          f"{B.EG_ACS_ROWS} rows (70% trained), Adult all rows; one thread everywhere. EG: "
          + (f"the CPU seconds recorded in {eg_times} (not rerun)" if recorded is not None
             else f"one fit (bench/_eg_runner.py in {eg_python}, its process CPU)")
          + f"; the others: median of {repeats} interleaved "
          f"fits, each in a fresh process, rateopt's with its default solution. '-baseline': the rateopt of "
          f"{baseline} (the before). Load average before {load_before[0]:.2f}, after {load_after[0]:.2f} "
          f"(1-minute). Target: EG / rateopt >= 50.\n\n"
          + markdown_table(["dataset", "goal", "seed", "training rows", "EG CPU s"]
                           + [f"{sy} CPU s" for sy in systems] + [f"EG / {sy}" for sy in systems]
                           + ["rateopt / LightGBM"], table) + "\n")
    json_path, md_path = results_paths("boosting_cost_eg", quick=quick, out=out)
    write_results(result, md, json_path, md_path)
    print(md)
    if json_line:
        emit_json_line({k: v for k, v in result.items() if k not in ("machine",)})


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
        _fit(system, X, y, g, col, goal, rounds)
        cpu = time.process_time() - t0
    peak = _status_kib("VmHWM")
    # (not ru_maxrss: Linux carries it over from the parent process across fork and exec)
    print(json.dumps({"cpu_s": cpu, "fit_peak_kib": peak - rss_before, "rss_before_kib": rss_before,
                      "n_rows": int(X.shape[0]), "rateopt": str(Path(rateopt.__file__).parent)}))


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
                summary.append({"dataset": dataset, "goal": goal, "system": system, "n_rows": n_rows,
                                "cpu_s_median": cpu, "cpu_ratio_median": float(np.median(ratios)),
                                "cpu_ratio_of_medians": cpu / base_cpu, "fit_peak_mib": peak / 1024,
                                "extra_bytes_per_row": (peak - base_peak) * 1024 / n_rows})
    return summary


def markdown(result):
    """The results table of a run (``result`` as written to the JSON file)."""
    sys.path.insert(0, str(HERE))
    from _common import markdown_table

    summary, rounds, repeats = result["summary"], result["rounds"], result["repeats"]
    load_before, load_after = result["load_average_before"], result["load_average_after"]
    rows = [[s["dataset"], s["goal"], s["system"], s["cpu_s_median"], f"{s['cpu_ratio_median']:.2f}",
             f"{s['fit_peak_mib']:.1f}", f"{s['extra_bytes_per_row']:+.0f}"] for s in summary]
    return (f"# The cost of rate-constrained boosting (bench/boosting_cost.py)\n\n"
            f"{rounds} trees, {repeats} interleaved repeats, one thread, each fit in a fresh process; "
            f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f} (1-minute).\n"
            f"CPU / plain: median over repeats of the ratio to the same repeat's plain fit of the same backend "
            f"(LightGBM, or XGBoost for the xgboost rows). "
            f"Fit peak: the memory a fit adds at its peak (VmHWM reset before the fit, minus VmRSS before it); "
            f"extra bytes per row: (its fit peak - the plain backend's) / training rows. "
            f"'-baseline': the same fit with the rateopt of {result.get('baseline')} (the before of a before/after). "
            f"Targets: CPU ratio <= 1.5, extra <= 64 bytes per row."
            + (f" Note: {result['note']}." if result.get("note") else "") + "\n\n"
            + markdown_table(["dataset", "goal", "system", "CPU s (median)", "CPU / plain", "fit peak MiB",
                              "extra B/row"], rows) + "\n")


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
    parser.add_argument("--goals", default="equal_opportunity,demographic_parity",
                        help="comma-separated subset of equal_opportunity, demographic_parity")
    parser.add_argument("--eg", default=None, metavar="PYTHON",
                        help="instead: EG(LightGBM)'s CPU over rateopt's on bench/boosting.py's EG cells, EG run by "
                             "this interpreter (fairlearn, lightgbm 4.7.0: /work/venv-fl/bin/python here)")
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
                 args.json, args.eg_times)
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
        for goal in args.goals.split(","):
            for r in range(repeats):
                order = systems[r % len(systems):] + systems[: r % len(systems)]
                for system in order:
                    out = _run_worker(system, paths[dataset], goal, rounds, args.baseline)
                    runs.append({"dataset": dataset, "goal": goal, "repeat": r, "system": system, **out})
                    print(f"{dataset} {goal} repeat {r} {system}: {out['cpu_s']:.3f} CPU s, "
                          f"fit peak +{out['fit_peak_kib'] / 1024:.1f} MiB", flush=True)
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
