"""Coverage of ``rateopt.assess``'s intervals in a simulation with known rates.

Each replicate draws fresh data from a known distribution, calls
``rateopt.assess`` once (95% intervals), and records, for every cell and
metric, whether the interval holds the true value. Coverage is the share of
replicates that do; its Monte-Carlo standard error is ``sqrt(c (1 - c) / R)``
at the nominal level ``c``.

Clopper–Pearson (rates; metric ``selection_rate``, ``y=None``): 20 cells,
every combination of size 10, 30, 100, 400 and rate 0.02, 0.1, 0.3, 0.5, 0.9,

* ``cp_exact``: 0/1 decisions, unit weights (the exact interval);
* ``cp_weighted``: 0/1 decisions, weights Gamma(2, 1) independent of them
  (the effective-count rule);
* ``cp_expected``: expected decisions ``p_i ~ Beta(2 r / (1 - r), 2)`` of mean
  ``r`` (the expected rate of a stochastic classifier; the truth is ``r``);
* ``cp_simultaneous``: four cells of 100 rows (rates 0.1, 0.3, 0.5, 0.7),
  ``simultaneous=True``: the share of replicates where all four hold.

Target: coverage >= 0.95 - 3 SE in every cell (the test asks it of
``cp_exact``; the others are reported against the same bound).

Bootstrap (metrics given as callables, so resampled): labels
``y ~ Bernoulli(pi)``, decisions with known TPR and FPR, cells of 100 and 400
rows for two settings, ``(pi, tpr, fpr) = (0.3, 0.8, 0.15)`` and
``(0.1, 0.6, 0.05)``; metrics accuracy ``pi tpr + (1 - pi)(1 - fpr)``, balanced
accuracy ``(tpr + 1 - fpr) / 2`` and F1 ``2 pi tpr / (pi + pi tpr + (1 - pi)
fpr)`` (the population values). Target: coverage >= 0.93 for cells of >= 100
rows (reported with the 3-SE allowance, ``0.93 - 3 sqrt(0.93 * 0.07 / R)``, and
strictly).

    PYTHONPATH=python python bench/assess_coverage.py [--quick] [--json] [--only STUDY] [--jobs N]

``--quick``: 200 replicates and 300 bootstrap resamples (1,000 and 1,000 in
full). ``--only clopper-pearson|bootstrap`` runs one family of studies; the
others are then kept from the results file's previous run (with their own
date). ``--jobs N`` spreads the bootstrap study's replicates over ``N``
processes; replicate ``r`` draws from ``default_rng([20261127, r])`` whatever
``N``, so the result does not depend on it.

The bootstrap intervals are Hesterberg's (2015) expanded percentile intervals.
The paired baseline, the plain percentile interval on the same replicates and
resamples (``bench/results/assess_coverage_plain_percentile.md``), is this
script run against the library before the expansion (commit 7bd24fe)::

    git archive 7bd24fe python | tar -x -C DIR && cp python/rateopt/_core*.so DIR/python/rateopt/
    cd bench && PYTHONPATH=DIR/python python assess_coverage.py --only bootstrap --jobs 2 \
        --out results/assess_coverage_plain_percentile.json --json
"""

from __future__ import annotations

import argparse
import json
import pathlib
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from _common import REPO_ROOT, add_common_args, emit_json_line, machine_info, markdown_table, results_paths, \
    utc_now, write_results

SIZES = (10, 30, 100, 400)
RATES = (0.02, 0.1, 0.3, 0.5, 0.9)
BOOT_SETTINGS = ((0.3, 0.8, 0.15), (0.1, 0.6, 0.05))
BOOT_SIZES = (100, 400)


def accuracy(y, p):
    """Accuracy of 0/1 decisions."""
    return float(np.mean(y == p))


def balanced_accuracy(y, p):
    """(TPR + TNR) / 2."""
    pos = y == 1
    if pos.all() or not pos.any():
        return float("nan")
    return 0.5 * (float(np.mean(p[pos] == 1)) + float(np.mean(p[~pos] == 0)))


def f1(y, p):
    """2 TP / (2 TP + FP + FN)."""
    tp = float(np.sum((y == 1) & (p == 1)))
    den = 2 * tp + float(np.sum((y == 0) & (p == 1))) + float(np.sum((y == 1) & (p == 0)))
    return 2 * tp / den if den else float("nan")


def _cp_cells():
    labels, sizes, rates = [], [], []
    for n in SIZES:
        for r in RATES:
            labels.append(f"n={n},r={r}")
            sizes.append(n)
            rates.append(r)
    return labels, np.array(sizes), np.array(rates)


def _cp_run(kind, reps, rng):
    import rateopt as ro

    labels, sizes, rates = _cp_cells()
    g = np.repeat(np.arange(len(labels)), sizes)
    truth = np.repeat(rates, sizes)
    covered = np.zeros(len(labels))
    for _ in range(reps):
        w = None
        if kind == "cp_expected":
            a = 2 * truth / (1 - truth)
            p = rng.beta(a, 2.0)
        else:
            p = (rng.random(truth.size) < truth).astype(float)
        if kind == "cp_weighted":
            w = rng.gamma(2.0, 1.0, truth.size)
        res = ro.assess(None, p, g, metrics="selection_rate", sample_weight=w)
        lo, hi = res.lower["selection_rate"].to_numpy(), res.upper["selection_rate"].to_numpy()
        covered += (lo <= rates) & (rates <= hi)
    return {lab: {"n": int(n), "rate": float(r), "coverage": float(c / reps)}
            for lab, n, r, c in zip(labels, sizes, rates, covered)}


