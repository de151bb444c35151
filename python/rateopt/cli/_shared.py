"""What several ``rateopt`` commands share: the goals file, the tables of its dataset roles, the problem, output
checks, the parameter split and the printed tables. Two and K classes alike (:mod:`._arity` holds what differs)."""

from __future__ import annotations

import json
import os

from .._compiler._problem import Problem
from .._compiler._toml import GoalsFileError, read_goals
from .._params import MODEL_PARAMS, SOLUTION_PARAMS, TRAIN_PARAMS, build_model
from .._threshold_classifier import ThresholdClassifier
from .._utils._atomic import AtomicFiles, check_writable
from ..exceptions import ConstantConstraintError, EmptySubsetError, RateoptError
from ..report import REPORT_FORMATS, table_columns
from ._bundle import ChainedRule
from ._data import load_table
from ._io import InputError, file_format
from ._train_table import check_train_entry

__all__ = ["EXIT_OK", "EXIT_VIOLATED", "goals_file", "recorded_goals", "role_tables", "check_goal_groups",
           "build_problem",
           "evaluable_problem", "trained_groups", "check_outputs", "check_report_suffix", "split_params",
           "seeded_model", "fmt_of", "print_goals", "print_group_table", "write_json"]

EXIT_OK, EXIT_VIOLATED = 0, 1


def goals_file(source, base_dir=None, name=None):
    """The goals file ``source`` (a path or its text), its ``[train]`` checked against the parameter table.

    Text (the goals a model's encoding file records) is named ``name`` (the file ``fit`` read, in ``base_dir``),
    so that messages and the ``[datasets]`` paths refer to that file; an encoding file that does not record the
    name gives ``name=None``, and messages say the goals are the recorded ones.
    """
    spec = read_goals(source, check_train=check_train_entry)
    if spec.path is None and base_dir is not None and isinstance(base_dir, str):
        spec.path = os.path.join(base_dir, name if name else "(the goals recorded in the model's encoding file)")
    return spec


def recorded_goals(meta, sidecar):
    """The goals a model's encoding file ``sidecar`` records (its fields ``goals_toml``, ``goals_dir`` and
    ``goals_file``), read as TOML text."""
    text, folder, name = meta.get("goals_toml"), meta.get("goals_dir"), meta.get("goals_file")
    for field, value, kinds in (("goals_toml", text, (str,)), ("goals_dir", folder, (str, type(None))),
                                ("goals_file", name, (str, type(None)))):
        if not isinstance(value, kinds):
            raise InputError(f"{sidecar}: the field {field} must be {'text' if field == 'goals_toml' else 'a path'}, "
                             f"not {type(value).__name__}; give the goals with --goals")
    try:
        return goals_file(text + "\n", folder, name)  # a newline: read as the text it is, never as a path
    except GoalsFileError as exc:
        raise InputError(f"{sidecar}: the field goals_toml is not a valid goals file ({exc}); give the goals with "
                         "--goals") from None


def role_tables(spec, roles, encoding, classes, fmt_of, splits=True):
    """Tables of the goals' other dataset roles, and (``splits``) of every role named in [datasets]."""
    out = {}
    wanted = [r for r in spec.roles() if r != "train"]
    for role in wanted:
        if role not in spec.datasets:
            raise InputError(f"{spec.path or 'the goals'}: a goal applies to dataset role {role!r}; name its file "
                             f"in [datasets] ({role} = \"file.csv\")")
    for role in (list(spec.datasets) if splits else wanted):
        path = spec.dataset_path(role)
        out[role] = load_table(path, fmt_of(path), roles, encoding=encoding, classes=classes, require_label=False)
    return out


def goal_columns(goal):
    """The group columns a goal reads."""
    cols = getattr(goal, "group", None)
    return () if cols is None else (cols,) if isinstance(cols, str) else tuple(cols)


