"""K-class boosting (issue 33): rateopt's boosted K-class solution against the linear one and post-processing.

The problem is ``bench/multiclass_quality.py``'s ``adult_marital``: UCI Adult,
marital status in 3 classes (married / never-married / other; the
marital-status and relationship columns dropped from X, sex kept), "minimize
the error subject to ``multiclass_demographic_parity("group", slack=0.05)``"
with the group = sex; split 70/30 with seed 0 (34,189 / 14,653 rows;
``--quick``: the first 4,000 training rows of that split, 100 rounds).

Systems (each row: training and test error of the classifier's exact expected
decisions, ``problem.evaluate`` of its ``predict_proba`` on each split, the test
standard error, the largest violation on both splits, and CPU seconds):

- ``boosted-default``: ``rateopt.train(problem, BoostingModel(n_rounds=T),
  random_state=0)`` and its default solution (the m-stochastic mixture of at
  most m+1 prefixes; no groups at prediction);
- ``boosted-best``: the same run's best iterate (one prefix);
- ``boosted-thresholded`` / ``-blind``: an experiment, not a rateopt solution: the K-class
  thresholded LP of the linear runs (per-cell class offsets and plug-in rules, group-aware; or one
  offset vector shared by all cells, group-blind) over the raw scores of the run's 17 candidate
  prefixes and its m-stochastic support;
- ``linear-default``: ``rateopt.train(problem, random_state=0)`` (the K-class
  linear defaults) and its default solution (the thresholded one, folded into
  linear models since the group is a feature);
- ``lgbm``: unconstrained ``LGBMClassifier`` (multiclass softmax) with the same
  trees (``n_estimators=T``, learning rate 0.1, depth 6, 31 leaves,
  ``min_child_weight=1e-3``), argmax decisions;
- ``plugin(lgbm)``: ``ThresholdClassifier(LGBMClassifier(same), goals)``, the
  exact K-class plug-in post-processing of it (group-aware at prediction).

``--backend xgboost`` runs the boosted system and the unconstrained references
with XGBoost (``XGBClassifier`` with the same trees) instead; ``--no-linear``
and ``--no-experiment`` leave those rows out.

Run::

    PYTHONPATH=python .venv/bin/python bench/boosting_multiclass.py [--quick] [--json] [--rounds T]
        [--backend lightgbm|xgboost] [--no-linear] [--no-experiment]

Results: ``bench/results/boosting_multiclass.{json,md}`` (``_quick`` for
``--quick``).
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402
    add_common_args,
    emit_json_line,
    git_sha,
    machine_info,
    markdown_table,
    results_paths,
    utc_now,
    write_results,
)
import multiclass_quality as mq  # noqa: E402

NAME = "boosting_multiclass"
SEED = 0


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _timed(f):
    c0, t0 = _cpu(), time.perf_counter()
    out = f()
    return out, _cpu() - c0, time.perf_counter() - t0


def _plain(backend: str, T: int):
    """The unconstrained multiclass classifier of ``backend`` with the boosted run's trees."""
    if backend == "xgboost":
        from xgboost import XGBClassifier

        return XGBClassifier(n_estimators=T, learning_rate=0.1, max_depth=6, max_leaves=31, min_child_weight=1e-3,
                             tree_method="hist", random_state=SEED, verbosity=0)
    from lightgbm import LGBMClassifier

    return LGBMClassifier(n_estimators=T, learning_rate=0.1, max_depth=6, num_leaves=31, min_child_weight=1e-3,
                          random_state=SEED, deterministic=True, verbosity=-1)


def thresholded_experiment(st, res, ms) -> list[dict[str, Any]]:
    """What a K-class thresholded solution over boosted prefixes would give (not built into rateopt): the
    column-generation LP of the linear runs' thresholded solution
    (``_postprocess._class_mixture.fit_class_thresholded_mixture``) over the raw scores of the 17 candidate
    prefixes (``candidate_rounds``) and the m-stochastic support, with per-cell class offsets and plug-in
    rules (group-aware) or one offset vector shared by every cell (group-blind)."""
    from rateopt._predictors._boosted_mixture import candidate_rounds

    booster = res.models[-1].booster
    lengths = sorted(set(candidate_rounds(res.models[-1].n_trees).tolist()) | set(ms.prefix_lengths_.tolist()))
    out = []
    for blind in (False, True):
        (fit, tr, te), cpu, wall = _timed(lambda: _fit_thresholded(st, booster, lengths, blind))
        out.append(st.row("boosted-thresholded" + ("-blind" if blind else ""), tr, te,
                          kind="experiment", support=int(fit.rule.n_rules), cpu_s=cpu, wall_s=wall))
    return out


def _fit_thresholded(st, booster, lengths, blind):
    from rateopt._postprocess._class_mixture import fit_class_thresholded_mixture

    sp = st.spec
    S_tr = [booster.raw_scores(sp["Xtr"], int(t)) for t in lengths]
    S_te = [booster.raw_scores(sp["Xte"], int(t)) for t in lengths]
    fit = fit_class_thresholded_mixture(st.problem, S_tr, group_blind=blind,
                                        rules=("offsets",) if blind else ("offsets", "plugin"))
    return fit, fit.rule.distribution(S_tr, st.cells_tr), fit.rule.distribution(S_te, st.cells_te)


