"""Benchmark of the fused rate kernel (``rateopt.core.rate_kernel``).

Measures, in one run on the same data (DESIGN §3, rule 1: one pass over the
data per iteration, cost independent of the number of constraints):

* the fused kernel at 1 and 2 threads;
* a SciPy baseline of the same iteration, written as a user would write it
  (``X @ theta``, NumPy indicator and hinge sums through the atom membership
  matrix, ``X.T @ d``), single process; and, for reference, the same baseline on
  a float64 copy of X made once outside the timing (SciPy otherwise upcasts the
  float32 data on every product);
* the memory floor: the time of one plain read of X's arrays (``data``,
  ``indices``, ``indptr`` for CSR; the array for dense), at 1 and 2 threads.

Cases: dense 200,000 x 100 and CSR 2,000,000 rows x 50 nnz/row over
``--n-features`` (default 20,000) columns, float32 values, int32 indices; for
m = 1, 10, 100 constraints with 2 atoms per example.

Atom structure (m constraints, 2 atoms per example, m + 2 atoms): every example
``j`` has a group ``g_j`` drawn uniformly from ``m`` groups (each group
non-empty) and a label ``y_j ~ Bernoulli(0.3)`` (both classes present). It
belongs to the group atom ``g_j`` (ids ``0..m-1``, "positive rate in group g",
one per constraint) and to the label atom ``m + y_j`` ("FPR"/"TPR" of the whole
data). Weights are normalized per atom (``1/|S_a|``). ``coef`` is standard
normal (mixed signs); ``theta`` is random, scaled so that scores
``s = X theta + 0.1`` have unit spread, so indicators and both hinges are mixed.

Timing: 1 warm-up call plus 5 timed repeats per configuration (3 with
``--quick``), repeats interleaved round-robin across configurations; medians
are reported, and every ratio is a ratio of medians from the same run. The
machine may be shared: each round is watched (``/proc/stat``), and rounds during
which other processes used more than 0.2 cores are re-run (up to
``--max-rounds``); the medians use the quiet rounds, or all rounds with the
case flagged ``noisy`` when too few were quiet. BLAS is limited to 1 thread
(idle OpenBLAS threads busy-wait and would steal the kernel's second core).

Headline ratios (CSR case, 2 threads; the worst over m for the first two):

* ``speedup_vs_scipy`` = scipy / fused@2            (target >= 3)
* ``memory_floor_ratio`` = fused@2 / floor@2        (target <= 2.5, stretch <= 2;
  issue 14 item 4)
* ``m100_over_m1`` = fused@2(m=100) / fused@2(m=1)  (target within 15 % of 1)
* ``multi_over_single`` = multi@2(k=11) / fused@2 at m = 10: the m + 1
  combinations of the Lagrangian-hinge game (one with its gradient, m for
  their values) in one pass, over one combination            (target <= 1.3)

Usage::

    python bench/kernel.py             # full run -> bench/results/kernel.{json,md}
    python bench/kernel.py --quick     # < 30 s   -> bench/results/kernel_quick.{json,md}
    python bench/kernel.py --quick --json   # last stdout line: one JSON object
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

from _common import (  # noqa: E402
    CpuMonitor,
    Interleaved,
    add_common_args,
    emit_json_line,
    git_sha,
    limit_blas_threads,
    machine_info,
    markdown_table,
    results_paths,
    utc_now,
    wait_for_quiet,
    write_results,
)

NAME = "kernel"
MULTI_M = 10  # m + 1 combinations in one pass vs one combination, at this m
MARGIN = 1.0
BIAS = 0.1
LABEL_P = 0.3
THREADS = (1, 2)

FULL = {"csr_rows": 2_000_000, "dense_rows": 200_000, "repeats": 5, "wait_quiet": 120.0}
QUICK = {"csr_rows": 200_000, "dense_rows": 20_000, "repeats": 3, "wait_quiet": 0.0}
NOISY_CORES = 0.2  # other processes' average core use above which 2-thread runs are suspect

TARGETS = {
    "speedup_vs_scipy": ">= 3",
    "memory_floor_ratio": "<= 2.5 (stretch <= 2)",
    "m100_over_m1": "within 15% of 1 (|r - 1| <= 0.15)",
    "multi_over_single": "<= 1.3",
}


def log(msg: str) -> None:
    print(msg, flush=True)


# --------------------------------------------------------------------------- problem


def build_csr(n_rows: int, nnz_per_row: int, n_features: int,
              rng: np.random.Generator) -> sp.csr_array:
    """float32 CSR with exactly ``nnz_per_row`` distinct, sorted, random
    columns per row, built without Python loops over rows.

    Columns are stratified: the feature range is cut into ``nnz_per_row`` equal
    strata and each row draws one column uniformly from each stratum, which
    gives distinct, sorted indices for free (no per-row sort, no duplicates).
    """
    if n_features < nnz_per_row:
        raise SystemExit(f"--n-features ({n_features}) must be >= nnz per row "
                         f"({nnz_per_row})")
    nnz = n_rows * nnz_per_row
    if nnz >= 2**31:
        raise SystemExit("nnz must fit int32 indptr for this benchmark")
    bounds = (np.arange(nnz_per_row + 1, dtype=np.int64) * n_features) // nnz_per_row
    lo = bounds[:-1].astype(np.int32)
    width = np.diff(bounds).astype(np.float32)
    indices = np.empty((n_rows, nnz_per_row), dtype=np.int32)
    chunk = 1 << 18  # rows per chunk: bounds the float32 temporaries
    for start in range(0, n_rows, chunk):
        stop = min(start + chunk, n_rows)
        u = rng.random((stop - start, nnz_per_row), dtype=np.float32)
        u *= width
        cols = u.astype(np.int32)
        cols += lo
        np.minimum(cols, bounds[1:].astype(np.int32) - 1, out=cols)
        indices[start:stop] = cols
    data = rng.standard_normal(nnz, dtype=np.float32)
    indptr = np.arange(0, nnz + 1, nnz_per_row, dtype=np.int32)
    X = sp.csr_array((data, indices.reshape(-1), indptr), shape=(n_rows, n_features))
    if X.indices.dtype != np.int32 or X.indptr.dtype != np.int32:
        raise RuntimeError("scipy changed the index dtype of the CSR matrix")
    return X


def build_dense(n_rows: int, n_features: int, rng: np.random.Generator) -> np.ndarray:
    return rng.standard_normal((n_rows, n_features), dtype=np.float32)


def build_atoms(n: int, m: int, rng: np.random.Generator) -> dict[str, Any]:
    """Two atoms per example: group atom ``g_j`` in ``[0, m)`` and label atom
    ``m + y_j``; weights normalized per atom. Returns the CSR arrays of the
    contract's AtomTable layout plus ``n_atoms``."""
    if n < m + 2:
        raise SystemExit(f"need at least m + 2 = {m + 2} rows, got {n}")
    group = rng.integers(0, m, size=n, dtype=np.int32)
    group[rng.choice(n, size=m, replace=False)] = np.arange(m, dtype=np.int32)
    label = (rng.random(n) < LABEL_P).astype(np.int32)
    label[0], label[1] = 0, 1
    n_atoms = m + 2
    indices = np.empty((n, 2), dtype=np.int32)
    indices[:, 0] = group
    indices[:, 1] = m + label
    indices = indices.reshape(-1)
    sizes = np.bincount(indices, minlength=n_atoms).astype(np.float64)
    weights = 1.0 / sizes[indices]
    indptr = np.arange(0, 2 * n + 1, 2, dtype=np.int64)
    return {"indptr": indptr, "indices": indices, "weights": weights,
            "n_atoms": n_atoms}


