"""Brute-force references for the rate language tests.

Everything here loops over examples in plain Python and follows the *definitions*
of the rates (weighted fractions of examples), never the atom decomposition the
library uses, so the comparison is a real check.
"""

from __future__ import annotations

import numpy as np

from rateopt._language._data import Dataset


def make_data(seed, n=90, *, labels=True, baseline=True, name="train", zero_weight_frac=0.0):
    """Small random dataset with non-uniform weights, two group columns and a baseline.

    Returns the Dataset and a plain-Python record of its columns (lists), used by
    the brute-force functions.
    """
    rng = np.random.default_rng(seed)
    while True:
        y = rng.integers(0, 2, n)
        b = rng.integers(0, 2, n)
        sex = rng.choice(["F", "M"], n)
        race = rng.choice(["a", "b", "c"], n)
        # every (sex or race value) x label x baseline cell is nonempty
        ok = True
        for col in (sex, race):
            for v in np.unique(col):
                for yy in (0, 1):
                    for bb in (0, 1):
                        cell = (col == v) & (y == yy) & (b == bb)
                        ok &= bool(cell.any())
        if ok:
            break
    w = rng.uniform(0.1, 3.0, n)
    if zero_weight_frac:
        w[rng.random(n) < zero_weight_frac] = 0.0
    age = rng.integers(18, 80, n)
    X = rng.normal(size=(n, 3))
    ds = Dataset(
        X,
        y=y if labels else None,
        weights=w,
        groups={"sex": sex, "race": race, "age": age},
        baseline=b.astype(bool) if baseline else None,
        name=name,
    )
    rec = {
        "n": n,
        "y": [int(v) for v in y] if labels else None,
        "b": [int(v) for v in b] if baseline else None,
        "w": [float(v) for v in w],
        "sex": list(sex),
        "race": list(race),
        "age": [int(v) for v in age],
    }
    return ds, rec


def member_list(rec, cond):
    """``[cond(rec, j) for j in range(n)]``."""
    return [bool(cond(rec, j)) for j in range(rec["n"])]


def _sums(rec, member, v, f):
    """Weighted sum over members of f(j, v_j)."""
    tot = 0.0
    for j in range(rec["n"]):
        if member[j]:
            tot += rec["w"][j] * f(j, v[j])
    return tot


def weight(rec, member, extra=lambda j: True):
    tot = 0.0
    for j in range(rec["n"]):
        if member[j] and extra(j):
            tot += rec["w"][j]
    return tot


def brute(kind, rec, member, v):
    """The value of rate ``kind`` on the subset ``member`` for per-example decisions
    (or expected decisions) ``v``, by a loop over examples."""
    y, b = rec["y"], rec["b"]
    W = weight(rec, member)
    pred = lambda j, vj: vj  # noqa: E731
    neg = lambda j, vj: 1.0 - vj  # noqa: E731

    def wrong(j, vj):  # expected indicator of a mistake
        return vj if y[j] == 0 else 1.0 - vj

    def changed(j, vj):
        return vj if b[j] == 0 else 1.0 - vj

    if kind == "ppr":
        return _sums(rec, member, v, pred) / W
    if kind == "npr":
        return _sums(rec, member, v, neg) / W
    if kind in ("tpr", "fnr", "fpr", "tnr"):
        lab = 1 if kind in ("tpr", "fnr") else 0
        sub = [member[j] and y[j] == lab for j in range(rec["n"])]
        f = pred if kind in ("tpr", "fpr") else neg
        return _sums(rec, sub, v, f) / weight(rec, sub)
    if kind == "error":
        return _sums(rec, member, v, wrong) / W
    if kind == "accuracy":
        return _sums(rec, member, v, lambda j, vj: 1.0 - wrong(j, vj)) / W
    cells = {
        "tp": lambda j, vj: vj if y[j] == 1 else 0.0,
        "fp": lambda j, vj: vj if y[j] == 0 else 0.0,
        "tn": lambda j, vj: (1.0 - vj) if y[j] == 0 else 0.0,
        "fn": lambda j, vj: (1.0 - vj) if y[j] == 1 else 0.0,
        "pos": lambda j, vj: vj,
        "neg": lambda j, vj: 1.0 - vj,
        "win": lambda j, vj: (1.0 - wrong(j, vj)) if b[j] != y[j] else 0.0,
        "loss": lambda j, vj: wrong(j, vj) if b[j] == y[j] else 0.0,
    }
    if kind.endswith("_prop"):
        return _sums(rec, member, v, cells[kind[:-5]]) / W
    if kind.endswith("_count"):
        return _sums(rec, member, v, cells[kind[:-6]])
    if kind == "churn":
        return _sums(rec, member, v, changed) / W
    if kind == "win_rate":
        return _sums(rec, member, v, cells["win"]) / W
    if kind in ("loss_rate", "loss_churn"):
        return _sums(rec, member, v, cells["loss"]) / W
    if kind == "loss_churn_bc":
        return _sums(rec, member, v, cells["loss"]) / weight(rec, member, lambda j: b[j] == y[j])
    if kind == "prevalence":
        return weight(rec, member, lambda j: y[j] == 1) / W
    if kind == "baseline_ppr":
        return weight(rec, member, lambda j: b[j] == 1) / W
    if kind == "baseline_accuracy":
        return weight(rec, member, lambda j: b[j] == y[j]) / W
    raise KeyError(kind)


def random_predictions(seed, n, kind):
    """Predictions of each supported kind, and the per-example decision values they mean."""
    rng = np.random.default_rng(seed)
    if kind == "decisions":
        p = rng.random(n) < 0.45
        return p, [float(x) for x in p]
    if kind == "scores":
        s = rng.normal(size=n)
        s[:3] = 0.0  # a score of exactly 0 is a positive decision
        return s, [1.0 if x >= 0 else 0.0 for x in s]
    if kind == "probabilities":
        q = rng.random(n)
        q[:2] = [0.0, 1.0]
        return q, [float(x) for x in q]
    raise KeyError(kind)
