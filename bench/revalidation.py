"""Cost of re-validating the data at the start of every ``train()`` call.

``train()`` reads the user's arrays in place, so each call validates them
again (finiteness of X, CSR structure and column range, the atom tables):
one parallel pass. This measures that pass (``spec_from_problem``, which
builds the validated game data) against a fit of the same problem in the same
run: the adult-sized dense case and a large sparse case.

Cases:
  dense  200k x 20 float64 (quick: 20k), 10 demographic-parity constraints, 1000 iterations
  csr    1M x 20k float32, 50 nnz/row (quick: 100k rows), the same goals, 100 iterations

Usage: python bench/revalidation.py [--quick] [--json] [--out DIR]
"""

import argparse
import os
import sys
import time

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, os.path.dirname(__file__))
import _common  # noqa: E402

import rateopt  # noqa: E402
from rateopt._training._spec import spec_from_problem  # noqa: E402


def dense_case(n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 20))
    return X, rng.integers(0, 2, n), rng.integers(0, 5, n)


def csr_case(n, d=20_000, nnz_row=50, seed=0):
    rng = np.random.default_rng(seed)
    indptr = np.arange(0, (n + 1) * nnz_row, nnz_row, dtype=np.int64)
    indices = rng.integers(0, d, n * nnz_row).astype(np.int32)
    data = rng.normal(size=n * nnz_row).astype(np.float32)
    X = sp.csr_matrix((data, indices, indptr.astype(np.int32)), shape=(n, d))
    return X, rng.integers(0, 2, n), rng.integers(0, 5, n)


def measure(name, X, y, group, n_iter, repeats):
    ds = rateopt.Dataset(X, y, groups={"group": group})
    problem = rateopt.Problem(constraints=[rateopt.goals.demographic_parity("group", slack=0.02)], datasets=ds)
    problem.compiled  # compile outside the timings: both sides need it once
    validate_s = _common.median(_timed(lambda: spec_from_problem(problem)) for _ in range(repeats))
    fit_s = _timed(lambda: rateopt.train(problem, n_iter=n_iter, learning_rate=0.05, eta_lambda=1.0,
                                         **_common.PAPER_SETTINGS))
    nbytes = X.nbytes if not sp.issparse(X) else X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    return {
        "case": name, "shape": list(X.shape), "nbytes": int(nbytes), "n_iter": n_iter,
        "validate_s": validate_s, "fit_s": fit_s,
        "validate_over_fit": validate_s / fit_s,
        "validate_over_iteration": validate_s / (fit_s / n_iter),
    }


def _timed(f):
    t0 = time.perf_counter()
    f()
    return time.perf_counter() - t0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    _common.add_common_args(ap)
    args = ap.parse_args(argv)
    quick = args.quick
    rows = [
        measure("dense", *dense_case(20_000 if quick else 200_000), n_iter=200 if quick else 1000, repeats=5),
        measure("csr", *csr_case(100_000 if quick else 1_000_000), n_iter=20 if quick else 100, repeats=5),
    ]
    result = {"benchmark": "revalidation", "quick": quick, "cases": rows,
              "max_validate_over_fit": max(r["validate_over_fit"] for r in rows),
              "machine": _common.machine_info(), "git": _common.git_sha(), "when": _common.utc_now()}
    md = "# Re-validation at the start of train()\n\n" + _common.markdown_table(
        ["case", "shape", "validate (ms)", "fit (s)", "n_iter", "validate / fit", "validate / iteration"],
        [[r["case"], "x".join(map(str, r["shape"])), f"{1e3 * r['validate_s']:.1f}", f"{r['fit_s']:.2f}",
          r["n_iter"], f"{100 * r['validate_over_fit']:.2f} %", f"{r['validate_over_iteration']:.2f}"]
         for r in rows]) + "\n"
    json_path, md_path = _common.results_paths("revalidation", quick=quick, out=args.out)
    _common.write_results(result, md, json_path, md_path)
    print(md)
    if args.json:
        _common.emit_json_line(result)


if __name__ == "__main__":
    main()
