"""
F1 under F1 parity
==================

Maximize F1 subject to each group's F1 being within 0.05 of the overall F1, trained by the
three-player game of Narasimhan et al. (2019). ``solution="exact"`` is the mixture of the recorded
models whose *expected* rates optimize the metric.
"""

import matplotlib.pyplot as plt
import numpy as np
import rateopt
from rateopt import metrics

X, y, group = rateopt.make_groups_dataset(5000)
ctx = rateopt.Dataset(X, y, groups={"group": group}).context()
est = rateopt.RateConstrainedClassifier(
    objective="f_measure", goals=[rateopt.goals.f_measure_parity("group", slack=0.05)],
    solution="exact", n_iter=1500)
est.fit(X, y, groups={"group": group})
proba = est.predict_proba(X)[:, 1]
plain = rateopt.RateConstrainedClassifier(method="unconstrained").fit(X, y).predict_proba(X)[:, 1]


def f1_by_group(p):
    """F1 of the expected decisions p, overall and per group."""
    out = [metrics.f_measure(ctx).evaluate(p, kind="probabilities")]
    for g in ("A", "B"):
        out.append(metrics.f_measure(ctx.subset(group="group", value=g)).evaluate(p, kind="probabilities"))
    return out


for name, p in (("error minimizer", plain), ("F1 under F1 parity", proba)):
    print(name, " ".join(f"{v:.3f}" for v in f1_by_group(p)))

# %%
fig, ax = plt.subplots(figsize=(6, 3.2))
for k, (name, p) in enumerate((("error minimizer", plain), ("F1 under F1 parity", proba))):
    ax.bar(np.arange(3) + 0.38 * k, f1_by_group(p), width=0.38, label=name)
ax.set_xticks(np.arange(3) + 0.19, ["all", "group A", "group B"])
ax.set_ylabel("F1")
ax.legend()
fig.tight_layout()
plt.show()
