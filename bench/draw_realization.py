"""Do drawn decisions realize their expected rates? Tied scores and repeated feature rows (issue 31, item 5).

For each case: the largest gap between the two groups' rates of
``predict_proba`` and of the drawn decisions (``predict``), and the worst
(group, class) distance between the drawn rate and the mean of
``predict_proba`` over the group's rows, in binomial standard errors
``sqrt(sum p (1 - p)) / n_group`` (within 4 is sampling noise). The cases are
those of ``tests/_predictors/test_draws.py``.

The baseline, in the same run: the same classifiers drawn with a key that
does not separate identical rows (``row_key`` = the index of the row's
distinct content: rows with the same scores or features share one uniform,
as every draw did before issue 31).

Run: ``python bench/draw_realization.py [--quick] [--json]`` (results in
``bench/results/draw_realization.{md,json}``, ``*_quick.*`` with ``--quick``).
"""

import argparse
import json
import os

import numpy as np
from sklearn.tree import DecisionTreeClassifier

import rateopt as ro
from rateopt.goals import demographic_parity, multiclass_demographic_parity


RESULTS = []


def shared_key(content):
    """The baseline key: one id per distinct row content (identical rows share their draw)."""
    content = np.asarray(content).reshape(len(content), -1)
    return np.unique(content, axis=0, return_inverse=True)[1].ravel()


def worst_se(labels, P, classes, g):
    """The worst (group, class) distance between drawn and expected rates, in binomial SE."""
    worst = 0.0
    for k, c in enumerate(classes):
        for a in ("a", "b"):
            p = P[g == a, k]
            se = np.sqrt(np.sum(p * (1 - p))) / p.shape[0]
            if se > 0:
                worst = max(worst, abs(np.mean(labels[g == a] == c) - p.mean()) / se)
    return float(worst)


def report(name, labels, P, classes, g, baseline=None):
    """Print the parity gaps and the worst group/class distance in SE (and the shared-key baseline's)."""
    worst, gap_drawn, gap_proba = 0.0, 0.0, 0.0
    for k, c in enumerate(classes):
        drawn = [np.mean(labels[g == a] == c) for a in ("a", "b")]
        proba = [P[g == a, k].mean() for a in ("a", "b")]
        gap_drawn, gap_proba = max(gap_drawn, abs(drawn[0] - drawn[1])), max(gap_proba, abs(proba[0] - proba[1]))
        for a in ("a", "b"):
            p = P[g == a, k]
            se = np.sqrt(np.sum(p * (1 - p))) / p.shape[0]
            if se > 0:
                worst = max(worst, abs(np.mean(labels[g == a] == c) - p.mean()) / se)
    base = None if baseline is None else worst_se(baseline, P, classes, g)
    RESULTS.append({"case": name, "parity_gap_proba": float(gap_proba), "parity_gap_drawn": float(gap_drawn),
                    "worst_se": float(worst), "worst_se_shared_key": base})
    print(f"{name}: parity gap predict_proba {gap_proba:.4f}, drawn {gap_drawn:.4f}; "
          f"worst group/class {worst:.1f} SE" + ("" if base is None else f" (shared key: {base:.1f} SE)"))


def tree_scores():
    rng = np.random.default_rng(0)
    n = 6000
    g = rng.choice(np.array(["a", "b"]), n, p=[0.4, 0.6])
    X = rng.normal(size=(n, 3))
    y = (rng.random(n) < 1 / (1 + np.exp(-(X @ np.array([0.8, -0.5, 0.3]) + 0.9 * (g == "a") - 0.6)))).astype(int)
    s = DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y).predict_proba(X)[:, 1]
    c = ro.ThresholdClassifier(goals=[demographic_parity("g", slack=0.01)]).fit(s, y, groups={"g": g})
    report("depth-3 tree's 8 scores, slack 0.01", c.predict(s, groups={"g": g}), c.predict_proba(s, groups={"g": g}),
           c.classes_, g, c.predict(s, groups={"g": g}, row_key=shared_key(s)))


def integer_scores():
    rng = np.random.default_rng(1)
    n = 5000
    g = rng.choice(np.array(["a", "b"]), n)
    s = rng.integers(1, 11, size=n).astype(float)
    y = (rng.random(n) < (s + 2 * (g == "a")) / 13).astype(int)
    c = ro.ThresholdClassifier(goals=[demographic_parity("g", slack=0.0)]).fit(s, y, groups={"g": g})
    report("integer scores 1..10, slack 0", c.predict(s, groups={"g": g}), c.predict_proba(s, groups={"g": g}),
           c.classes_, g, c.predict(s, groups={"g": g}, row_key=shared_key(s)))


def plugin_rows():
    rng = np.random.default_rng(3)
    n = 6000
    g = rng.choice(np.array(["a", "b"]), n, p=[0.4, 0.6])
    X = rng.integers(0, 3, size=(n, 3)).astype(float)
    S = X @ rng.normal(size=(3, 3)) + np.outer(g == "a", [2.0, 0.0, -2.0])
    P = np.exp(S - S.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    y = (rng.random(n)[:, None] > np.cumsum(P, axis=1)).sum(axis=1)
    rows = DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y).predict_proba(X)
    c = ro.ThresholdClassifier(goals=[multiclass_demographic_parity("g", slack=0.0)]).fit(rows, y, groups={"g": g})
    report("K=3 plug-in rule on a tree's probability rows, slack 0", c.predict(rows, groups={"g": g}),
           c.predict_proba(rows, groups={"g": g}), c.classes_, g,
           c.predict(rows, groups={"g": g}, row_key=shared_key(rows)))


def repeated_rows():
    rng = np.random.default_rng(3)
    clf = ro.StochasticClassifier(rng.normal(size=(3, 4)), rng.normal(size=3), [0.2, 0.5, 0.3])
    X = np.repeat(rng.normal(size=(40, 4)), 100, axis=0)
    X = X[rng.permutation(X.shape[0])]
    g = rng.choice(np.array(["a", "b"]), X.shape[0])
    P = clf.predict_proba(X)
    key = shared_key(X)
    for seed in range(5):
        report(f"StochasticClassifier, 40 rows x 100 copies, random_state={seed}", clf.predict(X, random_state=seed),
               P, [0, 1], g, clf.predict(X, random_state=seed, row_key=key))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the same cases (they take seconds); *_quick results")
    parser.add_argument("--json", action="store_true", help="print the results as one JSON object, last line")
    args = parser.parse_args(argv)
    tree_scores()
    integer_scores()
    plugin_rows()
    repeated_rows()
    out = {"cases": RESULTS, "max_worst_se": max(r["worst_se"] for r in RESULTS),
           "max_worst_se_shared_key": max(r["worst_se_shared_key"] for r in RESULTS)}
    stem = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                        "draw_realization" + ("_quick" if args.quick else ""))
    with open(stem + ".json", "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1)
    with open(stem + ".md", "w", encoding="utf-8") as f:
        f.write("# Drawn decisions against their expected rates (bench/draw_realization.py)\n\n"
                "| case | parity gap, predict_proba | parity gap, drawn | worst group/class (SE) | "
                "shared key (SE) |\n|---|---|---|---|---|\n")
        for r in RESULTS:
            f.write(f"| {r['case']} | {r['parity_gap_proba']:.4f} | {r['parity_gap_drawn']:.4f} | "
                    f"{r['worst_se']:.1f} | {r['worst_se_shared_key']:.1f} |\n")
    if args.json:
        print(json.dumps(out))


if __name__ == "__main__":
    main()