def _cp_simultaneous(reps, rng):
    import rateopt as ro

    rates = np.array([0.1, 0.3, 0.5, 0.7])
    g = np.repeat(np.arange(4), 100)
    truth = np.repeat(rates, 100)
    all_hold = marginal = 0.0
    for _ in range(reps):
        p = (rng.random(truth.size) < truth).astype(float)
        res = ro.assess(None, p, g, metrics="selection_rate", simultaneous=True)
        ok = (res.lower["selection_rate"].to_numpy() <= rates) & (rates <= res.upper["selection_rate"].to_numpy())
        all_hold += ok.all()
        marginal += ok.mean()
    return {"all four": {"n": 100, "rate": "0.1/0.3/0.5/0.7", "coverage": all_hold / reps,
                         "mean_marginal_coverage": marginal / reps}}


def _truths(pi, tpr, fpr):
    return {"accuracy": pi * tpr + (1 - pi) * (1 - fpr), "balanced_accuracy": (tpr + 1 - fpr) / 2,
            "f1": 2 * pi * tpr / (pi + pi * tpr + (1 - pi) * fpr)}


def _boot_cells():
    cells, pis, tprs, fprs, sizes = [], [], [], [], []
    for s, (pi, tpr, fpr) in enumerate(BOOT_SETTINGS):
        for n in BOOT_SIZES:
            cells.append(f"pi={pi},tpr={tpr},fpr={fpr},n={n}")
            pis.append(pi), tprs.append(tpr), fprs.append(fpr), sizes.append(n)
    sizes = np.array(sizes)
    g = np.repeat(np.arange(len(cells)), sizes)
    pi_r, tpr_r, fpr_r = (np.repeat(np.array(v), sizes) for v in (pis, tprs, fprs))
    truths = [_truths(pi, t, f) for pi, t, f in zip(pis, tprs, fprs)]
    return cells, sizes, g, pi_r, tpr_r, fpr_r, truths


METRICS = {"accuracy": accuracy, "balanced_accuracy": balanced_accuracy, "f1": f1}


def _boot_replicates(first, last, n_boot):
    """Coverage counts of replicates ``first .. last - 1`` (replicate r draws from default_rng([20261127, r]))."""
    import rateopt as ro

    cells, sizes, g, pi_r, tpr_r, fpr_r, truths = _boot_cells()
    covered = {m: np.zeros(len(cells)) for m in METRICS}
    for r in range(first, last):
        rng = np.random.default_rng([20261127, r])
        y = (rng.random(g.size) < pi_r).astype(int)
        p = np.where(y == 1, rng.random(g.size) < tpr_r, rng.random(g.size) < fpr_r).astype(int)
        res = ro.assess(y, p, g, metrics=METRICS, n_boot=n_boot, random_state=int(rng.integers(2**31)))
        for m in METRICS:
            t = np.array([tr[m] for tr in truths])
            covered[m] += (res.lower[m].to_numpy() <= t) & (t <= res.upper[m].to_numpy())
    return covered


def _boot_run(reps, n_boot, jobs):
    cells, sizes, _, _, _, _, truths = _boot_cells()
    bounds = np.linspace(0, reps, max(1, jobs) + 1).astype(int)
    if jobs > 1:
        with ProcessPoolExecutor(jobs) as pool:
            parts = list(pool.map(_boot_replicates, bounds[:-1], bounds[1:], [n_boot] * jobs))
    else:
        parts = [_boot_replicates(0, reps, n_boot)]
    covered = {m: sum(part[m] for part in parts) for m in METRICS}
    out = {}
    for i, c in enumerate(cells):
        for m in METRICS:
            out[f"{c},{m}"] = {"n": int(sizes[i]), "metric": m, "truth": truths[i][m],
                               "coverage": float(covered[m][i] / reps)}
    return out


