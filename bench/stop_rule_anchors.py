"""Can the stopping rule (``stop_tol``) end two-class fits earlier with the same solution? (issue 35)

The anchors' Adult problems (``bench/_anchors.py``: ``adult_tpr4``, ``adult_eo_sex``)
at the rateopt settings their validation grids selected (``bench/anchors_fit_cost.py``'s
``FITS``), and Cotter et al.'s problems (``bench/reproduce_cotter.py``'s ``experiment``:
``bank``, ``adult``, ``compas``, ``compas-rbf``; its seed-0 split) and
``bench/defaults_study.py``'s bundle problems (``compas_eo``, ``law_dp``,
``credit_dp``), at the library's defaults (``method="proxy-swap"``, full
batch), are trained to the end (``stop_tol=0``)
and with the plateau rule (``rateopt._solutions._stopping.PlateauRule``) at
``stop_tol`` in ``TOLS`` x ``stop_patience`` in ``PATIENCES``. The rule's LPs
hold the candidates the solution mixes (the trivial rules, the window averages
and their threshold rules, the records). Full-batch runs keep
``record_every=1`` (the default without ``stop_tol``; with an explicit
``stop_tol`` the default would be ``n_iter // 100``, which changes the
candidates on its own). For each run: the iterations run, the fit's CPU time
(``train`` and ``solution("m-stochastic")``; median of ``--repeats``
interleaved repeats, after one untimed fit per problem), and the m-stochastic solution's training error, largest
training violation and test error (``_anchors.shared_evaluate`` for the
anchors, ``Problem.evaluate`` of the expected decisions for Cotter's), next to
the test error's standard error ``sqrt(e (1 - e) / n_test)``.

**The decision rule** (:func:`decide`, written before the measurements): a
setting "gives the same solution" on a problem when its training error is within
:data:`SAME_TRAIN` of the full run's, its test error within :data:`SAME_TEST_SE`
test SE of the full run's, and its training violation no larger (+1e-4). A
setting may become the two-class default only if it gives the same solution on
**every** measured problem and its CPU time summed over the problems is lower
than the full runs'; of those, the one with the least CPU. The script reports
the decision; it changes nothing in the library.

Run (rateopt's environment with the data package)::

    PYTHONPATH=python python bench/stop_rule_anchors.py [--quick] [--json] [--out PATH] [--repeats N]

``--quick``: ``stop_tol=1e-4`` at patience 20 only, one repeat, the anchors' problems only.

History: the decision rule was first applied to the anchors' two problems and
Cotter's ``bank``, ``adult`` and ``compas``, where ``stop_tol=1e-3`` at patience
50 qualified; ``compas-rbf`` and the three bundle problems were then added as a
check, and it failed three of them (``compas_eo``, ``credit_dp``,
``compas-rbf``), so every problem is measured in one run now
(``bench/results/stop_rule_anchors.md``; the earlier runs are ``_run0`` and ``_run1``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _anchors as anchors
from _common import (
    add_common_args,
    emit_json_line,
    git_sha,
    machine_info,
    markdown_table,
    results_paths,
    utc_now,
    write_results,
)
from anchors_fit_cost import FITS

NAME = "stop_rule_anchors"
PROBLEMS = ("adult_tpr4", "adult_eo_sex")
#: Cotter et al.'s problems measured at the library's defaults (``bench/reproduce_cotter.py``).
COTTER = ("bank", "adult", "compas", "compas-rbf")
#: ``bench/defaults_study.py``'s bundle problems, at the library's defaults (``--problems study_...``).
STUDY = ("compas_eo", "law_dp", "credit_dp")
TOLS = (1e-4, 1e-3)
PATIENCES = (20, 50)
#: "Same solution": training error within this of the full run's ...
SAME_TRAIN = 5e-4
#: ... test error within this many test SE of the full run's ...
SAME_TEST_SE = 0.5
#: ... and the training violation no larger than the full run's plus this.
SAME_VIOL = 1e-4
OFF = {"stop_tol": 0}  # the full run, whatever the library's default


def anchor_case(data: anchors.Data, key: str):
    """``fit(extra)`` and ``score(clf)`` of anchor problem ``key`` at its selected settings."""
    import rateopt

    cfg = {k: v for k, v in FITS[key].items() if k != "problem"}
    spec = anchors.make_specs(None)[key]
    tr = data.train
    if cfg.get("batch_size") == "n/8":
        cfg["batch_size"] = tr.X.shape[0] // 8

    def fit(extra):
        ds = rateopt.Dataset(tr.X, tr.y, groups=dict(tr.groups))
        problem = rateopt.Problem(constraints=anchors.rateopt_goals(spec), datasets=ds)
        result = rateopt.train(problem, random_state=anchors.SEED, method="proxy-swap", **{**cfg, **extra})
        return result, result.solution("m-stochastic")

    def score(clf):
        ev_tr = anchors.shared_evaluate(clf.predict_proba(tr.X)[:, 1], tr.y, tr.groups, spec)
        ev_te = anchors.shared_evaluate(clf.predict_proba(data.test.X)[:, 1], data.test.y, data.test.groups, spec)
        return ev_tr["error"], ev_tr["max_violation"], ev_te["error"], data.test.X.shape[0]

    return fit, score, cfg.get("batch_size") is None


def cotter_case(name: str):
    """``fit(extra)`` and ``score(clf)`` of Cotter et al.'s problem ``name`` (seed-0 split) at the defaults."""
    import rateopt
    import reproduce_cotter as rc

    data, X, goals, model_fn, _, group_cols = rc.experiment(name)
    parts = data.split(random_state=0, sizes=data.default_sizes())
    problems = [rateopt.Problem(constraints=goals, datasets=rateopt.Dataset(
        X[p], data.y[p], groups={c: data.groups[c].to_numpy(dtype=object)[p] for c in group_cols}))
        for p in (parts[0], parts[2])]

    def fit(extra):
        result = rateopt.train(problems[0], model=model_fn(0), method="proxy-swap", random_state=0, **extra)
        return result, result.solution("m-stochastic")

    def score(clf):
        out = []
        for p, prob in zip((parts[0], parts[2]), problems):
            ev = prob.evaluate(clf.predict_proba(X[p])[:, 1], kind="probabilities")
            out.append((float(ev.objective), float(max(ev.constraints.values()))))
        return out[0][0], out[0][1], out[1][0], len(parts[2])

    return fit, score, True


