"""The boosted default solution's exact re-fit: column generation against HiGHS on the whole LP, per cell.

For each cell of ``bench/boosting_cost.py`` (Adult and, when the ``nannyml`` wheel's files are installed,
ACSEmployment-MA; equal opportunity and demographic parity at slack 0.02; LightGBM and XGBoost; 200 trees),
the run's default ``solution()`` is computed, and its exact re-fit's LP is solved twice: by column
generation (``_postprocess._lp.solve_threshold_lp_generated``, what the solution uses) and by HiGHS on the
whole increment-form LP (``solve_threshold_lp``, the form before). Recorded: the LP's bins, both
objectives and slacks, whether the tables are equal (another optimal vertex when not), both CPU times,
and the solution's rows recounted with NumPy: the largest gap of a group's rate (positive rate for
demographic parity, true positive rate for equal opportunity) to the overall one, against the slack,
and the training error against the objective.

Run: ``python bench/boosting_refit_lp.py [--quick] [--json]`` (``--quick``: Adult only, 50 trees; results
in ``bench/results/boosting_refit_lp.{md,json}``, ``boosting_refit_lp_quick.*`` with ``--quick``).
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from boosting_cost import SLACK, _data, _fit, _solution_hash


def cell(dataset, goal, backend, rounds):
    """One cell's re-fit LP, both ways, and its solution's recount."""
    from rateopt._postprocess import _lp, _mixture

    solved = []
    generated = _lp.solve_threshold_lp_generated

    def both(compiled, chains, epsilon=0.0):
        t = time.process_time()
        gen = generated(compiled, chains, epsilon=epsilon)
        t_gen = time.process_time() - t
        t = time.process_time()
        full = _lp.solve_threshold_lp(compiled, chains, epsilon=epsilon)
        t_full = time.process_time() - t
        solved.append({"bins": int(chains.n_vars), "objective_full": full.objective, "objective_generated":
                       gen.objective, "slack_full": full.slack, "slack_generated": gen.slack,
                       "same_tables": bool(np.array_equal(full.x, gen.x) and np.array_equal(full.mu, gen.mu)),
                       "cpu_full_s": t_full, "cpu_generated_s": t_gen})
        return gen

    X, y, g, col = _data(dataset)
    _mixture.solve_threshold_lp_generated = both
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            solution = _fit(f"rateopt-{backend}", X, y, g, col, goal, rounds).solution()
    finally:
        _mixture.solve_threshold_lp_generated = generated
    p = solution.predict_proba(X)[:, 1]
    pos = np.asarray(y) == 1
    rows = (lambda k: g == k) if goal == "demographic_parity" else (lambda k: (g == k) & pos)
    every = np.ones_like(pos) if goal == "demographic_parity" else pos
    gap = max(abs(p[rows(k)].mean() - p[every].mean()) for k in np.unique(g))
    error = float(np.mean(np.where(pos, 1 - p, p)))
    return {"dataset": dataset, "goal": goal, "backend": backend, "lps": solved, "largest_gap": float(gap),
            "slack": SLACK, "training_error": error, "solution_hash": _solution_hash(solution, X)}


def markdown(result):
    lines = ["# The boosted exact re-fit: column generation against HiGHS on the whole LP "
             "(bench/boosting_refit_lp.py)", "",
             f"{result['rounds']} trees; the default solution's exact re-fit LP solved by column generation and by "
             "HiGHS on the whole increment form. Largest gap: the solution's rows recounted with NumPy (a group's "
             f"rate less the overall one), against the slack {SLACK}; training error: the recount's, against the "
             "LP objective.", "",
             "| dataset | goal | backend | bins | objective, whole LP | column generation | difference | "
             "same tables | CPU s whole / generated | largest gap | training error | solution hash |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in result["cells"]:
        for lp in c["lps"]:
            lines.append(f"| {c['dataset']} | {c['goal']} | {c['backend']} | {lp['bins']} | "
                         f"{lp['objective_full']:.15f} | {lp['objective_generated']:.15f} | "
                         f"{lp['objective_generated'] - lp['objective_full']:.1e} | {lp['same_tables']} | "
                         f"{lp['cpu_full_s']:.3f} / {lp['cpu_generated_s']:.3f} | {c['largest_gap']:.12f} | "
                         f"{c['training_error']:.15f} | {c['solution_hash']} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    from _common import add_common_args, emit_json_line, machine_info, results_paths, utc_now, write_results

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_args(parser)
    parser.add_argument("--datasets", default=None, help="comma-separated subset of adult-sex, acs-race")
    args = parser.parse_args(argv)
    datasets = args.datasets.split(",") if args.datasets else (["adult-sex"] if args.quick else
                                                              ["adult-sex", "acs-race"])
    rounds = 50 if args.quick else 200
    cells = []
    for dataset in datasets:
        for goal in ("equal_opportunity", "demographic_parity"):
            for backend in ("lightgbm", "xgboost"):
                cells.append(cell(dataset, goal, backend, rounds))
                print(cells[-1], flush=True)
    result = {"name": "boosting_refit_lp", "when": utc_now(), "quick": args.quick, "rounds": rounds,
              "machine": machine_info(), "cells": cells}
    json_path, md_path = results_paths("boosting_refit_lp", quick=args.quick, out=args.out)
    write_results(result, markdown(result), json_path, md_path)
    if args.json:
        emit_json_line(result)


if __name__ == "__main__":
    main()
