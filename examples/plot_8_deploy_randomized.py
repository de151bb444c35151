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
# The expected true-positive rate of each group (from ``predict_proba``) against the rate of the
# drawn decisions, for 30 values of ``random_state``: the draws scatter around the expectation with
# the binomial standard deviation (the bars: two standard deviations).
p = served.predict_proba(X)[:, 1]
fig, ax = plt.subplots(figsize=(6, 3.4))
for k, g in enumerate(np.unique(group)):
    rows = (group == g) & (y == 1)
    expected = p[rows].mean()
    drawn = [served.predict(X[rows], random_state=s, row_key=ids[rows]).mean() for s in range(30)]
    sd = np.sqrt(np.sum(p[rows] * (1 - p[rows]))) / rows.sum()
    ax.errorbar(k, expected, yerr=2 * sd, fmt="o", color="black", capsize=6,
                label="expected +- 2 sd" if k == 0 else None)
    ax.scatter(np.full(30, k) + np.linspace(-0.15, 0.15, 30), drawn, s=10, color=f"C{k}", alpha=0.7)
    print(f"group {g}: expected TPR {expected:.4f}, drawn {np.mean(drawn):.4f} +- {np.std(drawn):.4f}"
          f" (binomial sd {sd:.4f})")
ax.set_xticks(range(len(np.unique(group))), [f"group {g}" for g in np.unique(group)])
ax.set_ylabel("true-positive rate")
ax.legend()
fig.tight_layout()
plt.show()