def check_goal_groups(spec, groups_given):
    """Every group column a goal names must be among ``--groups``."""
    for i, g in enumerate(spec.goals):
        for c in goal_columns(g):
            if c not in groups_given:
                raise InputError(f"{spec.path or 'the goals'}: goals[{i}] ({type(g).__name__}) uses group column "
                                 f"{c!r}, which is not among the group columns {list(groups_given)!r}: add it to "
                                 f"--groups")


def build_problem(spec, tables, main, goals=None):
    """The goals (default: all of ``spec``'s) bound to ``main`` (as role "train") and to their other roles.

    ``main``'s dataset type (two-class :class:`~rateopt.Dataset` or K-class
    :class:`~rateopt.ClassDataset`) chooses the problem's statistics.
    """
    check_goal_groups(spec, main.groups)
    goals = spec.goals if goals is None else goals
    datasets = {"train": main.dataset("train")}
    for role in sorted({g.dataset for g in goals}):
        if role != "train":
            datasets[role] = tables[role].dataset(role)
    try:
        return Problem(objective=spec.objective, constraints=goals, regularization=spec.regularization,
                       datasets=datasets)
    except (EmptySubsetError, ConstantConstraintError):
        raise
    except RateoptError as exc:
        raise InputError(f"{spec.path or 'the goals'}: {' '.join(str(exc).split())}") from None


def _absent_groups(goal, main, trained):
    """``(column, [values])`` of the groups ``goal`` was trained on that ``main`` lacks (None: all present)."""
    if goal.dataset != "train":
        return None
    cols = goal_columns(goal)
    for c in cols:
        wanted = set(trained.get(c, ()))
        values = getattr(goal, "values", None)
        if values is not None and len(cols) == 1:
            wanted &= {str(v) for v in values}
        present = {v for v in main.groups[c].tolist() if v is not None}
        if wanted - present:
            return c, sorted(wanted - present)
    return None


def evaluable_problem(spec, tables, main, trained):
    """The problem of the goals that can be evaluated on these data, and ``[(index, goal, reason)]`` of the others.

    A goal is not evaluable when a group it was trained on is absent from the data (``trained``: column ->
    values in the training data), when a subset it takes a rate on is empty, or when it no longer depends on
    the decisions (e.g. one group is the whole batch).
    """
    check_goal_groups(spec, main.groups)
    kept, skipped = [], []
    for i, goal in enumerate(spec.goals):
        absent = _absent_groups(goal, main, trained)
        if absent is not None:
            reason = f"no rows of group {absent[0]} = {', '.join(map(repr, absent[1]))} (present in the training data)"
            skipped.append((i, goal, reason))
            continue
        try:
            build_problem(spec, tables, main, [goal])
        except (EmptySubsetError, ConstantConstraintError) as exc:
            skipped.append((i, goal, " ".join(str(exc).split())))
        else:
            kept.append(goal)
    return build_problem(spec, tables, main, kept), skipped


def trained_groups(meta, clf=None, where="the model's encoding file"):
    """Group column -> its values in the training data: from the report saved beside a model, else (a threshold
    rule of ``fit --postprocess``, which saves no report) from the rule's group cells."""
    table = ((meta.get("report") or {}).get("group_rates") or {})
    table = table.get("train") if isinstance(table, dict) else None
    groups, values = ((table or {}).get("group", ()), (table or {}).get("value", ())) if isinstance(table, dict) \
        else (None, None)
    if table is not None and not (isinstance(groups, list) and isinstance(values, list) and len(groups) == len(values)
                                  and all(isinstance(g, str) for g in groups)):
        raise InputError(f"{where}: the field report.group_rates.train must hold lists 'group' and 'value' of one "
                         "length")
    out = {}
    for g, v in zip(groups or (), values or ()):
        if g != "all":
            out.setdefault(g, []).append(str(v))
    rule = clf.rule if isinstance(clf, ChainedRule) else clf
    if not out and isinstance(rule, ThresholdClassifier):
        for j, c in enumerate(rule.rule_.columns):
            out[c] = sorted({str(cell[j]) for cell in rule.rule_.cells})
    return out