def study_case(key: str):
    """``fit(extra)`` and ``score(clf)`` of ``bench/defaults_study.py``'s bundle problem ``key`` at the defaults."""
    import warnings

    import rateopt
    from defaults_study import BundleProblem

    prob = BundleProblem(key)

    def fit(extra):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = rateopt.train(prob.problem(), method="proxy-swap", random_state=0, **extra)
        return result, result.solution("m-stochastic")

    def score(clf):
        sc = prob.score(clf)
        return sc["train"][0], sc["train"][1], sc["test"][0], len(prob.idx[2])

    return fit, score, True


def run(fit, score, extra: dict[str, Any], repeats: int) -> dict[str, Any]:
    """``repeats`` fits with ``extra``: median CPU and wall time, the solution scored once."""
    cpus, walls = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        result, clf = fit(extra)
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    train_err, train_viol, test_err, n_test = score(clf)
    return {"settings": extra, "n_iter": int(result.n_iter), "wall_s": float(np.median(walls)),
            "cpu_s": float(np.median(cpus)), "cpu_samples_s": cpus, "train_err": train_err,
            "train_viol": train_viol, "test_err": test_err, "n_test": n_test}


def same_solution(r: dict[str, Any], full: dict[str, Any], se: float) -> bool:
    """The decision rule's "same solution" (module docstring)."""
    return bool(abs(r["train_err"] - full["train_err"]) <= SAME_TRAIN
                and abs(r["test_err"] - full["test_err"]) <= SAME_TEST_SE * se
                and r["train_viol"] <= full["train_viol"] + SAME_VIOL)


