"""Training at scale: 5 groups, 10 demographic-parity constraints, proxy-swap.

``--case default``: 200k rows (dense, 20 features), full batch. Reports wall
time, iterations, time per iteration, and the final (m-stochastic) training
violation, with the unconstrained fit alongside.

``--case huge`` (issue 14 item 5; never run by ``--quick``): a 10^7-row x
50-nonzeros-per-row float32 CSR matrix with int32 indices (4.04 GB), written
block by block straight into preallocated ``data``/``indices``/``indptr``
arrays (no second copy of X, no scipy.sparse.random, no vstack), fitted with
minibatch epochs (records on the full data). Reports peak RSS
(``ru_maxrss`` and ``/proc/self/status`` VmHWM) against the data size (target
<= 1.3x), the time per epoch and in total, and the m-stochastic training
violation, checked independently from the support models' decisions, with
the unconstrained fit of the same schedule alongside (parity binds). The
baseline in the same run is the memory floor: one parallel read of X's
arrays (``rateopt._core.memory_floor``), against one full kernel pass.
``--n-rows`` scales it down for a trial (results then go to
``train_large_huge_<n>.json``).

Usage: python bench/train_large.py [--quick] [--json] [--case {default,huge}]
"""

import argparse
import json
import os
import resource
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


#: The huge case: rows, stored values per row, and the width of each row's column strata.
HUGE_ROWS, HUGE_NNZ, HUGE_STRATUM = 10_000_000, 50, 200


def make_huge_csr(n, nnz_per_row=HUGE_NNZ, n_groups=5, stratum=HUGE_STRATUM, seed=0, block_rows=1 << 17):
    """A float32 CSR matrix with int32 indices, labels and groups, built in place.

    Columns come in ``nnz_per_row`` strata of ``stratum`` columns. Stratum 0
    holds the group's one-hot column (value 1); every other stratum holds one
    column drawn uniformly from it, with a standard normal value. So each row
    has ``nnz_per_row`` distinct, ascending column indices and no duplicate.
    Labels: ``y = [x . w + beta_group + 0.5 noise > 0]`` with ``w`` normal
    (std 0.3) on the non-group columns and ``beta`` spread over [-1, 1], so
    the groups' base rates differ and parity constraints bind.

    The three CSR arrays are allocated once and filled ``block_rows`` rows at
    a time (the only temporaries are one block's random columns and scores);
    the returned matrix shares them (checked).

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n, nnz_per_row * stratum), float32, int32 indices
    y : ndarray of shape (n,) of int8
    group : ndarray of shape (n,) of int8
    w, beta : the label model (for tests)
    """
    import scipy.sparse as sp

    d = nnz_per_row * stratum
    nnz = n * nnz_per_row
    if nnz >= 2**31:
        raise ValueError(f"n * nnz_per_row = {nnz} does not fit int32 indices")
    rng = np.random.default_rng(seed)
    w = (0.3 * rng.standard_normal(d)).astype(np.float32)
    w[:stratum] = 0.0  # the group columns carry no weight of their own: beta does
    beta = np.linspace(-1.0, 1.0, n_groups).astype(np.float32)
    data = np.empty(nnz, dtype=np.float32)
    indices = np.empty(nnz, dtype=np.int32)
    indptr = np.arange(0, nnz + 1, nnz_per_row, dtype=np.int32)
    y = np.empty(n, dtype=np.int8)
    group = np.empty(n, dtype=np.int8)
    base = (np.arange(1, nnz_per_row, dtype=np.int32) * stratum)[None, :]
    for start in range(0, n, block_rows):
        stop = min(n, start + block_rows)
        c = stop - start
        vals = data[start * nnz_per_row:stop * nnz_per_row].reshape(c, nnz_per_row)
        cols = indices[start * nnz_per_row:stop * nnz_per_row].reshape(c, nnz_per_row)
        g = group[start:stop]
        g[:] = rng.integers(0, n_groups, c, dtype=np.int8)
        rng.standard_normal(out=vals, dtype=np.float32)
        vals[:, 0] = 1.0
        cols[:, 0] = g
        cols[:, 1:] = rng.integers(0, stratum, (c, nnz_per_row - 1), dtype=np.int32)
        cols[:, 1:] += base
        score = np.einsum("ij,ij->i", vals[:, 1:], w[cols[:, 1:]], dtype=np.float32)
        score += beta[g] + 0.5 * rng.standard_normal(c, dtype=np.float32)
        y[start:stop] = score > 0
    X = sp.csr_matrix((data, indices, indptr), shape=(n, d), copy=False)
    if not all(a.ctypes.data == b.ctypes.data and a.nbytes == b.nbytes
               for a, b in ((X.data, data), (X.indices, indices), (X.indptr, indptr))):
        raise RuntimeError("scipy copied the CSR arrays")
    return X, y, group, w, beta


