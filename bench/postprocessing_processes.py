"""One case of ``postprocessing_speed.py`` in several interleaved processes, this rateopt against a reference.

``postprocessing_speed.py`` gives each case one worker process per rateopt,
so one process's luck on a shared machine decides its ratio. This script runs
one case (``census``: ``ThresholdClassifier.fit`` on census' 209,500
LogisticRegression scores at ``--groups`` groups over one ``np.argsort`` of
the scores; ``thresholded``: ``solution="thresholded"`` over the plain fit on
10,000 rows, 6 groups, 250 records) in ``--processes`` fresh processes per
rateopt, alternating this tree's and the reference's (this, reference, this,
...), with the same workers, data and rounds as ``postprocessing_speed.py``.
It records each process's ratio of medians, the median and range of those
ratios per rateopt, the load average around each process, and whether the two
rateopts' training-row probabilities agree (largest difference).

Usage::

    python bench/postprocessing_processes.py --case census --processes 5 --reference /path/to/parent/python
    python bench/postprocessing_processes.py --case thresholded --processes 5 --reference /path/to/parent/python
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))

from _common import (  # noqa: E402
    add_common_args, emit_json_line, git_sha, machine_info, markdown_table, median, results_paths,
    utc_now, write_results,
)
from postprocessing_speed import (  # noqa: E402
    agreement, census_scores, implementations, log, run_worker, summarize, synthetic_scores, thresholded_spec,
)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_args(ap)
    ap.add_argument("--case", choices=("census", "thresholded"), default="census")
    ap.add_argument("--groups", type=int, choices=(2, 4, 64), default=2, help="census: the number of groups")
    ap.add_argument("--processes", type=int, default=5, help="processes per rateopt (default 5)")
    ap.add_argument("--reference", type=Path, default=None,
                    help="a checkout's python/ directory with the rateopt to compare against")
    args = ap.parse_args(argv)

    impls = implementations(args.reference)
    tmp = Path(tempfile.mkdtemp(prefix="ppprocs-"))
    if args.case == "census":
        data = synthetic_scores() if args.quick else census_scores(log)
        path = tmp / "census.npz"
        np.savez(path, s=data["s"], y=data["y"], g=data[f"g{args.groups}"])
        spec = {"case": "census", "data": str(path), "rounds": 3 if args.quick else 7}
        ratio_of = {"fit / argsort": lambda r: r["median_s"]["fit"] / r["median_s"]["argsort"],
                    "fit / argsort (CPU)": lambda r: r["median_cpu_s"]["fit"] / r["median_cpu_s"]["argsort"]}
    else:
        spec = thresholded_spec(tmp / "thresholded.npz", args.quick)
        ratio_of = {"thresholded / plain": lambda r: r["median_s"]["thresholded"] / r["median_s"]["plain"]}
    runs = {name: [] for name in impls}
    for i in range(args.processes):
        for name, pp in impls.items():
            r = summarize(run_worker(pp, spec, 900))
            if r.get("status") == "ok":
                r["ratios"] = {k: f(r) for k, f in ratio_of.items()}
                log(f"{args.case} process {i + 1} {name}: " + ", ".join(f"{k} {v:.2f}" for k, v in r["ratios"].items())
                    + f" (load {r['loadavg_before']:.1f}-{r['loadavg_after']:.1f})")
            else:
                log(f"{args.case} process {i + 1} {name}: {r['status']}")
            runs[name].append(r)
    summary = {}
    for name, rs in runs.items():
        ok = [r for r in rs if r.get("status") == "ok"]
        summary[name] = {k: {"each": [r["ratios"][k] for r in ok], "median": median([r["ratios"][k] for r in ok]),
                             "min": min(r["ratios"][k] for r in ok), "max": max(r["ratios"][k] for r in ok)}
                         for k in ratio_of} if ok else None
    agree = None
    if "reference" in runs:
        pairs = [agreement(a, b) for a, b in zip(runs["this"], runs["reference"])]
        diffs = [p["max_abs_p_diff"] for p in pairs if p and p["max_abs_p_diff"] is not None]
        agree = {"max_abs_p_diff": max(diffs) if diffs else None}
    for rs in runs.values():
        for r in rs:
            r.pop("p", None)
    result = {"name": "postprocessing_processes", "case": args.case, "quick": args.quick, "utc": utc_now(),
              "git": git_sha(), "machine": machine_info(), "implementations": {k: str(v) for k, v in impls.items()},
              "spec": {k: v for k, v in spec.items() if k != "data"}, "groups": args.groups if args.case == "census"
              else 6, "processes": args.processes, "runs": runs, "summary": summary, "agreement": agree}
    title = (f"census, {args.groups} groups: ThresholdClassifier.fit / one np.argsort" if args.case == "census"
             else "solution='thresholded' / the plain fit (10,000 rows, 6 groups, 250 records)")
    lines = [f"# Post-processing in {args.processes} interleaved processes per rateopt: {title}", "",
             f"{result['utc']}, git {result['git']['sha']}{' (dirty)' if result['git']['dirty'] else ''}; "
             + ", ".join(f"{k} = `{v}`" for k, v in result["implementations"].items()) + ".",
             "Each process: the case's worker from `bench/postprocessing_speed.py` (ratio of medians within it).", ""]
    rows = []
    for i in range(args.processes):
        for name in impls:
            r = runs[name][i]
            ok = r.get("status") == "ok"
            rows.append([i + 1, name] + [f"{r['ratios'][k]:.2f}" if ok else r.get("status") for k in ratio_of]
                        + [f"{r['loadavg_before']:.1f}-{r['loadavg_after']:.1f}" if ok else "–"])
    lines += [markdown_table(["process", "rateopt"] + list(ratio_of) + ["load (1 min)"], rows), ""]
    for name, s in summary.items():
        if s:
            lines.append(f"- {name}: " + "; ".join(f"{k} median {v['median']:.2f} (range {v['min']:.2f}-{v['max']:.2f})"
                                                   for k, v in s.items()))
    if agree is not None:
        lines.append(f"- largest difference of the two rateopts' training-row probabilities: {agree['max_abs_p_diff']}")
    json_path, md_path = results_paths(f"postprocessing_processes_{args.case}", quick=args.quick, out=args.out)
    write_results(result, "\n".join(lines), json_path, md_path)
    log(f"wrote {json_path} and {md_path}")
    if args.json:
        emit_json_line(result)


if __name__ == "__main__":
    main()
