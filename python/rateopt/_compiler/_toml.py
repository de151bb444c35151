"""Goals files: the objective, the goals and the datasets by role, in TOML.

A goals file names every goal by its recipe in :mod:`rateopt.goals` with the
recipe's parameters, the objective by a name of
:data:`rateopt.goals.OBJECTIVES`, and optionally the files of further
datasets by role (paths relative to the goals file) and training
parameters (the names of ``rateopt._params``' tables)::

    objective = "error"

    [datasets]            # roles other than the training data
    validation = "valid.csv"

    [train]               # optional training, model and solution parameters
    n_iter = 500

    [[goals]]
    recipe = "equal_opportunity"
    group = "sex"
    slack = 0.05

It is read with the standard library's :mod:`tomllib` (``tomli`` on Python <
3.11); every problem is a :class:`GoalsFileError` naming the file, the line
and the key. :func:`write_goals` writes what :func:`read_goals` reads
(:meth:`rateopt.Problem.to_toml` / :meth:`rateopt.Problem.from_toml`).
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import math
import os
import re
import sys
from dataclasses import dataclass, field

from .. import goals as _goals
from ..exceptions import RateoptError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

__all__ = ["GoalsFileError", "GoalsSpec", "RECIPES", "read_goals", "write_goals"]

_TOP_KEYS = ("objective", "regularization", "datasets", "train", "goals")


class GoalsFileError(RateoptError):
    """A goals file that cannot be read: the message names the file, line and key."""


def _recipes():
    out = {}
    for name in _goals.__all__:
        obj = getattr(_goals, name)
        if name[:1].islower() and isinstance(obj, type) and issubclass(obj, _goals.Goal):
            out[name] = obj
    return out


#: Every goal recipe of :mod:`rateopt.goals` by its lower-case name.
RECIPES = _recipes()
_NAME_OF = {}
for _n, _c in RECIPES.items():
    _NAME_OF.setdefault(_c, _n)  # the first spelling in goals.__all__ (e.g. demographic_parity)


@dataclass
class GoalsSpec:
    """What a goals file states.

    Parameters
    ----------
    objective : str, default="error"
        A name of :data:`rateopt.goals.OBJECTIVES`.
    goals : list of Goal
        The goals, in file order.
    datasets : dict of str to str
        Role -> file path (as written; relative to the goals file's folder).
    train : dict
        Training, model and solution parameters by name.
    regularization : float or None, default=None
        L2 strength of the model (``Problem(regularization=...)``).
    path : str or None, default=None
        The file read (None for text).
    """

    objective: str = "error"
    goals: list = field(default_factory=list)
    datasets: dict = field(default_factory=dict)
    train: dict = field(default_factory=dict)
    regularization: float | None = None
    path: str | None = None

    def dataset_path(self, role):
        """The file of a dataset role.

        Parameters
        ----------
        role : str
            A key of ``datasets``.

        Returns
        -------
        str
            The path, relative paths taken from the goals file's folder.
        """
        p = self.datasets[role]
        if self.path is None or os.path.isabs(p):
            return p
        return os.path.join(os.path.dirname(os.path.abspath(self.path)), p)

    def roles(self):
        """The dataset roles the goals use.

        Returns
        -------
        list of str
            Sorted role names (``"train"`` and any other).
        """
        return sorted({g.dataset for g in self.goals})


# --------------------------------------------------------------------------- reading


def _is_path(source):
    """Whether a string ``source`` names a file rather than holding TOML text.

    A string with a newline is text; otherwise it is a path when a file of
    that name exists, when it ends with ``.toml``, or when it holds no ``=``
    (every TOML document with a key has one). So a path holding ``=``
    (``runs/alpha=0.1/goals.toml``) is read as a file, and a one-line
    document (``objective = "error"``) as text.
    """
    if "\n" in source or "\r" in source:
        return False
    return os.path.isfile(source) or source.rstrip().lower().endswith(".toml") or "=" not in source


def _source(source):
    if isinstance(source, str) and source == "":
        raise GoalsFileError("the goals source is an empty string: give a goals file's path or its TOML text")
    if isinstance(source, str) and "\x00" in source:
        raise GoalsFileError("the goals source holds a NUL character: give a goals file's path or its TOML text")
    if isinstance(source, os.PathLike) or (isinstance(source, str) and _is_path(source)):
        path = os.fspath(source)
        try:
            with open(path, "rb") as f:
                # utf-8-sig: a byte-order mark (written by some Windows editors) is not part of the TOML.
                return f.read().decode("utf-8-sig"), path
        except OSError as exc:
            raise GoalsFileError(f"{path}: cannot read the goals file ({exc.strerror or exc})") from None
        except UnicodeDecodeError as exc:
            raise GoalsFileError(f"{path}: not UTF-8 text ({exc})") from None
    if not isinstance(source, str):
        raise TypeError(f"a goals file is a path or TOML text, got {type(source).__name__}")
    return source.removeprefix("\ufeff"), None


def _line_of(text, table_index=None, key=None, table="goals"):
    """1-based line of the ``table_index``-th ``[[table]]`` header (or of ``key`` inside it / at the top)."""
    lines = text.splitlines()
    start, end = 0, len(lines)
    if table_index is not None:
        heads = [i for i, ln in enumerate(lines) if re.match(rf"\s*\[\[\s*{table}\s*\]\]", ln)]
        if table_index >= len(heads):
            return None
        start = heads[table_index]
        end = next((i for i in range(start + 1, len(lines)) if re.match(r"\s*\[", lines[i])), len(lines))
        if key is None:
            return start + 1
    elif table is not None and table != "goals":
        head = next((i for i, ln in enumerate(lines) if re.match(rf"\s*\[\s*{table}\s*\]", ln)), None)
        if head is None:
            return None
        start = head
        end = next((i for i in range(head + 1, len(lines)) if re.match(r"\s*\[", lines[i])), len(lines))
        if key is None:
            return head + 1
    for i in range(start, end):
        if re.match(rf"\s*\"?{re.escape(key)}\"?\s*=", lines[i]):
            return i + 1
    return start + 1 if table_index is not None else None


def _where(path, line, key):
    parts = [path or "<goals>"]
    if line is not None:
        parts.append(f"line {line}")
    return ": ".join(parts) + (f": {key}" if key else "")


def read_goals(source, check_train=None):
    """Read and validate a goals file.

    Parameters
    ----------
    source : str or os.PathLike
        A path to a TOML file (UTF-8, with or without a byte-order mark), or
        the TOML text itself. A string is read as a path when a file of that
        name exists, when it ends with ``.toml``, or when it holds neither a
        newline nor ``=``; otherwise it is the text.
    check_train : callable, default=None
        Called as ``check_train(key, value)`` for every entry of ``[train]``;
        a ``ValueError`` or ``TypeError`` it raises becomes a
        :class:`GoalsFileError` naming the line and key. The compiler only
        parses ``[train]``: the command line, which runs the training, checks
        it (:func:`rateopt.cli._train_table.check_train_entry`).

    Returns
    -------
    GoalsSpec
        The objective, goals, dataset files and training parameters.

    Raises
    ------
    GoalsFileError
        If the file is not valid TOML, has an unknown key or recipe, a
        parameter a recipe does not take, or a value the recipe refuses (the
        message names the file, line and key), or an entry of ``[train]``
        that ``check_train`` refuses.
    """
    text, path = _source(source)
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise GoalsFileError(f"{path or '<goals>'}: not valid TOML: {exc}") from None
    except RecursionError:  # tomllib parses nested arrays and inline tables recursively
        raise GoalsFileError(f"{path or '<goals>'}: not a goals file: arrays or inline tables nested too deeply "
                             "to read (a goals file nests a few levels)") from None

    def fail(msg, line=None, key=None):
        raise GoalsFileError(f"{_where(path, line, key)}: {msg}")

    for k in doc:
        if k not in _TOP_KEYS:
            fail(f"unknown key {k!r}; a goals file has {list(_TOP_KEYS)!r}", _line_of(text, key=k, table=None), k)
    spec = GoalsSpec(path=path)
    obj = doc.get("objective", "error")
    if not isinstance(obj, str) or (obj not in _goals.OBJECTIVES and obj not in _goals.MULTICLASS_OBJECTIVES):
        fail(f"must be one of {sorted(set(_goals.OBJECTIVES) | set(_goals.MULTICLASS_OBJECTIVES))}, got {obj!r}", _line_of(text, key="objective", table=None),
             "objective")
    spec.objective = obj
    if "regularization" in doc:
        reg = doc["regularization"]
        if isinstance(reg, bool) or not isinstance(reg, (int, float)) or not math.isfinite(reg) or reg < 0:
            fail(f"must be a non-negative number, got {reg!r}", _line_of(text, key="regularization", table=None),
                 "regularization")
        spec.regularization = float(reg)
    ds = doc.get("datasets", {})
    if not isinstance(ds, dict):
        fail("must be a table [datasets] of role = \"path\"", _line_of(text, key="datasets", table=None), "datasets")
    for role, p in ds.items():
        if not isinstance(p, str) or not p:
            fail(f"must be a file path (a string), got {p!r}", _line_of(text, key=role, table="datasets"),
                 f"datasets.{role}")
        if role == "train":
            fail("the training data is the file given on the command line, not a [datasets] entry",
                 _line_of(text, key=role, table="datasets"), "datasets.train")
    spec.datasets = dict(ds)
    tr = doc.get("train", {})
    if not isinstance(tr, dict):
        fail("must be a table [train] of parameters", _line_of(text, key="train", table=None), "train")
    for k, v in tr.items():
        if check_train is None:
            continue
        try:
            check_train(k, v)
        except (TypeError, ValueError) as exc:
            fail(str(exc), _line_of(text, key=k, table="train"), f"train.{k}")
    spec.train = dict(tr)
    entries = doc.get("goals", [])
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        fail("goals must be an array of tables: [[goals]] with recipe = \"...\"",
             _line_of(text, key="goals", table=None), "goals")
    for i, entry in enumerate(entries):
        head = _line_of(text, i)
        label = f"goals[{i}]"
        if "recipe" not in entry:
            fail("needs recipe = \"<name of rateopt.goals>\"", head, label)
        recipe = entry["recipe"]
        if recipe not in RECIPES:
            close = difflib.get_close_matches(str(recipe), list(RECIPES), n=1)
            fail(f"unknown goal {recipe!r}" + (f" (did you mean {close[0]!r}?)" if close else "")
                 + f"; known goals: {sorted(RECIPES)}", _line_of(text, i, "recipe"), f"{label}.recipe")
        cls = RECIPES[recipe]
        names = [f.name for f in dataclasses.fields(cls)]
        params = {}
        for k, v in entry.items():
            if k == "recipe":
                continue
            if k not in names:
                fail(f"{recipe} takes no parameter {k!r}; its parameters: {names}", _line_of(text, i, k),
                     f"{label}.{k}")
            params[k] = tuple(v) if isinstance(v, list) else v
        missing = [f.name for f in dataclasses.fields(cls)
                   if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
                   and f.name not in params]
        if missing:
            fail(f"{recipe} needs {', '.join(missing)}", head, label)
        try:
            spec.goals.append(cls(**params))
        except (TypeError, ValueError) as exc:
            fail(f"{recipe}: {exc}", head, label)
    return spec


# --------------------------------------------------------------------------- writing


def _value(v, where):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise RateoptError(f"{where}: {v!r} cannot be written to TOML")
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, (tuple, list)):
        return "[" + ", ".join(_value(x, where) for x in v) + "]"
    raise RateoptError(f"{where}: a {type(v).__name__} value ({v!r}) cannot be written to a goals file")


def write_goals(spec):
    """The TOML text of a :class:`GoalsSpec` (what :func:`read_goals` reads back).

    Parameters
    ----------
    spec : GoalsSpec
        What to write (goal parameters equal to their defaults are left out).

    Returns
    -------
    str
        The TOML text.
    """
    lines = ["# rateopt goals file (rateopt.goals recipes; see docs/cli.md)",
             f"objective = {_value(spec.objective, 'objective')}"]
    if spec.regularization is not None:
        lines.append(f"regularization = {_value(float(spec.regularization), 'regularization')}")
    if spec.datasets:
        lines += ["", "[datasets]"] + [f"{k} = {_value(v, 'datasets.' + k)}" for k, v in spec.datasets.items()]
    if spec.train:
        lines += ["", "[train]"] + [f"{k} = {_value(v, 'train.' + k)}" for k, v in spec.train.items()
                                    if v is not None]
    for i, g in enumerate(spec.goals):
        cls = type(g)
        if cls not in _NAME_OF:
            raise RateoptError(f"goal {g!r} is not a recipe of rateopt.goals and cannot be written to TOML")
        lines += ["", "[[goals]]", f"recipe = {_value(_NAME_OF[cls], 'recipe')}"]
        for f in dataclasses.fields(cls):
            v = getattr(g, f.name)
            has_default = f.default is not dataclasses.MISSING
            if has_default and v == f.default:
                continue
            if v is None:
                raise RateoptError(f"goals[{i}].{f.name}: None differs from the default {f.default!r} and "
                                   "TOML has no null")
            lines.append(f"{f.name} = {_value(v, f'goals[{i}].{f.name}')}")
    return "\n".join(lines) + "\n"
