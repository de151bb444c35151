"""Can the stopping rule (``stop_tol``) end the anchors' rateopt fits earlier with the same solution? (issue 35)

The anchors' Adult problems (``bench/_anchors.py``: ``adult_tpr4``, ``adult_eo_sex``)
at the rateopt settings their validation grids selected (``bench/anchors_fit_cost.py``'s
``FITS``), trained to the end (the default, ``stop_tol=None``) and with the
plateau rule (``rateopt._solutions._stopping.PlateauRule``) at ``stop_tol`` in
``TOLS`` x ``stop_patience`` in ``PATIENCES``. Full-batch runs keep
``record_every=1`` (the default without ``stop_tol``; with it the default would
be ``n_iter // 100``, which changes the candidates on its own). For each run:
the iterations run, the fit's wall and CPU time (``Dataset``, ``Problem``,
``train`` and ``solution("m-stochastic")``), and the m-stochastic solution's
training error, largest training violation and test error
(``_anchors.shared_evaluate``), next to the test error's standard error
``sqrt(e (1 - e) / n_test)``.

"Same solution" here: training error and test error within one test SE of the
full run's and the training violation no larger (+1e-4). The library's default
is not changed by this script.

Run (rateopt's environment with the data package)::

    PYTHONPATH=python python bench/stop_rule_anchors.py [--quick] [--json] [--out PATH]

``--quick``: ``stop_tol=1e-4`` at patience 20 only.
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
TOLS = (1e-4, 1e-3)
PATIENCES = (20, 50)


def run(data: anchors.Data, key: str, extra: dict[str, Any]) -> dict[str, Any]:
    """One fit of problem ``key`` at its selected settings plus ``extra``, timed and scored."""
    import rateopt

    cfg = {k: v for k, v in FITS[key].items() if k != "problem"}
    spec = anchors.make_specs(None)[key]
    tr = data.train
    if cfg.get("batch_size") == "n/8":
        cfg["batch_size"] = tr.X.shape[0] // 8
    cfg.update(extra)
    t0, c0 = time.perf_counter(), time.process_time()
    ds = rateopt.Dataset(tr.X, tr.y, groups=dict(tr.groups))
    problem = rateopt.Problem(constraints=anchors.rateopt_goals(spec), datasets=ds)
    result = rateopt.train(problem, random_state=anchors.SEED, method="proxy-swap", **cfg)
    clf = result.solution("m-stochastic")
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    ev_tr = anchors.shared_evaluate(clf.predict_proba(tr.X)[:, 1], tr.y, tr.groups, spec)
    ev_te = anchors.shared_evaluate(clf.predict_proba(data.test.X)[:, 1], data.test.y, data.test.groups, spec)
    return {"settings": extra, "n_iter": int(result.n_iter), "wall_s": wall, "cpu_s": cpu,
            "train_err": ev_tr["error"], "train_viol": ev_tr["max_violation"], "test_err": ev_te["error"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_args(parser)
    args = parser.parse_args(argv)
    tols, patiences = ((1e-4,), (20,)) if args.quick else (TOLS, PATIENCES)
    load_before = os.getloadavg()
    data = anchors.load_data("adult", False)
    n_test = data.test.X.shape[0]
    results: dict[str, Any] = {}
    for key in PROBLEMS:
        full = run(data, key, {})
        se = float(np.sqrt(full["test_err"] * (1 - full["test_err"]) / n_test))
        rows = [full]
        for tol in tols:
            for pat in patiences:
                extra: dict[str, Any] = {"stop_tol": tol, "stop_patience": pat}
                if FITS[key].get("batch_size") is None:
                    extra["record_every"] = 1
                r = run(data, key, extra)
                r["same_solution"] = bool(abs(r["train_err"] - full["train_err"]) <= se
                                          and abs(r["test_err"] - full["test_err"]) <= se
                                          and max(r["train_viol"], 0.0) <= max(full["train_viol"], 0.0) + 1e-4)
                r["cpu_ratio_full_over_this"] = full["cpu_s"] / r["cpu_s"]
                rows.append(r)
                print(f"{key} {extra}: {r['n_iter']} iterations, CPU {r['cpu_s']:.3f} s (full {full['cpu_s']:.3f}), "
                      f"train err {r['train_err']:.5f} ({full['train_err']:.5f})", file=sys.stderr)
        results[key] = {"test_se": se, "runs": rows}
    res = {"name": NAME, "utc": utc_now(), "git": git_sha(), "quick": args.quick,
           "load_before": [round(x, 2) for x in load_before], "load_after": [round(x, 2) for x in os.getloadavg()],
           "results": results, "machine": machine_info()}
    lines = [f"# The stopping rule on the anchors' Adult problems{' (--quick)' if args.quick else ''}", "",
             (f"{res['utc']}, git {(res['git'].get('sha') or '?')[:12]}; load average (1, 5, 15 min) "
              f"{res['load_before']} before, {res['load_after']} after. 'same': train and test error within one "
              "test SE of the full run's, train violation no larger (+1e-4)."), ""]
    rows = []
    for key, r in results.items():
        for run_ in r["runs"]:
            rows.append([key, run_["settings"] or "full (default)", run_["n_iter"], f"{run_['wall_s']:.3f}",
                         f"{run_['cpu_s']:.3f}", f"{run_['train_err']:.5f}", f"{run_['train_viol']:+.5f}",
                         f"{run_['test_err']:.5f}", f"{r['test_se']:.4f}", run_.get("same_solution", "")])
    lines.append(markdown_table(["problem", "settings", "iterations", "wall s", "CPU s", "train err", "train viol",
                                 "test err", "test SE", "same"], rows))
    json_path, md_path = results_paths(NAME, quick=args.quick, out=args.out)
    write_results(res, "\n".join(lines), json_path, md_path)
    print("\n".join(lines), file=sys.stderr)
    if args.json:
        emit_json_line(res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
