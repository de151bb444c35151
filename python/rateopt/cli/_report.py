"""``rateopt report``: re-render a report from a saved training result, optionally re-selecting the solution."""

from __future__ import annotations

import os

from .._utils._atomic import AtomicFiles
from ..report import build_report, write_report
from ._bundle import (check_tied, file_sha256, load_input, read_bundle, read_sidecar, result_path, sidecar_path,
                      write_sidecar)
from ._data import load_table
from ._decisions import group_table, proba
from ._io import InputError, file_format
from ._shared import EXIT_OK, check_outputs, check_report_suffix

__all__ = ["report"]


def report(args):
    """``rateopt report RESULT --out REPORT``."""
    check_report_suffix("--out", args.out)
    check_outputs(("--out", args.out), ("--model-out", args.model_out),
                   ("--model-out", args.model_out and sidecar_path(args.model_out)))
    path = args.result
    if not path.endswith(".result.npz") and os.path.isfile(result_path(path)):
        path = result_path(path)
    result = load_input(path, f"{path}: no such result file (rateopt fit writes <model>.result.npz)")
    if type(result).__name__ != "TrainResult":
        raise InputError(f"{path}: a classifier, not a training result; give the .result.npz written by rateopt fit")
    stem = path[: -len(".result.npz")] if path.endswith(".result.npz") else os.path.splitext(path)[0]
    side = stem + ".rateopt.json"
    meta = read_sidecar(side) if os.path.isfile(side) else {}
    if meta and meta.get("result_file") is not None:
        check_tied(meta, "result_sha256", side, path, "result")
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
            groups["data"] = group_table(table, proba(table.arity, clf, table.X, table.groups))
        ctx = dict((stored or {}).get("context", {}))
        rep = build_report(result, solution=kind, epsilon=epsilon, group_rates=groups,
                           seconds=meta.get("training_seconds"), seed=meta.get("seed"),
                           title=(stored or {}).get("title", "rateopt report"), context=ctx)
    with AtomicFiles() as files:  # the report and the re-selected model: all or none
        write_report(rep, files.path(args.out))
        if args.model_out:
            clf = result.solution(kind, epsilon=epsilon)
            model_tmp = files.path(args.model_out)
            clf.save(model_tmp)
            if meta:
                info = {k: v for k, v in meta.items() if k not in ("format", "version")}
                info.update(solution=kind, epsilon=epsilon, model_file=os.path.basename(args.model_out), report=rep,
                            model_sha256=file_sha256(model_tmp))
                write_sidecar(files.path(sidecar_path(args.model_out)), info)
    print(f"wrote {args.out} ({kind} solution, {len(rep['solution']['support'])} support model(s))")
    return EXIT_OK
