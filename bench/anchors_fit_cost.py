"""Where rateopt's fit time goes on the anchors' problems, in two trees (issue 35: the TFCO and fairlearn ratios).

``bench/compare_anchors.py`` times rateopt's whole fit (``Dataset``, ``Problem``,
``rateopt.train`` and ``solution("m-stochastic")``) against TFCO and fairlearn,
and ``bench/multiclass.py`` (b) times it (``ClassDataset``, ``Problem``, train,
``solution("m-stochastic")``) against TFCO on K = 4 and K = 5 classes.
This script times the same fits, at the settings the validation grids selected
for the Adult problems and at ``bench/multiclass.py``'s settings for the K-class
ones (``FITS``), in a fresh subprocess per tree whose ``PYTHONPATH`` is that tree's
``python/`` directory: this tree, and with ``--reference PATH`` another one (for
example ``/work/main/python``, with its own built ``_core``), the trees
interleaved ``--repeats`` times. Per fit and tree:

- ``fit_s`` / ``fit_cpu_s``: the whole fit's wall time and the process's CPU time
  (medians; the CPU time is less sensitive to other processes on a shared
  machine, the wall time is what the anchors' ratio uses);
- a cProfile (CPU time) of one more fit, split into ``loop`` (the training loop:
  the core loop with the minibatch draws around it, or the Python loop of K-class runs), ``rules``
  (the threshold-rule candidates of the window averages: their LPs and passes),
  ``averages`` (the window averages' passes), ``solution`` (``TrainResult``,
  the shrinking LP and the classifier) and ``other`` (data, compile, glue);
- ``digest``: a SHA-256 of every array of the ``TrainResult`` and of the
  solution's test probabilities: equal digests mean bit-identical results.

BLAS pools are limited to one thread in the workers; ``--threads N`` sets the
workers' ``OMP_NUM_THREADS`` (the core's threads). The machine's load average
is recorded before and after.

Run (rateopt's environment with the data package; see ``bench/_anchors.py``)::

    PYTHONPATH=python python bench/anchors_fit_cost.py [--quick] [--json] [--out PATH]
        [--reference /work/main/python] [--repeats N] [--timed N] [--threads N] [--fits a,b]

``--quick``: one interleaved repeat of one timed fit per worker.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    add_common_args,
    emit_json_line,
    git_sha,
    machine_info,
    markdown_table,
    median,
    results_paths,
    utc_now,
    write_results,
)

NAME = "anchors_fit_cost"
THIS_TREE = Path(__file__).resolve().parent.parent / "python"
#: The fits: the anchors' problems at the rateopt settings their validation grids selected
#: (``bench/results/anchors.md``).
FITS = {
    "adult_tpr4": {"problem": "adult_tpr4", "learning_rate": 0.1, "n_iter": 250, "batch_size": None},
    "adult_eo_sex": {"problem": "adult_eo_sex", "learning_rate": 0.1, "n_iter": 500, "batch_size": "n/8",
                     "record_every": 10},
    # adult_tpr4 at the settings an earlier grid selected (bench/results/anchors_adult_tpr4_after_omp_fix.md):
    # four times the iterations of the current selection
    "adult_tpr4_n1000": {"problem": "adult_tpr4", "learning_rate": 0.2, "n_iter": 1000, "batch_size": None,
                         "eta_lambda": 1.0},
    # bench/multiclass.py (b): multiclass demographic parity at slack 0.05, LinearModel(l2=1e-4), proxy-swap
    "edu4_race_sex": {"setting": "edu4_race_sex"},
    "edu5_sex": {"setting": "edu5_sex"},
}
#: Profile parts: the functions whose cumulative time is each part (first match wins, nested calls excluded).
PARTS = {
    "loop": ("_run_core_loop", "_run_python_loop"),
    "rules": ("threshold_rules",),
    "averages": ("window_averages",),
    "solution": ("solution", "feasibility"),
}


def worker(job: dict[str, Any]) -> dict[str, Any]:
    """Fit one problem ``job["timed"]`` times (timed) and once more (profiled), in this process's tree."""
    import cProfile
    import hashlib
    import pstats
    import time

    import numpy as np

    import _anchors as anchors
    import rateopt

    cfg = dict(FITS[job["fit"]])
    if "setting" in cfg:  # bench/multiclass.py (b)
        import _multiclass_data as md

        data = md.load(cfg["setting"], quick=False)
        tr, gc = data.train, data.group

        def fit():
            ds = rateopt.ClassDataset(tr.X, tr.y, groups={gc: tr.groups[gc]})
            problem = rateopt.Problem(constraints=[rateopt.goals.multiclass_demographic_parity(gc, slack=0.05)],
                                      datasets=ds)
            result = rateopt.train(problem, rateopt.LinearModel(l2=1e-4), method="proxy-swap", random_state=0)
            return result, result.solution("m-stochastic")
    else:
        data = anchors.load_data("adult", False)
        spec = anchors.make_specs(None)[cfg.pop("problem")]
        tr = data.train
        if cfg.get("batch_size") == "n/8":
            cfg["batch_size"] = tr.X.shape[0] // 8

        def fit():
            ds = rateopt.Dataset(tr.X, tr.y, groups=dict(tr.groups))
            problem = rateopt.Problem(constraints=anchors.rateopt_goals(spec), datasets=ds)
            result = rateopt.train(problem, random_state=anchors.SEED, method="proxy-swap", **cfg)
            return result, result.solution("m-stochastic")

    fit()  # warm: imports, first-touch
    wall, cpu = [], []
    for _ in range(job["timed"]):
        t0, c0 = time.perf_counter(), time.process_time()
        result, clf = fit()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    prof = cProfile.Profile(time.process_time)  # CPU time: what other processes' load changes least
    prof.enable()
    fit()
    prof.disable()
    stats = pstats.Stats(prof).stats
    total = max(v[3] for v in stats.values())
    parts = {}
    for part, names in PARTS.items():
        parts[part] = sum(v[3] for (_f, _l, fn), v in stats.items() if fn in names)
    parts["other"] = max(0.0, total - sum(parts.values()))
    h = hashlib.sha256()
    for f in ("weights", "biases", "iterations", "multipliers", "atom_rates"):
        h.update(np.ascontiguousarray(getattr(result, f)).tobytes())
    h.update(np.ascontiguousarray(clf.predict_proba(data.test.X)).tobytes())
    return {"wall_s": wall, "cpu_s": cpu, "profile_total_s": total, "profile_s": parts,
            "n_iter": int(result.n_iter),
            "digest": h.hexdigest()[:16], "n_recorded": int(result.weights.shape[0])}


