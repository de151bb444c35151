"""The three-player F1 solution against logistic regression with a tuned threshold (issue 23's target).

On Bank and Credit default (rateopt.datasets, seeded split 0, train / test):

* ``tuned LR``: scikit-learn's ``LogisticRegression()`` (C=1, lbfgs), its
  threshold tuned on the training data over every distinct training score
  (exact: the F1 of every threshold from one sort and cumulative counts);
* ``three-player m-stochastic``: ``rateopt.train(problem, method="three-player")``
  with the objective ``f_measure`` and the library's defaults, its m-stochastic solution;
* ``three-player thresholded``: the same run, ``solution("thresholded")``: the
  iterates' thresholds re-fitted exactly on the training data (one LP);
* the same two with ``learning_rate`` 0.05 and 0.1 (the default is 0.01).

Every F1 is of the classifier's drawn decisions (``predict``), as a user
would measure it; the thresholded solution's expected-decision F1 on the
training data is reported too (what its LP optimizes). The comparison with
the anchor is within the same run.

Usage::

    PYTHONPATH=python python bench/f1_thresholded.py [--quick] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np


def _f1(y, d):
    d = np.asarray(d, dtype=float)
    tp = float(np.sum(d * y))
    den = 2 * tp + float(np.sum(d * (1 - y))) + float(np.sum((1 - d) * y))
    return 2 * tp / den if den else 0.0


def _tuned_threshold(s, y):
    """The F1-best threshold over every distinct score (positive iff s >= t), exact."""
    order = np.argsort(-s, kind="stable")
    ss, yy = s[order], y[order]
    tp = np.cumsum(yy)
    k = np.arange(1, s.size + 1)
    last = np.r_[ss[1:] != ss[:-1], True]  # the end of each run of equal scores
    f1 = 2 * tp / (k + y.sum())
    i = int(np.argmax(np.where(last, f1, -1.0)))
    return ss[i]


def run(quick):
    import rateopt as ro
    from rateopt.datasets import load_bank, load_credit_default
    from sklearn.linear_model import LogisticRegression

    rows = []
    for name, loader in (("bank", load_bank), ("credit_default", load_credit_default)):
        D = loader()
        tr, _, te = D.split(0)
        Xtr, ytr, Xte, yte = D.X[tr], D.y[tr].astype(float), D.X[te], D.y[te].astype(float)
        if quick:
            Xtr, ytr = Xtr[:5000], ytr[:5000]
        t0 = time.perf_counter()
        lr = LogisticRegression(max_iter=5000).fit(Xtr, ytr)
        t = _tuned_threshold(lr.decision_function(Xtr), ytr)
        secs = time.perf_counter() - t0
        rows.append({"dataset": name, "system": "tuned LR", "train_f1": _f1(ytr, lr.decision_function(Xtr) >= t),
                     "test_f1": _f1(yte, lr.decision_function(Xte) >= t), "seconds": secs})
        ds = ro.Dataset(Xtr, ytr.astype(int), name="train")
        problem = ro.Problem(objective=ro.goals.objective("f_measure", ds), datasets=ds)
        for lr_rate in (None, 0.05, 0.1):
            params = {} if lr_rate is None else {"learning_rate": lr_rate}
            if quick:
                params["n_iter"] = 300
            t0 = time.perf_counter()
            result = ro.train(problem, method="three-player", **params)
            train_s = time.perf_counter() - t0
            label = "default lr 0.01" if lr_rate is None else f"lr {lr_rate}"
            m = result.solution("m-stochastic")
            rows.append({"dataset": name, "system": f"three-player m-stochastic ({label})",
                         "train_f1": _f1(ytr, m.predict(Xtr)), "test_f1": _f1(yte, m.predict(Xte)),
                         "seconds": train_s})
            t0 = time.perf_counter()
            th = result.solution("thresholded", problem=problem)
            th_s = time.perf_counter() - t0
            rows.append({"dataset": name, "system": f"three-player thresholded ({label})",
                         "train_f1": _f1(ytr, th.predict(Xtr)), "test_f1": _f1(yte, th.predict(Xte)),
                         "train_f1_expected": _f1(ytr, th.predict_proba(Xtr)[:, 1]), "seconds": train_s + th_s,
                         "threshold_seconds": th_s})
    for r in rows:
        ref = next(a for a in rows if a["dataset"] == r["dataset"] and a["system"] == "tuned LR")
        r["train_gap"] = r["train_f1"] - ref["train_f1"]
        r["test_gap"] = r["test_f1"] - ref["test_f1"]
    return rows


def _markdown(rows):
    out = ["| dataset | system | train F1 | test F1 | train gap | test gap | s |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['dataset']} | {r['system']} | {r['train_f1']:.4f} | {r['test_f1']:.4f} | "
                   f"{r['train_gap']:+.4f} | {r['test_gap']:+.4f} | {r['seconds']:.2f} |")
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="5,000 training rows and 300 iterations")
    ap.add_argument("--json", action="store_true", help="last line: one JSON object")
    ap.add_argument("--out", default=None, help="results path (.json; .md beside it)")
    args = ap.parse_args(argv)
    rows = run(args.quick)
    table = _markdown(rows)
    print(table)
    out = args.out or os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                                   "f1_thresholded" + ("_quick" if args.quick else "") + ".json")
    with open(out, "w") as f:
        json.dump({"quick": args.quick, "rows": rows}, f, indent=1)
    with open(os.path.splitext(out)[0] + ".md", "w") as f:
        f.write("# Three-player F1 against a tuned-threshold logistic regression\n\n"
                "`PYTHONPATH=python python bench/f1_thresholded.py" + (" --quick" if args.quick else "")
                + "`; F1 of drawn decisions; gaps are against tuned LR in the same run.\n\n" + table + "\n")
    if args.json:
        print(json.dumps({"rows": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
