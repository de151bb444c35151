"""The narrow atom table (issue 33's memory target): its bytes per row, and the core passes' speed before/after.

The core's ``AtomView`` (cpp/include/rateopt/matrix_view.hpp) reads int32 row pointers (below 2**31
entries) and uint8/uint16 atom ids (up to 256 / 65,536 atoms) where it used to read only int64 pointers
and int32 ids. This script measures, in one process and one run:

* **Bytes per row** of the compiled membership table (``indptr + indices + weights``) of Adult (sex;
  ``rateopt.datasets``) under demographic parity and equal opportunity, as this checkout compiles it and
  in the wide layout (int64 pointers, int32 ids: what the baseline stores; the same entries).
* **Speed**, the baseline's compiled core (``--baseline PATH``: the ``python/`` folder of another
  checkout, its ``rateopt/_core*.so`` loaded beside this one under another name) against this
  checkout's, each fed the same table in its own layout (wide for the baseline, narrow here) and
  checked to give bit-identical outputs, timed in interleaved repeats as process CPU time (all
  threads; medians; the ratio is new / baseline per repeat, then the median):

  - the two-class fused rate kernel (``rate_kernel_csr`` / ``rate_kernel_dense``, one hinge
    combination with its gradient: every game's model step) on bench/kernel.py's data (CSR 50 nnz per
    row, dense 100 float32 features; ``m`` groups, two atoms per row, ``m + 2`` atoms), 1 and 2 threads;
  - the boosting pass (``boosting_pass``, logistic, float32 derivatives) over three atoms per row (the
    Adult demographic-parity shape), where the atom loop is most of the work, 1 and 2 threads.

Target (the brief of issue 33's memory work): no case more than 5% slower.

Run: ``python bench/atom_table.py --baseline /work/main/python [--quick] [--json]`` (results in
``bench/results/atom_table.{md,json}``, ``atom_table_quick.*`` with ``--quick``).
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    add_common_args,
    emit_json_line,
    git_sha,
    limit_blas_threads,
    machine_info,
    markdown_table,
    median,
    results_paths,
    utc_now,
    write_results,
)
from kernel import build_atoms, build_csr, build_dense  # noqa: E402

import rateopt  # noqa: E402
from rateopt._utils._narrow import atom_id_dtype  # noqa: E402
from rateopt import _core as new_core  # noqa: E402

NAME = "atom_table"
FULL = {"csr_rows": 400_000, "dense_rows": 400_000, "boost_rows": 2_000_000, "repeats": 21}
QUICK = {"csr_rows": 100_000, "dense_rows": 200_000, "boost_rows": 1_000_000, "repeats": 11}
MS = (1, 10)


def load_baseline_core(path):
    """The compiled core under ``path``/rateopt, imported as ``rateopt_baseline_core._core``."""
    found = sorted(glob.glob(os.path.join(path, "rateopt", "_core*.so")))
    if not found:
        raise SystemExit(f"--baseline {path}: no rateopt/_core*.so there")
    spec = importlib.util.spec_from_file_location("rateopt_baseline_core._core", found[0])
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def table_bytes_per_row():
    """Adult's compiled membership table, bytes per training row, narrow (this checkout) and wide."""
    from rateopt.datasets import load_adult

    d = load_adult()
    X, y, g = d.X.tocsr(), np.asarray(d.y), np.asarray(d.groups["sex"]).astype(str)
    rows = {}
    for goal in ("demographic_parity", "equal_opportunity"):
        p = rateopt.Problem(constraints=[getattr(rateopt.goals, goal)("sex", slack=0.02)],
                            datasets=rateopt.Dataset(X, y, groups={"sex": g}))
        t = p.compiled.tables["train"]
        n, nnz = t.n_samples, t.indices.shape[0]
        narrow = t.indptr.nbytes + t.indices.nbytes + t.weights.nbytes
        wide = 8 * (n + 1) + 4 * nnz + 8 * nnz
        rows[goal] = {"n_rows": n, "nnz": nnz, "n_atoms": t.n_atoms, "indptr": str(t.indptr.dtype),
                      "indices": str(t.indices.dtype), "bytes_per_row": narrow / n, "wide_bytes_per_row": wide / n}
    return rows


def _wide(at):
    return at["indptr"].astype(np.int64), at["indices"].astype(np.int32)


def _narrow(at):
    return (at["indptr"].astype(np.int32), at["indices"].astype(atom_id_dtype(at["n_atoms"])))


def _same(a, b, what):
    for x, y in zip(a, b, strict=True):
        if np.asarray(x).tobytes() != np.asarray(y).tobytes():
            raise SystemExit(f"{what}: the baseline's and this checkout's outputs differ")


def kernel_case(kind, n, m, threads, base_core, rng):
    """(call_base, call_new) of one fused-kernel configuration, checked bit-identical."""
    at = build_atoms(n, m, rng)
    X = build_csr(n, 50, 20_000, rng) if kind == "csr" else build_dense(n, 100, rng)
    d = X.shape[1]
    theta = rng.standard_normal(d)
    theta /= max(float(np.std(X[: min(n, 5000)] @ theta)), 1e-12)
    coef = rng.standard_normal((1, at["n_atoms"]))
    tail = (coef, np.zeros(1, np.int32), np.ones(1), False, 1.0, None, threads)

    def call(core, layout):
        ptr, ids = layout(at)
        head = ((X.data, X.indices, X.indptr, n, d) if kind == "csr" else (X,))
        fn = core.rate_kernel_csr if kind == "csr" else core.rate_kernel_dense
        args = (*head, theta, 0.1, ptr, ids, at["weights"], at["n_atoms"], *tail)
        return lambda: fn(*args)

    cb, cn = call(base_core, _wide), call(new_core, _narrow)
    _same(cb(), cn(), f"{kind} m={m} threads={threads}")
    return cb, cn