def make_theta(X: Any, rng: np.random.Generator) -> np.ndarray:
    """Random theta, scaled so that the scores have unit standard deviation."""
    theta = rng.standard_normal(X.shape[1])
    sample = X[: min(X.shape[0], 20_000)]
    s = np.asarray(sample @ theta, dtype=np.float64)
    sd = float(s.std())
    return theta / (sd if sd > 0 else 1.0)


def x_arrays(X: Any) -> list[np.ndarray]:
    """The arrays one pass over X reads (1-D contiguous views)."""
    if sp.issparse(X):
        return [X.data, X.indices, X.indptr]
    return [X.reshape(-1)]


def x_nbytes(X: Any) -> int:
    return int(sum(a.nbytes for a in x_arrays(X)))


# --------------------------------------------------------------------------- SciPy baseline


def scipy_iteration(X: Any, theta: np.ndarray, bias: float, A: sp.csr_array,
                    coef: np.ndarray, margin: float = MARGIN) -> dict[str, Any]:
    """The kernel's iteration as a user would write it with NumPy/SciPy."""
    s = X @ theta + bias
    pos = (s >= 0).astype(np.float64)
    hinge_pos = np.maximum(0.0, margin + s)
    hinge_neg = np.maximum(0.0, margin - s)
    rates = A.T @ pos
    proxy_pos_rates = A.T @ hinge_pos
    proxy_neg_rates = A.T @ hinge_neg
    u = A @ coef
    active = ((u > 0) & (hinge_pos > 0)) | ((u < 0) & (hinge_neg > 0))
    d = np.where(active, u, 0.0)
    grad = X.T @ d
    grad_bias = d.sum()
    phi = np.where(u > 0, u * hinge_pos, np.where(u < 0, -u * hinge_neg + u, 0.0))
    return {
        "rates": rates,
        "proxy_pos_rates": proxy_pos_rates,
        "proxy_neg_rates": proxy_neg_rates,
        "proxy_value": float(phi.sum()),
        "grad": np.asarray(grad, dtype=np.float64).reshape(-1),
        "grad_bias": float(grad_bias),
        "value": float(coef @ rates),
    }


