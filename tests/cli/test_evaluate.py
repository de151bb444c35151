"""``rateopt evaluate``'s NOT EVALUABLE rule, on every model kind, as docs/cli.md states it (issue 32 items 8, 16).

A goal that needs a group the batch lacks, or whose rates are empty or constant on the batch, is listed as
``NOT EVALUABLE`` with the reason, warned about on standard error, recorded under ``not_evaluable`` in
``--json``, and the exit status gates on the other goals. The expected reasons are computed here from the
data files (the groups of the training file that the batch lacks, the class the batch lacks).
"""

import json
import pathlib
import re

import numpy as np
import pytest
from _cli_support import cli_data, one_line_error, read_csv_column, rows_where
from _csv_files import write_csv

from rateopt.cli import main

ROOT = pathlib.Path(__file__).resolve().parents[2]

DP = 'objective = "error"\n\n[[goals]]\nrecipe = "demographic_parity"\ngroup = "group"\nslack = 0.05\n'
COVER = '\n[[goals]]\nrecipe = "coverage_budget"\nmax_rate = {rate}\n'
K_EO = ('objective = "error"\n\n[train]\nn_iter = 30\n\n[[goals]]\nrecipe = "multiclass_equal_opportunity"\n'
        'group = "group"\nslack = 0.2\n')


def _evaluate(tmp_path, model, batch, capsys, *extra):
    """``(status, stdout, stderr, --json payload)`` of ``rateopt evaluate``."""
    capsys.readouterr()
    status = main(["evaluate", str(model), str(batch), "--json", str(tmp_path / "ev.json"), *extra])
    out, err = capsys.readouterr()
    return status, out, err, json.loads((tmp_path / "ev.json").read_text())


def _missing_group_reason(train_cols, batch_cols):
    """The documented reason, from the two files' group columns: the training groups the batch lacks."""
    lacking = sorted(set(train_cols["group"].tolist()) - set(batch_cols["group"].tolist()))
    return f"no rows of group group = {', '.join(map(repr, lacking))} (present in the training data)"


def _check_not_evaluable(status, out, err, payload, batch, goal, recipe, reason):
    """The four documented effects of a goal that is not evaluable."""
    line = next(s for s in out.splitlines() if s.startswith(f"goals[{goal}]"))
    assert line.split()[:3] == [f"goals[{goal}]", f"({recipe})", "-"] and line.endswith(f"NOT EVALUABLE: {reason}")
    assert f"rateopt: warning: goals[{goal}] ({recipe}) is not evaluable on {batch}: {reason}" in err.splitlines()
    assert {"goal": goal, "recipe": recipe, "reason": reason} in payload["not_evaluable"]
    assert status != 2 and "rateopt: error" not in err


# --------------------------------------------------------------------------- item 8: a --postprocess rule


@pytest.fixture(scope="module", params=["score column", "base model"])
def rule(request, tmp_path_factory):
    """A rule fitted on three groups A, B, C (on a score column, or on the scores of a saved model), and a
    batch without group C."""
    d = tmp_path_factory.mktemp("rule")
    cols = cli_data(600, seed=2, groups=("A", "B", "C"))
    cols["score"] = cols["x1"] + np.random.default_rng(2).normal(scale=0.5, size=600)
    write_csv(d / "train.csv", cols)
    batch = rows_where(cols, cols["group"] != "C")
    write_csv(d / "no_c.csv", batch)
    for rate in (0.9, 0.0):  # the coverage goal is met / violated on the batch
        (d / f"goals_{rate}.toml").write_text(DP + COVER.format(rate=rate))
    source = "score"
    if request.param == "base model":
        (d / "base.toml").write_text('objective = "error"\n\n[train]\nn_iter = 20\n')
        assert main(["--quiet", "fit", str(d / "train.csv"), "--label", "label", "--groups", "group", "--drop",
                     "score", "--goals", str(d / "base.toml"), "--out", str(d / "base.npz")]) == 0
        source = str(d / "base.npz")
    assert main(["--quiet", "fit", str(d / "train.csv"), "--label", "label", "--groups", "group", "--goals",
                 str(d / "goals_0.9.toml"), "--out", str(d / "rule.npz"), "--postprocess", source]) == 0
    return d, cols, batch


