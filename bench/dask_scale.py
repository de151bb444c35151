"""rateopt.dask on a LocalCluster: per-iteration time with 1 and 2 workers, and a cost model beyond.

A synthetic sparse dataset is generated on the workers, partition by partition
(never materialized on the client): CSR rows with ``nnz`` non-zeros, labels
from a planted linear model, two groups. For 1 and then 2 worker processes
(1 thread each) the script measures, interleaving repeats:

* the per-iteration time of ``rateopt.train`` (proxy-swap, two constraints),
  from fits of ``iters`` iterations, end to end;
* the time of the iteration's distributed part (one kernel pass over the
  partitions: submit, kernel, reduce, gather), and in each pass the time the
  slowest worker spent in the kernel (timed inside the task): the iteration's
  share spent in the kernel, the rest (the pass less its own kernel time) being
  scheduling and communication;
* Dask's empty-task round trip (submit one no-op per worker, gather), the
  latency floor of any iteration, and its growth with the number of tasks
  (1 to 32 no-ops at once), which gives the scheduler's cost per task.

It then fits a cost model to the 1-worker measurements and the empty-task
fit, checks its prediction for 2 workers against the 2-worker measurement,
and predicts the per-iteration time for 8-512 workers on 10^9 rows with the
assumptions written next to the numbers. The baseline of the comparison
(1 worker) is measured in the same run. Results: bench/results/dask_scale.{json,md}.

Run ``python bench/dask_scale.py`` (``--quick``: a smaller dataset and fewer
repeats; ``--json``: the last stdout line is one JSON object).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import (  # noqa: E402
    PAPER_SETTINGS,
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

NAME = "dask_scale"
FAN_IN = 16
#: Assumptions of the cost model beyond this machine.
ASSUMPTIONS = {
    "network_bandwidth_GBps": 1.25,  # 10 GbE between workers, scheduler and client
    "network_hop_latency_ms": 0.2,  # added to each message hop on a real network (LocalCluster: loopback)
    "reduction_fan_in": FAN_IN,  # rateopt.dask.RemoteBlock: up to 16 partial sums per reduction task
    "threads_per_worker": 1,  # as measured; the kernel's per-row cost divides by the threads of a worker
    "rows_predicted": 10**9,
    "kernel_cost": "linear in rows (nnz per row as in the benchmark's data), measured on one thread here",
    "scheduler": "one central Dask scheduler: its cost grows with the number of tasks per iteration",
}


# --------------------------------------------------------------------------- data, generated on the workers


def make_partition(index, rows, d, nnz, seed):
    """Partition ``index``: CSR features, 0/1 labels from a planted model, a two-valued group column."""
    import scipy.sparse as sp

    rng = np.random.default_rng([seed, index])
    cols = rng.integers(0, d, size=(rows, nnz))
    vals = rng.normal(size=(rows, nnz))
    X = sp.csr_matrix((vals.ravel(), cols.ravel(), np.arange(0, rows * nnz + 1, nnz)), shape=(rows, d))
    X.sum_duplicates()
    w_true = np.random.default_rng(seed).normal(size=d)
    score = X @ w_true + rng.normal(size=rows)
    y = (score > 0).astype(np.int64)
    g = np.where(rng.random(rows) < 0.3, "b", "a")
    return X, y, g


def dataset(client, parts, rows, d, nnz, seed):
    import dask

    import rateopt.dask as rd

    pieces = [dask.delayed(make_partition, nout=3)(i, rows, d, nnz, seed) for i in range(parts)]
    return rd.Dataset([p[0] for p in pieces], [p[1] for p in pieces], groups={"g": [p[2] for p in pieces]},
                      client=client)


def problem(ds):
    import rateopt as ro

    ctx = ds.context()
    b = ctx.subset(group="g", value="b")
    return ro.Problem(constraints=[ro.true_positive_rate(b) >= ro.true_positive_rate(ctx) - 0.02,
                                   ro.positive_prediction_rate(ctx) <= 0.45])


# --------------------------------------------------------------------------- measurements


def noop(*args):
    return None


def measure(n_workers, args):
    from distributed import Client, LocalCluster

    from rateopt._training._spec import Combinations, kernel_pass, spec_from_problem
    from rateopt._train import run_game

    out = {"workers": n_workers}
    with LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        t0 = time.perf_counter()
        ds = dataset(client, args.partitions, args.rows, args.features, args.nnz, seed=0)
        prob = problem(ds)
        spec = spec_from_problem(prob)
        out["setup_s"] = time.perf_counter() - t0
        blk = spec.blocks[0]
        out["groups"] = len(blk.groups)
        rng = np.random.default_rng(1)
        theta = rng.normal(size=spec.n_features) * 0.01
        coefs = (spec.c0 + spec.C.sum(axis=0))[None, :]
        workers = sorted(client.scheduler_info()["workers"])
        fit, passes, kern, floor = [], [], [], []
        task_counts = (1, 2, 4, 8, 16, 32)
        many = {k: [] for k in task_counts}
        combos = Combinations(coefs, ("hinge",), np.ones(1))
        run_game(prob, n_iter=2)  # warm-up: imports and first messages
        for _ in range(args.repeats):  # interleaved: drift hits every quantity alike
            t = time.perf_counter()
            run_game(prob, n_iter=args.iters, record_every=args.iters, learning_rate=0.01, **PAPER_SETTINGS)
            fit.append((time.perf_counter() - t) / args.iters)
            for i in range(args.iters):  # the iteration's distributed part, its kernel time measured in the tasks
                t = time.perf_counter()
                kernel_pass(spec, theta * (1 + 1e-3 * i), 0.0, combos)
                passes.append(time.perf_counter() - t)
                kern.append(blk.last_kernel_s)
            for _ in range(10):
                t = time.perf_counter()
                client.gather([client.submit(noop, 0, pure=False, workers=[w]) for w in workers])
                floor.append(time.perf_counter() - t)
            for k in task_counts:
                t = time.perf_counter()
                client.gather([client.submit(noop, i, pure=False) for i in range(k)])
                many[k].append(time.perf_counter() - t)
        passes, kern = np.array(passes), np.array(kern)
        out["fit_iteration_ms"] = 1e3 * median(fit)  # rateopt.train end to end, per iteration
        out["iteration_ms"] = 1e3 * median(passes)
        out["kernel_ms"] = 1e3 * median(kern)
        out["overhead_ms"] = 1e3 * median(passes - kern)  # paired: each pass less its own kernel time
        out["overhead_ms_quartiles"] = [1e3 * float(q) for q in np.percentile(passes - kern, [25, 75])]
        out["empty_task_ms"] = 1e3 * median(floor)
        out["empty_tasks_ms"] = {k: 1e3 * median(v) for k, v in many.items()}
        out["kernel_share"] = out["kernel_ms"] / out["iteration_ms"]
        out["message_bytes"] = 8 * (spec.n_features + 3 * spec.n_atoms + 4)
    return out


# --------------------------------------------------------------------------- the cost model


def _theil_sen(x, y):
    """Median of the pairwise slopes and the matching intercept: a line fit that a few noisy points cannot tilt."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    slopes = [(y[j] - y[i]) / (x[j] - x[i]) for i in range(len(x)) for j in range(i + 1, len(x)) if x[j] != x[i]]
    slope = float(np.median(slopes))
    return slope, float(np.median(y - slope * x))


