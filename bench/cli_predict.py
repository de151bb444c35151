"""``rateopt predict`` on a large CSV: throughput and peak memory, in chunks versus the whole file at once.

The baseline, measured in the same run, is the same command with one chunk
holding the whole file (``--chunk-rows`` larger than the file): what a reader
without streaming would do. Each configuration runs in its own Python process
(peak resident memory is per process); the time is that of the command
itself, measured inside the process after ``import rateopt``.

Data: N rows of 10 numeric and 2 text columns (8 and 5 categories); the model
is fitted by ``rateopt fit`` on the first 20k rows under equal opportunity.

Usage: python bench/cli_predict.py [--quick] [--json] [--out DIR]
"""

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import _common  # noqa: E402

_CHILD = r"""
import json, resource, sys, time
from rateopt.cli import main
t0 = time.perf_counter()
status = main(sys.argv[1:])
seconds = time.perf_counter() - t0
print(json.dumps({"status": status, "seconds": seconds,
                  "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def write_csv(path, n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 10))
    a = rng.choice([f"a{i}" for i in range(8)], n)
    g = rng.choice(["F", "M", "X", "Y", "Z"], n)
    y = (X[:, 0] + 0.5 * X[:, 1] + (g == "F") * 0.3 + rng.normal(size=n) > 0).astype(int)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow([f"x{i}" for i in range(10)] + ["a", "group", "label"])
        for i in range(n):
            w.writerow([f"{v:.6g}" for v in X[i]] + [a[i], g[i], y[i]])


def run(args):
    out = subprocess.run([sys.executable, "-c", _CHILD, *args], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    _common.add_common_args(ap)
    args = ap.parse_args(argv)
    n = 200_000 if args.quick else 2_000_000
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        data, small = os.path.join(tmp, "data.csv"), os.path.join(tmp, "small.csv")
        write_csv(data, n)
        with open(data) as f, open(small, "w") as g:
            for i, line in enumerate(f):
                if i > 20_000:
                    break
                g.write(line)
        goals = os.path.join(tmp, "goals.toml")
        with open(goals, "w") as f:
            f.write('[train]\nn_iter = 200\n\n[[goals]]\nrecipe = "equal_opportunity"\ngroup = "group"\n'
                    'slack = 0.05\nsides = "lower"\n')
        model = os.path.join(tmp, "m.npz")
        fit = run(["--quiet", "fit", small, "--label", "label", "--groups", "group", "--goals", goals, "--out", model])
        assert fit["status"] == 0
        for chunk in (10_000, 100_000, n + 1):
            pred = os.path.join(tmp, "p.csv")
            r = run(["--quiet", "predict", model, data, "--out", pred, "--proba", "--chunk-rows", str(chunk)])
            assert r["status"] == 0
            rows.append({"chunk_rows": chunk if chunk <= n else "whole file", "seconds": r["seconds"],
                         "rows_per_s": n / r["seconds"], "max_rss_mb": r["max_rss_mb"]})
        file_mb = os.path.getsize(data) / 2**20
    base = rows[-1]
    for r in rows:
        r["memory_vs_whole"] = r["max_rss_mb"] / base["max_rss_mb"]
        r["time_vs_whole"] = r["seconds"] / base["seconds"]
    result = {"benchmark": "cli_predict", "quick": args.quick, "n_rows": n, "file_mb": file_mb, "cases": rows,
              "machine": _common.machine_info(), "git": _common.git_sha(), "when": _common.utc_now()}
    md = (f"# rateopt predict on a {n:,}-row CSV ({file_mb:.0f} MB)\n\n"
          + _common.markdown_table(["chunk rows", "time (s)", "rows/s", "peak RSS (MB)", "RSS / whole file",
                                    "time / whole file"],
                                   [[r["chunk_rows"], f"{r['seconds']:.2f}", f"{r['rows_per_s']:,.0f}",
                                     f"{r['max_rss_mb']:.0f}", f"{r['memory_vs_whole']:.2f}",
                                     f"{r['time_vs_whole']:.2f}"] for r in rows]))
    json_path, md_path = _common.results_paths("cli_predict", quick=args.quick, out=args.out)
    _common.write_results(result, md, json_path, md_path)
    print(md)
    if args.json:
        _common.emit_json_line(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
