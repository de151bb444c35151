"""The two-class fused pass's row paths on the Adult anchors' data, in two trees (issue 35, a diagnostic).

Writes the arrays of one core-loop pass of ``adult_tpr4`` (``bench/compare_anchors.py``'s problem, at
``bench/anchors_fit_cost.py``'s settings: the training X, the atom table, the model and the
multipliers' combinations after 250 iterations) to ``--dir``, builds ``bench/adult_pass_paths.cpp``
against each tree's ``cpp/include`` (``g++ -O3``, as the extension), and runs the builds interleaved:
each times ``rateopt::rate_kernel`` at one thread (thread CPU time, median of its repeats) on the same
arrays for four combinations: the zero combination (a record's pass), one hinge combination (the model
step of a hinge objective), three hinge combinations (the general path) and the core loop's
slope-only logistic objective plus the constraints' hinge (its default pass). Each build also prints a
hash of every output of the logistic pair over threads 1-3, full and minibatch passes and non-finite
scores: equal hashes mean bit-identical outputs.

Run (rateopt's environment with the data package, from the repository root)::

    PYTHONPATH=python python bench/adult_pass_paths.py --reference /work/main [--rounds 3] [--dir /tmp/adult_pass]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))


def dump(out: Path) -> None:
    """The arrays of adult_tpr4's core-loop pass after 250 iterations, as raw files in ``out``."""
    import _anchors as anchors
    import rateopt
    from rateopt import core

    data = anchors.load_data("adult", False)
    tr = data.train
    ds = rateopt.Dataset(tr.X, tr.y, groups=dict(tr.groups))
    problem = rateopt.Problem(constraints=anchors.rateopt_goals(anchors.make_specs(None)["adult_tpr4"]), datasets=ds)
    seen = []
    real = core.run_train_loop

    def spy(*a, **k):
        out = real(*a, **k)
        seen.append((a, k))
        return out

    core.run_train_loop = spy
    try:
        rateopt.train(problem, random_state=anchors.SEED, method="proxy-swap", learning_rate=0.1, n_iter=250,
                      batch_size=None)
    finally:
        core.run_train_loop = real
    (blocks, _program, C, _kappa, c0, state, _records), k = seen[0]
    X, atoms = blocks[0][0].data, blocks[0][1]
    lam = state.lam
    out.mkdir(parents=True, exist_ok=True)
    for name, arr in (("xd", X.data.astype(np.float64)), ("xi", X.indices.astype(np.int32)),
                      ("xp", X.indptr.astype(np.int32)), ("ap", atoms.indptr.astype(np.int32)),
                      ("ai", atoms.indices.astype(np.uint8)), ("aw", atoms.weights),
                      ("c0", lam[0] * c0), ("c1", lam[1:] @ np.asarray(C)), ("theta", state.theta),
                      ("bias", np.array([state.bias[0], k["margin"]]))):
        np.ascontiguousarray(arr).tofile(out / f"{name}.bin")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reference", type=Path, required=True, help="another tree (its root, with cpp/include)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved runs of each build")
    parser.add_argument("--dir", type=Path, default=Path("/tmp/adult_pass"), help="where the arrays and builds go")
    args = parser.parse_args(argv)
    dump(args.dir)
    builds = {}
    for name, tree in (("this", ROOT), ("reference", args.reference.resolve())):
        exe = args.dir / f"paths_{name}"
        subprocess.run(["g++", "-O3", "-std=gnu++17", "-fopenmp", "-DROPT_HAVE_OPENMP=1", f"-I{tree}/cpp/include",
                        str(ROOT / "bench" / "adult_pass_paths.cpp"), "-o", str(exe)], check=True)
        builds[name] = exe
    for r in range(args.rounds):
        for name, exe in builds.items():
            out = subprocess.run([str(exe), str(args.dir)], check=True, capture_output=True, text=True).stdout
            print(f"round {r} {name}:\n{out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