def run(quick: bool, rounds: int, backend: str = "lightgbm", linear: bool = True,
        experiment: bool = True) -> dict[str, Any]:
    __import__(backend)  # imported before any timing: its import is no system's cost

    import rateopt

    spec = mq.adult_marital(quick)
    st = mq.Setup(spec)
    Xtr, Xte, gtr, gte = spec["Xtr"], spec["Xte"], {"group": spec["gtr"]}, {"group": spec["gte"]}
    rows = []
    log(f"[boosted] {backend}, {Xtr.shape[0]} training rows, {rounds} rounds")
    res, cpu, wall = _timed(lambda: rateopt.train(st.problem, rateopt.BoostingModel(backend, n_rounds=rounds),
                                                  random_state=SEED))
    kind = res.default_kind(st.problem)
    clf, cpu_s, wall_s = _timed(lambda: res.solution(problem=st.problem))
    rows.append(st.row("boosted-default", clf.predict_proba(Xtr), clf.predict_proba(Xte), kind=kind,
                       support=int(getattr(clf, "n_models", 1)), cpu_s=cpu + cpu_s, wall_s=wall + wall_s))
    best = res.solution("best")
    rows.append(st.row("boosted-best", best.predict_proba(Xtr), best.predict_proba(Xte), kind="best",
                       support=1, cpu_s=cpu, wall_s=wall))
    if experiment:
        rows += thresholded_experiment(st, res, clf)
    if linear:
        log("[linear] the K-class linear defaults")
        lin, cpu, wall = _timed(lambda: rateopt.train(st.problem, random_state=SEED))
        kind = lin.default_kind(st.problem)
        clf, cpu_s, wall_s = _timed(lambda: lin.solution(problem=st.problem))
        rows.append(st.row("linear-default", clf.predict_proba(Xtr), clf.predict_proba(Xte), kind=kind,
                           cpu_s=cpu + cpu_s, wall_s=wall + wall_s))
    name = {"lightgbm": "lgbm", "xgboost": "xgb"}[backend]
    log(f"[{name}] unconstrained, and its plug-in post-processing")
    y = np.searchsorted(st.classes, spec["ytr"])  # XGBoost takes class positions; the same for LightGBM
    plain, cpu, wall = _timed(lambda: _plain(backend, rounds).fit(Xtr, y))
    onehot = lambda P: np.eye(P.shape[1])[P.argmax(axis=1)]  # noqa: E731
    rows.append(st.row(name, onehot(plain.predict_proba(Xtr)), onehot(plain.predict_proba(Xte)),
                       kind="argmax", cpu_s=cpu, wall_s=wall))
    post, cpu, wall = _timed(lambda: rateopt.ThresholdClassifier(_plain(backend, rounds), goals=st.goals).fit(
        Xtr, y, groups=gtr))  # class positions: the columns of predict_proba are those of st.classes
    rows.append(st.row(f"plugin({name})", post.predict_proba(Xtr, groups=gtr), post.predict_proba(Xte, groups=gte),
                       kind="group-aware", cpu_s=cpu, wall_s=wall))
    return {"problem": "adult_marital", "slack": spec["slack"], "n_train": int(Xtr.shape[0]),
            "n_test": int(Xte.shape[0]), "rounds": rounds, "backend": backend, "rows": rows}


def markdown(result: dict[str, Any]) -> str:
    q = result["quality"]
    head = (f"# K-class boosting on Adult marital status (3 classes, parity by sex at {q['slack']})\n\n"
            f"{q.get('backend', 'lightgbm')}; {q['n_train']} training / {q['n_test']} test rows, {q['rounds']} "
            f"rounds; load average "
            f"{result['load_before']} before, {result['load_after']} after; {result['seconds']} s.\n"
            f"Command: `{result['command']}`\n\n")
    table = markdown_table(
        ["system", "kind", "train error", "train violation", "test error", "test SE", "test violation", "CPU s"],
        [[r["system"], r.get("kind"), f"{r['train_error']:.4f}", f"{r['train_violation']:.2e}",
          f"{r['test_error']:.4f}", f"{r['test_se']:.4f}", f"{r['test_violation']:.4f}", f"{r['cpu_s']:.2f}"]
         for r in q["rows"]])
    return head + table + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_args(ap)
    ap.add_argument("--rounds", type=int, default=None, help="trees per class (default 200; --quick 100)")
    ap.add_argument("--backend", choices=("lightgbm", "xgboost"), default="lightgbm",
                    help="the boosting library of the boosted run and of the unconstrained references")
    ap.add_argument("--no-linear", action="store_true", help="leave out the linear K-class default")
    ap.add_argument("--no-experiment", action="store_true", help="leave out the thresholded experiment")
    args = ap.parse_args(argv)
    rounds = args.rounds or (100 if args.quick else 200)
    t0 = time.perf_counter()
    result: dict[str, Any] = {"name": NAME, "utc": utc_now(), "git": git_sha(), "machine": machine_info(),
                              "quick": args.quick, "load_before": [round(v, 2) for v in os.getloadavg()],
                              "command": "python bench/boosting_multiclass.py " + " ".join(argv or sys.argv[1:])}
    result["quality"] = run(args.quick, rounds, args.backend, not args.no_linear, not args.no_experiment)
    result["load_after"] = [round(v, 2) for v in os.getloadavg()]
    result["seconds"] = round(time.perf_counter() - t0, 1)
    json_path, md_path = results_paths(NAME, quick=args.quick, out=args.out)
    md = markdown(result)
    write_results(result, md, json_path, md_path)
    print(md)
    if args.json:
        emit_json_line(result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
