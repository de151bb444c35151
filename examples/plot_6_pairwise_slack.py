"""
Slack against the whole data, or between groups
===============================================
``equalized_odds("group", slack=0.05)`` bounds each group's true- and false-positive rates within
0.05 of the rates on the whole data; the gap *between* two groups can then exceed 0.05.
``pairwise=True`` bounds the gap between every pair of groups instead. Both goals are trained
with :class:`rateopt.RateConstrainedClassifier` on the two-group data of
:func:`rateopt.make_groups_dataset`, and their per-group rates tabulated with
:func:`rateopt.group_rates`.
"""

import matplotlib.pyplot as plt
import numpy as np
import rateopt

X, y, group = rateopt.make_groups_dataset(6000, minority=0.2, random_state=0)
tables = {}
for pairwise in (False, True):
    est = rateopt.RateConstrainedClassifier(
        goals=[rateopt.goals.equalized_odds("group", slack=0.05, pairwise=pairwise)], random_state=0)
    est.fit(X, y, groups={"group": group})
    # expected rates of the randomized classifier on the training rows
    tables[pairwise] = rateopt.group_rates(y, est.predict_proba(X)[:, 1], {"group": group})
    by_group = tables[pairwise].loc["group"]
    print(f"pairwise={pairwise}: largest gap between groups, TPR "
          f"{np.ptp(by_group['tpr']):.3f}, FPR {np.ptp(by_group['fpr']):.3f}")

# %%
# Each panel shows one rate per group; the dashed line is the rate on the whole data and the band
# its +-0.05 slack. Without ``pairwise`` every group sits inside the band, yet the groups can be
# further apart than 0.05.
fig, axes = plt.subplots(1, 2, figsize=(8, 3.4), sharey=True)
for ax, pairwise in zip(axes, (False, True)):
    table = tables[pairwise]
    by_group = table.loc["group"]
    names = list(by_group.index)
    pos = np.arange(len(names))
    for k, (rate, color) in enumerate((("tpr", "tab:blue"), ("fpr", "tab:orange"))):
        overall = table.loc[("all", "all"), rate]
        ax.bar(pos + (k - 0.5) * 0.38, by_group[rate], width=0.38, color=color, label=rate.upper())
        ax.axhline(overall, color=color, ls="--", lw=1)
        ax.axhspan(overall - 0.05, overall + 0.05, color=color, alpha=0.12)
    ax.set_xticks(pos, [f"group {n}" for n in names])
    ax.set_title(f"pairwise={pairwise}")
axes[0].set_ylabel("rate on the training rows")
axes[0].legend(loc="upper left")
fig.tight_layout()
plt.show()
