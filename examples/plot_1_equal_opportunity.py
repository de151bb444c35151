"""
Equal opportunity on synthetic data
===================================

Train a linear classifier with and without an equal-opportunity goal (each group's true positive
rate at least the overall one minus 0.05) on the two-group data of
:func:`rateopt.make_groups_dataset`, and compare the per-group rates.
"""

import matplotlib.pyplot as plt
import rateopt
from rateopt.plot import plot_group_rates, plot_trajectory

X, y, group = rateopt.make_groups_dataset(5000)
goal = rateopt.goals.equal_opportunity("group", slack=0.05, sides="lower")

plain = rateopt.RateConstrainedClassifier(method="unconstrained").fit(X, y)
fair = rateopt.RateConstrainedClassifier(goals=[goal]).fit(X, y, groups={"group": group})

before = rateopt.group_rates(y, plain.predict_proba(X)[:, 1], {"group": group})
after = rateopt.group_rates(y, fair.predict_proba(X)[:, 1], {"group": group})
print(after)
fair.result_.summary()  # prints the chosen solution's per-constraint values

# %%
# The true positive rate of each group, before and after.
fig = plot_group_rates(after, before=before, rate="tpr", labels=("unconstrained", "equal opportunity"))
plt.show()

# %%
# The training trajectory: objective, constraint values and multipliers per recorded iterate.
fig = plot_trajectory(fair.result_)
plt.show()
