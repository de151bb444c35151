"""``rateopt fit``: train under a goals file and save the model, its encoding file, its result and a report.

One path for two and K classes (a label column of more than two values): the labels give the table's arity
(:mod:`rateopt._training._arity`), once; the parameter table, the evaluation loop, the per-group tables, the report, the encoding
file and the atomic write are shared.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

from .._methods._sweep import sweep
from .._params import SOLUTION_PARAMS, train_params_for, validate
from .._solutions._result import warn_if_infeasible
from .._train import default_l2_of, run_game
from .._utils._atomic import AtomicFiles
from .._utils._validation import check_int
from .._version import __version__
from ..report import build_report, write_report
from ._decisions import check_goals, group_table, proba, refuse
from ._bundle import file_sha256, result_path, sidecar_path, write_sidecar
from ._data import load_table
from ._encoding import ColumnRoles
from ._evaluate import expected, held_out_certificate
from ._io import InputError, file_format
from ._postprocess import fit_postprocess
from ._progress import progress
from ._shared import (
    EXIT_OK,
    build_problem,
    check_outputs,
    check_report_suffix,
    fmt_of,
    goals_file,
    print_goals,
    role_tables,
    seeded_model,
    split_params,
)

__all__ = ["fit"]


def fit(args):
    """``rateopt fit DATA --goals GOALS --out MODEL``."""
    check_report_suffix("--report", args.report)
    check_outputs(("--out", args.out), ("--out", sidecar_path(args.out)), ("--out", result_path(args.out)),
                  ("--report", args.report))
    spec = goals_file(args.goals)
    fmt = file_format(args.data, args.format)
    if fmt == "libsvm" and args.label is not None:
        raise InputError(f"{args.data}: a LIBSVM file holds its labels in the first field; leave out --label")
    roles = ColumnRoles(label=args.label, groups=args.groups, weight=args.weight, baseline=args.baseline,
                        drop=args.drop)
    if args.postprocess is not None:
        return fit_postprocess(args, spec, fmt, roles)
    train_tab = load_table(args.data, fmt, roles, positive=args.positive, unknown=args.unknown,
                           allow_multiclass=True)
    arity = train_tab.arity  # found once, from the labels
    refuse(arity, [(flag, getattr(args, flag[2:].replace("-", "_"), None) if flag != "--baseline"
                    else roles.baseline) for flag in arity.unsupported_fit], train_tab.classes)
    check_goals(arity, spec, train_tab.classes)
    others = role_tables(spec, roles, train_tab.encoding, train_tab.classes, fmt_of(args.format))
    method, train_params, model_params, solution_params = split_params(spec, args)
    try:
        sol = validate(SOLUTION_PARAMS, solution_params)
    except ValueError as exc:
        raise InputError(f"{spec.path or 'the goals'}: {exc}") from None
    if sol["solution"] == "thresholded" and args.sweep:
        raise InputError("--sweep retrains at each value and reports mixtures of the records; use another "
                         "solution than \"thresholded\" with --sweep")
    problem = build_problem(spec, others, train_tab)
    model = seeded_model({**model_params, **{k: v for k, v in train_params.items() if k == "learning_rate"}}, args.seed,
                         default_l2_of(problem, method))
    train_params = train_params_for(model, train_params)  # a boosted model's learning_rate is its shrinkage
    try:
        n_iter = check_int("n_iter", train_params.get("n_iter"), 1, allow_none=True)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    bar = progress(n_iter, "rateopt fit", args.quiet)
    last = [0]

    def callback(t, *_):
        bar.update(t + 1 - last[0])
        last[0] = t + 1

    t0 = time.perf_counter()
    try:
        result = run_game(problem, model, method, callback=callback, random_state=args.seed,
                          n_threads=args.threads, **train_params)
    finally:
        bar.close()
    seconds = time.perf_counter() - t0
    if sol["solution"] is None:  # the report describes a mixture of recorded iterates: m-stochastic by default
        sol["solution"] = "m-stochastic"  # (a K-class thresholded solution's report is not written yet)
    clf = result.solution(sol["solution"], epsilon=sol["epsilon"], problem=problem)
    feas = result.feasibility(sol["solution"], epsilon=sol["epsilon"], problem=problem, classifier=clf)
    warn_if_infeasible(feas, allowed=sol["epsilon"] if sol["solution"] == "m-stochastic" else 0.0)

    tables = {"train": train_tab, **others}
    evaluations, groups, certificates = {}, {}, {}
    for split in ("train", "validation", "test"):
        if split not in tables or (split != "train" and tables[split].y is None):
            continue
        p = problem if split == "train" else build_problem(spec, others, tables[split])
        by_name = {"train": tables[split], **{r: others[r] for r in spec.roles() if r != "train"}}
        evaluations[split] = expected(arity, p, clf, by_name)
        if split != "train" and args.certify is not None:
            certificates[split] = held_out_certificate(arity, p, clf, by_name, args.certify, args.seed)
        groups[split] = group_table(tables[split], proba(arity, clf, tables[split].X, tables[split].groups))
    before = None
    if args.compare_unconstrained:
        base = run_game(problem, model, "unconstrained", random_state=args.seed, n_threads=args.threads,
                        **{k: v for k, v in train_params.items()
                           if k not in ("eta_lambda", "update", "lambda_radius")})
        base_clf = base.solution("last")
        before = {s: group_table(tables[s], proba(arity, base_clf, tables[s].X, tables[s].groups)) for s in groups}
    context = {"data": args.data, "format": fmt, "label": args.label, "classes": train_tab.classes,
               "rows": int(train_tab.X.shape[0]), "features": int(train_tab.X.shape[1])}
    if args.sweep:
        context["sweep"] = _sweep(args, spec, problem, model, method, sol, train_params)
    with open(args.goals, encoding="utf-8") as f:
        goals_text = f.read()
    context["goals_toml"] = goals_text
    rep = build_report(result, solution=sol["solution"], epsilon=sol["epsilon"], evaluations=evaluations,
                       group_rates=groups, group_rates_before=before, comparison="unconstrained model",
                       seconds=seconds, seed=args.seed,
                       title=f"rateopt report: {os.path.basename(args.data)}", context=context,
                       certificates=certificates, weights=_support_weights(result, clf))
    sidecar = {
        "rateopt_version": __version__, "model_file": os.path.basename(args.out),
        "result_file": os.path.basename(result_path(args.out)), "input_format": fmt,
        "roles": {"label": roles.label, "groups": list(roles.groups), "weight": roles.weight,
                  "baseline": roles.baseline, "drop": list(roles.drop)},
        "classes": train_tab.classes, "n_classes": len(train_tab.classes),
        "encoding": train_tab.encoding.to_json(), "goals_toml": goals_text,
        "goals_file": os.path.basename(args.goals),
        "goals_dir": os.path.dirname(os.path.abspath(args.goals)), "solution": sol["solution"],
        "epsilon": sol["epsilon"], "seed": args.seed, "training_seconds": seconds, "report": rep}
    with AtomicFiles() as files:  # the model, its encoding, its result and the report: all or none
        model_tmp = files.path(args.out)
        clf.save(model_tmp)
        sidecar["model_sha256"] = file_sha256(model_tmp)  # ties the files: a reader refuses another run's
        result_tmp = files.path(result_path(args.out))
        result.save(result_tmp)
        sidecar["result_sha256"] = file_sha256(result_tmp)
        write_sidecar(files.path(sidecar_path(args.out)), sidecar)
        if args.report:
            write_report(rep, files.path(args.report))
    print_goals(rep, sys.stdout)
    for split, cert in certificates.items():
        print(f"\ncertified upper bounds ({split} held out, confidence {cert.confidence:g}):")
        for b in cert.goals:
            mark = "not certifiable" if b.certified is None else ("certified" if b.certified else "NOT CERTIFIED")
            print(f"  {b.name}  {b.upper:+.6f}  {mark}")
    written = [os.path.basename(sidecar_path(args.out)), os.path.basename(result_path(args.out))]
    print(f"wrote {args.out} (+ {', '.join(written)}); trained in {seconds:.2f} s")
    return EXIT_OK


def _sweep(args, spec, problem, model, method, sol, train_params):
    """``--sweep``: the goal retrained at each value (warm-started), as the report's trade-off curve."""
    if not 0 <= args.sweep_goal < len(spec.goals):
        raise InputError(f"--sweep-goal {args.sweep_goal}: the goals file has {len(spec.goals)} goal(s)")
    bar = progress(len(args.sweep), "rateopt sweep", args.quiet)
    try:
        s = sweep(problem, spec.goals[args.sweep_goal], args.sweep, parameter=args.sweep_parameter, model=model,
                  method=method, solution=sol["solution"] or "m-stochastic", progress=lambda i: bar.update(1),
                  random_state=args.seed, n_threads=args.threads, **train_params)
    finally:
        bar.close()
    return s.as_dict()


def _support_weights(result, clf):
    """A thresholded solution's weights over the recorded iterates (None: the result rebuilds them)."""
    if getattr(clf, "kind", None) != "thresholded":
        return None
    q = np.zeros(result.weights.shape[0])
    q[clf.support] = clf.mu
    return q
