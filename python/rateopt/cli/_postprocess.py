"""``rateopt fit --postprocess``: the exact best randomized per-group threshold rule on a score column, or on the
scores of a model written by ``rateopt fit`` (two classes)."""

from __future__ import annotations

import os
import time
import warnings

import numpy as np

from .._params import SOLUTION_PARAMS, validate
from .._threshold_classifier import ThresholdClassifier
from .._utils._atomic import AtomicFiles
from .._version import __version__
from ..exceptions import InfeasibleWarning, RateoptError
from ..report import TOLERANCE, goal_met
from .._training._arity import TWO_CLASSES, arity_of_labels
from ._decisions import check_goals, refuse, scores_of
from ._bundle import ChainedRule, base_scores, file_sha256, read_bundle, sidecar_path, write_sidecar
from ._data import load_table
from ._encoding import ColumnRoles
from ._io import InputError
from ._shared import EXIT_OK, split_params

__all__ = ["fit_postprocess", "ranking_auc"]

_K_HINT = ("it fits a two-class threshold rule (the K-class plug-in rule is rateopt.ThresholdClassifier in "
           "Python)")


def ranking_auc(scores, y, weight=None):
    """The (weighted) ROC AUC of ``scores`` for the labels ``y`` (0/1): the probability that a positive row
    scores above a negative one, ties counting one half; NaN when a class is absent."""
    w = np.ones(len(y)) if weight is None else np.asarray(weight, dtype=np.float64)
    values, idx = np.unique(np.asarray(scores, dtype=np.float64), return_inverse=True)
    pos = np.bincount(idx, w * (y == 1), minlength=values.size)
    neg = np.bincount(idx, w * (y == 0), minlength=values.size)
    total = pos.sum() * neg.sum()
    if not total > 0:
        return float("nan")
    below = np.cumsum(neg) - neg
    return float(np.sum(pos * (below + 0.5 * neg)) / total)


def _warn_if_reversed(scores, table, column):
    """Warn when ``--positive`` made a class positive that the score column ranks lower (AUC below 1/2): the rule
    treats a higher score as more likely positive, so the column most likely scores the other class."""
    auc = ranking_auc(scores, table.y, table.weight)
    if auc < 0.5:
        negative, positive = table.classes
        warnings.warn(f"--positive {positive!r}: the score column {column!r} ranks that class lower (ROC AUC "
                      f"{auc:.3f} < 0.5), but the rule takes a higher score as more likely positive; if {column!r} "
                      f"scores {negative!r} (e.g. its probability), give the column negated (1 - p, or -score), or "
                      "leave --positive out", UserWarning, stacklevel=3)


