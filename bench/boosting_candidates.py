"""Which prefixes a boosted run's thresholded solution needs: candidate rules compared on issue 33's problems.

A boosted run's default solution (``solution()``, "thresholded") re-fits a threshold rule for each of a few
candidate prefixes and mixes them by one LP on the training rows. Scoring the candidates on the training rows
is what it costs: one leaf pass over the longest candidate's trees (about 0.35x a plain fit at 200 trees,
bench/boosting_solution_cost.py), unless the candidates' training scores are kept while the trees are grown,
which is possible only for rounds known before training. This bench measures, on the problems of
bench/boosting_dynamics.py (Adult, Bank, ACS-60k; equal opportunity, equalized odds, demographic parity;
tolerances 0 to 0.05; a 70/30 split per seed; LightGBM), the thresholded solution of the *same run* under
several candidate rules:

* ``main32``: the rule before this change: the trivial rules, the empty ensemble, the m-stochastic support,
  the best and the last prefix, and evenly spaced prefixes up to 32 in all;
* ``evenK``: the trivial rules and the ``K + 1`` prefixes ``round(j T / K)``, ``j = 0..K`` (the empty
  ensemble and the last prefix included): rounds fixed before training;
* ``evenK+ms``: ``evenK`` with the m-stochastic support and the best prefix.

Reported per rule: the training error and the test error of the solution (expected, from
``predict_proba``), their mean and worst difference to ``main32`` over the runs, the largest training
violation, and the test disparity.

Run: ``python bench/boosting_candidates.py [--quick] [--json] [--seeds N] [--rounds T] [--datasets ...]``
(results ``bench/results/boosting_candidates.{md,json}``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import add_common_args, emit_json_line, markdown_table, results_paths, utc_now, write_results  # noqa: E402

import boosting as B  # noqa: E402  (the datasets, splits and measures of bench/boosting.py)
import rateopt  # noqa: E402
from rateopt._postprocess._mixture import fit_thresholded_mixture  # noqa: E402

TOLERANCES = (0.0, 0.01, 0.02, 0.05)


def main32(res):
    """The candidate prefixes (indices into ``res.models``) of the rule before this change."""
    T, k = len(res.models), res.n_trivial
    keep = set(range(k + 1)) | {T - 1, int(np.flatnonzero(res.mixture("best"))[0])}
    keep |= {int(t) for t in res.shrink(0.0).support}
    rest = np.array(sorted(set(range(k, T)) - keep), dtype=np.int64)
    room = min(32 - len(keep), rest.shape[0])
    if room > 0:
        keep |= set(rest[np.linspace(0, rest.shape[0] - 1, room).round().astype(np.int64)].tolist())
    return sorted(keep)


def even(res, K, with_support=False):
    """The trivial rules and the prefixes round(j T / K), j = 0..K (indices into ``res.models``)."""
    k = res.n_trivial
    n_trees = len(res.models) - k - 1
    keep = set(range(k)) | {k + int(r) for r in np.unique(np.round(np.linspace(0, n_trees, K + 1)))}
    if with_support:
        keep |= {int(np.flatnonzero(res.mixture("best"))[0])} | {int(t) for t in res.shrink(0.0).support}
    return sorted(keep)


def rules(Ks):
    """Rule name -> (candidate picker, n_bins of the first LP)."""
    out = {"main32": (main32, "auto"), "even8": (lambda res: even(res, 8), "auto")}
    for K in Ks:
        out[f"even{K}/b256"] = (lambda res, K=K: even(res, K), 256)
    out["even8+ms/b256"] = (lambda res: even(res, 8, True), 256)
    return out


def run(datasets, goals, tolerances, seeds, rounds, Ks):
    rows = []
    for seed in seeds:
        for name in datasets:
            X, y, g, col = B._data(name)
            tr, te = B._split(X.shape[0], seed, B.ACS_ROWS if name.startswith("acs") else None)
            Xtr, Xte, ytr, yte, gtr, gte = X[tr], X[te], y[tr], y[te], g[tr], g[te]
            for goal in goals:
                for tol in tolerances:
                    problem = rateopt.Problem(constraints=B._goal_constraints(goal, col, tol),
                                              datasets=rateopt.Dataset(Xtr, ytr, groups={col: gtr}))
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        res = rateopt.train(problem, rateopt.BoostingModel("lightgbm", n_rounds=rounds, **B.PARAMS),
                                            n_threads=1, random_state=seed)
                    scorer = res.iterates_scorer()
                    every = scorer.scores(Xtr)  # every prefix's training scores, once (each rule reads its columns)
                    for rule, (pick, n_bins) in rules(Ks).items():
                        keep = np.array(pick(res), dtype=np.int64)
                        t0 = time.process_time()
                        clf, _ = fit_thresholded_mixture(problem.compiled,
                                                         scorer.subset(keep, np.full(keep.shape[0], 1 / keep.shape[0])),
                                                         {"train": Xtr}, n_bins=n_bins, scores=every[:, keep].T)
                        cpu = time.process_time() - t0
                        p_tr, p_te = clf.predict_proba(Xtr)[:, 1], clf.predict_proba(Xte)[:, 1]
                        rows.append({"dataset": name, "goal": goal, "tol": tol, "seed": seed, "rounds": rounds,
                                     "rule": rule, "n_candidates": int(keep.shape[0]),
                                     "support": [int(res.models[i].n_trees) for i in keep[clf.support]],
                                     "train_err": float(np.mean(np.abs(p_tr - ytr))),
                                     "err": float(np.mean(np.abs(p_te - yte))),
                                     "disp": B.disparity(p_te, yte, gte, goal)[0],
                                     "viol": B.violation(p_tr, ytr, gtr, goal, tol), "solution_cpu": cpu})
            print(f"{name} seed {seed}: done, load {os.getloadavg()[0]:.1f}", flush=True)
    return rows


def summarize(rows):
    ref = {(r["dataset"], r["goal"], r["tol"], r["seed"]): r for r in rows if r["rule"] == "main32"}
    out = []
    for rule in dict.fromkeys(r["rule"] for r in rows):
        rs = [r for r in rows if r["rule"] == rule]
        d_tr = np.array([r["train_err"] - ref[(r["dataset"], r["goal"], r["tol"], r["seed"])]["train_err"] for r in rs])
        d_te = np.array([r["err"] - ref[(r["dataset"], r["goal"], r["tol"], r["seed"])]["err"] for r in rs])
        out.append({"rule": rule, "runs": len(rs), "mean_candidates": float(np.mean([r["n_candidates"] for r in rs])),
                    "mean_train_err": float(np.mean([r["train_err"] for r in rs])),
                    "mean_err": float(np.mean([r["err"] for r in rs])),
                    "mean_d_train": float(d_tr.mean()), "worst_d_train": float(d_tr.max()),
                    "mean_d_test": float(d_te.mean()), "worst_d_test": float(d_te.max()),
                    "test_worse_than_2pp": int(np.sum(d_te > 0.02)),
                    "max_train_violation": float(max(r["viol"] for r in rs)),
                    "median_solution_cpu": float(np.median([r["solution_cpu"] for r in rs]))})
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_args(parser)
    parser.add_argument("--datasets", default=None, help="comma-separated (default adult-sex,bank-age,acs-race)")
    parser.add_argument("--seeds", type=int, default=None, help="seeds 0..N-1 (default 2; --quick 1)")
    parser.add_argument("--rounds", type=int, default=None, help="trees (default 100; --quick 30)")
    parser.add_argument("--ks", default="4,8,16", help="the K of the evenK/b256 rules")
    parser.add_argument("--first-seed", type=int, default=0, help="seeds first..first+N-1")
    parser.add_argument("--report", nargs="+", type=Path, default=None,
                        help="only merge the rows of these results files into one report")
    args = parser.parse_args(argv)
    if args.report:
        import json

        rows = [r for f in args.report for r in json.loads(f.read_text(encoding="utf-8"))["rows"]]
        report(rows, args, os.getloadavg(), None)
        return
    datasets = args.datasets.split(",") if args.datasets else ["adult-sex"] if args.quick else [
        "adult-sex", "bank-age", "acs-race"]
    goals = ("equalized_odds",) if args.quick else B.GOALS
    tolerances = (0.0, 0.02) if args.quick else TOLERANCES
    seeds = list(range(args.first_seed, args.first_seed + (args.seeds or (1 if args.quick else 2))))
    rounds = args.rounds or (30 if args.quick else 100)
    Ks = [int(k) for k in args.ks.split(",")]
    load_before = os.getloadavg()
    rows = run(datasets, goals, tolerances, seeds, rounds, Ks)
    report(rows, args, load_before, os.getloadavg())


def report(rows, args, load_before, load_after):
    table = summarize(rows)
    datasets, seeds = sorted({r["dataset"] for r in rows}), sorted({r["seed"] for r in rows})
    goals, tolerances = sorted({r["goal"] for r in rows}), sorted({r["tol"] for r in rows})
    rounds = rows[0]["rounds"]
    loads = (f"load average before {load_before[0]:.1f}, after {load_after[0]:.1f}" if load_after is not None
             else "merged from several runs (their load averages: the machine had 10 to 15)")
    md = ("# Candidate prefixes of a boosted run's thresholded solution (bench/boosting_candidates.py)\n\n"
          f"LightGBM, {rounds} trees, the bench's tree parameters; datasets {datasets}, seeds {seeds}, goals "
          f"{list(goals)}, tolerances {list(tolerances)}. Each run trains once; each rule re-fits the thresholded "
          "solution of that run on its own candidates. d train / d test: the rule's training / test error minus "
          "main32's on the same run (positive: worse). /b256: the first LP over 256 quantile bins per prefix, "
          "then the exact re-fit of its support (main32's path: 32 prefixes x these rows exceed n_bins='auto''s "
          f"exact limit); without: every distinct score. Solution CPU: the re-fit alone, the rows' scores given; {loads}.\n\n"
          + markdown_table(
              ["rule", "runs", "candidates (mean)", "train error", "test error", "mean d train", "worst d train",
               "mean d test", "worst d test", "d test > 2 pp", "max train violation", "median solution CPU s"],
              [[t["rule"], t["runs"], f"{t['mean_candidates']:.1f}", f"{t['mean_train_err']:.4f}",
                f"{t['mean_err']:.4f}", f"{t['mean_d_train']:+.4f}", f"{t['worst_d_train']:+.4f}",
                f"{t['mean_d_test']:+.4f}", f"{t['worst_d_test']:+.4f}", t["test_worse_than_2pp"],
                f"{t['max_train_violation']:+.1e}", f"{t['median_solution_cpu']:.3f}"] for t in table]) + "\n")
    json_path, md_path = results_paths("boosting_candidates", quick=args.quick, out=args.out)
    write_results({"bench": "boosting-candidates", "date": utc_now(), "summary": table, "rows": rows}, md,
                  json_path, md_path)
    print(md)
    if args.json:
        emit_json_line({"bench": "boosting-candidates", "summary": table})


if __name__ == "__main__":
    main()