CHECK_FIELDS = ("rates", "proxy_pos_rates", "proxy_neg_rates", "proxy_value",
                "grad", "grad_bias", "value")


def compare(res: Any, ref: dict[str, Any], rtol: float = 1e-6) -> dict[str, Any]:
    """assert_allclose(rtol=1e-6) of every kernel output against the baseline.

    An absolute floor of ``1e-9 * max|ref|`` per field keeps entries that cancel
    to ~0 (mixed-sign sums) from failing on summation order alone; it is far
    below any real discrepancy (one flipped indicator moves a rate by 1/|S_a|).
    """
    out: dict[str, Any] = {"ok": True, "rtol": rtol, "fields": {}}
    for f in CHECK_FIELDS:
        got = np.asarray(getattr(res, f), dtype=np.float64)
        want = np.asarray(ref[f], dtype=np.float64)
        scale = float(np.max(np.abs(want))) if want.size else 0.0
        atol = 1e-9 * scale
        err = np.abs(got - want) if got.shape == want.shape else None
        entry: dict[str, Any] = {
            "max_abs_err": None if err is None else float(err.max(initial=0.0)),
            "scale": scale,
        }
        try:
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
        except AssertionError as exc:
            out["ok"] = False
            entry["error"] = str(exc).strip().splitlines()[:8]
        out["fields"][f] = entry
    return out


# --------------------------------------------------------------------------- memory floor


class FloorReader:
    """Time of one plain read of a list of 1-D arrays at ``n_threads``.

    Uses ``rateopt._core.memory_floor(array, n_threads)`` (OpenMP read with a
    checksum) when the core has it, else NumPy sums over ``n_threads`` chunks
    in a thread pool (NumPy releases the GIL in reductions).
    """

    def __init__(self, core: Any) -> None:
        self._core_fn = getattr(core, "memory_floor", None) if core is not None else None
        self._pools: dict[int, ThreadPoolExecutor] = {}
        self._adapt: dict[str, Any] = {}
        self.method = ("rateopt._core.memory_floor" if self._core_fn is not None
                       else "numpy sum, one chunk per thread (thread pool)")

    def _core_arg(self, a: np.ndarray) -> np.ndarray:
        """The view of ``a`` the core accepts (probed once per dtype)."""
        key = a.dtype.str
        if key not in self._adapt:
            probe = a[:64]
            for conv in (lambda x: x, lambda x: x.view(np.uint8)):
                try:
                    self._core_fn(conv(probe), 1)
                except TypeError:
                    continue
                self._adapt[key] = conv
                break
            else:
                raise TypeError(f"rateopt._core.memory_floor accepts no view of "
                                f"dtype {a.dtype}")
        return self._adapt[key](a)

    def reader(self, arrays: list[np.ndarray], n_threads: int):
        if self._core_fn is not None:
            fn = self._core_fn
            views = [self._core_arg(a) for a in arrays]

            def read_core() -> Any:
                return [fn(v, n_threads) for v in views]

            return read_core

        if n_threads == 1:
            def read_np1() -> Any:
                return [a.sum() for a in arrays]

            return read_np1
        pool = self._pools.setdefault(n_threads, ThreadPoolExecutor(n_threads))
        chunks = [c for a in arrays for c in np.array_split(a, n_threads)]

        def read_np() -> Any:
            return list(pool.map(np.sum, chunks))

        return read_np

    def close(self) -> None:
        for pool in self._pools.values():
            pool.shutdown()


# --------------------------------------------------------------------------- one case


