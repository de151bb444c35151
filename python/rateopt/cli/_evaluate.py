"""``rateopt evaluate``: per-goal values and per-group rates of a saved model on a data file, as a pipeline gate
(exit status 1 when a goal is violated beyond ``--tolerance``, by default the report's round-off
:data:`rateopt.report.TOLERANCE`, or with ``--certify`` not certified).

Two and K classes share this path; :mod:`._decisions` reads the model's decisions. Drawn decisions (``--decisions
drawn``, ``--certify``) key each row's draw on its row number in the file, or on ``--id-column``.
"""

from __future__ import annotations

import os
import sys
import warnings

import numpy as np

from .._compiler._toml import RECIPES
from .._postprocess._certify import certify_expressions
from .._utils._json import json_ready
from ..report import TOLERANCE
from ._decisions import check_goals, drawn, group_table, proba, refuse
from ._bundle import read_bundle, sidecar_path
from ._data import load_table
from ._io import InputError, file_format
from ._shared import (
    EXIT_OK,
    EXIT_VIOLATED,
    check_outputs,
    evaluable_problem,
    fmt_of,
    goals_file,
    recorded_goals,
    print_group_table,
    role_tables,
    trained_groups,
    write_json,
)

__all__ = ["evaluate", "expected", "held_out_certificate", "row_keys"]


def row_keys(table):
    """Each row's draw key: its ``--id-column`` value, else its row number in the file (0-based)."""
    key = getattr(table, "row_key", None)
    return np.arange(table.X.shape[0], dtype=np.int64) if key is None else key


def expected(arity, problem, clf, tables_by_name, kind="expected", seed=0):
    """The problem's values of the model's expected (or, ``kind="drawn"``, one seeded draw of its) decisions."""
    preds = {}
    for name in problem.datasets:
        t = tables_by_name[name]
        preds[name] = (proba(arity, clf, t.X, t.groups) if kind == "expected"
                       else drawn(arity, clf, t.X, t.groups, seed, row_keys(t)))
    return arity.evaluate_decisions(problem, preds)


def held_out_certificate(arity, problem, clf, tables_by_name, confidence, seed):
    """The held-out certificate of ``problem``'s goals from the model's drawn decisions."""
    if not 0.0 < confidence < 1.0:
        raise InputError(f"--certify {confidence:g}: the confidence must lie strictly between 0 and 1")
    decisions = {name: drawn(arity, clf, tables_by_name[name].X, tables_by_name[name].groups, seed,
                             row_keys(tables_by_name[name]))
                 for name in problem.compiled.datasets}
    return certify_expressions(problem.constraints, problem.objective, decisions, confidence=confidence)


def evaluate(args):
    """``rateopt evaluate MODEL DATA``."""
    check_outputs(("--json", args.json_out))
    if args.tolerance is None:
        args.tolerance = TOLERANCE  # the report's round-off rule: a model passes on its own training data
    if not np.isfinite(args.tolerance) or args.tolerance < 0:
        raise InputError(f"--tolerance {args.tolerance:g}: give a finite number >= 0 (default {TOLERANCE:g})")
    clf, meta, enc, roles = read_bundle(args.model)
    fmt = file_format(args.data, args.format or (meta.get("input_format") if not os.path.splitext(args.data)[1]
                                                 else None))
    spec = goals_file(args.goals) if args.goals else recorded_goals(meta, sidecar_path(args.model))
    table = load_table(args.data, fmt, roles, encoding=enc, classes=meta["classes"], id_column=args.id_column)
    if table.X.shape[0] == 0:
        raise InputError(f"{args.data}: no data rows (a goal's rates need rows to be measured on)")
    classes = list(meta["classes"])
    arity = table.arity
    refuse(arity, [(flag, getattr(args, flag[2:].replace("-", "_"), None)) for flag in arity.unsupported_evaluate],
           classes)
    check_goals(arity, spec, classes)
    others = role_tables(spec, roles, enc, meta["classes"], fmt_of(None), splits=False)
    problem, skipped = evaluable_problem(spec, others, table, trained_groups(meta, clf, sidecar_path(args.model)))
    by_name = {"train": table, **{r: others[r] for r in spec.roles() if r != "train"}}
    ev = expected(arity, problem, clf, by_name, args.decisions, args.seed)
    decisions = (proba(arity, clf, table.X, table.groups) if args.decisions == "expected"
                  else drawn(arity, clf, table.X, table.groups, args.seed, row_keys(table)))
    groups = group_table(table, decisions)
    violated = {n: v for n, v in ev.constraints.items() if v > args.tolerance}
    certificate = None
    if args.certify is not None:
        certificate = held_out_certificate(arity, problem, clf, by_name, args.certify, args.seed)
    recipe = {cls: name for name, cls in reversed(list(RECIPES.items()))}  # the first spelling of each
    not_evaluable = [{"goal": i, "recipe": recipe.get(type(g), type(g).__name__), "reason": reason}
                     for i, g, reason in skipped]
    width = max([len(n) for n in ev.constraints] + [len(f"goals[{s['goal']}] ({s['recipe']})") for s in not_evaluable]
                + [20])
    out = sys.stdout
    print(f"rateopt evaluate: {args.model} on {args.data} ({table.X.shape[0]} rows, {args.decisions} decisions"
          f"{arity.classes_note(classes)})", file=out)
    print(f"objective ({spec.objective or 'error'}): {ev.objective:.6f}", file=out)
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
    print_group_table(groups, out, arity.table_heading)
    payload = json_ready({"model": args.model, "data": args.data, "decisions": args.decisions, "classes": classes,
                          "objective": ev.objective, "constraints": ev.constraints, "tolerance": args.tolerance,
                          "violated": sorted(violated), "passed": not violated, "not_evaluable": not_evaluable,
                          "group_rates": groups,
                          "certificate": None if certificate is None else certificate.to_dict()})
    if args.json_out:
        write_json(args.json_out, payload)
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
