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


@pytest.fixture(scope="module")
def trained_k():
    rng = np.random.default_rng(4)
    n = 400
    g = rng.choice(["a", "b"], n)
    X = rng.normal(size=(n, 3)) + (g == "a")[:, None] * 0.5
    y = np.digitize(X[:, 0] + rng.normal(scale=0.8, size=n), [-0.4, 0.8])
    ds = rateopt.ClassDataset(X, y, groups={"g": g})
    problem = rateopt.Problem(constraints=[rateopt.goals.multiclass_demographic_parity("g", slack=0.05)], datasets=ds)
    result = rateopt.train(problem, n_iter=60, learning_rate=0.1)
    return result, problem, (X, y, g)


def test_one_builder_for_k_classes(trained_k):
    """A K-class report: values from the evaluation, the support from the mixture, the K-class group table as given."""
    result, problem, (X, y, g) = trained_k
    clf = result.solution("m-stochastic")
    P = clf.predict_proba(X)
    ev = problem.evaluate(P)
    table = rateopt.group_rates(y, P, {"g": g}, classes=[0, 1, 2], as_frame=False)
    rep = build_report(result, evaluations={"train": ev}, group_rates={"train": table}, seed=3,
                       context={"classes": [0, 1, 2]})
    assert rep["classes"] == [0, 1, 2] and list(rep["objective"]) == ["train"]
    # the objective is the error of the expected decisions, counted here
    assert rep["objective"]["train"] == pytest.approx(1 - P[np.arange(len(y)), y].mean(), abs=1e-12)
    assert [x["name"] for x in rep["goals"]] == list(ev.constraints)
    for x in rep["goals"]:
        assert x["values"]["train"] == pytest.approx(ev.constraints[x["name"]], abs=1e-12)
    q = result.mixture_weights("m-stochastic") if not hasattr(result, "mixture") else result.mixture("m-stochastic")
    assert [s["probability"] for s in rep["solution"]["support"]] == pytest.approx(q[q > 0].tolist())
    assert rep["group_rates"]["train"]["recall[1]"] == pytest.approx(table["recall[1]"].tolist())
    md = render(rep, "markdown")
    assert "Per-group rates (train)" in md and "proportion[2]" in md and "recall[0]" in md
    html = render(rep, "html")
    assert "recall[2]" in html


def test_build_multiclass_report_is_a_deprecated_alias(trained_k):
    from rateopt.report import build_multiclass_report

    result, problem, (X, y, g) = trained_k
    P = result.solution("m-stochastic").predict_proba(X)
    table = rateopt.group_rates(y, P, {"g": g}, classes=[0, 1, 2], as_frame=False)
    with pytest.warns(DeprecationWarning, match="build_report"):
        old = build_multiclass_report(result, evaluations={"train": problem.evaluate(P)}, class_rates={"train": table})
    new = build_report(result, evaluations={"train": problem.evaluate(P)}, group_rates={"train": table})
    for key in ("goals", "objective", "solution", "group_rates", "trajectory"):
        assert old[key] == new[key]


# --------------------------------------------------------------------------- the figures of the constrained rates


@pytest.fixture(scope="module")
def odds_report():
    """Equalized odds (TPR and FPR), a coverage budget (PPR) and a precision floor, with train and test tables and
    an unconstrained comparison."""
    X, y, g = rateopt.make_groups_dataset(1200, random_state=5)
    Xt, yt, gt = rateopt.make_groups_dataset(700, random_state=6)
    ds = rateopt.Dataset(X, y, groups={"group": g})
    goals = [rateopt.goals.equalized_odds("group", slack=0.1), rateopt.goals.coverage_budget(0.6),
             rateopt.goals.precision_floor(0.3)]
    problem = rateopt.Problem(constraints=goals, datasets=ds)
    result = rateopt.train(problem, n_iter=400, learning_rate=0.05, eta_lambda=0.5, random_state=0)
    test = rateopt.Problem(constraints=goals, datasets=rateopt.Dataset(Xt, yt, groups={"group": gt}))
    clf, base = result.solution("m-stochastic"), result.solution("last")
    p, pt = clf.predict_proba(X)[:, 1], clf.predict_proba(Xt)[:, 1]
    q, qt = base.predict_proba(X)[:, 1], base.predict_proba(Xt)[:, 1]
    tables = {"train": rateopt.group_rates(y, p, {"group": g}, as_frame=False),
              "test": rateopt.group_rates(yt, pt, {"group": gt}, as_frame=False)}
    before = {"train": rateopt.group_rates(y, q, {"group": g}, as_frame=False),
              "test": rateopt.group_rates(yt, qt, {"group": gt}, as_frame=False)}
    rep = build_report(result, evaluations={"test": test.evaluate(pt, kind="probabilities")}, group_rates=tables,
                       group_rates_before=before, comparison="unconstrained model")
    data = {"train": (y, p, q, g), "test": (yt, pt, qt, gt)}
    return rep, data


