"""The K-class paths of ``rateopt fit``, ``evaluate`` and ``predict`` (a label column of more than two values).

``fit`` builds a :class:`~rateopt.MulticlassProblem` from the goals file's K-class goals on a
:class:`~rateopt.ClassDataset`, trains with :func:`rateopt.train`, saves the
:class:`~rateopt.MulticlassClassifier` and the encoding file (``"n_classes"``, ``"classes"``) and a K-class
report (:func:`rateopt.report.build_multiclass_report`). ``evaluate`` reads the objective and constraint values of
the model's expected (or drawn) decisions; ``predict`` writes the predicted class and one probability column per
class (``proba_<class>``).
"""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np

from .._compiler import Problem
from .._params import MODEL_PARAMS, build_model
from .._solutions._result import SOLUTION_ALIASES, SOLUTIONS
from .._train import train
from ..games import GAMES
from .._utils._atomic import AtomicFiles
from .._utils._json import json_ready
from .._version import __version__
from ..exceptions import RateoptError
from ..goals import MULTICLASS_OBJECTIVES, OBJECTIVES
from ..goals._multiclass import ClassGoal
from ..report import build_multiclass_report, write_report
from ._bundle import sidecar_path, write_sidecar
from ._io import InputError
from ._progress import progress

__all__ = [
    "EXIT_OK",
    "EXIT_VIOLATED",
    "MULTICLASS_TRAIN_PARAMS",
    "check_binary_goals",
    "check_goal_groups",
    "class_rates",
    "evaluate_multiclass",
    "fit_multiclass",
    "is_multiclass_goal",
    "print_goals",
]

EXIT_OK, EXIT_VIOLATED = 0, 1

# TODO(merge): helper C folds this module into the one CLI path; until then the K-class run calls rateopt.train.
#: The games that train K-class problems (those with K-class defaults), and the K-class solutions.
MULTICLASS_METHODS = tuple(name for name, game in GAMES.items() if game.class_defaults is not None)
MULTICLASS_SOLUTIONS = tuple(k for k in SOLUTIONS if k != "exact") + tuple(SOLUTION_ALIASES)

#: The goals file's [train] parameters a K-class run passes to rateopt.train.
MULTICLASS_TRAIN_PARAMS = ("n_iter", "learning_rate", "optimizer", "eta_lambda", "update", "lambda_init",
                           "lambda_floor")
_OTHER_PARAMS = ("method", "solution", "epsilon") + tuple(p.name for p in MODEL_PARAMS)


def check_goal_groups(spec, groups_given):
    """Every group column a goal names must be among ``--groups``."""
    for i, g in enumerate(spec.goals):
        cols = getattr(g, "group", None)
        cols = () if cols is None else (cols,) if isinstance(cols, str) else tuple(cols)
        for c in cols:
            if c not in groups_given:
                raise InputError(f"{spec.path or 'the goals'}: goals[{i}] ({type(g).__name__}) uses group column "
                                 f"{c!r}, which is not among the group columns {list(groups_given)!r}: add it to "
                                 f"--groups")


def print_goals(rep, out):
    """A report's objective and goal values per split, one line each (``!`` marks a violated goal)."""
    splits = list(rep["objective"])
    width = max([len(g["name"]) for g in rep["goals"]] + [9])
    print(f"{'objective':<{width}}  " + "  ".join(f"{s:>10}" for s in splits), file=out)
    print(f"{'':<{width}}  " + "  ".join(f"{rep['objective'][s]:>10.4f}" for s in splits), file=out)
    for g in rep["goals"]:
        cells = "  ".join(f"{g['values'][s]:>+10.4f}" + ("" if g["met"][s] else "!") for s in splits)
        print(f"{g['name']:<{width}}  {cells}", file=out)


def is_multiclass_goal(goal):
    """Whether ``goal`` is one of :mod:`rateopt.goals`' K-class goals."""
    return isinstance(goal, ClassGoal)


