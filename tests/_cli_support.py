"""What the command-line tests share: small data files and the one-line error check."""

import csv

import numpy as np


def cli_data(n=400, seed=0, k=2, groups=("A", "B")):
    """Columns of a small data file: two features, a group column (two groups: 40% the first), a label (two or
    three classes)."""
    rng = np.random.default_rng(seed)
    g = (np.where(rng.random(n) < 0.4, groups[0], groups[1]) if len(groups) == 2
         else np.asarray(groups)[rng.integers(0, len(groups), n)])
    Z = rng.normal(size=(n, 2)) + (g == groups[0])[:, None] * 0.5
    if k == 2:
        label = np.where(Z[:, 0] + rng.normal(scale=0.8, size=n) > 0.3, "yes", "no")
    else:
        label = np.array(["low", "mid", "high"])[np.digitize(Z[:, 0] + rng.normal(scale=0.7, size=n), [-0.3, 1.0])]
    return {"x1": Z[:, 0], "x2": Z[:, 1], "group": g, "label": label}


def rows_where(cols, keep):
    """The columns of the rows ``keep`` (a boolean mask)."""
    return {c: np.asarray(v)[keep] for c, v in cols.items()}


def one_line_error(capsys):
    """The command's one error line on standard error (``rateopt: error: ...``), checked to be the only line."""
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rateopt: error:") and "Traceback" not in err, err
    return lines[0]


def read_csv_column(path, name):
    """A column of a CSV file, read with the standard library."""
    with open(path, newline="", encoding="utf-8") as f:
        return [row[name] for row in csv.DictReader(f)]