def run_case(case: str, X: Any, ms: list[int], *, args: argparse.Namespace,
             ro_core: Any, floor: FloorReader, seed: int) -> dict[str, Any]:
    from rateopt.core import AtomTable, FeatureMatrix, rate_kernel, rate_kernel_multi

    n = X.shape[0]
    nbytes = x_nbytes(X)
    rng = np.random.default_rng([seed, 1])
    theta = make_theta(X, rng)

    t0 = time.perf_counter()
    Xm = FeatureMatrix(X)
    fm_s = time.perf_counter() - t0
    log(f"  FeatureMatrix(X) (validation, once): {fm_s * 1e3:.1f} ms")

    X64 = None
    if not args.skip_x64:
        if sp.issparse(X):
            X64 = sp.csr_array((X.data.astype(np.float64), X.indices, X.indptr),
                               shape=X.shape)
        else:
            X64 = X.astype(np.float64)

    bench = Interleaved()
    problems: dict[int, dict[str, Any]] = {}
    for m in ms:
        arng = np.random.default_rng([seed, 2, m])
        at = build_atoms(n, m, arng)
        atoms = AtomTable(at["indptr"], at["indices"], at["weights"], at["n_atoms"])
        A = sp.csr_array((at["weights"], at["indices"], at["indptr"]),
                         shape=(n, at["n_atoms"]))
        coef = arng.standard_normal(at["n_atoms"])
        problems[m] = {"atoms": atoms, "A": A, "coef": coef, "n_atoms": at["n_atoms"]}

        for nt in THREADS:
            bench.add(f"fused{nt}_m{m}",
                      lambda atoms=atoms, coef=coef, nt=nt: rate_kernel(
                          Xm, theta, BIAS, atoms, coef, margin=MARGIN, n_threads=nt))
        if m == MULTI_M:
            # The Lagrangian-hinge pattern: the model's combination with its
            # gradient, plus m per-constraint combinations for their values only.
            coefs = np.vstack([coef, arng.standard_normal((m, at["n_atoms"]))])
            weights = np.zeros(m + 1)
            weights[0] = 1.0
            for nt in THREADS:
                bench.add(f"multi{nt}_m{m}",
                          lambda atoms=atoms, coefs=coefs, weights=weights, nt=nt: rate_kernel_multi(
                              Xm, theta, BIAS, atoms, coefs, grad_weights=weights, margin=MARGIN, n_threads=nt))
        bench.add(f"scipy_m{m}",
                  lambda A=A, coef=coef: scipy_iteration(X, theta, BIAS, A, coef))
        if X64 is not None:
            bench.add(f"scipy64_m{m}",
                      lambda A=A, coef=coef: scipy_iteration(X64, theta, BIAS, A, coef))
    arrays = x_arrays(X)
    for nt in THREADS:
        bench.add(f"floor{nt}", floor.reader(arrays, nt))

    quiet = None
    if args.wait_quiet > 0:
        quiet = wait_for_quiet(args.wait_quiet, max_external_cores=NOISY_CORES)
        log(f"  waited {quiet['waited_s']:.0f} s for a quiet machine: other processes "
            f"use {quiet['external_cores'] or 0:.2f} cores"
            f"{'' if quiet['quiet'] else ' (gave up waiting)'}")
    log(f"  timing: {len(bench.names())} configurations x (1 warm-up + "
        f"{args.repeats} repeats, interleaved)")
    with CpuMonitor() as mon:
        bench.run(repeats=args.repeats, warmup=1, quiet_cores=NOISY_CORES,
                  max_rounds=args.max_rounds)
    ext = mon.external_cores
    loads = bench.round_loads
    n_quiet = sum(1 for x in loads if x is None or x <= NOISY_CORES)
    used_loads = [loads[r] for r in bench.used_rounds if loads[r] is not None]
    used_ext = sum(used_loads) / len(used_loads) if used_loads else None
    noisy = not bench.used_quiet_only
    log(f"  timing done in {mon.wall_s:.1f} s: {len(loads)} rounds, {n_quiet} quiet "
        f"(other processes <= {NOISY_CORES} cores); other processes used "
        f"{'n/a' if ext is None else f'{ext:.2f}'} cores on average overall")
    if noisy:
        log(f"  NOISY: fewer than {min(args.repeats, 3)} quiet rounds; medians use all "
            f"rounds and 2-thread timings shared a core with other work")

    floor_ms = {str(nt): bench.median_s(f"floor{nt}") * 1e3 for nt in THREADS}
    out: dict[str, Any] = {
        "n_samples": n,
        "n_features": X.shape[1],
        "format": "csr" if sp.issparse(X) else "dense",
        "dtype": str(X.dtype),
        "index_dtype": str(X.indices.dtype) if sp.issparse(X) else None,
        "nnz": int(X.nnz) if sp.issparse(X) else int(X.size),
        "x_bytes": nbytes,
        "feature_matrix_ms": fm_s * 1e3,
        "wait_quiet": quiet,
        "load_during_timing": {**mon.as_dict(),
                               "external_cores_used_rounds": used_ext,
                               "round_external_cores": loads,
                               "used_rounds": bench.used_rounds,
                               "quiet_threshold_cores": NOISY_CORES},
        "noisy": noisy,
        "floor_ms": floor_ms,
        "floor_samples_ms": {str(nt): [t * 1e3 for t in bench.samples_s(f"floor{nt}")]
                             for nt in THREADS},
        "floor_all_rounds_ms": {str(nt): [t * 1e3 for t in
                                          bench.all_samples_s(f"floor{nt}")]
                                for nt in THREADS},
        "floor_gbps": {k: nbytes / (v * 1e-3) / 1e9 for k, v in floor_ms.items()},
        "by_m": {},
    }
    all_ok = True
    for m in ms:
        ref = bench.warm_result(f"scipy_m{m}")
        check = compare(bench.warm_result(f"fused2_m{m}"), ref)
        check1 = compare(bench.warm_result(f"fused1_m{m}"), ref)
        check["ok_1_thread"] = check1["ok"]
        if not check1["ok"]:
            check["fields_1_thread"] = check1["fields"]
        all_ok &= check["ok"] and check1["ok"]

        row: dict[str, Any] = {"n_atoms": problems[m]["n_atoms"], "check": check}
        names = {f"fused_{nt}": f"fused{nt}_m{m}" for nt in THREADS}
        names["scipy"] = f"scipy_m{m}"
        if X64 is not None:
            names["scipy_x64"] = f"scipy64_m{m}"
        for key, cfg in names.items():
            med = bench.median_s(cfg)
            row[f"{key}_ms"] = med * 1e3
            row[f"{key}_samples_ms"] = [t * 1e3 for t in bench.samples_s(cfg)]
            row[f"{key}_min_ms"] = min(row[f"{key}_samples_ms"])
            row[f"{key}_all_rounds_ms"] = [t * 1e3 for t in bench.all_samples_s(cfg)]
            row[f"{key}_gbps"] = nbytes / med / 1e9
        row["speedup_vs_scipy"] = row["scipy_ms"] / row["fused_2_ms"]
        row["speedup_vs_scipy_1thread"] = row["scipy_ms"] / row["fused_1_ms"]
        if X64 is not None:
            row["speedup_vs_scipy_x64"] = row["scipy_x64_ms"] / row["fused_2_ms"]
        row["memory_floor_ratio"] = row["fused_2_ms"] / floor_ms["2"]
        row["memory_floor_ratio_1thread"] = row["fused_1_ms"] / floor_ms["1"]
        row["thread_scaling"] = row["fused_1_ms"] / row["fused_2_ms"]
        if m == MULTI_M:
            med = bench.median_s(f"multi2_m{m}")
            row["multi_2_ms"] = med * 1e3
            row["multi_2_samples_ms"] = [t * 1e3 for t in bench.samples_s(f"multi2_m{m}")]
            row["multi_over_single"] = row["multi_2_ms"] / row["fused_2_ms"]
            row["multi_1_ms"] = bench.median_s(f"multi1_m{m}") * 1e3
            row["multi_over_single_1thread"] = row["multi_1_ms"] / row["fused_1_ms"]
            multi = bench.warm_result(f"multi2_m{m}")
            single = bench.warm_result(f"fused2_m{m}")
            # The first combination is the single kernel's, bit for bit.
            row["multi_check_ok"] = bool(np.array_equal(multi.grad, single.grad)
                                         and multi.proxy_values[0] == single.proxy_value)
            all_ok &= row["multi_check_ok"]
        out["by_m"][str(m)] = row
        log(f"  m={m:>3} ({row['n_atoms']} atoms): fused@1 {row['fused_1_ms']:8.2f} ms"
            f"  fused@2 {row['fused_2_ms']:8.2f} ms  scipy {row['scipy_ms']:8.2f} ms"
            + (f"  scipy(X f64) {row['scipy_x64_ms']:8.2f} ms" if X64 is not None else "")
            + f"  | speedup {row['speedup_vs_scipy']:.2f}x"
            f"  fused@2/floor@2 {row['memory_floor_ratio']:.2f}"
            f"  check {'ok' if check['ok'] and check1['ok'] else 'FAILED'}")
    log(f"  floor@1 {floor_ms['1']:.2f} ms ({out['floor_gbps']['1']:.1f} GB/s), "
        f"floor@2 {floor_ms['2']:.2f} ms ({out['floor_gbps']['2']:.1f} GB/s) "
        f"for {nbytes / 1e6:.0f} MB of X")
    out["check_ok"] = all_ok

    ms_sorted = sorted(int(k) for k in out["by_m"])
    rows = [out["by_m"][str(m)] for m in ms_sorted]
    out["ratios"] = {
        "speedup_vs_scipy": min(r["speedup_vs_scipy"] for r in rows),
        "memory_floor_ratio": max(r["memory_floor_ratio"] for r in rows),
        "m100_over_m1": (out["by_m"]["100"]["fused_2_ms"] / out["by_m"]["1"]["fused_2_ms"]
                         if "1" in out["by_m"] and "100" in out["by_m"] else None),
        "multi_over_single": out["by_m"].get(str(MULTI_M), {}).get("multi_over_single"),
        "multi_over_single_1thread": out["by_m"].get(str(MULTI_M), {}).get("multi_over_single_1thread"),
    }
    del bench, Xm, X64
    return out