def _goal_label(spec, i, goal):
    return f"{spec.path or 'the goals'}: goals[{i}] ({type(goal).__name__})"


def check_binary_goals(spec):
    """A two-class run: refuse K-class goals and K-class-only objectives."""
    for i, g in enumerate(spec.goals):
        if is_multiclass_goal(g):
            raise InputError(f"{_goal_label(spec, i, g)} is a K-class goal, but the label column has two values: "
                             "use a two-class recipe (e.g. demographic_parity), or a label of more than two classes")
    obj = spec.objective
    if isinstance(obj, str) and obj not in OBJECTIVES and obj in MULTICLASS_OBJECTIVES:
        raise InputError(f"{spec.path or 'the goals'}: objective {obj!r} is a K-class objective, but the label "
                         f"column has two values; two-class objectives: {sorted(OBJECTIVES)}")


def _check_multiclass_goals(spec, table):
    for i, g in enumerate(spec.goals):
        if not is_multiclass_goal(g):
            raise InputError(f"{_goal_label(spec, i, g)} is a two-class goal, but the label column has "
                             f"{len(table.classes)} classes {table.classes!r}: use a K-class recipe "
                             "(multiclass_demographic_parity, multiclass_equal_opportunity, multiclass_equalized_odds, "
                             "class_prior_matching, class_recall_floor, class_precision_floor)")
        if g.dataset != "train":
            raise InputError(f"{_goal_label(spec, i, g)}: a K-class problem is measured on the training file "
                             f"only; goals on dataset role {g.dataset!r} are not supported")
    obj = spec.objective
    if obj is not None and (not isinstance(obj, str) or obj not in MULTICLASS_OBJECTIVES):
        raise InputError(f"{spec.path or 'the goals'}: objective {obj!r} is not a K-class objective; choose one of "
                         f"{sorted(MULTICLASS_OBJECTIVES)}")


def _problem(spec, table, name="train"):
    check_goal_groups(spec, table.groups)
    try:
        return Problem(objective=spec.objective, constraints=list(spec.goals),
                       regularization=spec.regularization, datasets=table.dataset(name))
    except RateoptError as exc:
        raise InputError(f"{spec.path or 'the goals'}: {' '.join(str(exc).split())}") from None


def _split_params(spec, args):
    given = dict(spec.train)
    given.update({k[len("param_"):]: v for k, v in vars(args).items() if k.startswith("param_")})
    bad = sorted(k for k in given if k not in MULTICLASS_TRAIN_PARAMS + _OTHER_PARAMS)
    if bad:
        raise InputError(f"{spec.path or 'the goals'}: [train] parameter(s) {bad!r} do not apply to K-class "
                         f"training; it takes {list(MULTICLASS_TRAIN_PARAMS + _OTHER_PARAMS)}")
    method = given.get("method", "auto")
    if method != "auto" and method not in MULTICLASS_METHODS:
        raise InputError(f"method {method!r}: K-class training plays one of {list(MULTICLASS_METHODS)} (or auto)")
    solution = given.get("solution", "m-stochastic")
    if solution not in MULTICLASS_SOLUTIONS:
        raise InputError(f"solution {solution!r}: a K-class run's solutions are {list(MULTICLASS_SOLUTIONS)}")
    epsilon = float(given.get("epsilon", 0.0))
    if not epsilon >= 0.0:
        raise InputError(f"epsilon must be >= 0, got {epsilon!r}")
    train = {k: given[k] for k in MULTICLASS_TRAIN_PARAMS if k in given}
    model = {p.name: given[p.name] for p in MODEL_PARAMS if p.name in given}
    return method, train, model, solution, epsilon


