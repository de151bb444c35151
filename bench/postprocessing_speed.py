"""Speed of threshold post-processing against one sort of the scores (issue 35 item 1, issue 32 item 14).

Cases (each timed in a worker process of its own, so that its peak memory is
its own; every ratio is a ratio of medians from one process):

* ``census``: :class:`rateopt.ThresholdClassifier` fitted on the scores of
  ``compare_postprocessing.py``'s sweep (KDD census, the training split of
  ~209,500 rows, LogisticRegression scores; groups: the sweep's crc32 buckets,
  k = 2, 4 and 64, as object arrays of strings as the sweep passes them),
  demographic parity at 0.02 (``pairwise=True``), error objective. Baseline in
  the same process: one ``np.argsort`` of the scores. Rounds interleave the
  argsort and the fit; both wall and CPU (process) time are recorded, and
  the ratio of their medians given for each. Target: fit <= 5x argsort at
  k = 2 (stretch 3x).
  Under ``--quick`` the scores are synthetic, of the same size (no census
  download or model fit; logistic of a label-dependent normal, rounded to 6
  decimals so that scores repeat as census' do).
* ``thresholded``: :class:`rateopt.RateConstrainedClassifier` on 10,000
  synthetic rows (20 features, 6 groups of unequal size, demographic parity at
  0.05, ``n_iter=2500, record_every=10``: 250 recorded iterates), the plain
  fit (``solution="m-stochastic"``) against ``solution="thresholded"``. Target:
  thresholded <= 2x the plain fit.
* ``groups``: one-row groups, 10^4 and 10^5 rows (uniform scores, random
  labels), no goal (the measurement of issue 32 item 14) and demographic
  parity at 0.02 (10^4 only here; ``bench/many_groups.py`` measures 10^5
  groups under the goal, with the compile and proxy-external training). Fit time and the worker's peak RSS. Targets: 10^4 <=
  0.3 s, 10^5 <= 12x 10^4 and within 2 GiB.

``--reference PATH`` runs every case a second time with ``PYTHONPATH=PATH`` (a
checkout's ``python/`` directory holding another rateopt, e.g. the parent
commit's): its times, and the largest difference between the two rules'
training-row probabilities and objectives (the results must agree). A
reference case that exceeds ``--reference-timeout`` seconds is reported as
such.

The machine is shared: the load average before and after each case is
recorded, and ``CpuMonitor`` measures the other processes' CPU use during each
worker (``external_cores``).

Usage::

    python bench/postprocessing_speed.py --quick --json
    python bench/postprocessing_speed.py --reference /path/to/parent/python
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))

from _common import (  # noqa: E402
    REPO_ROOT, CpuMonitor, add_common_args, emit_json_line, git_sha, machine_info, markdown_table, median,
    results_paths, utc_now, write_results,
)

CACHE = BENCH_DIR / ".cache" / "census_logreg.npz"
SWEEP_KS = (2, 4, 64)


# --------------------------------------------------------------------------- data


def census_scores(log):
    """The sweep's census logistic-regression scores, labels and k-bucket groups (cached in bench/.cache)."""
    if CACHE.exists():
        d = np.load(CACHE, allow_pickle=False)
        if all(f"g{k}" in d.files for k in SWEEP_KS):
            return {"s": d["s"], "y": d["y"], **{f"g{k}": d[f"g{k}"] for k in SWEEP_KS}}
    import compare_postprocessing as cp

    t0 = time.perf_counter()
    prob = cp.load_problem("census_race_sex", False)
    bd, (tr, _te) = prob["bd"], prob["idx"]
    s = cp.fit_scores(prob, "logreg")
    out = {"s": s["s_train"], "y": prob["y_train"], **{f"g{k}": cp.sweep_groups(bd, tr, k) for k in SWEEP_KS}}
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    np.savez(CACHE, **out)
    log(f"census scores built in {time.perf_counter() - t0:.1f} s (cached in {CACHE})")
    return out


def synthetic_scores(n=209_500, seed=0):
    """Synthetic scores of census' size (2 groups)."""
    rng = np.random.default_rng(seed)
    g = rng.choice(["h0", "h1"], n, p=[0.7, 0.3])
    y = (rng.random(n) < 0.062).astype(np.int64)
    s = np.round(1 / (1 + np.exp(-(3 * y - 3 + rng.normal(size=n) + 0.5 * (g == "h0")))), 6)
    return {"s": s, "y": y, "g2": g}


