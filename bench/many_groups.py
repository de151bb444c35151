"""Many groups: the compiled map, post-processing and proxy-external training over 10^4 and 10^5 groups.

Issue 35 item 2. Data (``--goal dp``, the default): one-row groups (uniform
scores, random labels; for training, 5 normal features and a label that depends
on the first), demographic parity at slack 0.02 over every group: m = 2 x
groups constraints, each reading its group's atom and the overall one.
``--goal eo``: groups of 4 rows, 2 positive and 2 negative (equalized odds
needs both labels in every group: a group without positives or negatives is
refused with ``EmptySubsetError``), scores ``sigmoid(1.5 y - 0.75 + b_g + e)``
with a per-group shift ``b_g ~ N(0, 0.5^2)`` and ``e ~ N(0, 1)`` (for
training, the same shift and label effect added to the first of 5 normal
features), equalized odds at slack 0.02: m = 4 x groups constraints, each
reading its group's true (false) positive rate and the overall one; results
in ``many_groups_eo*``. Each (case, size, implementation) runs in
a fresh interpreter of its own, so that its peak memory (``VmHWM`` of
``/proc/self/status``, and ``ru_maxrss``) is its own; a worker gets an address
space limit (``--mem-limit-gib``, default 8) and a timeout.

Cases:

* ``compile``: ``rateopt.Problem(constraints=[demographic_parity("g", 0.02)])``
  (compile time, the map's stored entries ``C.nnz``).
* ``fit``: ``rateopt.ThresholdClassifier(goals=[...]).fit(s, y, groups=...)``
  (its own compile included) on the scores, split into the part before the
  threshold LP (compile, cells, bins: ``before_lp_s``), the LP (its build and
  solve, ``solve_threshold_lp``: ``lp_s``) and the rest (``after_lp_s``).
* ``fit_prelp``: the same fit stopped where the LP starts (``before_lp_s``
  only), for sizes whose LP takes too long.
* ``train``: compile, then ``rateopt.train(problem, method="proxy-external",
  n_iter=N, record_every=10)`` (N = 100; ``--quick``: 30), which runs in the
  Python loop over the map's sparse factors.

Targets (issue 35, "Many groups"): 10^5 compile and fit within 2 GiB; 10^5 take
<= 12x the time of 10^4; 10^4 take <= 0.3 s (the fit). Reported as well: the
part before the LP at 10^4 (<= 0.3 s) and its 10^5 / 10^4 ratio.

A run of some of the cases (``--cases``) writes ``many_groups_<cases>.json``
and ``.md`` (the full run: ``many_groups.json``); ``--reference-sizes`` limits
the reference to some sizes.

``--reference PATH`` runs every case again with ``PYTHONPATH=PATH`` (e.g. the
parent commit's ``python/``): its times and memory, or its failure (the dense
map's ``MemoryError`` under the address-space limit). The load average before
and after each worker and the other processes' CPU use during it
(``external_cores``) are recorded: the machine is shared.

Usage::

    python bench/many_groups.py --quick --json
    python bench/many_groups.py --reference /tmp/parent/python --json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))

from _common import (  # noqa: E402
    REPO_ROOT, CpuMonitor, add_common_args, emit_json_line, git_sha, machine_info, markdown_table, results_paths,
    utc_now, write_results,
)

WORKER = r'''
import json, resource, sys, time
import numpy as np
spec = json.loads(sys.argv[1])
import rateopt as ro
n, case = spec["groups"], spec["case"]
rng = np.random.default_rng(1)
out = {}
if spec.get("goal", "dp") == "eo":
    # groups of 4 rows, 2 positive and 2 negative (equalized odds refuses a group without both labels);
    # scores and the first feature depend on the label and on a per-group shift, so the goals bind
    per = 4
    g = np.repeat(np.arange(n), per)
    y_eo = np.tile(np.array([1, 0, 1, 0]), n)
    shift = rng.normal(0.0, 0.5, n)[g]
    goal = ro.goals.equalized_odds("g", slack=spec.get("slack", 0.02))
else:
    g = np.arange(n)
    goal = ro.goals.demographic_parity("g", slack=spec.get("slack", 0.02))
rows = g.size
if case in ("fit", "fit_prelp"):
    import rateopt._postprocess._rule as rule_module
    marks = {}
    solve = rule_module.solve_threshold_lp

    class StopAtLP(Exception):
        pass

    def timed_solve(*args, **kwargs):  # the LP: its build and solve (everything after is the result's report)
        marks["lp_start"] = time.perf_counter()
        if case == "fit_prelp":
            raise StopAtLP
        out_ = solve(*args, **kwargs)
        marks["lp_end"] = time.perf_counter()
        return out_

    rule_module.solve_threshold_lp = timed_solve
    if spec.get("goal", "dp") == "eo":
        y = y_eo
        s = 1.0 / (1.0 + np.exp(-(1.5 * y - 0.75 + shift + rng.normal(size=rows))))
    else:
        s, y = rng.random(n), rng.integers(0, 2, n)
    clf = ro.ThresholdClassifier(goals=[goal])
    t = time.perf_counter()
    try:
        clf.fit(s, y, groups={"g": g})
    except StopAtLP:
        pass
    end = time.perf_counter()
    if "lp_start" in marks:
        out["before_lp_s"] = marks["lp_start"] - t
    if case == "fit":
        out["fit_s"] = end - t
        if "lp_end" in marks:
            out["lp_s"] = marks["lp_end"] - marks["lp_start"]
            out["after_lp_s"] = end - marks["lp_end"]
        out["objective"] = float(clf.training_.objective)
        out["max_violation"] = float(clf.violation_) if np.ndim(clf.violation_) == 0 else None
else:
    X = rng.normal(size=(rows, 5))
    if spec.get("goal", "dp") == "eo":
        y = y_eo
        X[:, 0] += 1.5 * y - 0.75 + shift
    else:
        y = (X[:, 0] + rng.normal(size=n) > 0).astype(np.int64)
    ds = ro.Dataset(X, y, groups={"g": g})
    t = time.perf_counter(); problem = ro.Problem(constraints=[goal], datasets=ds)
    out["compile_s"] = time.perf_counter() - t
    C = problem.compiled.C
    out["n_constraints"] = int(C.shape[0])
    out["map_entries"] = int(getattr(C, "nnz", None) or np.count_nonzero(C))
    out["map_bytes"] = (int(C.B.data.nbytes + C.B.indices.nbytes + C.B.indptr.nbytes) if hasattr(C, "B")
                        else int(C.nbytes))
    if case == "train":
        t = time.perf_counter()
        res = ro.train(problem, method="proxy-external", n_iter=spec["n_iter"], record_every=10)
        out["train_s"] = time.perf_counter() - t
        out["final_objective"] = float(res.objectives[-1])
        out["final_max_constraint"] = float(res.constraints[-1].max())
hwm = None
with open("/proc/self/status") as f:
    for line in f:
        if line.startswith("VmHWM:"):
            hwm = int(line.split()[1]) / 1024
out["peak_mib"] = hwm
out["ru_maxrss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print("RESULT " + json.dumps(out))
'''


def _vm_hwm_mib(pid):
    """A running process's peak resident memory (``VmHWM``), MiB; None when unreadable."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def run_worker(pythonpath, spec, timeout, mem_limit_gib):
    """One case in a fresh interpreter: its result dict, or ``{"status": ...}`` on a timeout or failure."""
    import resource

    env = dict(os.environ, PYTHONPATH=str(pythonpath), OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    lim = int(mem_limit_gib * 2**30)

    def pre():
        resource.setrlimit(resource.RLIMIT_AS, (lim, lim))

    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    with CpuMonitor() as mon:
        proc = subprocess.Popen([sys.executable, "-c", WORKER, json.dumps(spec)], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, preexec_fn=pre)
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            peak = _vm_hwm_mib(proc.pid)  # the worker's peak so far, read before it is stopped
            proc.kill()
            proc.communicate()
            out = {"status": f"timeout after {timeout:.0f} s", "loadavg_before": load0}
            if peak is not None:
                out["peak_at_timeout_mib"] = peak
            return out
    wall = time.perf_counter() - t0
    line = next((x for x in stdout.splitlines()[::-1] if x.startswith("RESULT ")), None)
    if proc.returncode != 0 or line is None:
        err = (stderr.strip().splitlines() or ["?"])[-1]
        return {"status": f"failed: {err[:200]}", "loadavg_before": load0}
    out = json.loads(line[len("RESULT "):])
    out.update(status="ok", wall_s=wall, loadavg_before=load0, loadavg_after=os.getloadavg()[0],
               external_cores=mon.external_cores)
    return out


#: The data and goal of each ``--goal``.
GOALS = {"dp": "one-row groups, demographic parity at 0.02 (m = 2 x groups)",
         "eo": "groups of 4 rows (2 positive, 2 negative), equalized odds at 0.02 (m = 4 x groups)"}

#: The timings of a worker's result.
TIMES = ("compile_s", "fit_s", "before_lp_s", "lp_s", "after_lp_s", "train_s")


def median_run(runs):
    """One result of repeated workers: the first successful one with each timing replaced by the median
    over the successful runs (all runs kept under ``repeats``); the first failure when none succeeded."""
    ok = [r for r in runs if r.get("status") == "ok"]
    if not ok:
        return runs[0]
    out = dict(ok[0])
    for k in TIMES:
        vals = sorted(r[k] for r in ok if k in r)
        if vals:
            mid = len(vals) // 2
            out[k] = vals[mid] if len(vals) % 2 else 0.5 * (vals[mid - 1] + vals[mid])
    out["peak_mib"] = max(r["peak_mib"] for r in ok)
    if len(runs) > 1:
        out["repeats"] = runs
    return out


def targets(cases):
    """The issue's many-groups targets, from the ``this`` runs."""
    out = {}

    def get(case, n, key):
        r = cases.get(f"{case}_{n}", {}).get("this", {})
        return r.get(key) if r.get("status") == "ok" else None

    f4, f5 = get("fit", 10_000, "fit_s"), get("fit", 100_000, "fit_s")
    if f4 is not None:
        out["fit_1e4_s"] = {"value": f4, "target": 0.3, "met": f4 <= 0.3}
    if f4 and f5 is not None:
        out["fit_1e5_over_1e4"] = {"value": f5 / f4, "target": 12.0, "met": f5 / f4 <= 12.0}
    # the part before the LP from one case at both sizes: the full fit's when it ran at both, else fit_prelp's
    b4, b5 = get("fit", 10_000, "before_lp_s"), get("fit", 100_000, "before_lp_s")
    if b4 is None or b5 is None:
        b4 = get("fit_prelp", 10_000, "before_lp_s") or b4
        b5 = get("fit_prelp", 100_000, "before_lp_s") or b5
    if b4 is not None:
        out["before_lp_1e4_s"] = {"value": b4, "target": 0.3, "met": b4 <= 0.3}
    if b4 and b5 is not None:
        out["before_lp_1e5_over_1e4"] = {"value": b5 / b4, "target": 12.0, "met": b5 / b4 <= 12.0}
    c4, c5 = get("compile", 10_000, "compile_s"), get("compile", 100_000, "compile_s")
    if c4 and c5 is not None:
        out["compile_1e5_over_1e4"] = {"value": c5 / c4, "target": 12.0, "met": c5 / c4 <= 12.0}
    # the fit's optimum against the reference's (HiGHS on main) wherever both finished
    for n in sorted({rec["groups"] for rec in cases.values() if rec["case"] == "fit"}):
        rec = cases.get(f"fit_{n}", {})
        a, b = rec.get("this", {}), rec.get("reference", {})
        if a.get("status") == "ok" and b.get("status") == "ok" and "objective" in a and "objective" in b:
            gap = abs(a["objective"] - b["objective"])
            out[f"fit_{n}_objective_minus_reference"] = {"value": a["objective"] - b["objective"],
                                                         "target": 1e-9, "met": gap <= 1e-9}
    for case in ("compile", "fit", "fit_prelp", "train"):
        mem = get(case, 100_000, "peak_mib")
        if mem is not None:
            limit = None if case == "train" else 2.0  # training's memory is reported, with no target
            out[f"{case}_1e5_peak_gib"] = {"value": mem / 1024, "target": limit,
                                          "met": None if limit is None else mem / 1024 <= limit}
    return out


def markdown(result):
    lines = [f"# Many groups ({'quick' if result['quick'] else 'full'} run, {result['utc']})", "",
             f"{result.get('goal', GOALS['dp'])}. Peak memory: the worker's VmHWM.",
             f"git: {result['git'].get('sha', '?')}; reference: {result['implementations'].get('reference', '-')}",
             ""]
    rows = []
    for key, rec in result["cases"].items():
        for name in result["implementations"]:
            r = rec.get(name)
            if r is None:
                continue
            ok = r.get("status") == "ok"
            rows.append([rec["case"], rec["groups"], name,
                         r.get("compile_s") if ok else None, r.get("fit_s") if ok else None,
                         r.get("before_lp_s") if ok else None, r.get("lp_s") if ok else None,
                         r.get("train_s") if ok else None, r.get("map_entries") if ok else None,
                         r.get("peak_mib") if ok else None,
                         r.get("objective") if ok else None, r.get("max_violation") if ok else None,
                         f"{r.get('loadavg_before', float('nan')):.1f}",
                         r.get("external_cores") if ok else None,
                         "ok" if ok else (r["status"] + (f" (peak so far {r['peak_at_timeout_mib']:.0f} MiB)"
                                                          if "peak_at_timeout_mib" in r else ""))])
    lines.append(markdown_table(["case", "groups", "rateopt", "compile s", "fit s", "before LP s", "LP s",
                                 "train s", "C entries",
                                 "peak MiB", "objective", "max violation", "load before", "other cores busy",
                                 "status"], rows))
    lines += ["", "## Targets", ""]
    lines.append(markdown_table(["target", "value", "limit", "met"],
                                [[k, v["value"], v["target"], v["met"]] for k, v in result["targets"].items()]))
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_args(ap)
    ap.add_argument("--reference", type=Path, default=None,
                    help="a checkout's python/ directory with the rateopt to compare against (e.g. the parent's)")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds a worker may take (default 600)")
    ap.add_argument("--mem-limit-gib", type=float, default=8.0, help="each worker's address-space limit (GiB)")
    ap.add_argument("--cases", default="compile,fit,train",
                    help="comma-separated subset of compile,fit,fit_prelp,train")
    ap.add_argument("--repeats", type=int, default=1,
                    help="workers per (case, size, implementation), interleaved; the median is reported")
    ap.add_argument("--sizes", default="10000,100000", help="comma-separated group counts")
    ap.add_argument("--goal", choices=("dp", "eo"), default="dp",
                    help="dp: one-row groups, demographic parity at 0.02 (default); eo: groups of 4 rows "
                         "(2 positive, 2 negative), equalized odds at 0.02 (results: many_groups_eo*)")
    ap.add_argument("--slack", type=float, default=0.02,
                    help="the goal's slack (default 0.02, the issue's; results of another slack need --out)")
    ap.add_argument("--reference-sizes", default=None,
                    help="comma-separated group counts the reference runs at (default: every size)")
    args = ap.parse_args(argv)
    quick = args.quick
    sizes = [int(s) for s in args.sizes.split(",")]
    cases = args.cases.split(",")
    ref_sizes = set(sizes if args.reference_sizes is None else (int(s) for s in args.reference_sizes.split(",")))

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    impls = {"this": REPO_ROOT / "python"}
    if args.reference is not None:
        impls["reference"] = args.reference.resolve()
    goal_text = GOALS[args.goal] if args.slack == 0.02 else GOALS[args.goal].replace("at 0.02", f"at {args.slack:g}")
    result = {"name": "many_groups", "goal": goal_text, "slack": args.slack, "quick": quick, "utc": utc_now(),
              "git": git_sha(), "machine": machine_info(),
              "implementations": {k: str(v) for k, v in impls.items()}, "cases": {}}
    n_iter = 30 if quick else 100
    for case in cases:
        for n in sizes:
            rec = {"case": case, "groups": n, "rows": n if args.goal == "dp" else 4 * n, "goal": goal_text}
            if case == "train":
                rec.update(method="proxy-external", n_iter=n_iter, record_every=10)
            runs: dict = {}
            for _ in range(max(args.repeats, 1)):  # interleaved: this, reference, this, reference, ...
                for name, pp in impls.items():
                    if name == "reference" and n not in ref_sizes:
                        continue
                    spec = {"case": case, "groups": n, "n_iter": n_iter, "goal": args.goal, "slack": args.slack}
                    r = run_worker(pp, spec, args.timeout, args.mem_limit_gib)
                    msg = (", ".join(f"{k} {r[k]:.3f}" for k in TIMES if k in r)
                           + f", peak {r['peak_mib']:.0f} MiB" if r.get("status") == "ok" else r["status"])
                    log(f"{case} groups={n} {name}: {msg} (load {r.get('loadavg_before', float('nan')):.1f})")
                    runs.setdefault(name, []).append(r)
            for name, rs in runs.items():
                rec[name] = median_run(rs)
            result["cases"][f"{case}_{n}"] = rec
    result["targets"] = targets(result["cases"])
    stem = "many_groups" if args.goal == "dp" else "many_groups_eo"
    json_path, md_path = results_paths(stem, quick=quick, out=args.out)
    if args.out is None and set(cases) != {"compile", "fit", "train"}:  # a partial run: its own files
        json_path = json_path.with_name(json_path.stem + "_" + "_".join(cases) + json_path.suffix)
        md_path = json_path.with_suffix(".md")
    write_results(result, markdown(result), json_path, md_path)
    log(f"wrote {json_path} and {md_path}")
    if args.json:
        emit_json_line(result)


if __name__ == "__main__":
    main()