def class_rates(table, proba, classes):
    """Per group (and ``all``): the row count, each class's (weighted) predicted proportion and recall."""
    n = proba.shape[0]
    w = np.ones(n) if table.weight is None else np.asarray(table.weight, dtype=np.float64)
    y = np.asarray(table.y)
    onehot = np.stack([(y == c) for c in classes], axis=1).astype(np.float64)
    cells = [("all", "all", np.ones(n, dtype=bool))]
    for g, values in table.groups.items():
        v = np.asarray(values, dtype=object)
        for val in sorted({x for x in v.tolist() if x is not None}, key=str):
            cells.append((g, val, v == val))
    out = {"group": [], "value": [], "count": []}
    out.update({f"proportion[{c}]": [] for c in classes})
    out.update({f"recall[{c}]": [] for c in classes})
    for g, val, mask in cells:
        ws = w[mask]
        out["group"].append(g)
        out["value"].append(val)
        out["count"].append(int(mask.sum()))
        total = ws.sum()
        for k, c in enumerate(classes):
            out[f"proportion[{c}]"].append(float(ws @ proba[mask, k] / total) if total > 0 else None)
            den = ws @ onehot[mask, k]
            out[f"recall[{c}]"].append(float(ws @ (onehot[mask, k] * proba[mask, k]) / den) if den > 0 else None)
    return out


def fit_multiclass(args, spec, fmt, roles, train_tab, others):
    """``rateopt fit`` on a K-class label column."""
    for flag, given in (("--postprocess", args.postprocess), ("--sweep", args.sweep),
                        ("--certify", args.certify), ("--compare-unconstrained", args.compare_unconstrained),
                        ("--baseline", roles.baseline)):
        if given:
            raise InputError(f"{flag} is not supported for K-class labels (the label column has "
                             f"{len(train_tab.classes)} classes {train_tab.classes!r}); leave it out")
    _check_multiclass_goals(spec, train_tab)
    method, train_params, model_params, solution, epsilon = _split_params(spec, args)
    try:
        model = build_model(model_params, random_state=args.seed)
    except RateoptError as exc:
        raise InputError(str(exc)) from None
    problem = _problem(spec, train_tab)
    n_iter = int(train_params.get("n_iter") or 500)
    bar = progress(n_iter, "rateopt fit", args.quiet)
    t0 = time.perf_counter()
    try:
        result = train(problem, model, method, random_state=args.seed, n_threads=args.threads,
                       callback=lambda t, info: bar.update(1), **train_params)
    except RateoptError as exc:
        raise InputError(f"K-class training: {' '.join(str(exc).split())}") from None
    finally:
        bar.close()
    seconds = time.perf_counter() - t0
    clf = result.solution(solution, epsilon=epsilon)
    tables = {"train": train_tab, **{s: others[s] for s in ("validation", "test")
                                     if s in others and others[s].y is not None}}
    evaluations, rates = {}, {}
    for split, tab in tables.items():
        proba = clf.predict_proba(tab.X)
        p = problem if split == "train" else _problem(spec, tab, split)
        evaluations[split] = p.evaluate(proba)
        rates[split] = class_rates(tab, proba, train_tab.classes)
    with open(args.goals, encoding="utf-8") as f:
        goals_text = f.read()
    context = {"data": args.data, "format": fmt, "label": args.label, "classes": train_tab.classes,
               "n_classes": len(train_tab.classes), "rows": int(train_tab.X.shape[0]),
               "features": int(train_tab.X.shape[1]), "goals_toml": goals_text}
    rep = build_multiclass_report(result, solution=solution, epsilon=epsilon, evaluations=evaluations,
                                  class_rates=rates, seconds=seconds, seed=args.seed,
                                  title=f"rateopt report: {os.path.basename(args.data)}", context=context)
    sidecar = {
        "rateopt_version": __version__, "model_file": os.path.basename(args.out), "result_file": None,
        "input_format": fmt,
        "roles": {"label": roles.label, "groups": list(roles.groups), "weight": roles.weight,
                  "baseline": roles.baseline, "drop": list(roles.drop)},
        "classes": train_tab.classes, "n_classes": len(train_tab.classes),
        "encoding": train_tab.encoding.to_json(), "goals_toml": goals_text,
        "goals_dir": os.path.dirname(os.path.abspath(args.goals)), "solution": solution, "epsilon": epsilon,
        "seed": args.seed, "training_seconds": seconds, "report": rep}
    with AtomicFiles() as files:  # the model, its encoding and the report: all or none
        clf.save(files.path(args.out))
        write_sidecar(files.path(sidecar_path(args.out)), sidecar)
        if args.report:
            write_report(rep, files.path(args.report))
    print_goals(rep, sys.stdout)
    print(f"wrote {args.out} (+ {os.path.basename(sidecar_path(args.out))}): a K-class model over "
          f"{len(train_tab.classes)} classes, {clf.n_models} model(s); trained in {seconds:.2f} s")
    return EXIT_OK


