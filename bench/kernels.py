"""Kernel blocks and kernel-model training.

1. Throughput of ``K(X, B)`` (RBF) against ``sklearn.metrics.pairwise.rbf_kernel``
   on the same data, in one run with interleaved repeats: rateopt's BLAS path
   (X @ B.T by BLAS, the kernel transform in the core), its core-only path, at
   1 and 2 threads. Target: >= 1.5x sklearn at 2 threads.
2. Training time of a constrained RBF kernel model: n = 100k examples (two
   concentric circles with a group column), r = 1000 landmarks, 4 constraints
   (equal opportunity, both sides, for 2 groups), proxy-swap, full batch;
   8 noise features are appended so the feature block is the full n x r.
   Target: under 60 s on a 2-core machine. The unconstrained linear model on
   the same data is reported beside it.

Usage: python bench/kernels.py [--quick] [--json] [--out PATH]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import _common  # noqa: E402

import rateopt  # noqa: E402
from rateopt.core._kernel_block import kernel_block  # noqa: E402


def throughput(n, d, r, repeats):
    from sklearn.metrics.pairwise import rbf_kernel

    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d))
    B = rng.normal(size=(r, d))
    gamma = 1.0 / d
    Xm = rateopt.FeatureMatrix(X)
    bench = _common.Interleaved()
    bench.add("sklearn", lambda: rbf_kernel(X, B, gamma=gamma))
    # "@t" is rateopt's thread count for the kernel transform; the BLAS product
    # uses OpenBLAS's own threads in both columns (as sklearn does).
    for t in (1, 2):
        bench.add(f"blas@{t}", lambda t=t: kernel_block(Xm, B, "rbf", gamma=gamma, method="blas", n_threads=t))
        bench.add(f"core@{t}", lambda t=t: kernel_block(Xm, B, "rbf", gamma=gamma, method="core", n_threads=t))
    ref = rbf_kernel(X, B, gamma=gamma)

    def check(name, K):
        if name != "sklearn":
            np.testing.assert_allclose(K, ref, rtol=1e-12, atol=1e-14)

    bench.run(repeats=repeats, warmup=1, on_warm=check, quiet_cores=0.3, max_rounds=3 * repeats)
    med = {name: bench.median_s(name) for name in ("sklearn", "blas@1", "core@1", "blas@2", "core@2")}
    best2 = min(med["blas@2"], med["core@2"])
    return {
        "n": n, "d": d, "r": r, "median_s": med,
        "speedup_vs_sklearn": med["sklearn"] / best2,
        "blas_over_core_2threads": med["blas@2"] / med["core@2"],
        "quiet_rounds_only": bench.used_quiet_only,
    }


def training(n, r, n_iter):
    from sklearn.datasets import make_circles

    X, y = make_circles(n, noise=0.1, factor=0.5, random_state=0)
    # Eight noise dimensions: the RBF spectrum then keeps all r components, so
    # the benchmark trains on a full n x r block (on the 2-D circles alone most
    # eigenvalues of K_BB vanish and the block would be much narrower).
    rng = np.random.default_rng(0)
    X = np.hstack([X, 0.5 * rng.normal(size=(n, 8))])
    group = np.where(rng.random(n) < 0.3, "a", "b")
    ds = rateopt.Dataset(X, y, groups={"g": group})
    problem = rateopt.Problem(constraints=[rateopt.goals.equal_opportunity("g", slack=0.02)], datasets=ds)
    out = {"n": n, "landmarks": r, "n_constraints": problem.n_constraints, "n_iter": n_iter}
    t0 = time.perf_counter()
    res = rateopt.train(problem, rateopt.KernelModel(gamma=1.0, n_components=r, random_state=0), n_iter=n_iter,
                        learning_rate=0.05, eta_lambda=0.5, **_common.PAPER_SETTINGS)
    clf = res.solution("m-stochastic")
    out["fit_s"] = time.perf_counter() - t0
    obj, g = res.solution_values("m-stochastic")
    p = clf.predict_proba(X)[:, 1]
    out["train_error"] = float(np.mean(np.where(y == 1, 1 - p, p)))
    out["train_error_lp"] = obj
    out["train_max_violation"] = float(max(0.0, g.max()))
    out["support"] = int(clf.n_models)
    # Eigenvalues of K_BB below 1e-10 * max are dropped: the feature block has
    # this many columns (the RBF spectrum of 2-D data decays fast).
    out["kernel_features"] = int(res.weights.shape[1])
    t0 = time.perf_counter()
    lin = rateopt.train(problem, rateopt.LinearModel(), n_iter=n_iter, learning_rate=0.05, eta_lambda=0.5,
                        **_common.PAPER_SETTINGS)
    out["linear_fit_s"] = time.perf_counter() - t0
    lo, lg = lin.solution_values("m-stochastic")
    out["linear_train_error"] = lo
    out["linear_train_max_violation"] = float(max(0.0, lg.max()))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    _common.add_common_args(ap)
    args = ap.parse_args(argv)
    if args.quick:
        tp = throughput(20_000, 20, 500, repeats=3)
        tr = training(10_000, 200, 200)
    else:
        tp = throughput(100_000, 20, 1000, repeats=5)
        tr = training(100_000, 1000, 500)
    result = {
        "quick": args.quick, "date": _common.utc_now(), "git": _common.git_sha(),
        "machine": _common.machine_info(), "throughput": tp, "training": tr,
        "speedup_vs_sklearn": tp["speedup_vs_sklearn"], "train_fit_s": tr["fit_s"],
        "targets": {"speedup_vs_sklearn>=1.5": tp["speedup_vs_sklearn"] >= 1.5,
                    "train_fit_s<60": tr["fit_s"] < 60},
    }
    med = tp["median_s"]
    md = [f"# Kernel benchmark ({'quick' if args.quick else 'full'})", "",
          f"{result['date']} · {result['machine'].get('cpu_model')} · git {result['git'].get('sha', '')[:10]}", "",
          f"## K(X, B), RBF: X {tp['n']} x {tp['d']} float64, {tp['r']} landmarks (median s)", "",
          _common.markdown_table(["sklearn rbf_kernel", "blas@1", "core@1", "blas@2", "core@2", "speedup@2"],
                                 [[med["sklearn"], med["blas@1"], med["core@1"], med["blas@2"], med["core@2"],
                                   tp["speedup_vs_sklearn"]]]), "",
          f"## Training: {tr['n']} examples, {tr['landmarks']} landmarks, {tr['n_constraints']} constraints, "
          f"{tr['n_iter']} iterations; the whitened feature block keeps {tr.get('kernel_features')} of "
          f"{tr['landmarks']} components (eigenvalues of K_BB above 1e-10 x max)", "",
          _common.markdown_table(["model", "fit s", "train error", "train max violation"],
                                 [["RBF kernel (m-stochastic)", tr["fit_s"], tr["train_error_lp"],
                                   tr["train_max_violation"]],
                                  ["linear (m-stochastic)", tr["linear_fit_s"], tr["linear_train_error"],
                                   tr["linear_train_max_violation"]]]), "",
          f"Targets: speedup vs sklearn >= 1.5: **{'met' if result['targets']['speedup_vs_sklearn>=1.5'] else 'NOT met'}**"
          f" ({tp['speedup_vs_sklearn']:.2f}); training under 60 s: "
          f"**{'met' if result['targets']['train_fit_s<60'] else 'NOT met'}** ({tr['fit_s']:.1f} s)."]
    text = "\n".join(md)
    print(text)
    json_path, md_path = _common.results_paths("kernels", quick=args.quick, out=args.out)
    _common.write_results(result, text, json_path, md_path)
    if args.json:
        _common.emit_json_line(result)


if __name__ == "__main__":
    main()