# --------------------------------------------------------------------------- report


def evaluate_targets(r: dict[str, Any]) -> dict[str, bool | None]:
    s, f, q = r["speedup_vs_scipy"], r["memory_floor_ratio"], r["m100_over_m1"]
    k = r.get("multi_over_single")
    return {
        "multi_over_single": None if k is None else bool(k <= 1.3),
        "speedup_vs_scipy": None if s is None else bool(s >= 3.0),
        "memory_floor_ratio": None if f is None else bool(f <= 2.5),
        "m100_over_m1": None if q is None else bool(abs(q - 1.0) <= 0.15),
    }


def markdown(result: dict[str, Any]) -> str:
    p = result["params"]
    lines = [
        f"# Fused rate kernel benchmark ({'quick' if result['quick'] else 'full'})",
        "",
        f"{result['date']} · git {result['git']['sha'] or 'n/a'}"
        f"{' (dirty)' if result['git']['dirty'] else ''} · "
        f"{result['machine']['cpu_model'] or '?'} · "
        f"{result['machine']['cpu_count']} CPUs · "
        f"numpy {result['machine']['versions'].get('numpy')} · "
        f"scipy {result['machine']['versions'].get('scipy')}",
        "",
        f"CSR {p['csr_rows']:,} x {p['n_features']:,}, {p['nnz_per_row']} nnz/row; "
        f"dense {p['dense_rows']:,} x {p['dense_features']}; float32, int32 indices. "
        f"m constraints, 2 atoms/example (group of m + label), m + 2 atoms. "
        f"Medians of {p['repeats']} interleaved repeats after 1 warm-up (quiet rounds "
        f"preferred, see JSON); ms per "
        f"iteration. Floor: one plain read of X's arrays ({p['floor_method']}). "
        f"GB/s = bytes of X / time.",
        "",
    ]
    headers = ["case", "m", "fused@1", "fused@2", "scipy", "scipy (X f64)",
               "floor@1", "floor@2", "fused@2 GB/s", "floor@2 GB/s",
               "scipy/fused@2", "fused@1/floor@1", "fused@2/floor@2"]
    rows = []
    for case, c in result["cases"].items():
        for m, r in c["by_m"].items():
            rows.append([case, m, r["fused_1_ms"], r["fused_2_ms"], r["scipy_ms"],
                         r.get("scipy_x64_ms"), c["floor_ms"]["1"], c["floor_ms"]["2"],
                         r["fused_2_gbps"], c["floor_gbps"]["2"],
                         r["speedup_vs_scipy"], r["memory_floor_ratio_1thread"],
                         r["memory_floor_ratio"]])
    lines.append(markdown_table(headers, rows))
    lines.append("")
    loads = []
    for case, c in result["cases"].items():
        ld = c["load_during_timing"]
        ext = ld["external_cores_used_rounds"]
        loads.append(f"{case} {'n/a' if ext is None else f'{ext:.2f}'} cores over the "
                     f"{len(ld['used_rounds'])} rounds used (of "
                     f"{len(ld['round_external_cores'])})"
                     + (" (noisy)" if c["noisy"] else ""))
    lines.append("Other processes' average CPU use during timing: " + ", ".join(loads)
                 + f"; BLAS limited to {p['blas_threads_limit']} thread(s).")
    lines.append("")
    lines.append("Targets (CSR, 2 threads; worst over m for the first two):")
    lines.append("")
    met = result["targets_met"]
    for key, target in TARGETS.items():
        val = result[key]
        mark = {True: "met", False: "NOT met", None: "n/a"}[met[key]]
        sval = "n/a" if val is None else f"{val:.3f}"
        lines.append(f"- `{key}` = {sval} (target {target}): **{mark}**")
    one = result.get("multi_over_single_1thread")
    if one is not None:
        lines.append(f"- `multi_over_single_1thread` = {one:.3f} (the same ratio at 1 thread, where a "
                     "second core shared with other work cannot move it)")
    if result["noisy"]:
        lines += ["", "**Noisy run**: other processes kept a core busy during too many "
                  "rounds; 2-thread timings (fused@2, floor@2) and the ratios built on "
                  "them are unreliable."]
    if not result["check_ok"]:
        lines += ["", "**The fused kernel and the SciPy baseline disagree "
                  "(see `cases.*.by_m.*.check` in the JSON).**"]
    return "\n".join(lines)


