"""K-class training outputs of two trees compared array by array (issue 35 item 3: "results unchanged to round-off").

Trains 16 seeded synthetic K-class problems (K = 3, 5, 12, 60; 2 to 8 groups;
multiclass demographic parity and, for K <= 5, equalized odds, both at slack
0.05; ``proxy-swap`` and ``proxy-external``; ``LinearModel(l2=1e-4)``, 150
iterations, ``random_state=0``) in a fresh process per tree (``PYTHONPATH`` =
the tree's ``python/``), and compares every output: the recorded weights,
biases, multipliers, statistics (``atom_rates``), objectives and constraint
values, the m-stochastic solution's probabilities on the training rows, its
``Problem.evaluate`` values, and the multipliers' step ``eta_lambda``. Each
array's difference is reported relative to its largest entry; the target is
bit-identical or <= 1e-12.

Run::

    PYTHONPATH=python python bench/multiclass_roundoff.py --reference /work/main/python [--quick] [--json]

``--quick`` drops the K = 60 problems.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import add_common_args, emit_json_line, git_sha, results_paths, utc_now, write_results

NAME = "multiclass_roundoff"
THIS_TREE = Path(__file__).resolve().parent.parent / "python"
SIZES = [(1500, 6, 3, 2), (2000, 8, 5, 4), (3000, 10, 12, 8), (4000, 10, 60, 8)]
TARGET = 1e-12


def worker(out: str, quick: bool) -> None:
    """Train every problem with the tree on ``sys.path`` and save its outputs to ``out`` (npz)."""
    import numpy as np

    import rateopt
    from rateopt import goals

    arrays = {}
    for n, d, K, G in SIZES[:-1] if quick else SIZES:
        rng = np.random.default_rng(0)
        X = rng.standard_normal((n, d))
        W = rng.standard_normal((d, K))
        g = rng.integers(0, G, n)
        y = np.argmax(X @ W + 2 * rng.standard_normal((n, K)) + 0.3 * g[:, None] * (np.arange(K)[None, :] % 3), axis=1)
        ds = rateopt.ClassDataset(X, y, groups={"g": g.astype(str)})
        kinds = [("dp", goals.multiclass_demographic_parity("g", slack=0.05))]
        if K <= 5:
            kinds.append(("eo", goals.multiclass_equalized_odds("g", slack=0.05)))
        for gname, goal in kinds:
            problem = rateopt.Problem(constraints=[goal], datasets=ds)
            for method in ("proxy-swap", "proxy-external"):
                name = f"K{K}G{G}_{gname}_{method}"
                res = rateopt.train(problem, rateopt.LinearModel(l2=1e-4), method=method, n_iter=150, random_state=0)
                for a in ("weights", "biases", "multipliers", "atom_rates", "objectives", "constraints"):
                    arrays[f"{name}/{a}"] = np.asarray(getattr(res, a), dtype=np.float64)
                sol = res.solution("m-stochastic")
                P = np.asarray(sol.predict_proba(X))
                ev = problem.evaluate(P)
                arrays[f"{name}/proba"] = P
                arrays[f"{name}/evaluate"] = np.array([ev.objective] + list(ev.constraints.values()))
                arrays[f"{name}/eta_lambda"] = np.array([res.settings.get("eta_lambda") or 0.0])
    np.savez(out, **arrays)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_args(parser)
    parser.add_argument("--reference", type=Path, required=False, help="the other tree's python/ directory")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker is not None:
        worker(args.worker, args.quick)
        return 0
    if args.reference is None:
        parser.error("--reference PATH is required (the tree to compare this one with)")
    import numpy as np

    with tempfile.TemporaryDirectory() as tmp:
        files = {}
        for tree, path in (("reference", args.reference.resolve()), ("this", THIS_TREE)):
            files[tree] = os.path.join(tmp, f"{tree}.npz")
            env = dict(os.environ, PYTHONPATH=str(path), OPENBLAS_NUM_THREADS="1")
            cmd = [sys.executable, __file__, "--worker", files[tree]] + (["--quick"] if args.quick else [])
            subprocess.run(cmd, env=env, check=True)
        a, b = np.load(files["reference"]), np.load(files["this"])
        rows, identical, worst = [], 0, 0.0
        for k in sorted(a.files):
            x, y = a[k], b[k]
            if x.shape != y.shape:
                rows.append({"array": k, "shape": [list(x.shape), list(y.shape)]})
                worst = float("inf")
                continue
            if np.array_equal(x, y):
                identical += 1
                continue
            d = float(np.max(np.abs(x - y)) / max(float(np.max(np.abs(x))), 1e-300))
            rows.append({"array": k, "max_abs_diff": float(np.max(np.abs(x - y))), "relative_to_max": d})
            worst = max(worst, d)
        n = len(a.files)
    res = {"name": NAME, "utc": utc_now(), "git": git_sha(), "reference": str(args.reference), "quick": args.quick,
           "arrays": n, "bit_identical": identical, "worst_relative_to_max": worst, "differing": rows,
           "target": f"bit-identical or <= {TARGET:g}: {'met' if worst <= TARGET else 'missed'}"}
    md = [f"# {NAME}: K-class training outputs, this tree against `{args.reference}`", "",
          f"{identical} of {n} arrays bit-identical; the largest difference is {worst:.2e} of its array's largest "
          f"entry (target <= {TARGET:g}: {'met' if worst <= TARGET else 'missed'}).", "",
          "| array | max abs diff | relative to the array's max |", "|---|---|---|"]
    md += [f"| {r['array']} | {r.get('max_abs_diff', float('nan')):.3e} | {r.get('relative_to_max', float('nan')):.3e} |"
           for r in rows]
    json_path, md_path = results_paths(NAME, quick=args.quick, out=args.out)
    write_results(res, "\n".join(md), json_path, md_path)
    print("\n".join(md[:3]), file=sys.stderr)
    if args.json:
        emit_json_line(res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
