"""The threshold LP over many one-row groups: which formulation and which HiGHS method scale (issue 35).

Demographic parity at slack ``s`` over ``G`` one-row groups (uniform scores,
random labels, training error as the objective) is the LP

    min c . x   s.t.   |x_g - r| <= s,   r = mean(x),   0 <= x <= 1,

whose optimum puts every group at ``r + s`` (label 1) or ``r - s`` (label 0).
``ThresholdClassifier`` states it in its increment form (one bin per chain);
after HiGHS' presolve it is the form F0 below. Each form is handed to HiGHS
directly (highspy), so the iteration counts are HiGHS' own:

* ``F0``: the overall rate ``r`` as one column, defined by one equality row; a
  ranged row ``-s <= x_g - r <= s`` per group (``r`` has G + 1 entries).
* ``F1``: the same with ``r`` copied into ``G / b`` block copies ``r_k = r``
  and the mean summed through block sums (no row or column has more than
  ``b + 2`` entries: a sparse LP whose normal equations stay sparse).
* ``F2``: the deviations ``u_g = x_g - r`` as columns with bounds
  ``[-s, s]``: the mean row becomes ``sum u = 0`` and the bounds of ``x``
  become rows ``0 <= u_g + r <= 1``.

* ``S``: no HiGHS: rateopt's one-shared-rate solver
  (``rateopt._postprocess._shared_rate_lp.solve_shared_rate``) on the LP as
  ``ThresholdClassifier`` states it: atoms ``[label-1 error, label-0 error,
  ppr of every group, overall ppr]``, rows ``+-(ppr_g - ppr) <= s``, one bin
  per group (the bins' atom rates ``M`` built here with NumPy). Its method is
  ``shared_rate``; the time covers recognizing the structure, the hulls and
  the search. ``objective - dual`` in the table is its objective minus the
  dual simplex's (F0) at the same size, where that one ran.

Methods: dual simplex, primal simplex (presolve on), interior point with and
without crossover; ``shared_rate`` for the form ``S``. Every solve's objective is checked against a NumPy 1-D
search over ``r`` (for a fixed ``r`` the best rule is closed-form: labels 1 at
the top of the band, labels 0 at the bottom, the mean row met by the cheapest
moves): an optimal LP is never worse than any grid point. The finding (full run): every simplex
variant makes about G / 2 iterations at a cost that grows with G, so the time
grows as G^2; interior point without crossover is near-linear on F1 but ends
at an interior point (not a vertex, objective within ~1e-9 only).

Usage::

    python bench/threshold_lp_forms.py --quick --json
    python bench/threshold_lp_forms.py --sizes 3000,10000 --json
    python bench/threshold_lp_forms.py --sizes 1000,10000,100000 --forms S --repeats 7 --json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))

from _common import (  # noqa: E402
    REPO_ROOT, add_common_args, emit_json_line, git_sha, machine_info, markdown_table, results_paths, utc_now,
    write_results,
)

WORKER = r'''
import json, sys, time
import numpy as np, scipy.sparse as sp, highspy
spec = json.loads(sys.argv[1])
n, form, method, b, s = spec["groups"], spec["form"], spec["method"], spec["block"], spec["slack"]
rng = np.random.default_rng(1)
y = rng.integers(0, 2, n)
c = np.where(y == 1, -1.0, 1.0) / n          # error = mean(y) + c . x
inf = highspy.kHighsInf
g = np.arange(n)
if form == "S":
    sys.path.insert(0, spec["python_path"])
    import types
    from rateopt._postprocess._shared_rate_lp import solve_shared_rate
    pos, neg = y == 1, y == 0
    # atoms: 0 = ppr over label-1 rows, 1 = ppr over label-0 rows, 2 + g = group g's ppr, 2 + n = overall ppr
    # (the error is mean(y) - P1 ppr_1 + P0 ppr_0, as ThresholdClassifier compiles it)
    P1, P0 = pos.mean(), neg.mean()
    rows = np.concatenate([np.where(pos, 0, 1), 2 + g, np.full(n, 2 + n)])
    cols = np.concatenate([g, g, g])
    vals = np.concatenate([np.where(pos, 1.0 / max(pos.sum(), 1), 1.0 / max(neg.sum(), 1)), np.ones(n),
                           np.full(n, 1.0 / n)])
    M = sp.csc_matrix((vals, (rows, cols)), shape=(n + 3, n))
    r = np.repeat(np.arange(2 * n), 2)
    a = np.repeat(2 + g, 2)
    C = sp.csr_matrix((np.tile([1.0, -1.0, -1.0, 1.0], n),
                       (r, np.column_stack([a[0::2], np.full(n, 2 + n), a[1::2], np.full(n, 2 + n)]).ravel())),
                      shape=(2 * n, n + 3))
    coef = np.zeros(n + 3)
    coef[0], coef[1] = -P1, P0
    compiled = types.SimpleNamespace(C=C, kappa=np.full(2 * n, s), n_atoms=n + 3, objective_coef=coef,
                                     objective_constant=float(P1), metric=None)
    times = []
    for _ in range(spec["repeats"]):
        t = time.perf_counter()
        sol = solve_shared_rate(compiled, np.arange(n + 1), M)
        times.append(time.perf_counter() - t)
    dt = float(np.median(times))
    x = sol.x
    violation = float(np.max(np.abs(x - x.mean())) - s)  # recounted with NumPy: |ppr_g - ppr| - s
    info = None
elif form == "F0":
    rows = np.concatenate([np.zeros(n), [0], 1 + g, 1 + g]); cols = np.concatenate([g, [n], g, np.full(n, n)])
    vals = np.concatenate([np.full(n, 1 / n), [-1], np.ones(n), -np.ones(n)])
    lo = np.concatenate([[0], np.full(n, -s)]); hi = np.concatenate([[0], np.full(n, s)])
    cl = np.concatenate([np.zeros(n), [-inf]]); cu = np.concatenate([np.ones(n), [inf]])
    cost = np.concatenate([c, [0]])
elif form == "F1":
    K = (n + b - 1) // b; blk = g // b
    R0, RK, SK = n, n + 1, n + 1 + K
    ri = [np.zeros(K), [0], 1 + np.arange(K), 1 + blk, 1 + K + np.arange(K), 1 + K + np.arange(K), 1 + 2 * K + g,
          1 + 2 * K + g]
    ci = [SK + np.arange(K), [R0], SK + np.arange(K), g, RK + np.arange(K), np.full(K, R0), g, RK + blk]
    vi = [np.full(K, 1 / n), [-1], np.ones(K), -np.ones(n), np.ones(K), -np.ones(K), np.ones(n), -np.ones(n)]
    rows, cols, vals = (np.concatenate(v) for v in (ri, ci, vi))
    lo = np.concatenate([np.zeros(1 + 2 * K), np.full(n, -s)])
    hi = np.concatenate([np.zeros(1 + 2 * K), np.full(n, s)])
    cl = np.concatenate([np.zeros(n), np.full(1 + 2 * K, -inf)])
    cu = np.concatenate([np.ones(n), np.full(1 + 2 * K, inf)])
    cost = np.concatenate([c, np.zeros(1 + 2 * K)])
else:  # F2
    rows = np.concatenate([np.zeros(n), 1 + g, 1 + g]); cols = np.concatenate([g, g, np.full(n, n)])
    vals = np.ones(3 * n)
    lo = np.concatenate([[0], np.zeros(n)]); hi = np.concatenate([[0], np.ones(n)])
    cl = np.concatenate([np.full(n, -s), [-inf]]); cu = np.concatenate([np.full(n, s), [inf]])
    cost = np.concatenate([c, [c.sum()]])
if form != "S":
  A = sp.csc_matrix((vals, (rows, cols)), shape=(lo.size, cost.size))
  options = {"dual": dict(solver="simplex", simplex_strategy=1),
           "primal": dict(solver="simplex", simplex_strategy=4),
           "ipm": dict(solver="ipm"),
           "ipm_no_crossover": dict(solver="ipm", run_crossover="off")}[method]
  h = highspy.Highs()
  h.setOptionValue("output_flag", False)
  for k, v in dict(options, primal_feasibility_tolerance=1e-9, dual_feasibility_tolerance=1e-9).items():
      h.setOptionValue(k, v)
  lp = highspy.HighsLp()
  lp.num_col_, lp.num_row_ = cost.size, lo.size
  lp.col_cost_, lp.col_lower_, lp.col_upper_, lp.row_lower_, lp.row_upper_ = cost, cl, cu, lo, hi
  lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
  lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = cost.size, lo.size
  lp.a_matrix_.start_, lp.a_matrix_.index_ = A.indptr.astype(np.int32), A.indices.astype(np.int32)
  lp.a_matrix_.value_ = A.data
  t = time.perf_counter()
  h.passModel(lp)
  h.run()
  dt = time.perf_counter() - t
  info = h.getInfo()
# for a fixed overall rate r every group lies in [max(r - s, 0), min(r + s, 1)]: labels 1 at the top, labels 0
# at the bottom, and the mean row (sum x = n r) met by moving the cheapest groups (each unit costs 1/n);
# every grid r gives a feasible rule, so the LP optimum is never above the grid's best
ys = y.astype(float)
def best(r):
    hi_b, lo_b = min(r + s, 1.0), max(r - s, 0.0)
    x = np.where(y == 1, hi_b, lo_b)
    gap = x.sum() - n * r  # the mean row: move groups toward r until the sum is n r
    if gap > 0:  # lower some label-1 groups (cost 1/n per unit each), at most down to lo_b
        room = (hi_b - lo_b) * (y == 1).sum()
    else:
        room = (hi_b - lo_b) * (y == 0).sum()
    if abs(gap) > room + 1e-12:
        return np.inf
    return float(ys.mean() + c @ x + abs(gap) / n)
grid = np.concatenate([np.linspace(0.0, 1.0, spec["grid"]), [s, 1.0 - s]])
ref = min(best(r) for r in grid)
if info is None:
    status, obj = ("Optimal" if violation <= 1e-12 else f"violation {violation:.3g}"), float(sol.objective)
    counts = {"simplex_iterations": 0, "ipm_iterations": 0, "crossover_iterations": 0, "violation": violation}
else:
    status = h.modelStatusToString(h.getModelStatus())
    obj = float(info.objective_function_value) + float(ys.mean())
    counts = {"simplex_iterations": int(info.simplex_iteration_count), "ipm_iterations": int(info.ipm_iteration_count),
              "crossover_iterations": int(info.crossover_iteration_count)}
print("RESULT " + json.dumps({"seconds": dt, "status": status, "objective": obj, "closed_form": ref, **counts}))
'''


def run(spec, timeout):
    """One solve in a fresh interpreter: its result, or ``{"status": "timeout ..."}``."""
    load = os.getloadavg()[0]
    try:
        p = subprocess.run([sys.executable, "-c", WORKER, json.dumps(spec)], capture_output=True, text=True,
                           timeout=timeout, env=dict(os.environ, OMP_NUM_THREADS="1"))
    except subprocess.TimeoutExpired:
        return {"status": f"timeout after {timeout:.0f} s", "loadavg_before": load}
    line = next((x for x in p.stdout.splitlines()[::-1] if x.startswith("RESULT ")), None)
    if line is None:
        return {"status": "failed: " + ((p.stderr.strip().splitlines() or ["?"])[-1])[:200], "loadavg_before": load}
    out = json.loads(line[len("RESULT "):])
    out["loadavg_before"] = load
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_args(ap)
    ap.add_argument("--sizes", default=None, help="comma-separated group counts (default 3000,10000; quick 1000,3000)")
    ap.add_argument("--forms", default="F0,F1,F2,S", help="S: rateopt's one-shared-rate solver (no HiGHS)")
    ap.add_argument("--methods", default="dual,primal,ipm,ipm_no_crossover",
                    help="HiGHS methods for the forms F0-F2 (the form S has its own)")
    ap.add_argument("--python", default=str(REPO_ROOT / "python"), help="the rateopt source the form S imports")
    ap.add_argument("--block", type=int, default=100, help="F1's block size")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per solve")
    ap.add_argument("--repeats", type=int, default=1, help="solves of the form S in its process (median)")
    args = ap.parse_args(argv)
    sizes = [int(x) for x in (args.sizes or ("1000,3000" if args.quick else "3000,10000")).split(",")]
    result = {"name": "threshold_lp_forms", "quick": args.quick, "utc": utc_now(), "git": git_sha(),
              "machine": machine_info(("numpy", "scipy", "highspy")), "slack": 0.02, "block": args.block,
              "repeats": args.repeats,
              "runs": []}
    for n in sizes:
        # the reference grid's cost is points x groups: at most 2e8 (20,001 points up to 10^4 groups)
        grid = int(min(20001, max(2001, 2e8 // n)))
        for form in args.forms.split(","):
            for method in (["shared_rate"] if form == "S" else args.methods.split(",")):
                spec = {"groups": n, "form": form, "method": method, "block": args.block, "slack": 0.02,
                        "grid": grid, "python_path": args.python, "repeats": args.repeats}
                r = run(spec, args.timeout)
                r.update(groups=n, form=form, method=method, grid_points=grid)
                result["runs"].append(r)
                print(f"G={n} {form} {method}: " + (f"{r['seconds']:.3f} s, {r['status']}, simplex it "
                      f"{r['simplex_iterations']}, ipm it {r['ipm_iterations']}, crossover it "
                      f"{r['crossover_iterations']}" if "seconds" in r else r["status"]), file=sys.stderr, flush=True)
    dual = {r["groups"]: r["objective"] for r in result["runs"]
            if r["form"] == "F0" and r["method"] == "dual" and r.get("status") == "Optimal"}
    rows = [[r["groups"], r["form"], r["method"], r.get("seconds", r["status"]), r.get("status"),
             r.get("simplex_iterations"), r.get("ipm_iterations"), r.get("crossover_iterations"),
             None if "objective" not in r else r["objective"] - r["closed_form"],
             None if "objective" not in r or r["groups"] not in dual else r["objective"] - dual[r["groups"]],
             r["grid_points"], round(r["loadavg_before"], 1)] for r in result["runs"]]
    md = "\n".join([f"# Threshold LP forms over one-row groups ({'quick' if args.quick else 'full'} run, "
                    f"{result['utc']})", "",
                    "Demographic parity at 0.02 over G one-row groups, solved by HiGHS directly (forms F0-F2) or "
                    "by rateopt's one-shared-rate solver (form S; see the script's docstring for the forms). "
                    "`obj - grid best`: the LP's training error minus the best one of a 1-D search over the "
                    "overall rate (`grid` points, each a feasible rule): never above round-off for an optimal "
                    "LP, and below 0 by the grid's coarseness. `obj - dual`: minus the dual simplex's (F0) "
                    "objective at the same size. The form S's status is `Optimal` when its rule's recounted "
                    "largest |ppr_g - ppr| is within 1e-12 of the slack.", "",
                    markdown_table(["groups", "form", "method", "seconds", "status", "simplex it", "ipm it",
                                    "crossover it", "obj - grid best", "obj - dual", "grid", "load"], rows), ""])
    json_path, md_path = results_paths("threshold_lp_forms", quick=args.quick, out=args.out)
    write_results(result, md, json_path, md_path)
    print(f"wrote {json_path} and {md_path}", file=sys.stderr)
    if args.json:
        emit_json_line(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