def fit_model(one, rows_total):
    """Parameters from the 1-worker run: round-trip latency, scheduler cost per task, kernel cost per row,
    and the iteration's extra cost beyond an empty round trip and the kernel (sending theta, summing)."""
    ks = sorted(one["empty_tasks_ms"])
    per_task, intercept = _theil_sen(ks, [one["empty_tasks_ms"][k] for k in ks])
    per_task = max(per_task, 0.0)
    return {
        "latency_ms": float(one["empty_task_ms"]),  # one task's round trip (the 1-worker iteration has one)
        "per_task_ms": float(per_task),  # each further task of the same iteration
        "kernel_ms_per_row": one["kernel_ms"] / rows_total,
        "extra_ms": max(one["overhead_ms"] - one["empty_task_ms"], 0.0),
        "empty_tasks_intercept_ms": float(intercept),
    }


def predict(params, workers, rows, message_bytes, *, real_network, threads=1):
    """Per-iteration milliseconds on ``workers`` workers (one group of partitions each) for ``rows`` rows."""
    tasks, level = 0, workers
    depth = 0
    while level > FAN_IN:  # the reduction tree's levels beyond the client's gather
        level = math.ceil(level / FAN_IN)
        tasks += level
        depth += 1
    tasks += workers
    gathered = min(workers, FAN_IN)
    hop_ms = ASSUMPTIONS["network_hop_latency_ms"] if real_network else 0.0
    bw = ASSUMPTIONS["network_bandwidth_GBps"] * 1e9
    comm_ms = (2 + 2 * depth) * hop_ms + 1e3 * message_bytes * (gathered + FAN_IN * depth) / bw
    kernel_ms = params["kernel_ms_per_row"] * rows / (workers * threads)
    sched_ms = params["latency_ms"] + params["per_task_ms"] * (tasks - 1) + depth * params["latency_ms"]
    return {"iteration_ms": sched_ms + params["extra_ms"] + comm_ms + kernel_ms, "kernel_ms": kernel_ms,
            "scheduler_ms": sched_ms, "communication_ms": comm_ms, "tasks": tasks, "tree_depth": depth + 1}