@pytest.mark.parametrize("rate", [0.9, 0.0])
def test_a_rule_on_a_batch_missing_a_fitted_group_reports_the_goal_not_evaluable(rule, tmp_path, capsys, rate):
    d, cols, batch = rule
    goals = [] if rate == 0.9 else ["--goals", str(d / f"goals_{rate}.toml")]  # its own goals, or stricter ones
    status, out, err, payload = _evaluate(tmp_path, d / "rule.npz", d / "no_c.csv", capsys, *goals)
    _check_not_evaluable(status, out, err, payload, d / "no_c.csv", 0, "demographic_parity",
                         _missing_group_reason(cols, batch))
    # the other goal gates: its value is the batch's mean probability of a positive decision (predict's column)
    assert main(["--quiet", "predict", str(d / "rule.npz"), str(d / "no_c.csv"), "--out",
                 str(tmp_path / "p.csv"), "--proba"]) == 0
    p = np.array(read_csv_column(tmp_path / "p.csv", "proba"), dtype=float)
    (name, value), = payload["constraints"].items()
    assert value == pytest.approx(p.mean() - rate, abs=1e-12)
    assert status == (1 if p.mean() - rate > 1e-9 else 0) and (rate == 0.9) == (status == 0)
    assert payload["passed"] == (status == 0)


def test_a_rule_on_a_batch_with_every_fitted_group_gates_on_every_goal(rule, tmp_path, capsys):
    d, cols, _ = rule
    status, out, err, payload = _evaluate(tmp_path, d / "rule.npz", d / "train.csv", capsys)
    assert payload["not_evaluable"] == [] and "NOT EVALUABLE" not in out and status == 0
    assert len(payload["constraints"]) == 6 + 1  # two sides of parity for each of 3 groups, and coverage


# --------------------------------------------------------------------------- item 8: K classes


@pytest.fixture(scope="module")
def k_model(tmp_path_factory):
    d = tmp_path_factory.mktemp("k")
    cols = cli_data(600, seed=3, k=3)
    write_csv(d / "train.csv", cols)
    (d / "goals.toml").write_text(K_EO)
    assert main(["--quiet", "fit", str(d / "train.csv"), "--label", "label", "--groups", "group", "--goals",
                 str(d / "goals.toml"), "--out", str(d / "m.npz")]) == 0
    return d, cols


def test_k_classes_on_a_batch_missing_a_group_report_the_goal_not_evaluable(k_model, tmp_path, capsys):
    d, cols = k_model
    batch = rows_where(cols, cols["group"] == "A")
    write_csv(tmp_path / "only_a.csv", batch)
    status, out, err, payload = _evaluate(tmp_path, d / "m.npz", tmp_path / "only_a.csv", capsys)
    _check_not_evaluable(status, out, err, payload, tmp_path / "only_a.csv", 0, "multiclass_equal_opportunity",
                         _missing_group_reason(cols, batch))
    assert status == 0 and payload["constraints"] == {}


def test_k_classes_on_a_batch_missing_a_class_report_the_goal_not_evaluable(k_model, tmp_path, capsys):
    d, cols = k_model
    batch = rows_where(cols, cols["label"] != "mid")
    write_csv(tmp_path / "no_mid.csv", batch)
    status, out, err, payload = _evaluate(tmp_path, d / "m.npz", tmp_path / "no_mid.csv", capsys)
    (entry,) = payload["not_evaluable"]
    # the recall of the class the batch lacks is a rate on an empty subset
    assert re.fullmatch(r"rate recall\('mid'\)\[group=[AB]\] is measured on a subset of zero weight", entry["reason"])
    _check_not_evaluable(status, out, err, payload, tmp_path / "no_mid.csv", 0, "multiclass_equal_opportunity",
                         entry["reason"])
    assert status == 0


# --------------------------------------------------------------------------- item 8: the goals file's name


def test_messages_name_the_goals_file_the_model_was_fitted_with(tmp_path, capsys):
    cols = cli_data(300, seed=4)
    write_csv(tmp_path / "train.csv", cols)
    (tmp_path / "fair.toml").write_text(DP)
    assert main(["--quiet", "fit", str(tmp_path / "train.csv"), "--label", "label", "--groups", "group", "--goals",
                 str(tmp_path / "fair.toml"), "--out", str(tmp_path / "m.npz"), "--n-iter", "10"]) == 0
    sidecar = tmp_path / "m.rateopt.json"
    meta = json.loads(sidecar.read_text())
    assert meta["goals_file"] == "fair.toml"
    # the recorded goals edited into a K-class goal (the hashes tie the model files, not this text)
    meta["goals_toml"] = K_EO
    sidecar.write_text(json.dumps(meta))
    capsys.readouterr()
    assert main(["evaluate", str(tmp_path / "m.npz"), str(tmp_path / "train.csv")]) == 2
    line = one_line_error(capsys)
    assert line.startswith(f"rateopt: error: {tmp_path / 'fair.toml'}: goals[0] (MulticlassEqualOpportunity) is a "
                           "K-class goal"), line
    # an encoding file written before the name was recorded says where the goals come from
    del meta["goals_file"]
    sidecar.write_text(json.dumps(meta))
    assert main(["evaluate", str(tmp_path / "m.npz"), str(tmp_path / "train.csv")]) == 2
    line = one_line_error(capsys)
    assert "goals.toml" not in line and "(the goals recorded in the model's encoding file)" in line


