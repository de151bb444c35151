"""The cost of rate-constrained boosting: CPU time and peak memory of rateopt-lightgbm against plain LightGBM.

Issue 33's "Cost" target: CPU time <= 1.5x LightGBM's with the same trees and rounds, and peak memory <=
LightGBM's + 64 bytes per training row.

Systems, each fit in a fresh subprocess (so that its peak memory is its own):

* ``lightgbm``: plain LightGBM, binary log-loss, ``lgb.train`` on the training split;
* ``rateopt``: ``rateopt.train(problem, BoostingModel("lightgbm", ...))`` with the default game
  (``proxy-swap``), the same tree parameters and rounds, including the problem's compilation and the
  feasibility check of its m-stochastic solution (what a user pays for ``rateopt.train``);
* ``rateopt-baseline`` (with ``--baseline PATH``): the same, with the rateopt found under ``PATH`` (the
  ``python/`` folder of another checkout, its compiled core in place): the before of a before/after.

Every worker imports numpy, scipy, lightgbm and rateopt, loads the data, and fits once on 2,000 rows
(untimed, so lazy imports and first-call costs are not counted), then times one fit with
``time.process_time`` (one thread everywhere: ``num_threads=1``, ``n_threads=1``). Peak memory is the
memory the fit adds at its peak: the process's high-water mark is reset just before the fit
(``/proc/self/clear_refs``) and read after it (``VmHWM`` minus the ``VmRSS`` before the fit). Its
difference to LightGBM's, per training row, is the memory target's number. Repeats are interleaved (system order rotated each repeat); medians are reported,
with the load average before and after the run.

Data: Adult (sex; ``rateopt.datasets``, sparse one-hot) with equal opportunity and demographic parity at
slack 0.02, and (full run, when the ``nannyml`` wheel's files are installed) ACSEmployment-MA (race in 4
groups, 194k training rows). A random 70/30 split (seed 0); training rows only are fit.

Run: ``python bench/boosting_cost.py [--quick] [--json] [--baseline PATH]`` (results in
``bench/results/boosting_cost.{md,json}``, ``boosting_cost_quick.*`` with ``--quick``).
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


def _fit(system, X, y, g, col, goal, rounds):
    if system == "lightgbm":
        import lightgbm as lgb

        params = {"objective": "binary", "learning_rate": PARAMS["learning_rate"], "max_depth": PARAMS["max_depth"],
                  "num_leaves": PARAMS["num_leaves"], "min_sum_hessian_in_leaf": PARAMS["min_child_weight"],
                  "num_threads": 1, "verbosity": -1, "seed": 0, "deterministic": True}
        return lgb.train(params, lgb.Dataset(X, y), num_boost_round=rounds)
    import rateopt

    problem = rateopt.Problem(constraints=[getattr(rateopt.goals, goal)(col, slack=SLACK)],
                              datasets=rateopt.Dataset(X, y, groups={col: g}))
    return rateopt.train(problem, rateopt.BoostingModel("lightgbm", n_rounds=rounds, **PARAMS), n_threads=1,
                         random_state=0)


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
    src = baseline if system == "rateopt-baseline" else str(HERE.parent / "python")
    env["PYTHONPATH"] = os.pathsep.join([src, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["OMP_NUM_THREADS"] = "1"
    out = subprocess.run([sys.executable, __file__, "--worker", system, str(path), goal, str(rounds)], env=env,
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def summarize(runs, datasets, systems):
    """Per (dataset, goal, system): median CPU seconds, the median per-repeat ratio to LightGBM, fit peaks."""
    import numpy as np

    summary = []
    for dataset in datasets:
        for goal in ("equal_opportunity", "demographic_parity"):
            cell = [r for r in runs if r["dataset"] == dataset and r["goal"] == goal]
            base_cpu = float(np.median([r["cpu_s"] for r in cell if r["system"] == "lightgbm"]))
            base_peak = float(np.median([r["fit_peak_kib"] for r in cell if r["system"] == "lightgbm"]))
            n_rows = cell[0]["n_rows"]
            for system in systems:
                rs = [r for r in cell if r["system"] == system]
                cpu = float(np.median([r["cpu_s"] for r in rs]))
                # per-repeat ratios to the same repeat's LightGBM fit, then their median
                ratios = [r["cpu_s"] / next(b["cpu_s"] for b in cell if b["system"] == "lightgbm"
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
            f"CPU / LightGBM: median over repeats of the ratio to the same repeat's LightGBM fit. "
            f"Fit peak: the memory a fit adds at its peak (VmHWM reset before the fit, minus VmRSS before it); "
            f"extra bytes per row: (its fit peak - LightGBM's) / training rows. "
            f"Targets: CPU ratio <= 1.5, extra <= 64 bytes per row.\n\n"
            + markdown_table(["dataset", "goal", "system", "CPU s (median)", "CPU / LightGBM", "fit peak MiB",
                              "extra B/row"], rows) + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", nargs=4, metavar=("SYSTEM", "DATA", "GOAL", "ROUNDS"), help=argparse.SUPPRESS)
    parser.add_argument("--baseline", default=None,
                        help="the python/ folder of another rateopt checkout (compiled core in place): adds "
                             "rateopt-baseline, the before of a before/after")
    parser.add_argument("--repeats", type=int, default=None, help="interleaved repeats (default 3, --quick 2)")
    parser.add_argument("--datasets", default=None, help="comma-separated subset of adult-sex, acs-race")
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
    systems = ["lightgbm", "rateopt"] + (["rateopt-baseline"] if args.baseline else [])
    tmp = tempfile.TemporaryDirectory()
    paths = {}
    for dataset in datasets:
        paths[dataset] = Path(tmp.name) / f"{dataset}.npz"
        _save(dataset, paths[dataset])
    load_before = os.getloadavg()
    runs = []
    for dataset in datasets:
        for goal in ("equal_opportunity", "demographic_parity"):
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
              "runs": runs, "machine": machine_info(("numpy", "scipy", "lightgbm"))}
    md = markdown(result)
    json_path, md_path = results_paths("boosting_cost", quick=args.quick, out=args.out)
    write_results(result, md, json_path, md_path)
    print(md)
    if args.json:
        emit_json_line({k: v for k, v in result.items() if k not in ("runs", "machine")})


if __name__ == "__main__":
    main()
