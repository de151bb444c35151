"""Reports: the numbers come from the training result and the evaluations; the HTML is one self-contained file."""

import json
import re

import numpy as np
import pytest

import rateopt
from rateopt.report import build_report, render, write_report


@pytest.fixture(scope="module")
def trained():
    X, y, g = rateopt.make_groups_dataset(1500, random_state=2)
    ds = rateopt.Dataset(X, y, groups={"group": g})
    eo = rateopt.goals.equal_opportunity("group", slack=0.05, sides="lower")
    problem = rateopt.Problem(constraints=[eo], datasets=ds)
    result = rateopt.train(problem, n_iter=200, learning_rate=0.05, eta_lambda=0.5, random_state=0)
    Xt, yt, gt = rateopt.make_groups_dataset(800, random_state=3)
    test = rateopt.Problem(constraints=[eo], datasets=rateopt.Dataset(Xt, yt, groups={"group": gt}))
    return result, problem, test, (X, y, g), (Xt, yt, gt)


def test_report_values_come_from_the_result_and_the_evaluations(trained):
    result, problem, test, (X, y, g), (Xt, yt, gt) = trained
    clf = result.solution("m-stochastic")
    ev_test = test.evaluate(clf.predict_proba(Xt)[:, 1], kind="probabilities")
    groups = {"test": rateopt.group_rates(yt, clf.predict_proba(Xt)[:, 1], {"group": gt}, as_frame=False)}
    rep = build_report(result, evaluations={"test": ev_test}, group_rates=groups, seconds=1.5, seed=7)
    obj, gvals = result.solution_values("m-stochastic")
    assert list(rep["objective"]) == ["train", "test"]
    assert rep["objective"]["train"] == pytest.approx(obj) and rep["objective"]["test"] == pytest.approx(ev_test.objective)
    for i, goal in enumerate(rep["goals"]):
        assert goal["name"] == result.constraint_names[i]
        assert goal["values"]["train"] == pytest.approx(gvals[i])
        assert goal["values"]["test"] == pytest.approx(ev_test.constraints[goal["name"]])
        assert goal["met"] == {s: v <= 1e-9 for s, v in goal["values"].items()}
    assert rep["all_met"] == all(all(g["met"].values()) for g in rep["goals"])
    q = result.mixture("m-stochastic")
    assert [s["probability"] for s in rep["solution"]["support"]] == pytest.approx(q[q > 0].tolist())
    assert [s["iteration"] for s in rep["solution"]["support"]] == result.iterations[q > 0].tolist()
    assert rep["seed"] == 7 and rep["training_seconds"] == 1.5 and rep["versions"]["rateopt"] == rateopt.__version__
    assert rep["group_rates"]["test"]["tpr"] == pytest.approx(groups["test"]["tpr"].tolist())


def test_json_markdown_and_html(trained, tmp_path):
    result, *_ = trained
    rep = build_report(result, context={"goals_toml": "[[goals]]\nrecipe = \"x\"\n"})
    write_report(rep, tmp_path / "r.json")
    assert json.loads((tmp_path / "r.json").read_text())["goals"] == rep["goals"]
    md = render(rep, "markdown")
    for goal in rep["goals"]:
        assert goal["name"] in md
    assert "```toml" in md
    html = render(rep, "html")
    assert html.startswith("<!DOCTYPE html>") and "</html>" in html
    # Self-contained: no external resource is referenced.
    assert not re.search(r"(src|href)=['\"](?!data:)", html)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return
    assert html.count("data:image/png;base64,") >= 1


def test_unknown_report_suffix_is_refused(trained, tmp_path):
    result, *_ = trained
    with pytest.raises(rateopt.exceptions.RateoptError, match="report file ends with"):
        write_report(build_report(result), tmp_path / "r.pdf")