def log(msg):
    """A progress line on stderr."""
    print(msg, file=sys.stderr, flush=True)


def implementations(reference):
    """The rateopts to run: ``{"this": this checkout's python/}``, plus ``"reference"`` when given."""
    impls = {"this": REPO_ROOT / "python"}
    if reference is not None:
        impls["reference"] = Path(reference).resolve()
    return impls


def thresholded_spec(path, quick):
    """The thresholded case's rows (seed 0) written to ``path``, and its worker spec."""
    rng = np.random.default_rng(0)
    n = 4_100 if quick else 10_000  # 250 x 4,100 rows > 1e6: the binned first pass, as at 10,000
    X = rng.normal(size=(n, 20))
    g = rng.choice([f"r{i}" for i in range(6)], n, p=[0.5, 0.2, 0.1, 0.1, 0.05, 0.05])
    y = (X[:, 0] + 0.5 * X[:, 1] + 0.3 * (g == "r0") + rng.normal(size=n) > 0.3).astype(np.int64)
    np.savez(path, X=X, y=y, g=g)
    n_iter, every = (500, 2) if quick else (2500, 10)
    return {"case": "thresholded", "data": str(path), "rounds": 1 if quick else 3, "n_iter": n_iter,
            "record_every": every}


# --------------------------------------------------------------------------- workers (run with -c in a subprocess)

WORKER = r'''
import json, sys, time, resource, warnings
import numpy as np
import rateopt as ro
spec = json.loads(sys.argv[1])
d = np.load(spec["data"], allow_pickle=False)
out = {"rateopt_file": ro.__file__}

def interleaved(fns, rounds):
    samples = {k: [] for k in fns}
    cpu = {k: [] for k in fns}
    for k, f in fns.items():
        f()  # warm-up
    for _ in range(rounds):
        for k, f in fns.items():
            t, c = time.perf_counter(), time.process_time(); f()
            samples[k].append(time.perf_counter() - t); cpu[k].append(time.process_time() - c)
    return samples, cpu

if spec["case"] == "census":
    s, y, g = d["s"], d["y"], d["g"].astype(object)
    clf = ro.ThresholdClassifier(goals=[ro.goals.demographic_parity("g", slack=0.02, pairwise=True)])
    fit = lambda: clf.fit(s, y, groups={"g": g})
    samples, cpu = interleaved({"argsort": lambda: np.argsort(s), "fit": fit}, spec["rounds"])
    out["samples"], out["cpu_samples"] = samples, cpu
    out["p"] = clf.predict_proba(s, groups={"g": g})[:, 1].tolist()
    out["objective"] = float(clf.training_.objective)
    out["n_bins"] = int(clf.rule_.edges.size)
elif spec["case"] == "thresholded":
    X, y, g = d["X"], d["y"], d["g"].astype(object)
    kw = dict(goals=[ro.goals.demographic_parity("g", slack=0.05)], n_iter=spec["n_iter"],
              record_every=spec["record_every"], random_state=0)
    models = {}
    def fit(kind):
        def f():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                models[kind] = ro.RateConstrainedClassifier(solution=kind, **kw).fit(X, y, groups={"g": g})
        return f
    fns = {"plain": fit("m-stochastic"), "thresholded": fit("thresholded")}
    samples = {k: [] for k in fns}
    for _ in range(spec["rounds"]):  # no warm-up: each fit is seconds long
        for k, f in fns.items():
            t = time.perf_counter(); f(); samples[k].append(time.perf_counter() - t)
    out["samples"] = samples
    m = models["thresholded"]
    p = m.predict_proba(X)[:, 1]
    out["p"] = p.tolist()
    out["objective"] = float(np.mean(np.where(y == 1, 1 - p, p)))  # expected training error
    out["support"] = int(m.classifier_.n_models)
else:  # groups
    s, y, g = d["s"], d["y"], d["g"]
    goals = [ro.goals.demographic_parity("g", slack=0.02)] if spec["goal"] == "dp" else []
    clf = ro.ThresholdClassifier(goals=goals)
    fit = lambda: clf.fit(s, y, groups={"g": g})
    samples = {"fit": []}
    for i in range(spec["rounds"] + 1):  # the first fit is a warm-up (one-time costs of the process)
        t = time.perf_counter(); fit(); dt = time.perf_counter() - t
        if i or spec["rounds"] == 0:
            samples["fit"].append(dt)
    out["samples"] = samples
    out["p"] = clf.predict_proba(s, groups={"g": g})[:, 1].tolist()
    out["objective"] = float(clf.training_.objective)
def _hwm_mib():  # this process's own peak RSS (ru_maxrss would include the parent's, inherited over exec)
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
out["peak_rss_mib"] = _hwm_mib()
print("RESULT " + json.dumps(out))
'''