def boosting_case(n, threads, base_core, rng):
    """(call_base, call_new) of the boosting pass over 3 atoms per row (4 atoms: 2 labels x 2 groups + all)."""
    y, g = rng.random(n) < 0.25, rng.random(n) < 0.33
    atom_rows = [np.flatnonzero(~y), np.flatnonzero(y), np.flatnonzero(g), np.flatnonzero(~g)]
    member = np.zeros((n, 4), bool)
    for a, r in enumerate(atom_rows):
        member[r, a] = True
    t = rateopt.core.AtomTable.from_membership(member)
    at = {"indptr": np.asarray(t.indptr), "indices": np.asarray(t.indices), "weights": np.asarray(t.weights),
          "n_atoms": 4}
    scores = rng.standard_normal(n)
    coef = rng.standard_normal(4)

    def call(core, layout):
        ptr, ids = layout(at)
        grad, hess = np.empty(n, np.float32), np.empty(n, np.float32)
        return lambda: (*core.boosting_pass(scores, ptr, ids, at["weights"], 4, coef, 0, float(n), grad, hess,
                                            threads), grad.copy(), hess.copy())

    cb, cn = call(base_core, _wide), call(new_core, _narrow)
    _same(cb(), cn(), f"boosting threads={threads}")
    return cb, cn


def timed(fn):
    """CPU milliseconds of one call (the process's, all threads): on a shared, loaded machine the CPU a
    pass costs is steadier than its wall time, which other processes' time slices inflate."""
    t0 = time.process_time()
    fn()
    return (time.process_time() - t0) * 1e3


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_args(ap)
    ap.add_argument("--baseline", required=True, help="the python/ folder of the checkout to compare against")
    ap.add_argument("--repeats", type=int, default=None)
    args = ap.parse_args(argv)
    size = dict(QUICK if args.quick else FULL)
    if args.repeats:
        size["repeats"] = args.repeats
    base_core = load_baseline_core(args.baseline)
    json_path, md_path = results_paths(NAME, quick=args.quick, out=args.out)
    load_before = os.getloadavg()
    machine = machine_info()
    rng = np.random.default_rng(0)
    cases = {}
    with limit_blas_threads(1):
        for threads in (1, 2):
            for m in MS:
                cases[f"csr m={m} t={threads}"] = kernel_case("csr", size["csr_rows"], m, threads, base_core, rng)
                cases[f"dense m={m} t={threads}"] = kernel_case("dense", size["dense_rows"], m, threads, base_core,
                                                                rng)
            cases[f"boosting t={threads}"] = boosting_case(size["boost_rows"], threads, base_core, rng)
        samples = {k: {"base": [], "new": []} for k in cases}
        for r in range(size["repeats"]):  # interleaved: every case, both cores, order flipped each repeat
            for k, (cb, cn) in cases.items():
                order = (("base", cb), ("new", cn)) if r % 2 == 0 else (("new", cn), ("base", cb))
                for who, fn in order:
                    samples[k][who].append(timed(fn))
    rows, out = [], {}
    for k, s in samples.items():
        ratios = [n / b for n, b in zip(s["new"], s["base"], strict=True)]
        out[k] = {"base_ms": median(s["base"]), "new_ms": median(s["new"]), "ratio": median(ratios),
                  "samples": s}
        rows.append([k, f"{out[k]['base_ms']:.2f}", f"{out[k]['new_ms']:.2f}", f"{out[k]['ratio']:.3f}"])
    memory = table_bytes_per_row()
    worst = max(v["ratio"] for v in out.values())
    load_after = os.getloadavg()
    result = {"benchmark": NAME, "quick": args.quick, "date": utc_now(), "git": git_sha(), "sizes": size,
              "baseline": args.baseline, "load_before": load_before, "load_after": load_after, "cases": out,
              "worst_ratio": worst, "target": "every ratio <= 1.05", "met": worst <= 1.05, "memory": memory,
              "machine": machine}
    mem_rows = [[goal, v["n_rows"], v["nnz"], v["n_atoms"], f"{v['indptr']} / {v['indices']}",
                 f"{v['wide_bytes_per_row']:.1f}", f"{v['bytes_per_row']:.1f}"] for goal, v in memory.items()]
    md = "\n\n".join([
        "# The narrow atom table (bench/atom_table.py)",
        f"Sizes {size}; baseline core: `{args.baseline}`; load average (1, 5, 15 min) before "
        f"{tuple(round(x, 2) for x in load_before)}, after {tuple(round(x, 2) for x in load_after)}. "
        "Each case: the baseline core on the wide table (int64 row pointers, int32 ids) and this checkout's on the "
        "narrow one (int32, uint8), outputs checked bit-identical, timed interleaved; ms: process CPU ms (all "
        "threads), medians; the ratio "
        "the median of new / baseline per repeat. Target: every ratio <= 1.05.",
        markdown_table(["case", "baseline CPU ms", "new CPU ms", "new / baseline"], rows),
        f"Worst ratio {worst:.3f} ({'met' if worst <= 1.05 else 'missed'}).",
        "Adult's compiled membership table (sex, slack 0.02), bytes per training row:",
        markdown_table(["goal", "rows", "entries", "atoms", "indptr / ids", "wide B/row", "narrow B/row"],
                       mem_rows),
    ]) + "\n"
    write_results(result, md, json_path, md_path)
    print(md)
    if args.json:
        emit_json_line(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