def _bootstrap_method():
    """The bootstrap interval of the rateopt this runs (so a run against an older checkout says which it used)."""
    from rateopt._assess import _intervals

    if hasattr(_intervals, "expanded_alpha"):
        return "expanded percentile (Hesterberg, 2015)"
    return "plain percentile"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_args(parser)
    parser.add_argument("--only", choices=("clopper-pearson", "bootstrap"), default=None,
                        help="run one family of studies; keep the others from the results file's previous run")
    parser.add_argument("--jobs", type=int, default=1,
                        help="processes for the bootstrap study's replicates (default 1; the result does not "
                             "depend on it)")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs must be >= 1, got {args.jobs}")
    reps = 200 if args.quick else 1000
    n_boot = 300 if args.quick else 1000
    rng = np.random.default_rng(20261127)
    se_cp = float(np.sqrt(0.95 * 0.05 / reps))
    se_bt = float(np.sqrt(0.93 * 0.07 / reps))
    json_path, md_path = results_paths("assess_coverage", quick=args.quick, out=args.out)
    studies, seconds, dates = {}, {}, {}
    if args.only != "bootstrap":
        for kind in ("cp_exact", "cp_weighted", "cp_expected"):
            t = time.perf_counter()
            studies[kind] = _cp_run(kind, reps, rng)
            seconds[kind] = time.perf_counter() - t
        t = time.perf_counter()
        studies["cp_simultaneous"] = _cp_simultaneous(reps, rng)
        seconds["cp_simultaneous"] = time.perf_counter() - t
    if args.only != "clopper-pearson":
        t = time.perf_counter()
        studies["bootstrap"] = _boot_run(reps, n_boot, args.jobs)
        seconds["bootstrap"] = time.perf_counter() - t
    now = utc_now()
    dates = {kind: now for kind in studies}
    kept = {}
    if args.only is not None and json_path.exists():
        previous = json.loads(json_path.read_text(encoding="utf-8"))
        for kind, cells in previous.get("studies", {}).items():
            if kind not in studies and previous.get("replicates") == reps:
                kept[kind] = previous["summary"][kind]
                studies[kind] = cells
                seconds[kind] = kept[kind]["seconds"]
                dates[kind] = kept[kind].get("date", previous.get("date"))
    order = ("cp_exact", "cp_weighted", "cp_expected", "cp_simultaneous", "bootstrap")
    studies = {k: studies[k] for k in order if k in studies}
    bound_cp, bound_bt = 0.95 - 3 * se_cp, 0.93 - 3 * se_bt
    summary = {}
    for kind, cells in studies.items():
        cov = [v["coverage"] for v in cells.values()]
        bound = bound_bt if kind == "bootstrap" else bound_cp
        worst = min(cells, key=lambda k: cells[k]["coverage"])
        summary[kind] = {"min_coverage": min(cov), "worst_cell": worst, "median_coverage": float(np.median(cov)),
                         "bound": bound, "met_within_3se": bool(min(cov) >= bound),
                         "cells_below_nominal": int(sum(c < (0.93 if kind == "bootstrap" else 0.95) for c in cov)),
                         "cells": len(cov), "seconds": seconds[kind], "date": dates[kind]}
        if kind == "bootstrap":
            cov100 = [v["coverage"] for v in cells.values() if v["n"] == 100]
            summary[kind]["min_coverage_100_rows"] = min(cov100)
            summary[kind]["met_strictly"] = bool(min(cov) >= 0.93)
    import rateopt

    ro_dir = pathlib.Path(rateopt.__file__).resolve().parent
    ro_path = str(ro_dir.relative_to(REPO_ROOT) if ro_dir.is_relative_to(REPO_ROOT) else ro_dir)
    result = {"benchmark": "assess_coverage", "date": now, "quick": args.quick, "replicates": reps,
              "n_boot": n_boot, "only": args.only, "jobs": args.jobs, "studies_kept_from_previous_run": sorted(kept),
              "bootstrap_interval": _bootstrap_method(), "rateopt_path": ro_path,
              "mc_se_at_0.95": se_cp, "mc_se_at_0.93": se_bt, "machine": machine_info(),
              "summary": summary, "studies": studies}
    rows = [[k, s["cells"], f"{s['min_coverage']:.3f}", s["worst_cell"], f"{s['median_coverage']:.3f}",
             f"{s['bound']:.3f}", "met" if s["met_within_3se"] else "MISSED", s["cells_below_nominal"],
             f"{s['seconds']:.0f}", s["date"][:16]] for k, s in summary.items()]
    detail = [[k, c, v.get("n"), f"{v['coverage']:.3f}"] for k, cells in studies.items() for c, v in cells.items()]
    cmd = "PYTHONPATH=python python bench/assess_coverage.py" + (" --quick" if args.quick else "") + \
        (f" --only {args.only}" if args.only else "") + (f" --jobs {args.jobs}" if args.jobs > 1 else "") + " --json"
    kept_note = (f" Studies {', '.join(sorted(kept))} kept from the previous run (their date in the table)."
                 if kept else "")
    md = ["# rateopt.assess: interval coverage with known rates", "",
          f"{now}; {reps} replicates, {n_boot} bootstrap resamples; 95% intervals; bootstrap intervals: "
          f"{_bootstrap_method()} (rateopt from `{ro_path}`); `{cmd}` "
          f"(shared 2-core machine; times indicative).{kept_note}", "",
          f"Bounds: Clopper–Pearson 0.95 - 3 SE = {bound_cp:.3f}; bootstrap (cells >= 100 rows) "
          f"0.93 - 3 SE = {bound_bt:.3f}.", "",
          markdown_table(["study", "cells", "min coverage", "worst cell", "median", "bound", "target",
                          "cells below nominal", "s", "run (UTC)"], rows), "",
          "## Every cell", "", markdown_table(["study", "cell", "n", "coverage"], detail)]
    write_results(result, "\n".join(md), json_path, md_path)
    print("\n".join(md[:9]))
    if args.json:
        emit_json_line(result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