# --------------------------------------------------------------------------- item 16: docs/cli.md's rule


def _doc():
    return " ".join((ROOT / "docs" / "cli.md").read_text(encoding="utf-8").split())


def test_docs_state_the_not_evaluable_rule():
    doc = _doc()
    assert ("`evaluate` on data that lack a group a goal was trained on (a batch with no rows of `group = \"B\"`), "
            "or on which a goal's rates are empty or no longer depend on the decisions, lists that goal as "
            "`NOT EVALUABLE` with the reason, warns on standard error, records it under `not_evaluable` in "
            "`--json`, and gates on the other goals (it is not a bad-input error).") in doc


@pytest.fixture(scope="module")
def two_model(tmp_path_factory):
    d = tmp_path_factory.mktemp("two")
    cols = cli_data(500, seed=5)
    write_csv(d / "train.csv", cols)
    (d / "goals.toml").write_text(DP + '\n[[goals]]\nrecipe = "equal_opportunity"\ngroup = "group"\nslack = 0.1\n'
                                  '\n[[goals]]\nrecipe = "demographic_parity"\ngroup = "group"\nvalues = ["A"]\n'
                                  'slack = 0.05\n')
    assert main(["--quiet", "fit", str(d / "train.csv"), "--label", "label", "--groups", "group", "--goals",
                 str(d / "goals.toml"), "--out", str(d / "m.npz"), "--n-iter", "20"]) == 0
    return d, cols


@pytest.mark.parametrize("cause", ["lacks a group", "empty rates", "constant"])
@pytest.mark.parametrize("other", ["met", "violated"])
def test_each_documented_cause_is_not_evaluable_and_the_exit_status_gates_on_the_other_goals(
        two_model, tmp_path, capsys, cause, other):
    """Each cause docs/cli.md lists, on a trained two-class model, against what the batch holds."""
    d, cols = two_model
    if cause == "lacks a group":  # no rows of B: every goal on the group column needs it, except values=["A"]
        batch = rows_where(cols, cols["group"] == "A")
        expect = {0: _missing_group_reason(cols, batch), 1: _missing_group_reason(cols, batch)}
    elif cause == "empty rates":  # no positive rows: the true-positive rates of equal opportunity are empty
        batch = rows_where(cols, cols["label"] == "no")
        expect = {1: None}
    else:  # only group A: parity of A against all rows (values=["A"]) no longer depends on the decisions
        batch = rows_where(cols, cols["group"] == "A")
        expect = {2: None}
    write_csv(tmp_path / "batch.csv", batch)
    goals = (d / "goals.toml").read_text() + COVER.format(rate=1.0 if other == "met" else 0.0)
    (tmp_path / "g.toml").write_text(goals)
    status, out, err, payload = _evaluate(tmp_path, d / "m.npz", tmp_path / "batch.csv", capsys, "--goals",
                                          str(tmp_path / "g.toml"))
    listed = {e["goal"]: e for e in payload["not_evaluable"]}
    assert set(expect) <= set(listed)
    for goal, reason in expect.items():
        reason = reason or listed[goal]["reason"]
        if cause == "empty rates":
            assert "zero weight" in reason or "empty" in reason, reason
        if cause == "constant":
            assert "does not depend on the model's decisions" in reason, reason
        _check_not_evaluable(status, out, err, payload, tmp_path / "batch.csv", goal, listed[goal]["recipe"], reason)
    # the coverage goal (the last) is evaluated: max_rate 1 is met by any model, max_rate 0 violated by this one
    cover = [n for n in payload["constraints"] if n not in ()][-1]
    assert payload["constraints"][cover] <= 0 if other == "met" else payload["constraints"][cover] > 0
    assert status == (0 if other == "met" else 1)
