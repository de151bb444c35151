"""In-processing quality of the default solution: trivial-rule floor and longer-is-never-worse (issue 36).

For each problem, ``rateopt.train(problem, n_iter=T, random_state=0)`` at the
library's defaults (``proxy-swap``, m-stochastic solution) for T in
``--iters`` (250 / 1000 / 3000), scored on training and test rows by one plain
NumPy count (expected 0-1 error of ``predict_proba``; largest violation of the
problem's goals from ``Problem.evaluate`` of the expected decisions).

**before / after in one run.** The game's iterates do not depend on which
candidates the shrinking LP is given, so the earlier default solutions are
recomputed exactly from the same run with ``rateopt._solutions._shrink.shrink``:
"original" is the default before issue 36 (the LP over the iterates recorded at
``t % max(1, T // 100) == 0`` and the last one, without the trivial rules);
"before" is the default of git d742640 (every iterate recorded, the trivial
rules and the window averages of every 50 iterations among the candidates).
"after" is the library's m-stochastic solution now: the window averages'
folded per-group threshold rules are candidates too
(``rateopt._solutions._candidates``).

**References in the same run.** The best feasible constant classifier (errors
counted from the labels; feasibility from ``Problem.evaluate`` of the constant
decisions); scikit-learn's ``LogisticRegression()`` unconstrained; fairlearn's
``ExponentiatedGradient(LogisticRegression(), TruePositiveRateParity or
DemographicParity(difference_bound=0.05))`` on the FICO and tiny-cell problems
(fairlearn's constraints are the same ``|rate(g) - rate(all)| <= 0.05``), when
fairlearn is importable (``/work/venv-fl`` has 0.15.0; rateopt runs there with
``PYTHONPATH=python``). The problems are described in ``bench/_inproc_problems.py``;
COMPAS (equalized odds on race, 0.05) and, without ``--quick``, Adult
(equalized odds on sex) and Bank (demographic parity on the three age groups) come from
:mod:`rateopt.datasets` with their seeded ``split(0)``.

Targets (issue 36): FICO both goals, default (T = 250) training error within
0.005 of ExponentiatedGradient's and test error within 1 test SE; non-increasing
training error over T on FICO and tiny-cell; never worse than a feasible
constant classifier.

Usage::

    PYTHONPATH=python /work/venv-fl/bin/python bench/inprocessing_quality.py [--quick] [--json] [--out PATH]
        [--only fico_eo,fico_dp,tiny_eo,compas_eo,adult_eo,bank_dp] [--iters 250,1000,3000] [--cost R]

``--quick``: FICO with 5,000 simulated people per split, T in {250, 1000}, no
Adult or Bank; results go to ``inprocessing_quality_quick.*``.
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
import _common  # noqa: E402
import _inproc_problems as P  # noqa: E402

NAME = "inprocessing_quality"
FULL_KEYS = ("fico_eo", "fico_dp", "tiny_eo", "compas_eo", "adult_eo", "bank_dp")
QUICK_KEYS = ("fico_eo", "fico_dp", "tiny_eo", "compas_eo")
EG_KEYS = ("fico_eo", "fico_dp", "tiny_eo")


class Data:
    """Train and test rows of one problem, with the rateopt problems that score them."""

    def __init__(self, key, quick):
        import rateopt
        from rateopt import goals

        self.key = key
        if key in ("fico_eo", "fico_dp", "tiny_eo"):
            tr, te, self.goal, slack = P.problem_data(key, quick=quick)
            self.Xtr, self.ytr, self.gtr = tr.X, tr.y, tr.group
            self.Xte, self.yte, self.gte = te.X, te.y, te.group
            self.problems = {s: P.rateopt_problem(d, self.goal, slack) for s, d in (("train", tr), ("test", te))}
            return
        from rateopt import datasets as D

        loader, goal = {"compas_eo": (D.load_compas, lambda: goals.equalized_odds("race", slack=0.05)),
                        "adult_eo": (D.load_adult, lambda: goals.equalized_odds("sex", slack=0.05)),
                        "bank_dp": (D.load_bank, lambda: goals.demographic_parity("age", slack=0.05))}[key]
        b = loader()
        tr, _, te = b.split(0)
        self.goal = None
        self.Xtr, self.ytr, self.Xte, self.yte = b.X[tr], np.asarray(b.y[tr]), b.X[te], np.asarray(b.y[te])
        self.problems = {}
        for s, rows in (("train", tr), ("test", te)):
            ds = b.to_dataset(rows)
            self.problems[s] = rateopt.Problem(objective=rateopt.error_rate(ds.context()), constraints=[goal()],
                                               datasets=ds)

    def split(self, s):
        return (self.Xtr, self.ytr) if s == "train" else (self.Xte, self.yte)

    def score(self, p, s):
        """Expected error and largest violation of decisions with positive probability ``p``."""
        _, y = self.split(s)
        p = np.clip(np.asarray(p, dtype=float), 0.0, 1.0)  # fairlearn's pmf may leave [0, 1] by round-off
        ev = self.problems[s].evaluate(p, kind="probabilities")
        return float(np.mean(np.where(y == 1, 1.0 - p, p))), float(ev.max_violation)


def constant_floor(data):
    """Each constant rule's training error (from the labels) and violation; the best feasible one."""
    out = {}
    for c in (0, 1):
        err, viol = data.score(np.full(data.ytr.shape[0], float(c)), "train")
        out[f"always_{c}"] = {"train_err": err, "train_viol": viol,
                              "by_hand": float(np.mean(data.ytr != c))}
    feasible = [v["train_err"] for v in out.values() if v["train_viol"] <= 1e-9]
    out["best_feasible"] = min(feasible) if feasible else None
    return out


