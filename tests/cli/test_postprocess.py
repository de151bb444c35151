"""``rateopt fit --postprocess`` and ``--positive`` (issue 32 item 11): a warning when the positive class that
``--positive`` chooses is the one the score column ranks lower, or when ``--positive`` is ignored."""

import numpy as np
import pytest
from _cli_support import cli_data
from _csv_files import write_csv

from rateopt.cli import main
from rateopt.cli._postprocess import ranking_auc

DP = 'objective = "error"\n\n[[goals]]\nrecipe = "demographic_parity"\ngroup = "group"\nslack = 0.05\n'


def _pairwise_auc(s, y, w):
    """The brute-force reference: over every (positive, negative) pair, weight of s_pos > s_neg plus half of ties."""
    num = den = 0.0
    for i in np.flatnonzero(y == 1):
        for j in np.flatnonzero(y == 0):
            num += w[i] * w[j] * (1.0 if s[i] > s[j] else 0.5 if s[i] == s[j] else 0.0)
            den += w[i] * w[j]
    return num / den


def test_ranking_auc_against_the_pairwise_count():
    rng = np.random.default_rng(0)
    for _ in range(30):
        n = int(rng.integers(2, 40))
        s = rng.integers(0, 6, n).astype(float)  # many ties
        y = rng.integers(0, 2, n)
        w = rng.random(n) * (rng.random(n) > 0.2)
        if not (w[y == 1].sum() > 0 and w[y == 0].sum() > 0):
            assert np.isnan(ranking_auc(s, y, w))
            continue
        assert ranking_auc(s, y, w) == pytest.approx(_pairwise_auc(s, y, w), abs=1e-12)
        assert ranking_auc(s, y) == pytest.approx(_pairwise_auc(s, y, np.ones(n)), abs=1e-12)


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    d = tmp_path_factory.mktemp("scored")
    cols = cli_data(400, seed=1)
    cols["score"] = cols["x1"] + np.random.default_rng(1).normal(scale=0.5, size=400)  # scores "yes"
    cols["negated"] = -cols["score"]
    write_csv(d / "train.csv", cols)
    (d / "dp.toml").write_text(DP)
    return d, cols


def _fit_rule(d, capsys, column, *extra):
    capsys.readouterr()
    argv = ["--quiet", "fit", str(d / "train.csv"), "--label", "label", "--groups", "group", "--goals",
            str(d / "dp.toml"), "--out", str(d / "rule.npz"), "--postprocess", column, *extra]
    assert main(argv) == 0
    return [line for line in capsys.readouterr().err.splitlines() if "--positive" in line]


def test_positive_that_reverses_the_score_direction_is_warned_about(scored, capsys):
    d, cols = scored
    y_no = (cols["label"] == "no").astype(int)
    auc = _pairwise_auc(cols["score"], y_no, np.ones(len(y_no)))
    assert auc < 0.5  # the column scores "yes": it ranks "no" lower
    warned = _fit_rule(d, capsys, "score", "--positive", "no")
    assert warned == [f"rateopt: warning: --positive 'no': the score column 'score' ranks that class lower (ROC AUC "
                      f"{auc:.3f} < 0.5), but the rule takes a higher score as more likely positive; if 'score' "
                      "scores 'yes' (e.g. its probability), give the column negated (1 - p, or -score), or leave "
                      "--positive out"]


@pytest.mark.parametrize("column, positive", [("score", "yes"), ("negated", "no"), ("score", None)])
def test_positive_that_agrees_with_the_score_direction_is_not_warned_about(scored, capsys, column, positive):
    d, _ = scored
    assert _fit_rule(d, capsys, column, *(["--positive", positive] if positive else [])) == []


def test_positive_beside_a_base_model_is_warned_to_be_ignored(scored, capsys, tmp_path):
    d, _ = scored
    (tmp_path / "base.toml").write_text('objective = "error"\n\n[train]\nn_iter = 10\n')
    assert main(["--quiet", "fit", str(d / "train.csv"), "--label", "label", "--groups", "group", "--drop",
                 "score,negated", "--goals", str(tmp_path / "base.toml"), "--out", str(tmp_path / "base.npz")]) == 0
    base = str(tmp_path / "base.npz")
    assert _fit_rule(d, capsys, base, "--positive", "no") == [
        f"rateopt: warning: --positive 'no' is ignored: the rule reads the scores of {base}, whose positive class is "
        f"'yes' (a higher score, more likely 'yes'); leave --positive out, or refit {base} with it"]
    assert _fit_rule(d, capsys, base, "--positive", "yes") == []
