"""K-class iterations at K = 60: how much of an iteration is the core pass (issue 35, item 3).

Case (``CASE``): a synthetic K-class problem, K = 60 classes, 8 groups,
``goals.multiclass_demographic_parity(group, slack=0.05)`` (2 x 8 x 60 = 960
constraints, statistics over 8 x 60 x 60 = 28,800 confusion cells), dense
float64 features from a seeded Gaussian, labels the argmax of a seeded linear
score plus noise and a group shift. Full run: 40,000 rows x 40 features;
``--quick``: 10,000 x 20. ``rateopt.train(problem, LinearModel(l2=1e-4),
method=M, n_iter=T, random_state=0)`` for M in ``proxy-swap`` (the default) and
``proxy-external``.

Each fit runs in a fresh subprocess whose ``PYTHONPATH`` is a tree's
``python/`` directory: this tree, and with ``--reference PATH`` another one
(e.g. ``/work/main/python``, the parent commit's tree with its own built
``_core``), the two interleaved ``--repeats`` times. A fit is profiled
(cProfile) and split into the Python driver loop's parts, per iteration:

- ``pass``: ``spec.run_pass`` called by the loop (the fused core pass,
  ``rateopt.core.multiclass_pass``, and its Python glue);
- ``step``: ``game.step`` (the multipliers' update: the swap-regret matrix, or
  the external vector; the constraint values ``C s``);
- ``combinations``: ``game.combinations()`` (``lam @ C``, the cost tables);
- ``record``: the recorder (objective and constraint values of the iterate);
- ``loop``: the whole loop, whose per-iteration time is the denominator.

The target (issue 35): the core pass is >= 60 % of an iteration in a K = 60
case. An unprofiled fit's wall time (compile, train and the trivial rules'
60 passes, not the solution) is recorded too. BLAS pools are limited to one
thread in the workers (OpenBLAS threads busy-wait and steal the cores the
pass's OpenMP threads need on a small machine); the machine's load average
is recorded before and after.

Run::

    PYTHONPATH=python python bench/multiclass_core.py [--quick] [--json] [--out PATH]
        [--reference /work/main/python] [--repeats N] [--n-iter T]
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

NAME = "multiclass_core"
CASE = {"K": 60, "groups": 8, "slack": 0.05, "goal": "multiclass_demographic_parity", "model": "LinearModel(l2=1e-4)",
        "seed": 0}
SIZES = {"full": (40_000, 40), "quick": (10_000, 20)}
METHODS = ("proxy-swap", "proxy-external")
TARGET_PASS_SHARE = 0.60
THIS_TREE = Path(__file__).resolve().parent.parent / "python"
PARTS = ("pass", "step", "combinations", "record")


def _data(n: int, d: int):
    import numpy as np

    rng = np.random.default_rng(CASE["seed"])
    K, G = CASE["K"], CASE["groups"]
    X = rng.standard_normal((n, d))
    W = rng.standard_normal((d, K))
    g = rng.integers(0, G, n)
    y = np.argmax(X @ W + 2.0 * rng.standard_normal((n, K)) + 0.3 * g[:, None] * (np.arange(K)[None, :] % 3), axis=1)
    return X, y, g


def worker(args: dict[str, Any]) -> dict[str, Any]:
    """One fit in this process (the tree on ``sys.path``): the profiled split and an unprofiled fit's time."""
    import cProfile
    import pstats
    import time

    import rateopt

    X, y, g = _data(args["n"], args["d"])

    def fit(n_iter):
        t0 = time.perf_counter()
        ds = rateopt.ClassDataset(X, y, groups={"g": g.astype(str)})
        problem = rateopt.Problem(
            constraints=[rateopt.goals.multiclass_demographic_parity("g", slack=CASE["slack"])], datasets=ds)
        res = rateopt.train(problem, rateopt.LinearModel(l2=1e-4), method=args["method"], n_iter=n_iter,
                            random_state=CASE["seed"])
        return time.perf_counter() - t0, res

    fit(3)  # imports, first-touch
    fit_s, res = fit(args["n_iter"])
    prof = cProfile.Profile()
    prof.enable()
    fit(args["n_iter"])
    prof.disable()
    st = pstats.Stats(prof).stats
    loop = [k for k in st if k[2] == "_run_python_loop"]
    if not loop:
        raise RuntimeError("the fit did not run the Python driver loop")
    loop = loop[0]
    names = {"run_pass": "pass", "step": "step", "combinations": "combinations", "record": "record"}
    parts = dict.fromkeys(PARTS, 0.0)
    for key, (_, _, _, _, callers) in st.items():
        part = names.get(key[2])
        if part and loop in callers:
            parts[part] += callers[loop][3]
    T = args["n_iter"]
    loop_s = st[loop][3]
    return {"fit_s": fit_s, "loop_ms_per_iter": 1e3 * loop_s / T,
            **{f"{p}_ms_per_iter": 1e3 * parts[p] / T for p in PARTS},
            "pass_share": parts["pass"] / loop_s, "n_iter": int(res.n_iter),
            "final_objective": float(res.objectives[-1]), "final_max_violation": float(res.constraints[-1].max())}


