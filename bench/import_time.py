"""How long ``import rateopt`` takes, against ``import numpy, scipy.sparse`` measured in the same run.

Every sample is a fresh Python process that times one import statement with
``time.perf_counter`` around it (interpreter start-up excluded) and reports the
heavy optional modules it left in ``sys.modules``. The statements run
interleaved, round after round, so that a change of machine load hits them
alike; one unrecorded warm-up round first writes the bytecode caches. The
result is the median per statement and the ratio of medians to the baseline.

Statements:

* ``numpy + scipy.sparse`` (the baseline): what rateopt needs at the least;
* ``rateopt``: ``import rateopt``;
* ``rateopt + estimator``: ``import rateopt`` then ``rateopt.RateConstrainedClassifier``
  (the first access loads scikit-learn);
* ``sklearn.base``: scikit-learn alone, for scale.

Target (issue 34): ``rateopt`` at most 2x the baseline, and no ``sklearn`` in
``sys.modules`` after it.

The rateopt timed is the one this Python imports (``PYTHONPATH`` included), or
the one under ``--rateopt-path DIR`` (a folder holding the ``rateopt`` package,
e.g. another checkout's ``python/`` with its built core): so the same script
measures before and after a change.

Usage: python bench/import_time.py [--quick] [--json] [--out DIR] [--rateopt-path DIR] [--label TEXT]
"""

import argparse
import importlib.util
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
import _common  # noqa: E402

#: Modules ``import rateopt`` must not load (issue 34), reported after every statement.
HEAVY = ("sklearn", "pandas", "matplotlib", "scipy.stats", "scipy.optimize", "highspy")

STATEMENTS = {
    "numpy + scipy.sparse": "import numpy, scipy.sparse",
    "rateopt": "import rateopt",
    "rateopt + estimator": "import rateopt; rateopt.RateConstrainedClassifier",
    "sklearn.base": "import sklearn.base",
}
BASELINE = "numpy + scipy.sparse"

_CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
exec(sys.argv[1])
seconds = time.perf_counter() - t0
heavy = [m for m in sys.argv[2].split(",") if m in sys.modules]
where = getattr(sys.modules.get("rateopt"), "__file__", None)
print(json.dumps({"seconds": seconds, "heavy": heavy, "rateopt": where}))
"""


def rateopt_dir(path):
    """The folder to put first on ``PYTHONPATH`` so that children import the chosen rateopt."""
    if path is not None:
        if not os.path.isfile(os.path.join(path, "rateopt", "__init__.py")):
            raise SystemExit(f"--rateopt-path: {path} holds no rateopt package")
        return os.path.abspath(path)
    spec = importlib.util.find_spec("rateopt")  # finds the package without importing it
    if spec is None or spec.origin is None:
        raise SystemExit("rateopt is not importable: install it, set PYTHONPATH or pass --rateopt-path")
    return os.path.dirname(os.path.dirname(spec.origin))


def sample(statement, env):
    """One fresh process: ``{"seconds", "heavy", "rateopt"}`` of one import statement."""
    out = subprocess.run([sys.executable, "-c", _CHILD, statement, ",".join(HEAVY)], capture_output=True,
                         text=True, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    _common.add_common_args(ap)
    ap.add_argument("--rateopt-path", default=None,
                    help="a folder holding the rateopt package to time (default: the one this Python imports)")
    ap.add_argument("--label", default="", help="a note recorded with the results (e.g. 'before', 'after')")
    ap.add_argument("--repeats", type=int, default=None, help="rounds (default 7 with --quick, else 21)")
    args = ap.parse_args(argv)
    repeats = args.repeats or (7 if args.quick else 21)
    where = rateopt_dir(args.rateopt_path)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([where, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    env.pop("PYTHONDONTWRITEBYTECODE", None)

    samples = {name: [] for name in STATEMENTS}
    heavy, imported_from = {}, None
    for name, stmt in STATEMENTS.items():  # warm-up: bytecode caches, the file system's cache
        sample(stmt, env)
    with _common.CpuMonitor() as load:
        for _ in range(repeats):
            for name, stmt in STATEMENTS.items():
                r = sample(stmt, env)
                samples[name].append(r["seconds"])
                heavy[name] = r["heavy"]
                if name == "rateopt":
                    imported_from = r["rateopt"]

    base = _common.median(samples[BASELINE])
    rows = []
    for name, stmt in STATEMENTS.items():
        med = _common.median(samples[name])
        rows.append({"case": name, "statement": stmt, "median_s": med, "min_s": min(samples[name]),
                     "max_s": max(samples[name]), "ratio_to_baseline": med / base, "heavy_modules": heavy[name],
                     "samples_s": samples[name]})
    by_case = {r["case"]: r for r in rows}
    ratio = by_case["rateopt"]["ratio_to_baseline"]
    result = {
        "benchmark": "import_time", "quick": args.quick, "label": args.label, "repeats": repeats,
        "rateopt_imported_from": imported_from, "cases": rows,
        "target": {"ratio_max": 2.0, "ratio": ratio, "met": ratio <= 2.0 and not by_case["rateopt"]["heavy_modules"],
                   "rateopt_heavy_modules": by_case["rateopt"]["heavy_modules"]},
        "load": {**load.as_dict(), "loadavg": list(os.getloadavg()) if hasattr(os, "getloadavg") else None},
        "machine": _common.machine_info(), "git": _common.git_sha(), "when": _common.utc_now(),
    }
    ext = result["load"]["external_cores"]
    md = (f"# import time ({args.label or 'unlabelled'}): median of {repeats} fresh processes per statement\n\n"
          f"rateopt from `{imported_from}`; other processes used {ext if ext is None else round(ext, 2)} cores "
          f"on average during the run (of {os.cpu_count()}).\n\n"
          + _common.markdown_table(
              ["case", "median (ms)", "min (ms)", "max (ms)", f"/ {BASELINE}", "heavy modules loaded"],
              [[r["case"], f"{1e3 * r['median_s']:.0f}", f"{1e3 * r['min_s']:.0f}", f"{1e3 * r['max_s']:.0f}",
                f"{r['ratio_to_baseline']:.2f}", ", ".join(r["heavy_modules"]) or "none"] for r in rows])
          + f"\n\nTarget: `import rateopt` <= 2x `{STATEMENTS[BASELINE]}` and no heavy module: "
          + ("met" if result["target"]["met"] else "MISSED") + f" (ratio {ratio:.2f}).\n")
    json_path, md_path = _common.results_paths("import_time", quick=args.quick, out=args.out)
    _common.write_results(result, md, json_path, md_path)
    print(md)
    if args.json:
        _common.emit_json_line(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