def _rss_gb():
    """(peak RSS by getrusage, VmHWM, current VmRSS) in GB (10^9 bytes)."""
    out = {"ru_maxrss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmHWM", "VmRSS"):
                out[key] = int(value.split()[0]) * 1024 / 1e9
    return out


def run_huge(args):
    import rateopt._core as _core
    from rateopt._training._spec import spec_from_problem
    from rateopt.core._threads import resolve_n_threads

    n = args.n_rows or HUGE_ROWS
    stages = {"start": _rss_gb()}
    t0 = time.perf_counter()
    X, y, group, _, _ = make_huge_csr(n)
    gen_s = time.perf_counter() - t0
    data_gb = (X.data.nbytes + X.indices.nbytes + X.indptr.nbytes) / 1e9
    stages["generated"] = _rss_gb()
    print(f"generated {n} x {X.shape[1]} CSR ({X.nnz} float32 values, int32 indices): {data_gb:.3f} GB "
          f"in {gen_s:.1f} s; RSS {stages['generated']['VmRSS']:.3f} GB", flush=True)
    slack = 0.02
    ds = rateopt.Dataset(X, y, groups={"group": group})
    problem = rateopt.Problem(constraints=[rateopt.goals.demographic_parity("group", slack=slack)], datasets=ds)
    m = problem.n_constraints
    stages["compiled"] = _rss_gb()
    spec = spec_from_problem(problem)
    blk = spec.blocks[0]
    shares = bool(np.shares_memory(blk.X.data.data, X.data) and np.shares_memory(blk.X.data.indices, X.indices))
    threads = resolve_n_threads(None)
    # Baseline: stream X's arrays once (the memory floor of a pass), then one full fused kernel pass.
    floor = []
    for _ in range(3):
        t = time.perf_counter()
        _core.memory_floor(X.data, threads)
        _core.memory_floor(X.indices, threads)
        floor.append(time.perf_counter() - t)
    coef = np.ones((1, spec.n_atoms)) / spec.n_atoms
    passes = []
    for _ in range(3):
        t = time.perf_counter()
        rateopt.core.rate_kernel_multi(blk.X, np.zeros(X.shape[1]), 0.0, blk.atoms, coef)
        passes.append(time.perf_counter() - t)
    floor_s, pass_s = float(np.median(floor)), float(np.median(passes))
    del spec, blk
    print(f"memory floor {floor_s:.3f} s, one full kernel pass {pass_s:.3f} s ({pass_s / floor_s:.1f}x)", flush=True)
    batch = args.batch_size
    n_iter = args.n_iter or 500
    record_every = args.record_every
    epochs = n_iter * batch / n
    t1 = time.perf_counter()
    res = rateopt.train(problem, method="proxy-swap", n_iter=n_iter, batch_size=batch, record_every=record_every,
                        learning_rate=0.05, eta_lambda=1.0, random_state=0, **_common.PAPER_SETTINGS)
    fit_s = time.perf_counter() - t1
    stages["trained"] = _rss_gb()
    n_records = len(res.objectives) - res.n_trivial  # the recorded iterates (after the trivial rules)
    n_full_passes = len(res.objectives)  # one full-data pass per record and per trivial rule
    obj, g = res.solution_values("m-stochastic")
    clf = res.solution("m-stochastic")
    # Independent check of the 10 constraints from the support models' decisions on X, one model at a
    # time (StochasticClassifier.predict_proba would hold all (n, n_models) scores at once).
    support = int(clf.n_models) if hasattr(clf, "n_models") else 1
    models = ([(clf.weights_[i], clf.biases_[i], clf.probabilities_[i]) for i in range(support)]
              if hasattr(clf, "n_models") else [(clf.coef_[0], clf.intercept_[0], 1.0)])
    p = np.zeros(n)
    for wk, bk, prob in models:
        p += prob * (rateopt.LinearClassifier(wk, bk).decision_function(X) >= 0)
    counts = np.bincount(group, minlength=5)
    ppr = np.bincount(group, weights=p, minlength=5) / counts
    ppr_all = float(p.mean())
    checked = float(np.max(np.abs(ppr - ppr_all)) - slack)
    err = float(np.mean(np.where(y == 1, 1.0 - p, p)))
    stages["evaluated"] = _rss_gb()
    # The same schedule without constraints: how far parity is from what the data alone gives.
    t2 = time.perf_counter()
    unc = rateopt.train(problem, method="unconstrained", n_iter=n_iter, batch_size=batch, record_every=record_every,
                        learning_rate=0.05, random_state=0, proxy=_common.PAPER_SETTINGS["proxy"])
    unc_s = time.perf_counter() - t2
    unc_obj, unc_g = unc.solution_values("last")
    stages["unconstrained"] = _rss_gb()
    peak = _rss_gb()
    out = {
        "case": "huge", "n_samples": n, "n_features": X.shape[1], "nnz_per_row": HUGE_NNZ, "nnz": int(X.nnz),
        "dtype": "float32", "index_dtype": "int32", "data_gb": data_gb, "generate_s": gen_s,
        "X_read_in_place": shares, "n_constraints": m, "base_rates": (np.bincount(group, weights=y, minlength=5)
                                                                     / counts).tolist(),
        "method": "proxy-swap", "n_iter": res.n_iter, "batch_size": batch, "record_every": record_every,
        "learning_rate": 0.05, "eta_lambda": 1.0, "epochs": epochs, "n_records": n_records,
        "memory_floor_s": floor_s, "full_pass_s": pass_s, "full_pass_over_floor": pass_s / floor_s,
        "fit_s": fit_s, "s_per_epoch": fit_s / epochs,
        "s_per_epoch_minibatch_only": (fit_s - n_full_passes * pass_s) / epochs,
        "support": support, "train_error": obj, "train_max_violation": float(max(0.0, g.max())),
        "train_max_violation_checked": max(0.0, checked), "train_error_checked": err,
        "unconstrained_fit_s": unc_s, "unconstrained_error": unc_obj,
        "unconstrained_max_violation": float(max(0.0, unc_g.max())),
        "peak_rss_gb": peak["ru_maxrss"], "vm_hwm_gb": peak["VmHWM"],
        "peak_rss_over_data": peak["ru_maxrss"] / data_gb, "vm_hwm_over_data": peak["VmHWM"] / data_gb,
        "rss_by_stage_gb": stages, "machine": _common.machine_info(),
    }
    print(f"{n} x {X.shape[1]} float32 CSR ({data_gb:.2f} GB), {m} constraints, {res.n_iter} iterations of "
          f"{batch} rows ({epochs:.1f} epochs, {n_records} full-data records): {fit_s:.1f} s, "
          f"{out['s_per_epoch']:.1f} s/epoch")
    print(f"peak RSS {peak['ru_maxrss']:.3f} GB (VmHWM {peak['VmHWM']:.3f} GB) = "
          f"{out['peak_rss_over_data']:.3f}x the data (target <= 1.3)")
    print(f"m-stochastic: error {obj:.4f}, max violation {out['train_max_violation']:.2e} "
          f"(checked from probabilities: {out['train_max_violation_checked']:.2e}); unconstrained: error "
          f"{unc_obj:.4f}, max violation {out['unconstrained_max_violation']:.4f}")
    name = "train_large_huge" if n == HUGE_ROWS else f"train_large_huge_{n}"
    rows = [[k, v] for k, v in out.items() if not isinstance(v, dict)]
    md = (f"# train_large --case huge\n\n" + _common.markdown_table(["quantity", "value"], rows) + "\n")
    path = os.path.join(args.results_dir, name)
    _common.write_results(out, md, _common.Path(path + ".json"), _common.Path(path + ".md"))
    if args.json:
        _common.emit_json_line(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--case", choices=("default", "huge"), default="default")
    ap.add_argument("--n-iter", type=int, default=None)
    ap.add_argument("--n-rows", type=int, default=None, help="huge case: rows (default 10^7)")
    ap.add_argument("--batch-size", type=int, default=100_000, help="huge case: minibatch rows")
    ap.add_argument("--record-every", type=int, default=25, help="huge case: iterations between full-data records")
    ap.add_argument("--results-dir", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"),
                    help="huge case: where train_large_huge.{json,md} go")
    args = ap.parse_args(argv)
    if args.case == "huge":
        if args.quick:
            ap.error("--case huge is a 4 GB run: it has no --quick form (use --n-rows for a trial)")
        return run_huge(args)
    n = 20_000 if args.quick else 200_000
    n_iter = args.n_iter or (200 if args.quick else 1000)
    X, y, group = make_data(n, 20, 5)
    ds = rateopt.Dataset(X, y, groups={"group": group})
    problem = rateopt.Problem(constraints=[rateopt.goals.demographic_parity("group", slack=0.02)], datasets=ds)
    m = problem.n_constraints
    t0 = time.perf_counter()
    res = rateopt.train(problem, method="proxy-swap", n_iter=n_iter, learning_rate=0.05, eta_lambda=1.0,
                        **_common.PAPER_SETTINGS)
    fit_s = time.perf_counter() - t0
    # The LP itself, timed on its own (the result already holds it, cached by
    # train()'s feasibility check, so res.solution() would only time a lookup).
    from rateopt._solutions._shrink import shrink

    t1 = time.perf_counter()
    shrink(res.objectives, res.constraints)
    shrink_s = time.perf_counter() - t1
    clf = res.solution("m-stochastic")
    obj, g = res.solution_values("m-stochastic")
    ev = problem.evaluate(clf.predict_proba(X)[:, 1], kind="probabilities")
    unc = rateopt.train(problem, method="unconstrained", n_iter=n_iter, learning_rate=0.05,
                        proxy=_common.PAPER_SETTINGS["proxy"])
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