def _reference_rate(rate, y, p, mask):
    """A rate of expected decisions ``p`` on the rows ``mask``, counted directly."""
    y, p = y[mask], p[mask]
    return {"tpr": p[y == 1].mean(), "fpr": p[y == 0].mean(), "ppr": p.mean(),
            "precision": (p * y).sum() / p.sum()}[rate]


def test_constrained_rates_are_every_rate_the_goals_name(odds_report):
    from rateopt.report import constrained_rates

    rep, _ = odds_report
    assert constrained_rates(rep) == (["tpr", "fpr", "ppr", "precision"], [])
    churn = {"name": "churn[group=a[1]] <= 0.1", "values": {s: -0.1 for s in rep["objective"]},
             "met": {s: True for s in rep["objective"]}}
    shown = dict(rep, goals=rep["goals"] + [churn])
    assert constrained_rates(shown) == (["tpr", "fpr", "ppr", "precision"], ["churn"])  # a value's "[" is no rate
    assert "Constrained rates not plotted (the per-group tables do not give them): churn." in render(shown, "html")
    bare = dict(rep, group_rates={}, group_rates_before=None)
    assert constrained_rates(bare) == ([], ["tpr", "fpr", "ppr", "precision"])
    assert "(the report has no per-group table): tpr, fpr, ppr, precision." in render(bare, "html")


def test_every_constrained_rate_is_plotted_on_every_split_with_the_comparison(odds_report, monkeypatch):
    """The bars are the rates of the decisions on each split (counted here), the comparison's bars its own."""
    import rateopt.report as report_module

    rep, data = odds_report
    calls = []
    real = report_module.plot.plot_group_rates

    def spy(after, *, before=None, rate, labels, split):
        calls.append((rate, split, after, before, labels))
        return real(after, before=before, rate=rate, labels=labels, split=split)

    monkeypatch.setattr(report_module.plot, "plot_group_rates", spy)
    html = render(rep, "html")
    assert [(c[0], c[1]) for c in calls] == [(r, s) for r in ("tpr", "fpr", "ppr", "precision")
                                             for s in ("train", "test")]
    for rate, split, after, before, labels in calls:
        y, p, q, g = data[split]
        masks = [np.ones(len(y), bool)] + [g == v for v in after["value"][1:]]
        assert after["value"][1:] == sorted(set(g.tolist()))
        np.testing.assert_allclose(after[rate], [_reference_rate(rate, y, p, m) for m in masks], rtol=1e-12)
        np.testing.assert_allclose(before[rate], [_reference_rate(rate, y, q, m) for m in masks], rtol=1e-12)
        assert labels == ("unconstrained model", "rateopt (with the goals)")
        assert f"alt='{rate} per group ({split} data)'" in html
    assert html.count("<figure>") == 8 and "it is not held to the goals" in html


def test_figure_captions_judge_with_the_tolerance_rule(odds_report):
    rep, _ = odds_report
    rep = json.loads(json.dumps(rep))
    fpr_goal = next(i for i, g in enumerate(rep["goals"]) if g["name"].startswith("fpr"))
    for value, tolerance, verdict in ((0.004, 0.01, ": met"), (0.004, 1e-9, ": NOT met")):
        for g in rep["goals"]:  # every other constraint comfortably met
            g["values"]["test"] = -0.5
        rep["goals"][fpr_goal]["values"]["test"] = value
        rep["tolerance"] = tolerance
        html = render(rep, "html")
        captions = re.findall(r"<figcaption class='(\w*)'>test: ([^<]*) on fpr;([^<]*)</figcaption>", html)
        assert len(captions) == 1
        cls, _, text = captions[0]
        assert f"largest value on the test data {value:+.4g}{verdict}" in text
        assert f"met when its value is &lt;= {tolerance:g}" in text and cls == ("ok" if verdict == ": met" else "bad")


def test_reports_leave_no_pyplot_figure_open(odds_report):
    plt = pytest.importorskip("matplotlib.pyplot")
    rep, _ = odds_report
    plt.close("all")
    for _ in range(3):
        assert "data:image/png;base64," in render(rep, "html")
    assert plt.get_fignums() == []


def test_k_class_reports_plot_the_class_rates(trained_k):
    pytest.importorskip("matplotlib")
    result, problem, (X, y, g) = trained_k
    P = result.solution("m-stochastic").predict_proba(X)
    table = rateopt.group_rates(y, P, {"g": g}, classes=[0, 1, 2], as_frame=False)
    rep = build_report(result, evaluations={"train": problem.evaluate(P)}, group_rates={"train": table})
    from rateopt.report import constrained_rates

    assert constrained_rates(rep) == (["ppr(0)", "ppr(1)", "ppr(2)"], [])
    html = render(rep, "html")
    assert [f"alt='ppr({c}) per group (train data)'" in html for c in range(3)] == [True] * 3