def fit_postprocess(args, spec, fmt, roles):
    """``fit --postprocess COLUMN|MODEL.npz``: the exact best per-group threshold rule on a score column of the
    data, or on the scores of a model written by ``rateopt fit``."""
    column = args.postprocess
    model_mode = column.endswith(".npz") and os.path.isfile(column)
    if fmt == "libsvm" and not model_mode:
        raise InputError("--postprocess reads a named score column: give CSV or Parquet data")
    for flag, given in (("--report", args.report), ("--compare-unconstrained", args.compare_unconstrained),
                        ("--sweep", args.sweep)):
        if given:
            raise InputError(f"{flag} describes a training run; --postprocess fits a threshold rule (evaluate it "
                             "with rateopt evaluate)")
    if not model_mode and (column in roles.special() or column in roles.groups):
        raise InputError(f"--postprocess {column}: the score column cannot also be the label, a group, the "
                         "weight or the baseline")
    extra = [r for r in spec.roles() if r != "train"]
    if extra:
        raise InputError(f"--postprocess: goals on other dataset roles ({extra!r}) are not supported; the rule is "
                         "fitted on the training file's scores")
    if model_mode:
        base_sha256 = file_sha256(column)  # before reading it: the rule is tied to these bytes
        base, base_meta, base_enc, base_roles = read_bundle(column)
        if isinstance(base, (ThresholdClassifier, ChainedRule)):
            raise InputError(f"--postprocess {column}: that file is already a threshold rule")
        roles = ColumnRoles(label=roles.label or base_roles.label, groups=roles.groups or base_roles.groups,
                            weight=roles.weight, baseline=roles.baseline, drop=base_roles.drop)
        refuse(arity_of_labels(base_meta["classes"]), [(f"--postprocess {column}", True)], base_meta["classes"],
               _K_HINT)
        if args.positive is not None and str(args.positive) != str(base_meta["classes"][1]):
            warnings.warn(f"--positive {args.positive!r} is ignored: the rule reads the scores of {column}, whose "
                          f"positive class is {base_meta['classes'][1]!r} (a higher score, more likely "
                          f"{base_meta['classes'][1]!r}); leave --positive out, or refit {column} with it",
                          UserWarning, stacklevel=2)
        train_tab = load_table(args.data, fmt, roles, encoding=base_enc, classes=base_meta["classes"])
        scores = np.asarray(base_scores(base, train_tab.X), dtype=np.float64)
    else:
        train_tab = load_table(args.data, fmt, roles, positive=args.positive, unknown=args.unknown,
                               keep_only=column, allow_multiclass=True)
        refuse(train_tab.arity, [("--postprocess", True)], train_tab.classes, _K_HINT)
        check_goals(TWO_CLASSES, spec, train_tab.classes)
        cols = train_tab.encoding.columns
        if len(cols) != 1 or cols[0]["name"] != column or cols[0]["type"] != "numeric":
            raise InputError(f"--postprocess {column}: the score column must hold numbers (it was read as "
                             f"{cols[0]['type'] if cols else 'missing'})")
        scores = scores_of(train_tab.X)
        if args.positive is not None:
            _warn_if_reversed(scores, train_tab, column)
    _, _, _, sol = split_params(spec, args)
    epsilon = validate(SOLUTION_PARAMS, sol)["epsilon"]
    objective = spec.objective if isinstance(spec.objective, str) else None
    clf = ThresholdClassifier(goals=list(spec.goals), objective=objective, epsilon=epsilon,
                              random_state=args.seed)
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", InfeasibleWarning)
            clf.fit(scores, train_tab.y, groups=train_tab.groups or None,
                    sample_weight=train_tab.weight, baseline=train_tab.baseline)
    except (RateoptError, ValueError) as exc:
        raise InputError(f"--postprocess {column}: {exc}") from None
    seconds = time.perf_counter() - t0
    for w in caught:
        warnings.warn(w.message, w.category, stacklevel=2)
    with open(args.goals, encoding="utf-8-sig") as f:
        goals_text = f.read()
    sidecar = {
        "rateopt_version": __version__, "model_file": os.path.basename(args.out), "result_file": None,
        "input_format": fmt,
        "postprocess": ({"model": os.path.relpath(os.path.abspath(column),
                                                  os.path.dirname(os.path.abspath(args.out))),
                         "model_sha256": base_sha256}
                        if model_mode else {"score_column": column}) | {"cells": list(clf.rule_.columns)},
        "roles": {"label": roles.label, "groups": list(roles.groups), "weight": roles.weight,
                  "baseline": roles.baseline, "drop": list(roles.drop if model_mode else train_tab.dropped)},
        "classes": train_tab.classes, "encoding": train_tab.encoding.to_json(), "goals_toml": goals_text,
        "goals_file": os.path.basename(args.goals),
        "goals_dir": os.path.dirname(os.path.abspath(args.goals)), "solution": "threshold-rule",
        "epsilon": epsilon, "seed": args.seed, "training_seconds": seconds}
    with AtomicFiles() as files:  # the rule and its encoding: both or neither
        rule_tmp = files.path(args.out)
        clf.save(rule_tmp)
        sidecar["model_sha256"] = file_sha256(rule_tmp)
        write_sidecar(files.path(sidecar_path(args.out)), sidecar)
    ev = clf.training_
    width = max([len(n) for n in ev.constraints] + [9])
    print(f"{'objective':<{width}}  {ev.objective:>10.6f}  (train, expected decisions)")
    for n, v in ev.constraints.items():
        print(f"{n:<{width}}  {v:>+10.6f}  {'met' if goal_met(v) else 'VIOLATED'}")
    print(f"(a goal is met when its value is <= {TOLERANCE:g}, the round-off tolerance)")
    what = f"the scores of {column}" if model_mode else repr(column)
    print(f"wrote {args.out} (+ {os.path.basename(sidecar_path(args.out))}): a threshold rule on {what} over "
          f"{clf.rule_.n_cells} group cell(s), {clf.rule_.edges.size} score bins; fitted in {seconds:.2f} s")
    return EXIT_OK
