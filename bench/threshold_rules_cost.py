"""The threshold-rule candidates of a two-class linear fit alone, in two trees (issue 35: adult_tpr4's "rules" part).

``bench/anchors_fit_cost.py`` splits a whole fit into parts from one profiled
fit per worker; the "rules" part (``_Recorder.threshold_rules``: the rule
cells, each rule window's folded threshold rules and their rates passes) is a
fifth of adult_tpr4's fit, too little for the whole fit's time to show a
change in it on a shared machine. This script trains each fit once per worker
(untimed), keeps the run's recorder, and times ``threshold_rules()`` itself
``--timed`` times with its caches cleared (the rule cells and every window's
rules computed again, as a run does once), in a fresh subprocess per tree whose
``PYTHONPATH`` is that tree's ``python/`` directory, the trees interleaved
``--repeats`` times. Per fit and tree: the median CPU and wall time of the
stage, the number of rules, and a digest (SHA-256 of every rule record's
weights, bias and atom rates): equal digests mean bit-identical candidates.

Run (rateopt's environment with the data package; see ``bench/_anchors.py``)::

    PYTHONPATH=python python bench/threshold_rules_cost.py [--quick] [--json] [--out PATH]
        [--reference /work/main/python] [--repeats N] [--timed N] [--threads N]
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
from anchors_fit_cost import FITS as ANCHOR_FITS

NAME = "threshold_rules_cost"
THIS_TREE = Path(__file__).resolve().parent.parent / "python"
#: The fits of ``bench/anchors_fit_cost.py`` that have threshold-rule candidates (its settings, one table).
FITS = {name: ANCHOR_FITS[name] for name in ("adult_tpr4", "adult_tpr4_n1000")}


def worker(job: dict[str, Any]) -> dict[str, Any]:
    """Train one fit, then time its recorder's ``threshold_rules()`` ``job["timed"]`` times, caches cleared."""
    import hashlib
    import time

    import numpy as np

    import _anchors as anchors
    import rateopt
    import rateopt._train as train_module

    seen = []
    original = train_module._Recorder.threshold_rules

    def spy(self):
        seen.append(self)
        return original(self)

    train_module._Recorder.threshold_rules = spy
    cfg = dict(FITS[job["fit"]])
    data = anchors.load_data("adult", False)
    spec = anchors.make_specs(None)[cfg.pop("problem")]
    tr = data.train
    ds = rateopt.Dataset(tr.X, tr.y, groups=dict(tr.groups))
    problem = rateopt.Problem(constraints=anchors.rateopt_goals(spec), datasets=ds)
    rateopt.train(problem, random_state=anchors.SEED, method="proxy-swap", **cfg)
    train_module._Recorder.threshold_rules = original
    rec = seen[-1]

    def stage():
        rec._rules.clear()
        rec._rule_cells = None
        return rec.threshold_rules()

    stage()  # warm
    wall, cpu = [], []
    for _ in range(job["timed"]):
        t0, c0 = time.perf_counter(), time.process_time()
        out = stage()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    h = hashlib.sha256()
    for key in ("w", "b", "rates"):
        for v in out[key]:
            h.update(np.ascontiguousarray(v, dtype=np.float64).tobytes())
    return {"wall_s": wall, "cpu_s": cpu, "n_rules": len(out["w"]), "digest": h.hexdigest()[:16]}


def _run(tree: Path, job: dict[str, Any]) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(tree))
    if job.get("threads"):
        env["OMP_NUM_THREADS"] = str(job["threads"])
    out = subprocess.run([sys.executable, __file__, "--worker", json.dumps(job)], env=env, capture_output=True,
                         text=True, check=False)
    if out.returncode:
        raise RuntimeError(f"worker failed ({tree}): {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def markdown(res: dict[str, Any]) -> str:
    lines = [f"# The threshold-rule candidates of a fit, alone{' (--quick)' if res['quick'] else ''}", "",
             (f"{res['utc']}, git {(res['git'].get('sha') or '?')[:12]}{' (dirty)' if res['git'].get('dirty') else ''}"
              f"; {res['machine'].get('cpu_model')} x {res['machine'].get('cpu_count')}; load average (1, 5, 15 min) "
              f"{res['load_before']} before, {res['load_after']} after; {res['repeats']} interleaved repeat(s) x "
              f"{res['timed']} timed stage(s) per tree; OMP_NUM_THREADS {res.get('threads') or 'unset'}."), "",
             "Trees: " + ", ".join(f"`{t}` = {p}" for t, p in res["trees"].items()) + ".", ""]
    rows = [[fit, tree, f"{r['cpu_ms']:.1f}", f"{r['wall_ms']:.1f}", str(r["n_rules"]), ", ".join(r["digests"])]
            for fit, trees in res["results"].items() for tree, r in trees.items()]
    lines.append(markdown_table(["fit", "tree", "CPU ms (median)", "wall ms (median)", "rules", "digest"], rows))
    if res["ratios"]:
        lines += ["", "Reference / this (CPU medians of the same run):", ""]
        lines += [f"- {k}: {v:.2f}" for k, v in res["ratios"].items()]
    lines += ["", "Settings: " + json.dumps(FITS)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_args(parser)
    parser.add_argument("--reference", type=Path, default=None,
                        help="another tree's python/ directory (with its built _core) timed in the same run")
    parser.add_argument("--repeats", type=int, default=None, help="interleaved workers per tree (default 3; quick 1)")
    parser.add_argument("--timed", type=int, default=None, help="timed stages per worker (default 20; quick 3)")
    parser.add_argument("--threads", type=int, default=None, help="OMP_NUM_THREADS of the workers (default unset)")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker is not None:
        from threadpoolctl import threadpool_limits

        with threadpool_limits(1, user_api="blas"):
            print(json.dumps(worker(json.loads(args.worker))))
        return 0
    repeats = args.repeats or (1 if args.quick else 3)
    timed = args.timed or (3 if args.quick else 20)
    trees = {"this": THIS_TREE}
    if args.reference is not None:
        trees["reference"] = args.reference.resolve()
    load_before = os.getloadavg()
    samples: dict[str, dict[str, list]] = {f: {t: [] for t in trees} for f in FITS}
    for _ in range(repeats):
        for fit in FITS:
            for tree, path in trees.items():
                s = _run(path, {"fit": fit, "timed": timed, "threads": args.threads})
                samples[fit][tree].append(s)
                print(f"{fit} {tree}: {1e3 * median(s['cpu_s']):.1f} ms CPU", file=sys.stderr)
    results = {f: {t: {"cpu_ms": 1e3 * median([x for s in ss for x in s["cpu_s"]]),
                       "wall_ms": 1e3 * median([x for s in ss for x in s["wall_s"]]),
                       "cpu_samples_s": [x for s in ss for x in s["cpu_s"]],
                       "n_rules": ss[0]["n_rules"], "digests": sorted({s["digest"] for s in ss})}
                   for t, ss in ts.items()} for f, ts in samples.items()}
    ratios = {f"{fit} CPU": r["reference"]["cpu_ms"] / r["this"]["cpu_ms"]
              for fit, r in results.items() if "reference" in r}
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
