"""
The error-disparity trade-off
=============================

:func:`rateopt.sweep` trains the same problem at a series of slacks of one goal, each run
warm-started at the previous one's model, and :func:`rateopt.plot.plot_tradeoff` draws the error
against the disparity.
"""

import matplotlib.pyplot as plt
import rateopt
from rateopt.plot import plot_tradeoff

X, y, group = rateopt.make_groups_dataset(5000)
data = rateopt.Dataset(X, y, groups={"group": group})
eo = rateopt.goals.equal_opportunity("group", slack=0.05, sides="lower")
problem = rateopt.Problem(constraints=[eo], datasets=data)

sweep = rateopt.sweep(problem, eo, [0.2, 0.1, 0.05, 0.02, 0.01], n_iter=300, learning_rate=0.05,
                      eta_lambda=0.5)
for slack, disparity, objective in zip([0.2, 0.1, 0.05, 0.02, 0.01], sweep.disparity, sweep.objective):
    print(f"slack {slack:<5} disparity {disparity:.3f} error {objective:.3f}")

# %%
fig = plot_tradeoff(sweep)
plt.show()

# %%
# The sweep's problem as a goals file, which :meth:`rateopt.Problem.from_toml` (and the command
# line) read back.
print(problem.to_toml())
