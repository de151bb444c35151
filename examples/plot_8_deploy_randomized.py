"""
Deploying a randomized classifier
=================================
The default solution of :class:`rateopt.RateConstrainedClassifier` is a mixture of a few linear
models: each row is decided by one of them, drawn with its probability. ``predict_proba`` gives the
probability of a positive decision, and ``predict`` draws the decision, deterministically from
``random_state`` and the row. With ``row_key`` (a stable id per row) a row keeps its decision in
any batch and any order. The drawn decisions' per-group rates stay within binomial noise of the
expected rates that the goals bound. The classifier saves to a pickle-free file and loads back
with :func:`rateopt.load`.
"""

import pathlib
import tempfile

import matplotlib.pyplot as plt
import numpy as np
import rateopt

X, y, group = rateopt.make_groups_dataset(20000, random_state=0)
est = rateopt.RateConstrainedClassifier(
    goals=[rateopt.goals.equal_opportunity("group", slack=0.02)], random_state=0)
est.fit(X, y, groups={"group": group})
clf = est.classifier_
print(f"{type(clf).__name__} of {clf.n_models} models with probabilities {np.round(clf.probabilities_, 3)}")

path = pathlib.Path(tempfile.mkdtemp()) / "model.npz"
clf.save(path)
served = rateopt.load(path)
ids = np.arange(len(y))  # a stable id per row, e.g. a customer number
decisions = served.predict(X, random_state=0, row_key=ids)
order = np.random.default_rng(0).permutation(len(y))[:500]  # another batch, in another order
same = np.array_equal(served.predict(X[order], random_state=0, row_key=ids[order]), decisions[order])
print(f"a row's decision is the same in another batch and order: {same}")

# %%
# For each group: the expected true-positive rate (from ``predict_proba``, the dashed line), the
# band of two binomial standard deviations around it, and the rate of the drawn decisions for 30
# values of ``random_state`` (the dots), which scatter inside the band.
p = served.predict_proba(X)[:, 1]
names = np.unique(group)
fig, axes = plt.subplots(1, len(names), figsize=(7, 3.2))
for ax, g in zip(axes, names):
    rows = (group == g) & (y == 1)
    expected = p[rows].mean()
    drawn = [served.predict(X[rows], random_state=s, row_key=ids[rows]).mean() for s in range(30)]
    sd = np.sqrt(np.sum(p[rows] * (1 - p[rows]))) / rows.sum()
    ax.axhspan(expected - 2 * sd, expected + 2 * sd, color="tab:blue", alpha=0.15, label="expected +- 2 sd")
    ax.axhline(expected, color="tab:blue", ls="--", lw=1)
    ax.plot(range(30), drawn, "o", color="black", ms=3, label="drawn, one per random_state")
    ax.set_title(f"group {g}")
    ax.set_xlabel("random_state")
    ax.ticklabel_format(axis="y", useOffset=False)
    print(f"group {g}: expected TPR {expected:.4f}, drawn {np.mean(drawn):.4f} +- {np.std(drawn):.4f}"
          f" (binomial sd {sd:.4f})")
axes[0].set_ylabel("true-positive rate")
axes[0].legend(fontsize=7, loc="lower left")
fig.tight_layout()
plt.show()
