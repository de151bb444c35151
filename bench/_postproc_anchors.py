"""Runner for ``bench/compare_postprocessing.py``: one post-processor, fitted on given scores.

This module runs inside an anchor's own virtual environment (never rateopt's
dependencies: fairlearn and OxonFair in ``bench/.postproc-venv``, error-parity
in ``bench/.errorparity-venv``), or in rateopt's environment for
``rateopt-threshold``. It imports only the standard library and NumPy at the
top, so any venv can run it::

    <venv>/bin/python bench/_postproc_anchors.py --system fairlearn --in X.npz --out Y.npz

The input ``.npz`` (written by the bench) holds ``s_train``, ``s_test`` (the
base model's scores, probabilities of the positive class), ``y_train``,
``y_test`` (0/1), ``g_train``, ``g_test`` (group labels as strings: the one
protected column, intersectional groups already combined, e.g. ``"White/Male"``)
and ``tasks`` (a JSON string: a list of ``{"id", "constraint", "tolerance",
"objective"}``, optionally ``"fits"``: how many times to fit in this process;
constraint one of ``demographic_parity``, ``equal_opportunity`` (TPR parity),
``equalized_odds``; objective ``error`` or ``f1``; tolerance the largest
allowed *difference between groups* of each constrained rate).

The output ``.npz`` holds, per task id ``k``, ``p_test_k`` and ``p_train_k``
(expected decisions: the probability of a positive decision per row, so a
randomized post-processor is scored without sampling noise) and ``report`` (a
JSON string: the system's version, and per task its status, ``fit_s`` -- the
wall time of the first fit call alone --, ``fit_s_all`` -- every fit's time;
the first is cold: it pays the process's one-time costs, such as imports a
system makes inside its fit --, ``cpu_s_all`` -- every fit's CPU time of the
process, all threads, which a loaded machine inflates less than wall time --
and any error text). It is rewritten after
every task, so a run killed for time keeps what it finished. A task running
past ``--task-timeout`` seconds is stopped (SIGALRM) and marked ``timeout``;
the tasks after it are then skipped (they have the same groups and size).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
import traceback

import numpy as np

SYSTEMS = ("fairlearn", "oxonfair", "error-parity", "rateopt-threshold")


class TaskTimeout(Exception):
    pass


class Unsupported(Exception):
    pass


def _alarm(signum, frame):
    raise TaskTimeout()


# --------------------------------------------------------------------------- fairlearn


def _fairlearn(task, d):
    """fairlearn ThresholdOptimizer, prefit on the scores (an identity estimator on one column)."""
    from fairlearn.postprocessing import ThresholdOptimizer
    from sklearn.base import BaseEstimator, ClassifierMixin

    class Identity(ClassifierMixin, BaseEstimator):
        """The scores themselves: column 0 of X."""

        def fit(self, X, y):
            self.classes_ = np.array([0, 1])
            self.fitted_ = True
            return self

        def predict(self, X):
            return np.asarray(X, dtype=np.float64)[:, 0]

    cons = {"demographic_parity": "demographic_parity", "equal_opportunity": "true_positive_rate_parity",
            "equalized_odds": "equalized_odds"}[task["constraint"]]
    if task["objective"] != "error":
        raise Unsupported("ThresholdOptimizer's objectives: accuracy, balanced accuracy, selection/TPR/TNR rates (no F1)")
    tol = float(task["tolerance"])
    if tol > 0 and cons == "equalized_odds":
        raise Unsupported("ThresholdOptimizer does not relax equalized_odds (tol is for the simple constraints only)")
    est = Identity().fit(d["s_train"][:, None], d["y_train"])
    to = ThresholdOptimizer(estimator=est, constraints=cons, objective="accuracy_score", prefit=True,
                            predict_method="predict", tol=tol if tol > 0 else None)
    t0, c0 = time.perf_counter(), time.process_time()
    to.fit(d["s_train"][:, None], d["y_train"], sensitive_features=d["g_train"])
    fit_s = (time.perf_counter() - t0, time.process_time() - c0)

    def proba(s, g):
        return to._pmf_predict(s[:, None], sensitive_features=g)[:, 1]

    return fit_s, proba


# --------------------------------------------------------------------------- OxonFair


def _oxonfair(task, d):
    """OxonFair FairPredictor on the scores (predictor=None: the data are the classifier's outputs)."""
    from oxonfair import FairPredictor
    from oxonfair import group_metrics as gm

    # max-difference variants: the largest difference between any two groups,
    # the quantity the bench scores (OxonFair's plain ``demographic_parity``
    # etc. average the differences over pairs of groups).
    cons = {"demographic_parity": gm.pos_pred_rate.max_diff, "equal_opportunity": gm.true_pos_rate.max_diff,
            "equalized_odds": gm.equalized_odds_max}[task["constraint"]]
    obj = {"error": gm.accuracy, "f1": gm.f1}[task["objective"]]

    def data(s, g):
        return {"data": np.column_stack([1.0 - s, s]), "target": None, "groups": g}

    val = data(d["s_train"], d["g_train"])
    val["target"] = d["y_train"]
    t0, c0 = time.perf_counter(), time.process_time()
    fp = FairPredictor(None, val)
    fp.fit(obj, cons, float(task["tolerance"]))
    fit_s = (time.perf_counter() - t0, time.process_time() - c0)

    def proba(s, g):
        # deterministic per-group thresholds: positive iff the shifted positive score wins
        return np.asarray(fp.predict(data(s, g)), dtype=np.float64)

    return fit_s, proba


# --------------------------------------------------------------------------- error-parity


def _expected(clf, X, group=None):
    """Expected decisions of error-parity's (randomized) classifiers, by their structure."""
    from error_parity import classifiers as C

    if isinstance(clf, C.EnsembleGroupwiseClassifiers):
        out = np.zeros(len(X))
        for gv, sub in clf.group_to_clf.items():
            m = group == gv
            if m.any():
                out[m] = _expected(sub, X[m])
        return out
    if isinstance(clf, C.RandomizedClassifier):
        return sum(float(p) * _expected(c, X) for c, p in zip(clf.classifiers, clf.probabilities))
    if isinstance(clf, C.BinaryClassifierAtROCDiagonal):
        return np.full(len(X), float(clf.target_fpr))
    if isinstance(clf, C.BinaryClassifier):
        return np.asarray(clf(X), dtype=np.float64)
    # unknown structure: average many draws
    return np.mean([np.asarray(clf(X), dtype=np.float64) for _ in range(200)], axis=0)


def _error_parity(task, d):
    """error-parity RelaxedThresholdOptimizer (cvxpy LP over the groups' ROC hulls) on the scores."""
    from error_parity import RelaxedThresholdOptimizer

    if task["objective"] != "error":
        raise Unsupported("RelaxedThresholdOptimizer minimizes a weighted error (false-positive/negative costs), no F1")
    cons = {"demographic_parity": "demographic_parity", "equal_opportunity": "true_positive_rate_parity",
            "equalized_odds": "equalized_odds"}[task["constraint"]]
    names = np.unique(d["g_train"])  # it wants groups numbered 0..k-1
    code = {v: i for i, v in enumerate(names)}

    def codes(g):
        return np.array([code.get(v, -1) for v in g])

    clf = RelaxedThresholdOptimizer(predictor=lambda X: np.asarray(X)[:, 0], constraint=cons,
                                    tolerance=float(task["tolerance"]), seed=0)
    t0, c0 = time.perf_counter(), time.process_time()
    clf.fit(d["s_train"][:, None], d["y_train"], group=codes(d["g_train"]), y_scores=d["s_train"])
    fit_s = (time.perf_counter() - t0, time.process_time() - c0)

    def proba(s, g):
        return _expected(clf._realized_classifier, s[:, None], codes(g))

    return fit_s, proba


# --------------------------------------------------------------------------- rateopt


def _rateopt_threshold(task, d):
    """rateopt.ThresholdClassifier (exact LP over per-group score bins) on the same scores."""
    import rateopt as ro

    tol = float(task["tolerance"])
    goal = {"demographic_parity": ro.goals.demographic_parity, "equal_opportunity": ro.goals.equal_opportunity,
            "equalized_odds": ro.goals.equalized_odds}[task["constraint"]]("g", slack=tol, pairwise=True)
    obj = {"error": None, "f1": "f_measure"}[task["objective"]]
    clf = ro.ThresholdClassifier(goals=[goal], objective=obj, n_bins=task.get("n_bins"))
    t0, c0 = time.perf_counter(), time.process_time()
    clf.fit(d["s_train"], d["y_train"], groups={"g": d["g_train"].astype(object)})
    fit_s = (time.perf_counter() - t0, time.process_time() - c0)

    def proba(s, g):
        return clf.predict_proba(s, groups={"g": g.astype(object)})[:, 1]

    return fit_s, proba


FIT = {"fairlearn": _fairlearn, "oxonfair": _oxonfair, "error-parity": _error_parity,
       "rateopt-threshold": _rateopt_threshold}


def _version(system):
    mod = {"fairlearn": "fairlearn", "oxonfair": "oxonfair", "error-parity": "error_parity",
           "rateopt-threshold": "rateopt"}[system]
    try:
        from importlib.metadata import version

        return version({"rateopt": "rateopt", "error_parity": "error-parity"}.get(mod, mod))
    except Exception:  # noqa: BLE001 (a version lookup never stops the run)
        try:
            return getattr(__import__(mod), "__version__", None)
        except Exception:  # noqa: BLE001 (a version lookup never stops the run)
            return None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--system", required=True, choices=SYSTEMS)
    ap.add_argument("--in", dest="inp", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--task-timeout", type=float, default=120.0)
    args = ap.parse_args(argv)

    z = np.load(args.inp, allow_pickle=False)
    d = {k: z[k] for k in ("s_train", "s_test", "y_train", "y_test", "g_train", "g_test")}
    d["s_train"] = d["s_train"].astype(np.float64)
    d["s_test"] = d["s_test"].astype(np.float64)
    d["y_train"] = d["y_train"].astype(np.int64)
    tasks = json.loads(str(z["tasks"]))
    report = {"system": args.system, "version": None, "python": sys.version.split()[0], "tasks": {}}
    arrays = {}

    def write():
        np.savez(args.out, report=np.array(json.dumps(report)), **arrays)

    try:
        import_t0 = time.perf_counter()
        FIT[args.system]
        report["version"] = _version(args.system)
        report["import_s"] = time.perf_counter() - import_t0
    except Exception as exc:  # noqa: BLE001 (an anchor failing is a result, not a crash)
        report["error"] = f"{type(exc).__name__}: {exc}"
        write()
        return 0
    signal.signal(signal.SIGALRM, _alarm)
    gave_up = None
    for task in tasks:
        k = str(task["id"])
        rec = {"status": "ok"}
        if gave_up is not None:
            report["tasks"][k] = {"status": "skipped", "error": f"task {gave_up} timed out"}
            write()
            continue
        try:
            signal.setitimer(signal.ITIMER_REAL, args.task_timeout)
            try:
                # "fits": fit this many times in this process (the first includes one-time costs such as
                # lazy imports; the rest are warm); fit_s is the first, fit_s_all every one
                fits, cpus = [], []
                for _ in range(max(int(task.get("fits", 1)), 1)):
                    (fit_s, cpu_s), proba = FIT[args.system](task, d)
                    fits.append(fit_s)
                    cpus.append(cpu_s)
                fit_s = fits[0]
                rec["fit_s_all"], rec["cpu_s_all"] = fits, cpus
                arrays[f"p_test_{k}"] = np.asarray(proba(d["s_test"], d["g_test"]), dtype=np.float64)
                arrays[f"p_train_{k}"] = np.asarray(proba(d["s_train"], d["g_train"]), dtype=np.float64)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            rec["fit_s"] = fit_s
        except TaskTimeout:
            rec = {"status": "timeout", "error": f"gave up after {args.task_timeout:g} s"}
            gave_up = k
        except Unsupported as exc:
            rec = {"status": "unsupported", "error": str(exc)}
        except ImportError as exc:
            rec = {"status": "not installed", "error": f"{type(exc).__name__}: {exc}"}
        except Exception as exc:  # noqa: BLE001 (an anchor failing is a result, not a crash)
            rec = {"status": "failed", "error": f"{type(exc).__name__}: {exc}",
                   "traceback": traceback.format_exc(limit=6)}
        report["tasks"][k] = rec
        write()
    write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