def evaluate_multiclass(args, clf, meta, spec, table):
    """``rateopt evaluate`` of a K-class model: the goals' values of its expected (or drawn) decisions."""
    if args.certify is not None:
        raise InputError("--certify is not supported for K-class models")
    _check_multiclass_goals(spec, table)
    problem = _problem(spec, table)
    classes = list(meta["classes"])
    if args.decisions == "expected":
        proba = clf.predict_proba(table.X)
    else:
        idx = clf.predict_index(table.X, random_state=args.seed)
        proba = np.zeros((idx.shape[0], len(classes)))
        proba[np.arange(idx.shape[0]), idx] = 1.0
    ev = problem.evaluate(proba)
    rates = class_rates(table, proba, classes)
    violated = {n: v for n, v in ev.constraints.items() if v > args.tolerance}
    width = max([len(n) for n in ev.constraints] + [20])
    out = sys.stdout
    print(f"rateopt evaluate: {args.model} on {args.data} ({table.X.shape[0]} rows, {args.decisions} decisions, "
          f"{len(classes)} classes)", file=out)
    print(f"objective ({spec.objective or 'error'}): {ev.objective:.6f}", file=out)
    print(f"{'goal':<{width}}  {'value':>10}  status", file=out)
    for n, v in ev.constraints.items():
        print(f"{n:<{width}}  {v:>+10.6f}  {'VIOLATED' if n in violated else 'met'}", file=out)
    cols = ["count"] + [f"proportion[{c}]" for c in classes] + [f"recall[{c}]" for c in classes]
    cw = max(14, max(len(c) for c in cols) + 2)
    print("\nper-group predicted class proportions and per-class recall:\n" + f"{'group':<24}"
          + "".join(f"{c:>{cw}}" for c in cols), file=out)
    for i, (g, v) in enumerate(zip(rates["group"], rates["value"])):
        label = "all" if g == "all" else f"{g}={v}"
        cells = []
        for c in cols:
            x = rates[c][i]
            cells.append(f"{x:>{cw}d}" if c == "count" else f"{'-':>{cw}}" if x is None else f"{x:>{cw}.4f}")
        print(f"{label:<24}" + "".join(cells), file=out)
    payload = json_ready({"model": args.model, "data": args.data, "decisions": args.decisions,
                          "classes": classes, "objective": ev.objective, "constraints": ev.constraints,
                          "tolerance": args.tolerance, "violated": sorted(violated), "passed": not violated,
                          "not_evaluable": [], "class_rates": rates})
    if args.json_out:
        with AtomicFiles() as files, open(files.path(args.json_out), "w", encoding="utf-8") as f:
            json.dump(payload, f, indent=1)
    if violated:
        print(f"\nFAIL: {len(violated)} goal(s) violated beyond tolerance {args.tolerance:g}: "
              + "; ".join(f"{n} = {v:+.6f}" for n, v in violated.items()), file=out)
        print(f"rateopt: {len(violated)} goal(s) violated beyond tolerance {args.tolerance:g}", file=sys.stderr)
        return EXIT_VIOLATED
    print(f"\nPASS: every goal within tolerance {args.tolerance:g}", file=out)
    return EXIT_OK
