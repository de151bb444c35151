"""Build the committed Adult examples: ``docs/report_adult.html`` and ``docs/tradeoff_adult.png``.

The report is what ``rateopt fit ... --report`` writes for UCI Adult (from
``rateopt.datasets.load_adult()``, exported to CSV files by ``rateopt datasets
export`` with the categorical columns as text, so the command line one-hot
encodes them itself), under
equal opportunity between the sexes, with ``--sweep`` (``rateopt.sweep``
over the goal's slack, warm-started) and ``--compare-unconstrained``; the
trade-off plot is drawn from that sweep. Run from
the repository root (needs the ``datasets`` and ``plot`` extras)::

    python docs/cli_adult.py
"""

import json
import os
import sys
import tempfile

from rateopt.cli import main
from rateopt.plot import _unmanaged, plot_tradeoff, to_png

HERE = os.path.dirname(os.path.abspath(__file__))
GOALS = """# UCI Adult, income > 50K: equal opportunity between the sexes.
objective = "error"

[datasets]
validation = "adult_valid.csv"
test = "adult_test.csv"

[train]
n_iter = 1500
learning_rate = 0.05
eta_lambda = 0.5

[[goals]]
recipe = "equal_opportunity"
group = "sex"
slack = 0.05
sides = "lower"
"""
SLACKS = [0.2, 0.1, 0.05, 0.02, 0.01, 0.0]


def tradeoff(report):
    """The trade-off plot from the sweep ``fit --sweep`` ran, with the unconstrained model as an anchor."""
    sw = report["context"]["sweep"]
    before = report["group_rates_before"]["train"]
    rows = {(g, v): i for i, (g, v) in enumerate(zip(before["group"], before["value"]))}
    tpr_all = before["tpr"][rows[("all", "all")]]
    gap = max(tpr_all - before["tpr"][i] for (g, _), i in rows.items() if g == "sex")
    anchors = {"unconstrained": (gap, before["error"][rows[("all", "all")]])}
    with _unmanaged():  # a script: no pyplot figure to show or close
        fig = plot_tradeoff(sw, anchors=anchors, xlabel="largest TPR shortfall of a sex vs all (training)",
                            ylabel="training error")
    fig.axes[0].set_title("UCI Adult: error vs equal-opportunity gap (rateopt fit --sweep)")
    with open(os.path.join(HERE, "tradeoff_adult.png"), "wb") as f:
        f.write(to_png(fig))
    points = dict(sw, anchors=anchors, training_seconds_of_the_chosen_run=report["training_seconds"])
    with open(os.path.join(HERE, "tradeoff_adult.json"), "w") as f:
        json.dump(points, f, indent=1)
    return points


def main_():
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)  # the report names the files as given: adult_train.csv, not a temporary path
        try:
            return _fit_and_plot(tmp)
        finally:
            os.chdir(here)


def _fit_and_plot(tmp):
    for name, split in (("adult_train.csv", "train"), ("adult_valid.csv", "validation"), ("adult_test.csv", "test")):
        status = main(["--quiet", "datasets", "export", "adult", name, "--split", split, "--seed", "0"])
        if status:
            return status
    with open(os.path.join(tmp, "adult_goals.toml"), "w") as f:
        f.write(GOALS)
    status = main(["--quiet", "fit", "adult_train.csv", "--label", "label", "--groups", "sex,race,age_group",
                   "--drop", "age_group", "--goals", "adult_goals.toml", "--out", "adult.npz", "--report",
                   os.path.join(HERE, "report_adult.html"), "--compare-unconstrained", "--seed", "0",
                   "--sweep", ",".join(map(str, SLACKS))])
    if status:
        return status
    with open(os.path.join(tmp, "adult.rateopt.json")) as f:
        report = json.load(f)["report"]
    points = tradeoff(report)
    print(json.dumps({k: points[k] for k in ("values", "objective", "disparity", "anchors")}))
    return 0


if __name__ == "__main__":
    sys.exit(main_())
