"""The cost of a boosted run's default solution: CPU time of ``rateopt.train`` and of ``result.solution()``.

Issue 33's cost target is CPU time <= 1.5x the plain backend's with the same trees and rounds; since the
default solution of a two-class boosted run with goals is the thresholded one (17 prefixes fixed before
training, whose training scores the run keeps, each re-fitted an exact threshold rule), what a user pays is
training plus ``solution()``. This bench times both,
per backend, against the plain backend's fit (binary log-loss, same tree parameters and rounds):

* ``lightgbm`` / ``xgboost``: the plain backend (``lgb.train`` / ``xgb.train``, one thread);
* ``rateopt``: ``rateopt.train(problem, BoostingModel(backend, ...))`` timed, then ``result.solution()`` timed;
* ``rateopt-baseline`` (with ``--baseline PATH``): the same with the rateopt under ``PATH`` (the ``python/``
  folder of another checkout, compiled core in place): the before of a before/after.

Each fit runs in a fresh process after an untimed warm-up fit on 2,000 rows (lazy imports, first calls), timed
with ``time.process_time`` (one thread everywhere). Repeats are interleaved (system order rotated); medians of
the per-repeat ratios to the same repeat's plain fit are reported, with the load average before and after.
The solutions' decisions are compared between ``rateopt`` and ``rateopt-baseline`` (same seed, same rows).

Data: Adult (sex; ``rateopt.datasets``), a random 70% training split (seed 0), equal opportunity at slack 0.02
(bench/boosting_cost.py's rows and parameters; ``--goals`` adds demographic parity at the same slack).

``--parts`` also times what each rateopt fit spends its CPU on (the backend's trees, the core pass, the kept
candidates, the solution's first LP, rescoring and re-fit, and the rest), by wrappers in the worker.

Run: ``python bench/boosting_solution_cost.py [--quick] [--json] [--baseline PATH] [--backends lightgbm,xgboost]
[--goals equal_opportunity,demographic_parity] [--rounds N] [--parts]`` (results in
``bench/results/boosting_solution_cost.{md,json}``, ``boosting_solution_cost_quick.*`` with ``--quick``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from boosting_cost import PARAMS, SLACK, _load, _save  # noqa: E402 - the same rows and tree parameters

GOAL = "equal_opportunity"


def _plain(backend, X, y, rounds):
    if backend == "lightgbm":
        import lightgbm as lgb

        params = {"objective": "binary", "learning_rate": PARAMS["learning_rate"], "max_depth": PARAMS["max_depth"],
                  "num_leaves": PARAMS["num_leaves"], "min_sum_hessian_in_leaf": PARAMS["min_child_weight"],
                  "num_threads": 1, "verbosity": -1, "seed": 0, "deterministic": True}
        return lgb.train(params, lgb.Dataset(X, y), num_boost_round=rounds)
    import xgboost as xgb

    params = {"objective": "binary:logistic", "eta": PARAMS["learning_rate"], "max_depth": PARAMS["max_depth"],
              "max_leaves": PARAMS["num_leaves"], "min_child_weight": PARAMS["min_child_weight"], "nthread": 1,
              "seed": 0, "tree_method": "hist", "verbosity": 0}
    return xgb.train(params, xgb.DMatrix(X, label=y), num_boost_round=rounds)


def _rateopt(backend, X, y, g, col, rounds, goal=GOAL):
    import rateopt

    problem = rateopt.Problem(constraints=[getattr(rateopt.goals, goal)(col, slack=SLACK)],
                              datasets=rateopt.Dataset(X, y, groups={col: g}))
    return rateopt.train(problem, rateopt.BoostingModel(backend, n_rounds=rounds, **PARAMS), n_threads=1,
                         random_state=0)


#: ``--parts``: what a boosted fit spends its CPU on, each timed by a wrapper around the function named (the parts
#: that are differences of these are derived in :func:`derived_parts`).
PART_FUNCTIONS = {
    "backend_start": ("rateopt._predictors._boosting", "BOOSTERS[backend]", "start"),
    "trees": ("rateopt._predictors._boosting", "BOOSTERS[backend]", "add_tree"),
    "core_pass": ("rateopt._training._boosting", "BoostingPlayer", "run_pass"),
    "kept_candidates": ("rateopt._predictors._boosting", "BOOSTERS[backend]", "keep_training_scores"),
    "loop": ("rateopt._train", None, "_run_boosting_loop"),
    "solution_first_lp": ("rateopt._postprocess._mixture", None, "_fit_kept"),
    "solution_rescoring": ("rateopt._postprocess._mixture", None, "_support_scores"),
}


def _time_parts(backend):
    """Wrap :data:`PART_FUNCTIONS` with CPU-time accumulators (this process only); returns the accumulators."""
    import functools
    import importlib
    import time

    acc = dict.fromkeys(PART_FUNCTIONS, 0.0)
    for part, (module, owner, name) in PART_FUNCTIONS.items():
        mod = importlib.import_module(module)
        obj = mod if owner is None else (mod.BOOSTERS[backend] if owner.startswith("BOOSTERS") else getattr(mod, owner))
        raw = obj.__dict__[name] if isinstance(obj, type) and name in obj.__dict__ else getattr(obj, name)
        func = raw.__func__ if isinstance(raw, classmethod) else raw

        def timed(*args, _func=func, _part=part, **kwargs):
            t0 = time.process_time()
            try:
                return _func(*args, **kwargs)
            finally:
                acc[_part] += time.process_time() - t0

        timed = functools.wraps(func)(timed)
        setattr(obj, name, classmethod(timed) if isinstance(raw, classmethod) else timed)
    return acc


def derived_parts(parts, train_s, solution_s):
    """The measured parts with the differences: ``setup`` (training outside the loop and the backend's start:
    validation, compiling, the player), ``loop_glue`` (the loop less trees, core pass and kept candidates:
    recording, the multipliers' step, Python), ``solution_refit`` (the solution less its first LP and
    rescoring: the exact re-fit's binning and LP, shrink and checks)."""
    out = dict(parts)
    out["setup"] = train_s - parts["loop"] - parts["backend_start"]
    out["loop_glue"] = parts["loop"] - parts["trees"] - parts["core_pass"] - parts["kept_candidates"]
    out["solution_refit"] = solution_s - parts["solution_first_lp"] - parts["solution_rescoring"]
    return out


def worker(system, backend, path, rounds, goal=GOAL):
    """One fit (and, for rateopt, its default solution) in this process: CPU seconds as one JSON line."""
    import gc
    import time
    import warnings

    import numpy as np

    X, y, g, col = _load(path)
    out = {"n_rows": int(X.shape[0])}
    parts = _time_parts(backend) if system != backend and os.environ.get("ROPT_BENCH_PARTS") == "1" else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if system == backend:
            _plain(backend, X[:2000], y[:2000], 3)
            gc.collect()
            t0 = time.process_time()
            _plain(backend, X, y, rounds)
            out["train_s"], out["solution_s"] = time.process_time() - t0, 0.0
        else:
            _rateopt(backend, X[:2000], y[:2000], g[:2000], col, 3, goal).solution()
            gc.collect()
            if parts is not None:
                parts.update(dict.fromkeys(parts, 0.0))
            t0 = time.process_time()
            result = _rateopt(backend, X, y, g, col, rounds, goal)
            t1 = time.process_time()
            clf = result.solution()
            t2 = time.process_time()
            out["train_s"], out["solution_s"] = t1 - t0, t2 - t1
            if parts is not None:
                out["parts"] = derived_parts(parts, out["train_s"], out["solution_s"])
            out["solution"] = type(clf).__name__
            p = np.ascontiguousarray(clf.predict_proba(X)[:, 1])
            out["proba_sha1"] = hashlib.sha1(p.tobytes()).hexdigest()
    out["total_s"] = out["train_s"] + out["solution_s"]
    print(json.dumps(out))


def _run_worker(system, backend, path, rounds, baseline, goal=GOAL, parts=False):
    env = dict(os.environ)
    env["ROPT_BENCH_PARTS"] = "1" if parts else "0"
    src = baseline if system == "rateopt-baseline" else str(HERE.parent / "python")
    env["PYTHONPATH"] = os.pathsep.join([src, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["OMP_NUM_THREADS"] = "1"
    out = subprocess.run([sys.executable, __file__, "--worker", system, backend, str(path), str(rounds), goal],
                         env=env, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def summarize(runs, backends, systems, goals=(GOAL,)):
    """Per (goal, backend, system): median CPU seconds of training, solution and both; median ratios to the plain
    fit."""
    summary = []
    for goal in goals:
        for backend in backends:
            summary += _summarize_cell([r for r in runs if r["backend"] == backend and r.get("goal", GOAL) == goal],
                                       goal, backend, systems)
    return summary


def _summarize_cell(cell, goal, backend, systems):
    import numpy as np

    summary = []
    if cell:
        plain = {r["repeat"]: r["train_s"] for r in cell if r["system"] == backend}
        for system in [backend] + systems:
            rs = [r for r in cell if r["system"] == system]
            summary.append({
                "goal": goal, "backend": backend, "system": system,
                **{f"{k}_median": float(np.median([r[k] for r in rs])) for k in ("train_s", "solution_s", "total_s")},
                "train_ratio_median": float(np.median([r["train_s"] / plain[r["repeat"]] for r in rs])),
                "total_ratio_median": float(np.median([r["total_s"] / plain[r["repeat"]] for r in rs])),
                "proba_sha1": sorted({r.get("proba_sha1", "") for r in rs}),
                **({"parts_median": {k: float(np.median([r["parts"][k] for r in rs])) for k in rs[0]["parts"]},
                    "plain_s_median": float(np.median(list(plain.values())))}
                   if rs and all("parts" in r for r in rs) else {})})
    return summary


def _part_cell(seconds, plain):
    """A part's median CPU seconds and, in brackets, its share of the plain fit's."""
    return f"{seconds:.3f} ({seconds / plain:.0%})"


def markdown(result):
    """The results table of a run."""
    from _common import markdown_table

    lb, la = result["load_average_before"], result["load_average_after"]
    rows = [[s.get("goal", GOAL), s["backend"], s["system"], f"{s['train_s_median']:.3f}",
             f"{s['solution_s_median']:.3f}",
             f"{s['train_ratio_median']:.2f}", f"{s['total_ratio_median']:.2f}",
             ",".join(h[:8] for h in s["proba_sha1"] if h)] for s in result["summary"]]
    parts = [s for s in result["summary"] if "parts_median" in s]
    parts_md = ""
    if parts:
        names = list(parts[0]["parts_median"])
        parts_md = ("\n## Where the CPU goes (--parts)\n\nMedian CPU seconds of each part over the repeats, as a "
                    "share of the same cell's median plain fit in brackets; each part timed by a wrapper around "
                    "its function in the worker (`PART_FUNCTIONS`; setup, loop_glue and solution_refit are the "
                    "differences of `derived_parts`). The wrappers add a few microseconds a call.\n\n"
                    + markdown_table(["goal", "backend", "system", "plain s"] + names,
                                     [[s.get("goal", GOAL), s["backend"], s["system"], f"{s['plain_s_median']:.3f}"]
                                      + [_part_cell(s["parts_median"][k], s["plain_s_median"]) for k in names]
                                      for s in parts]) + "\n")
    return (f"# The cost of a boosted run's default solution (bench/boosting_solution_cost.py)\n\n"
            f"Adult (sex), {', '.join(result.get('goals', [GOAL]))} at slack {SLACK}, {result['rounds']} trees, {result['repeats']} interleaved repeats, "
            f"one thread, each fit in a fresh process; load average before {lb[0]:.2f}, after {la[0]:.2f} "
            f"(1-minute). Ratios: median over repeats of CPU / the same repeat's plain fit of the backend; "
            f"total = train + solution(). Target: total ratio <= 1.5. The last column hashes the solution's "
            f"predict_proba on the training rows (equal hashes: the same decisions).\n\n"
            + markdown_table(["goal", "backend", "system", "train CPU s", "solution() CPU s", "train / plain",
                              "(train + solution) / plain", "proba sha1"], rows) + "\n" + parts_md)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", nargs=5, metavar=("SYSTEM", "BACKEND", "DATA", "ROUNDS", "GOAL"),
                        help=argparse.SUPPRESS)
    parser.add_argument("--baseline", default=None,
                        help="the python/ folder of another rateopt checkout (compiled core in place)")
    parser.add_argument("--repeats", type=int, default=None, help="interleaved repeats (default 3, --quick 1)")
    parser.add_argument("--rounds", type=int, default=None, help="trees per fit (default 200, --quick 50)")
    parser.add_argument("--backends", default="lightgbm,xgboost")
    parser.add_argument("--parts", action="store_true",
                        help="also time the parts of each rateopt fit (trees, core pass, kept candidates, the "
                             "solution's LPs and rescoring; PART_FUNCTIONS) by wrappers in the worker")
    parser.add_argument("--goals", default=GOAL,
                        help="comma-separated subset of equal_opportunity, demographic_parity (default "
                             f"{GOAL})")
    from _common import add_common_args, emit_json_line, machine_info, results_paths, utc_now, write_results

    add_common_args(parser)
    args = parser.parse_args(argv)
    if args.worker:
        system, backend, path, rounds, goal = args.worker
        worker(system, backend, path, int(rounds), goal)
        return
    import importlib.util
    import tempfile

    rounds = args.rounds or (50 if args.quick else 200)
    repeats = args.repeats or (1 if args.quick else 3)
    backends = [b for b in args.backends.split(",") if importlib.util.find_spec(b) is not None]
    systems = ["rateopt"] + (["rateopt-baseline"] if args.baseline else [])
    tmp = tempfile.TemporaryDirectory()
    path = Path(tmp.name) / "adult-sex.npz"
    _save("adult-sex", path)
    load_before = os.getloadavg()
    goals = args.goals.split(",")
    runs = []
    for goal in goals:
        for backend in backends:
            for r in range(repeats):
                order = [backend] + systems
                order = order[r % len(order):] + order[: r % len(order)]
                for system in order:
                    out = _run_worker(system, backend, path, rounds, args.baseline, goal, args.parts)
                    runs.append({"goal": goal, "backend": backend, "repeat": r, "system": system, **out})
                    print(f"{goal} {backend} repeat {r} {system}: train {out['train_s']:.3f} s, solution "
                          f"{out['solution_s']:.3f} s", flush=True)
    load_after = os.getloadavg()
    tmp.cleanup()
    result = {"name": "boosting_solution_cost", "when": utc_now(), "quick": args.quick, "rounds": rounds,
              "repeats": repeats, "params": PARAMS, "slack": SLACK, "goals": goals, "baseline": args.baseline,
              "parts": args.parts,
              "load_average_before": load_before, "load_average_after": load_after,
              "summary": summarize(runs, backends, systems, goals), "runs": runs,
              "machine": machine_info(("numpy", "scipy", "lightgbm", "xgboost"))}
    md = markdown(result)
    json_path, md_path = results_paths("boosting_solution_cost", quick=args.quick, out=args.out)
    write_results(result, md, json_path, md_path)
    print(md)
    if args.json:
        emit_json_line({k: v for k, v in result.items() if k not in ("runs", "machine")})


if __name__ == "__main__":
    main()