# --------------------------------------------------------------------------- dask-ml, if installed


def dask_ml_comparison(args):
    try:
        import dask.array as da
        from dask_ml.linear_model import LogisticRegression
    except ImportError as exc:
        return {"skipped": f"dask-ml is not installed ({exc})"}
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as cluster, Client(cluster):
        n, d = args.partitions * 20_000, 50
        X = da.random.RandomState(0).normal(size=(n, d), chunks=(n // args.partitions, d)).persist()
        y = (X[:, 0] > 0).astype(float).persist()
        times = []
        for _ in range(max(2, args.repeats // 2)):
            t = time.perf_counter()
            LogisticRegression(solver="gradient_descent", max_iter=args.iters, tol=0.0, C=1e6).fit(X, y)
            times.append(time.perf_counter() - t)
        per_iter = 1e3 * median(times) / args.iters
        import rateopt as ro
        import rateopt.dask as rd
        from rateopt._train import run_game

        prob = ro.Problem(objective=ro.error_rate(rd.Dataset(X, y).context()))
        ours = []
        for _ in range(max(2, args.repeats // 2)):
            t = time.perf_counter()
            run_game(prob, method="unconstrained", proxy="logistic", n_iter=args.iters, record_every=args.iters)
            ours.append(time.perf_counter() - t)
        ours_ms = 1e3 * median(ours) / args.iters
        return {"rows": n, "features": d, "per_iteration_ms": per_iter, "rateopt_per_iteration_ms": ours_ms,
                "note": "dask-glm gradient descent over a dense dask array, 2 workers: fit time / max_iter "
                        "(its line search may evaluate the loss more than once per iteration)"}


# --------------------------------------------------------------------------- main


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_args(parser)
    parser.add_argument("--partitions", type=int, default=None)
    parser.add_argument("--rows", type=int, default=None, help="rows per partition")
    parser.add_argument("--features", type=int, default=1000)
    parser.add_argument("--nnz", type=int, default=30, help="non-zeros per row")
    parser.add_argument("--iters", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=None)
    args = parser.parse_args(argv)
    args.partitions = args.partitions or (2 if args.quick else 4)
    args.rows = args.rows or (20_000 if args.quick else 250_000)
    args.iters = args.iters or (5 if args.quick else 20)
    args.repeats = args.repeats or (3 if args.quick else 7)
    rows_total = args.partitions * args.rows

    load_before = os.getloadavg()
    runs = {w: measure(w, args) for w in (1, 2)}
    load_after = os.getloadavg()
    one, two = runs[1], runs[2]
    params = fit_model(one, rows_total)
    check = predict(params, 2, rows_total, two["message_bytes"], real_network=False)
    error = check["iteration_ms"] / two["iteration_ms"] - 1.0
    predictions = []
    for threads in (1, 8):
        for w in (8, 32, 128, 512):
            p = predict(params, w, ASSUMPTIONS["rows_predicted"], two["message_bytes"], real_network=True,
                        threads=threads)
            predictions.append({"workers": w, "threads_per_worker": threads, **p,
                                "kernel_share": p["kernel_ms"] / p["iteration_ms"]})
    ml = dask_ml_comparison(args)
    result = {
        "benchmark": NAME, "date": utc_now(), "git": git_sha(), "machine": machine_info(("numpy", "scipy",
                                                                                          "dask", "distributed")),
        "load_average_before": load_before, "load_average_after": load_after,
        "data": {"partitions": args.partitions, "rows_per_partition": args.rows, "rows": rows_total,
                 "features": args.features, "nnz_per_row": args.nnz},
        "iters": args.iters, "repeats": args.repeats, "runs": runs,
        "dask_speedup_2w": one["iteration_ms"] / two["iteration_ms"],
        "dask_speedup_2w_train": one["fit_iteration_ms"] / two["fit_iteration_ms"],
        "dask_overhead_ms": two["overhead_ms"],
        "model": {"parameters": params, "assumptions": ASSUMPTIONS, "check_2_workers": check,
                  "check_relative_error": error, "predictions_1e9_rows": predictions},
        "dask_ml": ml,
        "targets": {
            "dask_overhead_ms <= 5": two["overhead_ms"] <= 5.0,
            "dask_speedup_2w >= 1.6": one["iteration_ms"] / two["iteration_ms"] >= 1.6,
            "model within 20% for 2 workers": abs(error) <= 0.2,
        },
    }
    rows = [[w, r["fit_iteration_ms"], r["iteration_ms"], r["kernel_ms"], r["overhead_ms"], r["kernel_share"],
             r["empty_task_ms"], r["empty_tasks_ms"][32]] for w, r in runs.items()]
    md = [f"# rateopt.dask on a LocalCluster ({'quick' if args.quick else 'full'} run, {result['date']})", "",
          f"Data generated on the workers: {args.partitions} partitions x {args.rows} rows, {args.features} "
          f"features, {args.nnz} non-zeros per row (CSR). proxy-swap, 2 constraints; per-iteration time from "
          f"fits of {args.iters} iterations, medians of {args.repeats} interleaved repeats. Load average "
          f"before/after: {load_before[0]:.2f} / {load_after[0]:.2f} on {os.cpu_count()} cores (shared machine).",
          "", markdown_table(["workers", "train() ms/iteration", "kernel pass ms", "kernel ms", "overhead ms",
                              "kernel share", "empty task ms", "32 empty tasks ms"], rows), "",
          "Kernel pass: the iteration's distributed part (submit, kernel on the workers, reduce, gather); kernel: "
          "the slowest worker's time in the kernel inside that pass's task; overhead: each pass less its own "
          "kernel time (median). Empty task: one no-op task per worker, submitted and gathered.", "",
          f"Speedup 2 workers / 1: **{result['dask_speedup_2w']:.2f}x** per kernel pass "
          f"({result['dask_speedup_2w_train']:.2f}x per train() iteration); overhead per iteration with 2 workers "
          f"(iteration - kernel): **{two['overhead_ms']:.1f} ms**, against an empty-task round trip of "
          f"{two['empty_task_ms']:.1f} ms.", "",
          "## Cost model", "",
          "iteration = latency + per_task x (tasks - 1) + tree levels x latency + extra + communication + kernel, with "
          "tasks = workers + the reduction tree's tasks (fan-in 16), communication = hops x hop latency + "
          "gathered bytes / bandwidth, kernel = kernel cost per row x rows / (workers x threads). Fitted on the "
          "1-worker run: " + ", ".join(f"{k} = {v:.4g}" for k, v in params.items()) + ".", "",
          f"Check: predicted {check['iteration_ms']:.1f} ms for 2 workers, measured {two['iteration_ms']:.1f} ms "
          f"(error {100 * error:+.0f} %).", "",
          "Assumptions: " + "; ".join(f"{k}: {v}" for k, v in ASSUMPTIONS.items()) + ".", "",
          markdown_table(["workers", "threads/worker", "iteration ms", "kernel ms", "scheduler ms",
                          "communication ms", "kernel share", "tree depth"],
                         [[p["workers"], p["threads_per_worker"], p["iteration_ms"], p["kernel_ms"],
                           p["scheduler_ms"], p["communication_ms"], p["kernel_share"], p["tree_depth"]]
                          for p in predictions]), "",
          "## dask-ml", "",
          (f"Logistic regression by gradient descent on the same {ml['rows']} x {ml['features']} dense dask array, "
           f"2 workers: dask-ml's LogisticRegression {ml['per_iteration_ms']:.1f} ms per iteration (fit time / "
           f"max_iter), rateopt.dask (method='unconstrained', proxy='logistic') "
           f"{ml['rateopt_per_iteration_ms']:.1f} ms per iteration." if "per_iteration_ms" in ml else ml["skipped"]),
          "", "## Targets", ""] + [f"* {k}: {'met' if v else 'missed'}" for k, v in result["targets"].items()]
    json_path, md_path = results_paths(NAME, quick=args.quick, out=args.out)
    write_results(result, "\n".join(md), json_path, md_path)
    print("\n".join(md))
    if args.json:
        emit_json_line(result)


if __name__ == "__main__":
    main()