def check_outputs(*outputs):
    """``(flag, path)`` pairs: each path's directory exists and is writable (checked before any work)."""
    for flag, path in outputs:
        if path is None:
            continue
        try:
            check_writable(path, flag)
        except RateoptError as exc:
            raise InputError(str(exc)) from None


def check_report_suffix(flag, path):
    """A report file's suffix names one of the report formats."""
    if path is not None and os.path.splitext(path)[1].lower() not in REPORT_FORMATS:
        raise InputError(f"{flag} {path}: a report file ends with one of {sorted(REPORT_FORMATS)}")


def split_params(spec, args):
    """``(method, train, model, solution)``: the goals file's ``[train]`` overridden by the command line's flags,
    split by the one parameter table each entry belongs to (:data:`~rateopt._params.TRAIN_PARAMS`,
    ``MODEL_PARAMS``, ``SOLUTION_PARAMS``)."""
    given = dict(spec.train)
    given.update({k[len("param_"):]: v for k, v in vars(args).items() if k.startswith("param_")})
    names = lambda table: {p.name for p in table}  # noqa: E731
    train = {k: v for k, v in given.items() if k in names(TRAIN_PARAMS) and k != "method"}
    model = {k: v for k, v in given.items() if k in names(MODEL_PARAMS)}
    solution = {k: v for k, v in given.items() if k in names(SOLUTION_PARAMS)}
    return given.get("method", "auto"), train, model, solution


def seeded_model(model_params, seed, default_l2=0.0):
    """The model of ``model_params``; ``--seed`` is a kernel model's landmark seed (``KernelModel.random_state``,
    the only landmark seed); the run itself gets the seed once, as ``train``'s ``random_state``. ``default_l2``:
    the method's L2 strength when the goals file gives none (``rateopt._train.default_l2_of``)."""
    try:
        return build_model(model_params, random_state=seed, default_l2=default_l2)
    except (RateoptError, ValueError) as exc:
        raise InputError(" ".join(str(exc).split())) from None


def fmt_of(explicit):
    """A file's format: ``explicit`` (``--format``) or its suffix's."""
    return lambda path: file_format(path, explicit)


def print_goals(rep, out):
    """A report's objective and goal values per split, one line each (``!`` marks a violated goal)."""
    splits = list(rep["objective"])
    width = max([len(g["name"]) for g in rep["goals"]] + [9])
    print(f"{'objective':<{width}}  " + "  ".join(f"{s:>10}" for s in splits), file=out)
    print(f"{'':<{width}}  " + "  ".join(f"{rep['objective'][s]:>10.4f}" for s in splits), file=out)
    for g in rep["goals"]:
        cells = "  ".join(f"{g['values'][s]:>+10.4f}" + ("" if g["met"][s] else "!") for s in splits)
        print(f"{g['name']:<{width}}  {cells}", file=out)


def print_group_table(groups, out, heading):
    """A :func:`rateopt.group_rates` table (two-class or K-class columns), one row per group value."""
    cols = table_columns(groups)
    cw = max([14] + [len(c) + 2 for c in cols if len(c) > 13])  # the widths the tables always had
    print(f"\n{heading}:\n" + f"{'group':<24}" + "".join(f"{c:>{cw}}" for c in cols), file=out)
    for i, (g, v) in enumerate(zip(groups["group"], groups["value"])):
        label = "all" if g == "all" else f"{g}={v}"
        cells = []
        for c in cols:
            x = groups[c][i]
            cells.append(f"{int(x):>{cw}d}" if c == "count" else f"{'-':>{cw}}" if x != x else f"{x:>{cw}.4f}")
        print(f"{label:<24}" + "".join(cells), file=out)


def write_json(path, payload):
    """Write ``payload`` (JSON-ready) to ``path`` atomically."""
    with AtomicFiles() as files, open(files.path(path), "w", encoding="utf-8") as f:
        json.dump(payload, f, indent=1)