def _run(tree: Path, job: dict[str, Any]) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(tree), OPENBLAS_NUM_THREADS="1", OMP_WAIT_POLICY="passive")
    out = subprocess.run([sys.executable, __file__, "--worker", json.dumps(job)], env=env, capture_output=True,
                         text=True, check=False)
    if out.returncode:
        raise RuntimeError(f"worker failed ({tree}): {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _summary(samples: list[dict[str, Any]]) -> dict[str, Any]:
    keys = [k for k in samples[0] if isinstance(samples[0][k], float)]
    return {**{k: median([s[k] for s in samples]) for k in keys}, "samples": samples}


def markdown(res: dict[str, Any]) -> str:
    c = res["case"]
    lines = [f"# {NAME}: the core pass's share of a K = {c['K']} iteration", "",
             f"{c['rows']:,} rows x {c['features']} features, K = {c['K']}, {c['groups']} groups, "
             f"{c['goal']} at slack {c['slack']}, {c['model']}, {c['n_iter']} iterations; medians of "
             f"{res['repeats']} interleaved fresh-process fits; load average {res['load_before']} before, "
             f"{res['load_after']} after. Target: pass >= {TARGET_PASS_SHARE:.0%} of an iteration.", "",
             f"Trees: {', '.join(f'`{t}`: {p}' for t, p in res['trees'].items())}.", ""]
    rows = []
    for method, trees in res["results"].items():
        for tree, r in trees.items():
            rows.append([method, tree, f"{r['loop_ms_per_iter']:.1f}", f"{r['pass_ms_per_iter']:.1f}",
                         f"{r['step_ms_per_iter']:.1f}", f"{r['combinations_ms_per_iter']:.2f}",
                         f"{r['record_ms_per_iter']:.2f}", f"{r['pass_share']:.0%}", f"{r['fit_s']:.2f}"])
    lines.append(markdown_table(["method", "tree", "iteration ms", "pass ms", "step ms", "combinations ms",
                                 "record ms", "pass share", "fit s"], rows))
    lines += ["", "Targets:", ""]
    for k, v in res["targets"].items():
        lines.append(f"- {k}: {v}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_args(parser)
    parser.add_argument("--reference", type=Path, default=None,
                        help="another tree's python/ directory (with its built _core) timed in the same run")
    parser.add_argument("--repeats", type=int, default=None, help="interleaved fits per tree (default 3; quick 1)")
    parser.add_argument("--n-iter", type=int, default=None, help="iterations per fit (default 60; quick 20)")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker is not None:
        from threadpoolctl import threadpool_limits

        with threadpool_limits(1, user_api="blas"):
            print(json.dumps(worker(json.loads(args.worker))))
        return 0
    n, d = SIZES["quick" if args.quick else "full"]
    T = args.n_iter or (20 if args.quick else 60)
    repeats = args.repeats or (1 if args.quick else 3)
    trees = {"this": THIS_TREE}
    if args.reference is not None:
        trees["reference"] = args.reference.resolve()
    load_before = os.getloadavg()
    samples: dict[str, dict[str, list]] = {m: {t: [] for t in trees} for m in METHODS}
    for _ in range(repeats):
        for method in METHODS:
            for tree, path in trees.items():
                job = {"n": n, "d": d, "method": method, "n_iter": T}
                samples[method][tree].append(_run(path, job))
                print(f"{method} {tree}: {samples[method][tree][-1]['pass_share']:.0%} pass", file=sys.stderr)
    results = {m: {t: _summary(s) for t, s in ts.items()} for m, ts in samples.items()}
    targets = {}
    for method in METHODS:
        share = results[method]["this"]["pass_share"]
        targets[f"pass share, {method} (this tree)"] = (f"{share:.1%} "
                                                        f"({'met' if share >= TARGET_PASS_SHARE else 'missed'})")
        if "reference" in trees:
            r = results[method]["reference"]
            targets[f"iteration time ratio reference / this, {method}"] = \
                f"{r['loop_ms_per_iter'] / results[method]['this']['loop_ms_per_iter']:.2f}"
    res = {"name": NAME, "utc": utc_now(), "git": git_sha(), "quick": args.quick, "repeats": repeats,
           "case": {**CASE, "rows": n, "features": d, "n_iter": T},
           "trees": {t: str(p) for t, p in trees.items()}, "load_before": [round(x, 2) for x in load_before],
           "load_after": [round(x, 2) for x in os.getloadavg()], "results": results, "targets": targets,
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