def run_worker(pythonpath, spec, timeout, mem_limit_gib=None):
    """Run one case in a fresh interpreter; its result dict, or ``{"status": ...}`` on a timeout or failure."""
    env = dict(os.environ, PYTHONPATH=str(pythonpath), OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    pre = None
    if mem_limit_gib is not None:
        import resource

        def pre():
            lim = int(mem_limit_gib * 2**30)
            resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    try:
        with CpuMonitor() as mon:
            proc = subprocess.run([sys.executable, "-c", WORKER, json.dumps(spec)], env=env, capture_output=True,
                                  text=True, timeout=timeout, preexec_fn=pre)
    except subprocess.TimeoutExpired:
        return {"status": f"timeout after {timeout:.0f} s"}
    wall = time.perf_counter() - t0
    line = next((x for x in proc.stdout.splitlines()[::-1] if x.startswith("RESULT ")), None)
    if proc.returncode != 0 or line is None:
        err = (proc.stderr.strip().splitlines() or ["?"])[-1]
        return {"status": f"failed: {err[:200]}"}
    out = json.loads(line[len("RESULT "):])
    out.update(status="ok", wall_s=wall, loadavg_before=load0, loadavg_after=os.getloadavg()[0],
               external_cores=mon.external_cores)
    return out


def summarize(rec):
    """Medians of a worker's samples (the raw samples stay in the JSON)."""
    if rec.get("status") != "ok":
        return rec
    rec["median_s"] = {k: median(v) for k, v in rec["samples"].items()}
    if rec.get("cpu_samples"):
        rec["median_cpu_s"] = {k: median(v) for k, v in rec["cpu_samples"].items()}
    return rec


def agreement(a, b):
    """Largest difference of training-row probabilities and objectives between two runs of a case."""
    if a.get("status") != "ok" or b.get("status") != "ok":
        return None
    pa, pb = np.asarray(a["p"]), np.asarray(b["p"])
    obj = None
    if a.get("objective") is not None and b.get("objective") is not None:
        obj = abs(a["objective"] - b["objective"])
    return {"max_abs_p_diff": float(np.max(np.abs(pa - pb))) if pa.shape == pb.shape else None,
            "objective_diff": obj}


# --------------------------------------------------------------------------- main


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_args(ap)
    ap.add_argument("--reference", type=Path, default=None,
                    help="a checkout's python/ directory with the rateopt to compare against (e.g. the parent's)")
    ap.add_argument("--reference-timeout", type=float, default=180.0,
                    help="seconds a reference case may take (default 180)")
    ap.add_argument("--cases", default="census,thresholded,groups",
                    help="comma-separated subset of census,thresholded,groups")
    args = ap.parse_args(argv)
    quick = args.quick
    cases = set(args.cases.split(","))

    impls = implementations(args.reference)
    tmp = Path(tempfile.mkdtemp(prefix="ppspeed-"))
    result = {"name": "postprocessing_speed", "quick": quick, "utc": utc_now(), "git": git_sha(),
              "machine": machine_info(), "implementations": {k: str(v) for k, v in impls.items()},
              "cases": {}}

    if "census" in cases:
        data = synthetic_scores() if quick else census_scores(log)
        source = "synthetic, census-sized" if quick else "census logreg (compare_postprocessing sweep)"
        ks = (2,) if quick else SWEEP_KS
        for k in ks:
            path = tmp / f"census{k}.npz"
            np.savez(path, s=data["s"], y=data["y"], g=data[f"g{k}"])
            rec = {"rows": int(data["s"].size), "groups": k, "scores": source}
            for name, pp in impls.items():
                spec = {"case": "census", "data": str(path), "rounds": 3 if quick else 7}
                r = summarize(run_worker(pp, spec, args.reference_timeout if name != "this" else 600))
                if r.get("status") == "ok":
                    r["fit_over_argsort"] = r["median_s"]["fit"] / r["median_s"]["argsort"]
                    r["fit_over_argsort_cpu"] = r["median_cpu_s"]["fit"] / r["median_cpu_s"]["argsort"]
                    log(f"census k={k} {name}: fit {r['median_s']['fit']:.3f} s, argsort "
                        f"{r['median_s']['argsort']:.4f} s, ratio {r['fit_over_argsort']:.2f} "
                        f"(CPU time {r['fit_over_argsort_cpu']:.2f})")
                else:
                    log(f"census k={k} {name}: {r['status']}")
                rec[name] = r
            if "reference" in rec:
                rec["agreement"] = agreement(rec["this"], rec["reference"])
            result["cases"][f"census_k{k}"] = rec

    if "thresholded" in cases:
        spec = thresholded_spec(tmp / "thresholded.npz", quick)
        rec = {"rows": 4_100 if quick else 10_000, "features": 20, "groups": 6, "n_iter": spec["n_iter"],
               "record_every": spec["record_every"], "records": spec["n_iter"] // spec["record_every"]}
        for name, pp in impls.items():
            r = summarize(run_worker(pp, spec, args.reference_timeout * 3 if name != "this" else 900))
            if r.get("status") == "ok":
                r["thresholded_over_plain"] = r["median_s"]["thresholded"] / r["median_s"]["plain"]
                log(f"thresholded {name}: plain {r['median_s']['plain']:.2f} s, thresholded "
                    f"{r['median_s']['thresholded']:.2f} s, ratio {r['thresholded_over_plain']:.2f}")
            else:
                log(f"thresholded {name}: {r['status']}")
            rec[name] = r
        if "reference" in rec:
            rec["agreement"] = agreement(rec["this"], rec["reference"])
        result["cases"]["thresholded"] = rec

    if "groups" in cases:
        sizes = [(10_000, "none"), (100_000, "none"), (10_000, "dp")]
        if quick:
            sizes = [(10_000, "none"), (100_000, "none")]
        for n, goal in sizes:
            rng = np.random.default_rng(1)
            path = tmp / f"groups{n}.npz"
            np.savez(path, s=rng.random(n), y=rng.integers(0, 2, n), g=np.array([f"g{i}" for i in range(n)]))
            rec = {"rows": n, "groups": n, "goal": "demographic parity 0.02" if goal == "dp" else "none"}
            for name, pp in impls.items():
                spec = {"case": "groups", "data": str(path), "rounds": 1 if (quick or n > 10_000) else 3,
                        "goal": goal}
                r = summarize(run_worker(pp, spec, args.reference_timeout if name != "this" else 600,
                                         mem_limit_gib=8))
                log(f"groups n={n} goal={goal} {name}: " + (
                    f"{r['median_s']['fit']:.3f} s, peak {r['peak_rss_mib']:.0f} MiB" if r.get("status") == "ok"
                    else r["status"]))
                rec[name] = r
            if "reference" in rec:
                rec["agreement"] = agreement(rec["this"], rec["reference"])
            result["cases"][f"groups_{n}_{goal}"] = rec

    for rec in result["cases"].values():  # the per-row probabilities are for the agreement check only
        for name in impls:
            if isinstance(rec.get(name), dict):
                rec[name].pop("p", None)
    result["targets"] = targets(result["cases"])
    json_path, md_path = results_paths("postprocessing_speed", quick=quick, out=args.out)
    write_results(result, markdown(result), json_path, md_path)
    log(f"wrote {json_path} and {md_path}")
    if args.json:
        emit_json_line(result)
    return 0


def _med(rec, name, key):
    r = rec.get(name) or {}
    return (r.get("median_s") or {}).get(key)


def targets(cases):
    """Each target with its number and whether it is met."""
    out = {}
    c = cases.get("census_k2")
    if c and c["this"].get("status") == "ok":
        ratio = c["this"]["fit_over_argsort"]
        out["census_fit_over_argsort"] = {"value": ratio, "target": 5.0, "stretch": 3.0, "met": ratio <= 5.0,
                                          "stretch_met": ratio <= 3.0}
        ratio = c["this"].get("fit_over_argsort_cpu")
        if ratio is not None:
            out["census_fit_over_argsort_cpu"] = {"value": ratio, "target": 5.0, "stretch": 3.0,
                                                  "met": ratio <= 5.0, "stretch_met": ratio <= 3.0}
    t = cases.get("thresholded")
    if t and t["this"].get("status") == "ok":
        ratio = t["this"]["thresholded_over_plain"]
        out["thresholded_over_plain"] = {"value": ratio, "target": 2.0, "met": ratio <= 2.0}
    g4, g5 = cases.get("groups_10000_none"), cases.get("groups_100000_none")
    if g4 and g4["this"].get("status") == "ok":
        v = _med(g4, "this", "fit")
        out["groups_1e4_s"] = {"value": v, "target": 0.3, "met": v <= 0.3}
    if g4 and g5 and g5["this"].get("status") == "ok" and g4["this"].get("status") == "ok":
        ratio = _med(g5, "this", "fit") / _med(g4, "this", "fit")
        out["groups_1e5_over_1e4"] = {"value": ratio, "target": 12.0, "met": ratio <= 12.0}
        mem = g5["this"]["peak_rss_mib"] / 1024
        out["groups_1e5_peak_gib"] = {"value": mem, "target": 2.0, "met": mem <= 2.0}
    return out


def markdown(result):
    cases, impls = result["cases"], list(result["implementations"])
    lines = [f"# Post-processing speed ({'quick' if result['quick'] else 'full'} run, {result['utc']})", "",
             f"git {result['git'].get('sha', '?')[:12]}; load average at start "
             f"{result['machine'].get('loadavg', ['?'])[0]}; implementations: "
             + ", ".join(f"{k} = `{v}`" for k, v in result["implementations"].items()), ""]
    rows = []
    for key, rec in cases.items():
        if key.startswith("census"):
            for name in impls:
                r = rec.get(name, {})
                ok = r.get("status") == "ok"
                rows.append([key, name, _med(rec, name, "argsort"), _med(rec, name, "fit"),
                             r.get("fit_over_argsort") if ok else r.get("status"),
                             r.get("fit_over_argsort_cpu") if ok else None, r.get("n_bins"),
                             r.get("external_cores")])
    if rows:
        lines += ["## ThresholdClassifier.fit against one np.argsort (medians, one process per row)", "",
                  "fit / argsort: of wall-time medians; CPU: of CPU-time medians (process time, which a loaded "
                  "machine inflates less).", "",
                  markdown_table(["case", "rateopt", "argsort s", "fit s", "fit / argsort", "CPU fit / argsort",
                                  "LP bins", "other cores busy"], rows), ""]
    t = cases.get("thresholded")
    if t:
        rows = []
        for name in impls:
            r = t.get(name, {})
            ok = r.get("status") == "ok"
            rows.append([name, _med(t, name, "plain"), _med(t, name, "thresholded"),
                         r.get("thresholded_over_plain") if ok else r.get("status"), r.get("support"),
                         r.get("external_cores")])
        lines += [f"## solution='thresholded' ({t['rows']} rows, {t['groups']} groups, {t['records']} records)", "",
                  markdown_table(["rateopt", "plain fit s", "thresholded fit s", "ratio", "support models",
                                  "other cores busy"], rows), ""]
    rows = []
    for key, rec in cases.items():
        if key.startswith("groups"):
            for name in impls:
                r = rec.get(name, {})
                ok = r.get("status") == "ok"
                rows.append([rec["rows"], rec["goal"], name, _med(rec, name, "fit") if ok else r.get("status"),
                             r.get("peak_rss_mib") if ok else None, r.get("external_cores")])
    if rows:
        lines += ["## One-row groups (ThresholdClassifier.fit; peak RSS of the worker process)", "",
                  markdown_table(["rows = groups", "goal", "rateopt", "fit s", "peak MiB", "other cores busy"],
                                 rows), ""]
    agree = [(k, rec["agreement"]) for k, rec in cases.items() if rec.get("agreement")]
    if agree:
        lines += ["## Agreement with the reference", "",
                  markdown_table(["case", "max abs(p - p_ref), training rows", "abs(objective - objective_ref)"],
                                 [[k, a["max_abs_p_diff"], a["objective_diff"]] for k, a in agree]), ""]
    lines += ["## Targets", "", markdown_table(
        ["target", "value", "bound", "met"],
        [[k, v["value"], v["target"], "yes" if v["met"] else "no"] for k, v in result["targets"].items()]), ""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
