"""Training at scale: 200k rows (dense, 20 features), 5 groups, 10 constraints.

Demographic parity for 5 groups (both sides: 10 constraints) with proxy-swap,
full batch. Reports wall time, iterations, time per iteration, and the final
(m-stochastic) training violation; compares with one SciPy-only iteration of
the same work as a baseline in the same run.

Usage: python bench/train_large.py [--quick] [--json]
"""

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import _common  # noqa: E402

import rateopt  # noqa: E402


def make_data(n, d, n_groups, seed=0):
    rng = np.random.default_rng(seed)
    group = rng.integers(0, n_groups, n)
    X = rng.normal(size=(n, d)).astype(np.float64)
    X[:, 0] += 2.0 * group / n_groups  # groups differ in the informative feature...
    w = rng.normal(size=d) * 0.3
    w[0] = 2.0  # ...so their base rates differ and parity has a price
    y = (X @ w + 0.5 * rng.normal(size=n) > 1.0).astype(int)
    return X, y, np.array([f"g{k}" for k in range(n_groups)])[group]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--n-iter", type=int, default=None)
    args = ap.parse_args(argv)
    n = 20_000 if args.quick else 200_000
    n_iter = args.n_iter or (200 if args.quick else 1000)
    X, y, group = make_data(n, 20, 5)
    ds = rateopt.Dataset(X, y, groups={"group": group})
    problem = rateopt.Problem(constraints=[rateopt.goals.demographic_parity("group", slack=0.02)], datasets=ds)
    m = problem.n_constraints
    t0 = time.perf_counter()
    res = rateopt.train(problem, method="proxy-swap", n_iter=n_iter, learning_rate=0.05, eta_lambda=1.0)
    fit_s = time.perf_counter() - t0
    # The LP itself, timed on its own (the result already holds it, cached by
    # train()'s feasibility check, so res.solution() would only time a lookup).
    from rateopt._shrink import shrink

    t1 = time.perf_counter()
    shrink(res.objectives, res.constraints)
    shrink_s = time.perf_counter() - t1
    clf = res.solution("m-stochastic")
    obj, g = res.solution_values("m-stochastic")
    ev = problem.evaluate(clf.predict_proba(X), kind="probabilities")
    unc = rateopt.train(problem, method="unconstrained", n_iter=n_iter, learning_rate=0.05)
    unc_obj, unc_g = unc.solution_values("last")
    out = {
        "n_samples": n, "n_features": X.shape[1], "n_constraints": m, "n_iter": res.n_iter,
        "fit_s": fit_s, "ms_per_iter": 1e3 * fit_s / res.n_iter, "shrink_s": shrink_s,
        "train_error": obj, "train_max_violation": float(max(0.0, g.max())),
        "train_max_violation_evaluated": ev.max_violation,
        "support": int(clf.n_models) if hasattr(clf, "n_models") else 1,
        "unconstrained_error": unc_obj, "unconstrained_max_violation": float(max(0.0, unc_g.max())),
        "machine": _common.machine_info(),
    }
    print(f"{n} x {X.shape[1]}, {m} constraints, {res.n_iter} iterations: {fit_s:.2f} s "
          f"({out['ms_per_iter']:.2f} ms/iteration), shrink {shrink_s * 1e3:.1f} ms")
    print(f"m-stochastic ({out['support']} models): error {obj:.4f}, max violation {out['train_max_violation']:.2e}; "
          f"unconstrained: error {unc_obj:.4f}, max violation {out['unconstrained_max_violation']:.4f}")
    name = "train_large_quick.json" if args.quick else "train_large.json"
    with open(os.path.join(os.path.dirname(__file__), "results", name), "w") as f:
        json.dump(out, f, indent=2, default=str)
    if args.json:
        print(json.dumps(out, default=str))


if __name__ == "__main__":
    main()
