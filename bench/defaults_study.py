"""The measurements behind rateopt's training defaults (issue 14, item 2).

For every configuration of a grid and every problem of a fixed set, one
``rateopt.train`` (method ``proxy-swap``, m-stochastic solution, seed 0) and
the solution's training error and largest training violation, validation
error and test error -- all from one plain-NumPy evaluation of the expected
decisions (:func:`_anchors.shared_evaluate` for the anchor problems,
``Problem.evaluate(kind="probabilities")`` on each split for the others).

Problems (the three anchor problems of ``bench/compare_anchors.py`` plus three
more, so the defaults are not chosen on the anchors alone):

``adult_tpr4``, ``adult_eo_sex``, ``census_dp``
    As in ``bench/compare_anchors.py`` (same data, split and constraints, from
    ``bench/_anchors.py``).
``compas_eo``
    COMPAS, equalized odds on race (White / Non-White), slack 0.05.
``law_dp``
    Law School, demographic parity between White and Black, slack 0.05.
``credit_dp``
    Credit default, demographic parity on sex, slack 0.02.

The grid varies what issue 14 asks to choose by measurement: the objective's
proxy (``hinge``, ``logistic``), where the swap-regret multipliers start
(``lambda_init``: the paper's uniform matrix or TFCO's objective-focused one),
the multipliers' step (``eta_lambda``: Lemma 8's default, written ``lemma8``,
or a multiple ``c`` of ``1 / B``, B the largest possible ``|g_i|``), the
model's Adam learning rate and the number of iterations.

Selection (no test data is used):

1. *Pre-registered rule*, written before the first run: a configuration
   *passes* a problem when its training violation is at most 1e-3; its
   *regret* there is its validation error minus the lowest validation error of
   any passing configuration; the pick passes every problem with the smallest
   worst-case regret (ties: the mean). Its pick on the main grid was the hinge
   objective proxy, which issue 14's unconstrained target rules out (the hinge
   objective trains 0.007-0.008 worse than LogisticRegression on Bank and Law:
   ``bench/unconstrained_quality.py``).
2. *Rule used*: the objective proxy is fixed to ``logistic`` by that target;
   among the logistic configurations, the smallest *mean training-error
   regret* over the problems (regret against the best logistic configuration
   on each problem). Training error, not validation error: at these sizes the
   validation splits (613 COMPAS rows: one row is 0.0016) make validation
   regrets mostly noise, while the defaults' job -- optimizing the constrained
   training problem to a tight, low-error mixture -- shows in training error.
   Both rankings are written to the results.

Usage::

    python bench/defaults_study.py [--quick] [--json] [--out PATH] [--only PROBLEMS] [--grid main|iters]

``--quick``: census subsampled as in ``compare_anchors --quick`` and a 4-point
grid. Results: ``bench/results/defaults_study[_quick].{json,md}``.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _anchors as anchors
import _common

NAME = "defaults_study"
FEASIBLE = 1e-3
ANCHOR_PROBLEMS = ("adult_tpr4", "adult_eo_sex", "census_dp")
EXTRA_PROBLEMS = ("compas_eo", "law_dp", "credit_dp")


def grid(kind: str, quick: bool) -> list[dict]:
    """The configurations (``eta`` is ``"lemma8"`` or a multiple of 1/B)."""
    if quick:
        return [{"proxy": p, "lambda_init": i, "eta": e, "learning_rate": 0.1, "n_iter": 300}
                for p, i, e in (("hinge", "uniform", "lemma8"), ("logistic", "uniform", "lemma8"),
                                ("logistic", "objective", 1.0), ("logistic", "objective", 3.0))]
    if kind == "iters":
        return [{"defaults": True}] + [
            {"proxy": "logistic", "lambda_init": "objective", "eta": 3.0, "learning_rate": lr, "n_iter": n,
             "stop_tol": tol}
            for n, tol in ((250, None), (500, None), (1000, None), (500, 1e-4), (1000, 1e-4)) for lr in (0.1, 0.2)]
    out = [{"proxy": p, "lambda_init": "uniform", "eta": e, "learning_rate": lr, "n_iter": 500}
           for p in ("hinge", "logistic") for e in ("lemma8", 1.0) for lr in (0.05, 0.1, 0.2)]
    out += [{"proxy": p, "lambda_init": "objective", "eta": e, "learning_rate": lr, "n_iter": 500}
            for p in ("hinge", "logistic") for e in (0.3, 1.0, 3.0, 10.0) for lr in (0.05, 0.1, 0.2)]
    return out


# --------------------------------------------------------------------------- problems


class AnchorProblem:
    """One of the anchor problems (``bench/_anchors.py``), scored by its shared evaluation."""

    def __init__(self, key, quick):
        data = anchors.load_data("census" if key == "census_dp" else "adult", quick=quick)
        groups = sorted(set(data.train.groups["race_sex"])) if key == "census_dp" else None
        self.key, self.data, self.spec = key, data, anchors.make_specs(groups)[key]

    def problem(self):
        import rateopt

        tr = self.data.train
        ds = rateopt.Dataset(tr.X, tr.y, groups=tr.groups)
        return rateopt.Problem(constraints=anchors.rateopt_goals(self.spec), datasets=ds)

    def score(self, clf):
        out = {}
        for name, s in (("train", self.data.train), ("val", self.data.val), ("test", self.data.test)):
            ev = anchors.shared_evaluate(clf.predict_proba(s.X)[:, 1], s.y, s.groups, self.spec)
            out[name] = (ev["error"], ev["max_violation"])
        return out


class BundleProblem:
    """A problem on a rateopt.datasets bundle, scored by Problem.evaluate on each split."""

    def __init__(self, key):
        from rateopt import datasets as D
        from rateopt import goals

        loader, goal = {
            "compas_eo": (D.load_compas, lambda: [goals.equalized_odds("race", slack=0.05)]),
            "law_dp": (D.load_law_school,
                       lambda: [goals.demographic_parity("race", slack=0.05, values=("White", "Black"))]),
            "credit_dp": (D.load_credit_default, lambda: [goals.demographic_parity("sex", slack=0.02)]),
        }[key]
        self.key, self.bundle, self.goals = key, loader(), goal
        self.idx = self.bundle.split(0)

    def _problem(self, rows):
        import rateopt

        ds = self.bundle.to_dataset(rows)
        return rateopt.Problem(objective=rateopt.error_rate(ds.context()), constraints=self.goals(), datasets=ds)

    def problem(self):
        return self._problem(self.idx[0])

    def score(self, clf):
        out = {}
        for name, rows in zip(("train", "val", "test"), self.idx):
            p = clf.predict_proba(self.bundle.X[rows])[:, 1]
            ev = self._problem(rows).evaluate(p, kind="probabilities")
            y = np.asarray(self.bundle.y[rows]).astype(bool)
            out[name] = (float(np.mean(np.where(y, 1.0 - p, p))), float(ev.max_violation))
        return out


def make_problem(key, quick):
    return AnchorProblem(key, quick) if key in ANCHOR_PROBLEMS else BundleProblem(key)


# --------------------------------------------------------------------------- runs


def run_one(prob, problem, cfg):
    import rateopt

    if cfg.get("defaults"):  # the library's defaults, nothing passed
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = rateopt.train(problem, random_state=0)
        return _scored(prob, result, time.perf_counter() - t0, float("nan"))
    params = {"proxy": cfg["proxy"], "lambda_init": cfg["lambda_init"], "learning_rate": cfg["learning_rate"],
              "n_iter": cfg["n_iter"], "random_state": 0, "method": "proxy-swap",
              "stop_tol": cfg.get("stop_tol")}
    from rateopt._train import _as_spec

    B = _as_spec(problem).for_players().constraint_bound()
    if cfg["eta"] == "lemma8":
        params["eta_lambda"] = None
        params["lambda_floor"] = 0.0
    else:
        params["eta_lambda"] = float(cfg["eta"]) / B
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = rateopt.train(problem, **params)
    return _scored(prob, result, time.perf_counter() - t0, B)


def _scored(prob, result, fit_s, B):
    clf = result.solution("m-stochastic")
    sc = prob.score(clf)
    return {"train_err": sc["train"][0], "train_viol": sc["train"][1], "val_err": sc["val"][0],
            "val_viol": sc["val"][1], "test_err": sc["test"][0], "test_viol": sc["test"][1], "fit_s": fit_s,
            "n_models": int(clf.n_models), "B": B, "iterations_run": int(result.n_iter)}


def cfg_key(cfg):
    if cfg.get("defaults"):
        return "library defaults"
    stop = f"/stop={cfg['stop_tol']:g}" if cfg.get("stop_tol") else ""
    return f"{cfg['proxy']}/{cfg['lambda_init']}/eta={cfg['eta']}/lr={cfg['learning_rate']}/T={cfg['n_iter']}{stop}"


def _regret_table(rows, configs, problems, *, measure, family=None):
    """Per configuration: passes-all flag, worst and mean regret of ``measure``
    (``"val_err"`` or ``"train_err"``) against the best passing configuration of
    ``family`` (a proxy name, or None for all) on each problem."""
    pool = [r for r in rows if family is None or r.get("cfg_proxy") == family]
    best = {}
    for p in problems:
        ok = [r[measure] for r in pool if r["problem"] == p and r["train_viol"] <= FEASIBLE]
        best[p] = min(ok) if ok else math.nan
    table = []
    for cfg in configs:
        if family is not None and cfg.get("proxy") != family:
            continue
        k = cfg_key(cfg)
        mine = [r for r in pool if r["config"] == k]
        regrets = [r[measure] - best[r["problem"]] for r in mine]
        passes = all(r["train_viol"] <= FEASIBLE for r in mine) and len(mine) == len(problems)
        table.append({"config": k, "passes_all": passes, "n_pass": sum(r["train_viol"] <= FEASIBLE for r in mine),
                      "worst_regret": max(regrets) if regrets else math.nan,
                      "mean_regret": float(np.mean(regrets)) if regrets else math.nan,
                      "regrets": {r["problem"]: r[measure] - best[r["problem"]] for r in mine},
                      "mean_fit_s": float(np.mean([r["fit_s"] for r in mine])) if mine else math.nan})
    return best, table


def select(rows, configs, problems):
    """Both rules of the module docstring: (best, pre-registered ranking, logistic ranking)."""
    best, table = _regret_table(rows, configs, problems, measure="val_err")
    table.sort(key=lambda t: (not t["passes_all"], t["worst_regret"], t["mean_regret"]))
    _, logistic = _regret_table(rows, configs, problems, measure="train_err", family="logistic")
    logistic.sort(key=lambda t: (not t["passes_all"], t["mean_regret"], t["worst_regret"]))
    return best, table, logistic


def render(full):
    lines = [f"# Training defaults study ({full['grid']} grid{', quick' if full['quick'] else ''})", "",
             f"{full['date']}, git {full['git']}; {full['machine']}.", "",
             "Per problem and configuration: the m-stochastic solution's errors and largest constraint "
             "violations (train / validation / test), seed 0, method proxy-swap. `eta` is Lemma 8's default "
             "(`lemma8`, no floor) or c / B with B the largest possible |g_i|.", "",
             "## Pre-registered ranking (passes = train violation <= 1e-3 on every problem; then the "
             "smallest worst validation-error regret, then the mean); per-problem validation regrets", ""]
    probs = full["problems"]
    hdr = ["config", "passes all", "worst val regret", "mean val regret"] + probs + ["mean fit s"]
    lines.append(_common.markdown_table(hdr, [[t["config"], "yes" if t["passes_all"] else "no",
                                               f"{t['worst_regret']:.4f}", f"{t['mean_regret']:.4f}"]
                                              + [f"{t['regrets'].get(p, math.nan):.4f}" for p in probs]
                                              + [f"{t['mean_fit_s']:.2f}"] for t in full["ranking"]]))
    if full.get("ranking_logistic"):
        lines += ["", "## Ranking used: logistic objective proxy, mean training-error regret "
                      "(against the best logistic configuration on each problem)", ""]
        hdr = ["config", "passes all", "mean train regret", "worst train regret"] + probs
        lines.append(_common.markdown_table(hdr, [[t["config"], "yes" if t["passes_all"] else "no",
                                                   f"{t['mean_regret']:.4f}", f"{t['worst_regret']:.4f}"]
                                                  + [f"{t['regrets'].get(p, math.nan):.4f}" for p in probs]
                                                  for t in full["ranking_logistic"]]))
    lines += ["", "## Every run", ""]
    hdr = ["problem", "config", "train err", "train viol", "val err", "val viol", "test err", "test viol", "fit s",
           "iterations", "models"]
    lines.append(_common.markdown_table(hdr, [[r["problem"], r["config"], f"{r['train_err']:.4f}",
                                               f"{r['train_viol']:+.4f}", f"{r['val_err']:.4f}",
                                               f"{r['val_viol']:+.4f}", f"{r['test_err']:.4f}",
                                               f"{r['test_viol']:+.4f}", f"{r['fit_s']:.2f}",
                                               r.get("iterations_run", ""), r["n_models"]]
                                              for r in full["runs"]]))
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    _common.add_common_args(ap)
    ap.add_argument("--only", default=None, help="comma-separated problems")
    ap.add_argument("--grid", default="main", choices=("main", "iters"))
    args = ap.parse_args(argv)
    problems = args.only.split(",") if args.only else list(ANCHOR_PROBLEMS + EXTRA_PROBLEMS)
    configs = grid(args.grid, args.quick)
    rows = []
    for key in problems:
        prob = make_problem(key, args.quick)
        problem = prob.problem()
        for cfg in configs:
            r = run_one(prob, problem, cfg)
            r.update(problem=key, config=cfg_key(cfg), **{f"cfg_{k}": v for k, v in cfg.items()})
            rows.append(r)
            print(f"{key:12s} {cfg_key(cfg):48s} train {r['train_err']:.4f} {r['train_viol']:+.4f} "
                  f"val {r['val_err']:.4f} {r['val_viol']:+.4f} test {r['test_err']:.4f} {r['test_viol']:+.4f} "
                  f"{r['fit_s']:.2f}s T={r['iterations_run']}", flush=True)
    best, ranking, ranking_logistic = select(rows, configs, problems)
    full = {"name": NAME, "quick": args.quick, "grid": args.grid, "date": _common.utc_now(), "git": _common.git_sha(),
            "machine": _common.machine_info(), "problems": problems, "best_val_err": best, "ranking": ranking,
            "ranking_logistic": ranking_logistic, "runs": rows,
            "selected_preregistered": ranking[0]["config"] if ranking else None,
            "selected": ranking_logistic[0]["config"] if ranking_logistic else None}
    suffix = ("" if args.grid == "main" else f"_{args.grid}") + ("_quick" if args.quick else "")
    json_path, md_path = _common.results_paths(NAME + suffix, quick=False, out=args.out)
    _common.write_results(full, render(full), json_path, md_path)
    print(f"selected (pre-registered rule): {full['selected_preregistered']}; selected (rule used): "
          f"{full['selected']}")
    if args.json:
        _common.emit_json_line({"selected": full["selected"], "selected_preregistered": full["selected_preregistered"],
                                "ranking_top5": ranking_logistic[:5]})
    return 0


if __name__ == "__main__":
    sys.exit(main())