# --------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_args(ap)
    ap.add_argument("--n-features", type=int, default=20_000,
                    help="CSR columns (default 20,000)")
    ap.add_argument("--csr-rows", type=int, default=None,
                    help="CSR rows (default 2,000,000; 200,000 with --quick)")
    ap.add_argument("--nnz-per-row", type=int, default=50)
    ap.add_argument("--dense-rows", type=int, default=None,
                    help="dense rows (default 200,000; 20,000 with --quick)")
    ap.add_argument("--dense-features", type=int, default=100)
    ap.add_argument("--ms", type=int, nargs="+", default=[1, 10, 100],
                    help="numbers of constraints (default 1 10 100)")
    ap.add_argument("--cases", nargs="+", choices=["csr", "dense"],
                    default=["csr", "dense"])
    ap.add_argument("--repeats", type=int, default=None,
                    help="timed repeats per configuration (default 5; 3 with --quick)")
    ap.add_argument("--max-rounds", type=int, default=None,
                    help="on a busy machine, keep timing rounds until --repeats rounds "
                         "ran while other processes used < 0.2 cores, up to this many "
                         "rounds (default 2 x repeats); medians use the quiet rounds")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip-x64", action="store_true",
                    help="skip the reference baseline on a float64 copy of X")
    ap.add_argument("--blas-threads", type=int, default=1,
                    help="limit BLAS thread pools to this many threads during the run "
                         "(default 1: idle OpenBLAS threads busy-wait and steal the "
                         "second core from the kernel; 0 = leave as is)")
    ap.add_argument("--wait-quiet", type=float, default=None,
                    help="before timing each case, wait up to this many seconds for "
                         "other processes to use < 0.2 cores (default 120; 0 with --quick)")
    args = ap.parse_args(argv)
    preset = QUICK if args.quick else FULL
    for key in ("csr_rows", "dense_rows", "repeats", "wait_quiet"):
        if getattr(args, key) is None:
            setattr(args, key, preset[key])
    if args.max_rounds is None:
        args.max_rounds = 2 * args.repeats
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    t_start = time.perf_counter()
    try:
        import rateopt  # noqa: F401
        import rateopt.core  # noqa: F401
        ro_core = getattr(rateopt, "_core", None)
        if ro_core is None:
            import rateopt._core as ro_core  # noqa: PLW0406
    except ImportError as exc:
        print(f"error: rateopt is not importable ({exc}); build and install it first "
              f"(e.g. into .venv) and run this script with that interpreter",
              file=sys.stderr)
        return 2

    floor = FloorReader(ro_core)
    json_path, md_path = results_paths(NAME, quick=args.quick, out=args.out)
    log(f"rateopt fused-kernel benchmark ({'quick' if args.quick else 'full'}), "
        f"threads {THREADS}, {args.repeats} repeats + 1 warm-up, memory floor via "
        f"{floor.method}")

    machine = machine_info()  # before the run: load average, thread pools as found
    blas_limit = args.blas_threads if args.blas_threads > 0 else None
    cases: dict[str, Any] = {}
    with limit_blas_threads(blas_limit):
        for case in args.cases:
            rng = np.random.default_rng([args.seed, 0, 0 if case == "csr" else 1])
            t0 = time.perf_counter()
            if case == "csr":
                X = build_csr(args.csr_rows, args.nnz_per_row, args.n_features, rng)
                desc = (f"CSR {args.csr_rows:,} x {args.n_features:,}, "
                        f"{args.nnz_per_row} nnz/row ({X.nnz:,} nnz)")
            else:
                X = build_dense(args.dense_rows, args.dense_features, rng)
                desc = f"dense {args.dense_rows:,} x {args.dense_features}"
            log(f"[{case}] {desc}, float32, {x_nbytes(X) / 1e6:.0f} MB of X; built in "
                f"{time.perf_counter() - t0:.1f} s")
            cases[case] = run_case(case, X, args.ms, args=args, ro_core=ro_core,
                                   floor=floor, seed=args.seed)
            cases[case]["build_s"] = time.perf_counter() - t0
            del X
    floor.close()

    head = cases.get("csr", {}).get("ratios",
                                    {"speedup_vs_scipy": None, "memory_floor_ratio": None,
                                     "m100_over_m1": None})
    check_ok = all(c["check_ok"] for c in cases.values())
    result: dict[str, Any] = {
        "benchmark": NAME,
        "quick": args.quick,
        "date": utc_now(),
        "git": git_sha(),
        "speedup_vs_scipy": head["speedup_vs_scipy"],
        "memory_floor_ratio": head["memory_floor_ratio"],
        "m100_over_m1": head["m100_over_m1"],
        "multi_over_single": head.get("multi_over_single"),
        "multi_over_single_1thread": head.get("multi_over_single_1thread"),
        "headline": "CSR case, fused kernel at 2 threads; speedup_vs_scipy is the "
                    "minimum and memory_floor_ratio the maximum over m",
        "targets": TARGETS,
        "check_ok": check_ok,
        "noisy": any(c["noisy"] for c in cases.values()),
        "params": {
            "csr_rows": args.csr_rows, "nnz_per_row": args.nnz_per_row,
            "n_features": args.n_features, "dense_rows": args.dense_rows,
            "dense_features": args.dense_features, "ms": args.ms,
            "threads": list(THREADS), "repeats": args.repeats, "warmup": 1,
            "interleaved": True, "max_rounds": args.max_rounds,
            "quiet_rounds": f"medians over the first `repeats` rounds in which other "
                            f"processes used <= {NOISY_CORES} cores, if at least "
                            f"min(repeats, 3) such rounds ran within max_rounds; "
                            f"else over all rounds (case flagged noisy)",
            "seed": args.seed, "margin": MARGIN, "bias": BIAS,
            "dtype": "float32", "index_dtype": "int32",
            "columns": "stratified random: one uniform column per 1/nnz_per_row "
                       "slice of the features (distinct, sorted)",
            "atoms": "group atom g_j in [0,m) (uniform, all non-empty) + label atom "
                     "m + y_j (y ~ Bernoulli(0.3)); m + 2 atoms, weights 1/|S_a|",
            "coef": "standard normal", "theta": "standard normal scaled to "
                    "std(X theta) = 1",
            "floor_method": floor.method,
            "blas_threads_limit": blas_limit,
            "wait_quiet_s": args.wait_quiet,
            "scipy_baseline": "X @ theta + b; pos; A.T @ pos, A.T @ max(0,1+s), "
                              "A.T @ max(0,1-s); u = A @ coef; d; X.T @ d; d.sum(); "
                              "proxy value and coef @ rates (single process); "
                              "scipy_x64: same on a float64 copy of X made once",
            "check": "numpy.testing.assert_allclose(kernel, scipy, rtol=1e-6, "
                     "atol=1e-9*max|scipy|) for every output, 1 and 2 threads",
        },
        "cases": cases,
        "machine": machine,
    }
    result["targets_met"] = evaluate_targets(result)
    result["targets_reliable"] = not result["noisy"]
    result["wall_s"] = time.perf_counter() - t_start

    md = markdown(result)
    write_results(result, md, json_path, md_path)
    log("")
    log(md)
    log("")
    log(f"wrote {json_path} and {md_path} (total {result['wall_s']:.1f} s)")
    if not check_ok:
        log("ERROR: the fused kernel and the SciPy baseline disagree; the timings "
            "do not compare the same computation")
    if args.json:
        emit_json_line(result)
    return 0 if check_ok else 1


if __name__ == "__main__":
    sys.exit(main())