def former_solution(res, T, original=True):
    """An earlier default's m-stochastic mixture, recomputed from the same run.

    ``original``: the default before issue 36 (the LP over every ``max(1, T // 100)``-th iterate, no
    trivial rules); otherwise git d742640's (the trivial rules, the window averages and every iterate, no
    threshold rules).
    """
    from rateopt._predictors._linear import StochasticClassifier
    from rateopt._solutions._shrink import shrink

    k = res.n_trivial
    its = res.iterations[k:]
    if original:
        every = max(1, T // 100)
        keep = k + np.flatnonzero((its % every == 0) | (its == T - 1))
    else:
        keep = np.flatnonzero(res.iterations != -3)
    sh = shrink(res.objectives[keep], res.constraints[keep])
    s = sh.support
    return StochasticClassifier(res.weights[keep[s]], res.biases[keep[s]], sh.weights[s],
                                feature_map=res.feature_map), sh.objective


def run_rateopt(data, iters, log):
    import rateopt

    rows = []
    for T in iters:
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = rateopt.train(data.problems["train"], n_iter=T, random_state=0)
        fit_s = time.perf_counter() - t0
        row = {"n_iter": T, "fit_s": fit_s, "n_recorded": int(res.weights.shape[0] - res.n_trivial)}
        for name, clf in (("after", res.solution("m-stochastic")), ("before", former_solution(res, T, False)[0]),
                          ("original", former_solution(res, T)[0])):
            for s in ("train", "test"):
                X, _ = data.split(s)
                err, viol = data.score(clf.predict_proba(X)[:, 1], s)
                row[f"{name}_{s}_err"], row[f"{name}_{s}_viol"] = err, viol
        q = res.mixture("m-stochastic")
        row["after_trivial_weight"] = float(q[res.iterations == -1].sum())
        row["after_average_weight"] = float(q[res.iterations == -2].sum())
        row["after_rule_weight"] = float(q[res.iterations == -3].sum())
        row["n_rules"] = int(np.sum(res.iterations == -3))
        row["after_library_train_obj"] = float(res.solution_values("m-stochastic")[0])
        rows.append(row)
        log(f"  {data.key} T={T}: train err original {row['original_train_err']:.4f} before "
            f"{row['before_train_err']:.4f} after {row['after_train_err']:.4f} (viol {row['after_train_viol']:.4f}, "
            f"trivial weight {row['after_trivial_weight']:.3f}, average weight {row['after_average_weight']:.3f}, "
            f"rule weight {row['after_rule_weight']:.3f} of {row['n_rules']} rules); "
            f"{fit_s:.1f} s")
    return rows


def run_references(data, log):
    out = {}
    try:
        from sklearn.linear_model import LogisticRegression
    except ImportError:
        return out
    lr = LogisticRegression(max_iter=5000).fit(data.Xtr, data.ytr)
    out["logreg"] = {s: data.score(lr.predict(data.split(s)[0]).astype(float), s)[0] for s in ("train", "test")}
    if data.key not in EG_KEYS:
        return out
    try:
        from fairlearn.reductions import DemographicParity, ExponentiatedGradient, TruePositiveRateParity
    except ImportError:
        log("  fairlearn not importable: ExponentiatedGradient not run")
        return out
    cons = TruePositiveRateParity(difference_bound=0.05) if data.goal == "eo" else \
        DemographicParity(difference_bound=0.05)
    t0 = time.perf_counter()
    eg = ExponentiatedGradient(LogisticRegression(max_iter=5000), cons)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        eg.fit(data.Xtr, data.ytr, sensitive_features=data.gtr)
    out["eg_fit_s"] = time.perf_counter() - t0
    for s in ("train", "test"):
        X, _ = data.split(s)
        err, viol = data.score(eg._pmf_predict(X)[:, 1], s)
        out[f"eg_{s}_err"], out[f"eg_{s}_viol"] = err, viol
    log(f"  {data.key} ExponentiatedGradient: train {out['eg_train_err']:.4f} (viol {out['eg_train_viol']:.4f}),"
        f" test {out['eg_test_err']:.4f}")
    return out


def markdown(result):
    lines = [f"# In-processing quality (issue 36){' — quick' if result['quick'] else ''}", "",
             f"{result['date']}, git {result['git'].get('sha')}; load average at start "
             f"{result['load_start']}, at end {result['load_end']} (2 shared cores). "
             "Errors are expected 0-1 errors of the m-stochastic solution (original: the default before "
             "issue 36; before: git d742640's, every iterate, the trivial rules and the window averages; both "
             "recomputed from the same "
             "run; after: now, with the window averages' folded threshold rules). `viol`: largest training violation; "
             "`trivial w`, `average w`, `rule w`: the solution's weight on the trivial rules, the window averages "
             "and their threshold rules.", ""]
    head = ["problem", "T", "original train", "before train", "after train", "after viol", "trivial w", "average w", "rule w",
            "original test", "before test", "after test", "EG train", "EG test", "LR train", "best feasible constant",
            "test SE"]
    rows = []
    for key, p in result["problems"].items():
        ref, fl = p["references"], p["constant_floor"]
        for r in p["runs"]:
            se = np.sqrt(r["after_test_err"] * (1 - r["after_test_err"]) / p["n_test"])
            rows.append([key, r["n_iter"], f"{r['original_train_err']:.4f}", f"{r['before_train_err']:.4f}",
                         f"{r['after_train_err']:.4f}", f"{r['after_train_viol']:.4f}",
                         f"{r['after_trivial_weight']:.3f}", f"{r['after_average_weight']:.3f}",
                         f"{r.get('after_rule_weight', 0.0):.3f}",
                         f"{r['original_test_err']:.4f}", f"{r['before_test_err']:.4f}", f"{r['after_test_err']:.4f}",
                         f"{ref['eg_train_err']:.4f}" if "eg_train_err" in ref else "-",
                         f"{ref['eg_test_err']:.4f}" if "eg_test_err" in ref else "-",
                         f"{ref['logreg']['train']:.4f}" if "logreg" in ref else "-",
                         "-" if fl["best_feasible"] is None else f"{fl['best_feasible']:.4f}", f"{se:.4f}"])
    lines.append(_common.markdown_table(head, rows))
    costs = [(key, c) for key, p in result["problems"].items() for c in p.get("cost", [])]
    if costs:
        lines += ["", "## Cost of the threshold-rule candidates", "",
                  _common.markdown_table(["problem", "T", "without s", "with s", "ratio", "repeats", "load"],
                                         [[k, c["n_iter"], f"{c['without']:.3f}", f"{c['with']:.3f}",
                                           f"{c['ratio']:.2f}", c["repeats"], f"{c['load']:.1f}"] for k, c in costs])]
    lines += ["", "## Targets", ""]
    for t in result["targets"]:
        lines.append(f"- {t['target']}: **{'met' if t['met'] else 'MISSED'}** ({t['detail']})")
    return "\n".join(lines)


def targets(result):
    out = []
    for key, p in result["problems"].items():
        runs, ref, fl = p["runs"], p["references"], p["constant_floor"]
        errs = [r["after_train_err"] for r in runs]
        if key in ("fico_eo", "fico_dp", "tiny_eo") and len(runs) > 1:
            ok = all(b <= a + 1e-9 for a, b in zip(errs, errs[1:]))
            out.append({"target": f"{key}: non-increasing training error over T", "met": ok,
                        "detail": " -> ".join(f"{e:.4f}" for e in errs)})
        if fl["best_feasible"] is not None:
            worst = max(r["after_train_err"] - fl["best_feasible"] for r in runs)
            out.append({"target": f"{key}: never worse than a feasible constant", "met": worst <= 1e-9,
                        "detail": f"largest excess {worst:+.4f}"})
        if key.startswith("fico") and "eg_train_err" in ref:
            d = runs[0]
            gap = d["after_train_err"] - ref["eg_train_err"]
            se = np.sqrt(ref["eg_test_err"] * (1 - ref["eg_test_err"]) / p["n_test"])
            tgap = d["after_test_err"] - ref["eg_test_err"]
            out.append({"target": f"{key}: default train error within 0.005 of EG", "met": gap <= 0.005,
                        "detail": f"{d['after_train_err']:.4f} vs {ref['eg_train_err']:.4f} (gap {gap:+.4f})"})
            out.append({"target": f"{key}: default test error within 1 test SE of EG", "met": tgap <= se,
                        "detail": f"{d['after_test_err']:.4f} vs {ref['eg_test_err']:.4f} (gap {tgap:+.4f}, "
                                  f"SE {se:.4f})"})
    return out


def rule_cost(data, T, repeats, log):
    """Seconds of a default fit plus its m-stochastic solution, with and without the threshold-rule candidates.

    Interleaved repeats in one process; the rules are switched off by replacing the driver's
    ``_rules_apply`` (what decides whether a run gets them) for the "without" fits. Medians and their ratio.
    """
    import rateopt
    import rateopt._train as driver

    on = driver._rules_apply
    times = {"with": [], "without": []}
    try:
        for _ in range(repeats):
            for kind in ("without", "with"):
                driver._rules_apply = on if kind == "with" else (lambda *a: False)
                t0 = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    res = rateopt.train(data.problems["train"], n_iter=T, random_state=0)
                res.solution("m-stochastic")
                times[kind].append(time.perf_counter() - t0)
    finally:
        driver._rules_apply = on
    out = {k: float(np.median(v)) for k, v in times.items()}
    out["ratio"] = out["with"] / out["without"]
    out["n_iter"], out["repeats"], out["load"] = T, repeats, os.getloadavg()[0]
    log(f"  {data.key} T={T}: fit + solution {out['without']:.3f} s without the threshold rules, {out['with']:.3f} s "
        f"with (ratio {out['ratio']:.2f}, median of {repeats})")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    _common.add_common_args(ap)
    ap.add_argument("--only", default=None, help="comma-separated problem keys")
    ap.add_argument("--iters", default=None, help="comma-separated n_iter values")
    ap.add_argument("--cost", type=int, default=0, metavar="R",
                    help="also time R interleaved default fits with and without the threshold-rule candidates "
                         "(at each T of --iters)")
    args = ap.parse_args(argv)
    keys = args.only.split(",") if args.only else (QUICK_KEYS if args.quick else FULL_KEYS)
    iters = [int(t) for t in args.iters.split(",")] if args.iters else ([250, 1000] if args.quick
                                                                         else [250, 1000, 3000])
    log = (lambda m: print(m, file=sys.stderr, flush=True)) if args.json else (lambda m: print(m, flush=True))
    result = {"name": NAME, "quick": args.quick, "date": _common.utc_now(), "git": _common.git_sha(),
              "machine": _common.machine_info(("numpy", "scipy", "sklearn")), "iters": iters,
              "load_start": os.getloadavg()[0], "problems": {}}
    for key in keys:
        data = Data(key, args.quick)
        log(f"{key}: {data.Xtr.shape[0]} train / {data.Xte.shape[0]} test rows")
        p = {"n_train": int(data.Xtr.shape[0]), "n_test": int(data.Xte.shape[0]),
             "constant_floor": constant_floor(data), "references": run_references(data, log),
             "runs": run_rateopt(data, iters if key in EG_KEYS else iters[:1], log)}
        if args.cost:
            p["cost"] = [rule_cost(data, T, args.cost, log) for T in (iters if key in EG_KEYS else iters[:1])]
        result["problems"][key] = p
    result["load_end"] = os.getloadavg()[0]
    result["targets"] = targets(result)
    md = markdown(result)
    json_path, md_path = _common.results_paths(NAME, quick=args.quick, out=args.out)
    _common.write_results(result, md, json_path, md_path)
    if not args.json:
        print(md)
    else:
        _common.emit_json_line(result)


if __name__ == "__main__":
    main()