def decide(results: dict[str, Any]) -> dict[str, Any]:
    """The two-class default the measurements allow (module docstring): the setting, or None."""
    keys = {}
    for r in results.values():
        for run_ in r["runs"][1:]:
            k = (run_["settings"]["stop_tol"], run_["settings"]["stop_patience"])
            keys.setdefault(k, []).append((run_, r["runs"][0]))
    verdicts = []
    for (tol, pat), pairs in keys.items():
        same = all(run_["same_solution"] for run_, _ in pairs) and len(pairs) == len(results)
        cpu, cpu_full = sum(run_["cpu_s"] for run_, _ in pairs), sum(full["cpu_s"] for _, full in pairs)
        verdicts.append({"stop_tol": tol, "stop_patience": pat, "same_everywhere": same, "cpu_s": cpu,
                         "cpu_full_s": cpu_full, "qualifies": same and cpu < cpu_full})
    ok = [v for v in verdicts if v["qualifies"]]
    best = min(ok, key=lambda v: v["cpu_s"]) if ok else None
    return {"settings": verdicts, "default": None if best is None else
            {"stop_tol": best["stop_tol"], "stop_patience": best["stop_patience"]}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_args(parser)
    parser.add_argument("--repeats", type=int, default=None, help="interleaved fits per setting (default 3; "
                        "--quick: 1); the median CPU time counts")
    parser.add_argument("--problems", default=None, help="comma-separated subset of "
                        f"{','.join(PROBLEMS + tuple('cotter_' + c for c in COTTER))}, or "
                        f"{','.join('study_' + c for c in STUDY)} (bench/defaults_study.py's bundle problems)")
    args = parser.parse_args(argv)
    tols, patiences = ((1e-4,), (20,)) if args.quick else (TOLS, PATIENCES)
    repeats = args.repeats or (1 if args.quick else 3)
    names = (args.problems.split(",") if args.problems else
             list(PROBLEMS) + ([] if args.quick else ["cotter_" + c for c in COTTER] + ["study_" + c for c in STUDY]))
    load_before = os.getloadavg()
    data = anchors.load_data("adult", False) if any(n in PROBLEMS for n in names) else None
    results: dict[str, Any] = {}
    for key in names:
        if key.startswith("cotter_"):
            fit, score, full_batch = cotter_case(key[len("cotter_"):])
        elif key.startswith("study_"):
            fit, score, full_batch = study_case(key[len("study_"):])
        else:
            fit, score, full_batch = anchor_case(data, key)
        settings = [dict(OFF)]
        for tol in tols:
            for pat in patiences:
                extra: dict[str, Any] = {"stop_tol": tol, "stop_patience": pat}
                if full_batch:
                    extra["record_every"] = 1
                settings.append(extra)
        fit(OFF)  # untimed: the first fit of a problem pays for lazy imports and caches
        # interleaved repeats: every setting once per round
        rounds = [[run(fit, score, extra, 1) for extra in settings] for _ in range(repeats)]
        rows = []
        for i, extra in enumerate(settings):
            rs = [rnd[i] for rnd in rounds]
            r = dict(rs[0])
            r["cpu_samples_s"] = [x["cpu_s"] for x in rs]
            r["cpu_s"] = float(np.median(r["cpu_samples_s"]))
            r["wall_s"] = float(np.median([x["wall_s"] for x in rs]))
            rows.append(r)
        full = rows[0]
        se = float(np.sqrt(full["test_err"] * (1 - full["test_err"]) / full["n_test"]))
        for r in rows[1:]:
            r["same_solution"] = same_solution(r, full, se)
            r["cpu_ratio_full_over_this"] = full["cpu_s"] / r["cpu_s"]
            print(f"{key} {r['settings']}: {r['n_iter']} iterations, CPU {r['cpu_s']:.3f} s (full "
                  f"{full['cpu_s']:.3f}), train err {r['train_err']:.5f} ({full['train_err']:.5f}), same "
                  f"{r['same_solution']}", file=sys.stderr)
        results[key] = {"test_se": se, "full_batch": full_batch, "runs": rows}
    decision = decide(results)
    res = {"name": NAME, "utc": utc_now(), "git": git_sha(), "quick": args.quick, "repeats": repeats,
           "load_before": [round(x, 2) for x in load_before], "load_after": [round(x, 2) for x in os.getloadavg()],
           "rule": {"train_err": SAME_TRAIN, "test_err_se": SAME_TEST_SE, "train_viol": SAME_VIOL},
           "results": results, "decision": decision, "machine": machine_info()}
    lines = [f"# The stopping rule on two-class problems{' (--quick)' if args.quick else ''}", "",
             (f"{res['utc']}, git {(res['git'].get('sha') or '?')[:12]}; load average (1, 5, 15 min) "
              f"{res['load_before']} before, {res['load_after']} after; CPU: median of {repeats} interleaved "
              f"fits. 'same': train error within {SAME_TRAIN} and test error within {SAME_TEST_SE} test SE of "
              f"the full run's (stop_tol=0), train violation no larger (+{SAME_VIOL}). The rule's LPs hold "
              "every candidate the solution mixes."), ""]
    rows = []
    for key, r in results.items():
        for run_ in r["runs"]:
            rows.append([key, run_["settings"], run_["n_iter"], f"{run_['cpu_s']:.3f}",
                         f"{run_.get('cpu_ratio_full_over_this', 1.0):.2f}x", f"{run_['train_err']:.5f}",
                         f"{run_['train_viol']:+.5f}", f"{run_['test_err']:.5f}", f"{r['test_se']:.4f}",
                         run_.get("same_solution", "")])
    lines.append(markdown_table(["problem", "settings", "iterations", "CPU s", "full / this", "train err",
                                 "train viol", "test err", "test SE", "same"], rows))
    lines += ["", "Decision (a setting qualifies when it gives the same solution on every problem and less CPU "
              "in total):", ""]
    lines.append(markdown_table(["stop_tol", "stop_patience", "same everywhere", "CPU s (sum)", "full CPU s (sum)",
                                 "qualifies"],
                                [[v["stop_tol"], v["stop_patience"], v["same_everywhere"], f"{v['cpu_s']:.3f}",
                                  f"{v['cpu_full_s']:.3f}", v["qualifies"]] for v in decision["settings"]]))
    lines += ["", f"Default these measurements allow: {decision['default']}."]
    json_path, md_path = results_paths(NAME, quick=args.quick, out=args.out)
    write_results(res, "\n".join(lines), json_path, md_path)
    print("\n".join(lines), file=sys.stderr)
    if args.json:
        emit_json_line(res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
