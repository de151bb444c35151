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

    PYTHONPATH=python python bench/assess_coverage.py [--quick] [--json]

``--quick``: 200 replicates and 300 bootstrap resamples (1,000 and 1,000 in
full).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from _common import add_common_args, emit_json_line, machine_info, markdown_table, results_paths, utc_now, \
    write_results

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


def _boot_run(reps, n_boot, rng):
    import rateopt as ro

    cells, pis, tprs, fprs, sizes = [], [], [], [], []
    for s, (pi, tpr, fpr) in enumerate(BOOT_SETTINGS):
        for n in BOOT_SIZES:
            cells.append(f"pi={pi},tpr={tpr},fpr={fpr},n={n}")
            pis.append(pi), tprs.append(tpr), fprs.append(fpr), sizes.append(n)
    sizes = np.array(sizes)
    g = np.repeat(np.arange(len(cells)), sizes)
    pi_r, tpr_r, fpr_r = (np.repeat(np.array(v), sizes) for v in (pis, tprs, fprs))
    truths = [_truths(pi, t, f) for pi, t, f in zip(pis, tprs, fprs)]
    metrics = {"accuracy": accuracy, "balanced_accuracy": balanced_accuracy, "f1": f1}
    covered = {m: np.zeros(len(cells)) for m in metrics}
    for _ in range(reps):
        y = (rng.random(g.size) < pi_r).astype(int)
        p = np.where(y == 1, rng.random(g.size) < tpr_r, rng.random(g.size) < fpr_r).astype(int)
        res = ro.assess(y, p, g, metrics=metrics, n_boot=n_boot, random_state=int(rng.integers(2**31)))
        for m in metrics:
            t = np.array([tr[m] for tr in truths])
            covered[m] += (res.lower[m].to_numpy() <= t) & (t <= res.upper[m].to_numpy())
    out = {}
    for i, c in enumerate(cells):
        for m in metrics:
            out[f"{c},{m}"] = {"n": int(sizes[i]), "metric": m, "truth": truths[i][m],
                               "coverage": float(covered[m][i] / reps)}
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_args(parser)
    args = parser.parse_args(argv)
    reps = 200 if args.quick else 1000
    n_boot = 300 if args.quick else 1000
    rng = np.random.default_rng(20261127)
    se_cp = float(np.sqrt(0.95 * 0.05 / reps))
    se_bt = float(np.sqrt(0.93 * 0.07 / reps))
    studies, seconds = {}, {}
    for kind in ("cp_exact", "cp_weighted", "cp_expected"):
        t = time.perf_counter()
        studies[kind] = _cp_run(kind, reps, rng)
        seconds[kind] = time.perf_counter() - t
    t = time.perf_counter()
    studies["cp_simultaneous"] = _cp_simultaneous(reps, rng)
    seconds["cp_simultaneous"] = time.perf_counter() - t
    t = time.perf_counter()
    studies["bootstrap"] = _boot_run(reps, n_boot, rng)
    seconds["bootstrap"] = time.perf_counter() - t
    bound_cp, bound_bt = 0.95 - 3 * se_cp, 0.93 - 3 * se_bt
    summary = {}
    for kind, cells in studies.items():
        cov = [v["coverage"] for v in cells.values()]
        bound = bound_bt if kind == "bootstrap" else bound_cp
        worst = min(cells, key=lambda k: cells[k]["coverage"])
        summary[kind] = {"min_coverage": min(cov), "worst_cell": worst, "median_coverage": float(np.median(cov)),
                         "bound": bound, "met_within_3se": bool(min(cov) >= bound),
                         "cells_below_nominal": int(sum(c < (0.93 if kind == "bootstrap" else 0.95) for c in cov)),
                         "cells": len(cov), "seconds": seconds[kind]}
    result = {"benchmark": "assess_coverage", "date": utc_now(), "quick": args.quick, "replicates": reps,
              "n_boot": n_boot, "mc_se_at_0.95": se_cp, "mc_se_at_0.93": se_bt, "machine": machine_info(),
              "summary": summary, "studies": studies}
    rows = [[k, s["cells"], f"{s['min_coverage']:.3f}", s["worst_cell"], f"{s['median_coverage']:.3f}",
             f"{s['bound']:.3f}", "met" if s["met_within_3se"] else "MISSED", s["cells_below_nominal"],
             f"{s['seconds']:.0f}"] for k, s in summary.items()]
    detail = [[k, c, v.get("n"), f"{v['coverage']:.3f}"] for k, cells in studies.items() for c, v in cells.items()]
    md = ["# rateopt.assess: interval coverage with known rates", "",
          f"{utc_now()}; {reps} replicates, {n_boot} bootstrap resamples; 95% intervals; "
          f"`PYTHONPATH=python python bench/assess_coverage.py{' --quick' if args.quick else ''} --json` "
          "(shared 2-core machine; times indicative).", "",
          f"Bounds: Clopper–Pearson 0.95 - 3 SE = {bound_cp:.3f}; bootstrap (cells >= 100 rows) "
          f"0.93 - 3 SE = {bound_bt:.3f}.", "",
          markdown_table(["study", "cells", "min coverage", "worst cell", "median", "bound", "target",
                          "cells below nominal", "s"], rows), "",
          "## Every cell", "", markdown_table(["study", "cell", "n", "coverage"], detail)]
    json_path, md_path = results_paths("assess_coverage", quick=args.quick, out=args.out)
    write_results(result, "\n".join(md), json_path, md_path)
    print("\n".join(md[:9]))
    if args.json:
        emit_json_line(result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
