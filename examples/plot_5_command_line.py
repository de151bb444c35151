"""
The command line
================

Write a CSV file and a goals file, train with ``rateopt fit`` and gate on fresh data with
``rateopt evaluate`` (exit status 1 when a goal is violated), as a nightly pipeline would; then plot
the per-group rates of the saved model from Python.
"""

import pathlib
import subprocess
import sys
import tempfile

import matplotlib.pyplot as plt
import numpy as np
import rateopt
from rateopt.plot import plot_group_rates


def write_csv(path, n, seed):
    """Write rows of :func:`rateopt.make_groups_dataset` as a CSV file."""
    X, y, group = rateopt.make_groups_dataset(n, random_state=seed)
    lines = ["x1,x2,x3,group,label"] + [
        f"{a:.6f},{b:.6f},{c:.6f},{g},{t}" for (a, b, c), g, t in zip(X, group, y)]
    path.write_text("\n".join(lines) + "\n")
    return X, y, group


work = pathlib.Path(tempfile.mkdtemp())
write_csv(work / "train.csv", 4000, 0)
X, y, group = write_csv(work / "holdout.csv", 4000, 1)
(work / "goals.toml").write_text('''objective = "error"

[[goals]]
recipe = "equal_opportunity"
group = "group"
slack = 0.05
sides = "lower"
''')
rateopt_cli = [sys.executable, "-m", "rateopt"]


def run(*args, allowed=(0,)):
    """Run ``rateopt ARGS``, print its output and return its exit status (an error raises)."""
    done = subprocess.run([*rateopt_cli, *args], check=False, cwd=work, capture_output=True, text=True)
    print("$ rateopt", " ".join(args), f"  # exit status {done.returncode}")
    print(done.stdout + done.stderr)
    if done.returncode not in allowed:
        raise RuntimeError(f"rateopt {args[0]} failed with exit status {done.returncode}")
    return done.returncode


run("fit", "train.csv", "--label", "label", "--groups", "group", "--goals", "goals.toml",
    "--out", "model.npz", "--quiet")
# exit status 1 would mean a goal is violated on the holdout file: the pipeline would stop here
status = run("evaluate", "model.npz", "holdout.csv", "--tolerance", "0.02", allowed=(0, 1))

# %%
# ``rateopt predict`` scores a file with the saved encoding; the per-group rates of its decisions:
run("predict", "model.npz", "holdout.csv", "--out", "scores.csv", "--proba")
scores = np.loadtxt(work / "scores.csv", delimiter=",", skiprows=1, usecols=-1)
fig = plot_group_rates(rateopt.group_rates(y, scores, {"group": group}), rate="tpr")
plt.show()