def _run(tree: Path, job: dict[str, Any]) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(tree))
    if job.get("threads"):  # the core's OpenMP threads (rateopt's n_threads=None follows this setting)
        env["OMP_NUM_THREADS"] = str(job["threads"])
    out = subprocess.run([sys.executable, __file__, "--worker", json.dumps(job)], env=env, capture_output=True,
                         text=True, check=False)
    if out.returncode:
        raise RuntimeError(f"worker failed ({tree}): {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _summary(samples: list[dict[str, Any]]) -> dict[str, Any]:
    wall = [x for s in samples for x in s["wall_s"]]
    cpu = [x for s in samples for x in s["cpu_s"]]
    prof = {k: median([s["profile_s"][k] for s in samples]) for k in samples[0]["profile_s"]}
    total = median([s["profile_total_s"] for s in samples])
    return {"fit_s": median(wall), "fit_cpu_s": median(cpu), "fit_samples_s": wall, "cpu_samples_s": cpu,
            "profile_total_s": total, "profile_s": prof,
            "profile_share": {k: v / total for k, v in prof.items()} if total else {},
            "digests": sorted({s["digest"] for s in samples}), "n_recorded": samples[0]["n_recorded"]}


def markdown(res: dict[str, Any]) -> str:
    lines = [f"# rateopt's fit on the anchors' problems{' (--quick)' if res['quick'] else ''}", "",
             (f"{res['utc']}, git {(res['git'].get('sha') or '?')[:12]}{' (dirty)' if res['git'].get('dirty') else ''}"
              f"; {res['machine'].get('cpu_model')} x {res['machine'].get('cpu_count')}; load average (1, 5, 15 min) "
              f"{res['load_before']} before, {res['load_after']} after; {res['repeats']} interleaved repeat(s) x "
              f"{res['timed']} timed fit(s) per tree; OMP_NUM_THREADS "
              f"{res.get('threads') or 'unset (every core)'}."), "",
             "Trees: " + ", ".join(f"`{t}` = {p}" for t, p in res["trees"].items()) + ".", ""]
    rows = []
    for fit, trees in res["results"].items():
        for tree, r in trees.items():
            p = r["profile_share"]
            rows.append([fit, tree, f"{r['fit_s']:.3f}", f"{r['fit_cpu_s']:.3f}",
                         *(f"{p.get(k, 0):.0%}" for k in ("loop", "rules", "averages", "solution", "other")),
                         ", ".join(r["digests"])])
    lines.append(markdown_table(["fit", "tree", "wall s (median)", "CPU s (median)", "loop", "rules", "averages",
                                 "solution", "other", "result digest"], rows))
    if res["ratios"]:
        lines += ["", "Reference / this (medians of the same run):", ""]
        lines += [f"- {k}: {v:.2f}" for k, v in res["ratios"].items()]
    lines += ["", "Settings: " + json.dumps(FITS)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_args(parser)
    parser.add_argument("--reference", type=Path, default=None,
                        help="another tree's python/ directory (with its built _core) timed in the same run")
    parser.add_argument("--repeats", type=int, default=None, help="interleaved workers per tree (default 3; quick 1)")
    parser.add_argument("--timed", type=int, default=None, help="timed fits per worker (default 3; quick 1)")
    parser.add_argument("--threads", type=int, default=None,
                        help="OMP_NUM_THREADS of the workers (default: unset, the core uses every core); 1 makes "
                             "the CPU times comparable on a loaded machine (no OpenMP thread waits for another)")
    parser.add_argument("--fits", default=None, help=f"comma-separated fits (default: all of {', '.join(FITS)})")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker is not None:
        from threadpoolctl import threadpool_limits

        with threadpool_limits(1, user_api="blas"):
            print(json.dumps(worker(json.loads(args.worker))))
        return 0
    repeats = args.repeats or (1 if args.quick else 3)
    timed = args.timed or (1 if args.quick else 3)
    trees = {"this": THIS_TREE}
    if args.reference is not None:
        trees["reference"] = args.reference.resolve()
    load_before = os.getloadavg()
    fits = args.fits.split(",") if args.fits else list(FITS)
    if set(fits) - set(FITS):
        parser.error(f"unknown fits {sorted(set(fits) - set(FITS))}")
    samples: dict[str, dict[str, list]] = {f: {t: [] for t in trees} for f in fits}
    for _ in range(repeats):
        for fit in fits:
            for tree, path in trees.items():
                s = _run(path, {"fit": fit, "timed": timed, "threads": args.threads})
                samples[fit][tree].append(s)
                print(f"{fit} {tree}: {median(s['wall_s']):.3f} s wall, {median(s['cpu_s']):.3f} s CPU",
                      file=sys.stderr)
    results = {f: {t: _summary(s) for t, s in ts.items()} for f, ts in samples.items()}
    ratios = {}
    if "reference" in trees:
        for fit, r in results.items():
            ratios[f"{fit} wall"] = r["reference"]["fit_s"] / r["this"]["fit_s"]
            ratios[f"{fit} CPU"] = r["reference"]["fit_cpu_s"] / r["this"]["fit_cpu_s"]
    res = {"name": NAME, "utc": utc_now(), "git": git_sha(), "quick": args.quick, "repeats": repeats,
           "timed": timed, "threads": args.threads, "trees": {t: str(p) for t, p in trees.items()},
           "load_before": [round(x, 2) for x in load_before], "load_after": [round(x, 2) for x in os.getloadavg()],
           "results": results, "ratios": ratios,
           "identical_results": {f: len({d for r in rs.values() for d in r["digests"]}) == 1
                                 for f, rs in results.items()},
           "machine": machine_info()}
    json_path, md_path = results_paths(NAME, quick=args.quick, out=args.out)
    md = markdown(res)
    write_results(res, md, json_path, md_path)
    print(md, file=sys.stderr)
    if args.json:
        emit_json_line(res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
